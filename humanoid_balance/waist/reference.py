"""The waist's shaped joint reference: a command's path, a hold, or a controlled stop.

A command (``N`` points ``[pitch, roll]`` on their times, :func:`command_arrays` from a
``JointTrajectory``) is checked before use
(:func:`points_problem`): non-finite values are refused; a point outside the joint range
is refused (``limit_policy="refuse"``) or the path is clamped into it along its segments
(``"clamp"``, :func:`clamp_path`), with a message saying which point and by how much. It is
then planned (:func:`plan_command`) into a
:class:`~humanoid_balance.core.blended_trajectory.BlendedTrajectory` from the reference
now, within the speed and acceleration limits: the path the servo follows
(:class:`WaistTrajectory`, on the controller's clock).

:class:`WaistReference` holds what the reference is at any time: that path, a hold at rest,
or a controlled stop, which brakes from where the reference is, as it moves, to rest
within ``acceleration_limit_rad_s2``, all joints together (the direction kept) and each
resting before a range edge ahead (:mod:`humanoid_balance.core.braking`). Positions in rad,
velocities in rad/s, times in s on the controller's clock.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from humanoid_balance.core.blended_trajectory import BlendedTrajectory
from humanoid_balance.core.braking import StopPlan, plan_stop
from humanoid_balance.core.waist_kinematics import DifferentialWaist
from humanoid_balance.exceptions import InvalidInputError
from humanoid_balance.waist.config import WaistServoConfig
from humanoid_balance.waist.pairs import ZERO, Pair
from humanoid_balance.waist.states import ControllerState

__all__ = ["TrajectoryResult", "WaistReference", "WaistTrajectory", "clamp_path", "command_arrays",
           "plan_command", "points_problem"]

FloatArray = NDArray[np.float64]


class TrajectoryResult(NamedTuple):
    """What became of a trajectory: accepted or not, clamped or not, and why."""

    accepted: bool
    clamped: bool
    message: str


@dataclass(frozen=True)
class WaistTrajectory:
    """The shaped joint reference of a command (see :mod:`humanoid_balance.core.blended_trajectory`).

    Attributes:
        path: the blended path, times from ``start_s``.
        start_s: controller-clock time of the path's time 0 (when it was planned).
    """

    path: BlendedTrajectory
    start_s: float

    @property
    def end_s(self) -> float:
        """Clock time at which the path is at rest on its last point."""
        return self.start_s + self.path.duration_s

    def sample(self, now_s: float) -> tuple[FloatArray, FloatArray]:
        """Position [rad] and velocity [rad/s] at clock time ``now_s`` (held at the end)."""
        return self.path.sample(now_s - self.start_s)

    def sample_pair(self, now_s: float) -> tuple[Pair, Pair]:
        """:meth:`sample` on floats, for the servo period (:meth:`BlendedTrajectory.sample_floats`)."""
        q, qd = self.path.sample_floats(now_s - self.start_s)
        return (q[0], q[1]), (qd[0], qd[1])


def clamp_path(times_s: FloatArray, positions_rad: FloatArray, lower: FloatArray,
               upper: FloatArray) -> tuple[FloatArray, FloatArray]:
    """A piecewise-linear path clamped into ``[lower, upper]`` along its segments.

    Where a segment crosses a bound, a point is inserted at the crossing, so the
    clamped path follows the commanded one up to the edge and then stays on it
    (clamping the points alone would bend the in-range part of a segment).

    Args:
        times_s: (N,) increasing times [s].
        positions_rad: (N, J) points [rad].
        lower, upper: (J,) the range [rad].

    Returns:
        The times and the clamped points (N or more).
    """
    out_t = [float(times_s[0])]
    out_p = [positions_rad[0]]
    for k in range(1, len(times_s)):
        t0, t1 = float(times_s[k - 1]), float(times_s[k])
        p0, p1 = positions_rad[k - 1], positions_rad[k]
        crossings = []
        for bound in (lower, upper):
            d = p1 - p0
            with np.errstate(divide="ignore", invalid="ignore"):
                f = (bound - p0) / d
            crossings += [float(x) for x in f if 0.0 < x < 1.0]
        for f in sorted(set(crossings)):
            out_t.append(t0 + f * (t1 - t0))
            out_p.append(p0 + f * (p1 - p0))
        out_t.append(t1)
        out_p.append(p1)
    times = np.array(out_t)
    keep = np.concatenate([[True], np.diff(times) > 0.0])
    return times[keep], np.clip(np.array(out_p), lower, upper)[keep]


def command_arrays(joint_names: Sequence[str], points: Sequence[Any],
                   joints: tuple[str, str] = ("waist_pitch", "waist_roll"),
                   ) -> tuple[FloatArray, FloatArray] | str:
    """A ``trajectory_msgs/JointTrajectory``'s points as times (N,) [s] and ``[pitch, roll]``
    positions (N, 2) [rad] of ``joints``, or why it is ignored."""
    try:
        index = [list(joint_names).index(j) for j in joints]
    except ValueError:
        return f"ignored: joints {list(joint_names)} must include {list(joints)}"
    if not points:
        return "ignored: no points"
    try:
        times = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec
                          for p in points])
        positions = np.array([[p.positions[i] for i in index] for p in points], dtype=float)
    except IndexError:
        return "ignored: a point lacks positions"
    return times, positions


def points_problem(times: FloatArray, positions: FloatArray) -> str | None:
    """Why a command's ``times`` (N,) [s] and ``positions`` (N, 2) [rad] cannot be used at all
    (the refusal), or None."""
    if (positions.ndim != 2 or positions.shape[1] != 2 or positions.shape[0] != times.shape[0]
            or times.size == 0):
        return (f"refused: expected N times and N x 2 positions (pitch, roll), got times "
                f"{times.shape} and positions {positions.shape}")
    if not (np.all(np.isfinite(times)) and np.all(np.isfinite(positions))):
        return "refused: the trajectory holds NaN or infinite values"
    if times[0] < 0.0 or np.any(np.diff(times) <= 0.0):
        return "refused: point times must be >= 0 and strictly increasing"
    return None


def plan_command(times: FloatArray, positions: FloatArray, now_s: float, start_s: float | None,
                 q_now: FloatArray, qd_now: FloatArray, config: WaistServoConfig,
                 ) -> tuple[BlendedTrajectory | None, TrajectoryResult]:
    """A command's shaped path from the reference now, or None and the refusal.

    Args:
        times, positions: the command's points (checked by :func:`points_problem`).
        now_s: controller clock now.
        start_s: clock time of ``times = 0`` (None: now); points already past are dropped
            (the last one is kept, reached as soon as the limits allow).
        q_now, qd_now: the reference and its velocity now (where the path starts).
        config: the joint range, the limit policy, the speed and acceleration limits.
    """
    waist = config.waist
    lo = np.array([waist.pitch_limits_rad[0], waist.roll_limits_rad[0]])
    hi = np.array([waist.pitch_limits_rad[1], waist.roll_limits_rad[1]])
    outside = np.argwhere((positions < lo - 1e-12) | (positions > hi + 1e-12))
    clamped = False
    message = "accepted"
    if outside.size:
        k, j = (int(v) for v in outside[0])
        name = ("pitch", "roll")[j]
        detail = (f"point {k} {name} {math.degrees(positions[k, j]):.3f} deg is outside "
                  f"[{math.degrees(lo[j]):.1f}, {math.degrees(hi[j]):.1f}] deg "
                  f"({len(outside)} values out of range)")
        if config.limit_policy == "refuse":
            return None, TrajectoryResult(False, False, (
                f"refused: {detail}; send targets inside the joint range "
                "(or set limit_policy to clamp)"))
        times, positions = clamp_path(times, positions, lo, hi)
        clamped = True
        message = f"clamped: {detail}; the path was clamped at the range's edge"
    ahead = times + ((now_s if start_s is None else float(start_s)) - now_s)
    future = ahead > 0.0
    if not np.any(future):
        ahead, positions = np.array([config.gains.dt]), positions[-1:]
    else:
        ahead, positions = ahead[future], positions[future]
    try:
        path = BlendedTrajectory.plan(
            ahead, positions, initial_position=q_now, initial_velocity=qd_now,
            velocity_limit=config.velocity_limit_rad_s,
            acceleration_limit=config.acceleration_limit_rad_s2, lower=lo, upper=hi)
    except InvalidInputError as exc:
        return None, TrajectoryResult(False, False, f"refused: {exc}")
    if path.end_lag_s > 1e-3:
        message += (f"; beyond the joints' limits: the waist comes to rest on the last "
                    f"point {path.end_lag_s:.3f} s after the command's own stop")
    return path, TrajectoryResult(True, clamped, message)


class WaistReference:
    """Where the shaped reference comes from: a command's path, a hold, or a controlled stop.

    A stop is planned on the first servo period after it was asked for
    (:meth:`step_stop`), from the reference then; until then it is the path it brakes from.

    Args:
        waist: the joint range.
    """

    def __init__(self, waist: DifferentialWaist) -> None:
        self.waist = waist
        #: the command followed (RUNNING), None otherwise
        self.path: WaistTrajectory | None = None
        #: the position of a hold [rad]
        self.hold_q: Pair = ZERO
        self._stop_from: WaistTrajectory | None = None
        self._stop_plan: StopPlan | None = None
        self._stop_start_s = 0.0
        self._stop_end_s = 0.0  # when the plan rests (its duration taken once, not every period)

    def clear(self) -> None:
        """No path and no stop (the drives are disabled)."""
        self.path = None
        self._stop_from, self._stop_plan = None, None

    def hold(self, q: Pair) -> None:
        """Hold at ``q`` [rad] (an enable)."""
        self.clear()
        self.hold_q = q

    def follow(self, path: WaistTrajectory) -> None:
        """Follow a command's path (replaces the path or stop there was)."""
        self.clear()
        self.path = path

    def begin_stop(self, running: bool) -> None:
        """A controlled stop from the path followed now (``running``) or from the hold."""
        self._stop_from = self.path if running else None
        self._stop_plan = None
        self.path = None

    def step_stop(self, now_s: float, acceleration_limit_rad_s2: float) -> bool:
        """A controlled stop's servo period: planned on its first (from the reference then);
        whether it still brakes (False: it rests, and :attr:`hold_q` is where)."""
        plan = self._stop_plan
        if plan is None:
            q0, v0 = self.stop_at(now_s)
            (p_lo, p_hi), (r_lo, r_hi) = self.waist.pitch_limits_rad, self.waist.roll_limits_rad
            plan = plan_stop(q0, v0, acceleration_limit_rad_s2, (p_lo, r_lo), (p_hi, r_hi))
            self._stop_plan, self._stop_start_s, self._stop_from = plan, now_s, None
            self._stop_end_s = now_s + plan.duration_s
        if now_s < self._stop_end_s:
            return True
        end = plan.end_position
        self.hold_q = (end[0], end[1])
        self._stop_plan = None
        return False

    def stop_at(self, now_s: float) -> tuple[Pair, Pair]:
        """A controlled stop's reference at ``now_s``: its plan, or (not planned yet) the path
        it brakes from (the hold's position for a stop from a hold)."""
        plan = self._stop_plan
        if plan is not None:
            (q0, q1), (v0, v1) = plan.sample(now_s - self._stop_start_s)
            return (q0, q1), (v0, v1)
        source = self._stop_from
        if source is None:
            return self.hold_q, ZERO
        q, qd = source.sample_pair(now_s)
        return self.clamp_joint(q), qd

    def at(self, now_s: float, state: ControllerState) -> tuple[Pair, Pair]:
        """The reference and its velocity at ``now_s`` in ``state``: where a new path starts."""
        if state == ControllerState.RUNNING and self.path is not None:
            q, qd = self.path.sample_pair(now_s)
            return self.clamp_joint(q), qd
        if state == ControllerState.STOPPING:
            return self.stop_at(now_s)
        return self.hold_q, ZERO

    def clamp_joint(self, q: Pair) -> Pair:
        """``[pitch, roll]`` clamped into the joint range (:meth:`DifferentialWaist.clamp`)."""
        if not (math.isfinite(q[0]) and math.isfinite(q[1])):
            raise InvalidInputError(f"q must be finite, got {[q[0], q[1]]}")
        (p_lo, p_hi), (r_lo, r_hi) = self.waist.pitch_limits_rad, self.waist.roll_limits_rad
        return min(max(q[0], p_lo), p_hi), min(max(q[1], r_lo), r_hi)
