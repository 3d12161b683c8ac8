"""``arm_balance`` as a process commanding ros2_control's controllers (``command_interface``).

The robot graph with ``command_interface:=joint_trajectory`` and with
``forward_position`` (the example config's joint order), fed joint states as
``joint_state_broadcaster`` may send them (positions only, every joint of the
body, not just the arms):
each message on the controller's default topic is what the controller takes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from process_harness import (
    ARM_JOINTS,
    OUTPUT_TIMEOUT_S,
    Feeder,
    FeedSpec,
    Probe,
    all_finite,
    arm_feed,
    bring_up,
    start_node,
    wait_ready,
)

from humanoid_balance.command_interface import DEFAULT_TOPICS
from humanoid_balance.graph import robot_graph

pytestmark = [pytest.mark.ros, pytest.mark.slow]

EXAMPLE = Path(__file__).resolve().parents[2] / "config" / "ros2_control_example.yaml"


@pytest.mark.parametrize("interface", ["joint_trajectory", "forward_position"])
def test_commands_reach_the_controller_in_its_form(
        interface: str, probe: Probe, feed: Callable[[FeedSpec], Feeder],
        tmp_path: Path) -> None:
    """joint_trajectory: 14 named joints, one point one period ahead, stamp 0;
    forward_position: 14 finite positions in the controller's order."""
    from std_msgs.msg import Float64MultiArray
    from trajectory_msgs.msg import JointTrajectory

    order = yaml.safe_load(EXAMPLE.read_text())["forward_position_controller"][
        "ros__parameters"]["joints"]
    node = next(n for n in robot_graph(command_interface=interface) if n.name == "arm_balance")
    if interface == "forward_position":
        node = node.with_parameters(command_joints=order)
    msg_type = JointTrajectory if interface == "joint_trajectory" else Float64MultiArray
    commands = probe.record(msg_type, DEFAULT_TOPICS[interface], keep=20)
    running = start_node(node, tmp_path, tag=interface)
    try:
        wait_ready(probe, running)
        bring_up(probe, running)
        feed(arm_feed())  # all 30 joints, positions only: as a broadcaster may send
        assert probe.spin_until(lambda: commands.count >= 20, OUTPUT_TIMEOUT_S), \
            f"{commands.count} commands on {DEFAULT_TOPICS[interface]}"
        last = commands.last
        if interface == "joint_trajectory":
            point = last.points[0]
            assert (set(last.joint_names), len(last.joint_names), len(last.points),
                    len(point.positions), len(point.velocities)) == (ARM_JOINTS, 14, 1, 14, 14)
            assert all_finite([*point.positions, *point.velocities])
            assert (point.time_from_start.sec, point.time_from_start.nanosec) == (0, 2_000_000)
            assert (last.header.stamp.sec, last.header.stamp.nanosec) == (0, 0)
        else:
            assert len(last.data) == 14 and all_finite(list(last.data))
            # the job arm's shoulder pitch moves at -0.2 rad/s from 0: negative, where the
            # controller's order puts right_shoulder_pitch (first)
            assert order[0] == "right_shoulder_pitch" and last.data[0] < 0.0
    finally:
        report = running.stop()
        assert report.returncode == 0, report
