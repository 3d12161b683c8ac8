"""Motor commands in the form a ros2_control controller takes.

The motor-commanding nodes (``arm_balance``, ``identification_executor``)
publish each cycle's joint positions and velocities through one of three
interfaces, chosen by their ``command_interface`` parameter:

``joint_state``
    ``sensor_msgs/JointState`` with names, positions and velocities, stamped
    with the cycle (today's interface: ``mujoco_sim`` and drivers that take a
    joint-state command).
``joint_trajectory``
    ``trajectory_msgs/JointTrajectory`` for ros2_control's
    ``joint_trajectory_controller/JointTrajectoryController``: the node's
    joints in the node's order and one point per cycle, reached
    ``time_from_start`` = one control period later, with the cycle's
    positions and velocities. The header stamp is zero, which the controller
    reads as "start on receipt": a stamp taken from the robot's joint states
    can lie in the past of the controller's clock by the transport delay, and
    the controller would then drop the point as already expired.
``forward_position``
    ``std_msgs/Float64MultiArray`` for
    ``forward_command_controller/ForwardCommandController`` (or
    ``position_controllers/JointGroupPositionController``): positions only, in
    the controller's joint order (the ``command_joints`` parameter, which must
    list exactly the controller's ``joints``); joints the node does not
    command cannot be in it.

Serialization is CDR written in place (as :mod:`humanoid_balance.cdr` does for
the other hot-path messages): a command goes out every 2 ms, and a message
object costs more than the control law. The layouts are checked against
rclpy's own deserializer in ``test/test_command_interface.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from humanoid_balance.cdr import JointStateCommandWriter, float64_multi_array_message
from humanoid_balance.cdr_primitives import UINT32, header_template, pad
from humanoid_balance.exceptions import ConfigurationError, InvalidInputError
from humanoid_balance.params import Param

__all__ = [
    "COMMAND_INTERFACES",
    "DEFAULT_TOPICS",
    "MESSAGE_TYPES",
    "CommandWriter",
    "ForwardPositionCommandWriter",
    "JointTrajectoryCommandWriter",
    "command_params",
    "command_topic",
    "command_writer",
]

COMMAND_INTERFACES = ("joint_state", "joint_trajectory", "forward_position")

#: the ROS message type each interface publishes
MESSAGE_TYPES = {"joint_state": "sensor_msgs/msg/JointState",
                 "joint_trajectory": "trajectory_msgs/msg/JointTrajectory",
                 "forward_position": "std_msgs/msg/Float64MultiArray"}

#: the topic of each ros2_control interface when ``command_topic`` is empty (the controllers'
#: ``~/joint_trajectory`` and ``~/commands`` under their usual names); ``joint_state`` uses the
#: node's own command topic
DEFAULT_TOPICS = {"joint_trajectory": "/joint_trajectory_controller/joint_trajectory",
                  "forward_position": "/forward_position_controller/commands"}


def command_params(node_topic: str) -> list[Param]:
    """The three parameters every motor node declares for its command output."""
    return [
        Param("command_interface", "joint_state",
              "how motor commands go out: JointState, a JointTrajectory point per cycle "
              "(joint_trajectory_controller) or positions (forward_command_controller)",
              choices=COMMAND_INTERFACES),
        Param("command_topic", "",
              f"topic of the commands; empty: {node_topic} for joint_state, "
              f"{DEFAULT_TOPICS['joint_trajectory']} for joint_trajectory, "
              f"{DEFAULT_TOPICS['forward_position']} for forward_position"),
        Param("command_joints", [""],
              "forward_position: the controller's joints, in its order (every one commanded "
              "by this node); [''] or []: the node's own order", check=_check_joint_list),
    ]


def _check_joint_list(value: Sequence[str]) -> str | None:
    names = [n for n in value if n]
    if len(set(names)) != len(names):
        return f"command_joints lists a joint twice: {list(value)}"
    return None


def command_topic(interface: str, topic: str, node_topic: str) -> str:
    """The topic commands go to: ``topic``, or the interface's default when empty."""
    if interface not in COMMAND_INTERFACES:
        raise ConfigurationError(f"command_interface={interface!r}: expected one of "
                                 f"{list(COMMAND_INTERFACES)}")
    return topic or (node_topic if interface == "joint_state" else DEFAULT_TOPICS[interface])


class JointTrajectoryCommandWriter:
    """Serialized ``trajectory_msgs/JointTrajectory`` commands: one point per cycle.

    Args:
        names: the joints, in the order of every array written.
        period_s: the control period [s]: the point's ``time_from_start``.
    """

    def __init__(self, names: Sequence[str], period_s: float) -> None:
        if not np.isfinite(period_s) or period_s <= 0.0:
            raise ConfigurationError(f"command period {period_s} s: must be finite and > 0")
        self.names = tuple(names)
        count = len(self.names)
        buffer = header_template("")  # stamp 0: start on receipt (see the module docstring)
        pad(buffer, 4)
        buffer.extend(UINT32.pack(count))
        for name in self.names:
            pad(buffer, 4)
            encoded = name.encode()
            buffer.extend(UINT32.pack(len(encoded) + 1) + encoded + b"\x00")
        pad(buffer, 4)
        buffer.extend(UINT32.pack(1))  # one point
        starts = []
        for filled in (True, True, False, False):  # positions, velocities, accelerations, effort
            pad(buffer, 4)
            buffer.extend(UINT32.pack(count if filled else 0))
            if filled and count:
                pad(buffer, 8)
                starts.append(len(buffer))
                buffer.extend(b"\x00" * 8 * count)
        pad(buffer, 4)
        sec, nanosec = divmod(round(period_s * 1e9), 1_000_000_000)
        buffer.extend(np.array([sec], "<i4").tobytes() + UINT32.pack(nanosec))
        self._buffer = buffer
        views = [np.frombuffer(buffer, dtype="<f8", count=count, offset=s) for s in starts]
        self._position: np.ndarray = views[0] if count else np.zeros(0)
        self._velocity: np.ndarray = views[1] if count else np.zeros(0)

    def write(self, stamp_ns: int, position: np.ndarray | Sequence[float],
              velocity: np.ndarray | Sequence[float]) -> bytes:
        """The command; ``stamp_ns`` is not used (the header stamp stays zero)."""
        del stamp_ns
        _check_sizes(len(self.names), position, velocity)
        self._position[:] = position
        self._velocity[:] = velocity
        return bytes(self._buffer)


class ForwardPositionCommandWriter:
    """Serialized ``std_msgs/Float64MultiArray`` positions in a controller's joint order.

    Args:
        names: the node's joints, in the order of the arrays written.
        joint_order: the controller's joints; empty: ``names``.

    Raises:
        ConfigurationError: a joint of ``joint_order`` the node does not command.
    """

    def __init__(self, names: Sequence[str], joint_order: Sequence[str] = ()) -> None:
        self.names = tuple(names)
        order = tuple(n for n in joint_order if n) or self.names
        missing = [n for n in order if n not in self.names]
        if missing:
            raise ConfigurationError(
                f"command_joints {missing} are not commanded by this node (it commands "
                f"{list(self.names)}); a forward_command_controller needs a value for each")
        self.joint_order = order
        self._index = np.array([self.names.index(n) for n in order], dtype=int)

    def write(self, stamp_ns: int, position: np.ndarray | Sequence[float],
              velocity: np.ndarray | Sequence[float]) -> bytes:
        """The command (positions only; the message has no stamp)."""
        del stamp_ns
        _check_sizes(len(self.names), position, velocity)
        return float64_multi_array_message(np.asarray(position, dtype=float)[self._index])


def _check_sizes(count: int, position: np.ndarray | Sequence[float],
                 velocity: np.ndarray | Sequence[float]) -> None:
    if len(position) != count or len(velocity) != count:
        raise InvalidInputError(f"command of {len(position)} positions and {len(velocity)} "
                                f"velocities for {count} joints")


CommandWriter = JointStateCommandWriter | JointTrajectoryCommandWriter | ForwardPositionCommandWriter


def command_writer(interface: str, names: Sequence[str], *, period_s: float,
                   joint_order: Sequence[str] = ()) -> CommandWriter:
    """The writer of ``interface`` for the node's joints ``names``; each has
    ``write(stamp_ns, position, velocity) -> bytes``."""
    if interface == "joint_state":
        return JointStateCommandWriter(names)
    if interface == "joint_trajectory":
        return JointTrajectoryCommandWriter(names, period_s)
    if interface == "forward_position":
        return ForwardPositionCommandWriter(names, joint_order)
    raise ConfigurationError(f"command_interface={interface!r}: expected one of "
                             f"{list(COMMAND_INTERFACES)}")


def message_class(interface: str) -> type:
    """The rclpy message class of ``interface`` (imports ROS message packages)."""
    module, _, name = MESSAGE_TYPES[interface].replace("/msg/", ".msg.").rpartition(".")
    import importlib

    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]
