"""The seed-000 strike's speed sweep: the highest balanced speed and which limit comes first.

:func:`sweep_point` runs the strike at model level at one speed with S = Lx, Ly, with
Lz added and with Lz secondary, and names the limits each reaches;
:func:`highest_balanced_speed` reads the sweep; :func:`sim_sweep_point` runs a speed
in MuJoCo.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from humanoid_balance.experiments.strike_model import (
    failures,
    first_limit,
    run_model,
    secondary_failures,
)
from humanoid_balance.experiments.strike_recording import ZmpShift, zmp_shift
from humanoid_balance.experiments.strike_sim import run_sim

#: the selections compared: the paper's S = Lx, Ly; Lz added to S; Lz as a secondary row
LZ_SELECTION: tuple[str, ...] = ("Lx", "Ly", "Lz")
LZ_SECONDARY: tuple[str, ...] = ("Lz",)
SWEEP_MIN_SPEED_M_S = 1.0
SWEEP_MAX_SPEED_M_S = 4.0


@dataclass(frozen=True)
class SweepPoint:
    """One speed of the model-level sweep.

    Attributes:
        speed_m_s: hand speed at the target [m/s].
        failures: limits reached with S = Lx, Ly and the controller's defaults (aux arm
            ready; see :func:`failures`).
        failures_ignoring_turn: the same without the turning-friction limit.
        failures_lz_selected: limits reached with S = Lx, Ly, Lz (the paper's pure form,
            as the Lz-secondary run).
        failures_lz_secondary: limits reached with Lz secondary (aux limits that only
            cost the secondary row not counted; "held rows not held" when they are not).
        peak_dlz_dt_n_m: peak |dLz/dt| [N m] with S = Lx, Ly.
        peak_dlz_dt_lz_selected_n_m: the same with S = Lx, Ly, Lz.
        peak_dlz_dt_lz_secondary_n_m: the same with Lz secondary.
        job_limit_ratio: the job arm trajectory's worst peak / limit.
        min_model_zmp_margin_mm: least model-ZMP margin [mm] with S = Lx, Ly.
        first_limited: with S = Lx, Ly, the first cycle a limit changed the command: time,
            phase, and each joint at its bound with the limit that binds (arm, joint, kind;
            :func:`~humanoid_balance.experiments.strike_model.first_limit`); ``none``.
    """

    speed_m_s: float
    failures: tuple[str, ...]
    failures_ignoring_turn: tuple[str, ...]
    failures_lz_selected: tuple[str, ...]
    failures_lz_secondary: tuple[str, ...]
    peak_dlz_dt_n_m: float
    peak_dlz_dt_lz_selected_n_m: float
    peak_dlz_dt_lz_secondary_n_m: float
    job_limit_ratio: float
    min_model_zmp_margin_mm: float
    first_limited: str = "none"


def sweep_speeds(step_m_s: float) -> np.ndarray:
    """The sweep's speeds [m/s]: 1.0 to 4.0 by ``step_m_s``, rounded to mm/s."""
    return np.asarray(np.round(np.arange(SWEEP_MIN_SPEED_M_S, SWEEP_MAX_SPEED_M_S + 1e-9,
                                         float(step_m_s)), 3))


def sweep_point(model: Any, polygon: np.ndarray, speed_m_s: float, rate_hz: float,
                job_arm: str = "right") -> SweepPoint:
    """The three model-level runs (S = Lx, Ly; + Lz; Lz secondary) at one speed and their limits."""
    from humanoid_balance.core.rmc import PAPER_SELECTION
    from humanoid_balance.core.strike_trajectory import StrikeTrajectory

    trajectory = StrikeTrajectory(model, arm=job_arm, target_speed=speed_m_s)
    ratios = trajectory.limit_ratios()
    r = run_model(model, polygon, speed=speed_m_s, selection=PAPER_SELECTION, balance=True,
                  rate_hz=rate_hz, extra=0.1, job_arm=job_arm)
    limit = first_limit(r, trajectory, rate_hz)
    r_lz = run_model(model, polygon, speed=speed_m_s, selection=LZ_SELECTION, balance=True,
                     rate_hz=rate_hz, extra=0.1, job_arm=job_arm, paper_form=True)
    r_lz2 = run_model(model, polygon, speed=speed_m_s, selection=PAPER_SELECTION, balance=True,
                      rate_hz=rate_hz, extra=0.1, secondary=LZ_SECONDARY,
                      job_arm=job_arm, paper_form=True)
    fails = failures(r, ratios)
    return SweepPoint(
        speed_m_s=float(speed_m_s), failures=tuple(fails),
        failures_ignoring_turn=tuple(f for f in fails if not f.startswith("turning")),
        failures_lz_selected=tuple(failures(r_lz, ratios)),
        failures_lz_secondary=tuple(secondary_failures(r_lz2, ratios)),
        peak_dlz_dt_n_m=float(np.max(r.turn_torque_n_m)),
        peak_dlz_dt_lz_selected_n_m=float(np.max(r_lz.turn_torque_n_m)),
        peak_dlz_dt_lz_secondary_n_m=float(np.max(r_lz2.turn_torque_n_m)),
        job_limit_ratio=ratios.worst[2],
        min_model_zmp_margin_mm=1e3 * float(np.min(r.zmp_margin_m)),
        first_limited="none" if limit is None else limit.describe())


@dataclass(frozen=True)
class HighestBalancedSpeed:
    """The highest speed of the sweep below every speed with a limit reached, and that limit.

    Attributes:
        speed_m_s: highest balanced speed [m/s] (0.0: already the lowest speed fails).
        first_limit: the limits reached at the first failing speed, ``; ``-joined.
    """

    speed_m_s: float
    first_limit: str


def highest_balanced_speed(points: Sequence[SweepPoint],
                           limits: Callable[[SweepPoint], Sequence[str]]) -> HighestBalancedSpeed:
    """The speed below the first sweep point where ``limits(point)`` is not empty."""
    best, first = 0.0, f"none up to {SWEEP_MAX_SPEED_M_S} m/s"
    for point in points:
        reached = limits(point)
        if reached:
            first = "; ".join(reached)
            break
        best = point.speed_m_s
    return HighestBalancedSpeed(best, first)


@dataclass(frozen=True)
class SimSweepPoint:
    """One MuJoCo run of the sweep (S = Lx, Ly).

    Attributes:
        speed_m_s: hand speed at the target [m/s].
        shift: the measured ZMP shift.
        max_slip_m: largest horizontal sole displacement [m].
        min_foot_fz_n: least vertical force of either foot [N].
    """

    speed_m_s: float
    shift: ZmpShift
    max_slip_m: float
    min_foot_fz_n: float


def sim_sweep_point(model: Any, speed_m_s: float, rate_hz: float,
                    job_arm: str = "right") -> SimSweepPoint:
    """The strike at ``speed_m_s`` in MuJoCo with RMC (S = Lx, Ly)."""
    from humanoid_balance.core.rmc import PAPER_SELECTION

    s = run_sim(model, speed=speed_m_s, selection=PAPER_SELECTION, balance=True, rate_hz=rate_hz,
                extra=0.2, job_arm=job_arm)
    return SimSweepPoint(speed_m_s, zmp_shift(s), float(np.max(s.slip_m)), float(np.min(s.min_fz_n)))

