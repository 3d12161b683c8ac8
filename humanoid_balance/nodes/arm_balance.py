"""``arm_balance``: the arm-balance loop (:mod:`humanoid_balance.core.arm_loop`) as a lifecycle node.

Thin: messages in, :meth:`ArmLoop.cycle <humanoid_balance.core.arm_loop.ArmLoop.cycle>`,
messages out. Parameters: :data:`humanoid_balance.params.arm_balance.SPEC`; dynamic ones
are applied between cycles. ``configure`` builds the ``mode``'s controller; ``activate``
starts the cycles (``trigger: timer``: every 1 / ``rate``; ``joint_states``, the
simulation's lock-step: one per joint state stamped at least 0.9 / ``rate`` after the
last, outputs stamped with it, the same stamp again answered with the last command while the
joint states are fresh; unstamped joint states are refused there (but a simulation's t = 0 on
its own clock, ``use_sim_time``), and once the stamps stop
advancing for ``joint_state_timeout`` (by arrival, node clock) the arms hold, one hold step per
period of arrivals, stamped with the last period); joint states stamped beyond
``joint_state_timeout`` from the node clock are refused (lock-step: with ``use_sim_time``).
``deactivate``/``shutdown``, and destroying the active node (SIGINT, SIGTERM: ``run_node``
destroys it without a shutdown transition), stop the arms within their acceleration limits.
Joint states and job inputs are taken newest first (a queue depth of 1: a late node answers
the newest state, not each older one in turn); a gap between triggering stamps is integrated
whole (:meth:`humanoid_balance.core.arm_loop.ArmLoop._steps`). ``/arm_balance/enable`` exists
from the start (services are not lifecycle-managed): unconfigured (or finalized) it answers
false with the state and what to do. ``/diagnostics`` runs on the steady clock while active
(:func:`~humanoid_balance.nodes.common.steady_timer`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
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
from humanoid_balance.nodes.command_output import CommandOutput
from humanoid_balance.nodes.common import (
    READ_AT_CONFIGURE,
    Listeners,
    LogThrottle,
    clock_ns,
    destroy_timers,
    diagnostic_array,
    diagnostic_status,
    joint_state_sample,
    lifecycle_refusal,
    lifecycle_state,
    read_float64,
    read_joint_state,
    run_node,
    set_thread_priority,
    steady_timer,
)
from humanoid_balance.params.arm_balance import SPEC, rows_of
from humanoid_balance.params.ros import NodeParameters

NODE_NAME = "arm_balance"
#: s destroy_node waits at most for every subscriber to acknowledge the braking ramp's commands
FLUSH_TIMEOUT_S = 0.3


class ArmBalanceNode(LifecycleNode):
    """The ``arm_balance`` lifecycle node; see the module docstring."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self.loop: core.ArmLoop | None = None
        self.values: dict[str, Any] = {}
        self.params = NodeParameters(self, SPEC, configured=lambda: self.loop is not None,
                                     extra_check=self._extra_check,
                                     read_only_reason=READ_AT_CONFIGURE)
        self._loop_timers: list[Timer | None] = []
        self._logs: dict[str, LogThrottle] = {}  # one per problem key: a cause is never hidden
        #: raw messages neither humanoid_balance.cdr nor rclpy reads, per topic (/diagnostics)
        self.unreadable: dict[str, int] = {}
        self._active = False
        self._hold_step_ns: int | None = None  # node clock [ns] of the last untriggered hold step
        # from the start, in every state (services are not lifecycle-managed): unconfigured,
        # a request is answered at once with why, not left waiting for the service
        self.srv_enable = self.create_service(SetBool, "/arm_balance/enable", self._on_enable)

    def _extra_check(self, name: str, value: Any, merged: Mapping[str, Any]) -> str | None:
        if name in ("selection", "secondary") and self.loop and not self.loop.controller.has_selection:
            return (f"{name} does not apply in {self.values['mode']} mode: a floating robot "
                    "conserves its whole momentum")
        return None

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Read the parameters, load the model, build the controller, the loop and the topics."""
        try:
            v = self.params.read()
            model, controller = core.controller_from_parameters(v)
            config = core.loop_config(v)
            self.commands = CommandOutput(self, v, "/arm_balance/command", controller.names,
                                          1.0 / v["rate"], QoSProfile(depth=10))
        except HumanoidBalanceError as exc:
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        self.values = v
        # the executor thread runs the control cycle (every callback of this node runs in it)
        set_thread_priority(self, int(v["executor_priority"]), "the control cycle's thread")
        self._epochs = {False: self._now_ns()}  # clock, stamps (the first): float seconds from
        self._shared_clock = v["trigger"] == "timer" or bool(self.get_parameter("use_sim_time").value)
        names = list(model.joint_names)
        self.measured = core.MeasuredState(names, model.q_index(names), model.neutral(),
                                           model.position_limits(names))
        self.loop = core.ArmLoop(controller, self.measured, config)
        self._job: core.JobInput | None = None
        self._margin: core.MeasuredMargin | None = None
        self._reader = cdr.JointStateReader()
        self._job_reader = cdr.JointStateReader()  # one per topic: it caches their names
        self._last_trigger_ns: int | None = None
        self._periods: list[float] = []
        self._last_wall = 0.0
        qos = QoSProfile(depth=10)
        self.pub_momentum = self.create_lifecycle_publisher(WrenchStamped, "/arm_balance/momentum",
                                                            qos)
        self.pub_zmp = self.create_lifecycle_publisher(PointStamped, "/arm_balance/model_zmp", qos)
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", qos)
        #: the momentum and the model ZMP are written only while heard (the commands always)
        self.listeners = Listeners((self.pub_momentum, self.pub_zmp))
        # the state, the job input, the margin and the base pose: only the newest counts (a
        # cycle late behind a queue of older samples would answer each of them, late, and fall
        # further behind; the classic executor takes one per wait, the oldest queued first, and
        # the margin, unstamped, is timed on arrival: an old one then passed for fresh)
        latest = QoSProfile(depth=1)
        self._subs = [
            self.create_subscription(JointState, "/joint_states", self._on_joint_states, latest,
                                     raw=True),  # 1 kHz: read from its CDR bytes
            self.create_subscription(TwistStamped, "/arm_balance/job_twist", self._on_twist,
                                     latest),
            # the job's joint velocities (500 Hz in the demo) and the measured margin (1 kHz):
            # read from their CDR bytes too (a JointState object costs 13 us to build)
            self.create_subscription(JointState, "/arm_balance/job_joint_velocities",
                                     self._on_job_joints, latest, raw=True),
            self.create_subscription(Float64, "/zmp/stability_margin", self._on_margin, latest,
                                     raw=True)]
        if controller.needs_base_pose:
            self._subs.append(self.create_subscription(PoseStamped, v["base_pose_topic"],
                                                       self._on_base_pose, latest))
        self._momentum_writer = cdr.wrench_stamped_writer(controller.momentum_frame)
        self._zmp_writer = cdr.PointStampedWriter("W")
        self.get_logger().info(
            f"configured: job arm {v['job_arm']}, S = {list(v['selection'])} about "
            f"{v['reference_point']}, {v['rate']:g} Hz ({v['trigger']}), mode {v['mode']}")
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Start the cycles; commands start once fresh joint states arrive."""
        assert self.loop is not None
        self.loop.restart()  # the first command from joint states measured from now on
        self._job = None  # a job input from before the deactivation is not for this activation
        self._active = True
        self._last_trigger_ns = None
        self._hold_step_ns = None
        if self.values["trigger"] == "timer":
            # a lambda: rclpy (Kilted) hands a TimerInfo to callbacks that take an argument
            self._loop_timers.append(self.create_timer(1.0 / self.values["rate"],
                                                       lambda: self._cycle()))
        # the steady clock: at its rate on simulation time too (see steady_timer)
        self._loop_timers.append(steady_timer(self, 1.0 / self.values["diagnostics_rate"],
                                              self._publish_diagnostics))
        self.get_logger().info("active")
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Bring the arms to a stop at their acceleration limits, then stop the cycles."""
        self._stop("deactivated")
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Drop the loop and topics (the service stays)."""
        destroy_timers(self, *self._loop_timers)
        self._loop_timers = []
        for sub in self._subs:
            self.destroy_subscription(sub)
        for pub in (self.commands.publisher, self.pub_momentum, self.pub_zmp, self.pub_diag):
            self.destroy_publisher(pub)
        self.loop = None
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop the arms if commanding, then the cycles."""
        self._stop("shutdown")
        return TransitionCallbackReturn.SUCCESS

    def destroy_node(self) -> None:
        """Stop the arms with the braking ramp before the node goes (SIGINT, SIGTERM).

        ``run_node`` destroys the node without a lifecycle shutdown transition (rclpy's
        LifecycleNode does not run ``on_shutdown`` on destroy): an active node would leave
        its consumers on a moving command.
        """
        try:
            if self._active and self.loop is not None:
                self._stop("shutdown")
                self.commands.flush(FLUSH_TIMEOUT_S)
        finally:
            super().destroy_node()

    def _stop(self, reason: str) -> None:
        """The loop's deceleration to standstill, one hold per period (at most v_max / a_min)."""
        destroy_timers(self, *self._loop_timers)
        self._loop_timers, self._active = [], False
        if self.loop is None:
            return
        holds = self.loop.stop(reason)
        for k, hold in enumerate(holds):
            if k:
                time.sleep(self.loop.config.period_s)
            self._publish_hold(hold, self._stamp(hold, self._now_ns()))

    def _now_ns(self) -> int:
        return clock_ns(self.get_clock())

    def _s(self, ns: int, stamp: bool = False) -> float:  # them keep ns (since 1970: 0.2 us)
        return (ns - self._epochs.setdefault(stamp, ns)) * 1e-9

    def _stamp(self, out: core.Command | core.Hold, default_ns: int) -> int:  # its time [ns]
        epoch = self._epochs.get(self.values["trigger"] == "joint_states", 0)
        return default_ns if np.isnan(out.time_s) else epoch + round(out.time_s * 1e9)

    def _on_joint_states(self, msg: bytes | JointState) -> None:
        if self.loop is None:
            return
        try:
            stamp, names, position = read_joint_state(self._reader, msg)
        except InvalidInputError as error:  # bytes neither cdr nor rclpy reads
            self._unreadable("/joint_states")
            self._report("joint_states_input", f"/joint_states unreadable: {error}")
            return
        now = self._now_ns()
        clock = now if self._shared_clock else None  # stamps and the node clock comparable
        lock_step = self.values["trigger"] == "joint_states"
        refused = self._report("joint_states_input", core.stamp_problem(
            stamp, clock, self.loop.config, lock_step) or self.measured.update_joints(
            names, position, self._s(now), stamp))
        if not (self._active and lock_step):
            return
        last = self._last_trigger_ns
        if not refused and stamp != last and core.triggers(stamp, last, clock, self.loop.config):
            self._last_trigger_ns = stamp
            self._cycle(now, stamp)
        elif last is not None:
            self._untriggered(now, last, same=not refused and stamp == last)

    def _untriggered(self, now_ns: int, last_ns: int, same: bool) -> None:
        """A joint state that starts no lock-step cycle (the last stamp again, refused, reordered).

        While the joint states are fresh, the same stamp again is the same period asked again
        (a lock-step simulation): the last command is repeated. Once they are stale (stamps
        that stopped advancing do not refresh the measurement), the arms hold: a hold step,
        stamped with the last period, at most one per nominal period of arrivals (node clock),
        so that the ramp keeps to the acceleration limits in time; the last hold repeated in
        between.
        """
        assert self.loop is not None
        problem = self.loop.state_problem(self._s(now_ns), self.measured)
        if problem is None:
            if same:
                self.commands.repeat(last_ns)  # the same period again: the same answer
            return
        if same:
            self._report("joint_states_input", (
                f"joint states keep stamp {last_ns * 1e-9:.6f} s beyond joint_state_timeout="
                f"{self.loop.config.joint_state_timeout_s} s (their stamps stopped advancing): "
                "stale, holding"))
        step = self._hold_step_ns
        if step is None or now_ns - step >= 0.9e9 * self.loop.config.period_s or now_ns < step:
            self._hold_step_ns = now_ns
            self._cycle(now_ns, last_ns)
        elif same:
            self.commands.repeat(last_ns)

    def _on_twist(self, msg: TwistStamped) -> None:
        t = msg.twist
        self._job = core.JobInput(self._s(self._now_ns()), twist=np.array(
            [t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z]),
            frame=msg.header.frame_id)

    def _on_job_joints(self, msg: bytes | JointState) -> None:
        try:
            sample = joint_state_sample(self._job_reader, msg)
        except InvalidInputError as error:
            self._unreadable("/arm_balance/job_joint_velocities")
            self._warn("job_input", f"/arm_balance/job_joint_velocities unreadable: {error}: ignored")
            return
        self._job = core.JobInput(self._s(self._now_ns()), joint_names=sample.names,
                                  joint_velocities=np.array(sample.velocity, dtype=float))

    def _on_margin(self, msg: bytes | Float64) -> None:
        try:
            margin = read_float64(msg)
        except InvalidInputError as error:
            self._unreadable("/zmp/stability_margin")
            self._warn("margin_input", f"/zmp/stability_margin unreadable: {error}: ignored")
            return
        self._margin = core.MeasuredMargin(margin, self._s(self._now_ns()))

    def _unreadable(self, topic: str) -> None:
        self.unreadable[topic] = self.unreadable.get(topic, 0) + 1

    def _on_base_pose(self, msg: PoseStamped) -> None:
        if self.loop is None:
            return
        p, o = msg.pose.position, msg.pose.orientation
        self._report("base_pose", self.measured.update_base_pose(
            np.array([p.x, p.y, p.z, o.x, o.y, o.z, o.w]), self._s(self._now_ns())))

    def _report(self, key: str, problem: str | None) -> bool:
        """Keep (and log) or clear an input's problem (until its next good message); whether any."""
        assert self.loop is not None  # cleared two diagnostics periods after the last, so seen
        self.loop.report_input(key, problem, time.monotonic(), 2.0 / self.values["diagnostics_rate"])
        if problem is not None:
            self._warn(key, problem)
        return problem is not None

    def _warn(self, key: str, text: str) -> None:  # at most once a second per key
        throttle = self._logs.get(key)
        if throttle is None:  # made once per key, not on every call (1 kHz callers warn here)
            throttle = self._logs[key] = LogThrottle(self.get_logger(), 1.0)
        throttle.warning(text)

    def _on_enable(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        state = lifecycle_state(self)
        if self.loop is None or state == "finalized":  # shut down from inactive or active
            response.success = False
            response.message = lifecycle_refusal(
                NODE_NAME, state if state == "finalized" else "unconfigured")
            return response
        self.loop.set_enabled(request.data)
        response.success = True
        response.message = "job arm enabled" if request.data else \
            "job arm disabled: it stops and holds, balance continues"
        self.get_logger().info(response.message)
        return response

    def _apply_pending(self, now_s: float) -> None:
        assert self.loop is not None
        changes = self.params.take_pending()
        if not changes:
            return
        v = self.values
        v.update(changes)
        if "job_arm" in changes:
            self.loop.set_job_arm(v["job_arm"], now_s)
        if "selection" in changes or "secondary" in changes:
            self.loop.set_selection(v["selection"], rows_of(v["secondary"]))
        self.loop.set_config(core.loop_config(v))
        self.get_logger().info(f"set {changes}")

    def _cycle(self, now_ns: int | None = None, stamp_ns: int | None = None) -> None:
        """One cycle at node-clock ``now_ns``; outputs stamped ``stamp_ns`` (default now)."""
        if self.loop is None or not self._active:  # a timer event queued before a stop
            return
        wall = time.perf_counter()
        if self._last_wall:
            self._periods.append(wall - self._last_wall)
        self._last_wall = wall
        now = self._now_ns() if now_ns is None else now_ns
        self._apply_pending(self._s(now))
        result = self.loop.cycle(self._s(now), self.measured, self._job, self._margin,
                                 stamp_s=None if stamp_ns is None else self._s(stamp_ns, True))
        stamp = stamp_ns if stamp_ns is not None else now if result is None else \
            self._stamp(result, now)
        if isinstance(result, core.Command):
            self.commands.publish(stamp, result.names, result.position, result.velocity)
            heard = self.listeners.heard()
            if self.pub_momentum in heard:
                self.pub_momentum.publish(self._momentum_writer.write(stamp,
                                                                      result.momentum.tolist()))
            if result.model_zmp is not None and self.pub_zmp in heard:
                self.pub_zmp.publish(self._zmp_writer.write(stamp, float(result.model_zmp[0]),
                                                            float(result.model_zmp[1]), 0.0))
        elif isinstance(result, core.Hold) and result.fresh:
            self._publish_hold(result, stamp)
        elif stamp_ns is not None:
            self.commands.repeat(stamp_ns)  # a lock-step simulation gets its answer

    def _publish_hold(self, hold: core.Hold, stamp_ns: int) -> None:
        self.commands.publish(stamp_ns, hold.names, hold.position, hold.velocity)
        self._warn("hold", f"holding the arms: {hold.reason}")

    def _publish_diagnostics(self) -> None:
        if self.loop is None:
            return
        status = self.loop.status()
        for key, text in self.loop.problems.items():
            self._warn(key, text)
        v = self.values
        status.values.update(job_arm=v["job_arm"], selection=",".join(v["selection"]),
                             secondary=",".join(rows_of(v["secondary"])) or "none",
                             reference_point=v["reference_point"], mode=v["mode"],
                             caught_up_gaps=self.loop.caught_up_gaps,
                             unheard_topics=self.listeners.unheard(),
                             unreadable_messages=sum(self.unreadable.values()),
                             unreadable_topics=",".join(sorted(self.unreadable)) or "none")
        if self._periods:
            periods = np.array(self._periods)
            status.values.update(period_ms_mean=1e3 * float(periods.mean()),
                                 period_ms_max=1e3 * float(periods.max()),
                                 overruns=int(np.sum(periods > 1.5 / v["rate"])))
            self._periods.clear()
        self.pub_diag.publish(diagnostic_array(self, [diagnostic_status(
            f"{NODE_NAME}: control", status.level, status.message, status.values)]))


def main(args: Sequence[str] | None = None) -> int:
    """Console script ``arm_balance``."""
    return run_node(ArmBalanceNode, args, events=True, stop_signals=True, exit_process=True)


if __name__ == "__main__":
    raise SystemExit(main())
