"""Identification trajectory of seed 004 (eq. 11).

Joint i sweeps back and forth at constant speed between two angles while
every other joint holds a static configuration:

.. math::

    \\theta_i(t) = \\theta_{i,start} + (-1)^{\\lfloor t / T_h \\rfloor}\\,\\dot\\theta_i\\,
    (t - T_h \\lfloor t / T_h \\rfloor) \\text{ (mirrored on the way back)},
    \\qquad T_h = |\\theta_{i,end} - \\theta_{i,start}| / |\\dot\\theta_i|

(a triangle wave; ``T_i = 2 T_h`` is the paper's period). The joints are
identified from the last to the first, so a plan lists the sweeps of
joints n, n-1, ..., 1, each with its static configuration.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from humanoid_balance.exceptions import ConfigurationError

#: the paper's speed bound: 3 deg/s
MAX_SPEED_RAD_S = math.radians(3.0)


@dataclass(frozen=True)
class Sweep:
    """One joint's identification sweep (eq. 11).

    Attributes:
        joint: 0-based index of the sweeping joint.
        static: the configuration of every joint [rad]; the sweeping joint's entry is ignored.
        start: first angle of the sweep [rad].
        end: turning angle [rad].
        speed: sweep speed [rad/s], > 0 and <= the 3 deg/s bound.
        cycles: number of forward + backward cycles.
    """

    joint: int
    static: np.ndarray
    start: float
    end: float
    speed: float
    cycles: int = 1

    def __post_init__(self) -> None:
        if not 0.0 < self.speed <= MAX_SPEED_RAD_S + 1e-12:
            raise ConfigurationError(
                f"sweep speed {math.degrees(self.speed):.3f} deg/s of joint {self.joint + 1}: "
                "expected > 0 and <= 3 deg/s (the quasi-static bound of seed 004)")
        if not abs(self.end - self.start) > 0.0:
            raise ConfigurationError(f"sweep of joint {self.joint + 1}: start == end "
                                     f"({self.start} rad): give two different angles")
        if self.cycles < 1:
            raise ConfigurationError(f"cycles={self.cycles}: expected >= 1")
        if not 0 <= self.joint < len(self.static):
            raise ConfigurationError(f"joint index {self.joint} outside 0..{len(self.static) - 1}")

    @property
    def half_period(self) -> float:
        """``T_h``: time of one pass [s]."""
        return abs(self.end - self.start) / self.speed

    @property
    def duration(self) -> float:
        """Whole sweep [s]."""
        return 2.0 * self.half_period * self.cycles

    def start_configuration(self) -> np.ndarray:
        """The static configuration with the sweeping joint at its start angle [rad]."""
        q = np.array(self.static, dtype=float)
        q[self.joint] = self.start
        return q

    def sample(self, t: np.ndarray | float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions [rad] (N, n), velocities [rad/s] (N, n) and pass direction (+1/-1) at t [s]."""
        times = np.clip(np.atleast_1d(np.asarray(t, dtype=float)), 0.0, self.duration)
        th = self.half_period
        k = np.minimum(np.floor(times / th), 2 * self.cycles - 1)
        tau = times - th * k
        direction = np.where(k % 2 == 0, 1.0, -1.0)
        sign = math.copysign(1.0, self.end - self.start)
        travel = np.where(direction > 0, tau, th - tau) * self.speed
        q = np.tile(self.start_configuration(), (times.size, 1))
        q[:, self.joint] = self.start + sign * travel
        qd = np.zeros_like(q)
        qd[:, self.joint] = sign * direction * self.speed
        return q, qd, direction


def identification_plan(
    static: Sequence[np.ndarray] | np.ndarray, ranges: Sequence[tuple[float, float]],
    speed: float = MAX_SPEED_RAD_S, cycles: int = 1,
) -> list[Sweep]:
    """Sweeps of joints n .. 1 (back to front, as eq. 10 identifies them).

    Args:
        static: per joint i, the static configuration held while joint i sweeps [rad].
        ranges: per joint i, (start, end) of its sweep [rad].
        speed: sweep speed [rad/s].
        cycles: forward + backward cycles per joint.
    """
    if len(static) != len(ranges):
        raise ConfigurationError(f"{len(static)} static configurations for {len(ranges)} ranges")
    return [Sweep(i, np.asarray(static[i], float), float(ranges[i][0]), float(ranges[i][1]),
                  speed, cycles) for i in range(len(ranges) - 1, -1, -1)]


@dataclass(frozen=True)
class PlanPoint:
    """Where a plan is at time t.

    Attributes:
        position: position target of every joint [rad].
        velocity: velocity of the target [rad/s].
        joint: 0-based index of the joint being identified.
        phase: ``approach``, ``forward``, ``backward`` or ``done``.
        percent: share of the whole plan's time elapsed [%].
    """

    position: np.ndarray
    velocity: np.ndarray
    joint: int
    phase: str
    percent: float


class PlanFollower:
    """Position targets of a whole plan: approach each sweep's start, settle, sweep (eq. 11).

    Approaches are straight lines in joint space from where the previous
    phase ended (the first from ``start``), with the fastest joint at the
    sweep speed, followed by ``settle_s`` of rest.

    Args:
        plan: the sweeps, in the order they run.
        start: the joint positions when the plan starts [rad].
        settle_s: rest after each approach [s].
    """

    def __init__(self, plan: Sequence[Sweep], start: np.ndarray, settle_s: float = 0.5) -> None:
        if not plan:
            raise ConfigurationError("an identification plan needs at least one sweep")
        self.plan = list(plan)
        self._segments: list[tuple[float, float, str, int, np.ndarray, np.ndarray, Sweep]] = []
        t = 0.0
        here = np.asarray(start, dtype=float)
        for sweep in self.plan:
            target = sweep.start_configuration()
            approach = float(np.abs(target - here).max()) / sweep.speed + settle_s
            self._segments.append((t, t + approach, "approach", sweep.joint, here, target, sweep))
            t += approach
            self._segments.append((t, t + sweep.duration, "sweep", sweep.joint, target, target,
                                   sweep))
            t += sweep.duration
            here = target
        self.duration = t
        self._end = here

    def at(self, t: float) -> PlanPoint:
        """The target at time ``t`` [s] since the plan's start."""
        n = len(self._end)
        if t >= self.duration:
            return PlanPoint(self._end.copy(), np.zeros(n), self.plan[-1].joint, "done", 100.0)
        for t0, t1, kind, joint, a, b, sweep in self._segments:
            if t < t1:
                percent = 100.0 * t / self.duration
                if kind == "approach":
                    travel = float(np.abs(b - a).max())
                    moving = travel / sweep.speed
                    if travel == 0.0 or t - t0 >= moving:
                        return PlanPoint(b.copy(), np.zeros(n), joint, "approach", percent)
                    s = (t - t0) / moving
                    return PlanPoint(a + s * (b - a), (b - a) / moving, joint, "approach", percent)
                q, qd, direction = sweep.sample(t - t0)
                phase = "forward" if direction[0] > 0 else "backward"
                return PlanPoint(q[0], qd[0], joint, phase, percent)
        raise AssertionError("unreachable: t < duration is inside a segment")
