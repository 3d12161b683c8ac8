"""``humanoid-balance experiment strike``: the seed-000 fast strike with and without RMC.

Runs the strike of :mod:`humanoid_balance.core.strike_trajectory` (right arm,
hand at 1.8 m/s) through :class:`~humanoid_balance.core.rmc.RmcController`:

1. model level (no physics): the momentum of job arm, aux arm and total
   about ``W``, the balance indicators of seed 000 section 3.2, with RMC
   (S = Lx, Ly) and without (aux arm still);
2. physics level: the same commands to the MuJoCo humanoid
   (:class:`~humanoid_balance.sim.humanoid.HumanoidSim`, in-process, 1 kHz,
   controller at ``--rate``), the ZMP measured from the simulated ankle F/T
   sensors (seed 001, eq. 3.24 per foot, both feet combined), foot slip and
   vertical forces; the ZMP shift split into its static part (CoM ground
   projection) and its dynamic part (ZMP minus CoM projection);
3. what helps when the turning margin runs out: Lz added to S (equal rows),
   Lz as a secondary objective in the null space of S = Lx, Ly (task
   priority), a slower strike;
4. the speed sweep 1.0..4.0 m/s at model level (plus a few MuJoCo runs):
   the highest balanced speed and which limit comes first.

Writes ``<out>/strike.json`` (metric names of shared RESULTS.md) and PNG plots
in the manner of the paper's Figs. 4-7 beside it.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from humanoid_balance.core.zmp import FootSample  # numpy only: cheap to import here
from humanoid_balance.results import save_figure

#: Seed 000's reported figures, shown beside ours.
PAPER_PEAK_DLZ_DT = 31.70  # N m
PAPER_FRICTION_TORQUE_LIMIT = 32.34  # N m (g = 9.8)
PAPER_MAX_BALANCED_SPEED = 3.2  # m/s
PAPER_FIRST_LIMIT = "job arm joint speed"
SIDES = ("left", "right")
CONTACT_THRESHOLD_N = 20.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the strike experiment."""
    parser.add_argument("--out", type=Path, default=Path("results/strike"),
                        help="output folder (default results/strike)")
    parser.add_argument("--speed", type=float, default=None,
                        help="hand speed at the target, m/s (default the paper's 1.8)")
    parser.add_argument("--rate", type=float, default=500.0,
                        help="controller rate, Hz (default 500)")
    parser.add_argument("--sweep-step", type=float, default=0.1,
                        help="speed step of the sweep 1.0..4.0 m/s (default 0.1)")
    parser.add_argument("--sweep-sim-speeds", type=float, nargs="*", default=[2.5, 3.2, 4.0],
                        help="speeds also run in MuJoCo during the sweep")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")


# --- model level ------------------------------------------------------------


@dataclass
class ModelRun:
    """Time series of one model-level run (controller only)."""

    speed: float
    selection: tuple[str, ...]
    balance: bool
    times: np.ndarray
    names: tuple[str, ...]
    position: np.ndarray  # (n, 14) job then aux [rad]
    velocity: np.ndarray  # (n, 14) [rad/s]
    momentum_job: np.ndarray  # (n, 6) about W
    momentum_aux: np.ndarray
    momentum: np.ndarray
    momentum_rate: np.ndarray
    selected: np.ndarray  # (n, k)
    model_zmp: np.ndarray  # (n, 2)
    zmp_margin: np.ndarray
    turn_torque: np.ndarray
    turn_margin: np.ndarray
    slide_margin: np.ndarray
    lift_margin: np.ndarray
    job_exact: np.ndarray
    balance_exact: np.ndarray
    saturated: list[tuple[str, ...]]
    step_s: np.ndarray
    twist_error: np.ndarray  # (n,) max |commanded - achieved job twist|


def _setup(model: Any, speed: float | None, start_time: float = 0.0) -> tuple[Any, dict[str, float]]:
    from humanoid_balance.core.strike_trajectory import AUX_START_DEG, StrikeTrajectory, arm_pose

    trajectory = StrikeTrajectory(model, target_speed=speed, start_time=start_time)
    pose = {**dict(zip(trajectory.joint_names, trajectory.initial, strict=True)),
            **arm_pose("left", AUX_START_DEG)}
    return trajectory, pose


def run_model(model: Any, polygon: np.ndarray, *, speed: float | None, selection: Sequence[str],
              balance: bool, rate_hz: float, extra: float = 0.3,
              twist_mode: bool = False, secondary: Sequence[str] = ()) -> ModelRun:
    """The strike through the controller alone (the model's configuration integrates the commands).

    ``twist_mode``: drive the job arm by the reference hand twist (eq. 3) instead
    of the reference joint velocities. ``secondary``: rows reduced best effort
    after ``selection`` (task priority, see :class:`RmcController`).
    """
    from humanoid_balance.core.rmc import RmcController, RmcInput

    trajectory, pose = _setup(model, speed)
    controller = RmcController(model, selection=selection, support_polygon=polygon,
                               secondary=secondary)
    controller.balance_enabled = balance
    q0 = model.configuration(pose)
    controller.reset(q0)
    dt = 1.0 / rate_hz
    n = round((trajectory.duration + extra) / dt)
    rows: dict[str, list[Any]] = {k: [] for k in (
        "t", "pos", "vel", "hj", "ha", "h", "rate", "sel", "zmp", "margin", "turn", "turnm",
        "slide", "lift", "jx", "bx", "sat", "dt", "twist_err")}
    for k in range(n):
        t = k * dt
        ref = trajectory.sample(t)
        if twist_mode:
            inputs = RmcInput(q0, job_twist=trajectory.hand_twist(t, q0))
        else:
            inputs = RmcInput(q0, job_joint_velocities=ref.velocity)
        t0 = time.perf_counter()
        out = controller.step(inputs, dt)
        rows["dt"].append(time.perf_counter() - t0)
        rows["twist_err"].append(float(np.max(np.abs(out.twist_error))))
        ind = out.indicators
        rows["t"].append(t)
        rows["pos"].append(out.position - out.velocity * dt)
        rows["vel"].append(out.velocity)
        rows["hj"].append(out.momentum_job)
        rows["ha"].append(out.momentum_aux)
        rows["h"].append(out.momentum)
        rows["rate"].append(out.momentum_rate)
        rows["sel"].append(out.selected_momentum)
        rows["zmp"].append(ind.model_zmp)
        rows["margin"].append(ind.zmp_margin)
        rows["turn"].append(ind.turn_torque)
        rows["turnm"].append(ind.turn_margin)
        rows["slide"].append(ind.slide_margin)
        rows["lift"].append(ind.lift_off_margin)
        rows["jx"].append(out.job_exact)
        rows["bx"].append(out.balance_exact)
        rows["sat"].append(out.saturated_joints)
    a = {k: np.array(v) for k, v in rows.items() if k != "sat"}
    return ModelRun(
        float(trajectory.target_speed), tuple(selection), balance, a["t"], controller.names,
        a["pos"], a["vel"], a["hj"], a["ha"], a["h"], a["rate"], a["sel"], a["zmp"], a["margin"],
        a["turn"], a["turnm"], a["slide"], a["lift"], a["jx"], a["bx"], rows["sat"], a["dt"],
        a["twist_err"])


def failures(run: ModelRun, trajectory_ratios: Any) -> list[str]:
    """The limits a model-level run reaches (empty: balanced within every limit)."""
    out: list[str] = []
    kind, joint, ratio = trajectory_ratios.worst
    if ratio > 1.0 or not run.job_exact.all():
        out.append(f"job arm joint {kind} ({joint})")
    if not run.balance_exact.all():
        joints = sorted({n for s, ok in zip(run.saturated, run.balance_exact, strict=True) if not ok
                         for n in s if not n.startswith("right_")})
        out.append(f"aux arm joint limit ({', '.join(joints)})")
    if np.min(run.lift_margin) <= 0:
        out.append("lift-off")
    if np.min(run.slide_margin) <= 0:
        out.append("sliding friction")
    if np.min(run.turn_margin) <= 0:
        out.append("turning friction (|dLz/dt| > mu C/2 G)")
    if np.min(run.zmp_margin) <= 0:
        out.append("model ZMP leaves the support polygon")
    return out


# --- physics level --------------------------------------------------------------


@dataclass
class SimRun:
    """Time series of one MuJoCo run."""

    speed: float
    selection: tuple[str, ...]
    balance: bool
    times: np.ndarray
    zmp: np.ndarray  # (n, 2) measured from the F/T sensors, world [m]
    cop_truth: np.ndarray  # (n, 2) from the contact forces
    com_xy: np.ndarray  # (n, 2)
    min_fz: np.ndarray  # (n,) smaller of the two feet's vertical forces [N]
    slip: np.ndarray  # (n,) largest horizontal sole displacement since the start [m]
    yaw: np.ndarray  # (n,) largest sole yaw change since the start [rad]
    polygon: np.ndarray  # (N, 2) support polygon in the world


def measured_zmp(sim: Any, estimator: Any) -> np.ndarray | None:
    """ZMP [m] (world x, y) of both feet from the ankle F/T sensors, as ``zmp_estimator`` computes it.

    :class:`~humanoid_balance.core.zmp.ZmpEstimator` (seed 001, eq. 3.24/3.25/3.27,
    foot weight below the sensors compensated, contact threshold with hysteresis),
    with the soles' poses in the simulation's world; None when no foot is in contact.
    """
    samples = {}
    for side in SIDES:
        force, torque = sim.foot_wrench(side)
        samples[side] = FootSample(sim.sole_transform(side), force, torque)
    out = estimator.step(samples)
    return None if out.zmp_in_world is None else out.zmp_in_world[:2]


def _yaw(rot: np.ndarray) -> float:
    return float(np.arctan2(rot[1, 0], rot[0, 0]))


def run_sim(model: Any, *, speed: float | None, selection: Sequence[str], balance: bool,
            rate_hz: float, extra: float = 0.4, settle: float = 0.5,
            secondary: Sequence[str] = ()) -> SimRun:
    """The strike in MuJoCo: the controller's commands to the servos, the sensors read at 1 kHz."""
    from humanoid_balance.core.rmc import RmcController, RmcInput
    from humanoid_balance.core.zmp import humanoid_zmp_estimator
    from humanoid_balance.sim.humanoid import HumanoidSim

    trajectory, pose = _setup(model, speed)
    sim = HumanoidSim()
    sim.reset(pose)
    sim.settle(settle)
    q_model = model.neutral()
    sim_index = model.q_index(list(sim.joint_names))
    controller = RmcController(model, selection=selection, secondary=secondary)
    controller.balance_enabled = balance
    q_model[sim_index] = sim.joint_state().position
    q_model[model.q_index(list(pose))] = list(pose.values())
    controller.reset(q_model)
    q_neutral = model.neutral()
    estimator = humanoid_zmp_estimator(model, contact_threshold=CONTACT_THRESHOLD_N)
    sole0 = {s: sim.sole_transform(s) for s in SIDES}
    fsr_in_sole = [np.linalg.inv(model.frame_transform(f"{s}_sole", q_neutral))
                   @ model.frame_transform(f"{s}_fsr_{i}", q_neutral) for s in SIDES for i in range(4)]
    from scipy.spatial import ConvexHull

    pts = np.array([(sole0[s] @ f)[:2, 3] for s, f in zip(
        [s for s in SIDES for _ in range(4)], fsr_in_sole, strict=True)])
    polygon = pts[ConvexHull(pts).vertices]
    dt = 1.0 / rate_hz
    substeps = max(1, round(dt / sim.timestep))
    n = round((trajectory.duration + extra) / dt)
    rec: dict[str, list[Any]] = {k: [] for k in ("t", "zmp", "cop", "com", "fz", "slip", "yaw")}
    for k in range(n):
        ref = trajectory.sample(k * dt)
        q_model[sim_index] = sim.joint_state().position
        out = controller.step(RmcInput(q_model, job_joint_velocities=ref.velocity), dt)
        sim.set_targets(out.names, out.position - out.velocity * dt, out.velocity)
        for _ in range(substeps):
            sim.step()
            z = measured_zmp(sim, estimator)
            cop = sim.cop()
            rec["t"].append(sim.time)
            rec["zmp"].append(z if z is not None else (np.nan, np.nan))
            rec["cop"].append(cop[:2] if cop is not None else (np.nan, np.nan))
            rec["com"].append(sim.com()[:2])
            rec["fz"].append(min(float(sim.foot_wrench(s)[0][2]) for s in SIDES))
            soles = {s: sim.sole_transform(s) for s in SIDES}
            rec["slip"].append(max(float(np.linalg.norm(soles[s][:2, 3] - sole0[s][:2, 3]))
                                   for s in SIDES))
            rec["yaw"].append(max(abs(_yaw(soles[s][:3, :3]) - _yaw(sole0[s][:3, :3]))
                                  for s in SIDES))
    a = {k: np.array(v, dtype=float) for k, v in rec.items()}
    return SimRun(float(trajectory.target_speed), tuple(selection), balance, a["t"], a["zmp"],
                  a["cop"], a["com"], a["fz"], a["slip"], a["yaw"], polygon)


def zmp_vs_contact_cop(run: SimRun) -> float:
    """Largest distance [m] between the sensor ZMP and the ground-truth contact CoP."""
    ok = np.all(np.isfinite(run.zmp), axis=1) & np.all(np.isfinite(run.cop_truth), axis=1)
    return float(np.max(np.hypot(*(run.zmp[ok] - run.cop_truth[ok]).T))) if ok.any() else \
        float("nan")


@dataclass(frozen=True)
class ZmpShift:
    """Peak distances [m] from the standing position: total, static (CoM), dynamic (rest)."""

    total: float
    static: float
    dynamic: float
    min_margin: float


def zmp_shift(run: SimRun) -> ZmpShift:
    """Split of the measured ZMP shift into static (CoM projection) and dynamic parts."""
    from humanoid_balance.core.rmc import ConvexPolygon

    zmp0 = run.zmp[0]
    com0 = run.com_xy[0]
    total = np.hypot(*(run.zmp - zmp0).T)
    static = np.hypot(*(run.com_xy - com0).T)
    dynamic = np.hypot(*((run.zmp - run.com_xy) - (zmp0 - com0)).T)
    poly = ConvexPolygon(run.polygon)
    margins = [poly.margin(z) for z in run.zmp if np.all(np.isfinite(z))]
    return ZmpShift(float(np.nanmax(total)), float(np.nanmax(static)), float(np.nanmax(dynamic)),
                    float(min(margins)) if margins else float("nan"))


# --- plots ------------------------------------------------------------------------


def _plots(out: Path, rmc: ModelRun, off: ModelRun, sim_rmc: SimRun, sim_off: SimRun,
           sweep_rows: list[dict[str, Any]], friction_limit: float,
           lz_run: ModelRun, lz2_run: ModelRun) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    labels = [n.split("_", 1)[1] for n in rmc.names[:7]]
    for name, data, unit, title in (
            ("fig4_joint_velocities.png", np.rad2deg(rmc.velocity), "deg/s",
             "Fig. 4: joint velocities, job (right) vs aux (left) arm"),
            ("fig5_joint_angles.png", np.rad2deg(rmc.position), "deg",
             "Fig. 5: joint angles, job (right) vs aux (left) arm")):
        fig, axes = plt.subplots(4, 2, figsize=(10, 10), sharex=True)
        for j, ax in enumerate(axes.flat[:7]):
            ax.plot(rmc.times, data[:, j], label="job (right)")
            ax.plot(rmc.times, data[:, 7 + j], "--", label="aux (left)")
            ax.set_title(labels[j], fontsize=9)
            ax.set_ylabel(unit)
            ax.grid(True, alpha=0.3)
        axes.flat[0].legend(fontsize=8)
        axes.flat[7].axis("off")
        fig.suptitle(title)
        files.append(save_figure(fig, out / name, dpi=90))

    fig, axes = plt.subplots(3, 2, figsize=(10, 9), sharex=True)
    comps = ("Px [N s]", "Py [N s]", "Pz [N s]", "Lx [N m s]", "Ly [N m s]", "Lz [N m s]")
    for i, ax in enumerate(axes.T.flat):
        ax.plot(rmc.times, rmc.momentum_job[:, i], label="job arm")
        ax.plot(rmc.times, rmc.momentum_aux[:, i], "--", label="aux arm")
        ax.plot(rmc.times, rmc.momentum[:, i], "k", lw=1.5, label="total (RMC)")
        ax.set_title(comps[i], fontsize=9)
        ax.grid(True, alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    fig.suptitle("Fig. 6: momentum about W, S = [Lx, Ly]")
    files.append(save_figure(fig, out / "fig6_momentum.png", dpi=90))

    fig, axes = plt.subplots(1, 2, figsize=(12, 6))
    ax = axes[0]
    poly = np.vstack([sim_rmc.polygon, sim_rmc.polygon[:1]])
    ax.plot(poly[:, 0], poly[:, 1], "k-", label="support polygon (FSR pads)")
    ax.plot(sim_off.zmp[:, 0], sim_off.zmp[:, 1], "r-", lw=1, label="measured ZMP, no RMC")
    ax.plot(sim_rmc.zmp[:, 0], sim_rmc.zmp[:, 1], "b-", lw=1.5, label="measured ZMP, RMC")
    ax.plot(off.model_zmp[:, 0], off.model_zmp[:, 1], "r:", lw=1, label="model ZMP, no RMC")
    ax.plot(rmc.model_zmp[:, 0], rmc.model_zmp[:, 1], "b:", lw=1, label="model ZMP, RMC")
    ax.set_aspect("equal")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.legend(fontsize=8, loc="upper right")
    ax.set_title("Fig. 7: ZMP paths (MuJoCo, F/T sensors)")
    ax = axes[1]
    for run, style, label in ((sim_off, "r", "no RMC"), (sim_rmc, "b", "RMC")):
        z0, c0 = run.zmp[0], run.com_xy[0]
        ax.plot(run.times, 1e3 * np.hypot(*(run.zmp - z0).T), style + "-", label=f"total, {label}")
        ax.plot(run.times, 1e3 * np.hypot(*(run.com_xy - c0).T), style + ":",
                label=f"static (CoM), {label}")
        ax.plot(run.times, 1e3 * np.hypot(*((run.zmp - run.com_xy) - (z0 - c0)).T), style + "--",
                lw=0.8, label=f"dynamic, {label}")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("ZMP shift from standing [mm]")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    files.append(save_figure(fig, out / "fig7_zmp.png", dpi=90))

    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot(off.times, off.turn_torque, "r", label="no RMC")
    ax.plot(rmc.times, rmc.turn_torque, "b", label="RMC, S = Lx, Ly")
    ax.plot(lz_run.times, lz_run.turn_torque, "g", label="RMC, S = Lx, Ly, Lz")
    ax.plot(lz2_run.times, lz2_run.turn_torque, "m", label="RMC, S = Lx, Ly; Lz secondary")
    ax.axhline(friction_limit, color="k", ls="--", label=f"mu C/2 G = {friction_limit:.2f} N m")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("|dLz/dt| [N m]")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    ax.set_title("Turning: yaw torque against the friction limit")
    files.append(save_figure(fig, out / "turn_torque.png", dpi=90))

    fig, ax = plt.subplots(figsize=(8, 4.5))
    speeds = [r["speed"] for r in sweep_rows]
    ax.plot(speeds, [r["peak_dLz"] for r in sweep_rows], "b.-", label="peak |dLz/dt|, S = Lx, Ly")
    ax.plot(speeds, [r["peak_dLz_lz"] for r in sweep_rows], "g.-",
            label="peak |dLz/dt|, S = Lx, Ly, Lz")
    ax.plot(speeds, [r["peak_dLz_lz2"] for r in sweep_rows], "c.-",
            label="peak |dLz/dt|, S = Lx, Ly; Lz secondary")
    ax.axhline(friction_limit, color="k", ls="--", label="mu C/2 G")
    ax2 = ax.twinx()
    ax2.plot(speeds, [r["job_ratio"] for r in sweep_rows], "m.-", label="job arm worst limit ratio")
    ax2.axhline(1.0, color="m", ls=":")
    ax2.set_ylabel("job arm peak / limit")
    ax.set_xlabel("target hand speed [m/s]")
    ax.set_ylabel("N m")
    ax.legend(fontsize=8, loc="upper left")
    ax2.legend(fontsize=8, loc="lower right")
    ax.set_title("Speed sweep (model level)")
    files.append(save_figure(fig, out / "speed_sweep.png", dpi=90))
    return files


# --- the experiment -----------------------------------------------------------------


def _peak(x: np.ndarray) -> float:
    return float(np.max(np.abs(x)))


def run(args: argparse.Namespace) -> int:
    """Run the experiment; 0 when it ran (the figures say how it went)."""
    from humanoid_balance.core.model import RobotModel
    from humanoid_balance.core.rmc import PAPER_SELECTION, support_polygon_from_frames
    from humanoid_balance.core.strike_trajectory import StrikeTrajectory
    from humanoid_balance.resources import urdf_path
    from humanoid_balance.results import metric, write_results

    started = time.perf_counter()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    polygon = support_polygon_from_frames(model)
    rate = float(args.rate)
    speed = args.speed
    lz_sel = ("Lx", "Ly", "Lz")

    rmc = run_model(model, polygon, speed=speed, selection=PAPER_SELECTION, balance=True,
                    rate_hz=rate)
    off = run_model(model, polygon, speed=speed, selection=PAPER_SELECTION, balance=False,
                    rate_hz=rate)
    lz_run = run_model(model, polygon, speed=speed, selection=lz_sel, balance=True, rate_hz=rate)
    twist_run = run_model(model, polygon, speed=speed, selection=PAPER_SELECTION, balance=True,
                          rate_hz=rate, twist_mode=True)
    sim_rmc = run_sim(model, speed=speed, selection=PAPER_SELECTION, balance=True, rate_hz=rate)
    sim_off = run_sim(model, speed=speed, selection=PAPER_SELECTION, balance=False, rate_hz=rate)
    sim_lz = run_sim(model, speed=speed, selection=lz_sel, balance=True, rate_hz=rate)
    second = ("Lz",)
    lz2_run = run_model(model, polygon, speed=speed, selection=PAPER_SELECTION, balance=True,
                        rate_hz=rate, secondary=second)
    sim_lz2 = run_sim(model, speed=speed, selection=PAPER_SELECTION, balance=True, rate_hz=rate,
                      secondary=second)
    shift_rmc = zmp_shift(sim_rmc)
    shift_off = zmp_shift(sim_off)
    friction_limit = (0.3 * 0.4 / 2.0) * model.total_mass * model.gravity

    # the turning margin: what helps (slower strikes)
    slower = []
    for v in (1.6, 1.4, 1.2):
        r = run_model(model, polygon, speed=v, selection=PAPER_SELECTION, balance=True, rate_hz=rate)
        slower.append((v, float(np.max(r.turn_torque))))

    # speed sweep
    sweep_rows: list[dict[str, Any]] = []
    speeds = np.round(np.arange(1.0, 4.0 + 1e-9, float(args.sweep_step)), 3)
    for v in speeds:
        ratios = StrikeTrajectory(model, target_speed=float(v)).limit_ratios()
        r = run_model(model, polygon, speed=float(v), selection=PAPER_SELECTION, balance=True,
                      rate_hz=rate, extra=0.1)
        r_lz = run_model(model, polygon, speed=float(v), selection=lz_sel, balance=True,
                         rate_hz=rate, extra=0.1)
        r_lz2 = run_model(model, polygon, speed=float(v), selection=PAPER_SELECTION, balance=True,
                          rate_hz=rate, extra=0.1, secondary=second)
        fails = failures(r, ratios)
        sweep_rows.append({
            "speed": float(v), "failures": fails,
            "failures_no_turn": [f for f in fails if not f.startswith("turning")],
            "failures_lz": failures(r_lz, ratios),
            "failures_lz2": [f for f in failures(r_lz2, ratios) if not f.startswith("aux arm")]
            + ([] if float(np.max(np.abs(r_lz2.selected))) < 1e-9 else ["held rows not held"]),
            "peak_dLz_lz2": float(np.max(r_lz2.turn_torque)),
            "peak_dLz": float(np.max(r.turn_torque)), "peak_dLz_lz": float(np.max(r_lz.turn_torque)),
            "job_ratio": ratios.worst[2], "min_zmp_margin_mm": 1e3 * float(np.min(r.zmp_margin)),
        })

    def highest(key: str) -> tuple[float, str]:
        best, first = 0.0, "none up to 4.0 m/s"
        for row in sweep_rows:
            if row[key]:
                first = "; ".join(row[key])
                break
            best = row["speed"]
        return best, first

    max_speed, first_limit = highest("failures")
    max_speed_no_turn, first_limit_no_turn = highest("failures_no_turn")
    max_speed_lz, first_limit_lz = highest("failures_lz")
    max_speed_lz2, first_limit_lz2 = highest("failures_lz2")
    sweep_sim = []
    for v in args.sweep_sim_speeds:
        s = run_sim(model, speed=float(v), selection=PAPER_SELECTION, balance=True, rate_hz=rate,
                    extra=0.2)
        sh = zmp_shift(s)
        sweep_sim.append((float(v), sh, float(np.max(s.slip)), float(np.min(s.min_fz))))

    aux = rmc.velocity[:, 7:]
    shoulder_share = float(np.sqrt(np.sum(aux[:, :2] ** 2)) / np.sqrt(np.sum(aux ** 2)))
    zmp_ratio = shift_rmc.total / shift_off.total
    paper_cmp = {
        f"peak_abs_{c}_job": _peak(rmc.momentum_job[:, i]) for i, c in enumerate(
            ("Px", "Py", "Pz", "Lx", "Ly", "Lz"))}
    total_cmp = {f"peak_abs_{c}_total": _peak(rmc.momentum[:, i]) for i, c in enumerate(
        ("Px", "Py", "Pz", "Lx", "Ly", "Lz"))}

    metrics: dict[str, dict[str, Any]] = {
        "zmp_peak_mm_rmc": metric(round(1e3 * shift_rmc.total, 2), "mm",
                                  target=round(0.25e3 * shift_off.total, 2), better="lower"),
        "zmp_peak_mm_no_rmc": metric(round(1e3 * shift_off.total, 2), "mm"),
        "zmp_ratio_rmc_over_no_rmc": metric(round(zmp_ratio, 4), "", target=0.25, better="lower"),
        "zmp_sensor_vs_contact_cop_max_mm_rmc": metric(round(1e3 * zmp_vs_contact_cop(sim_rmc), 3),
                                                      "mm"),
        "zmp_sensor_vs_contact_cop_max_mm_no_rmc": metric(
            round(1e3 * zmp_vs_contact_cop(sim_off), 3), "mm"),
        "zmp_static_peak_mm_rmc": metric(round(1e3 * shift_rmc.static, 2), "mm"),
        "zmp_dynamic_peak_mm_rmc": metric(round(1e3 * shift_rmc.dynamic, 2), "mm"),
        "zmp_static_peak_mm_no_rmc": metric(round(1e3 * shift_off.static, 2), "mm"),
        "zmp_dynamic_peak_mm_no_rmc": metric(round(1e3 * shift_off.dynamic, 2), "mm"),
        "max_abs_selected_momentum": metric(float(np.max(np.abs(rmc.selected))), "N m s",
                                            target=1e-9, better="lower"),
        "max_abs_selected_momentum_twist_mode": metric(
            float(np.max(np.abs(twist_run.selected))), "N m s", target=1e-9, better="lower"),
        "max_twist_error_while_no_limit_twist_mode": metric(
            float(np.max(twist_run.twist_error[twist_run.job_exact.astype(bool)])), "m/s, rad/s",
            target=1e-9, better="lower"),
        "max_twist_error_twist_mode": metric(float(np.max(twist_run.twist_error)), "m/s, rad/s"),
        "job_limited_cycles_twist_mode": metric(int(np.sum(~twist_run.job_exact.astype(bool))),
                                                "cycles"),
        "min_margin_mm_rmc": metric(round(1e3 * shift_rmc.min_margin, 2), "mm", target=0.0,
                                    better="higher"),
        "min_margin_mm_no_rmc": metric(round(1e3 * shift_off.min_margin, 2), "mm"),
        "model_zmp_min_margin_mm_no_rmc": metric(round(1e3 * float(np.min(off.zmp_margin)), 2), "mm",
                                                 target=0.0, better="lower"),
        "model_zmp_min_margin_mm_rmc": metric(round(1e3 * float(np.min(rmc.zmp_margin)), 2), "mm",
                                              target=0.0, better="higher"),
        "peak_abs_dLz_dt": metric(round(float(np.max(rmc.turn_torque)), 3), "N m",
                                  target=round(friction_limit, 3), better="lower"),
        "peak_abs_dLz_dt_paper": metric(PAPER_PEAK_DLZ_DT, "N m"),
        "min_turn_margin_nm": metric(round(float(np.min(rmc.turn_margin)), 3), "N m", target=0.0,
                                     better="higher"),
        "min_turn_margin_nm_lz_secondary": metric(round(float(np.min(lz2_run.turn_margin)), 3),
                                                  "N m", target=0.0, better="higher"),
        "min_turn_margin_nm_lz_selected": metric(round(float(np.min(lz_run.turn_margin)), 3),
                                                 "N m", target=0.0, better="higher"),
        "peak_abs_dLz_dt_no_rmc": metric(round(float(np.max(off.turn_torque)), 3), "N m"),
        "peak_abs_dLz_dt_lz_selected": metric(round(float(np.max(lz_run.turn_torque)), 3), "N m",
                                              target=round(friction_limit, 3), better="lower"),
        "max_abs_selected_momentum_lz_selected": metric(float(np.max(np.abs(lz_run.selected))),
                                                        "N m s"),
        "friction_torque_limit": metric(round(friction_limit, 3), "N m",
                                        target=PAPER_FRICTION_TORQUE_LIMIT),
        "max_slip_mm": metric(round(1e3 * float(np.max(sim_rmc.slip)), 3), "mm"),
        "max_slip_mm_no_rmc": metric(round(1e3 * float(np.max(sim_off.slip)), 3), "mm"),
        "max_slip_mm_lz_selected": metric(round(1e3 * float(np.max(sim_lz.slip)), 3), "mm"),
        "max_sole_yaw_deg": metric(round(float(np.rad2deg(np.max(sim_rmc.yaw))), 4), "deg"),
        "max_sole_yaw_deg_no_rmc": metric(round(float(np.rad2deg(np.max(sim_off.yaw))), 4), "deg"),
        "max_sole_yaw_deg_lz_selected": metric(round(float(np.rad2deg(np.max(sim_lz.yaw))), 4),
                                               "deg"),
        "zmp_peak_mm_lz_selected": metric(round(1e3 * zmp_shift(sim_lz).total, 2), "mm"),
        "min_margin_mm_lz_selected": metric(round(1e3 * zmp_shift(sim_lz).min_margin, 2), "mm"),
        "min_foot_fz_n": metric(round(float(np.min(sim_rmc.min_fz)), 2), "N", target=0.0,
                                better="higher"),
        "min_foot_fz_n_no_rmc": metric(round(float(np.min(sim_off.min_fz)), 2), "N"),
        "aux_shoulder_share": metric(round(shoulder_share, 4), "", better="higher"),
        "max_balanced_speed": metric(max_speed, "m/s", target=PAPER_MAX_BALANCED_SPEED,
                                     better="higher"),
        "first_limit": metric(first_limit),
        "max_balanced_speed_ignoring_turn": metric(max_speed_no_turn, "m/s",
                                                   target=PAPER_MAX_BALANCED_SPEED,
                                                   better="higher"),
        "first_limit_ignoring_turn": metric(first_limit_no_turn),
        "max_balanced_speed_lz_selected": metric(max_speed_lz, "m/s"),
        "max_balanced_speed_lz_secondary": metric(max_speed_lz2, "m/s",
                                                  target=PAPER_MAX_BALANCED_SPEED, better="higher"),
        "first_limit_lz_secondary": metric(first_limit_lz2),
        "peak_abs_dLz_dt_lz_secondary": metric(round(float(np.max(lz2_run.turn_torque)), 3), "N m",
                                               target=round(friction_limit, 3), better="lower"),
        "max_abs_selected_momentum_lz_secondary": metric(
            float(np.max(np.abs(lz2_run.selected))), "N m s", target=1e-9, better="lower"),
        "model_zmp_min_margin_mm_lz_secondary": metric(
            round(1e3 * float(np.min(lz2_run.zmp_margin)), 2), "mm", target=0.0, better="higher"),
        "zmp_peak_mm_lz_secondary": metric(round(1e3 * zmp_shift(sim_lz2).total, 2), "mm"),
        "max_slip_mm_lz_secondary": metric(round(1e3 * float(np.max(sim_lz2.slip)), 3), "mm"),
        "max_sole_yaw_deg_lz_secondary": metric(
            round(float(np.rad2deg(np.max(sim_lz2.yaw))), 4), "deg"),
        "first_limit_lz_selected": metric(first_limit_lz),
        "first_limit_paper": metric(PAPER_FIRST_LIMIT),
        "job_exact_all_cycles": metric(bool(rmc.job_exact.all())),
        "balance_exact_all_cycles": metric(bool(rmc.balance_exact.all())),
    }
    for v, peak in slower:
        metrics[f"peak_abs_dLz_dt_at_{v:.1f}_m_s"] = metric(round(peak, 3), "N m",
                                                            target=round(friction_limit, 3),
                                                            better="lower")
    for key, value in {**paper_cmp, **total_cmp}.items():
        metrics[key] = metric(round(value, 4), "N s" if "_P" in key else "N m s")
    for v, sh, slip, fz in sweep_sim:
        metrics[f"sim_zmp_peak_mm_at_{v:.1f}_m_s"] = metric(round(1e3 * sh.total, 2), "mm")
        metrics[f"sim_min_margin_mm_at_{v:.1f}_m_s"] = metric(round(1e3 * sh.min_margin, 2), "mm")
        metrics[f"sim_max_slip_mm_at_{v:.1f}_m_s"] = metric(round(1e3 * slip, 3), "mm")
        metrics[f"sim_min_foot_fz_n_at_{v:.1f}_m_s"] = metric(round(fz, 2), "N")
    metrics["run_time_s"] = metric(round(time.perf_counter() - started, 2), "s")

    if not args.no_plots:
        _plots(out, rmc, off, sim_rmc, sim_off, sweep_rows, friction_limit, lz_run, lz2_run)
    (out / "sweep.txt").write_text("\n".join(
        f"{r['speed']:.2f} m/s  peak|dLz/dt| {r['peak_dLz']:.2f} (Lz in S: {r['peak_dLz_lz']:.2f}, "
        f"Lz secondary: {r['peak_dLz_lz2']:.2f}) "
        f"job ratio {r['job_ratio']:.3f}  model-ZMP margin {r['min_zmp_margin_mm']:.1f} mm  "
        f"limits: {'; '.join(r['failures']) or 'none'}" for r in sweep_rows) + "\n")
    speed_arg = "" if speed is None else f" --speed {speed}"
    write_results("strike", metrics, command=f"humanoid-balance experiment strike --out {out}"
                  f"{speed_arg}", directory=out)
    return 0
