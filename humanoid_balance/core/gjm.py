"""Generalized Jacobian and resolved motion rate control of a free-floating robot (seed 002).

A robot whose base is not held (a space robot, or a humanoid in flight)
conserves its momentum. Starting at rest, the momentum stays zero, and the base
moves in reaction to the arms. Seed 002 writes this for its planar dual-arm
robot as (eqs. 12, 17, 18)

.. math::

    \\dot P = J_S \\dot\\phi_S + J_M \\dot\\phi_M, \\qquad
    I_S \\dot\\phi_S + I_M \\dot\\phi_M = 0, \\qquad
    \\dot P = (J_M - J_S I_S^{-1} I_M)\\, \\dot\\phi_M = J_3 \\dot\\phi_M .

Here the same is computed for any floating-base model from pinocchio, without
hand-derived constants. With ``v = [v_b; qd]`` (base spatial velocity in the
base frame, joint rates) and the floating-base joint-space mass matrix
``H = [[H_b, H_bm], [H_bm^T, H_m]]`` (pinocchio's CRBA), the first six rows of
``H v`` are the system's spatial momentum expressed in the base frame, so zero
momentum means

.. math::

    H_b v_b + H_{bm} \\dot q = 0 \\;\\Rightarrow\\; v_b = -H_b^{-1} H_{bm} \\dot q ,

and a frame Jacobian ``J = [J_b, J_m]`` gives the hand velocity

.. math::

    \\dot x = J_b v_b + J_m \\dot q = (J_m - J_b H_b^{-1} H_{bm})\\, \\dot q = J^* \\dot q .

``J*`` is the paper's ``J_3`` (``J_S <-> J_b``, ``I_S <-> H_b``,
``I_M <-> H_bm``). Zero linear momentum keeps the system's centre of mass
fixed (the paper's eq. 4 puts the inertial origin there). Resolved motion rate
control (RMRC, paper section 4) inverts eq. 18 with the Moore-Penrose
pseudo-inverse ``qd = J*^+ xd`` (eq. 19 is the full-rank-factorisation form of
the same pseudo-inverse), computed here from the SVD. When ``J*`` loses rank
the robot is at a *dynamic* singularity (paper, after eq. 18): this module
then raises :class:`~humanoid_balance.exceptions.DynamicSingularityError`
with the singular values instead of dividing through.

Usage (the ``arm_balance`` node's ``free_floating`` mode, one cycle from a
measured configuration)::

    model = RobotModel(urdf, floating_base=True, groups=...)
    try:
        sol = free_floating_rmrc(model, q, ("right_hand", "left_hand"), xd,
                                 rows=("vx", "vy"))
    except DynamicSingularityError as err:
        ...  # hold the arms, report err.singular_values on /diagnostics
    qd = sol.joint_velocities  # order: sol.joint_names

For simulation (the experiment, tests), :class:`FreeFloatingRmrc` integrates
the free-floating motion with ``reset(q)`` / ``step(xd, dt)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from humanoid_balance.core.model import RobotModel
from humanoid_balance.exceptions import (
    ConfigurationError,
    DynamicSingularityError,
    InvalidInputError,
)

#: Names of the six rows of a frame Jacobian (linear velocity of the frame
#: origin, then angular velocity, both in world axes).
ROW_NAMES: tuple[str, ...] = ("vx", "vy", "vz", "wx", "wy", "wz")

#: Default thresholds of the dynamic-singularity test (see :func:`is_singular`).
DEFAULT_MIN_SINGULAR_VALUE = 1e-3
DEFAULT_MAX_CONDITION_NUMBER = 1e3


@dataclass(frozen=True)
class GeneralizedJacobian:
    """The generalized Jacobian of some frames and what it is built from.

    Attributes:
        matrix: ``J*`` (k x n), k = len(frames) * len(rows), rows frame by frame,
            columns in the order of ``joint_names``; velocities in [m/s] or
            [rad/s] per joint rate in [rad/s].
        base_map: ``-H_b^-1 H_bm`` (6 x n): the base's spatial velocity
            (pinocchio free-flyer convention: [linear; angular] in the base
            frame) that keeps the momentum at zero, per joint rate.
        singular_values: singular values of ``matrix``, largest first.
        joint_names: the joints of the columns.
    """

    matrix: np.ndarray
    base_map: np.ndarray
    singular_values: np.ndarray
    joint_names: tuple[str, ...]


@dataclass(frozen=True)
class RmrcSolution:
    """Joint rates that move the hands of a free-floating robot, and the base's reaction.

    Attributes:
        joint_velocities: ``qd = J*^+ xd`` in [rad/s], order of ``joint_names``.
        velocity: the full generalized velocity ``[v_b; joint rates]`` (model.nv,),
            ``v_b = -H_b^-1 H_bm qd`` the base spatial velocity [m/s; rad/s] in the
            base frame (pinocchio's free-flyer convention), joints not in
            ``joint_names`` at zero.
        hand_velocities: ``J* qd``, the hand velocities achieved (equal to the
            command when ``J*`` has full row rank).
        singular_values: of ``J*``, largest first.
        joint_names: the commanded joints.
        jacobian: ``J*`` and the base map it was solved with, for other joint
            rates at the same configuration (both are linear in ``qd``).
    """

    joint_velocities: np.ndarray
    velocity: np.ndarray
    hand_velocities: np.ndarray
    singular_values: np.ndarray
    joint_names: tuple[str, ...]
    jacobian: GeneralizedJacobian


@dataclass(frozen=True)
class GjmIndices:
    """Frames, joints and rows of a generalized Jacobian, resolved once (:func:`gjm_indices`).

    Attributes:
        frames: the end-effector frame names.
        frame_ids: their pinocchio frame ids.
        joint_names: the joints solved for (the columns of ``J*``).
        v_index: their indices in ``v``.
        rows: the kept velocity rows of each frame.
        row_index: their indices in :data:`ROW_NAMES`.
    """

    frames: tuple[str, ...]
    frame_ids: tuple[int, ...]
    joint_names: tuple[str, ...]
    v_index: np.ndarray
    rows: tuple[str, ...]
    row_index: np.ndarray


def row_indices(rows: Sequence[str]) -> np.ndarray:
    """Indices in :data:`ROW_NAMES` of velocity rows named ``vx`` .. ``wz``.

    Raises:
        ConfigurationError: empty, an unknown name, or a name repeated.
    """
    unknown = [r for r in rows if r not in ROW_NAMES]
    if unknown or not rows or len(set(rows)) != len(rows):
        raise ConfigurationError(
            f"rows={list(rows)}: expected a non-empty subset of {list(ROW_NAMES)} without "
            f"repetition; unknown: {unknown}"
        )
    return np.array([ROW_NAMES.index(r) for r in rows], dtype=int)


def check_thresholds(min_singular_value: float, max_condition_number: float) -> None:
    """Check the dynamic-singularity thresholds of :func:`is_singular`.

    Raises:
        ConfigurationError: ``min_singular_value`` not finite and > 0, or
            ``max_condition_number`` not finite and > 1.
    """
    if not np.isfinite(min_singular_value) or min_singular_value <= 0.0:
        raise ConfigurationError(
            f"min_singular_value={min_singular_value}: expected a finite value > 0 "
            "(e.g. 1e-3 m/rad)"
        )
    if not np.isfinite(max_condition_number) or max_condition_number <= 1.0:
        raise ConfigurationError(
            f"max_condition_number={max_condition_number}: expected a finite value > 1 "
            "(e.g. 1e3)"
        )


def _check_floating(model: RobotModel) -> None:
    if not model.floating_base:
        raise ConfigurationError(
            f"model {model.name!r} has a fixed base; the generalized Jacobian needs a "
            "free-floating one: load it with RobotModel(urdf, floating_base=True)"
        )


def _check_q(model: RobotModel, q: np.ndarray) -> np.ndarray:
    q = np.asarray(q, dtype=float)
    if q.shape != (model.nq,) or not np.all(np.isfinite(q)):
        raise InvalidInputError(
            f"configuration q of shape {q.shape} (finite: {bool(np.all(np.isfinite(q)))}); "
            f"expected {model.nq} finite values (base position, quaternion xyzw, joints)"
        )
    return q


def gjm_indices(
    model: RobotModel,
    frames: Sequence[str],
    *,
    joints: Sequence[str] | None = None,
    rows: Sequence[str] = ROW_NAMES,
) -> GjmIndices:
    """Check the arguments of a generalized Jacobian and resolve the names to indices.

    Args:
        model, frames, joints, rows: as :func:`generalized_jacobian`.

    Raises:
        ConfigurationError: fixed-base model, no frame, or bad row names.
        UnknownFrameError, UnknownJointError: a name the model does not have.
    """
    _check_floating(model)
    row_index = row_indices(rows)
    names = tuple(model.joint_names if joints is None else joints)
    v_index = model.v_index(names)
    if not frames:
        raise ConfigurationError("frames is empty: name at least one end-effector frame")
    frame_ids = tuple(model.frame_id(frame) for frame in frames)
    return GjmIndices(tuple(frames), frame_ids, names, v_index, tuple(rows), row_index)


def jacobian_at(model: RobotModel, q: np.ndarray,
                indices: GjmIndices) -> tuple[np.ndarray, np.ndarray]:
    """``J*`` and the base map ``-H_b^-1 H_bm`` at ``q``, without checking the inputs.

    The cycle of :func:`generalized_jacobian`: ``q`` must be a finite configuration
    of ``model`` and ``indices`` come from :func:`gjm_indices` on the same model.
    One CRBA and one pass of joint Jacobians serve every frame.
    """
    mass = pin.crba(model.model, model.data, q)  # only the upper triangle is filled
    h_b = np.triu(mass[0:6, 0:6])
    h_b += np.triu(h_b, 1).T
    base_map = -np.linalg.solve(h_b, mass[0:6, indices.v_index])  # H_b: locked-system inertia (SPD)
    pin.computeJointJacobians(model.model, model.data, q)
    blocks = []
    for fid in indices.frame_ids:
        jac = pin.getFrameJacobian(model.model, model.data, fid,
                                   pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)[indices.row_index]
        blocks.append(jac[:, indices.v_index] + jac[:, 0:6] @ base_map)
    return np.vstack(blocks), base_map


def generalized_jacobian(
    model: RobotModel,
    q: np.ndarray,
    frames: Sequence[str],
    *,
    joints: Sequence[str] | None = None,
    rows: Sequence[str] = ROW_NAMES,
) -> GeneralizedJacobian:
    """The generalized Jacobian ``J* = J_m - J_b H_b^-1 H_bm`` (seed 002 eq. 18, ``J_3``).

    Args:
        model: a floating-base model (``RobotModel(..., floating_base=True)``).
        q: configuration (model.nq,): base position [m], base quaternion (x, y,
            z, w), joint angles [rad].
        frames: the end-effector frames (e.g. ``("right_hand", "left_hand")``).
        joints: the joints whose rates are solved for (the paper's ``phi_M``);
            default every joint of the model. Joints left out are held still.
        rows: which rows of each frame's velocity to keep, among
            ``vx, vy, vz`` (frame origin, world axes, [m/s]) and ``wx, wy, wz``
            (world axes, [rad/s]). The planar robot of seed 002 uses
            ``("vx", "vy")``.

    Returns:
        ``J*``, the base map ``-H_b^-1 H_bm`` and the singular values of ``J*``.

    Raises:
        ConfigurationError: fixed-base model or unknown row names.
        UnknownFrameError, UnknownJointError: a name the model does not have.
        InvalidInputError: ``q`` of the wrong size or not finite.
    """
    _check_floating(model)
    q = _check_q(model, q)
    indices = gjm_indices(model, frames, joints=joints, rows=rows)
    matrix, base_map = jacobian_at(model, q, indices)
    singular_values = np.linalg.svd(matrix, compute_uv=False)
    return GeneralizedJacobian(matrix, base_map, singular_values, indices.joint_names)


def is_singular(
    singular_values: np.ndarray,
    min_singular_value: float = DEFAULT_MIN_SINGULAR_VALUE,
    max_condition_number: float = DEFAULT_MAX_CONDITION_NUMBER,
) -> bool:
    """Dynamic-singularity test on the singular values of ``J*`` (largest first).

    Singular when ``sigma_min < min_singular_value`` (same unit as ``J*``,
    [m/rad] for linear rows) or ``sigma_max / sigma_min > max_condition_number``,
    or when ``J*`` has fewer columns than rows (it can then never have full row rank).
    """
    s = np.asarray(singular_values, dtype=float)
    if s.size == 0:
        return True
    smallest = float(s[-1])
    if not np.isfinite(smallest) or smallest < min_singular_value or smallest <= 0.0:
        return True
    return float(s[0]) / smallest > max_condition_number


def rmrc_at(
    model: RobotModel,
    q: np.ndarray,
    indices: GjmIndices,
    hand_velocities: np.ndarray,
    min_singular_value: float,
    max_condition_number: float,
) -> RmrcSolution:
    """:func:`free_floating_rmrc` without checking the inputs (a controller's cycle).

    ``q`` must be a finite configuration of ``model``, ``indices`` from
    :func:`gjm_indices`, ``hand_velocities`` finite of size
    ``len(indices.frames) * len(indices.rows)`` and the thresholds checked
    (:func:`check_thresholds`). ``J*`` is factorised once, by one SVD.

    Raises:
        DynamicSingularityError: ``J*`` is (near) rank deficient (:func:`is_singular`).
    """
    matrix, base_map = jacobian_at(model, q, indices)
    u, s, vt = np.linalg.svd(matrix, full_matrices=False)
    if matrix.shape[1] < matrix.shape[0] or is_singular(s, min_singular_value,
                                                        max_condition_number):
        raise DynamicSingularityError(s.tolist(), min_singular_value, max_condition_number)
    qd = vt.T @ ((u.T @ hand_velocities) / s)
    velocity = np.zeros(model.nv)
    velocity[0:6] = base_map @ qd
    velocity[indices.v_index] = qd
    jacobian = GeneralizedJacobian(matrix, base_map, s, indices.joint_names)
    return RmrcSolution(qd, velocity, matrix @ qd, s, indices.joint_names, jacobian)


def free_floating_rmrc(
    model: RobotModel,
    q: np.ndarray,
    frames: Sequence[str],
    hand_velocities: np.ndarray,
    *,
    joints: Sequence[str] | None = None,
    rows: Sequence[str] = ROW_NAMES,
    min_singular_value: float = DEFAULT_MIN_SINGULAR_VALUE,
    max_condition_number: float = DEFAULT_MAX_CONDITION_NUMBER,
) -> RmrcSolution:
    """Joint rates for commanded hand velocities of a free-floating robot: ``qd = J*^+ xd``.

    RMRC of seed 002 section 4 with eq. 18 inverted by the pseudo-inverse
    (eq. 19), computed from the SVD of ``J*``: ``qd = V diag(1/s) U^T xd``,
    the minimum-norm exact solution when ``J*`` has full row rank.

    Args:
        model, q, frames, joints, rows: as :func:`generalized_jacobian`.
        hand_velocities: ``xd`` (len(frames) * len(rows),), frame by frame in
            the order of ``rows``; [m/s] and [rad/s] in world axes.
        min_singular_value: dynamic-singularity threshold on sigma_min of ``J*``.
        max_condition_number: dynamic-singularity threshold on sigma_max / sigma_min.

    Returns:
        The joint rates, the base's reaction, the achieved hand velocities and ``J*``.

    Raises:
        DynamicSingularityError: ``J*`` is (near) rank deficient (:func:`is_singular`);
            nothing is computed from it.
        InvalidInputError: ``hand_velocities`` of the wrong size or not finite.
    """
    check_thresholds(min_singular_value, max_condition_number)
    _check_floating(model)
    q = _check_q(model, q)
    indices = gjm_indices(model, frames, joints=joints, rows=rows)
    k = len(indices.frames) * len(indices.rows)
    xd = np.asarray(hand_velocities, dtype=float)
    if xd.shape != (k,) or not np.all(np.isfinite(xd)):
        raise InvalidInputError(
            f"hand_velocities of shape {xd.shape} (finite: {bool(np.all(np.isfinite(xd)))}); "
            f"expected {k} finite values: rows {list(rows)} for each frame of {list(frames)}"
        )
    return rmrc_at(model, q, indices, xd, min_singular_value, max_condition_number)


@dataclass(frozen=True)
class FreeFloatingOutput:
    """One step of :class:`FreeFloatingRmrc`.

    Attributes:
        time: time at the end of the step [s].
        q: configuration at the end of the step (model.nq,).
        solution: the RMRC solution at the start of the step (joint rates
            [rad/s], base velocity, achieved hand velocities, singular values).
    """

    time: float
    q: np.ndarray
    solution: RmrcSolution


class FreeFloatingRmrc:
    """RMRC of a free-floating robot, integrated in time (seed 002, section 4).

    Each ``step`` holds the commanded hand velocities ``xd`` over ``dt`` and
    integrates the free-floating motion ``v(q) = [-H_b^-1 H_bm qd; qd]`` with
    ``qd = J*(q)^+ xd``: a classical 4-stage Runge-Kutta step in the tangent
    space at the current configuration (Runge-Kutta-Munthe-Kaas): the state is
    ``q(t) = q_n (+) xi(t)`` with pinocchio's ``integrate`` (the base pose on
    SE(3) through the exponential map), and ``d xi/dt = dexp^-1 v`` with
    pinocchio's ``dIntegrate``. The method is 4th order on the Lie group, so the
    base pose, the joint angles and the system's CoM follow the exact
    momentum-conserving motion to the accuracy of the step.

    Args:
        model: a floating-base model.
        frames: the end-effector frames, e.g. ``("right_hand", "left_hand")``.
        joints: commanded joints (default every joint).
        rows: velocity rows per frame (see :func:`generalized_jacobian`).
        min_singular_value: dynamic-singularity threshold on sigma_min of ``J*``.
        max_condition_number: dynamic-singularity threshold on the condition number.
        substeps: Runge-Kutta steps per ``step`` call (>= 1).

    Raises:
        ConfigurationError: a fixed-base model, bad thresholds or ``substeps < 1``.
    """

    def __init__(
        self,
        model: RobotModel,
        frames: Sequence[str] = ("right_hand", "left_hand"),
        *,
        joints: Sequence[str] | None = None,
        rows: Sequence[str] = ("vx", "vy"),
        min_singular_value: float = DEFAULT_MIN_SINGULAR_VALUE,
        max_condition_number: float = DEFAULT_MAX_CONDITION_NUMBER,
        substeps: int = 1,
    ) -> None:
        _check_floating(model)
        check_thresholds(min_singular_value, max_condition_number)
        self._indices = gjm_indices(model, frames, joints=joints, rows=rows)
        if substeps < 1:
            raise ConfigurationError(f"substeps={substeps}: expected an integer >= 1")
        self.model = model
        self.frames = self._indices.frames
        self.joints = self._indices.joint_names
        self.rows = self._indices.rows
        self.min_singular_value = float(min_singular_value)
        self.max_condition_number = float(max_condition_number)
        self.substeps = int(substeps)
        self._q: np.ndarray | None = None
        self._time = 0.0

    @property
    def q(self) -> np.ndarray:
        """The current configuration (a copy).

        Raises:
            ConfigurationError: before ``reset``.
        """
        if self._q is None:
            raise ConfigurationError("FreeFloatingRmrc has no state: call reset(q) first")
        return self._q.copy()

    @property
    def time(self) -> float:
        """Time since ``reset`` [s]."""
        return self._time

    def reset(self, q: np.ndarray) -> None:
        """Start from configuration ``q`` at rest (zero momentum), time 0."""
        q = _check_q(self.model, q).copy()
        q[3:7] /= np.linalg.norm(q[3:7])
        self._q = q
        self._time = 0.0

    def solve(self, q: np.ndarray, hand_velocities: np.ndarray) -> RmrcSolution:
        """:func:`free_floating_rmrc` with this controller's frames, joints, rows, thresholds."""
        return free_floating_rmrc(
            self.model, q, self.frames, hand_velocities, joints=self.joints, rows=self.rows,
            min_singular_value=self.min_singular_value,
            max_condition_number=self.max_condition_number,
        )

    def _rk4(self, q0: np.ndarray, xd: np.ndarray, h: float) -> np.ndarray:
        model = self.model.model
        pos = pin.ArgumentPosition.ARG1

        def rate(xi: np.ndarray) -> np.ndarray:  # xd was checked by solve() at the step's start
            q = pin.integrate(model, q0, xi)
            v = rmrc_at(self.model, q, self._indices, xd, self.min_singular_value,
                        self.max_condition_number).velocity
            return np.linalg.solve(pin.dIntegrate(model, q0, xi, pos), v)

        k1 = rate(np.zeros(model.nv))
        k2 = rate(0.5 * h * k1)
        k3 = rate(0.5 * h * k2)
        k4 = rate(h * k3)
        xi = h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        return np.asarray(pin.integrate(model, q0, xi))

    def step(self, hand_velocities: np.ndarray, dt: float) -> FreeFloatingOutput:
        """Move the hands at ``hand_velocities`` for ``dt`` [s] and integrate the floating motion.

        Raises:
            DynamicSingularityError: ``J*`` is singular at the start or at any
                Runge-Kutta stage of the step; the state is left at the start
                of the step (the robot is held, not moved through the singularity).
            InvalidInputError: bad ``hand_velocities`` or ``dt``.
            ConfigurationError: before ``reset``.
        """
        q = self.q
        if not np.isfinite(dt) or dt <= 0.0:
            raise InvalidInputError(f"dt={dt}: expected a finite time step > 0 in seconds")
        xd = np.asarray(hand_velocities, dtype=float)
        solution = self.solve(q, xd)
        h = dt / self.substeps
        for _ in range(self.substeps):
            q = self._rk4(q, xd, h)
        self._q = q
        self._time += dt
        return FreeFloatingOutput(self._time, q.copy(), solution)
