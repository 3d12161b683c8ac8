"""``identification_executor``: runs the seed-004 identification on the arm (lifecycle node).

Thin: parameters -> plan (:class:`~humanoid_balance.core.identification.trajectory.PlanFollower`)
-> position targets; recorded joint states -> :func:`segment_sweeps` ->
:func:`identify` -> results.

- ``configure`` loads the arm model (URDF), its collision geometry and the
  parameter set (the paper's 12 composite parameters for the 6-DOF lunar
  arm, the QR base set for any other chain); ``activate`` enables the
  services; ``deactivate`` stops a run where the arm is.
- ``/identification/start`` (Trigger): from the current joint states, plan
  the sweeps of joints n..1 (eq. 11: the joint sweeps at ``speed`` <= 3 deg/s
  about its entry of ``static_configuration``, by ``sweep_half_range``,
  the others hold it, or with ``optimize_configuration`` the GA-PSO solution
  of eq. 12 for each sweep), command them on ``/identification/command``
  (JointState positions and velocities, within the joint limits), record
  ``/joint_states``, and at the end cut the stream into sweeps, cancel
  friction (eq. 5), average the friction-free samples in blocks of
  ``average`` (as ``humanoid-balance identify --average`` and the experiment
  do), estimate (eq. 10), publish ``/identification/parameters``
  (transient local) and write ``output_path`` (YAML: names, values, units,
  standard deviations, per-joint fit RMSE).
- ``/identification/cancel`` (Trigger): hold the arm at its measured
  position (zero velocity) and stop.
- Refusals and stops: start is refused without fresh joint states that
  carry an effort for every arm joint (``torque_source: effort``; with
  ``current`` the effort field carries the motor current [A] and the torque
  is ``k_e I``, eq. 19); during a run, stale or non-finite joint states, a
  joint outside its limits or two links (or a link and the torso) closer
  than ``clearance`` stop the run with a hold, and diagnostics say why.
- Progress on ``/diagnostics``: state, joint, pass, percent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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

from humanoid_balance.core.identification import (
    DEFAULT_AVERAGE,
    EARTH_GRAVITY,
    LUNAR_JOINTS,
    METHODS,
)
from humanoid_balance.core.identification.estimation import Estimate
from humanoid_balance.core.identification.optimisation import (
    ClearanceChecker,
    optimise_static_configurations,
)
from humanoid_balance.core.identification.procedure import (
    identify,
    results_document,
    segment_sweeps,
)
from humanoid_balance.core.identification.regressor import (
    GravityRegressor,
    ParameterSet,
    identification_parameters,
)
from humanoid_balance.core.identification.trajectory import (
    MAX_SPEED_RAD_S,
    PlanFollower,
    identification_plan,
)
from humanoid_balance.exceptions import HumanoidBalanceError
from humanoid_balance.nodes.common import (
    ERROR,
    OK,
    WARN,
    destroy_timers,
    diagnostic_array,
    diagnostic_status,
    run_node,
)
from humanoid_balance.resources import urdf_path as package_urdf_path
from humanoid_balance.results import write_yaml

NODE_NAME = "identification_executor"
TORQUE_SOURCES = ("effort", "current")
LIMIT_TOLERANCE_RAD = math.radians(0.5)


def validate(name: str, value: Any) -> str | None:
    """Why a parameter value is refused (None when it is fine)."""
    if name == "speed" and not 0.0 < value <= math.degrees(MAX_SPEED_RAD_S) + 1e-9:
        return f"speed={value} deg/s: expected > 0 and <= 3 (the paper's quasi-static bound)"
    if name == "torque_source" and value not in TORQUE_SOURCES:
        return f"torque_source={value!r}: expected one of {TORQUE_SOURCES}"
    if name == "gravity" and not (math.isfinite(value) and value > 0.0):
        return f"gravity={value}: expected a finite value > 0 [m/s^2]"
    if name in ("clearance", "sweep_half_range", "rate", "joint_state_timeout", "trim") and not (
            math.isfinite(value) and value >= 0.0):
        return f"{name}={value}: expected a finite value >= 0"
    if name in ("rate", "sweep_half_range") and value <= 0.0:
        return f"{name}={value}: expected > 0"
    if name == "torque_constants" and (len(value) == 0 or min(value) <= 0.0):
        return f"torque_constants={list(value)}: expected values > 0 [N m/A]"
    if name == "method" and value not in METHODS:
        return f"method={value!r}: expected one of {', '.join(METHODS)}"
    if name == "average" and not (isinstance(value, int) and value >= 1):
        return f"average={value!r}: expected an integer >= 1 (samples per block)"
    return None


class IdentificationExecutor(LifecycleNode):
    """Lifecycle node running the identification trajectory and estimating gravity parameters."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self.declare_parameter("arm_joints", list(LUNAR_JOINTS))
        self.declare_parameter("urdf_path", "")
        self.declare_parameter("speed", 3.0)
        self.declare_parameter("torque_source", "effort")
        self.declare_parameter("torque_constants", [1.0] * 6)
        self.declare_parameter("gravity", EARTH_GRAVITY)
        self.declare_parameter("optimize_configuration", False)
        self.declare_parameter("clearance", 0.01)
        self.declare_parameter("output_path", "identification_results.yaml")
        self.declare_parameter("static_configuration", [0.0, 40.0, 20.0, 60.0, 40.0, 30.0])
        self.declare_parameter("sweep_half_range", 30.0)
        self.declare_parameter("rate", 100.0)
        self.declare_parameter("joint_state_timeout", 0.5)
        self.declare_parameter("trim", 0.5)
        self.declare_parameter("method", "sequential")
        self.declare_parameter("average", DEFAULT_AVERAGE)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.state = "unconfigured"
        self.message = ""
        self.estimate: Estimate | None = None
        self._timer: Any = None
        self._diag_timer: Any = None
        self._follower: PlanFollower | None = None
        self._last: tuple[float, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._stream: list[tuple[float, np.ndarray, np.ndarray, np.ndarray]] = []
        self._t0 = 0.0
        self._point: Any = None

    # --- parameters -----------------------------------------------------------------------

    def _on_set_parameters(self, params: Sequence[Parameter]) -> SetParametersResult:
        for p in params:
            reason = validate(p.name, p.value)
            if reason is not None:
                return SetParametersResult(successful=False, reason=reason)
            if self.state == "running":
                return SetParametersResult(successful=False,
                                           reason="parameters cannot change during a run: cancel first")
        return SetParametersResult(successful=True)

    def _p(self, name: str) -> Any:
        return self.get_parameter(name).value

    # --- lifecycle ------------------------------------------------------------------------

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Load the model, collision geometry and parameter set; create topics and services."""
        try:
            for name in ("speed", "torque_source", "gravity", "clearance", "rate",
                         "sweep_half_range", "torque_constants", "method", "trim",
                         "joint_state_timeout", "average"):
                reason = validate(name, self._p(name))
                if reason is not None:
                    raise HumanoidBalanceError(reason)
            urdf = self._p("urdf_path") or str(package_urdf_path("lunar_arm"))
            model = pin.buildModelFromUrdf(urdf)
            self.joints = tuple(self._p("arm_joints"))
            if self.joints != tuple(model.names[1:]):
                raise HumanoidBalanceError(
                    f"arm_joints {list(self.joints)} must be the URDF's chain "
                    f"{list(model.names[1:])}, in order")
            self.regressor = GravityRegressor(model, float(self._p("gravity")))
            self.pset: ParameterSet = identification_parameters(self.regressor)
            self.clearance = ClearanceChecker(urdf, model)
            n = len(self.joints)
            static = np.radians(np.asarray(self._p("static_configuration"), float))
            constants = np.asarray(self._p("torque_constants"), float)
            if static.shape != (n,) or constants.shape != (n,):
                raise HumanoidBalanceError(
                    f"static_configuration has {static.size} and torque_constants "
                    f"{constants.size} values: expected {n} each")
            self.static, self.torque_constants = static, constants
            self.lower, self.upper = model.lowerPositionLimit.copy(), model.upperPositionLimit.copy()
            half = math.radians(float(self._p("sweep_half_range")))
            ranges = [(max(s - half, lo), min(s + half, hi))
                      for s, lo, hi in zip(static, self.lower, self.upper, strict=True)]
            statics = [static] * n
            if self._p("optimize_configuration"):
                statics = self._optimised_statics(static, ranges)
            self.plan = identification_plan(statics, ranges,
                                            math.radians(float(self._p("speed"))))
            for sweep in self.plan:
                q = sweep.start_configuration()
                if np.any(q < self.lower) or np.any(q > self.upper):
                    raise HumanoidBalanceError(
                        f"static configuration {np.degrees(q).round(1).tolist()} deg of "
                        f"{self.joints[sweep.joint]}'s sweep is outside the joint limits")
                distance, pair = self.clearance.min_distance(q)
                if distance < float(self._p("clearance")):
                    raise HumanoidBalanceError(
                        f"static configuration of {self.joints[sweep.joint]}'s sweep leaves "
                        f"{distance * 1e3:.1f} mm between {pair}, less than clearance: "
                        "choose another static_configuration")
        except (HumanoidBalanceError, ValueError, RuntimeError) as exc:
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        qos = QoSProfile(depth=10)
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.pub_command = self.create_publisher(JointState, "/identification/command", qos)
        self.pub_params = self.create_publisher(Float64MultiArray, "/identification/parameters",
                                                latched)
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", qos)
        self.sub = self.create_subscription(JointState, "/joint_states", self._on_joint_states,
                                            QoSProfile(depth=100))
        self.srv_start = self.create_service(Trigger, "/identification/start", self._on_start)
        self.srv_cancel = self.create_service(Trigger, "/identification/cancel", self._on_cancel)
        self.state, self.message = "idle", "configured"
        return TransitionCallbackReturn.SUCCESS

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
        self._timer = self.create_timer(1.0 / float(self._p("rate")), self._on_timer)
        self._diag_timer = self.create_timer(0.5, self._publish_diagnostics)
        self.state = "idle"
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop a run where the arm is and stop the timers."""
        if self.state == "running":
            self._stop("cancelled", "deactivated during the run")
        self._destroy_timers()
        self.state = "inactive"
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Drop topics and services."""
        self._destroy_timers()
        self.destroy_subscription(self.sub)
        for pub in (self.pub_command, self.pub_params, self.pub_diag):
            self.destroy_publisher(pub)
        self.destroy_service(self.srv_start)
        self.destroy_service(self.srv_cancel)
        self.state = "unconfigured"
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Hold if running."""
        if self.state == "running":
            self._stop("cancelled", "shutdown during the run")
        self._destroy_timers()
        return TransitionCallbackReturn.SUCCESS

    def _destroy_timers(self) -> None:
        destroy_timers(self, self._timer, self._diag_timer)
        self._timer = self._diag_timer = None

    # --- inputs -----------------------------------------------------------------------------

    def _now(self) -> float:
        return float(self.get_clock().now().nanoseconds) * 1e-9

    def _on_joint_states(self, msg: JointState) -> None:
        index = {n: i for i, n in enumerate(msg.name)}
        missing = [j for j in self.joints if j not in index]
        if missing:
            return  # another group's joint states
        idx = [index[j] for j in self.joints]
        q = np.array([msg.position[i] for i in idx]) if len(msg.position) == len(msg.name) \
            else np.full(len(idx), np.nan)
        qd = np.array([msg.velocity[i] for i in idx]) if len(msg.velocity) == len(msg.name) \
            else np.full(len(idx), np.nan)
        effort = np.array([msg.effort[i] for i in idx]) if len(msg.effort) == len(msg.name) \
            else np.full(len(idx), np.nan)
        tau = effort * self.torque_constants if self._p("torque_source") == "current" else effort
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        t = stamp if stamp > 0.0 else self._now()
        self._last = (t, q, qd, tau)
        if self.state == "running" and np.all(np.isfinite(q)) and np.all(np.isfinite(tau)):
            self._stream.append(self._last)

    def _input_problem(self) -> str | None:
        if self._last is None:
            return "no /joint_states with the arm joints received"
        t, q, qd, tau = self._last
        age = self._now() - t
        if age > float(self._p("joint_state_timeout")):
            return (f"/joint_states are {age:.3f} s old (timeout "
                    f"{float(self._p('joint_state_timeout')):.3f} s)")
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
            return "/joint_states position or velocity missing or not finite"
        if not np.all(np.isfinite(tau)):
            return (f"/joint_states carry no finite effort for every arm joint "
                    f"({self._p('torque_source')} is needed to measure torque)")
        return None

    # --- services ------------------------------------------------------------------------------

    def _on_start(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        if self._timer is None:
            response.success, response.message = False, "not active: activate the node first"
            return response
        if self.state == "running":
            response.success, response.message = False, "a run is in progress: cancel it first"
            return response
        problem = self._input_problem()
        if problem is not None:
            response.success, response.message = False, f"refused to start: {problem}"
            self.get_logger().warning(response.message)
            return response
        assert self._last is not None
        self._follower = PlanFollower(self.plan, self._last[1])
        self._stream = []
        self._t0 = self._now()
        self.estimate = None
        self.state, self.message = "running", "started"
        response.success = True
        response.message = (f"started: {len(self.plan)} sweeps, "
                            f"{self._follower.duration:.1f} s")
        self.get_logger().info(response.message)
        return response

    def _on_cancel(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        if self.state != "running":
            response.success, response.message = False, f"nothing to cancel (state {self.state})"
            return response
        self._stop("cancelled", "cancelled on request")
        response.success, response.message = True, "cancelled: holding the arm where it is"
        return response

    # --- loop ----------------------------------------------------------------------------------

    def _command(self, position: np.ndarray, velocity: np.ndarray) -> None:
        msg = JointState()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.name = list(self.joints)
        msg.position = np.clip(position, self.lower, self.upper).tolist()
        msg.velocity = np.asarray(velocity, float).tolist()
        self.pub_command.publish(msg)

    def _stop(self, state: str, message: str) -> None:
        """Hold at the measured position (zero velocity) and leave the run."""
        if self._last is not None and np.all(np.isfinite(self._last[1])):
            self._command(self._last[1], np.zeros(len(self.joints)))
        elif self._point is not None:
            self._command(self._point.position, np.zeros(len(self.joints)))
        self.state, self.message = state, message
        level = self.get_logger().info if state == "cancelled" else self.get_logger().error
        level(f"run stopped: {message}")

    def _on_timer(self) -> None:
        if self.state != "running" or self._follower is None:
            return
        problem = self._input_problem()
        if problem is None:
            assert self._last is not None
            q = self._last[1]
            out = np.flatnonzero((q < self.lower - LIMIT_TOLERANCE_RAD)
                                 | (q > self.upper + LIMIT_TOLERANCE_RAD))
            if out.size:
                problem = f"joints {[self.joints[i] for i in out]} left their limits"
            else:
                distance, pair = self.clearance.min_distance(q)
                if distance < float(self._p("clearance")):
                    problem = (f"clearance {distance * 1e3:.1f} mm between {pair} is below "
                               f"{float(self._p('clearance')) * 1e3:.1f} mm")
        if problem is not None:
            self._stop("failed", problem)
            return
        point = self._follower.at(self._now() - self._t0)
        self._point = point
        if point.phase == "done":
            self._command(point.position, np.zeros(len(self.joints)))
            self._finish()
            return
        self._command(point.position, point.velocity)

    def _finish(self) -> None:
        try:
            t = np.array([s[0] for s in self._stream])
            recordings = segment_sweeps(
                t, np.array([s[1] for s in self._stream]), np.array([s[2] for s in self._stream]),
                np.array([s[3] for s in self._stream]),
                moving_rad_s=0.3 * math.radians(float(self._p("speed"))),
                trim_s=float(self._p("trim")))
            self.estimate = identify(recordings, self.regressor, self.pset,
                                     method=str(self._p("method")), average=int(self._p("average")))
        except (HumanoidBalanceError, ValueError) as exc:
            self.state, self.message = "failed", f"estimation failed: {exc}"
            self.get_logger().error(self.message)
            return
        self._publish_parameters(self.estimate)
        path = Path(str(self._p("output_path")))
        write_yaml(path, results_document(self.estimate, self.joints, float(self._p("gravity")),
                                          len(recordings)))
        self.state, self.message = "done", f"parameters written to {path}"
        self.get_logger().info(self.message)

    def _publish_parameters(self, estimate: Estimate) -> None:
        msg = Float64MultiArray()
        msg.layout.dim = [MultiArrayDimension(label="phi_G:" + ";".join(estimate.names),
                                              size=len(estimate.names), stride=len(estimate.names))]
        msg.data = [float(v) for v in estimate.values]
        self.pub_params.publish(msg)

    def _publish_diagnostics(self) -> None:
        point = self._point
        values: dict[str, Any] = {"state": self.state}
        if point is not None and self.state == "running":
            values.update({"joint": self.joints[point.joint], "pass": point.phase,
                           "percent": round(point.percent, 1)})
        level = {"failed": ERROR, "cancelled": WARN}.get(self.state, OK)
        status = diagnostic_status(f"{NODE_NAME}: progress", level, self.message, values)
        self.pub_diag.publish(diagnostic_array(self, [status]))


def main(args: Sequence[str] | None = None) -> int:
    """Console script ``identification_executor``.

    SIGINT and SIGTERM end the spin between two callbacks (``stop_signals``): with
    rclpy's own handlers the context can be shut down while the command timer
    publishes, and that publish fails with a traceback (seen with ``arm_balance``
    under load in ``test/process/test_signals.py``).
    """
    return run_node(IdentificationExecutor, args, stop_signals=True)


if __name__ == "__main__":
    raise SystemExit(main())
