"""Lock-step between a simulation and the nodes that answer it (no rclpy).

A simulation in lock-step publishes its sensors stamped ``t`` (each publish
period), then waits before stepping on until every *lock-step topic* has
delivered a message whose header stamp is ``>= t`` (the answer of that period),
or until a timeout passed; then it goes on and counts a miss for each late
topic. The result of a run then depends on the simulation and the nodes, not
on how loaded the machine is (a slow node makes the run slower, not different).

- :class:`LockStepTopic` / :func:`parse_lock_step_topics`: the
  ``topic:package/msg/Type`` entries of the ``lock_step_topics`` parameter.
- :func:`~humanoid_balance.cdr.header_stamp_ns` (re-exported): the stamp of an
  answer, read from its serialized form without deserializing it.
- :class:`LockStepGate`: the wait itself, between the thread that receives the
  answers (:meth:`LockStepGate.deliver`) and the physics thread
  (:meth:`LockStepGate.wait`), over one :class:`threading.Condition`.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from humanoid_balance.cdr import header_stamp_ns
from humanoid_balance.exceptions import ConfigurationError

__all__ = ["LockStepGate", "LockStepTopic", "header_stamp_ns", "parse_lock_step_topics"]

#: ``topic:package/msg/Type``
_ENTRY = re.compile(r"^(?P<topic>[^:\s]+):(?P<type>[A-Za-z_]\w*/msg/[A-Za-z_]\w*)$")


@dataclass(frozen=True)
class LockStepTopic:
    """One topic the simulation waits for.

    Attributes:
        topic: the topic name (``/arm_balance/command``).
        type_name: its message type, ``package/msg/Type``; the type's first field is a
            ``std_msgs/Header``.
    """

    topic: str
    type_name: str

    @classmethod
    def parse(cls, entry: str) -> LockStepTopic:
        """``"topic:package/msg/Type"`` as a :class:`LockStepTopic`.

        Raises:
            ConfigurationError: the entry does not have that form.
        """
        match = _ENTRY.match(entry.strip())
        if match is None:
            raise ConfigurationError(
                f"lock_step_topics entry {entry!r} is not 'topic:package/msg/Type' "
                "(e.g. '/arm_balance/command:sensor_msgs/msg/JointState')")
        return cls(match["topic"], match["type"])

    def message_class(self) -> type:
        """The message class of :attr:`type_name` (imported from its package).

        Raises:
            ConfigurationError: the package or the type is not installed.
        """
        import importlib

        package, _, name = self.type_name.split("/")
        try:
            module = importlib.import_module(f"{package}.msg")
            cls = getattr(module, name)
        except (ImportError, AttributeError):
            raise ConfigurationError(
                f"lock-step topic {self.topic}: message type {self.type_name} is not installed "
                "(source the workspace that provides it)") from None
        if "header" not in getattr(cls, "_fields_and_field_types", {}):
            raise ConfigurationError(
                f"lock-step topic {self.topic}: {self.type_name} has no header; the simulation "
                "pairs answers with its periods by their header stamp")
        fields = list(cls._fields_and_field_types)
        if fields[0] != "header":
            raise ConfigurationError(
                f"lock-step topic {self.topic}: the first field of {self.type_name} is "
                f"{fields[0]!r}, not the header")
        return cls  # type: ignore[no-any-return]


def parse_lock_step_topics(entries: Sequence[str]) -> list[LockStepTopic]:
    """The non-empty ``entries`` parsed; a topic named twice is refused.

    Raises:
        ConfigurationError: a malformed entry or a repeated topic.
    """
    topics = [LockStepTopic.parse(e) for e in entries if e.strip()]
    names = [t.topic for t in topics]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigurationError(f"lock_step_topics names {repeated} more than once")
    return topics


class LockStepGate:
    """The simulation's wait for the answers of each period.

    :meth:`deliver` (the receiving thread) records the newest stamp of each topic;
    :meth:`wait` (the physics thread) blocks until every topic's newest stamp is
    ``>= t`` or the timeout passed, and counts a miss for each topic still late.
    :meth:`publishing` (the physics thread, before it publishes a period's state) sets
    the newest period an answer may be for: an answer stamped beyond it answers no
    period the simulation published (a wall-clock stamp, a stamp left from an earlier
    run) and is not taken (counted in :attr:`ahead`); taken, it would satisfy every
    later period's wait, and the simulation would step on without any answer, no miss
    counted.

    Args:
        topics: the topic names waited for.
    """

    def __init__(self, topics: Sequence[str]) -> None:
        if len(set(topics)) != len(topics):
            raise ConfigurationError(f"lock-step topics {list(topics)} repeat a topic")
        self.topics: tuple[str, ...] = tuple(topics)
        self._condition = threading.Condition()
        self._latest: dict[str, int | None] = dict.fromkeys(self.topics)
        self._closed = False
        #: late answers per topic (periods the simulation went on without them)
        self.misses: dict[str, int] = dict.fromkeys(self.topics, 0)
        #: periods waited for
        self.periods = 0
        #: answers refused per topic: stamped beyond the newest published period
        self.ahead: dict[str, int] = dict.fromkeys(self.topics, 0)
        self._horizon_ns = -1  # the newest period published, ns (-1: none yet)

    @property
    def closed(self) -> bool:
        """:meth:`close` was called: waits return at once."""
        return self._closed

    def publishing(self, t_ns: int) -> None:
        """The state of period ``t_ns`` is about to be published: answers up to it count."""
        with self._condition:
            self._horizon_ns = max(self._horizon_ns, t_ns)

    def deliver(self, topic: str, stamp_ns: int) -> bool:
        """An answer on ``topic`` with header stamp ``stamp_ns`` arrived (unknown topics ignored).

        Returns:
            False when it is refused: stamped beyond the newest published period.
        """
        with self._condition:
            if topic not in self._latest:
                return True
            if stamp_ns > self._horizon_ns:
                self.ahead[topic] += 1
                return False
            latest = self._latest[topic]
            if latest is None or stamp_ns > latest:
                self._latest[topic] = stamp_ns
                self._condition.notify_all()
            return True

    def latest(self, topic: str) -> int | None:
        """The newest stamp delivered on ``topic``, ns (None: nothing yet)."""
        with self._condition:
            return self._latest[topic]

    def late(self, t_ns: int) -> list[str]:
        """The topics whose newest answer is older than ``t_ns`` (or missing)."""
        with self._condition:
            return self._late(t_ns)

    def _late(self, t_ns: int) -> list[str]:
        return [t for t, s in self._latest.items() if s is None or s < t_ns]

    def wait(self, t_ns: int, timeout_s: float, *, count_misses: bool = True) -> list[str]:
        """Wait until every topic answered period ``t_ns`` (stamp ``>= t_ns``), at most ``timeout_s``.

        Returns:
            The topics still late when the wait ended (empty: all answered); a miss is
            counted for each when ``count_misses``. After :meth:`close` it returns at once.
        """
        end = time.monotonic() + timeout_s
        with self._condition:
            while not self._closed:
                late = self._late(t_ns)
                if not late:
                    break
                remaining = end - time.monotonic()
                if remaining <= 0.0:
                    break
                self._condition.wait(remaining)
            late = [] if self._closed else self._late(t_ns)
            if count_misses:
                self.periods += 1
                for topic in late:
                    self.misses[topic] += 1
            return late

    def close(self) -> None:
        """Wake every waiter and make later waits return at once (shutdown)."""
        with self._condition:
            self._closed = True
            self._condition.notify_all()
