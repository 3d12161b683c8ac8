"""One cycle of resolved momentum control: its input, its output, its regime, and what the
limit step's solves share within it."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple

import numpy as np

from humanoid_balance.core.joint_limits import VelocityBox
from humanoid_balance.core.rmc.indicators import BalanceIndicators
from humanoid_balance.core.rmc.zonotope import ZonotopeFacets, zonotope_facets

__all__ = ["Cycle", "Limited", "RmcInput", "RmcOutput", "RmcRegime", "regime_of"]


@dataclass
class RmcInput:
    """One control cycle's input.

    Attributes:
        q: measured configuration (model.nq,) [rad]; the arms' entries are
            replaced by the controller's own commanded positions, the rest
            (legs, waist, neck: locked) are taken as measured.
        job_twist: job hand twist ``[v; w]`` in ``W`` [m/s, rad/s] (velocity of the
            hand frame's origin, world axes), or None.
        job_joint_velocities: job arm joint velocities [rad/s] (used when
            ``job_twist`` is None); None and no twist: the job arm holds still.
    """

    q: np.ndarray
    job_twist: np.ndarray | None = None
    job_joint_velocities: np.ndarray | None = None


class RmcRegime(Enum):
    """How a cycle's command met the job request and the joint limits (step 4 of
    :class:`~humanoid_balance.core.rmc.RmcController`); the value is the word
    ``/diagnostics`` uses.

    Attributes:
        TRACKING: the hand twist is the request (``job_scale`` 1), the held rows are zero.
        SCALED: the hand twist is ``job_scale`` ``s`` times the request, ``0 <= s < 1``, the
            held rows zero: the largest ``s`` whose motion fits both arms' boxes and can
            still brake along its path (or, where only a faster one holds the rows, the
            smallest such).
        STOPPING_JOB: no motion along the request within both boxes holds the rows (the aux
            arm is at its limits), or the request fell faster than the job arm can brake,
            or asks it to stop (zero) while it moves: the job arm brakes along the request
            (a stop: the last one) at most at its acceleration limits (the hand twist ``s``
            times the request, ``s > 1`` in the second case, ``job_scale`` 0 in the third),
            and the aux arm cancels as much of the held momentum as its box allows.
        TURNING: no job motion in the job arm's box keeps the request's direction (it
            turned faster than the acceleration limits follow): the held rows first, then
            the hand twist nearest the request.
    """

    TRACKING = "tracking"
    SCALED = "scaled"
    STOPPING_JOB = "stopping job arm"
    TURNING = "turning"


@dataclass
class RmcOutput:
    """One control cycle's result.

    Attributes:
        names: joint names of the job arm then the aux arm.
        position: commanded joint positions [rad] at the end of the cycle.
        velocity: commanded joint velocities [rad/s] for the cycle.
        job_velocity: job arm joint velocities [rad/s].
        aux_velocity: aux arm joint velocities [rad/s].
        momentum: total ``[P; L]`` [N s, N m s] about the reference point.
        momentum_job: ``A_job qd_job``.
        momentum_aux: ``A_aux qd_aux``.
        momentum_rate: ``d[P; L]/dt`` about ``W`` [N, N m] by differencing.
        selected_momentum: ``S [P; L]`` (zero when balance is exact).
        twist_error: commanded minus achieved job twist (zeros in joint mode).
        job_exact: the job arm's command is the exact (damped) solution.
        balance_exact: the aux arm's command is the exact eq.-6 solution.
        saturated_joints: joints whose limits changed the command this cycle.
        acceleration_overridden: joints where the acceleration limit yielded
            to a position or velocity limit.
        sigma_min: smallest singular value of the job Jacobian (twist mode),
            or a lower bound above ``damping_threshold`` (see
            :func:`~humanoid_balance.core.rmc.solvers.damped_least_squares`).
        damping: ``lambda^2`` of the damped inverse at ``sigma_min`` (0 above
            ``damping_threshold``); the command does not use it (step 2 of
            :class:`~humanoid_balance.core.rmc.RmcController`).
        indicators: balance indicators of this cycle.
        job_scale: the factor ``s`` the hand twist is of the request,
            ``J job_velocity = s [v; w]`` (joint input: ``job_velocity = s qd``): 1 while
            ``TRACKING``, in ``[0, 1)`` while ``SCALED``, above 1 only while braking
            towards a request that fell faster than the limits allow, 0 for a request to
            stop; in ``TURNING`` the hand twist's part along the request, clipped to
            ``[0, 1]``. Always finite.
        regime: which of :class:`RmcRegime` the cycle was in (``/diagnostics`` says it).
    """

    names: tuple[str, ...]
    position: np.ndarray
    velocity: np.ndarray
    job_velocity: np.ndarray
    aux_velocity: np.ndarray
    momentum: np.ndarray
    momentum_job: np.ndarray
    momentum_aux: np.ndarray
    momentum_rate: np.ndarray
    selected_momentum: np.ndarray
    twist_error: np.ndarray
    job_exact: bool
    balance_exact: bool
    saturated_joints: tuple[str, ...]
    acceleration_overridden: tuple[str, ...]
    sigma_min: float
    damping: float
    indicators: BalanceIndicators
    job_scale: float = 1.0
    regime: RmcRegime = RmcRegime.TRACKING


@dataclass
class Cycle:
    """What a limited cycle's solves need besides the momentum matrices.

    Attributes:
        cfg: the configuration with the commanded arm positions.
        box: both arms' velocity box [rad/s].
        jac: the job hand's Jacobian (twist mode), or None.
        twist: the requested hand twist (twist mode), or None.
        posture: the aux posture velocity [rad/s].
        dt: the period [s].
        job_velocity_prev: the job arm's last commanded velocities [rad/s].
        job_ahead: the job joints' commanded positions half a step ahead [rad], as the box
            sees them.
        last_twist: the last non-zero twist asked for, or None.
        balanced: the aux arm balances (False: it holds still).
        memo: what one solve computed for another within the cycle (the aux box's zonotope,
            the path's curvature).
    """

    cfg: np.ndarray
    box: VelocityBox
    jac: np.ndarray | None
    twist: np.ndarray | None
    posture: np.ndarray
    dt: float
    job_velocity_prev: np.ndarray
    job_ahead: np.ndarray
    last_twist: np.ndarray | None
    balanced: bool
    memo: dict[str, Any] = field(default_factory=dict)

    def aux_facets(self, s_a_aux: np.ndarray, lo_aux: np.ndarray,
                   hi_aux: np.ndarray) -> ZonotopeFacets:
        """The facets of the aux box's image ``S A_aux [lo_aux, hi_aux]``, made once a cycle
        (``s_a_aux`` and the aux box are the cycle's)."""
        facets = self.memo.get("aux_facets")
        if facets is None:
            facets = self.memo["aux_facets"] = zonotope_facets(s_a_aux * (0.5 * (hi_aux - lo_aux)))
        return facets


class Limited(NamedTuple):
    """A limited cycle's job and aux velocities [rad/s], job scale and regime."""

    job: np.ndarray
    aux: np.ndarray
    scale: float
    regime: RmcRegime


def regime_of(scale: float) -> RmcRegime:
    """TRACKING at ``s = 1``, SCALED below, STOPPING_JOB above (braking towards a request that
    fell faster than the acceleration limits follow)."""
    if scale == 1.0:
        return RmcRegime.TRACKING
    return RmcRegime.SCALED if scale < 1.0 else RmcRegime.STOPPING_JOB
