"""Looking ahead along the job arm's path: how fast it may move this cycle and still brake
before a position limit, and what the path's curvature and the arm's self-motion take of
the acceleration limits (step 4 of :class:`~humanoid_balance.core.rmc.RmcController`).

A motion that uses each joint's box to the full this cycle can leave none next cycle that
keeps the direction: the joints must then change in proportion, so one joint's limit holds
back all the others. :class:`JobLookahead` turns that into half-planes in ``(s, z)``
(:mod:`humanoid_balance.core.rmc.scale_program`).
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

from humanoid_balance.core import kernels
from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.rmc.cycle import Cycle
from humanoid_balance.core.rmc.scale_program import Halfplanes, extreme_scale, null_range
from humanoid_balance.core.rmc.solvers import damped_least_squares

__all__ = ["DRIFT_SHARE", "NULL_DRIFT_SHARE", "NULL_SHARE", "PATH_BRAKING_FLOOR", "JobLookahead"]

#: Share of each job joint's acceleration limit that the path's curvature may take at a scaled
#: job speed (:meth:`JobLookahead.scale_cap`); the rest brakes along the path.
DRIFT_SHARE = 0.5
#: Largest speed of the job arm's self-motion (in the hand Jacobian's null space) as a share of
#: its speed along the path, beyond what the box forces (:meth:`JobLookahead.ahead_tiers`).
NULL_SHARE = 0.1
#: Share of each job joint's acceleration limit that the turning of the job arm's self-motion
#: may take (:meth:`JobLookahead.null_caps`).
NULL_DRIFT_SHARE = 0.25
#: Least share of its own acceleration limit at which a job joint is taken to brake along the
#: path (:meth:`JobLookahead.scale_cap`): a joint that hardly moves along it keeps some room.
PATH_BRAKING_FLOOR = 1e-3
#: rad: the forward differences' step along the path and the null vector
_STEP = 1e-6


class JobLookahead:
    """The job arm's look-ahead bounds for one arm configuration (rebuilt on a job-arm switch).

    Args:
        model: the humanoid.
        hand_frame: the job hand's frame id.
        job_v: the job joints' indices in the velocity vector.
        job_q: the job joints' indices in the configuration.
        lower, upper: the job joints' position bounds [rad], the position margin included.
        acceleration: their acceleration limits [rad/s^2].
    """

    def __init__(self, model: RobotModel, hand_frame: int, job_v: np.ndarray, job_q: np.ndarray,
                 lower: np.ndarray, upper: np.ndarray, acceleration: np.ndarray) -> None:
        self._model = model.model
        self._data = model.model.createData()  # (the forward differences' own)
        self._hand_frame = hand_frame
        self._job_v = job_v
        self._job_q = job_q
        self.lower = np.ascontiguousarray(lower)
        self.upper = np.ascontiguousarray(upper)
        self.acceleration = np.ascontiguousarray(acceleration)

    def _jacobian(self, cfg: np.ndarray) -> np.ndarray:
        """The job hand's Jacobian (world axes) at ``cfg``, job columns."""
        return pin.computeFrameJacobian(self._model, self._data, cfg, self._hand_frame,
                                        pin.LOCAL_WORLD_ALIGNED)[:, self._job_v]

    def ahead_tiers(self, basis: np.ndarray, cycle: Cycle, plain: Halfplanes, tol: float,
                    ) -> tuple[Halfplanes | None, list[Halfplanes]]:
        """The job's half-planes in ``(s, z)`` that look furthest ahead (None where they leave no
        motion), and the fallbacks, looking less ahead, down to the job box alone (``plain``).

        In every tier, the box and

        - the self-motion (in the Jacobian's null space, orthogonal to ``d``) no faster
          than :meth:`null_caps` (its curvature and its braking before a position
          limit; where the box cannot brake to that in one cycle, the nearest ``z`` it
          allows);

        in the first two also ``|z| <= s max(NULL_SHARE |d|, |z_0| / s_0)`` (with
        ``(s_0, z_0)`` the last command's coordinates): self-motion may not outgrow the
        motion along the path, and brakes with it, so that the path cannot come to rest
        while the arm still turns in its null space; and in the first also ``s`` at most
        :meth:`scale_cap`, the speed from which the arm can brake along the path before a
        position limit and at which the path's curvature takes at most
        :data:`DRIFT_SHARE` of each acceleration limit (where the box cannot brake to it
        in one cycle, the lowest ``s`` it allows). The last is the job box alone.
        """
        rows, bound = plain
        d, n = basis[:, 0], basis[:, 1]
        nj = len(d)
        box = cycle.box
        z_low, z_high = null_range(rows, bound, basis, box.lower[:nj], box.upper[:nj], tol) \
            if np.any(n) else (0.0, 0.0)
        least = 0.0 if z_low <= 0.0 <= z_high else min(abs(z_low), abs(z_high))
        up, down = self.null_caps(n, cycle)
        capped = (np.vstack([rows, [[0.0, 1.0], [0.0, -1.0]]]),
                  np.concatenate([bound, [max(up, z_low), max(down, -z_high)]]))
        d2 = float(d @ d)
        prev = cycle.job_velocity_prev
        s0 = float(prev @ d) / d2 if d2 > 0.0 else 0.0
        slope, offset = NULL_SHARE * math.sqrt(d2), 0.0
        if s0 > 1e-6:
            slope = max(slope, abs(float(prev @ n)) / s0)
        else:  # no motion along the path yet: self-motion brakes as fast as the box allows
            offset = least
        null = (np.vstack([capped[0], [[-slope, 1.0], [-slope, -1.0]]]),
                np.concatenate([capped[1], [offset, offset]]))
        lowest = extreme_scale(*null, tol, lowest=True)
        if lowest is None:
            return None, [null, capped, plain]
        cap = max(self.scale_cap(d, cycle), lowest[0])
        ahead = (np.vstack([null[0], [[1.0, 0.0]]]), np.concatenate([null[1], [cap]]))
        return ahead, [null, capped, plain]

    def null_caps(self, n: np.ndarray, cycle: Cycle) -> tuple[float, float]:
        """The largest self-motion speeds [rad/s] along ``+n`` and ``-n`` (unit null vector).

        Each is the least of: the speed at which the turning of the null space,
        ``z^2 (dn/dq) n`` (a forward difference 1e-6 rad along ``n``), needs at most
        :data:`NULL_DRIFT_SHARE` of each job joint's acceleration limit; and the speed
        from which the self-motion can brake in proportion before a position limit, as
        :meth:`scale_cap` for the path (:func:`braking_scale`). Infinite without one.
        """
        if cycle.jac is None or not np.any(n):
            return math.inf, math.inf
        acceleration = self.acceleration
        shifted = cycle.cfg.copy()
        shifted[self._job_q] += _STEP * n
        moved = np.linalg.svd(self._jacobian(shifted))[2][-1]
        moved = moved if float(moved @ n) >= 0.0 else -moved  # (an SVD's sign is arbitrary)
        drift = np.abs(moved - n) / _STEP
        curved = drift > 0
        cap = math.inf if not curved.any() else float(
            np.sqrt(np.min(NULL_DRIFT_SHARE * acceleration[curved] / drift[curved])))
        up, down = (braking_scale(np.ascontiguousarray(sign * n), cycle.job_ahead, self.upper,
                                  self.lower, acceleration, cycle.dt, 1.0 - DRIFT_SHARE,
                                  PATH_BRAKING_FLOOR, cap)
                    for sign in (1.0, -1.0))
        return up, down

    def scale_cap(self, direction: np.ndarray, cycle: Cycle,
                  previous: np.ndarray | None = None) -> float:
        """The largest ``s`` (at most 1) from which ``qd = s d`` can brake along its path.

        The job arm keeps its direction while braking only if every joint slows in
        proportion: ``s`` can fall at most at ``min_j a_j / |d_j|``, so joint ``i``
        brakes at ``a_i r_i`` with ``r_i = (|d_i| / a_i) / max_j (|d_j| / a_j)`` (at least
        :data:`PATH_BRAKING_FLOOR`), not at its own ``a_i``, and ``1 - DRIFT_SHARE`` of that
        is left beside the path's curvature: its speed towards a position limit is at most
        the stopping speed (:func:`~humanoid_balance.core.joint_limits.stopping_speed`) at
        that acceleration (:func:`braking_scale`). And at a constant ``s`` the joints
        accelerate by ``s^2 (dd/dq) d`` (:meth:`path_drift`), which grows without bound
        near a singularity: ``s^2 |(dd/dq) d|_i <= DRIFT_SHARE a_i``. Given ``previous``
        (the last cycle's ``d``: the exact solution's check, every cycle) that difference
        is taken only where ``d`` changed since by more than ``DRIFT_SHARE a dt`` in some
        joint (a change that includes the request's own).
        """
        dt = cycle.dt
        acceleration = self.acceleration
        cap = braking_scale(np.ascontiguousarray(direction), cycle.job_ahead, self.upper,
                            self.lower, acceleration, dt, 1.0 - DRIFT_SHARE, PATH_BRAKING_FLOOR,
                            1.0)
        if cycle.jac is None or (previous is not None and np.all(
                np.abs(direction - previous) <= DRIFT_SHARE * acceleration * dt)):
            return cap
        drift = np.abs(self.path_drift(direction, cycle))
        curved = drift > 0
        if curved.any():
            cap = min(cap, float(np.sqrt(np.min(DRIFT_SHARE * acceleration[curved]
                                                / drift[curved]))))
        return cap

    def path_drift(self, direction: np.ndarray, cycle: Cycle) -> np.ndarray:
        """``(dd/dq) d`` [rad/s^2 per unit s^2]: the job joints' acceleration that keeps the hand
        on ``qd = s d(q)`` at a constant ``s`` (twist mode; zero for joint-velocity input,
        whose path is straight in joint space), by a forward difference of the exact job
        solve (:func:`~humanoid_balance.core.rmc.solvers.damped_least_squares` without
        damping) 1e-6 rad along ``d``; once a cycle for a direction (the exact solution's
        check and the limit step ask for the same)."""
        size = float(np.abs(direction).max())
        if cycle.jac is None or cycle.twist is None or size <= 0.0:
            return np.zeros_like(direction)
        key = np.ascontiguousarray(direction).tobytes()
        known = cycle.memo.get("path_drift")
        if known is not None and known[0] == key:
            return np.asarray(known[1])
        step = _STEP / size
        shifted = cycle.cfg.copy()
        shifted[self._job_q] += step * direction
        moved = damped_least_squares(self._jacobian(shifted), cycle.twist, 0.0, 0.0)[0]
        drift = np.asarray((moved - direction) / step)
        cycle.memo["path_drift"] = (key, drift)
        return drift


@kernels.compiled
def braking_scale(direction: np.ndarray, q: np.ndarray, upper: np.ndarray, lower: np.ndarray,
                  acceleration: np.ndarray, dt: float, share: float, floor: float,
                  ceiling: float) -> float:
    """The largest ``s <= ceiling`` at which every joint of ``qd = s d`` is at most its stopping speed
    towards the limit it moves to, braking at ``share a_i max(r_i, floor)`` with
    ``r_i = (|d_i| / a_i) / max_j (|d_j| / a_j)`` (:meth:`JobLookahead.scale_cap`;
    :func:`~humanoid_balance.core.joint_limits.stopping_speed` per joint)."""
    n = direction.shape[0]
    top = 0.0
    for i in range(n):
        top = max(top, abs(direction[i]) / acceleration[i])
    cap = ceiling
    if top <= 0.0:
        return cap
    for i in range(n):
        d = direction[i]
        if d == 0.0:
            continue
        a = share * acceleration[i] * max(abs(d) / acceleration[i] / top, floor)
        room = upper[i] - q[i] if d > 0.0 else q[i] - lower[i]
        half = 0.5 * a * dt
        reach = max(room - a * dt * dt / 8.0, 0.0)
        cap = min(cap, (math.sqrt(half * half + 2.0 * a * reach) - half) / abs(d))
    return cap
