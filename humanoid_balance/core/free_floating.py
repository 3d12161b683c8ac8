"""``arm_balance`` in ``free_floating`` mode: both arms of a floating robot by the generalized Jacobian.

A free-floating robot (seed 002: a dual-arm robot in orbit) has no ground to
balance on: its momentum is conserved, and the base turns and drifts in
reaction to the arms. The job hand follows its commanded velocity and the
other hand holds still in inertial space; both through one RMRC solve with
the generalized Jacobian ``J*`` of :mod:`humanoid_balance.core.gjm`
(``qd = J*^+ xd``, the base's reaction ``v_b = -H_b^-1 H_bm qd`` included).

An :class:`~humanoid_balance.core.arm_controller.ArmController` (the
``free_floating`` mode of ``arm_balance``): ``reset``, ``step(RmcInput, dt) ->
FreeFloatingOutput``, ``names``, ``commanded_positions``; its output has no ground
indicators (no ZMP, no friction: nothing touches the ground). Every cycle:

1. ``q``: the measured base pose and the other joints, with the arms at their
   commanded positions (as in RMC).
2. ``qd = J*^+ xd`` for ``xd`` = the job hand's twist rows and zeros for the
   other hand (:func:`~humanoid_balance.core.gjm.free_floating_rmrc`); at a
   dynamic singularity :class:`~humanoid_balance.exceptions.DynamicSingularityError`
   propagates (the node holds the arms and reports the singular values).
3. Limits: when ``qd`` leaves the joints' velocity box (position, speed and
   acceleration limits, :class:`~humanoid_balance.core.joint_limits.VelocityBoxer`),
   the whole ``qd`` is scaled down to fit, so the hands slow down along their
   paths rather than leave them; a box that excludes zero (a joint must move
   back into range) is met by clipping, reported as overridden. The joints
   left at a bound of the box are reported as saturated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from humanoid_balance.core.arm_controller import ArmReport
from humanoid_balance.core.gjm import (
    DEFAULT_MAX_CONDITION_NUMBER,
    DEFAULT_MIN_SINGULAR_VALUE,
    check_thresholds,
    gjm_indices,
    rmrc_at,
    row_indices,
)
from humanoid_balance.core.joint_limits import JointLimits, VelocityBoxer
from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.rmc import ARMS, RmcInput
from humanoid_balance.exceptions import ConfigurationError, InvalidInputError

#: Absolute tolerance [rad/s] under which a command equals the solution, or a bound.
_AT_BOUND = 1e-12
#: Default acceleration limit [rad/s^2] of the arm joints (no table for the space robot's joints).
DEFAULT_ACCELERATION_LIMIT_RAD_S2 = 10.0


@dataclass(frozen=True)
class FreeFloatingOutput:
    """One cycle of :class:`FreeFloatingArmController`.

    Attributes:
        names: joint names of the job arm then the other arm.
        position: commanded joint positions [rad] at the end of the cycle.
        velocity: commanded joint velocities [rad/s] for the cycle.
        job_velocity: the job arm's joint velocities [rad/s].
        other_velocity: the other arm's joint velocities [rad/s].
        momentum: total ``[P; L]`` [N s, N m s] about the CoM in world axes
            (conserved: zero from rest).
        momentum_rate: ``d[P; L]/dt`` [N, N m] by differencing.
        hand_velocities: achieved velocity rows of the job hand then the other hand
            [m/s, rad/s].
        twist_error: commanded minus achieved job twist (six rows; uncontrolled rows 0).
        job_exact: the command is the unlimited ``J*^+`` solution.
        saturated_joints: joints at a bound of their velocity box when limited.
        acceleration_overridden: joints whose box ignored the acceleration limit.
        sigma_min: smallest singular value of ``J*``.
    """

    names: tuple[str, ...]
    position: np.ndarray
    velocity: np.ndarray
    job_velocity: np.ndarray
    other_velocity: np.ndarray
    momentum: np.ndarray
    momentum_rate: np.ndarray
    hand_velocities: np.ndarray
    twist_error: np.ndarray
    job_exact: bool
    saturated_joints: tuple[str, ...]
    acceleration_overridden: tuple[str, ...]
    sigma_min: float


class FreeFloatingArmController:
    """Job hand velocity, other hand still, base floating (seed 002 RMRC with ``J*``).

    Args:
        model: a floating-base model (``RobotModel(..., floating_base=True)``).
        arm_joints: arm name (``right``, ``left``) -> its joint names.
        hand_frames: arm name -> its hand frame.
        job_arm: the arm whose hand follows the commanded twist.
        rows: the hand velocity rows controlled (``vx``, ``vy``, ``vz``, ``wx``, ``wy``,
            ``wz``); the planar space robot uses ``("vx", "vy")``.
        acceleration_limits: [rad/s^2] per arm joint (same order as the joints);
            default :data:`DEFAULT_ACCELERATION_LIMIT_RAD_S2` for every joint.
        position_margin: [rad] kept from every position limit.
        min_singular_value, max_condition_number: dynamic-singularity thresholds
            (:func:`~humanoid_balance.core.gjm.is_singular`).

    Raises:
        ConfigurationError: a fixed-base model, unknown arms, bad rows (unknown,
            repeated or none) or thresholds.
        UnknownFrameError, UnknownJointError: a name the model does not have.
    """

    twist_frame = "world"
    momentum_frame = "world"
    has_selection = False
    needs_base_pose = True

    def __init__(
        self,
        model: RobotModel,
        arm_joints: Mapping[str, Sequence[str]],
        hand_frames: Mapping[str, str],
        *,
        job_arm: str = "right",
        rows: Sequence[str] = ("vx", "vy"),
        acceleration_limits: Mapping[str, Sequence[float]] | None = None,
        position_margin: float = 0.0,
        min_singular_value: float = DEFAULT_MIN_SINGULAR_VALUE,
        max_condition_number: float = DEFAULT_MAX_CONDITION_NUMBER,
    ) -> None:
        if not model.floating_base:
            raise ConfigurationError("free_floating mode needs a floating-base model "
                                     "(RobotModel(..., floating_base=True))")
        if set(arm_joints) != set(ARMS) or set(hand_frames) != set(ARMS):
            raise ConfigurationError(f"arm_joints and hand_frames need the arms {tuple(ARMS)}, "
                                     f"got {sorted(arm_joints)} and {sorted(hand_frames)}")
        self._row_index = row_indices(rows)
        check_thresholds(min_singular_value, max_condition_number)
        for frame in hand_frames.values():
            model.frame_id(frame)
        self.model = model
        self.arm_joints = {arm: tuple(arm_joints[arm]) for arm in ARMS}
        self.hand_frames = dict(hand_frames)
        self.rows = tuple(rows)
        self.position_margin = float(position_margin)
        self.min_singular_value = float(min_singular_value)
        self.max_condition_number = float(max_condition_number)
        names = [n for arm in ARMS for n in self.arm_joints[arm]]
        lower, upper = model.position_limits(names)
        accel = np.full(len(names), DEFAULT_ACCELERATION_LIMIT_RAD_S2) \
            if acceleration_limits is None else np.concatenate(
            [np.asarray(acceleration_limits[arm], dtype=float) for arm in ARMS])
        self._all_limits = JointLimits(tuple(names), lower, upper, model.velocity_limits(names),
                                       accel)
        self._limit_index = {n: i for i, n in enumerate(names)}
        self.job_arm = ""
        self._q_cmd: np.ndarray | None = None
        self._qd_prev: np.ndarray | None = None
        self._momentum_prev: np.ndarray | None = None
        self.set_job_arm(job_arm)

    # --- configuration -----------------------------------------------------------------

    def set_job_arm(self, job_arm: str) -> None:
        """Choose the arm whose hand follows the twist (call between cycles); the commanded state is kept."""
        if job_arm not in ARMS:
            raise ConfigurationError(f"job_arm={job_arm!r}: expected one of {tuple(ARMS)}")
        if job_arm == self.job_arm:
            return
        old = getattr(self, "_names", None)
        self.job_arm = job_arm
        other = next(arm for arm in ARMS if arm != job_arm)
        self._names = self.arm_joints[job_arm] + self.arm_joints[other]
        self._boxer = VelocityBoxer(
            self._all_limits.subset([self._limit_index[n] for n in self._names]),
            self.position_margin)
        self._q_index = self.model.q_index(self._names)
        self._indices = gjm_indices(
            self.model, (self.hand_frames[job_arm], self.hand_frames[other]), joints=self._names,
            rows=self.rows)
        self._v_index = self._indices.v_index
        if old is not None and self._q_cmd is not None and self._qd_prev is not None:
            order = np.array([old.index(n) for n in self._names])
            self._q_cmd = self._q_cmd[order]
            self._qd_prev = self._qd_prev[order]

    def set_selection(self, selection: Sequence[str], secondary: Sequence[str] = ()) -> None:
        """Momentum rows do not apply: a floating robot conserves all six.

        Kept so that both controllers of ``arm_balance`` share one interface; the
        node refuses ``selection`` and ``secondary`` in ``free_floating`` mode
        before they reach the controller.

        Raises:
            ConfigurationError: always.
        """
        raise ConfigurationError("selection and secondary do not apply in free_floating mode: "
                                 "the whole momentum is conserved by the physics")

    @property
    def names(self) -> tuple[str, ...]:
        """Joint names of the outputs: the job arm's, then the other arm's."""
        return self._names

    @property
    def job_names(self) -> tuple[str, ...]:
        """Joint names of the job arm."""
        return self.arm_joints[self.job_arm]

    @property
    def commanded_positions(self) -> np.ndarray | None:
        """Commanded arm positions [rad] (job, other), None before :meth:`reset`."""
        return None if self._q_cmd is None else self._q_cmd.copy()

    @property
    def arm_limits(self) -> JointLimits:
        """Limits of both arms' joints in the order of :attr:`names`."""
        return self._boxer.limits

    def predicted_margin(self, out: FreeFloatingOutput) -> float | None:
        """None: a floating robot has no support polygon."""
        return None

    def model_zmp(self, out: FreeFloatingOutput) -> np.ndarray | None:
        """None: a floating robot has no ZMP."""
        return None

    def report(self, out: FreeFloatingOutput) -> ArmReport:
        """Exactness, saturations and ``J*``'s smallest singular value; a warning when limited."""
        values: dict[str, object] = dict(
            job_exact=out.job_exact, sigma_min=out.sigma_min,
            momentum_max=float(np.max(np.abs(out.momentum))),
            saturated=",".join(out.saturated_joints) or "none",
            acceleration_overridden=",".join(out.acceleration_overridden) or "none")
        warning = None if out.job_exact else \
            "joint limits slow the hands: " + ",".join(out.saturated_joints)
        return ArmReport(values, warning)

    # --- control -----------------------------------------------------------------------

    def _check_q(self, q: np.ndarray) -> np.ndarray:
        q = np.asarray(q, dtype=float)
        if q.shape != (self.model.nq,) or not np.all(np.isfinite(q)):
            raise InvalidInputError(f"q of shape {q.shape}: expected {self.model.nq} finite values "
                                    "(base position, base quaternion x y z w, joints)")
        return q

    def reset(self, q: np.ndarray, arm_velocities: np.ndarray | None = None) -> None:
        """Start from the measured configuration ``q`` (model.nq,), arms at rest."""
        q = self._check_q(q)
        self._q_cmd = q[self._q_index].copy()
        self._qd_prev = np.zeros(len(self._names)) if arm_velocities is None else \
            np.asarray(arm_velocities, dtype=float).copy()
        self._momentum_prev = None

    def step(self, inputs: RmcInput, dt: float) -> FreeFloatingOutput:
        """One cycle: the job twist rows (zero for the other hand) -> both arms' commands.

        Raises:
            DynamicSingularityError: ``J*`` is singular here; nothing is commanded.
            InvalidInputError: a bad ``q``, twist or ``dt``; joint-velocity input (not
                meaningful for a floating robot's hands).
            ConfigurationError: before :meth:`reset`.
        """
        if self._q_cmd is None or self._qd_prev is None:
            raise ConfigurationError("FreeFloatingArmController.step before reset(q)")
        if not np.isfinite(dt) or dt <= 0:
            raise InvalidInputError(f"dt={dt}: expected a finite period > 0 s")
        if inputs.job_twist is None and inputs.job_joint_velocities is not None:
            raise InvalidInputError("free_floating mode takes a hand twist (job_twist), not joint "
                                    "velocities")
        q = self._check_q(inputs.q).copy()
        q[self._q_index] = self._q_cmd
        twist = np.zeros(6) if inputs.job_twist is None else np.asarray(inputs.job_twist, float)
        if twist.shape != (6,) or not np.all(np.isfinite(twist)):
            raise InvalidInputError(f"job twist {twist}: expected 6 finite values [v; w]")
        k = len(self.rows)
        xd = np.zeros(2 * k)
        xd[:k] = twist[self._row_index]
        solution = rmrc_at(self.model, q, self._indices, xd, self.min_singular_value,
                           self.max_condition_number)
        qd = solution.joint_velocities
        # the limits see the joints half a step of the last velocity ahead (trapezoid below)
        box = self._boxer(self._q_cmd, self._qd_prev, dt, ahead=0.5)
        # the largest scale <= 1 that keeps qd in the box where the box holds zero
        above = (qd > box.upper) & (qd > 0.0)
        below = (qd < box.lower) & (qd < 0.0)
        scale = min(1.0, float(np.min(np.maximum(box.upper[above], 0.0) / qd[above], initial=1.0)),
                    float(np.min(np.maximum(-box.lower[below], 0.0) / -qd[below], initial=1.0)))
        command = np.clip(qd * scale, box.lower, box.upper)
        exact = not bool(np.any(np.abs(command - qd) > _AT_BOUND))
        saturated: tuple[str, ...] = ()
        if not exact:
            at_bound = (command <= box.lower + _AT_BOUND) | (command >= box.upper - _AT_BOUND)
            saturated = tuple(n for n, b in zip(self._names, at_bound, strict=True) if b)
        overridden: tuple[str, ...] = ()
        if box.acceleration_overridden.any():
            overridden = tuple(n for n, o in zip(self._names, box.acceleration_overridden,
                                                 strict=True) if o)
        # trapezoid: the joint covers (qd_prev + qd) dt / 2 moving from qd_prev to qd
        self._q_cmd = self._q_cmd + 0.5 * (self._qd_prev + command) * dt
        self._qd_prev = command
        if exact:
            velocity = solution.velocity
            achieved = solution.hand_velocities
        else:  # the base's reaction to the limited command (J* and H are linear in qd)
            velocity = np.zeros(self.model.nv)
            velocity[0:6] = solution.jacobian.base_map @ command
            velocity[self._v_index] = command
            achieved = solution.jacobian.matrix @ command
        matrix = self.model.momentum_matrix(q)
        momentum = matrix @ velocity
        rate = np.zeros(6) if self._momentum_prev is None else (momentum - self._momentum_prev) / dt
        self._momentum_prev = momentum
        n_job = len(self.job_names)
        twist_error = np.zeros(6)
        twist_error[self._row_index] = xd[:k] - achieved[:k]
        return FreeFloatingOutput(
            names=self._names, position=self._q_cmd.copy(), velocity=command.copy(),
            job_velocity=command[:n_job].copy(), other_velocity=command[n_job:].copy(),
            momentum=momentum, momentum_rate=rate, hand_velocities=np.asarray(achieved).copy(),
            twist_error=twist_error, job_exact=exact, saturated_joints=saturated,
            acceleration_overridden=overridden, sigma_min=float(solution.singular_values.min()))
