"""Late and jumping commands in the MuJoCo servos: applied as of their stamp, closed within the
acceleration limits (:mod:`humanoid_balance.sim.robot`,
:func:`humanoid_balance.sim.command_delay.command_age_s`)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from humanoid_balance.core.joint_limits import arm_acceleration_limit
from humanoid_balance.exceptions import InvalidInputError, UnknownJointError
from humanoid_balance.sim.humanoid import HumanoidSim
from humanoid_balance.sim.lunar_arm import LunarArmSim

ARM = "right_elbow"


def _arm_sim() -> tuple[HumanoidSim, int]:
    sim = HumanoidSim(arm_acceleration_limits=True)
    return sim, sim.joint_names.index(ARM)


def test_a_late_command_takes_its_position_where_its_velocity_moved_it() -> None:
    """A command 20 ms old with 0.5 rad/s sets the goal 10 mrad past its position."""
    sim = LunarArmSim(timestep=0.001)
    i = sim.joint_names.index("joint1")
    sim.set_targets(["joint1"], [0.1], [0.5], age_s=0.02)
    assert sim._goal_q[i] == pytest.approx(0.1 + 0.5 * 0.02)


def test_a_negative_age_is_refused() -> None:
    """age_s below 0 is refused with its value named, and nothing is applied."""
    sim = LunarArmSim(timestep=0.001)
    with pytest.raises(InvalidInputError, match=r"age_s=-0.01 must be finite and >= 0"):
        sim.set_targets(["joint1"], [0.1], [0.5], age_s=-0.01)
    assert not sim._goal_q.any()


def test_the_humanoid_has_no_acceleration_limit_by_default() -> None:
    """Without arm_acceleration_limits every servo takes its commands as they come."""
    assert np.isinf(HumanoidSim().acceleration_limit_rad_s2).all()


def test_arm_acceleration_limits_are_table_2s() -> None:
    """With arm_acceleration_limits the arm joints get seed 000's Table 2, the others none."""
    sim, _ = _arm_sim()
    for name, limit in zip(sim.joint_names, sim.acceleration_limit_rad_s2, strict=True):
        arm = any(j in name for j in ("shoulder", "elbow", "wrist"))
        assert limit == (arm_acceleration_limit(name) if arm else np.inf), name


def test_a_jump_is_closed_within_the_acceleration_limit_without_overshoot() -> None:
    """A 0.1 rad jump of the goal: the target's acceleration stays within the limit (the last,
    closing step within 1.1 times it), it reaches the goal exactly and passes it by less than
    10 urad on the way (the discrete braking's rounding)."""
    sim, i = _arm_sim()
    dt, limit = sim.timestep, sim.acceleration_limit_rad_s2[i]
    start = float(sim._target_q[i])
    sim.set_targets([ARM], [start + 0.1])
    target = [start]
    for _ in range(100):
        sim.step()
        target.append(float(sim._target_q[i]))
    velocity = np.diff(target) / dt
    acceleration = np.diff(np.r_[0.0, velocity]) / dt
    assert np.abs(acceleration).max() <= 1.1 * limit
    assert max(target) <= start + 0.1 + 1e-5
    assert target[-1] == start + 0.1


def test_a_stream_within_the_limit_is_followed_exactly() -> None:
    """Commands every step of a motion accelerating at 40 rad/s^2 (below the limit): the target
    stays on the goal (within 1e-4 rad) as without a limit."""
    sim, i = _arm_sim()
    dt, start = sim.timestep, float(sim._target_q[i])
    worst = 0.0
    for k in range(100):
        t = k * dt
        sim.set_targets([ARM], [start + 20.0 * t * t], [40.0 * t])
        sim.step()
        worst = max(worst, abs(float(sim._goal_q[i] - sim._target_q[i])))
    assert worst < 1e-4


def test_a_velocity_jump_reaches_the_feed_forward_gradually() -> None:
    """A velocity command of 1 rad/s from rest: the servo's velocity feed-forward (the control
    beyond the target) grows by at most the acceleration limit times the step."""
    sim, i = _arm_sim()
    dt, limit = sim.timestep, sim.acceleration_limit_rad_s2[i]
    kv_over_kp = sim._kv_over_kp[i]
    sim.set_targets([ARM], velocities=[1.0])
    feed = [0.0]
    for _ in range(30):
        sim.step()
        feed.append(float(sim.data.ctrl[i] - sim._target_q[i]) / kv_over_kp)
    assert np.diff(feed).max() <= limit * dt * (1 + 1e-9)
    assert feed[-1] == pytest.approx(1.0)


def test_acceleration_limits_name_joints_of_the_model() -> None:
    """An unknown joint or a limit not above 0 is refused."""
    sim, _ = _arm_sim()
    with pytest.raises(UnknownJointError):
        sim.set_acceleration_limits({"nose_wiggle": 10.0})
    with pytest.raises(InvalidInputError, match="must be > 0"):
        sim.set_acceleration_limits({ARM: 0.0})


@pytest.mark.parametrize(("stamp_ns", "now_s", "age"), [
    (0, 5.0, 0.0),                       # unstamped: as it comes
    (4_990_000_000, 5.0, 0.01),          # 10 ms late: as of its stamp
    (5_000_000_000, 5.0, 0.0),           # on time
    (5_010_000_000, 5.0, 0.0),           # ahead of the simulation: as it comes
    (4_700_000_000, 5.0, math.inf),      # beyond the command timeout (0.2 s): refused
    (1_700_000_000 * 10**9, 5.0, 0.0),   # another clock (wall time)
])
def test_command_age(stamp_ns: int, now_s: float, age: float) -> None:
    """A command's age: its delay when stamped on the simulation's clock within the timeout."""
    from humanoid_balance.sim.command_delay import command_age_s

    got = command_age_s(stamp_ns, now_s, 0.2)
    assert got == age if math.isinf(age) else got == pytest.approx(age, abs=1e-9)
