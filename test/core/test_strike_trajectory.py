"""The seed-000 strike as a trajectory: timing, arrival twist, feasibility, parameters."""

from __future__ import annotations

import numpy as np
import pytest

from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.strike_trajectory import StrikeTrajectory, arm_pose
from humanoid_balance.exceptions import ConfigurationError
from humanoid_balance.resources import urdf_path


@pytest.fixture(scope="module")
def model() -> RobotModel:
    """The humanoid, fixed base, world at W."""
    return RobotModel(urdf_path("humanoid"), world_frame="W")


@pytest.fixture(scope="module")
def strike(model: RobotModel) -> StrikeTrajectory:
    """The paper's strike (right arm, 1.8 m/s)."""
    return StrikeTrajectory(model)


def test_hand_arrives_at_the_papers_velocity(strike: StrikeTrajectory) -> None:
    """At 0.9 s the hand twist in W is [1.76, 0, 0.38, 0, 0, 0] (seed 000, section 4)."""
    assert strike.strike_time == pytest.approx(0.9)
    assert np.allclose(strike.hand_twist(0.9), [1.76, 0.0, 0.38, 0.0, 0.0, 0.0], atol=1e-9)


def test_ready_pose_is_reached_at_rest_after_0_3_s(strike: StrikeTrajectory) -> None:
    """At 0.3 s the arm is at the ready pose with zero velocity."""
    sample = strike.sample(0.3)
    assert np.allclose(sample.position, strike.ready, atol=1e-12)
    assert np.allclose(sample.velocity, 0.0, atol=1e-12)


def test_arm_waits_at_the_ready_pose(strike: StrikeTrajectory) -> None:
    """Between 0.3 s and 0.6 s the arm does not move."""
    for t in (0.35, 0.45, 0.55):
        assert np.allclose(strike.sample(t).position, strike.ready, atol=1e-12)


def test_arm_returns_to_ready_after_0_5_s(strike: StrikeTrajectory) -> None:
    """At 1.4 s the arm is back at the ready pose at rest; afterwards it holds."""
    end = strike.sample(1.4)
    assert np.allclose(end.position, strike.ready, atol=1e-12)
    assert np.allclose(end.velocity, 0.0, atol=1e-12)
    assert strike.sample(2.0).phase == "hold"


def test_velocity_and_acceleration_are_continuous(strike: StrikeTrajectory) -> None:
    """Sampled at 1 ms, no joint velocity jumps by more than its acceleration limit allows."""
    _, _, vel, acc = strike.sampled(0.001)
    assert np.max(np.abs(np.diff(vel, axis=0))) < 0.1
    assert np.max(np.abs(np.diff(acc, axis=0))) < 5.0


def test_paper_speed_is_feasible_within_the_joint_table(strike: StrikeTrajectory) -> None:
    """At 1.8 m/s every joint stays within its position, speed and acceleration limits."""
    ratios = strike.limit_ratios()
    assert ratios.worst[2] < 1.0, ratios.worst


def test_target_speed_scales_the_arrival_twist(model: RobotModel) -> None:
    """target_speed=3.0 gives a hand speed of 3.0 m/s along the paper's direction."""
    fast = StrikeTrajectory(model, target_speed=3.0)
    twist = fast.hand_twist(fast.strike_time)
    assert np.linalg.norm(twist[:3]) == pytest.approx(3.0, abs=1e-9)
    assert np.allclose(twist[:3] / 3.0, np.array([1.76, 0.0, 0.38]) / np.hypot(1.76, 0.38),
                       atol=1e-9)


def test_left_arm_strike_is_mirrored(model: RobotModel) -> None:
    """For the left arm the roll and yaw joints change sign and the twist keeps its x, z."""
    left = StrikeTrajectory(model, arm="left")
    assert left.joint_names[0] == "left_shoulder_pitch"
    pose = arm_pose("left", (10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0))
    assert pose["left_shoulder_roll"] == pytest.approx(-np.deg2rad(20.0))
    assert pose["left_elbow"] == pytest.approx(np.deg2rad(40.0))
    assert np.allclose(left.hand_twist(left.strike_time)[:3], [1.76, 0.0, 0.38], atol=1e-9)


def test_start_time_delays_the_motion(model: RobotModel) -> None:
    """With start_time=0.5 the hand arrives at 1.4 s and the initial pose holds before 0.5 s."""
    delayed = StrikeTrajectory(model, start_time=0.5)
    assert delayed.strike_time == pytest.approx(1.4)
    assert np.allclose(delayed.sample(0.2).position, delayed.initial)


def test_bad_durations_are_refused(model: RobotModel) -> None:
    """Durations must be four positive times; the message gives the paper's."""
    with pytest.raises(ConfigurationError, match=r"the paper's are \[0.3, 0.3, 0.3, 0.5\]"):
        StrikeTrajectory(model, durations=(0.3, 0.3, 0.0, 0.5))


def test_pose_outside_the_limits_is_refused(model: RobotModel) -> None:
    """A target pose with the elbow at -90 deg (limit -30 deg) is refused, naming the joint."""
    target = arm_pose("right", (-17.0, -25.0, 64.0, -90.0, 34.0, -35.0, 10.0))
    with pytest.raises(ConfigurationError, match=r"target pose is outside the joint limits at "
                       r"\['right_elbow'\]"):
        StrikeTrajectory(model, target=target)
