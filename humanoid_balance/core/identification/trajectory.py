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

A real joint cannot turn from ``+v`` to ``-v`` in no time: with an
acceleration limit ``a`` the :class:`PlanFollower` makes every pass and every
approach a rest-to-rest move (:func:`rest_to_rest`: accelerate at ``a``,
cruise at the sweep speed, brake at ``a``), and :class:`BrakingRamp` stops a
moving command within the same limit (a hold never steps the velocity to zero).
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


def rest_to_rest_duration(distance: float, speed: float, acceleration: float = math.inf) -> float:
    """Time [s] of a rest-to-rest move over ``distance`` [rad] at most at ``speed`` [rad/s].

    Accelerating and braking at ``acceleration`` [rad/s^2] (``inf``: the speed is
    reached at once, the move takes ``distance / speed``): a trapezoid,
    ``d / v + v / a``, or a triangle, ``2 sqrt(d / a)``, when the distance is too
    short to reach the speed (``d < v^2 / a``).
    """
    if distance <= 0.0:
        return 0.0
    if math.isinf(acceleration):
        return distance / speed
    if distance >= speed * speed / acceleration:
        return distance / speed + speed / acceleration
    return 2.0 * math.sqrt(distance / acceleration)


def rest_to_rest(distance: float, speed: float, acceleration: float, t: float
                 ) -> tuple[float, float]:
    """Travel [rad] and speed [rad/s] at ``t`` [s] of the move of :func:`rest_to_rest_duration`.

    .. math::

        s(t) = \\begin{cases} a t^2 / 2 & t < t_a \\\\
                              a t_a^2 / 2 + v_p (t - t_a) & t_a \\le t < T - t_a \\\\
                              d - a (T - t)^2 / 2 & T - t_a \\le t \\end{cases},
        \\qquad v_p = \\min(v, \\sqrt{d a}),\\; t_a = v_p / a

    ``t`` is clipped to ``[0, T]``.
    """
    total = rest_to_rest_duration(distance, speed, acceleration)
    t = min(max(t, 0.0), total)
    if total == 0.0:
        return 0.0, 0.0
    if math.isinf(acceleration):
        return speed * t, (speed if t < total else 0.0)
    peak = min(speed, math.sqrt(distance * acceleration))
    t_acc = peak / acceleration
    if t < t_acc:
        return 0.5 * acceleration * t * t, acceleration * t
    left = total - t
    if left < t_acc:
        return distance - 0.5 * acceleration * left * left, acceleration * left
    return 0.5 * acceleration * t_acc * t_acc + peak * (t - t_acc), peak


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

    With an ``acceleration`` limit every approach and every pass of a sweep is
    a rest-to-rest move (:func:`rest_to_rest`): the joint accelerates at
    ``acceleration`` to the sweep speed and brakes at it to rest at the turn,
    so the target's velocity changes by at most ``acceleration * dt`` in ``dt``
    (a pass lasts ``speed / acceleration`` longer than eq. 11's ``T_h``).
    Without one (``None``), eq. 11's triangle wave: the velocity steps at the
    turns.

    Args:
        plan: the sweeps, in the order they run.
        start: the joint positions when the plan starts [rad].
        settle_s: rest after each approach [s].
        acceleration: acceleration limit of every joint [rad/s^2] (> 0), or None.
    """

    def __init__(self, plan: Sequence[Sweep], start: np.ndarray, settle_s: float = 0.5,
                 acceleration: float | None = None) -> None:
        if not plan:
            raise ConfigurationError("an identification plan needs at least one sweep")
        if acceleration is not None and not (math.isfinite(acceleration) and acceleration > 0.0):
            raise ConfigurationError(f"acceleration={acceleration} rad/s^2: expected a finite "
                                     "value > 0, or None for eq. 11's triangle wave")
        start = np.asarray(start, dtype=float)
        if not np.all(np.isfinite(start)):
            raise ConfigurationError(f"start={start.tolist()} rad: expected finite positions")
        self.plan = list(plan)
        self.acceleration = math.inf if acceleration is None else float(acceleration)
        self._segments: list[tuple[float, float, str, int, np.ndarray, np.ndarray, Sweep]] = []
        t = 0.0
        here = start
        for sweep in self.plan:
            target = sweep.start_configuration()
            approach = rest_to_rest_duration(float(np.abs(target - here).max()), sweep.speed,
                                             self.acceleration) + settle_s
            self._segments.append((t, t + approach, "approach", sweep.joint, here, target, sweep))
            t += approach
            duration = 2 * sweep.cycles * self._pass_duration(sweep)
            self._segments.append((t, t + duration, "sweep", sweep.joint, target, target, sweep))
            t += duration
            here = target
        self.duration = t
        self._end = here

    def _pass_duration(self, sweep: Sweep) -> float:
        return rest_to_rest_duration(abs(sweep.end - sweep.start), sweep.speed, self.acceleration)

    def _sweep_at(self, sweep: Sweep, t: float) -> tuple[np.ndarray, np.ndarray, str]:
        """Target, its velocity and the pass name ``t`` [s] into ``sweep``."""
        period = self._pass_duration(sweep)
        k = min(math.floor(t / period), 2 * sweep.cycles - 1)
        travel, speed = rest_to_rest(abs(sweep.end - sweep.start), sweep.speed, self.acceleration,
                                     t - k * period)
        sign = math.copysign(1.0, sweep.end - sweep.start)
        forward = k % 2 == 0
        q = sweep.start_configuration()
        qd = np.zeros_like(q)
        q[sweep.joint] = sweep.start + sign * (travel if forward else abs(sweep.end - sweep.start)
                                               - travel)
        qd[sweep.joint] = sign * (speed if forward else -speed)
        return q, qd, ("forward" if forward else "backward")

    def at(self, t: float) -> PlanPoint:
        """The target at time ``t`` [s] since the plan's start."""
        n = len(self._end)
        if t >= self.duration:
            return PlanPoint(self._end.copy(), np.zeros(n), self.plan[-1].joint, "done", 100.0)
        for t0, t1, kind, joint, a, b, sweep in self._segments:
            if t < t1:
                percent = 100.0 * t / self.duration
                if kind == "approach":
                    distance = float(np.abs(b - a).max())
                    moving = rest_to_rest_duration(distance, sweep.speed, self.acceleration)
                    if distance == 0.0 or t - t0 >= moving:
                        return PlanPoint(b.copy(), np.zeros(n), joint, "approach", percent)
                    travel, speed = rest_to_rest(distance, sweep.speed, self.acceleration, t - t0)
                    unit = (b - a) / distance
                    return PlanPoint(a + travel * unit, speed * unit, joint, "approach", percent)
                q, qd, phase = self._sweep_at(sweep, t - t0)
                return PlanPoint(q, qd, joint, phase, percent)
        raise AssertionError("unreachable: t < duration is inside a segment")


class BrakingRamp:
    """A moving command brought to rest within an acceleration limit, on its line of motion.

    From ``position`` and ``velocity`` at ``t = 0`` every joint brakes at a
    constant rate, all reaching rest together at
    ``T = max_i |v_i| / a_i`` (so no joint brakes harder than its limit and
    the stop stays on the straight line the command was moving along):

    .. math::

        q(t) = q_0 + v_0 t - \\frac{v_0}{2T} t^2, \\quad \\dot q(t) = v_0 (1 - t / T),
        \\qquad 0 \\le t \\le T

    and ``q_0 + v_0 T / 2`` after. A hold built from the last command (not from
    a measurement, which may be old) continues the motion the drives follow
    and stops it smoothly.

    Args:
        position: the command's positions at ``t = 0`` [rad].
        velocity: its velocities [rad/s].
        acceleration: the joints' acceleration limits [rad/s^2] (> 0), one or per joint.
    """

    def __init__(self, position: np.ndarray, velocity: np.ndarray,
                 acceleration: float | np.ndarray) -> None:
        self.position = np.array(position, dtype=float)
        self.velocity = np.array(velocity, dtype=float)
        limit = np.broadcast_to(np.asarray(acceleration, dtype=float), self.position.shape)
        if self.velocity.shape != self.position.shape:
            raise ConfigurationError(f"{self.velocity.shape=} but {self.position.shape=}")
        if not (np.all(np.isfinite(limit)) and np.all(limit > 0.0)):
            raise ConfigurationError(f"acceleration={np.asarray(acceleration).tolist()} rad/s^2: "
                                     "expected finite values > 0")
        if not (np.all(np.isfinite(self.position)) and np.all(np.isfinite(self.velocity))):
            raise ConfigurationError(f"cannot brake from a non-finite command: position "
                                     f"{self.position.tolist()}, velocity {self.velocity.tolist()}")
        self.duration = float(np.max(np.abs(self.velocity) / limit, initial=0.0))

    @property
    def final_position(self) -> np.ndarray:
        """Where the joints come to rest [rad]."""
        return self.position + 0.5 * self.velocity * self.duration

    def at(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Positions [rad] and velocities [rad/s] at ``t`` [s] after the start of the braking."""
        if self.duration == 0.0 or t >= self.duration:
            return self.final_position, np.zeros_like(self.velocity)
        t = max(t, 0.0)
        return (self.position + self.velocity * (t - 0.5 * t * t / self.duration),
                self.velocity * (1.0 - t / self.duration))


class RampTime:
    """The time elapsed on a braking ramp, from readings of a clock that may go back.

    A ROS clock is not monotonic: a restarted simulation (or ``use_sim_time``
    switched on) sets it back, possibly by years. Measured as ``now - start``
    the elapsed time of a stop would then be negative and the ramp would hold
    its start velocity. Here the elapsed time only grows: by the clock's
    increment since the previous reading, and by one command period ``Δ`` for
    a reading earlier than the previous one (the time base restarts there; the
    command timer ticked once):

    .. math::

        \\tau_k = \\tau_{k-1} + \\begin{cases} t_k - t_{k-1} & t_k \\ge t_{k-1} \\\\
        \\Delta & t_k < t_{k-1} \\end{cases}, \\qquad \\tau_0 = 0

    So a command of the ramp is as far along it as the clock says time passed
    since the one before (its stamp), a period after a step back, and a ramp of
    duration ``T`` read every ``Δ`` ends within ``ceil(T / Δ)`` readings
    whatever the clock does.

    Args:
        start_ns: the clock reading [ns] at the ramp's start (the last command's time).
        period_ns: the command period [ns] (> 0), what a reading after a step back counts.
    """

    def __init__(self, start_ns: int, period_ns: int) -> None:
        if period_ns <= 0:
            raise ConfigurationError(f"{period_ns=}: expected > 0 ns (the command period)")
        self.period_ns = int(period_ns)
        self.elapsed_ns = 0
        self._previous_ns = int(start_ns)

    @property
    def elapsed(self) -> float:
        """The time elapsed on the ramp [s]."""
        return self.elapsed_ns * 1e-9

    def advance(self, now_ns: int) -> float:
        """Advance to the clock reading ``now_ns`` [ns]; the elapsed time [s] (never decreases)."""
        step = int(now_ns) - self._previous_ns
        self.elapsed_ns += step if step >= 0 else self.period_ns
        self._previous_ns = int(now_ns)
        return self.elapsed
