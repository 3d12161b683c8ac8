"""The seed-002 dual-arm space robot under RMRC: the paper's scenario, a singularity, MuJoCo.

1. The paper's scenario (section 4, :func:`run_paper_scenario`): the planar
   dual-arm robot of ``urdf/space_robot.urdf`` (Table 1 parameters), free
   floating at rest, initial angles right (pi/4, pi/2, pi/4), left (3pi/4,
   -pi/2, -pi/4), the system's centre of mass at the inertial origin (eq. 4),
   hand rates ``P_dot = [P_dot_r; P_dot_l] = [0.02, 0.03, 0, 0]`` m/s for 10 s
   (eq. 18: the first two rows are the right hand's x, y, the last two the left
   hand's, which therefore holds still while the base drifts). RMRC with
   ``J*^+`` (:class:`~humanoid_balance.core.gjm.FreeFloatingRmrc`).
2. A dynamic singularity (:func:`run_singularity`): from the same start both
   hands are pulled away from the system's CoM at 0.05 m/s; the arms stretch
   towards the configuration where both arms lie in line with the base, where
   ``J*`` loses rank; the controller must stop and report the singular values
   instead of dividing through.
3. A physics cross-check (:func:`run_mujoco_check`): the joint trajectory of
   part 1 (positions and rates every step) is played through stiff servos on
   the same URDF in MuJoCo, free floating without gravity
   (:class:`~humanoid_balance.sim.robot.MujocoRobotSim`, 1 ms steps); MuJoCo's
   own dynamics move the base, and its attitude and position are compared
   with those predicted by ``-H_b^-1 H_bm qd`` (Figs. 3-4).

Integration: every step holds the commanded hand velocity and takes one
classical Runge-Kutta-4 step on the configuration manifold
(Runge-Kutta-Munthe-Kaas: stages in the tangent space at the current
configuration, the base pose on SE(3) with ``pinocchio.integrate`` and
``pinocchio.dIntegrate``), each stage re-solving ``qd = J*(q)^+ xd`` and the
base velocity ``-H_b^-1 H_bm qd``. Default step 10 ms.

What is measured (:class:`FreeFloatingFigures`, independently of ``J*``
wherever possible): the largest difference between the command and the hands'
velocity over each step, ``(p(t + dt) - p(t)) / dt``, from the integrated hand
positions (pinocchio forward kinematics), and the instantaneous error of
pinocchio's frame velocity under the full RMRC velocity ``[v_base; qd]``; the
largest distance of the system's CoM from its start; momentum (pinocchio's
centroidal momentum of the RMRC velocity), base attitude and base CoM drift
(the paper's Figs. 3-4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from humanoid_balance.core.gjm import DEFAULT_MAX_CONDITION_NUMBER, DEFAULT_MIN_SINGULAR_VALUE
from humanoid_balance.exceptions import ConfigurationError

#: seed 002 section 4
PAPER_ANGLES = {
    "right_joint1": math.pi / 4, "right_joint2": math.pi / 2, "right_joint3": math.pi / 4,
    "left_joint1": 3 * math.pi / 4, "left_joint2": -math.pi / 2, "left_joint3": -math.pi / 4,
}
PAPER_HAND_RATES = (0.02, 0.03, 0.0, 0.0)  # m/s: right vx, vy, left vx, vy
PAPER_DURATION_S = 10.0
HANDS = ("right_hand", "left_hand")
JOINTS = tuple(f"{side}_joint{i}" for side in ("right", "left") for i in (1, 2, 3))
ROWS = ("vx", "vy")
#: the issue's targets
TARGET_HAND_VELOCITY_ERROR = 1e-6  # m/s
TARGET_COM_DRIFT = 1e-9  # m
SINGULARITY_PULL_SPEED = 0.05  # m/s, both hands away from the system CoM
SINGULARITY_MAX_TIME_S = 30.0


@dataclass(frozen=True)
class FreeFloatingSettings:
    """What the experiment runs.

    Attributes:
        dt_s: integration / control step [s].
        duration_s: duration of the paper's scenario [s].
        min_singular_value: dynamic-singularity threshold on sigma_min of ``J*`` [m/rad].
        max_condition_number: dynamic-singularity threshold on the condition number.
        mujoco: run the MuJoCo cross-check of the base motion.

    Raises:
        ConfigurationError: not ``0 < dt_s <= duration_s`` (finite).
    """

    dt_s: float = 0.01
    duration_s: float = PAPER_DURATION_S
    min_singular_value: float = DEFAULT_MIN_SINGULAR_VALUE
    max_condition_number: float = DEFAULT_MAX_CONDITION_NUMBER
    mujoco: bool = True

    def __post_init__(self) -> None:
        if not (math.isfinite(self.dt_s) and self.dt_s > 0.0 and math.isfinite(self.duration_s)
                and self.duration_s >= self.dt_s):
            raise ConfigurationError(
                f"dt_s={self.dt_s} and duration_s={self.duration_s}: expected 0 < dt <= duration, "
                "in s")


@dataclass(frozen=True)
class Trajectory:
    """Samples of one run, one row per control step (at the start of the step).

    The last configuration sample has no step after it: ``joint_velocities_rad_s``,
    ``hand_velocity_instant_m_s``, ``momentum`` and ``singular_values`` have one row
    fewer than ``time_s``, ``q``, ``hand_positions_m`` and ``com_m``.
    """

    time_s: np.ndarray  # (n,)
    q: np.ndarray  # (n, nq) configuration (base pose, then joints)
    joint_velocities_rad_s: np.ndarray  # (n - 1, 6)
    hand_positions_m: np.ndarray  # (n, 4) right x, y, left x, y
    hand_velocity_instant_m_s: np.ndarray  # (n - 1, 4)
    com_m: np.ndarray  # (n, 3) system CoM
    momentum: np.ndarray  # (n - 1, 6) centroidal [N s, N m s]
    singular_values: np.ndarray  # (n - 1, 4) of J*, largest first [m/rad]


@dataclass
class _Recorder:
    """The samples of :class:`Trajectory`, appended as the run goes."""

    time: list[float] = field(default_factory=list)
    q: list[np.ndarray] = field(default_factory=list)
    joint_velocities: list[np.ndarray] = field(default_factory=list)
    hand_positions: list[np.ndarray] = field(default_factory=list)
    hand_velocity_instant: list[np.ndarray] = field(default_factory=list)
    com: list[np.ndarray] = field(default_factory=list)
    momentum: list[np.ndarray] = field(default_factory=list)
    sigma: list[np.ndarray] = field(default_factory=list)

    def sample(self, model: Any, t: float, q: np.ndarray, sol: Any) -> None:
        """Record configuration ``q`` at ``t`` [s] and, with a solution, the step's velocities."""
        import pinocchio as pin

        self.time.append(t)
        self.q.append(q.copy())
        self.hand_positions.append(
            np.concatenate([model.frame_transform(f, q)[0:2, 3] for f in HANDS]))
        self.com.append(model.com(q))
        if sol is None:
            return
        self.joint_velocities.append(sol.joint_velocities.copy())
        self.sigma.append(sol.singular_values.copy())
        pin.forwardKinematics(model.model, model.data, q, sol.velocity)
        pin.updateFramePlacements(model.model, model.data)
        self.hand_velocity_instant.append(np.concatenate([
            pin.getFrameVelocity(model.model, model.data, model.frame_id(f),
                                 pin.ReferenceFrame.LOCAL_WORLD_ALIGNED).linear[0:2]
            for f in HANDS]))
        momentum = pin.computeCentroidalMomentum(model.model, model.data, q, sol.velocity)
        self.momentum.append(np.asarray(momentum.vector).copy())

    def trajectory(self) -> Trajectory:
        """The samples as float arrays."""
        def floats(x: list[Any]) -> np.ndarray:
            return np.asarray(x, dtype=float)

        return Trajectory(
            time_s=floats(self.time), q=floats(self.q),
            joint_velocities_rad_s=floats(self.joint_velocities),
            hand_positions_m=floats(self.hand_positions),
            hand_velocity_instant_m_s=floats(self.hand_velocity_instant), com_m=floats(self.com),
            momentum=floats(self.momentum), singular_values=floats(self.sigma))


def base_yaw(q: np.ndarray) -> float:
    """Base attitude about z [rad] of a planar configuration (quaternion x, y, z, w)."""
    return 2.0 * math.atan2(float(q[5]), float(q[6]))


def initial_configuration(model: Any) -> np.ndarray:
    """The paper's initial angles, base attitude 0, system CoM at the origin (eq. 4)."""
    q = model.configuration(PAPER_ANGLES)
    com = model.com(q)
    q[0:2] -= com[0:2]
    return np.asarray(q)


def _controller(model: Any, settings: FreeFloatingSettings) -> Any:
    from humanoid_balance.core.gjm import FreeFloatingRmrc

    ctrl = FreeFloatingRmrc(model, HANDS, joints=JOINTS, rows=ROWS,
                            min_singular_value=settings.min_singular_value,
                            max_condition_number=settings.max_condition_number)
    ctrl.reset(initial_configuration(model))
    return ctrl


def run_paper_scenario(model: Any, settings: FreeFloatingSettings) -> Trajectory:
    """Seed 002 section 4: hand rates [0.02, 0.03, 0, 0] m/s from the paper's pose."""
    ctrl = _controller(model, settings)
    xd = np.array(PAPER_HAND_RATES)
    rec = _Recorder()
    for _ in range(round(settings.duration_s / settings.dt_s)):
        t, q = ctrl.time, ctrl.q
        out = ctrl.step(xd, settings.dt_s)
        rec.sample(model, t, q, out.solution)
    rec.sample(model, ctrl.time, ctrl.q, None)
    return rec.trajectory()


@dataclass(frozen=True)
class SingularityRun:
    """The drive into a dynamic singularity and where it was stopped.

    Attributes:
        trajectory: the samples up to the stop.
        detected: the controller raised a dynamic singularity (and stopped).
        time_s: when it was detected (or the drive's end) [s].
        singular_values: of ``J*`` at detection [m/rad] (empty: none met).
        message: the controller's message.
        q: the configuration at detection.
        joint_limits_respected: no joint left its limits on the way.
    """

    trajectory: Trajectory
    detected: bool
    time_s: float
    singular_values: tuple[float, ...]
    message: str
    q: np.ndarray
    joint_limits_respected: bool


def run_singularity(model: Any, settings: FreeFloatingSettings) -> SingularityRun:
    """Pull both hands away from the system CoM until J* loses rank; detect and stop."""
    from humanoid_balance.exceptions import DynamicSingularityError

    ctrl = _controller(model, settings)
    com = model.com(ctrl.q)[0:2]
    rec = _Recorder()
    lower, upper = model.position_limits(JOINTS)
    idx = model.q_index(JOINTS)
    within = True
    while ctrl.time < SINGULARITY_MAX_TIME_S:
        t, q = ctrl.time, ctrl.q
        hands = [model.frame_transform(f, q)[0:2, 3] - com for f in HANDS]
        xd = np.concatenate([SINGULARITY_PULL_SPEED * h / np.linalg.norm(h) for h in hands])
        try:
            out = ctrl.step(xd, settings.dt_s)
        except DynamicSingularityError as err:
            rec.sample(model, t, q, None)
            return SingularityRun(rec.trajectory(), True, t, tuple(err.singular_values), str(err),
                                  q, within)
        rec.sample(model, t, q, out.solution)
        within = within and bool(np.all(out.q[idx] >= lower) and np.all(out.q[idx] <= upper))
    return SingularityRun(rec.trajectory(), False, ctrl.time, (), "no singularity met", ctrl.q,
                          within)


@dataclass(frozen=True)
class MujocoCheck:
    """The base motion MuJoCo produces for part 1's joint trajectory (one row per step end)."""

    time_s: np.ndarray  # (n,)
    base_yaw_rad: np.ndarray  # (n,)
    base_position_m: np.ndarray  # (n, 2)
    com_m: np.ndarray  # (n, 3)


def run_mujoco_check(model: Any, paper: Trajectory) -> MujocoCheck:
    """Play part 1's joint trajectory through MuJoCo's servos, free floating, no gravity."""
    from humanoid_balance.resources import urdf_path
    from humanoid_balance.sim.robot import MujocoRobotSim

    sim = MujocoRobotSim(urdf_path("space_robot"), floating_base=True, gravity=0.0,
                         timestep=0.001)
    sim.reset(PAPER_ANGLES)
    idx = model.q_index(JOINTS)
    times, yaws, positions, coms = [], [], [], []

    def sample(t: float) -> None:
        position, quat = sim.base_pose()
        times.append(t)
        yaws.append(2.0 * math.atan2(float(quat[2]), float(quat[3])))
        positions.append(position[0:2])
        coms.append(sim.com())

    sample(paper.time_s[0])
    for k in range(len(paper.joint_velocities_rad_s)):
        sim.set_targets(JOINTS, paper.q[k][idx], paper.joint_velocities_rad_s[k])
        sim.step(round((paper.time_s[k + 1] - paper.time_s[k]) / sim.timestep))
        sample(paper.time_s[k + 1])
    return MujocoCheck(np.array(times), np.array(yaws), np.array(positions), np.array(coms))


@dataclass(frozen=True)
class MujocoComparison:
    """MuJoCo's base motion for the same joint trajectory against the RMRC prediction.

    Attributes:
        base_attitude_diff_deg_max: largest difference of the base yaw changes [deg].
        base_position_diff_m_max: largest difference of the base displacements [m].
        com_drift_m_max: MuJoCo's largest system CoM drift [m].
    """

    base_attitude_diff_deg_max: float
    base_position_diff_m_max: float
    com_drift_m_max: float


@dataclass(frozen=True)
class FreeFloatingFigures:
    """The experiment's figures (see the module docstring).

    Attributes:
        hand_velocity_error_max_m_s: the larger of the two below [m/s].
        hand_velocity_error_instant_max_m_s: pinocchio's hand velocity vs the command [m/s].
        hand_velocity_error_step_max_m_s: mean velocity over each step vs the command [m/s].
        hand_path_error_max_m: integrated hand positions vs the straight commanded path [m].
        com_drift_max_m: largest distance of the system CoM from its start [m].
        momentum_max_abs: largest centroidal momentum component [N s | N m s].
        base_attitude_change_deg_final: base yaw at the end minus at the start [deg].
        base_attitude_change_deg_max_abs: largest |base yaw change| [deg].
        base_com_drift_m_max: largest base displacement [m].
        base_com_displacement_m_final: base (x, y) displacement at the end [m].
        sigma_min_min_paper_run: least sigma_min of ``J*`` in the paper's run [m/rad].
        condition_number_max_paper_run: largest condition number of ``J*`` in it.
        singularity_sigma_min: sigma_min at detection [m/rad] (NaN: none met).
        singularity_joint_angles_rad: the joint angles at detection [rad].
        mujoco: the MuJoCo cross-check (None: not run).
    """

    hand_velocity_error_max_m_s: float
    hand_velocity_error_instant_max_m_s: float
    hand_velocity_error_step_max_m_s: float
    hand_path_error_max_m: float
    com_drift_max_m: float
    momentum_max_abs: float
    base_attitude_change_deg_final: float
    base_attitude_change_deg_max_abs: float
    base_com_drift_m_max: float
    base_com_displacement_m_final: tuple[float, float]
    sigma_min_min_paper_run: float
    condition_number_max_paper_run: float
    singularity_sigma_min: float
    singularity_joint_angles_rad: tuple[float, ...]
    mujoco: MujocoComparison | None


@dataclass(frozen=True)
class FreeFloatingResults:
    """Both parts, the MuJoCo check (None when not run) and the figures."""

    settings: FreeFloatingSettings
    paper: Trajectory
    singularity: SingularityRun
    mujoco: MujocoCheck | None
    figures: FreeFloatingFigures

    @property
    def targets_met(self) -> bool:
        """Hand velocity error and CoM drift below the issue's targets, singularity detected."""
        return (self.figures.hand_velocity_error_max_m_s < TARGET_HAND_VELOCITY_ERROR
                and self.figures.com_drift_max_m < TARGET_COM_DRIFT and self.singularity.detected)


def compare_with_mujoco(paper: Trajectory, mj: MujocoCheck) -> MujocoComparison:
    """MuJoCo's base attitude, base position and CoM drift against the RMRC prediction."""
    q = paper.q
    yaw = np.array([base_yaw(x) for x in q])
    ref_pos = q[:, 0:2] - q[0, 0:2]
    return MujocoComparison(
        base_attitude_diff_deg_max=float(np.degrees(
            np.abs(mj.base_yaw_rad - mj.base_yaw_rad[0] - (yaw - yaw[0])).max())),
        base_position_diff_m_max=float(np.linalg.norm(
            mj.base_position_m - mj.base_position_m[0] - ref_pos, axis=1).max()),
        com_drift_m_max=float(np.linalg.norm(mj.com_m - mj.com_m[0], axis=1).max()))


def figures(model: Any, paper: Trajectory, sing: SingularityRun,
            mj: MujocoCheck | None) -> FreeFloatingFigures:
    """The measured figures of the runs (hand velocity from positions, independently of ``J*``)."""
    t, hands = paper.time_s, paper.hand_positions_m
    command = np.array(PAPER_HAND_RATES)
    step_error = np.abs(np.diff(hands, axis=0) / np.diff(t)[:, None] - command).max()
    instant_error = np.abs(paper.hand_velocity_instant_m_s - command).max()
    q, sigma = paper.q, paper.singular_values
    yaw = np.array([base_yaw(x) for x in q])
    shift = q[-1, 0:2] - q[0, 0:2]
    return FreeFloatingFigures(
        hand_velocity_error_max_m_s=float(max(step_error, instant_error)),
        hand_velocity_error_instant_max_m_s=float(instant_error),
        hand_velocity_error_step_max_m_s=float(step_error),
        hand_path_error_max_m=float(np.abs(hands - hands[0] - np.outer(t - t[0], command)).max()),
        com_drift_max_m=float(np.linalg.norm(paper.com_m - paper.com_m[0], axis=1).max()),
        momentum_max_abs=float(np.abs(paper.momentum).max()),
        base_attitude_change_deg_final=float(np.degrees(yaw[-1] - yaw[0])),
        base_attitude_change_deg_max_abs=float(np.degrees(np.abs(yaw - yaw[0]).max())),
        base_com_drift_m_max=float(np.linalg.norm(q[:, 0:2] - q[0, 0:2], axis=1).max()),
        base_com_displacement_m_final=(float(shift[0]), float(shift[1])),
        sigma_min_min_paper_run=float(sigma[:, -1].min()),
        condition_number_max_paper_run=float((sigma[:, 0] / sigma[:, -1]).max()),
        singularity_sigma_min=(float(sing.singular_values[-1]) if sing.singular_values
                               else float("nan")),
        singularity_joint_angles_rad=tuple(float(x) for x in sing.q[model.q_index(JOINTS)]),
        mujoco=None if mj is None else compare_with_mujoco(paper, mj))


def space_robot_model() -> Any:
    """The seed-002 space robot, free floating."""
    from humanoid_balance.core.model import RobotModel
    from humanoid_balance.resources import urdf_path

    return RobotModel(urdf_path("space_robot"), floating_base=True)


def run_free_floating_experiment(settings: FreeFloatingSettings,
                                 model: Any | None = None) -> FreeFloatingResults:
    """Both parts and (with ``settings.mujoco``) the MuJoCo check, and their figures."""
    model = space_robot_model() if model is None else model
    paper = run_paper_scenario(model, settings)
    sing = run_singularity(model, settings)
    mj = run_mujoco_check(model, paper) if settings.mujoco else None
    return FreeFloatingResults(settings, paper, sing, mj, figures(model, paper, sing, mj))


def free_floating_metrics(results: FreeFloatingResults) -> dict[str, dict[str, Any]]:
    """The metrics of ``free_floating.json`` (names of shared RESULTS.md)."""
    from humanoid_balance.results import metric

    f, sing = results.figures, results.singularity
    metrics = {
        "hand_velocity_error_max": metric(f.hand_velocity_error_max_m_s, "m/s",
                                          TARGET_HAND_VELOCITY_ERROR, "lower"),
        "hand_velocity_error_instant_max": metric(f.hand_velocity_error_instant_max_m_s, "m/s"),
        "hand_velocity_error_step_max": metric(f.hand_velocity_error_step_max_m_s, "m/s"),
        "hand_path_error_max_m": metric(f.hand_path_error_max_m, "m"),
        "com_drift_max_m": metric(f.com_drift_max_m, "m", TARGET_COM_DRIFT, "lower"),
        "momentum_max_abs": metric(f.momentum_max_abs, "N s | N m s"),
        "base_attitude_change_deg_final": metric(f.base_attitude_change_deg_final, "deg"),
        "base_attitude_change_deg_max_abs": metric(f.base_attitude_change_deg_max_abs, "deg"),
        "base_com_drift_m_max": metric(f.base_com_drift_m_max, "m"),
        "base_com_displacement_m_final": metric(
            list(f.base_com_displacement_m_final), "m"),  # type: ignore[arg-type]
        "sigma_min_min_paper_run": metric(f.sigma_min_min_paper_run, "m/rad"),
        "condition_number_max_paper_run": metric(f.condition_number_max_paper_run, ""),
        "singularity_detected": metric(sing.detected, "", None, None),
        "singularity_time_s": metric(sing.time_s, "s"),
        "singularity_sigma_min": metric(f.singularity_sigma_min, "m/rad"),
        "singularity_joint_angles_rad": metric(
            list(f.singularity_joint_angles_rad), "rad"),  # type: ignore[arg-type]
        "singularity_joint_limits_respected": metric(sing.joint_limits_respected, ""),
        "dt_s": metric(results.settings.dt_s, "s"),
        "integrator": metric("RK4 on the configuration manifold (pinocchio integrate/dIntegrate)"),
    }
    if f.mujoco is not None:
        metrics["mujoco_base_attitude_diff_deg_max"] = metric(f.mujoco.base_attitude_diff_deg_max,
                                                              "deg")
        metrics["mujoco_base_position_diff_m_max"] = metric(f.mujoco.base_position_diff_m_max, "m")
        metrics["mujoco_com_drift_m_max"] = metric(f.mujoco.com_drift_m_max, "m")
    return metrics
