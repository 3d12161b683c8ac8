"""humanoid-balance report: reads result files and judges each metric against its target."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from humanoid_balance.apps.report import rows, verdict
from humanoid_balance.cli import main
from humanoid_balance.results import metric, write_results


def test_verdict_follows_better() -> None:
    """lower: value <= target is met; higher: value >= target is met; no target: '-'."""
    assert verdict(metric(1.0, "ms", target=2.0, better="lower")) == "met"
    assert verdict(metric(3.0, "ms", target=2.0, better="lower")) == "MISSED"
    assert verdict(metric(3.0, "x", target=2.0, better="higher")) == "met"
    assert verdict(metric(3.0, "x")) == "-"


def test_written_results_round_trip(tmp_path: Path) -> None:
    """write_results writes the RESULTS.md shape and report reads it back."""
    path = write_results("unit", {"step_us_p99": metric(12.5, "us", target=20, better="lower")},
                         command="test", directory=tmp_path)
    doc = json.loads(path.read_text())
    assert set(doc) == {"name", "created", "git", "machine", "command", "metrics"}
    assert rows([path]) == [("unit", "step_us_p99", "12.5 us", "20 us", "met")]


def test_missing_path_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    """A path that does not exist makes the command fail with a message."""
    assert main(["report", "/no/such/results"]) == 1
    assert "no such file or folder" in capsys.readouterr().err
