"""A motor node's command output, in the form its ``command_interface`` parameter names.

The ROS side of :mod:`humanoid_balance.command_interface`: the publisher of
the interface's message type on its topic, the writer for the joints being
commanded (built again when they change, e.g. when the job arm switches), and
the last command for a repeat (a lock-step simulation asks again for a
period it already has an answer to).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
from rclpy.qos import QoSProfile

from humanoid_balance import cdr
from humanoid_balance.command_interface import CommandWriter, command_topic, command_writer, message_class

__all__ = ["CommandOutput", "CommandSettings"]


class CommandSettings(Protocol):
    """A typed config's command output: the fields of
    :func:`~humanoid_balance.command_interface.command_params`."""

    @property
    def command_interface(self) -> str: ...

    @property
    def command_topic(self) -> str: ...

    @property
    def command_joints(self) -> Sequence[str]: ...


class CommandOutput:
    """Commands of one node through its configured interface.

    Args:
        node: the (lifecycle) node; the publisher is a lifecycle publisher when it has
            ``create_lifecycle_publisher``.
        values: the node's parameter values (``command_interface``, ``command_topic``,
            ``command_joints``), or its typed config with those fields.
        node_topic: the node's own command topic (``joint_state``'s default).
        names: the joints commanded at first (checked against ``command_joints`` now, so
            that a wrong joint list fails configure, not the first cycle).
        period_s: the control period [s] (a trajectory point's ``time_from_start``).
        qos: the publisher's QoS.
        lifecycle: a lifecycle publisher (publishes only while the node is active) when the
            node has one; False: a plain publisher (a node that also commands while inactive).

    Raises:
        ConfigurationError: an unknown interface or a ``command_joints`` entry the node
            does not command.
    """

    def __init__(self, node: Any, values: Mapping[str, Any] | CommandSettings, node_topic: str,
                 names: Sequence[str], period_s: float, qos: QoSProfile,
                 lifecycle: bool = True) -> None:
        if isinstance(values, Mapping):
            interface, topic, joints = (values["command_interface"], values["command_topic"],
                                        values["command_joints"])
        else:
            interface, topic, joints = (values.command_interface, values.command_topic,
                                        values.command_joints)
        self.interface: str = interface
        self.topic = command_topic(self.interface, topic, node_topic)
        self._order = tuple(joints)
        self._period_s = period_s
        self._writer: CommandWriter = command_writer(self.interface, names, period_s=period_s,
                                                     joint_order=self._order)
        create = getattr(node, "create_lifecycle_publisher", node.create_publisher) if lifecycle \
            else node.create_publisher
        self.publisher = create(message_class(self.interface), self.topic, qos)
        self._last: bytes | None = None

    @property
    def period_s(self) -> float:
        """The control period [s]: a trajectory point's ``time_from_start``."""
        return self._period_s

    @period_s.setter
    def period_s(self, value: float) -> None:
        self._period_s = value
        self._writer = command_writer(self.interface, self._writer.names, period_s=value,
                                      joint_order=self._order)

    @property
    def is_activated(self) -> bool:
        """Whether a publish goes out (a lifecycle publisher only while active)."""
        return bool(getattr(self.publisher, "is_activated", True))

    def publish(self, stamp_ns: int, names: Sequence[str], position: np.ndarray,
                velocity: np.ndarray) -> None:
        """One command for ``names``, stamped ``stamp_ns`` where the message has a stamp;
        nothing while the publisher is not activated."""
        if tuple(names) != self._writer.names:
            self._writer = command_writer(self.interface, names, period_s=self._period_s,
                                          joint_order=self._order)
        data = self._writer.write(stamp_ns, position, velocity)
        if self.is_activated:
            self.publisher.publish(data)
            self._last = data

    def repeat(self, stamp_ns: int) -> None:
        """The last command again (stamped ``stamp_ns`` where the message has a stamp);
        nothing before the first."""
        if self._last is None or not self.is_activated:
            return
        if self.interface == "joint_state":
            self._last = cdr.with_stamp(self._last, stamp_ns)
        self.publisher.publish(self._last)

    def flush(self, timeout_s: float) -> None:
        """Wait (at most ``timeout_s``) until every subscriber acknowledged the commands.

        Destroying the publisher right after a braking ramp's last (at rest) command drops
        what a reader has not yet acknowledged: on a loaded machine the arm's driver then
        kept a moving command as the last one. Errors are ignored: the context may be going,
        and nothing more can be sent then.
        """
        from rclpy.duration import Duration

        with contextlib.suppress(Exception):
            self.publisher.wait_for_all_acked(Duration(seconds=timeout_s))
