"""The seed-000 strike in MuJoCo: RMC reduces the ZMP shift measured by the foot F/T sensors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.rmc import PAPER_SELECTION
from humanoid_balance.core.strike_trajectory import PAPER_DURATIONS, PHASES
from humanoid_balance.experiments.strike import (
    RATIO_TARGET,
    SimRun,
    run_sim,
    zmp_peak_by_phase,
    zmp_shift,
    zmp_vs_contact_cop,
)
from humanoid_balance.resources import urdf_path


def _strike(balance: bool, paper_form: bool = False) -> SimRun:
    """The paper's strike in MuJoCo (S = Lx, Ly), shortened tail; 0.5 s settle (the raised aux arm)."""
    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    return run_sim(model, speed=None, selection=PAPER_SELECTION, balance=balance, rate_hz=500.0,
                   extra=0.1, settle=0.5, paper_form=paper_form)


@pytest.fixture(scope="module")
def with_rmc() -> SimRun:
    """The strike with RMC (the controller's defaults), run once for the tests of this module."""
    return _strike(balance=True)


@pytest.fixture(scope="module")
def without_rmc() -> SimRun:
    """The strike without RMC (aux arm still), run once for the tests of this module."""
    return _strike(balance=False)


@pytest.mark.slow
def test_rmc_reduces_the_measured_zmp_shift_to_a_tenth(with_rmc: SimRun,
                                                       without_rmc: SimRun) -> None:
    """Peak measured ZMP shift with RMC (S = Lx, Ly) is at most 10 % of the shift without RMC
    (issue 14; issue 4 asked for 25 %): 8.69 / 104.73 mm."""
    shift = zmp_shift(with_rmc)
    without = zmp_shift(without_rmc)
    assert without.total_m > 0.05  # the strike does disturb the robot (> 50 mm)
    assert shift.total_m <= RATIO_TARGET * without.total_m, (shift, without)


@pytest.mark.slow
def test_default_keeps_the_feet_still(with_rmc: SimRun, without_rmc: SimRun) -> None:
    """Default controller: max sole slip <= no-RMC slip + 1 mm and sole yaw < 1 deg (issue 11)."""
    slip, slip_off = float(np.max(with_rmc.slip_m)), float(np.max(without_rmc.slip_m))
    yaw_deg = float(np.rad2deg(np.max(with_rmc.yaw_rad)))
    assert slip <= slip_off + 0.001 and yaw_deg < 1.0, (slip, slip_off, yaw_deg)


@pytest.mark.slow
def test_papers_pure_form_turns_the_feet(without_rmc: SimRun) -> None:
    """The paper's pure form (posture_gain 0, aux from rest) yaws the soles > 1 deg; ratio <= 0.25."""
    pure = _strike(balance=True, paper_form=True)
    assert float(np.rad2deg(np.max(pure.yaw_rad))) > 1.0
    assert zmp_shift(pure).total_m <= 0.25 * zmp_shift(without_rmc).total_m


@pytest.mark.slow
def test_measured_zmp_stays_inside_the_support_polygon_with_rmc(with_rmc: SimRun) -> None:
    """With RMC the measured ZMP keeps a positive margin to the FSR support polygon all along."""
    assert zmp_shift(with_rmc).min_margin_m > 0.0


@pytest.mark.slow
def test_rmc_moves_the_held_momentum_from_the_arms_to_the_body(with_rmc: SimRun,
                                                               without_rmc: SimRun) -> None:
    """Measured Lx, Ly per joint group: RMC takes the arms' to a small fraction of the
    unbalanced strike's; what remains is mostly the waist's (the body giving way under the
    arms' reaction), which is why the measured ZMP does not come down further (issue 14)."""
    def peak(run: SimRun, group: str) -> float:
        series = run.held_momentum_by_group[group]
        return float(np.max(np.hypot(series[:, 0], series[:, 1])))

    assert set(with_rmc.held_momentum_by_group) == {"arms", "waist", "legs", "neck"}
    assert len(with_rmc.held_momentum_by_group["arms"]) == round(with_rmc.times_s.size / 2)
    assert peak(without_rmc, "arms") > 1.0  # N m s: the strike alone
    assert peak(with_rmc, "arms") < 0.1 * peak(without_rmc, "arms")
    assert peak(with_rmc, "waist") > peak(with_rmc, "arms")


@pytest.mark.slow
def test_zmp_peak_by_phase(with_rmc: SimRun, without_rmc: SimRun) -> None:
    """Per-phase peaks: the phases in the trajectory's order over the times the paper gives
    them, the largest equal to the run's peak; with RMC the strike itself moves the ZMP less
    than the move to the ready pose before it, without RMC the strike and return set the peak."""
    rel = with_rmc.times_s - with_rmc.times_s[0]  # s since the first step of the first cycle
    ends = np.cumsum(PAPER_DURATIONS)
    for phase, begin, end in zip(PHASES[1:4], ends[:3], ends[1:4], strict=True):
        inside = rel[with_rmc.phase == phase]
        assert begin - 0.003 <= inside.min() and inside.max() <= end + 0.003, (phase, inside)
    for run in (with_rmc, without_rmc):
        peaks = zmp_peak_by_phase(run)
        assert list(peaks) == list(PHASES)
        assert max(peaks.values()) == zmp_shift(run).total_m
    rmc, off = zmp_peak_by_phase(with_rmc), zmp_peak_by_phase(without_rmc)
    assert rmc["strike"] < rmc["to_ready"], rmc
    assert max(off, key=off.__getitem__) in ("strike", "return"), off


def _stalls(stall_s: float, period_s: float) -> Callable[[float], float]:
    """Arrival times of a transport that stalls for the first ``stall_s`` of every ``period_s``
    (what a free-running graph on saturated cores does to the commands), else 2 ms."""
    def arrival(t: float) -> float:
        phase = t % period_s
        return t + 0.002 if phase >= stall_s else t - phase + stall_s + 0.001
    return arrival


@pytest.mark.slow
def test_the_free_running_latency_rides_out_stalled_commands() -> None:
    """Commands stalled for 45 ms of every 100 ms (one `graph.py` run saw 45 ms at most) and
    played back FREE_RUNNING_COMMAND_LATENCY_S after their stamps leave the strike's ZMP peak
    with RMC within 1 mm of on-time commands; played back after 10 ms they let the arms'
    momentum through and the peak more than doubles."""
    from humanoid_balance.graph import FREE_RUNNING_COMMAND_LATENCY_S

    model = RobotModel(urdf_path("humanoid"), world_frame="W")

    def peak(arrival: Callable[[float], float], latency_s: float) -> float:
        run = run_sim(model, speed=None, selection=PAPER_SELECTION, balance=True, rate_hz=500.0,
                      extra=0.1, transport=arrival, command_latency=latency_s)
        return zmp_shift(run).total_m

    on_time = peak(_stalls(0.0, 0.1), FREE_RUNNING_COMMAND_LATENCY_S)
    assert on_time < 0.03  # the strike balanced (about 20 mm)
    assert peak(_stalls(0.045, 0.1), FREE_RUNNING_COMMAND_LATENCY_S) <= on_time + 0.001
    assert peak(_stalls(0.045, 0.1), 0.01) > 2.0 * on_time


@pytest.mark.slow
def test_experiment_writes_every_metric_of_results_md(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """`experiment strike` with non-default options writes strike.json with RESULTS.md's names.
    The names and options are what is checked: the MuJoCo runs take the simulation's default
    physics (1 ms), half the experiment's cost; the experiment's figures on its own physics are
    the other tests'."""
    from humanoid_balance.cli import main
    from humanoid_balance.experiments import strike_sim

    monkeypatch.setattr(strike_sim, "SIM_PHYSICS", {"integrator": "implicitfast", "timestep": 0.001})

    assert main(["experiment", "strike", "--out", str(tmp_path), "--speed", "1.6", "--job-arm",
                 "left", "--selection", "Lx", "--sweep-step", "1.5", "--sweep-sim-speeds",
                 "--no-plots"]) == 0
    metrics = json.loads((tmp_path / "strike.json").read_text())["metrics"]
    expected = {"zmp_peak_mm_rmc", "zmp_peak_mm_no_rmc", "max_abs_selected_momentum",
                "zmp_peak_mm_paper_form", "zmp_ratio_paper_form", "max_slip_mm_paper_form",
                "max_sole_yaw_deg_paper_form", "max_sole_yaw_deg", "aux_posture_gain",
                "min_margin_mm_rmc", "min_margin_mm_no_rmc", "model_zmp_min_margin_mm_no_rmc",
                "peak_abs_dLz_dt", "friction_torque_limit", "max_slip_mm", "min_foot_fz_n",
                "aux_shoulder_share", "max_balanced_speed", "first_limit", "first_binding",
                "zmp_peak_phase_rmc", "zmp_peak_mm_rmc_to_ready", "zmp_peak_mm_no_rmc_strike"}
    assert expected <= set(metrics)
    ran = {k: metrics[k]["value"] for k in ("speed_m_s", "job_arm", "selection")}
    assert ran == {"speed_m_s": 1.6, "job_arm": "left", "selection": "Lx"}


@pytest.mark.slow
def test_sensor_zmp_agrees_with_the_contact_cop(with_rmc: SimRun) -> None:
    """The ZMP from the ankle F/T sensors is within 2 mm of MuJoCo's contact-force CoP (RMC run)."""
    assert zmp_vs_contact_cop(with_rmc) < 0.002
