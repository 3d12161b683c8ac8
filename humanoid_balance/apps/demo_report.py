"""The demo's figures, page and exit status, from the bags of its runs.

Part of ``humanoid-balance demo`` (:mod:`humanoid_balance.apps.demo`): ``demo.json``
(RESULTS.md format), the PNG plots and ``index.html``, all computed from the bags
(:mod:`humanoid_balance.recorded_run`, :mod:`humanoid_balance.report_page`).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from humanoid_balance.apps.demo_run import EXIT_EXPECTED_S, RunOutcome


def write_report(args: argparse.Namespace, model: Any, strike: Any, outcomes: list[RunOutcome]) -> int:
    """demo.json, the plots and index.html from the bags; the exit status."""
    from humanoid_balance.recorded_run import load_run
    from humanoid_balance.report_page import (
        plot_ground_paths,
        plot_momentum,
        plot_waist,
        write_page,
    )
    from humanoid_balance.results import write_results

    completed = [o for o in outcomes if o.error is None]
    runs = [load_run(o.bag, o.spec.label) for o in completed]
    starts = [run.strike_start() for run in runs]
    columns = {o.spec.label: _run_metrics(args, o, run, start)
               for o, run, start in zip(completed, runs, starts, strict=True)}
    summary, headline = _summary(args, list(columns.values()))
    command = "humanoid-balance demo " + " ".join(sys.argv[2:] if sys.argv[1:2] == ["demo"]
                                                  else sys.argv[1:])
    print("demo summary:")
    write_results("demo", summary, command=command.strip(), directory=args.out)
    plots = []
    if runs:
        end = max(s - args.strike_start + args.duration for s in starts)
        plots = [plot_ground_paths(runs, starts, model, args.out / "cop_zmp_paths.png", end),
                 plot_momentum(runs, starts, model, args.out / "momentum.png", end)]
        if not args.no_waist:
            plots.append(plot_waist(runs, args.out / "waist_tracking.png", end))
    notes, warnings, problems = _notes(args, strike, outcomes, runs)
    for line in warnings + problems:
        print(f"demo {line}")
    links = {f"bag {o.spec.label}": o.bag for o in completed}
    links["node logs"] = args.out / "logs"
    page = write_page(args.out, title="humanoid_balance demo: the seed-000 strike",
                      columns=columns, headline=headline, plots=plots,
                      notes=notes + warnings + problems,
                      command=command.strip(), links=links)
    print(f"demo: page {page}")
    if completed:
        print(f"demo: replay a run with `humanoid-balance replay {completed[0].bag} --exclude /zmp` "
              "and a zmp_estimator on use_sim_time")
    return 1 if problems else 0


def _run_metrics(args: argparse.Namespace, outcome: RunOutcome, run: Any,
                 start: float) -> dict[str, dict[str, Any]]:
    """One run's figures: from its bag, and how its processes ran and ended."""
    from humanoid_balance.recorded_run import run_metrics
    from humanoid_balance.results import metric

    end = start - args.strike_start + args.duration  # the run's last simulated second
    metrics = run_metrics(run, start, end)
    metrics["real_time_factor"] = metric(round(outcome.real_time_factor, 3), "x")
    metrics["simulated_s"] = metric(round(outcome.simulated_s, 3), "s")
    metrics["nodes_not_exiting_cleanly"] = metric(len(outcome.unclean()), "", target=0,
                                                  better="lower")
    metrics["max_node_exit_s"] = metric(round(max(r.seconds for r in outcome.exits.values()), 3),
                                        "s", target=EXIT_EXPECTED_S, better="lower")
    return metrics


def _summary(args: argparse.Namespace, columns: list[dict[str, dict[str, Any]]],
             ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """demo.json's metrics (the run with RMC, the comparison, the baseline's checks); the headline."""
    from humanoid_balance.recorded_run import comparison_metrics
    from humanoid_balance.results import metric

    summary: dict[str, dict[str, Any]] = dict(columns[0]) if columns else {}
    headline: dict[str, dict[str, Any]] = {}
    if len(columns) == 2:
        compared = {**summary, **comparison_metrics(*columns)}
        headline = {name: compared[name] for name in (
            "cop_peak_shift_mm", "cop_peak_shift_mm_no_rmc", "cop_peak_shift_ratio",
            "zmp_peak_shift_mm", "zmp_peak_shift_mm_no_rmc", "zmp_peak_shift_ratio")
            if name in compared}
        summary.update(headline)
        for name in ("real_time_factor", "arm_balance_holds", "faults_seen", "balance_faults_seen",
                     "lock_step_misses",
                     "nodes_not_exiting_cleanly", "max_node_exit_s",
                     "waist_max_tracking_error_deg"):
            if name in columns[1]:
                summary[f"{name}_no_rmc"] = columns[1][name]
    summary["mode"] = metric("free-running" if args.free_running else "lock-step")
    return summary, headline


def _notes(args: argparse.Namespace, strike: Any, outcomes: list[RunOutcome],
           runs: list[Any]) -> tuple[list[str], list[str], list[str]]:
    """The page's notes; warnings and problems (``(run label): what``; a problem fails the demo)."""
    notes = [f"{args.duration:.2f} s simulated per run, strike at {args.strike_start:.2f} s "
             f"(hand {strike.target_speed:.2f} m/s at the target); "
             f"{'free-running' if args.free_running else 'lock-step'} simulation, every node "
             "its own process"]
    warnings: list[str] = []
    problems: list[str] = []
    for outcome in outcomes:
        label = outcome.spec.label
        notes.append(f"{label}: nodes stopped (exit status, s after SIGINT): "
                     f"{outcome.exit_line()}")
        if outcome.error is not None:
            problems.append(f"({label}): FAILED: {outcome.error}")
        problems += [f"({label}): node did not exit cleanly: {line}"
                     for line in outcome.unclean()]
        warnings += [f"({label}): slow exit after SIGINT (expected <= {EXIT_EXPECTED_S:g} s): "
                     f"{line}" for line in outcome.slow_exits()]
    rmc_of = {o.spec.label: o.spec.rmc for o in outcomes}
    for run in runs:
        problems += [f"({run.label}): fault: {fault}"
                     for fault in run.faults_from(run.scenario_start)[:10]]
        balance = run.faults_from(run.scenario_start, balance=True)[:10]
        if rmc_of.get(run.label, True):  # with RMC the ZMP must stay inside the polygon
            problems += [f"({run.label}): balance fault: {fault}" for fault in balance]
        else:  # the baseline: without RMC the strike takes the ZMP to the pads' edge
            notes += [f"({run.label}): balance fault, as expected without RMC: {fault}"
                      for fault in balance]
    return notes, warnings, problems
