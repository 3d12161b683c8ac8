"""The resolved momentum controller of the two arms (seed 000, eqs. 1-6), limits every cycle.

Configuration between cycles (job arm, held rows, aux posture) and one :meth:`RmcController.step`
per cycle: the momentum matrices, the job arm's solve (eq. 3), the aux arm's (eq. 6), the
limit step (:mod:`humanoid_balance.core.rmc.limit_step`) and the commit of the command.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pinocchio as pin

from humanoid_balance.core import kernels
from humanoid_balance.core.joint_limits import JointLimits, VelocityBoxer, arm_acceleration_limit
from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.rmc.cycle import Cycle, RmcInput, RmcOutput, RmcRegime
from humanoid_balance.core.rmc.held_rows import HeldRows
from humanoid_balance.core.rmc.indicators import balance_indicators
from humanoid_balance.core.rmc.limit_step import LimitStep
from humanoid_balance.core.rmc.lookahead import JobLookahead, braking_scale
from humanoid_balance.core.rmc.momentum import (
    MOMENTUM_ROWS,
    PAPER_SELECTION,
    arm_groups,
    check_reference_point,
    selection_matrix,
    selection_rows,
)
from humanoid_balance.core.rmc.polygon import ConvexPolygon
from humanoid_balance.core.rmc.posture import (
    AUX_READY_POSTURE,
    POSTURE_ACCELERATION,
    POSTURE_GAIN,
    POSTURE_SPEED,
    check_posture,
    posture_target,
    posture_velocity,
)
from humanoid_balance.core.rmc.scale_program import extreme_scale
from humanoid_balance.core.rmc.solvers import damped_least_squares
from humanoid_balance.exceptions import ConfigurationError, InvalidInputError

__all__ = ["STOP_TWIST", "RmcController"]

#: A job twist [m/s, rad/s] no component of which exceeds this asks the job arm to stop (a zero
#: computed with rounding has no direction to scale along).
STOP_TWIST = 1e-12


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


def _warm_up() -> None:
    """Compile the limit step's kernels now (:func:`humanoid_balance.core.kernels.warm_up`)."""
    extreme_scale(np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]]), np.ones(4))
    v = np.ones(2)
    braking_scale(v, v, v, -v, v, 0.002, 0.5, 1e-3, 1.0)


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
         the job arm a way to brake along its path (:meth:`JobLookahead.scale_cap`); ``s = 1``.
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
         bounded: :meth:`JobLookahead.ahead_tiers`); where none of those holds the rows, the
         smallest ``s`` that does with less looking ahead. The aux arm takes eq. 6
         (with the posture velocity) for that job motion where it fits its box at the
         same ``s`` (held rows exact, the aux arm moving smoothly), else velocities in
         its box that meet the held rows exactly (:meth:`HeldRows.in_box`). So the held
         rows stay zero wherever any motion along the request within both boxes holds
         them.
       - ``STOPPING_JOB``: where none does (the aux arm at its limits), the job arm
         brakes its whole motion in proportion, at most at its acceleration limits and
         along the request (:meth:`LimitStep.stop_job`), and the aux arm cancels as much of the
         held momentum as its box allows (:meth:`HeldRows.stop`). Also when the request
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
        check_reference_point(reference_point)
        self.model = model
        self.friction_coefficient = float(friction_coefficient)
        self.foot_distance = float(foot_distance)
        self.damping_threshold = float(damping_threshold)
        self.max_damping = float(max_damping)
        self.position_margin = float(position_margin)
        self._regularisation = float(regularisation)
        self.reference_point = reference_point
        self.support_polygon: ConvexPolygon | None = (
            None if support_polygon is None else ConvexPolygon(support_polygon))
        #: False: the aux arm holds still (no RMC), for comparisons
        self.balance_enabled = True
        self._all_limits = _arm_limits(model, limits)
        self._limit_index = {n: i for i, n in enumerate(self._all_limits.names)}
        self._mass_constants(model)
        _check_positive("posture_speed", posture_speed, "rad/s")
        _check_positive("posture_acceleration", posture_acceleration, "rad/s^2")
        self.posture_gain = float(posture_gain)
        self.posture_speed = float(posture_speed)
        self.posture_acceleration = float(posture_acceleration)
        self.aux_posture: tuple[float, ...] | None = check_posture(aux_posture)
        self.job_arm = job_arm
        self._configure_arms(job_arm)
        if not np.isfinite(primary_weight) or primary_weight <= 0:
            raise ConfigurationError(f"primary_weight={primary_weight} must be finite and > 0")
        self._primary_weight = float(primary_weight)
        self.selection: tuple[str, ...] = ()
        self.secondary: tuple[str, ...] = ()
        self.set_selection(selection, secondary)
        self._q_cmd: np.ndarray | None = None
        self._qd_prev = np.zeros(len(self._names))
        self._h_prev_w = np.zeros(6)
        self._posture_prev = np.zeros(len(self._aux_names))
        self._d_prev = np.zeros(self._n_job)  # last cycle's unlimited job velocities [rad/s]
        self._last_twist: np.ndarray | None = None  # the last non-zero twist asked for

    def _mass_constants(self, model: RobotModel) -> None:
        """The constant parts of every cycle: the welded mass, the W point, the gravity."""
        self._mass = model.total_mass
        welded = model.model.inertias[0]
        self._welded_mass = float(welded.mass)
        self._welded_lever = np.array(welded.lever)
        self._w_point = model.frame_transform("W", model.neutral())[:3, 3].copy()
        self._gravity = model.gravity
        self._moving_share = (self._mass - self._welded_mass) / self._mass
        self._welded_part = self._welded_mass * self._welded_lever / self._mass

    # --- configuration (between cycles) -------------------------------------

    def _configure_arms(self, job_arm: str) -> None:
        job_group, aux_group = arm_groups(job_arm)
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
        nj, margin = self._n_job, self.position_margin
        self._lookahead = JobLookahead(m, self._hand_frame, self._job_v, self._arm_q[:nj],
                                       self._limits.lower[:nj] + margin,
                                       self._limits.upper[:nj] - margin,
                                       self._limits.acceleration[:nj])

    def _aux_posture_target(self, posture: tuple[float, ...] | None) -> np.ndarray | None:
        """The aux arm's posture [rad] in :attr:`aux_names` order, checked against its limits."""
        nj = self._n_job
        return posture_target(posture, self._aux_names, self._limits.lower[nj:],
                              self._limits.upper[nj:], self.position_margin)

    def set_aux_posture(self, posture: Sequence[float] | None, gain: float | None = None) -> None:
        """Change the aux arm's posture [rad] (right-arm signs) and its gain [1/s] between cycles.

        Raises:
            ConfigurationError: not 7 finite angles, outside the limits, or a bad gain;
                nothing is changed then.
        """
        checked = check_posture(posture)
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
        """``v_p`` [rad/s] of this cycle (:func:`~humanoid_balance.core.rmc.posture.posture_velocity`):
        off when balance is disabled."""
        n = len(self._aux_names)
        prev = self._posture_prev if self._posture_prev.shape == (n,) else np.zeros(n)
        q_aux = self._q_cmd[self._n_job:] if self._q_cmd is not None and self.balance_enabled \
            else None
        return posture_velocity(self._posture_target, q_aux, self.posture_gain,
                                self.posture_speed, self.posture_acceleration, prev, dt)

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
        self._rows = HeldRows(self._s_index,
                              np.array([MOMENTUM_ROWS.index(r) for r in second], dtype=int),
                              self._primary_weight, self._regularisation)

    @property
    def primary_weight(self) -> float:
        """Weight of the held rows over the secondary rows in the bounded solve."""
        return self._primary_weight

    @property
    def regularisation(self) -> float:
        """Weight of the minimum-norm term in the bounded solves."""
        return self._regularisation

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
    def limits(self) -> JointLimits:
        """The arms' joint limits in the order of :attr:`names`: the box's every cycle (with
        :attr:`position_margin`)."""
        return self._limits

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
                   moving: bool) -> tuple[np.ndarray, np.ndarray | None, float, float]:
        """Step 2: the unlimited job velocities [rad/s], the hand Jacobian (twist mode, else
        None), ``sigma_min`` and the ``lambda^2`` the damped inverse would use (not used:
        where it acts the exact pseudo-inverse is returned, which step 4 scales). A twist
        not ``moving`` (within :data:`STOP_TWIST` of zero) asks the job arm to stop."""
        if twist is None:
            return (np.zeros(self._n_job) if joint_v is None else joint_v.copy()), None, \
                float("nan"), 0.0
        jac = pin.computeFrameJacobian(self.model.model, self.model.data, cfg, self._hand_frame,
                                       pin.LOCAL_WORLD_ALIGNED)[:, self._job_v]
        qd_job, sigma_min, lam2 = damped_least_squares(jac, twist, self.damping_threshold,
                                                       self.max_damping)
        if not moving:  # (a zero with rounding: no direction)
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
        moving = twist is not None and float(np.abs(twist).max()) > STOP_TWIST

        cfg = q.copy()
        cfg[self._arm_q] = self._q_cmd
        a_w, a_com, com = self._momentum_about_w(cfg)
        a_ref = a_w if a_com is None else a_com
        nj = self._n_job
        a_job = a_ref[:, :nj]
        a_aux = a_ref[:, nj:]
        qd_job, jac, sigma_min, lam2 = self._job_solve(cfg, twist, joint_v, moving)  # (eq. 3)
        if moving:
            self._last_twist = twist
        # the limits see the joints half a step of the last velocity ahead: the box's Euler
        # q + qd dt then bounds the trapezoid below, q + (qd_prev + qd) dt / 2, when braking
        box = self._boxer(self._q_cmd, self._qd_prev, dt, ahead=0.5)
        # aux arm (eq. 6), for the job arm's unlimited velocities
        posture = self._posture_velocity(dt)
        qd_aux, s_a_aux = self._rows.unlimited(a_ref, a_aux, a_job, qd_job, posture, nj,
                                               self.balance_enabled)
        prev = self._qd_prev[:nj]
        cycle = Cycle(cfg, box, jac, twist, posture, dt, prev, self._q_cmd[:nj] + 0.5 * prev * dt,
                      self._last_twist, self.balance_enabled)
        # (the unlimited motion must also leave a way to brake along its path: scale_cap)
        job_exact = lam2 == 0.0 and kernels.inside(qd_job, box.lower, box.upper, 0) and \
            self._lookahead.scale_cap(qd_job, cycle, previous=self._d_prev) >= 1.0
        self._d_prev = qd_job
        balance_exact = kernels.inside(qd_aux, box.lower, box.upper, nj)
        scale, regime = 1.0, RmcRegime.TRACKING
        if not (job_exact and balance_exact):
            limited = LimitStep(self._lookahead, self._rows).limited(qd_job, s_a_aux, a_aux,
                                                                     a_job, cycle)
            qd_job, qd_aux = np.ascontiguousarray(limited.job), np.ascontiguousarray(limited.aux)
            scale, regime = limited.scale, limited.regime
            job_exact = regime is RmcRegime.TRACKING
        return self._commit(cycle, a_ref, a_w, com, qd_job, qd_aux, job_exact, balance_exact,
                            (sigma_min, lam2, scale, regime))

    def _commit(self, cycle: Cycle, a_ref: np.ndarray, a_w: np.ndarray, com: np.ndarray,
                qd_job: np.ndarray, qd_aux: np.ndarray, job_exact: bool, balance_exact: bool,
                solve: tuple[float, float, float, RmcRegime]) -> RmcOutput:
        """Step 5: the command's positions, momentum and indicators, and the controller's state
        after the cycle; ``solve`` is ``(sigma_min, lambda^2, job_scale, regime)``."""
        box, dt, jac, twist = cycle.box, cycle.dt, cycle.jac, cycle.twist
        sigma_min, lam2, scale, regime = solve
        assert self._q_cmd is not None  # (step checked it)
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

        # trapezoid: a joint moving within its acceleration limit from qd_prev to qd covers
        # (qd_prev + qd) dt / 2; q += qd dt would land up to a dt^2 / 2 away from it
        self._q_cmd = q_next
        self._qd_prev = qd
        self._h_prev_w = h_w
        self._posture_prev = cycle.posture
        return RmcOutput(
            names=self._names, position=self._q_cmd.copy(), velocity=qd, job_velocity=qd_job,
            aux_velocity=qd_aux, momentum=h, momentum_job=h_job, momentum_aux=h_aux,
            momentum_rate=rate, selected_momentum=h[self._s_index], twist_error=twist_error,
            job_exact=job_exact, balance_exact=balance_exact, saturated_joints=saturated,
            acceleration_overridden=overridden, sigma_min=sigma_min, damping=lam2,
            indicators=indicators, job_scale=scale, regime=regime)
