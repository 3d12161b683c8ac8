"""Kinematics and resolved motion rate control of the differential waist (seed 003).

The waist is a two-joint serial chain (pitch ``q1``, roll ``q2``) driven by two
motors through a differential gear train. The paper's notation is kept:

* drive space: motor speeds ``w = [w1, w2]`` in rad/s (motor shaft);
* joint space: ``q = [q1, q2]`` = (pitch, roll) in rad;
* feasible motion space: ``[wy0, wz0]``, the waist plate's angular velocity
  about the base axes ``y0`` (roll direction) and ``z0`` (pitch direction),
  in rad/s. The paper's base frame has ``z0`` along the pitch axis; this
  differs from the URDF's REP-103 axes but only the paper's frame is used here.

Equations (paper numbering):

.. math::

    \\dot q = J_{qw} w, \\quad J_{qw} = \\begin{bmatrix} -\\tfrac{1}{2 i_1} & -\\tfrac{1}{2 i_1}
    \\\\ -\\tfrac{1}{2 i_2} & \\tfrac{1}{2 i_2} \\end{bmatrix} \\quad (1)-(3)

    w = J_{qw}^{-1} \\dot q, \\quad J_{qw}^{-1} = \\begin{bmatrix} -i_1 & -i_2 \\\\ -i_1 & i_2
    \\end{bmatrix} \\quad (4)

    [\\omega_{y0}, \\omega_{z0}]^T = J_1(q) \\dot q = J_1 J_{qw} w = J_0 w \\quad (10), (11)

and the forward/inverse kinematics of eqs. (5)-(7) and the geometric Jacobian
of eq. (8). RMRC: ``w = J0^-1 [wy0, wz0]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from humanoid_balance.exceptions import ConfigurationError, InvalidInputError

FloatArray = NDArray[np.float64]

#: The paper's joint range (Table 1), radians: pitch -5..45 deg, roll -15..15 deg.
PITCH_LIMITS_RAD = (np.deg2rad(-5.0), np.deg2rad(45.0))
ROLL_LIMITS_RAD = (np.deg2rad(-15.0), np.deg2rad(15.0))


class WaistPose(NamedTuple):
    """Pose of the waist's upper plate in the paper's base frame {0} (eq. 5).

    Attributes:
        rotation: 3x3 rotation matrix ``0R2``.
        position: origin of frame {2} in {0}, metres.
    """

    rotation: FloatArray
    position: FloatArray


def _check_vector2(value: object, what: str) -> FloatArray:
    arr = np.asarray(value, dtype=float)
    if arr.shape != (2,):
        raise InvalidInputError(f"{what} must have shape (2,), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{what} must be finite, got {arr.tolist()}")
    return arr


@dataclass(frozen=True)
class DifferentialWaist:
    """Differential waist geometry and its kinematic maps (seed 003, eqs. 1-11).

    Args:
        gear_ratio_pitch: ``i1``, motor-to-pitch-joint ratio (> 0).
        gear_ratio_roll: ``i2``, motor-to-roll-joint ratio (> 0).
        height_m: ``l``, waist height in metres (eq. 5), >= 0.
        pitch_limits_rad: (min, max) pitch range in rad.
        roll_limits_rad: (min, max) roll range in rad.
    """

    gear_ratio_pitch: float = 100.0
    gear_ratio_roll: float = 100.0
    height_m: float = 0.1
    pitch_limits_rad: tuple[float, float] = PITCH_LIMITS_RAD
    roll_limits_rad: tuple[float, float] = ROLL_LIMITS_RAD

    def __post_init__(self) -> None:
        for name in ("gear_ratio_pitch", "gear_ratio_roll"):
            value = getattr(self, name)
            if not np.isfinite(value) or value <= 0.0:
                raise ConfigurationError(
                    f"{name} must be a finite ratio > 0, got {value}: give the motor turns "
                    "per joint turn")
        if not np.isfinite(self.height_m) or self.height_m < 0.0:
            raise ConfigurationError(f"height_m must be finite and >= 0, got {self.height_m}")
        for name in ("pitch_limits_rad", "roll_limits_rad"):
            lo, hi = getattr(self, name)
            if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
                raise ConfigurationError(f"{name} must be finite (min, max) with min < max, "
                                         f"got ({lo}, {hi})")
        lo, hi = self.pitch_limits_rad
        if lo <= -np.pi / 2 or hi >= np.pi / 2:
            raise ConfigurationError(
                f"pitch_limits_rad ({lo:.4f}, {hi:.4f}) reach |pitch| >= pi/2 where J0 loses "
                "rank (cos q1 = 0): keep the pitch range inside (-90, 90) deg")

    # --- drive space <-> joint space (eqs. 1-4) -----------------------------

    @cached_property
    def j_qw(self) -> FloatArray:
        """Drive-to-joint velocity map ``J_qw`` (eq. 3), (2, 2)."""
        i1, i2 = self.gear_ratio_pitch, self.gear_ratio_roll
        matrix = np.array([[-0.5 / i1, -0.5 / i1], [-0.5 / i2, 0.5 / i2]])
        matrix.setflags(write=False)  # computed once, shared
        return matrix

    @cached_property
    def j_qw_inv(self) -> FloatArray:
        """Joint-to-drive velocity map ``J_qw^-1`` (eq. 4), (2, 2)."""
        i1, i2 = self.gear_ratio_pitch, self.gear_ratio_roll
        matrix = np.array([[-i1, -i2], [-i1, i2]], dtype=float)
        matrix.setflags(write=False)  # computed once, shared
        return matrix

    def joint_from_motor(self, motor_angles_rad: FloatArray) -> FloatArray:
        """Joint angles ``q = J_qw theta`` from motor angles (eq. 3 integrated, zero offset).

        Args:
            motor_angles_rad: motor shaft angles ``[theta1, theta2]`` in rad, zero at q = 0.

        Returns:
            ``[pitch, roll]`` in rad.
        """
        return self.j_qw @ np.asarray(motor_angles_rad, dtype=float)  # type: ignore[no-any-return]

    def motor_from_joint(self, joint_angles_rad: FloatArray) -> FloatArray:
        """Motor angles ``theta = J_qw^-1 q`` from joint angles (eq. 4 integrated), rad."""
        return self.j_qw_inv @ np.asarray(joint_angles_rad, dtype=float)

    # --- joint space <-> operational space (eqs. 5-9) ------------------------

    def forward(self, q: FloatArray) -> WaistPose:
        """Forward kinematics, eq. (5).

        Args:
            q: ``[q1, q2]`` (pitch, roll) in rad.

        Returns:
            Rotation ``0R2`` and position ``0P2`` (m) of the upper plate.
        """
        q1, q2 = _check_vector2(q, "q")
        c1, s1, c2, s2 = np.cos(q1), np.sin(q1), np.cos(q2), np.sin(q2)
        rotation = np.array([
            [c1 * c2, -c1 * s2, -s1],
            [c2 * s1, -s1 * s2, c1],
            [-s2, -c2, 0.0],
        ])
        position = np.array([self.height_m * c1, self.height_m * s1, 0.0])
        return WaistPose(rotation, position)

    @staticmethod
    def inverse(rotation: FloatArray) -> FloatArray:
        """Inverse kinematics, eqs. (6)-(7): ``q1 = atan2(-r13, r23)``, ``q2 = atan2(-r31, -r32)``.

        Args:
            rotation: 3x3 rotation matrix ``0R2`` of the upper plate.

        Returns:
            ``[q1, q2]`` in rad.
        """
        r = np.asarray(rotation, dtype=float)
        if r.shape != (3, 3) or not np.all(np.isfinite(r)):
            raise InvalidInputError(f"rotation must be a finite 3x3 matrix, got shape {r.shape}")
        return np.array([np.arctan2(-r[0, 2], r[1, 2]), np.arctan2(-r[2, 0], -r[2, 1])])

    def jacobian(self, q: FloatArray) -> FloatArray:
        """Geometric Jacobian ``J(q)`` of eq. (8), (6, 2): rows [v; w] in frame {0}."""
        q1, _ = _check_vector2(q, "q")
        c1, s1 = np.cos(q1), np.sin(q1)
        ell = self.height_m
        return np.array([
            [-ell * s1, 0.0],
            [ell * c1, 0.0],
            [0.0, 0.0],
            [0.0, -s1],
            [0.0, c1],
            [1.0, 0.0],
        ])

    @staticmethod
    def j1(q: FloatArray) -> FloatArray:
        """Feasible-space block ``J1(q) = [[0, cos q1], [1, 0]]`` of eq. (9): qd -> [wy0, wz0]."""
        q1, _ = _check_vector2(q, "q")
        return np.array([[0.0, np.cos(q1)], [1.0, 0.0]])

    def j0(self, q: FloatArray) -> FloatArray:
        """Drive-to-feasible-space Jacobian ``J0 = J1 J_qw`` (eqs. 10-11), (2, 2)."""
        return self.j1(q) @ self.j_qw

    def min_j0_singular_value(self, samples: int = 201) -> float:
        """Smallest singular value of ``J0`` over the pitch range (J0 does not depend on roll).

        The paper states that J0 is full rank over the joint range; this checks it on
        ``samples`` pitch values including both limits.
        """
        pitches = np.linspace(*self.pitch_limits_rad, samples)
        return float(min(np.linalg.svd(self.j0(np.array([p, 0.0])), compute_uv=False)[-1]
                         for p in pitches))

    # --- limits ---------------------------------------------------------------

    def clamp(self, q: FloatArray) -> FloatArray:
        """``[pitch, roll]`` clamped into the joint range, rad."""
        q1, q2 = _check_vector2(q, "q")
        return np.array([np.clip(q1, *self.pitch_limits_rad), np.clip(q2, *self.roll_limits_rad)])


class OuterLoopOutput(NamedTuple):
    """Result of one outer (spatial) RMRC step.

    Attributes:
        motor_rates: motor speed commands ``[w1, w2]``, rad/s.
    """

    motor_rates: FloatArray


class RmrcOuterLoop:
    """The paper's outer (spatial) loop: inclinometer feedback + RMRC every 20 ms.

    The commanded plate rate is the trajectory's feed-forward rate plus a proportional
    correction of the measured orientation error, mapped to the feasible space with
    ``J1`` and to motor speeds with ``J0^-1`` (eq. 10 inverted):

    .. math::

        [\\omega_{y0}, \\omega_{z0}] = J_1(q) (\\dot q_{ref} + K (q_{ref} - q_{meas})),
        \\quad w = J_0^{-1} [\\omega_{y0}, \\omega_{z0}]

    Args:
        waist: the waist geometry.
        gain_per_s: ``K``, orientation feedback gain in 1/s (>= 0). 0 = pure RMRC
            feed-forward (the motor encoders then carry all the feedback).
        max_joint_rate_rad_s: bound on ``|qd_ref + K e|`` per joint, rad/s (> 0).
    """

    def __init__(self, waist: DifferentialWaist, *, gain_per_s: float = 2.0,
                 max_joint_rate_rad_s: float = np.deg2rad(30.0)) -> None:
        if not np.isfinite(gain_per_s) or gain_per_s < 0.0:
            raise ConfigurationError(f"gain_per_s must be finite and >= 0, got {gain_per_s}")
        if not np.isfinite(max_joint_rate_rad_s) or max_joint_rate_rad_s <= 0.0:
            raise ConfigurationError(
                f"max_joint_rate_rad_s must be finite and > 0, got {max_joint_rate_rad_s}")
        self.waist = waist
        self.gain_per_s = gain_per_s
        self.max_joint_rate_rad_s = max_joint_rate_rad_s

    def step(self, q_ref: FloatArray, qd_ref: FloatArray, q_measured: FloatArray) -> OuterLoopOutput:
        """One outer-loop step.

        Args:
            q_ref: reference ``[pitch, roll]``, rad.
            qd_ref: reference joint rate, rad/s.
            q_measured: inclinometer ``[pitch, roll]``, rad.

        Returns:
            The motor rates.

        Raises:
            InvalidInputError: a non-finite input, or a measured pitch where J0 is singular.
        """
        # scalar arithmetic: this runs every outer period (the benchmark's step budget is 20 us)
        r1, r2 = float(q_ref[0]), float(q_ref[1])
        v1, v2 = float(qd_ref[0]), float(qd_ref[1])
        m1, m2 = float(q_measured[0]), float(q_measured[1])
        if not all(math.isfinite(x) for x in (r1, r2, v1, v2, m1, m2)):
            raise InvalidInputError(
                f"outer loop inputs must be finite, got q_ref={[r1, r2]}, qd_ref={[v1, v2]}, "
                f"q_measured={[m1, m2]}")
        cos_q1 = math.cos(m1)
        if abs(cos_q1) < 1e-6:
            raise InvalidInputError(
                f"pitch {math.degrees(m1):.3f} deg makes J0 singular (cos q1 = 0): "
                "the waist must stay inside its pitch range")
        e1, e2 = r1 - m1, r2 - m2
        lim, k = self.max_joint_rate_rad_s, self.gain_per_s
        qd1 = min(max(v1 + k * e1, -lim), lim)
        qd2 = min(max(v2 + k * e2, -lim), lim)
        wy0, wz0 = cos_q1 * qd2, qd1  # J1 qd (eq. 10)
        # J0^-1 [wy0, wz0] = J_qw^-1 J1^-1 [wy0, wz0] = J_qw^-1 [wz0, wy0 / cos q1]  (eqs. 4, 11)
        j1, j2 = wz0, wy0 / cos_q1
        i1, i2 = self.waist.gear_ratio_pitch, self.waist.gear_ratio_roll
        return OuterLoopOutput(np.array([-i1 * j1 - i2 * j2, -i1 * j1 + i2 * j2]))


def pitch_roll_from_quaternion(x: float, y: float, z: float, w: float) -> tuple[float, float]:
    """Waist ``(pitch, roll)`` in rad from the plate orientation quaternion (URDF axes).

    The URDF chain is pitch about y, then roll about x (REP-103), so the plate's
    rotation is ``R = Ry(pitch) Rx(roll)`` (yaw ignored): ``pitch = asin(-r31)``,
    ``roll = atan2(r32, r33)``. This is the inclinometer reading of the paper's
    outer loop.

    Raises:
        InvalidInputError: a non-finite or zero-norm quaternion.
    """
    quat = np.array([x, y, z, w], dtype=float)
    norm = float(np.linalg.norm(quat))
    if not np.all(np.isfinite(quat)) or norm < 1e-9:
        raise InvalidInputError(f"orientation quaternion must be finite and non-zero, got "
                                f"{quat.tolist()}")
    x, y, z, w = quat / norm
    r31 = 2.0 * (x * z - w * y)
    r32 = 2.0 * (y * z + w * x)
    r33 = 1.0 - 2.0 * (x * x + y * y)
    return float(np.arcsin(np.clip(-r31, -1.0, 1.0))), float(np.arctan2(r32, r33))
