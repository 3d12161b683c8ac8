"""The identification_executor lifecycle node in-process on loopback DDS: what exists only over
ROS (parameters, the lifecycle, services, topics, the log). The run's behaviour is tested on
IdentificationRun (test/core/identification/test_run.py, test_run_faults.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.ros

STATIC_DEG = [0.0, 30.0, 20.0, 60.0, 40.0, 30.0]
#: 2-degree sweeps; the node and the simulated arm share one executor here, which on a loaded
#: 2-core machine can leave the joint states unhandled for more than the default 0.5 s
FAST = {"sweep_half_range": 2.0, "trim": 0.2, "static_configuration": STATIC_DEG,
        "joint_state_timeout": 2.0, "diagnostics_rate": 20.0}


class Harness:
    """The node under test, a probe node (services, recorders) and optionally the simulated arm."""

    def __init__(self, context: Any, overrides: dict[str, Any], with_sim: bool = True) -> None:
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.parameter import Parameter
        from sensor_msgs.msg import JointState
        from std_srvs.srv import Trigger

        from humanoid_balance.nodes.identification_executor import IdentificationExecutor
        from humanoid_balance.sim.lunar_arm import LunarArmRosAdapter, LunarArmSim

        params = [Parameter(k, value=v) for k, v in overrides.items()]
        self.node = IdentificationExecutor(context=context, parameter_overrides=params)
        self.probe = rclpy.create_node("identification_probe", context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.executor.add_node(self.probe)
        self.adapter: LunarArmRosAdapter | None = None
        if with_sim:
            sim = LunarArmSim(coulomb_friction=0.02, viscous_friction=0.1,
                              torque_noise_ratio=(0.01,) * 6, seed=1)
            sim.reset(dict(zip(sim.joint_names, np.radians(STATIC_DEG), strict=True)))
            self.adapter = LunarArmRosAdapter(self.probe, sim, rate_hz=200.0)
        self.commands: list[Any] = []
        self.diagnostics: list[Any] = []
        self.probe.create_subscription(JointState, "/identification/command", self.commands.append,
                                       50)
        self.probe.create_subscription(DiagnosticArray, "/diagnostics", self.diagnostics.append, 50)
        self.start_client: Any = self.probe.create_client(Trigger, "/identification/start")
        self.cancel_client: Any = self.probe.create_client(Trigger, "/identification/cancel")

    def spin(self, seconds: float, until: Callable[[], bool] | None = None) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.005)
            if until is not None and until():
                return True
        return until() if until is not None else True

    def activate(self) -> None:
        from rclpy.lifecycle import TransitionCallbackReturn

        assert self.node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert self.node.trigger_activate() == TransitionCallbackReturn.SUCCESS

    def call(self, client: Any, request: Any = None) -> Any:
        from std_srvs.srv import Trigger

        assert self.spin(5.0, lambda: client.service_is_ready())
        future = client.call_async(Trigger.Request() if request is None else request)
        assert self.spin(5.0, future.done)
        return future.result()

    def set_parameter(self, name: str, value: Any) -> Any:
        """Set one parameter through the node's ``set_parameters`` service; the result."""
        from rcl_interfaces.srv import SetParameters
        from rclpy.parameter import Parameter

        client = self.probe.create_client(SetParameters, "/identification_executor/set_parameters")
        request = SetParameters.Request(parameters=[Parameter(name, value=value).to_parameter_msg()])
        return self.call(client, request).results[0]

    def state(self) -> str:
        """The run's state in the newest progress status ("" before the first)."""
        for array in reversed(self.diagnostics):
            for status in array.status:
                if status.name.startswith("identification_executor"):
                    return {kv.key: kv.value for kv in status.values}.get("state", "")
        return ""

    def close(self) -> None:
        if self.adapter is not None:
            self.adapter.close()
        self.executor.shutdown()
        self.node.destroy_node()
        self.probe.destroy_node()


@pytest.fixture
def fast_harness(rclpy_context: Any, tmp_path: Path) -> Iterator[Harness]:
    """Node with 2-degree sweeps and the simulated arm (node unconfigured)."""
    h = Harness(rclpy_context, {**FAST, "output_path": str(tmp_path / "results.yaml")})
    try:
        yield h
    finally:
        h.close()


def test_configure_refuses_speed_above_3_deg_s(rclpy_context: Any) -> None:
    """configure fails with speed = 5 deg/s (the quasi-static bound is 3)."""
    from rclpy.lifecycle import TransitionCallbackReturn

    h = Harness(rclpy_context, {"speed": 5.0}, with_sim=False)
    try:
        assert h.node.trigger_configure() == TransitionCallbackReturn.FAILURE
    finally:
        h.close()


def test_package_config_file_configures_the_node(rclpy_context: Any, repo_root: Path) -> None:
    """config/identification.yaml holds only declared, valid parameters: configure succeeds."""
    import yaml
    from rclpy.lifecycle import TransitionCallbackReturn

    params = yaml.safe_load((repo_root / "config" / "identification.yaml").read_text())
    h = Harness(rclpy_context, params["/**/identification_executor"]["ros__parameters"],
                with_sim=False)
    try:
        assert h.node.trigger_configure() == TransitionCallbackReturn.SUCCESS
    finally:
        h.close()


def test_start_refused_without_efforts(rclpy_context: Any) -> None:
    """Joint states without effort: start is refused with a message saying so; no command sent."""
    from sensor_msgs.msg import JointState

    h = Harness(rclpy_context, FAST, with_sim=False)
    try:
        h.activate()
        pub = h.probe.create_publisher(JointState, "/joint_states", 10)
        msg = JointState()
        msg.name = [f"joint{i}" for i in range(1, 7)]
        msg.position = list(np.radians(STATIC_DEG))
        msg.velocity = [0.0] * 6
        for _ in range(20):
            msg.header.stamp = h.probe.get_clock().now().to_msg()
            pub.publish(msg)
            h.spin(0.02)
        result = h.call(h.start_client)
        assert (result.success, "no finite effort" in result.message) == (False, True)
        h.spin(0.2)
        assert h.commands == []
    finally:
        h.close()


def test_start_refused_without_joint_states(rclpy_context: Any) -> None:
    """No /joint_states at all: start is refused."""
    h = Harness(rclpy_context, FAST, with_sim=False)
    try:
        h.activate()
        result = h.call(h.start_client)
        assert (result.success, result.message) == (
            False, "refused to start: no /joint_states with the arm joints received")
    finally:
        h.close()


class Recorder:
    """A logger that keeps its warnings."""

    def __init__(self) -> None:
        self.warnings: list[str] = []

    def warning(self, text: str) -> None:
        self.warnings.append(text)


def test_warnings_are_throttled_per_cause() -> None:
    """One cause (channel and text, figures aside) at most once a period; a new text or channel
    at once; the same cause again after the period."""
    from humanoid_balance.nodes.identification_executor import CauseThrottle

    logger = Recorder()
    throttle = CauseThrottle(logger, period_s=0.05)
    logged = [throttle.warning("joint_states", "/joint_states rejected (1 so far): stamped "
                               "0.120 s ahead of the node clock"),
              throttle.warning("joint_states", "/joint_states rejected (2 so far): stamped "
                               "0.130 s ahead of the node clock"),
              throttle.warning("joint_states", "/joint_states rejected (3 so far): names "
                               "['joint1'] of the arm without ['joint2']"),
              throttle.warning("start", "/joint_states rejected (3 so far): names "
                               "['joint1'] of the arm without ['joint2']")]
    time.sleep(0.06)
    logged.append(throttle.warning("joint_states", "/joint_states rejected (9 so far): stamped "
                                   "0.200 s ahead of the node clock"))
    assert logged == [True, False, True, True, True]
    assert logger.warnings[-1] == ("/joint_states rejected (9 so far): stamped 0.200 s ahead of "
                                   "the node clock")


def test_a_start_refusal_right_after_another_warning_is_logged(rclpy_context: Any,
                                                              capfd: Any) -> None:
    """A rejected joint state warns on the node's log; a start refused within the same second
    is logged too (issue 35: one 1 s throttle for every warning dropped it)."""
    from sensor_msgs.msg import JointState

    h = Harness(rclpy_context, FAST, with_sim=False)
    try:
        h.activate()
        pub = h.probe.create_publisher(JointState, "/joint_states", 10)
        msg = JointState()
        msg.name = [f"joint{i}" for i in range(1, 6)]  # joint6 missing: rejected
        msg.position = list(np.radians(STATIC_DEG[:5]))
        assert h.spin(10.0, lambda: pub.get_subscription_count() > 0)
        capfd.readouterr()
        pub.publish(msg)
        err: list[str] = []
        assert h.spin(10.0, lambda: bool(err.append(capfd.readouterr().err) or
                                          "rejected" in "".join(err))), err
        result = h.call(h.start_client)
        assert not result.success and result.message.startswith("refused to start: ")
        h.spin(0.1)
        err.append(capfd.readouterr().err)
        warnings = [line.split("]: ", 1)[1] for line in "".join(err).splitlines()
                    if line.startswith("[WARN]") and "[identification_executor]" in line]
        assert warnings == [
            "/joint_states rejected (1 so far): names ['joint1', 'joint2', 'joint3', 'joint4', "
            "'joint5'] of the arm without ['joint6']", result.message]
    finally:
        h.close()


def test_a_run_commands_and_refuses_use_sim_time_until_cancelled(fast_harness: Harness) -> None:
    """Start over the service: commands flow on /identification/command, diagnostics say
    running; use_sim_time is refused naming the run (the run goes on); cancel answers it brakes,
    the run ends cancelled; then use_sim_time is accepted."""
    h = fast_harness
    h.activate()
    started = h.call(h.start_client)
    deadline = time.monotonic() + 20.0
    while not started.success and time.monotonic() < deadline:  # the newest joint state may be
        h.spin(0.1)                                             # too old on a loaded machine
        started = h.call(h.start_client)
    assert started.success, started.message
    assert h.spin(10.0, lambda: len(h.commands) > 20 and h.state() == "running"), h.state()
    result = h.set_parameter("use_sim_time", False)
    assert (result.successful, result.reason) == (
        False, "use_sim_time cannot change during a run (it moves the node's clock): cancel first")
    result = h.set_parameter("trim", 0.3)
    assert (result.successful, result.reason) == (
        False, "parameters cannot change during a run: cancel first")
    count = len(h.commands)
    assert h.spin(10.0, lambda: len(h.commands) > count + 10 and h.state() == "running")
    cancelled = h.call(h.cancel_client)
    assert (cancelled.success, cancelled.message) == (True, "cancelled: the arm brakes to rest")
    assert h.spin(10.0, lambda: h.state() == "cancelled" and not any(h.commands[-1].velocity)), (
        h.state(), h.commands[-1].velocity)
    assert h.set_parameter("use_sim_time", False).successful


def test_cancel_without_a_run_names_the_state(rclpy_context: Any) -> None:
    """Cancel unconfigured: refused with what to do; active with no run: the state."""
    h = Harness(rclpy_context, FAST, with_sim=False)
    try:
        result = h.call(h.cancel_client)
        assert (result.success, result.message) == (
            False, "nothing to cancel: identification_executor is unconfigured: configure and "
                   "activate it")
        h.activate()
        result = h.call(h.cancel_client)
        assert (result.success, result.message) == (False, "nothing to cancel (state idle)")
    finally:
        h.close()


def test_identify_command_reports_a_missing_bag(tmp_path: Path, capsys: Any) -> None:
    """`humanoid-balance identify` on a missing bag prints why on stderr and returns 2 (a user error)."""
    from humanoid_balance.cli import main

    assert main(["identify", str(tmp_path / "nothing")]) == 2
    assert "cannot open bag" in capsys.readouterr().err


def test_identify_command_refuses_joints_out_of_chain_order(tmp_path: Path, capsys: Any) -> None:
    """`identify --joints` not in the URDF's chain order prints why on stderr and returns 2."""
    from humanoid_balance.cli import main

    joints = [f"joint{i}" for i in (2, 1, 3, 4, 5, 6)]
    assert main(["identify", str(tmp_path / "nothing"), "--joints", *joints]) == 2
    assert "must be the URDF's chain ['joint1', 'joint2'" in capsys.readouterr().err


def test_identify_command_averages_as_the_node_by_default() -> None:
    """`identify` averages blocks of 10 by default, as the node's `average` parameter."""
    from humanoid_balance.cli import build_parser
    from humanoid_balance.params.identification_executor import SPEC

    assert build_parser().parse_args(["identify", "bag"]).average == SPEC["average"].default == 10
