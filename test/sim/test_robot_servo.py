"""The servo of :class:`~humanoid_balance.sim.robot.MujocoRobotSim`: position goals at the velocity limit."""

from __future__ import annotations

import pytest

from humanoid_balance.sim.lunar_arm import LunarArmSim

JOINT = "joint1"
#: [s] of simulation: joint1 crosses its whole range (2.967 rad at 1 rad/s) and settles
RUN_S = 4.0


def _peak_position(command: float) -> tuple[float, float]:
    """The farthest joint1 gets after a position command, and its limit on that side [rad]."""
    sim = LunarArmSim(timestep=0.001)
    i = sim.joint_names.index(JOINT)
    sim.set_targets([JOINT], [command])
    peak = 0.0
    for _ in range(round(RUN_S / sim.timestep)):
        sim.step()
        q = float(sim.data.qpos[sim._qadr[i]])
        peak = max(peak, q) if command > 0 else min(peak, q)
    limit = sim._upper[i] if command > 0 else sim._lower[i]
    return peak, float(limit)


@pytest.mark.parametrize("command", [1e300, -1e300])
def test_a_step_to_the_limit_does_not_pass_it(command: float) -> None:
    """A position command of +-1e300 (clipped to the limit) never takes the joint past its limit."""
    peak, limit = _peak_position(command)
    assert abs(peak) <= abs(limit), f"{JOINT} reached {peak:.4f} rad, limit {limit:.4f} rad"


def test_a_position_step_becomes_a_ramp_at_the_velocity_limit() -> None:
    """The servo target moves toward a far goal by the velocity limit times the step, each step."""
    sim = LunarArmSim(timestep=0.001)
    i = sim.joint_names.index(JOINT)
    sim.set_targets([JOINT], [2.0])
    sim.step(100)
    assert sim.data.ctrl[i] == pytest.approx(100 * sim.timestep * sim.velocity_limit_rad_s[i])


def test_a_goal_within_reach_is_the_target_at_once() -> None:
    """A command within one step's reach of the target is applied exactly (no lag added)."""
    sim = LunarArmSim(timestep=0.001)
    i = sim.joint_names.index(JOINT)
    sim.set_targets([JOINT], [0.5e-3], [0.2])
    sim.step()
    kv_over_kp = sim._kv_over_kp[i]
    assert sim.data.ctrl[i] == pytest.approx(0.5e-3 + 0.2 * sim.timestep + kv_over_kp * 0.2,
                                             abs=1e-15)


def test_a_velocity_command_moves_the_goal_and_the_target() -> None:
    """A velocity command within the limit moves the target at that velocity from its position."""
    sim = LunarArmSim(timestep=0.001)
    i = sim.joint_names.index(JOINT)
    sim.set_targets([JOINT], velocities=[0.5])
    sim.step(200)
    target = sim.data.ctrl[i] - sim._kv_over_kp[i] * 0.5
    assert target == pytest.approx(200 * sim.timestep * 0.5)
