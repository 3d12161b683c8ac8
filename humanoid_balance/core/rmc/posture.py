"""The aux arm's posture task: a ready posture approached in the null space of the held rows.

The posture velocity ``v_p = k (q_p - q_aux)`` (gain ``k``) is scaled down to a speed cap
and changes by at most an acceleration times ``dt`` per cycle; the controller adds the
part of it that keeps the held rows (:class:`~humanoid_balance.core.rmc.RmcController`,
step 3).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from humanoid_balance.core import kernels
from humanoid_balance.exceptions import ConfigurationError

__all__ = ["AUX_READY_POSTURE", "POSTURE_ACCELERATION", "POSTURE_GAIN", "POSTURE_SPEED",
           "check_posture", "posture_target", "posture_velocity"]

#: The aux arm's ready posture [rad] in arm-joint order (shoulder pitch, roll, yaw, elbow, wrist
#: yaw, roll, pitch) with the right arm's signs (mirrored for the left arm, as
#: :func:`~humanoid_balance.core.strike_trajectory.arm_pose`): the hand in front of the chest,
#: across the body's midline. With the arm's mass near the midline, the motion that holds
#: ``Lx, Ly`` adds little ``Lz`` (a point mass at ``r`` makes ``L`` normal to ``r``, so
#: cancelling ``Ly`` from ``y = 0.2 m`` adds ``Lz ~ y / z Ly`` of the same sign as the job
#: arm's): on the seed strike the peak ``|dLz/dt|`` is 18 N m against the paper form's 32.
#: The angles are what ``humanoid-balance aux-posture`` found
#: (:mod:`humanoid_balance.experiments.aux_posture`; README, "Arm balance"), searched again
#: once the MuJoCo runs' physics had converged (RK4 at 0.25 ms): on the seed strike the
#: measured ZMP peak with RMC falls from 11.05 mm at the posture found on the coarser physics,
#: (-20.2, 9.4, 39.6, 71.1, -39.6, 77.3, 24.8) deg, to 8.69 mm (ratio to the unbalanced
#: 0.1055 -> 0.0830; at 2.5 m/s 0.111 -> 0.099), with the held rows exact, the feet's slip
#: and yaw about the same and the arms 114 mm apart instead of 101.
AUX_READY_POSTURE: tuple[float, ...] = tuple(
    float(np.deg2rad(v)) for v in (-16.1, 9.7, 55.6, 77.2, -39.3, 63.9, 4.2))
#: Default gain [1/s] of the aux posture task (0: off, the paper's pure eq. 6).
POSTURE_GAIN = 2.0
#: Default speed cap [rad/s] of the aux posture task's joint velocities.
POSTURE_SPEED = 0.5
#: Default rate [rad/s^2] at which the posture velocity may change (a smooth start and stop).
POSTURE_ACCELERATION = 2.0


def check_posture(posture: Sequence[float] | None) -> tuple[float, ...] | None:
    """7 finite angles [rad] as a tuple, or None.

    Raises:
        ConfigurationError: not 7 finite numbers.
    """
    if posture is None:
        return None
    values = np.asarray(posture, dtype=float)
    if values.shape != (7,) or not np.all(np.isfinite(values)):
        raise ConfigurationError(
            f"aux_posture={list(posture)}: expected 7 finite angles [rad] (shoulder pitch, roll, "
            "yaw, elbow, wrist yaw, roll, pitch; right-arm signs), or None for no posture task")
    return tuple(float(v) for v in values)


def posture_target(posture: tuple[float, ...] | None, aux_names: Sequence[str],
                   lower: np.ndarray, upper: np.ndarray,
                   position_margin: float) -> np.ndarray | None:
    """The aux arm's posture [rad] in ``aux_names`` order (mirrored for the left arm), or None.

    Args:
        posture: 7 angles [rad] with the right arm's signs (:func:`check_posture`), or None.
        aux_names: the aux arm's joints, ``{side}_{joint}``.
        lower, upper: their position limits [rad].
        position_margin: distance [rad] the posture must keep from them.

    Raises:
        ConfigurationError: a joint without an angle, or an angle outside the limits.
    """
    if posture is None:
        return None
    from humanoid_balance.core.strike_trajectory import ARM_JOINTS, MIRRORED

    side = aux_names[0].split("_", 1)[0]
    sign = {j: (-1.0 if side == "left" and j in MIRRORED else 1.0) for j in ARM_JOINTS}
    by_name = {f"{side}_{j}": sign[j] * v for j, v in zip(ARM_JOINTS, posture, strict=True)}
    missing = [n for n in aux_names if n not in by_name]
    if missing:
        raise ConfigurationError(f"aux_posture has no angle for joints {missing}")
    target = np.array([by_name[n] for n in aux_names])
    low, high = lower + position_margin, upper - position_margin
    outside = [n for n, t, lo, hi in zip(aux_names, target, low, high, strict=True)
               if not lo <= t <= hi]
    if outside:
        raise ConfigurationError(
            f"aux_posture puts {outside} outside their position limits (less "
            f"position_margin={position_margin} rad): choose a posture inside them")
    return target


def posture_velocity(target: np.ndarray | None, q_aux: np.ndarray | None, gain: float,
                     speed: float, acceleration: float, previous: np.ndarray,
                     dt: float) -> np.ndarray:
    """``v_p`` [rad/s]: ``k (q_p - q_aux)`` scaled down to ``speed``, rate-limited.

    Zeros when the task is off (no ``target``, ``gain`` 0, or no ``q_aux``: not commanding
    or balance disabled); the change from the last cycle's ``previous`` is clipped to
    ``acceleration dt``.
    """
    if target is not None and gain > 0 and q_aux is not None:
        return kernels.posture_velocity(target, q_aux, gain, speed, previous,
                                        acceleration * dt, True)
    return kernels.posture_velocity(previous, previous, 0.0, speed, previous,
                                    acceleration * dt, False)
