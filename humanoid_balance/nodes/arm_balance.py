"""``arm_balance``: the arm-balance loop (:mod:`humanoid_balance.core.arm_loop`) as a lifecycle node.

Thin: parameters to an :class:`~humanoid_balance.params.arm_balance.ArmBalanceConfig`, messages
to an :class:`~humanoid_balance.core.arm_loop.ArmLoopRunner` (the loop on the node clock: the
``trigger`` of the cycles, lock-step repeats and hold steps, stamps refused), what it returns
to messages. ``configure`` builds the ``mode``'s controller; ``activate`` starts the cycles;
``deactivate``/``shutdown`` and destroying the active node (SIGINT, SIGTERM) stop the arms
within their acceleration limits. Inputs are taken newest first (a queue depth of 1).
``/arm_balance/enable`` answers in every state (unconfigured: false, with what to do).
``/diagnostics`` runs on the steady clock while active.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PointStamped, PoseStamped, TwistStamped, WrenchStamped
from rclpy.lifecycle import LifecycleState, TransitionCallbackReturn
from rclpy.lifecycle import Node as LifecycleNode
from rclpy.qos import QoSProfile
from rclpy.timer import Timer
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64
from std_srvs.srv import SetBool

from humanoid_balance import cdr
from humanoid_balance.core import arm_loop as core
from humanoid_balance.exceptions import HumanoidBalanceError, InvalidInputError
from humanoid_balance.nodes import common
from humanoid_balance.nodes.command_output import CommandOutput
from humanoid_balance.params.arm_balance import SPEC, ArmBalanceConfig, build_controller, config_from_values
from humanoid_balance.params.ros import NodeParameters

NODE_NAME = "arm_balance"
#: s destroy_node waits at most for every subscriber to acknowledge the braking ramp's commands
FLUSH_TIMEOUT_S = 0.3


class ArmBalanceNode(LifecycleNode):
    """The ``arm_balance`` lifecycle node; see the module docstring."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self.runner: core.ArmLoopRunner | None = None
        self.loop: core.ArmLoop | None = None
        self.config: ArmBalanceConfig | None = None
        self.params = NodeParameters(self, SPEC, configured=lambda: self.loop is not None,
                                     extra_check=self._extra_check,
                                     read_only_reason=common.READ_AT_CONFIGURE)
        self._loop_timers: list[Timer | None] = []
        self._logs: dict[str, common.LogThrottle] = {}  # one per problem key: none is hidden
        #: raw messages neither humanoid_balance.cdr nor rclpy reads, per topic (/diagnostics)
        self.unreadable: dict[str, int] = {}
        # in every state (not lifecycle-managed): unconfigured, it answers at once with why
        self.srv_enable = self.create_service(SetBool, "/arm_balance/enable", self._on_enable)

    def _extra_check(self, name: str, value: Any, merged: Mapping[str, Any]) -> str | None:
        if name in ("selection", "secondary") and self.loop and not self.loop.controller.has_selection:
            return (f"{name} does not apply in {merged['mode']} mode: a floating robot "
                    "conserves its whole momentum")
        return None

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Read the parameters, load the model, build the controller, the loop and the topics."""
        try:
            c = config_from_values(self.params.read())
            model, controller = build_controller(c)
            # 0.2 s of commands kept for reliable readers behind: at depth 10 a recorder at load
            # 13 lost 856 of 11446 (tools/chaos.py, the bag against what the monitor got)
            self.commands = CommandOutput(self, c, "/arm_balance/command", controller.names,
                                          c.period_s, QoSProfile(depth=100))
        except HumanoidBalanceError as exc:
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        self.config = c
        # the executor thread runs the control cycle (every callback of this node runs in it)
        common.set_thread_priority(self, c.executor_priority, "the control cycle's thread")
        names = list(model.joint_names)
        measured = core.MeasuredState(names, model.q_index(names), model.neutral(),
                                      model.position_limits(names))
        self.loop = core.ArmLoop(controller, measured, c.loop_config())
        self.runner = core.ArmLoopRunner(
            self.loop, measured, lock_step=c.lock_step,
            shared_clock=not c.lock_step or bool(self.get_parameter("use_sim_time").value),
            start_ns=self._now_ns(), linger_s=2.0 / c.diagnostics_rate_hz, warn=self._warn,
            before_cycle=self._apply_pending)
        self._reader = cdr.JointStateReader()
        self._job_reader = cdr.JointStateReader()  # one per topic: it caches their names
        qos = QoSProfile(depth=10)
        self.pub_momentum = self.create_lifecycle_publisher(WrenchStamped, "/arm_balance/momentum",
                                                            qos)
        self.pub_zmp = self.create_lifecycle_publisher(PointStamped, "/arm_balance/model_zmp", qos)
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", qos)
        #: the momentum and the model ZMP are written only while heard (the commands always)
        self.listeners = common.Listeners((self.pub_momentum, self.pub_zmp))
        # only the newest input counts (a cycle late behind a queue of older samples would
        # answer each, late; the margin, unstamped, is timed on arrival: an old one passed for
        # fresh); the 1 kHz and 500 Hz ones are read from their CDR bytes (raw)
        latest = QoSProfile(depth=1)
        self._subs = [self.create_subscription(JointState, "/joint_states",
                                               self._on_joint_states, latest, raw=True),
                      self.create_subscription(TwistStamped, "/arm_balance/job_twist",
                                               self._on_twist, latest),
                      self.create_subscription(JointState, "/arm_balance/job_joint_velocities",
                                               self._on_job_joints, latest, raw=True),
                      self.create_subscription(Float64, "/zmp/stability_margin", self._on_margin,
                                               latest, raw=True)]
        if controller.needs_base_pose:
            self._subs.append(self.create_subscription(PoseStamped, c.base_pose_topic,
                                                       self._on_base_pose, latest))
        self._momentum_writer = cdr.wrench_stamped_writer(controller.momentum_frame)
        self._zmp_writer = cdr.PointStampedWriter("W")
        self.get_logger().info(
            f"configured: job arm {c.job_arm}, S = {list(c.selection)} about "
            f"{c.reference_point}, {c.rate_hz:g} Hz ({c.trigger}), mode {c.mode}")
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Start the cycles; commands start once fresh joint states arrive."""
        assert self.runner is not None and self.config is not None
        self.runner.activate()  # the first command from joint states measured from now on
        if not self.config.lock_step:
            # a lambda: rclpy (Kilted) hands a TimerInfo to callbacks that take an argument
            self._loop_timers.append(self.create_timer(self.config.period_s, lambda: self._tick()))
        # the steady clock: at its rate on simulation time too (see steady_timer)
        self._loop_timers.append(common.steady_timer(
            self, 1.0 / self.config.diagnostics_rate_hz, self._publish_diagnostics))
        self.get_logger().info("active")
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Bring the arms to a stop at their acceleration limits, then stop the cycles."""
        self._stop("deactivated")
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Drop the loop and topics (the service stays)."""
        common.destroy_timers(self, *self._loop_timers)
        self._loop_timers = []
        for sub in self._subs:
            self.destroy_subscription(sub)
        for pub in (self.commands.publisher, self.pub_momentum, self.pub_zmp, self.pub_diag):
            self.destroy_publisher(pub)
        self.loop = self.runner = None
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop the arms if commanding, then the cycles."""
        self._stop("shutdown")
        return TransitionCallbackReturn.SUCCESS

    def destroy_node(self) -> None:
        """Stop the arms with the braking ramp before the node goes (SIGINT, SIGTERM: rclpy's
        LifecycleNode runs no ``on_shutdown`` on destroy, which would leave a moving command)."""
        try:
            if self.runner is not None and self.runner.active:
                self._stop("shutdown")
                self.commands.flush(FLUSH_TIMEOUT_S)
        finally:
            super().destroy_node()

    def _stop(self, reason: str) -> None:
        """The loop's deceleration to standstill, one hold per period (at most v_max / a_min)."""
        common.destroy_timers(self, *self._loop_timers)
        self._loop_timers = []
        if self.runner is None:
            return
        for k, hold in enumerate(self.runner.stop(reason)):
            if k:
                time.sleep(self.runner.loop.config.period_s)
            self._publish_hold(hold, self.runner.stamp_ns(hold, self._now_ns()))

    def _now_ns(self) -> int:
        return common.clock_ns(self.get_clock())

    def _read(self, topic: str, key: str, read: Callable[[Any], Any], msg: Any) -> Any:
        """``read(msg)``, or None for bytes neither humanoid_balance.cdr nor rclpy reads: counted,
        warned of under ``key`` (joint states: an input problem the diagnostics carry)."""
        try:
            return read(msg)
        except InvalidInputError as error:
            self.unreadable[topic] = self.unreadable.get(topic, 0) + 1
            if key == "joint_states_input" and self.runner is not None:
                self.runner.report(key, f"{topic} unreadable: {error}")
            else:
                self._warn(key, f"{topic} unreadable: {error}: ignored")
            return None

    def _on_joint_states(self, msg: bytes | JointState) -> None:
        sample = self._read("/joint_states", "joint_states_input",
                            lambda m: common.read_joint_state(self._reader, m), msg)
        if sample is not None and self.runner is not None:
            self._send(self.runner.joint_states(self._now_ns(), *sample))

    def _on_twist(self, msg: TwistStamped) -> None:
        v, w = msg.twist.linear, msg.twist.angular
        if self.runner is not None:
            self.runner.job_twist(self._now_ns(), (v.x, v.y, v.z, w.x, w.y, w.z), msg.header.frame_id)

    def _on_job_joints(self, msg: bytes | JointState) -> None:
        sample = self._read("/arm_balance/job_joint_velocities", "job_input",
                            lambda m: common.joint_state_sample(self._job_reader, m), msg)
        if sample is not None and self.runner is not None:
            self.runner.job_joint_velocities(self._now_ns(), sample.names, sample.velocity)

    def _on_margin(self, msg: bytes | Float64) -> None:
        margin = self._read("/zmp/stability_margin", "margin_input", common.read_float64, msg)
        if margin is not None and self.runner is not None:
            self.runner.measured_margin(self._now_ns(), margin)

    def _on_base_pose(self, msg: PoseStamped) -> None:
        p, o = msg.pose.position, msg.pose.orientation
        if self.runner is not None:
            self.runner.base_pose(self._now_ns(), np.array([p.x, p.y, p.z, o.x, o.y, o.z, o.w]))

    def _warn(self, key: str, text: str) -> None:  # at most once a second per key
        throttle = self._logs.get(key)
        if throttle is None:  # made once per key, not on every call (1 kHz callers warn here)
            throttle = self._logs[key] = common.LogThrottle(self.get_logger(), 1.0)
        throttle.warning(text)

    def _on_enable(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        state = common.lifecycle_state(self)
        if self.loop is None or state == "finalized":  # shut down from inactive or active
            response.success = False
            response.message = common.lifecycle_refusal(
                NODE_NAME, state if state == "finalized" else "unconfigured")
            return response
        self.loop.set_enabled(request.data)
        response.success = True
        response.message = "job arm enabled" if request.data else \
            "job arm disabled: it stops and holds, balance continues"
        self.get_logger().info(response.message)
        return response

    def _apply_pending(self, now_s: float) -> None:
        """Parameter changes between cycles (the runner calls it before each)."""
        assert self.loop is not None
        changes = self.params.take_pending()
        if not changes:
            return
        self.config = c = config_from_values(self.params.values)
        if "job_arm" in changes:
            self.loop.set_job_arm(c.job_arm, now_s)
        if "selection" in changes or "secondary" in changes:
            self.loop.set_selection(c.selection, c.secondary)
        self.loop.set_config(c.loop_config())
        self.get_logger().info(f"set {changes}")

    def _tick(self) -> None:  # (the timer exists only while configured)
        self._send(self.runner.tick(self._now_ns()) if self.runner is not None else None)

    def _send(self, out: core.Publish | None) -> None:
        """Publish what the runner returned: a command, a hold, or the last command again."""
        if out is None:
            return
        result, stamp = out.result, out.stamp_ns
        if result is None:
            self.commands.repeat(stamp)  # a lock-step simulation gets its answer
        elif isinstance(result, core.Hold):
            self._publish_hold(result, stamp)
        else:
            self.commands.publish(stamp, result.names, result.position, result.velocity)
            heard = self.listeners.heard()
            if self.pub_momentum in heard:
                self.pub_momentum.publish(self._momentum_writer.write(stamp,
                                                                      result.momentum.tolist()))
            if result.model_zmp is not None and self.pub_zmp in heard:
                self.pub_zmp.publish(self._zmp_writer.write(stamp, float(result.model_zmp[0]),
                                                            float(result.model_zmp[1]), 0.0))

    def _publish_hold(self, hold: core.Hold, stamp_ns: int) -> None:
        self.commands.publish(stamp_ns, hold.names, hold.position, hold.velocity)
        self._warn("hold", f"holding the arms: {hold.reason}")

    def _publish_diagnostics(self) -> None:
        if self.runner is None or self.config is None:
            return
        status, c = self.runner.status(), self.config
        status.values.update(job_arm=c.job_arm, selection=",".join(c.selection),
                             secondary=",".join(c.secondary) or "none",
                             reference_point=c.reference_point, mode=c.mode,
                             unheard_topics=self.listeners.unheard(),
                             unreadable_messages=sum(self.unreadable.values()),
                             unreadable_topics=",".join(sorted(self.unreadable)) or "none")
        self.pub_diag.publish(common.diagnostic_array(self, [common.diagnostic_status(
            f"{NODE_NAME}: control", status.level, status.message, status.values)]))


def main(args: Sequence[str] | None = None) -> int:
    """Console script ``arm_balance``."""
    return common.run_node(ArmBalanceNode, args, events=True, stop_signals=True, exit_process=True)


if __name__ == "__main__":
    raise SystemExit(main())
