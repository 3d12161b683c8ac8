"""Reference shaping: a piecewise-linear joint path blended within speed and acceleration limits.

A command (a list of points, perhaps clamped at the range's edge, ending in a stop)
is a piecewise-linear path whose velocity steps at every point. Tracked as it is,
the servo overshoots where the path stops dead (0.15 deg at a range edge, issue 14).
:class:`BlendedTrajectory` turns it into a path whose acceleration stays within
``acceleration_limit`` and whose speed within ``velocity_limit`` (linear segments
with parabolic blends, "LSPB"):

* at every interior point ``k`` the velocity changes from ``v_{k-1}`` to ``v_k``
  during a blend of duration ``tau_k = max_j |v_k - v_{k-1}|_j / a`` centred on the
  point's time (all joints share it, so a straight segment stays straight). A
  centred blend leaves the path at ``t_k - tau_k / 2`` and rejoins it at
  ``t_k + tau_k / 2``; it never passes the corner, so a stop ends exactly on its
  point and a clamped path never leaves the range:

  .. math::

      q(t) = p_k + v_{k-1} (t - t_k) + \\frac{v_k - v_{k-1}}{2 \\tau_k}
      (t - t_k + \\tau_k / 2)^2, \\quad |t - t_k| \\le \\tau_k / 2

* the last point is a stop (``v_n = 0``), blended the same way;
* the first point is where the reference is now, moving at ``v_init``: a one-sided
  blend from ``v_init`` to ``v_0`` starts now, with ``v_0`` chosen so that the path
  still passes the next point on time;
* a segment too fast for ``velocity_limit``, or too short for its two blends, is
  stretched in time (the rest of the path is delayed by as much): the command is
  followed as fast as the limits allow, never faster.

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

#: iterations of the retiming before giving up (each stretches at least one segment)
_MAX_ITERATIONS = 500


@dataclass(frozen=True)
class BlendedTrajectory:
    """Linear segments with parabolic blends, within speed and acceleration limits.

    Build it with :meth:`plan`. Pieces are quadratics: piece ``i`` starts at
    ``piece_start_s[i]`` at ``piece_position[i]`` with ``piece_velocity[i]`` and
    accelerates at ``piece_acceleration[i]``.

    Attributes:
        knot_times_s: (N,) times of the points after retiming, from the start [s].
        knot_positions: (N, J) the points [rad].
        stretched_s: how much later than commanded the last point is reached [s].
        piece_start_s: (M,) piece start times [s].
        piece_position: (M, J) [rad].
        piece_velocity: (M, J) [rad/s].
        piece_acceleration: (M, J) [rad/s^2].
    """

    knot_times_s: FloatArray
    knot_positions: FloatArray
    stretched_s: float
    piece_start_s: FloatArray
    piece_position: FloatArray
    piece_velocity: FloatArray
    piece_acceleration: FloatArray

    @property
    def duration_s(self) -> float:
        """Time from the start until the path is at rest on its last point [s]."""
        return float(self.piece_start_s[-1])

    @classmethod
    def plan(cls, times_s: FloatArray, positions: FloatArray, *, initial_position: FloatArray,
             initial_velocity: FloatArray, velocity_limit: float,
             acceleration_limit: float) -> BlendedTrajectory:
        """Blend the path from ``initial_position`` through ``positions``.

        Args:
            times_s: (N,) strictly increasing times of the points, > 0 [s].
            positions: (N, J) the points [rad].
            initial_position: (J,) where the reference is at time 0 [rad].
            initial_velocity: (J,) its velocity at time 0 [rad/s]; capped at
                ``velocity_limit``.
            velocity_limit: joint speed bound, > 0 [rad/s].
            acceleration_limit: joint acceleration bound, > 0 [rad/s^2].

        Raises:
            ConfigurationError: a limit not finite and > 0.
            InvalidInputError: times or positions of the wrong shape, not finite, not
                increasing, or a path the retiming cannot fit (never for finite input).
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
        durations = np.diff(np.concatenate([[0.0], times]))
        durations = _retime(knots, durations, v_init, velocity_limit, acceleration_limit)
        knot_times = np.concatenate([[0.0], np.cumsum(durations)])
        velocities, blends = _velocities_and_blends(knots, durations, v_init, acceleration_limit)
        starts, p, v, a = _pieces(knots, knot_times, velocities, blends, v_init)
        return cls(knot_times, knots, float(knot_times[-1] - times[-1]), starts, p, v, a)

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


def _velocities_and_blends(knots: FloatArray, durations: FloatArray, v_init: FloatArray,
                           accel: float) -> tuple[FloatArray, FloatArray]:
    """Segment velocities (n, J) and blend durations (n + 1,) at the knots."""
    n = durations.size
    velocities = np.diff(knots, axis=0) / durations[:, None]
    # segment 0 starts with a one-sided blend from v_init: its velocity is chosen so that the
    # path still reaches knot 1 on time (fixed point of v0 <-> tau0)
    d0, delta0 = durations[0], knots[1] - knots[0]
    tau0 = 0.0
    for _ in range(50):
        v0 = (delta0 - v_init * tau0 / 2.0) / (d0 - tau0 / 2.0)
        new_tau0 = float(np.max(np.abs(v0 - v_init))) / accel
        if new_tau0 >= d0:  # too short: the retiming stretches it
            break
        converged = abs(new_tau0 - tau0) < 1e-12
        tau0 = new_tau0
        if converged:
            break
    velocities[0] = (delta0 - v_init * tau0 / 2.0) / (d0 - tau0 / 2.0)
    tau0 = float(np.max(np.abs(velocities[0] - v_init))) / accel
    padded = np.vstack([velocities, np.zeros((1, knots.shape[1]))])
    blends = np.empty(n + 1)
    blends[0] = tau0
    blends[1:] = np.max(np.abs(np.diff(padded, axis=0)), axis=1) / accel
    return velocities, blends


def _retime(knots: FloatArray, durations: FloatArray, v_init: FloatArray, vmax: float,
            accel: float) -> FloatArray:
    """Segment durations stretched until every segment is within the speed limit and long
    enough for its blends."""
    durations = durations.copy()
    for _ in range(_MAX_ITERATIONS):
        velocities, blends = _velocities_and_blends(knots, durations, v_init, accel)
        speed = np.max(np.abs(velocities), axis=1)
        need = blends[:-1] / 2.0 + blends[1:] / 2.0
        need[0] += blends[0] / 2.0  # the first blend is one-sided: all of it in segment 0
        too_fast = speed > vmax * (1.0 + 1e-12)
        too_short = need > durations * (1.0 + 1e-12)
        if not (np.any(too_fast) or np.any(too_short)):
            return durations
        factor = np.ones_like(durations)
        factor[too_fast] = np.maximum(factor[too_fast], speed[too_fast] / vmax * (1.0 + 1e-9))
        ratio = need / durations
        factor[too_short] = np.maximum(factor[too_short],
                                       np.sqrt(ratio[too_short]) * 1.0001 + 1e-6)
        durations *= factor
    raise InvalidInputError("the path could not be retimed within the limits")


def _pieces(knots: FloatArray, knot_times: FloatArray, velocities: FloatArray,
            blends: FloatArray, v_init: FloatArray
            ) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """The quadratic pieces: start blend, then per segment its linear part and the next blend."""
    n_joints = knots.shape[1]
    starts: list[float] = []
    pos: list[FloatArray] = []
    vel: list[FloatArray] = []
    acc: list[FloatArray] = []
    zero = np.zeros(n_joints)

    def add(t: float, p: FloatArray, v: FloatArray, a: FloatArray) -> None:
        if starts and t <= starts[-1]:  # an empty piece: the later one replaces it
            starts.pop(), pos.pop(), vel.pop(), acc.pop()
        starts.append(t)
        pos.append(p)
        vel.append(v)
        acc.append(a)

    n = velocities.shape[0]
    padded = np.vstack([velocities, zero[None, :]])
    tau0 = blends[0]
    if tau0 > 0.0:
        add(0.0, knots[0], v_init, (velocities[0] - v_init) / tau0)
    # the line of segment k passes knot k + 1 at knot_times[k + 1]
    for k in range(n):
        t_end_line = knot_times[k + 1] - blends[k + 1] / 2.0
        t_line = tau0 if k == 0 else knot_times[k] + blends[k] / 2.0
        p_line = knots[k + 1] + velocities[k] * (t_line - knot_times[k + 1])
        add(t_line, p_line, velocities[k], zero)
        tau = blends[k + 1]
        p_blend = knots[k + 1] + velocities[k] * (t_end_line - knot_times[k + 1])
        if tau > 0.0:
            add(t_end_line, p_blend, velocities[k], (padded[k + 1] - velocities[k]) / tau)
    end = knot_times[-1] + blends[-1] / 2.0
    add(end, knots[-1], zero, zero)
    return np.array(starts), np.array(pos), np.array(vel), np.array(acc)
