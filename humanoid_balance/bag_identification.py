"""Gravity parameters from a recorded rosbag2 (seed 004), as ``identification_executor`` estimates them.

Reads ``/joint_states`` (position, velocity, effort) of the arm joints from the
bag with ``rosbags``, cuts the stream into the eq. 11 sweeps (runs where one
joint moves alone, paired forward/backward), cancels friction (eq. 5) and
estimates (eq. 10) exactly as the ``identification_executor`` node does at the
end of a run, so both give the same parameters from the same messages (same
``average`` as the node's). ``humanoid-balance identify`` is the command line
around :func:`estimate_from_bag`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from humanoid_balance.core.identification import DEFAULT_AVERAGE, EARTH_GRAVITY, LUNAR_JOINTS

#: where the torque comes from: the effort field [N m], or motor current [A] in it
TORQUE_SOURCES = ("effort", "current")


@dataclass(frozen=True)
class BagIdentificationSettings:
    """How to read and estimate (field names are those of ``humanoid-balance identify``'s options).

    Attributes:
        bag: rosbag2 directory with the joint states.
        topic: the ``sensor_msgs/JointState`` topic.
        urdf: arm URDF path ("" for the lunar arm).
        joints: arm joints, in the URDF's chain order.
        speed: sweep speed of the recording [deg/s] (sets the motion threshold).
        trim: time dropped at the start of each pass [s].
        gravity: gravity of the recording [m/s^2].
        method: the estimator (``sequential``, ``global`` or ``weighted``).
        average: friction-free samples averaged per block (1: none).
        torque_source: ``effort`` (effort holds torque [N m]) or ``current`` (it holds
            motor current [A], ``tau = k_e I``).
        torque_constants: ``k_e`` per joint [N m/A] with ``torque_source="current"``.
    """

    bag: Path
    topic: str = "/joint_states"
    urdf: str = ""
    joints: Sequence[str] = LUNAR_JOINTS
    speed: float = 3.0
    trim: float = 0.5
    gravity: float = EARTH_GRAVITY
    method: str = "sequential"
    average: int = DEFAULT_AVERAGE
    torque_source: str = "effort"
    torque_constants: Sequence[float] | None = None


class BagEstimate(NamedTuple):
    """The estimate and the number of sweeps found in the bag."""

    estimate: Any  # humanoid_balance.core.identification.estimation.Estimate
    sweeps: int


class JointStream(NamedTuple):
    """The arm joints' samples of a bag, in message order.

    Attributes:
        time_s: (n,) header stamps (log times where the stamp is zero) [s].
        position_rad: (n, joints).
        velocity_rad_s: (n, joints).
        effort: (n, joints) [N m], or [A] for motor current.
    """

    time_s: np.ndarray
    position_rad: np.ndarray
    velocity_rad_s: np.ndarray
    effort: np.ndarray


def read_joint_stream(bag: Path, topic: str, joints: tuple[str, ...], *,
                      positions_only: bool = False) -> JointStream:
    """Header times [s], positions, velocities and efforts of ``joints`` from the bag.

    Messages that lack one of the joints or a field are skipped; with
    ``positions_only`` only the positions are needed (velocity and effort are
    NaN where a message has none).
    """
    from humanoid_balance.bag import read_bag, typestore

    store = typestore()
    rows: list[tuple[float, list[float], list[float], list[float]]] = []
    for record in read_bag(bag, [topic]):
        msg: Any = store.deserialize_cdr(record.data, record.msgtype)
        names = list(msg.name)
        if not all(j in names for j in joints):
            continue
        n = len(names)
        complete = len(msg.position) == len(msg.velocity) == len(msg.effort) == n
        if not complete and not (positions_only and len(msg.position) == n):
            continue
        idx = [names.index(j) for j in joints]
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        t = stamp if stamp > 0 else record.log_time_ns * 1e-9
        nan = [math.nan] * len(idx)
        rows.append((t, [msg.position[i] for i in idx],
                     [msg.velocity[i] for i in idx] if len(msg.velocity) == n else nan,
                     [msg.effort[i] for i in idx] if len(msg.effort) == n else nan))
    return JointStream(np.array([r[0] for r in rows]), np.array([r[1] for r in rows]),
                       np.array([r[2] for r in rows]), np.array([r[3] for r in rows]))


def estimate_from_bag(settings: BagIdentificationSettings) -> BagEstimate:
    """The gravity parameters estimated from the bag's sweeps.

    Raises:
        InvalidInputError: the joints are not the URDF's chain in order, the bag has no
            usable message, or the torque constants do not match the joints.
        BagError: the bag cannot be read.
    """
    import pinocchio as pin

    from humanoid_balance.core.identification.procedure import identify, segment_sweeps
    from humanoid_balance.core.identification.regressor import (
        GravityRegressor,
        identification_parameters,
    )
    from humanoid_balance.exceptions import InvalidInputError
    from humanoid_balance.resources import urdf_path

    joints = tuple(settings.joints)
    model = pin.buildModelFromUrdf(settings.urdf or str(urdf_path("lunar_arm")))
    if joints != tuple(model.names[1:]):
        raise InvalidInputError(f"--joints {list(joints)} must be the URDF's chain "
                                f"{list(model.names[1:])}, in order")
    stream = read_joint_stream(settings.bag, settings.topic, joints)
    if len(stream.time_s) == 0:
        raise InvalidInputError(f"{settings.bag}: no {settings.topic} message with position, "
                                f"velocity and effort for {list(joints)}")
    tau = stream.effort
    if settings.torque_source == "current":
        k_e = np.asarray(settings.torque_constants or [], float)
        if k_e.shape != (len(joints),):
            raise InvalidInputError(f"--torque-constants needs {len(joints)} values, got {k_e.size}")
        tau = stream.effort * k_e
    regressor = GravityRegressor(model, settings.gravity)
    recordings = segment_sweeps(stream.time_s, stream.position_rad, stream.velocity_rad_s, tau,
                                moving_rad_s=0.3 * math.radians(settings.speed),
                                trim_s=settings.trim)
    estimate = identify(recordings, regressor, identification_parameters(regressor),
                        method=settings.method, average=settings.average)
    return BagEstimate(estimate, len(recordings))
