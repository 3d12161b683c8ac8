"""Parameters of ``arm_balance`` (seeds 000, 002): the one place they are written.

The dynamic ones (job arm, momentum rows, timeouts, guard margins) apply
between two cycles (:class:`~humanoid_balance.core.arm_loop.ArmLoop`); the
model, the mode, the rate and the controller's tunables are read at configure.
:func:`config_from_values` turns the values into an :class:`ArmBalanceConfig` (SI units,
degrees converted once), from which :func:`build_controller` makes the model and the
``mode``'s controller and :meth:`ArmBalanceConfig.loop_config` the loop's tunables.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from humanoid_balance.command_interface import command_params
from humanoid_balance.params import Param, ParamSpec
from humanoid_balance.params.typed import MotorNodeConfig, typed_config

if TYPE_CHECKING:  # (the core loads pinocchio: only where a controller is built)
    from humanoid_balance.core.arm_controller import ArmController
    from humanoid_balance.core.arm_loop import ArmLoopConfig
    from humanoid_balance.core.model import RobotModel

__all__ = ["SPEC", "YAML_HEADER", "ArmBalanceConfig", "build_controller", "config_from_values",
           "rows_of"]

YAML_HEADER = """\
arm_balance: resolved momentum control of the two arms (seed 000; free_floating: seed 002)
(ROS 2 parameter file)."""

MOMENTUM_ROWS = ("Px", "Py", "Pz", "Lx", "Ly", "Lz")
VELOCITY_ROWS = ("vx", "vy", "vz", "wx", "wy", "wz")


def rows_of(text: str) -> tuple[str, ...]:
    """The momentum rows of a comma-separated string (``""``: none)."""
    return tuple(r.strip() for r in text.split(",") if r.strip())


def _distinct(name: str) -> Any:
    def check(value: Any) -> str | None:
        rows = list(rows_of(value) if isinstance(value, str) else value)
        if len(set(rows)) != len(rows):
            return f"{name}={rows}: a row is repeated"
        if isinstance(value, str):
            unknown = [r for r in rows if r not in MOMENTUM_ROWS]
            if unknown:
                return f"{name}: rows {unknown} unknown; expected rows of {list(MOMENTUM_ROWS)}"
        return None
    return check


def _cross_check(v: Mapping[str, Any]) -> str | None:
    overlap = sorted(set(v["selection"]) & set(rows_of(v["secondary"])))
    if overlap:
        return f"rows {overlap} would be both in selection and secondary"
    if v["guard_hold_margin"] >= v["guard_slow_margin"]:
        return (f"guard_hold_margin={v['guard_hold_margin']} must be below "
                f"guard_slow_margin={v['guard_slow_margin']}")
    return None


_POS: dict[str, Any] = {"minimum": 0.0, "exclusive_minimum": True}
_NON_NEG: dict[str, Any] = {"minimum": 0.0}

SPEC = ParamSpec("arm_balance", [
    Param("job_arm", "right", "the arm that does the job; the other balances", choices=("right", "left"),
          dynamic=True),
    Param("selection", ["Lx", "Ly"], "momentum rows held at zero (paper: Lx, Ly)",
          choices=MOMENTUM_ROWS, min_length=1, dynamic=True, check=_distinct("selection")),
    Param("secondary", "", "rows reduced best effort after selection, comma-separated "
          "(e.g. 'Lz'); empty: none", dynamic=True, check=_distinct("secondary")),
    Param("reference_point", "W", "point the momentum is taken about", choices=("W", "com")),
    Param("mode", "ground", "ground: RMC (seed 000); free_floating: generalized Jacobian "
          "(seed 002), job twist in 'world', the other hand still", choices=("ground", "free_floating")),
    Param("rate", 500.0, "control rate", "Hz", **_POS),
    Param("trigger", "timer", "timer, or joint_states: a cycle per /joint_states message "
          "(at most rate, by the stamps) whose outputs carry its stamp (lock-step)",
          choices=("timer", "joint_states")),
    Param("executor_priority", 0, "SCHED_FIFO priority of the thread that runs the control "
          "cycle, set at configure (0 = normal scheduling; needs an rtprio limit or "
          "CAP_SYS_NICE, else a warning); keep it below the waist's servo_priority", minimum=0.0,
          maximum=99.0),
    Param("gravity", 9.81, "gravity", "m/s^2", **_NON_NEG),
    Param("friction_coefficient", 0.3, "mu, feet-floor (seed 000)", **_NON_NEG),
    Param("foot_distance", 0.4, "C, between the foot centres (seed 000)", "m", **_POS),
    Param("position_margin", 0.02, "kept from every arm joint's position limits", "rad",
          **_NON_NEG),
    Param("damping_threshold", 0.02, "ground, twist input: smallest singular value of the job "
          "hand's Jacobian below which RmcOutput.damping (not published) rises above 0 and "
          "each cycle runs the limit step's full checks (the path's curvature every cycle); the "
          "command always uses the exact pseudo-inverse, scaled along the request near a "
          "singularity, never a damped one", **_NON_NEG),
    Param("max_damping", 0.05, "ground, twist input: lambda_max of RmcOutput.damping only (not "
          "published), lambda^2 = max_damping^2 (1 - (sigma_min / damping_threshold)^2); the "
          "command does not use it", **_NON_NEG),
    Param("joint_state_timeout", 0.05, "older arm joint states (or base pose): the arms hold, "
          "decelerating at their acceleration limits", "s", dynamic=True, **_POS),
    Param("job_input_timeout", 0.1, "older job twist/velocities: the job arm stops", "s",
          dynamic=True, **_POS),
    Param("margin_timeout", 0.1, "older /zmp/stability_margin is not used by the guard", "s",
          dynamic=True, **_POS),
    Param("guard_slow_margin", 0.03, "stability margin (measured or predicted) where the job "
          "arm slows", "m", dynamic=True, minimum=-1.0, maximum=1.0),
    Param("guard_hold_margin", 0.01, "stability margin where the job arm stops and holds", "m",
          dynamic=True, minimum=-1.0, maximum=1.0),
    Param("urdf_path", "", "URDF; empty: the package's humanoid.urdf (free_floating: "
          "space_robot.urdf)"),
    Param("base_pose_topic", "/base_pose", "free_floating: base pose (PoseStamped, world); the "
          "simulation's is /sim/base_pose"),
    Param("free_floating_rows", ["vx", "vy"], "free_floating: hand velocity rows controlled",
          choices=VELOCITY_ROWS, min_length=1, check=_distinct("free_floating_rows")),
    Param("free_floating_acceleration_limit", 10.0, "free_floating: acceleration limit of every "
          "arm joint (the space robot's joints have no table; ground mode uses seed 000's "
          "Table 2)", "rad/s^2", **_POS),
    Param("diagnostics_rate", 10.0, "diagnostics rate", "Hz", **_POS),
    Param("aux_posture_gain", 2.0, "ground: gain of the aux arm's ready-posture task, inside the "
          "null space of the held rows (the held momentum is unchanged); 0: the paper's pure "
          "form (seed 000 eq. 6), whose aux arm turns the feet on the seed strike", "1/s",
          minimum=0.0),
    Param("aux_posture", [-16.1, 9.7, 55.6, 77.2, -39.3, 63.9, 4.2],
          "ground: the aux arm's ready posture (shoulder pitch, roll, yaw, elbow, wrist yaw, "
          "roll, pitch; right-arm signs, mirrored for the left): hand in front of the chest, "
          "where holding Lx, Ly adds little Lz; the default is what `humanoid-balance "
          "aux-posture` found for the lowest strike ZMP peak in simulation: search again for "
          "another robot", "deg", minimum=-360.0, maximum=360.0, length=7),
    Param("aux_posture_speed", 0.5, "ground: speed cap of the posture task's joint velocities",
          "rad/s", **_POS),
    Param("aux_posture_acceleration", 2.0, "ground: rate at which the posture task's velocity "
          "may change", "rad/s^2", **_POS),
    *command_params("/arm_balance/command"),
], cross_check=_cross_check)


@dataclass(frozen=True)
class ArmBalanceConfig(MotorNodeConfig):
    """``arm_balance``'s parameters, validated and typed (SI units; angles in rad).

    Each field is the parameter of the same name (:data:`SPEC`) with its unit in the name
    where it has one (:func:`~humanoid_balance.params.typed.typed_config`); ``secondary`` is
    the parsed row list and ``aux_posture_rad`` the posture converted from degrees. The rate
    and the command output: :class:`~humanoid_balance.params.typed.MotorNodeConfig`.
    """

    job_arm: str
    selection: tuple[str, ...]
    secondary: tuple[str, ...]
    reference_point: str
    mode: str
    trigger: str
    executor_priority: int
    gravity_m_s2: float
    friction_coefficient: float
    foot_distance_m: float
    position_margin_rad: float
    damping_threshold: float
    max_damping: float
    job_input_timeout_s: float
    margin_timeout_s: float
    guard_slow_margin_m: float
    guard_hold_margin_m: float
    base_pose_topic: str
    free_floating_rows: tuple[str, ...]
    free_floating_acceleration_limit_rad_s2: float
    aux_posture_gain_1_s: float
    aux_posture_rad: tuple[float, ...]
    aux_posture_speed_rad_s: float
    aux_posture_acceleration_rad_s2: float

    @property
    def lock_step(self) -> bool:
        """``trigger: joint_states``: a cycle per joint state, stamped with it."""
        return self.trigger == "joint_states"

    def loop_config(self) -> ArmLoopConfig:
        """The loop's tunables."""
        from humanoid_balance.core.arm_loop import ArmLoopConfig

        return ArmLoopConfig(
            rate_hz=self.rate_hz, joint_state_timeout_s=self.joint_state_timeout_s,
            job_input_timeout_s=self.job_input_timeout_s, margin_timeout_s=self.margin_timeout_s,
            guard_slow_margin_m=self.guard_slow_margin_m,
            guard_hold_margin_m=self.guard_hold_margin_m, base_pose_source=self.base_pose_topic)


def config_from_values(values: Mapping[str, Any]) -> ArmBalanceConfig:
    """The typed config of a full set of parameter values (:data:`SPEC`'s names).

    Raises:
        ConfigurationError: a value the spec refuses, or a combination it refuses.
    """
    v = SPEC.coerce_all({**SPEC.defaults(), **values})
    return typed_config(ArmBalanceConfig, SPEC, v, secondary=rows_of(v["secondary"]))


def build_controller(config: ArmBalanceConfig) -> tuple[RobotModel, ArmController]:
    """The model and the controller of ``config.mode``: ``ground``, resolved momentum control
    on the fixed-base humanoid with the model ZMP's margin against the feet's contact points
    (:class:`~humanoid_balance.core.foot_layout.FootLayout`); ``free_floating``, the
    generalized Jacobian on the floating robot (seed 002).

    Raises:
        ConfigurationError, ModelError: a value the controller refuses, a model that cannot load.
    """
    from humanoid_balance.core.arm_controller import GroundArmController
    from humanoid_balance.core.foot_layout import FootLayout
    from humanoid_balance.core.free_floating import FreeFloatingArmController
    from humanoid_balance.core.model import RobotModel
    from humanoid_balance.core.rmc import ARMS
    from humanoid_balance.resources import urdf_path

    c = config
    if c.mode == "free_floating":
        floating = RobotModel(c.urdf_path or str(urdf_path("space_robot")), floating_base=True,
                              gravity=c.gravity_m_s2)
        accel = {arm: [c.free_floating_acceleration_limit_rad_s2] * len(floating.group(group))
                 for arm, group in ARMS.items()}
        return floating, FreeFloatingArmController(
            floating, {arm: floating.group(group) for arm, group in ARMS.items()},
            {arm: f"{arm}_hand" for arm in ARMS}, job_arm=c.job_arm, rows=c.free_floating_rows,
            acceleration_limits=accel, position_margin=c.position_margin_rad)
    model = RobotModel(c.urdf_path or str(urdf_path("humanoid")), world_frame="W",
                       gravity=c.gravity_m_s2)
    feet = FootLayout.seed()
    polygon = feet.support_polygon(model).update(feet.soles_in_world(model, model.neutral()))
    return model, GroundArmController(
        model, job_arm=c.job_arm, selection=c.selection, secondary=c.secondary,
        reference_point=c.reference_point, friction_coefficient=c.friction_coefficient,
        foot_distance=c.foot_distance_m, damping_threshold=c.damping_threshold,
        max_damping=c.max_damping, position_margin=c.position_margin_rad,
        support_polygon=polygon, aux_posture=c.aux_posture_rad,
        posture_gain=c.aux_posture_gain_1_s, posture_speed=c.aux_posture_speed_rad_s,
        posture_acceleration=c.aux_posture_acceleration_rad_s2)
