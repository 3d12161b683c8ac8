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
