"""mujoco_sim refuses a command older than command_timeout instead of taking it for a fresh one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.ros

JOINT = "right_elbow"


@pytest.fixture
def node(rclpy_context: object, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The humanoid mujoco_sim node, its physics stepped by the test (no physics thread)."""
    from rclpy.parameter import Parameter

    from humanoid_balance.nodes.mujoco_sim import MujocoSimNode

    monkeypatch.setattr(MujocoSimNode, "_run", lambda self: None)
    sim = MujocoSimNode(context=rclpy_context, parameter_overrides=[
        Parameter("sensor_noise", value=0.0), Parameter("command_timeout", value=0.2)])
    sim._thread.join()
    try:
        yield sim
    finally:
        sim.destroy_node()


def _run(node: Any, seconds: float) -> None:
    for _ in range(round(seconds / node.sim.timestep)):
        node._apply_pending()
        node.timeout.step(node.sim, node.sim.time)
        node.sim.step()


def _send(node: Any, stamp_s: float, position: float, velocity: float) -> None:
    from humanoid_balance import cdr

    writer = cdr.JointStateCommandWriter([JOINT])
    node._command_callback("/arm_balance/command")(
        writer.write(round(stamp_s * 1e9), np.array([position]), np.array([velocity])))


def test_a_command_older_than_the_timeout_is_refused_and_the_joint_holds(node: Any) -> None:
    """A joint moving at 0.5 rad/s on stamped commands; its commands stop, it holds; a command
    of the same path stamped 0.3 s back (timeout 0.2 s) is refused: the goal stays, the hold
    goes on, the refusal is counted and named. Before, it was applied as of now: the goal
    pulled back 0.15 rad and the joint restarted at 0.5 rad/s. One stamped 0.19 s back is still
    applied as of its stamp (moved on by its velocity)."""
    index = list(node.sim.joint_names).index(JOINT)
    start = float(node.sim.joint_state().position[index])
    _send(node, node.sim.time, start, 0.5)
    _run(node, 0.1)
    _run(node, 0.4)  # no command since: the joint holds
    assert JOINT in node.timeout.holding
    goal = float(node.sim._goal_q[index])
    rejected = node.commands_rejected
    stamp = node.sim.time - 0.3
    _send(node, stamp, start + 0.5 * stamp, 0.5)
    node._apply_pending()
    assert node.commands_rejected == rejected + 1
    assert "older than command_timeout=0.2 s" in node.last_rejection
    assert float(node.sim._goal_q[index]) == goal
    assert JOINT in node.timeout.holding
    stamp = node.sim.time - 0.19
    _send(node, stamp, start + 0.5 * stamp, 0.5)
    node._apply_pending()
    assert float(node.sim._goal_q[index]) == pytest.approx(start + 0.5 * node.sim.time, abs=1e-9)
    assert JOINT not in node.timeout.holding
