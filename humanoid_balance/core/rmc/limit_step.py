"""Step 4 of :class:`~humanoid_balance.core.rmc.RmcController`: both arms' velocities inside
their boxes when the unlimited solution leaves them, and the regime that says how
(:class:`~humanoid_balance.core.rmc.cycle.RmcRegime`: scaled, stopping the job arm, turning).
"""

from __future__ import annotations

import math

import numpy as np

from humanoid_balance.core.rmc.cycle import Cycle, Limited, RmcRegime, regime_of
from humanoid_balance.core.rmc.held_rows import HeldRows
from humanoid_balance.core.rmc.lookahead import JobLookahead
from humanoid_balance.core.rmc.scale_program import (
    Halfplanes,
    extreme_scale,
    job_halfplanes,
    with_top,
    zonotope_rows,
)
from humanoid_balance.core.rmc.solvers import damped_least_squares

__all__ = ["SCALE_TOLERANCE", "LimitStep", "job_basis"]

#: A job scale the smooth (eq. 6) solution may fall short of the largest one and still be
#: taken: only rounding (the two are solved from different constraint rows).
SCALE_TOLERANCE = 1e-9


def job_basis(qd_job: np.ndarray, jac: np.ndarray | None) -> np.ndarray:
    """``[d, n]`` (n_job x 2): the unlimited job velocities and the unit null vector of the
    hand Jacobian (twist mode; a zero column for joint-velocity input), so that every
    ``qd = s d + z n`` moves the hand by ``s J d``.

    The null vector is the last right singular vector of the 6 x 7 ``J`` (exactly in
    its null space: the seventh singular value is zero). A second, lost direction at
    a singularity is not used.
    """
    n = np.zeros_like(qd_job)
    if jac is not None and jac.shape[0] < jac.shape[1]:
        n = np.linalg.svd(jac)[2][-1]
    return np.column_stack([qd_job, n])


class LimitStep:
    """The limit step of one cycle's solves.

    Args:
        lookahead: the job arm's look-ahead bounds.
        rows: the held (and secondary) rows' solves.
    """

    def __init__(self, lookahead: JobLookahead, rows: HeldRows) -> None:
        self.lookahead = lookahead
        self.rows = rows

    def limited(self, qd_job: np.ndarray, s_a_aux: np.ndarray, a_aux: np.ndarray,
                a_job: np.ndarray, cycle: Cycle) -> Limited:
        """Both arms' velocities inside the box when the exact solution leaves it.

        The job velocities are ``basis @ [s, z]`` with ``basis = [d, n]``
        (:func:`job_basis`); the ``s`` at which some aux velocities in their box hold the
        rows comes from :func:`~humanoid_balance.core.rmc.scale_program.extreme_scale`
        over the job's half-planes and those of the aux box's zonotope
        (:func:`~humanoid_balance.core.rmc.scale_program.zonotope_rows`): the largest
        with the job's half-planes that look furthest ahead
        (:meth:`JobLookahead.ahead_tiers`), else the smallest with those of the next tier
        that has one, down to the job box alone; where none has, :meth:`stop_job`. Where
        even the job box's ``s <= 1`` leaves no motion (the request fell faster than the
        job arm can brake), ``s`` may exceed 1.
        """
        nj, box = len(qd_job), cycle.box
        lo_aux, hi_aux = box.lower[nj:], box.upper[nj:]
        prev = cycle.job_velocity_prev
        if not np.any(qd_job) and np.any(prev):
            # a request to stop from a motion the box cannot stop at once: brake that motion
            # in proportion along the last request's direction (job_scale 0: the request's)
            last = prev if cycle.jac is None or cycle.last_twist is None else \
                damped_least_squares(cycle.jac, cycle.last_twist, 0.0, 0.0)[0]
            stop = self.stop_job(qd_job, s_a_aux, a_aux, a_job, cycle, job_basis(last, cycle.jac),
                                 [], 1e-12 * (1.0 + float(np.abs(last).max())))
            return stop._replace(scale=0.0)
        basis = job_basis(qd_job, cycle.jac)
        tol = 1e-12 * (1.0 + float(np.abs(basis).max()))
        plain = job_halfplanes(basis, box.lower[:nj], box.upper[:nj])
        if extreme_scale(*plain, tol, lowest=True) is None:
            # the request fell faster than the job arm can brake: along it, as fast as it can
            faster = extreme_scale(*with_top(plain, math.inf), tol, lowest=True)
            if faster is not None:
                plain = with_top(plain, faster[0])
        ahead, tiers = self.lookahead.ahead_tiers(basis, cycle, plain, tol)
        held = a_job[self.rows.held] @ basis  # the held rows per unit s and z
        # (without balance the aux arm holds still, as near zero as its box allows)
        aux_rows = zonotope_rows(held, s_a_aux, lo_aux, hi_aux,
                                 cycle.aux_facets(s_a_aux, lo_aux, hi_aux)) \
            if cycle.balanced else (np.zeros((0, 2)), np.zeros(0))
        found = self._largest_held(ahead, tiers, aux_rows, tol)
        if found is None:
            return self.stop_job(qd_job, s_a_aux, a_aux, a_job, cycle, basis, tiers, tol)
        along, lowest, (rows, bound) = found
        s = along[0]
        smooth = None if lowest or self.rows.secondary.size or not cycle.balanced else \
            self.rows.smooth(basis, held, s_a_aux, cycle.posture, (rows, bound, tol), lo_aux,
                             hi_aux)
        if smooth is not None and smooth[0] >= s - SCALE_TOLERANCE:
            s, qd_job, qd_aux = smooth
        else:
            qd_job = basis @ np.array(along)
            qd_aux = self.rows.in_box(s_a_aux, a_aux, a_job, qd_job, cycle.posture, lo_aux,
                                      hi_aux, facets=cycle.aux_facets(s_a_aux, lo_aux, hi_aux)) \
                if cycle.balanced else np.clip(np.zeros(len(lo_aux)), lo_aux, hi_aux)
        return Limited(np.clip(qd_job, box.lower[:nj], box.upper[:nj]), qd_aux, s, regime_of(s))

    @staticmethod
    def _largest_held(ahead: Halfplanes | None, tiers: list[Halfplanes], aux_rows: Halfplanes,
                      tol: float) -> tuple[tuple[float, float], bool, Halfplanes] | None:
        """The largest ``s`` looking ahead that holds the rows; past that the motion is already
        faster than looking ahead allows: the smallest ``s`` that holds them with the first
        tier that has one. With whether it is the smallest and the job's half-planes used."""
        candidates = [(True, tier) for tier in tiers]
        if ahead is not None:
            candidates.insert(0, (False, ahead))
        for lowest, (rows, bound) in candidates:
            along = extreme_scale(np.vstack([rows, aux_rows[0]]),
                                  np.concatenate([bound, aux_rows[1]]), tol, lowest=lowest)
            if along is not None:
                return along, lowest, (rows, bound)
        return None

    def stop_job(self, qd_job: np.ndarray, s_a_aux: np.ndarray, a_aux: np.ndarray,
                 a_job: np.ndarray, cycle: Cycle, basis: np.ndarray,
                 job_tiers: list[Halfplanes], tol: float) -> Limited:
        """``STOPPING_JOB``: no motion along the request holds the rows; the job arm brakes
        along it, at most at its acceleration limits, and the aux arm comes as near to
        holding the rows as its box allows.

        The job arm brakes its whole motion in proportion, ``(s, z) = l (s_0, z_0)`` with
        ``(s_0, z_0)`` the last command's coordinates and ``l`` the smallest the job box
        allows: path and self-motion come to rest together. Where that line misses the box
        (the motion turned), the smallest ``s`` of the first of ``job_tiers`` that has any.
        """
        nj, box = len(qd_job), cycle.box
        d2 = float(basis[:, 0] @ basis[:, 0])
        prev = cycle.job_velocity_prev
        coords = np.array([max(float(prev @ basis[:, 0]) / d2, 0.0) if d2 > 0.0 else 0.0,
                           float(prev @ basis[:, 1])])
        lowest = None
        if np.any(coords):
            line = job_halfplanes(np.column_stack([basis @ coords, np.zeros(nj)]),
                                  box.lower[:nj], box.upper[:nj])
            found = extreme_scale(*line, tol, lowest=True)
            if found is not None:
                lowest = (found[0] * float(coords[0]), found[0] * float(coords[1]))
        for rows, bound in job_tiers if lowest is None else ():
            lowest = extreme_scale(rows, bound, tol, lowest=True)
            if lowest is not None:
                break
        if lowest is None:
            return self.turning(qd_job, s_a_aux, a_job, cycle)
        job = np.clip(basis @ np.array(lowest), box.lower[:nj], box.upper[:nj])
        lo_aux, hi_aux = box.lower[nj:], box.upper[nj:]
        if cycle.balanced:
            aux = self.rows.stop(s_a_aux, a_aux, a_job, job, cycle.posture, lo_aux, hi_aux,
                                 cycle.aux_facets(s_a_aux, lo_aux, hi_aux))
        else:
            aux = np.clip(np.zeros(len(box.lower) - nj), lo_aux, hi_aux)
        return Limited(job, aux, lowest[0], RmcRegime.STOPPING_JOB)

    def turning(self, qd_job: np.ndarray, s_a_aux: np.ndarray, a_job: np.ndarray,
                cycle: Cycle) -> Limited:
        """``TURNING``: no job motion in its box keeps the direction
        (:meth:`HeldRows.nearest`); the scale reported is the achieved hand twist's part
        along the request, in [0, 1]."""
        job, aux = self.rows.nearest(qd_job, s_a_aux, a_job, cycle)
        if cycle.jac is not None:
            wanted, got = cycle.jac @ qd_job, cycle.jac @ job
        else:
            wanted, got = qd_job, job
        norm2 = float(wanted @ wanted)
        scale = min(max(float(got @ wanted) / norm2, 0.0), 1.0) if norm2 > 0 else 0.0
        return Limited(job, aux, scale, RmcRegime.TURNING)
