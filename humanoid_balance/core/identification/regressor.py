"""Gravity regressor of a serial chain and its identifiable parameter sets (seed 004, eqs. 5-8).

At very low speed the joint torques are the gravity torques plus friction
(eq. 3), and gravity is linear in the links' masses and first mass moments:

.. math::

    G(q) = Y_s(q)\\,\\pi_s, \\qquad \\pi_s = [m_1, m_1 c_{x1}, m_1 c_{y1}, m_1 c_{z1}, \\dots]

with :math:`c_i` the CoM of link i in its joint frame. ``Y_s`` comes from
pinocchio's joint-torque regressor at zero velocity and acceleration (its
inertia columns are then zero and are dropped). Not every combination of
``pi_s`` changes the torques; a :class:`ParameterSet` is a linear map
``phi = C pi_s`` onto identifiable combinations, with the regressor
``H(q) = Y_s(q) C^+`` such that ``G(q) = H(q) phi`` (eq. 7). Two sets:

- :func:`base_parameters`: the minimal base set of any chain, found
  numerically by QR with column pivoting of ``Y_s`` stacked at random
  configurations (independent columns, dependent ones regrouped onto them);
- :func:`lunar_arm_composite_parameters`: the paper's 12 composite gravity
  parameters of the seed-004 arm (eq. 8), in N m.

:func:`identification_parameters` picks the second for the lunar arm's
chain and the first for any other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin
import scipy.linalg

from humanoid_balance.core.identification import EARTH_GRAVITY, LUNAR_JOINTS
from humanoid_balance.exceptions import InvalidInputError, ModelError

#: standard gravity parameters per link, in pinocchio's dynamic-parameter order
STANDARD_PER_LINK = ("m", "mcx", "mcy", "mcz")
STANDARD_UNITS = ("kg", "kg m", "kg m", "kg m")


class GravityRegressor:
    """Standard gravity regressor ``Y_s(q)`` of a fixed-base serial chain.

    Args:
        model: pinocchio model of the chain (revolute or prismatic joints, nq == nv).
        gravity: magnitude of gravity along the world's -z in [m/s^2].
    """

    def __init__(self, model: pin.Model, gravity: float = EARTH_GRAVITY) -> None:
        if model.nq != model.nv:
            raise ModelError(f"{model.nq=} but {model.nv=}: a fixed-base chain of 1-DOF "
                             "joints is expected (no free flyer, no spherical joints)")
        if not np.isfinite(gravity) or gravity <= 0.0:
            raise InvalidInputError(f"gravity={gravity} must be finite and > 0 [m/s^2]")
        self.model = model.copy()
        self.model.gravity.linear = np.array([0.0, 0.0, -gravity])
        self.data = self.model.createData()
        self.gravity = float(gravity)
        self.joint_names: tuple[str, ...] = tuple(self.model.names[1:])
        self.n = self.model.nv
        self._cols = np.concatenate([10 * j + np.arange(4) for j in range(self.n)])
        self.standard_names: tuple[str, ...] = tuple(
            f"{p}_{link}" for link in self.link_names for p in STANDARD_PER_LINK)

    @property
    def link_names(self) -> tuple[str, ...]:
        """Names of the bodies moved by each joint (the joint's child frame)."""
        names = []
        for j in range(1, self.model.njoints):
            frames = [f.name for f in self.model.frames
                      if f.parentJoint == j and f.type == pin.FrameType.BODY]
            names.append(frames[0] if frames else self.model.names[j])
        return tuple(names)

    def standard_parameters(self) -> np.ndarray:
        """The model's own ``pi_s``: [m, m c_x, m c_y, m c_z] per link, in [kg], [kg m]."""
        return np.concatenate([
            self.model.inertias[j].toDynamicParameters()[:4] for j in range(1, self.model.njoints)])

    def __call__(self, q: np.ndarray) -> np.ndarray:
        """``Y_s(q)``: (n, 4n) in [N m/kg] and [N/kg]; ``G(q) = Y_s(q) pi_s``.

        Raises:
            InvalidInputError: q has the wrong shape or is not finite.
        """
        q = np.asarray(q, dtype=float)
        if q.shape != (self.n,) or not np.all(np.isfinite(q)):
            raise InvalidInputError(f"q must be {self.n} finite joint angles [rad], got {q!r}")
        zero = np.zeros(self.n)
        full = pin.computeJointTorqueRegressor(self.model, self.data, q, zero, zero)
        return np.asarray(full[:, self._cols])

    def stacked(self, qs: np.ndarray) -> np.ndarray:
        """``Y_s`` of N configurations stacked: (N, n, 4n)."""
        qs = np.atleast_2d(np.asarray(qs, dtype=float))
        return np.stack([self(q) for q in qs])

    def gravity_torques(self, q: np.ndarray) -> np.ndarray:
        """Exact gravity torques of the model [N m] (pinocchio RNEA with v = a = 0)."""
        return np.asarray(pin.computeGeneralizedGravity(self.model, self.data, np.asarray(q, float)))


@dataclass(frozen=True)
class ParameterSet:
    """Identifiable parameters ``phi = C pi_s`` and their regressor ``H = Y_s C^+``.

    Attributes:
        names: one name per parameter.
        units: one unit per parameter.
        matrix: ``C``, (p, 4n).
        owner: for each parameter, the last joint (0-based) whose torque it
            enters; the regressor is block upper triangular in this grouping
            (eq. 7), which the back-to-front estimation of eq. 10 uses.
    """

    names: tuple[str, ...]
    units: tuple[str, ...]
    matrix: np.ndarray
    owner: tuple[int, ...]

    @property
    def size(self) -> int:
        """Number of parameters p."""
        return len(self.names)

    def from_standard(self, standard: np.ndarray) -> np.ndarray:
        """``phi = C pi_s``."""
        return np.asarray(self.matrix @ standard)

    def regressor(self, standard_regressor: np.ndarray) -> np.ndarray:
        """``H = Y_s C^+`` for one (n, 4n) or stacked (N, n, 4n) standard regressor."""
        return np.asarray(standard_regressor @ self._pinv)

    @property
    def _pinv(self) -> np.ndarray:
        return np.asarray(np.linalg.pinv(self.matrix))

    def lost_directions(self, stacked_standard: np.ndarray) -> float:
        """Largest torque [N m per unit parameter] that ``C`` cannot represent.

        ``max |Y_s (I - C^+ C)|`` over the samples: zero (to rounding) when
        ``G = H phi`` holds exactly for every inertial parameter vector.
        """
        projector = np.eye(self.matrix.shape[1]) - self._pinv @ self.matrix
        return float(np.abs(stacked_standard @ projector).max())


def random_configurations(model: pin.Model, count: int, seed: int = 0) -> np.ndarray:
    """``count`` configurations uniform within the joint limits (clipped to +-pi) [rad]."""
    lower = np.maximum(model.lowerPositionLimit, -np.pi)
    upper = np.minimum(model.upperPositionLimit, np.pi)
    return np.random.default_rng(seed).uniform(lower, upper, size=(count, model.nq))


def _owners(stacked: np.ndarray, tol: float) -> tuple[int, ...]:
    """Last joint row in which each column of the stacked regressor is non-zero."""
    mags = np.abs(stacked).max(axis=0)  # (n, p)
    owners = []
    for col in range(mags.shape[1]):
        rows = np.flatnonzero(mags[:, col] > tol)
        owners.append(int(rows[-1]) if rows.size else -1)
    return tuple(owners)


def base_parameters(regressor: GravityRegressor, samples: int = 200, seed: int = 0,
                    rtol: float = 1e-9) -> ParameterSet:
    """The minimal base gravity parameters by QR with column pivoting.

    Stack ``Y_s`` at ``samples`` random configurations ``W = [Y_s(q_1); ...]``,
    factor ``W P = Q R``; the first r pivoted columns (r the numerical rank)
    are independent, the others are ``W_d = W_b beta`` with ``beta =
    R_11^{-1} R_12``, so ``W pi_s = W_b (pi_b + beta pi_d)``: the base
    parameters are ``phi = pi_b + beta pi_d``, named after their leading
    standard parameter (``+`` the regrouped ones in the unit of the set).

    Args:
        regressor: the chain's standard gravity regressor.
        samples: number of random configurations.
        seed: seed of the configurations.
        rtol: rank threshold relative to the largest diagonal entry of R.
    """
    stacked = regressor.stacked(random_configurations(regressor.model, samples, seed))
    w = stacked.reshape(-1, stacked.shape[-1])
    _, r, perm = scipy.linalg.qr(w, mode="economic", pivoting=True)
    diag = np.abs(np.diag(r))
    rank = int(np.sum(diag > rtol * diag[0]))
    independent, dependent = perm[:rank], perm[rank:]
    beta = scipy.linalg.solve_triangular(r[:rank, :rank], r[:rank, rank:])
    beta[np.abs(beta) < 1e-10] = 0.0
    matrix = np.zeros((rank, w.shape[1]))
    matrix[np.arange(rank), independent] = 1.0
    matrix[:, dependent] = beta
    order = np.argsort(independent)  # keep the standard order (link by link)
    matrix = matrix[order]
    names = []
    for row in matrix:
        lead = int(np.flatnonzero(row == 1.0)[0]) if np.any(row == 1.0) else int(np.argmax(row))
        others = [regressor.standard_names[c] for c in np.flatnonzero(row) if c != lead]
        names.append(regressor.standard_names[lead] + (f" + ({', '.join(others)})" if others else ""))
    units = tuple(STANDARD_UNITS[int(np.flatnonzero(row)[0]) % 4] for row in matrix)
    scale = np.abs(w).max()
    owner = _owners(stacked @ np.linalg.pinv(matrix), 1e-9 * scale)
    return ParameterSet(tuple(names), units, matrix, owner)


def lunar_arm_composite_parameters(
    l1: float = 0.350, l2: float = 0.250, gravity: float = EARTH_GRAVITY,
) -> ParameterSet:
    """The paper's 12 minimal composite gravity parameters of the seed-004 arm (eq. 8) [N m].

    With link i's mass ``m_i`` and CoM ``(l_xi, l_yi, l_zi)`` in DH frame i:

    .. math::

        \\phi_G = g\\,[m_1 l_{x1},\\; m_1 l_{y1} + m_2 l_{z2},\\; m_2 l_{x2},\\;
        m_2 l_{y2} + m_3 l_{z3} - (m_3 + m_4 + m_5 + m_6) l_1,\\; m_3 l_{x3},\\;
        m_3 l_{y3} + m_4 l_{z4},\\; m_4 l_{x4},\\; m_4 l_{y4} - m_5 l_{z5} + (m_5 + m_6) l_2,\\;
        m_5 l_{x5},\\; m_5 l_{y5} + m_6 l_{z6},\\; m_6 l_{x6},\\; m_6 l_{y6}]

    (signs as eq. 8; the paper's Table 5 lists the 4th and 8th with the
    opposite sign). Parameters 2j-1, 2j belong to joint j (eq. 7).

    Args:
        l1: upper-arm length [m] (``-d_3``).
        l2: forearm length [m] (``-d_5``).
        gravity: the gravity [m/s^2] the parameters are expressed at.
    """
    n = 6

    def col(link: int, what: str) -> int:
        return 4 * (link - 1) + STANDARD_PER_LINK.index(what)

    rows: list[dict[int, float]] = [
        {col(1, "mcx"): 1.0},
        {col(1, "mcy"): 1.0, col(2, "mcz"): 1.0},
        {col(2, "mcx"): 1.0},
        {col(2, "mcy"): 1.0, col(3, "mcz"): 1.0,
         **{col(k, "m"): -l1 for k in (3, 4, 5, 6)}},
        {col(3, "mcx"): 1.0},
        {col(3, "mcy"): 1.0, col(4, "mcz"): 1.0},
        {col(4, "mcx"): 1.0},
        {col(4, "mcy"): 1.0, col(5, "mcz"): -1.0, col(5, "m"): l2, col(6, "m"): l2},
        {col(5, "mcx"): 1.0},
        {col(5, "mcy"): 1.0, col(6, "mcz"): 1.0},
        {col(6, "mcx"): 1.0},
        {col(6, "mcy"): 1.0},
    ]
    matrix = np.zeros((12, 4 * n))
    for i, row in enumerate(rows):
        for c, v in row.items():
            matrix[i, c] = gravity * v
    names = (
        "m1*g*lx1", "m1*g*ly1 + m2*g*lz2", "m2*g*lx2",
        "m2*g*ly2 + m3*g*lz3 - (m3+m4+m5+m6)*g*l1", "m3*g*lx3", "m3*g*ly3 + m4*g*lz4",
        "m4*g*lx4", "m4*g*ly4 - m5*g*lz5 + (m5+m6)*g*l2", "m5*g*lx5", "m5*g*ly5 + m6*g*lz6",
        "m6*g*lx6", "m6*g*ly6",
    )
    return ParameterSet(names, ("N m",) * 12, matrix, tuple(i // 2 for i in range(12)))


def identification_parameters(regressor: GravityRegressor) -> ParameterSet:
    """The parameter set to identify: eq. 8's for the lunar arm, the QR base set otherwise.

    The lunar arm is recognised by its chain (``LUNAR_JOINTS``, in order); its
    composite parameters are expressed at ``regressor.gravity``.
    """
    if regressor.joint_names == LUNAR_JOINTS:
        return lunar_arm_composite_parameters(gravity=regressor.gravity)
    return base_parameters(regressor)
