"""``humanoid-balance report``: result JSON files (shared RESULTS.md format) as one table.

    humanoid-balance report                       # benchmarks/results/*.json
    humanoid-balance report results/strike results/waist/waist_tracking.json
    humanoid-balance report --markdown ...        # a Markdown table for a README or a note

Each metric is shown with its target and whether the measured value meets it
(``better: lower`` means value <= target, ``higher`` means value >= target).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from humanoid_balance.exceptions import HumanoidBalanceError
from humanoid_balance.results import BENCHMARK_RESULTS_DIR


class ReportError(HumanoidBalanceError, ValueError):
    """A file given to the report is not a result file."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the report."""
    parser.add_argument("paths", nargs="*", type=Path,
                        help="JSON files or folders of them (default: benchmarks/results)")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")


def _files(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for path in paths or [BENCHMARK_RESULTS_DIR]:
        if path.is_dir():
            out.extend(sorted(path.glob("*.json")))
        elif path.is_file():
            out.append(path)
        else:
            raise FileNotFoundError(f"{path}: no such file or folder")
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
    """(file, metric, value with unit, target, verdict) for every metric of every file."""
    table = []
    for path in files:
        doc = json.loads(path.read_text())
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


def run(args: argparse.Namespace) -> int:
    """Print the table; exit 1 when a file cannot be read."""
    try:
        table = rows(_files(list(args.paths)))
    except (FileNotFoundError, json.JSONDecodeError, ReportError) as exc:
        print(f"humanoid-balance report: {exc}", file=sys.stderr)
        return 1
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
