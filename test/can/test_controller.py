"""The waist controller's float arithmetic (humanoid_balance/can/controller.py) against the array
expressions it replaces: the same floats."""

from __future__ import annotations

import math

import numpy as np
import pytest

from humanoid_balance.can.controller import WaistTrajectory, _integrate
from humanoid_balance.core.blended_trajectory import BlendedTrajectory


def _path(seed: int) -> BlendedTrajectory:
    rng = np.random.default_rng(seed)
    times = np.cumsum(rng.uniform(0.05, 1.0, 6))
    points = np.radians(np.column_stack([rng.uniform(-5, 45, 6), rng.uniform(-15, 15, 6)]))
    return BlendedTrajectory.plan(times, points, initial_position=np.radians([2.0, -1.0]),
                                  initial_velocity=np.radians([3.0, 1.0]),
                                  velocity_limit=math.radians(60.0),
                                  acceleration_limit=math.radians(30.0))


@pytest.mark.parametrize("seed", range(5))
def test_sample_pair_equals_the_paths_sample(seed: int) -> None:
    """sample_pair gives BlendedTrajectory.sample's floats exactly: before, on, between and after
    the pieces."""
    trajectory = WaistTrajectory(_path(seed), start_s=12.5)
    starts = trajectory.path.piece_start_s
    times = [12.0, 12.5, *(12.5 + starts), *(12.5 + starts + 1e-3),
             *np.random.default_rng(seed).uniform(12.5, trajectory.end_s + 1.0, 400),
             trajectory.end_s + 5.0]
    for now_s in times:
        q, qd = trajectory.sample(float(now_s))
        assert trajectory.sample_pair(float(now_s)) == (tuple(q.tolist()), tuple(qd.tolist()))


def test_integrate_equals_the_clipped_array_step() -> None:
    """_integrate is np.clip(value + rate dt, -limit, limit) and (new - value) / dt, exactly."""
    rng = np.random.default_rng(7)
    for _ in range(5000):
        value, rate = rng.normal(size=2) * 0.01, rng.normal(size=2) * 5.0
        new = np.clip(value + rate * 0.002, -0.0087, 0.0087)
        expected = (tuple(new.tolist()), tuple(((new - value) / 0.002).tolist()))
        assert _integrate((float(value[0]), float(value[1])), (float(rate[0]), float(rate[1])),
                          0.002, 0.0087) == expected
