"""Least-squares estimation of gravity parameters (seed 004, eqs. 5, 9, 10).

- :func:`pair_passes`: friction cancellation, eq. 5: two passes through the
  same q with opposite velocities, ``(tau_fwd + tau_bwd) / 2 = G(q)``.
- :func:`estimate_sequential`: back-to-front least squares, eq. 10: the
  regressor is block upper triangular (eq. 9), so joint n's parameters come
  from joint n's torque alone, then joint i's from
  ``tau_i - sum_{j > i} H_ij phi_j*``.
- :func:`estimate_global`: one least squares over all joints' torques.
- :func:`estimate_weighted`: the global least squares with each joint's
  rows weighted by the inverse of its noise, estimated from a first fit
  (feasible generalised least squares; not in the paper, see its docstring).

Both return an :class:`Estimate` with residuals and parameter standard
deviations ``sqrt(diag(sigma^2 (H^T H)^-1))``, ``sigma^2 = |r|^2 / (N - p)``.
:func:`block_condition_numbers` says how well each joint's sweep excited its own
parameters (eq. 9's diagonal blocks), and :func:`fit_warnings` names the joints
whose fit is ill-conditioned: a fit that passes the rank check can still amplify
the torque noise many times into those parameters.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

from humanoid_balance.core.identification.regressor import ParameterSet
from humanoid_balance.exceptions import (
    InsufficientSamplesError,
    InvalidInputError,
    UnidentifiableParametersError,
)


@dataclass(frozen=True)
class Estimate:
    """Estimated parameters with their quality.

    Attributes:
        names: parameter names.
        units: parameter units.
        values: estimates ``phi*``.
        std: standard deviations of the estimates (same units).
        rmse_per_joint: RMS of the torque residual of each joint [N m].
        samples: number of configurations used.
        condition_numbers: per joint, the condition number of its own block over its
            sweep's samples (:func:`block_condition_numbers`; NaN for a joint owning no
            parameter); empty when not computed.
    """

    names: tuple[str, ...]
    units: tuple[str, ...]
    values: np.ndarray
    std: np.ndarray
    rmse_per_joint: np.ndarray
    samples: int
    condition_numbers: np.ndarray = field(default_factory=lambda: np.zeros(0))


#: A joint block's condition number above which :func:`fit_warnings` warns. On the lunar
#: arm each block is two columns, and its number goes with the sweep's range alone: 3.2 for
#: the default +-30 deg, 19.6 for +-5, 49 for +-2, 98 for +-1 and 196 for +-0.5 deg (every
#: joint, static configuration [0, 40, 20, 60, 40, 30] deg): the warning stands for a sweep
#: narrower than about +-1 deg, 30 times the default's noise gain.
ILL_CONDITIONED = 100.0


def condition_number(matrix: np.ndarray) -> float:
    """Largest over smallest singular value of ``matrix`` (inf when it lost rank)."""
    sv = np.linalg.svd(np.asarray(matrix, float), compute_uv=False)
    return float(sv[0] / sv[-1]) if sv.size and sv[-1] > 0 else math.inf


def block_condition_numbers(pset: ParameterSet, h: np.ndarray,
                            sweep_joint: np.ndarray | None = None) -> np.ndarray:
    """Each joint's block ``H_ii`` (its parameters in its own torque, eq. 9) conditioned.

    Over the samples of joint i's sweep (all samples when ``sweep_joint`` is None): the
    block eq. 10 solves for joint i, and the part of the global fit that joint i's sweep
    excites. NaN for a joint owning no parameter or with no sample.
    """
    h = np.asarray(h, float)
    owner = np.asarray(pset.owner)
    out = np.full(h.shape[1], math.nan)
    for i in range(h.shape[1]):
        cols = np.flatnonzero(owner == i)
        rows = (np.arange(h.shape[0]) if sweep_joint is None
                else np.flatnonzero(np.asarray(sweep_joint) == i))
        if cols.size and rows.size:
            out[i] = condition_number(h[rows, i][:, cols])
    return out


def fit_warnings(estimate: Estimate, joints: Sequence[str]) -> tuple[str, ...]:
    """One sentence per joint whose block is conditioned worse than :data:`ILL_CONDITIONED`."""
    return tuple(
        f"the fit of {joint}'s parameters is ill-conditioned (condition number {cond:.3g}, "
        f"above {ILL_CONDITIONED:g}): its sweep barely changes their torques, and the torque "
        "noise grows about as many times into them (see their std); sweep that joint over a "
        "wider range, or from another static configuration, then run again"
        for joint, cond in zip(joints, estimate.condition_numbers, strict=False)
        if cond > ILL_CONDITIONED)  # NaN (no parameter of its own) is not


def _check(h: np.ndarray, tau: np.ndarray) -> None:
    if h.ndim != 3 or tau.shape != h.shape[:2]:
        raise InvalidInputError(
            f"expected a regressor (N, n, p) and torques (N, n), got {h.shape} and {tau.shape}")
    if not (np.all(np.isfinite(h)) and np.all(np.isfinite(tau))):
        raise InvalidInputError("regressor or torques hold NaN or inf: drop those samples first")


def _solve(what: str, a: np.ndarray, b: np.ndarray, names: Sequence[str],
           rtol: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Least squares ``a x = b`` with a rank check; returns x, std, residual."""
    rows, cols = a.shape
    if rows < cols:
        raise InsufficientSamplesError(what, rows, names)
    scale = np.linalg.norm(a, axis=0)
    scale[scale == 0.0] = 1.0
    _, r, perm = scipy.linalg.qr(a / scale, mode="economic", pivoting=True)
    diag = np.abs(np.diag(r))
    rank = int(np.sum(diag > rtol * max(float(diag[0]), 1e-300)))
    if rank < cols:
        lost = sorted(int(c) for c in perm[rank:])
        raise UnidentifiableParametersError(what, rank, names, [names[c] for c in lost])
    x, *_ = np.linalg.lstsq(a, b, rcond=None)
    residual = b - a @ x
    dof = rows - cols
    sigma2 = float(residual @ residual) / dof if dof > 0 else 0.0
    cov = sigma2 * np.linalg.inv(a.T @ a)
    return x, np.sqrt(np.clip(np.diag(cov), 0.0, None)), residual


def estimate_global(pset: ParameterSet, h: np.ndarray, tau: np.ndarray,
                    rtol: float = 1e-8) -> Estimate:
    """One least squares of ``tau = H phi`` over every joint and sample.

    Args:
        pset: the parameter set ``H`` was built for.
        h: regressors ``H(q_k)``, (N, n, p).
        tau: friction-free torques [N m], (N, n).
        rtol: rank threshold (relative, on column-scaled QR).

    Raises:
        InsufficientSamplesError: fewer equations than parameters.
        UnidentifiableParametersError: the stacked regressor lost rank; names the parameters.
    """
    h, tau = np.asarray(h, float), np.asarray(tau, float)
    _check(h, tau)
    a = h.reshape(-1, h.shape[2])
    x, std, residual = _solve("global least squares", a, tau.reshape(-1), pset.names, rtol)
    rmse = np.sqrt(np.mean(residual.reshape(tau.shape) ** 2, axis=0))
    return Estimate(pset.names, pset.units, x, std, rmse, h.shape[0])


def estimate_sequential(
    pset: ParameterSet, h: np.ndarray, tau: np.ndarray,
    sweep_joint: np.ndarray | None = None, rtol: float = 1e-8,
) -> Estimate:
    """Back-to-front least squares of eq. 10.

    For i = n .. 1: ``phi_i* = (H_ii^T H_ii)^-1 H_ii^T (tau_i - sum_{j>i} H_ij phi_j*)``
    over the samples of joint i's sweep (all samples when ``sweep_joint`` is None),
    where ``phi_i`` are the parameters whose last joint is i (``pset.owner``).

    Args:
        pset: the parameter set (gives each parameter's joint).
        h: regressors ``H(q_k)``, (N, n, p).
        tau: friction-free torques [N m], (N, n).
        sweep_joint: for each sample, the (0-based) joint that was sweeping.
        rtol: rank threshold.

    Raises:
        InsufficientSamplesError: a joint has fewer samples than parameters.
        UnidentifiableParametersError: a joint's block lost rank; names the parameters.
    """
    h, tau = np.asarray(h, float), np.asarray(tau, float)
    _check(h, tau)
    n, p = h.shape[1], h.shape[2]
    owner = np.asarray(pset.owner)
    if sweep_joint is not None:
        sweep_joint = np.asarray(sweep_joint, dtype=int)
        if sweep_joint.shape != (h.shape[0],):
            raise InvalidInputError(f"sweep_joint has shape {sweep_joint.shape}, expected "
                                    f"({h.shape[0]},): one joint index per sample")
    values = np.zeros(p)
    std = np.zeros(p)
    known = np.zeros(p, dtype=bool)
    for i in range(n - 1, -1, -1):
        cols = np.flatnonzero(owner == i)
        if cols.size == 0:
            continue
        rows = slice(None) if sweep_joint is None else np.flatnonzero(sweep_joint == i)
        target = tau[rows, i] - h[rows, i][:, known] @ values[known]
        x, s, _ = _solve(f"joint {i + 1} (eq. 10)", h[rows, i][:, cols], target,
                         [pset.names[c] for c in cols], rtol)
        values[cols], std[cols] = x, s
        known[cols] = True
    unowned = np.flatnonzero(~known)
    if unowned.size:
        raise UnidentifiableParametersError(
            "sequential least squares", int(known.sum()), pset.names,
            [pset.names[c] for c in unowned])
    residual = tau - h @ values
    rmse = np.sqrt(np.mean(residual**2, axis=0))
    return Estimate(pset.names, pset.units, values, std, rmse, h.shape[0])


def estimate_weighted(
    pset: ParameterSet, h: np.ndarray, tau: np.ndarray,
    sweep_joint: np.ndarray | None = None, rtol: float = 1e-8,
) -> Estimate:
    """Global least squares weighted by each joint's torque noise (feasible GLS).

    Not in the paper. Current-measured torques are far noisier on some
    joints than on others (Table 6: 0.13 to 1.0 of the joint's peak torque),
    and a joint's parameters also show in the torques of the joints before
    it, in every sweep. Eq. 10 uses each joint's torque in its own sweep
    only; one unweighted least squares lets the noisy joints' rows drown the
    quiet ones'. Weighting each joint's rows by ``1 / sigma_j`` uses every
    row at its worth (the best linear unbiased estimate for white noise).

    Step 1 is eq. 10 (or the unweighted global fit when ``sweep_joint`` is
    None); ``sigma_j`` is the RMS of its residual on joint j over every
    sample; step 2 solves the weighted problem. The standard deviations come
    from the weighted fit's covariance; ``rmse_per_joint`` is unweighted.

    Args and raises: as :func:`estimate_sequential`.
    """
    h, tau = np.asarray(h, float), np.asarray(tau, float)
    first = (estimate_global(pset, h, tau, rtol) if sweep_joint is None
             else estimate_sequential(pset, h, tau, sweep_joint, rtol))
    sigma = np.sqrt(np.mean((tau - h @ first.values) ** 2, axis=0))
    if not np.any(sigma > 0.0):
        return first  # exact data: nothing to weigh
    sigma = np.maximum(sigma, 1e-9 * float(sigma.max()))  # a noise-free joint: heavy, not inf
    weight = 1.0 / sigma
    a = (h * weight[None, :, None]).reshape(-1, h.shape[2])
    x, std, _ = _solve("weighted least squares", a, (tau * weight).reshape(-1), pset.names, rtol)
    rmse = np.sqrt(np.mean((tau - h @ x) ** 2, axis=0))
    return Estimate(pset.names, pset.units, x, std, rmse, h.shape[0])


@dataclass(frozen=True)
class PairedPass:
    """Friction-free samples of one sweep: positions [rad] (N, n) and torques [N m] (N, n)."""

    positions: np.ndarray
    torques: np.ndarray


def pair_passes(
    joint: int, q_forward: np.ndarray, tau_forward: np.ndarray,
    q_backward: np.ndarray, tau_backward: np.ndarray,
) -> PairedPass:
    """Cancel friction with a forward and a backward pass through the same q (eq. 5).

    The sweeping joint's angle orders both passes; the backward pass's
    torques are interpolated at the forward pass's angles (restricted to
    the angles both passes cover), and ``(tau_fwd + tau_bwd) / 2`` is
    friction-free because the friction of opposite velocities cancels.

    Args:
        joint: 0-based index of the sweeping joint.
        q_forward: positions of the forward pass [rad], (N, n).
        tau_forward: torques of the forward pass [N m], (N, n).
        q_backward: positions of the backward pass [rad], (M, n).
        tau_backward: torques of the backward pass [N m], (M, n).

    Raises:
        InvalidInputError: shapes differ, values are not finite, or the passes do not overlap.
    """
    arrays = [np.asarray(a, float) for a in (q_forward, tau_forward, q_backward, tau_backward)]
    qf, tf, qb, tb = arrays
    if qf.shape != tf.shape or qb.shape != tb.shape or qf.ndim != 2 or qf.shape[1] != qb.shape[1]:
        raise InvalidInputError(
            f"passes must be (N, n) positions and torques: got {qf.shape}, {tf.shape}, "
            f"{qb.shape}, {tb.shape}")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise InvalidInputError("a pass holds NaN or inf: drop those samples first")
    af, ab = qf[:, joint], qb[:, joint]
    low, high = max(af.min(), ab.min()), min(af.max(), ab.max())
    if not high > low:
        raise InvalidInputError(
            f"the passes of joint {joint + 1} do not overlap: forward covers "
            f"[{af.min():.4f}, {af.max():.4f}] rad, backward [{ab.min():.4f}, {ab.max():.4f}] rad")
    order_f, order_b = np.argsort(af, kind="stable"), np.argsort(ab, kind="stable")
    angles = af[(af >= low) & (af <= high)]
    n = qf.shape[1]
    q = np.column_stack([np.interp(angles, af[order_f], qf[order_f, k]) for k in range(n)])
    q[:, joint] = angles
    fwd = np.column_stack([np.interp(angles, af[order_f], tf[order_f, k]) for k in range(n)])
    bwd = np.column_stack([np.interp(angles, ab[order_b], tb[order_b, k]) for k in range(n)])
    return PairedPass(q, 0.5 * (fwd + bwd))


def rmse_percent_of_peak(predicted: np.ndarray, reference: np.ndarray,
                         peak: np.ndarray | None = None) -> np.ndarray:
    """Per-joint RMSE as % of the joint's peak torque (eq. 18 over Table 3's max).

    Args:
        predicted: predicted torques [N m], (N, n).
        reference: reference torques [N m], (N, n).
        peak: each joint's peak torque [N m], (n,) (default: the peak |reference|);
            pass the noise-free peak when ``reference`` is a noisy measurement.

    Returns:
        ``100 * RMSE_j / peak_j`` per joint [%] (NaN where the peak is 0).
    """
    predicted, reference = np.asarray(predicted, float), np.asarray(reference, float)
    rmse = np.sqrt(np.mean((predicted - reference) ** 2, axis=0))
    peak = np.abs(reference).max(axis=0) if peak is None else np.asarray(peak, float)
    if peak.shape != rmse.shape:
        raise InvalidInputError(f"{peak.shape=} but the torques have {rmse.shape[0]} joints")
    return np.asarray(100.0 * rmse / np.where(peak > 0, peak, np.nan))
