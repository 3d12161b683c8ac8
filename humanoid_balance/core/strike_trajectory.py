"""The seed-000 test motion of the job arm: a fast strike, as a reusable trajectory generator.

Seed 000, section 4: the job (right) arm goes from its initial pose to a ready
pose in 0.3 s, waits 0.3 s, moves from the ready pose to a target pose in 0.3 s
arriving with the hand velocity ``[1.76, 0, 0.38]`` m/s (1.8 m/s) and zero
angular velocity, then goes back to the ready pose in 0.5 s.

The motion is planned in joint space with quintic segments (position,
velocity and acceleration continuous). (7th-order segments, zero jerk at their
ends, were tried for issue 14: at the same durations their peak accelerations
are about 30 % higher, the wrist yaw then reaching 1.18x its limit, and the
MuJoCo strike's ZMP peak ratio rose from 0.180 to 0.205.) The velocity at the target is
``qd_T = J^+(q_T) [v_T; 0]`` (J the hand Jacobian in ``W``, pseudo-inverse), so
the hand reaches exactly ``v_T`` with zero angular velocity; the acceleration
there is zero. The default poses were chosen (by a search over the joint
table, then rounded) so that at the paper's 1.8 m/s no joint exceeds about
60 % of its speed limit of seed 000, Table 2, and the ready pose lies about
``qd_T * 0.15 s`` before the target (the distance a constant acceleration
from rest covers in 0.3 s): :meth:`StrikeTrajectory.limit_ratios` checks a
trajectory against the table. The paper does not give its poses (Fig. 3 is a
drawing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from humanoid_balance.core.joint_limits import arm_acceleration_limit
from humanoid_balance.core.model import RobotModel
from humanoid_balance.exceptions import ConfigurationError

#: Seed 000: hand velocity at the target [m/s] (right arm, in W).
PAPER_HAND_VELOCITY = (1.76, 0.0, 0.38)
#: Seed 000: durations [s] of initial->ready, wait, ready->target, target->ready.
PAPER_DURATIONS = (0.3, 0.3, 0.3, 0.5)
#: Joint suffixes in arm order.
ARM_JOINTS = ("shoulder_pitch", "shoulder_roll", "shoulder_yaw", "elbow", "wrist_yaw",
              "wrist_roll", "wrist_pitch")
#: Joints whose sign flips from the right arm to the left (roll and yaw axes mirror).
MIRRORED = frozenset({"shoulder_roll", "shoulder_yaw", "wrist_yaw", "wrist_roll"})
#: Right-arm poses [deg] in :data:`ARM_JOINTS` order (our choice, see the module docstring).
RIGHT_INITIAL_DEG = (0.0, -15.0, 40.0, 45.0, 20.0, -30.0, 20.0)
RIGHT_READY_DEG = (20.0, -43.0, 74.0, 101.0, 59.0, -59.0, 37.0)
RIGHT_TARGET_DEG = (-17.0, -25.0, 64.0, 65.0, 34.0, -35.0, 10.0)
#: The aux arm's starting pose [deg] (right-arm signs; mirrored for the left arm).
AUX_START_DEG = (0.0, -10.0, 0.0, 30.0, 0.0, 0.0, 0.0)
PHASES = ("to_ready", "wait", "strike", "return", "hold")


def arm_pose(arm: str, right_arm_deg: Sequence[float]) -> dict[str, float]:
    """Joint positions [rad] by name of ``arm`` from a pose given in right-arm degrees."""
    if arm not in ("right", "left"):
        raise ConfigurationError(f"arm={arm!r}: expected 'right' or 'left'")
    if len(right_arm_deg) != len(ARM_JOINTS):
        raise ConfigurationError(
            f"a pose has {len(ARM_JOINTS)} angles {ARM_JOINTS}, got {len(right_arm_deg)}")
    sign = -1.0 if arm == "left" else 1.0
    return {f"{arm}_{j}": float(np.deg2rad(v) * (sign if j in MIRRORED else 1.0))
            for j, v in zip(ARM_JOINTS, right_arm_deg, strict=True)}


def quintic(p0: np.ndarray, v0: np.ndarray, a0: np.ndarray, p1: np.ndarray, v1: np.ndarray,
            a1: np.ndarray, duration: float) -> np.ndarray:
    """Coefficients (6 x n, constant term first) of the quintic meeting the boundary conditions."""
    t = duration
    c0, c1, c2 = p0, v0, a0 / 2.0
    h = p1 - p0 - v0 * t - a0 * t * t / 2.0
    dv = v1 - v0 - a0 * t
    da = a1 - a0
    c3 = (10 * h - 4 * dv * t + da * t * t / 2.0) / t**3
    c4 = (-15 * h + 7 * dv * t - da * t * t) / t**4
    c5 = (6 * h - 3 * dv * t + da * t * t / 2.0) / t**5
    return np.vstack([c0, c1, c2, c3, c4, c5])


def _evaluate(coeffs: np.ndarray, tau: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    powers = np.array([1.0, tau, tau**2, tau**3, tau**4, tau**5])
    d1 = np.array([0.0, 1.0, 2 * tau, 3 * tau**2, 4 * tau**3, 5 * tau**4])
    d2 = np.array([0.0, 0.0, 2.0, 6 * tau, 12 * tau**2, 20 * tau**3])
    return powers @ coeffs, d1 @ coeffs, d2 @ coeffs


@dataclass(frozen=True)
class StrikeSample:
    """The job arm's reference at one time.

    Attributes:
        position: joint positions [rad].
        velocity: joint velocities [rad/s].
        acceleration: joint accelerations [rad/s^2].
        phase: one of :data:`PHASES`.
    """

    position: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    phase: str


@dataclass(frozen=True)
class LimitRatios:
    """Peak |value| / limit over the trajectory, per joint (1 = at the limit).

    Attributes:
        names: joint names.
        position: peak excursion beyond the centre, as a share of the half range
            (1 = at a position limit).
        velocity: peak speed / speed limit.
        acceleration: peak acceleration / acceleration limit.
    """

    names: tuple[str, ...]
    position: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray

    @property
    def worst(self) -> tuple[str, str, float]:
        """(limit kind, joint, ratio) of the largest ratio."""
        best = ("position", self.names[0], -1.0)
        for kind in ("position", "velocity", "acceleration"):
            r = getattr(self, kind)
            i = int(np.argmax(r))
            if r[i] > best[2]:
                best = (kind, self.names[i], float(r[i]))
        return best


class StrikeTrajectory:
    """The seed-000 strike of the job arm (see the module docstring).

    Args:
        model: the humanoid (fixed base, ``world_frame="W"``); used for the hand
            Jacobian at the target and the joint limits.
        arm: the job arm, ``right`` (the paper's) or ``left`` (mirrored).
        target_speed: hand speed at the target [m/s] along the paper's direction
            ``[1.76, 0, 0.38]`` (left arm: y mirrored); default the paper's 1.8 m/s.
        initial, ready, target: poses [rad] by joint name (defaults: the module's).
        durations: initial->ready, wait, ready->target, target->ready [s].
        start_time: time [s] at which the motion starts (before it: hold initial).
    """

    def __init__(
        self,
        model: RobotModel,
        *,
        arm: str = "right",
        target_speed: float | None = None,
        initial: Mapping[str, float] | None = None,
        ready: Mapping[str, float] | None = None,
        target: Mapping[str, float] | None = None,
        durations: Sequence[float] = PAPER_DURATIONS,
        start_time: float = 0.0,
    ) -> None:
        direction = np.array(PAPER_HAND_VELOCITY)
        paper_speed = float(np.linalg.norm(direction))
        speed = paper_speed if target_speed is None else float(target_speed)
        if not np.isfinite(speed) or speed < 0:
            raise ConfigurationError(f"target_speed={target_speed} must be a finite speed >= 0 m/s")
        if len(durations) != 4 or not all(np.isfinite(d) and d > 0 for d in durations):
            raise ConfigurationError(
                f"durations={list(durations)}: expected 4 positive times [s] (to ready, wait, "
                "strike, return); the paper's are [0.3, 0.3, 0.3, 0.5]")
        if not np.isfinite(start_time) or start_time < 0:
            raise ConfigurationError(f"start_time={start_time} must be >= 0 s")
        self.model = model
        self.arm = arm
        self.joint_names: tuple[str, ...] = tuple(f"{arm}_{j}" for j in ARM_JOINTS)
        self.target_speed = speed
        self.durations = tuple(float(d) for d in durations)
        self.start_time = float(start_time)
        poses: list[np.ndarray] = []
        for given, default in ((initial, RIGHT_INITIAL_DEG), (ready, RIGHT_READY_DEG),
                               (target, RIGHT_TARGET_DEG)):
            by_name = dict(arm_pose(arm, default)) if given is None else dict(given)
            missing = [n for n in self.joint_names if n not in by_name]
            if missing:
                raise ConfigurationError(f"a strike pose lacks joints {missing}")
            poses.append(np.array([by_name[n] for n in self.joint_names]))
        self.initial, self.ready, self.target = poses
        lower, upper = model.position_limits(self.joint_names)
        for label, pose in (("initial", self.initial), ("ready", self.ready),
                            ("target", self.target)):
            if np.any(pose < lower) or np.any(pose > upper):
                bad = [n for n, p, lo, hi in zip(self.joint_names, pose, lower, upper, strict=True)
                       if p < lo or p > hi]
                raise ConfigurationError(f"the {label} pose is outside the joint limits at {bad}")
        self.hand_velocity = direction / paper_speed * speed
        if arm == "left":
            self.hand_velocity[1] = -self.hand_velocity[1]
        q_target = model.configuration(dict(zip(self.joint_names, self.target, strict=True)))
        jac = model.frame_jacobian(f"{arm}_hand", q_target)[:, model.v_index(self.joint_names)]
        twist = np.concatenate([self.hand_velocity, np.zeros(3)])
        #: joint velocities at the target [rad/s]: J^+ [v_T; 0]
        self.target_velocity = np.linalg.pinv(jac) @ twist
        zero = np.zeros(len(self.joint_names))
        t1, t2, t3, t4 = self.durations
        self._segments = (
            (0.0, t1, quintic(self.initial, zero, zero, self.ready, zero, zero, t1), "to_ready"),
            (t1, t2, quintic(self.ready, zero, zero, self.ready, zero, zero, t2), "wait"),
            (t1 + t2, t3, quintic(self.ready, zero, zero, self.target, self.target_velocity,
                                  zero, t3), "strike"),
            (t1 + t2 + t3, t4, quintic(self.target, self.target_velocity, zero, self.ready, zero,
                                       zero, t4), "return"),
        )
        self._limits = (lower, upper, model.velocity_limits(self.joint_names),
                        np.array([arm_acceleration_limit(n) for n in self.joint_names]))

    @property
    def duration(self) -> float:
        """Length of the motion [s] from ``start_time``."""
        return float(sum(self.durations))

    @property
    def strike_time(self) -> float:
        """Time [s] at which the hand reaches the target (0.9 s after the start in the paper)."""
        return self.start_time + sum(self.durations[:3])

    def sample(self, t: float) -> StrikeSample:
        """Reference at time ``t`` [s] (holds the initial pose before, the ready pose after)."""
        tau = t - self.start_time
        zero = np.zeros(len(self.joint_names))
        if tau <= 0:
            return StrikeSample(self.initial.copy(), zero, zero.copy(), "to_ready")
        for begin, length, coeffs, phase in self._segments:
            if tau <= begin + length:
                p, v, a = _evaluate(coeffs, tau - begin)
                return StrikeSample(p, v, a, phase)
        return StrikeSample(self.ready.copy(), zero, zero.copy(), "hold")

    def sampled(self, dt: float, extra: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                               np.ndarray]:
        """Times, positions, velocities, accelerations every ``dt`` [s] to the end plus ``extra``."""
        n = round((self.start_time + self.duration + extra) / dt) + 1
        times = np.arange(n) * dt
        samples = [self.sample(float(t)) for t in times]
        return (times, np.array([s.position for s in samples]),
                np.array([s.velocity for s in samples]),
                np.array([s.acceleration for s in samples]))

    def hand_twist(self, t: float, q_rest: np.ndarray | None = None) -> np.ndarray:
        """Hand twist ``[v; w]`` in ``W`` [m/s, rad/s] of the reference at ``t``.

        ``q_rest``: the configuration of the other joints (default neutral).
        """
        s = self.sample(t)
        q = self.model.neutral() if q_rest is None else np.array(q_rest, dtype=float)
        q[self.model.q_index(self.joint_names)] = s.position
        jac = self.model.frame_jacobian(f"{self.arm}_hand", q)[:, self.model.v_index(self.joint_names)]
        return np.asarray(jac @ s.velocity)

    def limit_ratios(self, dt: float = 0.001) -> LimitRatios:
        """Peak position, speed and acceleration over the motion as shares of seed 000's Table 2."""
        _, pos, vel, acc = self.sampled(dt)
        lower, upper, vmax, amax = self._limits
        centre = (lower + upper) / 2.0
        half = (upper - lower) / 2.0
        return LimitRatios(
            self.joint_names,
            np.max(np.abs(pos - centre), axis=0) / half,
            np.max(np.abs(vel), axis=0) / vmax,
            np.max(np.abs(acc), axis=0) / amax,
        )
