"""The main job end to end: ``humanoid-balance demo`` in its own process, as the README runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from humanoid_balance.bag import bag_topics

pytestmark = [pytest.mark.ros, pytest.mark.slow]


def test_demo_balances_the_strike_and_records_it(tmp_path: Path) -> None:
    """The demo exits 0, the waist moves, RMC keeps the CoP shift under half the no-RMC 105 mm."""
    proc = subprocess.run(
        [sys.executable, "-m", "humanoid_balance.cli", "demo", "--out", str(tmp_path), "--duration", "2.8",
         "--strike-start", "0.8"],
        env=dict(os.environ), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "demo summary:" in proc.stdout
    metrics = json.loads((tmp_path / "demo.json").read_text())["metrics"]
    assert metrics["faults_seen"]["value"] == 0
    assert metrics["arm_balance_holds"]["value"] == 0
    # the waist controller moved the MuJoCo waist through the simulated CAN drives (1 deg asked)
    assert 0.5 < metrics["waist_pitch_final_deg_sim"]["value"] < 1.8, metrics["waist_pitch_final_deg_sim"]
    assert metrics["simulated_s"]["value"] == pytest.approx(2.8, abs=0.01)
    assert metrics["max_abs_Lx_Ly_model"]["value"] < 1e-9
    assert 5.0 < metrics["cop_peak_shift_mm"]["value"] < 53.0, metrics["cop_peak_shift_mm"]
    topics = bag_topics(tmp_path / "bag")
    for topic in ("/clock", "/joint_states", "/left_foot/ft", "/right_foot/ft", "/sim/cop", "/zmp",
                  "/arm_balance/command", "/waist/joint_states"):
        assert topics[topic][1] > 100, (topic, topics[topic])
