"""The identification_executor lifecycle node in-process on loopback DDS, with the simulated arm."""

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
        "joint_state_timeout": 2.0}


class Harness:
    """The node under test, a probe node (services, recorders) and optionally the simulated arm."""

    def __init__(self, context: Any, overrides: dict[str, Any], with_sim: bool = True) -> None:
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.parameter import Parameter
        from rclpy.qos import DurabilityPolicy, QoSProfile
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray
        from std_srvs.srv import Trigger

        from humanoid_balance.nodes.identification_executor import IdentificationExecutor
        from humanoid_balance.sim.lunar_arm import LunarArmRosAdapter, LunarArmSim

        params = [Parameter(k, value=v) for k, v in overrides.items()]
        self.node = IdentificationExecutor(context=context, parameter_overrides=params)
        self.probe = rclpy.create_node("identification_probe", context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.executor.add_node(self.probe)
        self.sim: LunarArmSim | None = None
        self.adapter: LunarArmRosAdapter | None = None
        if with_sim:
            self.sim = LunarArmSim(coulomb_friction=0.02, viscous_friction=0.1,
                                   torque_noise_ratio=(0.01,) * 6, seed=1)
            self.sim.reset(dict(zip(self.sim.joint_names, np.radians(STATIC_DEG), strict=True)))
            self.adapter = LunarArmRosAdapter(self.probe, self.sim, rate_hz=200.0)
        self.commands: list[Any] = []
        self.diagnostics: list[Any] = []
        self.parameters: list[Any] = []
        self.probe.create_subscription(JointState, "/identification/command", self.commands.append,
                                       50)
        self.probe.create_subscription(DiagnosticArray, "/diagnostics", self.diagnostics.append, 50)
        self.probe.create_subscription(
            Float64MultiArray, "/identification/parameters", self.parameters.append,
            QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
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

    def call(self, client: Any) -> Any:
        from std_srvs.srv import Trigger

        assert self.spin(5.0, lambda: client.service_is_ready())
        future = client.call_async(Trigger.Request())
        assert self.spin(5.0, future.done)
        return future.result()

    def progress(self) -> list[dict[str, str]]:
        return [{kv.key: kv.value for kv in s.values} for d in self.diagnostics for s in d.status
                if s.name.startswith("identification_executor")]

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


@pytest.mark.parametrize("override", [{"trim": -1.0}, {"joint_state_timeout": -0.5},
                                      {"average": 0}])
def test_configure_refuses_negative_times_and_empty_blocks(rclpy_context: Any,
                                                           override: dict[str, Any]) -> None:
    """configure fails with trim: -1, joint_state_timeout: -0.5 or average: 0 from a parameter file."""
    from rclpy.lifecycle import TransitionCallbackReturn

    h = Harness(rclpy_context, override, with_sim=False)
    try:
        assert h.node.trigger_configure() == TransitionCallbackReturn.FAILURE
    finally:
        h.close()


def test_average_and_trim_are_validated_by_the_spec() -> None:
    """The spec gives the reason for a bad average or trim, and None for good ones."""
    from humanoid_balance.params.identification_executor import SPEC

    assert SPEC.validate("average", 0) == "average=0: must be >= 1"
    assert SPEC.validate("trim", -1.0) == "trim=-1.0: must be >= 0 s"
    assert (SPEC.validate("average", 10), SPEC.validate("trim", 0.5)) == (None, None)


@pytest.mark.parametrize(("name", "value", "reason"), [
    ("torque_constants", [float("nan")] * 6, "torque_constants value nan: must be finite"),
    ("static_configuration", [0.0, float("inf"), 0.0, 0.0, 0.0, 0.0],
     "static_configuration value inf: must be finite"),
    ("joint_state_timeout", 60.0, "joint_state_timeout=60.0: must be <= 5 s"),
    ("acceleration_limit", 1.0, "acceleration_limit=1.0: must be >= 10 deg/s^2"),
    ("rate", 1e6, "rate=1000000.0: must be <= 1000 Hz"),
    ("speed", 5.0, "speed=5.0: must be <= 3 deg/s"),
])
def test_non_finite_and_out_of_range_values_are_refused(name: str, value: object,
                                                        reason: str) -> None:
    """The spec refuses NaN torque constants (issue 12), infinite angles and out-of-range values."""
    from humanoid_balance.params.identification_executor import SPEC

    assert SPEC.validate(name, value) == reason


def test_one_value_per_arm_joint() -> None:
    """torque_constants with fewer values than arm joints: refused naming the count."""
    from humanoid_balance.params.identification_executor import SPEC

    assert SPEC.validate_all({**SPEC.defaults(), "torque_constants": [1.0] * 3}) == (
        "torque_constants has 3 values: expected 6, one per arm joint "
        "(['joint1', 'joint2', 'joint3', 'joint4', 'joint5', 'joint6'])")


def test_double_arrays_as_rclpy_gives_them_are_accepted() -> None:
    """A double array parameter arrives as array.array('d'): valid values are accepted."""
    import array

    from humanoid_balance.params.identification_executor import SPEC

    assert SPEC.validate("torque_constants", array.array("d", [0.5] * 6)) is None


def test_output_path_under_a_file_is_named(tmp_path: Path) -> None:
    """output_problem() names an output_path whose folder is a file, and what to do."""
    from humanoid_balance.nodes.identification_executor import output_problem

    blocker = tmp_path / "file"
    blocker.write_text("x")
    problem = output_problem(str(blocker / "results.yaml"))
    assert problem is not None and problem.startswith(f"output_path {blocker / 'results.yaml'}: "
                                                      "cannot create") and problem.endswith(
        "choose a writable output_path")


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


def test_start_refused_without_joint_states(fast_harness: Harness) -> None:
    """No /joint_states at all: start is refused."""
    assert fast_harness.adapter is not None
    fast_harness.adapter.close()
    fast_harness.adapter = None
    fast_harness.activate()
    result = fast_harness.call(fast_harness.start_client)
    assert (result.success, result.message) == (
        False, "refused to start: no /joint_states with the arm joints received")


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
                               "0.120 s in the future"),
              throttle.warning("joint_states", "/joint_states rejected (2 so far): stamped "
                               "0.130 s in the future"),
              throttle.warning("joint_states", "/joint_states rejected (3 so far): names "
                               "['joint1'] of the arm without ['joint2']"),
              throttle.warning("start", "/joint_states rejected (3 so far): names "
                               "['joint1'] of the arm without ['joint2']")]
    time.sleep(0.06)
    logged.append(throttle.warning("joint_states", "/joint_states rejected (9 so far): stamped "
                                   "0.200 s in the future"))
    assert logged == [True, False, True, True, True]
    assert logger.warnings[-1] == "/joint_states rejected (9 so far): stamped 0.200 s in the future"


def test_a_start_refusal_right_after_another_warning_is_logged(rclpy_context: Any) -> None:
    """A rejected joint state warns; a start refused within the same second is logged too
    (issue 35: one 1 s throttle for every warning dropped it; the answer carried the reason)."""
    from sensor_msgs.msg import JointState

    h = Harness(rclpy_context, FAST, with_sim=False)
    try:
        h.activate()
        logger = Recorder()
        h.node._warn.logger = logger
        pub = h.probe.create_publisher(JointState, "/joint_states", 10)
        msg = JointState()
        msg.name = [f"joint{i}" for i in range(1, 6)]  # joint6 missing: rejected
        msg.position = list(np.radians(STATIC_DEG[:5]))
        assert h.spin(2.0, lambda: pub.get_subscription_count() > 0)
        pub.publish(msg)
        assert h.spin(2.0, lambda: len(logger.warnings) == 1), logger.warnings
        result = h.call(h.start_client)
        assert not result.success and result.message.startswith("refused to start: ")
        assert logger.warnings == [
            "/joint_states rejected (1 so far): names ['joint1', 'joint2', 'joint3', 'joint4', "
            "'joint5'] of the arm without ['joint6']", result.message]
    finally:
        h.close()


def test_failed_estimation_names_late_joint_states_too(rclpy_context: Any) -> None:
    """A run whose joint states came late and broke its sweeps: the error says both."""
    from rclpy.lifecycle import TransitionCallbackReturn

    from humanoid_balance.nodes.identification_executor import IdentificationExecutor, Sample

    node = IdentificationExecutor(context=rclpy_context)
    try:
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        q = np.radians(STATIC_DEG)
        # a still arm (no sweep at all), every sample received 0.2 s after its stamp
        node._stream = [Sample(0.01 * k, 0.01 * k + 0.2, q, np.zeros(6), np.zeros(6))
                        for k in range(100)]
        node._command_times = [0.01 * k for k in range(100)]
        node._finish()
        assert node.state == "failed"
        assert node.message.startswith("estimation failed: "), node.message
        assert "/joint_states came late: 100.0 % arrived more than 50 ms after their stamp" \
            in node.message, node.message
    finally:
        node.destroy_node()


def test_optimised_configuration_keeps_clearance(rclpy_context: Any) -> None:
    """optimize_configuration: every sweep's start configuration keeps the 1 cm clearance."""
    from rclpy.lifecycle import TransitionCallbackReturn

    h = Harness(rclpy_context, {"optimize_configuration": True}, with_sim=False)
    try:
        assert h.node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        distances = [h.node.clearance.min_distance(s.start_configuration())[0] for s in h.node.plan]
        assert min(distances) >= 0.01
    finally:
        h.close()


def test_a_sweep_through_a_collision_is_refused_at_configure(rclpy_context: Any) -> None:
    """Every sweep of static [-44, 97, 66, 93, -1, 65] deg starts more than 2 cm clear (all
    that was checked before), but joint4's, from 63 deg to its 120 deg limit, ends with link3
    1.7 mm into link5: configure fails, naming the sweep, the pair and where."""
    from rclpy.parameter import Parameter

    from humanoid_balance.exceptions import ConfigurationError
    from humanoid_balance.nodes.identification_executor import IdentificationExecutor

    node = IdentificationExecutor(context=rclpy_context, parameter_overrides=[Parameter(
        "static_configuration", value=[-44.0, 97.0, 66.0, 93.0, -1.0, 65.0])])
    try:
        with pytest.raises(ConfigurationError, match=(
                r"joint4's sweep passes -1\.7 mm between link3_0 / link5_0 at \[-44\.0, 97\.0, "
                r"66\.0, 120\.0, -1\.0, 65\.0\] deg, less than "
                r"clearance 10\.0 mm: choose another static_configuration or a smaller "
                r"sweep_half_range")):
            node._configure_model()
    finally:
        node.destroy_node()


def test_start_refused_when_the_move_to_the_first_sweep_passes_a_collision(
        fast_harness: Harness) -> None:
    """The arm at [-24, 0, 104, 82, -56, 14] deg (31 mm clear) would pass link5 through the
    base on the straight move to the first sweep's start (joint6's: the sweeps run from the
    last joint back): start is refused, saying so, and no run starts."""
    assert fast_harness.sim is not None
    fast_harness.sim.reset(dict(zip(fast_harness.sim.joint_names,
                                    np.radians([-24.0, 0.0, 104.0, 82.0, -56.0, 14.0]),
                                    strict=True)))
    fast_harness.activate()
    fast_harness.spin(0.5)
    result = fast_harness.call(fast_harness.start_client)
    assert not result.success
    assert result.message.startswith(
        "refused to start: the move from here to joint6's sweep passes "), result.message
    assert "between base_link_0 / link5_0" in result.message, result.message
    assert fast_harness.node.state != "running"


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
