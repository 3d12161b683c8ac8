"""The shaped reference's pieces (humanoid_balance/waist/reference.py): a command's path on the
controller's clock, the clamp along segments, a JointTrajectory's points as arrays."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from humanoid_balance.core.blended_trajectory import BlendedTrajectory
from humanoid_balance.waist.reference import WaistTrajectory, clamp_path, command_arrays


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


def test_clamp_path_inserts_the_crossing_and_stays_on_the_edge() -> None:
    """A segment from 0 to 2 rad through a 1 rad bound: a point at the crossing (t = 0.5 s),
    then the edge; the in-range part follows the command."""
    times, points = clamp_path(np.array([0.0, 1.0]), np.array([[0.0], [2.0]]), np.array([-1.0]),
                               np.array([1.0]))
    np.testing.assert_allclose(times, [0.0, 0.5, 1.0])
    np.testing.assert_allclose(points[:, 0], [0.0, 1.0, 1.0])


def _point(t: float, positions: list[float]) -> SimpleNamespace:
    whole = math.floor(t)
    return SimpleNamespace(positions=positions, time_from_start=SimpleNamespace(
        sec=whole, nanosec=round((t - whole) * 1e9)))


def test_command_arrays_take_the_waist_joints_by_name() -> None:
    """Joints in another order: positions come out (pitch, roll); times in s."""
    times, positions = command_arrays(["waist_roll", "waist_pitch"],  # type: ignore[misc]
                                      [_point(0.5, [0.2, 0.1]), _point(1.25, [0.4, 0.3])])
    np.testing.assert_allclose(times, [0.5, 1.25])
    np.testing.assert_allclose(positions, [[0.1, 0.2], [0.3, 0.4]])


@pytest.mark.parametrize(("names", "points", "reason"), [
    (["waist_pitch"], [_point(1.0, [0.0])],
     "ignored: joints ['waist_pitch'] must include ['waist_pitch', 'waist_roll']"),
    (["waist_pitch", "waist_roll"], [], "ignored: no points"),
    (["waist_pitch", "waist_roll"], [_point(1.0, [0.0])], "ignored: a point lacks positions"),
])
def test_command_arrays_say_why_a_message_is_ignored(names: list[str], points: list[object],
                                                      reason: str) -> None:
    """A message without both waist joints, without points, or with a short point: the reason."""
    assert command_arrays(names, points) == reason
