"""SIGINT and SIGTERM end every node cleanly while it works at full rate.

Each test starts one node as its own process (and what feeds it), brings it to
its nominal rate (zmp_estimator fed both feet at 1 kHz, arm_balance active at
500 Hz on 1 kHz joint states, waist_controller active with its simulated
drives, identification_executor running a sweep, mujoco_sim at 1 kHz), checks
that its outputs flow to the probe, sends the signal and checks the exit:
status 0, within 2 s, no traceback (issue 10).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from process_harness import (
    OUTPUT_TIMEOUT_S,
    SIGNALS,
    Feeder,
    FeedSpec,
    Probe,
    Recorder,
    RunningNode,
    arm_feed,
    bring_up,
    describe,
    exited_cleanly,
    lunar_arm_feed,
    standing_feed,
    start_identification,
)

from humanoid_balance.graph import NODES, SIM_WAIST_JOINT_STATES, GraphNode, robot_graph, sim_graph

pytestmark = pytest.mark.ros

Launch = Callable[..., RunningNode]
Feed = Callable[[FeedSpec], Feeder]
#: messages of the node's output that must have come before the signal
BUSY_MESSAGES = 200


def _graph_node(name: str) -> GraphNode:
    if name == "mujoco_sim":
        return next(n for n in sim_graph() if n.name == name)
    if name == "waist_controller":  # simulated drives, on wall time
        node = next(n for n in sim_graph() if n.name == name)
        return node.with_parameters(use_sim_time=False)
    return next(n for n in robot_graph(identification=True) if n.name == name)


def _busy_zmp_estimator(probe: Probe, running: RunningNode, feed: Feed) -> Recorder:
    from geometry_msgs.msg import PointStamped

    zmps = probe.record(PointStamped, "/zmp")
    feed(standing_feed(1000.0, {"left": ((0.0, 0.0), 250.0), "right": ((0.0, 0.0), 250.0)}))
    return zmps


def _busy_arm_balance(probe: Probe, running: RunningNode, feed: Feed) -> Recorder:
    from sensor_msgs.msg import JointState

    bring_up(probe, running)
    commands = probe.record(JointState, "/arm_balance/command")
    feed(arm_feed(1000.0))
    return commands


def _busy_waist_controller(probe: Probe, running: RunningNode, feed: Feed) -> Recorder:
    from builtin_interfaces.msg import Duration
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    bring_up(probe, running)
    joints = probe.record(JointState, SIM_WAIST_JOINT_STATES)
    commands = probe.publisher(JointTrajectory, "/waist/command")
    probe.wait_for_subscribers(commands)
    commands.publish(JointTrajectory(
        joint_names=["waist_pitch", "waist_roll"],
        points=[JointTrajectoryPoint(positions=[0.2, 0.05], time_from_start=Duration(sec=5))]))
    return joints


def _busy_identification_executor(probe: Probe, running: RunningNode, feed: Feed) -> Recorder:
    from sensor_msgs.msg import JointState

    bring_up(probe, running)
    commands = probe.record(JointState, "/identification/command")
    feed(lunar_arm_feed(200.0, (0.0, 40.0, 20.0, 60.0, 40.0, 30.0)))
    start_identification(probe)
    return commands


def _busy_mujoco_sim(probe: Probe, running: RunningNode, feed: Feed) -> Recorder:
    from sensor_msgs.msg import JointState

    return probe.record(JointState, "/joint_states")


BUSY: dict[str, tuple[Callable[[Probe, RunningNode, Feed], Recorder], int]] = {
    # node -> (what makes it work at full rate and records its output, messages to wait for)
    "zmp_estimator": (_busy_zmp_estimator, BUSY_MESSAGES),
    "arm_balance": (_busy_arm_balance, BUSY_MESSAGES),
    "waist_controller": (_busy_waist_controller, 50),  # publish_rate 100 Hz
    "identification_executor": (_busy_identification_executor, 50),  # rate 100 Hz
    "mujoco_sim": (_busy_mujoco_sim, BUSY_MESSAGES),
}


def test_every_executable_is_covered() -> None:
    """The signal tests cover every executable of the graph description."""
    assert sorted(BUSY) == sorted(NODES)


@pytest.mark.parametrize("signal_name", sorted(SIGNALS))
@pytest.mark.parametrize("name", sorted(BUSY))
def test_signal_at_full_rate_ends_the_node_cleanly(
        name: str, signal_name: str, probe: Probe, launch: Launch, feed: Feed,
        exit_times: dict[str, list[float]], ready_times: dict[str, list[float]]) -> None:
    """The signal ends the busy node with status 0 within 2 s and without a traceback."""
    running = launch(_graph_node(name), tag=signal_name)
    assert running.ready_s is not None
    ready_times.setdefault(name, []).append(running.ready_s)
    busy, messages = BUSY[name]
    output = busy(probe, running, feed)
    start, count = time.monotonic(), output.count
    assert probe.spin_until(lambda: output.count >= count + messages, OUTPUT_TIMEOUT_S), (
        f"{name} published {output.count - count} messages in {OUTPUT_TIMEOUT_S} s")
    rate = (output.count - count) / (time.monotonic() - start)
    report = running.stop(SIGNALS[signal_name])
    exit_times.setdefault(name, []).append(report.seconds)
    print(f"{name}: {rate:.0f} messages/s received before {signal_name}; exit in "
          f"{report.seconds:.3f} s, status {report.returncode}")
    assert exited_cleanly(report), describe(report)
