"""``identification_executor``'s parameters over DDS, as ``ros2 param set`` sets them (issue 11).

The executor runs as a process (its parameter file, 0.5-degree sweeps) on a
clock this test publishes, fed by a fake arm in this process: joint states
that follow its commands, with the gravity torques of the lunar arm plus a
small seeded noise as effort. Every
dynamic parameter is set through ``/identification_executor/set_parameters``
and changes what the node does next; the read-only ones, invalid values and
any change during a run are refused with the reason.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from process_harness import (
    Probe,
    RunningNode,
    bring_up,
    spin_executor_until,
    start_node,
    wait_ready,
)

from humanoid_balance.core.identification import LUNAR_JOINTS
from humanoid_balance.graph import robot_graph

pytestmark = pytest.mark.ros

NODE = "identification_executor"
STATIC_DEG = (0.0, 40.0, 20.0, 60.0, 40.0, 30.0)
#: s of the test's clock a run of 0.5-degree sweeps may take (its plan 9.8 s, then the arm settles
#: for up to 2 s and the node estimates, which on a loaded machine takes seconds of wall time)
RUN_S = 30.0


class ClockedArm:
    """The fake arm and the clock: the test drives time (``/clock``, the executor runs on it).

    Each tick advances the clock by 5 ms and publishes a joint state stamped then (unless
    ``paused``): the last command's position and velocity, effort the gravity torques there
    plus N(0, 0.005 N m) noise (seeded). While commands flow (one came within ``FLOWING_NS``
    and the last wait did not time out), each tick waits in lock-step until the executor's
    command for the current time arrived (``LAG_NS``), so a loaded machine slows the run
    down instead of leaving the arm behind; ticks then go at up to twice real time, otherwise
    at real time.
    """

    TICK_NS = 5_000_000
    FLOWING_NS = 60_000_000
    LAG_NS = 25_000_000

    def __init__(self, probe: Probe) -> None:
        import pinocchio as pin
        from rosgraph_msgs.msg import Clock
        from sensor_msgs.msg import JointState

        from humanoid_balance.core.identification.regressor import GravityRegressor
        from humanoid_balance.resources import urdf_path

        self.probe = probe
        self.regressor = GravityRegressor(pin.buildModelFromUrdf(str(urdf_path("lunar_arm"))))
        self.position, self.velocity = np.radians(STATIC_DEG), np.zeros(6)
        self.rng = np.random.default_rng(0)
        self.now_ns = 1_000 * 1_000_000_000
        self.last_command_ns = 0
        self.lock_step = False
        self.paused = False
        self.commands: list[Any] = []
        self.clock_pub = probe.node.create_publisher(Clock, "/clock", 10)
        self.pub = probe.node.create_publisher(JointState, "/joint_states", 100)
        self.sub = probe.node.create_subscription(JointState, "/identification/command",
                                                  self._on_command, 100)

    def _on_command(self, msg: Any) -> None:
        self.commands.append(msg)
        self.last_command_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        self.lock_step = True
        self.position, self.velocity = np.array(msg.position), np.array(msg.velocity)

    def tick(self) -> None:
        """Advance the clock by one tick; publish it and the joint state."""
        from builtin_interfaces.msg import Time
        from rosgraph_msgs.msg import Clock
        from sensor_msgs.msg import JointState

        self.now_ns += self.TICK_NS
        stamp = Time(sec=self.now_ns // 1_000_000_000, nanosec=self.now_ns % 1_000_000_000)
        self.clock_pub.publish(Clock(clock=stamp))
        if self.paused:
            return
        msg = JointState()
        msg.header.stamp = stamp
        msg.name = list(LUNAR_JOINTS)
        msg.position, msg.velocity = self.position.tolist(), self.velocity.tolist()
        msg.effort = (self.regressor.gravity_torques(self.position)
                      + self.rng.normal(0.0, 0.005, 6)).tolist()
        self.pub.publish(msg)

    def pump(self, seconds: float, until: Callable[[], bool] | None = None) -> bool:
        """Tick for ``seconds`` of the clock, or until ``until()``; handle what comes."""
        ticks = round(seconds * 1e9 / self.TICK_NS)
        due = time.monotonic()
        for _ in range(ticks):
            if until is not None and until():
                return True
            self.tick()
            self.probe.executor.spin_once(timeout_sec=0.0)
            stepping = self.lock_step and self.now_ns - self.last_command_ns <= self.FLOWING_NS
            if stepping:
                self.lock_step = spin_executor_until(
                    self.probe.executor,
                    lambda: self.now_ns - self.last_command_ns <= self.LAG_NS, 0.3)
            due += self.TICK_NS * 1e-9 / (2.0 if stepping else 1.0)
            ahead = due - time.monotonic()
            if ahead > 0.0:
                self.probe.executor.spin_once(timeout_sec=ahead)
            else:
                due = time.monotonic()
        return until() if until is not None else True

    def close(self) -> None:
        for pub in (self.clock_pub, self.pub):
            self.probe.node.destroy_publisher(pub)
        self.probe.node.destroy_subscription(self.sub)


class Rig:
    """The executor process, the clocked arm and the calls a user makes."""

    def __init__(self, probe: Probe, running: RunningNode, arm: ClockedArm, folder: Path) -> None:
        self.probe, self.running, self.arm, self.folder = probe, running, arm, folder

    def call(self, srv_type: Any, name: str, request: Any = None) -> Any:
        """A service's answer; the clock and the arm go on meanwhile."""
        cli = self.probe.client(srv_type, name)
        assert self.arm.pump(10.0, cli.service_is_ready), f"{name} not available"
        future = cli.call_async(srv_type.Request() if request is None else request)
        assert self.arm.pump(10.0, future.done), f"{name} did not answer"
        return future.result()

    def set(self, **values: Any) -> list[Any]:
        """SetParameters (what ``ros2 param set`` calls): one result per value."""
        from rcl_interfaces.srv import SetParameters
        from rclpy.parameter import Parameter

        request = SetParameters.Request(parameters=[
            Parameter(name, value=value).to_parameter_msg() for name, value in values.items()])
        return list(self.call(SetParameters, f"/{NODE}/set_parameters", request).results)

    def trigger(self, service: str) -> Any:
        """``/identification/<service>``'s answer."""
        from std_srvs.srv import Trigger

        return self.call(Trigger, f"/identification/{service}")

    def transition(self, name: str) -> None:
        """A lifecycle transition through the node's services (it must succeed)."""
        from lifecycle_msgs.msg import Transition
        from lifecycle_msgs.srv import ChangeState

        ids = {"activate": Transition.TRANSITION_ACTIVATE,
               "deactivate": Transition.TRANSITION_DEACTIVATE}
        request = ChangeState.Request(transition=Transition(id=ids[name]))
        assert self.call(ChangeState, f"/{NODE}/change_state", request).success, name

    def run(self, output: Path) -> dict[str, Any]:
        """Start a run, wait for its results file, return it."""
        response = self.trigger("start")
        assert response.success, response.message
        assert self.arm.pump(RUN_S, output.exists), (
            f"no {output}:\n{self.running.process.output()[-2000:]}")
        return dict(yaml.safe_load(output.read_text()))


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    """The executor (0.5-degree sweeps, trim 0.1 s, the test's clock) configured and active."""
    folder = tmp_path_factory.mktemp("identification_parameters")
    node = next(n for n in robot_graph(identification=True, waist=False) if n.name == NODE)
    node = node.with_parameters(output_path=str(folder / "first.yaml"), sweep_half_range=0.5,
                                trim=0.1, joint_state_timeout=1.0, diagnostics_rate=10.0,
                                use_sim_time=True)
    probe = Probe("identification_parameters_probe")
    arm = ClockedArm(probe)
    running = start_node(node, folder)
    try:
        wait_ready(probe, running)
        arm.pump(0.2)
        bring_up(probe, running)
        made = Rig(probe, running, arm, folder)
        arm.pump(0.5)
        yield made
    finally:
        running.stop()
        arm.close()
        probe.close()


def test_estimation_parameters_apply_to_the_next_run(rig: Rig) -> None:
    """method, average, trim and output_path set between runs: the next estimate uses them."""
    first = rig.run(rig.folder / "first.yaml")
    second_path = rig.folder / "second.yaml"
    results = rig.set(method="global", average=5, trim=0.05, output_path=str(second_path))
    assert [r.successful for r in results] == [True] * 4, [r.reason for r in results]
    second = rig.run(second_path)
    assert first["estimation"] == {"method": "sequential", "average": 10, "trim_s": 0.1}
    assert second["estimation"] == {"method": "global", "average": 5, "trim_s": 0.05}
    first_values = [p["value"] for p in first["parameters"]]
    second_values = [p["value"] for p in second["parameters"]]
    assert first_values != second_values


def test_torque_source_and_constants_apply_to_the_next_joint_state(rig: Rig) -> None:
    """torque_constants 100 N m/A with torque_source current: the efforts read as 100x the
    torque, beyond the URDF's limits, so start is refused naming them; effort again: accepted."""
    assert rig.set(torque_constants=[100.0] * 6)[0].successful
    accepted = rig.trigger("start")
    rig.trigger("cancel")
    rig.arm.pump(0.5)
    assert rig.set(torque_source="current")[0].successful
    rig.arm.pump(0.2)
    refused = rig.trigger("start")
    assert rig.set(torque_source="effort", torque_constants=[1.0] * 6)[0].successful
    rig.arm.pump(0.2)
    again = rig.trigger("start")
    rig.trigger("cancel")
    rig.arm.pump(0.5)
    assert (accepted.success, refused.success, again.success) == (True, False, True), (
        refused.message)
    assert "beyond its limit" in refused.message and "torque_constants" in refused.message


def test_joint_state_timeout_applies_to_the_next_joint_state(rig: Rig) -> None:
    """Joint states 0.4 s old: start accepted with joint_state_timeout 1 s, refused with 0.2 s."""
    outcomes = []
    for timeout in (1.0, 0.2):
        assert rig.set(joint_state_timeout=timeout)[0].successful
        rig.arm.pump(0.2)
        rig.arm.paused = True
        rig.arm.pump(0.4)
        outcomes.append(rig.trigger("start"))
        rig.arm.paused = False
        rig.trigger("cancel")
        rig.arm.pump(0.5)
    rig.set(joint_state_timeout=1.0)
    assert [o.success for o in outcomes] == [True, False], outcomes[1].message
    assert "old (timeout 0.200 s)" in outcomes[1].message


def test_rates_are_refused_while_active_and_apply_at_activation(rig: Rig) -> None:
    """rate and diagnostics_rate: refused while active (naming activation); set while inactive,
    the next activation commands at 50 Hz and publishes diagnostics at 5 Hz."""
    from diagnostic_msgs.msg import DiagnosticArray

    refused = rig.set(rate=50.0, diagnostics_rate=5.0)
    rig.transition("deactivate")
    accepted = rig.set(rate=50.0, diagnostics_rate=5.0)
    rig.transition("activate")
    diagnostics = rig.probe.record(DiagnosticArray, "/diagnostics")
    rig.arm.commands.clear()
    assert rig.trigger("start").success
    window = (rig.arm.now_ns * 1e-9, rig.arm.now_ns * 1e-9 + 2.0)
    rig.arm.pump(2.0)
    rig.trigger("cancel")
    rig.arm.pump(0.5)
    stamps = [c.header.stamp.sec + c.header.stamp.nanosec * 1e-9 for c in rig.arm.commands]
    shown = [d.header.stamp.sec + d.header.stamp.nanosec * 1e-9 for d in diagnostics.messages]
    rig.transition("deactivate")
    rig.set(rate=100.0, diagnostics_rate=10.0)
    rig.transition("activate")
    assert not refused[0].successful and "activation" in refused[0].reason
    assert all(r.successful for r in accepted), [r.reason for r in accepted]
    assert float(np.median(np.diff(stamps))) == pytest.approx(0.02, abs=0.004)
    inside = [t for t in shown if window[0] <= t < window[1]]
    assert float(np.median(np.diff(inside))) == pytest.approx(0.2, abs=0.01)


@pytest.mark.parametrize(("name", "value"), [
    ("speed", 2.0), ("gravity", 1.62), ("urdf_path", "other.urdf"), ("clearance", 0.02),
    ("sweep_half_range", 1.0), ("acceleration_limit", 60.0), ("optimize_configuration", True),
    ("static_configuration", [0.0, 30.0, 20.0, 60.0, 40.0, 30.0]), ("arm_joints", ["a", "b"]),
])
def test_read_only_parameters_are_refused_once_configured(rig: Rig, name: str,
                                                          value: Any) -> None:
    """A parameter the plan is built from, set while configured: refused naming configure."""
    result = rig.set(**{name: value})[0]
    assert (result.successful, result.reason) == (
        False, f"{name} is read at configure: deactivate, clean up and configure again to "
               "change it")


@pytest.mark.parametrize(("name", "value", "reason"), [
    ("torque_constants", [math.nan] * 6, "torque_constants value nan: must be finite"),
    ("torque_constants", [1.0, 1.0, 1.0], "torque_constants has 3 values: expected 6, one per arm "
                                          "joint (['joint1', 'joint2', 'joint3', 'joint4', "
                                          "'joint5', 'joint6'])"),
    ("torque_constants", [0.0] * 6, "torque_constants value 0.0: must be > 0 N m/A"),
    ("joint_state_timeout", math.inf, "joint_state_timeout=inf: must be finite"),
    ("joint_state_timeout", 10.0, "joint_state_timeout=10.0: must be <= 5 s"),
    ("trim", -0.1, "trim=-0.1: must be >= 0 s"),
    ("average", 0, "average=0: must be >= 1"),
    ("method", "magic", "method='magic': expected one of ['sequential', 'global', 'weighted']"),
    ("torque_source", "voltage", "torque_source='voltage': expected one of ['effort', 'current']"),
    ("output_path", " ", "output_path=' ': expected a file path"),
])
def test_invalid_values_are_refused_with_the_reason(rig: Rig, name: str, value: Any,
                                                    reason: str) -> None:
    """An invalid value of a dynamic parameter: refused with the spec's reason."""
    result = rig.set(**{name: value})[0]
    assert (result.successful, result.reason) == (False, reason)


def test_an_unwritable_output_path_is_refused(rig: Rig) -> None:
    """output_path under a file: refused naming the path and what to do."""
    blocker = rig.folder / "a_file"
    blocker.write_text("x")
    result = rig.set(output_path=str(blocker / "results.yaml"))[0]
    assert not result.successful and result.reason.endswith("choose a writable output_path")


def test_changes_during_a_run_are_refused(rig: Rig) -> None:
    """During a run every change, even a valid dynamic one, is refused naming the run."""
    assert rig.trigger("start").success
    rig.arm.pump(0.3)
    results = [rig.set(**{name: value})[0] for name, value in (
        ("trim", 0.2), ("method", "weighted"), ("torque_source", "current"))]
    rig.trigger("cancel")
    rig.arm.pump(0.5)
    assert [(r.successful, r.reason) for r in results] == [
        (False, "parameters cannot change during a run: cancel first")] * 3
