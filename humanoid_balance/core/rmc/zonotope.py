"""The image of a joint-velocity box under the held rows: a zonotope, as half-spaces.

The aux arm's velocities ``x`` in their box ``[lower, upper]`` move the held rows by
``B x`` (``B = S A_aux``): the set of those is the zonotope with centre
``B (lower + upper) / 2`` and generators ``B_i (upper_i - lower_i) / 2``. Its facets
(:func:`zonotope_facets`) say which held-row targets some velocities in the box meet,
and :func:`boundary_preimage` finds such velocities for a target on its boundary.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np

from humanoid_balance.core.rmc.solvers import RCOND, equality_polish

__all__ = ["ZonotopeFacets", "boundary_preimage", "zonotope_facets", "zonotope_halfspaces"]


class ZonotopeFacets(NamedTuple):
    """A zonotope's facets, both signs, and the directions its generators do not span.

    Attributes:
        normals: unit facet normals ``U`` (m x k), each with its opposite.
        offsets: ``h`` (m,): the zonotope is ``U y <= h`` within the span.
        missing: an orthonormal basis (k x (k - rank)) of the directions outside the span.
    """

    normals: np.ndarray
    offsets: np.ndarray
    missing: np.ndarray

    def halfspaces(self, thin: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """``U`` and ``h`` with the missing directions kept as ``|u^T y| <= thin``."""
        if not self.missing.shape[1]:
            return self.normals, self.offsets
        missing = self.missing.T
        return (np.vstack([self.normals, missing, -missing]),
                np.concatenate([self.offsets, np.full(2 * missing.shape[0], thin)]))


def zonotope_facets(generators: np.ndarray, rcond: float = RCOND) -> ZonotopeFacets:
    """The facets of ``{G l : -1 <= l_i <= 1}`` (see :func:`zonotope_halfspaces`)."""
    k = generators.shape[0]
    norms = np.linalg.norm(generators, axis=0)
    keep = norms > rcond * float(norms.max(initial=0.0))
    g = generators[:, keep]
    if k == 2 and g.shape[1] >= 2:  # (the paper's two rows, every cycle: no SVD)
        cross = np.abs(g[0, 0] * g[1] - g[1, 0] * g[0])
        if float(cross.max()) > rcond * float(norms[keep][0]) * float(norms[keep].max()):
            normals = np.column_stack([-g[1], g[0]]) / norms[keep][:, None]
            offsets = np.abs(normals @ g).sum(axis=1)
            return ZonotopeFacets(np.vstack([normals, -normals]),
                                  np.concatenate([offsets, offsets]), np.zeros((k, 0)))
    rank = 0
    basis = np.eye(k)
    if g.shape[1]:
        basis, sv, _ = np.linalg.svd(g)
        rank = int(np.count_nonzero(sv > rcond * sv[0]))
    span, missing = basis[:, :rank], basis[:, rank:]
    if rank == 0:
        normals = np.zeros((0, k))
    elif rank == 1:
        normals = span.T
    else:
        reduced = (span.T @ g).T  # generators in the span's coordinates (p x r)
        combos = np.array(list(itertools.combinations(range(reduced.shape[0]), rank - 1)))
        _, sv_sub, vh = np.linalg.svd(reduced[combos])  # each (r - 1) x r set at once
        independent = sv_sub[:, -1] > rcond * sv_sub[:, 0]
        normals = vh[independent, -1, :] @ span.T
    offsets = np.abs(normals @ g).sum(axis=1)
    return ZonotopeFacets(np.vstack([normals, -normals]), np.concatenate([offsets, offsets]),
                          missing)


def zonotope_halfspaces(generators: np.ndarray, thin: float = 0.0,
                        rcond: float = RCOND) -> tuple[np.ndarray, np.ndarray]:
    """The zonotope ``{G l : -1 <= l_i <= 1}`` as half-spaces ``{y : U y <= h}``.

    .. math::

        h(u) = \\sum_i |u^T g_i|

    for every facet normal ``u``: a unit vector orthogonal to ``r - 1`` independent
    generators ``g_i`` (in the span of ``G``, of rank ``r``), with both signs. When
    ``r`` is below the dimension ``k``, the directions orthogonal to the span are kept
    as pairs of half-spaces ``|u^T y| <= thin``.

    Args:
        generators: ``G`` (k x p); zero columns are ignored.
        thin: half-width kept across the span's missing directions (the same units as ``G``).
        rcond: relative singular value below which a direction counts as missing.

    Returns:
        ``U`` (m x k) and ``h`` (m,).
    """
    return zonotope_facets(generators, rcond).halfspaces(thin)


def boundary_preimage(b_matrix: np.ndarray, target: np.ndarray, lower: np.ndarray,
                      upper: np.ndarray, facets: ZonotopeFacets | None = None,
                      ) -> np.ndarray | None:
    """Some ``x`` in ``[lower, upper]`` with ``B x = target`` for a target on the boundary of the
    box's image (the zonotope ``B [lower, upper]``), or None when it lies inside it.

    On a face with outward normal ``u`` (:func:`zonotope_halfspaces`) every entry whose
    column is not parallel to the face (``u^T B_i != 0``) must sit at the bound in the
    direction of ``sign(u^T B_i)``; the others solve the rest by least squares and
    :func:`~humanoid_balance.core.rmc.solvers.equality_polish`. Exact where a bounded
    least-squares solver stalls: a target on the boundary has no interior point to
    approach it from.

    Args:
        facets: the zonotope's facets when already known (:func:`zonotope_facets` of
            ``B (upper - lower) / 2``).
    """
    half = 0.5 * (upper - lower)
    centre = 0.5 * (upper + lower)
    generators = b_matrix * half
    normals, offsets = (facets if facets is not None else zonotope_facets(generators)).halfspaces()
    offset = target - b_matrix @ centre
    scale = 1.0 + float(np.abs(offsets).max(initial=0.0))
    active = offsets - normals @ offset <= 1e-9 * scale
    if not active.any():
        return None
    lam = np.zeros(len(half))
    fixed = np.zeros(len(half), dtype=bool)
    for u in normals[active]:
        side = u @ generators
        pushed = np.abs(side) > 1e-12 * scale
        lam[pushed & ~fixed] = np.sign(side[pushed & ~fixed])
        fixed |= pushed
    x = centre + lam * half
    free = ~fixed & (half > 0)
    if free.any():
        rest = target - b_matrix @ x
        x[free] += np.linalg.lstsq(b_matrix[:, free], rest, rcond=None)[0]
        x = equality_polish(b_matrix, target, np.clip(x, lower, upper), lower, upper)
    return x
