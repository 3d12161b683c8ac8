"""The job scale as a linear program in two variables: half-planes in ``(s, z)``.

When the limits bite, the job arm's velocities are ``qd = basis @ [s, z] = s d + z n``
(``d`` the unlimited job velocities, ``n`` the hand Jacobian's unit null vector): the
hand moves by ``s J d`` whatever ``z``. Every limit becomes half-planes
``rows @ [s, z] <= bound``: the job box (:func:`job_halfplanes`), the aux box's image
through the held rows (:func:`zonotope_rows`), and :func:`extreme_scale` finds the
largest (or smallest) ``s`` they allow, exactly.
"""

from __future__ import annotations

import math

import numpy as np

from humanoid_balance.core import kernels
from humanoid_balance.core.rmc.zonotope import ZonotopeFacets, zonotope_facets

__all__ = ["box_halfplanes", "extreme_scale", "job_halfplanes", "null_range", "with_top",
           "zonotope_rows"]

#: ``0 <= s <= top`` as half-planes in ``(s, z)`` (:func:`job_halfplanes`).
_SCALE_ROWS = np.array([[1.0, 0.0], [-1.0, 0.0]])

Halfplanes = tuple[np.ndarray, np.ndarray]


def box_halfplanes(columns: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> Halfplanes:
    """``lower <= columns @ p <= upper`` as half-planes ``rows @ p <= bound``."""
    return np.vstack([columns, -columns]), np.concatenate([upper, -lower])


def job_halfplanes(basis: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                   top: float = 1.0) -> Halfplanes:
    """The job box for ``qd = basis @ [s, z]`` and ``0 <= s <= top`` as half-planes in ``(s, z)``."""
    rows, bound = box_halfplanes(basis, lower, upper)
    return np.vstack([rows, _SCALE_ROWS]), np.concatenate([bound, [top, 0.0]])


def with_top(planes: Halfplanes, top: float) -> Halfplanes:
    """:func:`job_halfplanes` ``planes`` with ``s <= top`` instead (the box rows kept)."""
    rows, bound = planes
    bound = bound.copy()
    bound[-2] = top
    return rows, bound


def null_range(rows: np.ndarray, bound: np.ndarray, basis: np.ndarray, lower: np.ndarray,
               upper: np.ndarray, tol: float) -> tuple[float, float]:
    """The least and the largest ``z`` in the job's region ``rows @ [s, z] <= bound`` ((0, 0) when
    it is empty), with ``[lower, upper]`` the job box of ``qd = basis @ [s, z]`` and the last
    two rows ``0 <= s <= top`` (:func:`job_halfplanes`).

    The joint that moves most with ``z`` bounds it on its own (the box and ``s <= top``):
    those two half-planes start :func:`extreme_scale` where the rest would leave it to
    crossings of nearly parallel lines.
    """
    i = int(np.argmax(np.abs(basis[:, 1])))
    top = float(bound[-2])
    reach = (max(abs(float(lower[i])), abs(float(upper[i]))) + top * abs(float(basis[i, 0]))) \
        / abs(float(basis[i, 1]))
    swapped = np.vstack([rows[:, ::-1], [[1.0, 0.0], [-1.0, 0.0]]])  # (z, s)
    bound = np.concatenate([bound, [reach, reach]])
    high = extreme_scale(swapped, bound, tol)
    low = extreme_scale(swapped, bound, tol, lowest=True)
    if high is None or low is None:
        return 0.0, 0.0
    return low[0], high[0]


def zonotope_rows(held: np.ndarray, s_a_aux: np.ndarray, lo_aux: np.ndarray,
                  hi_aux: np.ndarray, facets: ZonotopeFacets | None = None) -> Halfplanes:
    """Half-planes in ``(s, z)`` where some aux velocities in ``[lo_aux, hi_aux]`` hold the rows.

    The rows are held when ``-held @ [s, z]`` lies in the zonotope ``{B x : lo <= x <= hi}``
    (``B = S A_aux``), the centre ``B (lo + hi) / 2`` plus the generators
    ``B_i (hi_i - lo_i) / 2`` (:func:`~humanoid_balance.core.rmc.zonotope.zonotope_halfspaces`;
    ``facets``: its facets when already known).
    """
    centre = s_a_aux @ (0.5 * (lo_aux + hi_aux))
    generators = s_a_aux * (0.5 * (hi_aux - lo_aux))
    thin = 1e-12 * (1.0 + float(np.abs(generators).sum()) + float(np.abs(centre).max()))
    normals, offsets = (facets if facets is not None else
                        zonotope_facets(generators)).halfspaces(thin)
    return -(normals @ held), offsets + normals @ centre


def extreme_scale(rows: np.ndarray, bound: np.ndarray, tol: float = 1e-12,
                  lowest: bool = False) -> tuple[float, float] | None:
    """The largest (or smallest) ``s`` with ``rows @ [s, z] <= bound`` for some ``z``, and the
    ``z`` nearest 0 there; None when no ``(s, z)`` satisfies them.

    A linear program in two variables. Each half-plane with a ``z`` coefficient bounds
    ``z`` above or below by a line in ``s``, those without bound ``s`` alone; the
    feasible ``s`` are where the gap ``f(s)`` (highest lower line minus lowest upper
    line) is ``<= 0``, and ``f`` is convex and piecewise linear. From the largest ``s``
    the ``s``-rows allow (where they allow any, the last crossing of a lower and an
    upper line: the region must be bounded), Newton steps on ``f`` with its left slope
    walk down to its
    largest root (a Newton step from the right never passes a root of a convex
    function, and each step changes the active pair of lines): exact to rounding, in a
    few passes over the rows (:func:`_extreme_scale`, compiled).

    Why not ``scipy.optimize.linprog`` (HiGHS) on ``(s, qd_job, qd_aux)``: it gives the
    same ``s``, but one call cost 1.1 ms on the 2-core target (nearly all in scipy's
    wrapper: HiGHS itself 0.13 ms), most of the 2 ms period at 500 Hz, and its
    solutions meet the equalities to its feasibility tolerance (1e-7), not the 1e-9
    N m s the held rows need; ``lsq_linear`` cannot state ``max s``, and a bisection on
    ``s`` with a bounded least-squares feasibility check needs some 20 of them per
    cycle.

    Args:
        rows: (m, 2) half-plane normals.
        bound: (m,) offsets.
        tol: slack allowed in ``z`` (and ``s``) for rounding.
        lowest: the smallest ``s`` instead of the largest.
    """
    found, s, z = _extreme_scale(np.ascontiguousarray(rows, dtype=float),
                                 np.ascontiguousarray(bound, dtype=float), float(tol),
                                 -1.0 if lowest else 1.0)
    return (s, z) if found else None


@kernels.compiled
def _extreme_scale(rows: np.ndarray, bound: np.ndarray, tol: float,
                   sign: float) -> tuple[bool, float, float]:
    """:func:`extreme_scale` on ``u = sign s``: ``(found, s, z)``."""
    m = rows.shape[0]
    u_lo, u_hi = -math.inf, math.inf
    p = np.empty(m)  # z <= p + q u (kind 1, upper lines) or z >= p + q u (kind -1)
    q = np.empty(m)
    kind = np.zeros(m, dtype=np.int64)
    for i in range(m):
        a_s, a_z = sign * rows[i, 0], rows[i, 1]
        if abs(a_z) <= 1e-14 * max(abs(a_s), abs(a_z)) or a_z == 0.0:
            if a_s > 0.0:
                u_hi = min(u_hi, bound[i] / a_s)
            elif a_s < 0.0:
                u_lo = max(u_lo, bound[i] / a_s)
            elif bound[i] < -tol:
                return False, 0.0, 0.0
        else:
            p[i], q[i] = bound[i] / a_z, -a_s / a_z
            kind[i] = 1 if a_z > 0.0 else -1
    if not math.isfinite(u_hi):  # bounded by the lines alone: start at their last crossing
        last = -math.inf
        for i in range(m):
            for j in range(m):
                if kind[i] == -1 and kind[j] == 1 and \
                        abs(q[i] - q[j]) > 1e-9 * (1.0 + abs(q[i]) + abs(q[j])):
                    last = max(last, (p[j] - p[i]) / (q[i] - q[j]))
        if not math.isfinite(last):
            return False, 0.0, 0.0
        u_hi = last
    if u_lo > u_hi + tol:
        return False, 0.0, 0.0
    u = max(u_hi, u_lo)
    for _ in range(2 * m + 4):  # (f has at most 2 m pieces)
        z_lo, z_hi = -math.inf, math.inf
        for i in range(m):  # the active lines
            if kind[i] == -1:
                z_lo = max(z_lo, p[i] + q[i] * u)
            elif kind[i] == 1:
                z_hi = min(z_hi, p[i] + q[i] * u)
        gap = z_lo - z_hi
        if gap <= tol:
            z = min(max(0.0, z_lo), z_hi) if z_lo <= z_hi else 0.5 * (z_lo + z_hi)
            return True, sign * u, z
        # the left slope of the gap: among the active lines, the lower one rising least and
        # the upper one rising most
        band = 1e-12 * (1.0 + abs(z_lo) + abs(z_hi))
        slope_lo, slope_hi = math.inf, -math.inf
        for i in range(m):
            if kind[i] == -1 and p[i] + q[i] * u >= z_lo - band:
                slope_lo = min(slope_lo, q[i])
            elif kind[i] == 1 and p[i] + q[i] * u <= z_hi + band:
                slope_hi = max(slope_hi, q[i])
        slope = slope_lo - slope_hi
        if slope <= 0.0:  # the gap does not close towards smaller u: no root
            return False, 0.0, 0.0
        u = u - gap / slope
        if u < u_lo - tol:
            return False, 0.0, 0.0
        u = max(u, u_lo)
    return False, 0.0, 0.0
