"""The ``waist_controller`` node through its ROS interfaces (parameters, lifecycle, topics,
services), and its parameters turned into a typed config. The waist's behaviour (safety, the
enable and stop sequences, the report) is tested on the loop without DDS: test/waist/."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator
from typing import Any

import pytest

from humanoid_balance.params.waist_controller import (
    SPEC,
    config_from_values,
    simulated_drives_problem,
)

_channels = itertools.count()


# --- parameters -> config (no DDS) ----------------------------------------------------------------


def test_config_from_values_converts_degrees_and_rates_once() -> None:
    """The spec's defaults: limits and tolerances in radians, the servo period from servo_rate,
    publishing every servo_rate / publish_rate periods."""
    config = config_from_values(SPEC.defaults())
    servo = config.servo
    assert servo.waist.pitch_limits_rad == pytest.approx((math.radians(-5.0), math.radians(45.0)))
    assert servo.waist.roll_limits_rad == pytest.approx((math.radians(-15.0), math.radians(15.0)))
    assert (servo.velocity_limit_rad_s, servo.acceleration_limit_rad_s2,
            servo.homing_tolerance_rad) == pytest.approx(
        (math.radians(60.0), math.radians(30.0), math.radians(2.0)))
    assert servo.gains.dt == pytest.approx(0.002) and servo.motor_ids == (1, 2)
    assert (config.thread.publish_every, config.thread.spin_margin_s) == (5, 0.0003)
    assert (config.can_interface, config.servo_priority, config.simulated_drives) == (
        "virtual", 50, False)


def test_config_from_values_refuses_with_the_spec_reason() -> None:
    """An outer rate above the servo rate is refused with the spec's message."""
    from humanoid_balance.exceptions import ConfigurationError

    with pytest.raises(ConfigurationError, match="outer_rate 600 Hz must not exceed servo_rate 500 Hz"):
        config_from_values({**SPEC.defaults(), "outer_rate": 600.0})


def test_motor_ids_parameter_checked_as_the_bus_checks_them() -> None:
    """The node refuses motor_ids [1, 1] with the bus's message and accepts [2, 1]."""
    assert SPEC.validate("motor_ids", [1, 1]) == (
        "motor_ids must be the two drive node ids [1, 2] in motor order (w1, w2), got [1, 1]")
    assert SPEC.validate("motor_ids", [2, 1]) is None


def test_simulated_drives_need_a_virtual_bus() -> None:
    """simulated_drives with socketcan is refused, saying how to fix it; with virtual it is fine."""
    assert simulated_drives_problem(True, "virtual") is None
    assert simulated_drives_problem(False, "socketcan") is None
    assert simulated_drives_problem(True, "socketcan") == (
        "simulated_drives needs can.interface 'virtual' (the drives share a python-can virtual bus "
        "with the controller in this process), got 'socketcan': set simulated_drives false to use "
        "real drives")


# --- the node ---------------------------------------------------------------------------------------


class NodeHarness:
    """The waist_controller node with its own simulated drives, and a probe on its topics."""

    def __init__(self, context: object, overrides: dict[str, object] | None = None) -> None:
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.parameter import Parameter
        from sensor_msgs.msg import JointState
        from trajectory_msgs.msg import JointTrajectory

        from humanoid_balance.nodes.waist_controller import WaistControllerNode

        # the node's own simulated drives, stepped by its servo thread (simulated_drives)
        params = {"can.channel": f"waist_node_{next(_channels)}", "simulated_drives": True,
                  "servo_priority": 0, **(overrides or {})}
        self.node = WaistControllerNode(
            context=context, parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
        self.probe = rclpy.create_node("waist_probe", context=context)  # type: ignore[arg-type]
        self.executor = SingleThreadedExecutor(context=context)  # type: ignore[arg-type]
        self.executor.add_node(self.node)
        self.executor.add_node(self.probe)
        self.joint_states: list[JointState] = []
        self.motor_states: list[DiagnosticArray] = []
        self.diagnostics: list[DiagnosticArray] = []
        self.probe.create_subscription(JointState, "/joint_states", self.joint_states.append, 50)
        self.probe.create_subscription(DiagnosticArray, "/waist/motor_states",
                                       self.motor_states.append, 50)
        self.probe.create_subscription(DiagnosticArray, "/diagnostics", self.diagnostics.append, 50)
        self.pub_command = self.probe.create_publisher(JointTrajectory, "/waist/command", 10)

    def spin(self, seconds: float, until: Any = None) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.005)
            if until is not None and until():
                return True
        return bool(until()) if until is not None else True

    def configure(self) -> None:
        from rclpy.lifecycle import TransitionCallbackReturn

        assert self.node.trigger_configure() == TransitionCallbackReturn.SUCCESS

    def activate(self) -> None:
        """configure, let the drives answer, activate (both transitions must succeed)."""
        from rclpy.lifecycle import TransitionCallbackReturn

        self.configure()
        self.spin(0.1)
        assert self.node.trigger_activate() == TransitionCallbackReturn.SUCCESS

    def drives_say(self, key: str, value: str) -> bool:
        """Whether both motors' newest /waist/motor_states say ``key`` is ``value`` (spun until
        they do, up to 2 s: a report sent before a transition may arrive after it)."""

        def newest() -> bool:
            return bool(self.motor_states) and all(
                {kv.key: kv.value for kv in s.values}.get(key) == value
                for s in self.motor_states[-1].status)

        return self.spin(2.0, newest)

    def controller_says(self, message: str) -> bool:
        """Whether the newest waist_controller status on /diagnostics says ``message`` (spun
        until it does, up to 2 s)."""
        return self.spin(2.0, lambda: bool(self.diagnostics) and any(
            s.name == "waist_controller" and s.message == message
            for s in self.diagnostics[-1].status))

    def send(self, time_s: float, pitch_deg: float, roll_deg: float) -> None:
        from builtin_interfaces.msg import Duration
        from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

        msg = JointTrajectory(joint_names=["waist_roll", "waist_pitch"])  # not the node's order
        msg.points.append(JointTrajectoryPoint(
            positions=[math.radians(roll_deg), math.radians(pitch_deg)],
            time_from_start=Duration(sec=int(time_s), nanosec=int(time_s % 1 * 1e9))))
        self.pub_command.publish(msg)

    def call(self, srv_type: Any, name: str, request: Any) -> Any:
        client = self.probe.create_client(srv_type, name)
        assert client.wait_for_service(timeout_sec=2.0)
        future = client.call_async(request)
        assert self.spin(5.0, future.done)
        return future.result()

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()  # closes the simulated drives too
        self.probe.destroy_node()


@pytest.fixture
def harness(rclpy_context: object) -> Iterator[NodeHarness]:
    """An unconfigured waist_controller with its simulated drives."""
    h = NodeHarness(rclpy_context)
    try:
        yield h
    finally:
        h.close()


@pytest.mark.parametrize("overrides", [{"servo_rate": 1000.0}, {"pitch_limits": [45.0, -5.0]}],
                         ids=["bus overload", "inverted limits"])
def test_configure_refuses_parameters_it_cannot_use(rclpy_context: object,
                                                     overrides: dict[str, object]) -> None:
    """servo_rate 1000 Hz (96 % of 320 kbit/s) and pitch_limits [45, -5] fail configure."""
    from rclpy.lifecycle import TransitionCallbackReturn

    h = NodeHarness(rclpy_context, overrides)
    try:
        assert h.node.trigger_configure() == TransitionCallbackReturn.FAILURE
    finally:
        h.close()


def test_config_file_parameters_configure_the_node(rclpy_context: object) -> None:
    """Every parameter of config/waist.yaml is declared by the node and accepted at configure."""
    import yaml

    from humanoid_balance.resources import config_path

    doc = yaml.safe_load(config_path("waist.yaml").read_text())
    params = dict(doc["/**/waist_controller"]["ros__parameters"])
    for key, value in params.pop("can").items():
        params[f"can.{key}"] = value
    params.pop("can.channel")  # the harness's own virtual channel
    params["servo_priority"] = 0  # no real-time scheduling in the test suite
    h = NodeHarness(rclpy_context, params)
    try:
        assert {name for name in params if h.node.has_parameter(name)} == set(params)
        h.configure()
    finally:
        h.close()


def test_the_inclinometer_subscription_keeps_the_newest_sample_only(harness: NodeHarness) -> None:
    """/waist/inclinometer is taken with depth 1: after a busy spell of the executor (a request
    being answered) the sample it takes is the newest. With a queue the classic executor took
    the oldest, one per wait, and an enable answered next judged the encoders against it."""
    from rclpy.qos import HistoryPolicy

    harness.configure()
    qos = next(s.qos_profile for s in harness.node.subscriptions
               if s.topic_name == "/waist/inclinometer")
    assert (qos.history, qos.depth) == (HistoryPolicy.KEEP_LAST, 1)


def test_inactive_node_publishes_waist_joint_states(harness: NodeHarness) -> None:
    """Configured (inactive), the node polls the drives and publishes the waist joints; the
    drives stay disabled."""
    harness.configure()
    assert harness.spin(2.0, lambda: len(harness.joint_states) > 5)
    assert list(harness.joint_states[-1].name) == ["waist_pitch", "waist_roll"]
    assert harness.drives_say("enabled", "False")


def test_enable_request_refused_while_inactive(harness: NodeHarness) -> None:
    """/waist/enable true on a configured but inactive node is refused (lifecycle first); the
    drives stay disabled and a command does not move the waist."""
    from std_srvs.srv import SetBool

    h = harness
    h.configure()
    assert h.spin(2.0, lambda: bool(h.joint_states))
    response = h.call(SetBool, "/waist/enable", SetBool.Request(data=True))
    assert not response.success and response.message.startswith(
        "waist_controller is inactive: activate it to enable the drives")
    pitch0 = h.joint_states[-1].position[0]
    h.send(0.2, 5.0, 0.0)
    h.spin(0.5)
    assert abs(math.degrees(h.joint_states[-1].position[0] - pitch0)) < 0.05
    assert h.drives_say("enabled", "False")


def test_enable_false_then_true_through_the_service(harness: NodeHarness) -> None:
    """Active: /waist/enable false stops and disables the drives (brakes on); true enables them
    again at the measured position."""
    from std_srvs.srv import SetBool

    h = harness
    h.activate()
    assert h.drives_say("enabled", "True")
    response = h.call(SetBool, "/waist/enable", SetBool.Request(data=False))
    assert (response.success, response.message) == (True, "stopped and disabled (brakes on)")
    assert h.drives_say("enabled", "False") and h.drives_say("brake", "True")
    response = h.call(SetBool, "/waist/enable", SetBool.Request(data=True))
    assert (response.success, response.message) == (True, "enabled: holding the measured position")
    assert h.drives_say("enabled", "True") and h.controller_says("holding")


def test_stop_service_answers_with_the_state_and_the_waist_holds(harness: NodeHarness) -> None:
    """/waist/stop on an active node: success, the state after the request; /diagnostics then
    says holding, the drives still enabled."""
    from std_srvs.srv import Trigger

    h = harness
    h.activate()
    response = h.call(Trigger, "/waist/stop", Trigger.Request())
    assert (response.success, response.message) == (
        True, "controlled stop requested (state stopping)")
    assert h.controller_says("holding")
    assert h.drives_say("enabled", "True")


def test_deactivate_stops_then_disables(harness: NodeHarness) -> None:
    """Deactivate during a motion brings the waist to rest and disables both drives (brakes on)."""
    from rclpy.lifecycle import TransitionCallbackReturn

    h = harness
    h.activate()
    h.send(2.0, 5.0, 0.0)
    h.spin(0.3)
    assert h.node.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
    assert h.drives_say("enabled", "False") and h.drives_say("brake", "True")
    assert h.controller_says("idle")
