"""Reference shaping: a piecewise-linear joint path followed on its own timing, within speed and
acceleration limits.

A command (a list of points, perhaps clamped at the range's edge, ending in a stop)
is a piecewise-linear path whose velocity steps at every point. Tracked as it is,
the servo overshoots where the path stops dead (0.15 deg at a range edge, issue 14).
:class:`BlendedTrajectory` turns it into a reference whose acceleration stays within
``acceleration_limit`` and whose speed within ``velocity_limit``, on the command's own
times (issue 32: it never delays the rest of the path):

1. **The command's blended path** ``g(t)`` (linear segments with parabolic blends,
   "LSPB"): at every point ``k`` after the start the velocity changes from ``v_{k-1}`` to
   ``v_k`` during a blend of duration ``tau_k = max_j |v_k - v_{k-1}|_j / a`` centred on
   the point's commanded time (all joints share it, so a straight segment stays
   straight). A centred blend never passes the corner, so a stop ends exactly on its
   point and a clamped path never leaves the range:

   .. math::

       g(t) = p_k + v_{k-1} (t - t_k) + \\frac{v_k - v_{k-1}}{2 \\tau_k}
       (t - t_k + \\tau_k / 2)^2, \\quad |t - t_k| \\le \\tau_k / 2

   The last point is a stop (``v_n = 0``), blended the same way: the reference comes to
   rest ``tau_n / 2`` after the last point's time (its braking time). Where two blends
   would overlap (points too close for their velocity change) each gets its share of the
   segment, and ``g`` accelerates harder there than the limit allows.

2. **Catch-up windows.** Wherever ``g`` is beyond the limits (the start, when the
   reference's velocity now differs from the first segment's; blends that could not fit;
   segments faster than ``velocity_limit``) the reference leaves ``g`` at the window's
   start and rejoins it, position and velocity, at the earliest time ``T`` (on a
   :data:`JOIN_STEP_S` grid) at which some motion within the limits can: per joint, the
   velocity profiles from ``v_a`` to ``g'(T)`` with slope at most ``a`` and magnitude at
   most ``v_max`` form a convex set whose integrals are an interval
   ``[I_min(T), I_max(T)]`` (the profiles ``min(v_a + a t, g'(T) + a (T - t), v_max)``
   and its mirror); ``T`` is feasible when ``g(T) - q_a`` lies in it, and the profile
   is the convex combination of the two extremes with that integral. At the earliest
   ``T`` it is (almost) the extreme: the fastest catch-up the limits allow. Outside the
   windows the reference *is* ``g``, on the command's times.

Times are relative to the trajectory's start; positions in rad (any number of joints).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from humanoid_balance.exceptions import ConfigurationError, InvalidInputError

FloatArray = NDArray[np.float64]

#: grid of the times at which a catch-up window may rejoin the command's path [s]
JOIN_STEP_S = 1e-3
#: join times scanned at most per vectorised batch (a few hundred microseconds of numpy)
_BATCH = 512
#: relative slack on the limits when judging a piece of ``g`` (rounding, not tolerance)
_SLACK = 1e-9


@dataclass(frozen=True)
class Pieces:
    """A piecewise-quadratic joint path: piece ``i`` starts at ``start_s[i]`` at
    ``position[i]`` with ``velocity[i]`` and accelerates at ``acceleration[i]``; the last
    piece lasts for ever."""

    start_s: FloatArray
    position: FloatArray
    velocity: FloatArray
    acceleration: FloatArray

    def index(self, t_s: FloatArray) -> NDArray[np.intp]:
        """The piece each time of ``t_s`` falls in (0 before the first)."""
        return np.maximum(np.searchsorted(self.start_s, t_s, side="right") - 1, 0)

    def state(self, t_s: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Position, velocity and acceleration (each (n, J)) at the times ``t_s`` (n,)."""
        i = self.index(t_s)
        h = (np.asarray(t_s) - self.start_s[i])[:, None]
        a = self.acceleration[i]
        return (self.position[i] + self.velocity[i] * h + 0.5 * a * h * h,
                self.velocity[i] + a * h, a)


@dataclass(frozen=True)
class BlendedTrajectory:
    """The shaped reference of a command: its blended path, and catch-up windows where that
    path is beyond the limits.

    Build it with :meth:`plan`. Pieces are quadratics: piece ``i`` starts at
    ``piece_start_s[i]`` at ``piece_position[i]`` with ``piece_velocity[i]`` and
    accelerates at ``piece_acceleration[i]``.

    Attributes:
        catch_ups: (start, end) of each window off the command's timing [s].
        command: the command's blended path ``g`` (pieces as these).
        rest_s: when the command's blended path comes to rest on its last point (the last
            point's time plus half its stop blend) [s].
        piece_start_s: (M,) piece start times [s].
        piece_position: (M, J) [rad].
        piece_velocity: (M, J) [rad/s].
        piece_acceleration: (M, J) [rad/s^2].
    """

    catch_ups: tuple[tuple[float, float], ...]
    command: Pieces
    rest_s: float
    piece_start_s: FloatArray
    piece_position: FloatArray
    piece_velocity: FloatArray
    piece_acceleration: FloatArray

    @property
    def duration_s(self) -> float:
        """Time from the start until the reference is at rest on its last point [s]."""
        return float(self.piece_start_s[-1])

    @cached_property
    def max_lag_rad(self) -> float:
        """The largest distance, any joint, between the reference and the command's blended
        path inside the windows, on the join grid [rad] (0 without windows): computed when
        asked (the diagnostics' thread), not in the servo thread that plans."""
        grids = [np.arange(start, end, JOIN_STEP_S) for start, end in self.catch_ups]
        grid = np.concatenate(grids) if grids else np.empty(0)
        if not grid.size:
            return 0.0
        return float(np.max(np.abs(self.samples(grid)[0] - self.command.state(grid)[0])))

    @property
    def catch_up_s(self) -> float:
        """The longest window off the command's timing [s] (0: on it throughout)."""
        return max((end - start for start, end in self.catch_ups), default=0.0)

    @property
    def end_lag_s(self) -> float:
        """How much later than its command's own stop the reference comes to rest [s] (0 for
        a command within the limits: the stop's braking is the command's)."""
        return max(0.0, self.duration_s - self.rest_s)

    @classmethod
    def plan(cls, times_s: FloatArray, positions: FloatArray, *, initial_position: FloatArray,
             initial_velocity: FloatArray, velocity_limit: float, acceleration_limit: float,
             lower: FloatArray | None = None, upper: FloatArray | None = None
             ) -> BlendedTrajectory:
        """Blend the path from ``initial_position`` through ``positions`` on their times.

        Args:
            times_s: (N,) strictly increasing times of the points, > 0 [s].
            positions: (N, J) the points [rad].
            initial_position: (J,) where the reference is at time 0 [rad].
            initial_velocity: (J,) its velocity at time 0 [rad/s]; capped at
                ``velocity_limit``.
            velocity_limit: joint speed bound, > 0 [rad/s].
            acceleration_limit: joint acceleration bound, > 0 [rad/s^2].
            lower, upper: (J,) the joints' range [rad]: a catch-up never leaves it (nor
                goes further out than its start, for a reference that starts outside).

        Raises:
            ConfigurationError: a limit not finite and > 0.
            InvalidInputError: times or positions of the wrong shape, not finite, not
                increasing.
        """
        for name, value in (("velocity_limit", velocity_limit),
                            ("acceleration_limit", acceleration_limit)):
            if not math.isfinite(value) or value <= 0.0:
                raise ConfigurationError(f"{name} must be finite and > 0, got {value}")
        times = np.asarray(times_s, dtype=float).reshape(-1)
        pos = np.asarray(positions, dtype=float)
        q0 = np.asarray(initial_position, dtype=float).reshape(-1)
        v_init = np.clip(np.asarray(initial_velocity, dtype=float).reshape(-1),
                         -velocity_limit, velocity_limit)
        if pos.ndim != 2 or pos.shape != (times.size, q0.size) or v_init.size != q0.size \
                or times.size == 0:
            raise InvalidInputError(
                f"expected N times and N x {q0.size} positions, got times {times.shape} and "
                f"positions {pos.shape}")
        if not (np.all(np.isfinite(times)) and np.all(np.isfinite(pos))
                and np.all(np.isfinite(q0)) and np.all(np.isfinite(v_init))):
            raise InvalidInputError("the path holds NaN or infinite values")
        if times[0] <= 0.0 or np.any(np.diff(times) <= 0.0):
            raise InvalidInputError("point times must be > 0 and strictly increasing")
        knots = np.vstack([q0, pos])
        knot_times = np.concatenate([[0.0], times])
        command, rest_s = _command_path(knots, knot_times, acceleration_limit)
        limits = _Limits(velocity_limit, acceleration_limit,
                         *_range(lower, upper, q0))
        pieces, windows = _follow(command, v_init, limits)
        return cls(tuple(windows), command, rest_s, pieces.start_s,
                   pieces.position, pieces.velocity, pieces.acceleration)

    def sample(self, t_s: float) -> tuple[FloatArray, FloatArray]:
        """Position [rad] and velocity [rad/s] at ``t_s`` from the start (held at the ends)."""
        starts = self.piece_start_s
        if t_s <= starts[0]:
            return self.piece_position[0].copy(), self.piece_velocity[0].copy()
        i = int(np.searchsorted(starts, t_s, side="right")) - 1
        h = t_s - starts[i]
        a = self.piece_acceleration[i]
        v = self.piece_velocity[i]
        return self.piece_position[i] + v * h + 0.5 * a * h * h, v + a * h

    def samples(self, t_s: FloatArray) -> tuple[FloatArray, FloatArray]:
        """:meth:`sample` at many times (n,): positions and velocities, (n, J) each."""
        t = np.asarray(t_s, dtype=float).reshape(-1)
        pieces = Pieces(self.piece_start_s, self.piece_position, self.piece_velocity,
                        self.piece_acceleration)
        q, qd, _ = pieces.state(np.maximum(t, self.piece_start_s[0]))
        return q, qd

    def sample_floats(self, t_s: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """:meth:`sample` on Python floats (the same expressions joint by joint, so the same
        values): for a servo period on a few joints, where numpy's per-call overhead costs more
        than the arithmetic."""
        starts, pieces = self._float_pieces
        if t_s <= starts[0]:
            p, v, _ = pieces[0]
            return p, v
        i = bisect.bisect_right(starts, t_s) - 1  # numpy.searchsorted(side="right") - 1
        h = t_s - starts[i]
        p, v, a = pieces[i]
        return (tuple([pj + vj * h + 0.5 * aj * h * h for pj, vj, aj in zip(p, v, a, strict=True)]),
                tuple([vj + aj * h for vj, aj in zip(v, a, strict=True)]))

    @cached_property
    def _float_pieces(self) -> tuple[list[float], list[tuple[tuple[float, ...], ...]]]:
        """The piece start times, and each piece's (position, velocity, acceleration), as floats."""
        return (self.piece_start_s.tolist(),
                [(tuple(p), tuple(v), tuple(a)) for p, v, a in zip(
                    self.piece_position.tolist(), self.piece_velocity.tolist(),
                    self.piece_acceleration.tolist(), strict=True)])


@dataclass(frozen=True)
class _Limits:
    """Speed and acceleration bounds, and the range a catch-up stays in (rad, s)."""

    velocity: float
    acceleration: float
    lower: FloatArray
    upper: FloatArray


def _range(lower: FloatArray | None, upper: FloatArray | None,
           q0: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The range a catch-up stays in: the joints' range, widened to the start if it is out."""
    lo = np.full(q0.size, -np.inf) if lower is None else np.asarray(lower, dtype=float)
    hi = np.full(q0.size, np.inf) if upper is None else np.asarray(upper, dtype=float)
    return np.minimum(lo, q0), np.maximum(hi, q0)


def _command_path(knots: FloatArray, knot_times: FloatArray,
                  accel: float) -> tuple[Pieces, float]:
    """The command's blended path ``g`` on its own times, and when it comes to rest [s].

    Knot 0 is where the reference is at time 0: the path leaves it at the first segment's
    velocity at once (a catch-up window covers that step). Each later knot's blend is
    centred on its time, ``tau = |dv| / a``; where two blends would overlap, each takes the
    share of the segment between them in proportion to its ``tau``.
    """
    n_joints = knots.shape[1]
    knots, knot_times = _without_straight_knots(knots, knot_times)
    durations = np.diff(knot_times)
    velocities = np.diff(knots, axis=0) / durations[:, None]
    padded = np.vstack([velocities, np.zeros((1, n_joints))])
    tau = np.concatenate([[0.0], np.max(np.abs(np.diff(padded, axis=0)), axis=1) / accel])
    # knot k's blend may take its share of the segments on either side (segment k - 1 on its
    # left, k on its right): all of it beside a knot without a blend
    left = durations * _share(tau[1:], tau[:-1])
    right = np.append(durations[1:] * _share(tau[1:-1], tau[2:]), math.inf)
    half = np.concatenate([[0.0], np.minimum(tau[1:] / 2.0, np.minimum(left, right))])
    n = velocities.shape[0]
    h = half[1:, None]
    # segment k: its line from knot k's blend end, then the blend at knot k + 1 (if any)
    line_t = knot_times[:-1] + half[:-1]
    line_p = knots[:-1] + velocities * half[:-1, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        blend_a = np.where(h > 0.0, (padded[1:] - velocities) / (2.0 * h), 0.0)
    starts = np.empty(2 * n + 1)
    starts[0:2 * n:2], starts[1:2 * n:2] = line_t, knot_times[1:] - half[1:]
    starts[-1] = knot_times[-1] + half[-1]
    pos = np.empty((2 * n + 1, n_joints))
    pos[0:2 * n:2], pos[1:2 * n:2], pos[-1] = line_p, knots[1:] - velocities * h, knots[-1]
    vel = np.empty_like(pos)
    vel[0:2 * n:2], vel[1:2 * n:2], vel[-1] = velocities, velocities, 0.0
    acc = np.zeros_like(pos)
    acc[1:2 * n:2] = blend_a
    # an empty piece (a blend of no duration, a line its blends cover) gives way to the next
    keep = np.append(starts[:-1] < starts[1:], True)
    # the command's own stop: its last blend whole (a squeezed one is beyond the limits)
    return (Pieces(starts[keep], pos[keep], vel[keep], acc[keep]),
            float(knot_times[-1] + tau[-1] / 2.0))


def _share(mine: FloatArray, other: FloatArray) -> FloatArray:
    """A blend's share of the segment it shares with another (in proportion to their
    durations; all of it beside a knot without a blend)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(other > 0.0, mine / (mine + other), 1.0)


def _without_straight_knots(knots: FloatArray,
                            knot_times: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The knots less the interior ones the path goes straight through (no velocity change
    but rounding): a blend may then reach over as many of those segments as it needs."""
    velocities = np.diff(knots, axis=0) / np.diff(knot_times)[:, None]
    change = np.max(np.abs(np.diff(velocities, axis=0)), axis=1)
    scale = np.max(np.abs(velocities[1:]) + np.abs(velocities[:-1]), axis=1)
    keep = np.concatenate([[True], change > 1e-9 * scale + 1e-15, [True]])
    return knots[keep], knot_times[keep]


def _beyond_limits(command: Pieces, limits: _Limits) -> NDArray[np.bool_]:
    """Which pieces of ``g`` need more than the limits (acceleration, or speed at either end:
    the velocity is linear within a piece)."""
    a_max = limits.acceleration * (1.0 + _SLACK)
    v_max = limits.velocity * (1.0 + _SLACK)
    lengths = np.append(np.diff(command.start_s), 0.0)[:, None]
    v_end = command.velocity + command.acceleration * lengths
    return (np.any(np.abs(command.acceleration) > a_max, axis=1)
            | np.any(np.abs(command.velocity) > v_max, axis=1)
            | np.any(np.abs(v_end) > v_max, axis=1))


def _follow(command: Pieces, v_init: FloatArray,
            limits: _Limits) -> tuple[Pieces, list[tuple[float, float]]]:
    """The reference: ``g`` where it is within the limits, catch-up windows elsewhere.

    Returns the pieces and the windows.
    """
    bad = _beyond_limits(command, limits)
    out: list[Pieces] = []
    windows: list[tuple[float, float]] = []
    t = 0.0
    q, v = command.position[0], v_init
    v_gap = float(np.max(np.abs(v_init - command.velocity[0])))
    leave = 0.0 if (v_gap > 1e-12 or bad[0]) else None
    while True:
        if leave is None:
            later = np.flatnonzero(bad & (command.start_s > t - 1e-12))
            if later.size == 0:
                out.append(_slice(command, t, math.inf))
                break
            leave = float(command.start_s[later[0]])
            out.append(_slice(command, t, leave))
            q, v = (x[0] for x in command.state(np.array([leave]))[:2])
        try:
            join, transfer = _join(command, bad, leave, q, v, limits)
        except InvalidInputError:  # a reference too fast to brake before the edge: the
            # controller clamps it there; the motion is still within speed and acceleration
            join, transfer = _join(command, bad, leave, q, v, _Limits(
                limits.velocity, limits.acceleration, np.full(q.size, -np.inf),
                np.full(q.size, np.inf)))
        out.append(transfer)
        windows.append((leave, join))
        t, leave = join, None
    return _concatenate(out), windows


def _slice(path: Pieces, t0: float, t1: float) -> Pieces:
    """The pieces of ``path`` between ``t0`` and ``t1``, the first one starting at ``t0``."""
    inside = np.flatnonzero((path.start_s > t0) & (path.start_s < t1))
    p, v, a = path.state(np.array([t0]))
    return Pieces(np.concatenate([[t0], path.start_s[inside]]),
                  np.vstack([p, path.position[inside]]), np.vstack([v, path.velocity[inside]]),
                  np.vstack([a, path.acceleration[inside]]))


def _concatenate(parts: list[Pieces]) -> Pieces:
    """One path of consecutive parts (a part's start ends the one before)."""
    return Pieces(np.concatenate([p.start_s for p in parts]),
                  np.vstack([p.position for p in parts]),
                  np.vstack([p.velocity for p in parts]),
                  np.vstack([p.acceleration for p in parts]))


def _join(command: Pieces, bad: NDArray[np.bool_], leave: float, q: FloatArray, v: FloatArray,
          limits: _Limits) -> tuple[float, Pieces]:
    """The earliest time on the join grid at which the reference, leaving ``g`` at ``leave``
    in state (``q``, ``v``), can be back on it within the limits, and the motion there.

    The scan runs past ``g``'s rest: from there on ``g`` stands still, and any state within
    the limits can reach a standstill.
    """
    rest = float(command.start_s[-1])
    spread = float(np.max(np.abs(command.position[-1] - q))) if q.size else 0.0
    horizon = rest + 2.0 * limits.velocity / limits.acceleration + spread / limits.velocity + 1.0
    t, batch = leave, 32  # most windows join within tens of ms: batches grow from there
    while t < horizon:
        candidates: FloatArray = t + JOIN_STEP_S * np.arange(1, batch + 1, dtype=np.float64)
        t, batch = float(candidates[-1]), min(2 * batch, _BATCH)
        on_bad = bad[command.index(candidates)] & (candidates < rest)
        x1, v1, _ = command.state(candidates)
        ok = ~on_bad & _reachable(q, v, x1, v1, candidates - leave, limits)
        for k in np.flatnonzero(ok):
            transfer = _transfer(q, v, x1[k], v1[k], float(candidates[k] - leave), limits)
            if _within_range(transfer, limits):
                shifted = Pieces(transfer.start_s + leave, transfer.position, transfer.velocity,
                                 transfer.acceleration)
                return float(candidates[k]), shifted
    raise InvalidInputError("the path could not be joined within the limits and the range")


def _peak_integral(v0: FloatArray, v1: FloatArray, dt: FloatArray, accel: float,
                   vmax: float) -> FloatArray:
    """``I_max``: the integral of ``min(v0 + a t, v1 + a (dt - t), vmax)`` over ``[0, dt]``
    (the fastest profile from ``v0`` to ``v1``; needs ``|v1 - v0| <= a dt``)."""
    peak = (v0 + v1 + accel * dt) / 2.0
    t_peak = (v1 - v0 + accel * dt) / (2.0 * accel)
    triangle = v0 * t_peak + 0.5 * accel * t_peak ** 2 + v1 * (dt - t_peak) \
        + 0.5 * accel * (dt - t_peak) ** 2
    t1 = (vmax - v0) / accel
    t2 = dt - (vmax - v1) / accel
    trapezoid = 0.5 * (v0 + vmax) * t1 + vmax * (t2 - t1) + 0.5 * (vmax + v1) * (dt - t2)
    return np.where(peak <= vmax, triangle, trapezoid)


def _reachable(q: FloatArray, v: FloatArray, x1: FloatArray, v1: FloatArray, dt: FloatArray,
               limits: _Limits) -> NDArray[np.bool_]:
    """Which (x1, v1) (n, J) can be reached from (q, v) in ``dt`` (n,) within the limits."""
    a, vm = limits.acceleration, limits.velocity
    d = dt[:, None]
    distance = x1 - q
    hi = _peak_integral(v, v1, d, a, vm)
    lo = -_peak_integral(-v, -v1, d, a, vm)
    tol = 1e-12 + 1e-12 * np.abs(distance)
    return np.all((np.abs(v1 - v) <= a * d * (1.0 + 1e-12) + 1e-12)
                  & (np.abs(v1) <= vm * (1.0 + _SLACK))
                  & (distance <= hi + tol) & (distance >= lo - tol), axis=1)


def _transfer(q: FloatArray, v: FloatArray, x1: FloatArray, v1: FloatArray, dt: float,
              limits: _Limits) -> Pieces:
    """The motion from (q, v) to (x1, v1) in ``dt``: per joint the convex combination of the
    fastest and the slowest velocity profile whose integral is ``x1 - q`` (times from 0)."""
    a, vm = limits.acceleration, limits.velocity
    dts = np.array([[dt]])
    hi = _peak_integral(v[None], v1[None], dts, a, vm)[0]
    lo = -_peak_integral(-v[None], -v1[None], dts, a, vm)[0]
    width = hi - lo
    lam = np.where(width > 1e-15, np.clip((x1 - q - lo) / np.where(width > 1e-15, width, 1.0),
                                          0.0, 1.0), 1.0)
    breaks = sorted({0.0, *_kinks(v, v1, dt, a, vm), *_kinks(-v, -v1, dt, a, vm)})
    starts = np.array([b for b in breaks if b < dt])
    # velocity and slope of each profile at the piece starts (the slope to the right)
    up_v, up_a = _profile(v, v1, dt, a, vm, starts)
    dn_v, dn_a = _profile(-v, -v1, dt, a, vm, starts)
    vel = lam * up_v - (1.0 - lam) * dn_v
    acc = lam * up_a - (1.0 - lam) * dn_a
    pos = np.empty_like(vel)
    pos[0] = q
    for i in range(1, starts.size):
        h = starts[i] - starts[i - 1]
        pos[i] = pos[i - 1] + vel[i - 1] * h + 0.5 * acc[i - 1] * h * h
    return Pieces(starts, pos, vel, acc)


def _kinks(v0: FloatArray, v1: FloatArray, dt: float, accel: float,
           vmax: float) -> list[float]:
    """The times in ``(0, dt)`` where the fastest profile's slope changes, every joint."""
    peak = (v0 + v1 + accel * dt) / 2.0
    t_peak = (v1 - v0 + accel * dt) / (2.0 * accel)
    t1 = (vmax - v0) / accel
    t2 = dt - (vmax - v1) / accel
    times = np.where(peak <= vmax, t_peak, t1).tolist() + t2[peak > vmax].tolist()
    return [float(t) for t in times if 1e-12 < t < dt - 1e-12]


def _profile(v0: FloatArray, v1: FloatArray, dt: float, accel: float, vmax: float,
             t: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The fastest profile ``min(v0 + a t, v1 + a (dt - t), vmax)`` and its slope to the right
    of each time of ``t`` (n,); (n, J) each."""
    rising = v0[None] + accel * t[:, None]
    falling = v1[None] + accel * (dt - t[:, None])
    value = np.minimum(np.minimum(rising, falling), vmax)
    # the slope to the right: the branch that is lowest just after t
    eps = 1e-9 * max(dt, 1e-9)
    after_r = rising + accel * eps
    after_f = falling - accel * eps
    slope = np.where((after_r <= after_f) & (after_r <= vmax), accel,
                     np.where(after_f <= vmax, -accel, 0.0))
    return value, slope


def _within_range(transfer: Pieces, limits: _Limits) -> bool:
    """Whether a motion's positions stay within the range: at its piece ends and turning
    points (each piece is a quadratic)."""
    if not (np.all(np.isfinite(limits.lower)) or np.all(np.isfinite(limits.upper))):
        return True
    p, v, a = transfer.position, transfer.velocity, transfer.acceleration
    lengths = np.append(np.diff(transfer.start_s), 0.0)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        turn = np.where(a != 0.0, np.clip(-v / a, 0.0, lengths), 0.0)
    candidates = np.concatenate([p, p + v * turn + 0.5 * a * turn ** 2])
    tol = 1e-9
    return bool(np.all(candidates >= limits.lower - tol) and np.all(candidates <= limits.upper + tol))
