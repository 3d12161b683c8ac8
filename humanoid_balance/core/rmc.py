"""Resolved momentum control of a fast job arm by the auxiliary arm (seed 000, Kajita 2003).

The robot's total momentum, with the waist and legs locked, comes from the two
arms only (seed 000, eq. 1):

.. math::

    \\begin{bmatrix} P \\\\ L \\end{bmatrix} =
    \\begin{bmatrix} M_{job} \\\\ H_{job} \\end{bmatrix} \\dot\\theta_{job} +
    \\begin{bmatrix} M_{aux} \\\\ H_{aux} \\end{bmatrix} \\dot\\theta_{aux}
    = A_{job} \\dot\\theta_{job} + A_{aux} \\dot\\theta_{aux}

``A_job`` and ``A_aux`` are the arm columns of pinocchio's centroidal momentum
map (``computeCentroidalMap``), with the angular rows shifted from the centre
of mass ``c`` to the reference point ``p`` (the balance frame ``W``, the
paper's choice, or the CoM): ``H_p = H_G + [c - p]_x M``.

The job arm follows a hand twist ``[v; w]`` (eq. 3) through a damped
(singularity-robust) pseudo-inverse, or joint velocities given directly. The
auxiliary arm cancels the selected momentum rows (eq. 6):

.. math::

    \\dot\\theta_{aux} = -(S A_{aux})^{+} S A_{job} \\dot\\theta_{job}

with ``S`` any subset of the rows ``[Px, Py, Pz, Lx, Ly, Lz]`` (paper, eq. 5:
``Lx, Ly``) and ``^+`` the minimum-norm least-squares pseudo-inverse.

Joint limits (:mod:`humanoid_balance.core.joint_limits`) are enforced every
cycle on both arms; what happens when the exact solution would break one is
described in :class:`RmcController`. The balance indicators of section 3.2
(ZMP shift, lift-off, sliding and turning margins) come from the rates of the
momentum about ``W`` (:func:`balance_indicators`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

import numpy as np
import pinocchio as pin

# at import, not in the solve that needs it: importing scipy.optimize takes 0.4-0.7 s, which
# the first cycle at a joint limit of a running 500 Hz loop must not pay
from scipy.optimize import lsq_linear

from humanoid_balance.core import kernels
from humanoid_balance.core.joint_limits import (
    JointLimits,
    VelocityBox,
    VelocityBoxer,
    arm_acceleration_limit,
)
from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.support import polygon_distance, polygon_edges
from humanoid_balance.exceptions import ConfigurationError, InvalidInputError

#: Names of the six momentum rows, in the order of ``[P; L]``.
MOMENTUM_ROWS: tuple[str, ...] = ("Px", "Py", "Pz", "Lx", "Ly", "Lz")
#: The two arms (right first) and their joint groups, for both controllers of ``arm_balance``
#: (groups found by :data:`~humanoid_balance.core.model.HUMANOID_GROUP_PATTERNS`).
ARMS: dict[str, str] = {"right": "right_arm", "left": "left_arm"}
REFERENCE_POINTS = ("W", "com")
#: The paper's selection (seed 000, eq. 5).
PAPER_SELECTION: tuple[str, ...] = ("Lx", "Ly")
#: The aux arm's ready posture [rad] in arm-joint order (shoulder pitch, roll, yaw, elbow, wrist
#: yaw, roll, pitch) with the right arm's signs (mirrored for the left arm, as
#: :func:`~humanoid_balance.core.strike_trajectory.arm_pose`): the hand in front of the chest,
#: across the body's midline. With the arm's mass near the midline, the motion that holds
#: ``Lx, Ly`` adds little ``Lz`` (a point mass at ``r`` makes ``L`` normal to ``r``, so
#: cancelling ``Ly`` from ``y = 0.2 m`` adds ``Lz ~ y / z Ly`` of the same sign as the job
#: arm's): on the seed strike the peak ``|dLz/dt|`` is 18 N m against the paper form's 32.
#: The angles are what ``humanoid-balance aux-posture`` found
#: (:mod:`humanoid_balance.experiments.aux_posture`; README, "Arm balance"), searched again
#: once the MuJoCo runs' physics had converged (RK4 at 0.25 ms): on the seed strike the
#: measured ZMP peak with RMC falls from 11.05 mm at the posture found on the coarser physics,
#: (-20.2, 9.4, 39.6, 71.1, -39.6, 77.3, 24.8) deg, to 8.69 mm (ratio to the unbalanced
#: 0.1055 -> 0.0830; at 2.5 m/s 0.111 -> 0.099), with the held rows exact, the feet's slip
#: and yaw about the same and the arms 114 mm apart instead of 101.
AUX_READY_POSTURE: tuple[float, ...] = tuple(
    float(np.deg2rad(v)) for v in (-16.1, 9.7, 55.6, 77.2, -39.3, 63.9, 4.2))
#: Default gain [1/s] of the aux posture task (0: off, the paper's pure eq. 6).
POSTURE_GAIN = 2.0
#: Default speed cap [rad/s] of the aux posture task's joint velocities.
POSTURE_SPEED = 0.5
#: Default rate [rad/s^2] at which the posture velocity may change (a smooth start and stop).
POSTURE_ACCELERATION = 2.0
#: A job scale the smooth (eq. 6) solution may fall short of the largest one and still be
#: taken: only rounding (the two are solved from different constraint rows).
SCALE_TOLERANCE = 1e-9
#: Share of each job joint's acceleration limit that the path's curvature may take at a scaled
#: job speed (:meth:`RmcController._scale_cap`); the rest brakes along the path.
DRIFT_SHARE = 0.5
#: Largest speed of the job arm's self-motion (in the hand Jacobian's null space) as a share of
#: its speed along the path, beyond what the box forces (:meth:`RmcController._ahead_tiers`).
NULL_SHARE = 0.1
#: Share of each job joint's acceleration limit that the turning of the job arm's self-motion
#: may take (:meth:`RmcController._null_cap`).
NULL_DRIFT_SHARE = 0.25
#: Least share of its own acceleration limit at which a job joint is taken to brake along the
#: path (:meth:`RmcController._scale_cap`): a joint that hardly moves along it keeps some room.
PATH_BRAKING_FLOOR = 1e-3
#: A job twist [m/s, rad/s] no component of which exceeds this asks the job arm to stop (a zero
#: computed with rounding has no direction to scale along).
STOP_TWIST = 1e-12
#: relative singular-value cut-off of the held rows' pseudo-inverse (eigenvalues of ``B B^T``
#: below ``RCOND^2`` times the largest are dropped: rank loss)
RCOND = 1e-10


def selection_matrix(rows: Sequence[str]) -> np.ndarray:
    """The selection matrix ``S`` (k x 6) picking momentum rows by name (seed 000, eq. 5).

    Args:
        rows: a non-empty subset of :data:`MOMENTUM_ROWS`, e.g. ``("Lx", "Ly")``.

    Raises:
        ConfigurationError: an unknown or repeated row name, or no row.
    """
    names = list(rows)
    unknown = [r for r in names if r not in MOMENTUM_ROWS]
    if unknown or not names or len(set(names)) != len(names):
        raise ConfigurationError(
            f"selection={names}: expected a non-empty subset of {list(MOMENTUM_ROWS)} "
            "without repeats, e.g. ['Lx', 'Ly'] (the paper's choice)")
    ordered = [r for r in MOMENTUM_ROWS if r in names]
    s = np.zeros((len(ordered), 6))
    for i, r in enumerate(ordered):
        s[i, MOMENTUM_ROWS.index(r)] = 1.0
    return s


def selection_rows(rows: Sequence[str]) -> tuple[str, ...]:
    """The selected row names, validated, in :data:`MOMENTUM_ROWS` order."""
    s = selection_matrix(rows)
    return tuple(MOMENTUM_ROWS[int(np.argmax(r))] for r in s)


def _check_posture(posture: Sequence[float] | None) -> tuple[float, ...] | None:
    """7 finite angles [rad] as a tuple, or None.

    Raises:
        ConfigurationError: not 7 finite numbers.
    """
    if posture is None:
        return None
    values = np.asarray(posture, dtype=float)
    if values.shape != (7,) or not np.all(np.isfinite(values)):
        raise ConfigurationError(
            f"aux_posture={list(posture)}: expected 7 finite angles [rad] (shoulder pitch, roll, "
            "yaw, elbow, wrist yaw, roll, pitch; right-arm signs), or None for no posture task")
    return tuple(float(v) for v in values)


@dataclass(frozen=True)
class ArmMomentum:
    """The momentum matrix split by arm (seed 000, eq. 1).

    Attributes:
        job: ``A_job`` (6 x n_job): ``[P; L]`` per unit job-arm joint velocity.
        aux: ``A_aux`` (6 x n_aux).
        com: centre of mass of the whole robot [m] in the world.
        point: the point [m] (world) the angular rows refer to.
    """

    job: np.ndarray
    aux: np.ndarray
    com: np.ndarray
    point: np.ndarray


def arm_momentum_matrices(
    model: RobotModel, q: np.ndarray, job_arm: str = "right", reference_point: str = "W",
) -> ArmMomentum:
    """``A_job`` and ``A_aux`` at configuration ``q`` about ``W`` or the CoM (seed 000, eq. 1).

    Uses :meth:`RobotModel.momentum_matrix` (pinocchio's centroidal map, shifted).

    Args:
        model: the humanoid (fixed base, ``world_frame="W"`` recommended).
        q: configuration (model.nq,).
        job_arm: ``right`` or ``left``; the other arm is the auxiliary arm.
        reference_point: ``W`` (angular momentum about the balance frame's
            origin) or ``com`` (about the centre of mass).
    """
    job_group, aux_group = _arm_groups(job_arm)
    if reference_point not in REFERENCE_POINTS:
        raise ConfigurationError(
            f"reference_point={reference_point!r}: expected one of {list(REFERENCE_POINTS)}")
    com = model.com(q)
    point = model.frame_transform("W", q)[:3, 3] if reference_point == "W" else com
    a = model.momentum_matrix(q, point)
    return ArmMomentum(a[:, model.group_v_index(job_group)], a[:, model.group_v_index(aux_group)],
                       com, point)


def _check_not_negative(**values: float) -> None:
    """Each value finite and ``>= 0``.

    Raises:
        ConfigurationError: naming the first that is not.
    """
    for label, value in values.items():
        if not np.isfinite(value) or value < 0.0:
            raise ConfigurationError(f"{label}={value} must be finite and >= 0.0")


def _check_positive(label: str, value: float, unit: str) -> None:
    """``value`` [``unit``] finite and ``> 0``.

    Raises:
        ConfigurationError: it is not.
    """
    if not math.isfinite(value) or value <= 0:
        raise ConfigurationError(f"{label}={value} must be finite and > 0 {unit}")


def _arm_limits(model: RobotModel, limits: JointLimits | None) -> JointLimits:
    """``limits``, or the URDF's position and speed limits with seed 000's accelerations, checked
    to cover both arms.

    Raises:
        ConfigurationError: an arm joint without limits.
    """
    arm_names = model.group("right_arm") + model.group("left_arm")
    if limits is None:
        lower, upper = model.position_limits(arm_names)
        limits = JointLimits(arm_names, lower, upper, model.velocity_limits(arm_names),
                             np.array([arm_acceleration_limit(n) for n in arm_names]))
    index = set(limits.names)
    missing = [n for n in arm_names if n not in index]
    if missing:
        raise ConfigurationError(f"limits has no entry for arm joints {missing}")
    return limits


def _arm_groups(job_arm: str) -> tuple[str, str]:
    if job_arm not in ARMS:
        raise ConfigurationError(f"job_arm={job_arm!r}: expected 'right' or 'left'")
    aux_arm = "left" if job_arm == "right" else "right"
    return ARMS[job_arm], ARMS[aux_arm]


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
        inv = _safe_inverse(eig, 1e-24)
    y = vec @ (inv * (vec.T @ target))
    return jacobian.T @ y, sigma_min, lam2


def _safe_inverse(eig: np.ndarray, tol: float) -> np.ndarray:
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
    inv = _safe_inverse(eig, rcond * rcond)
    return b_matrix.T @ (vec @ (inv * (vec.T @ target)))


@dataclass(frozen=True)
class BalanceIndicators:
    """Balance indicators of seed 000, section 3.2, from momentum rates about ``W``.

    Attributes:
        zmp_shift: ``[dZMPx, dZMPy]`` [m]: ``[-dLy/dt, dLx/dt] / (G + dPz/dt)``.
        model_zmp: ZMP from motion [m] in ``W`` (seed 001):
            ``(M g c_xy + [-dLy, dLx]) / (M g + dPz)`` with ``L`` about ``W`` (on the ground).
        normal_force: ``G + dPz/dt`` [N], the floor's normal force.
        lift_off_margin: ``G + dPz/dt`` [N]; > 0: the feet stay on the floor.
        slide_margin: ``mu (G + dPz/dt) - |dP_xy/dt|`` [N]; > 0: no sliding.
        turn_margin: ``mu C / 2 (G + dPz/dt) - |dLz/dt|`` [N m]; > 0: no turning.
        turn_torque: ``|dLz/dt|`` [N m].
        zmp_margin: signed distance [m] of ``model_zmp`` to the support polygon's
            edge (positive inside), or NaN without a polygon.
    """

    zmp_shift: np.ndarray
    model_zmp: np.ndarray
    normal_force: float
    lift_off_margin: float
    slide_margin: float
    turn_margin: float
    turn_torque: float
    zmp_margin: float

    @property
    def balanced(self) -> bool:
        """No lift-off, no sliding, no turning, model ZMP inside the polygon (when given)."""
        inside = not np.isfinite(self.zmp_margin) or self.zmp_margin > 0
        return bool(self.lift_off_margin > 0 and self.slide_margin > 0
                    and self.turn_margin > 0 and inside)


class ConvexPolygon:
    """A convex polygon (support polygon) with precomputed edges, for fast margins.

    The margin is :mod:`humanoid_balance.core.support`'s (the one the nodes' polygon uses),
    with the edges computed once here: the controller asks for a margin every cycle.

    Args:
        vertices: (N >= 3, 2) vertices [m], counter-clockwise.

    Raises:
        ConfigurationError: wrong shape, non-finite, or not counter-clockwise convex.
    """

    def __init__(self, vertices: np.ndarray) -> None:
        v = np.asarray(vertices, dtype=float)
        if v.ndim != 2 or v.shape[1] != 2 or v.shape[0] < 3 or not np.all(np.isfinite(v)):
            raise ConfigurationError(
                f"support polygon has shape {v.shape}, expected (N >= 3, 2) finite vertices [m]")
        edge = np.roll(v, -1, axis=0) - v
        if np.any(np.hypot(edge[:, 0], edge[:, 1]) <= 0):
            raise ConfigurationError("support polygon has repeated vertices")
        cross = edge[:, 0] * np.roll(edge, -1, axis=0)[:, 1] - edge[:, 1] * np.roll(edge, -1, axis=0)[:, 0]
        if np.any(cross < -1e-12):
            raise ConfigurationError(
                "support polygon must be convex and counter-clockwise; got vertices "
                f"{v.tolist()} (humanoid_balance.core.support.convex_hull orders them)")
        self.vertices = v
        self._listed = [(float(x), float(y)) for x, y in v.tolist()]
        self._edges = polygon_edges(self._listed)

    def margin(self, point: np.ndarray) -> float:
        """Signed distance [m] from ``point`` (2,) to the edge: positive inside."""
        return polygon_distance(float(point[0]), float(point[1]), self._listed, self._edges)


def balance_indicators(
    momentum_rate: np.ndarray, *, mass: float, gravity: float, friction_coefficient: float,
    foot_distance: float, com: np.ndarray, support_polygon: ConvexPolygon | np.ndarray | None = None,
) -> BalanceIndicators:
    """Seed-000 balance indicators from ``d[P; L]/dt`` (L about ``W``, the world origin here).

    Args:
        momentum_rate: ``[dPx, dPy, dPz, dLx, dLy, dLz]/dt`` [N, N m].
        mass: total mass ``M`` [kg]; ``G = M g``.
        gravity: ``g`` [m/s^2].
        friction_coefficient: ``mu``.
        foot_distance: ``C``, distance between the foot centres [m].
        com: centre of mass [m] in ``W``.
        support_polygon: the support polygon in ``W`` (or its vertices, N x 2,
            counter-clockwise), or None.
    """
    g_force = mass * gravity
    dpx, dpy, dpz, dlx, dly, dlz = np.asarray(momentum_rate, dtype=float).tolist()
    normal = g_force + dpz
    if normal > 0:
        shift = np.array([-dly / normal, dlx / normal])
        model_zmp = np.array([(g_force * float(com[0]) - dly) / normal,
                              (g_force * float(com[1]) + dlx) / normal])
    else:
        shift = np.full(2, np.nan)
        model_zmp = np.full(2, np.nan)
    slide = friction_coefficient * normal - math.hypot(dpx, dpy)
    turn_torque = abs(dlz)
    turn = friction_coefficient * foot_distance / 2.0 * normal - turn_torque
    if support_polygon is not None and normal > 0:
        polygon = support_polygon if isinstance(support_polygon, ConvexPolygon) else \
            ConvexPolygon(support_polygon)
        margin = polygon.margin(model_zmp)
    else:
        margin = float("nan") if support_polygon is None else -math.inf
    return BalanceIndicators(shift, model_zmp, normal, normal, slide, turn, turn_torque, margin)


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
    :class:`RmcController`); the value is the word ``/diagnostics`` uses.

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
            :func:`damped_least_squares`).
        damping: ``lambda^2`` of the damped inverse at ``sigma_min`` (0 above
            ``damping_threshold``); the command does not use it (step 2 of
            :class:`RmcController`).
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


class RmcController:
    """Resolved momentum control of the two arms (seed 000, eqs. 1-6), limits every cycle.

    Each :meth:`step`:

    1. ``A = computeCentroidalMap(q)``, angular rows shifted to the reference
       point; the arm columns give ``A_job``, ``A_aux`` (eq. 1).
    2. Job arm: ``qd_job = J^+ [v; w]`` (eq. 3, :func:`damped_least_squares`), or
       the given joint velocities. Where the smallest singular value of ``J`` falls
       below ``damping_threshold`` the damped inverse would turn the hand away from the
       request; the exact pseudo-inverse is kept and step 4 scales it down along the
       request instead (so the hand slows along its twist towards a singularity and
       stops short of it; ``sigma_min`` and ``damping`` still report the damping
       that would act there).
    3. Aux arm: ``qd_aux = -(S A_aux)^+ S A_job qd_job + N v_p`` (eq. 6) with
       ``N = I - B^+ B`` the null space of ``B = S A_aux`` and ``v_p`` the posture
       velocity that brings the aux arm to ``aux_posture``,
       ``v_p = k (q_p - q_aux)`` (gain ``posture_gain``, scaled down to at most
       ``posture_speed``, changing by at most ``posture_acceleration dt`` per cycle;
       ``N v_p`` is the velocity nearest ``v_p`` that keeps the held rows); with
       ``secondary`` rows, plus the null-space motion that reduces them (before the
       posture). The held rows always stay exact, so the posture is approached only
       within their null space: from a pose far from it (with ``Lx, Ly`` held at zero
       the arm cannot be raised forward) the aux arm stops where the remaining error
       lies in the rows' range; the robot should stand with the aux arm at its
       posture (as the strike experiment does).
    4. Limits: each arm's velocities must lie in the box of
       :func:`~humanoid_balance.core.joint_limits.velocity_box` (position with
       ``position_margin``, velocity, acceleration). The regime says what happened
       (:class:`RmcRegime`, ``job_scale`` ``s``; the hand twist is always ``s`` times
       the request except in ``TURNING``):

       - ``TRACKING``: the unlimited solution of steps 2-3 lies in both boxes and leaves
         the job arm a way to brake along its path (:meth:`_scale_cap`); ``s = 1``.
       - ``SCALED``: otherwise the job velocities are ``qd_job = s d + z n`` (``d`` the
         unlimited job velocities, ``n`` the unit null vector of ``J``; ``z = 0`` for
         joint-velocity input), so that ``J qd_job = s [v; w]``: the hand keeps its
         direction and only slows down. The aux velocities are any in the aux box
         with the held rows zero, ``S A_job qd_job + S A_aux qd_aux = 0``. Which
         ``s`` such a solution allows is a linear program in ``(s, z)`` alone: the job
         box gives 14 half-planes, the image of the aux box under ``S A_aux`` (a
         zonotope, :func:`zonotope_halfspaces`) the others, and :func:`extreme_scale`
         solves it exactly at its vertices (why not ``linprog``: there). ``s`` is the
         largest in ``[0, 1]`` among the motions that look ahead (braking along the
         path before a position limit, the path's curvature and the self-motion ``z``
         bounded: :meth:`_ahead_tiers`); where none of those holds the rows, the
         smallest ``s`` that does with less looking ahead. The aux arm takes eq. 6
         (with the posture velocity) for that job motion where it fits its box at the
         same ``s`` (held rows exact, the aux arm moving smoothly), else velocities in
         its box that meet the held rows exactly (:meth:`_aux_in_box`). So the held
         rows stay zero wherever any motion along the request within both boxes holds
         them.
       - ``STOPPING_JOB``: where none does (the aux arm at its limits), the job arm
         brakes its whole motion in proportion, at most at its acceleration limits and
         along the request (:meth:`_stop_job`), and the aux arm cancels as much of the
         held momentum as its box allows (:meth:`_stop_aux`). Also when the request
         fell faster than the job arm can brake along it (``s > 1`` then), and when it
         asks a moving job arm to stop (no job input, or a twist within
         :data:`STOP_TWIST` of zero: along the last twist asked for, ``job_scale`` 0).
       - ``TURNING``: only where the job box holds no motion along the request at all
         (a request that turns faster than the acceleration limits follow): one
         bounded least-squares problem in both arms, held rows first, then the job
         task at the last scale; ``job_scale`` the hand twist's part along the request.

       No command ever leaves the boxes, so no position, velocity or acceleration
       limit is crossed (the acceleration limit yields to the other two only when
       they cannot be met together, see ``acceleration_overridden``).
    5. Positions integrate the velocities: ``q_cmd += qd dt``.

    Args:
        model: the humanoid; a fixed base with ``world_frame="W"``.
        job_arm: ``right`` or ``left``.
        selection: the momentum rows held at zero (default the paper's ``Lx, Ly``).
        reference_point: ``W`` (the paper's) or ``com``.
        friction_coefficient: ``mu`` between the feet and the floor.
        foot_distance: ``C``, distance between the foot centres [m].
        damping_threshold: ``epsilon``, singular value below which the job
            inverse is damped [m/rad-ish, Jacobian units].
        max_damping: ``lambda_max`` at a singularity.
        position_margin: distance kept from every joint's position limits [rad].
        limits: limits of the arm joints (default: URDF positions and speeds,
            seed-000 accelerations).
        support_polygon: vertices (N x 2, counter-clockwise) in ``W`` for the
            model ZMP's margin, or None.
        regularisation: weight of the minimum-norm term in the bounded solves.
        secondary: momentum rows reduced best effort after ``selection`` is held
            (task priority): ``qd_aux += N z`` with ``N = I - B^+ B`` the null
            space of ``B = S A_aux`` and ``z`` the minimum-norm least-squares
            reduction of the secondary rows. When that leaves the limit box, the
            bounded solve weighs the held rows ``primary_weight`` times more
            than the secondary ones (held rows then zero to about
            ``1 / primary_weight`` of the secondary residual, and
            ``balance_exact`` is False). Empty: off (the paper's method).
        primary_weight: weight of the held rows over the secondary rows in that
            bounded solve.
        aux_posture: the aux arm's posture [rad], 7 angles in arm-joint order with
            the right arm's signs (mirrored for the left arm), which the aux arm
            approaches in the null space of the held rows (default
            :data:`AUX_READY_POSTURE`, where holding ``Lx, Ly`` adds little ``Lz``);
            None: no posture task.
        posture_gain: ``k`` [1/s] of the posture task; 0: off (the paper's pure
            eq. 6, the aux arm moves only to hold the rows).
        posture_speed: largest joint speed [rad/s] of the posture velocity ``v_p``.
        posture_acceleration: largest change rate [rad/s^2] of ``v_p``.
    """

    def __init__(
        self,
        model: RobotModel,
        *,
        job_arm: str = "right",
        selection: Sequence[str] = PAPER_SELECTION,
        reference_point: str = "W",
        friction_coefficient: float = 0.3,
        foot_distance: float = 0.4,
        damping_threshold: float = 0.02,
        max_damping: float = 0.05,
        position_margin: float = 0.0,
        limits: JointLimits | None = None,
        support_polygon: np.ndarray | None = None,
        regularisation: float = 1e-4,
        secondary: Sequence[str] = (),
        primary_weight: float = 1e6,
        aux_posture: Sequence[float] | None = AUX_READY_POSTURE,
        posture_gain: float = POSTURE_GAIN,
        posture_speed: float = POSTURE_SPEED,
        posture_acceleration: float = POSTURE_ACCELERATION,
    ) -> None:
        kernels.warm_up()  # every cycle calls kernels (the first one must not compile them)
        _warm_up()
        if model.floating_base:
            raise ConfigurationError(
                "RmcController needs the fixed-base humanoid (legs and waist locked, W on the "
                "ground): build RobotModel(urdf, world_frame='W')")
        _check_not_negative(friction_coefficient=friction_coefficient, foot_distance=foot_distance,
                            damping_threshold=damping_threshold, max_damping=max_damping,
                            position_margin=position_margin, regularisation=regularisation,
                            posture_gain=posture_gain)
        if reference_point not in REFERENCE_POINTS:
            raise ConfigurationError(
                f"reference_point={reference_point!r}: expected one of {list(REFERENCE_POINTS)}")
        self.model = model
        self.friction_coefficient = float(friction_coefficient)
        self.foot_distance = float(foot_distance)
        self.damping_threshold = float(damping_threshold)
        self.max_damping = float(max_damping)
        self.position_margin = float(position_margin)
        self.regularisation = float(regularisation)
        self.reference_point = reference_point
        self.support_polygon: ConvexPolygon | None = (
            None if support_polygon is None else ConvexPolygon(support_polygon))
        #: False: the aux arm holds still (no RMC), for comparisons
        self.balance_enabled = True
        self._all_limits = _arm_limits(model, limits)
        self._limit_index = {n: i for i, n in enumerate(self._all_limits.names)}
        # constant parts: welded mass, the W point, sizes
        self._mass = model.total_mass
        welded = model.model.inertias[0]
        self._welded_mass = float(welded.mass)
        self._welded_lever = np.array(welded.lever)
        self._w_point = model.frame_transform("W", model.neutral())[:3, 3].copy()
        self._gravity = model.gravity
        self._moving_share = (self._mass - self._welded_mass) / self._mass
        self._welded_part = self._welded_mass * self._welded_lever / self._mass
        _check_positive("posture_speed", posture_speed, "rad/s")
        _check_positive("posture_acceleration", posture_acceleration, "rad/s^2")
        self.posture_gain = float(posture_gain)
        self.posture_speed = float(posture_speed)
        self.posture_acceleration = float(posture_acceleration)
        self.aux_posture: tuple[float, ...] | None = _check_posture(aux_posture)
        self.job_arm = job_arm
        self._configure_arms(job_arm)
        if not np.isfinite(primary_weight) or primary_weight <= 0:
            raise ConfigurationError(f"primary_weight={primary_weight} must be finite and > 0")
        self.primary_weight = float(primary_weight)
        self.selection: tuple[str, ...] = ()
        self.secondary: tuple[str, ...] = ()
        self.set_selection(selection, secondary)
        self._q_cmd: np.ndarray | None = None
        self._qd_prev = np.zeros(len(self._names))
        self._h_prev_w = np.zeros(6)
        self._posture_prev = np.zeros(len(self._aux_names))
        self._drift_data = model.model.createData()  # (the forward differences' own)
        self._d_prev = np.zeros(self._n_job)  # last cycle's unlimited job velocities [rad/s]
        self._last_twist: np.ndarray | None = None  # the last non-zero twist asked for

    # --- configuration (between cycles) -------------------------------------

    def _configure_arms(self, job_arm: str) -> None:
        job_group, aux_group = _arm_groups(job_arm)
        m = self.model
        self._job_names = m.group(job_group)
        self._aux_names = m.group(aux_group)
        self._names = self._job_names + self._aux_names
        self._job_v = m.v_index(self._job_names)
        self._aux_v = m.v_index(self._aux_names)
        self._arm_v = np.concatenate([self._job_v, self._aux_v])
        self._arm_q = m.q_index(self._names)
        self._n_job = len(self._job_names)
        self._hand_frame = m.frame_id(f"{job_arm}_hand")
        self._limits = self._all_limits.subset([self._limit_index[n] for n in self._names])
        self._boxer = VelocityBoxer(self._limits, self.position_margin)
        self._posture_target = self._aux_posture_target(self.aux_posture)
        # the job arm's bounds for the braking checks, made once here, not every cycle
        nj = self._n_job
        self._job_upper = np.ascontiguousarray(self._limits.upper[:nj] - self.position_margin)
        self._job_lower = np.ascontiguousarray(self._limits.lower[:nj] + self.position_margin)
        self._job_acceleration = np.ascontiguousarray(self._limits.acceleration[:nj])

    def _aux_posture_target(self, posture: tuple[float, ...] | None) -> np.ndarray | None:
        """The aux arm's posture [rad] in :attr:`aux_names` order, checked against its limits."""
        if posture is None:
            return None
        from humanoid_balance.core.strike_trajectory import ARM_JOINTS, MIRRORED

        side = self._aux_names[0].split("_", 1)[0]
        sign = {j: (-1.0 if side == "left" and j in MIRRORED else 1.0) for j in ARM_JOINTS}
        by_name = {f"{side}_{j}": sign[j] * v for j, v in zip(ARM_JOINTS, posture, strict=True)}
        missing = [n for n in self._aux_names if n not in by_name]
        if missing:
            raise ConfigurationError(f"aux_posture has no angle for joints {missing}")
        target = np.array([by_name[n] for n in self._aux_names])
        nj = self._n_job
        lower = self._limits.lower[nj:] + self.position_margin
        upper = self._limits.upper[nj:] - self.position_margin
        outside = [n for n, t, lo, hi in zip(self._aux_names, target, lower, upper, strict=True)
                   if not lo <= t <= hi]
        if outside:
            raise ConfigurationError(
                f"aux_posture puts {outside} outside their position limits (less "
                f"position_margin={self.position_margin} rad): choose a posture inside them")
        return target

    def set_aux_posture(self, posture: Sequence[float] | None, gain: float | None = None) -> None:
        """Change the aux arm's posture [rad] (right-arm signs) and its gain [1/s] between cycles.

        Raises:
            ConfigurationError: not 7 finite angles, outside the limits, or a bad gain;
                nothing is changed then.
        """
        checked = _check_posture(posture)
        new_gain = self.posture_gain if gain is None else float(gain)
        if not math.isfinite(new_gain) or new_gain < 0:
            raise ConfigurationError(f"posture_gain={gain} must be finite and >= 0 1/s")
        target = self._aux_posture_target(checked)
        self.aux_posture, self.posture_gain, self._posture_target = checked, new_gain, target

    @property
    def aux_posture_positions(self) -> dict[str, float] | None:
        """The aux arm's posture [rad] by joint name, or None when the task is off."""
        if self._posture_target is None or self.posture_gain == 0:
            return None
        return {n: float(v) for n, v in zip(self._aux_names, self._posture_target, strict=True)}

    def _posture_velocity(self, dt: float) -> np.ndarray:
        """``v_p`` [rad/s]: ``k (q_p - q_aux)`` scaled down to :attr:`posture_speed`, rate-limited.

        Zeros when the task is off (no posture, gain 0, or balance disabled); the
        change from the last cycle's ``v_p`` is clipped to ``posture_acceleration dt``.
        """
        n = len(self._aux_names)
        prev = self._posture_prev if self._posture_prev.shape == (n,) else np.zeros(n)
        target = self._posture_target
        if (target is not None and self.posture_gain > 0 and self._q_cmd is not None
                and self.balance_enabled):
            return kernels.posture_velocity(target, self._q_cmd[self._n_job:], self.posture_gain,
                                            self.posture_speed, prev,
                                            self.posture_acceleration * dt, True)
        return kernels.posture_velocity(prev, prev, 0.0, self.posture_speed, prev,
                                        self.posture_acceleration * dt, False)

    def set_job_arm(self, job_arm: str) -> None:
        """Swap the job and aux arms (call between cycles); the commanded state is kept."""
        if job_arm == self.job_arm:
            return
        old_names = self._names
        old_q = self._q_cmd
        old_qd = self._qd_prev
        self._configure_arms(job_arm)
        self.job_arm = job_arm
        order = np.array([old_names.index(n) for n in self._names])
        self._qd_prev = old_qd[order]
        self._d_prev = np.zeros(self._n_job)
        self._last_twist = None
        self._posture_prev = np.zeros(len(self._aux_names))
        if old_q is not None:
            self._q_cmd = old_q[order]

    def set_selection(self, selection: Sequence[str], secondary: Sequence[str] = ()) -> None:
        """Change the held momentum rows and the secondary ones (call between cycles).

        Raises:
            ConfigurationError: unknown rows, or a row both held and secondary.
        """
        rows = selection_rows(selection)
        second = selection_rows(secondary) if len(secondary) else ()
        both = sorted(set(rows) & set(second))
        if both:
            raise ConfigurationError(
                f"rows {both} are both in selection and secondary: a row is either held or "
                "reduced best effort")
        self.selection = rows
        self.secondary = second
        self._s = selection_matrix(self.selection)
        self._s_index = np.array([MOMENTUM_ROWS.index(r) for r in self.selection], dtype=np.int64)
        self._s2_index = np.array([MOMENTUM_ROWS.index(r) for r in second], dtype=int)

    @property
    def names(self) -> tuple[str, ...]:
        """Joint names of the outputs: the job arm's, then the aux arm's."""
        return self._names

    @property
    def job_names(self) -> tuple[str, ...]:
        """Joint names of the job arm."""
        return self._job_names

    @property
    def aux_names(self) -> tuple[str, ...]:
        """Joint names of the aux arm."""
        return self._aux_names

    @property
    def friction_torque_limit(self) -> float:
        """``mu C / 2 G`` [N m], the static turning-friction limit (seed 000: 32.34 N m)."""
        return self.friction_coefficient * self.foot_distance / 2.0 * self._mass * self._gravity

    @property
    def commanded_positions(self) -> np.ndarray | None:
        """Commanded arm positions [rad] (job, aux), None before :meth:`reset`."""
        return None if self._q_cmd is None else self._q_cmd.copy()

    # --- control -----------------------------------------------------------

    def reset(self, q: np.ndarray, arm_velocities: np.ndarray | None = None) -> None:
        """Start from measured configuration ``q`` (model.nq,), arms at rest unless given.

        Raises:
            InvalidInputError: ``q`` has the wrong size or is not finite.
        """
        q = self._check_q(q)
        self._q_cmd = q[self._arm_q].copy()
        self._qd_prev = np.zeros(len(self._names)) if arm_velocities is None else \
            np.asarray(arm_velocities, dtype=float).copy()
        cfg = q.copy()
        a_w = self._momentum_about_w(cfg)[0]
        self._h_prev_w = a_w @ self._qd_prev
        self._posture_prev = np.zeros(len(self._aux_names))
        self._d_prev = np.zeros(self._n_job)
        self._last_twist = None

    def _check_q(self, q: np.ndarray) -> np.ndarray:
        q = np.asarray(q, dtype=float)
        if q.shape != (self.model.nq,):
            raise InvalidInputError(f"q has shape {q.shape}, expected ({self.model.nq},)")
        if not kernels.all_finite(q):
            raise InvalidInputError("q has non-finite entries: no command is computed from it")
        return q

    def _check_job_input(self, inputs: RmcInput) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The job twist and joint velocities of ``inputs`` as arrays (the twist wins).

        Raises:
            InvalidInputError: a non-finite or wrongly sized one.
        """
        twist = inputs.job_twist
        if twist is not None:
            twist = np.asarray(twist, dtype=float)
            if twist.shape != (6,) or not np.isfinite(twist).all():
                raise InvalidInputError(
                    f"job_twist={twist}: expected 6 finite values [vx, vy, vz, wx, wy, wz]")
        joint_v = inputs.job_joint_velocities
        if twist is None and joint_v is not None:
            joint_v = np.asarray(joint_v, dtype=float)
            if joint_v.shape != (self._n_job,) or not np.isfinite(joint_v).all():
                raise InvalidInputError(
                    f"job_joint_velocities={joint_v}: expected {self._n_job} finite values")
        return twist, joint_v

    def _job_solve(self, cfg: np.ndarray, twist: np.ndarray | None, joint_v: np.ndarray | None,
                   ) -> tuple[np.ndarray, np.ndarray | None, float, float]:
        """Step 2: the unlimited job velocities [rad/s], the hand Jacobian (twist mode, else
        None), ``sigma_min`` and the ``lambda^2`` the damped inverse would use (not used:
        where it acts the exact pseudo-inverse is returned, which step 4 scales)."""
        if twist is None:
            return (np.zeros(self._n_job) if joint_v is None else joint_v.copy()), None, \
                float("nan"), 0.0
        jac = pin.computeFrameJacobian(self.model.model, self.model.data, cfg, self._hand_frame,
                                       pin.LOCAL_WORLD_ALIGNED)[:, self._job_v]
        qd_job, sigma_min, lam2 = damped_least_squares(jac, twist, self.damping_threshold,
                                                       self.max_damping)
        if float(np.abs(twist).max()) <= STOP_TWIST:  # (a zero with rounding: no direction)
            return np.zeros(self._n_job), jac, sigma_min, 0.0
        if lam2 > 0.0:  # the damped inverse would turn the hand: the exact one, scaled later
            qd_job = damped_least_squares(jac, twist, 0.0, 0.0)[0]
        return qd_job, jac, sigma_min, lam2

    def _momentum_about_w(self, cfg: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """Arm columns (job, aux) of the momentum matrix about W; the same about the whole
        robot's CoM (welded root body included) with ``reference_point`` ``com`` (else None);
        and that CoM.

        pinocchio's centroidal map is about the CoM of the moving bodies (``data.com[0]``),
        which leaves out a body welded to the fixed base (the torso): both forms are shifted
        from it, ``L_p = L_G + (G - p) x P``.
        """
        ag = pin.computeCentroidalMap(self.model.model, self.model.data, cfg)
        c_moving = self.model.data.com[0]
        com = self._moving_share * c_moving + self._welded_part
        a_com = kernels.arm_momentum(ag, self._arm_v, c_moving - com) \
            if self.reference_point == "com" else None
        return kernels.arm_momentum(ag, self._arm_v, c_moving - self._w_point), a_com, com

    def step(self, inputs: RmcInput, dt: float) -> RmcOutput:
        """One control cycle of ``dt`` [s]; see the class docstring.

        Raises:
            InvalidInputError: a non-finite or wrongly sized input, or ``dt <= 0``;
                nothing is commanded and the state is unchanged.
            ConfigurationError: :meth:`reset` was not called.
        """
        if self._q_cmd is None:
            raise ConfigurationError("RmcController.step before reset(q): call reset first")
        if not math.isfinite(dt) or dt <= 0:
            raise InvalidInputError(f"dt={dt} must be a finite period > 0 s")
        q = self._check_q(inputs.q)
        twist, joint_v = self._check_job_input(inputs)

        cfg = q.copy()
        cfg[self._arm_q] = self._q_cmd
        a_w, a_com, com = self._momentum_about_w(cfg)
        a_ref = a_w if a_com is None else a_com
        nj = self._n_job
        a_job = a_ref[:, :nj]
        a_aux = a_ref[:, nj:]
        qd_job, jac, sigma_min, lam2 = self._job_solve(cfg, twist, joint_v)  # (eq. 3)
        if twist is not None and float(np.abs(twist).max()) > STOP_TWIST:
            self._last_twist = twist
        # the limits see the joints half a step of the last velocity ahead: the box's Euler
        # q + qd dt then bounds the trapezoid below, q + (qd_prev + qd) dt / 2, when braking
        box = self._boxer(self._q_cmd, self._qd_prev, dt, ahead=0.5)
        # aux arm (eq. 6), for the job arm's unlimited velocities
        posture = self._posture_velocity(dt)
        qd_aux, s_a_aux = self._aux_solution(a_ref, a_aux, a_job, qd_job, posture)
        cycle = _Cycle(cfg, box, jac, twist, posture, dt)
        # (the unlimited motion must also leave a way to brake along its path: _scale_cap)
        job_exact = lam2 == 0.0 and kernels.inside(qd_job, box.lower, box.upper, 0) and \
            self._scale_cap(qd_job, cycle, exact_drift=False) >= 1.0
        self._d_prev = qd_job
        balance_exact = kernels.inside(qd_aux, box.lower, box.upper, nj)
        scale, regime = 1.0, RmcRegime.TRACKING
        if not (job_exact and balance_exact):
            limited = self._limited(qd_job, s_a_aux, a_aux, a_job, cycle)
            qd_job, qd_aux = np.ascontiguousarray(limited.job), np.ascontiguousarray(limited.aux)
            scale, regime = limited.scale, limited.regime
            job_exact = regime is RmcRegime.TRACKING

        qd, h_job, h_aux, h, h_w, rate, q_next = kernels.commit(
            a_ref, a_w, a_ref is a_w, qd_job, qd_aux, self._h_prev_w, dt, self._q_cmd,
            self._qd_prev)
        saturated: tuple[str, ...] = ()
        if not (job_exact and balance_exact):
            at_bound = (qd <= box.lower + 1e-12) | (qd >= box.upper - 1e-12)
            saturated = tuple(n for n, b in zip(self._names, at_bound, strict=True) if b)
        overridden: tuple[str, ...] = ()
        if box.acceleration_overridden.any():
            overridden = tuple(n for n, o in zip(self._names, box.acceleration_overridden,
                                                 strict=True) if o)

        twist_error = np.zeros(6) if jac is None or twist is None else twist - jac @ qd_job
        indicators = balance_indicators(
            rate, mass=self._mass, gravity=self._gravity,
            friction_coefficient=self.friction_coefficient, foot_distance=self.foot_distance,
            com=com - self._w_point, support_polygon=self.support_polygon)

        # commit the cycle
        # trapezoid: a joint moving within its acceleration limit from qd_prev to qd covers
        # (qd_prev + qd) dt / 2; q += qd dt would land up to a dt^2 / 2 away from it
        self._q_cmd = q_next
        self._qd_prev = qd
        self._h_prev_w = h_w
        self._posture_prev = posture
        return RmcOutput(
            names=self._names, position=self._q_cmd.copy(), velocity=qd, job_velocity=qd_job,
            aux_velocity=qd_aux, momentum=h, momentum_job=h_job, momentum_aux=h_aux,
            momentum_rate=rate, selected_momentum=h[self._s_index], twist_error=twist_error,
            job_exact=job_exact, balance_exact=balance_exact, saturated_joints=saturated,
            acceleration_overridden=overridden, sigma_min=sigma_min, damping=lam2,
            indicators=indicators, job_scale=scale, regime=regime)

    def _aux_solution(self, a_ref: np.ndarray, a_aux: np.ndarray, a_job: np.ndarray,
                      qd_job: np.ndarray, posture: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The aux arm's unlimited velocities (eq. 6 plus ``N v_p``, then the secondary rows'
        step) and ``B = S A_aux``.

        ``B^+ t + N v_p = v_p + B^+ (t - B v_p)``: the velocity nearest the posture
        velocity ``v_p`` among those that hold the rows (``t = -S A_job qd_job``).
        """
        if self.balance_enabled and self._s_index.size == 2 and not self._s2_index.size:
            # the paper's two rows: one compiled call while B B^T is well conditioned
            solved, qd_aux, s_a_aux, _ = kernels.held_rows_aux_2(
                a_ref, self._s_index, self._n_job, qd_job, posture, RCOND)
            if solved:
                return qd_aux, s_a_aux
        s_a_aux = a_aux[self._s_index]
        if not self.balance_enabled:
            return np.zeros(len(self._aux_names)), s_a_aux
        qd_aux = self._eq6(s_a_aux, a_job, qd_job, posture)
        if self._s2_index.size:
            qd_aux = qd_aux + self._secondary_step(s_a_aux, a_aux, a_job, qd_job, qd_aux)
        return qd_aux, s_a_aux

    def _limited(self, qd_job: np.ndarray, s_a_aux: np.ndarray, a_aux: np.ndarray,
                 a_job: np.ndarray, cycle: _Cycle) -> _Limited:
        """Both arms' velocities inside the box when the exact solution leaves it (step 4).

        The job velocities are ``basis @ [s, z]`` with ``basis = [d, n]``
        (:meth:`_job_basis`); the ``s`` at which some aux velocities in their box hold the
        rows comes from :func:`extreme_scale` over the job's half-planes and those of the
        aux box's zonotope (:func:`zonotope_halfspaces`): the largest with the job's
        half-planes that look furthest ahead (:meth:`_ahead_tiers`), else the smallest
        with those of the next tier that has one, down to the job box alone; where none
        has, :meth:`_stop_job`. Where even the job box's ``s <= 1`` leaves no motion (the
        request fell faster than the job arm can brake), ``s`` may exceed 1.
        """
        nj, box = self._n_job, cycle.box
        lo_aux, hi_aux = box.lower[nj:], box.upper[nj:]
        basis = self._job_basis(qd_job, cycle.jac)
        if not np.any(qd_job) and np.any(self._qd_prev[:nj]):
            # a request to stop from a motion the box cannot stop at once: brake that motion
            # in proportion along the last request's direction (job_scale 0: the request's)
            last = self._qd_prev[:nj] if cycle.jac is None or self._last_twist is None else \
                damped_least_squares(cycle.jac, self._last_twist, 0.0, 0.0)[0]
            stop = self._stop_job(qd_job, s_a_aux, a_aux, a_job, cycle,
                                  self._job_basis(last, cycle.jac), [],
                                  1e-12 * (1.0 + float(np.abs(last).max())))
            return stop._replace(scale=0.0)
        tol = 1e-12 * (1.0 + float(np.abs(basis).max()))
        plain = _job_halfplanes(basis, box.lower[:nj], box.upper[:nj])
        if extreme_scale(*plain, tol, lowest=True) is None:
            # the request fell faster than the job arm can brake: along it, as fast as it can
            faster = extreme_scale(*_job_halfplanes(basis, box.lower[:nj], box.upper[:nj],
                                                    math.inf), tol, lowest=True)
            if faster is not None:
                plain = _job_halfplanes(basis, box.lower[:nj], box.upper[:nj], faster[0])
        ahead, tiers = self._ahead_tiers(basis, cycle, plain, tol)
        held = a_job[self._s_index] @ basis  # the held rows per unit s and z
        # (without balance the aux arm holds still, as near zero as its box allows)
        aux_rows = _zonotope_rows(held, s_a_aux, lo_aux, hi_aux) if self.balance_enabled else \
            (np.zeros((0, 2)), np.zeros(0))
        along, lowest = None, False
        # the largest s looking ahead; past that the motion is already faster than looking
        # ahead allows: the smallest s that holds the rows
        candidates = [(True, tier) for tier in tiers]
        if ahead is not None:
            candidates.insert(0, (False, ahead))
        for lowest, (rows, bound) in candidates:
            along = extreme_scale(np.vstack([rows, aux_rows[0]]),
                                  np.concatenate([bound, aux_rows[1]]), tol, lowest=lowest)
            if along is not None:
                break
        if along is None:
            return self._stop_job(qd_job, s_a_aux, a_aux, a_job, cycle, basis, tiers, tol)
        s = along[0]
        smooth = None if lowest or self._s2_index.size or not self.balance_enabled else \
            self._smooth(basis, held, s_a_aux, cycle.posture, (rows, bound, tol), lo_aux, hi_aux)
        if smooth is not None and smooth[0] >= s - SCALE_TOLERANCE:
            s, qd_job, qd_aux = smooth
        else:
            qd_job = basis @ np.array(along)
            qd_aux = self._aux_in_box(s_a_aux, a_aux, a_job, qd_job, cycle.posture, lo_aux,
                                      hi_aux) if self.balance_enabled else \
                np.clip(np.zeros(len(lo_aux)), lo_aux, hi_aux)
        return _Limited(np.clip(qd_job, box.lower[:nj], box.upper[:nj]), qd_aux, s, _regime(s))

    def _job_basis(self, qd_job: np.ndarray, jac: np.ndarray | None) -> np.ndarray:
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

    def _ahead_tiers(self, basis: np.ndarray, cycle: _Cycle,
                     plain: tuple[np.ndarray, np.ndarray], tol: float,
                     ) -> tuple[tuple[np.ndarray, np.ndarray] | None,
                                list[tuple[np.ndarray, np.ndarray]]]:
        """The job's half-planes in ``(s, z)`` that look furthest ahead (None where they leave no
        motion), and the fallbacks, looking less ahead, down to the job box alone (``plain``).

        A motion that uses each joint's box to the full this cycle can leave none next
        cycle that keeps the direction: the joints must then change in proportion, so one
        joint's limit holds back all the others. Hence, in every tier, the box and

        - the self-motion (in the Jacobian's null space, orthogonal to ``d``) no faster
          than :meth:`_null_caps` (its curvature and its braking before a position
          limit; where the box cannot brake to that in one cycle, the nearest ``z`` it
          allows);

        in the first two also ``|z| <= s max(NULL_SHARE |d|, |z_0| / s_0)`` (with
        ``(s_0, z_0)`` the last command's coordinates): self-motion may not outgrow the
        motion along the path, and brakes with it, so that the path cannot come to rest
        while the arm still turns in its null space; and in the first also ``s`` at most
        :meth:`_scale_cap`, the speed from which the arm can brake along the path before a
        position limit and at which the path's curvature takes at most
        :data:`DRIFT_SHARE` of each acceleration limit (where the box cannot brake to it
        in one cycle, the lowest ``s`` it allows). The last is the job box alone.
        """
        rows, bound = plain
        d, n = basis[:, 0], basis[:, 1]
        box = cycle.box
        z_low, z_high = _null_range(rows, bound, basis, box.lower[:self._n_job],
                                    box.upper[:self._n_job], tol) if np.any(n) else (0.0, 0.0)
        least = 0.0 if z_low <= 0.0 <= z_high else min(abs(z_low), abs(z_high))
        up, down = self._null_caps(n, cycle)
        capped = (np.vstack([rows, [[0.0, 1.0], [0.0, -1.0]]]),
                  np.concatenate([bound, [max(up, z_low), max(down, -z_high)]]))
        d2 = float(d @ d)
        prev = self._qd_prev[:self._n_job]
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
        cap = max(self._scale_cap(d, cycle), lowest[0])
        ahead = (np.vstack([null[0], [[1.0, 0.0]]]), np.concatenate([null[1], [cap]]))
        return ahead, [null, capped, plain]

    def _null_caps(self, n: np.ndarray, cycle: _Cycle) -> tuple[float, float]:
        """The largest self-motion speeds [rad/s] along ``+n`` and ``-n`` (unit null vector).

        Each is the least of: the speed at which the turning of the null space,
        ``z^2 (dn/dq) n`` (a forward difference 1e-6 rad along ``n``), needs at most
        :data:`NULL_DRIFT_SHARE` of each job joint's acceleration limit; and the speed
        from which the self-motion can brake in proportion before a position limit, as
        :meth:`_scale_cap` for the path (:func:`_braking_scale`). Infinite without one.
        """
        if cycle.jac is None or not np.any(n):
            return math.inf, math.inf
        nj, dt = self._n_job, cycle.dt
        acceleration = self._job_acceleration
        step = 1e-6
        shifted = cycle.cfg.copy()
        shifted[self._arm_q[:nj]] += step * n
        jac = pin.computeFrameJacobian(self.model.model, self._drift_data, shifted,
                                       self._hand_frame, pin.LOCAL_WORLD_ALIGNED)[:, self._job_v]
        moved = np.linalg.svd(jac)[2][-1]
        moved = moved if float(moved @ n) >= 0.0 else -moved  # (an SVD's sign is arbitrary)
        drift = np.abs(moved - n) / step
        curved = drift > 0
        cap = math.inf if not curved.any() else float(
            np.sqrt(np.min(NULL_DRIFT_SHARE * acceleration[curved] / drift[curved])))
        q = self._job_ahead(dt)
        up, down = (_braking_scale(np.ascontiguousarray(sign * n), q, self._job_upper,
                                   self._job_lower, acceleration, dt, 1.0 - DRIFT_SHARE,
                                   PATH_BRAKING_FLOOR, cap)
                    for sign in (1.0, -1.0))
        return up, down

    def _job_ahead(self, dt: float) -> np.ndarray:
        """The job joints' commanded positions half a step ahead, as the box sees them (the
        cycle's configuration holds ``_q_cmd`` at the arm's indices)."""
        nj, q = self._n_job, self._q_cmd
        assert q is not None  # set by reset(), before any step
        return q[:nj] + 0.5 * self._qd_prev[:nj] * dt

    def _scale_cap(self, direction: np.ndarray, cycle: _Cycle, exact_drift: bool = True) -> float:
        """The largest ``s`` (at most 1) from which ``qd = s d`` can brake along its path.

        The job arm keeps its direction while braking only if every joint slows in
        proportion: ``s`` can fall at most at ``min_j a_j / |d_j|``, so joint ``i``
        brakes at ``a_i r_i`` with ``r_i = (|d_i| / a_i) / max_j (|d_j| / a_j)`` (at least
        :data:`PATH_BRAKING_FLOOR`), not at its own ``a_i``, and ``1 - DRIFT_SHARE`` of that
        is left beside the path's curvature: its speed towards a position limit is at most
        the stopping speed (:func:`~humanoid_balance.core.joint_limits.stopping_speed`) at
        that acceleration (:func:`_braking_scale`). And at a constant ``s`` the joints
        accelerate by ``s^2 (dd/dq) d`` (:meth:`_path_drift`), which grows without bound
        near a singularity: ``s^2 |(dd/dq) d|_i <= DRIFT_SHARE a_i``. Without
        ``exact_drift`` (the exact solution's check, every cycle) that difference is
        taken only where ``d`` changed since the last cycle by more than
        ``DRIFT_SHARE a dt`` in some joint (a change that includes the request's own).
        """
        dt = cycle.dt
        acceleration = self._job_acceleration
        cap = _braking_scale(np.ascontiguousarray(direction), self._job_ahead(dt),
                             self._job_upper, self._job_lower, acceleration, dt,
                             1.0 - DRIFT_SHARE, PATH_BRAKING_FLOOR, 1.0)
        if cycle.jac is None or (not exact_drift and np.all(
                np.abs(direction - self._d_prev) <= DRIFT_SHARE * acceleration * dt)):
            return cap
        drift = np.abs(self._path_drift(direction, cycle))
        curved = drift > 0
        if curved.any():
            cap = min(cap, float(np.sqrt(np.min(DRIFT_SHARE * acceleration[curved]
                                                / drift[curved]))))
        return cap

    def _path_drift(self, direction: np.ndarray, cycle: _Cycle) -> np.ndarray:
        """``(dd/dq) d`` [rad/s^2 per unit s^2]: the job joints' acceleration that keeps the hand
        on ``qd = s d(q)`` at a constant ``s`` (twist mode; zero for joint-velocity input,
        whose path is straight in joint space), by a forward difference of the exact job
        solve (:func:`damped_least_squares` without damping) 1e-6 rad along ``d``."""
        size = float(np.abs(direction).max())
        if cycle.jac is None or cycle.twist is None or size <= 0.0:
            return np.zeros_like(direction)
        step = 1e-6 / size
        shifted = cycle.cfg.copy()
        shifted[self._arm_q[:self._n_job]] += step * direction
        jac = pin.computeFrameJacobian(self.model.model, self._drift_data, shifted,
                                       self._hand_frame, pin.LOCAL_WORLD_ALIGNED)[:, self._job_v]
        moved = damped_least_squares(jac, cycle.twist, 0.0, 0.0)[0]
        return np.asarray((moved - direction) / step)

    def _smooth(self, basis: np.ndarray, held: np.ndarray, s_a_aux: np.ndarray,
                posture: np.ndarray, job: tuple[np.ndarray, np.ndarray, float],
                lo_aux: np.ndarray, hi_aux: np.ndarray,
                ) -> tuple[float, np.ndarray, np.ndarray] | None:
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
        e_rows, e_bound = _box_halfplanes(e, lo_aux - c, hi_aux - c)
        found = extreme_scale(np.vstack([rows, e_rows]), np.concatenate([bound, e_bound]), tol)
        if found is None:
            return None
        return found[0], basis @ np.array(found), np.clip(c + e @ np.array(found), lo_aux,
                                                           hi_aux)

    def _aux_in_box(self, s_a_aux: np.ndarray, a_aux: np.ndarray, a_job: np.ndarray,
                    qd_job: np.ndarray, posture: np.ndarray, lo_aux: np.ndarray,
                    hi_aux: np.ndarray, held: bool = True) -> np.ndarray:
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
        """
        target = -(a_job[self._s_index] @ qd_job)
        reference = self._eq6(s_a_aux, a_job, qd_job, posture)
        exact = 1e-13 * (1.0 + float(np.abs(target).max()))
        best = equality_polish(s_a_aux, target, np.clip(reference, lo_aux, hi_aux), lo_aux,
                               hi_aux)
        best_residual = float(np.abs(s_a_aux @ best - target).max())
        if held and not self._s2_index.size and best_residual <= exact:
            return best
        rows, rhs = [self.primary_weight * s_a_aux], [self.primary_weight * target]
        if self._s2_index.size:
            rows.append(a_aux[self._s2_index])
            rhs.append(-(a_job[self._s2_index] @ qd_job))
        rows.append(self.regularisation * np.eye(len(lo_aux)))
        rhs.append(self.regularisation * reference)
        if held:  # (at the largest scale the rows' target lies on the zonotope's boundary)
            x = boundary_preimage(s_a_aux, target, lo_aux, hi_aux)
            if x is not None and not self._s2_index.size:
                residual = float(np.abs(s_a_aux @ x - target).max())
                if residual <= exact:
                    return x
                if residual < best_residual:
                    best, best_residual = x, residual
        problems = [(np.vstack(rows), np.concatenate(rhs))]
        if held:
            problems.append((s_a_aux, target))
        for a, b in problems:
            x = _bvls(a, b, lo_aux, hi_aux)
            if not np.all(np.isfinite(x)):
                continue
            x = equality_polish(s_a_aux, target, np.clip(x, lo_aux, hi_aux), lo_aux, hi_aux)
            residual = float(np.abs(s_a_aux @ x - target).max())
            if residual < best_residual or (self._s2_index.size and residual <= exact):
                best, best_residual = x, residual
            if residual <= exact:
                break
        return best

    def _stop_aux(self, s_a_aux: np.ndarray, a_aux: np.ndarray, a_job: np.ndarray,
                  qd_job: np.ndarray, posture: np.ndarray, lo_aux: np.ndarray,
                  hi_aux: np.ndarray) -> np.ndarray:
        """Aux velocities in their box that cancel the largest share of the held rows' momentum:
        the target ``y = -S A_job qd_job`` moved towards the centre ``m`` of the box's image
        to where it enters it, ``m + a (y - m)`` with the largest ``a <= 1``
        (:func:`zonotope_halfspaces`), then found exactly (:func:`boundary_preimage`); where
        that fails, and with secondary rows, a bounded least-squares problem
        (:meth:`_aux_in_box`)."""
        target = -(a_job[self._s_index] @ qd_job)
        centre = s_a_aux @ (0.5 * (lo_aux + hi_aux))
        normals, offsets = zonotope_halfspaces(s_a_aux * (0.5 * (hi_aux - lo_aux)))
        reach = normals @ (target - centre)
        out = reach > offsets
        if not self._s2_index.size and out.any():
            share = float(np.min(offsets[out] / reach[out]))
            x = boundary_preimage(s_a_aux, centre + share * (target - centre), lo_aux, hi_aux)
            if x is not None:
                return x
        return self._aux_in_box(s_a_aux, a_aux, a_job, qd_job, posture, lo_aux, hi_aux,
                                held=not out.any())

    def _stop_job(self, qd_job: np.ndarray, s_a_aux: np.ndarray, a_aux: np.ndarray,
                  a_job: np.ndarray, cycle: _Cycle, basis: np.ndarray,
                  job_tiers: list[tuple[np.ndarray, np.ndarray]], tol: float) -> _Limited:
        """``STOPPING_JOB``: no motion along the request holds the rows; the job arm brakes
        along it, at most at its acceleration limits, and the aux arm comes as near to
        holding the rows as its box allows.

        The job arm brakes its whole motion in proportion, ``(s, z) = l (s_0, z_0)`` with
        ``(s_0, z_0)`` the last command's coordinates and ``l`` the smallest the job box
        allows: path and self-motion come to rest together. Where that line misses the box
        (the motion turned), the smallest ``s`` of the first of ``job_tiers`` that has any.
        """
        nj, box = self._n_job, cycle.box
        d2 = float(basis[:, 0] @ basis[:, 0])
        prev = self._qd_prev[:nj]
        coords = np.array([max(float(prev @ basis[:, 0]) / d2, 0.0) if d2 > 0.0 else 0.0,
                           float(prev @ basis[:, 1])])
        lowest = None
        if np.any(coords):
            line = _job_halfplanes(np.column_stack([basis @ coords, np.zeros(nj)]),
                                   box.lower[:nj], box.upper[:nj])
            found = extreme_scale(*line, tol, lowest=True)
            if found is not None:
                lowest = (found[0] * float(coords[0]), found[0] * float(coords[1]))
        for rows, bound in job_tiers if lowest is None else ():
            lowest = extreme_scale(rows, bound, tol, lowest=True)
            if lowest is not None:
                break
        if lowest is None:
            return self._turning(qd_job, s_a_aux, a_aux, a_job, cycle)
        job = np.clip(basis @ np.array(lowest), box.lower[:nj], box.upper[:nj])
        if self.balance_enabled:
            aux = self._stop_aux(s_a_aux, a_aux, a_job, job, cycle.posture, box.lower[nj:],
                                 box.upper[nj:])
        else:
            aux = np.clip(np.zeros(len(box.lower) - nj), box.lower[nj:], box.upper[nj:])
        return _Limited(job, aux, lowest[0], RmcRegime.STOPPING_JOB)

    def _turning(self, qd_job: np.ndarray, s_a_aux: np.ndarray, a_aux: np.ndarray,
                 a_job: np.ndarray, cycle: _Cycle) -> _Limited:
        """``TURNING``: no job motion in its box keeps the direction (:meth:`_nearest_solve`);
        the scale reported is the achieved hand twist's part along the request, in [0, 1]."""
        job, aux = self._nearest_solve(qd_job, s_a_aux, a_aux, a_job, cycle.box, cycle.jac,
                                       cycle.twist, cycle.posture)
        if cycle.jac is not None:
            wanted, got = cycle.jac @ qd_job, cycle.jac @ job
        else:
            wanted, got = qd_job, job
        norm2 = float(wanted @ wanted)
        scale = min(max(float(got @ wanted) / norm2, 0.0), 1.0) if norm2 > 0 else 0.0
        return _Limited(job, aux, scale, RmcRegime.TURNING)

    def _eq6(self, s_a_aux: np.ndarray, a_job: np.ndarray, qd_job: np.ndarray,
             posture: np.ndarray) -> np.ndarray:
        """Eq. 6 with the posture velocity: the aux velocities nearest ``v_p`` that hold the rows
        for the job arm's ``qd_job``, ``v_p + B^+ (-S A_job qd_job - B v_p)``."""
        return posture + minimum_norm_least_squares(
            s_a_aux, -(a_job[self._s_index] @ qd_job) - s_a_aux @ posture)

    def _nearest_solve(self, qd_job: np.ndarray, s_a_aux: np.ndarray, a_aux: np.ndarray,
                       a_job: np.ndarray, box: VelocityBox, jac: np.ndarray | None,
                       twist: np.ndarray | None, posture: np.ndarray,
                       ) -> tuple[np.ndarray, np.ndarray]:
        """Both arms in the box when no scale of the job motion fits: held rows first.

        One bounded least-squares problem in ``[qd_job, qd_aux]``: the held rows
        weighted :attr:`primary_weight`, then the job task at the last cycle's scale
        ``s`` (``J qd_job = s [v; w]``, or ``qd_job = s qd_ref`` in joint mode), then
        the minimum norm (the aux arm: nearest the posture velocity ``v_p``); the held
        rows are then met exactly where the aux joints allow.
        Without balance the aux arm holds still and only the job task is solved.
        """
        nj, n = self._n_job, len(box.lower)
        # aim at the part of the arm's present motion that lies along the request (at most the
        # request): the part across it then decays at the acceleration limits and the motion
        # lines up, where aiming at the last scale (1 after tracking, above 1 after braking
        # towards a request that fell) kept the job arm chasing a twist beyond its limits
        if jac is not None and twist is not None:
            task, request = jac, twist
        else:
            task, request = np.eye(nj), qd_job
        now = task @ self._qd_prev[:nj]
        norm2 = float(request @ request)
        scale = min(max(float(now @ request) / norm2, 0.0), 1.0) if norm2 > 0.0 else 0.0
        goal = scale * request
        if not self.balance_enabled:
            lo, hi = box.lower[:nj], box.upper[:nj]
            qd_job = self._bounded_solve(task, goal, lo, hi, np.clip(goal if task.shape[0] == nj
                                                                     else qd_job, lo, hi))
            return qd_job, np.clip(np.zeros(n - nj), box.lower[nj:], box.upper[nj:])
        held = np.hstack([a_job[self._s_index], s_a_aux])
        a = np.vstack([self.primary_weight * held,
                       np.hstack([task, np.zeros((task.shape[0], n - nj))]),
                       self.regularisation * np.eye(n)])
        b = np.concatenate([np.zeros(len(held)), goal, np.zeros(nj),
                            self.regularisation * posture])
        x = _bvls(a, b, box.lower, box.upper)
        qd_job = x[:nj]
        if not self._s2_index.size:
            # eq. 6 for the job velocities found, where it fits the aux box: exact, and it
            # follows them (the bounded solve's aux part jumps between corners of the box)
            exact = self._eq6(s_a_aux, a_job, qd_job, posture)
            if kernels.inside(exact, box.lower, box.upper, nj):
                return qd_job, exact
        qd_aux = equality_polish(s_a_aux, -a_job[self._s_index] @ qd_job, x[nj:],
                                 box.lower[nj:], box.upper[nj:])
        return qd_job, qd_aux

    def _secondary_step(self, s_a_aux: np.ndarray, a_aux: np.ndarray, a_job: np.ndarray,
                        qd_job: np.ndarray, qd_aux: np.ndarray) -> np.ndarray:
        """``N z``: the null-space motion of the held rows that best cancels the secondary rows."""
        n = s_a_aux.shape[1]
        b_pinv = np.column_stack([minimum_norm_least_squares(s_a_aux, e)
                                  for e in np.eye(s_a_aux.shape[0])])
        null = np.eye(n) - b_pinv @ s_a_aux
        a2 = a_aux[self._s2_index]
        residual = a2 @ qd_aux + a_job[self._s2_index] @ qd_job
        z = -minimum_norm_least_squares(a2 @ null, residual)
        return np.asarray(null @ z)

    def _bounded_solve(self, a: np.ndarray, b: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                       prior: np.ndarray) -> np.ndarray:
        """``min |a x - b|^2 + rho^2 |x - prior|^2`` subject to ``lower <= x <= upper`` (BVLS)."""
        n = a.shape[1]
        rho = self.regularisation
        return _bvls(np.vstack([a, rho * np.eye(n)]), np.concatenate([b, rho * prior]),
                     lower, upper)


def _bvls(a: np.ndarray, b: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
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


@kernels.compiled
def _braking_scale(direction: np.ndarray, q: np.ndarray, upper: np.ndarray, lower: np.ndarray,
                   acceleration: np.ndarray, dt: float, share: float, floor: float,
                   ceiling: float) -> float:
    """The largest ``s <= ceiling`` at which every joint of ``qd = s d`` is at most its stopping speed
    towards the limit it moves to, braking at ``share a_i max(r_i, floor)`` with
    ``r_i = (|d_i| / a_i) / max_j (|d_j| / a_j)`` (:meth:`RmcController._scale_cap`;
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


def _warm_up() -> None:
    """Compile this module's kernel now (:func:`humanoid_balance.core.kernels.warm_up`)."""
    extreme_scale(np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]]), np.ones(4))
    v = np.ones(2)
    _braking_scale(v, v, v, -v, v, 0.002, 0.5, 1e-3, 1.0)


class _Cycle(NamedTuple):
    """What a limited cycle's solves need besides the momentum matrices."""

    cfg: np.ndarray  # the configuration with the commanded arm positions
    box: VelocityBox  # both arms' velocity box [rad/s]
    jac: np.ndarray | None  # the job hand's Jacobian (twist mode)
    twist: np.ndarray | None  # the requested hand twist (twist mode)
    posture: np.ndarray  # the aux posture velocity [rad/s]
    dt: float  # the period [s]


class _Limited(NamedTuple):
    """A limited cycle's job and aux velocities [rad/s], job scale and regime."""

    job: np.ndarray
    aux: np.ndarray
    scale: float
    regime: RmcRegime


def _regime(scale: float) -> RmcRegime:
    """TRACKING at ``s = 1``, SCALED below, STOPPING_JOB above (braking towards a request that
    fell faster than the acceleration limits follow)."""
    if scale == 1.0:
        return RmcRegime.TRACKING
    return RmcRegime.SCALED if scale < 1.0 else RmcRegime.STOPPING_JOB


#: ``0 <= s <= top`` as half-planes in ``(s, z)`` (:func:`_job_halfplanes`).
_SCALE_ROWS = np.array([[1.0, 0.0], [-1.0, 0.0]])


def _null_range(rows: np.ndarray, bound: np.ndarray, basis: np.ndarray, lower: np.ndarray,
                upper: np.ndarray, tol: float) -> tuple[float, float]:
    """The least and the largest ``z`` in the job's region ``rows @ [s, z] <= bound`` ((0, 0) when
    it is empty), with ``[lower, upper]`` the job box of ``qd = basis @ [s, z]`` and the last
    two rows ``0 <= s <= top`` (:func:`_job_halfplanes`).

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


def _box_halfplanes(columns: np.ndarray, lower: np.ndarray,
                    upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``lower <= columns @ p <= upper`` as half-planes ``rows @ p <= bound``."""
    return np.vstack([columns, -columns]), np.concatenate([upper, -lower])


def _job_halfplanes(basis: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                    top: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The job box for ``qd = basis @ [s, z]`` and ``0 <= s <= top`` as half-planes in ``(s, z)``."""
    rows, bound = _box_halfplanes(basis, lower, upper)
    return np.vstack([rows, _SCALE_ROWS]), np.concatenate([bound, [top, 0.0]])


def _zonotope_rows(held: np.ndarray, s_a_aux: np.ndarray, lo_aux: np.ndarray,
                   hi_aux: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Half-planes in ``(s, z)`` where some aux velocities in ``[lo_aux, hi_aux]`` hold the rows.

    The rows are held when ``-held @ [s, z]`` lies in the zonotope ``{B x : lo <= x <= hi}``
    (``B = S A_aux``), the centre ``B (lo + hi) / 2`` plus the generators
    ``B_i (hi_i - lo_i) / 2`` (:func:`zonotope_halfspaces`).
    """
    centre = s_a_aux @ (0.5 * (lo_aux + hi_aux))
    generators = s_a_aux * (0.5 * (hi_aux - lo_aux))
    thin = 1e-12 * (1.0 + float(np.abs(generators).sum()) + float(np.abs(centre).max()))
    normals, offsets = zonotope_halfspaces(generators, thin)
    return -(normals @ held), offsets + normals @ centre


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
    k = generators.shape[0]
    norms = np.linalg.norm(generators, axis=0)
    keep = norms > rcond * float(norms.max(initial=0.0))
    g = generators[:, keep]
    if k == 2 and g.shape[1] >= 2:  # (the paper's two rows, every cycle: no SVD)
        cross = np.abs(g[0, 0] * g[1] - g[1, 0] * g[0])
        if float(cross.max()) > rcond * float(norms[keep][0]) * float(norms[keep].max()):
            normals = np.column_stack([-g[1], g[0]]) / norms[keep][:, None]
            offsets = np.abs(normals @ g).sum(axis=1)
            return np.vstack([normals, -normals]), np.concatenate([offsets, offsets])
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
    return (np.vstack([normals, -normals, missing.T, -missing.T]),
            np.concatenate([offsets, offsets, np.full(2 * (k - rank), thin)]))


def boundary_preimage(b_matrix: np.ndarray, target: np.ndarray, lower: np.ndarray,
                      upper: np.ndarray) -> np.ndarray | None:
    """Some ``x`` in ``[lower, upper]`` with ``B x = target`` for a target on the boundary of the
    box's image (the zonotope ``B [lower, upper]``), or None when it lies inside it.

    On a face with outward normal ``u`` (:func:`zonotope_halfspaces`) every entry whose
    column is not parallel to the face (``u^T B_i != 0``) must sit at the bound in the
    direction of ``sign(u^T B_i)``; the others solve the rest by least squares and
    :func:`equality_polish`. Exact where a bounded least-squares solver stalls: a
    target on the boundary has no interior point to approach it from.
    """
    half = 0.5 * (upper - lower)
    centre = 0.5 * (upper + lower)
    generators = b_matrix * half
    normals, offsets = zonotope_halfspaces(generators)
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
