"""Motor commands in the form ros2_control's controllers take (humanoid_balance.command_interface).

Each writer's bytes are read back with rclpy's own deserializer: the message
is what the controller receives (names, order, sizes, stamps).
"""

from __future__ import annotations

import numpy as np
import pytest
from rclpy.serialization import deserialize_message

from humanoid_balance.command_interface import (
    COMMAND_INTERFACES,
    DEFAULT_TOPICS,
    ForwardPositionCommandWriter,
    command_params,
    command_topic,
    command_writer,
    message_class,
)
from humanoid_balance.exceptions import ConfigurationError, InvalidInputError

NAMES = ("r_shoulder_pitch", "r_shoulder_roll", "r_elbow", "l_shoulder_pitch")
POSITION = np.array([0.1, -0.2, 0.3, -0.4])
VELOCITY = np.array([1.0, -2.0, 3.0, -4.0])
STAMP_NS = 12_345_678_901


def _read(interface: str, data: bytes):
    return deserialize_message(data, message_class(interface))


def test_joint_state_carries_names_positions_velocities_and_the_cycle_stamp() -> None:
    """joint_state: one name, position and velocity per joint, stamped with the cycle."""
    msg = _read("joint_state", command_writer("joint_state", NAMES, period_s=0.002)
                .write(STAMP_NS, POSITION, VELOCITY))
    assert tuple(msg.name) == NAMES
    np.testing.assert_array_equal(msg.position, POSITION)
    np.testing.assert_array_equal(msg.velocity, VELOCITY)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (12, 345_678_901)
    assert len(msg.effort) == 0


def test_joint_trajectory_is_one_point_one_period_ahead_starting_on_receipt() -> None:
    """joint_trajectory: joint names in order, one point with positions and velocities,
    time_from_start one period, header stamp zero (start on receipt)."""
    writer = command_writer("joint_trajectory", NAMES, period_s=0.002)
    writer.write(1, np.zeros(4), np.zeros(4))  # the buffer is reused: a second write must win
    msg = _read("joint_trajectory", writer.write(STAMP_NS, POSITION, VELOCITY))
    assert tuple(msg.joint_names) == NAMES
    assert len(msg.points) == 1
    point = msg.points[0]
    np.testing.assert_array_equal(point.positions, POSITION)
    np.testing.assert_array_equal(point.velocities, VELOCITY)
    assert len(point.accelerations) == 0 and len(point.effort) == 0
    assert (point.time_from_start.sec, point.time_from_start.nanosec) == (0, 2_000_000)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (0, 0)


def test_joint_trajectory_period_over_a_second() -> None:
    """time_from_start splits periods of a second or more into sec and nanosec."""
    msg = _read("joint_trajectory", command_writer("joint_trajectory", NAMES[:1], period_s=1.25)
                .write(0, [0.5], [0.0]))
    assert (msg.points[0].time_from_start.sec, msg.points[0].time_from_start.nanosec) == \
        (1, 250_000_000)


def test_forward_position_is_positions_in_the_controllers_order() -> None:
    """forward_position: positions only, reordered to command_joints."""
    order = (NAMES[2], NAMES[0], NAMES[3], NAMES[1])
    msg = _read("forward_position", command_writer(
        "forward_position", NAMES, period_s=0.002, joint_order=order)
        .write(STAMP_NS, POSITION, VELOCITY))
    np.testing.assert_array_equal(msg.data, [0.3, 0.1, -0.4, -0.2])
    assert len(msg.layout.dim) == 0


def test_forward_position_default_order_is_the_nodes() -> None:
    """An empty command_joints (the [''] default) keeps the node's order."""
    writer = ForwardPositionCommandWriter(NAMES, [""])
    np.testing.assert_array_equal(_read("forward_position", writer.write(0, POSITION, VELOCITY))
                                  .data, POSITION)


def test_forward_position_refuses_a_joint_the_node_does_not_command() -> None:
    """A controller joint the node has no value for is a configuration error naming it."""
    with pytest.raises(ConfigurationError, match="waist_pitch"):
        ForwardPositionCommandWriter(NAMES, ["waist_pitch", NAMES[0]])


@pytest.mark.parametrize("interface", COMMAND_INTERFACES)
def test_wrong_sizes_are_refused(interface: str) -> None:
    """A command without one position and velocity per joint is refused, not sent."""
    writer = command_writer(interface, NAMES, period_s=0.002)
    with pytest.raises(InvalidInputError):
        writer.write(0, POSITION[:3], VELOCITY)


def test_topics_and_parameters() -> None:
    """Empty command_topic means the node's topic or the controller's usual one."""
    assert command_topic("joint_state", "", "/arm_balance/command") == "/arm_balance/command"
    assert command_topic("joint_trajectory", "", "/x") == DEFAULT_TOPICS["joint_trajectory"]
    assert command_topic("forward_position", "/arm/commands", "/x") == "/arm/commands"
    with pytest.raises(ConfigurationError):
        command_topic("effort", "", "/x")
    params = {p.name: p for p in command_params("/arm_balance/command")}
    assert params["command_interface"].validate("trajectory")
    assert params["command_joints"].validate(["a", "a"])
    assert params["command_joints"].validate(["a", "b"]) is None
    with pytest.raises(ConfigurationError):
        command_writer("joint_trajectory", NAMES, period_s=0.0)
