"""Write benchmark and experiment figures in the one result format (shared RESULTS.md).

Benchmarks write ``benchmarks/results/<name>.json``; experiments write to the
folder they are given. Also the other files the tools write (YAML, figures), so
that ``core`` stays free of I/O.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

BENCHMARK_RESULTS_DIR = Path(__file__).resolve().parent.parent / "benchmarks" / "results"


def metric(
    value: float | int | str | bool, unit: str = "", target: float | None = None,
    better: str | None = None,
) -> dict[str, Any]:
    """One metric: ``value`` measured now, ``target`` from the issue, ``better`` lower|higher."""
    entry: dict[str, Any] = {"value": value, "unit": unit}
    if target is not None:
        entry["target"] = target
    if better is not None:
        if better not in ("lower", "higher"):
            raise ValueError(f"{better=} must be 'lower' or 'higher'")
        entry["better"] = better
    return entry


def _git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True,
            cwd=Path(__file__).resolve().parent, check=False,
        )
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def result_document(name: str, metrics: dict[str, dict[str, Any]], command: str) -> dict[str, Any]:
    """The JSON document of ../shared/RESULTS.md."""
    return {
        "name": name,
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git": _git_commit(),
        "machine": {
            "cpu": _cpu_name(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
        },
        "command": command,
        "metrics": metrics,
    }


def write_results(
    name: str, metrics: dict[str, dict[str, Any]], command: str | None = None,
    directory: Path | None = None,
) -> Path:
    """Print the metrics and write ``<directory>/<name>.json`` (default: benchmarks/results)."""
    cmd = command if command is not None else " ".join(["python", *sys.argv])
    doc = result_document(name, metrics, cmd)
    out_dir = BENCHMARK_RESULTS_DIR if directory is None else directory
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps(doc, indent=2) + "\n")
    width = max(len(k) for k in metrics) if metrics else 0
    for key, entry in metrics.items():
        target = f"  (target {entry['target']})" if "target" in entry else ""
        print(f"{key:<{width}}  {entry['value']} {entry.get('unit', '')}{target}")
    print(f"wrote {path}")
    return path


def save_figure(fig: Any, path: Path, dpi: int = 100) -> Path:
    """Lay out, write (tight bounding box) and close a matplotlib figure; returns ``path``."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return path


def write_yaml(path: Path, document: Any) -> None:
    """Write ``document`` (plain data) to ``path`` as YAML, keys in order, creating its folder."""
    import yaml

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document, sort_keys=False))


def check_output(path: Path, option: str = "--out", directory: bool = False) -> None:
    """Raise before any work is done when ``path`` cannot be written.

    Args:
        path: a file to write (its folder must be writable), or with ``directory`` a folder
            to write into (created when missing).
        option: the command-line option that named it, for the message.
        directory: ``path`` is a folder.

    Raises:
        ConfigurationError: the folder cannot be created or written to; the message names
            the path, the reason and what to do.
    """
    from humanoid_balance.exceptions import ConfigurationError

    folder = Path(path) if directory else Path(path).parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigurationError(
            f"{option} {path}: cannot create {folder} ({exc.strerror or exc}); "
            f"choose a writable {option}") from exc
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigurationError(
            f"{option} {path}: {folder} is not a writable folder; choose a writable {option}")
