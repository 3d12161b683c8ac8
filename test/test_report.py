"""humanoid-balance report: reads result files and judges each metric against its target."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from humanoid_balance.cli import main
from humanoid_balance.results import metric, write_results


def _markdown_rows(paths: list[Path], capsys: pytest.CaptureFixture[str]) -> list[tuple[str, ...]]:
    """The table rows `humanoid-balance report --markdown PATHS` prints (header and rule dropped)."""
    capsys.readouterr()
    assert main(["report", "--markdown", *map(str, paths)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    return [tuple(cell.strip() for cell in line.strip("|").split("|")) for line in lines[2:]]


def test_verdict_follows_better(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """lower: value <= target is met; higher: value >= target is met; no target: '-'."""
    path = write_results("unit", {
        "lower_met": metric(1.0, "ms", target=2.0, better="lower"),
        "lower_missed": metric(3.0, "ms", target=2.0, better="lower"),
        "higher_met": metric(3.0, "x", target=2.0, better="higher"),
        "no_target": metric(3.0, "x")}, command="test", directory=tmp_path)
    verdicts = {row[1]: row[4] for row in _markdown_rows([path], capsys)}
    assert verdicts == {"lower_met": "met", "lower_missed": "MISSED", "higher_met": "met",
                        "no_target": "-"}


def test_written_results_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """write_results writes the RESULTS.md shape and report reads it back."""
    path = write_results("unit", {"step_us_p99": metric(12.5, "us", target=20, better="lower")},
                         command="test", directory=tmp_path)
    doc = json.loads(path.read_text())
    assert set(doc) == {"name", "created", "git", "machine", "command", "metrics"}
    assert _markdown_rows([path], capsys) == [("unit", "step_us_p99", "12.5 us", "20 us", "met")]


def test_missing_path_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    """A path that does not exist makes the command fail with a message."""
    assert main(["report", "/no/such/results"]) == 1
    assert "no such file or folder" in capsys.readouterr().err
