"""``humanoid-balance experiment identification``: seed 004 Earth-to-Moon identification.

The experiment (GA-PSO static configurations, identification at Earth gravity
in simulation, validation at Moon gravity, with and without payload, with and
without friction pairs) is :mod:`humanoid_balance.experiments.identification`;
this command parses the options, runs it with progress lines, and writes
``identification_moon.json``, ``identification_moon.md`` (tables beside the
paper's) and the Fig. 7/8-like plots ``identification_moon.png`` and
``identification_moon_payload.png``; exits 1 when a joint misses the 2 % target
(with or without payload) or the error does not rise without friction pairs.
About 1.5 min on one core.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from humanoid_balance.core.identification import METHODS
from humanoid_balance.experiments.identification import IdentificationCase
from humanoid_balance.results import save_figure


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``experiment identification``."""
    parser.add_argument("--out", type=Path, default=Path("results/identification"),
                        help="folder for identification_moon.json and the plots")
    parser.add_argument("--speed", type=float, default=3.0, help="sweep speed [deg/s] (<= 3)")
    parser.add_argument("--method", choices=METHODS, default="sequential",
                        help="eq. 10 back-to-front (default), one global least squares, or one "
                             "weighted by each joint's noise")
    parser.add_argument("--seed", type=int, default=0, help="seed of the current noise")
    parser.add_argument("--no-plots", action="store_true", help="skip the figures")


def plot(path: Path, case: IdentificationCase) -> Path:
    """Fig. 7/8-like: noise-free and identified torque per joint along the Moon path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    val = case.validation
    fig, axes = plt.subplots(2, 3, figsize=(12, 6), sharex=True)
    s = np.arange(len(val.q))
    for j, ax in enumerate(axes.flat):
        ax.plot(s, val.truth_n_m[:, j] * 1e3, label="simulated (noise-free G)")
        ax.plot(s, val.predicted_paired_n_m[:, j] * 1e3, "--", label="calculated (identified)")
        ax.set_title(f"joint {j + 1}: RMSE {val.pct_paired[j]:.2f} %")
        ax.set_ylabel("torque [N mm]")
    axes[1, 0].set_xlabel("sample")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(f"Moon gravity, identified at Earth gravity ({case.label})")
    return save_figure(fig, path, dpi=90)


def run(args: argparse.Namespace) -> int:
    """Run the experiment and write ``<out>/identification_moon.json``."""
    from humanoid_balance.experiments.identification import (
        IdentificationSettings,
        run_identification_experiment,
    )
    from humanoid_balance.experiments.identification_report import (
        identification_markdown,
        identification_metrics,
        missed_targets,
    )
    from humanoid_balance.results import write_results

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()

    def progress(text: str) -> None:
        print(f"[identification {time.perf_counter() - started:6.1f} s] {text}", flush=True)

    settings = IdentificationSettings(speed_deg_s=args.speed, method=args.method, seed=args.seed)
    results = run_identification_experiment(settings, progress)
    if not args.no_plots:
        plot(out / "identification_moon.png", results.no_payload)
        plot(out / "identification_moon_payload.png", results.payload)
    (out / "identification_moon.md").write_text(identification_markdown(results))
    write_results("identification_moon", identification_metrics(results),
                  command=f"humanoid-balance experiment identification --out {out}", directory=out)
    progress(f"wrote {out / 'identification_moon.json'} and identification_moon.md")
    missed = missed_targets(results)
    for text in missed:
        print(f"target missed: {text}")
    return 1 if missed else 0
