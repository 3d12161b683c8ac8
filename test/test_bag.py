"""Bag recording and replay (rosbags + raw rclpy messages): round trip, clock, storages, errors."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from humanoid_balance.bag import BagError, BagPlayer, BagRecorder, bag_topics, deserialize, read_bag
from humanoid_balance.exceptions import ConfigurationError

pytestmark = pytest.mark.ros


def _spin(executor: Any, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.01)


def _record(context: Any, path: Path, storage: str, count: int = 20) -> None:
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from rclpy.executors import SingleThreadedExecutor

    node = rclpy.create_node("bag_test_recorder", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    pub = node.create_publisher(WrenchStamped, "/left_foot/ft", 100)
    recorder = BagRecorder(node, path, {"/left_foot/ft": "geometry_msgs/msg/WrenchStamped"},
                           storage=storage)
    _spin(executor, 0.3)
    for k in range(count):
        msg = WrenchStamped()
        msg.header.stamp.sec = 100 + k
        msg.header.frame_id = "left_foot_ft"
        msg.wrench.force.z = 270.0 + k
        pub.publish(msg)
        _spin(executor, 0.005)
    _spin(executor, 0.3)
    recorder.close()
    executor.shutdown()
    node.destroy_node()


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_recorded_messages_read_back_byte_for_byte(rclpy_context: Any, tmp_path: Path, storage: str) -> None:
    """Every published message is in the bag, in order, with its fields intact (MCAP and sqlite3)."""
    _record(rclpy_context, tmp_path / "bag", storage)
    assert bag_topics(tmp_path / "bag") == {"/left_foot/ft": ("geometry_msgs/msg/WrenchStamped", 20)}
    messages = [deserialize(m) for m in read_bag(tmp_path / "bag")]
    assert [m.header.stamp.sec for m in messages] == list(range(100, 120))
    assert [m.wrench.force.z for m in messages] == [270.0 + k for k in range(20)]
    assert (tmp_path / "bag" / "metadata.yaml").exists()


def test_player_publishes_in_order_with_a_clock_from_log_times(rclpy_context: Any, tmp_path: Path) -> None:
    """A bag without /clock: the player sends /clock = each message's log time before the message."""
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from rclpy.executors import SingleThreadedExecutor
    from rosgraph_msgs.msg import Clock

    _record(rclpy_context, tmp_path / "bag", "mcap")
    log_times = [m.log_time_ns for m in read_bag(tmp_path / "bag")]
    node = rclpy.create_node("bag_test_player", context=rclpy_context)
    listener = rclpy.create_node("bag_test_listener", context=rclpy_context)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(listener)
    events: list[tuple[str, int]] = []
    listener.create_subscription(
        Clock, "/clock", lambda m: events.append(("clock", m.clock.sec * 10**9 + m.clock.nanosec)), 100)
    listener.create_subscription(
        WrenchStamped, "/left_foot/ft", lambda m: events.append(("ft", m.header.stamp.sec)), 100)
    player = BagPlayer(node, tmp_path / "bag", rate=4.0)
    assert player.clock_mode == "log_time"
    assert player.wait_for_subscribers(["/left_foot/ft", "/clock"], 5.0)
    _spin(executor, 0.5)
    assert player.play() == 20
    _spin(executor, 0.5)
    node.destroy_node()
    listener.destroy_node()
    assert [v for kind, v in events if kind == "ft"] == list(range(100, 120))
    assert [v for kind, v in events if kind == "clock"] == log_times


def test_bad_player_settings_are_refused(rclpy_context: Any, tmp_path: Path) -> None:
    """A zero rate, a clock from a bag without /clock, a missing topic, a missing bag: clear errors."""
    import rclpy

    _record(rclpy_context, tmp_path / "bag", "mcap", count=3)
    node = rclpy.create_node("bag_test_bad", context=rclpy_context)
    with pytest.raises(ConfigurationError, match="rate 0"):
        BagPlayer(node, tmp_path / "bag", rate=0.0)
    with pytest.raises(ConfigurationError, match="has no /clock"):
        BagPlayer(node, tmp_path / "bag", clock="bag")
    with pytest.raises(BagError, match="no topic"):
        BagPlayer(node, tmp_path / "bag", topics=["/right_foot/ft"])
    with pytest.raises(BagError, match="cannot open bag"):
        BagPlayer(node, tmp_path / "nothing")
    with pytest.raises(ConfigurationError, match="exists already"):
        BagRecorder(node, tmp_path / "bag", {})
    node.destroy_node()


def _chunk_records_offset(data: bytes) -> int:
    """Where the first chunk's records start in an MCAP file (walking its records)."""
    import struct

    offset = 8
    while True:
        opcode, length = struct.unpack_from("<BQ", data, offset)
        if opcode == 0x06:  # Chunk: times and size (24 bytes), CRC, compression, records
            name_length = struct.unpack_from("<I", data, offset + 9 + 28)[0]
            return offset + 9 + 32 + name_length + 8
        offset += 9 + length


def test_a_recorded_mcap_bag_carries_crcs_that_readers_check(rclpy_context: Any,
                                                           tmp_path: Path) -> None:
    """Issue 35: the chunks', data section's and summary's CRCs are written (rosbags leaves
    them 0: "not computed"), so a reader that checks them accepts the bag, and one byte
    flipped in a chunk is refused by rosbags' reader (what `humanoid-balance replay` uses)
    and by the mcap library's, instead of replaying with no word."""
    _record(rclpy_context, tmp_path / "bag", "mcap")
    (mcap_file,) = (tmp_path / "bag").glob("*.mcap")
    assert len(list(read_bag(tmp_path / "bag"))) == 20
    good = mcap_file.read_bytes()
    data = bytearray(good)
    data[_chunk_records_offset(good) + 40] ^= 0xFF
    mcap_file.write_bytes(bytes(data))
    with pytest.raises(BagError, match=r"damaged after 0 readable messages.*checksum mismatch"):
        list(read_bag(tmp_path / "bag"))
    # a reader nobody here wrote checks every CRC (chunks, data section, summary)
    mcap_reader = pytest.importorskip("mcap.reader")
    with mcap_file.open("rb") as stream, pytest.raises(Exception, match=r"(?i)crc"):
        list(mcap_reader.make_reader(stream, validate_crcs=True).iter_messages())
    mcap_file.write_bytes(good)
    with mcap_file.open("rb") as stream:
        reader = mcap_reader.make_reader(stream, validate_crcs=True)
        assert sum(1 for _ in reader.iter_messages()) == 20
