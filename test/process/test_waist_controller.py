"""``waist_controller`` as a process, with its two simulated CAN drives (``simulated_drives: true``).

The node runs as the simulation graph starts it: ``config/waist.yaml``,
``can.interface: virtual``, the drives hosted beside the controller on a
python-can virtual bus in the same process, its joint states remapped to
``/waist/joint_states``. Here on wall time (no ``/clock``): its services called
while it is unconfigured, then configured and activated through its lifecycle
services, commanded on ``/waist/command``; for a few seconds on simulation time
(the probe's ``/clock``) its ``/diagnostics`` rate is measured.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from process_harness import (
    ANSWER_LIMIT_S,
    OUTPUT_TIMEOUT_S,
    Probe,
    RunningNode,
    bring_up,
    call_unconfigured,
    diagnostics_gaps_on_sim_time,
    start_node,
    statuses,
    wait_ready,
)

from humanoid_balance.graph import SIM_WAIST_JOINT_STATES, GraphNode, sim_graph

pytestmark = pytest.mark.ros

PITCH_TARGET_RAD = 0.1


def waist_node() -> GraphNode:
    """The simulation graph's waist_controller (simulated drives), on wall time."""
    node = next(n for n in sim_graph() if n.name == "waist_controller")
    return node.with_parameters(use_sim_time=False)


@pytest.fixture(scope="module")
def waist(session_probe: Probe, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningNode]:
    """The waist controller with its simulated drives, configured and activated by its services
    (its services called first, unconfigured)."""
    from std_srvs.srv import SetBool, Trigger

    running = start_node(waist_node(), tmp_path_factory.mktemp("waist"))
    try:
        wait_ready(session_probe, running)
        call_unconfigured(session_probe, running, [
            ("/waist/enable", SetBool, SetBool.Request(data=True)),
            ("/waist/enable", SetBool, SetBool.Request(data=False)),
            ("/waist/stop", Trigger, None)])
        bring_up(session_probe, running)
        session_probe.release()
        yield running
    finally:
        running.stop()


def test_services_exist_unconfigured_and_answer_at_once_what_to_do(waist: RunningNode) -> None:
    """Before configure, /waist/enable (true, false) and /waist/stop exist and answer false at
    once (within ANSWER_LIMIT_S), saying to configure and activate the node."""
    refusal = "waist_controller is unconfigured: configure and activate it"
    answers = waist.unconfigured
    assert {k: v[:2] for k, v in answers.items()} == {
        "/waist/enable true": (False, refusal), "/waist/enable false": (False, refusal),
        "/waist/stop": (False, refusal)}
    assert max(v[2] for v in answers.values()) < ANSWER_LIMIT_S, answers


def test_configure_and_activate_by_services_leave_it_active(
        probe: Probe, waist: RunningNode) -> None:
    """With simulated drives, configure and activate succeed and get_state says active."""
    assert probe.lifecycle("waist_controller").state() == "active"


def test_joint_states_name_the_two_waist_joints(probe: Probe, waist: RunningNode) -> None:
    """/waist/joint_states (the remapped /joint_states) carries waist_pitch and waist_roll only."""
    from sensor_msgs.msg import JointState

    joints = probe.record(JointState, SIM_WAIST_JOINT_STATES, keep=1)
    assert probe.spin_until(lambda: joints.count >= 5, OUTPUT_TIMEOUT_S)
    assert list(joints.last.name) == ["waist_pitch", "waist_roll"]


def test_a_waist_command_moves_the_waist(probe: Probe, waist: RunningNode) -> None:
    """A /waist/command to pitch 0.1 rad in 1 s brings /waist/joint_states there (within 0.01 rad)."""
    from builtin_interfaces.msg import Duration
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    joints = probe.record(JointState, SIM_WAIST_JOINT_STATES, keep=1)
    commands = probe.publisher(JointTrajectory, "/waist/command")
    probe.wait_for_subscribers(commands)
    assert probe.spin_until(lambda: joints.count >= 1, OUTPUT_TIMEOUT_S)
    start = float(joints.last.position[0])
    commands.publish(JointTrajectory(
        joint_names=["waist_pitch", "waist_roll"],
        points=[JointTrajectoryPoint(positions=[PITCH_TARGET_RAD, 0.0],
                                     time_from_start=Duration(sec=1))]))

    def pitch() -> float:
        return float(joints.last.position[0])

    assert probe.spin_until(lambda: abs(pitch() - PITCH_TARGET_RAD) < 0.01, OUTPUT_TIMEOUT_S), (
        f"waist_pitch went from {start:.4f} to {pitch():.4f} rad, commanded {PITCH_TARGET_RAD}")


def test_diagnostics_report_no_fault(probe: Probe, waist: RunningNode) -> None:
    """/diagnostics comes with the controller's status at OK (the drives answer, no fault)."""
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus

    diagnostics = probe.record(DiagnosticArray, "/diagnostics")
    assert probe.spin_until(lambda: any(statuses(diagnostics, "waist_controller")),
                            OUTPUT_TIMEOUT_S)
    status = next(statuses(diagnostics, "waist_controller"))
    assert status.level == DiagnosticStatus.OK, status.message


def test_diagnostics_keep_their_rate_on_simulation_time(probe: Probe, waist: RunningNode) -> None:
    """On simulation time (/clock at 100 Hz), /diagnostics comes at diagnostics_rate: no gap
    longer than two periods in 3 s."""
    period_s = 1.0 / float(probe.get_parameter("waist_controller", "diagnostics_rate"))
    gaps = diagnostics_gaps_on_sim_time(probe, "waist_controller", "waist_controller", 3.0)
    assert max(gaps) <= 2 * period_s, f"period {period_s} s, largest gap {max(gaps):.3f} s"
