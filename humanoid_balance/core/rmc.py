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

import math
from collections.abc import Sequence
from dataclasses import dataclass

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
#: Weight of ``s - 1`` (the job scale's shortfall) in the limited solve: below the held rows'
#: ``primary_weight``, above the secondary rows (weight 1).
SCALE_WEIGHT = 1e3
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
        damping: ``lambda^2`` used in the job inverse.
        indicators: balance indicators of this cycle.
        job_scale: the factor ``s`` the whole job motion was scaled by to fit the limits
            (1: unscaled; ``job_velocity = s * J^# [v; w]``, so the hand keeps its
            direction); NaN when no scale fits and the job arm got the nearest motion.
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


class RmcController:
    """Resolved momentum control of the two arms (seed 000, eqs. 1-6), limits every cycle.

    Each :meth:`step`:

    1. ``A = computeCentroidalMap(q)``, angular rows shifted to the reference
       point; the arm columns give ``A_job``, ``A_aux`` (eq. 1).
    2. Job arm: ``qd_job = J^# [v; w]`` with ``J^#`` the damped pseudo-inverse of
       :func:`damped_least_squares` (exact pseudo-inverse while the smallest
       singular value is above ``damping_threshold``), or the given joint
       velocities.
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
       ``position_margin``, velocity, acceleration). When the exact solution of
       steps 2-3 leaves a box, the whole job motion is scaled instead of clipping
       joints one by one: ``qd_job = s d`` (``d`` the unlimited job velocities, so
       the hand keeps its twist's direction, ``J qd_job = s [v; w]``), with ``s``
       in the interval where ``s d`` fits the job box (:func:`scale_interval`), and
       ``qd_aux`` in the aux box: first eq. 6 on ``s d``, at the ``s`` nearest 1 where
       its aux velocities fit the aux box too (held rows exact, the aux arm moving
       smoothly); only when no ``s`` does, from one bounded least-squares problem in
       ``[s, qd_aux]`` whose priorities are the held rows (weight
       ``primary_weight``), then ``s`` as close to 1 as they allow
       (:data:`SCALE_WEIGHT`), then the secondary rows; the held rows are then met
       exactly by :func:`equality_polish`. So the selected momentum stays zero and
       the job arm slows down along its path when either arm's limits require it;
       ``job_scale`` reports ``s`` and ``job_exact`` is False when ``s < 1``;
       ``balance_exact`` is False when the aux arm could not use its unlimited
       solution. Only when no ``s >= 0`` fits the job box (the direction turns
       faster than the acceleration limits allow) do the job arm's velocities
       leave the direction: one bounded least-squares problem in both arms, held
       rows first, then the job task at the last scale (``job_scale`` NaN); the aux
       arm then takes eq. 6 for the job velocities found where that fits its box. No
       command ever leaves the boxes, so no position, velocity or acceleration
       limit is crossed (the acceleration limit yields to the other two only
       when they cannot be met together, see ``acceleration_overridden``).
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
        if model.floating_base:
            raise ConfigurationError(
                "RmcController needs the fixed-base humanoid (legs and waist locked, W on the "
                "ground): build RobotModel(urdf, world_frame='W')")
        for label, value, low in (("friction_coefficient", friction_coefficient, 0.0),
                                  ("foot_distance", foot_distance, 0.0),
                                  ("damping_threshold", damping_threshold, 0.0),
                                  ("max_damping", max_damping, 0.0),
                                  ("position_margin", position_margin, 0.0),
                                  ("regularisation", regularisation, 0.0),
                                  ("posture_gain", posture_gain, 0.0)):
            if not np.isfinite(value) or value < low:
                raise ConfigurationError(f"{label}={value} must be finite and >= {low}")
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
        arm_names = model.group("right_arm") + model.group("left_arm")
        if limits is None:
            lower, upper = model.position_limits(arm_names)
            limits = JointLimits(
                arm_names, lower, upper, model.velocity_limits(arm_names),
                np.array([arm_acceleration_limit(n) for n in arm_names]))
        self._all_limits = limits
        self._limit_index = {n: i for i, n in enumerate(limits.names)}
        missing = [n for n in arm_names if n not in self._limit_index]
        if missing:
            raise ConfigurationError(f"limits has no entry for arm joints {missing}")
        # constant parts: welded mass, the W point, sizes
        self._mass = model.total_mass
        welded = model.model.inertias[0]
        self._welded_mass = float(welded.mass)
        self._welded_lever = np.array(welded.lever)
        self._w_point = model.frame_transform("W", model.neutral())[:3, 3].copy()
        self._gravity = model.gravity
        self._moving_share = (self._mass - self._welded_mass) / self._mass
        self._welded_part = self._welded_mass * self._welded_lever / self._mass
        for label, value, unit in (("posture_speed", posture_speed, "rad/s"),
                                   ("posture_acceleration", posture_acceleration, "rad/s^2")):
            if not math.isfinite(value) or value <= 0:
                raise ConfigurationError(f"{label}={value} must be finite and > 0 {unit}")
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
        self._last_scale = 1.0
        self._posture_prev = np.zeros(len(self._aux_names))

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
        self._last_scale = 1.0
        self._posture_prev = np.zeros(len(self._aux_names))

    def _check_q(self, q: np.ndarray) -> np.ndarray:
        q = np.asarray(q, dtype=float)
        if q.shape != (self.model.nq,):
            raise InvalidInputError(f"q has shape {q.shape}, expected ({self.model.nq},)")
        if not kernels.all_finite(q):
            raise InvalidInputError("q has non-finite entries: no command is computed from it")
        return q

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

        cfg = q.copy()
        cfg[self._arm_q] = self._q_cmd
        a_w, a_com, com = self._momentum_about_w(cfg)
        a_ref = a_w if a_com is None else a_com
        nj = self._n_job
        a_job = a_ref[:, :nj]
        a_aux = a_ref[:, nj:]

        # job arm (eq. 3)
        sigma_min = float("nan")
        lam2 = 0.0
        jac = None
        if twist is not None:
            jac = pin.computeFrameJacobian(self.model.model, self.model.data, cfg, self._hand_frame,
                                           pin.LOCAL_WORLD_ALIGNED)[:, self._job_v]
            qd_job, sigma_min, lam2 = damped_least_squares(
                jac, twist, self.damping_threshold, self.max_damping)
        elif joint_v is not None:
            qd_job = joint_v.copy()
        else:
            qd_job = np.zeros(nj)
        # the limits see the joints half a step of the last velocity ahead: the box's Euler
        # q + qd dt then bounds the trapezoid below, q + (qd_prev + qd) dt / 2, when braking
        box = self._boxer(self._q_cmd, self._qd_prev, dt, ahead=0.5)
        # aux arm (eq. 6), for the job arm's unlimited velocities
        posture = self._posture_velocity(dt)
        qd_aux, s_a_aux = self._aux_solution(a_ref, a_aux, a_job, qd_job, posture)
        job_exact = kernels.inside(qd_job, box.lower, box.upper, 0)
        balance_exact = kernels.inside(qd_aux, box.lower, box.upper, nj)
        scale = 1.0
        if not (job_exact and balance_exact):
            limited = self._limited(qd_job, s_a_aux, a_aux, a_job, box, jac, twist, posture)
            qd_job, qd_aux = np.ascontiguousarray(limited[0]), np.ascontiguousarray(limited[1])
            scale = limited[2]
            job_exact = scale == 1.0
        if math.isfinite(scale):
            self._last_scale = scale

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
            indicators=indicators, job_scale=scale)

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
                 a_job: np.ndarray, box: VelocityBox, jac: np.ndarray | None,
                 twist: np.ndarray | None, posture: np.ndarray,
                 ) -> tuple[np.ndarray, np.ndarray, float]:
        """Both arms' velocities inside the box when the exact solution leaves it (step 4).

        Returns:
            ``qd_job``, ``qd_aux`` and the job scale (``nan``: the direction could not be kept).
        """
        nj = self._n_job
        lo_job, hi_job = box.lower[:nj], box.upper[:nj]
        lo_aux, hi_aux = box.lower[nj:], box.upper[nj:]
        interval = scale_interval(qd_job, lo_job, hi_job)
        if interval is None:  # no scale fits (the direction turned faster than the box allows)
            qd_job, qd_aux = self._nearest_solve(qd_job, s_a_aux, a_aux, a_job, box, jac, twist,
                                                 posture)
            return qd_job, qd_aux, float("nan")
        s_lo, s_hi = interval
        if not self.balance_enabled:
            scale = min(max(1.0, s_lo), s_hi)
            return scale * qd_job, np.clip(np.zeros(len(lo_aux)), lo_aux, hi_aux), scale
        exact = self._scaled_exact(qd_job, s_a_aux, a_job, s_lo, s_hi, lo_aux, hi_aux, posture)
        if exact is not None:
            scale, qd_aux = exact
        else:
            scale, qd_aux = self._scaled_solve(qd_job, s_a_aux, a_aux, a_job, s_lo, s_hi,
                                               lo_aux, hi_aux, posture)
        return scale * qd_job, qd_aux, scale

    def _eq6(self, s_a_aux: np.ndarray, a_job: np.ndarray, qd_job: np.ndarray,
             posture: np.ndarray) -> np.ndarray:
        """Eq. 6 with the posture velocity: the aux velocities nearest ``v_p`` that hold the rows
        for the job arm's ``qd_job``, ``v_p + B^+ (-S A_job qd_job - B v_p)``."""
        return posture + minimum_norm_least_squares(
            s_a_aux, -(a_job[self._s_index] @ qd_job) - s_a_aux @ posture)

    def _scaled_exact(self, direction: np.ndarray, s_a_aux: np.ndarray, a_job: np.ndarray,
                      s_lo: float, s_hi: float, lo_aux: np.ndarray, hi_aux: np.ndarray,
                      posture: np.ndarray) -> tuple[float, np.ndarray] | None:
        """The job scale ``s`` nearest 1 at which eq. 6's aux velocities for ``s d`` fit the aux
        box too, and those velocities; None when none does (or with secondary rows).

        Eq. 6 is linear in the job velocities: ``qd_aux(s) = c + s g`` with ``c`` the
        posture velocity's part in the rows' null space and ``g = -B^+ S A_job d``, so
        the scales that keep every aux joint in its box form an interval
        (:func:`scale_interval`, shifted by ``c``). The held rows are then exact for
        every ``s``, and the aux velocities change with ``s`` and the box only: the
        bounded solve of :meth:`_scaled_solve`, which may move the aux arm anywhere in the
        rows' null space for a larger ``s``, put it on another corner of its box nearly
        every cycle (its acceleration reversed in 58-65 % of the joint-cycles along the
        strike at 2-3x its speed, ``tools/limit_chatter.py``).
        """
        if self._s2_index.size:
            return None
        c = self._eq6(s_a_aux, a_job, np.zeros_like(direction), posture)
        g = self._eq6(s_a_aux, a_job, direction, np.zeros_like(posture))
        interval = scale_interval(g, lo_aux - c, hi_aux - c)
        if interval is None:
            return None
        lo, hi = max(s_lo, interval[0]), min(s_hi, interval[1])
        if lo > hi:
            return None
        scale = min(max(1.0, lo), hi)
        # (clipped: a rounding at a bound must not leave the box)
        return scale, np.clip(c + scale * g, lo_aux, hi_aux)

    def _scaled_solve(self, direction: np.ndarray, s_a_aux: np.ndarray, a_aux: np.ndarray,
                      a_job: np.ndarray, s_lo: float, s_hi: float, lo_aux: np.ndarray,
                      hi_aux: np.ndarray, posture: np.ndarray) -> tuple[float, np.ndarray]:
        """Job scale ``s`` and ``qd_aux``: held rows first, then ``s`` near 1, then secondary rows.

        One bounded least-squares problem in ``x = [s, qd_aux]`` with the held rows
        weighted :attr:`primary_weight`, the scale :data:`SCALE_WEIGHT`, the secondary
        rows 1 and the aux velocities' distance to the posture velocity ``v_p``
        :attr:`regularisation`; then the held rows are
        met exactly by a minimum-norm correction of the aux joints not at a bound
        (:func:`equality_polish`).
        """
        n = a_aux.shape[1]
        w = self.primary_weight
        b_job = a_job[self._s_index] @ direction
        rows = [np.column_stack([w * b_job, w * s_a_aux]),
                np.concatenate([[SCALE_WEIGHT], np.zeros(n)])[None, :]]
        target = [np.zeros(len(b_job)), np.array([SCALE_WEIGHT])]
        if self._s2_index.size:
            rows.append(np.column_stack([a_job[self._s2_index] @ direction,
                                         a_aux[self._s2_index]]))
            target.append(np.zeros(self._s2_index.size))
        rows.append(np.column_stack([np.zeros(n), self.regularisation * np.eye(n)]))
        target.append(self.regularisation * posture)
        s_top = max(s_lo, min(1.0, s_hi))
        x = _bvls(np.vstack(rows), np.concatenate(target),
                  np.concatenate([[s_lo], lo_aux]), np.concatenate([[s_top], hi_aux]))
        scale = float(x[0])
        qd_aux = equality_polish(s_a_aux, -scale * b_job, np.clip(x[1:], lo_aux, hi_aux),
                                 lo_aux, hi_aux)
        return scale, qd_aux

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
        if jac is not None and twist is not None:
            task, goal = jac, self._last_scale * twist
        else:
            task, goal = np.eye(nj), self._last_scale * qd_job
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
    """``min |a x - b|^2`` subject to ``lower <= x <= upper`` (BVLS); fixed entries eliminated."""
    free = upper - lower > 0
    if free.all():
        return np.asarray(lsq_linear(a, b, bounds=(lower, upper), method="bvls").x)
    x = lower.copy()
    if np.any(free):
        rhs = b - a[:, ~free] @ lower[~free]
        x[free] = lsq_linear(a[:, free], rhs, bounds=(lower[free], upper[free]), method="bvls").x
    return x


def scale_interval(direction: np.ndarray, lower: np.ndarray,
                   upper: np.ndarray) -> tuple[float, float] | None:
    """The scales ``s >= 0`` with ``lower <= s * direction <= upper``, or None when there is none.

    .. math::

        s \\in [\\max(0, \\max_i l_i), \\min_i u_i], \\quad
        [l_i, u_i] = [lower_i, upper_i] / d_i \\ (\\text{swapped for } d_i < 0)

    A joint with ``d_i = 0`` allows every scale when its box holds 0, none otherwise.

    Args:
        direction: the unlimited joint velocities ``d`` [rad/s].
        lower: the box's lower bounds [rad/s].
        upper: the box's upper bounds [rad/s].

    Returns:
        ``(s_min, s_max)``, or None when no ``s >= 0`` fits the box.
    """
    s_lo, s_hi = 0.0, math.inf
    for d, lo, hi in zip(direction.tolist(), lower.tolist(), upper.tolist(), strict=True):
        if d == 0.0:
            if lo > 0.0 or hi < 0.0:
                return None
            continue
        a, b = (lo / d, hi / d) if d > 0 else (hi / d, lo / d)
        s_lo, s_hi = max(s_lo, a), min(s_hi, b)
    if s_lo > s_hi:
        return None
    return s_lo, s_hi


def equality_polish(b_matrix: np.ndarray, target: np.ndarray, x: np.ndarray, lower: np.ndarray,
                    upper: np.ndarray, iterations: int = 4) -> np.ndarray:
    """``x`` corrected so that ``B x = target`` exactly, moving only entries not at a bound.

    The correction is the minimum-norm ``dx`` of the free entries with ``B dx = target - B x``;
    an entry it pushes out of ``[lower, upper]`` is clipped and held, and the rest is
    corrected again (``iterations`` rounds). ``x`` is returned unchanged when the free
    entries cannot reach the target.
    """
    out = x.copy()
    free = (out > lower + 1e-12) & (out < upper - 1e-12)
    for _ in range(iterations):
        residual = target - b_matrix @ out
        if not free.any() or float(np.max(np.abs(residual))) <= 1e-15:
            break
        sub = b_matrix[:, free]
        if np.linalg.matrix_rank(sub) < b_matrix.shape[0]:
            return x
        dx = np.linalg.lstsq(sub, residual, rcond=None)[0]
        trial = out.copy()
        trial[free] += dx
        clipped = np.clip(trial, lower, upper)
        out = clipped
        moved_out = (trial != clipped) & free
        if not moved_out.any():
            break
        free &= ~moved_out
    return out
