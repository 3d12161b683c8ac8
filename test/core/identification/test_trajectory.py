"""The identification trajectory within an acceleration limit: rest-to-rest moves, braking ramps."""

from __future__ import annotations

import math

import numpy as np
import pytest

from humanoid_balance.core.identification.trajectory import (
    BrakingRamp,
    PlanFollower,
    RampTime,
    identification_plan,
    rest_to_rest,
    rest_to_rest_duration,
)
from humanoid_balance.exceptions import ConfigurationError

STATIC = np.radians([0.0, 30.0, 20.0, 60.0, 40.0, 30.0])
HALF = math.radians(1.0)
SPEED = math.radians(3.0)
ACCELERATION = math.radians(30.0)
DT = 0.01


def plan() -> list:
    """Six 2-degree sweeps about STATIC at 3 deg/s."""
    return identification_plan([STATIC] * 6, [(s - HALF, s + HALF) for s in STATIC], SPEED)


def sampled(follower: PlanFollower, dt: float = DT) -> tuple[np.ndarray, np.ndarray]:
    """Positions and velocities of the whole plan every ``dt``."""
    points = [follower.at(t) for t in np.arange(0.0, follower.duration + 0.5, dt)]
    return np.array([p.position for p in points]), np.array([p.velocity for p in points])


def test_trapezoid_duration() -> None:
    """1 deg at 3 deg/s and 30 deg/s^2 takes d/v + v/a = 1/3 + 0.1 s."""
    assert rest_to_rest_duration(math.radians(1.0), SPEED, ACCELERATION) == pytest.approx(
        1.0 / 3.0 + 0.1, rel=1e-12)


def test_triangle_when_too_short_to_reach_the_speed() -> None:
    """0.2 deg (< v^2/a = 0.3 deg) is a triangle: 2 sqrt(d/a), peak speed sqrt(d a)."""
    distance = math.radians(0.2)
    total = rest_to_rest_duration(distance, SPEED, ACCELERATION)
    travel, speed = rest_to_rest(distance, SPEED, ACCELERATION, total / 2)
    assert (total, travel, speed) == pytest.approx(
        (2 * math.sqrt(distance / ACCELERATION), distance / 2, math.sqrt(distance * ACCELERATION)),
        rel=1e-12)


def test_infinite_acceleration_is_the_triangle_wave() -> None:
    """Without an acceleration limit the follower samples eq. 11 exactly (Sweep.sample)."""
    follower = PlanFollower(plan(), STATIC)
    worst = 0.0
    for t0, t1, kind, _, _, _, sweep in follower._segments:
        if kind == "sweep":
            for t in np.linspace(t0, t1, 200, endpoint=False):
                q, qd, _ = sweep.sample(t - t0)
                point = follower.at(t)
                worst = max(worst, np.abs(point.position - q[0]).max(),
                            np.abs(point.velocity - qd[0]).max())
    assert worst < 1e-15


def test_acceleration_limited_plan_has_no_velocity_step() -> None:
    """With a 30 deg/s^2 limit no velocity changes by more than a dt between samples dt apart."""
    _, velocity = sampled(PlanFollower(plan(), STATIC, acceleration=ACCELERATION))
    assert np.abs(np.diff(velocity, axis=0)).max() <= ACCELERATION * DT * (1 + 1e-9)


def test_acceleration_limited_plan_moves_as_its_velocities() -> None:
    """Position steps match the mean of the commanded velocities to within a dt^2 / 4."""
    position, velocity = sampled(PlanFollower(plan(), STATIC, acceleration=ACCELERATION))
    drift = np.abs(np.diff(position, axis=0) - 0.5 * (velocity[1:] + velocity[:-1]) * DT)
    assert drift.max() <= ACCELERATION * DT * DT / 4


def test_acceleration_limited_plan_keeps_the_sweep_speed_and_range() -> None:
    """The limited plan never exceeds 3 deg/s and each sweep still covers its 2 degrees.

    Sampled every 1 ms, a turn (at rest) is missed by at most a (1 ms)^2 / 2 = 3e-7 rad.
    """
    follower = PlanFollower(plan(), STATIC, acceleration=ACCELERATION)
    position, velocity = sampled(follower, 0.001)
    spans = [float(np.ptp(position[:, j])) for j in range(6)]
    assert (bool(np.abs(velocity).max() <= SPEED * (1 + 1e-12)),
            min(spans) >= 2 * HALF - ACCELERATION * 1e-6 / 2) == (True, True)


@pytest.mark.parametrize("acceleration", [0.0, -1.0, math.nan, math.inf])
def test_follower_refuses_a_bad_acceleration(acceleration: float) -> None:
    """An acceleration limit that is not finite and > 0 is refused naming it."""
    with pytest.raises(ConfigurationError, match="acceleration="):
        PlanFollower(plan(), STATIC, acceleration=acceleration)


def test_follower_refuses_a_non_finite_start() -> None:
    """A start with a NaN position is refused (an approach from it would be NaN)."""
    with pytest.raises(ConfigurationError, match="start="):
        PlanFollower(plan(), np.full(6, math.nan))


def test_braking_ramp_stops_within_the_limit() -> None:
    """From 3 deg/s on one joint at 30 deg/s^2: 0.1 s, 0.15 deg further, zero velocity after."""
    velocity = np.array([0.0, 0.0, 0.0, 0.0, 0.0, SPEED])
    ramp = BrakingRamp(STATIC, velocity, ACCELERATION)
    end, rest = ramp.at(1.0)
    assert (ramp.duration, math.degrees(end[5] - STATIC[5]), *rest) == pytest.approx(
        (0.1, 0.15, *[0.0] * 6), rel=1e-12)


def test_braking_ramp_is_continuous_with_the_command() -> None:
    """At t = 0 the ramp is the command it brakes from (no jump)."""
    velocity = np.array([SPEED, -SPEED / 2, 0.0, 0.0, 0.0, 0.0])
    position, speed = BrakingRamp(STATIC, velocity, ACCELERATION).at(0.0)
    assert (position.tolist(), speed.tolist()) == (STATIC.tolist(), velocity.tolist())


def test_braking_ramp_keeps_the_line_of_motion() -> None:
    """All joints stop together: a joint at half the speed brakes at half the rate."""
    velocity = np.array([SPEED, -SPEED / 2, 0.0, 0.0, 0.0, 0.0])
    ramp = BrakingRamp(STATIC, velocity, ACCELERATION)
    position, _ = ramp.at(ramp.duration / 2)
    moved = position - STATIC
    assert moved[1] / moved[0] == pytest.approx(-0.5, rel=1e-12)


def test_braking_ramp_refuses_a_non_finite_command() -> None:
    """Braking from a NaN command is refused (nothing sensible can be sent)."""
    with pytest.raises(ConfigurationError, match="non-finite"):
        BrakingRamp(np.full(6, math.nan), np.zeros(6), ACCELERATION)


def test_ramp_time_never_goes_back_with_the_clock() -> None:
    """A clock 20 s back mid-ramp: the ramp goes on one period per reading, and ends in v/a."""
    period_ns = 10_000_000
    ramp = BrakingRamp(STATIC, np.array([0.0, 0.0, 0.0, 0.0, 0.0, SPEED]), ACCELERATION)
    clock = RampTime(1_000 * 10**9, period_ns)
    readings = [1_000 * 10**9 + period_ns, 980 * 10**9, *(980 * 10**9 + k * period_ns
                                                         for k in range(1, 20))]
    velocities = [ramp.at(clock.advance(t))[1][5] for t in readings]
    assert np.all(np.diff(velocities) <= 0.0)
    assert np.all(-np.diff(velocities) <= ACCELERATION * period_ns * 1e-9 * (1 + 1e-12))
    # v/a = 0.1 s: at rest (to rounding) on the 10th reading, exactly 0 from the 11th on
    assert abs(velocities[9]) < 1e-12 and velocities[10:] == [0.0] * 11


def test_ramp_time_follows_the_clock_forward() -> None:
    """Forward readings (late ones too) advance the ramp by the time the clock says passed."""
    clock = RampTime(0, 10_000_000)
    assert [clock.advance(t) for t in (4_000_000, 30_000_000, 30_000_000)] == pytest.approx(
        [0.004, 0.030, 0.030], abs=1e-15)


def test_ramp_time_refuses_a_period_of_zero() -> None:
    """A ramp time with no step is refused with the value."""
    with pytest.raises(ConfigurationError, match="period_ns=0"):
        RampTime(0, 0)
