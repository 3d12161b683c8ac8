"""``humanoid-balance aux-posture``: search the aux arm's ready posture for a lower strike ZMP peak.

The search itself is :mod:`humanoid_balance.experiments.aux_posture` (Nelder-Mead;
each trial a MuJoCo strike of about 1 s per speed and the same strikes through the
controller alone). This command prints a line per trial, writes
``OUT/aux_posture.json`` (the start's and the best posture's peak, ratio to the strike
without RMC, slip, yaw, the arms' clearance, the cycles with the held rows inexact, and
the best posture as ``arm_balance``'s ``aux_posture`` takes it), ``OUT/trials.csv``
(every trial) and ``OUT/aux_posture.png`` (peak and best cost per trial). It changes
nothing: put the posture it reports into ``config/arm_balance.yaml`` (and, for the
package default, :data:`~humanoid_balance.core.rmc.AUX_READY_POSTURE`) after checking
the strike experiment and the demo with it.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from humanoid_balance.exceptions import ConfigurationError
from humanoid_balance.experiments.aux_posture import (
    LIMIT_MARGIN_DEG,
    MIN_TRIALS,
    STEP_DEG,
    PostureSearch,
    PostureTrial,
)
from humanoid_balance.experiments.strike import RATIO_TARGET
from humanoid_balance.results import save_figure


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the search."""
    parser.add_argument("--out", type=Path, default=Path("results/aux_posture"),
                        help="output folder (default results/aux_posture)")
    parser.add_argument("--start", default=None, metavar="DEG,...",
                        help="7 angles [deg] to start from, right-arm signs (shoulder pitch, "
                             "roll, yaw, elbow, wrist yaw, roll, pitch), as --start=A,B,...; "
                             "default the package's AUX_READY_POSTURE")
    parser.add_argument("--speeds", default="paper,2.5", metavar="M/S,...",
                        help="hand speeds at the target, m/s ('paper': the paper's 1.8): the "
                             "first one's ZMP peak is minimised, the others' may not grow "
                             "beyond the start posture's (default paper,2.5: the strike "
                             "experiment's speed and the first of its MuJoCo sweep)")
    parser.add_argument("--trials", type=int, default=200,
                        help="trials, one MuJoCo strike of about 1 s per speed each (default "
                             "200; at least 8; the search ends with the iteration that "
                             "reaches it)")
    parser.add_argument("--step", type=float, default=STEP_DEG, metavar="DEG",
                        help=f"initial simplex step [deg] (default {STEP_DEG:g})")
    parser.add_argument("--margin", type=float, default=LIMIT_MARGIN_DEG, metavar="DEG",
                        help="distance kept from the joint limits [deg] "
                             f"(default {LIMIT_MARGIN_DEG:g})")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plot")


def _start(text: str | None) -> list[float]:
    from humanoid_balance.core.rmc import AUX_READY_POSTURE

    if text is None:
        return [round(float(np.rad2deg(v)), 6) for v in AUX_READY_POSTURE]
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise ConfigurationError(f"--start {text!r}: expected 7 comma-separated angles in "
                                 "degrees, e.g. --start=-36,7,63,89,-49,58,11") from None
    if len(values) != 7 or not all(math.isfinite(v) for v in values):
        raise ConfigurationError(f"--start {text!r}: expected 7 finite angles in degrees")
    return values


def _speeds(text: str) -> list[float | None]:
    speeds: list[float | None] = []
    for part in text.split(","):
        if part.strip() == "paper":
            speeds.append(None)
            continue
        try:
            speed = float(part)
        except ValueError:
            speed = math.nan
        if not (math.isfinite(speed) and speed > 0):
            raise ConfigurationError(f"--speeds {text!r}: expected hand speeds > 0 in m/s or "
                                     "'paper', e.g. --speeds paper,2.5")
        speeds.append(speed)
    return speeds


def _posture_text(trial: PostureTrial) -> str:
    return ", ".join(f"{v:.1f}" for v in trial.posture_deg)


def _line(n: int, trial: PostureTrial, best: PostureTrial) -> None:
    others = "".join(f", {p:.2f}" for p in trial.other_peaks_mm)
    print(f"trial {n:3d}: peak {trial.peak_mm:6.2f}{others} mm, slip {trial.slip_mm:.2f} mm, "
          f"yaw {trial.yaw_mrad:.2f} mrad, arms {trial.clearance_mm:.0f} mm apart, "
          f"{trial.inexact_cycles} inexact cycles, "
          f"cost {trial.cost:7.2f} | best {best.cost:6.2f} "
          f"at [{_posture_text(best)}]", flush=True)


def _metrics(result: PostureSearch) -> dict[str, dict[str, object]]:
    from humanoid_balance.results import metric

    out: dict[str, dict[str, object]] = {}
    for name, t in (("start", result.start), ("best", result.best)):
        out[f"{name}_posture_deg"] = metric(f"[{_posture_text(t)}]", "deg")
        out[f"{name}_zmp_peak_mm"] = metric(round(t.peak_mm, 2), "mm", better="lower")
        out[f"{name}_zmp_ratio"] = metric(round(result.ratio(t), 4), "", target=RATIO_TARGET,
                                          better="lower")
        out[f"{name}_slip_mm"] = metric(round(t.slip_mm, 3), "mm", better="lower")
        out[f"{name}_yaw_mrad"] = metric(round(t.yaw_mrad, 3), "mrad", better="lower")
        out[f"{name}_arm_clearance_mm"] = metric(round(t.clearance_mm, 1), "mm", better="higher")
        out[f"{name}_inexact_cycles"] = metric(t.inexact_cycles, "", better="lower")
        for phase, peak in t.phase_peaks_mm.items():
            out[f"{name}_zmp_peak_mm_{phase}"] = metric(round(peak, 2), "mm")
        for speed, ratio in zip(result.speeds_m_s[1:], result.other_ratios(t), strict=True):
            out[f"{name}_zmp_ratio_at_{speed:g}_m_s"] = metric(round(ratio, 4), "",
                                                                better="lower")
    out["no_rmc_zmp_peak_mm"] = metric(round(result.no_rmc_peak_mm, 2), "mm")
    out["trials"] = metric(len(result.trials))
    return out


def _plot(out: Path, result: PostureSearch) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cost = np.array([t.cost for t in result.trials])
    peak = np.array([t.peak_mm for t in result.trials])
    n = np.arange(1, len(cost) + 1)
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(n, peak, ".", ms=4, label="trial's ZMP peak")
    ax.plot(n, np.minimum.accumulate(cost), "-", label="best cost so far (peak + penalties)")
    ax.axhline(RATIO_TARGET * result.no_rmc_peak_mm, ls="--", color="gray",
               label=f"{100 * RATIO_TARGET:g} % of the peak without RMC "
                     f"({result.no_rmc_peak_mm:.1f} mm)")
    ax.set_ylim(0, max(2.0 * result.start.peak_mm, 1.0))
    ax.set_xlabel("trial (MuJoCo strikes at each speed; none where the held rows are lost)")
    ax.set_ylabel("mm")
    ax.set_title("aux arm's ready posture: measured ZMP peak of the strike with RMC")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, out / "aux_posture.png")


def run(args: argparse.Namespace) -> int:
    """Run the search; 0 when it ran (the figures say what it found)."""
    from humanoid_balance.core.model import RobotModel
    from humanoid_balance.experiments.aux_posture import search
    from humanoid_balance.resources import urdf_path
    from humanoid_balance.results import check_output, write_results

    start, speeds = _start(args.start), _speeds(args.speeds)
    if args.trials < MIN_TRIALS:
        raise ConfigurationError(f"--trials {args.trials}: expected at least {MIN_TRIALS} (the "
                                 "start and one step per angle)")
    out: Path = args.out
    check_output(out, directory=True)
    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    print(f"searching the aux arm's ready posture from [{', '.join(f'{v:g}' for v in start)}] "
          f"deg, about {args.trials} trials of {len(speeds)} MuJoCo strike(s) each", flush=True)
    result = search(model, start, speeds=speeds, max_trials=args.trials, step_deg=args.step,
                    margin_deg=args.margin, progress=_line)
    with (out / "trials.csv").open("w") as f:
        f.write("trial,shoulder_pitch,shoulder_roll,shoulder_yaw,elbow,wrist_yaw,wrist_roll,"
                "wrist_pitch,peak_mm,slip_mm,yaw_mrad,clearance_mm,inexact_cycles,cost\n")
        for i, t in enumerate(result.trials, 1):
            f.write(",".join([str(i), *(f"{v:.3f}" for v in t.posture_deg), f"{t.peak_mm:.3f}",
                              f"{t.slip_mm:.3f}", f"{t.yaw_mrad:.3f}", f"{t.clearance_mm:.1f}",
                              str(t.inexact_cycles), f"{t.cost:.3f}"]) + "\n")
    if not args.no_plots:
        _plot(out, result)
    # --start=...: a first angle below zero would read as an option after a space
    command = (f"humanoid-balance aux-posture --out {out} --start="
               f"{','.join(f'{v:g}' for v in start)} --trials {args.trials} --speeds "
               + ",".join("paper" if v is None else f"{v:g}" for v in speeds))
    write_results("aux_posture", _metrics(result), command=command, directory=out)
    print(f"best posture [{_posture_text(result.best)}] deg: for arm_balance's aux_posture, "
          "check it with `humanoid-balance experiment strike` and the demo first")
    return 0
