"""Velocities that hold the selected momentum rows: eq. 6, its secondary rows, and its
bounded forms when the joint limits bite (steps 3-4 of
:class:`~humanoid_balance.core.rmc.RmcController`).
"""

from __future__ import annotations

import numpy as np

from humanoid_balance.core import kernels
from humanoid_balance.core.rmc.cycle import Cycle
from humanoid_balance.core.rmc.scale_program import box_halfplanes, extreme_scale
from humanoid_balance.core.rmc.solvers import (
    RCOND,
    bvls,
    equality_polish,
    minimum_norm_least_squares,
)
from humanoid_balance.core.rmc.zonotope import ZonotopeFacets, boundary_preimage

__all__ = ["HeldRows"]


class HeldRows:
    """The held rows ``S`` and the secondary rows, and the solves that keep them.

    Args:
        held: indices of the held rows in ``[P; L]``.
        secondary: indices of the rows reduced best effort after them.
        primary_weight: weight of the held rows over the secondary ones in a bounded solve.
        regularisation: weight of the minimum-norm term in the bounded solves.
    """

    def __init__(self, held: np.ndarray, secondary: np.ndarray, primary_weight: float,
                 regularisation: float) -> None:
        self.held = held
        self.secondary = secondary
        self.primary_weight = primary_weight
        self.regularisation = regularisation

    def unlimited(self, a_ref: np.ndarray, a_aux: np.ndarray, a_job: np.ndarray,
                  qd_job: np.ndarray, posture: np.ndarray, n_job: int, balanced: bool,
                  ) -> tuple[np.ndarray, np.ndarray]:
        """The aux arm's unlimited velocities (eq. 6 plus ``N v_p``, then the secondary rows'
        step; zeros when not ``balanced``) and ``B = S A_aux``.

        ``B^+ t + N v_p = v_p + B^+ (t - B v_p)``: the velocity nearest the posture
        velocity ``v_p`` among those that hold the rows (``t = -S A_job qd_job``).
        """
        if balanced and self.held.size == 2 and not self.secondary.size:
            # the paper's two rows: one compiled call while B B^T is well conditioned
            solved, qd_aux, s_a_aux, _ = kernels.held_rows_aux_2(
                a_ref, self.held, n_job, qd_job, posture, RCOND)
            if solved:
                return qd_aux, s_a_aux
        s_a_aux = a_aux[self.held]
        if not balanced:
            return np.zeros(a_aux.shape[1]), s_a_aux
        qd_aux = self.eq6(s_a_aux, a_job, qd_job, posture)
        if self.secondary.size:
            qd_aux = qd_aux + self.secondary_step(s_a_aux, a_aux, a_job, qd_job, qd_aux)
        return qd_aux, s_a_aux

    def eq6(self, s_a_aux: np.ndarray, a_job: np.ndarray, qd_job: np.ndarray,
            posture: np.ndarray) -> np.ndarray:
        """Eq. 6 with the posture velocity: the aux velocities nearest ``v_p`` that hold the rows
        for the job arm's ``qd_job``, ``v_p + B^+ (-S A_job qd_job - B v_p)``."""
        return posture + minimum_norm_least_squares(
            s_a_aux, -(a_job[self.held] @ qd_job) - s_a_aux @ posture)

    def secondary_step(self, s_a_aux: np.ndarray, a_aux: np.ndarray, a_job: np.ndarray,
                       qd_job: np.ndarray, qd_aux: np.ndarray) -> np.ndarray:
        """``N z``: the null-space motion of the held rows that best cancels the secondary rows."""
        n = s_a_aux.shape[1]
        b_pinv = np.column_stack([minimum_norm_least_squares(s_a_aux, e)
                                  for e in np.eye(s_a_aux.shape[0])])
        null = np.eye(n) - b_pinv @ s_a_aux
        a2 = a_aux[self.secondary]
        residual = a2 @ qd_aux + a_job[self.secondary] @ qd_job
        z = -minimum_norm_least_squares(a2 @ null, residual)
        return np.asarray(null @ z)

    @staticmethod
    def smooth(basis: np.ndarray, held: np.ndarray, s_a_aux: np.ndarray, posture: np.ndarray,
               job: tuple[np.ndarray, np.ndarray, float], lo_aux: np.ndarray,
               hi_aux: np.ndarray) -> tuple[float, np.ndarray, np.ndarray] | None:
        """The largest ``s`` at which eq. 6 (posture velocity included) fits the aux box within
        the job's half-planes ``job = (rows, bound, tol)``, with the job and the aux
        velocities there; None when it fits nowhere.

        Eq. 6 is linear in ``(s, z)``: ``qd_aux = c + E [s, z]`` with ``c`` the posture
        velocity's part in the rows' null space and ``E = -B^+ S A_job [d, n]``, so its
        aux box is 14 more half-planes in ``(s, z)``. The held rows are exact for every
        ``(s, z)`` and the aux velocities change with the job motion and the box only:
        a bounded solve, free to put the aux arm anywhere in the rows' null space, put it
        on another corner of its box nearly every cycle (its acceleration reversed in
        58-65 % of the joint-cycles along the strike at 2-3x its speed,
        ``tools/limit_chatter.py``).
        """
        rows, bound, tol = job
        c = posture + minimum_norm_least_squares(s_a_aux, -(s_a_aux @ posture))
        e = np.column_stack([minimum_norm_least_squares(s_a_aux, -held[:, i]) for i in (0, 1)])
        e_rows, e_bound = box_halfplanes(e, lo_aux - c, hi_aux - c)
        found = extreme_scale(np.vstack([rows, e_rows]), np.concatenate([bound, e_bound]), tol)
        if found is None:
            return None
        return found[0], basis @ np.array(found), np.clip(c + e @ np.array(found), lo_aux,
                                                           hi_aux)

    def in_box(self, s_a_aux: np.ndarray, a_aux: np.ndarray, a_job: np.ndarray,
               qd_job: np.ndarray, posture: np.ndarray, lo_aux: np.ndarray, hi_aux: np.ndarray,
               held: bool = True, facets: ZonotopeFacets | None = None) -> np.ndarray:
        """Aux velocities in their box: the held rows for ``qd_job`` first, then the secondary
        rows, then nearest eq. 6 with the posture velocity.

        Where ``held`` (some aux velocities in the box hold the rows) and there are no
        secondary rows, eq. 6 clipped to the box and corrected onto the held rows by the
        joints not at a bound (:func:`equality_polish`) is tried first. Else, or where
        that leaves a residual: one bounded least-squares problem (held rows weighted
        :attr:`primary_weight`, secondary rows 1, the distance to eq. 6
        :attr:`regularisation`) polished the same way; where ``held`` and that still
        leaves a residual, the held rows alone (scipy's BVLS can fail on the weighted
        problem, whose weights span ten orders of magnitude). The smallest residual is
        kept: without ``held`` the smallest the box allows (up to the weights).
        ``facets``: those of the aux box's image, when known.
        """
        target = -(a_job[self.held] @ qd_job)
        reference = self.eq6(s_a_aux, a_job, qd_job, posture)
        exact = 1e-13 * (1.0 + float(np.abs(target).max()))
        best = equality_polish(s_a_aux, target, np.clip(reference, lo_aux, hi_aux), lo_aux,
                               hi_aux)
        best_residual = float(np.abs(s_a_aux @ best - target).max())
        secondary = bool(self.secondary.size)
        if held and not secondary and best_residual <= exact:
            return best
        if held:  # (at the largest scale the rows' target lies on the zonotope's boundary)
            x = boundary_preimage(s_a_aux, target, lo_aux, hi_aux, facets)
            if x is not None and not secondary:
                residual = float(np.abs(s_a_aux @ x - target).max())
                if residual <= exact:
                    return x
                if residual < best_residual:
                    best, best_residual = x, residual
        for a, b in self._box_problems(s_a_aux, a_aux, a_job, qd_job, target, reference, held):
            x = bvls(a, b, lo_aux, hi_aux)
            if not np.all(np.isfinite(x)):
                continue
            x = equality_polish(s_a_aux, target, np.clip(x, lo_aux, hi_aux), lo_aux, hi_aux)
            residual = float(np.abs(s_a_aux @ x - target).max())
            if residual < best_residual or (secondary and residual <= exact):
                best, best_residual = x, residual
            if residual <= exact:
                break
        return best

    def _box_problems(self, s_a_aux: np.ndarray, a_aux: np.ndarray, a_job: np.ndarray,
                      qd_job: np.ndarray, target: np.ndarray, reference: np.ndarray,
                      held: bool) -> list[tuple[np.ndarray, np.ndarray]]:
        """:meth:`in_box`'s bounded least-squares problems ``(a, b)``, in the order tried."""
        rows, rhs = [self.primary_weight * s_a_aux], [self.primary_weight * target]
        if self.secondary.size:
            rows.append(a_aux[self.secondary])
            rhs.append(-(a_job[self.secondary] @ qd_job))
        rows.append(self.regularisation * np.eye(len(reference)))
        rhs.append(self.regularisation * reference)
        problems = [(np.vstack(rows), np.concatenate(rhs))]
        if held:
            problems.append((s_a_aux, target))
        return problems

    def stop(self, s_a_aux: np.ndarray, a_aux: np.ndarray, a_job: np.ndarray,
             qd_job: np.ndarray, posture: np.ndarray, lo_aux: np.ndarray, hi_aux: np.ndarray,
             facets: ZonotopeFacets) -> np.ndarray:
        """Aux velocities in their box that cancel the largest share of the held rows' momentum:
        the target ``y = -S A_job qd_job`` moved towards the centre ``m`` of the box's image
        (its ``facets``) to where it enters it, ``m + a (y - m)`` with the largest
        ``a <= 1``, then found exactly (:func:`boundary_preimage`); where that fails, and
        with secondary rows, a bounded least-squares problem (:meth:`in_box`)."""
        target = -(a_job[self.held] @ qd_job)
        centre = s_a_aux @ (0.5 * (lo_aux + hi_aux))
        normals, offsets = facets.halfspaces()
        reach = normals @ (target - centre)
        out = reach > offsets
        if not self.secondary.size and out.any():
            share = float(np.min(offsets[out] / reach[out]))
            x = boundary_preimage(s_a_aux, centre + share * (target - centre), lo_aux, hi_aux,
                                  facets)
            if x is not None:
                return x
        return self.in_box(s_a_aux, a_aux, a_job, qd_job, posture, lo_aux, hi_aux,
                           held=not out.any(), facets=facets)

    def nearest(self, qd_job: np.ndarray, s_a_aux: np.ndarray, a_job: np.ndarray,
                cycle: Cycle) -> tuple[np.ndarray, np.ndarray]:
        """Both arms in the box when no scale of the job motion fits: held rows first.

        One bounded least-squares problem in ``[qd_job, qd_aux]``: the held rows
        weighted :attr:`primary_weight`, then the job task at the last cycle's scale
        ``s`` (``J qd_job = s [v; w]``, or ``qd_job = s qd_ref`` in joint mode), then
        the minimum norm (the aux arm: nearest the posture velocity ``v_p``); the held
        rows are then met exactly where the aux joints allow.
        Without balance the aux arm holds still and only the job task is solved.
        """
        box, nj = cycle.box, len(qd_job)
        n = len(box.lower)
        # aim at the part of the arm's present motion that lies along the request (at most the
        # request): the part across it then decays at the acceleration limits and the motion
        # lines up, where aiming at the last scale (1 after tracking, above 1 after braking
        # towards a request that fell) kept the job arm chasing a twist beyond its limits
        if cycle.jac is not None and cycle.twist is not None:
            task, request = cycle.jac, cycle.twist
        else:
            task, request = np.eye(nj), qd_job
        now = task @ cycle.job_velocity_prev
        norm2 = float(request @ request)
        scale = min(max(float(now @ request) / norm2, 0.0), 1.0) if norm2 > 0.0 else 0.0
        goal = scale * request
        if not cycle.balanced:
            lo, hi = box.lower[:nj], box.upper[:nj]
            qd_job = self.bounded_solve(task, goal, lo, hi, np.clip(goal if task.shape[0] == nj
                                                                    else qd_job, lo, hi))
            return qd_job, np.clip(np.zeros(n - nj), box.lower[nj:], box.upper[nj:])
        held = np.hstack([a_job[self.held], s_a_aux])
        a = np.vstack([self.primary_weight * held,
                       np.hstack([task, np.zeros((task.shape[0], n - nj))]),
                       self.regularisation * np.eye(n)])
        b = np.concatenate([np.zeros(len(held)), goal, np.zeros(nj),
                            self.regularisation * cycle.posture])
        x = bvls(a, b, box.lower, box.upper)
        qd_job = x[:nj]
        if not self.secondary.size:
            # eq. 6 for the job velocities found, where it fits the aux box: exact, and it
            # follows them (the bounded solve's aux part jumps between corners of the box)
            exact = self.eq6(s_a_aux, a_job, qd_job, cycle.posture)
            if kernels.inside(exact, box.lower, box.upper, nj):
                return qd_job, exact
        qd_aux = equality_polish(s_a_aux, -a_job[self.held] @ qd_job, x[nj:],
                                 box.lower[nj:], box.upper[nj:])
        return qd_job, qd_aux

    def bounded_solve(self, a: np.ndarray, b: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                      prior: np.ndarray) -> np.ndarray:
        """``min |a x - b|^2 + rho^2 |x - prior|^2`` subject to ``lower <= x <= upper`` (BVLS)."""
        n = a.shape[1]
        rho = self.regularisation
        return bvls(np.vstack([a, rho * np.eye(n)]), np.concatenate([b, rho * prior]),
                    lower, upper)

