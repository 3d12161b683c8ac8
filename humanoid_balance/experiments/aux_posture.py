"""Search of the aux arm's ready posture that lowers the strike's measured ZMP peak.

RMC holds the arms' ``Lx, Ly`` whatever posture the aux arm stands at; what is left
of the ZMP peak in MuJoCo is the upper body rocking on the waist's and legs' servos
under the arms' moving weight and reaction (``README``, issue 14), and how much it
rocks depends on where the aux arm's mass is and how far it must swing to hold the
rows. The ready posture (``arm_balance``'s ``aux_posture``,
:data:`~humanoid_balance.core.rmc.AUX_READY_POSTURE`) is a free design choice: this
module searches it.

Each trial is one MuJoCo strike (:func:`~humanoid_balance.experiments.strike.run_sim`,
about 1 s of CPU) per hand speed asked for: the cost is the measured ZMP peak [mm] at
the first speed (the paper's by default), plus penalties that keep the peaks at the
other speeds, the feet (slip, sole yaw) and the arms' clearance (:func:`arm_clearance_m`)
no worse than at the start posture, the held rows exact and the posture inside the aux
arm's limits less a margin. Clearance and exactness come from the same strikes
through the controller alone, driven by the job arm's joint velocities and by its hand
twist: a posture from which the aux arm runs into a joint limit cannot hold the rows (one
such posture, fitted without this, lost them in 174 cycles of the twist-driven strike).
The other speeds are there because a posture fitted to one speed alone can lose at
another (one went from 0.15 to 0.26 of the unbalanced peak at 2.5 m/s). The search is
scipy's Nelder-Mead (7 angles, no gradient: the peak is a maximum over a run and not
smooth in the angles).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from humanoid_balance.exceptions import ConfigurationError

#: cost [mm] per mm of slip, per mrad of sole yaw and per mm of another speed's peak beyond
#: the start posture's, per mm of the arms' clearance below it, per control cycle with the
#: |S [P; L]| above which a cycle's held rows count as not held [N m s, N s] (issue 32's bound)
HELD_ROWS_TOLERANCE = 1e-9
#: held rows inexact and per degree outside the search box: any of them costs more than the
#: peak can gain (a posture that loses the held rows is not run in MuJoCo)
PENALTY_MM_PER_UNIT = 10.0
#: default distance [deg] the searched angles keep from the aux arm's joint limits
LIMIT_MARGIN_DEG = 10.0
#: default size [deg] of the initial simplex's steps
STEP_DEG = 5.0
#: the fewest trials a search makes: its initial simplex, the start and one step per angle
MIN_TRIALS = 8
#: the frames along an arm (``{side}_...``) whose segments stand for it in the clearance
ARM_CHAIN = ("shoulder_pitch", "elbow", "wrist_roll", "hand")
#: control cycles between two clearance samples (10 ms at 500 Hz)
CLEARANCE_EVERY = 5


@dataclass(frozen=True)
class PostureTrial:
    """One trial: the strikes with the aux arm standing at ``posture_deg``.

    Attributes:
        posture_deg: the aux arm's ready posture [deg] (right-arm signs: shoulder pitch,
            roll, yaw, elbow, wrist yaw, roll, pitch), inside the search box.
        peak_mm: peak measured ZMP shift from standing [mm] at the first speed.
        slip_mm: largest horizontal sole displacement [mm] (of every speed's run).
        yaw_mrad: largest sole yaw change [mrad] (of every speed's run).
        phase_peaks_mm: the peak per phase of the job arm's motion [mm] at the first speed.
        other_peaks_mm: the peaks [mm] at the other speeds, in their order.
        clearance_mm: the least distance [mm] between the two arms' centre lines over the
            strikes (every speed's), :func:`arm_clearance_m`.
        inexact_cycles: control cycles, over the controller-only strikes (joint- and
            twist-driven, every speed), in which the aux arm's limits left the held rows
            inexact.
        cost: ``peak_mm`` plus the penalties [mm].
    """

    posture_deg: tuple[float, ...]
    peak_mm: float
    slip_mm: float
    yaw_mrad: float
    phase_peaks_mm: dict[str, float]
    other_peaks_mm: tuple[float, ...] = ()
    clearance_mm: float = math.nan
    inexact_cycles: int = 0
    cost: float = math.nan


@dataclass
class PostureSearch:
    """The search's result: the start, the best trial and every trial in order.

    ``speeds_m_s``: the hand speeds of each trial (None: the paper's), the first one's
    peak the objective; ``no_rmc_peaks_mm``: the strike's peak without RMC at each.
    """

    start: PostureTrial
    best: PostureTrial
    trials: list[PostureTrial] = field(default_factory=list)
    speeds_m_s: tuple[float | None, ...] = (None,)
    no_rmc_peaks_mm: tuple[float, ...] = ()

    @property
    def no_rmc_peak_mm(self) -> float:
        """The peak without RMC [mm] at the first speed."""
        return self.no_rmc_peaks_mm[0]

    def ratio(self, trial: PostureTrial) -> float:
        """``trial``'s peak over the peak without RMC (the strike experiment's ratio)."""
        return trial.peak_mm / self.no_rmc_peak_mm

    def other_ratios(self, trial: PostureTrial) -> tuple[float, ...]:
        """The same ratio at the other speeds."""
        return tuple(p / o for p, o in zip(trial.other_peaks_mm, self.no_rmc_peaks_mm[1:],
                                           strict=True))


def search_box(model: Any, job_arm: str = "right",
               margin_deg: float = LIMIT_MARGIN_DEG) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds [deg] of the aux arm's posture in right-arm signs.

    The aux arm's joint limits, mirrored where :data:`~humanoid_balance.core.strike_trajectory.
    MIRRORED` says a left joint's sign flips, less ``margin_deg`` on each side.
    """
    from humanoid_balance.core.strike_trajectory import ARM_JOINTS, MIRRORED

    aux = "left" if job_arm == "right" else "right"
    lower, upper = model.position_limits([f"{aux}_{j}" for j in ARM_JOINTS])
    lo, hi = np.rad2deg(lower), np.rad2deg(upper)
    if aux == "left":
        flip = np.array([j in MIRRORED for j in ARM_JOINTS])
        lo, hi = np.where(flip, -hi, lo), np.where(flip, -lo, hi)
    lo, hi = lo + margin_deg, hi - margin_deg
    if np.any(lo >= hi):
        raise ConfigurationError(f"margin_deg={margin_deg} leaves no room inside the aux arm's "
                                 "joint limits: choose a smaller margin")
    return lo, hi


def segment_distance(p0: np.ndarray, p1: np.ndarray, q0: np.ndarray, q1: np.ndarray) -> float:
    """Least distance [m] between the segments ``p0 p1`` and ``q0 q1`` (3-vectors).

    The closest points' parameters minimise ``|p0 + s u - q0 - t v|`` over ``s, t`` in
    ``[0, 1]``: the unconstrained optimum clamped, then each parameter re-solved with the
    other fixed and clamped (the standard closed form for segments, exact).

    Not coal (pinocchio's collision library, which the identification's clearance check
    uses with the lunar arm's collision geometry): the humanoid URDF has no collision
    geometry, and a coal distance between two zero-radius capsules placed on the segments
    each sample gives the same value (within 1e-16 on 2000 random pairs, and the test
    compares them) at about 10 times the cost (207 against 21 us per pair).
    """
    u, v, w = p1 - p0, q1 - q0, p0 - q0
    a, b, c = float(u @ u), float(u @ v), float(v @ v)
    d, e = float(u @ w), float(v @ w)
    denom = a * c - b * b
    s = min(max((b * e - c * d) / denom, 0.0), 1.0) if denom > 1e-12 * a * c else 0.0
    t = min(max((b * s + e) / c, 0.0), 1.0) if c > 0 else 0.0
    s = min(max((b * t - d) / a, 0.0), 1.0) if a > 0 else 0.0
    return float(np.linalg.norm(w + s * u - t * v))


def arm_clearance_m(model: Any, run: Any) -> float:
    """Least distance [m] between the two arms over a model-level strike.

    Each arm is the chain of segments through its :data:`ARM_CHAIN` frames (shoulder,
    elbow, wrist, hand), at the commanded positions every :data:`CLEARANCE_EVERY` cycles
    of ``run`` (a :class:`~humanoid_balance.experiments.strike.ModelRun`). Centre lines
    only: the links' own thickness comes off it (the simulation has no arm collisions).
    """
    ids = {side: [model.frame_id(f"{side}_{f}") for f in ARM_CHAIN] for side in ("left", "right")}
    least = math.inf
    for k in range(0, len(run.times_s), CLEARANCE_EVERY):
        q = model.configuration(dict(zip(run.names, run.position_rad[k], strict=True)))
        left, right = ([t[:3, 3] for t in model.frame_transforms(ids[side], q)]
                       for side in ("left", "right"))
        for i in range(len(ARM_CHAIN) - 1):
            for j in range(len(ARM_CHAIN) - 1):
                least = min(least, segment_distance(left[i], left[i + 1], right[j], right[j + 1]))
    return least


def controller_checks(model: Any, posture_deg: Sequence[float], *,
                      speeds: Sequence[float | None] = (None,), rate_hz: float = 500.0,
                      job_arm: str = "right") -> tuple[float, int]:
    """The arms' clearance [mm] and the cycles with the held rows inexact, over the strikes
    at ``speeds`` through the controller alone, driven by the job arm's joint velocities and
    by its hand twist, the aux arm standing at ``posture_deg``."""
    from humanoid_balance.experiments.strike import PAPER_ROWS, run_model

    rad = tuple(np.deg2rad([float(v) for v in posture_deg]))
    alone = [run_model(model, None, speed=speed, selection=PAPER_ROWS, balance=True,
                       rate_hz=rate_hz, job_arm=job_arm, aux_posture=rad, twist_mode=twist)
             for speed in speeds for twist in (False, True)]
    # the held rows themselves (the aux arm's command need not be eq. 6's minimum-norm
    # solution: where the job arm's motion is limited it is the bounded one that holds them)
    return (min(arm_clearance_m(model, run) for run in alone) * 1e3,
            sum(int(np.count_nonzero(np.max(np.abs(run.selected_momentum), axis=1)
                                     > HELD_ROWS_TOLERANCE)) for run in alone))


def trial(model: Any, posture_deg: Sequence[float], *,
          speeds: Sequence[float | None] = (None,), rate_hz: float = 500.0,
          job_arm: str = "right", checks: tuple[float, int] | None = None) -> PostureTrial:
    """MuJoCo strikes with RMC (the paper's rows) at each of ``speeds`` [m/s] (None: the
    paper's), the aux arm standing at ``posture_deg``, and :func:`controller_checks` (or
    ``checks``, when they were made already)."""
    from humanoid_balance.experiments.strike import (
        PAPER_ROWS,
        run_sim,
        zmp_peak_by_phase,
        zmp_shift,
    )

    posture = tuple(float(v) for v in posture_deg)
    rad = tuple(np.deg2rad(posture))
    runs = [run_sim(model, speed=speed, selection=PAPER_ROWS, balance=True, rate_hz=rate_hz,
                    job_arm=job_arm, aux_posture=rad)
            for speed in speeds]
    clearance, inexact = checks if checks is not None else controller_checks(
        model, posture, speeds=speeds, rate_hz=rate_hz, job_arm=job_arm)
    peaks = [zmp_shift(run).total_m * 1e3 for run in runs]
    return PostureTrial(posture, peaks[0],
                        max(float(np.nanmax(run.slip_m)) for run in runs) * 1e3,
                        max(float(np.nanmax(np.abs(run.yaw_rad))) for run in runs) * 1e3,
                        {k: v * 1e3 for k, v in zmp_peak_by_phase(runs[0]).items()},
                        tuple(peaks[1:]), clearance, inexact)


def search(model: Any, start_deg: Sequence[float], *,
           speeds: Sequence[float | None] = (None,), rate_hz: float = 500.0,
           job_arm: str = "right", max_trials: int = 200,
           step_deg: float = STEP_DEG, margin_deg: float = LIMIT_MARGIN_DEG,
           progress: Callable[[int, PostureTrial, PostureTrial], None] | None = None,
           ) -> PostureSearch:
    """Nelder-Mead over the aux arm's ready posture from ``start_deg``, ``max_trials`` strikes.

    Args:
        model: the humanoid (fixed base, ``world_frame="W"``).
        start_deg: the posture [deg] to start from (right-arm signs; inside the box).
        speeds: hand speeds at the target [m/s] (None: the paper's): the first one's peak
            is the objective, the others' may not grow beyond the start's.
        rate_hz: controller rate [Hz].
        job_arm: the striking arm.
        max_trials: MuJoCo strikes (>= :data:`MIN_TRIALS`); Nelder-Mead stops at the end
            of the iteration that reaches it, a few trials later at most.
        step_deg: the initial simplex's step on each angle [deg] (> 0).
        margin_deg: distance [deg] kept from the joint limits.
        progress: called after each trial with (number, trial, best so far).

    Raises:
        ConfigurationError: a bad count, step or start posture.
    """
    from scipy.optimize import minimize

    from humanoid_balance.experiments.strike import PAPER_ROWS, run_sim, zmp_shift

    speeds = tuple(speeds)
    start, lo, hi = _checked_start(model, start_deg, speeds=speeds, job_arm=job_arm,
                                   max_trials=max_trials, step_deg=step_deg,
                                   margin_deg=margin_deg)
    trials: list[PostureTrial] = []
    first: list[PostureTrial] = []

    def cost(x: np.ndarray) -> float:
        inside: list[float] = np.clip(x, lo, hi).tolist()
        clearance_mm, inexact = controller_checks(model, inside, speeds=speeds,
                                                  rate_hz=rate_hz, job_arm=job_arm)
        if first and inexact > 0:
            # the aux arm's limits lose the held rows: no strike in MuJoCo, and a cost above
            # the start's by the penalties
            t = PostureTrial(tuple(float(v) for v in inside), math.nan, math.nan, math.nan, {},
                             tuple(math.nan for _ in first[0].other_peaks_mm), clearance_mm,
                             inexact)
            return record(replace(t, cost=first[0].peak_mm + PENALTY_MM_PER_UNIT * lost(t, x)))
        t = trial(model, inside, speeds=speeds, rate_hz=rate_hz, job_arm=job_arm,
                  checks=(clearance_mm, inexact))
        if not first:  # the start: it sets the bounds
            first.append(t)
        b = first[0]
        over = (max(0.0, t.slip_mm - b.slip_mm) + max(0.0, t.yaw_mrad - b.yaw_mrad)
                + sum(max(0.0, p - p0) for p, p0 in zip(t.other_peaks_mm, b.other_peaks_mm,
                                                        strict=True)) + lost(t, x))
        return record(replace(t, cost=t.peak_mm + PENALTY_MM_PER_UNIT * over))

    def lost(t: PostureTrial, x: np.ndarray) -> float:
        """The penalties every trial pays: clearance below the start's, inexact cycles,
        degrees outside the box."""
        return (max(0.0, first[0].clearance_mm - t.clearance_mm) + t.inexact_cycles
                + float(np.abs(x - np.clip(x, lo, hi)).sum()))

    def record(t: PostureTrial) -> float:
        trials.append(t)
        if progress is not None:
            progress(len(trials), t, min(trials, key=lambda s: s.cost))
        return t.cost

    simplex = np.vstack([start, start + step_deg * np.eye(7)])
    minimize(cost, start, method="Nelder-Mead",
             options={"maxfev": max_trials, "initial_simplex": simplex, "xatol": 0.5,
                      "fatol": 0.05})
    off = [zmp_shift(run_sim(model, speed=speed, selection=PAPER_ROWS, balance=False,
                             rate_hz=rate_hz, job_arm=job_arm)).total_m * 1e3
           for speed in speeds]
    return PostureSearch(trials[0], min(trials, key=lambda s: s.cost), trials, speeds,
                         tuple(off))


def _checked_start(model: Any, start_deg: Sequence[float], *, speeds: tuple[float | None, ...],
                   job_arm: str, max_trials: int, step_deg: float,
                   margin_deg: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`search`'s start posture [deg] as an array and the search box (lower, upper)
    [deg], once its arguments are checked.

    Raises:
        ConfigurationError: a bad speed, count, step or start posture.
    """
    if not speeds or any(s is not None and not (math.isfinite(s) and s > 0) for s in speeds):
        raise ConfigurationError(f"speeds {list(speeds)}: expected hand speeds > 0 m/s")
    start = np.asarray(start_deg, dtype=float)
    if start.shape != (7,) or not np.isfinite(start).all():
        raise ConfigurationError(f"start posture {list(start_deg)}: expected 7 finite angles [deg]")
    if max_trials < MIN_TRIALS or not (math.isfinite(step_deg) and step_deg > 0):
        raise ConfigurationError(
            f"max_trials={max_trials} must be >= {MIN_TRIALS} (the start and one step per "
            f"angle) and step_deg={step_deg} finite and > 0")
    lo, hi = search_box(model, job_arm, margin_deg)
    outside = [i for i in range(7) if not lo[i] <= start[i] <= hi[i]]
    if outside:
        raise ConfigurationError(
            f"start posture angles {outside} lie outside the search box {lo.tolist()} .. "
            f"{hi.tolist()} deg (the aux arm's limits less {margin_deg} deg)")
    return start, lo, hi
