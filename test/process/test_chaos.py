"""The short seeded chaos run (issue 35, item 2): the simulated graph as processes, the strike
repeating, one fault of three kinds. ``tools/chaos.py`` is the tool; the full runs (every kind,
every node) are in test/faults/results/chaos.json (free-running) and chaos_lock_step.json.

The test runs the graph in lock-step (``mujoco_sim`` waits for each period's arm command), so
that what it checks does not depend on the machine keeping real time. Free-running on a
machine too busy for real time (the suite beside two busy loops), two of the three faults did
not stay settled for 1 s within 30 s (after the last, ``arm_balance`` still warned): the
graph was overloaded, which is not a fault it failed to recover from. Free-running chaos is
measured by the tool, on a quiet machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent

pytestmark = pytest.mark.slow


def test_a_short_chaos_run_commands_nothing_unsafe_and_recovers(tmp_path: Path,
                                                               ros_domain_id: int) -> None:
    """SIGSTOP of a node, the waist's bus going bus-off, one foot's F/T reading zeros: no arm
    command non-finite, beyond the limits or jumping; the graph back by itself or by the
    documented /waist/enable; the bag recorded meanwhile readable with its CRCs."""
    out = tmp_path / "chaos.json"
    run = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "chaos.py"), "--seed", "3", "--faults", "3",
         "--kinds", "stop", "bus_off", "ft_zero", "--lock-step", "--domain-id", str(ros_domain_id),
         "--logs", str(tmp_path / "logs"), "--out", str(out)],
        capture_output=True, text=True, timeout=300)
    assert out.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["error"] == "", result["error"]
    kinds = sorted(row["fault"].split()[0] for row in result["faults"])
    assert kinds == ["bus_off", "ft_zero", "stop"]
    for row in result["faults"]:  # the whole row (its notes name what stayed down) and the run's output
        assert row["unsafe_commands"] == 0, json.dumps(row) + run.stdout[-2000:]
        assert row["recover_s"] is not None, json.dumps(row) + run.stdout[-2000:]
    assert result["unsafe"] == []
    assert result["commands"] > 500  # the arm was commanded throughout
    assert result["bag"]["readable"] and result["bag"]["crc_checked"], result["bag"]
    assert result["bag"]["counts"].get("/arm_balance/command", 0) > 0
    assert result["bag"]["commands_missing_from_bag"] == 0
    assert all(result["exits_clean"].values()), result["exits_clean"]
    assert run.returncode == 0, run.stderr[-2000:]
