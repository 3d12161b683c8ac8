"""Joint position, velocity and acceleration limits of the arms, as per-cycle velocity boxes.

The seed-000 arm table (Table 2; SPEC.md section "Ground truth") gives for each
arm joint a position range, a maximum speed and a maximum acceleration. The
URDF carries the first two (read through :class:`~humanoid_balance.core.model.RobotModel`);
the acceleration limits are not a URDF field, so :data:`ARM_ACCELERATION_LIMITS_DEG_S2`
holds them here, by joint suffix.

Every control cycle turns the three limits into one box ``lo <= qd <= hi`` for
the next joint-velocity command (:func:`velocity_box`), so that a command inside
the box moves the joint without ever crossing a limit:

.. math::

    hi = \\min(\\dot q_{max},\\; \\dot q_{prev} + \\ddot q_{max} \\Delta t,\\;
               v_{stop}(q_{max} - m - q))

with ``v_stop(d)`` (:func:`stopping_speed`) the largest speed from which the
joint, braking at ``a = qdd_max`` in steps of ``dt``, stops before it has
travelled ``d`` (``v^2 / (2 a) + v dt / 2 + a dt^2 / 8 <= d``, an exact bound
on the discrete braking distance),
and ``m >= 0`` a position margin; ``lo`` likewise. When the three cannot all be
met (the joint already moves towards a limit faster than it can brake, which a
command sequence from this module never causes but a reset onto a moving joint
can), the position and velocity limits win over the acceleration limit: the
box collapses onto the position-safe bound and the acceleration overrun is
reported (:attr:`VelocityBox.acceleration_overridden`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from humanoid_balance.core import kernels
from humanoid_balance.exceptions import ConfigurationError

#: Seed 000, Table 2: maximum joint acceleration in [deg/s^2] by joint suffix.
ARM_ACCELERATION_LIMITS_DEG_S2: dict[str, float] = {
    "shoulder_pitch": 5630.0,
    "shoulder_roll": 5630.0,
    "shoulder_yaw": 5630.0,
    "elbow": 5630.0,
    "wrist_yaw": 2765.0,
    "wrist_roll": 2765.0,
    "wrist_pitch": 2765.0,
}


@dataclass(frozen=True)
class JointLimits:
    """Limits of a set of joints, in the order of ``names``.

    Attributes:
        names: joint names.
        lower: lower position limits [rad].
        upper: upper position limits [rad].
        velocity: maximum speeds [rad/s] (> 0).
        acceleration: maximum accelerations [rad/s^2] (> 0).
    """

    names: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.names)
        for label in ("lower", "upper", "velocity", "acceleration"):
            value = getattr(self, label)
            if np.shape(value) != (n,):
                raise ConfigurationError(
                    f"JointLimits.{label} has shape {np.shape(value)}, expected ({n},) for "
                    f"joints {list(self.names)}")
            if not np.all(np.isfinite(value)):
                raise ConfigurationError(f"JointLimits.{label}={value} must be finite")
        if np.any(self.lower >= self.upper):
            raise ConfigurationError(
                f"JointLimits: lower {self.lower} must be below upper {self.upper}")
        if np.any(self.velocity <= 0) or np.any(self.acceleration <= 0):
            raise ConfigurationError(
                "JointLimits: velocity and acceleration limits must be > 0, got "
                f"{self.velocity} and {self.acceleration}")

    def subset(self, index: np.ndarray | Sequence[int]) -> JointLimits:
        """The limits of the joints at ``index``."""
        idx = np.asarray(index, dtype=int)
        return JointLimits(tuple(self.names[i] for i in idx), self.lower[idx], self.upper[idx],
                           self.velocity[idx], self.acceleration[idx])


def arm_acceleration_limit(joint: str) -> float:
    """Seed-000 acceleration limit [rad/s^2] of an arm joint, found by its name's suffix.

    Raises:
        ConfigurationError: the name ends with none of the table's joints.
    """
    for suffix, value in ARM_ACCELERATION_LIMITS_DEG_S2.items():
        if joint.endswith(suffix):
            return float(np.deg2rad(value))
    raise ConfigurationError(
        f"joint {joint!r} has no acceleration limit: expected a name ending in one of "
        f"{sorted(ARM_ACCELERATION_LIMITS_DEG_S2)}; pass acceleration limits explicitly")


class VelocityBox(NamedTuple):
    """Bounds on the next joint-velocity command and which limit sets each bound.

    Attributes:
        lower: lowest allowed joint velocity [rad/s].
        upper: highest allowed joint velocity [rad/s].
        acceleration_overridden: joints whose box ignores the acceleration limit
            because the position/velocity limits could not be met otherwise.
    """

    lower: np.ndarray
    upper: np.ndarray
    acceleration_overridden: np.ndarray


def stopping_speed(distance: np.ndarray, acceleration: np.ndarray, dt: float) -> np.ndarray:
    """Largest speed [rad/s] that still stops within ``distance`` [rad] braking at ``acceleration``.

    Braking in steps of ``dt`` [s] from ``v`` (speeds ``v, v - a dt, ...``)
    travels at most ``U(v) = v^2 / (2 a) + v dt / 2 + a dt^2 / 8`` (the exact
    staircase sum exceeds the first two terms by ``a dt^2 f (1 - f) / 2``,
    ``f`` the fractional step count); the speed returned solves ``U(v) = d``
    (zero for ``d <= a dt^2 / 8``). Since ``U(v) - U(v - a dt) = v dt``, a joint
    that satisfies the bound now still satisfies it next cycle after braking
    by ``a dt``, so the bound never asks for more than the acceleration limit.
    """
    half = 0.5 * acceleration * dt
    d = np.maximum(distance - acceleration * dt * dt / 8.0, 0.0)
    return np.sqrt(half * half + 2.0 * acceleration * d) - half


def velocity_box(
    limits: JointLimits, q: np.ndarray, qd_prev: np.ndarray, dt: float,
    position_margin: float = 0.0,
) -> VelocityBox:
    """The box of joint velocities [rad/s] allowed for the next ``dt`` [s] (see module docstring).

    Args:
        limits: the joints' limits.
        q: joint positions now [rad].
        qd_prev: joint velocities commanded in the previous cycle [rad/s].
        dt: control period [s] (> 0).
        position_margin: distance kept from each position limit [rad] (>= 0).

    Returns:
        The box; ``lower <= upper`` always holds, and a velocity inside it keeps
        the joint inside ``[lower + margin, upper - margin]`` after ``dt`` when it
        starts there (and moves it back towards the range when it starts outside).
    """
    stop = _stop_speeds(limits, q, dt, position_margin)
    safe_hi = np.minimum(limits.velocity, stop[0])
    safe_lo = -np.minimum(limits.velocity, stop[1])
    acc_step = limits.acceleration * dt
    hi = np.minimum(safe_hi, qd_prev + acc_step)
    lo = np.maximum(safe_lo, qd_prev - acc_step)
    conflict = lo > hi
    if conflict.any():
        # the acceleration limit cannot be met without crossing a position or
        # velocity limit: keep the nearest position-safe velocity
        nearest = np.clip(qd_prev, safe_lo, safe_hi)
        lo = np.where(conflict, nearest, lo)
        hi = np.where(conflict, nearest, hi)
    return VelocityBox(lo, hi, conflict)


def _stop_speeds(limits: JointLimits, q: np.ndarray, dt: float,
                 position_margin: float) -> np.ndarray:
    """(2, n): the speeds up and down that still stop before the (margin-shrunk) limits; beyond
    a limit the distance is 0, so the bound on that side is 0 and only motion back towards the
    range is allowed."""
    dist = np.vstack([limits.upper - position_margin - q, q - (limits.lower + position_margin)])
    return stopping_speed(dist, limits.acceleration, dt)


def bound_shares(limits: JointLimits, q: np.ndarray, qd_prev: np.ndarray, qd: np.ndarray,
                 dt: float, position_margin: float = 0.0) -> dict[str, np.ndarray]:
    """Per joint, the share of each of :func:`velocity_box`'s three bounds that the velocity
    ``qd`` [rad/s] takes (1: at it), for the same arguments: ``position`` (``|qd|`` over the
    speed that still stops before the limit it moves towards; 1 where that speed is 0),
    ``velocity`` (over the speed limit) and ``acceleration`` (``|qd - qd_prev|`` over
    ``acceleration dt``). Which limit binds a joint at its box's edge is the largest."""
    stop = _stop_speeds(limits, q, dt, position_margin)
    toward = np.where(qd >= 0.0, stop[0], stop[1])
    room = toward > 1e-12
    return {"position": np.where(room, np.abs(qd) / np.where(room, toward, 1.0), 1.0),
            "velocity": np.abs(qd) / limits.velocity,
            "acceleration": np.abs(qd - qd_prev) / (limits.acceleration * dt)}


class VelocityBoxer:
    """:func:`velocity_box` for the same limits every cycle (the per-cycle fast path).

    Args:
        limits: the joints' limits.
        position_margin: distance kept from each position limit [rad] (>= 0).

    Raises:
        ConfigurationError: a negative or non-finite margin, or one that leaves no range.
    """

    def __init__(self, limits: JointLimits, position_margin: float = 0.0) -> None:
        if not np.isfinite(position_margin) or position_margin < 0:
            raise ConfigurationError(f"position_margin={position_margin} must be finite and >= 0")
        if np.any(limits.upper - limits.lower <= 2 * position_margin):
            raise ConfigurationError(
                f"position_margin={position_margin} rad leaves no range for some of "
                f"{list(limits.names)}: use a smaller margin")
        self.limits = limits
        self.position_margin = float(position_margin)
        self._upper = np.ascontiguousarray(limits.upper - position_margin, dtype=float)
        self._lower = np.ascontiguousarray(limits.lower + position_margin, dtype=float)
        self._acceleration = np.ascontiguousarray(limits.acceleration, dtype=float)
        self._velocity = np.ascontiguousarray(limits.velocity, dtype=float)
        kernels.warm_up()  # (__call__ is a kernel)

    def __call__(self, q: np.ndarray, qd_prev: np.ndarray, dt: float,
                 ahead: float = 0.0) -> VelocityBox:
        """The box for the next ``dt`` [s] at the positions ``q + ahead qd_prev dt``; equal to
        :func:`velocity_box` there (one compiled call,
        :func:`humanoid_balance.core.kernels.velocity_box`)."""
        lo, hi, conflict, _ = kernels.velocity_box(q, qd_prev, dt, ahead, self._upper,
                                                   self._lower, self._acceleration, self._velocity)
        return VelocityBox(lo, hi, conflict)
