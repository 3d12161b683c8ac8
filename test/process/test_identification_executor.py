"""``identification_executor`` as a process, with ``mujoco_sim model:=lunar_arm`` as the arm.

Both run as ``ros2 run`` runs them, each with its parameter file: the
simulated lunar arm (seed 004) starts at the executor's static configuration
and follows ``/identification/command``; the executor runs on the simulation's
``/clock``, is configured and activated through its lifecycle services, and
its run is started and cancelled through ``/identification/start`` and
``/identification/cancel`` as an operator would (and both are called while it is
unconfigured, before its lifecycle); its ``/diagnostics`` rate and the simulation's are
measured on the simulation's time.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from process_harness import (
    ANSWER_LIMIT_S,
    OUTPUT_TIMEOUT_S,
    Probe,
    Recorder,
    RunningNode,
    all_finite,
    bring_up,
    call_unconfigured,
    diagnostics_gaps_on_sim_time,
    start_identification,
    start_node,
    statuses,
    wait_ready,
)

from humanoid_balance.core.identification import LUNAR_JOINTS
from humanoid_balance.graph import NODES, GraphNode, robot_graph

pytestmark = pytest.mark.ros

#: deg, config/identification.yaml's static_configuration (the arm starts there)
STATIC_DEG = (0.0, 40.0, 20.0, 60.0, 40.0, 30.0)


def lunar_arm_sim() -> GraphNode:
    """mujoco_sim simulating the lunar arm at the static configuration, following the executor."""
    return GraphNode(NODES["mujoco_sim"]).with_parameters(
        model="lunar_arm", publish_rate=200.0, command_topics=["/identification/command"],
        initial_joint_names=list(LUNAR_JOINTS),
        initial_joint_positions=[math.radians(v) for v in STATIC_DEG])


def executor_node(output: Path) -> GraphNode:
    """The robot graph's identification_executor, on simulation time, writing to ``output``."""
    node = next(n for n in robot_graph(identification=True, waist=False)
                if n.name == "identification_executor")
    return node.with_parameters(use_sim_time=True, output_path=str(output))


@pytest.fixture(scope="module")
def identification(session_probe: Probe, tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[RunningNode]:
    """The simulated arm and the executor, configured and activated through its services (its
    services called first, unconfigured)."""
    from std_srvs.srv import Trigger

    logs = tmp_path_factory.mktemp("identification")
    sim = start_node(lunar_arm_sim(), logs)
    executor = start_node(executor_node(logs / "results.yaml"), logs)
    try:
        wait_ready(session_probe, sim)
        wait_ready(session_probe, executor)
        call_unconfigured(session_probe, executor, [
            ("/identification/start", Trigger, None), ("/identification/cancel", Trigger, None)])
        bring_up(session_probe, executor)
        session_probe.release()
        yield executor
    finally:
        executor.stop()
        sim.stop()


@contextmanager
def identification_run(probe: Probe) -> Iterator[tuple[str, Recorder]]:
    """Start a run (the start answer's message, the commands); cancel it after."""
    from sensor_msgs.msg import JointState
    from std_srvs.srv import Trigger

    commands = probe.record(JointState, "/identification/command")
    message = start_identification(probe)
    try:
        yield message, commands
    finally:
        probe.call(Trigger, "/identification/cancel")


def test_services_exist_unconfigured_and_answer_at_once_what_to_do(
        identification: RunningNode) -> None:
    """Before configure, /identification/start and /identification/cancel exist and answer
    false at once (within ANSWER_LIMIT_S), saying to configure and activate the node."""
    refusal = "identification_executor is unconfigured: configure and activate it"
    answers = identification.unconfigured
    assert {k: v[:2] for k, v in answers.items()} == {
        "/identification/start": (False, f"refused to start: {refusal}"),
        "/identification/cancel": (False, f"nothing to cancel: {refusal}")}
    assert max(v[2] for v in answers.values()) < ANSWER_LIMIT_S, answers


def test_start_is_accepted_with_the_plan(probe: Probe, identification: RunningNode) -> None:
    """/identification/start answers success with the plan: six sweeps."""
    with identification_run(probe) as (message, _):
        assert message.startswith("started: 6 sweeps, ")


def test_commands_are_finite_targets_for_the_six_joints(
        probe: Probe, identification: RunningNode) -> None:
    """Once started, /identification/command carries finite targets for joint1..joint6."""
    with identification_run(probe) as (_, commands):
        assert probe.spin_until(lambda: commands.count >= 20, OUTPUT_TIMEOUT_S)
        last = commands.last
        assert (tuple(last.name), len(last.position), all_finite(last.position)) == (
            LUNAR_JOINTS, 6, True)


def test_the_simulated_arm_follows_the_commands(probe: Probe, identification: RunningNode) -> None:
    """Started, the run moves the simulated arm: a joint leaves its start by more than 1 deg."""
    from sensor_msgs.msg import JointState

    joints = probe.record(JointState, "/joint_states", keep=1)
    assert probe.spin_until(lambda: joints.count >= 1, OUTPUT_TIMEOUT_S)
    start = list(joints.last.position)

    def moved() -> float:
        return max(abs(a - b) for a, b in zip(joints.last.position, start, strict=True))

    with identification_run(probe):
        assert probe.spin_until(lambda: moved() > math.radians(1.0), OUTPUT_TIMEOUT_S), (
            f"the arm moved {math.degrees(moved()):.2f} deg")


def test_diagnostics_report_the_run_in_progress(probe: Probe, identification: RunningNode) -> None:
    """During a run /diagnostics reports state running, the joint swept and the percent done."""
    from diagnostic_msgs.msg import DiagnosticArray

    with identification_run(probe):
        diagnostics = probe.record(DiagnosticArray, "/diagnostics")
        assert probe.spin_until(lambda: any(statuses(diagnostics, "identification_executor")),
                                OUTPUT_TIMEOUT_S)
        values = {kv.key: kv.value for kv in next(
            statuses(diagnostics, "identification_executor")).values}
        assert (values["state"], values["joint"], "percent" in values) == ("running", "joint6",
                                                                          True)


def test_cancel_holds_the_arm_and_stops_the_commands(
        probe: Probe, identification: RunningNode) -> None:
    """/identification/cancel succeeds; the last command holds (zero velocity); none follows."""
    from std_srvs.srv import Trigger

    with identification_run(probe) as (_, commands):
        assert probe.spin_until(lambda: commands.count >= 10, OUTPUT_TIMEOUT_S)
        response = probe.call(Trigger, "/identification/cancel")
        probe.spin(0.3)  # what was sent before the answer arrives meanwhile
        count = commands.count
        probe.spin(0.5)
        assert (response.success, commands.count - count, list(commands.last.velocity)) == (
            True, 0, [0.0] * 6)


@pytest.mark.parametrize("node", ["identification_executor", "mujoco_sim"])
def test_diagnostics_keep_their_rate_on_simulation_time(
        probe: Probe, identification: RunningNode, node: str) -> None:
    """The executor on the simulation's /clock, and the simulation itself: /diagnostics at
    diagnostics_rate, no gap longer than two periods in 4 s."""
    period_s = 1.0 / float(probe.get_parameter(node, "diagnostics_rate"))
    gaps = diagnostics_gaps_on_sim_time(probe, node, node, 4.0, clock_hz=0.0, switch=False)
    assert max(gaps) <= 2 * period_s, f"period {period_s} s, largest gap {max(gaps):.3f} s"
