"""rosbag2 recording and replay without rosbag2: rclpy raw (CDR) messages + ``rosbags``.

rosbag2 (``ros2 bag``) is not on PyPI; ``rosbags`` reads and writes the same
directories (metadata.yaml + MCAP or sqlite3 files), so bags made here open in
``ros2 bag info/play`` on a robot and the robot's bags replay here.

- :class:`BagRecorder`: subscribes to topics in raw (serialized CDR) form and
  writes each message as it came, with the recorder node's clock as the log
  time (simulation time when the node has ``use_sim_time``), like
  ``ros2 bag record``. Messages are never deserialized: what is replayed is
  byte for byte what was published.
- :class:`BagPlayer`: publishes a bag's messages in log-time order, paced at a
  rate factor, with ``/clock``: the bag's own ``/clock`` messages when it has
  them (a simulation's time), else a clock made from the log times before
  each message, as ``ros2 bag play --clock`` does. Nodes with
  ``use_sim_time`` run on it as on the live system.
"""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from humanoid_balance.exceptions import ConfigurationError, HumanoidBalanceError

CLOCK_TOPIC = "/clock"
STORAGES = ("mcap", "sqlite3")
CLOCK_MODES = ("auto", "bag", "log_time", "none")


class BagError(HumanoidBalanceError):
    """A bag cannot be read or written."""


def message_class(msgtype: str) -> Any:
    """The Python message class of ``pkg/msg/Name`` (rosidl_runtime_py is not on PyPI).

    Raises:
        BagError: the type's package is not installed.
    """
    try:
        package, kind, name = msgtype.split("/")
        return getattr(importlib.import_module(f"{package}.{kind}"), name)
    except (ValueError, ImportError, AttributeError) as error:
        raise BagError(f"message type {msgtype!r} is not available here ({error}): install its "
                       "message package, or leave its topic out") from error


def typestore() -> Any:
    """The rosbags type store bags are written and read with here (ROS 2 Jazzy's messages)."""
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS2_JAZZY)


class BagRecorder:
    """Records topics of a running graph to a rosbag2 directory.

    Args:
        node: the rclpy node that subscribes (its clock stamps the log times).
        path: the bag directory to create (must not exist).
        topics: topic -> ``pkg/msg/Name``; None records every topic the node sees,
            looking again every second for new ones.
        storage: ``mcap`` or ``sqlite3``.
        exclude: topics never recorded.
        depth: subscription queue depth (reliable, keep last).

    Raises:
        ConfigurationError: an unknown storage or an existing path.
    """

    def __init__(self, node: Any, path: str | Path, topics: Mapping[str, str] | None = None, *,
                 storage: str = "mcap", exclude: Sequence[str] = (), depth: int = 1000) -> None:
        from rclpy.qos import QoSProfile
        from rosbags.rosbag2 import StoragePlugin, Writer

        if storage not in STORAGES:
            raise ConfigurationError(f"storage {storage!r}: expected one of {STORAGES}")
        self.path = Path(path)
        if self.path.exists():
            raise ConfigurationError(f"bag {self.path} exists already: choose a new directory")
        self.node = node
        self.exclude = set(exclude)
        self._qos = QoSProfile(depth=depth)
        self._lock = threading.Lock()
        self._typestore = typestore()
        plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
        self._writer = Writer(self.path, version=8, storage_plugin=plugin)
        self._writer.open()
        self._connections: dict[str, Any] = {}
        self._subscriptions: list[Any] = []
        self.counts: dict[str, int] = {}
        self._closed = False
        if topics is None:
            self._discover()
            self._timer = node.create_timer(1.0, self._discover)
        else:
            self._timer = None
            for topic, msgtype in topics.items():
                self.add_topic(topic, msgtype)

    def _discover(self) -> None:
        for topic, types in self.node.get_topic_names_and_types():
            if topic not in self._connections and topic not in self.exclude and types:
                try:
                    self.add_topic(topic, types[0])
                except BagError as error:
                    self.node.get_logger().warning(f"not recording {topic}: {error}")
                    self.exclude.add(topic)

    def add_topic(self, topic: str, msgtype: str) -> None:
        """Start recording one topic.

        Raises:
            BagError: the message type is unknown here.
        """
        with self._lock:
            if self._closed or topic in self._connections:
                return
            python_class = message_class(msgtype)
            try:
                connection = self._writer.add_connection(topic, msgtype, typestore=self._typestore)
            except Exception as error:  # rosbags raises its own errors for unknown types
                raise BagError(f"cannot record {topic} ({msgtype}): {error}") from error
            self._connections[topic] = connection
            self.counts[topic] = 0

        from humanoid_balance.nodes.common import clock_ns  # rclpy: imported when recording

        clock = self.node.get_clock()

        def write(data: bytes, topic: str = topic) -> None:
            stamp = clock_ns(clock)  # the log time: when it arrived, on the node's clock
            with self._lock:
                if not self._closed:
                    self._writer.write(self._connections[topic], stamp, data)
                    self.counts[topic] += 1

        self._subscriptions.append(self.node.create_subscription(python_class, topic, write,
                                                                 self._qos, raw=True))

    @property
    def message_count(self) -> int:
        """Messages written so far."""
        return sum(self.counts.values())

    def close(self) -> None:
        """Stop recording and finish the bag (writes metadata.yaml)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._timer is not None:
                self.node.destroy_timer(self._timer)
            for subscription in self._subscriptions:
                self.node.destroy_subscription(subscription)
            self._writer.close()
            # rosbags leaves the MCAP CRCs 0 ("not computed"): a damaged bag would replay
            # with no word (issue 35)
            from humanoid_balance.mcap_crc import seal

            for mcap in sorted(self.path.glob("*.mcap")):
                seal(mcap)


@dataclass(frozen=True)
class BagMessage:
    """One recorded message: topic, type, log time [ns] and serialized CDR bytes."""

    topic: str
    msgtype: str
    log_time_ns: int
    data: bytes


def read_bag(path: str | Path, topics: Iterable[str] | None = None) -> Iterator[BagMessage]:
    """The bag's messages in log-time order, raw.

    Raises:
        BagError: the path is not a readable rosbag2 directory.
    """
    from rosbags.rosbag2 import Reader

    try:
        reader = Reader(Path(path))
        reader.open()
    except Exception as error:  # rosbags' ReaderError and OS errors
        raise BagError(f"cannot open bag {path}: {error}") from error
    count = 0
    try:
        wanted = None if topics is None else set(topics)
        connections = [c for c in reader.connections if wanted is None or c.topic in wanted]
        messages = reader.messages(connections=connections)
        while True:
            try:
                connection, log_time, data = next(messages)
            except StopIteration:
                return
            except Exception as error:  # rosbags' and struct/zstd errors of a damaged file
                raise BagError(
                    f"bag {path} is damaged after {count} readable messages ({type(error).__name__}: "
                    f"{error}); the part before it can still be used: rosbags-convert or "
                    "`ros2 bag reindex` may recover more") from error
            count += 1
            yield BagMessage(connection.topic, connection.msgtype, int(log_time), bytes(data))
    finally:
        reader.close()


def bag_topics(path: str | Path) -> dict[str, tuple[str, int]]:
    """topic -> (type, message count) of a bag.

    Raises:
        BagError: the path is not a readable rosbag2 directory.
    """
    from rosbags.rosbag2 import Reader

    try:
        with Reader(Path(path)) as reader:
            return {c.topic: (c.msgtype, c.msgcount) for c in reader.connections}
    except Exception as error:
        raise BagError(f"cannot open bag {path}: {error}") from error


def metadata_topics(path: str | Path) -> dict[str, str]:
    """topic -> type, from a bag directory's ``metadata.yaml`` alone (no rosbags, no rosbag2).

    What a launch file reads to build the player's command (``graph.bag_player_command``):
    the same file ``ros2 bag info`` shows, in the layout every rosbag2 version writes.

    Raises:
        ConfigurationError: no such directory, or it has no readable ``metadata.yaml``.
    """
    import yaml

    directory = Path(path)
    metadata = directory / "metadata.yaml"
    if not directory.is_dir():
        raise ConfigurationError(f"bag {str(path)!r} is not a directory: give a rosbag2 directory "
                                 "(the one holding metadata.yaml)")
    try:
        tree = yaml.safe_load(metadata.read_text())
        entries = tree["rosbag2_bagfile_information"]["topics_with_message_count"]
        return {str(e["topic_metadata"]["name"]): str(e["topic_metadata"]["type"])
                for e in entries or []}
    except (OSError, yaml.YAMLError, KeyError, TypeError) as error:
        raise ConfigurationError(
            f"bag {path}: {metadata} cannot be read ({type(error).__name__}: {error}); a bag "
            "directory without it can be repaired with `ros2 bag reindex`") from None


def bag_duration(path: str | Path) -> float:
    """Seconds between a bag's first and last message."""
    from rosbags.rosbag2 import Reader

    try:
        with Reader(Path(path)) as reader:
            return 1e-9 * float(reader.duration)
    except Exception as error:
        raise BagError(f"cannot open bag {path}: {error}") from error


def deserialize(message: BagMessage) -> Any:
    """The rclpy message of a raw bag message."""
    from rclpy.serialization import deserialize_message

    return deserialize_message(message.data, message_class(message.msgtype))


class BagPlayer:
    """Publishes a bag in log-time order with /clock.

    Args:
        node: the rclpy node that publishes.
        path: the bag directory.
        rate: playback speed factor (1 = as recorded); must be > 0.
        topics: only these topics (default all).
        exclude: never these topics.
        clock: ``auto`` (the bag's /clock when it has one, else from log times),
            ``bag``, ``log_time`` or ``none``.
        depth: publisher queue depth (reliable, keep last).

    Raises:
        ConfigurationError: a bad rate or clock mode.
        BagError: the bag cannot be read, or a message type is not available.
    """

    def __init__(self, node: Any, path: str | Path, *, rate: float = 1.0,
                 topics: Sequence[str] | None = None, exclude: Sequence[str] = (),
                 clock: str = "auto", depth: int = 1000) -> None:
        from rclpy.qos import QoSProfile
        from rosgraph_msgs.msg import Clock

        if not rate > 0:
            raise ConfigurationError(f"rate {rate}: the rate factor must be > 0")
        if clock not in CLOCK_MODES:
            raise ConfigurationError(f"clock {clock!r}: expected one of {CLOCK_MODES}")
        self.node = node
        self.path = Path(path)
        self.rate = rate
        available = bag_topics(self.path)
        has_clock = CLOCK_TOPIC in available
        if clock == "bag" and not has_clock:
            raise ConfigurationError(f"clock='bag' but {self.path} has no {CLOCK_TOPIC} topic")
        self.clock_mode = ("bag" if has_clock else "log_time") if clock == "auto" else clock
        chosen = [t for t in (topics or available) if t not in set(exclude)]
        missing = [t for t in chosen if t not in available]
        if missing:
            raise BagError(f"{self.path} has no topic {missing}; it has {sorted(available)}")
        if self.clock_mode != "bag":
            chosen = [t for t in chosen if t != CLOCK_TOPIC]
        elif CLOCK_TOPIC not in chosen:
            chosen.append(CLOCK_TOPIC)
        self.topics = chosen
        qos = QoSProfile(depth=depth)
        self._publishers = {t: node.create_publisher(message_class(available[t][0]), t, qos)
                            for t in chosen}
        self._clock_publisher = None
        if self.clock_mode == "log_time":
            self._clock_publisher = node.create_publisher(Clock, CLOCK_TOPIC, qos)
        self._clock_class = Clock
        self.published = 0
        self._stop = threading.Event()

    def stop(self) -> None:
        """Ask a running :meth:`play` to stop."""
        self._stop.set()

    def wait_for_subscribers(self, topics: Sequence[str], timeout: float) -> bool:
        """Wait until each topic has a subscriber (discovery), at most ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(self.node.count_subscribers(t) > 0 for t in topics):
                return True
            time.sleep(0.05)
        return False

    def play(self, progress: Callable[[float, float, int], None] | None = None,
             progress_period: float = 1.0) -> int:
        """Publish the whole bag (or until :meth:`stop`); returns the number of messages published.

        Args:
            progress: called with (bag seconds played, bag seconds in all, messages) about
                every ``progress_period`` wall seconds.
        """
        from humanoid_balance.nodes.common import stamp_msg  # rclpy: imported when playing

        messages = read_bag(self.path, self.topics)  # streamed: bags may be larger than memory
        total = bag_duration(self.path)
        first: int | None = None
        start = time.monotonic()
        next_report = start + progress_period
        last_clock = None
        for message in messages:
            if first is None:
                first = message.log_time_ns
            if self._stop.is_set():
                break
            due = start + 1e-9 * (message.log_time_ns - first) / self.rate
            delay = due - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)
            if self._clock_publisher is not None and message.log_time_ns != last_clock:
                last_clock = message.log_time_ns
                self._clock_publisher.publish(self._clock_class(clock=stamp_msg(last_clock)))
            self._publishers[message.topic].publish(message.data)
            self.published += 1
            if progress is not None and time.monotonic() >= next_report:
                next_report += progress_period
                progress(1e-9 * (message.log_time_ns - first), total, self.published)
        if progress is not None and first is not None:
            progress(total, total, self.published)
        return self.published
