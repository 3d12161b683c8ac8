"""The least-squares solves of resolved momentum control: damped (eq. 3), minimum-norm
(eq. 6), bounded, and the correction of a bounded solution onto equality rows.
"""

from __future__ import annotations

import numpy as np

# at import, not in the solve that needs it: importing scipy.optimize takes 0.4-0.7 s, which
# the first cycle at a joint limit of a running 500 Hz loop must not pay
from scipy.optimize import lsq_linear

from humanoid_balance.core import kernels

__all__ = ["RCOND", "bvls", "damped_least_squares", "damping_squared", "equality_polish",
           "minimum_norm_least_squares", "safe_inverse"]

#: relative singular-value cut-off of the held rows' pseudo-inverse (eigenvalues of ``B B^T``
#: below ``RCOND^2`` times the largest are dropped: rank loss)
RCOND = 1e-10


def damping_squared(sigma_min: float, threshold: float, max_damping: float) -> float:
    """Squared damping ``lambda^2`` of the singularity-robust inverse (Nakamura & Hanafusa 1986).

    .. math::

        \\lambda^2 = 0 \\text{ if } \\sigma_{min} \\ge \\epsilon, \\quad
        \\lambda^2 = \\lambda_{max}^2 (1 - (\\sigma_{min} / \\epsilon)^2) \\text{ otherwise}

    so the inverse is the exact pseudo-inverse away from singularities and its
    gain stays below ``1 / (2 lambda_max)`` at them.

    Args:
        sigma_min: smallest singular value of the Jacobian.
        threshold: ``epsilon``, the singular value below which damping starts.
        max_damping: ``lambda_max``, the damping at the singularity.
    """
    if sigma_min >= threshold:
        return 0.0
    return max_damping * max_damping * (1.0 - (sigma_min / threshold) ** 2)


def damped_least_squares(
    jacobian: np.ndarray, target: np.ndarray, threshold: float, max_damping: float,
) -> tuple[np.ndarray, float, float]:
    """Solve ``J x = target`` by the damped pseudo-inverse ``J^T (J J^T + lambda^2 I)^-1``.

    The damping rule is :func:`damping_squared` on the smallest singular value
    of ``J`` (m x n, m <= n). Fast path: with ``G = J J^T``,
    ``sigma_min^2 = lambda_min(G) >= 1 / |G^-1|_F``; when that bound already
    reaches ``threshold^2`` the rule gives ``lambda = 0`` and ``x = J^T G^-1
    target`` without an eigen-decomposition (the result is the same).

    Returns:
        ``x``, ``sigma_min`` (exact, or on the fast path its lower bound
        ``1 / sqrt(|G^-1|_F)``, itself ``>= threshold``) and ``lambda^2``.
    """
    jjt = jacobian @ jacobian.T
    if threshold > 0:
        try:
            inverse = np.linalg.inv(jjt)
        except np.linalg.LinAlgError:
            inverse = None
        if inverse is not None:
            frobenius2 = float((inverse * inverse).sum())
            if np.isfinite(frobenius2) and frobenius2 * threshold**4 <= 1.0:
                return jacobian.T @ (inverse @ target), float(frobenius2 ** -0.25), 0.0
    eig, vec = np.linalg.eigh(jjt)
    sigma_min = float(np.sqrt(max(eig[0], 0.0)))
    lam2 = damping_squared(sigma_min, threshold, max_damping)
    if lam2 > 0:
        inv = 1.0 / (eig + lam2)
    elif eig[0] > 1e-24 * max(float(eig[-1]), 1.0):
        inv = 1.0 / eig
    else:  # exact pseudo-inverse at a rank loss (only with threshold = 0)
        inv = safe_inverse(eig, 1e-24)
    y = vec @ (inv * (vec.T @ target))
    return jacobian.T @ y, sigma_min, lam2


def safe_inverse(eig: np.ndarray, tol: float) -> np.ndarray:
    """``1 / eig`` for the eigenvalues above ``tol`` times the largest (at least 1), else 0."""
    out = np.zeros_like(eig)
    keep = eig > tol * max(float(eig[-1]), 1.0)
    out[keep] = 1.0 / eig[keep]
    return out


def minimum_norm_least_squares(b_matrix: np.ndarray, target: np.ndarray,
                               rcond: float = RCOND) -> np.ndarray:
    """``B^+ target``: the minimum-norm least-squares solution (seed 000, eq. 6's inverse).

    Computed as ``B^T (B B^T)^+ target`` through an eigen-decomposition of the
    small ``B B^T`` (k x k), dropping eigenvalues below ``rcond^2`` times the
    largest (rank loss): equal to the Moore-Penrose pseudo-inverse.
    """
    if b_matrix.shape[0] == 2:  # the paper's S (Lx, Ly): closed form while well conditioned
        b_matrix = np.ascontiguousarray(b_matrix, dtype=float)
        solved, x = kernels.held_rows_solve_2(b_matrix, np.ascontiguousarray(target, dtype=float),
                                              np.zeros(b_matrix.shape[1]), rcond)
        if solved:
            return x
    gram = b_matrix @ b_matrix.T
    eig, vec = np.linalg.eigh(gram)
    inv = safe_inverse(eig, rcond * rcond)
    return b_matrix.T @ (vec @ (inv * (vec.T @ target)))


def bvls(a: np.ndarray, b: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """``min |a x - b|^2`` subject to ``lower <= x <= upper`` (BVLS); fixed entries eliminated;
    NaN where scipy's BVLS divides by zero (its warning silenced: the caller checks).

    An entry whose bounds are less than 1e-12 (relative) apart counts as fixed (at its lower
    bound): scipy's BVLS can stall on such a sliver of a box, far from the minimum.
    """
    free = upper - lower > 1e-12 * (1.0 + np.abs(lower))
    x = lower.copy()
    if np.any(free):
        rhs = b - a[:, ~free] @ lower[~free]
        with np.errstate(divide="ignore", invalid="ignore"):
            x[free] = lsq_linear(a[:, free], rhs, bounds=(lower[free], upper[free]),
                                 method="bvls").x
    return x


def equality_polish(b_matrix: np.ndarray, target: np.ndarray, x: np.ndarray, lower: np.ndarray,
                    upper: np.ndarray, iterations: int = 4) -> np.ndarray:
    """``x`` corrected towards ``B x = target``, moving only entries not at a bound.

    The correction is the minimum-norm least-squares ``dx`` of the free entries with
    ``B dx = target - B x`` (exact when the residual lies in their columns' range, also
    with fewer free entries than rows, as on a face of the box's image); an entry it
    pushes out of ``[lower, upper]`` is clipped and held, and the rest is corrected again
    (``iterations`` rounds). The iterate with the smallest residual is returned (``x``
    itself when no correction reduces it).
    """
    out = x.copy()
    best, best_residual = x, float(np.linalg.norm(target - b_matrix @ x))
    free = (out > lower + 1e-12) & (out < upper - 1e-12)
    for _ in range(iterations):
        residual = target - b_matrix @ out
        if not free.any() or float(np.max(np.abs(residual))) <= 1e-15:
            break
        dx = np.linalg.lstsq(b_matrix[:, free], residual, rcond=None)[0]
        trial = out.copy()
        trial[free] += dx
        out = np.clip(trial, lower, upper)
        norm = float(np.linalg.norm(target - b_matrix @ out))
        if norm < best_residual:
            best, best_residual = out, norm
        moved_out = (trial != out) & free
        if not moved_out.any():
            break
        free &= ~moved_out
    return best.copy()
