"""``humanoid-balance demo`` as a user runs it: every node its own process, lock-step, two runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from humanoid_balance.bag import bag_topics


def _demo(*args: str, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "humanoid_balance.cli", "demo", *args],
                          env=dict(os.environ), capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory, ros_domain_id: int) -> dict[str, Any]:
    """One short lock-step demo (with and without RMC) into a temporary folder."""
    out = tmp_path_factory.mktemp("demo")
    proc = _demo("--out", str(out), "--duration", "3.0", "--strike-start", "1.6",
                 "--domain-id", str(ros_domain_id))
    metrics = json.loads((out / "demo.json").read_text())["metrics"] \
        if (out / "demo.json").exists() else {}
    return {"out": out, "proc": proc, "metrics": metrics}


@pytest.mark.ros
@pytest.mark.slow
def test_demo_exits_0(demo_run: dict[str, Any]) -> None:
    """The demo completes both runs and exits 0 (no fault, every node exited cleanly)."""
    proc = demo_run["proc"]
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]


@pytest.mark.ros
@pytest.mark.slow
def test_demo_balances_the_strike(demo_run: dict[str, Any]) -> None:
    """RMC keeps the CoP peak shift at most 25 % of the shift without it."""
    metrics = demo_run["metrics"]
    assert metrics["cop_peak_shift_ratio"]["target"] == 0.25
    assert metrics["cop_peak_shift_ratio"]["value"] <= 0.25, (
        metrics["cop_peak_shift_mm"], metrics["cop_peak_shift_mm_no_rmc"])


@pytest.mark.ros
@pytest.mark.slow
def test_demo_has_no_faults_holds_or_misses(demo_run: dict[str, Any]) -> None:
    """No node fault on /diagnostics in either run, no balance fault with RMC (without it the
    strike may take the ZMP to the pads' edge: that is the baseline), no arm hold, no lock-step
    miss."""
    metrics = demo_run["metrics"]
    counts = {name: metrics[name]["value"] for name in (
        "faults_seen", "faults_seen_no_rmc", "balance_faults_seen", "arm_balance_holds",
        "lock_step_misses", "lock_step_misses_no_rmc")}
    assert counts == dict.fromkeys(counts, 0)


@pytest.mark.ros
@pytest.mark.slow
def test_demo_nodes_exit_cleanly(demo_run: dict[str, Any]) -> None:
    """Every node process of both runs exited with status 0 on SIGINT, without a traceback."""
    metrics = demo_run["metrics"]
    assert metrics["nodes_not_exiting_cleanly"]["value"] == 0
    assert metrics["nodes_not_exiting_cleanly_no_rmc"]["value"] == 0
    assert "did not exit cleanly" not in demo_run["proc"].stdout


@pytest.mark.ros
@pytest.mark.slow
def test_demo_moves_the_waist(demo_run: dict[str, Any]) -> None:
    """The waist controller moved the MuJoCo waist through its simulated drives (1 deg asked)."""
    value = demo_run["metrics"]["waist_pitch_final_deg_sim"]["value"]
    assert 0.8 < value < 1.2, value


@pytest.mark.ros
@pytest.mark.slow
def test_demo_writes_plots_page_and_bags(demo_run: dict[str, Any]) -> None:
    """The folder has the PNG plots, index.html showing them, and both bags with the strike."""
    out: Path = demo_run["out"]
    plots = ["cop_zmp_paths.png", "momentum.png", "waist_tracking.png"]
    for name in plots:
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    page = (out / "index.html").read_text()
    assert all(f"src='{name}'" in page for name in plots)
    assert "cop_peak_shift_ratio" in page
    with_rmc, without = bag_topics(out / "bag"), bag_topics(out / "bag_without_rmc")
    assert with_rmc["/arm_balance/command"][1] > 100 and with_rmc["/sim/cop"][1] > 100
    assert without["/joint_commands"][1] > 100 and without["/arm_balance/command"][1] == 0


@pytest.mark.ros
@pytest.mark.slow
def test_demo_shows_progress(demo_run: dict[str, Any]) -> None:
    """The demo prints progress lines with the simulated time and the real-time factor."""
    lines = [line for line in demo_run["proc"].stdout.splitlines() if "real-time factor" in line]
    assert any(" of 3.00 s" in line for line in lines), demo_run["proc"].stdout[-2000:]


@pytest.mark.ros
@pytest.mark.slow
def test_report_of_the_demo_folder(demo_run: dict[str, Any]) -> None:
    """`humanoid-balance report` on the demo's folder draws every plot and gives the demo's CoP ratio."""
    from humanoid_balance.cli import main

    out: Path = demo_run["out"]
    assert main(["report", str(out)]) == 0
    page = (out / "report" / "index.html").read_text()
    for name in ("cop_zmp_paths", "momentum", "waist_tracking", "command_rates",
                 "holds_and_faults", "stability_margin"):
        assert (out / "report" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert f"src='{name}.png'" in page
    ratio = demo_run["metrics"]["cop_peak_shift_ratio"]["value"]
    assert f"<td>cop_peak_shift_ratio</td><td>{ratio:.6g}</td>" in page


def test_unwritable_out_is_one_line_exit_2(tmp_path: Path) -> None:
    """An --out that cannot be created is reported in one line, exit status 2, before any run."""
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    proc = _demo("--out", str(blocker / "out"), timeout=60.0)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith(f"humanoid-balance demo: --out {blocker / 'out'}: cannot write")
    assert "demo (" not in proc.stdout  # no run started


def test_too_short_duration_is_refused(tmp_path: Path) -> None:
    """A --duration that ends before the strike does is refused with the least that fits."""
    proc = _demo("--out", str(tmp_path), "--duration", "1.5", "--strike-start", "1.0",
                 timeout=60.0)
    assert proc.returncode == 2
    assert proc.stderr == ("humanoid-balance demo: --duration=1.5 s ends before the strike does: "
                           "it takes 1.4 s from --strike-start=1.0 s; give at least 2.4 s\n")
