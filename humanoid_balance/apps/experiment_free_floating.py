"""``humanoid-balance experiment free-floating``: the seed-002 dual-arm space robot under RMRC.

The experiment (the paper's scenario, the drive into a dynamic singularity, the
MuJoCo cross-check) is :mod:`humanoid_balance.experiments.free_floating`; this
command parses the options, runs it, and writes ``<out>/free_floating.json``
(metric names of shared RESULTS.md) and PNG plots beside it (the paper's
Figs. 2-4, the checks, the singularity). Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

import numpy as np

from humanoid_balance.core.gjm import DEFAULT_MAX_CONDITION_NUMBER, DEFAULT_MIN_SINGULAR_VALUE
from humanoid_balance.experiments.free_floating import (
    JOINTS,
    PAPER_DURATION_S,
    PAPER_HAND_RATES,
    FreeFloatingResults,
    FreeFloatingSettings,
    base_yaw,
)
from humanoid_balance.results import save_figure


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


# --- plots ------------------------------------------------------------------------


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _stick(model: Any, q: np.ndarray, side: str) -> np.ndarray:
    frames = [f"{side}_link1", f"{side}_link2", f"{side}_link3", f"{side}_hand"]
    return np.array([model.frame_transform(f, q)[0:2, 3] for f in frames])


def _motion_figure(out: Path, model: Any, results: FreeFloatingResults) -> Path:
    """Fig. 2: the motion (stick figures, hand paths, system CoM)."""
    plt = _pyplot()
    paper = results.paper
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
    hands = paper.hand_positions_m
    ax.plot(hands[:, 0], hands[:, 1], "C3-", label="right hand path")
    ax.plot(hands[:, 2], hands[:, 3], "C2x", ms=4, label="left hand (held)")
    ax.plot(paper.com_m[:, 0], paper.com_m[:, 1], "k+", ms=10, label="system CoM")
    ax.set(xlabel="x [m]", ylabel="y [m]", title="RMRC with J*: hand rates [0.02, 0.03, 0, 0] m/s",
           aspect="equal")
    ax.legend(fontsize=8)
    return save_figure(fig, out / "fig2_motion.png", dpi=120)


def _base_figures(out: Path, results: FreeFloatingResults) -> list[Path]:
    """Fig. 3: base attitude; Fig. 4: base CoM; RMRC and (when run) MuJoCo."""
    plt = _pyplot()
    t, q, mj = results.paper.time_s, results.paper.q, results.mujoco
    yaw = np.degrees([base_yaw(x) for x in q])
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(t, yaw, label="RMRC with J* (RK4)")
    if mj is not None:
        ax.plot(mj.time_s, np.degrees(mj.base_yaw_rad - mj.base_yaw_rad[0]) + yaw[0], "--",
                label="MuJoCo, same joint trajectory")
    ax.set(xlabel="t [s]", ylabel="base attitude [deg]", title="Base attitude (paper Fig. 3)")
    ax.legend(fontsize=8)
    ax.grid(True)
    written = [save_figure(fig, out / "fig3_base_attitude.png", dpi=120)]

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(t, (q[:, 0] - q[0, 0]) * 1e3, label="x")
    ax.plot(t, (q[:, 1] - q[0, 1]) * 1e3, label="y")
    if mj is not None:
        ax.plot(mj.time_s, (mj.base_position_m[:, 0] - mj.base_position_m[0, 0]) * 1e3, "--",
                label="x (MuJoCo)")
        ax.plot(mj.time_s, (mj.base_position_m[:, 1] - mj.base_position_m[0, 1]) * 1e3, "--",
                label="y (MuJoCo)")
    ax.set(xlabel="t [s]", ylabel="base CoM change [mm]", title="Base CoM (paper Fig. 4)")
    ax.legend()
    ax.grid(True)
    written.append(save_figure(fig, out / "fig4_base_com.png", dpi=120))
    return written


def _checks_figure(out: Path, results: FreeFloatingResults) -> Path:
    """Joint rates, system CoM drift and hand velocity error over the paper's run."""
    plt = _pyplot()
    paper = results.paper
    t, com, hands = paper.time_s, paper.com_m, paper.hand_positions_m
    fig, axes = plt.subplots(3, 1, figsize=(6, 8), sharex=True)
    for j, name in enumerate(JOINTS):
        axes[0].plot(t[:-1], paper.joint_velocities_rad_s[:, j], label=name)
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
    return save_figure(fig, out / "checks.png", dpi=120)


def _singularity_figure(out: Path, model: Any, results: FreeFloatingResults) -> Path:
    """sigma_min of J* on the drive into the singularity, and the configuration at detection."""
    plt = _pyplot()
    sing = results.singularity
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    st = sing.trajectory
    sigma = st.singular_values
    axes[0].semilogy(st.time_s[: len(sigma)], sigma[:, -1], label="sigma_min of J*")
    axes[0].axhline(results.settings.min_singular_value, color="r", ls="--", label="threshold")
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
    return save_figure(fig, out / "singularity.png", dpi=120)


def plot(out: Path, model: Any, results: FreeFloatingResults) -> list[Path]:
    """Every PNG figure of the experiment, written into ``out``."""
    return [_motion_figure(out, model, results), *_base_figures(out, results),
            _checks_figure(out, results), _singularity_figure(out, model, results)]


# --- the command ------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """Run both parts, write free_floating.json and the plots; 0 when every target is met."""
    from humanoid_balance.exceptions import ConfigurationError
    from humanoid_balance.experiments.free_floating import (
        free_floating_metrics,
        run_free_floating_experiment,
        space_robot_model,
    )
    from humanoid_balance.results import write_results

    if not (math.isfinite(args.dt) and args.dt > 0.0 and math.isfinite(args.duration)
            and args.duration >= args.dt):
        raise ConfigurationError(
            f"--dt {args.dt} and --duration {args.duration}: expected 0 < dt <= duration, in s")
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    settings = FreeFloatingSettings(
        dt_s=args.dt, duration_s=args.duration, min_singular_value=args.min_singular_value,
        max_condition_number=args.max_condition_number, mujoco=not args.no_mujoco)
    model = space_robot_model()
    results = run_free_floating_experiment(settings, model)
    print(f"singularity: {results.singularity.message}")
    write_results("free_floating", free_floating_metrics(results),
                  command=f"humanoid-balance experiment free-floating --out {out}", directory=out)
    if not args.no_plots:
        for path in plot(out, model, results):
            print(f"wrote {path}")
    return 0 if results.targets_met else 1
