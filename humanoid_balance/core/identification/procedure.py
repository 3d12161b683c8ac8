"""The whole identification from recorded sweeps: pair, build H, estimate (seed 004, sec. 2-4).

A :class:`SweepRecording` holds the samples of one joint's sweep (positions,
measured torques, pass direction); :func:`identify` cancels friction by
pairing each sweep's forward and backward passes (eq. 5), stacks the
regressor of the chosen parameter set and solves eq. 10 (or the global
least squares), with the estimator of ``ESTIMATORS[method]``.
:func:`predict` gives the torques of the estimate at any gravity (``G``
scales with g); :func:`results_document` is the results file's content that the
``identification_executor`` node and ``humanoid-balance identify`` write
(:func:`humanoid_balance.results.write_yaml`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from humanoid_balance.core.identification import METHODS
from humanoid_balance.core.identification.estimation import (
    Estimate,
    block_condition_numbers,
    estimate_global,
    estimate_sequential,
    estimate_weighted,
    pair_passes,
)
from humanoid_balance.core.identification.regressor import GravityRegressor, ParameterSet
from humanoid_balance.exceptions import InsufficientSamplesError, InvalidInputError

#: an estimator: (parameter set, regressors (N, n, p), friction-free torques [N m] (N, n),
#: sweeping joint of each sample (N,)) -> estimate
Estimator = Callable[[ParameterSet, np.ndarray, np.ndarray, np.ndarray], Estimate]


def _global(pset: ParameterSet, h: np.ndarray, tau: np.ndarray, sweep_joint: np.ndarray
            ) -> Estimate:
    """:func:`estimate_global` as an :data:`Estimator` (it uses every sample of every sweep)."""
    return estimate_global(pset, h, tau)


#: the estimator of each of ``METHODS``
ESTIMATORS: dict[str, Estimator] = {
    "sequential": estimate_sequential,
    "global": _global,
    "weighted": estimate_weighted,
}


@dataclass
class SweepRecording:
    """Samples of one joint's sweep.

    Attributes:
        joint: 0-based index of the sweeping joint.
        positions: joint positions [rad], (N, n).
        torques: measured joint torques [N m], (N, n).
        direction: +1 on the forward pass, -1 on the backward pass, (N,).
    """

    joint: int
    positions: list[np.ndarray] = field(default_factory=list)
    torques: list[np.ndarray] = field(default_factory=list)
    direction: list[float] = field(default_factory=list)

    def extend(self, positions: np.ndarray | Sequence[np.ndarray],
               torques: np.ndarray | Sequence[np.ndarray], direction: float) -> None:
        """Append the samples of one pass (non-finite samples are refused), checked at once:
        a simulated sweep records a sample every millisecond, and a per-sample check was a
        sixth of it."""
        q = np.array(positions, dtype=float)
        tau = np.array(torques, dtype=float)
        if q.shape[0] != tau.shape[0]:
            raise InvalidInputError(f"{q.shape[0]} positions and {tau.shape[0]} torques in one pass")
        bad = ~(np.isfinite(q).all(axis=-1) & np.isfinite(tau).all(axis=-1)) if q.size else []
        if np.any(bad):
            k = int(np.flatnonzero(bad)[0])
            raise InvalidInputError(f"sample of joint {self.joint + 1}'s sweep is not finite: "
                                    f"q={q[k]}, tau={tau[k]}")
        self.positions.extend(q)
        self.torques.extend(tau)
        self.direction.extend([float(direction)] * len(q))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions (N, n), torques (N, n), direction (N,)."""
        return np.array(self.positions), np.array(self.torques), np.array(self.direction)


def block_mean(a: np.ndarray, k: int) -> np.ndarray:
    """Means of consecutive blocks of k rows (the last, shorter block dropped)."""
    m = (len(a) // k) * k
    return np.asarray(a[:m].reshape(m // k, k, *a.shape[1:]).mean(axis=1))


def paired_samples(recordings: Sequence[SweepRecording], pair_friction: bool = True,
                   average: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Friction-free samples of every sweep: positions, torques, sweep joint.

    With ``pair_friction`` the forward and backward passes are paired (eq. 5);
    without, the raw samples of both passes are used as if friction were zero
    (the paper's ablation). ``average`` > 1 replaces each block of that many
    consecutive friction-free samples by its mean (at 1 kHz and 3 deg/s a
    block of 10 spans 0.03 deg, over which G is linear to rounding): the
    noise is averaged as before, with a tenth of the regressor evaluations.

    Raises:
        InvalidInputError: ``average`` < 1.
        InsufficientSamplesError: a sweep lacks a forward or a backward pass.
    """
    if average < 1:
        raise InvalidInputError(f"average={average}: expected a block of >= 1 samples")
    qs, taus, joints = [], [], []
    for rec in recordings:
        q, tau, direction = rec.arrays()
        fwd, bwd = direction > 0, direction < 0
        if pair_friction:
            if fwd.sum() < 2 or bwd.sum() < 2:
                raise InsufficientSamplesError(
                    f"friction pairing of joint {rec.joint + 1}'s sweep",
                    int(min(fwd.sum(), bwd.sum())), ["forward pass", "backward pass"])
            paired = pair_passes(rec.joint, q[fwd], tau[fwd], q[bwd], tau[bwd])
            q, tau = paired.positions, paired.torques
        if average > 1:
            if pair_friction:
                q, tau = block_mean(q, average), block_mean(tau, average)
            else:  # keep the passes apart: a block must not straddle the turn
                parts = [(q[m], tau[m]) for m in (fwd, bwd)]
                q = np.concatenate([block_mean(p[0], average) for p in parts])
                tau = np.concatenate([block_mean(p[1], average) for p in parts])
        qs.append(q)
        taus.append(tau)
        joints.append(np.full(len(q), rec.joint))
    return np.concatenate(qs), np.concatenate(taus), np.concatenate(joints)


def identify(
    recordings: Sequence[SweepRecording], regressor: GravityRegressor, pset: ParameterSet,
    *, pair_friction: bool = True, method: str = "sequential", average: int = 1,
) -> Estimate:
    """Estimate ``pset``'s parameters from the sweeps (eqs. 5 and 10).

    Args:
        recordings: one recording per sweeping joint.
        regressor: the arm's gravity regressor, at the gravity of the recordings.
        pset: parameter set to estimate.
        pair_friction: cancel friction with forward/backward pairs (eq. 5).
        method: ``sequential`` (eq. 10, each joint from its own sweep), ``global``
            or ``weighted`` (global, each joint's rows weighted by its noise).
        average: average blocks of this many consecutive friction-free samples.
    """
    if method not in METHODS:
        raise InvalidInputError(f"method={method!r}: expected one of {', '.join(METHODS)}")
    q, tau, joint = paired_samples(recordings, pair_friction, average)
    h = pset.regressor(regressor.stacked(q))
    estimate = ESTIMATORS[method](pset, h, tau, joint)
    return dataclasses.replace(estimate,
                               condition_numbers=block_condition_numbers(pset, h, joint))


def prediction_regressor(regressor: GravityRegressor, pset: ParameterSet, positions: np.ndarray,
                         gravity: float | None = None) -> np.ndarray:
    """``H`` (N, n, p) at ``positions`` scaled to ``gravity`` [m/s^2]: torques = ``H @ phi``.

    Build it once to predict the torques of several estimates along the same path.
    """
    scale = 1.0 if gravity is None else gravity / regressor.gravity
    return np.asarray(pset.regressor(regressor.stacked(positions)) * scale)


def predict(estimate_values: np.ndarray, regressor: GravityRegressor, pset: ParameterSet,
            positions: np.ndarray, gravity: float | None = None) -> np.ndarray:
    """Gravity torques [N m] (N, n) of the estimate at ``positions``, at ``gravity`` [m/s^2].

    Every gravity torque is proportional to g, so moving the estimate to
    another gravity (Earth -> Moon) scales it by ``gravity / regressor.gravity``.
    """
    return np.asarray(prediction_regressor(regressor, pset, positions, gravity) @ estimate_values)


def segment_sweeps(
    time_s: np.ndarray, positions: np.ndarray, velocities: np.ndarray, torques: np.ndarray,
    *, moving_rad_s: float = np.radians(0.5), trim_s: float = 0.5, max_turn_s: float = 0.25,
) -> list[SweepRecording]:
    """Cut a joint-state stream into eq. 11 sweeps (for bags and the executor alike).

    A *run* is a stretch of samples where exactly one joint moves
    (``|qd| > moving_rad_s``) in one direction and every other joint is
    still; its first ``trim_s`` seconds (the servo's acceleration) are
    dropped. Two consecutive runs of the same joint in opposite directions,
    the second starting within ``max_turn_s`` of the first one's end (a
    turn, not a rest), form one sweep (forward = the first run). Runs that
    do not pair (an approach move of a single joint, followed by the rest
    before its sweep; a cancelled sweep) are left out.

    Args:
        time_s: sample times [s], (N,).
        positions: joint positions [rad], (N, n).
        velocities: joint velocities [rad/s], (N, n).
        torques: joint torques [N m], (N, n).
        moving_rad_s: speed above which a joint counts as moving [rad/s].
        trim_s: time dropped at the start of each run [s].
        max_turn_s: longest pause between the two passes of a sweep [s].
    """
    t = np.asarray(time_s, float)
    q, qd, tau = (np.asarray(a, float) for a in (positions, velocities, torques))
    if not (q.shape == qd.shape == tau.shape and q.ndim == 2 and t.shape == (q.shape[0],)):
        raise InvalidInputError(f"stream shapes differ: t {t.shape}, q {q.shape}, qd {qd.shape}, "
                                f"tau {tau.shape}")
    moving = np.abs(qd) > moving_rad_s
    single = moving.sum(axis=1) == 1
    joint = np.where(single, np.argmax(moving, axis=1), -1)
    sign = np.where(single, np.sign(qd[np.arange(len(t)), np.maximum(joint, 0)]), 0.0)
    key = joint * 2 + (sign > 0)
    key[~single] = -1
    # (joint, direction, kept samples, first and last time of the whole run)
    runs: list[tuple[int, float, np.ndarray, float, float]] = []
    start = 0
    for k in range(1, len(t) + 1):
        if k == len(t) or key[k] != key[start]:
            if key[start] >= 0:
                idx = np.arange(start, k)
                idx = idx[t[idx] >= t[start] + trim_s]
                if idx.size >= 2:
                    runs.append((int(joint[start]), float(sign[start]), idx, t[start], t[k - 1]))
            start = k
    recordings = []
    i = 0
    while i + 1 < len(runs):
        (j0, s0, idx0, _, end0), (j1, s1, idx1, start1, _) = runs[i], runs[i + 1]
        if j0 == j1 and s0 == -s1 and start1 - end0 <= max_turn_s:
            rec = SweepRecording(j0)
            for idx, direction in ((idx0, 1.0), (idx1, -1.0)):
                rec.extend(q[idx], tau[idx], direction)
            recordings.append(rec)
            i += 2
        else:
            i += 1
    return recordings


#: an interval longer than this many times the nominal one is a gap (samples or commands)
GAP_FACTOR = 2.0
#: share of gaps above which a run's samples or commands count as irregular
MAX_GAP_SHARE = 0.02
#: commands whose median interval exceeds this many times the period are too slow
SLOW_FACTOR = 1.5
#: s; a sample received this long after its stamp is late (the arm moved on meanwhile)
LATE_S = 0.05
#: share of late samples above which a run counts as fed late
MAX_LATE_SHARE = 0.02


class TimingQuality(NamedTuple):
    """How regularly a run's joint states came and its commands went out.

    Eq. 5 cancels friction by pairing passes at the same angle and the same
    constant speed; an arm commanded in stops and starts, or measured in
    bursts, breaks that assumption and biases the estimate without any error
    being raised. These figures say when that happened.

    Attributes:
        samples: joint-state samples recorded.
        sample_interval_s: median interval between their stamps [s].
        sample_gap_share: share of intervals longer than ``GAP_FACTOR`` times the median.
        longest_sample_gap_s: longest interval [s].
        late_share: share of samples received more than ``LATE_S`` after their stamp.
        command_gap_share: share of command intervals longer than ``GAP_FACTOR`` times the
            command period (or their median interval, when longer).
        longest_command_gap_s: longest command interval [s].
        warnings: what to suspect, one sentence each (empty: a regular run).
    """

    samples: int
    sample_interval_s: float
    sample_gap_share: float
    longest_sample_gap_s: float
    late_share: float
    command_gap_share: float
    longest_command_gap_s: float
    warnings: tuple[str, ...]


def _gaps(times: np.ndarray, nominal: float) -> tuple[float, float]:
    """Share of intervals over ``GAP_FACTOR * nominal`` and the longest interval [s]."""
    intervals = np.diff(times)
    if intervals.size == 0 or not nominal > 0.0:
        return 0.0, 0.0
    return float(np.mean(intervals > GAP_FACTOR * nominal)), float(intervals.max())


def timing_quality(stamps_s: np.ndarray, received_s: np.ndarray, command_times_s: np.ndarray,
                   command_period_s: float) -> TimingQuality:
    """Regularity of a run's samples (stamps, receipt times) and commands (their times).

    Args:
        stamps_s: the samples' stamps [s], in order.
        received_s: when each sample was received, on the same clock [s].
        command_times_s: when each command was sent [s].
        command_period_s: the nominal command period [s].
    """
    stamps, received = np.asarray(stamps_s, float), np.asarray(received_s, float)
    commands = np.asarray(command_times_s, float)
    if stamps.shape != received.shape:
        raise InvalidInputError(f"{stamps.shape=} but {received.shape=}: one receipt time per "
                                "sample is expected")
    interval = float(np.median(np.diff(stamps))) if stamps.size > 1 else 0.0
    sample_gaps, longest_sample = _gaps(stamps, interval)
    late = float(np.mean(received - stamps > LATE_S)) if stamps.size else 0.0
    command_interval = float(np.median(np.diff(commands))) if commands.size > 1 else 0.0
    command_gaps, longest_command = _gaps(commands, max(command_period_s, command_interval))
    warnings = []
    if sample_gaps > MAX_GAP_SHARE:
        warnings.append(
            f"/joint_states came irregularly: {100 * sample_gaps:.1f} % of the intervals exceed "
            f"{GAP_FACTOR:g}x the median {1e3 * interval:.1f} ms (longest "
            f"{1e3 * longest_sample:.0f} ms); the friction pairing (eq. 5) may be biased: check "
            "the drivers' rate and the load of the machine, then run again")
    if late > MAX_LATE_SHARE:
        warnings.append(
            f"/joint_states came late: {100 * late:.1f} % arrived more than {1e3 * LATE_S:.0f} ms "
            "after their stamp; check the load of the machine and the clocks, then run again")
    if command_interval > SLOW_FACTOR * command_period_s:
        warnings.append(
            f"commands went out every {1e3 * command_interval:.1f} ms, not every "
            f"{1e3 * command_period_s:.1f} ms: the node could not keep up, or its clock (/clock "
            "with use_sim_time) ticks slower; lower `rate`, then run again")
    if command_gaps > MAX_GAP_SHARE:
        warnings.append(
            f"commands went out irregularly: {100 * command_gaps:.1f} % of the periods exceed "
            f"{GAP_FACTOR:g}x {1e3 * max(command_period_s, command_interval):.1f} ms (longest "
            f"{1e3 * longest_command:.0f} ms): the arm swept in stops and starts; lower `rate` or "
            "the load of the machine, then run again")
    return TimingQuality(int(stamps.size), interval, sample_gaps, longest_sample, late,
                         command_gaps, longest_command, tuple(warnings))


def results_document(estimate: Estimate, joints: Sequence[str], gravity: float,
                     sweeps: int, urdf: str = "") -> dict[str, object]:
    """The results as plain data (for YAML): names, values, units, std, per-joint fit RMSE.

    ``joints`` (chain order) and ``urdf`` ("": the package's lunar arm) say which model the
    parameters belong to: ``humanoid-balance predict`` rebuilds the regressor from them.
    """
    return {
        "gravity_m_s2": float(gravity),
        "joints": [str(j) for j in joints],
        "urdf": str(urdf),
        "sweeps": int(sweeps),
        "samples": int(estimate.samples),
        "parameters": [
            {"name": n, "value": float(v), "unit": u, "std": float(s)}
            for n, v, u, s in zip(estimate.names, estimate.values, estimate.units, estimate.std,
                                  strict=True)],
        "fit_rmse_n_m": {j: float(r) for j, r in zip(joints, estimate.rmse_per_joint, strict=True)},
        # per joint, its block's conditioning over its sweep (null: no parameter of its own)
        "condition_numbers": {j: (None if math.isnan(c) else float(c))
                              for j, c in zip(joints, estimate.condition_numbers, strict=False)},
    }
