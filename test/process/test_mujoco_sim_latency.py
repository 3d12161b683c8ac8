"""``mujoco_sim`` as a process with ``command_latency``: a stamped command acts that long after its stamp.

Its own module: the node runs alone on the test domain (``test_mujoco_sim``'s node would
publish a second ``/joint_states``).
"""

from __future__ import annotations

import pytest
from process_harness import OUTPUT_TIMEOUT_S, Probe, start_node, wait_ready

from humanoid_balance.graph import sim_graph
from humanoid_balance.nodes.common import stamp_msg, stamp_ns

pytestmark = pytest.mark.ros

MOVED_JOINT = "neck_yaw"
TARGET_RAD = 0.3



#: s: a latency far above the transport's delay here, so that acting on arrival cannot pass
TEST_LATENCY_S = 0.1


def test_a_stamped_command_acts_command_latency_after_its_stamp(
        probe: Probe, tmp_path_factory: pytest.TempPathFactory) -> None:
    """With command_latency 0.1 s, a position command stamped with the newest joint state's time
    moves neck_yaw only from 0.1 s of simulation time after that stamp (0 to 60 ms after it)."""
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Header

    spec = next(n for n in sim_graph() if n.name == "mujoco_sim").with_parameters(
        command_latency=TEST_LATENCY_S)
    running = start_node(spec, tmp_path_factory.mktemp("mujoco_sim_latency"))
    try:
        wait_ready(probe, running)
        joints = probe.record(JointState, "/joint_states", keep=5000)
        commands = probe.publisher(JointState, "/joint_commands")
        probe.wait_for_subscribers(commands)
        assert probe.spin_until(lambda: joints.count >= 50, OUTPUT_TIMEOUT_S)
        index = list(joints.last.name).index(MOVED_JOINT)
        start = float(joints.last.position[index])
        stamp = stamp_ns(joints.last.header.stamp)
        commands.publish(JointState(
            header=Header(stamp=stamp_msg(stamp)),
            name=[MOVED_JOINT], position=[TARGET_RAD]))
        assert probe.spin_until(lambda: abs(float(joints.last.position[index]) - TARGET_RAD) < 0.05,
                                OUTPUT_TIMEOUT_S)
        moved = next(stamp_ns(m.header.stamp) for m in joints.messages
                     if stamp_ns(m.header.stamp) > stamp and abs(float(m.position[index]) - start) > 0.01)
        after_ms = 1e-6 * (moved - stamp)
        assert 1e3 * TEST_LATENCY_S <= after_ms <= 1e3 * TEST_LATENCY_S + 60.0, (
            f"{MOVED_JOINT} moved {after_ms:.1f} ms after the command's stamp, "
            f"command_latency {TEST_LATENCY_S} s")
    finally:
        probe.release()
        report = running.stop()
    assert report.returncode == 0 and not report.traceback
