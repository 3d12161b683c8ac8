"""Randomised RMC at and beyond the joint limits (issue 32): seeded draws, every cycle checked.

Each draw: a random pose of both arms inside their limits (the job hand at least 0.05 from a
singularity), a random hand-twist direction ``u`` (6 numbers, m/s and rad/s) and a size
``f``: the twist ``f u / max_i(|J^+ u|_i / v_max,i)`` asks the most loaded job joint for
``f`` times its speed limit at the start pose. It is ramped in at half the acceleration
limits there and held; the default controller (held rows ``Lx, Ly``, posture task on) runs
:data:`CYCLES` cycles at the node's 500 Hz. Three kinds of draws:

- within: ``f`` in [0.1, 0.6], kept only where the unlimited RMC (``J^+ t``, eq. 6 by
  ``numpy.linalg.pinv``), simulated here, stays well inside every limit for the whole run;
- at the limits: ``f`` in [0.3, 1), run into the position limits;
- beyond: ``f`` in [1, 3].

Everything is measured here, not read from the controller: the hand twist with the frame
Jacobian of pinocchio (its own data), the held rows with
:meth:`~humanoid_balance.core.model.RobotModel.momentum_matrix` about ``W``, and, wherever
the held rows exceed 1e-9 N m s, whether any motion along the request (``J qd_job = s t``,
``0 <= s <= 1``) within both arms' boxes
(:func:`~humanoid_balance.core.joint_limits.velocity_box`, the limits' definition) holds
them, by a bounded least squares of its own (``scipy.optimize.lsq_linear``, BVLS).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin
import pytest
from scipy.optimize import lsq_linear

from humanoid_balance.core.joint_limits import (
    JointLimits,
    VelocityBox,
    arm_acceleration_limit,
    velocity_box,
)
from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.rmc import RmcController, RmcInput, RmcRegime
from humanoid_balance.resources import urdf_path

DT = 0.002  # arm_balance's default rate, 500 Hz
CYCLES = 250
WITHIN_SEEDS = tuple(range(400, 406))
AT_LIMIT_SEEDS = tuple(range(500, 506))
BEYOND_SEEDS = tuple(range(600, 618))
HELD = 1e-9  # N m s
TWIST = 1e-6  # relative
ANGLE = 1.0  # deg
EXISTS = 1e-10  # residual of the independent bounded least squares: a held solution exists
HELD_ROWS = (3, 4)  # Lx, Ly


@dataclass(frozen=True)
class Setup:
    """The model and what the checks need from it, built once."""

    model: RobotModel
    data: pin.Data
    names: tuple[str, ...]
    arm_q: np.ndarray
    arm_v: np.ndarray
    job_v: np.ndarray
    hand: int
    limits: JointLimits
    w_point: np.ndarray


@dataclass(frozen=True)
class Draw:
    """One random draw: start configuration, held twist, ramp length [cycles], size ``f``."""

    seed: int
    kind: str
    q0: np.ndarray
    twist: np.ndarray
    ramp: int
    size: float


@dataclass
class Record:
    """Per-cycle measurements of one draw."""

    draw: Draw
    regime: list[RmcRegime] = field(default_factory=list)
    scale: list[float] = field(default_factory=list)
    held: list[float] = field(default_factory=list)
    twist_error: list[float] = field(default_factory=list)  # |v - t| / |t|
    angle: list[float] = field(default_factory=list)  # deg, v against the request t
    measured_scale: list[float] = field(default_factory=list)  # v . t / |t|^2
    sigma: list[float] = field(default_factory=list)  # smallest singular value of J
    job_speed: list[float] = field(default_factory=list)  # |qd_job| [rad/s]
    exists: list[bool | None] = field(default_factory=list)  # None: not needed (rows held)
    limit_excess: list[float] = field(default_factory=list)  # worst of pos, vel, acc [SI]


@pytest.fixture(scope="module")
def setup() -> Setup:
    """The humanoid (fixed base, world at W) and its arm limits, as the controller's defaults."""
    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    names = model.group("right_arm") + model.group("left_arm")
    lower, upper = model.position_limits(names)
    limits = JointLimits(names, lower, upper, model.velocity_limits(names),
                         np.array([arm_acceleration_limit(n) for n in names]))
    return Setup(model, model.model.createData(), names, model.q_index(names),
                 model.v_index(names), model.v_index(model.group("right_arm")),
                 model.frame_id("right_hand"), limits,
                 model.frame_transform("W", model.neutral())[:3, 3].copy())


def _jacobian(s: Setup, q: np.ndarray) -> np.ndarray:
    return np.array(pin.computeFrameJacobian(s.model.model, s.data, q, s.hand,
                                             pin.LOCAL_WORLD_ALIGNED))[:, s.job_v]


def _arm_momentum(s: Setup, q: np.ndarray) -> np.ndarray:
    """[P; L] about W per unit arm joint velocity (6 x 14), job arm first."""
    return s.model.momentum_matrix(q, s.w_point)[:, s.arm_v]


def _angle(v: np.ndarray, g: np.ndarray) -> float:
    """Angle [deg] between ``v`` and ``g``; 0 for a hand at rest to rounding (no direction)."""
    if np.linalg.norm(v) <= 1e-9 * np.linalg.norm(g):
        return 0.0
    cos = float(v @ g) / (np.linalg.norm(v) * np.linalg.norm(g))
    return math.degrees(math.acos(min(1.0, max(-1.0, cos))))


def _stays_within(s: Setup, q0: np.ndarray, twist: np.ndarray, ramp: int) -> bool:
    """The unlimited RMC (``J^+ t``, eq. 6 without posture task), simulated here, stays well inside
    every limit box for the whole run, with room for the aux arm's posture motion (at most
    0.5 rad/s, 2 rad/s^2)."""
    lim = s.limits
    q, prev = q0.copy(), np.zeros(14)
    room = np.r_[np.zeros(7), np.full(7, 0.6)]
    for k in range(CYCLES):
        jac = _jacobian(s, q)
        if np.linalg.svd(jac, compute_uv=False)[-1] < 0.05:
            return False
        job = np.linalg.pinv(jac) @ (twist * min(1.0, (k + 1) / ramp))
        a = _arm_momentum(s, q)[list(HELD_ROWS)]
        qd = np.r_[job, -np.linalg.pinv(a[:, 7:]) @ (a[:, :7] @ job)]
        arm = q[s.arm_q]
        room_to_limit = np.minimum(lim.upper - arm, arm - lim.lower)
        braking = qd**2 / (2 * lim.acceleration) + np.abs(qd) * DT + 0.3
        if (np.any(np.abs(qd) > 0.8 * lim.velocity - room)
                or np.any(np.abs(qd - prev) > 0.75 * lim.acceleration * DT)
                or np.any(room_to_limit < braking)):
            return False
        q[s.arm_q] = arm + 0.5 * (prev + qd) * DT
        prev = qd
    return True


def _draw(s: Setup, seed: int, kind: str) -> Draw:
    """The draw of ``seed``: retried from the same generator until its pose is 0.05 from a
    singularity (and, for ``within``, until it stays inside the limits)."""
    rng = np.random.default_rng(seed)
    span = s.limits.upper - s.limits.lower
    size_range = {"within": (0.1, 0.6), "at_limit": (0.3, 1.0), "beyond": (1.0, 3.0)}[kind]
    for _ in range(500):
        q0 = s.model.neutral()
        q0[s.arm_q] = s.limits.lower + span * rng.uniform(0.1, 0.9, size=14)
        jac = _jacobian(s, q0)
        direction = rng.normal(size=6)
        direction /= np.linalg.norm(direction)
        size = float(rng.uniform(*size_range))
        if np.linalg.svd(jac, compute_uv=False)[-1] < 0.05:
            continue
        unit_velocities = np.linalg.pinv(jac) @ direction
        ratio = float(np.max(np.abs(unit_velocities) / s.limits.velocity[:7]))
        twist = size * direction / ratio
        # ramped in within the acceleration limits at the start pose (at half of them)
        ramp_s = 2.0 * float(np.max(np.abs(size * unit_velocities / ratio)
                                     / s.limits.acceleration[:7]))
        ramp = max(1, math.ceil(ramp_s / DT))
        if kind != "within" or _stays_within(s, q0, twist, ramp):
            return Draw(seed, kind, q0, twist, ramp, size)
    raise AssertionError(f"seed {seed}: no {kind} draw in 500 tries")


def _bvls(a: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """``min |a x|`` over ``lower <= x <= upper`` (lsq_linear's BVLS; entries with bounds less than
    1e-12 apart fixed: BVLS can stall on such a sliver)."""
    free = upper - lower > 1e-12 * (1.0 + np.abs(lower))
    x = lower.copy()
    ridge = 1e-9 * np.eye(int(free.sum()))  # (BVLS wants full column rank)
    rhs = -a[:, ~free] @ lower[~free]
    x[free] = lsq_linear(np.vstack([a[:, free], ridge]), np.r_[rhs, np.zeros(len(ridge))],
                         bounds=(lower[free], upper[free]), method="bvls").x
    return x


def _held_solution_exists(jac: np.ndarray, g: np.ndarray, a: np.ndarray,
                          box: VelocityBox) -> bool:
    """Some ``s`` in [0, 1], job and aux velocities in their boxes with ``J qd_job = s g`` and the
    held rows zero (bounded least squares over ``[s, qd_job, qd_aux]``)."""
    m = np.zeros((8, 15))
    m[:6, 0] = -g / np.linalg.norm(g)
    m[:6, 1:8] = jac / np.linalg.norm(g)
    m[6:, 1:] = a[list(HELD_ROWS)]
    x = _bvls(m, np.r_[0.0, box.lower], np.r_[1.0, box.upper])
    return bool(np.linalg.norm(m @ x) <= EXISTS)


def _run(s: Setup, draw: Draw) -> Record:
    """Run the default controller on ``draw`` and measure every cycle."""
    controller = RmcController(s.model)
    controller.reset(draw.q0)
    record = Record(draw)
    lim, prev = s.limits, np.zeros(14)
    for k in range(CYCLES):
        t = draw.twist * min(1.0, (k + 1) / draw.ramp)
        q = draw.q0.copy()
        q[s.arm_q] = controller.commanded_positions
        jac, a = _jacobian(s, q), _arm_momentum(s, q)
        out = controller.step(RmcInput(draw.q0, job_twist=t), DT)
        sigma = float(np.linalg.svd(jac, compute_uv=False)[-1])
        v = jac @ out.job_velocity
        held = float(np.max(np.abs((a @ out.velocity)[list(HELD_ROWS)])))
        exists = None
        if held > HELD:
            box = velocity_box(lim, q[s.arm_q] + 0.5 * prev * DT, prev, DT)
            exists = _held_solution_exists(jac, t, a, box)
        record.regime.append(out.regime)
        record.scale.append(out.job_scale)
        record.held.append(held)
        record.twist_error.append(float(np.linalg.norm(v - t) / np.linalg.norm(t)))
        record.angle.append(_angle(v, t))
        record.measured_scale.append(float(v @ t) / float(t @ t))
        record.sigma.append(sigma)
        record.job_speed.append(float(np.linalg.norm(out.job_velocity)))
        record.exists.append(exists)
        record.limit_excess.append(max(
            float(np.max(out.position - lim.upper)), float(np.max(lim.lower - out.position)),
            float(np.max(np.abs(out.velocity) - lim.velocity)),
            float(np.max(np.abs(out.velocity - prev) - lim.acceleration * DT))))
        prev = out.velocity
    return record


@pytest.fixture(scope="module")
def records(setup: Setup) -> dict[str, list[Record]]:
    """Every draw run once, by kind."""
    seeds = {"within": WITHIN_SEEDS, "at_limit": AT_LIMIT_SEEDS, "beyond": BEYOND_SEEDS}
    return {kind: [_run(setup, _draw(setup, seed, kind)) for seed in kind_seeds]
            for kind, kind_seeds in seeds.items()}


def _worst(records: list[Record], values: str) -> tuple[float, int, int, int]:
    """Largest of a per-cycle list over the draws: ``(value, seed, cycle, cycles checked)``."""
    worst, seed, cycle, checked = -math.inf, -1, -1, 0
    for r in records:
        for k, value in enumerate(getattr(r, values)):
            checked += 1
            if value > worst:
                worst, seed, cycle = value, r.draw.seed, k
    return worst, seed, cycle, checked


def _at_and_beyond(records: dict[str, list[Record]]) -> list[Record]:
    return records["at_limit"] + records["beyond"]


def test_within_the_limits_the_hand_follows_the_request_with_the_rows_held(
        records: dict[str, list[Record]]) -> None:
    """Within the limits, every cycle tracks: hand twist = request (1e-6), Lx, Ly <= 1e-9."""
    within = records["within"]
    assert all(regime is RmcRegime.TRACKING for r in within for regime in r.regime), \
        [(r.draw.seed, sorted({g.value for g in r.regime})) for r in within]
    twist = _worst(within, "twist_error")
    held = _worst(within, "held")
    assert twist[3] == len(WITHIN_SEEDS) * CYCLES
    assert twist[0] <= TWIST and held[0] <= HELD, (twist, held)


def test_no_command_leaves_a_joint_limit(records: dict[str, list[Record]]) -> None:
    """Every command of every draw keeps positions, speeds and accelerations within the table."""
    everything = [r for kind in records.values() for r in kind]
    worst = _worst(everything, "limit_excess")
    assert worst[0] <= 1e-9, worst


def test_the_hand_keeps_the_requested_direction(records: dict[str, list[Record]]) -> None:
    """At and beyond the limits, every command moves the hand within 1 deg of the request (or
    not at all), and no cycle is TURNING."""
    worst = _worst(_at_and_beyond(records), "angle")
    assert worst[0] <= ANGLE, worst
    assert all(regime is not RmcRegime.TURNING for r in _at_and_beyond(records)
               for regime in r.regime)


def test_held_rows_stay_zero_wherever_a_bounded_solution_holds_them(
        records: dict[str, list[Record]]) -> None:
    """At and beyond the limits, Lx, Ly <= 1e-9 N m s in every cycle where some motion along the
    twist within both arms' boxes holds them (independent bounded least squares)."""
    failures = [(r.draw.seed, k, r.held[k]) for r in _at_and_beyond(records)
                for k, exists in enumerate(r.exists) if exists]
    assert not failures, failures[:10]
    # the case is exercised: cycles scaled down along the request with the rows held
    assert sum(g is RmcRegime.SCALED and h <= HELD for r in _at_and_beyond(records)
               for g, h in zip(r.regime, r.held, strict=True)) > 1000


def test_where_no_solution_holds_the_rows_the_job_arm_stops(
        records: dict[str, list[Record]]) -> None:
    """Where no bounded solution holds the rows, the cycle says STOPPING_JOB and the job arm's
    joint speed |qd_job| does not grow (its limits and its direction are checked above)."""
    cycles = [(r, k) for r in _at_and_beyond(records) for k, e in enumerate(r.exists)
              if e is False]
    assert cycles  # the case is exercised
    assert all(r.regime[k] is RmcRegime.STOPPING_JOB for r, k in cycles), \
        [(r.draw.seed, k, r.regime[k].value) for r, k in cycles
         if r.regime[k] is not RmcRegime.STOPPING_JOB][:10]
    growth = max((r.job_speed[k] - r.job_speed[k - 1], r.draw.seed, k) for r, k in cycles
                 if k > 0)
    assert growth[0] <= 1e-12, growth


def test_the_reported_scale_is_finite_and_is_the_hand_twists(
        records: dict[str, list[Record]]) -> None:
    """job_scale is finite, 1 exactly while tracking, in [0, 1) while scaled, and equals the
    measured hand twist along the request, v . t / |t|^2, to 1e-6."""
    everything = [r for kind in records.values() for r in kind]
    for r in everything:
        scale = np.array(r.scale)
        assert np.all(np.isfinite(scale)) and np.all(scale >= 0.0), r.draw.seed
        tracking = np.array([g is RmcRegime.TRACKING for g in r.regime])
        scaled = np.array([g is RmcRegime.SCALED for g in r.regime])
        assert np.all(scale[tracking] == 1.0) and np.all(scale[scaled] < 1.0), r.draw.seed
        error = np.abs(np.array(r.measured_scale) - scale)
        assert float(error.max()) <= 1e-6, (r.draw.seed, int(error.argmax()), float(error.max()))
