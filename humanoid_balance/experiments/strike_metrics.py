"""The strike experiment's results as the metrics of shared RESULTS.md (``strike.json``).

Metric names and rounding are those of the results already published; each
group below takes the named results of :mod:`humanoid_balance.experiments.strike`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from humanoid_balance.core.rmc import AUX_READY_POSTURE, POSTURE_GAIN
from humanoid_balance.experiments.strike import (
    MOMENTUM_COMPONENTS,
    PAPER_FIRST_LIMIT,
    PAPER_FRICTION_TORQUE_LIMIT,
    PAPER_MAX_BALANCED_SPEED,
    PAPER_PEAK_DLZ_DT,
    RATIO_TARGET,
    StrikeResults,
    StrikeRuns,
    highest_balanced_speed,
    zmp_peak_by_phase,
    zmp_shift,
    zmp_vs_contact_cop,
)
from humanoid_balance.results import metric

Metrics = dict[str, dict[str, Any]]
#: Issue 11: the default controller's slip may exceed the no-RMC slip by at most this [m].
SLIP_ALLOWANCE_M = 0.001
#: Issue 11: the default controller's largest sole yaw [deg].
MAX_SOLE_YAW_DEG = 1.0


def _mm(value_m: float, digits: int = 2) -> float:
    return round(1e3 * value_m, digits)


def _max_abs(x: np.ndarray) -> float:
    return float(np.max(np.abs(x)))


def aux_shoulder_share(velocity_rad_s: np.ndarray) -> float:
    """Share of the aux arm's joint motion (RMS over the run) in its two shoulder joints."""
    aux = velocity_rad_s[:, 7:]
    return float(np.sqrt(np.sum(aux[:, :2] ** 2)) / np.sqrt(np.sum(aux ** 2)))


def _zmp_and_momentum_metrics(runs: StrikeRuns) -> Metrics:
    """Measured ZMP shift with and without RMC, held momentum, twist mode, margins."""
    shift_rmc, shift_off = zmp_shift(runs.sim_rmc), zmp_shift(runs.sim_off)
    twist = runs.twist_mode
    return {
        "zmp_peak_mm_rmc": metric(_mm(shift_rmc.total_m), "mm",
                                  target=round(RATIO_TARGET * 1e3 * shift_off.total_m, 2),
                                  better="lower"),
        "zmp_peak_mm_no_rmc": metric(_mm(shift_off.total_m), "mm"),
        "zmp_ratio_rmc_over_no_rmc": metric(round(shift_rmc.total_m / shift_off.total_m, 4), "",
                                            target=RATIO_TARGET, better="lower"),
        "zmp_sensor_vs_contact_cop_max_mm_rmc": metric(_mm(zmp_vs_contact_cop(runs.sim_rmc), 3),
                                                      "mm"),
        "zmp_sensor_vs_contact_cop_max_mm_no_rmc": metric(
            _mm(zmp_vs_contact_cop(runs.sim_off), 3), "mm"),
        "zmp_static_peak_mm_rmc": metric(_mm(shift_rmc.static_m), "mm"),
        "zmp_dynamic_peak_mm_rmc": metric(_mm(shift_rmc.dynamic_m), "mm"),
        "zmp_static_peak_mm_no_rmc": metric(_mm(shift_off.static_m), "mm"),
        "zmp_dynamic_peak_mm_no_rmc": metric(_mm(shift_off.dynamic_m), "mm"),
        "max_abs_selected_momentum": metric(_max_abs(runs.model_rmc.selected_momentum), "N m s",
                                            target=1e-9, better="lower"),
        "max_abs_selected_momentum_twist_mode": metric(
            _max_abs(twist.selected_momentum), "N m s", target=1e-9, better="lower"),
        "max_twist_error_while_no_limit_twist_mode": metric(
            float(np.max(twist.twist_error[twist.job_exact.astype(bool)])), "m/s, rad/s",
            target=1e-9, better="lower"),
        "max_twist_error_twist_mode": metric(float(np.max(twist.twist_error)), "m/s, rad/s"),
        "job_limited_cycles_twist_mode": metric(int(np.sum(~twist.job_exact.astype(bool))),
                                                "cycles"),
        "min_margin_mm_rmc": metric(_mm(shift_rmc.min_margin_m), "mm", target=0.0,
                                    better="higher"),
        "min_margin_mm_no_rmc": metric(_mm(shift_off.min_margin_m), "mm"),
        "model_zmp_min_margin_mm_no_rmc": metric(_mm(float(np.min(runs.model_off.zmp_margin_m))),
                                                 "mm", target=0.0, better="lower"),
        "model_zmp_min_margin_mm_rmc": metric(_mm(float(np.min(runs.model_rmc.zmp_margin_m))),
                                              "mm", target=0.0, better="higher"),
    }


def _held_momentum_metrics(runs: StrikeRuns) -> Metrics:
    """Peak |(Lx, Ly)| of each joint group's measured velocities in MuJoCo, with and without RMC.

    RMC holds the arms' Lx, Ly at zero in its commands; in the simulated robot the
    arms' servos track with some lag and the waist, legs and neck, held by stiff
    servos, give way under the arms' reaction: what these carry is what moves the
    measured ZMP beyond the CoM's projection with RMC.
    """
    out: Metrics = {}
    for label, run in (("rmc", runs.sim_rmc), ("no_rmc", runs.sim_off)):
        for group, series in run.held_momentum_by_group.items():
            out[f"sim_peak_lxy_{group}_{label}"] = metric(
                round(float(np.max(np.hypot(series[:, 0], series[:, 1]))), 4), "N m s")
    return out


def _phase_metrics(runs: StrikeRuns) -> Metrics:
    """Peak measured ZMP shift per phase of the job arm's motion, with and without RMC.

    ``zmp_peak_phase_rmc`` names the phase that sets ``zmp_peak_mm_rmc``.
    """
    out: Metrics = {}
    for label, run in (("rmc", runs.sim_rmc), ("no_rmc", runs.sim_off)):
        peaks = zmp_peak_by_phase(run)
        for phase, peak in peaks.items():
            out[f"zmp_peak_mm_{label}_{phase}"] = metric(_mm(peak), "mm")
        out[f"zmp_peak_phase_{label}"] = metric(max(peaks, key=peaks.__getitem__), "")
    return out


def _turning_metrics(runs: StrikeRuns, friction_limit: float) -> Metrics:
    """Peak |dLz/dt| and the turning margin per variant, against ``mu C / 2 G``."""
    limit = round(friction_limit, 3)
    return {
        "peak_abs_dLz_dt": metric(round(float(np.max(runs.model_rmc.turn_torque_n_m)), 3), "N m",
                                  target=limit, better="lower"),
        "peak_abs_dLz_dt_paper": metric(PAPER_PEAK_DLZ_DT, "N m"),
        "min_turn_margin_nm": metric(round(float(np.min(runs.model_rmc.turn_margin_n_m)), 3),
                                     "N m", target=0.0, better="higher"),
        "min_turn_margin_nm_lz_secondary": metric(
            round(float(np.min(runs.model_lz_secondary.turn_margin_n_m)), 3), "N m", target=0.0,
            better="higher"),
        "min_turn_margin_nm_lz_selected": metric(
            round(float(np.min(runs.model_lz_selected.turn_margin_n_m)), 3), "N m", target=0.0,
            better="higher"),
        "peak_abs_dLz_dt_no_rmc": metric(round(float(np.max(runs.model_off.turn_torque_n_m)), 3),
                                         "N m"),
        "peak_abs_dLz_dt_lz_selected": metric(
            round(float(np.max(runs.model_lz_selected.turn_torque_n_m)), 3), "N m", target=limit,
            better="lower"),
        "max_abs_selected_momentum_lz_selected": metric(
            _max_abs(runs.model_lz_selected.selected_momentum), "N m s"),
        "friction_torque_limit": metric(limit, "N m", target=PAPER_FRICTION_TORQUE_LIMIT),
    }


def _feet_metrics(runs: StrikeRuns) -> Metrics:
    """Slip, sole yaw and foot forces in MuJoCo, with and without RMC, Lz in S."""
    def yaw_deg(x: np.ndarray) -> float:
        return round(float(np.rad2deg(np.max(x))), 4)

    shift_lz = zmp_shift(runs.sim_lz_selected)
    return {
        "max_slip_mm": metric(_mm(float(np.max(runs.sim_rmc.slip_m)), 3), "mm",
                              target=_mm(float(np.max(runs.sim_off.slip_m)) + SLIP_ALLOWANCE_M, 3),
                              better="lower"),
        "max_slip_mm_no_rmc": metric(_mm(float(np.max(runs.sim_off.slip_m)), 3), "mm"),
        "max_slip_mm_lz_selected": metric(_mm(float(np.max(runs.sim_lz_selected.slip_m)), 3),
                                          "mm"),
        "max_sole_yaw_deg": metric(yaw_deg(runs.sim_rmc.yaw_rad), "deg",
                                   target=MAX_SOLE_YAW_DEG, better="lower"),
        "max_sole_yaw_deg_no_rmc": metric(yaw_deg(runs.sim_off.yaw_rad), "deg"),
        "max_sole_yaw_deg_lz_selected": metric(yaw_deg(runs.sim_lz_selected.yaw_rad), "deg"),
        "zmp_peak_mm_lz_selected": metric(_mm(shift_lz.total_m), "mm"),
        "min_margin_mm_lz_selected": metric(_mm(shift_lz.min_margin_m), "mm"),
        "min_foot_fz_n": metric(round(float(np.min(runs.sim_rmc.min_fz_n)), 2), "N", target=0.0,
                                better="higher"),
        "min_foot_fz_n_no_rmc": metric(round(float(np.min(runs.sim_off.min_fz_n)), 2), "N"),
    }


def _speed_metrics(results: StrikeResults) -> Metrics:
    """The highest balanced speed of the sweep per variant and the limit met first."""
    paper = highest_balanced_speed(results.sweep, lambda p: p.failures)
    no_turn = highest_balanced_speed(results.sweep, lambda p: p.failures_ignoring_turn)
    lz = highest_balanced_speed(results.sweep, lambda p: p.failures_lz_selected)
    lz2 = highest_balanced_speed(results.sweep, lambda p: p.failures_lz_secondary)
    return {
        "aux_shoulder_share": metric(round(aux_shoulder_share(results.runs.model_rmc.velocity_rad_s),
                                           4), "", better="higher"),
        "max_balanced_speed": metric(paper.speed_m_s, "m/s", target=PAPER_MAX_BALANCED_SPEED,
                                     better="higher"),
        "first_limit": metric(paper.first_limit),
        # the binding joints at the first speed above it (arm, joint, kind)
        "first_binding": metric(next((p.first_limited for p in results.sweep
                                      if p.speed_m_s > paper.speed_m_s), "none")),
        "max_balanced_speed_ignoring_turn": metric(no_turn.speed_m_s, "m/s",
                                                   target=PAPER_MAX_BALANCED_SPEED,
                                                   better="higher"),
        "first_limit_ignoring_turn": metric(no_turn.first_limit),
        "max_balanced_speed_lz_selected": metric(lz.speed_m_s, "m/s"),
        "max_balanced_speed_lz_secondary": metric(lz2.speed_m_s, "m/s",
                                                  target=PAPER_MAX_BALANCED_SPEED, better="higher"),
        "first_limit_lz_secondary": metric(lz2.first_limit),
        "first_limit_lz_selected": metric(lz.first_limit),
    }


def _lz_secondary_metrics(runs: StrikeRuns, friction_limit: float) -> Metrics:
    """Lz as a secondary row: turning, held rows, model ZMP, measured ZMP, slip and yaw."""
    model, sim = runs.model_lz_secondary, runs.sim_lz_secondary
    return {
        "peak_abs_dLz_dt_lz_secondary": metric(round(float(np.max(model.turn_torque_n_m)), 3),
                                               "N m", target=round(friction_limit, 3),
                                               better="lower"),
        "max_abs_selected_momentum_lz_secondary": metric(
            _max_abs(model.selected_momentum), "N m s", target=1e-9, better="lower"),
        "model_zmp_min_margin_mm_lz_secondary": metric(
            _mm(float(np.min(model.zmp_margin_m))), "mm", target=0.0, better="higher"),
        "zmp_peak_mm_lz_secondary": metric(_mm(zmp_shift(sim).total_m), "mm"),
        "max_slip_mm_lz_secondary": metric(_mm(float(np.max(sim.slip_m)), 3), "mm"),
        "max_sole_yaw_deg_lz_secondary": metric(round(float(np.rad2deg(np.max(sim.yaw_rad))), 4),
                                                "deg"),
    }


def _paper_form_metrics(runs: StrikeRuns) -> Metrics:
    """The paper's pure form (eq. 6 alone, aux arm from rest) beside the default controller."""
    model, sim, off = runs.model_paper, runs.sim_paper, runs.sim_off
    shift, shift_off = zmp_shift(sim), zmp_shift(off)
    return {
        "zmp_peak_mm_paper_form": metric(_mm(shift.total_m), "mm"),
        "zmp_ratio_paper_form": metric(round(shift.total_m / shift_off.total_m, 4), "",
                                       target=0.25, better="lower"),
        "min_margin_mm_paper_form": metric(_mm(shift.min_margin_m), "mm"),
        "max_slip_mm_paper_form": metric(_mm(float(np.max(sim.slip_m)), 3), "mm"),
        "max_sole_yaw_deg_paper_form": metric(round(float(np.rad2deg(np.max(sim.yaw_rad))), 4),
                                              "deg"),
        "peak_abs_dLz_dt_paper_form": metric(round(float(np.max(model.turn_torque_n_m)), 3),
                                             "N m"),
        "max_abs_selected_momentum_paper_form": metric(_max_abs(model.selected_momentum),
                                                       "N m s", target=1e-9, better="lower"),
    }


def _extra_metrics(results: StrikeResults) -> Metrics:
    """Slower strikes, the peak momentum components, and the MuJoCo runs of the sweep."""
    runs = results.runs
    out: Metrics = {}
    for v, peak in results.slower_peak_dlz_dt_n_m:
        out[f"peak_abs_dLz_dt_at_{v:.1f}_m_s"] = metric(
            round(peak, 3), "N m", target=round(results.friction_torque_limit_n_m, 3),
            better="lower")
    for part, series in (("job", runs.model_rmc.momentum_job), ("total", runs.model_rmc.momentum)):
        for i, c in enumerate(MOMENTUM_COMPONENTS):
            out[f"peak_abs_{c}_{part}"] = metric(round(_max_abs(series[:, i]), 4),
                                                 "N s" if c.startswith("P") else "N m s")
    for p in results.sim_sweep:
        v = p.speed_m_s
        out[f"sim_zmp_peak_mm_at_{v:.1f}_m_s"] = metric(_mm(p.shift.total_m), "mm")
        out[f"sim_min_margin_mm_at_{v:.1f}_m_s"] = metric(_mm(p.shift.min_margin_m), "mm")
        out[f"sim_max_slip_mm_at_{v:.1f}_m_s"] = metric(_mm(p.max_slip_m, 3), "mm")
        out[f"sim_min_foot_fz_n_at_{v:.1f}_m_s"] = metric(round(p.min_foot_fz_n, 2), "N")
    out["run_time_s"] = metric(round(results.run_time_s, 2), "s")
    return out


def _settings_metrics(results: StrikeResults) -> Metrics:
    """What was run: hand speed, job arm and the held rows of the RMC runs."""
    settings = results.settings
    return {
        "speed_m_s": metric(round(float(results.runs.model_rmc.speed_m_s), 4), "m/s"),
        "job_arm": metric(settings.job_arm),
        "selection": metric(",".join(settings.selection)),
        "aux_posture_gain": metric(POSTURE_GAIN, "1/s"),
        "aux_posture_deg": metric(",".join(f"{np.rad2deg(v):.1f}" for v in AUX_READY_POSTURE)),
    }


def strike_metrics(results: StrikeResults) -> Metrics:
    """Every metric of ``strike.json`` (names of shared RESULTS.md)."""
    runs = results.runs
    limit = results.friction_torque_limit_n_m
    return {
        **_settings_metrics(results),
        **_zmp_and_momentum_metrics(runs), **_turning_metrics(runs, limit), **_feet_metrics(runs),
        **_speed_metrics(results), **_lz_secondary_metrics(runs, limit),
        **_paper_form_metrics(runs), **_held_momentum_metrics(runs), **_phase_metrics(runs),
        "first_limit_paper": metric(PAPER_FIRST_LIMIT),
        "job_exact_all_cycles": metric(bool(runs.model_rmc.job_exact.all())),
        "balance_exact_all_cycles": metric(bool(runs.model_rmc.balance_exact.all())),
        **_extra_metrics(results),
    }
