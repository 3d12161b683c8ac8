"""``humanoid-balance demo``: the simulated humanoid as the robot runs it, every node its own process.

Starts the simulated robot from the graph description
(:func:`humanoid_balance.graph.sim_graph`): ``mujoco_sim``, ``zmp_estimator``,
``arm_balance`` and ``waist_controller`` (with its simulated CAN drives), each
as its own process (:class:`humanoid_balance.processes.NodeProcess`, logs in
``<out>/logs/``), on loopback-only DDS with a private domain, and drives the
lifecycle nodes through configure and activate by their services. This
process hosts only the scenario driver, an observer for the progress line and
the bag recorder.

The scenario (seed 000): the waist leans 1 deg forward through
``/waist/command``; then the right (job) arm strikes at the paper's hand speed
(1.8 m/s) while ``arm_balance`` (resolved momentum control) moves the left arm
to hold the angular momentum Lx, Ly at zero. The driver answers each ``/clock``
tick ``t`` (with RMC in lock-step: the arm balance's command for ``t``) with the
job arm's input for ``t + period``, stamped ``t``.
By default the simulation runs in lock-step: each period waits for the arm
balance's command and the driver's input of that period, so a run's result
does not depend on the machine's load (``--free-running`` runs it against the
wall clock instead). The strike is run twice: with RMC, and without (no
``arm_balance``: the driver sends the job arm's positions and velocities
straight to the simulated servos on ``/joint_commands``).

Writes ``<out>/demo.json`` (RESULTS.md format), the bags (``<out>/bag``,
``<out>/bag_without_rmc``: rosbag2, MCAP), PNG plots and ``<out>/index.html``,
all computed from the bags (:mod:`humanoid_balance.recorded_run`,
:mod:`humanoid_balance.report_page`).

This module holds the command (options, the runs in turn, signals); one run is
:class:`~humanoid_balance.apps.demo_run.DemoRun`, the scenario driver
:class:`~humanoid_balance.apps.demo_driver.StrikeDriver`, the figures and page
:func:`~humanoid_balance.apps.demo_report.write_report`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from humanoid_balance.apps.demo_report import write_report
from humanoid_balance.apps.demo_run import INTERRUPTED, RUNS, DemoRun, RunSpec
from humanoid_balance.exceptions import HumanoidBalanceError
from humanoid_balance.ros_env import use_loopback_dds


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the demo."""
    parser.add_argument("--duration", type=float, default=4.0,
                        help="simulated seconds of each run (default 4.0; the strike takes 1.4 s)")
    parser.add_argument("--strike-start", type=float, default=2.0,
                        help="simulated time at which the strike starts, s (default 2.0: the "
                             "robot has settled from its start and the waist's lean; a sway "
                             "left at the start adds to the CoP peak shift)")
    parser.add_argument("--strike-speed", type=float, default=None,
                        help="hand speed at the target, m/s (default: the paper's 1.8)")
    parser.add_argument("--out", type=Path, default=Path("results/demo"),
                        help="output folder (default results/demo)")
    parser.add_argument("--no-baseline", action="store_true",
                        help="run the strike with RMC only (no second run without it)")
    parser.add_argument("--free-running", action="store_true",
                        help="run the simulation against the wall clock at --real-time-factor "
                             "instead of in lock-step with the nodes' commands")
    parser.add_argument("--real-time-factor", type=float, default=None,
                        help="simulation speed relative to wall time: with --free-running the "
                             "speed it keeps (default 1); in lock-step the most it may reach "
                             "(default 0: as fast as the nodes answer)")
    parser.add_argument("--sensor-noise", type=float, default=1.0,
                        help="sensor noise scale: 0 noise-free, 1 nominal (default)")
    parser.add_argument("--no-waist", action="store_true",
                        help="do not run the waist controller and its simulated CAN drives")
    parser.add_argument("--waist-pitch", type=float, default=1.0,
                        help="waist pitch the waist controller moves to at the start, deg "
                             "(default 1)")
    parser.add_argument("--record", choices=("full", "report"), default=None,
                        help="what the bags hold: full (every sensor and output: replayable with "
                             "`humanoid-balance replay`; the default in lock-step) or report (only "
                             "the topics the figures come from; the default with --free-running, "
                             "where each recorded message costs this process CPU the simulation "
                             "would miss)")
    parser.add_argument("--domain-id", type=int, default=None,
                        help="ROS_DOMAIN_ID (default: from the environment, else private)")


# --- options ---------------------------------------------------------------------------


def _user_error(text: str) -> int:
    print(f"humanoid-balance demo: {text}", file=sys.stderr)
    return 2


def _check_options(args: argparse.Namespace, strike_length_s: float) -> str | None:
    """The first problem with the options, as one line; None when they are usable."""
    for name in ("duration", "strike_start", "sensor_noise"):
        value = getattr(args, name)
        if not value >= 0 or value != value or value == float("inf"):
            return f"--{name.replace('_', '-')}={value}: must be a finite number >= 0"
    if args.real_time_factor is not None and not 0 <= args.real_time_factor < float("inf"):
        return f"--real-time-factor={args.real_time_factor}: must be >= 0"
    if args.free_running and args.real_time_factor == 0:
        return "--real-time-factor=0 runs as fast as possible: it needs lock-step (drop " \
               "--free-running)"
    if args.strike_start < 0.3:
        return f"--strike-start={args.strike_start}: at least 0.3 s of rest must come first " \
               "(the peak shifts are measured from the 0.2 s before it)"
    needed = args.strike_start + strike_length_s
    if args.duration < needed:
        return (f"--duration={args.duration} s ends before the strike does: it takes "
                f"{strike_length_s:.1f} s from --strike-start={args.strike_start} s; give at "
                f"least {needed:.1f} s")
    if args.domain_id is not None and not 0 <= args.domain_id <= 101:
        return f"--domain-id={args.domain_id}: must be in 0..101"
    return None


def _prepare_output(out: Path, runs: Sequence[RunSpec]) -> str | None:
    """Create the output folder and clear this demo's old bags and logs; a problem as one line."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".humanoid_balance_demo_write_test"
        probe.write_text("")
        probe.unlink()
    except OSError as error:
        return f"--out {out}: cannot write there ({error.strerror or error}): choose another folder"
    for spec in runs:
        bag = out / spec.bag_name
        if bag.exists():
            if not (bag / "metadata.yaml").exists() and any(bag.iterdir()):
                return f"--out {out}: {bag} exists and is not a bag: move it, or choose another folder"
            try:
                shutil.rmtree(bag)  # the demo's own output: a new run replaces the old
            except OSError as error:
                return f"--out {out}: cannot replace {bag} ({error.strerror or error})"
    try:
        if (out / "logs").exists():
            shutil.rmtree(out / "logs")
    except OSError as error:
        return f"--out {out}: cannot replace {out / 'logs'} ({error.strerror or error})"
    return None


# --- the whole demo --------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """Run the demo; 0 when every run completed, every node exited cleanly and none reported a fault."""
    from humanoid_balance.core.strike_trajectory import PAPER_DURATIONS

    problem = _check_options(args, sum(PAPER_DURATIONS))
    runs = RUNS[:1] if args.no_baseline else RUNS
    if problem is None:
        problem = _prepare_output(args.out, runs)
    if problem is not None:
        return _user_error(problem)
    domain = args.domain_id
    if domain is None:
        domain = int(os.environ.get("ROS_DOMAIN_ID", 1 + os.getpid() % 100))
    use_loopback_dds(domain)

    from humanoid_balance.core.model import RobotModel
    from humanoid_balance.core.strike_trajectory import StrikeTrajectory
    from humanoid_balance.resources import urdf_path

    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    try:
        strike = StrikeTrajectory(model, arm="right", target_speed=args.strike_speed,
                                  start_time=args.strike_start)
    except HumanoidBalanceError as error:
        return _user_error(str(error))
    print(f"demo: ROS_DOMAIN_ID={domain} (loopback DDS), output in {args.out}", flush=True)
    outcomes = []
    previous = _catch_signals()
    try:
        for spec in runs:
            outcome = DemoRun(args, spec, strike).execute()
            outcomes.append(outcome)
            print(f"demo ({spec.label}): nodes stopped (exit status, s after the signal): "
                  f"{outcome.exit_line()}", flush=True)
            if outcome.error is not None:
                print(f"demo ({spec.label}): FAILED: {outcome.error}", flush=True)
                break
            print(f"demo ({spec.label}): {outcome.simulated_s:.2f} s simulated in "
                  f"{outcome.wall_s:.1f} s (real-time factor {outcome.real_time_factor:.2f})",
                  flush=True)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return write_report(args, model, strike, outcomes)


def _catch_signals() -> dict[int, Any]:
    """SIGINT and SIGTERM set :data:`INTERRUPTED` (a second one interrupts at once); the old handlers.

    The run loop checks the flag and stops the nodes in order. (A KeyboardInterrupt
    raised inside a subscription callback would be lost in rclpy's executor.)
    """
    def handler(signum: int, frame: Any) -> None:
        if INTERRUPTED.is_set():
            raise KeyboardInterrupt
        INTERRUPTED.set()

    INTERRUPTED.clear()
    return {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}

