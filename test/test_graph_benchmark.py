"""``benchmarks/graph.py``'s summary of its free-running demo runs (no process started here)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from graph import demo_metrics  # noqa: E402


def _run(rtf: float, ratio: float, shift_mm: float) -> dict[str, Any]:
    """A demo run as ``demo_run`` returns it: its ``demo.json`` metrics."""
    return {"returncode": 0, "command": "demo --free-running", "metrics": {
        "real_time_factor": {"value": rtf, "unit": "x"},
        "cop_peak_shift_ratio": {"value": ratio, "unit": "", "target": 0.25, "better": "lower"},
        "cop_peak_shift_mm": {"value": shift_mm, "unit": "mm", "better": "lower"},
        "holds": {"value": 0, "unit": ""},
    }}


def test_medians_each_run_and_the_runs_that_met_both_targets() -> None:
    metrics: dict[str, dict[str, Any]] = {}
    # real time and balanced; balanced but slow; real time but unbalanced
    demo_metrics(metrics, [_run(0.97, 0.20, 21.0), _run(0.70, 0.22, 23.0),
                           _run(1.00, 0.30, 31.0)])
    assert metrics["demo_real_time_factor"]["value"] == 0.97
    assert metrics["demo_cop_peak_shift_ratio"]["value"] == 0.22
    assert metrics["demo_cop_peak_shift_ratio"]["target"] == 0.25  # the run's entry kept
    assert metrics["demo_cop_peak_shift_mm"]["value"] == 23.0
    assert metrics["demo_real_time_factor_per_run"]["value"] == "0.97,0.7,1"
    assert metrics["demo_cop_peak_shift_ratio_per_run"]["value"] == "0.2,0.22,0.3"
    assert metrics["demo_runs_meeting_targets"]["value"] == "1 of 3"
    assert "demo_holds" not in metrics  # only the timing and balance figures


def test_the_targets_bounds_count_as_met_and_one_run_has_no_per_run_list() -> None:
    metrics: dict[str, dict[str, Any]] = {}
    demo_metrics(metrics, [_run(0.95, 0.25, 25.0)])
    assert metrics["demo_runs_meeting_targets"]["value"] == "1 of 1"
    assert "demo_real_time_factor_per_run" not in metrics
