"""Identification (seed 004) of random payloads at random gravities, against the true arm.

Seeded draws (issue 32, item 4): a payload of 0 to 1 kg rigid with the hand,
its centre anywhere within 0.1 m of the wrist centre (the ``link6`` origin),
on an arm under gravity from the Moon's 1.62 to 11 m/s^2. Measured as the
``identification_executor`` node measures with its default parameters
(``params/identification_executor.py``): the eq. 11 plan (joints 6 .. 1, each
swept +-30 deg about the static configuration at 3 deg/s, forward and
backward, every pass and approach accelerating and braking at 30 deg/s^2)
followed exactly, a 100 Hz joint-state stream whose torques are pinocchio's
RNEA of the arm with the payload, ``M qdd + C qd + G`` (qdd: central
differences of the plan's velocity), plus the experiment's joint friction
(``experiments/identification.py``); the stream cut into sweeps by
:func:`segment_sweeps` (trim 0.5 s) and identified by :func:`identify`
(friction pairs, blocks of 10) at the draw's gravity, with every estimator of
``METHODS``. No current noise: these draws bound the procedure's own
error (velocity and acceleration terms, pairing, averaging, the payload in
eq. 8, gravity scaling) for every draw. With the experiment's Table 6 noise
(fixed in N m) the error is random and grows as a joint's torque shrinks:
identified at the Moon's gravity, or with a payload that nearly balances the
wrist, single draws exceed 1 % (measured for issue 32: 2.3 % and 1.4 %).

"Per joint", as the experiment (``validate_on_moon``, eq. 18 over Table 3's
maximum): the RMSE of a joint's predicted gravity torque along the
experiment's validation path at Moon gravity, in % of the largest |true
torque| of that joint on the path; the truth is pinocchio's gravity torque of
the arm with the payload. Eq. 10's parameters (the paper's estimator, the
node's default) are also held to the true eq. 8 values, computed here from
SPEC section 4's table with the payload merged into link 6: per joint, the
error of its block of eq. 8 (the two parameters of eq. 7 that joint owns) in
% of the block's true size. The global and weighted fits are not: they also
fit the torques of the joints that do not sweep, whose velocity-product terms
``C(q, qd) qd`` (even in qd) eq. 5's pairing does not cancel; at 3 deg/s that
moves joint 1's small block (links 1 and 2 only) by up to 1.2 % with 1 kg at
0.1 m under the Moon's gravity (measured for issue 32), while their torques
stay within 0.04 %.

Draw k uses ``np.random.default_rng([BASE_SEED, k])``: a failure names k.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
import pytest

from humanoid_balance.core.identification import METHODS
from humanoid_balance.core.identification.procedure import (
    identify,
    prediction_regressor,
    segment_sweeps,
)
from humanoid_balance.core.identification.regressor import GravityRegressor, identification_parameters
from humanoid_balance.core.identification.trajectory import PlanFollower, identification_plan
from humanoid_balance.experiments.identification import (
    FRICTION_COULOMB,
    FRICTION_VISCOUS,
    VALIDATION_PATH_DEG,
)
from humanoid_balance.params.identification_executor import SPEC
from humanoid_balance.resources import urdf_path

BASE_SEED = 32  # issue 32
DRAWS = 40
#: every joint, every draw, every estimator: the issue's bound (the paper's Tables 3/4: 2.8-7.0 %)
TARGET_PCT = 1.0
MOON = 9.81 / 6.0
RATE_HZ = 100.0  # joint states
#: SPEC section 4: per link, mass [kg] and CoM [mm] in its DH frame; l1, l2 [m]
SPEC_LINKS = ((0.8, (0.5, 3.5, -70.0)), (0.7, (1.5, 4.0, 5.0)), (0.5, (5.5, 13.0, 150.0)),
              (0.3, (7.5, -30.0, 4.5)), (0.3, (3.5, 11.0, 100.0)), (0.2, (2.0, 5.5, 3.0)))
L1, L2 = 0.350, 0.250
PAYLOAD_RADIUS = 0.02  # a solid sphere, as the simulation's (its inertia enters M and C only)
NODE = SPEC.defaults()


@dataclass(frozen=True)
class Draw:
    """A payload [kg] with its centre in ``link6`` [m], and the gravity [m/s^2]."""

    payload_kg: float
    payload_com_m: np.ndarray
    gravity: float


def draw(k: int) -> Draw:
    """Draw k: mass uniform 0..1 kg, centre uniform in the 0.1 m ball, g uniform in the k-th
    of ``DRAWS`` equal slices of 1.62..11 m/s^2 (so the Moon's end is always drawn)."""
    rng = np.random.default_rng([BASE_SEED, k])
    mass, direction = rng.uniform(0.0, 1.0), rng.normal(size=3)
    centre = direction / np.linalg.norm(direction) * 0.1 * rng.uniform() ** (1.0 / 3.0)
    return Draw(mass, centre, 1.62 + (11.0 - 1.62) * (k + rng.uniform()) / DRAWS)


def _arm() -> pin.Model:
    return pin.buildModelFromUrdf(str(urdf_path("lunar_arm")))


def _loaded_arm(case: Draw, gravity: float) -> pin.Model:
    """The true arm: the URDF's, the payload's inertia added to link 6's."""
    model = _arm()
    model.gravity.linear = np.array([0.0, 0.0, -gravity])
    model.appendBodyToJoint(6, pin.Inertia.FromSphere(case.payload_kg, PAYLOAD_RADIUS),
                            pin.SE3(np.eye(3), case.payload_com_m))
    return model


@functools.lru_cache(maxsize=1)
def plan_stream() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Times [s], positions, velocities, accelerations of the node's default plan at 100 Hz."""
    static = np.radians(NODE["static_configuration"])
    half = math.radians(NODE["sweep_half_range"])
    arm = _arm()
    ranges = [(max(s - half, lo), min(s + half, hi))
              for s, lo, hi in zip(static, arm.lowerPositionLimit, arm.upperPositionLimit, strict=True)]
    plan = identification_plan([static] * 6, ranges, math.radians(NODE["speed"]))
    follower = PlanFollower(plan, static, acceleration=math.radians(NODE["acceleration_limit"]))
    t = np.arange(0.0, follower.duration, 1.0 / RATE_HZ)
    points = [follower.at(tk) for tk in t]
    q, qd = np.array([p.position for p in points]), np.array([p.velocity for p in points])
    return t, q, qd, np.gradient(qd, t, axis=0)


@functools.lru_cache(maxsize=1)
def validation_path() -> np.ndarray:
    """The experiment's validation path, every 0.5 deg of its fastest joint [rad] (K, 6)."""
    waypoints = np.radians(np.array(VALIDATION_PATH_DEG, dtype=float))
    arc = np.concatenate([[0.0], np.cumsum(np.abs(np.diff(waypoints, axis=0)).max(axis=1))])
    s = np.linspace(0.0, arc[-1], int(arc[-1] / math.radians(0.5)) + 1)
    return np.column_stack([np.interp(s, arc, waypoints[:, j]) for j in range(6)])


def true_parameters(case: Draw, gravity: float) -> np.ndarray:
    """Eq. 8's 12 parameters [N m] from SPEC's table, the payload merged into link 6.

    With ``m_i`` and ``m_i l_i = (mx_i, my_i, mz_i)`` link i's mass and first moment:
    ``g [mx1, my1 + mz2, mx2, my2 + mz3 - (m3+m4+m5+m6) l1, mx3, my3 + mz4, mx4,
    my4 - mz5 + (m5+m6) l2, mx5, my5 + mz6, mx6, my6]``.
    """
    m = [mass for mass, _ in SPEC_LINKS]
    first = [mass * np.array(com_mm) / 1000.0 for mass, com_mm in SPEC_LINKS]
    m[5] += case.payload_kg
    first[5] = first[5] + case.payload_kg * case.payload_com_m
    (x1, y1, _), (x2, y2, z2), (x3, y3, z3), (x4, y4, z4), (x5, y5, z5), (x6, y6, z6) = first
    return gravity * np.array([
        x1, y1 + z2, x2, y2 + z3 - (m[2] + m[3] + m[4] + m[5]) * L1, x3, y3 + z4, x4,
        y4 - z5 + (m[4] + m[5]) * L2, x5, y5 + z6, x6, y6])


@dataclass(frozen=True)
class Errors:
    """One draw's errors per joint [%]: each estimator's torque at Moon gravity, eq. 10's
    eq. 8 blocks."""

    torque_pct: dict[str, np.ndarray]
    parameter_pct: np.ndarray


def identify_draw(k: int) -> Errors:
    """Measure, identify with every estimator and compare draw k with the truth."""
    case = draw(k)
    model = _loaded_arm(case, case.gravity)
    data = model.createData()
    t, q, qd, qdd = plan_stream()
    tau = np.array([pin.rnea(model, data, *sample) for sample in zip(q, qd, qdd, strict=True)])
    tau += FRICTION_COULOMB * np.sign(qd) + FRICTION_VISCOUS * qd
    speed = math.radians(NODE["speed"])
    recordings = segment_sweeps(t, q, qd, tau, moving_rad_s=0.3 * speed, trim_s=NODE["trim"])
    assert [r.joint for r in recordings] == [5, 4, 3, 2, 1, 0], k
    regressor = GravityRegressor(_arm(), case.gravity)
    pset = identification_parameters(regressor)
    path = validation_path()
    moon = _loaded_arm(case, MOON)
    moon_data = moon.createData()
    truth = np.array([pin.computeGeneralizedGravity(moon, moon_data, qk) for qk in path])
    h_moon = prediction_regressor(regressor, pset, path, MOON)  # torques at Moon gravity = H phi
    estimates = {method: identify(recordings, regressor, pset, method=method,
                                  average=NODE["average"]).values for method in METHODS}
    torque = {method: 100.0 * np.sqrt(np.mean((h_moon @ values - truth) ** 2, axis=0))
              / np.abs(truth).max(axis=0) for method, values in estimates.items()}
    phi, owner = true_parameters(case, case.gravity), np.asarray(pset.owner)
    error = estimates["sequential"] - phi
    parameter = np.array([100.0 * np.linalg.norm(error[owner == j]) / np.linalg.norm(phi[owner == j])
                          for j in range(6)])
    return Errors(torque, parameter)


@pytest.fixture(scope="module")
def errors() -> list[Errors]:
    """Every draw's errors (the draws are shared by the tests of this module)."""
    return [identify_draw(k) for k in range(DRAWS)]


def worst_torque(errors: list[Errors]) -> tuple[float, int, str, int]:
    """(error [%], draw, estimator, joint 1..6) of the largest torque error."""
    return max((float(e.torque_pct[m][j]), k, m, j + 1)
               for k, e in enumerate(errors) for m in METHODS for j in range(6))


def worst_parameters(errors: list[Errors]) -> tuple[float, int, int]:
    """(error [%], draw, joint 1..6) of eq. 10's largest parameter-block error."""
    return max((float(e.parameter_pct[j]), k, j + 1) for k, e in enumerate(errors) for j in range(6))


def test_every_draw_predicts_every_joint_within_1_percent_at_moon_gravity(errors: list[Errors]) -> None:
    """40 draws x 3 estimators: each joint's Moon torque RMSE <= 1 % of its largest torque."""
    worst = worst_torque(errors)
    assert worst[0] <= TARGET_PCT, "draw {1}, {2}, joint {3}: {0:.4g} %".format(*worst)


def test_every_draw_gives_eq_10_every_joints_true_parameters_within_1_percent(
        errors: list[Errors]) -> None:
    """40 draws: each joint's eq. 8 block from eq. 10 within 1 % of its true size."""
    worst = worst_parameters(errors)
    assert worst[0] <= TARGET_PCT, "draw {1}, joint {2}: {0:.4g} %".format(*worst)
