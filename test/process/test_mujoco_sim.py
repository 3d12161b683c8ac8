"""``mujoco_sim`` as a process: simulation time runs, the humanoid's sensors come, commands move joints.

The node runs as ``ros2 run humanoid_balance mujoco_sim`` with
``config/sim.yaml`` and the simulation graph's overrides (humanoid, real time,
1 kHz sensors).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from itertools import pairwise

import pytest
from process_harness import (
    OUTPUT_TIMEOUT_S,
    Probe,
    RunningNode,
    standing_model,
    start_node,
    statuses,
    wait_ready,
)

from humanoid_balance.graph import sim_graph
from humanoid_balance.nodes.common import stamp_ns

pytestmark = pytest.mark.ros

MOVED_JOINT = "neck_yaw"
TARGET_RAD = 0.3
#: tf2_msgs comes with a ROS install; PyPI has no wheel of it
HAS_TF2_MSGS = importlib.util.find_spec("tf2_msgs") is not None
NO_TF_LOG = "/tf is not published: tf2_msgs is not installed"


@pytest.fixture(scope="module")
def sim(session_probe: Probe, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningNode]:
    """The simulation graph's mujoco_sim, reachable."""
    node = next(n for n in sim_graph() if n.name == "mujoco_sim")
    running = start_node(node, tmp_path_factory.mktemp("mujoco_sim"))
    try:
        wait_ready(session_probe, running)
        session_probe.release()
        yield running
    finally:
        running.stop()


def test_the_simulation_binds_udp_only_on_loopback(sim: RunningNode) -> None:
    """The mujoco_sim process holds no UDP socket outside 127.0.0.0/8 and ::1."""
    from humanoid_balance.ros_env import non_loopback_udp_sockets

    assert sim.process.alive()
    assert non_loopback_udp_sockets(sim.process.pid) == []


def test_clock_advances(probe: Probe, sim: RunningNode) -> None:
    """/clock comes and its time goes forward from message to message."""
    from rosgraph_msgs.msg import Clock

    clock = probe.record(Clock, "/clock", keep=10_000)
    assert probe.spin_until(lambda: clock.count >= 100, OUTPUT_TIMEOUT_S)
    times = [stamp_ns(m.clock) for m in clock.messages]
    assert all(b > a for a, b in pairwise(times))


def test_free_running_clock_comes_at_its_rate_and_the_sensors_at_theirs(
        probe: Probe, sim: RunningNode) -> None:
    """The free-running graph's clock_rate: /clock every 10 ms of simulation time,
    /joint_states every 1 ms."""
    import statistics

    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState

    from humanoid_balance.graph import FREE_RUNNING_CLOCK_RATE_HZ

    clock = probe.record(Clock, "/clock", keep=1000)
    joints = probe.record(JointState, "/joint_states", keep=1000)
    assert probe.spin_until(lambda: clock.count >= 20 and joints.count >= 200, OUTPUT_TIMEOUT_S)

    def period_ms(stamps: list[int]) -> float:
        return 1e-6 * statistics.median(b - a for a, b in pairwise(stamps))

    assert period_ms([stamp_ns(m.clock) for m in clock.messages]) == pytest.approx(
        1e3 / FREE_RUNNING_CLOCK_RATE_HZ, abs=0.01)
    assert period_ms([stamp_ns(m.header.stamp) for m in joints.messages]) == pytest.approx(1.0,
                                                                                     abs=0.01)


def test_joint_states_name_every_humanoid_joint(probe: Probe, sim: RunningNode) -> None:
    """/joint_states names the URDF's 30 joints with a position, velocity and effort each."""
    from sensor_msgs.msg import JointState

    joints = probe.record(JointState, "/joint_states", keep=10)
    assert probe.spin_until(lambda: joints.count >= 10, OUTPUT_TIMEOUT_S)
    last = joints.last
    names = standing_model().joint_names
    assert (sorted(last.name), len(last.position), len(last.velocity), len(last.effort)) == (
        sorted(names), len(names), len(names), len(names))


def test_both_foot_sensors_carry_the_standing_robot(probe: Probe, sim: RunningNode) -> None:
    """/left_foot/ft and /right_foot/ft come in their sensor frames with force.z > 0 (standing)."""
    from geometry_msgs.msg import WrenchStamped

    feet = {side: probe.record(WrenchStamped, f"/{side}_foot/ft", keep=10)
            for side in ("left", "right")}
    assert probe.spin_until(lambda: all(r.count >= 10 for r in feet.values()), OUTPUT_TIMEOUT_S)
    got = {side: (r.last.header.frame_id, r.last.wrench.force.z > 0.0) for side, r in feet.items()}
    assert got == {"left": ("left_foot_ft", True), "right": ("right_foot_ft", True)}


def test_a_joint_command_moves_the_joint(probe: Probe, sim: RunningNode) -> None:
    """A position command on /joint_commands brings neck_yaw to 0.3 rad (within 0.05 rad)."""
    from sensor_msgs.msg import JointState

    joints = probe.record(JointState, "/joint_states", keep=1)
    commands = probe.publisher(JointState, "/joint_commands")
    probe.wait_for_subscribers(commands)
    assert probe.spin_until(lambda: joints.count >= 1, OUTPUT_TIMEOUT_S)

    def position() -> float:
        last = joints.last
        return float(last.position[list(last.name).index(MOVED_JOINT)])

    start = position()
    commands.publish(JointState(name=[MOVED_JOINT], position=[TARGET_RAD]))
    assert probe.spin_until(lambda: abs(position() - TARGET_RAD) < 0.05, OUTPUT_TIMEOUT_S), (
        f"{MOVED_JOINT} went from {start:.3f} to {position():.3f} rad, commanded {TARGET_RAD}")


@pytest.mark.skipif(not HAS_TF2_MSGS, reason="tf2_msgs is not installed (a ROS install has it, "
                    "PyPI has no wheel): the node does not publish /tf here")
def test_tf_carries_world_to_pelvis_at_the_base_pose(probe: Probe, sim: RunningNode) -> None:
    """/tf gives world -> pelvis equal to /sim/base_pose of the same stamp (1e-9 m, 1e-9)."""
    from geometry_msgs.msg import PoseStamped
    from tf2_msgs.msg import TFMessage

    tf = probe.record(TFMessage, "/tf", keep=100)
    poses = probe.record(PoseStamped, "/sim/base_pose", keep=2000)
    assert probe.spin_until(lambda: tf.count >= 10 and poses.count >= 100, OUTPUT_TIMEOUT_S)
    by_stamp = {stamp_ns(m.header.stamp): m.pose for m in poses.messages}
    sent = next(t for m in reversed(tf.messages) for t in m.transforms
                if stamp_ns(t.header.stamp) in by_stamp)
    pose, moved = by_stamp[stamp_ns(sent.header.stamp)], sent.transform
    got = (sent.header.frame_id, sent.child_frame_id,
           [moved.translation.x, moved.translation.y, moved.translation.z,
            moved.rotation.x, moved.rotation.y, moved.rotation.z, moved.rotation.w])
    assert got == ("world", "pelvis", pytest.approx(
        [pose.position.x, pose.position.y, pose.position.z, pose.orientation.x,
         pose.orientation.y, pose.orientation.z, pose.orientation.w], abs=1e-9))


@pytest.mark.skipif(HAS_TF2_MSGS, reason="tf2_msgs is installed: /tf is published")
def test_without_tf2_msgs_the_log_says_once_why_there_is_no_tf(sim: RunningNode) -> None:
    """Without tf2_msgs the node logs once that /tf is not published, naming the package."""
    assert sim.process.wait_for_output(NO_TF_LOG, OUTPUT_TIMEOUT_S), sim.process.output()
    assert sim.process.output().count(NO_TF_LOG) == 1


def test_inclinometer_rate_set_at_run_time_changes_the_period(probe: Probe,
                                                             sim: RunningNode) -> None:
    """inclinometer_rate 20 Hz over DDS: /waist/inclinometer comes every 50 ms of simulation
    time instead of 10 ms; set back to 100 Hz afterwards."""
    import statistics

    from sensor_msgs.msg import Imu

    def set_rate(hz: float) -> None:
        result = probe.set_parameters("mujoco_sim", inclinometer_rate=hz)[0]
        assert result.successful, result.reason

    def median_period_ms() -> float:
        samples = probe.record(Imu, "/waist/inclinometer", keep=100)
        probe.spin(0.2)  # what was under way at the change
        samples.messages.clear()
        assert probe.spin_until(lambda: len(samples.messages) >= 15, OUTPUT_TIMEOUT_S)
        stamps = [stamp_ns(m.header.stamp) for m in samples.messages]
        return 1e-6 * statistics.median(b - a for a, b in pairwise(stamps))

    try:
        set_rate(20.0)
        assert median_period_ms() == pytest.approx(50.0, abs=1.0)
    finally:
        set_rate(100.0)
    assert median_period_ms() == pytest.approx(10.0, abs=1.0)


def test_an_unheard_topic_is_written_once_subscribed(probe: Probe, sim: RunningNode) -> None:
    """Nothing subscribes to /sim/com: /diagnostics names it among ``unheard_topics``; once
    subscribed it comes every 1 ms of simulation time, and the list no longer names it."""
    import statistics

    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import PointStamped

    diagnostics = probe.record(DiagnosticArray, "/diagnostics", keep=100)

    def unheard() -> list[list[str]]:
        return [next(kv.value for kv in status.values if kv.key == "unheard_topics").split(",")
                for status in statuses(diagnostics, "mujoco_sim")]

    assert probe.spin_until(lambda: any("/sim/com" in u for u in unheard()), OUTPUT_TIMEOUT_S)
    com = probe.record(PointStamped, "/sim/com", keep=1000)
    assert probe.spin_until(lambda: com.count >= 200, OUTPUT_TIMEOUT_S)
    stamps = [stamp_ns(m.header.stamp) for m in com.messages]
    assert 1e-6 * statistics.median(b - a for a, b in pairwise(stamps)) == pytest.approx(1.0,
                                                                                       abs=0.01)
    diagnostics.messages.clear()
    assert probe.spin_until(lambda: bool(unheard()) and "/sim/com" not in unheard()[-1],
                            OUTPUT_TIMEOUT_S)
