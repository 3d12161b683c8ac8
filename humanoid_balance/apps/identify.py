"""``humanoid-balance identify BAG``: gravity parameters from a recorded rosbag2 (seed 004).

Reads ``/joint_states`` (position, velocity, effort) of the arm joints from
the bag with ``rosbags``, cuts the stream into the eq. 11 sweeps (runs where
one joint moves alone, paired forward/backward), cancels friction (eq. 5)
and estimates (eq. 10) exactly as the ``identification_executor`` node does
at the end of a run, so both give the same parameters from the same
messages (same ``--average`` as the node's ``average``). Prints the table
and, with ``--out``, writes the same YAML as the node.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from humanoid_balance.core.identification import (
    DEFAULT_AVERAGE,
    EARTH_GRAVITY,
    LUNAR_JOINTS,
    METHODS,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``identify``."""
    parser.add_argument("bag", type=Path, help="rosbag2 directory with /joint_states")
    parser.add_argument("--topic", default="/joint_states")
    parser.add_argument("--urdf", default="", help="arm URDF (default: the lunar arm)")
    parser.add_argument("--joints", nargs="+", default=list(LUNAR_JOINTS),
                        help="arm joints, in chain order")
    parser.add_argument("--speed", type=float, default=3.0,
                        help="sweep speed of the recording [deg/s] (sets the motion threshold)")
    parser.add_argument("--trim", type=float, default=0.5,
                        help="seconds dropped at the start of each pass")
    parser.add_argument("--gravity", type=float, default=EARTH_GRAVITY,
                        help="gravity of the recording [m/s^2]")
    parser.add_argument("--method", choices=METHODS, default="sequential",
                        help="sequential (eq. 10), global, or weighted by each joint's noise")
    parser.add_argument("--average", type=int, default=DEFAULT_AVERAGE,
                        help="friction-free samples averaged per block (1: none)")
    parser.add_argument("--torque-source", choices=("effort", "current"), default="effort",
                        help="current: the effort field holds motor current [A], tau = k_e I")
    parser.add_argument("--torque-constants", type=float, nargs="+", default=None,
                        help="k_e per joint [N m/A] (with --torque-source current)")
    parser.add_argument("--out", type=Path, default=None, help="write the results YAML here")


def read_joint_stream(bag: Path, topic: str, joints: tuple[str, ...]
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Header times [s], positions, velocities and efforts of ``joints`` from the bag.

    Messages that lack one of the joints or a field are skipped.
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
        if not (len(msg.position) == len(msg.velocity) == len(msg.effort) == n):
            continue
        idx = [names.index(j) for j in joints]
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        t = stamp if stamp > 0 else record.log_time_ns * 1e-9
        rows.append((t, [msg.position[i] for i in idx], [msg.velocity[i] for i in idx],
                     [msg.effort[i] for i in idx]))
    return (np.array([r[0] for r in rows]), np.array([r[1] for r in rows]),
            np.array([r[2] for r in rows]), np.array([r[3] for r in rows]))


def estimate_from_bag(args: argparse.Namespace) -> tuple[Any, int]:
    """The estimate and the number of sweeps found in the bag."""
    import pinocchio as pin

    from humanoid_balance.core.identification.procedure import identify, segment_sweeps
    from humanoid_balance.core.identification.regressor import (
        GravityRegressor,
        identification_parameters,
    )
    from humanoid_balance.exceptions import InvalidInputError
    from humanoid_balance.resources import urdf_path

    joints = tuple(args.joints)
    model = pin.buildModelFromUrdf(args.urdf or str(urdf_path("lunar_arm")))
    if joints != tuple(model.names[1:]):
        raise InvalidInputError(f"--joints {list(joints)} must be the URDF's chain "
                                f"{list(model.names[1:])}, in order")
    t, q, qd, effort = read_joint_stream(args.bag, args.topic, joints)
    if len(t) == 0:
        raise InvalidInputError(f"{args.bag}: no {args.topic} message with position, velocity "
                                f"and effort for {list(joints)}")
    tau = effort
    if args.torque_source == "current":
        k_e = np.asarray(args.torque_constants or [], float)
        if k_e.shape != (len(joints),):
            raise InvalidInputError(f"--torque-constants needs {len(joints)} values, got {k_e.size}")
        tau = effort * k_e
    regressor = GravityRegressor(model, args.gravity)
    recordings = segment_sweeps(t, q, qd, tau, moving_rad_s=0.3 * math.radians(args.speed),
                                trim_s=args.trim)
    estimate = identify(recordings, regressor, identification_parameters(regressor),
                        method=args.method, average=args.average)
    return estimate, len(recordings)


def run(args: argparse.Namespace) -> int:
    """Estimate and print (and with ``--out`` write) the gravity parameters."""
    from humanoid_balance.exceptions import HumanoidBalanceError
    from humanoid_balance.results import check_output

    try:
        if args.out is not None:
            check_output(args.out)  # before the estimation, not after it
        estimate, sweeps = estimate_from_bag(args)
    except HumanoidBalanceError as exc:
        print(f"identify: {exc}", file=sys.stderr)
        return 2
    print(f"{sweeps} sweeps, {estimate.samples} friction-free samples")
    for name, value, unit, std in zip(estimate.names, estimate.values, estimate.units,
                                      estimate.std, strict=True):
        print(f"{name:<45} {value: .6g} {unit}  (std {std:.2g})")
    for joint, rmse in zip(args.joints, estimate.rmse_per_joint, strict=True):
        print(f"fit RMSE {joint}: {rmse:.4g} N m")
    if args.out is not None:
        from humanoid_balance.core.identification.procedure import results_document
        from humanoid_balance.results import write_yaml

        write_yaml(args.out, results_document(estimate, args.joints, args.gravity, sweeps))
        print(f"wrote {args.out}")
    return 0
