"""BlendedTrajectory's float sampler against its array sampler (core/blended_trajectory.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from humanoid_balance.core.blended_trajectory import BlendedTrajectory


@pytest.mark.parametrize("seed", range(3))
def test_sample_floats_gives_the_array_samples_floats(seed: int) -> None:
    """sample_floats equals sample exactly, for three joints: before, on, between and after the
    pieces."""
    rng = np.random.default_rng(seed)
    times = np.cumsum(rng.uniform(0.05, 1.0, 5))
    points = np.radians(rng.uniform(-30.0, 30.0, (5, 3)))
    path = BlendedTrajectory.plan(times, points, initial_position=np.zeros(3),
                                  initial_velocity=np.radians([3.0, -1.0, 0.5]),
                                  velocity_limit=math.radians(60.0),
                                  acceleration_limit=math.radians(30.0))
    starts = path.piece_start_s
    for t_s in [-0.5, 0.0, *starts, *(starts + 1e-3), *rng.uniform(0.0, path.duration_s + 1.0, 200)]:
        q, qd = path.sample(float(t_s))
        assert path.sample_floats(float(t_s)) == (tuple(q.tolist()), tuple(qd.tolist()))
        many_q, many_qd = path.samples(np.array([t_s]))
        assert np.array_equal(many_q[0], q) and np.array_equal(many_qd[0], qd)


# --- issue 32: on the command's own times, catching up instead of delaying -------------------

V = math.radians(60.0)
A = math.radians(30.0)
LOWER = np.radians([-5.0, -15.0])
UPPER = np.radians([45.0, 15.0])


def _plan(times: np.ndarray, points: np.ndarray, start: np.ndarray,
          velocity: np.ndarray | None = None) -> BlendedTrajectory:
    return BlendedTrajectory.plan(times, points, initial_position=start,
                                  initial_velocity=np.zeros(2) if velocity is None else velocity,
                                  velocity_limit=V, acceleration_limit=A, lower=LOWER,
                                  upper=UPPER)


def _within_limits(path: BlendedTrajectory, step: float = 1e-4) -> None:
    """Speed, acceleration (finite differences of the samples, not the pieces' own numbers),
    range, and no jump in position."""
    t = np.arange(0.0, path.duration_s + 0.2, step)
    q, qd = path.samples(t)
    assert np.max(np.abs(qd)) <= V * (1 + 1e-9)
    assert np.max(np.abs(np.diff(qd, axis=0))) / step <= A * (1 + 1e-6)
    # the trapezoid rule is exact on a piece; a change of acceleration inside a step leaves
    # at most a h^2 / 4: anything more is a jump
    assert np.max(np.abs(np.diff(q, axis=0) - 0.5 * (qd[1:] + qd[:-1]) * step)) \
        <= A * step ** 2 / 4.0 + 1e-12
    assert np.all(q >= LOWER - 1e-9) and np.all(q <= UPPER + 1e-9)


def _polyline(times: np.ndarray, points: np.ndarray, t: np.ndarray) -> np.ndarray:
    return np.column_stack([np.interp(t, times, points[:, k]) for k in range(points.shape[1])])


@pytest.mark.parametrize("spacing_s", [0.002, 0.01, 0.1, 0.5])
def test_a_moving_start_is_caught_up_on_the_commands_times(spacing_s: float) -> None:
    """Issue 32's case: from rest, a path whose first segment already moves (2.5 deg/s pitch,
    2.1 deg/s roll). The reference catches up within 0.202 s = (1 + sqrt 2) 2.5 / 30 (the
    time-optimal catch-up of a 2.5 deg/s step at 30 deg/s^2) whatever the points' spacing,
    and from then on is the command itself, on its times: no lag (it was 78.5 ms at 10 ms
    points, 31.5 ms at 100 ms)."""
    times = np.arange(spacing_s, 6.0 + 1e-9, spacing_s)
    start = np.radians([10.0, -1.0])
    points = start + np.radians(np.column_stack([2.5 * times, -2.1 * times]))
    path = _plan(times, points, start)
    assert path.catch_ups[0][0] == 0.0
    assert path.catch_up_s <= (1.0 + math.sqrt(2.0)) * 2.5 / 30.0 + 2e-3
    assert len(path.catch_ups) == 1 and path.end_lag_s == 0.0
    t = np.arange(path.catch_up_s, 5.9, 1e-3)
    reference = path.samples(t)[0]
    command = _polyline(np.concatenate([[0.0], times]), np.vstack([start, points]), t)
    assert np.max(np.abs(reference - command)) < 1e-12
    # the stop at the end: a centred blend on the last point's time, its braking only
    assert path.duration_s == pytest.approx(6.0 + 2.5 / 30.0 / 2.0, abs=1e-9)
    _within_limits(path)


@pytest.mark.parametrize("seed", range(200))
def test_random_feasible_paths_follow_the_command(seed: int) -> None:
    """Random feasible paths (sines, ramps, steps; 2 ms to 1 s points; at rest or moving at the
    start; on every third draw the reference already moving, as on a command that follows
    another, at the first segment's velocity off by up to 0.5 deg/s): within the limits, in
    the range, the start's catch-up within 0.3 s, and afterwards within the corners' rounding
    (CORNER_ROUNDING_DEG, the draw's own bound) of the command, on its times."""
    from humanoid_balance.experiments.waist_paths import CORNER_ROUNDING_DEG, draw_path

    drawn = draw_path(seed)
    times, points = drawn.path.times_s, np.radians(drawn.path.points_deg)
    rng = np.random.default_rng(10_000 + seed)
    velocity = np.zeros(2)
    if seed % 3 == 0:
        first = (points[1] - points[0]) / (times[1] - times[0])
        velocity = first + np.radians(rng.uniform(-0.5, 0.5, 2))
    path = _plan(times[1:], points[1:], points[0], velocity)
    caught_up = path.catch_ups[0][1] if path.catch_ups and path.catch_ups[0][0] == 0.0 else 0.0
    assert caught_up <= 0.3
    t = np.arange(caught_up, times[-1], 1e-3)
    reference = path.samples(t)[0]
    error = np.max(np.abs(reference - _polyline(times, points, t)), initial=0.0)
    assert error <= math.radians(CORNER_ROUNDING_DEG) * (1 + 1e-6) + 1e-12, (seed, drawn.kind)
    _within_limits(path, 2e-4)


def test_a_segment_beyond_the_limits_is_caught_up_not_shifted() -> None:
    """A segment at 90 deg/s (the limit is 60; 18 deg in 0.2 s is beyond the acceleration
    limit too): the reference leaves the command there, runs within the limits, and rejoins
    it; the later segment is then followed on its commanded times (nothing is shifted) and
    the stop ends on its own braking time. The diagnostics say how long and how far."""
    times = np.array([1.0, 1.2, 3.0, 4.0])
    start = np.radians([10.0, 0.0])
    points = np.radians([[12.0, 0.0], [30.0, 0.0], [32.0, 0.0], [32.0, 5.0]])
    path = _plan(times, points, start)
    _within_limits(path)
    assert path.catch_up_s > 1.0 and path.max_lag_rad > math.radians(10.0)
    join = max(end for _, end in path.catch_ups)
    assert join < 3.0 - 5.0 / 30.0 / 2.0  # before the blend at 3.0 s begins
    t = np.arange(3.1, 3.9, 1e-3)  # the last segment's straight part, on its times
    assert np.max(np.abs(path.samples(t)[0] - _polyline(times, points, t))) < 1e-12
    assert path.end_lag_s == 0.0
    assert path.duration_s == pytest.approx(4.0 + 5.0 / 30.0 / 2.0, abs=1e-9)


def test_a_catch_up_near_the_edge_stays_in_the_range() -> None:
    """Moving at 10 deg/s toward the 45 deg edge from 42 deg, a command to be at 44.9 deg in
    0.05 s (beyond the limits): the reference catches up within the limits and never passes
    the edge."""
    start = np.radians([42.0, 0.0])
    path = _plan(np.array([0.05]), np.radians([[44.9, 0.0]]), start,
                 np.radians([10.0, 0.0]))
    _within_limits(path)
    t = np.arange(0.0, path.duration_s + 0.1, 1e-4)
    assert max(path.sample(float(x))[0][0] for x in t) <= UPPER[0] + 1e-12
    assert np.allclose(path.sample(path.duration_s)[0], np.radians([44.9, 0.0]), atol=1e-12)


def test_a_reference_too_fast_to_brake_before_the_edge_is_still_planned() -> None:
    """At 44 deg moving at 20 deg/s (6.7 deg of braking at 30 deg/s^2), no motion within the
    limits stays below 45 deg: the plan is still made within the speed and acceleration limits
    (the controller clamps the reference at the edge), not refused."""
    path = BlendedTrajectory.plan(np.array([0.05]), np.radians([[44.9, 0.0]]),
                                  initial_position=np.radians([44.0, 0.0]),
                                  initial_velocity=np.radians([20.0, 0.0]), velocity_limit=V,
                                  acceleration_limit=A, lower=LOWER, upper=UPPER)
    t = np.arange(0.0, path.duration_s + 0.1, 1e-4)
    q, qd = path.samples(t)
    assert np.max(np.abs(np.diff(qd, axis=0))) / 1e-4 <= A * (1 + 1e-6)
    assert np.allclose(q[-1], np.radians([44.9, 0.0]), atol=1e-12)
