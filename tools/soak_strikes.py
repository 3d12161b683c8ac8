#!/usr/bin/env python3
"""Soak of the free-running simulated graph with the strike repeating (issue 35, item 3).

The graph of ``tools/chaos.py`` (``graph.sim_graph``, free-running, every node a process with
its parameter file, the lifecycle nodes brought up by their services) runs for ``--seconds``
while the seed strike repeats as the job arm's input. No fault is injected. Every
``--sample`` seconds each node's resident memory (``VmRSS``) and CPU (``utime + stime`` of
``/proc/<pid>/stat``, as a share of one core over the interval) are sampled. The monitor of
``chaos.py`` checks every arm command all along (finite, within the limits, no jump) and
records every change of a ``/diagnostics`` level.

Checked (the issue's figures):

- 0 unexpected holds or faults: no status above its level at the start (after bring-up);
- RSS growth < 2 % per node from 5 minutes in (``--warm-up``) to the end;
- CPU flat within 10 %: each node's mean CPU over the last fifth of the run within 10 % of its
  mean over the first fifth after the warm-up.

Writes ``<out>/soak_strikes.json`` and ``<out>/soak_strikes.png`` (RSS and CPU per node over
time) and prints a table::

    python tools/soak_strikes.py --seconds 3600 --out docs/soak
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chaos import READY_TIMEOUT_S, Chaos, ChaosGraph, Monitor, StrikeLoop, _spin

RSS_GROWTH_LIMIT_PCT = 2.0
CPU_FLAT_PCT = 10.0
TICKS = os.sysconf("SC_CLK_TCK")


def proc_sample(pid: int) -> tuple[int, float] | None:
    """(resident set [KiB], CPU seconds used) of ``pid``; None once it is gone."""
    try:
        rss = next(int(line.split()[1]) for line in
                   Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("VmRSS:"))
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, StopIteration):
        return None
    return rss, (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime (fields 14, 15)


def soak(args: argparse.Namespace) -> dict[str, Any]:
    import rclpy
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.signals import SignalHandlerOptions

    from humanoid_balance.graph import sim_graph

    log_dir = Path(args.logs or tempfile.mkdtemp(prefix="soak-strikes-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    context = Context()
    rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
    helper = rclpy.create_node("soak_monitor", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(helper)
    monitor = Monitor(helper)
    driver = StrikeLoop(helper)
    graph = ChaosGraph(sim_graph(lock_step=False, real_time_factor=1.0), log_dir, executor, helper)
    chaos = Chaos(graph, monitor, driver, executor, helper)
    samples: list[dict[str, Any]] = []
    error = ""
    baseline: dict[str, int] = {}
    events_from = 0
    try:
        graph.start_all()
        if chaos.settle(READY_TIMEOUT_S) is None:
            raise RuntimeError(f"the graph did not settle: {monitor.levels()}")
        # one whole strike first, as the chaos run does: the levels the graph reaches in a
        # strike (the free-running graph's arm_balance warns on each: the job arm scaled at its
        # joint limits, balance indicators out of bounds) are its baseline, their changes counted
        # and reported; a level above them is a hold or a fault
        learn_from = len(monitor.events)
        _spin(executor, driver.cycle_s + 0.5)
        baseline = monitor.levels()
        for _, name, level, _ in monitor.events[learn_from:]:
            baseline[name] = max(level, baseline.get(name, 0))
        events_from = len(monitor.events)
        unsafe_from = len(monitor.unsafe)
        start = time.monotonic()
        last = {name: proc_sample(p.pid) for name, p in graph.processes.items()}
        last_t = start
        next_report = start + 60.0
        while (now := time.monotonic()) - start < args.seconds:
            _spin(executor, min(args.sample, args.seconds - (now - start)))
            t = time.monotonic()
            row: dict[str, Any] = {"t_s": round(t - start, 2), "commands": monitor.commands,
                                   "strikes": driver.strikes}
            for name, process in graph.processes.items():
                got = proc_sample(process.pid)
                if got is None or not process.alive():
                    raise RuntimeError(f"{name} exited during the soak")
                before = last[name]
                cpu = None if before is None else 100.0 * (got[1] - before[1]) / (t - last_t)
                row[name] = {"rss_kib": got[0], "cpu_pct": None if cpu is None else round(cpu, 2)}
                last[name] = got
            last_t = t
            samples.append(row)
            if t >= next_report:
                next_report += 60.0
                print(f"soak: {t - start:.0f} s, strikes {driver.strikes}, commands "
                      f"{monitor.commands}, unsafe {len(monitor.unsafe) - unsafe_from}, level "
                      f"changes {len(monitor.events) - events_from}", flush=True)
    except Exception as exc:  # reported with what was sampled
        error = f"{type(exc).__name__}: {exc}"
    finally:
        exits = {name: report.clean for name, report in graph.stop_all().items()}
        executor.shutdown()
        helper.destroy_node()
        rclpy.try_shutdown(context=context)
    events = [{"t": round(t, 3), "status": name, "level": level, "message": message}
              for t, name, level, message in monitor.events[events_from:]]
    return {"seconds": args.seconds, "sample_s": args.sample, "warm_up_s": args.warm_up,
            "samples": samples, "baseline_levels": baseline, "level_changes": events,
            "unsafe": monitor.unsafe, "strikes": driver.strikes, "commands": monitor.commands,
            "exits_clean": exits, "error": error, "logs": str(log_dir)}


def warnings_by_message(result: dict[str, Any]) -> dict[tuple[str, str], int]:
    """How often each (status, message) above OK came, at or below its baseline level; the
    numbers in a message (a joint's scale, a margin) are left out so that like ones count as one."""
    import re
    from collections import Counter

    baseline = result["baseline_levels"]
    return dict(Counter(
        (e["status"], re.sub(r"-?\d+(\.\d+)?", "#", e["message"]))
        for e in result["level_changes"]
        if 0 < e["level"] <= baseline.get(e["status"], 0)).most_common())


def verdict(result: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The problems (empty: the soak held) and the per-node table rows."""
    problems = [f"error: {result['error']}"] if result["error"] else []
    if result["unsafe"]:
        problems.append(f"{len(result['unsafe'])} unsafe commands, first: {result['unsafe'][0]}")
    baseline = result["baseline_levels"]
    raised = [e for e in result["level_changes"] if e["level"] > baseline.get(e["status"], 0)]
    if raised:
        problems.append(f"{len(raised)} unexpected holds or faults, first: {raised[0]}")
    samples = [s for s in result["samples"] if s["t_s"] >= result["warm_up_s"]]
    rows = []
    nodes = [k for k in (result["samples"][0] if result["samples"] else {})
             if isinstance(result["samples"][0][k], dict)]
    for name in nodes:
        if len(samples) < 10:
            problems.append(f"{name}: {len(samples)} samples after the warm-up: too few")
            continue
        rss0, rss1 = samples[0][name]["rss_kib"], samples[-1][name]["rss_kib"]
        growth = 100.0 * (rss1 - rss0) / rss0
        fifth = max(1, len(samples) // 5)
        cpu = [s[name]["cpu_pct"] for s in samples if s[name]["cpu_pct"] is not None]
        first, last = sum(cpu[:fifth]) / fifth, sum(cpu[-fifth:]) / fifth
        drift = 100.0 * (last - first) / first if first > 0 else float("nan")
        rows.append([name, f"{rss0 / 1024:.1f}", f"{rss1 / 1024:.1f}", f"{growth:+.2f}",
                     f"{first:.1f}", f"{last:.1f}", f"{drift:+.1f}",
                     str(result["exits_clean"].get(name, "-"))])
        if not growth < RSS_GROWTH_LIMIT_PCT:
            problems.append(f"{name}: RSS grew {growth:.2f} % (limit {RSS_GROWTH_LIMIT_PCT} %)")
        if not abs(drift) <= CPU_FLAT_PCT:
            problems.append(f"{name}: CPU {first:.1f} -> {last:.1f} % of a core ({drift:+.1f} %, "
                            f"limit {CPU_FLAT_PCT} %)")
    problems += [f"{n}: exit not clean" for n, clean in result["exits_clean"].items() if not clean]
    return problems, rows


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples = result["samples"]
    nodes = [k for k in samples[0] if isinstance(samples[0][k], dict)] if samples else []
    fig, (ax_rss, ax_cpu) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    for name in nodes:
        t = [s["t_s"] / 60.0 for s in samples]
        ax_rss.plot(t, [s[name]["rss_kib"] / 1024 for s in samples], label=name)
        ax_cpu.plot([s["t_s"] / 60.0 for s in samples if s[name]["cpu_pct"] is not None],
                    [s[name]["cpu_pct"] for s in samples if s[name]["cpu_pct"] is not None],
                    label=name, linewidth=0.8)
    for ax in (ax_rss, ax_cpu):
        ax.axvline(result["warm_up_s"] / 60.0, color="grey", linestyle=":", linewidth=1)
        ax.grid(alpha=0.3)
    ax_rss.set_ylabel("resident memory [MiB]")
    ax_cpu.set_ylabel(f"CPU [% of a core, per {result['sample_s']:g} s]")
    ax_cpu.set_xlabel("time [min] (dotted: end of the warm-up)")
    ax_rss.legend(loc="best", fontsize=8)
    ax_rss.set_title(f"soak, free-running graph, strike repeating: {result['strikes']} strikes, "
                     f"{result['commands']} arm commands")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    from humanoid_balance.ros_env import use_loopback_dds

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3600.0, help="wall s after bring-up")
    parser.add_argument("--sample", type=float, default=10.0, help="s between samples")
    parser.add_argument("--warm-up", type=float, default=300.0,
                        help="s before the RSS and CPU baselines")
    parser.add_argument("--domain-id", type=int, default=66)
    parser.add_argument("--logs", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=Path("docs/soak"))
    args = parser.parse_args(argv)
    use_loopback_dds(args.domain_id)
    result = soak(args)
    problems, rows = verdict(result)
    result["problems"] = problems
    result["warnings_at_baseline"] = [{"status": status, "message": message, "count": count}
                                      for (status, message), count in warnings_by_message(result).items()]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "soak_strikes.json").write_text(json.dumps(result, indent=1) + "\n")
    if result["samples"]:
        plot(result, args.out / "soak_strikes.png")
    header = ["node", "RSS start MiB", "RSS end MiB", "growth %", "CPU first %", "CPU last %",
              "CPU drift %", "exit clean"]
    print(" | ".join(header))
    for row in rows:
        print(" | ".join(row))
    print(f"strikes {result['strikes']}, commands {result['commands']}, unsafe "
          f"{len(result['unsafe'])}, level changes {len(result['level_changes'])}")
    for warning in result["warnings_at_baseline"]:
        print(f"soak: {warning['count']} x {warning['status']}: {warning['message']} "
              "(levels a strike reaches)")
    for line in problems:
        print(f"soak: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
