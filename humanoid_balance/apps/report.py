"""``humanoid-balance report``: the page of a recorded run, or result JSON files as one table.

    humanoid-balance report results/demo            # a run folder (bags in it): results/demo/report/
    humanoid-balance report run1_bag                # one bag (simulated or a robot's): run1_bag_report/
    humanoid-balance report bag_a bag_b --out cmp   # several bags on one page
    humanoid-balance report                         # benchmarks/results/*.json as a table
    humanoid-balance report results/strike results/waist/waist_tracking.json
    humanoid-balance report --markdown ...          # a Markdown table for a README or a note

A bag (a rosbag2 directory: ``metadata.yaml`` in it) or a run folder (bags in
it, as ``humanoid-balance demo`` writes) gives the demo's page (index.html
and PNG plots, :func:`humanoid_balance.report_page.write_report`): CoP/ZMP
path in the support polygon, momentum, waist tracking, command rates, holds
and faults from ``/diagnostics``, the stability margin; the page names the
plots the recording lacks the topics for. Result JSON files give a table:
each metric with its target and whether the measured value meets it
(``better: lower`` means value <= target, ``higher`` means value >= target).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from humanoid_balance.exceptions import HumanoidBalanceError
from humanoid_balance.results import BENCHMARK_RESULTS_DIR

#: the demo's bag folders and their runs' labels, in the demo's order (with RMC first)
DEMO_RUN_LABELS = {"bag": "with RMC", "bag_without_rmc": "without RMC"}


class ReportError(HumanoidBalanceError, ValueError):
    """A path given to the report is not a bag, a run folder or a result file."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the report."""
    parser.add_argument("paths", nargs="*", type=Path, metavar="BAG_OR_DIR",
                        help="a bag, a run folder (bags in it, as the demo writes), or result "
                             "JSON files or folders of them (default: benchmarks/results)")
    parser.add_argument("--out", type=Path, default=None,
                        help="the page's folder (default: BAG_report beside a bag, "
                             "FOLDER/report in a run folder)")
    parser.add_argument("--urdf", type=Path, default=None,
                        help="the humanoid's URDF (default: the package's)")
    parser.add_argument("--markdown", action="store_true",
                        help="result files: print a Markdown table")


def _is_bag(path: Path) -> bool:
    return path.is_dir() and (path / "metadata.yaml").is_file()


def _bags_in(folder: Path) -> list[Path]:
    """The bags directly in ``folder``: the demo's first, in its order, then by name."""
    bags = [child for child in sorted(folder.iterdir()) if _is_bag(child)]
    order = list(DEMO_RUN_LABELS)
    return sorted(bags, key=lambda b: (order.index(b.name) if b.name in order else len(order)))


def _kind(path: Path) -> str:
    """``bags`` (a bag or a run folder) or ``results`` (JSON files).

    Raises:
        ReportError: the path does not exist or is neither.
    """
    if not path.exists():
        raise ReportError(f"{path}: no such file or folder")
    if _is_bag(path) or (path.is_dir() and _bags_in(path)):
        return "bags"
    if (path.is_file() and path.suffix == ".json") or (path.is_dir() and any(path.glob("*.json"))):
        return "results"
    raise ReportError(f"{path}: not a bag (no metadata.yaml in it), a run folder (no bag in it) "
                      "or result JSON files; give a rosbag2 directory, a folder of them (as "
                      "`humanoid-balance demo --out` writes) or result files")


def _files(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for path in paths or [BENCHMARK_RESULTS_DIR]:
        if path.is_dir():
            out.extend(sorted(path.glob("*.json")))
        elif path.is_file():
            out.append(path)
        else:
            raise ReportError(f"{path}: no such file or folder")
    return out


def verdict(entry: dict[str, Any]) -> str:
    """``met``, ``MISSED`` or ``-`` (no target or not comparable) for one metric."""
    target, better, value = entry.get("target"), entry.get("better"), entry.get("value")
    if target is None or better not in ("lower", "higher"):
        return "-"
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    ok = value <= target if better == "lower" else value >= target
    return "met" if ok else "MISSED"


def rows(files: list[Path]) -> list[tuple[str, str, str, str, str]]:
    """(file, metric, value with unit, target, verdict) for every metric of every file.

    Raises:
        ReportError: a file is not a result file.
    """
    table = []
    for path in files:
        try:
            doc = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            raise ReportError(f"{path}: not JSON ({error})") from error
        metrics = doc.get("metrics") if isinstance(doc, dict) else None
        if not isinstance(metrics, dict) or not all(isinstance(e, dict) for e in metrics.values()):
            raise ReportError(
                f"{path}: not a result file (expected {{\"name\": ..., \"metrics\": {{NAME: "
                "{\"value\": ..., \"unit\": ...}}}} as benchmarks and experiments write); "
                "give result JSON files or folders of them")
        for key, entry in metrics.items():
            unit = entry.get("unit", "")
            value = f"{entry.get('value')} {unit}".strip()
            target = "" if entry.get("target") is None else f"{entry['target']} {unit}".strip()
            table.append((doc.get("name", path.stem), key, value, target, verdict(entry)))
    return table


def _print_table(args: argparse.Namespace) -> int:
    table = rows(_files(list(args.paths)))
    header = ("result", "metric", "value", "target", "verdict")
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in table:
            print("| " + " | ".join(row) + " |")
        return 0
    widths = [max(len(r[i]) for r in [header, *table]) for i in range(len(header))]
    for row in [header, *table]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))
    return 0


def default_out(path: Path) -> Path:
    """Where the page of ``path`` goes: ``BAG_report`` beside a bag, ``FOLDER/report`` in a run folder."""
    return path.parent / f"{path.name}_report" if _is_bag(path) else path / "report"


def _write_page(args: argparse.Namespace) -> int:
    from humanoid_balance.core.model import RobotModel
    from humanoid_balance.recorded_run import load_run
    from humanoid_balance.report_page import write_report
    from humanoid_balance.resources import urdf_path

    bags: list[tuple[Path, str]] = []
    for path in args.paths:
        if _is_bag(path):
            bags.append((path, path.name))
        else:
            bags += [(bag, DEMO_RUN_LABELS.get(bag.name, bag.name)) for bag in _bags_in(path)]
    labels = [label for _, label in bags]
    bags = [(bag, label if labels.count(label) == 1 else str(bag)) for bag, label in bags]
    out = args.out if args.out is not None else default_out(args.paths[0])
    out.mkdir(parents=True, exist_ok=True)  # before a long bag is read: fails first
    urdf = args.urdf if args.urdf is not None else urdf_path("humanoid")
    try:
        model = RobotModel(urdf, world_frame="W")
    except Exception as error:  # pinocchio's and the model's errors: a URDF that does not load
        raise ReportError(f"--urdf {urdf}: cannot load the humanoid's model ({error})") from error
    runs = []
    for bag, label in bags:
        def progress(done: int, total: int, bag: Path = bag) -> None:
            share = 100.0 * done / total if total else 100.0
            print(f"report: reading {bag}: {share:.0f} % ({done} of {total} messages)",
                  flush=True)

        runs.append(load_run(bag, label, progress=progress))
    print(f"report: drawing {len(runs)} run(s) into {out}", flush=True)
    command = "humanoid-balance " + shlex.join(sys.argv[1:]) if sys.argv[1:2] == ["report"] \
        else "humanoid-balance report " + shlex.join(str(p) for p in args.paths)
    title = "humanoid_balance report: " + ", ".join(p.name for p in args.paths)
    page = write_report(runs, out, model, title=title, command=command,
                        links={f"bag {label}": bag for bag, label in bags})
    print(f"report: page {page}")
    return 0


def run(args: argparse.Namespace) -> int:
    """The page of bags or run folders, or the table of result files; 0 on success.

    Raises:
        ReportError: a path is not a bag, a run folder or result files, or they are mixed.
    """
    paths = list(args.paths)
    kinds = {_kind(path) for path in paths}
    if kinds == {"bags", "results"}:
        raise ReportError("give bags and run folders, or result files, not both")
    if kinds == {"bags"}:
        return _write_page(args)
    if args.out is not None:
        raise ReportError("--out is for a bag's page; result files are printed as a table")
    return _print_table(args)
