"""The arm_balance lifecycle node in-process on loopback DDS: lifecycle, bad input, runtime changes."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.ros

ARM_POSE = {  # bent elbows: away from the straight-arm singularity
    "right_shoulder_pitch": -0.3, "right_elbow": 0.8, "left_shoulder_pitch": -0.3,
    "left_elbow": 0.8,
}


class Harness:
    """The node under test plus a probe node publishing inputs and recording outputs."""

    def __init__(self, context: Any, overrides: dict[str, Any] | None = None) -> None:
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from geometry_msgs.msg import TwistStamped
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.parameter import Parameter
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64

        from humanoid_balance.core.model import RobotModel
        from humanoid_balance.nodes.arm_balance import ArmBalanceNode
        from humanoid_balance.resources import urdf_path

        self.model = RobotModel(urdf_path("humanoid"), world_frame="W")
        params = [Parameter(k, value=v) for k, v in (overrides or {}).items()]
        self.node = ArmBalanceNode(context=context, parameter_overrides=params)
        self.probe = rclpy.create_node("arm_balance_probe", context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.executor.add_node(self.probe)
        self.commands: list[Any] = []
        self.diagnostics: list[Any] = []
        self.probe.create_subscription(JointState, "/arm_balance/command", self.commands.append, 50)
        self.probe.create_subscription(DiagnosticArray, "/diagnostics", self.diagnostics.append, 50)
        self.pub_joints = self.probe.create_publisher(JointState, "/joint_states", 10)
        self.pub_twist = self.probe.create_publisher(TwistStamped, "/arm_balance/job_twist", 10)
        self.pub_margin = self.probe.create_publisher(Float64, "/zmp/stability_margin", 10)
        self.joint_names = list(self.model.joint_names)
        self.positions = np.array([ARM_POSE.get(n, 0.0) for n in self.joint_names])
        self.publish_joints = True
        self.drop_joint: str | None = None
        self.twist: tuple[str, list[float]] | None = None
        self.margin: float | None = None

    def spin(self, seconds: float, until: Callable[[], bool] | None = None) -> bool:
        """Spin both nodes, publishing the inputs every 2 ms; stop early when ``until()``."""
        from geometry_msgs.msg import TwistStamped
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64

        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.publish_joints:
                msg = JointState()
                msg.header.stamp = self.probe.get_clock().now().to_msg()
                keep = [i for i, n in enumerate(self.joint_names) if n != self.drop_joint]
                msg.name = [self.joint_names[i] for i in keep]
                msg.position = [float(self.positions[i]) for i in keep]
                self.pub_joints.publish(msg)
            if self.twist is not None:
                t = TwistStamped()
                t.header.frame_id = self.twist[0]
                (t.twist.linear.x, t.twist.linear.y, t.twist.linear.z, t.twist.angular.x,
                 t.twist.angular.y, t.twist.angular.z) = self.twist[1]
                self.pub_twist.publish(t)
            if self.margin is not None:
                self.pub_margin.publish(Float64(data=self.margin))
            self.executor.spin_once(timeout_sec=0.002)
            if until is not None and until():
                return True
        return until() if until is not None else True

    def activate(self) -> None:
        from rclpy.lifecycle import TransitionCallbackReturn

        assert self.node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert self.node.trigger_activate() == TransitionCallbackReturn.SUCCESS

    def last_diagnostic(self) -> Any:
        return self.diagnostics[-1].status[0]

    def diagnostics_mention(self, text: str) -> bool:
        return any(text in s.message for d in self.diagnostics for s in d.status)

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        self.probe.destroy_node()


@pytest.fixture
def harness(rclpy_context: Any) -> Iterator[Harness]:
    """A configured-and-ready harness (the node is unconfigured)."""
    h = Harness(rclpy_context)
    try:
        yield h
    finally:
        h.close()


def test_configure_refuses_an_unknown_job_arm(rclpy_context: Any) -> None:
    """configure fails on job_arm='middle' (validated parameter)."""
    from rclpy.lifecycle import TransitionCallbackReturn

    h = Harness(rclpy_context, {"job_arm": "middle"})
    try:
        assert h.node.trigger_configure() == TransitionCallbackReturn.FAILURE
    finally:
        h.close()


def _floating_harness(context: Any, overrides: dict[str, Any] | None = None) -> Harness:
    from humanoid_balance.resources import urdf_path

    return Harness(context, {"mode": "free_floating", "urdf_path": str(urdf_path("humanoid")),
                             "free_floating_rows": ["vx", "vy", "vz", "wx", "wy", "wz"],
                             "base_pose_topic": "/sim/base_pose", **(overrides or {})})


def _publish_base_pose(h: Harness, seconds: float, until: Callable[[], bool] | None = None) -> bool:
    """Spin the harness while also publishing a base pose at the origin."""
    from geometry_msgs.msg import PoseStamped

    pub = h.probe.create_publisher(PoseStamped, "/sim/base_pose", 10)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pose = PoseStamped()
        pose.header.frame_id = "world"
        pose.pose.orientation.w = 1.0
        pub.publish(pose)
        if h.spin(0.01, until):
            return True
    return until() if until is not None else True


def test_free_floating_mode_moves_the_job_hand_and_holds_the_other(rclpy_context: Any) -> None:
    """mode=free_floating: the commands make the job hand follow the twist, the other hand stay still."""
    from humanoid_balance.core.model import RobotModel
    from humanoid_balance.resources import urdf_path

    h = _floating_harness(rclpy_context)
    try:
        h.activate()
        twist = [0.03, 0.0, 0.02, 0.0, 0.0, 0.0]
        h.twist = ("world", twist)
        assert _publish_base_pose(h, 30.0, lambda: len(h.commands) > 200)  # an event: 200 commands
        model = RobotModel(urdf_path("humanoid"), floating_base=True)
        last = h.commands[-1]
        q = model.neutral()
        q[model.q_index(list(last.name))] = list(last.position)
        from humanoid_balance.core.gjm import generalized_jacobian

        gjm = generalized_jacobian(model, q, ("right_hand", "left_hand"), joints=list(last.name))
        hands = gjm.matrix @ np.asarray(last.velocity)
        np.testing.assert_allclose(hands[:6], twist, atol=2e-3)  # q moved by one cycle since
        np.testing.assert_allclose(hands[6:], 0.0, atol=2e-3)
    finally:
        h.close()


def test_free_floating_mode_holds_without_a_base_pose(rclpy_context: Any) -> None:
    """mode=free_floating and no base pose: no motion command, diagnostics name the base pose topic."""
    h = _floating_harness(rclpy_context)
    try:
        h.activate()
        h.twist = ("world", [0.03, 0.0, 0.0, 0.0, 0.0, 0.0])
        h.spin(1.0, lambda: h.diagnostics_mention("/sim/base_pose"))
        assert h.diagnostics_mention("no base pose on /sim/base_pose")
        assert all(np.allclose(c.velocity, 0.0) for c in h.commands)
    finally:
        h.close()


def test_free_floating_dynamic_singularity_holds_and_reports(rclpy_context: Any) -> None:
    """Straight arms (J* singular): the node holds and reports the singularity, never divides."""
    h = _floating_harness(rclpy_context)
    h.positions[:] = 0.0  # every joint at zero: both arms straight
    try:
        h.activate()
        h.twist = ("world", [0.03, 0.0, 0.0, 0.0, 0.0, 0.0])
        _publish_base_pose(h, 2.0, lambda: h.diagnostics_mention("singular"))
        assert h.diagnostics_mention("singular")
        assert all(np.all(np.isfinite(c.velocity)) and np.allclose(c.velocity, 0.0) for c in h.commands)
    finally:
        h.close()


def test_selection_does_not_apply_in_free_floating_mode(rclpy_context: Any) -> None:
    """Setting selection on a free-floating node is refused with the reason."""
    from rclpy.parameter import Parameter

    h = _floating_harness(rclpy_context)
    try:
        h.activate()
        result = h.node.set_parameters([Parameter("selection", value=["Lx"])])[0]
        assert not result.successful and "free_floating" in result.reason
    finally:
        h.close()


def test_destroying_a_configured_inactive_node_commands_nothing(rclpy_context: Any) -> None:
    """destroy_node (SIGINT, SIGTERM) of a configured node that never became active sends no
    command (an active one sends the braking ramp: test/process/test_arm_balance_signal.py)."""
    from rclpy.lifecycle import TransitionCallbackReturn

    h = Harness(rclpy_context)
    try:
        assert h.node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert h.spin(5.0, lambda: h.probe.count_publishers("/arm_balance/command") > 0)
        h.node.destroy_node()
        h.publish_joints = False
        h.executor.remove_node(h.node)
        h.spin(0.3)
        assert h.commands == []
    finally:
        h.executor.shutdown()
        h.probe.destroy_node()


def test_no_command_before_activation(harness: Harness) -> None:
    """A configured but inactive node publishes no command."""
    from rclpy.lifecycle import TransitionCallbackReturn

    assert harness.node.trigger_configure() == TransitionCallbackReturn.SUCCESS
    harness.twist = ("W", [0.1, 0.0, 0.0, 0.0, 0.0, 0.0])
    harness.spin(0.3)
    assert harness.commands == []


def test_active_node_follows_the_twist_for_both_arms(harness: Harness) -> None:
    """Once active, commands name both arms (job first) and the job arm moves with the twist."""
    harness.activate()
    harness.twist = ("W", [0.1, 0.0, 0.0, 0.0, 0.0, 0.0])
    assert harness.spin(2.0, lambda: len(harness.commands) > 50)
    last = harness.commands[-1]
    assert list(last.name)[:7] == [f"right_{j}" for j in (
        "shoulder_pitch", "shoulder_roll", "shoulder_yaw", "elbow", "wrist_yaw", "wrist_roll",
        "wrist_pitch")]
    assert np.linalg.norm(np.asarray(last.velocity)[:7]) > 0.05


def test_deactivate_publishes_a_zero_velocity_hold(harness: Harness) -> None:
    """deactivate sends one command with zero velocities for both arms, then nothing more."""
    harness.activate()
    harness.twist = ("W", [0.1, 0.0, 0.0, 0.0, 0.0, 0.0])
    harness.spin(2.0, lambda: len(harness.commands) > 20)
    harness.node.trigger_deactivate()
    harness.spin(0.2)
    count = len(harness.commands)
    assert np.all(np.asarray(harness.commands[-1].velocity) == 0.0)
    harness.spin(0.3)
    assert len(harness.commands) == count


def test_nan_twist_stops_the_job_arm(harness: Harness) -> None:
    """A twist with a NaN is ignored: the job arm decelerates to zero and diagnostics say why."""
    harness.activate()
    harness.twist = ("W", [0.1, 0.0, 0.0, 0.0, 0.0, 0.0])
    harness.spin(2.0, lambda: len(harness.commands) > 20)
    harness.twist = ("W", [math.nan, 0.0, 0.0, 0.0, 0.0, 0.0])
    harness.spin(1.0)
    assert np.all(np.isfinite(np.asarray(harness.commands[-1].position)))
    assert np.allclose(np.asarray(harness.commands[-1].velocity)[:7], 0.0, atol=1e-9)
    assert harness.diagnostics_mention("non-finite")


def test_twist_in_unknown_frame_is_ignored(harness: Harness) -> None:
    """A twist in frame 'base_link' moves nothing and diagnostics name the expected frame."""
    harness.activate()
    harness.twist = ("base_link", [0.1, 0.0, 0.0, 0.0, 0.0, 0.0])
    text = "job twist in frame 'base_link', expected 'W'"
    assert harness.spin(2.0, lambda: len(harness.commands) > 20 and harness.diagnostics_mention(text))
    # the job arm (the first 7 names) stays still; the aux arm may hold its ready posture
    assert np.allclose(np.asarray(harness.commands[-1].velocity)[:7], 0.0, atol=1e-12)


def test_joint_states_missing_an_arm_joint_give_no_command(harness: Harness) -> None:
    """Without right_elbow in /joint_states nothing is commanded and diagnostics say which joint."""
    harness.drop_joint = "right_elbow"
    harness.activate()
    harness.twist = ("W", [0.1, 0.0, 0.0, 0.0, 0.0, 0.0])
    harness.spin(0.6)
    assert harness.commands == []
    assert harness.diagnostics_mention("joint states lack arm joints ['right_elbow']")


def test_stale_joint_states_hold_the_arms(harness: Harness) -> None:
    """When /joint_states stops, one zero-velocity hold is sent, then no command; diagnostics say why."""
    harness.activate()
    harness.twist = ("W", [0.1, 0.0, 0.0, 0.0, 0.0, 0.0])
    harness.spin(2.0, lambda: len(harness.commands) > 20)
    harness.publish_joints = False
    harness.spin(0.3)
    count = len(harness.commands)
    assert np.all(np.asarray(harness.commands[-1].velocity) == 0.0)
    harness.spin(0.3)
    assert len(harness.commands) == count
    assert harness.diagnostics_mention("older than joint_state_timeout")


def test_job_arm_changes_at_run_time(harness: Harness) -> None:
    """Setting job_arm=left at run time succeeds and the next commands list the left arm first."""
    from rclpy.parameter import Parameter

    harness.activate()
    harness.spin(2.0, lambda: len(harness.commands) > 5)
    result = harness.node.set_parameters([Parameter("job_arm", value="left")])[0]
    assert result.successful
    harness.commands.clear()
    harness.spin(2.0, lambda: len(harness.commands) > 5)
    assert harness.commands[-1].name[0] == "left_shoulder_pitch"


def test_bad_selection_is_rejected_with_a_reason(harness: Harness) -> None:
    """selection=['Lq'] is refused at run time with a reason naming the allowed rows."""
    from rclpy.parameter import Parameter

    harness.activate()
    result = harness.node.set_parameters([Parameter("selection", value=["Lq"])])[0]
    assert not result.successful
    assert result.reason == "selection value 'Lq': expected one of ['Px', 'Py', 'Pz', 'Lx', 'Ly', 'Lz']"


def test_low_measured_margin_holds_the_job_arm(harness: Harness) -> None:
    """A measured stability margin under guard_hold_margin stops the job arm; diagnostics say so."""
    harness.activate()
    harness.twist = ("W", [0.1, 0.0, 0.0, 0.0, 0.0, 0.0])
    harness.spin(2.0, lambda: len(harness.commands) > 20)
    harness.margin = 0.0
    harness.spin(1.0)
    assert np.allclose(np.asarray(harness.commands[-1].velocity)[:7], 0.0, atol=1e-9)
    assert harness.diagnostics_mention("holding the job arm")


def test_package_config_file_configures_the_node(rclpy_context: Any, repo_root: Any) -> None:
    """config/arm_balance.yaml holds only declared, valid parameters: configure succeeds with it."""
    import yaml
    from rclpy.lifecycle import TransitionCallbackReturn

    params = yaml.safe_load((repo_root / "config" / "arm_balance.yaml").read_text())
    h = Harness(rclpy_context, params["/**/arm_balance"]["ros__parameters"])
    try:
        assert h.node.trigger_configure() == TransitionCallbackReturn.SUCCESS
    finally:
        h.close()


def test_loop_timing_goes_to_diagnostics(harness: Harness) -> None:
    """Diagnostics carry the loop period, overrun count and step time while commanding."""
    harness.activate()
    keys_needed = {"period_ms_mean", "period_ms_max", "overruns", "step_us_median"}

    def has_timing() -> bool:
        return any(keys_needed <= {kv.key for kv in s.values}
                   for d in harness.diagnostics for s in d.status)

    assert harness.spin(3.0, has_timing)


def test_selection_changes_at_run_time_between_cycles(harness: Harness) -> None:
    """selection=['Lx','Ly','Lz'] at run time succeeds and shows in the diagnostics."""
    from rclpy.parameter import Parameter

    harness.activate()
    harness.spin(2.0, lambda: len(harness.commands) > 5)
    result = harness.node.set_parameters([Parameter("selection", value=["Lx", "Ly", "Lz"])])[0]
    assert result.successful

    def shows_new_selection() -> bool:
        return any(kv.key == "selection" and kv.value == "Lx,Ly,Lz"
                   for d in harness.diagnostics for s in d.status for kv in s.values)

    assert harness.spin(3.0, shows_new_selection)


def test_secondary_overlapping_selection_is_rejected(harness: Harness) -> None:
    """secondary='Lx' while Lx is held is refused with the overlapping row named."""
    from rclpy.parameter import Parameter

    harness.activate()
    result = harness.node.set_parameters([Parameter("secondary", value="Lx")])[0]
    assert not result.successful
    assert result.reason == "rows ['Lx'] would be both in selection and secondary"


def test_job_joint_velocities_naming_other_joints_are_ignored(harness: Harness) -> None:
    """Job joint velocities for the left arm while the right arm is the job arm move nothing."""
    from sensor_msgs.msg import JointState

    pub = harness.probe.create_publisher(JointState, "/arm_balance/job_joint_velocities", 10)
    harness.activate()
    msg = JointState()
    msg.name = [f"left_{j}" for j in ("shoulder_pitch", "shoulder_roll", "shoulder_yaw", "elbow",
                                      "wrist_yaw", "wrist_roll", "wrist_pitch")]
    msg.velocity = [0.2] * 7
    text = "job joint velocities must name exactly"

    def done() -> bool:
        pub.publish(msg)
        return len(harness.commands) > 20 and harness.diagnostics_mention(text)

    assert harness.spin(3.0, done)
    assert np.allclose(np.asarray(harness.commands[-1].velocity)[:7], 0.0, atol=1e-12)  # job arm


def test_free_floating_rows_are_validated(rclpy_context: Any) -> None:
    """free_floating_rows naming a row that is not a velocity row: configure fails."""
    from rclpy.lifecycle import TransitionCallbackReturn

    h = _floating_harness(rclpy_context, {"free_floating_rows": ["vx", "Lz"]})
    try:
        assert h.node.trigger_configure() == TransitionCallbackReturn.FAILURE
    finally:
        h.close()


def test_repeated_free_floating_rows_are_invalid() -> None:
    """The spec refuses free_floating_rows with a repeated row, an unknown row or none, with the reason."""
    from humanoid_balance.params.arm_balance import SPEC

    assert SPEC.validate("free_floating_rows", ["vx", "vx"]) == \
        "free_floating_rows=['vx', 'vx']: a row is repeated"
    assert SPEC.validate("free_floating_rows", ["vx", "Lz"]) is not None
    assert SPEC.validate("free_floating_rows", []) is not None
    assert SPEC.validate("free_floating_rows", ["wz", "vx"]) is None


def test_repeated_free_floating_rows_fail_configure(rclpy_context: Any) -> None:
    """free_floating_rows [vx, vx]: configure fails (it used to pass and then fail every cycle)."""
    from rclpy.lifecycle import TransitionCallbackReturn

    h = _floating_harness(rclpy_context, {"free_floating_rows": ["vx", "vx"]})
    try:
        assert h.node.trigger_configure() == TransitionCallbackReturn.FAILURE
    finally:
        h.close()


def _momentum_frames(h: Harness, spin: Callable[[Callable[[], bool]], bool]) -> list[str]:
    from geometry_msgs.msg import WrenchStamped

    frames: list[str] = []
    h.probe.create_subscription(WrenchStamped, "/arm_balance/momentum",
                                lambda m: frames.append(m.header.frame_id), 50)
    h.activate()
    spin(lambda: len(frames) > 5)
    return frames


def test_momentum_frame_is_world_in_free_floating_mode(rclpy_context: Any) -> None:
    """mode=free_floating: /arm_balance/momentum (about the CoM, world axes) has frame_id world."""
    h = _floating_harness(rclpy_context)
    try:
        frames = _momentum_frames(h, lambda until: _publish_base_pose(h, 3.0, until))
        assert len(frames) > 5 and set(frames) == {"world"}
    finally:
        h.close()


def test_momentum_frame_is_the_reference_point_on_the_ground(harness: Harness) -> None:
    """mode=ground: /arm_balance/momentum has frame_id the reference point, W by default."""
    frames = _momentum_frames(harness, lambda until: harness.spin(3.0, until))
    assert len(frames) > 5 and set(frames) == {"W"}


def _publish_stamped_joints(h: Harness, stamp_ns: int, positions: Any = None) -> None:
    from builtin_interfaces.msg import Time
    from sensor_msgs.msg import JointState

    positions = h.positions if positions is None else positions
    msg = JointState(name=h.joint_names, position=[float(v) for v in positions])
    msg.header.stamp = Time(sec=stamp_ns // 1_000_000_000, nanosec=stamp_ns % 1_000_000_000)
    h.pub_joints.publish(msg)


def _stamp_ns(msg: Any) -> int:
    return int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec)


def _triggered_harness(rclpy_context: Any, **overrides: object) -> Iterator[Harness]:
    """An active arm_balance with trigger joint_states at 500 Hz (and ``overrides``); the test
    publishes the joint states."""
    h = Harness(rclpy_context, {"trigger": "joint_states", "rate": 500.0, **overrides})
    h.publish_joints = False
    try:
        h.activate()
        assert h.spin(5.0, lambda: h.pub_joints.get_subscription_count() > 0
                      and h.probe.count_publishers("/arm_balance/command") > 0)
        yield h
    finally:
        h.close()


@pytest.fixture
def triggered(rclpy_context: Any) -> Iterator[Harness]:
    """An active arm_balance with trigger joint_states at 500 Hz; the test publishes the joint states."""
    yield from _triggered_harness(rclpy_context)


def test_triggered_cycles_carry_the_joint_state_stamp(triggered: Harness) -> None:
    """trigger joint_states: each command carries the stamp of the joint state that triggered it."""
    h = triggered
    stamps = [7_000_000_000 + k * 2_000_000 for k in range(5)]
    for count, stamp in enumerate(stamps, start=1):
        _publish_stamped_joints(h, stamp)
        assert h.spin(2.0, lambda n=count: len(h.commands) >= n)
    assert [_stamp_ns(c) for c in h.commands] == stamps


def test_triggered_cycles_keep_to_the_rate_by_the_stamps(triggered: Harness) -> None:
    """Joint states 1 ms apart at rate 500 Hz: every second one triggers a cycle."""
    h = triggered
    for k in range(6):
        _publish_stamped_joints(h, 3_000_000_000 + k * 1_000_000)
        h.spin(0.05)
    h.spin(0.2)
    assert [_stamp_ns(c) for c in h.commands] == [3_000_000_000 + k * 2_000_000 for k in range(3)]


@pytest.fixture
def sim_time_triggered(rclpy_context: Any) -> Iterator[Harness]:
    """``triggered`` on sim time before time runs (no /clock: the node clock reads 0), as
    mujoco_sim's lock-step graph at t = 0."""
    yield from _triggered_harness(rclpy_context, use_sim_time=True)


def test_a_repeated_stamp_is_answered_with_the_same_command(sim_time_triggered: Harness) -> None:
    """The same stamp again (a lock-step simulation waiting at t = 0) gets the last command again."""
    h = sim_time_triggered
    _publish_stamped_joints(h, 0)
    assert h.spin(2.0, lambda: len(h.commands) == 1)
    _publish_stamped_joints(h, 0)
    assert h.spin(2.0, lambda: len(h.commands) == 2)
    first, again = h.commands
    assert _stamp_ns(again) == 0
    assert list(again.position) == list(first.position)


def test_an_inactive_node_runs_no_triggered_cycle(rclpy_context: Any) -> None:
    """Configured, not active, trigger joint_states: no cycle; once activated the same state is answered."""
    from rclpy.lifecycle import TransitionCallbackReturn

    h = Harness(rclpy_context, {"trigger": "joint_states", "use_sim_time": True})  # at t = 0
    h.publish_joints = False
    try:
        assert h.node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert h.spin(5.0, lambda: h.pub_joints.get_subscription_count() > 0)
        _publish_stamped_joints(h, 0)
        h.spin(0.3)
        assert h.node.loop.cycles == 0 and not h.commands
        assert h.node.trigger_activate() == TransitionCallbackReturn.SUCCESS
        _publish_stamped_joints(h, 0)  # the same t = 0 state, now answered
        assert h.spin(2.0, lambda: len(h.commands) == 1)
    finally:
        h.close()


class _Recorder:
    """Stands for a lifecycle publisher: keeps what is published."""

    is_activated = True

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def publish(self, msg: Any) -> None:
        self.sent.append(msg)

    def get_subscription_count(self) -> int:
        return 1  # the recorder listens


def _old_outputs(out: Any, stamp_ns: int, momentum_frame: str) -> tuple[Any, Any, Any]:
    """The command, momentum and model ZMP messages as arm_balance built them before it wrote CDR."""
    from builtin_interfaces.msg import Time
    from geometry_msgs.msg import PointStamped, WrenchStamped
    from sensor_msgs.msg import JointState

    stamp = Time(sec=stamp_ns // 1_000_000_000, nanosec=stamp_ns % 1_000_000_000)
    cmd = JointState()
    cmd.header.stamp = stamp
    cmd.name = list(out.names)
    cmd.position = [float(v) for v in out.position]
    cmd.velocity = [float(v) for v in out.velocity]
    m = WrenchStamped()
    m.header.stamp, m.header.frame_id = stamp, momentum_frame
    h = out.momentum
    m.wrench.force.x, m.wrench.force.y, m.wrench.force.z = float(h[0]), float(h[1]), float(h[2])
    m.wrench.torque.x, m.wrench.torque.y, m.wrench.torque.z = float(h[3]), float(h[4]), float(h[5])
    z = None
    if np.all(np.isfinite(out.indicators.model_zmp)):
        z = PointStamped()
        z.header.stamp, z.header.frame_id = stamp, "W"
        z.point.x, z.point.y = float(out.indicators.model_zmp[0]), float(out.indicators.model_zmp[1])
    return cmd, m, z


def _fields(msg: Any) -> Any:
    """A message as nested plain values (its __slots__), floats by bit pattern."""
    if hasattr(msg, "get_fields_and_field_types"):
        return {k: _fields(getattr(msg, k)) for k in msg.get_fields_and_field_types()}
    if isinstance(msg, float):
        return np.float64(msg).tobytes()
    if isinstance(msg, (list, tuple)) or hasattr(msg, "tolist"):
        return [_fields(v) for v in (msg.tolist() if hasattr(msg, "tolist") else msg)]
    return msg


def test_cdr_outputs_equal_the_messages_the_old_code_built(triggered: Harness) -> None:
    """Command, momentum and model ZMP bytes read back as the messages built field by field before."""
    from geometry_msgs.msg import PointStamped, WrenchStamped
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import JointState

    from humanoid_balance.nodes.common import Listeners

    h = triggered
    node = h.node
    pubs = {"pub_command": _Recorder(), "pub_momentum": _Recorder(), "pub_zmp": _Recorder()}
    node.pub_momentum, node.pub_zmp = pubs["pub_momentum"], pubs["pub_zmp"]
    node.listeners = Listeners((node.pub_momentum, node.pub_zmp))
    node.commands.publisher = pubs["pub_command"]

    h.twist = ("W", [0.05, -0.02, 0.03, 0.0, 0.1, -0.05])  # published on every spin
    assert h.spin(5.0, lambda: node.runner.job is not None)
    expected = []
    for k in range(6):
        stamp = 5_000_000_000 + k * 2_000_000
        _publish_stamped_joints(h, stamp, h.positions + 0.001 * k)
        assert h.spin(5.0, lambda k=k: node.loop.cycles == k + 1)
        expected.append(_old_outputs(node.loop.last_output, stamp, "W"))
    got = zip(pubs["pub_command"].sent, pubs["pub_momentum"].sent, pubs["pub_zmp"].sent, strict=True)
    assert len(pubs["pub_command"].sent) == len(expected) == len(pubs["pub_zmp"].sent)
    for (cmd, momentum, zmp), (old_cmd, old_momentum, old_zmp) in zip(got, expected, strict=True):
        assert _fields(deserialize_message(cmd, JointState)) == _fields(old_cmd)
        assert _fields(deserialize_message(momentum, WrenchStamped)) == _fields(old_momentum)
        assert _fields(deserialize_message(zmp, PointStamped)) == _fields(old_zmp)
    assert any(v != 0.0 for c in pubs["pub_command"].sent
               for v in deserialize_message(c, JointState).velocity)  # the arms moved



def test_the_margin_taken_after_a_busy_spell_is_the_newest(harness: Harness) -> None:
    """Ten margins (0.10 .. 0.01 m, falling) arrive while the executor is busy: the one the
    balance guard takes first is the newest (0.01 m). Unstamped, a margin is timed on arrival:
    with a queue the classic executor took the oldest first (0.10 m, the robot falling away
    from it) and the guard judged it fresh."""
    from rclpy.lifecycle import TransitionCallbackReturn
    from std_msgs.msg import Float64

    h = harness
    assert h.node.trigger_configure() == TransitionCallbackReturn.SUCCESS
    h.publish_joints = False
    assert h.spin(3.0, lambda: h.pub_margin.get_subscription_count() > 0)
    for k in range(10):
        h.pub_margin.publish(Float64(data=0.10 - 0.01 * k))
    time.sleep(1.0)  # delivered meanwhile (loopback: well under 1 ms each), not taken: nothing spins
    assert h.spin(2.0, lambda: h.node.runner.margin is not None)
    assert h.node.runner.margin is not None
    assert h.node.runner.margin.value_m == pytest.approx(0.01, abs=1e-12)


def test_unreadable_raw_inputs_are_counted_and_the_node_goes_on(harness: Harness) -> None:
    """Raw joint states, job joint velocities and margins that neither humanoid_balance.cdr nor
    rclpy reads are counted per topic on /diagnostics (joint states as an input problem); the
    node keeps commanding from the good ones (such bytes used to end it: rclpy's error escaped
    the callback)."""
    from sensor_msgs.msg import JointState

    h = harness
    h.activate()
    assert h.spin(3.0, lambda: len(h.commands) > 5)
    raw = [h.pub_joints, h.probe.create_publisher(JointState, "/arm_balance/job_joint_velocities",
                                                  10), h.pub_margin]
    topics = ["/joint_states", "/arm_balance/job_joint_velocities", "/zmp/stability_margin"]
    assert h.spin(5.0, lambda: all(p.get_subscription_count() > 0 for p in raw))
    # a padding byte announced in a bare header; a body cut short (8 bytes: DDS pads a payload
    # to whole 4 bytes, and 11 became a readable Float64)
    bad = [b"\x00\x01\x00\x01", b"\x00\x01\x00\x00" + bytes(4)]
    h.publish_joints = False  # (a good joint state after a bad one would take its place: depth 1)
    for k, data in enumerate(bad, start=1):
        for publisher, topic in zip(raw, topics, strict=True):
            publisher.publish(data)  # the serialized bytes as they are
            assert h.spin(3.0, lambda t=topic, k=k: h.node.unreadable.get(t) == k), topic
    assert h.node.unreadable == {"/joint_states": 2, "/arm_balance/job_joint_velocities": 2,
                                 "/zmp/stability_margin": 2}
    h.publish_joints = True
    commands = len(h.commands)
    assert h.spin(3.0, lambda: len(h.commands) > commands + 5)

    def counted() -> bool:
        return any({kv.key: kv.value for kv in s.values}.get("unreadable_messages") == "6"
                   for d in h.diagnostics for s in d.status)

    assert h.spin(3.0, counted)
