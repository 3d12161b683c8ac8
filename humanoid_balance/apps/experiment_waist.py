"""``humanoid-balance experiment waist``: the paper's waist tracking test (seed 003) in simulation.

The experiment (the refused out-of-range command, then 6 s of tracking over a
virtual CAN bus against simulated drives) is :mod:`humanoid_balance.experiments.waist`;
this command parses the options (``--trajectory FILE.csv``, ``--gear-ratios P,R``,
``--limit-policy refuse|clamp``, each refused with a one-line error), runs it (and,
with the default path and gears, the stop-and-clamp path of issue 14), and writes
``OUT/waist_tracking.json``
(metrics of ../shared/RESULTS.md) and the plots ``waist_angles.png`` (paper
Figs. 9-10: pitch and roll, reference and actual), ``waist_motor_speeds.png``
(Figs. 7-8: the two motor speeds), ``waist_tracking_error.png`` and
``waist_motor_currents.png``.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from humanoid_balance.experiments.waist import TARGET_TRACKING_ERROR_DEG, TrackingRun
from humanoid_balance.results import save_figure


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the waist experiment."""
    parser.add_argument("--out", type=Path, default=Path("results/waist"),
                        help="output folder (default results/waist)")
    parser.add_argument("--noise-deg", type=float, default=0.02,
                        help="inclinometer noise, 1 sigma, deg (default the paper's 0.02)")
    parser.add_argument("--seed", type=int, default=3, help="noise seed")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--trajectory", type=Path, default=None, metavar="FILE.csv",
                        help="track this path instead of the paper's: a header line, then rows "
                             "t_s,pitch_deg,roll_deg (times from 0, increasing)")
    parser.add_argument("--gear-ratios", default="100,100", metavar="P,R",
                        help="the differential's gear ratios i1 (pitch), i2 (roll) (default "
                             "100,100)")
    parser.add_argument("--limit-policy", default="refuse",
                        help="points beyond the joint range: refuse (default) or clamp")
    parser.add_argument("--random", type=int, default=0, metavar="N",
                        help="also track N random feasible paths (seeds 0..N-1, point spacing "
                             "2 ms to 1 s) and write waist_random.json; a few minutes for 200")


def parse_gear_ratios(text: str) -> tuple[float, float]:
    """``P,R`` as two finite gear ratios > 0.

    Raises:
        ConfigurationError: anything else (one line, saying what is expected).
    """
    from humanoid_balance.exceptions import ConfigurationError

    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if len(values) != 2 or not all(math.isfinite(v) and v > 0.0 for v in values):
        raise ConfigurationError(
            f"--gear-ratios: expected two finite ratios > 0 as P,R (e.g. 100,100), got {text!r}")
    return values[0], values[1]


def parse_limit_policy(text: str) -> str:
    """``refuse`` or ``clamp``.

    Raises:
        ConfigurationError: anything else.
    """
    from humanoid_balance.exceptions import ConfigurationError

    if text not in ("refuse", "clamp"):
        raise ConfigurationError(f"--limit-policy: expected refuse or clamp, got {text!r}")
    return text


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _angles_figure(run: TrackingRun, out: Path, name: str = "waist_angles.png",
                   title: str = "Waist angles (cf. paper Figs. 9-10)") -> Path:
    """Figs. 9-10: pitch and roll on one time axis: the command, the shaped reference, the
    actual angle and the noisy inclinometer; the start's catch-up window shaded."""
    plt = _pyplot()
    fig, axes = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    for k, joint in enumerate(("pitch", "roll")):
        axes[k].plot(run.t_s, run.measured_deg[:, k], ".", ms=2, alpha=0.3, color="grey",
                     label="inclinometer (noisy)")
        axes[k].plot(run.t_s, run.reference_deg[:, k], "k--", label="command")
        axes[k].plot(run.t_s, run.shaped_deg[:, k], ":", color="tab:orange",
                     label="shaped reference")
        axes[k].plot(run.t_s, run.actual_deg[:, k], color="tab:blue", alpha=0.8,
                     label="actual (simulated joint)")
        if run.catch_up_end_s > 0.0:
            axes[k].axvspan(0.0, run.catch_up_end_s, color="tab:orange", alpha=0.1,
                            label="catch-up window")
        axes[k].set_ylabel(f"{joint} / deg")
        axes[k].legend(loc="best", fontsize=7)
    axes[1].set_xlabel("t / s")
    fig.suptitle(title)
    return save_figure(fig, out / name, dpi=120)


def _motor_figure(run: TrackingRun, out: Path, *, currents: bool) -> Path:
    """Figs. 7-8: the two motor speeds [rpm]; or the motor currents [A] under the torso load."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    if currents:
        data, ylabel, title = run.motor_current_a, "current / A", "Motor currents (torso gravity load)"
    else:
        data = run.motor_speed_rad_s * 60.0 / (2.0 * math.pi)
        ylabel, title = "motor speed / rpm", "Motor speeds (cf. paper Figs. 7-8)"
    ax.plot(run.t_s, data[:, 0], label="motor 1")
    ax.plot(run.t_s, data[:, 1], label="motor 2")
    ax.set_xlabel("t / s")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    name = "waist_motor_currents.png" if currents else "waist_motor_speeds.png"
    return save_figure(fig, out / name, dpi=120)


def _error_figure(run: TrackingRun, out: Path) -> Path:
    """Command minus actual angle over time (the seed-003 figure), the error against the
    shaped reference beside it, and the paper's best error."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    err = run.reference_deg - run.actual_deg  # against what was asked
    shaped = run.shaped_deg - run.actual_deg  # against what the servo follows
    ax.plot(run.t_s, err[:, 0], label="pitch: command - actual")
    ax.plot(run.t_s, err[:, 1], label="roll: command - actual")
    ax.plot(run.t_s, shaped[:, 0], ":", lw=1, label="pitch: shaped - actual")
    ax.plot(run.t_s, shaped[:, 1], ":", lw=1, label="roll: shaped - actual")
    ax.axhline(TARGET_TRACKING_ERROR_DEG, color="r", ls=":", label="0.1 deg (paper's best)")
    ax.axhline(-TARGET_TRACKING_ERROR_DEG, color="r", ls=":")
    ax.axvline(run.catch_up_end_s, color="grey", ls="--", label="catch-up window ends")
    ax.set_ylim(-3.0 * TARGET_TRACKING_ERROR_DEG, 3.0 * TARGET_TRACKING_ERROR_DEG)
    ax.set_xlabel("t / s")
    ax.set_ylabel("error / deg")
    ax.set_title("Tracking error")
    ax.legend(fontsize=7, ncol=2)
    return save_figure(fig, out / "waist_tracking_error.png", dpi=120)


def plot(run: TrackingRun, out: Path) -> list[Path]:
    """The paper-like figures (Figs. 7-10) as PNG files."""
    return [_angles_figure(run, out), _motor_figure(run, out, currents=False),
            _error_figure(run, out), _motor_figure(run, out, currents=True)]


def run(args: argparse.Namespace) -> int:
    """Run the experiment; 0 when it ran (the figures say how it went)."""
    from humanoid_balance.exceptions import ConfigurationError
    from humanoid_balance.experiments.waist import (
        read_path_csv,
        run_stops_and_clamp,
        run_tracking,
        waist_metrics,
    )
    from humanoid_balance.results import write_results

    gear_ratios = parse_gear_ratios(args.gear_ratios)
    limit_policy = parse_limit_policy(args.limit_policy)
    if not (math.isfinite(args.noise_deg) and args.noise_deg >= 0.0):
        raise ConfigurationError(f"--noise-deg: expected a finite value >= 0, got {args.noise_deg}")
    path = read_path_csv(args.trajectory) if args.trajectory is not None else None
    out: Path = args.out
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigurationError(f"--out {out}: cannot create it ({exc.strerror}); choose a "
                                 "writable folder") from None
    result = run_tracking(noise_deg=args.noise_deg, seed=args.seed, path=path,
                          gear_ratios=gear_ratios, limit_policy=limit_policy)
    print(f"paper command (pitch -12 + t deg): {result.refusal_message}")
    # the stop-and-clamp path (issue 14) belongs to the default run
    default = path is None and gear_ratios == (100.0, 100.0)
    stops = run_stops_and_clamp(noise_deg=args.noise_deg, seed=args.seed) if default else None
    if stops is not None:
        print(f"stop-and-clamp path: {stops.clamped_message}; overshoot {stops.stop_overshoot_deg:.4f}"
              f" deg at a stop, {stops.edge_overshoot_deg:.4f} deg past the edge")
    command = "humanoid-balance experiment waist --out " + str(out) + "".join(
        f" --{k.replace('_', '-')} {v}" for k, v in (
            ("trajectory", args.trajectory), ("gear_ratios", args.gear_ratios if not default
                                              else None),
            ("limit_policy", limit_policy if limit_policy != "refuse" else None)) if v is not None)
    write_results("waist_tracking", waist_metrics(result, stops), command=command, directory=out)
    if not args.no_plots:
        for written in plot(result, out):
            print(f"wrote {written}")
    if args.random > 0:
        _random_paths(args.random, args.noise_deg, out, plots=not args.no_plots)
    return 0


#: the spacing classes of the random draws' table [s]
SPACING_CLASSES = ((0.002, 0.01), (0.01, 0.1), (0.1, 1.0 + 1e-9))


def _random_paths(draws: int, noise_deg: float, out: Path, plots: bool) -> None:
    """Track ``draws`` random feasible paths (seeds 0..draws-1), print a table per spacing
    class and start, write ``waist_random.json`` and plot the worst draw."""
    from humanoid_balance.experiments.waist import TARGET_CATCH_UP_S, run_drawn
    from humanoid_balance.experiments.waist_paths import RANDOM_PATH_TARGET_DEG
    from humanoid_balance.results import metric, write_results

    results = []
    for seed in range(draws):
        results.append(run_drawn(seed, noise_deg=noise_deg))
        if (seed + 1) % 20 == 0 or seed + 1 == draws:
            print(f"random paths: {seed + 1}/{draws} tracked", flush=True)
    print(f"{'spacing':>14} {'start':>7} {'draws':>6} {'max error deg':>14} {'seed':>5} "
          f"{'max catch-up s':>15} {'seed':>5}")
    for lo, hi in SPACING_CLASSES:
        for moving in (False, True):
            group = [r for r in results if lo <= r.spacing_s < hi and r.moving_start == moving]
            if not group:
                continue
            worst = max(group, key=lambda r: r.errors.max_deg)
            slow = max(group, key=lambda r: r.catch_up_s)
            spacing = f"{lo * 1e3:.0f}-{hi * 1e3:.0f} ms"
            print(f"{spacing:>14} {'moving' if moving else 'rest':>7} "
                  f"{len(group):6d} {worst.errors.max_deg:14.4f} {worst.seed:5d} "
                  f"{slow.catch_up_s:15.3f} {slow.seed:5d}")
    worst = max(results, key=lambda r: r.errors.max_deg)
    slow = max(results, key=lambda r: r.catch_up_s)
    write_results("waist_random", {
        "random_draws": metric(draws, ""),
        "random_max_tracking_error_deg": metric(worst.errors.max_deg, "deg",
                                                target=RANDOM_PATH_TARGET_DEG, better="lower"),
        "random_worst_error_seed": metric(worst.seed, ""),
        "random_max_shaped_tracking_error_deg": metric(
            max(r.errors.shaped_max_deg for r in results), "deg", better="lower"),
        "random_max_catch_up_s": metric(slow.catch_up_s, "s", target=TARGET_CATCH_UP_S,
                                        better="lower"),
        "random_worst_catch_up_seed": metric(slow.seed, ""),
    }, command=f"humanoid-balance experiment waist --random {draws} --out {out}", directory=out)
    if plots:
        title = (f"Worst random draw: seed {worst.seed}, {worst.kind}, "
                 f"{'moving' if worst.moving_start else 'rest'} start, "
                 f"{worst.spacing_s * 1e3:.0f} ms points")
        print(f"wrote {_angles_figure(worst.run, out, 'waist_random_worst.png', title)}")
