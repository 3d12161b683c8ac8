"""``humanoid-balance experiment free-floating``: the seed-002 dual-arm space robot under RMRC.

1. The paper's scenario (section 4): the planar dual-arm robot of
   ``urdf/space_robot.urdf`` (Table 1 parameters), free floating at rest,
   initial angles right (pi/4, pi/2, pi/4), left (3pi/4, -pi/2, -pi/4), the
   system's centre of mass at the inertial origin (eq. 4), hand rates
   ``P_dot = [P_dot_r; P_dot_l] = [0.02, 0.03, 0, 0]`` m/s for 10 s (eq. 18:
   the first two rows are the right hand's x, y, the last two the left
   hand's, which therefore holds still while the base drifts). RMRC with
   ``J*^+`` (:class:`~humanoid_balance.core.gjm.FreeFloatingRmrc`).
2. A dynamic singularity: from the same start both hands are pulled away
   from the system's CoM at 0.05 m/s; the arms stretch towards the
   configuration where both arms lie in line with the base, where ``J*``
   loses rank; the controller must stop and report the singular values
   instead of dividing through.
3. A physics cross-check: the joint trajectory of part 1 (positions and
   rates every step) is played through stiff servos on the same URDF in
   MuJoCo, free floating without gravity
   (:class:`~humanoid_balance.sim.robot.MujocoRobotSim`, 1 ms steps); MuJoCo's
   own dynamics move the base, and its attitude and position are compared
   with those predicted by ``-H_b^-1 H_bm qd`` (Figs. 3-4).

Integration: every step holds the commanded hand velocity and takes one
classical Runge-Kutta-4 step on the configuration manifold
(Runge-Kutta-Munthe-Kaas: stages in the tangent space at the current
configuration, the base pose on SE(3) with ``pinocchio.integrate`` and
``pinocchio.dIntegrate``), each stage re-solving ``qd = J*(q)^+ xd`` and the
base velocity ``-H_b^-1 H_bm qd``. Default step 10 ms.

What is measured (independently of ``J*`` wherever possible):

- ``hand_velocity_error_max``: the largest difference between the command and
  the hands' velocity over each step, ``(p(t + dt) - p(t)) / dt``, from the
  integrated hand positions (pinocchio forward kinematics); also the
  instantaneous error of pinocchio's frame velocity under the full RMRC
  velocity ``[v_base; qd]``;
- ``com_drift_max_m``: the largest distance of the system's CoM from its start;
- momentum (pinocchio's centroidal momentum of the RMRC velocity), base
  attitude and base CoM drift (the paper's Figs. 3-4).

Writes ``<out>/free_floating.json`` (metric names of shared RESULTS.md) and
PNG plots beside it.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from humanoid_balance.core.gjm import DEFAULT_MAX_CONDITION_NUMBER, DEFAULT_MIN_SINGULAR_VALUE
from humanoid_balance.results import save_figure

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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the free-floating experiment."""
    parser.add_argument("--out", type=Path, default=Path("results/free_floating"),
                        help="output folder (default results/free_floating)")
    parser.add_argument("--dt", type=float, default=0.01,
                        help="integration / control step, s (default 0.01)")
    parser.add_argument("--duration", type=float, default=PAPER_DURATION_S,
                        help="duration of the paper's scenario, s (default 10)")
    parser.add_argument("--min-singular-value", type=float, default=DEFAULT_MIN_SINGULAR_VALUE,
                        help="dynamic-singularity threshold on sigma_min of J*, m/rad "
                             "(default %(default)g)")
    parser.add_argument("--max-condition-number", type=float, default=DEFAULT_MAX_CONDITION_NUMBER,
                        help="dynamic-singularity threshold on the condition number "
                             "(default %(default)g)")
    parser.add_argument("--no-mujoco", action="store_true",
                        help="skip the MuJoCo cross-check of the base motion")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")


@dataclass
class Trajectory:
    """Samples of one run, one row per control step (at the start of the step)."""

    time: list[float] = field(default_factory=list)
    q: list[np.ndarray] = field(default_factory=list)
    joint_velocities: list[np.ndarray] = field(default_factory=list)
    hand_positions: list[np.ndarray] = field(default_factory=list)
    hand_velocity_instant: list[np.ndarray] = field(default_factory=list)
    com: list[np.ndarray] = field(default_factory=list)
    momentum: list[np.ndarray] = field(default_factory=list)
    sigma: list[np.ndarray] = field(default_factory=list)

    def array(self, name: str) -> np.ndarray:
        """One field as an array (steps first)."""
        return np.asarray(getattr(self, name), dtype=float)


def _yaw(q: np.ndarray) -> float:
    """Base attitude about z [rad] of a planar configuration (quaternion x, y, z, w)."""
    return 2.0 * math.atan2(float(q[5]), float(q[6]))


def initial_configuration(model: Any) -> np.ndarray:
    """The paper's initial angles, base attitude 0, system CoM at the origin (eq. 4)."""
    q = model.configuration(PAPER_ANGLES)
    com = model.com(q)
    q[0:2] -= com[0:2]
    return np.asarray(q)


def _sample(model: Any, traj: Trajectory, t: float, q: np.ndarray, sol: Any) -> None:
    import pinocchio as pin

    traj.time.append(t)
    traj.q.append(q.copy())
    traj.hand_positions.append(
        np.concatenate([model.frame_transform(f, q)[0:2, 3] for f in HANDS]))
    traj.com.append(model.com(q))
    if sol is None:
        return
    traj.joint_velocities.append(sol.joint_velocities.copy())
    traj.sigma.append(sol.singular_values.copy())
    pin.forwardKinematics(model.model, model.data, q, sol.velocity)
    pin.updateFramePlacements(model.model, model.data)
    traj.hand_velocity_instant.append(np.concatenate([
        pin.getFrameVelocity(model.model, model.data, model.frame_id(f),
                             pin.ReferenceFrame.LOCAL_WORLD_ALIGNED).linear[0:2]
        for f in HANDS]))
    momentum = pin.computeCentroidalMomentum(model.model, model.data, q, sol.velocity)
    traj.momentum.append(np.asarray(momentum.vector).copy())


def run_paper_scenario(model: Any, *, dt: float, duration: float,
                       min_singular_value: float, max_condition_number: float) -> Trajectory:
    """Seed 002 section 4: hand rates [0.02, 0.03, 0, 0] m/s from the paper's pose."""
    from humanoid_balance.core.gjm import FreeFloatingRmrc

    ctrl = FreeFloatingRmrc(model, HANDS, joints=JOINTS, rows=ROWS,
                            min_singular_value=min_singular_value,
                            max_condition_number=max_condition_number)
    ctrl.reset(initial_configuration(model))
    xd = np.array(PAPER_HAND_RATES)
    traj = Trajectory()
    for _ in range(round(duration / dt)):
        t, q = ctrl.time, ctrl.q
        out = ctrl.step(xd, dt)
        _sample(model, traj, t, q, out.solution)
    _sample(model, traj, ctrl.time, ctrl.q, None)
    return traj


@dataclass
class SingularityRun:
    """The drive into a dynamic singularity and where it was stopped."""

    trajectory: Trajectory
    detected: bool
    time_s: float
    singular_values: tuple[float, ...]
    message: str
    q: np.ndarray
    joint_limits_respected: bool


def run_singularity(model: Any, *, dt: float, min_singular_value: float,
                    max_condition_number: float) -> SingularityRun:
    """Pull both hands away from the system CoM until J* loses rank; detect and stop."""
    from humanoid_balance.core.gjm import FreeFloatingRmrc
    from humanoid_balance.exceptions import DynamicSingularityError

    ctrl = FreeFloatingRmrc(model, HANDS, joints=JOINTS, rows=ROWS,
                            min_singular_value=min_singular_value,
                            max_condition_number=max_condition_number)
    ctrl.reset(initial_configuration(model))
    com = model.com(ctrl.q)[0:2]
    traj = Trajectory()
    lower, upper = model.position_limits(JOINTS)
    idx = model.q_index(JOINTS)
    within = True
    while ctrl.time < SINGULARITY_MAX_TIME_S:
        t, q = ctrl.time, ctrl.q
        hands = [model.frame_transform(f, q)[0:2, 3] - com for f in HANDS]
        xd = np.concatenate([SINGULARITY_PULL_SPEED * h / np.linalg.norm(h) for h in hands])
        try:
            out = ctrl.step(xd, dt)
        except DynamicSingularityError as err:
            _sample(model, traj, t, q, None)
            return SingularityRun(traj, True, t, err.singular_values, str(err), q, within)
        _sample(model, traj, t, q, out.solution)
        within = within and bool(np.all(out.q[idx] >= lower) and np.all(out.q[idx] <= upper))
    return SingularityRun(traj, False, ctrl.time, (), "no singularity met", ctrl.q, within)


@dataclass
class MujocoCheck:
    """The base motion MuJoCo produces for part 1's joint trajectory (one row per step end)."""

    time: np.ndarray
    base_yaw: np.ndarray
    base_position: np.ndarray
    com: np.ndarray


def run_mujoco_check(model: Any, paper: Trajectory) -> MujocoCheck:
    """Play part 1's joint trajectory through MuJoCo's servos, free floating, no gravity."""
    from humanoid_balance.resources import urdf_path
    from humanoid_balance.sim.robot import MujocoRobotSim

    sim = MujocoRobotSim(urdf_path("space_robot"), floating_base=True, gravity=0.0,
                         timestep=0.001)
    sim.reset(PAPER_ANGLES)
    idx = model.q_index(JOINTS)
    times, yaws, positions, coms = [], [], [], []
    position, quat = sim.base_pose()
    times.append(paper.time[0])
    yaws.append(2.0 * math.atan2(float(quat[2]), float(quat[3])))
    positions.append(position[0:2])
    coms.append(sim.com())
    for k in range(len(paper.joint_velocities)):
        sim.set_targets(JOINTS, paper.q[k][idx], paper.joint_velocities[k])
        sim.step(round((paper.time[k + 1] - paper.time[k]) / sim.timestep))
        position, quat = sim.base_pose()
        times.append(paper.time[k + 1])
        yaws.append(2.0 * math.atan2(float(quat[2]), float(quat[3])))
        positions.append(position[0:2])
        coms.append(sim.com())
    return MujocoCheck(np.array(times), np.array(yaws), np.array(positions), np.array(coms))


def _stick(model: Any, q: np.ndarray, side: str) -> np.ndarray:
    frames = [f"{side}_link1", f"{side}_link2", f"{side}_link3", f"{side}_hand"]
    return np.array([model.frame_transform(f, q)[0:2, 3] for f in frames])


def _plots(out: Path, model: Any, paper: Trajectory, sing: SingularityRun,
           min_singular_value: float, mj: MujocoCheck | None) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    t = paper.array("time")
    q = paper.array("q")

    # Fig. 2: the motion (stick figures, hand paths)
    fig, ax = plt.subplots(figsize=(6, 5))
    n = len(paper.q)
    for k in np.linspace(0, n - 1, 5).astype(int):
        alpha = 0.3 + 0.7 * k / (n - 1)
        base = paper.q[k][0:2]
        for side in ("right", "left"):
            pts = np.vstack([base, _stick(model, paper.q[k], side)])
            ax.plot(pts[:, 0], pts[:, 1], "o-", color="C0" if side == "right" else "C1",
                    alpha=alpha, ms=3)
        ax.plot(*base, "ks", alpha=alpha)
    hands = paper.array("hand_positions")
    ax.plot(hands[:, 0], hands[:, 1], "C3-", label="right hand path")
    ax.plot(hands[:, 2], hands[:, 3], "C2x", ms=4, label="left hand (held)")
    com = paper.array("com")
    ax.plot(com[:, 0], com[:, 1], "k+", ms=10, label="system CoM")
    ax.set(xlabel="x [m]", ylabel="y [m]", title="RMRC with J*: hand rates [0.02, 0.03, 0, 0] m/s",
           aspect="equal")
    ax.legend(fontsize=8)
    written.append(save_figure(fig, out / "fig2_motion.png", dpi=120))

    # Fig. 3: base attitude; Fig. 4: base CoM
    yaw = np.degrees([_yaw(x) for x in q])
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(t, yaw, label="RMRC with J* (RK4)")
    if mj is not None:
        ax.plot(mj.time, np.degrees(mj.base_yaw - mj.base_yaw[0]) + yaw[0], "--",
                label="MuJoCo, same joint trajectory")
    ax.set(xlabel="t [s]", ylabel="base attitude [deg]", title="Base attitude (paper Fig. 3)")
    ax.legend(fontsize=8)
    ax.grid(True)
    written.append(save_figure(fig, out / "fig3_base_attitude.png", dpi=120))

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(t, (q[:, 0] - q[0, 0]) * 1e3, label="x")
    ax.plot(t, (q[:, 1] - q[0, 1]) * 1e3, label="y")
    if mj is not None:
        ax.plot(mj.time, (mj.base_position[:, 0] - mj.base_position[0, 0]) * 1e3, "--",
                label="x (MuJoCo)")
        ax.plot(mj.time, (mj.base_position[:, 1] - mj.base_position[0, 1]) * 1e3, "--",
                label="y (MuJoCo)")
    ax.set(xlabel="t [s]", ylabel="base CoM change [mm]", title="Base CoM (paper Fig. 4)")
    ax.legend()
    ax.grid(True)
    written.append(save_figure(fig, out / "fig4_base_com.png", dpi=120))

    # checks: joint rates, CoM drift, hand velocity error
    fig, axes = plt.subplots(3, 1, figsize=(6, 8), sharex=True)
    qd = paper.array("joint_velocities")
    for j, name in enumerate(JOINTS):
        axes[0].plot(t[:-1], qd[:, j], label=name)
    axes[0].set(ylabel="joint rate [rad/s]")
    axes[0].legend(fontsize=7, ncol=2)
    axes[1].semilogy(t, np.maximum(np.linalg.norm(com - com[0], axis=1), 1e-18))
    axes[1].set(ylabel="system CoM drift [m]")
    dt = np.diff(t)[:, None]
    err = np.abs(np.diff(hands, axis=0) / dt - np.array(PAPER_HAND_RATES)).max(axis=1)
    axes[2].semilogy(t[:-1], np.maximum(err, 1e-18))
    axes[2].set(xlabel="t [s]", ylabel="hand velocity error [m/s]")
    for a in axes:
        a.grid(True)
    written.append(save_figure(fig, out / "checks.png", dpi=120))

    # the singularity drive
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    st = sing.trajectory
    sigma = st.array("sigma")
    axes[0].semilogy(st.array("time")[: len(sigma)], sigma[:, -1], label="sigma_min of J*")
    axes[0].axhline(min_singular_value, color="r", ls="--", label="threshold")
    if sing.detected:
        axes[0].axvline(sing.time_s, color="k", ls=":", label="detected, stopped")
    axes[0].set(xlabel="t [s]", ylabel="sigma_min [m/rad]", title="Drive into a dynamic singularity")
    axes[0].legend(fontsize=8)
    axes[0].grid(True)
    for side, colour in (("right", "C0"), ("left", "C1")):
        pts = np.vstack([sing.q[0:2], _stick(model, sing.q, side)])
        axes[1].plot(pts[:, 0], pts[:, 1], "o-", color=colour, label=f"{side} arm")
    axes[1].plot(*sing.q[0:2], "ks")
    axes[1].set(xlabel="x [m]", ylabel="y [m]", aspect="equal", title="Configuration at detection")
    axes[1].legend(fontsize=8)
    written.append(save_figure(fig, out / "singularity.png", dpi=120))
    return written


def run(args: argparse.Namespace) -> int:
    """Run both parts, write free_floating.json and the plots; 0 when every target is met."""
    from humanoid_balance.core.model import RobotModel
    from humanoid_balance.exceptions import ConfigurationError
    from humanoid_balance.resources import urdf_path
    from humanoid_balance.results import metric, write_results

    if not (math.isfinite(args.dt) and args.dt > 0.0 and math.isfinite(args.duration)
            and args.duration >= args.dt):
        raise ConfigurationError(
            f"--dt {args.dt} and --duration {args.duration}: expected 0 < dt <= duration, in s")
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    model = RobotModel(urdf_path("space_robot"), floating_base=True)
    thresholds = {"min_singular_value": args.min_singular_value,
                  "max_condition_number": args.max_condition_number}
    paper = run_paper_scenario(model, dt=args.dt, duration=args.duration, **thresholds)
    sing = run_singularity(model, dt=args.dt, **thresholds)
    mj = None if args.no_mujoco else run_mujoco_check(model, paper)

    t = paper.array("time")
    hands = paper.array("hand_positions")
    command = np.array(PAPER_HAND_RATES)
    step_error = np.abs(np.diff(hands, axis=0) / np.diff(t)[:, None] - command).max()
    instant_error = np.abs(paper.array("hand_velocity_instant") - command).max()
    line_error = np.abs(hands - hands[0] - np.outer(t - t[0], command)).max()
    com = paper.array("com")
    com_drift = float(np.linalg.norm(com - com[0], axis=1).max())
    q = paper.array("q")
    yaw = np.array([_yaw(x) for x in q])
    base_shift = np.linalg.norm(q[:, 0:2] - q[0, 0:2], axis=1)
    sigma = paper.array("sigma")
    hand_error = float(max(step_error, instant_error))
    metrics = {
        "hand_velocity_error_max": metric(hand_error, "m/s", TARGET_HAND_VELOCITY_ERROR, "lower"),
        "hand_velocity_error_instant_max": metric(float(instant_error), "m/s"),
        "hand_velocity_error_step_max": metric(float(step_error), "m/s"),
        "hand_path_error_max_m": metric(float(line_error), "m"),
        "com_drift_max_m": metric(com_drift, "m", TARGET_COM_DRIFT, "lower"),
        "momentum_max_abs": metric(float(np.abs(paper.array("momentum")).max()), "N s | N m s"),
        "base_attitude_change_deg_final": metric(float(np.degrees(yaw[-1] - yaw[0])), "deg"),
        "base_attitude_change_deg_max_abs": metric(float(np.degrees(np.abs(yaw - yaw[0]).max())),
                                                   "deg"),
        "base_com_drift_m_max": metric(float(base_shift.max()), "m"),
        "base_com_displacement_m_final": metric(
            [float(x) for x in q[-1, 0:2] - q[0, 0:2]], "m"),  # type: ignore[arg-type]
        "sigma_min_min_paper_run": metric(float(sigma[:, -1].min()), "m/rad"),
        "condition_number_max_paper_run": metric(float((sigma[:, 0] / sigma[:, -1]).max()), ""),
        "singularity_detected": metric(sing.detected, "", None, None),
        "singularity_time_s": metric(sing.time_s, "s"),
        "singularity_sigma_min": metric(
            float(sing.singular_values[-1]) if sing.singular_values else float("nan"), "m/rad"),
        "singularity_joint_angles_rad": metric(
            [float(x) for x in sing.q[model.q_index(JOINTS)]], "rad"),  # type: ignore[arg-type]
        "singularity_joint_limits_respected": metric(sing.joint_limits_respected, ""),
        "dt_s": metric(args.dt, "s"),
        "integrator": metric("RK4 on the configuration manifold (pinocchio integrate/dIntegrate)"),
    }
    if mj is not None:
        ref_yaw = yaw - yaw[0]
        ref_pos = q[:, 0:2] - q[0, 0:2]
        metrics["mujoco_base_attitude_diff_deg_max"] = metric(float(np.degrees(
            np.abs(mj.base_yaw - mj.base_yaw[0] - ref_yaw).max())), "deg")
        metrics["mujoco_base_position_diff_m_max"] = metric(float(np.linalg.norm(
            mj.base_position - mj.base_position[0] - ref_pos, axis=1).max()), "m")
        metrics["mujoco_com_drift_m_max"] = metric(float(np.linalg.norm(
            mj.com - mj.com[0], axis=1).max()), "m")
    print(f"singularity: {sing.message}")
    write_results("free_floating", metrics,
                  command=f"humanoid-balance experiment free-floating --out {out}", directory=out)
    if not args.no_plots:
        for path in _plots(out, model, paper, sing, args.min_singular_value, mj):
            print(f"wrote {path}")
    ok = (hand_error < TARGET_HAND_VELOCITY_ERROR and com_drift < TARGET_COM_DRIFT
          and sing.detected)
    return 0 if ok else 1
