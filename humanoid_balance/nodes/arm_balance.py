"""``arm_balance``: resolved momentum control of the two arms (seed 000) as a lifecycle node.

Thin: parameters -> :class:`~humanoid_balance.core.rmc.RmcController` -> messages.

- ``configure`` loads the model and builds the controller; ``activate`` starts
  commanding (from the latest joint states); ``deactivate`` publishes a
  zero-velocity hold at the last commanded positions and stops.
- Every cycle (a timer at ``rate``, or each ``/joint_states`` message with
  ``trigger: joint_states``, at most ``rate``): job input (hand twist in ``W``
  on ``/arm_balance/job_twist`` or job joint velocities on
  ``/arm_balance/job_joint_velocities``) -> controller step -> command for both
  arms on ``/arm_balance/command`` (positions and velocities), momentum and
  model ZMP.
- ``trigger: joint_states`` (the simulation): a cycle runs for each joint state
  whose stamp is at least 0.9 / ``rate`` after the last triggering one, only while
  active; every output of the cycle (command, momentum, model ZMP, a hold) carries
  the stamp of that joint state and the step is the difference of the stamps, so
  ``mujoco_sim`` in lock-step pairs the command with its period. A joint state
  with the same stamp again (a lock-step simulation republishing its t = 0 state
  while it waits) is answered with the last command again.
- Bad input never reaches the motors:

  * joint states with a non-finite value, lacking an arm joint, or older than
    ``joint_state_timeout``: a zero-velocity hold at the last commanded
    positions (nothing is computed from them), diagnostics say why;
  * a job twist with a NaN, in a frame other than ``W``, or a job joint
    command naming other joints: ignored (the job input becomes zero, so the
    job arm comes to a stop within its acceleration limits while balance
    goes on), diagnostics say why; the same when the last job input is older
    than ``job_input_timeout``.
- Balance guard: when the measured margin (``/zmp/stability_margin``, fresh)
  or the predicted one (the model ZMP's margin, last cycle) falls under
  ``guard_slow_margin``, the job input is scaled down linearly, to zero at
  ``guard_hold_margin`` (the job arm then stops and holds); diagnostics say so.
- ``job_arm`` and ``selection`` may change at run time (validated; applied
  between cycles). ``mode``: ``ground`` (this controller) or ``free_floating``
  (the generalized Jacobian of seed 002, :mod:`humanoid_balance.core.gjm`).
"""

from __future__ import annotations

import array
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from geometry_msgs.msg import PointStamped, PoseStamped, TwistStamped, WrenchStamped
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.lifecycle import LifecycleState, TransitionCallbackReturn
from rclpy.lifecycle import Node as LifecycleNode
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from rclpy.timer import Timer
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64
from std_srvs.srv import SetBool

from humanoid_balance import cdr
from humanoid_balance.core.free_floating import FreeFloatingArmController
from humanoid_balance.core.gjm import row_indices
from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.rmc import (
    ARMS,
    MOMENTUM_ROWS,
    REFERENCE_POINTS,
    RmcController,
    RmcInput,
    RmcOutput,
    selection_rows,
    support_polygon_from_frames,
)
from humanoid_balance.exceptions import HumanoidBalanceError
from humanoid_balance.nodes.common import (
    ERROR,
    OK,
    WARN,
    LogThrottle,
    destroy_timers,
    diagnostic_array,
    diagnostic_status,
    read_joint_state,
    run_node,
)
from humanoid_balance.resources import urdf_path as package_urdf_path

NODE_NAME = "arm_balance"
MODES = ("ground", "free_floating")
TRIGGERS = ("timer", "joint_states")
TWIST_FRAME = "W"
Controller = RmcController | FreeFloatingArmController  # runtime union: Python >= 3.10
FLOATING_TWIST_FRAME = "world"  # free_floating: inertial frame of twist and momentum (no W)
NEVER = -1  # node-clock ns of an input never received


def _doubles(values: np.ndarray) -> array.array:
    out = array.array("d")
    out.frombytes(np.ascontiguousarray(values, dtype=np.float64).tobytes())
    return out


@dataclass
class _Settings:
    """Validated parameters."""

    job_arm: str
    selection: tuple[str, ...]
    secondary: tuple[str, ...]
    reference_point: str
    mode: str
    rate: float
    trigger: str
    gravity: float
    friction_coefficient: float
    foot_distance: float
    position_margin: float
    damping_threshold: float
    max_damping: float
    joint_state_timeout: float
    job_input_timeout: float
    margin_timeout: float
    guard_slow_margin: float
    guard_hold_margin: float
    urdf_path: str
    diagnostics_rate: float
    base_pose_topic: str = "/base_pose"
    free_floating_rows: tuple[str, ...] = ("vx", "vy")


def parse_rows(text: str) -> tuple[str, ...]:
    """Momentum rows from a comma-separated string ('' = none), validated."""
    names = [r.strip() for r in text.split(",") if r.strip()]
    return selection_rows(names) if names else ()


def validate(name: str, value: object) -> str | None:
    """Why a parameter value cannot be used, or None when it can."""
    if name == "secondary":
        try:
            parse_rows(str(value))
        except HumanoidBalanceError as exc:
            return str(exc)
    if name == "job_arm" and value not in tuple(ARMS):
        return f"job_arm={value!r}: expected 'right' or 'left'"
    if name == "selection":
        try:
            selection_rows(list(value))  # type: ignore[call-overload]
        except (HumanoidBalanceError, TypeError) as exc:
            return str(exc)
    if name == "reference_point" and value not in REFERENCE_POINTS:
        return f"reference_point={value!r}: expected one of {list(REFERENCE_POINTS)}"
    if name == "mode" and value not in MODES:
        return f"mode={value!r}: expected one of {list(MODES)}"
    if name == "free_floating_rows":
        if not isinstance(value, (list, tuple)):
            return f"free_floating_rows={value!r}: expected a list of velocity rows"
        try:
            row_indices([str(r) for r in value])
        except HumanoidBalanceError as exc:
            return f"free_floating_rows: {exc}"
    if name == "trigger" and value not in TRIGGERS:
        return f"trigger={value!r}: expected one of {list(TRIGGERS)}"
    positive = ("rate", "joint_state_timeout", "job_input_timeout", "margin_timeout",
                "diagnostics_rate", "foot_distance")
    non_negative = ("gravity", "friction_coefficient", "position_margin", "damping_threshold",
                    "max_damping")
    if name in positive + non_negative:
        try:
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return f"{name}={value!r} must be a number"
        if not math.isfinite(number) or number < 0 or (name in positive and number == 0):
            return f"{name}={number} must be finite and {'> 0' if name in positive else '>= 0'}"
    return None


class ArmBalanceNode(LifecycleNode):
    """The ``arm_balance`` lifecycle node; see the module docstring."""

    RUNTIME = frozenset({"job_arm", "selection", "secondary", "guard_slow_margin",
                         "guard_hold_margin",
                         "job_input_timeout", "joint_state_timeout", "margin_timeout"})

    def __init__(self, **kwargs: object) -> None:
        super().__init__(NODE_NAME, **kwargs)  # type: ignore[arg-type]
        d = ParameterDescriptor
        self.declare_parameter("job_arm", "right", d(description="right | left"))
        self.declare_parameter("selection", ["Lx", "Ly"],
                               d(description="momentum rows held at zero: subset of "
                                 f"{list(MOMENTUM_ROWS)}"))
        self.declare_parameter("secondary", "",
                               d(description="rows reduced best effort after selection, "
                                 "comma-separated (e.g. 'Lz'); empty: none"))
        self.declare_parameter("reference_point", "W", d(description="W | com"))
        self.declare_parameter("mode", "ground", d(description="ground | free_floating"))
        self.declare_parameter("rate", 500.0, d(description="control rate, Hz"))
        self.declare_parameter("trigger", "timer",
                               d(description="timer | joint_states (each message, at most rate)"))
        self.declare_parameter("gravity", 9.81, d(description="m/s^2"))
        self.declare_parameter("friction_coefficient", 0.3, d(description="mu, feet-floor"))
        self.declare_parameter("foot_distance", 0.4, d(description="C, between foot centres, m"))
        self.declare_parameter("position_margin", 0.02,
                               d(description="distance kept from joint position limits, rad"))
        self.declare_parameter("damping_threshold", 0.02,
                               d(description="singular value where job-arm damping starts"))
        self.declare_parameter("max_damping", 0.05, d(description="damping at a singularity"))
        self.declare_parameter("joint_state_timeout", 0.05,
                               d(description="older joint states are stale, s"))
        self.declare_parameter("job_input_timeout", 0.1,
                               d(description="older job input counts as zero, s"))
        self.declare_parameter("margin_timeout", 0.1,
                               d(description="older /zmp/stability_margin is ignored, s"))
        self.declare_parameter("guard_slow_margin", 0.03,
                               d(description="stability margin where the job arm slows, m"))
        self.declare_parameter("guard_hold_margin", 0.01,
                               d(description="stability margin where the job arm holds, m"))
        self.declare_parameter("urdf_path", "", d(description="URDF; empty: the package's"))
        self.declare_parameter("base_pose_topic", "/base_pose",
                               d(description="free_floating: base pose (PoseStamped, world); "
                                             "the simulation's is /sim/base_pose"))
        self.declare_parameter("free_floating_rows", ["vx", "vy"],
                               d(description="free_floating: hand velocity rows controlled"))
        self.declare_parameter("diagnostics_rate", 10.0, d(description="Hz"))
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.settings: _Settings | None = None
        self.controller: Controller | None = None
        self.model: RobotModel | None = None
        self._pending: dict[str, object] = {}
        self._reset_state()

    # --- state ------------------------------------------------------------------

    def _reset_state(self) -> None:
        self._arm_joint_idx: np.ndarray | None = None
        self._name_cache: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._joint_reader = cdr.JointStateReader()
        self._q: np.ndarray | None = None
        self._q_of_joint = np.zeros(0, dtype=int)
        self._joint_pos: np.ndarray | None = None
        # node-clock ns of the last good sample, NEVER before the first (a simulation's clock
        # starts at 0, so 0 is a time like any other)
        self._joint_seen: np.ndarray | None = None
        self._joint_index: dict[str, int] = {}
        self._twist: np.ndarray | None = None
        self._job_qd: np.ndarray | None = None
        self._job_input_ns = 0
        self._measured_margin: float | None = None
        self._margin_ns = 0
        self._running = False  # controller reset and commanding
        self._enabled = True
        self._problems: dict[str, str] = {}
        self._last: RmcOutput | None = None
        self._guard_scale = 1.0
        self._hold_position: np.ndarray | None = None
        self._last_cycle_wall = 0.0
        self._periods: list[float] = []
        self._step_us: list[float] = []
        self._overruns = 0
        self._cycles = 0
        self._holds = 0
        self._last_cycle_ns = 0
        self._last_trigger_ns: int | None = None  # stamp of the last triggering joint state
        self._last_command: bytes | None = None  # the last command published, serialized
        self._active = False
        self._base_pose_ns = NEVER
        self._timer: Timer | None = None
        self._diag_timer: Timer | None = None
        self._subs: list[object] = []
        # rclpy's throttle_duration_sec costs about 0.4 ms a call, even when it logs nothing
        self._warn_problem = LogThrottle(self.get_logger(), 1.0)
        self._warn_joint_states = LogThrottle(self.get_logger(), 1.0)
        self._warn_hold = LogThrottle(self.get_logger(), 1.0)

    # --- parameters ---------------------------------------------------------------

    def _read_settings(self) -> _Settings:
        p = self.get_parameter
        values = {name: p(name).value for name in (
            "job_arm", "selection", "secondary", "reference_point", "mode", "rate", "trigger", "gravity",
            "friction_coefficient", "foot_distance", "position_margin", "damping_threshold",
            "max_damping", "joint_state_timeout", "job_input_timeout", "margin_timeout",
            "guard_slow_margin", "guard_hold_margin", "urdf_path", "diagnostics_rate",
            "base_pose_topic", "free_floating_rows")}
        for name, value in values.items():
            problem = validate(name, value)
            if problem:
                raise HumanoidBalanceError(problem)
        secondary = parse_rows(str(values["secondary"]))
        overlap = sorted(set(secondary) & set(selection_rows(list(values["selection"]))))
        if overlap:
            raise HumanoidBalanceError(f"rows {overlap} are both in selection and secondary")
        if float(values["guard_hold_margin"]) >= float(values["guard_slow_margin"]):
            raise HumanoidBalanceError(
                f"guard_hold_margin={values['guard_hold_margin']} must be below "
                f"guard_slow_margin={values['guard_slow_margin']}")
        return _Settings(
            job_arm=str(values["job_arm"]), selection=selection_rows(list(values["selection"])),
            secondary=secondary,
            reference_point=str(values["reference_point"]), mode=str(values["mode"]),
            rate=float(values["rate"]), trigger=str(values["trigger"]),
            gravity=float(values["gravity"]),
            friction_coefficient=float(values["friction_coefficient"]),
            foot_distance=float(values["foot_distance"]),
            position_margin=float(values["position_margin"]),
            damping_threshold=float(values["damping_threshold"]),
            max_damping=float(values["max_damping"]),
            joint_state_timeout=float(values["joint_state_timeout"]),
            job_input_timeout=float(values["job_input_timeout"]),
            margin_timeout=float(values["margin_timeout"]),
            guard_slow_margin=float(values["guard_slow_margin"]),
            guard_hold_margin=float(values["guard_hold_margin"]),
            urdf_path=str(values["urdf_path"]),
            diagnostics_rate=float(values["diagnostics_rate"]),
            base_pose_topic=str(values["base_pose_topic"]),
            free_floating_rows=tuple(str(r) for r in list(values["free_floating_rows"])))

    def _on_set_parameters(self, params: Sequence[Parameter]) -> SetParametersResult:
        configured = self.settings is not None
        for param in params:
            problem = validate(param.name, param.value)
            if problem:
                return SetParametersResult(successful=False, reason=problem)
            if configured and self.settings is not None and self.settings.mode == "free_floating" \
                    and param.name in ("selection", "secondary"):
                return SetParametersResult(
                    successful=False, reason=f"{param.name} does not apply in free_floating mode: "
                    "a floating robot conserves its whole momentum")
            if configured and param.name not in self.RUNTIME and param.name != "use_sim_time":
                return SetParametersResult(
                    successful=False,
                    reason=f"{param.name} is read at configure: deactivate, cleanup and "
                           "configure again to change it")
        if configured:
            slow = next((float(p.value) for p in params if p.name == "guard_slow_margin"),
                        self.settings.guard_slow_margin)  # type: ignore[union-attr]
            hold = next((float(p.value) for p in params if p.name == "guard_hold_margin"),
                        self.settings.guard_hold_margin)  # type: ignore[union-attr]
            if hold >= slow:
                return SetParametersResult(
                    successful=False,
                    reason=f"guard_hold_margin={hold} must be below guard_slow_margin={slow}")
            pending_sel = self._pending.get("selection", self.settings.selection)  # type: ignore[union-attr]
            pending_sec = self._pending.get("secondary", ",".join(self.settings.secondary))  # type: ignore[union-attr]
            sel = next((list(p.value) for p in params if p.name == "selection"), pending_sel)
            sec = next((str(p.value) for p in params if p.name == "secondary"), pending_sec)
            overlap = sorted(set(selection_rows(list(sel))) & set(parse_rows(str(sec))))  # type: ignore[call-overload]
            if overlap:
                return SetParametersResult(
                    successful=False,
                    reason=f"rows {overlap} would be both in selection and secondary")
            for param in params:  # applied between cycles
                if param.name in self.RUNTIME:
                    self._pending[param.name] = param.value
        return SetParametersResult(successful=True)

    def _apply_pending(self) -> None:
        if not self._pending or self.settings is None or self.controller is None:
            return
        pending, self._pending = self._pending, {}
        s = self.settings
        for name, value in pending.items():
            if name == "job_arm":
                s.job_arm = str(value)
                self.controller.set_job_arm(s.job_arm)
                self._twist = None
                self._job_qd = None
            elif name == "selection":
                s.selection = selection_rows(list(value))  # type: ignore[call-overload]
            elif name == "secondary":
                s.secondary = parse_rows(str(value))
            else:
                setattr(s, name, float(value))  # type: ignore[arg-type]
            self.get_logger().info(f"{name} set to {value}")
        if "selection" in pending or "secondary" in pending:  # checked together when set
            self.controller.set_selection(s.selection, s.secondary)

    # --- lifecycle ------------------------------------------------------------------------

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Read and check the parameters, load the model, build the controller and topics."""
        try:
            settings = self._read_settings()
            model, controller = self._build_controller(settings)
        except HumanoidBalanceError as exc:
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        self._reset_state()
        self.settings, self.model, self.controller = settings, model, controller
        self._joint_index = {n: i for i, n in enumerate(model.joint_names)}
        self._joint_pos = np.full(len(model.joint_names), np.nan)
        self._joint_seen = np.full(len(model.joint_names), NEVER, dtype=np.int64)
        self._q_of_joint = model.q_index(list(model.joint_names))
        self._q = model.neutral()  # joints never received stay at zero (locked, standing)
        qos = QoSProfile(depth=10)
        self.pub_command = self.create_lifecycle_publisher(JointState, "/arm_balance/command", qos)
        self.pub_momentum = self.create_lifecycle_publisher(
            WrenchStamped, "/arm_balance/momentum", qos)
        self.pub_zmp = self.create_lifecycle_publisher(PointStamped, "/arm_balance/model_zmp", qos)
        from diagnostic_msgs.msg import DiagnosticArray

        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", qos)
        self._subs = [
            # raw: /joint_states comes at 1 kHz, read from its CDR bytes (humanoid_balance.cdr)
            self.create_subscription(JointState, "/joint_states", self._on_joint_states, qos,
                                     raw=True),
            self.create_subscription(TwistStamped, "/arm_balance/job_twist", self._on_twist, qos),
            self.create_subscription(JointState, "/arm_balance/job_joint_velocities",
                                     self._on_job_joints, qos),
            self.create_subscription(Float64, "/zmp/stability_margin", self._on_margin, qos),
        ]
        if settings.mode == "free_floating":
            self._subs.append(self.create_subscription(
                PoseStamped, settings.base_pose_topic, self._on_base_pose, qos))
        self.srv_enable = self.create_service(SetBool, "/arm_balance/enable", self._on_enable)
        # per-cycle outputs are published as CDR bytes from templates (humanoid_balance.cdr):
        # building and serializing rclpy messages cost more than the controller step
        self._cmd_writer = cdr.JointStateCommandWriter(self.controller.names)
        # ground: about the reference point (W or the CoM); free_floating: about the CoM, world axes
        self._momentum_writer = cdr.wrench_stamped_writer(
            FLOATING_TWIST_FRAME if settings.mode == "free_floating" else settings.reference_point)
        self._zmp_writer = cdr.PointStampedWriter(TWIST_FRAME)
        self.get_logger().info(
            f"configured: job arm {settings.job_arm}, S = {list(settings.selection)} about "
            f"{settings.reference_point}, {settings.rate:g} Hz ({settings.trigger}), "
            f"mode {settings.mode}")
        return TransitionCallbackReturn.SUCCESS

    def _build_controller(self, settings: _Settings) -> tuple[RobotModel, Controller]:
        """The model and the controller of the mode: RMC on the ground, or J* RMRC floating."""
        if settings.mode == "free_floating":
            path = settings.urdf_path or str(package_urdf_path("space_robot"))
            model = RobotModel(path, floating_base=True, gravity=settings.gravity)
            arms = {arm: model.group(group) for arm, group in ARMS.items()}
            controller: Controller = FreeFloatingArmController(
                model, arms, {arm: f"{arm}_hand" for arm in ARMS}, job_arm=settings.job_arm,
                rows=settings.free_floating_rows, position_margin=settings.position_margin)
            return model, controller
        path = settings.urdf_path or str(package_urdf_path("humanoid"))
        model = RobotModel(path, world_frame="W", gravity=settings.gravity)
        controller = RmcController(
            model, job_arm=settings.job_arm, selection=settings.selection,
            reference_point=settings.reference_point,
            friction_coefficient=settings.friction_coefficient,
            foot_distance=settings.foot_distance,
            damping_threshold=settings.damping_threshold, max_damping=settings.max_damping,
            position_margin=settings.position_margin,
            support_polygon=support_polygon_from_frames(model))
        return model, controller

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Start the control loop; commands start once fresh joint states arrive."""
        assert self.settings is not None  # configured before activate (lifecycle)
        self._running = False
        self._enabled = True
        self._active = True
        self._last_trigger_ns = None
        period = 1.0 / self.settings.rate
        if self.settings.trigger == "timer":
            self._timer = self.create_timer(period, self._on_timer)
        self._diag_timer = self.create_timer(1.0 / self.settings.diagnostics_rate,
                                             self._publish_diagnostics)
        self.get_logger().info("active")
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Hold the arms at the last commanded positions with zero velocity, stop the loop."""
        if self._running:
            self._publish_hold("deactivated")
        self._destroy_timers()
        self._running = False
        self._active = False
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Drop the controller, topics and services."""
        self._destroy_timers()
        for sub in self._subs:
            self.destroy_subscription(sub)  # type: ignore[arg-type]
        for pub in (self.pub_command, self.pub_momentum, self.pub_zmp, self.pub_diag):
            self.destroy_publisher(pub)
        self.destroy_service(self.srv_enable)
        self.settings = None
        self.controller = None
        self.model = None
        self._reset_state()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Hold if commanding, then stop."""
        if self._running:
            self._publish_hold("shutdown")
        self._destroy_timers()
        self._active = False
        return TransitionCallbackReturn.SUCCESS

    def _destroy_timers(self) -> None:
        destroy_timers(self, self._timer, self._diag_timer)
        self._timer = self._diag_timer = None

    # --- inputs ------------------------------------------------------------------------------

    def _now_ns(self) -> int:
        return int(self.get_clock().now().nanoseconds)

    def _on_joint_states(self, msg: bytes | JointState) -> None:
        """A ``/joint_states`` message: serialized (the subscription is raw) or a JointState."""
        if self._joint_pos is None or self._joint_seen is None or self._q is None:
            return
        stamp, names, position = read_joint_state(self._joint_reader, msg)
        self._joint_state(names, position, stamp)

    def _joint_state(self, names: tuple[str, ...], position: np.ndarray, stamp: int) -> None:
        assert self._joint_pos is not None and self._joint_seen is not None and self._q is not None
        if position.shape != (len(names),):
            self._problem("joint_states", f"joint states have {position.size} positions for "
                          f"{len(names)} names: ignored")
            return
        if not np.isfinite(position).all():
            bad = [n for n, v in zip(names, position, strict=True) if not math.isfinite(v)]
            self._problem("joint_states", f"joint states have non-finite positions for {bad}: "
                          "ignored")
            return
        cached = self._name_cache.get(names)
        if cached is None:
            known = [k for k, n in enumerate(names) if n in self._joint_index]
            joints = np.array([self._joint_index[names[k]] for k in known], dtype=int)
            cached = (np.array(known, dtype=int), joints, self._q_of_joint[joints])
            if len(self._name_cache) < 64:
                self._name_cache[names] = cached
        msg_idx, joint_idx, q_idx = cached
        now = self._now_ns()
        values = position[msg_idx]
        self._joint_pos[joint_idx] = values
        self._joint_seen[joint_idx] = now
        self._q[q_idx] = values
        if self._active and self.settings is not None and self.settings.trigger == "joint_states":
            self._on_trigger(now, stamp)

    def _on_trigger(self, now: int, stamp: int) -> None:
        """A joint state stamped ``stamp`` [ns] arrived: a cycle at most ``rate``, by the stamps."""
        assert self.settings is not None
        last = self._last_trigger_ns
        if last is not None and stamp == last:
            self._repeat_last_command(stamp)  # the same period again: the same answer
            return
        # a stamp going back (a restarted simulation, a looping bag) starts over
        if last is None or stamp < last or stamp - last >= 0.9e9 / self.settings.rate:
            self._last_trigger_ns = stamp
            self._cycle(now, stamp)

    def _on_base_pose(self, msg: PoseStamped) -> None:
        if self._q is None:
            return
        p, o = msg.pose.position, msg.pose.orientation
        base = np.array([p.x, p.y, p.z, o.x, o.y, o.z, o.w])
        norm = float(np.linalg.norm(base[3:]))
        if not np.all(np.isfinite(base)) or abs(norm - 1.0) > 1e-3:
            self._problem("base_pose", f"base pose {base.round(4).tolist()} is not finite or its "
                          "quaternion is not unit: ignored")
            return
        self._problems.pop("base_pose", None)
        base[3:] /= norm
        self._q[0:7] = base
        self._base_pose_ns = self._now_ns()

    def _on_twist(self, msg: TwistStamped) -> None:
        frame = msg.header.frame_id
        t = msg.twist
        twist = np.array([t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y,
                          t.angular.z])
        expected = FLOATING_TWIST_FRAME if self.settings is not None and \
            self.settings.mode == "free_floating" else TWIST_FRAME
        if frame != expected:
            self._problem("job_input", f"job twist in frame {frame!r}, expected {expected!r}: "
                          "ignored, job arm stopping")
            self._twist = None
            self._job_qd = None
            return
        if not np.all(np.isfinite(twist)):
            self._problem("job_input", "job twist has non-finite values: ignored, job arm stopping")
            self._twist = None
            self._job_qd = None
            return
        self._problems.pop("job_input", None)
        self._twist = twist
        self._job_qd = None
        self._job_input_ns = self._now_ns()

    def _on_job_joints(self, msg: JointState) -> None:
        if self.controller is None:
            return
        names = tuple(msg.name)
        velocity = np.asarray(msg.velocity, dtype=float)
        expected = self.controller.job_names
        if set(names) != set(expected) or velocity.shape != (len(names),):
            self._problem("job_input", f"job joint velocities must name exactly {list(expected)} "
                          f"with one velocity each; got {list(names)}: ignored, job arm stopping")
            self._twist = None
            self._job_qd = None
            return
        if not np.all(np.isfinite(velocity)):
            self._problem("job_input", "job joint velocities have non-finite values: ignored, "
                          "job arm stopping")
            self._twist = None
            self._job_qd = None
            return
        order = [names.index(n) for n in expected]
        self._problems.pop("job_input", None)
        self._job_qd = velocity[order]
        self._twist = None
        self._job_input_ns = self._now_ns()

    def _on_margin(self, msg: Float64) -> None:
        if math.isfinite(msg.data):
            self._measured_margin = float(msg.data)
            self._margin_ns = self._now_ns()

    def _on_enable(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        self._enabled = bool(request.data)
        response.success = True
        response.message = "job arm enabled" if self._enabled else \
            "job arm disabled: it stops and holds, balance continues"
        self.get_logger().info(response.message)
        return response

    def _problem(self, key: str, text: str) -> None:
        self._problems[key] = text
        self._warn_problem.warning(text)

    # --- the cycle ------------------------------------------------------------------------------

    def _joint_state_problem(self, now: int) -> str | None:
        assert self._joint_pos is not None and self._joint_seen is not None
        assert self.controller is not None and self.model is not None and self.settings is not None
        arm_idx = self._arm_joint_idx
        if arm_idx is None or len(arm_idx) != len(self.controller.names):
            arm_idx = np.array([self._joint_index[n] for n in self.controller.names], dtype=int)
            self._arm_joint_idx = arm_idx  # the same set of joints whichever arm is the job arm
        seen = self._joint_seen[arm_idx]
        if (seen == NEVER).any():
            never = [self.model.joint_names[int(arm_idx[k])] for k in np.flatnonzero(seen == NEVER)]
            return f"joint states lack arm joints {never}: holding"
        oldest = now - int(seen.min())
        if oldest > self.settings.joint_state_timeout * 1e9:
            return (f"arm joint states are {oldest * 1e-9:.3f} s old, older than "
                    f"joint_state_timeout={self.settings.joint_state_timeout} s: holding")
        return None

    def _on_timer(self) -> None:
        # no parameter: rclpy (Kilted) hands a TimerInfo to timer callbacks that take one
        self._cycle()

    def _cycle(self, now_ns: int | None = None, stamp_ns: int | None = None) -> None:
        """One control cycle at node-clock time ``now_ns``; outputs stamped ``stamp_ns`` (default now)."""
        if self.controller is None or self.settings is None or self.model is None:
            return
        wall = time.perf_counter()
        if self._last_cycle_wall > 0:
            period = wall - self._last_cycle_wall
            self._periods.append(period)
            if period > 1.5 / self.settings.rate:
                self._overruns += 1
        self._last_cycle_wall = wall
        now = self._now_ns() if now_ns is None else now_ns
        cycle_ns = now if stamp_ns is None else stamp_ns
        nominal = 1.0 / self.settings.rate
        # the step is the time since the last cycle on the node clock (simulation time with
        # use_sim_time), or between the triggering stamps, so that late cycles still integrate
        # the commanded positions at the commanded speed; clamped to [0.5, 10] periods (a longer
        # gap: the stale-input checks hold)
        dt = nominal if self._last_cycle_ns == 0 else \
            min(max((cycle_ns - self._last_cycle_ns) * 1e-9, 0.5 * nominal), 10.0 * nominal)
        self._last_cycle_ns = cycle_ns
        self._apply_pending()
        problem = self._joint_state_problem(now)
        if problem is None and self.settings.mode == "free_floating" and \
                (self._base_pose_ns == NEVER or
                 now - self._base_pose_ns > self.settings.joint_state_timeout * 1e9):
            problem = (f"no base pose on {self.settings.base_pose_topic} within joint_state_timeout="
                       f"{self.settings.joint_state_timeout} s: holding")
        if problem is not None:
            self._problems["joint_states"] = problem
            self._warn_joint_states.warning(problem)
            if self._running:
                self._publish_hold(problem, cycle_ns)
                self._running = False
            elif stamp_ns is not None:
                self._repeat_last_command(stamp_ns)  # a lock-step simulation gets its answer
            return
        self._problems.pop("joint_states", None)
        assert self._q is not None
        q = self._q.copy()
        if not self._running:
            if self._hold_position is not None:
                q[self.model.q_index(self.controller.names)] = self._hold_position
            self.controller.reset(q)
            self._running = True
            self._hold_position = None
        inputs = self._job_input(now, q)
        t0 = time.perf_counter()
        try:
            out = self.controller.step(inputs, dt)
        except HumanoidBalanceError as exc:
            self._problem("controller", f"controller step failed: {exc}: holding")
            self._publish_hold(str(exc), cycle_ns)
            self._running = False
            return
        self._step_us.append((time.perf_counter() - t0) * 1e6)
        self._problems.pop("controller", None)
        self._last = out
        self._cycles += 1
        self._publish(out, cycle_ns)

    def _job_input(self, now: int, q: np.ndarray) -> RmcInput:
        """The job input, scaled by the balance guard; zero when disabled, stale or bad."""
        assert self.settings is not None
        inputs = RmcInput(q)
        fresh = now - self._job_input_ns <= self.settings.job_input_timeout * 1e9
        scale = self._guard(now)
        has_input = self._twist is not None or self._job_qd is not None
        if not self._enabled or not fresh or scale <= 0.0:
            if self._enabled and not fresh and has_input:
                self._problems["job_input"] = (
                    f"job input older than job_input_timeout={self.settings.job_input_timeout} s: "
                    "job arm stopping")
            return inputs
        if self._twist is not None:
            inputs.job_twist = self._twist * scale
        elif self._job_qd is not None:
            inputs.job_joint_velocities = self._job_qd * scale
        return inputs

    def _guard(self, now: int) -> float:
        """Job-input scale from the measured and predicted stability margins (1 = free)."""
        assert self.settings is not None
        margins = []
        if self._measured_margin is not None and \
                now - self._margin_ns <= self.settings.margin_timeout * 1e9:
            margins.append(self._measured_margin)
        if self._last is not None and math.isfinite(self._last.indicators.zmp_margin):
            margins.append(self._last.indicators.zmp_margin)
        if not margins:
            self._guard_scale = 1.0
            return 1.0
        margin = min(margins)
        slow, hold = self.settings.guard_slow_margin, self.settings.guard_hold_margin
        self._guard_scale = min(max(float(margin - hold) / (slow - hold), 0.0), 1.0)
        if self._guard_scale < 1.0:
            what = "holding the job arm" if self._guard_scale == 0.0 else \
                f"slowing the job arm to {100 * self._guard_scale:.0f} %"
            self._problems["guard"] = f"stability margin {1e3 * margin:.1f} mm: {what}"
        else:
            self._problems.pop("guard", None)
        return self._guard_scale

    # --- outputs ------------------------------------------------------------------------------------

    def _command_writer(self, names: tuple[str, ...]) -> cdr.JointStateCommandWriter:
        """The writer of commands for ``names`` (the same joints every cycle: built again on a change)."""
        if self._cmd_writer.names != names:
            self._cmd_writer = cdr.JointStateCommandWriter(names)
        return self._cmd_writer

    def _publish(self, out: RmcOutput, stamp_ns: int) -> None:
        """The cycle's command, momentum and model ZMP, stamped ``stamp_ns``."""
        cmd = self._command_writer(out.names).write(stamp_ns, out.position, out.velocity)
        self.pub_command.publish(cmd)
        self._last_command = cmd
        self.pub_momentum.publish(self._momentum_writer.write(stamp_ns, out.momentum.tolist()))
        zmp = out.indicators.model_zmp.tolist()
        if all(map(math.isfinite, zmp)):
            self.pub_zmp.publish(self._zmp_writer.write(stamp_ns, zmp[0], zmp[1], 0.0))

    def _repeat_last_command(self, stamp_ns: int) -> None:
        """Publish the last command (or hold) again, stamped ``stamp_ns``; nothing before the first."""
        cmd = self._last_command
        if cmd is None or not self.pub_command.is_activated:
            return
        cmd = cdr.with_stamp(cmd, stamp_ns)
        self.pub_command.publish(cmd)
        self._last_command = cmd

    def _publish_hold(self, reason: str, stamp_ns: int | None = None) -> None:
        """Zero-velocity hold at the last commanded arm positions (nothing computed from inputs).

        Stamped ``stamp_ns`` (the cycle's), default the node clock.
        """
        if self.controller is None:
            return
        position = self.controller.commanded_positions
        if position is None:
            return
        self._holds += 1
        self._hold_position = position
        cmd = self._command_writer(tuple(self.controller.names)).write(
            self._now_ns() if stamp_ns is None else stamp_ns, position, np.zeros(len(position)))
        if self.pub_command.is_activated:
            self.pub_command.publish(cmd)
            self._last_command = cmd
        self._warn_hold.warning(f"holding the arms: {reason}")

    def _publish_diagnostics(self) -> None:
        if self.settings is None:
            return
        values: dict[str, object] = {
            "job_arm": self.settings.job_arm, "selection": ",".join(self.settings.selection),
            "secondary": ",".join(self.settings.secondary) or "none",
            "reference_point": self.settings.reference_point, "mode": self.settings.mode,
            "enabled": self._enabled, "commanding": self._running, "cycles": self._cycles,
            "holds": self._holds, "guard_scale": self._guard_scale,
        }
        if self._periods:
            periods = np.array(self._periods)
            values.update(period_ms_mean=1e3 * float(periods.mean()),
                          period_ms_max=1e3 * float(periods.max()), overruns=self._overruns)
        if self._step_us:
            steps = np.array(self._step_us)
            values.update(step_us_median=float(np.median(steps)), step_us_max=float(steps.max()))
        self._periods.clear()
        self._step_us.clear()
        out = self._last
        if out is not None:
            ind = out.indicators
            values.update(
                zmp_shift_x_m=float(ind.zmp_shift[0]), zmp_shift_y_m=float(ind.zmp_shift[1]),
                model_zmp_margin_m=ind.zmp_margin, lift_off_margin_n=ind.lift_off_margin,
                slide_margin_n=ind.slide_margin, turn_margin_nm=ind.turn_margin,
                selected_momentum_max=float(np.max(np.abs(out.selected_momentum))),
                job_exact=out.job_exact, balance_exact=out.balance_exact,
                saturated=",".join(out.saturated_joints) or "none",
                acceleration_overridden=",".join(out.acceleration_overridden) or "none")
        level = OK
        message = "commanding" if self._running else "waiting for joint states"
        if out is not None and not (out.job_exact and out.balance_exact):
            level = WARN
            message = "joint limits saturate the command: " + ",".join(out.saturated_joints)
        if out is not None and self.settings.mode == "ground" and not out.indicators.balanced:
            level = WARN
            message = "balance indicators out of bounds (lift-off, slide, turn or ZMP)"
        if self._problems:
            level = ERROR if "joint_states" in self._problems or "controller" in self._problems \
                else WARN
            message = "; ".join(self._problems.values())
        for key, text in self._problems.items():
            values[f"problem_{key}"] = text
        status = diagnostic_status(f"{NODE_NAME}: control", level, message, values)
        self.pub_diag.publish(diagnostic_array(self, [status]))


def main(args: Sequence[str] | None = None) -> int:
    """Console script ``arm_balance``."""
    return run_node(ArmBalanceNode, args, events=True, stop_signals=True, exit_process=True)


if __name__ == "__main__":
    raise SystemExit(main())
