"""End-to-end: ``humanoid-balance experiment waist`` (seed 003's tracking test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from humanoid_balance.cli import main


@pytest.mark.slow
def test_experiment_writes_metrics_within_target(tmp_path: Path) -> None:
    """The experiment refuses the -12 deg start and tracks the in-range path within 0.1 deg."""
    assert main(["experiment", "waist", "--out", str(tmp_path), "--no-plots"]) == 0
    metrics = json.loads((tmp_path / "waist_tracking.json").read_text())["metrics"]
    assert metrics["out_of_range_command_refused"]["value"] is True
    assert metrics["max_tracking_error_deg"]["value"] <= 0.1
    assert metrics["bus_load_pct"]["value"] <= 50.0
