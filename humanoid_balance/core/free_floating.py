"""``arm_balance`` in ``free_floating`` mode: both arms of a floating robot by the generalized Jacobian.

A free-floating robot (seed 002: a dual-arm robot in orbit) has no ground to
balance on: its momentum is conserved, and the base turns and drifts in
reaction to the arms. The job hand follows its commanded velocity and the
other hand holds still in inertial space; both through one RMRC solve with
the generalized Jacobian ``J*`` of :mod:`humanoid_balance.core.gjm`
(``qd = J*^+ xd``, the base's reaction ``v_b = -H_b^-1 H_bm qd`` included).

Same interface as :class:`~humanoid_balance.core.rmc.RmcController` (``reset``,
``step(RmcInput, dt) -> RmcOutput``, ``names``, ``commanded_positions``), so
the node runs either. Every cycle:

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
   back into range) is met by clipping, reported as overridden.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from humanoid_balance.core.gjm import ROW_NAMES, free_floating_rmrc, generalized_jacobian
from humanoid_balance.core.joint_limits import JointLimits, VelocityBoxer
from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.rmc import BalanceIndicators, RmcInput, RmcOutput
from humanoid_balance.exceptions import ConfigurationError, InvalidInputError

ARMS = ("right", "left")

_NO_GROUND = BalanceIndicators(
    zmp_shift=np.full(2, np.nan), model_zmp=np.full(3, np.nan), normal_force=float("nan"),
    lift_off_margin=float("nan"), slide_margin=float("nan"), turn_margin=float("nan"),
    turn_torque=float("nan"), zmp_margin=float("nan"))


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
            default 10 rad/s^2.
        position_margin: [rad] kept from every position limit.
        min_singular_value, max_condition_number: dynamic-singularity thresholds.

    Raises:
        ConfigurationError: a fixed-base model, unknown arms, rows or frames.
    """

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
        min_singular_value: float = 1e-3,
        max_condition_number: float = 1e3,
    ) -> None:
        if not model.floating_base:
            raise ConfigurationError("free_floating mode needs a floating-base model "
                                     "(RobotModel(..., floating_base=True))")
        if set(arm_joints) != set(ARMS) or set(hand_frames) != set(ARMS):
            raise ConfigurationError(f"arm_joints and hand_frames need the arms {ARMS}, got "
                                     f"{sorted(arm_joints)} and {sorted(hand_frames)}")
        unknown = [r for r in rows if r not in ROW_NAMES]
        if unknown or not rows:
            raise ConfigurationError(f"rows {list(rows)}: expected a subset of {ROW_NAMES}")
        for frame in hand_frames.values():
            model.frame_id(frame)
        self.model = model
        self.arm_joints = {arm: tuple(names) for arm, names in arm_joints.items()}
        self.hand_frames = dict(hand_frames)
        self.rows = tuple(rows)
        self._row_index = np.array([ROW_NAMES.index(r) for r in self.rows])
        self.position_margin = float(position_margin)
        self.min_singular_value = float(min_singular_value)
        self.max_condition_number = float(max_condition_number)
        self._limits: dict[str, JointLimits] = {}
        for arm, names in self.arm_joints.items():
            lower, upper = model.position_limits(list(names))
            accel = np.full(len(names), 10.0) if acceleration_limits is None else \
                np.asarray(acceleration_limits[arm], dtype=float)
            self._limits[arm] = JointLimits(names, lower, upper, model.velocity_limits(list(names)),
                                            accel)
        self.job_arm = ""
        self.set_job_arm(job_arm)
        self._q_cmd: np.ndarray | None = None
        self._qd_prev: np.ndarray | None = None
        self._momentum_prev: np.ndarray | None = None

    # --- configuration -----------------------------------------------------------------

    def set_job_arm(self, job_arm: str) -> None:
        """Choose the arm whose hand follows the twist (call between cycles)."""
        if job_arm not in ARMS:
            raise ConfigurationError(f"job_arm={job_arm!r}: expected one of {ARMS}")
        if job_arm == self.job_arm:
            return
        old = getattr(self, "_names", None)
        self.job_arm = job_arm
        other = ARMS[1 - ARMS.index(job_arm)]
        self._order = (job_arm, other)
        self._names = self.arm_joints[job_arm] + self.arm_joints[other]
        limits = [self._limits[job_arm], self._limits[other]]
        self._boxer = VelocityBoxer(JointLimits(
            self._names, *(np.concatenate([getattr(lim, f) for lim in limits])
                           for f in ("lower", "upper", "velocity", "acceleration"))),
            self.position_margin)
        self._q_index = self.model.q_index(list(self._names))
        self._v_index = self.model.v_index(list(self._names))
        if old is not None and getattr(self, "_q_cmd", None) is not None:
            assert self._q_cmd is not None and self._qd_prev is not None
            position = dict(zip(old, self._q_cmd, strict=True))
            velocity = dict(zip(old, self._qd_prev, strict=True))
            self._q_cmd = np.array([position[n] for n in self._names])
            self._qd_prev = np.array([velocity[n] for n in self._names])

    def set_selection(self, selection: Sequence[str], secondary: Sequence[str] = ()) -> None:
        """Momentum rows do not apply: a floating robot conserves all six.

        Raises:
            ConfigurationError: always (the node reports it and keeps its selection).
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

    def step(self, inputs: RmcInput, dt: float) -> RmcOutput:
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
        frames = tuple(self.hand_frames[arm] for arm in self._order)
        solution = free_floating_rmrc(
            self.model, q, frames, xd, joints=self._names, rows=self.rows,
            min_singular_value=self.min_singular_value,
            max_condition_number=self.max_condition_number)
        qd = solution.joint_velocities
        box = self._boxer(self._q_cmd, self._qd_prev, dt)
        scale = 1.0
        for value, lo, hi in zip(qd, box.lower, box.upper, strict=True):
            if value > hi and value > 0:
                scale = min(scale, max(hi, 0.0) / value)
            elif value < lo and value < 0:
                scale = min(scale, max(-lo, 0.0) / -value)
        command = np.clip(qd * scale, box.lower, box.upper)
        saturated = tuple(n for n, a, b in zip(self._names, qd, command, strict=True)
                          if not np.isclose(a, b, rtol=0.0, atol=1e-12))
        overridden = tuple(n for n, c in zip(self._names, box.acceleration_overridden, strict=True) if c)
        self._q_cmd = self._q_cmd + command * dt
        self._qd_prev = command
        exact = not saturated
        if exact:
            velocity = solution.velocity
            achieved = solution.hand_velocities
        else:  # the base's reaction to the limited command (J* and H are linear in qd)
            gjm = generalized_jacobian(self.model, q, frames, joints=self._names, rows=self.rows)
            velocity = np.zeros(self.model.nv)
            velocity[0:6] = gjm.base_map @ command
            velocity[self._v_index] = command
            achieved = gjm.matrix @ command
        matrix = self.model.momentum_matrix(q)
        momentum = matrix @ velocity
        rate = np.zeros(6) if self._momentum_prev is None else (momentum - self._momentum_prev) / dt
        self._momentum_prev = momentum
        n_job = len(self.job_names)
        v_idx = self._v_index
        twist_error = np.zeros(6)
        twist_error[self._row_index] = xd[:k] - achieved[:k]
        return RmcOutput(
            names=self._names, position=self._q_cmd.copy(), velocity=command.copy(),
            job_velocity=command[:n_job].copy(), aux_velocity=command[n_job:].copy(),
            momentum=momentum, momentum_job=matrix[:, v_idx[:n_job]] @ command[:n_job],
            momentum_aux=matrix[:, v_idx[n_job:]] @ command[n_job:], momentum_rate=rate,
            selected_momentum=momentum, twist_error=twist_error, job_exact=exact,
            balance_exact=True, saturated_joints=saturated, acceleration_overridden=overridden,
            sigma_min=float(solution.singular_values.min()), damping=0.0, indicators=_NO_GROUND)
