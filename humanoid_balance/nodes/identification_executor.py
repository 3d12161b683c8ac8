"""``identification_executor``: runs the seed-004 identification on the arm (lifecycle node).

Thin: parameters -> plan (:class:`~humanoid_balance.core.identification.trajectory.PlanFollower`)
-> position targets; recorded joint states -> :func:`segment_sweeps` ->
:func:`identify` -> results.

- ``configure`` loads the arm model (URDF), its collision geometry and the
  parameter set (the paper's 12 composite parameters for the 6-DOF lunar
  arm, the QR base set for any other chain) and plans the sweeps;
  ``activate`` starts the command timer; ``deactivate`` stops a run (a
  braking ramp, below).
- ``/identification/start`` (Trigger): from the current joint states, plan
  the sweeps of joints n..1 (eq. 11: the joint sweeps at ``speed`` <= 3 deg/s
  about its entry of ``static_configuration``, by ``sweep_half_range``,
  the others hold it, or with ``optimize_configuration`` the GA-PSO solution
  of eq. 12 for each sweep), command them on ``/identification/command``
  (JointState positions and velocities, within the joint limits; every pass
  and approach accelerates and brakes at ``acceleration_limit``), record
  ``/joint_states``, and at the end (once the arm is measured at rest, at
  most ``SETTLE_TIMEOUT_S`` after the plan) cut the stream into sweeps, cancel
  friction (eq. 5), average the friction-free samples in blocks of
  ``average`` (as ``humanoid-balance identify --average`` and the experiment
  do), estimate (eq. 10), publish ``/identification/parameters``
  (transient local) and write ``output_path`` (YAML: names, values, units,
  standard deviations, per-joint fit RMSE, timing figures and warnings).
- ``/identification/cancel`` (Trigger): stop the run (a braking ramp).
- Both services exist from the node's start (services are not lifecycle-managed): a
  start on a node that is not active, or a cancel without a run, is answered false at
  once with the state and what to do (``identification_executor is unconfigured:
  configure and activate it``).
- Stops are braking ramps (:class:`~humanoid_balance.core.identification.trajectory.BrakingRamp`):
  from the last command, not from a measurement (which may be old), the
  command decelerates at ``acceleration_limit`` to rest; no velocity step, no
  position jump. The ramp's time only grows (``RampTime`` of the trajectory
  module): a clock going back does not hold it.
- Refusals and stops: start is refused without fresh, plausible joint states
  that carry an effort for every arm joint (``torque_source: effort``; with
  ``current`` the effort field carries the motor current [A] and the torque
  is ``k_e I``, eq. 19), from a joint state older than ``START_SAMPLE_AGE_S``
  (or ``joint_state_timeout``), with the arm moving (a joint faster than
  ``acceleration_limit / rate``) or outside its limits (beyond encoder noise,
  ``START_LIMIT_TOLERANCE_RAD``) or with an ``output_path`` that cannot be
  written. During a run the node's clock going back (more than 1 ms), stale joint states
  (by their stamp and by when they arrived: a stamp in the future does not
  keep them fresh), non-finite values, a velocity or torque beyond the
  URDF's limits, a joint outside its limits or two links (or a link and the
  torso) closer than ``clearance`` stop the run, and diagnostics say why.
  Joint states stamped more than ``joint_state_timeout`` in the future, or
  older than the newest one, or naming the arm's joints twice or only in
  part, or with arrays of the wrong size, are rejected (counted, named on
  ``/diagnostics``).
- Parameters: one spec, :mod:`humanoid_balance.params.identification_executor`
  (declared, validated when set and at configure by
  :class:`~humanoid_balance.params.ros.NodeParameters`); those the plan is
  built from are refused while configured (clean up, set, configure again),
  ``rate`` and ``diagnostics_rate`` while active, every one during a run; the
  dynamic ones apply between runs (the next joint state, start or estimate).
- Progress on ``/diagnostics``: state, joint, pass, percent; the level
  names the cause (a failed run ERROR while its cause lasts, WARN once it
  cleared; idle with unusable joint states WARN; a finished run whose
  samples or commands were late or irregular WARN, the figures in the
  results file).
"""

from __future__ import annotations

import functools
import math
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pinocchio as pin
from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import SetParametersResult
from rclpy.lifecycle import LifecycleState, TransitionCallbackReturn
from rclpy.lifecycle import Node as LifecycleNode
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from std_srvs.srv import Trigger

from humanoid_balance.core.identification.estimation import Estimate, fit_warnings
from humanoid_balance.core.identification.optimisation import (
    ClearanceChecker,
    joint_line,
    optimise_static_configurations,
    path_clearance,
)
from humanoid_balance.core.identification.procedure import (
    TimingQuality,
    identify,
    results_document,
    segment_sweeps,
    timing_quality,
)
from humanoid_balance.core.identification.regressor import (
    GravityRegressor,
    ParameterSet,
    identification_parameters,
)
from humanoid_balance.core.identification.trajectory import (
    BrakingRamp,
    PlanFollower,
    RampTime,
    identification_plan,
)
from humanoid_balance.exceptions import ConfigurationError, HumanoidBalanceError
from humanoid_balance.nodes.command_output import CommandOutput
from humanoid_balance.nodes.common import (
    ERROR,
    OK,
    READ_AT_CONFIGURE,
    WARN,
    clock_ns,
    destroy_timers,
    diagnostic_array,
    diagnostic_status,
    lifecycle_refusal,
    lifecycle_state,
    run_node,
    steady_timer,
)
from humanoid_balance.params.identification_executor import SPEC
from humanoid_balance.params.ros import NodeParameters
from humanoid_balance.resources import urdf_path as package_urdf_path
from humanoid_balance.results import check_output, write_yaml

NODE_NAME = "identification_executor"
#: rad a measured joint may be past its limit during a run (tracking overshoot) before it stops
LIMIT_TOLERANCE_RAD = math.radians(0.5)
#: rad a joint may be measured past its limit at start: encoder noise only (a few counts of a
#: 14-bit encoder, 0.022 deg each); the plan starts from the position clipped into the limits
START_LIMIT_TOLERANCE_RAD = math.radians(0.05)
#: s, the oldest joint state a start may begin from (or joint_state_timeout if shorter): an arm
#: at rest then that accelerates at 30 deg/s^2 has moved at most a t^2 / 2 = 0.15 deg since
START_SAMPLE_AGE_S = 0.1
#: ns the node clock may go back during a run (jitter of a clock source) before the run fails
CLOCK_BACK_TOLERANCE_NS = 1_000_000
#: s the arm may take after the plan's end to come to rest before the estimate
SETTLE_TIMEOUT_S = 2.0
#: s the node waits at exit for its readers to acknowledge the braking ramp's last commands
FLUSH_TIMEOUT_S = 0.3
#: the dynamic parameters used at activate: refused while active (applied at the next activate)
ACTIVATE_PARAMETERS = ("rate", "diagnostics_rate")
#: s between two log lines of one cause (:class:`CauseThrottle`)
WARN_PERIOD_S = 1.0
#: a text's figures (counts, ages, angles): two texts that differ only in them name one cause
_FIGURES = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


class CauseThrottle:
    """Warnings rate-limited per cause: one cause at most every ``period_s`` [s], a new one at once.

    A cause is a channel (``joint_states``, ``start``, ...) and the text with its figures
    masked: ``/joint_states rejected (7 so far): stamped 0.120 s in the future`` and the same
    with 8 and 0.130 are one cause (a stream of bad samples at the joint-state rate logs once
    a period, as :class:`~humanoid_balance.nodes.common.LogThrottle` did), while a start
    refusal right after a rejection is another and is logged (one throttle for every warning
    hid it). The check costs a clock read and one regular-expression substitution.

    Args:
        logger: the node's logger (``node.get_logger()``).
        period_s: the shortest time between two lines of one cause, s.
    """

    #: causes kept; beyond it, those not logged within the period are forgotten
    MAX_CAUSES = 64

    def __init__(self, logger: Any, period_s: float = WARN_PERIOD_S) -> None:
        self.logger = logger
        self.period_s = period_s
        self._last: dict[tuple[str, str], float] = {}  # cause -> monotonic time last logged

    def warning(self, channel: str, text: str) -> bool:
        """Log ``text`` as a warning unless its cause was logged within the period; True when
        logged."""
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
_Callback = TypeVar("_Callback", bound=Callable[..., Any])


def output_problem(path: str) -> str | None:
    """Why results cannot be written to ``path`` (None when they can); never raises."""
    target = Path(path)
    try:
        check_output(target, option="output_path")
    except ConfigurationError as exc:
        return str(exc)
    if target.is_dir():
        return f"output_path {path}: is a folder; give a file path"
    if target.exists() and not os.access(target, os.W_OK):
        return f"output_path {path}: the file is not writable; choose a writable output_path"
    return None


def _guarded(method: _Callback) -> _Callback:
    """A callback that reports an unexpected error (stop, diagnostics) instead of ending the node."""

    @functools.wraps(method)
    def guarded(self: IdentificationExecutor, *args: Any) -> Any:
        try:
            return method(self, *args)
        except Exception as exc:  # a motor-commanding node must not die in a callback
            message = self._internal_error(method.__name__, exc)
            if len(args) == 2 and hasattr(args[1], "message"):  # a service: answer it
                args[1].success, args[1].message = False, message
                return args[1]
            return None
    return guarded  # type: ignore[return-value]


@dataclass(frozen=True)
class Sample:
    """One joint-state reading of the arm.

    Attributes:
        stamp: its header stamp on the node clock [s] (the receipt time when unstamped).
        received: when it arrived, node clock [s].
        position: joint positions [rad].
        velocity: joint velocities [rad/s].
        torque: joint torques [N m] (effort, or ``k_e`` times the current).
    """

    stamp: float
    received: float
    position: np.ndarray
    velocity: np.ndarray
    torque: np.ndarray


class IdentificationExecutor(LifecycleNode):
    """Lifecycle node running the identification trajectory and estimating gravity parameters."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self.params = NodeParameters(
            self, SPEC, configured=lambda: self.state not in ("unconfigured", "finalized"),
            extra_check=self._refusal, read_only_reason=READ_AT_CONFIGURE)
        self.state = "unconfigured"
        self.message = ""
        self.estimate: Estimate | None = None
        self.quality: TimingQuality | None = None
        #: what to suspect in the last run's results: its timing's and its fit's warnings
        self.warnings: tuple[str, ...] = ()
        self.joints: tuple[str, ...] = ()
        self._active = False
        self._timer: Any = None
        self._diag_timer: Any = None
        self._follower: PlanFollower | None = None
        self._last: Sample | None = None
        self._stream: list[Sample] = []
        self._command_times: list[float] = []
        self._t0_ns = 0  # the run's start, node clock [ns] (integers: a float of ~1.8e9 s
        # resolves only 0.24 us, which shows in the velocity steps between commands)
        self._point: Any = None
        #: the last command sent: (time [ns], positions [rad], velocities [rad/s])
        self._sent: tuple[int, np.ndarray, np.ndarray] | None = None
        self._ramp: BrakingRamp | None = None
        self._ramp_time: RampTime | None = None
        #: the newest node clock reading of the run [ns]: the plan is never sampled earlier
        self._clock_ns = 0
        self._ending: tuple[str, str] = ("", "")
        self._cause_is_input = False
        self._rejected = 0
        self._reject_reason = ""
        self._rejected_since_last = False
        #: warnings, rate-limited per cause (a start refusal is logged after another warning)
        self._warn = CauseThrottle(self.get_logger())
        # use_sim_time is rclpy's, not in the spec: refused during a run here (the node's clock
        # would jump, by years when no /clock is published yet)
        self.add_on_set_parameters_callback(self._on_set_clock)
        # from the start, in every state (services are not lifecycle-managed): a request the
        # state does not allow is answered at once with why, not left waiting for the service
        self.srv_start = self.create_service(Trigger, "/identification/start", self._on_start)
        self.srv_cancel = self.create_service(Trigger, "/identification/cancel", self._on_cancel)

    # --- parameters -----------------------------------------------------------------------

    def _refusal(self, name: str, value: Any, values: Any) -> str | None:
        """Why a change the spec accepts is refused in the node's state now (None: accepted)."""
        if self.state in ("running", "stopping"):
            return "parameters cannot change during a run: cancel first"
        if name in ACTIVATE_PARAMETERS and self._active:
            return f"{name} is used at activation: deactivate, set it, then activate again"
        if name == "output_path":
            return output_problem(str(value))
        return None

    def _on_set_clock(self, params: Sequence[Parameter]) -> SetParametersResult:
        """Refuse a change of ``use_sim_time`` (the node's clock) during a run."""
        if any(p.name == "use_sim_time" for p in params) and self.state in ("running",
                                                                           "stopping"):
            return SetParametersResult(
                successful=False,
                reason="use_sim_time cannot change during a run (it moves the node's clock): "
                       "cancel first")
        return SetParametersResult(successful=True)

    def _p(self, name: str) -> Any:
        """A parameter's value in use: between runs, the accepted changes apply first."""
        if self.state == "unconfigured" or not self.params.values:
            return self.get_parameter(name).value
        if self.state not in ("running", "stopping"):
            self.params.take_pending()
        return self.params.values[name]

    # --- lifecycle ------------------------------------------------------------------------

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Load the model, collision geometry and parameter set, plan; create the topics."""
        try:
            self._configure_model()
        except (HumanoidBalanceError, ValueError, RuntimeError, OSError) as exc:
            self.joints = ()
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        qos = QoSProfile(depth=10)
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        try:
            # a plain publisher: the executor's hold after a cancel or a deactivate goes out too
            self.commands = CommandOutput(self, self.params.values, "/identification/command",
                                          self.joints, 1.0 / float(self._p("rate")), qos,
                                          lifecycle=False)
        except HumanoidBalanceError as exc:
            self.joints = ()
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        self.pub_params = self.create_publisher(Float64MultiArray, "/identification/parameters",
                                                latched)
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", qos)
        self.sub = self.create_subscription(JointState, "/joint_states", self._on_joint_states,
                                            QoSProfile(depth=100))
        self._last, self._sent, self._ramp = None, None, None
        self._rejected, self._reject_reason, self._rejected_since_last = 0, "", False
        self.state, self.message = "idle", "configured"
        return TransitionCallbackReturn.SUCCESS

    def _configure_model(self) -> None:
        self.params.read()  # raises ConfigurationError with the reason
        problem = output_problem(str(self._p("output_path")))
        if problem is not None:
            raise ConfigurationError(problem)
        urdf = self._p("urdf_path") or str(package_urdf_path("lunar_arm"))
        if not Path(urdf).is_file():
            raise ConfigurationError(f"urdf_path {urdf!r} is not a file: give the arm's URDF")
        model = pin.buildModelFromUrdf(urdf)
        joints = tuple(self._p("arm_joints"))
        if joints != tuple(model.names[1:]):
            raise ConfigurationError(
                f"arm_joints {list(joints)} must be the URDF's chain "
                f"{list(model.names[1:])}, in order")
        self.joints = joints
        self.regressor = GravityRegressor(model, float(self._p("gravity")))
        self.pset: ParameterSet = identification_parameters(self.regressor)
        self.clearance = ClearanceChecker(urdf, model)
        n = len(self.joints)
        static = np.radians(np.asarray(self._p("static_configuration"), float))
        constants = np.asarray(self._p("torque_constants"), float)
        if static.shape != (n,) or constants.shape != (n,):
            raise ConfigurationError(
                f"static_configuration has {static.size} and torque_constants "
                f"{constants.size} values: expected {n} each")
        self.static = static
        self.lower, self.upper = model.lowerPositionLimit.copy(), model.upperPositionLimit.copy()
        # a URDF without a limit gives 0 (or inf): no check then
        self.velocity_limit = np.where(model.velocityLimit > 0.0, model.velocityLimit, np.inf)
        self.effort_limit = np.where(model.effortLimit > 0.0, model.effortLimit, np.inf)
        self.acceleration = math.radians(float(self._p("acceleration_limit")))
        half = math.radians(float(self._p("sweep_half_range")))
        ranges = [(max(s - half, lo), min(s + half, hi))
                  for s, lo, hi in zip(static, self.lower, self.upper, strict=True)]
        statics = [static] * n
        if self._p("optimize_configuration"):
            statics = self._optimised_statics(static, ranges)
        self.plan = identification_plan(statics, ranges, math.radians(float(self._p("speed"))))
        previous: np.ndarray | None = None
        for sweep in self.plan:
            q = sweep.start_configuration()
            if np.any(q < self.lower) or np.any(q > self.upper):
                raise ConfigurationError(
                    f"static configuration {np.degrees(q).round(1).tolist()} deg of "
                    f"{self.joints[sweep.joint]}'s sweep is outside the joint limits")
            # the whole path, not only where each sweep starts: the sweep, and the move to its
            # start from the sweep before (from another static configuration when optimised)
            end = q.copy()
            end[sweep.joint] = sweep.end
            name = f"{self.joints[sweep.joint]}'s sweep"
            if previous is not None:
                problem = self._path_problem(f"the move to {name}", joint_line(previous, q))
                if problem:
                    raise ConfigurationError(f"{problem}: choose another static_configuration")
            problem = self._path_problem(name, joint_line(q, end))
            if problem:
                raise ConfigurationError(f"{problem}: choose another static_configuration or a "
                                         "smaller sweep_half_range")
            previous = q

    def _path_problem(self, what: str, path: np.ndarray) -> str | None:
        """Why ``path`` (k, n) [rad] comes closer than ``clearance``, or None."""
        closest = path_clearance(self.clearance, path)
        if closest.distance >= float(self._p("clearance")):
            return None
        return (f"{what} passes {closest.distance * 1e3:.1f} mm between {closest.pair} at "
                f"{np.degrees(closest.configuration).round(1).tolist()} deg, less than "
                f"clearance {float(self._p('clearance')) * 1e3:.1f} mm")

    def _optimised_statics(self, static: np.ndarray, ranges: Sequence[tuple[float, float]]
                           ) -> list[np.ndarray]:
        """Eq. 12 by GA-PSO for every sweep (kept only where it beats ``static_configuration``)."""
        choices = optimise_static_configurations(self.regressor, self.pset, static, ranges,
                                                 self.clearance,
                                                 epsilon=float(self._p("clearance")))
        for joint, choice in zip(self.joints, choices, strict=True):
            excitation = choice.chosen
            self.get_logger().info(
                f"sweep of {joint}: static {np.round(np.degrees(choice.static), 1).tolist()} deg, "
                f"Q {excitation.q_range:.3f}, condition number {excitation.condition_number:.2f}, "
                f"clearance {excitation.min_clearance * 1e3:.1f} mm")
        return [choice.static for choice in choices]

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Start the command and diagnostics timers."""
        self._destroy_timers()  # a stop's ramp may still run from the last deactivation
        if self.state == "stopping":
            self._brake_now()
        self.commands.period_s = 1.0 / float(self._p("rate"))
        self._timer = self.create_timer(1.0 / float(self._p("rate")), self._on_timer)
        # the steady clock: at its rate on simulation time too (see steady_timer)
        self._diag_timer = steady_timer(self, 1.0 / float(self._p("diagnostics_rate")),
                                        self._publish_diagnostics)
        self._active = True
        self.state, self.message = "idle", "active"
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop a run (the braking ramp goes on until the arm is at rest), then the timers."""
        self._active = False
        if self.state == "running":
            self._stop("cancelled", "deactivated during the run", cause_is_input=False)
        if self.state != "stopping":
            self._destroy_timers()
            self.state, self.message = "inactive", "deactivated"
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Finish a stop, drop the topics (the services stay)."""
        self._brake_now()
        self._destroy_timers()
        self.destroy_subscription(self.sub)
        for pub in (self.commands.publisher, self.pub_params, self.pub_diag):
            self.destroy_publisher(pub)
        self.joints = ()
        self.state, self.message = "unconfigured", "cleaned up"
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop a run and finish its braking ramp."""
        self._active = False
        if self.state == "running":
            self._stop("cancelled", "shutdown during the run", cause_is_input=False)
        self._brake_now()
        self._destroy_timers()
        self.state, self.message = "finalized", "shut down"
        return TransitionCallbackReturn.SUCCESS

    def destroy_node(self) -> None:
        """Stop a run with its braking ramp before the node goes (SIGINT, SIGTERM)."""
        try:
            braking = self.state in ("running", "stopping")
            if self.state == "running":
                self._stop("cancelled", "node stopped during the run", cause_is_input=False)
            self._brake_now()
            if braking:
                self.commands.flush(FLUSH_TIMEOUT_S)
        finally:
            super().destroy_node()

    def _destroy_timers(self) -> None:
        destroy_timers(self, self._timer, self._diag_timer)
        self._timer = self._diag_timer = None

    # --- inputs -----------------------------------------------------------------------------

    def _now_ns(self) -> int:
        return clock_ns(self.get_clock())

    def _now(self) -> float:
        return float(self._now_ns()) * 1e-9

    def _reject(self, reason: str) -> None:
        self._rejected += 1
        self._reject_reason = reason
        self._rejected_since_last = True
        self._warn.warning("joint_states",
                           f"/joint_states rejected ({self._rejected} so far): {reason}")

    @_guarded
    def _on_joint_states(self, msg: JointState) -> None:
        if not self.joints:
            return
        now = self._now()
        names = list(msg.name)
        present = [j for j in self.joints if j in names]
        if not present:
            return  # another group's joint states
        if len(present) < len(self.joints):
            missing = [j for j in self.joints if j not in names]
            self._reject(f"names {present} of the arm without {missing}")
            return
        if any(names.count(j) > 1 for j in self.joints):
            self._reject(f"an arm joint named twice in {names}")
            return
        n = len(names)
        if len(msg.position) != n or len(msg.velocity) not in (0, n) or len(msg.effort) not in (
                0, n):
            self._reject(f"{n} names but {len(msg.position)} positions, {len(msg.velocity)} "
                         f"velocities, {len(msg.effort)} efforts")
            return
        idx = [names.index(j) for j in self.joints]
        nan = np.full(len(idx), np.nan)
        q = np.array([msg.position[i] for i in idx], float)
        qd = np.array([msg.velocity[i] for i in idx], float) if len(msg.velocity) else nan
        effort = np.array([msg.effort[i] for i in idx], float) if len(msg.effort) else nan
        with np.errstate(over="ignore", invalid="ignore"):
            tau = effort * np.asarray(self._p("torque_constants"), float) if (
                self._p("torque_source") == "current") else effort
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        t = stamp if stamp > 0.0 else now
        timeout = float(self._p("joint_state_timeout"))
        if t - now > timeout:
            self._reject(f"stamped {t - now:.3f} s in the future (more than joint_state_timeout "
                         f"{timeout:.3f} s): check that the clocks agree (use_sim_time)")
            return
        last = self._last
        if last is not None and t < last.stamp and now >= last.stamp:
            self._reject(f"stamp {last.stamp - t:.3f} s older than the newest joint state's "
                         "(stamps went back)")
            return
        sample = Sample(t, now, q, qd, tau)
        self._last = sample
        self._rejected_since_last = False
        if self.state == "running" and self._sample_problem(sample) is None and (
                self._plausibility_problem(sample) is None):
            self._stream.append(sample)

    def _sample_problem(self, sample: Sample) -> str | None:
        """Why a reading cannot be used: not finite, outside the limits (None: it can)."""
        q, qd, tau = sample.position, sample.velocity, sample.torque
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
            return "/joint_states position or velocity missing or not finite"
        if not np.all(np.isfinite(tau)):
            return (f"/joint_states carry no finite effort for every arm joint "
                    f"({self._p('torque_source')} is needed to measure torque)")
        out = np.flatnonzero((q < self.lower - LIMIT_TOLERANCE_RAD)
                             | (q > self.upper + LIMIT_TOLERANCE_RAD))
        if out.size:
            return f"joints {[self.joints[i] for i in out]} left their limits"
        return None

    def _plausibility_problem(self, sample: Sample) -> str | None:
        """Why a finite reading is implausible: beyond the URDF's velocity or effort limits."""
        qd, tau = sample.velocity, sample.torque
        fast = np.flatnonzero(np.abs(qd) > self.velocity_limit)
        if fast.size:
            i = int(fast[0])
            return (f"/joint_states give {self.joints[i]} a velocity of {qd[i]:.3g} rad/s, beyond "
                    f"its limit {self.velocity_limit[i]:.3g} rad/s: a sensor fault?")
        strong = np.flatnonzero(np.abs(tau) > self.effort_limit)
        if strong.size:
            i = int(strong[0])
            return (f"/joint_states give {self.joints[i]} a torque of {tau[i]:.3g} N m, beyond "
                    f"its limit {self.effort_limit[i]:.3g} N m: a sensor fault "
                    "(or wrong torque_constants)?")
        return None

    def _input_problem(self, now: float | None = None, plausible: bool = True) -> str | None:
        """Why the joint states cannot be used now (None: they can).

        Stale, not finite, outside the limits; with ``plausible`` also beyond the
        velocity or effort limits.
        """
        now = self._now() if now is None else now
        last = self._last
        if last is None:
            rejected = (f"; the newest were rejected: {self._reject_reason}"
                        if self._rejected_since_last else "")
            return f"no /joint_states with the arm joints received{rejected}"
        timeout = float(self._p("joint_state_timeout"))
        if self._rejected_since_last:
            return f"the newest /joint_states were rejected: {self._reject_reason}"
        if now < last.received - timeout:
            return (f"the node's clock went back {last.received - now:.3f} s (simulation "
                    "restarted?): waiting for new /joint_states")
        age = max(now - last.stamp, now - last.received)
        if age > timeout:
            return f"/joint_states are {age:.3f} s old (timeout {timeout:.3f} s)"
        problem = self._sample_problem(last)
        if problem is None and plausible:
            problem = self._plausibility_problem(last)
        return problem

    def _clearance_problem(self, q: np.ndarray) -> str | None:
        """Why the arm may not move from ``q`` (links too close; None: it may)."""
        distance, pair = self.clearance.min_distance(q)
        if distance < float(self._p("clearance")):
            return (f"clearance {distance * 1e3:.1f} mm between {pair} is below "
                    f"{float(self._p('clearance')) * 1e3:.1f} mm")
        return None

    # --- services ------------------------------------------------------------------------------

    @_guarded
    def _on_start(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        refusal = self._start_refusal()
        if refusal is not None:
            response.success, response.message = False, refusal
            self._warn.warning("start", response.message)
            return response
        assert self._last is not None
        now_ns = self._now_ns()
        # within START_LIMIT_TOLERANCE_RAD of the limits (checked): the plan starts inside them
        start = np.clip(self._last.position, self.lower, self.upper)
        self._follower = PlanFollower(self.plan, start, acceleration=self.acceleration)
        self._stream, self._command_times = [], []
        self._sent, self._ramp, self._ramp_time, self._point = None, None, None, None
        self._t0_ns = self._clock_ns = now_ns
        self.estimate, self.quality, self.warnings = None, None, ()
        self.state, self.message = "running", "started"
        response.success = True
        response.message = (f"started: {len(self.plan)} sweeps, "
                            f"{self._follower.duration:.1f} s")
        self.get_logger().info(response.message)
        return response

    def _lifecycle_refusal(self) -> str:
        """The node's state and what to do, for a request that needs it active."""
        state = lifecycle_state(self)
        if state != "finalized":  # the node's own view (a transition may be under way)
            state = "unconfigured" if not self.joints else "inactive"
        return lifecycle_refusal(NODE_NAME, state)

    def _start_refusal(self) -> str | None:
        if not self._active or self._timer is None:
            return f"refused to start: {self._lifecycle_refusal()}"
        if self.state in ("running", "stopping"):
            return f"a run is in progress ({self.state}): cancel it first"
        now = self._now()
        problem = self._input_problem(now)
        if problem is None:
            assert self._last is not None
            problem = self._start_sample_problem(self._last, now)
        if problem is None:  # the path's first configuration is where the arm is
            assert self._last is not None
            first = self.plan[0]
            problem = self._path_problem(
                f"the move from here to {self.joints[first.joint]}'s sweep",
                joint_line(self._last.position, first.start_configuration()))
        if problem is None:
            problem = output_problem(str(self._p("output_path")))
        return None if problem is None else f"refused to start: {problem}"

    def _start_sample_problem(self, last: Sample, now: float) -> str | None:
        """Why the plan may not start from ``last`` (None: it may).

        The plan starts from the measured position at zero velocity, so the
        reading must be recent (``START_SAMPLE_AGE_S``, or ``joint_state_timeout``
        if shorter), every joint within its limits (to encoder noise) and the arm
        at rest: each joint slower than the velocity step the acceleration limit
        allows in one command period (``acceleration_limit / rate``, 0.3 deg/s by
        default), so the first command is no velocity step.
        """
        bound = min(START_SAMPLE_AGE_S, float(self._p("joint_state_timeout")))
        age = max(now - last.stamp, now - last.received)
        if age > bound:
            return (f"the newest /joint_states are {age:.3f} s old: a start needs one younger "
                    f"than {bound:.3f} s")
        q = last.position
        out = np.flatnonzero((q < self.lower - START_LIMIT_TOLERANCE_RAD)
                             | (q > self.upper + START_LIMIT_TOLERANCE_RAD))
        if out.size:
            i = int(out[0])
            return (f"joints {[self.joints[k] for k in out]} left their limits: "
                    f"{self.joints[i]} at {math.degrees(q[i]):.3f} deg, limits "
                    f"[{math.degrees(self.lower[i]):.3f}, {math.degrees(self.upper[i]):.3f}] deg "
                    "(a start needs every joint within its limits): move it back inside")
        rest = self.acceleration * self.commands.period_s
        moving = np.flatnonzero(np.abs(last.velocity) > rest)
        if moving.size:
            i = int(moving[0])
            return (f"the arm is moving: {self.joints[i]} at "
                    f"{math.degrees(last.velocity[i]):.2f} deg/s (at rest below "
                    f"{math.degrees(rest):.2f} deg/s): wait until it stops")
        return None

    @_guarded
    def _on_cancel(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        if self.state != "running":
            response.success = False
            response.message = f"nothing to cancel (state {self.state})" if (
                self._active or self.state == "stopping") else \
                f"nothing to cancel: {self._lifecycle_refusal()}"
            return response
        self._stop("cancelled", "cancelled on request", cause_is_input=False)
        response.success, response.message = True, "cancelled: the arm brakes to rest"
        return response

    # --- loop ----------------------------------------------------------------------------------

    def _command(self, position: np.ndarray, velocity: np.ndarray, now_ns: int) -> None:
        """Publish a command stamped ``now_ns`` [ns] (the time it was computed for)."""
        position = np.asarray(position, float)
        velocity = np.array(velocity, dtype=float)
        # a clipped position holds at the limit: no velocity further out with it
        velocity[((position > self.upper) & (velocity > 0.0))
                 | ((position < self.lower) & (velocity < 0.0))] = 0.0
        position = np.clip(position, self.lower, self.upper)
        if not (np.all(np.isfinite(position)) and np.all(np.isfinite(velocity))):
            raise HumanoidBalanceError(f"non-finite command {position.tolist()} "
                                       f"{velocity.tolist()} not sent")
        self.commands.publish(now_ns, self.joints, position, velocity)
        self._sent = (now_ns, position, velocity)
        if self.state == "running":
            self._command_times.append(now_ns * 1e-9)

    def _stop(self, state: str, message: str, *, cause_is_input: bool) -> None:
        """Leave the run: brake the command to rest, then ``state`` with ``message``."""
        if self._sent is not None:
            t, position, velocity = self._sent
            self._ramp = BrakingRamp(position, velocity, self.acceleration)
            # its time only grows (a period for a step back of the clock): a clock going back
            # does not hold the velocity
            self._ramp_time = RampTime(t, self._period_ns())
        else:
            self._ramp, self._ramp_time = None, None
        self._ending = (state, message)
        self._cause_is_input = cause_is_input
        self.state, self.message = "stopping", message
        if state == "cancelled":
            self.get_logger().info(f"run stopped: {message}")
        else:
            self.get_logger().error(f"run stopped: {message}")

    def _ramp_step(self, now_ns: int) -> bool:
        """Send the braking ramp's command for ``now_ns``; True once the arm is at rest."""
        ramp, ramp_time = self._ramp, self._ramp_time
        if ramp is None or ramp_time is None:
            return True
        elapsed = ramp_time.advance(now_ns)
        position, velocity = ramp.at(elapsed)
        self._command(position, velocity, now_ns)
        return elapsed >= ramp.duration

    def _period_ns(self) -> int:
        """The command period [ns]."""
        return max(1, round(self.commands.period_s * 1e9))

    def _end_stop(self) -> None:
        self.state, self.message = self._ending
        self._ramp, self._ramp_time = None, None
        if not self._active:  # deactivated during the run: the ramp is over, so are the timers
            self._destroy_timers()

    def _brake_now(self) -> None:
        """Finish a braking ramp at once, on the wall clock (cleanup, shutdown, exit)."""
        if self.state != "stopping":
            return
        ramp, ramp_time = self._ramp, self._ramp_time
        if ramp is not None and ramp_time is not None:
            # on from where the ramp is by the wall clock (the node's clock may have gone back:
            # not used), stamped on from the last command sent
            period_ns = self._period_ns()
            stamp_ns = self._sent[0] if self._sent is not None else self._now_ns()
            elapsed_ns, duration_ns = ramp_time.elapsed_ns, math.ceil(ramp.duration * 1e9)
            wall = time.monotonic()
            while elapsed_ns < duration_ns:  # the command at elapsed_ns went out already
                time.sleep(period_ns * 1e-9)
                now = time.monotonic()
                step = max(int((now - wall) * 1e9), 1)
                wall = now
                elapsed_ns += step
                stamp_ns += step
                position, velocity = ramp.at(elapsed_ns * 1e-9)
                try:
                    self._command(position, velocity, stamp_ns)
                except Exception:  # the context is going: nothing more can be sent
                    break
        self.state, self.message = self._ending
        self._ramp, self._ramp_time = None, None

    @_guarded
    def _on_timer(self) -> None:
        now_ns = self._now_ns()
        now = now_ns * 1e-9
        if self.state == "stopping":
            if self._ramp_step(now_ns):
                self._end_stop()
            return
        if self.state != "running" or self._follower is None:
            return
        if now_ns < self._clock_ns - CLOCK_BACK_TOLERANCE_NS:
            back = (self._clock_ns - now_ns) * 1e-9
            self._stop("failed", f"the node's clock went back {back:.3f} s during the run "
                       "(simulation restarted, or use_sim_time changed?): start again",
                       cause_is_input=False)
            if self._ramp_step(now_ns):
                self._end_stop()
            return
        # the plan is never sampled earlier than before (the clock may go back within tolerance)
        self._clock_ns = plan_ns = max(self._clock_ns, now_ns)
        problem = self._input_problem(now, plausible=False)
        cause_is_input = problem is not None
        if problem is None:
            assert self._last is not None
            problem = self._clearance_problem(self._last.position)
            cause_is_input = problem is None
        if problem is None:
            assert self._last is not None
            problem = self._plausibility_problem(self._last)
            cause_is_input = problem is not None
        if problem is not None:
            self._stop("failed", problem, cause_is_input=cause_is_input)
            if self._ramp_step(now_ns):
                self._end_stop()
            return
        point = self._follower.at((plan_ns - self._t0_ns) * 1e-9)
        self._point = point
        self._command(point.position, point.velocity, now_ns)
        if point.phase == "done" and self._arm_settled(plan_ns * 1e-9):
            self._finish()

    def _arm_settled(self, now: float) -> bool:
        """After the plan's end: the arm measured at rest, or ``SETTLE_TIMEOUT_S`` passed.

        The arm follows its targets with a lag: its last pass ends after the
        plan's, and those samples pair the last sweep.
        """
        assert self._follower is not None and self._last is not None
        end = self._t0_ns * 1e-9 + self._follower.duration
        still = float(np.abs(self._last.velocity).max()) < 0.3 * math.radians(
            float(self._p("speed")))
        return (self._last.stamp > end and still) or now - end > SETTLE_TIMEOUT_S

    def _finish(self) -> None:
        stream = self._stream
        t = np.array([s.stamp for s in stream])
        # before the estimation: a run that fails it on a machine too loaded to feed or command
        # the arm regularly (sweeps broken apart, too few samples) is told so as well
        self.quality = timing_quality(t, np.array([s.received for s in stream]),
                                      np.array(self._command_times), 1.0 / float(self._p("rate")))
        try:
            recordings = segment_sweeps(
                t, np.array([s.position for s in stream]), np.array([s.velocity for s in stream]),
                np.array([s.torque for s in stream]),
                moving_rad_s=0.3 * math.radians(float(self._p("speed"))),
                trim_s=float(self._p("trim")))
            self.estimate = identify(recordings, self.regressor, self.pset,
                                     method=str(self._p("method")), average=int(self._p("average")))
            if not np.all(np.isfinite(self.estimate.values)):
                raise HumanoidBalanceError("the estimate is not finite")
            self.warnings = self.quality.warnings + fit_warnings(self.estimate, self.joints)
        except Exception as exc:  # any failure of the estimation ends the run, not the node
            self.state, self.message = "failed", f"estimation failed: {exc}"
            if self.quality.warnings:
                self.message += "; " + "; ".join(self.quality.warnings)
            self._cause_is_input = False
            self.get_logger().error(self.message)
            return
        self._publish_parameters(self.estimate)
        path = Path(str(self._p("output_path")))
        document = results_document(self.estimate, self.joints, float(self._p("gravity")),
                                     len(recordings), urdf=str(self._p("urdf_path")))
        document["timing"] = {key: getattr(self.quality, key) for key in (
            "samples", "sample_interval_s", "sample_gap_share", "longest_sample_gap_s",
            "late_share", "command_gap_share", "longest_command_gap_s")}
        document["warnings"] = list(self.warnings)
        document["estimation"] = {"method": str(self._p("method")),
                                  "average": int(self._p("average")),
                                  "trim_s": float(self._p("trim"))}
        try:
            write_yaml(path, document)
        except OSError as exc:
            self.state = "failed"
            self.message = (f"parameters estimated and published on /identification/parameters, "
                            f"but not written to {path}: {exc.strerror or exc}; choose a writable "
                            "output_path")
            self._cause_is_input = False
            self.get_logger().error(self.message)
            return
        self.state, self.message = "done", f"parameters written to {path}"
        if self.warnings:
            self.message += "; " + "; ".join(self.warnings)
            self.get_logger().warning(self.message)
        else:
            self.get_logger().info(self.message)

    def _internal_error(self, where: str, exc: Exception) -> str:
        """An unexpected error in a callback: stop a run, report; the node goes on. The message."""
        message = f"internal error in {where}: {type(exc).__name__}: {exc}"
        self.get_logger().error(message)
        try:
            if self.state == "running":
                self._stop("failed", message, cause_is_input=False)
            elif self.state == "stopping":
                self._ramp, self._ramp_time = None, None
                self.state, self.message = "failed", message
        except Exception as second:  # braking from a broken command: hold what was sent last
            self._ramp, self._ramp_time = None, None
            self.state, self.message = "failed", f"{message}; then {second}"
        return message

    def _publish_parameters(self, estimate: Estimate) -> None:
        msg = Float64MultiArray()
        msg.layout.dim = [MultiArrayDimension(label="phi_G:" + ";".join(estimate.names),
                                              size=len(estimate.names), stride=len(estimate.names))]
        msg.data = [float(v) for v in estimate.values]
        self.pub_params.publish(msg)

    @_guarded
    def _publish_diagnostics(self) -> None:
        point = self._point
        problem = self._input_problem()
        values: dict[str, Any] = {"state": self.state, "input": problem or "ok",
                                  "rejected_joint_states": self._rejected}
        if self._rejected:
            values["last_rejection"] = self._reject_reason
        if point is not None and self.state == "running":
            values.update({"joint": self.joints[point.joint], "pass": point.phase,
                           "percent": round(point.percent, 1)})
        level, message = self._level(problem)
        status = diagnostic_status(f"{NODE_NAME}: progress", level, message, values)
        self.pub_diag.publish(diagnostic_array(self, [status]))

    def _level(self, problem: str | None) -> tuple[int, str]:
        """The diagnostics level and message: the run's state and the input's problem."""
        state, message = self.state, self.message
        if state == "stopping":
            ending = self._ending[0]
            return (OK if ending == "cancelled" else ERROR), f"stopping: {message}"
        if state == "failed":
            if self._cause_is_input and problem is None:
                return WARN, f"run stopped: {message} (cleared: start a new run)"
            return ERROR, f"run stopped: {message}"
        if state == "done" and self.warnings:
            return WARN, message
        if problem is not None and state in ("idle", "done", "cancelled", "running"):
            return WARN, f"{message}; a start would be refused: {problem}"
        return OK, message


def main(args: Sequence[str] | None = None) -> int:
    """Console script ``identification_executor``.

    SIGINT and SIGTERM end the spin between two callbacks (``stop_signals``): with
    rclpy's own handlers the context can be shut down while the command timer
    publishes, and that publish fails with a traceback (seen with ``arm_balance``
    under load in ``test/process/test_signals.py``). A run still going then
    brakes to rest before the node is destroyed.
    """
    return run_node(IdentificationExecutor, args, stop_signals=True, exit_process=True)


if __name__ == "__main__":
    raise SystemExit(main())
