"""``humanoid-balance experiment identification``: seed 004 Earth-to-Moon identification.

The experiment (GA-PSO static configurations, identification at Earth gravity
in simulation, validation at Moon gravity, with and without payload, with and
without friction pairs) is :mod:`humanoid_balance.experiments.identification`;
this command parses the options, runs it with progress lines, and writes
``identification_moon.json``, ``identification_moon.md`` (tables beside the
paper's) and the Fig. 7/8-like plots ``identification_moon.png`` and
``identification_moon_payload.png``; exits 1 when a joint misses its target
(1 % under the sensor's noise, 2 % under the loaded arm's) or the error does
not rise without friction pairs. About 2 min on one core; ``--short`` runs the
payload case alone (a quarter of that).

The payload (``--payload-mass``, ``--payload-com`` in link6), the gravity the
model predicts at (``--target-gravity``, the Moon's by default), the seed and
the noise reading are options; a value the experiment cannot use is refused
with a one-line error (exit 2).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from humanoid_balance.core.identification import EARTH_GRAVITY, METHODS
from humanoid_balance.exceptions import InvalidInputError
from humanoid_balance.experiments.identification import (
    NOISE_READINGS,
    IdentificationCase,
    IdentificationSettings,
)
from humanoid_balance.results import save_figure


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``experiment identification``."""
    parser.add_argument("--out", type=Path, default=Path("results/identification"),
                        help="folder for identification_moon.json and the plots")
    parser.add_argument("--speed", type=float, default=3.0, help="sweep speed [deg/s] (<= 3)")
    parser.add_argument("--method", choices=METHODS, default="weighted",
                        help="least squares weighted by each joint's noise (default), eq. 10 "
                             "back-to-front, or one global least squares")
    parser.add_argument("--seed", type=int, default=0, help="seed of the current noise (>= 0)")
    parser.add_argument("--payload-mass", type=float, default=0.3, metavar="KG",
                        help="the payload case's mass [kg] (default: the paper's 0.3)")
    parser.add_argument("--payload-com", default="0,0.08,0", metavar="X,Y,Z",
                        help="the payload's centre of mass in link6 [m] (default 8 cm out)")
    parser.add_argument("--target-gravity", type=float, default=EARTH_GRAVITY / 6.0,
                        metavar="G", help="gravity the identified model predicts at [m/s^2] "
                                          "(default: the Moon's, 9.81 / 6; Mars: 3.71)")
    parser.add_argument("--noise-reading", choices=NOISE_READINGS, default="sensor",
                        help="sensor: Table 6's noise in N m of the unloaded arm; loaded: scaled "
                             "to the loaded arm's peak torque (the payload case)")
    parser.add_argument("--short", action="store_true",
                        help="only the payload case, hand-picked static configuration")
    parser.add_argument("--no-plots", action="store_true", help="skip the figures")


def _com(text: str) -> tuple[float, float, float]:
    """``X,Y,Z`` as three floats [m]; a one-line error otherwise."""
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        values = ()
    if len(values) != 3:
        raise InvalidInputError(f"--payload-com {text!r}: expected X,Y,Z, three numbers in m "
                                "(e.g. 0,0.08,0)")
    return values[0], values[1], values[2]


def settings_from(args: argparse.Namespace) -> IdentificationSettings:
    """The experiment's settings from the options, checked (one-line errors)."""
    from humanoid_balance.experiments.identification import check_settings

    settings = IdentificationSettings(
        speed_deg_s=args.speed, method=args.method, seed=args.seed,
        payload_kg=args.payload_mass, payload_com_m=_com(args.payload_com),
        target_gravity=args.target_gravity, noise_reading=args.noise_reading, short=args.short)
    check_settings(settings)
    return settings


def _command(settings: IdentificationSettings, out: Path) -> str:
    """The command line that reproduces the run."""
    s = settings
    com = ",".join(f"{v:g}" for v in s.payload_com_m)
    return (f"humanoid-balance experiment identification --out {out} --speed {s.speed_deg_s:g} "
            f"--method {s.method} --seed {s.seed} --payload-mass {s.payload_kg:g} "
            f"--payload-com {com} --target-gravity {s.target_gravity:g} "
            f"--noise-reading {s.noise_reading}" + (" --short" if s.short else ""))


def plot(path: Path, case: IdentificationCase, gravity: float) -> Path:
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
    fig.suptitle(f"{gravity:g} m/s^2, identified at Earth gravity ({case.label})")
    return save_figure(fig, path, dpi=90)


def run(args: argparse.Namespace) -> int:
    """Run the experiment and write ``<out>/identification_moon.json``."""
    from humanoid_balance.experiments.identification import run_identification_experiment
    from humanoid_balance.experiments.identification_report import (
        identification_markdown,
        identification_metrics,
        missed_targets,
    )
    from humanoid_balance.results import write_results

    settings = settings_from(args)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()

    def progress(text: str) -> None:
        print(f"[identification {time.perf_counter() - started:6.1f} s] {text}", flush=True)

    results = run_identification_experiment(settings, progress)
    if not args.no_plots:
        if results.no_payload is not None:
            plot(out / "identification_moon.png", results.no_payload, settings.target_gravity)
        plot(out / "identification_moon_payload.png", results.payload, settings.target_gravity)
    (out / "identification_moon.md").write_text(identification_markdown(results))
    write_results("identification_moon", identification_metrics(results),
                  command=_command(settings, out), directory=out)
    progress(f"wrote {out / 'identification_moon.json'} and identification_moon.md")
    missed = missed_targets(results)
    for text in missed:
        print(f"target missed: {text}")
    return 1 if missed else 0
