"""``humanoid-balance experiment strike``: the seed-000 fast strike with and without RMC.

The experiment itself (model-level and MuJoCo runs, turning-margin remedies,
speed sweep) is :mod:`humanoid_balance.experiments.strike`; this command parses
the options, runs it, and writes ``<out>/strike.json`` (metric names of shared
RESULTS.md, :mod:`humanoid_balance.experiments.strike_metrics`), ``<out>/sweep.txt``
and PNG plots in the manner of the paper's Figs. 4-7 beside them.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from humanoid_balance.experiments.strike import (
    PAPER_ROWS,
    ModelRun,
    StrikeResults,
    StrikeSettings,
    shift_series,
    strike_settings,
)
from humanoid_balance.results import save_figure


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the strike experiment (values checked by :func:`strike_settings`)."""
    parser.add_argument("--out", type=Path, default=Path("results/strike"),
                        help="output folder (default results/strike)")
    parser.add_argument("--speed", default=None, metavar="M/S",
                        help="hand speed at the target, m/s (default the paper's 1.8)")
    parser.add_argument("--job-arm", default="right", metavar="right|left",
                        help="the striking arm (default right, the paper's)")
    parser.add_argument("--selection", default=",".join(PAPER_ROWS), metavar="Lx,Ly,...",
                        help="momentum rows held at zero in the RMC runs, of Px,Py,Pz,Lx,Ly,Lz "
                             "(default Lx,Ly, the paper's)")
    parser.add_argument("--rate", default="500", metavar="HZ",
                        help="controller rate, Hz (default 500)")
    parser.add_argument("--sweep-step", default="0.1", metavar="M/S",
                        help="speed step of the sweep 1.0..4.0 m/s (default 0.1)")
    parser.add_argument("--sweep-sim-speeds", nargs="*", default=["2.5", "3.2", "4.0"],
                        metavar="M/S", help="speeds also run in MuJoCo during the sweep")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")


# --- plots ------------------------------------------------------------------------


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _joint_figures(out: Path, rmc: ModelRun) -> list[Path]:
    """Figs. 4-5: joint velocities and angles, job vs aux arm."""
    plt = _pyplot()
    files = []
    job, aux = (f"{kind} ({rmc.names[i].split('_', 1)[0]})" for kind, i in (("job", 0), ("aux", 7)))
    labels = [n.split("_", 1)[1] for n in rmc.names[:7]]
    for name, data, unit, title in (
            ("fig4_joint_velocities.png", np.rad2deg(rmc.velocity_rad_s), "deg/s",
             f"Fig. 4: joint velocities, {job} vs {aux} arm"),
            ("fig5_joint_angles.png", np.rad2deg(rmc.position_rad), "deg",
             f"Fig. 5: joint angles, {job} vs {aux} arm")):
        fig, axes = plt.subplots(4, 2, figsize=(10, 10), sharex=True)
        for j, ax in enumerate(axes.flat[:7]):
            ax.plot(rmc.times_s, data[:, j], label=job)
            ax.plot(rmc.times_s, data[:, 7 + j], "--", label=aux)
            ax.set_title(labels[j], fontsize=9)
            ax.set_ylabel(unit)
            ax.grid(True, alpha=0.3)
        axes.flat[0].legend(fontsize=8)
        axes.flat[7].axis("off")
        fig.suptitle(title)
        files.append(save_figure(fig, out / name, dpi=90))
    return files


def _momentum_figure(out: Path, rmc: ModelRun) -> Path:
    """Fig. 6: momentum of job arm, aux arm and total about W."""
    plt = _pyplot()
    fig, axes = plt.subplots(3, 2, figsize=(10, 9), sharex=True)
    comps = ("Px [N s]", "Py [N s]", "Pz [N s]", "Lx [N m s]", "Ly [N m s]", "Lz [N m s]")
    for i, ax in enumerate(axes.T.flat):
        ax.plot(rmc.times_s, rmc.momentum_job[:, i], label="job arm")
        ax.plot(rmc.times_s, rmc.momentum_aux[:, i], "--", label="aux arm")
        ax.plot(rmc.times_s, rmc.momentum[:, i], "k", lw=1.5, label="total (RMC)")
        ax.set_title(comps[i], fontsize=9)
        ax.grid(True, alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    fig.suptitle(f"Fig. 6: momentum about W, S = [{', '.join(rmc.selection)}]")
    return save_figure(fig, out / "fig6_momentum.png", dpi=90)


def _zmp_figure(out: Path, results: StrikeResults) -> Path:
    """Fig. 7: measured and model ZMP paths in the support polygon; the shift over time."""
    plt = _pyplot()
    runs = results.runs
    sim_rmc, sim_off = runs.sim_rmc, runs.sim_off
    fig, axes = plt.subplots(1, 2, figsize=(12, 6))
    ax = axes[0]
    poly = np.vstack([sim_rmc.polygon_m, sim_rmc.polygon_m[:1]])
    ax.plot(poly[:, 0], poly[:, 1], "k-", label="support polygon (FSR pads)")
    ax.plot(sim_off.zmp_m[:, 0], sim_off.zmp_m[:, 1], "r-", lw=1, label="measured ZMP, no RMC")
    ax.plot(sim_rmc.zmp_m[:, 0], sim_rmc.zmp_m[:, 1], "b-", lw=1.5, label="measured ZMP, RMC")
    ax.plot(runs.model_off.model_zmp_m[:, 0], runs.model_off.model_zmp_m[:, 1], "r:", lw=1,
            label="model ZMP, no RMC")
    ax.plot(runs.model_rmc.model_zmp_m[:, 0], runs.model_rmc.model_zmp_m[:, 1], "b:", lw=1,
            label="model ZMP, RMC")
    ax.set_aspect("equal")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.legend(fontsize=8, loc="upper right")
    ax.set_title("Fig. 7: ZMP paths (MuJoCo, F/T sensors)")
    ax = axes[1]
    for run, style, label in ((sim_off, "r", "no RMC"), (sim_rmc, "b", "RMC")):
        total, static, dynamic = shift_series(run)
        ax.plot(run.times_s, 1e3 * total, style + "-", label=f"total, {label}")
        ax.plot(run.times_s, 1e3 * static, style + ":", label=f"static (CoM), {label}")
        ax.plot(run.times_s, 1e3 * dynamic, style + "--", lw=0.8, label=f"dynamic, {label}")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("ZMP shift from standing [mm]")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    return save_figure(fig, out / "fig7_zmp.png", dpi=90)


def _turn_figure(out: Path, results: StrikeResults) -> Path:
    """|dLz/dt| of every variant against the turning-friction limit."""
    plt = _pyplot()
    runs, limit = results.runs, results.friction_torque_limit_n_m
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for run, style, label in ((runs.model_off, "r", "no RMC"),
                              (runs.model_rmc, "b", "RMC, S = Lx, Ly"),
                              (runs.model_lz_selected, "g", "RMC, S = Lx, Ly, Lz"),
                              (runs.model_lz_secondary, "m", "RMC, S = Lx, Ly; Lz secondary")):
        ax.plot(run.times_s, run.turn_torque_n_m, style, label=label)
    ax.axhline(limit, color="k", ls="--", label=f"mu C/2 G = {limit:.2f} N m")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("|dLz/dt| [N m]")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    ax.set_title("Turning: yaw torque against the friction limit")
    return save_figure(fig, out / "turn_torque.png", dpi=90)


def _sweep_figure(out: Path, results: StrikeResults) -> Path:
    """Peak |dLz/dt| per variant and the job arm's limit ratio over the speed sweep."""
    plt = _pyplot()
    sweep = results.sweep
    fig, ax = plt.subplots(figsize=(8, 4.5))
    speeds = [p.speed_m_s for p in sweep]
    ax.plot(speeds, [p.peak_dlz_dt_n_m for p in sweep], "b.-", label="peak |dLz/dt|, S = Lx, Ly")
    ax.plot(speeds, [p.peak_dlz_dt_lz_selected_n_m for p in sweep], "g.-",
            label="peak |dLz/dt|, S = Lx, Ly, Lz")
    ax.plot(speeds, [p.peak_dlz_dt_lz_secondary_n_m for p in sweep], "c.-",
            label="peak |dLz/dt|, S = Lx, Ly; Lz secondary")
    ax.axhline(results.friction_torque_limit_n_m, color="k", ls="--", label="mu C/2 G")
    ax2 = ax.twinx()
    ax2.plot(speeds, [p.job_limit_ratio for p in sweep], "m.-", label="job arm worst limit ratio")
    ax2.axhline(1.0, color="m", ls=":")
    ax2.set_ylabel("job arm peak / limit")
    ax.set_xlabel("target hand speed [m/s]")
    ax.set_ylabel("N m")
    ax.legend(fontsize=8, loc="upper left")
    ax2.legend(fontsize=8, loc="lower right")
    ax.set_title("Speed sweep (model level)")
    return save_figure(fig, out / "speed_sweep.png", dpi=90)


def plot(out: Path, results: StrikeResults) -> list[Path]:
    """Every PNG figure of the experiment, written into ``out``."""
    rmc = results.runs.model_rmc
    return [*_joint_figures(out, rmc), _momentum_figure(out, rmc), _zmp_figure(out, results),
            _turn_figure(out, results), _sweep_figure(out, results)]


# --- the command ------------------------------------------------------------------


def settings_from_args(args: argparse.Namespace) -> StrikeSettings:
    """The experiment's settings from the command line (ConfigurationError: one line)."""
    return strike_settings(speed=args.speed, rate_hz=args.rate, sweep_step=args.sweep_step,
                           sweep_sim_speeds=args.sweep_sim_speeds, job_arm=args.job_arm,
                           selection=args.selection)


def _command(out: Path, settings: StrikeSettings) -> str:
    """The command line that reproduces the run (the options that differ from the defaults)."""
    parts = [f"humanoid-balance experiment strike --out {out}"]
    if settings.speed_m_s is not None:
        parts.append(f"--speed {settings.speed_m_s:g}")
    if settings.job_arm != "right":
        parts.append(f"--job-arm {settings.job_arm}")
    if settings.selection != PAPER_ROWS:
        parts.append(f"--selection {','.join(settings.selection)}")
    return " ".join(parts)


def run(args: argparse.Namespace) -> int:
    """Run the experiment; 0 when it ran (the figures say how it went)."""
    from humanoid_balance.experiments.strike import run_strike_experiment, sweep_text
    from humanoid_balance.experiments.strike_metrics import strike_metrics
    from humanoid_balance.results import write_results

    settings = settings_from_args(args)  # before any work: a bad option fails at once
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    results = run_strike_experiment(settings)
    metrics = strike_metrics(results)
    if not args.no_plots:
        plot(out, results)
    (out / "sweep.txt").write_text(sweep_text(results.sweep))
    write_results("strike", metrics, command=_command(out, settings), directory=out)
    return 0
