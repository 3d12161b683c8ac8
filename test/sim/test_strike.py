"""The seed-000 strike in MuJoCo: RMC reduces the ZMP shift measured by the foot F/T sensors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from humanoid_balance.apps.experiment_strike import run_sim, zmp_shift, zmp_vs_contact_cop
from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.rmc import PAPER_SELECTION
from humanoid_balance.resources import urdf_path


@pytest.mark.slow
def test_rmc_reduces_the_measured_zmp_shift_to_a_quarter() -> None:
    """Peak measured ZMP shift with RMC (S = Lx, Ly) is at most 25 % of the shift without RMC."""
    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    with_rmc = zmp_shift(run_sim(model, speed=None, selection=PAPER_SELECTION, balance=True,
                                 rate_hz=500.0, extra=0.1, settle=0.3))
    without = zmp_shift(run_sim(model, speed=None, selection=PAPER_SELECTION, balance=False,
                                rate_hz=500.0, extra=0.1, settle=0.3))
    assert without.total > 0.05  # the strike does disturb the robot (> 50 mm)
    assert with_rmc.total <= 0.25 * without.total, (with_rmc, without)


@pytest.mark.slow
def test_measured_zmp_stays_inside_the_support_polygon_with_rmc() -> None:
    """With RMC the measured ZMP keeps a positive margin to the FSR support polygon all along."""
    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    shift = zmp_shift(run_sim(model, speed=None, selection=PAPER_SELECTION, balance=True,
                              rate_hz=500.0, extra=0.1, settle=0.3))
    assert shift.min_margin > 0.0


@pytest.mark.slow
def test_experiment_writes_every_metric_of_results_md(tmp_path: Path) -> None:
    """`experiment strike` (coarse sweep, no plots) writes strike.json with RESULTS.md's names."""
    from humanoid_balance.cli import main

    assert main(["experiment", "strike", "--out", str(tmp_path), "--sweep-step", "1.5",
                 "--sweep-sim-speeds", "--no-plots"]) == 0
    metrics = json.loads((tmp_path / "strike.json").read_text())["metrics"]
    expected = {"zmp_peak_mm_rmc", "zmp_peak_mm_no_rmc", "max_abs_selected_momentum",
                "min_margin_mm_rmc", "min_margin_mm_no_rmc", "model_zmp_min_margin_mm_no_rmc",
                "peak_abs_dLz_dt", "friction_torque_limit", "max_slip_mm", "min_foot_fz_n",
                "aux_shoulder_share", "max_balanced_speed", "first_limit"}
    assert expected <= set(metrics)


@pytest.mark.slow
def test_sensor_zmp_agrees_with_the_contact_cop() -> None:
    """The ZMP from the ankle F/T sensors is within 2 mm of MuJoCo's contact-force CoP (RMC run)."""
    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    run = run_sim(model, speed=None, selection=PAPER_SELECTION, balance=True, rate_hz=500.0,
                  extra=0.1, settle=0.3)
    assert zmp_vs_contact_cop(run) < 0.002
