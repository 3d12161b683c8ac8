"""``identification_executor``: runs the seed-004 identification on the arm (lifecycle node).

Thin: parameters -> :class:`~humanoid_balance.params.identification_executor.IdentificationExecutorConfig`;
``/joint_states``, ``/identification/start`` and ``/identification/cancel`` (Trigger, from the
node's start: refused at once with the state and what to do) and the command timer -> the
ROS-free :class:`~humanoid_balance.core.identification.run.IdentificationRun` (its docstring:
the run, stops, refusals, clock rules) -> ``/identification/command``,
``/identification/parameters`` (transient local), ``/diagnostics``. Parameters: the plan's are
refused while configured, ``rate`` and ``diagnostics_rate`` while active, every one (and
``use_sim_time``) during a run; the dynamic ones apply between runs.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import SetParametersResult
from rclpy.lifecycle import LifecycleState, TransitionCallbackReturn
from rclpy.lifecycle import Node as LifecycleNode
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, MultiArrayLayout
from std_srvs.srv import Trigger

from humanoid_balance.core.identification.run import Command, IdentificationRun, RunState, output_problem
from humanoid_balance.exceptions import HumanoidBalanceError
from humanoid_balance.nodes import common
from humanoid_balance.nodes.command_output import CommandOutput
from humanoid_balance.params.identification_executor import SPEC, config_from_values
from humanoid_balance.params.ros import NodeParameters

NODE_NAME = "identification_executor"
#: s the node waits at exit for its readers to acknowledge the braking ramp's last commands
FLUSH_TIMEOUT_S = 0.3
#: the dynamic parameters used at activate: refused while active (applied at the next activate)
ACTIVATE_PARAMETERS = ("rate", "diagnostics_rate")
#: a text's figures (counts, ages, angles): two texts that differ only in them name one cause
_FIGURES = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_Callback = TypeVar("_Callback", bound=Callable[..., Any])


class CauseThrottle:
    """Warnings to ``logger`` rate-limited per cause: one cause at most every ``period_s`` [s].

    A cause is a channel (``joint_states``, ``start``, ...) and the text with its figures
    masked: a stream of bad samples logs once a period, a start refusal right after a
    rejection is another cause and is logged at once. Costs a clock read and a substitution.
    """

    #: causes kept; beyond it, those not logged within the period are forgotten
    MAX_CAUSES = 64

    def __init__(self, logger: Any, period_s: float = 1.0) -> None:
        self.logger = logger
        self.period_s = period_s
        self._last: dict[tuple[str, str], float] = {}  # cause -> monotonic time last logged

    def warning(self, channel: str, text: str) -> bool:
        """Log ``text`` unless its cause was logged within the period; True when logged."""
        cause = (channel, _FIGURES.sub("#", text))
        now = time.monotonic()
        last = self._last.get(cause)
        if last is not None and now - last < self.period_s:
            return False
        if len(self._last) >= self.MAX_CAUSES:
            self._last = {k: t for k, t in self._last.items() if now - t < self.period_s}
        self._last[cause] = now
        self.logger.warning(text)
        return True


def _guarded(method: _Callback) -> _Callback:
    """A callback that reports an unexpected error (stop, diagnostics) instead of ending the node."""

    @functools.wraps(method)
    def guarded(self: IdentificationExecutor, *args: Any) -> Any:
        try:
            return method(self, *args)
        except Exception as exc:  # a motor-commanding node must not die in a callback
            message = f"internal error in {method.__name__}: {type(exc).__name__}: {exc}"
            self.get_logger().error(message)
            if self.run is not None:  # a run stops
                self.run.internal_error(message)
            if len(args) == 2 and hasattr(args[1], "message"):  # a service: answer it
                args[1].success, args[1].message = False, message
                return args[1]
            return None
    return guarded  # type: ignore[return-value]


class IdentificationExecutor(LifecycleNode):
    """Lifecycle node running the identification trajectory and estimating gravity parameters."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self.run: IdentificationRun | None = None  # configured: the run, its arm and config
        self.params = NodeParameters(self, SPEC, configured=lambda: self.run is not None,
                                     extra_check=self._refusal,
                                     read_only_reason=common.READ_AT_CONFIGURE)
        self._active = False
        self._timer: Any = None
        self._diag_timer: Any = None
        self._warn = CauseThrottle(self.get_logger())
        # use_sim_time, rclpy's, refused during a run (the clock would jump, by years at times)
        self.add_on_set_parameters_callback(self._on_set_clock)
        # from the start, in every state: a refusal is answered at once, not left waiting
        self.srv_start = self.create_service(Trigger, "/identification/start", self._on_start)
        self.srv_cancel = self.create_service(Trigger, "/identification/cancel", self._on_cancel)

    def _refusal(self, name: str, value: Any, values: Any) -> str | None:
        """Why a change the spec accepts is refused in the node's state now (None: accepted)."""
        if self.run is not None and self.run.in_run:
            return "parameters cannot change during a run: cancel first"
        if name in ACTIVATE_PARAMETERS and self._active:
            return f"{name} is used at activation: deactivate, set it, then activate again"
        return output_problem(str(value)) if name == "output_path" else None

    def _on_set_clock(self, params: Sequence[Parameter]) -> SetParametersResult:
        """Refuse a change of ``use_sim_time`` (the node's clock) during a run."""
        if self.run is not None and self.run.in_run and "use_sim_time" in [p.name for p in params]:
            return SetParametersResult(successful=False, reason="use_sim_time cannot change during "
                                       "a run (it moves the node's clock): cancel first")
        return SetParametersResult(successful=True)

    def _configured_run(self) -> IdentificationRun | None:
        """The run, with the changes accepted since the last call applied (between runs)."""
        run = self.run
        if run is not None and not run.in_run and self.params.take_pending():
            run.set_config(config_from_values(self.params.values))
        return run

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Build the arm and its plan, create the topics."""
        try:
            config = config_from_values(self.params.read())
            run = IdentificationRun.configured(config, logger=self.get_logger())
            # a plain publisher: the hold after a cancel or a deactivate goes out too
            self.commands = CommandOutput(self, config.command_values(), "/identification/command",
                                          run.arm.joints, config.period_s, QoSProfile(depth=10),
                                          lifecycle=False)
        except (HumanoidBalanceError, ValueError, RuntimeError, OSError) as exc:
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.pub_params = self.create_publisher(Float64MultiArray, "/identification/parameters", latched)
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", QoSProfile(depth=10))
        self.sub = self.create_subscription(JointState, "/joint_states", self._on_joint_states,
                                            QoSProfile(depth=100))
        self.run = run
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Start the command and diagnostics timers."""
        self._destroy_timers()  # a stop's ramp may still run from the last deactivation
        run = self._configured_run()
        assert run is not None
        run.activate(self._send)
        self.commands.period_s = run.config.period_s
        self._timer = self.create_timer(run.config.period_s, self._on_timer)
        # the steady clock: at its rate on simulation time too (see common.steady_timer)
        self._diag_timer = common.steady_timer(self, 1.0 / run.config.diagnostics_rate_hz,
                                               self._publish_diagnostics)
        self._active = True
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop a run (the braking ramp goes on until the arm is at rest), then the timers."""
        self._active = False
        if self.run is not None and self.run.deactivate():
            self._destroy_timers()
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Finish a stop, drop the topics (the services stay)."""
        self._close("")
        self.destroy_subscription(self.sub)
        for pub in (self.commands.publisher, self.pub_params, self.pub_diag):
            self.destroy_publisher(pub)
        self.run = None
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop a run and finish its braking ramp."""
        self._close("shutdown during the run")
        self.run = None
        return TransitionCallbackReturn.SUCCESS

    def destroy_node(self) -> None:
        """Stop a run with its braking ramp before the node goes (SIGINT, SIGTERM)."""
        try:
            if self._close("node stopped during the run"):
                self.commands.flush(FLUSH_TIMEOUT_S)
        finally:
            super().destroy_node()

    def _close(self, message: str) -> bool:
        """Stop a run with ``message``, finish its ramp, drop the timers; True if it was braking."""
        self._active = False
        braking = self.run is not None and self.run.close(self._send, message)
        self._destroy_timers()
        return braking

    def _destroy_timers(self) -> None:
        common.destroy_timers(self, self._timer, self._diag_timer)
        self._timer = self._diag_timer = None

    def _now_ns(self) -> int:
        return common.clock_ns(self.get_clock())

    def _send(self, command: Command) -> None:
        assert self.run is not None
        self.commands.publish(command.stamp_ns, self.run.arm.joints, command.position,
                              command.velocity)

    @_guarded
    def _on_joint_states(self, msg: JointState) -> None:
        run = self._configured_run()
        if run is None:
            return
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        rejection = run.joint_state(msg.name, msg.position, msg.velocity, msg.effort, stamp,
                                    self._now_ns() * 1e-9)
        if rejection is not None:
            self._warn.warning("joint_states", f"/joint_states rejected ({rejection.count} so "
                                               f"far): {rejection.reason}")

    @_guarded
    def _on_timer(self) -> None:
        run = self.run
        if run is None:
            return
        step = run.step(self._now_ns())
        if step.command is not None:
            self._send(step.command)
        if step.estimate is not None:
            n, label = len(step.estimate.names), "phi_G:" + ";".join(step.estimate.names)
            self.pub_params.publish(Float64MultiArray(
                layout=MultiArrayLayout(dim=[MultiArrayDimension(label=label, size=n, stride=n)]),
                data=[float(v) for v in step.estimate.values]))
        if step.at_rest and not self._active:  # deactivated during the run: the ramp is over
            self._destroy_timers()

    @_guarded
    def _publish_diagnostics(self) -> None:
        run = self._configured_run()
        if run is None:
            return
        status = run.status(self._now_ns() * 1e-9)
        self.pub_diag.publish(common.diagnostic_array(self, [common.diagnostic_status(
            f"{NODE_NAME}: progress", status.level, status.message, status.values)]))

    def _lifecycle_refusal(self) -> str:
        """The node's state and what to do, for a request that needs it active."""
        state = common.lifecycle_state(self)
        if state != "finalized":  # the node's own view (a transition may be under way)
            state = "unconfigured" if self.run is None else "inactive"
        return common.lifecycle_refusal(NODE_NAME, state)

    @_guarded
    def _on_start(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        run = self._configured_run()
        if run is None or not self._active or self._timer is None:
            response.success = False
            response.message = f"refused to start: {self._lifecycle_refusal()}"
        else:
            answer = run.start(self._now_ns())
            response.success, response.message = answer.success, answer.message
        if not response.success:
            self._warn.warning("start", response.message)
        return response

    @_guarded
    def _on_cancel(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        run = self.run
        response.success = run is not None and run.cancel()
        if response.success:
            response.message = "cancelled: the arm brakes to rest"
        elif run is not None and (self._active or run.state is RunState.STOPPING):
            response.message = f"nothing to cancel (state {run.state.value})"
        else:
            response.message = f"nothing to cancel: {self._lifecycle_refusal()}"
        return response


def main(args: Sequence[str] | None = None) -> int:
    """Console script ``identification_executor``: SIGINT and SIGTERM end the spin between two
    callbacks (with rclpy's handlers a publish could fail); a run then brakes to rest."""
    return common.run_node(IdentificationExecutor, args, stop_signals=True, exit_process=True)


if __name__ == "__main__":
    raise SystemExit(main())
