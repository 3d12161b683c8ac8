"""``humanoid-balance replay`` makes exactly one /clock publisher, as replay.launch.py starts it.

A bag that carries its own ``/clock`` (a simulation's, or ``humanoid-balance record
--topics /clock ...``) is played with that clock: the player makes none, so the
graph has one ``/clock`` publisher, in the time the messages' stamps are in (the
simulation's 5-7 s here), not the recording's log times (wall-clock epoch). With
``--clock log_time`` the player makes the clock and leaves the bag's out. A bag
without ``/clock`` gets one made from its log times. The player runs as its own
process; the test's probe counts /clock's publishers while it plays.
(``ros2 bag play``'s command line, which replay.launch.py builds, is checked in
test_graph.py and test_launch_files.py.)
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from process_harness import OUTPUT_TIMEOUT_S, Probe

from humanoid_balance.processes import executable_path

pytestmark = pytest.mark.ros

#: the bag's log times start here (ns): a recording made on the wall clock
LOG_START_NS = 1_700_000_000 * 10**9
#: its /clock starts here (ns): the simulation's time when the recording started
SIM_START_NS = 5 * 10**9
PERIOD_NS = 10_000_000  # 100 Hz, as the free-running simulation's /clock
SAMPLES = 200  # 2 s


def _write_bag(path: Path, with_clock: bool) -> None:
    """/left_foot/ft at 100 Hz (log times from LOG_START_NS) and, ``with_clock``, /clock before
    each sample (simulation time from SIM_START_NS)."""
    from geometry_msgs.msg import WrenchStamped
    from rclpy.serialization import serialize_message
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosgraph_msgs.msg import Clock

    from humanoid_balance.bag import typestore

    writer = Writer(path, version=8, storage_plugin=StoragePlugin.MCAP)
    writer.open()
    store = typestore()
    ft = writer.add_connection("/left_foot/ft", "geometry_msgs/msg/WrenchStamped", typestore=store)
    clock = writer.add_connection("/clock", "rosgraph_msgs/msg/Clock", typestore=store) \
        if with_clock else None
    for k in range(SAMPLES):
        log_ns, sim_ns = LOG_START_NS + k * PERIOD_NS, SIM_START_NS + k * PERIOD_NS
        if clock is not None:
            tick = Clock()
            tick.clock.sec, tick.clock.nanosec = divmod(sim_ns, 10**9)
            writer.write(clock, log_ns, serialize_message(tick))
        sample = WrenchStamped()
        sample.header.stamp.sec, sample.header.stamp.nanosec = divmod(sim_ns, 10**9)
        sample.wrench.force.z = 270.0
        writer.write(ft, log_ns, serialize_message(sample))
    writer.close()


def _play(probe: Probe, bag: Path, *clock: str) -> tuple[list[int], int, str]:
    """Replay ``bag``; the /clock values received [ns], the most /clock publishers seen at once
    while it played, and its output."""
    from rosgraph_msgs.msg import Clock

    recorder = probe.record(Clock, "/clock", keep=10 * SAMPLES, depth=10 * SAMPLES)
    process = subprocess.Popen(
        [executable_path("humanoid-balance"), "replay", str(bag), "--wait-for", "/clock",
         "--delay", "0.3", *clock], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    most = 0
    try:
        end = time.monotonic() + 3 * OUTPUT_TIMEOUT_S
        while process.poll() is None and time.monotonic() < end:
            most = max(most, probe.node.count_publishers("/clock"))
            probe.executor.spin_once(timeout_sec=0.01)
        probe.spin(0.3)  # the last samples
    finally:
        if process.poll() is None:
            process.kill()
        output = process.communicate(timeout=10)[0]
    assert process.returncode == 0, output
    return [m.clock.sec * 10**9 + m.clock.nanosec for m in recorder.messages], most, output


def test_a_bag_with_its_own_clock_plays_that_clock_alone(probe: Probe, tmp_path: Path) -> None:
    """The bag's /clock (simulation time) is the one /clock: one publisher, every value the
    bag's, none from the log times."""
    _write_bag(tmp_path / "bag", with_clock=True)
    received, most, output = _play(probe, tmp_path / "bag")
    assert "clock from bag" in output
    assert most == 1
    assert received == [SIM_START_NS + k * PERIOD_NS for k in range(SAMPLES)]


def test_a_clock_from_log_times_leaves_the_bags_clock_out(probe: Probe, tmp_path: Path) -> None:
    """--clock log_time on a bag with /clock: one publisher (the player's), the log times only."""
    _write_bag(tmp_path / "bag", with_clock=True)
    received, most, output = _play(probe, tmp_path / "bag", "--clock", "log_time")
    assert "clock from log_time" in output
    assert most == 1
    assert received == [LOG_START_NS + k * PERIOD_NS for k in range(SAMPLES)]


def test_a_bag_without_clock_gets_one_from_its_log_times(probe: Probe, tmp_path: Path) -> None:
    """A bag without /clock: the player makes it from the log times, one publisher."""
    _write_bag(tmp_path / "bag", with_clock=False)
    received, most, output = _play(probe, tmp_path / "bag")
    assert "clock from log_time" in output
    assert most == 1
    assert received == [LOG_START_NS + k * PERIOD_NS for k in range(SAMPLES)]
