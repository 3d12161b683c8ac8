"""mujoco_sim in lock-step with arm_balance, each its own process, as graph.sim_graph starts them."""

from __future__ import annotations

import itertools
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from process_harness import spin_executor_until

from humanoid_balance.graph import LOCK_STEP_RATE_HZ, GraphNode, sim_graph
from humanoid_balance.nodes.common import stamp_ns
from humanoid_balance.processes import LifecycleClient, NodeProcess

pytestmark = [pytest.mark.ros, pytest.mark.slow]

ARM_COMMAND = "/arm_balance/command"
#: s of wall time a lock-step period waits for its answer in these tests
TIMEOUT_S = 0.5
WARN = b"\x01"  # diagnostic_msgs/DiagnosticStatus.WARN as the message carries it


@dataclass
class Probe:
    """The test's node: /clock, the arm commands and /diagnostics as they come."""

    node: Any
    executor: Any
    clock_ns: list[int] = field(default_factory=list)
    command_ns: list[int] = field(default_factory=list)
    diagnostics: list[Any] = field(default_factory=list)

    def spin(self, seconds: float, until: Callable[[], bool] | None = None) -> bool:
        """Spin ``seconds`` at most, or until ``until()``; whether ``until`` held."""
        if until is None:
            spin_executor_until(self.executor, lambda: False, seconds)
            return True
        return spin_executor_until(self.executor, until, seconds)


@pytest.fixture
def lock_probe(rclpy_context: Any) -> Iterator[Probe]:
    """A node in the test's own context subscribed to /clock, the arm command and /diagnostics."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.executors import SingleThreadedExecutor
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState

    node = rclpy.create_node("lock_step_probe", context=rclpy_context)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    p = Probe(node, executor)
    # queues for the whole run (a few thousand messages): with 100, this probe once fell 100
    # commands behind beside the other test worker and lost one, which is no missed period
    # (the simulation's lock_step_misses, checked too, counts those)
    node.create_subscription(Clock, "/clock", lambda m: p.clock_ns.append(stamp_ns(m.clock)),
                             10000)
    node.create_subscription(JointState, ARM_COMMAND,
                             lambda m: p.command_ns.append(stamp_ns(m.header.stamp)), 10000)
    node.create_subscription(DiagnosticArray, "/diagnostics", p.diagnostics.append, 100)
    try:
        yield p
    finally:
        executor.shutdown()
        node.destroy_node()


def _graph() -> dict[str, GraphNode]:
    nodes = {n.name: n for n in sim_graph(lock_step=True, waist=False, sensor_noise=0.0)}
    nodes["mujoco_sim"] = nodes["mujoco_sim"].with_parameters(
        lock_step_timeout=TIMEOUT_S, real_time_factor=1.0, diagnostics_rate=5.0)
    return nodes


def _sim_status(probe: Probe) -> list[Any]:
    return [s for d in probe.diagnostics for s in d.status if s.name == "mujoco_sim"]


def _value(status: Any, key: str) -> str:
    return next(kv.value for kv in status.values if kv.key == key)


def test_time_runs_only_with_the_arm_commands_and_goes_on_after_a_timeout(
        lock_probe: Probe, tmp_path: Path) -> None:
    """/clock waits at 0 for arm_balance, runs with its commands, then a period per timeout once killed."""
    p = lock_probe
    graph = _graph()
    period_ns = round(1e9 / LOCK_STEP_RATE_HZ)
    with NodeProcess(graph["mujoco_sim"], log_path=tmp_path / "sim.log") as sim:
        # before any answer the t = 0 state is republished: time does not run
        assert p.spin(20.0, lambda: len(p.clock_ns) >= 5), sim.output()
        assert set(p.clock_ns) == {0}
        assert sim.wait_for_output("waiting for a first message on ['/arm_balance/command']", 5.0)
        with NodeProcess(graph["arm_balance"], log_path=tmp_path / "arm.log") as arm:
            LifecycleClient(p.node, "arm_balance", executor=p.executor).bring_up(timeout=20.0)
            assert p.spin(20.0, lambda: bool(p.clock_ns) and p.clock_ns[-1] >= 0.5e9), \
                sim.output()[-2000:] + arm.output()[-2000:]
            # every published period was answered: each /clock tick has its command
            commands = set(p.command_ns)
            ticks = [t for t in p.clock_ns if 0 < t <= max(commands)]
            assert len(ticks) > 100 and all(t in commands for t in ticks)
            assert p.spin(2.0, lambda: len(_sim_status(p)) > 3)
            status = _sim_status(p)[-1]
            assert _value(status, "lock_step_misses") == "0", status.message
            arm.popen.kill()  # SIGKILL: no goodbye, no hold
            arm.popen.wait(timeout=5.0)
        p.clock_ns.clear()
        p.diagnostics.clear()
        # without answers each period waits TIMEOUT_S, then time goes on by one period
        assert p.spin(4 * TIMEOUT_S + 2.0, lambda: len(set(p.clock_ns)) >= 3)
        steps = sorted(set(p.clock_ns))
        assert all(b - a == period_ns for a, b in itertools.pairwise(steps))
        assert p.spin(3.0, lambda: any(s.level == WARN for s in _sim_status(p)))
        warned = [s for s in _sim_status(p) if s.level == WARN][-1]
        assert ARM_COMMAND in warned.message
        assert int(_value(warned, f"misses {ARM_COMMAND}")) >= 1
        report = sim.stop(signal.SIGINT)
    assert report.clean and report.seconds <= 2.0, report.output[-3000:]
