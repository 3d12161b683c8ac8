"""Generalized Jacobian, free-floating RMRC and dynamic singularities (seed 002)."""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest

from humanoid_balance.core.gjm import (
    FreeFloatingRmrc,
    check_thresholds,
    free_floating_rmrc,
    generalized_jacobian,
    is_singular,
    row_indices,
)
from humanoid_balance.core.model import RobotModel
from humanoid_balance.exceptions import (
    ConfigurationError,
    DynamicSingularityError,
    InvalidInputError,
)
from humanoid_balance.resources import urdf_path

HANDS = ("right_hand", "left_hand")
JOINTS = tuple(f"{side}_joint{i}" for side in ("right", "left") for i in (1, 2, 3))
PLANAR = ("vx", "vy")
# seed 002 section 4: initial angles and hand rates [right vx, vy, left vx, vy] m/s for 10 s
PAPER_ANGLES = {
    "right_joint1": math.pi / 4, "right_joint2": math.pi / 2, "right_joint3": math.pi / 4,
    "left_joint1": 3 * math.pi / 4, "left_joint2": -math.pi / 2, "left_joint3": -math.pi / 4,
}
PAPER_RATES = np.array([0.02, 0.03, 0.0, 0.0])
# both arms stretched along the base x axis, collinear with the base: hand motion along x
# is impossible whatever the joints and the base do (rank of J* drops from 4 to 2)
COLLINEAR = {"right_joint1": 0.0, "right_joint2": 0.0, "right_joint3": 0.0,
             "left_joint1": math.pi, "left_joint2": 0.0, "left_joint3": 0.0}


@pytest.fixture(scope="module")
def model() -> RobotModel:
    return RobotModel(urdf_path("space_robot"), floating_base=True, groups={})


def _random_q(model: RobotModel, rng: np.random.Generator) -> np.ndarray:
    """A configuration with an arbitrary 3-D base pose (not only planar) and random joints."""
    q = model.neutral()
    q[0:3] = rng.uniform(-1.0, 1.0, 3)
    quat = rng.normal(size=4)
    q[3:7] = quat / np.linalg.norm(quat)
    q[7:] = rng.uniform(-math.pi, math.pi, model.nq - 7)
    return q


def _hand_positions(model: RobotModel, q: np.ndarray) -> np.ndarray:
    return np.concatenate([model.frame_transform(f, q)[:3, 3] for f in HANDS])


def _zero_momentum_velocity(model: RobotModel, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Base velocity from pinocchio's centroidal momentum map (independent of the CRBA path)."""
    a_g = pin.computeCentroidalMap(model.model, model.data, q)
    v = np.zeros(model.nv)
    v[model.v_index(JOINTS)] = qd
    v[0:6] = -np.linalg.solve(a_g[:, 0:6], a_g[:, 6:] @ v[6:])
    return v


def test_gjm_matches_finite_differences_of_the_free_floating_motion(model: RobotModel) -> None:
    """J* qd equals the central difference of both hands' positions along the zero-momentum motion."""
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = _random_q(model, rng)
        qd = rng.normal(size=6)
        v = _zero_momentum_velocity(model, q, qd)
        eps = 1e-6
        fd = (_hand_positions(model, pin.integrate(model.model, q, eps * v))
              - _hand_positions(model, pin.integrate(model.model, q, -eps * v))) / (2 * eps)
        gjm = generalized_jacobian(model, q, HANDS, joints=JOINTS, rows=("vx", "vy", "vz"))
        assert gjm.matrix @ qd == pytest.approx(fd, abs=1e-8)


def test_gjm_angular_rows_match_finite_differences_of_hand_orientation(model: RobotModel) -> None:
    """The wz rows of J* equal the rate of the hands' orientation along the zero-momentum motion."""
    rng = np.random.default_rng(1)
    q = _random_q(model, rng)
    qd = rng.normal(size=6)
    v = _zero_momentum_velocity(model, q, qd)
    eps = 1e-6
    rates = []
    for frame in HANDS:
        r_plus = model.frame_transform(frame, pin.integrate(model.model, q, eps * v))[:3, :3]
        r_minus = model.frame_transform(frame, pin.integrate(model.model, q, -eps * v))[:3, :3]
        rates.append(pin.log3(r_plus @ r_minus.T) / (2 * eps))  # world-axes angular velocity
    gjm = generalized_jacobian(model, q, HANDS, joints=JOINTS, rows=("wx", "wy", "wz"))
    assert gjm.matrix @ qd == pytest.approx(np.concatenate(rates), abs=1e-8)


# --- the paper's own construction (eqs. 4-18), in plain numpy from Table 1 -----------------
# link: (a m, l m, mass kg, I kg m^2); the base: b0 = 0.5 m, m0 = 5 kg, I0 = 0.208 kg m^2
TABLE_1_LINKS = ((0.2, 0.4, 0.5, 0.0067), (0.2, 0.4, 0.5, 0.0067), (0.063, 0.126, 0.2, 0.0003))
B0, M0, I0 = 0.5, 5.0, 0.208


def _paper_bodies(phi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Body CoMs (7 x 2), their absolute angles (7,) and the hands (4,) with the system CoM at 0.

    phi = [base angle, right joints 1-3, left joints 1-3] (rad). Eqs. 4, 13: the origin is
    the system CoM, so r0 follows from the arms' shape.
    """
    rel, angles, hands = [np.zeros(2)], [phi[0]], []
    for sign, joints in ((1.0, phi[1:4]), (-1.0, phi[4:7])):
        joint = sign * B0 * np.array([math.cos(phi[0]), math.sin(phi[0])])
        theta = phi[0]
        for (a, length, _, _), angle in zip(TABLE_1_LINKS, joints, strict=True):
            theta += angle
            u = np.array([math.cos(theta), math.sin(theta)])
            rel.append(joint + a * u)
            angles.append(theta)
            joint = joint + length * u
        hands.append(joint)
    masses = np.array([M0] + [m for _, _, m, _ in TABLE_1_LINKS] * 2)
    r0 = -masses @ np.array(rel) / masses.sum()  # eq. 4: sum m_i r_i = 0
    return np.array(rel) + r0, np.array(angles), np.concatenate(hands) + np.tile(r0, 2), masses


def _paper_j3(phi: np.ndarray) -> np.ndarray:
    """J_3 = J_M - J_S I_S^-1 I_M (eq. 18) by central differences of the paper's kinematics."""
    h = 1e-6
    d_r, d_theta, d_p = [], [], []
    for k in range(7):
        e = np.zeros(7)
        e[k] = h
        plus, minus = _paper_bodies(phi + e), _paper_bodies(phi - e)
        d_r.append((plus[0] - minus[0]) / (2 * h))
        d_theta.append((plus[1] - minus[1]) / (2 * h))
        d_p.append((plus[2] - minus[2]) / (2 * h))
    r, _, _, masses = _paper_bodies(phi)
    inertias = np.array([I0] + [i for _, _, _, i in TABLE_1_LINKS] * 2)
    # angular momentum about the system CoM per unit rate of each angle (eqs. 3, 16, 17)
    moment = np.array([inertias @ d_theta[k]
                       + masses @ (r[:, 0] * d_r[k][:, 1] - r[:, 1] * d_r[k][:, 0])
                       for k in range(7)])
    jac = np.array(d_p).T  # eq. 12: [J_S, J_M]
    return jac[:, 1:] - np.outer(jac[:, 0], moment[1:]) / moment[0]


def test_gjm_equals_the_papers_j3(model: RobotModel) -> None:
    """J* from pinocchio equals the paper's J_3 built from Table 1 and eqs. 4-18 in plain numpy."""
    rng = np.random.default_rng(4)
    for _ in range(3):
        phi = rng.uniform(-math.pi, math.pi, 7)
        q = model.configuration(dict(zip(JOINTS, phi[1:], strict=True)),
                                base_quaternion_xyzw=[0, 0, math.sin(phi[0] / 2),
                                                      math.cos(phi[0] / 2)])
        gjm = generalized_jacobian(model, q, HANDS, joints=JOINTS, rows=PLANAR)
        assert gjm.matrix == pytest.approx(_paper_j3(phi), abs=1e-8)


def test_gjm_equals_per_frame_jacobians_and_the_full_mass_matrix(model: RobotModel) -> None:
    """J* and base map equal those from computeFrameJacobian per frame and the full CRBA (1e-12)."""
    rng = np.random.default_rng(5)
    for _ in range(3):
        q = _random_q(model, rng)
        mass = np.array(pin.crba(model.model, pin.Data(model.model), q))
        mass = np.triu(mass) + np.triu(mass, 1).T
        v_idx = model.v_index(JOINTS)
        base_map = -np.linalg.solve(mass[0:6, 0:6], mass[0:6, v_idx])
        blocks = []
        for frame in HANDS:
            jac = pin.computeFrameJacobian(model.model, pin.Data(model.model), q,
                                           model.frame_id(frame), pin.LOCAL_WORLD_ALIGNED)
            blocks.append(jac[:, v_idx] + jac[:, 0:6] @ base_map)
        gjm = generalized_jacobian(model, q, HANDS, joints=JOINTS)
        np.testing.assert_allclose(gjm.base_map, base_map, rtol=0.0, atol=1e-12)
        np.testing.assert_allclose(gjm.matrix, np.vstack(blocks), rtol=0.0, atol=1e-12)


def test_rmrc_solution_carries_the_jacobian_it_was_solved_with(model: RobotModel) -> None:
    """The solution's J* and base map are generalized_jacobian's at q and give its velocities."""
    q = model.configuration(PAPER_ANGLES)
    sol = free_floating_rmrc(model, q, HANDS, PAPER_RATES, joints=JOINTS, rows=PLANAR)
    gjm = generalized_jacobian(model, q, HANDS, joints=JOINTS, rows=PLANAR)
    np.testing.assert_array_equal(sol.jacobian.matrix, gjm.matrix)
    np.testing.assert_array_equal(sol.jacobian.base_map, gjm.base_map)
    np.testing.assert_allclose(sol.jacobian.singular_values, gjm.singular_values, rtol=1e-14)
    np.testing.assert_array_equal(sol.velocity[0:6], sol.jacobian.base_map @ sol.joint_velocities)
    np.testing.assert_array_equal(sol.hand_velocities, sol.jacobian.matrix @ sol.joint_velocities)


def test_base_map_equals_the_centroidal_momentum_solution(model: RobotModel) -> None:
    """-H_b^-1 H_bm qd (CRBA) equals the base velocity that zeroes pinocchio's centroidal momentum."""
    rng = np.random.default_rng(2)
    q = _random_q(model, rng)
    qd = rng.normal(size=6)
    gjm = generalized_jacobian(model, q, HANDS, joints=JOINTS, rows=PLANAR)
    assert gjm.base_map @ qd == pytest.approx(
        _zero_momentum_velocity(model, q, qd)[0:6], abs=1e-12)


def test_rmrc_solution_has_zero_momentum(model: RobotModel) -> None:
    """The generalized velocity of an RMRC solution has zero linear and angular momentum."""
    q = model.configuration(PAPER_ANGLES)
    sol = free_floating_rmrc(model, q, HANDS, PAPER_RATES, joints=JOINTS, rows=PLANAR)
    momentum = pin.computeCentroidalMomentum(model.model, model.data, q, sol.velocity)
    assert np.asarray(momentum.vector) == pytest.approx(np.zeros(6), abs=1e-14)


def test_rmrc_moves_the_hands_at_the_command(model: RobotModel) -> None:
    """Pinocchio's frame velocities of both hands under the RMRC velocity equal the command."""
    q = model.configuration(PAPER_ANGLES)
    sol = free_floating_rmrc(model, q, HANDS, PAPER_RATES, joints=JOINTS, rows=PLANAR)
    pin.forwardKinematics(model.model, model.data, q, sol.velocity)
    pin.updateFramePlacements(model.model, model.data)
    achieved = np.concatenate([
        pin.getFrameVelocity(model.model, model.data, model.frame_id(f),
                             pin.ReferenceFrame.LOCAL_WORLD_ALIGNED).linear[0:2] for f in HANDS])
    assert achieved == pytest.approx(PAPER_RATES, abs=1e-14)


def test_rmrc_is_the_minimum_norm_solution(model: RobotModel) -> None:
    """qd = J*^+ xd: equal to numpy's pseudo-inverse solution (J* is 4 x 6, redundant)."""
    q = model.configuration(PAPER_ANGLES)
    sol = free_floating_rmrc(model, q, HANDS, PAPER_RATES, joints=JOINTS, rows=PLANAR)
    gjm = generalized_jacobian(model, q, HANDS, joints=JOINTS, rows=PLANAR)
    assert sol.joint_velocities == pytest.approx(np.linalg.pinv(gjm.matrix) @ PAPER_RATES,
                                                 abs=1e-14)


def test_joint_order_is_the_callers(model: RobotModel) -> None:
    """Reordering ``joints`` permutes the columns of J* and nothing else."""
    q = model.configuration(PAPER_ANGLES)
    a = generalized_jacobian(model, q, HANDS, joints=JOINTS, rows=PLANAR).matrix
    b = generalized_jacobian(model, q, HANDS, joints=JOINTS[::-1], rows=PLANAR).matrix
    assert b == pytest.approx(a[:, ::-1], abs=1e-15)


def test_collinear_stretched_arms_are_a_dynamic_singularity(model: RobotModel) -> None:
    """With both arms stretched in line with the base, J* has rank 2 (two zero singular values)."""
    gjm = generalized_jacobian(model, model.configuration(COLLINEAR), HANDS, joints=JOINTS,
                               rows=PLANAR)
    assert gjm.singular_values[2:] == pytest.approx([0.0, 0.0], abs=1e-12)


def test_singularity_raises_with_the_singular_values(model: RobotModel) -> None:
    """RMRC at a dynamic singularity raises DynamicSingularityError carrying J*'s singular values."""
    q = model.configuration(COLLINEAR)
    with pytest.raises(DynamicSingularityError) as info:
        free_floating_rmrc(model, q, HANDS, PAPER_RATES, joints=JOINTS, rows=PLANAR)
    expected = generalized_jacobian(model, q, HANDS, joints=JOINTS, rows=PLANAR).singular_values
    assert info.value.singular_values == pytest.approx(tuple(expected), abs=1e-15)


def test_singularity_message_says_what_to_do(model: RobotModel) -> None:
    """The error message names sigma_min, the thresholds and that nothing was commanded."""
    with pytest.raises(DynamicSingularityError, match=(
            r"^dynamic singularity: the generalized Jacobian J\* has smallest singular value "
            r".* \(expected >= 1\.000e-03\) and condition number .* \(expected <= 1\.000e\+03\); "
            r"singular values .*\. No joint velocity was commanded: stop the hands, or move the "
            r"arms away from this configuration with a joint-space command$")):
        free_floating_rmrc(model, model.configuration(COLLINEAR), HANDS, PAPER_RATES,
                           joints=JOINTS, rows=PLANAR)


def test_condition_number_threshold_alone_detects(model: RobotModel) -> None:
    """At the paper's start (condition number about 5.8) a threshold of 5 reports a singularity."""
    q = model.configuration(PAPER_ANGLES)
    with pytest.raises(DynamicSingularityError) as info:
        free_floating_rmrc(model, q, HANDS, PAPER_RATES, joints=JOINTS, rows=PLANAR,
                           min_singular_value=1e-9, max_condition_number=5.0)
    assert info.value.condition_number == pytest.approx(5.77, abs=0.01)


def test_is_singular_thresholds() -> None:
    """is_singular: sigma_min below its threshold, or condition number above its threshold."""
    assert [is_singular(np.array(s), 1e-3, 100.0) for s in
            ([1.0, 0.5], [1.0, 5e-4], [1.0, 0.009], [1.0, 0.0], [])] == [
        False, True, True, True, True]


def test_more_rows_than_joints_is_reported_as_singular(model: RobotModel) -> None:
    """Six hand rows with three joints can never be tracked: reported, not least-squared."""
    q = model.configuration(PAPER_ANGLES)
    with pytest.raises(DynamicSingularityError):
        free_floating_rmrc(model, q, HANDS, np.zeros(6), joints=JOINTS[:3],
                           rows=("vx", "vy", "wz"))


def test_fixed_base_model_is_refused() -> None:
    """A fixed-base model is refused with a message that says how to load it."""
    fixed = RobotModel(urdf_path("space_robot"), groups={})
    with pytest.raises(ConfigurationError, match=(
            r"^model 'space_robot' has a fixed base; the generalized Jacobian needs a "
            r"free-floating one: load it with RobotModel\(urdf, floating_base=True\)$")):
        generalized_jacobian(fixed, fixed.neutral(), HANDS)


def test_nan_hand_velocity_is_refused(model: RobotModel) -> None:
    """A NaN in the commanded hand velocities raises InvalidInputError, no joint rates."""
    with pytest.raises(InvalidInputError, match=r"^hand_velocities of shape \(4,\) \(finite: False\)"):
        free_floating_rmrc(model, model.configuration(PAPER_ANGLES), HANDS,
                           np.array([0.02, np.nan, 0.0, 0.0]), joints=JOINTS, rows=PLANAR)


def test_unknown_row_is_refused(model: RobotModel) -> None:
    """A row name outside vx..wz raises ConfigurationError listing the valid ones."""
    with pytest.raises(ConfigurationError, match=r"^rows=\['vx', 'vq'\]: expected a non-empty"):
        generalized_jacobian(model, model.neutral(), HANDS, rows=("vx", "vq"))


def test_repeated_row_is_refused() -> None:
    """row_indices: a row named twice raises ConfigurationError saying so."""
    with pytest.raises(ConfigurationError, match=(
            r"^rows=\['vx', 'vx'\]: expected a non-empty subset of .* without repetition; "
            r"unknown: \[\]$")):
        row_indices(["vx", "vx"])


def test_row_indices_follow_row_names() -> None:
    """row_indices gives the positions in [vx, vy, vz, wx, wy, wz], in the order asked."""
    assert row_indices(["wz", "vx", "vy"]).tolist() == [5, 0, 1]


@pytest.mark.parametrize(("thresholds", "message"), [
    ((0.0, 1e3), r"^min_singular_value=0.0: expected a finite value > 0 \(e.g. 1e-3 m/rad\)$"),
    ((math.nan, 1e3), r"^min_singular_value=nan: expected a finite value > 0"),
    ((1e-3, 1.0), r"^max_condition_number=1.0: expected a finite value > 1 \(e.g. 1e3\)$"),
    ((1e-3, math.inf), r"^max_condition_number=inf: expected a finite value > 1"),
])
def test_bad_thresholds_are_refused(thresholds: tuple[float, float], message: str) -> None:
    """check_thresholds: sigma_min threshold <= 0 or condition threshold <= 1 is refused."""
    with pytest.raises(ConfigurationError, match=message):
        check_thresholds(*thresholds)


def test_rmrc_refuses_bad_thresholds(model: RobotModel) -> None:
    """FreeFloatingRmrc with min_singular_value=0 is refused at construction."""
    with pytest.raises(ConfigurationError, match=r"^min_singular_value=0"):
        FreeFloatingRmrc(model, HANDS, joints=JOINTS, min_singular_value=0.0)


def test_step_at_a_singularity_leaves_the_state(model: RobotModel) -> None:
    """A step that meets a dynamic singularity raises and keeps the configuration and time."""
    ctrl = FreeFloatingRmrc(model, HANDS, joints=JOINTS)
    q = model.configuration(COLLINEAR)
    ctrl.reset(q)
    with pytest.raises(DynamicSingularityError):
        ctrl.step(PAPER_RATES, 0.01)
    assert (ctrl.q.tolist(), ctrl.time) == (q.tolist(), 0.0)


def test_step_before_reset_is_refused(model: RobotModel) -> None:
    """step() before reset() raises ConfigurationError."""
    with pytest.raises(ConfigurationError, match=r"call reset\(q\) first"):
        FreeFloatingRmrc(model, HANDS, joints=JOINTS).step(PAPER_RATES, 0.01)


def _run(model: RobotModel, dt: float, duration: float) -> np.ndarray:
    ctrl = FreeFloatingRmrc(model, HANDS, joints=JOINTS)
    ctrl.reset(model.configuration(PAPER_ANGLES))
    for _ in range(round(duration / dt)):
        ctrl.step(PAPER_RATES, dt)
    return ctrl.q


def test_integrator_is_fourth_order(model: RobotModel) -> None:
    """Halving the step divides the final-configuration error by about 16 (RK4 on the group)."""
    reference = _run(model, 0.0125, 2.0)
    errors = [np.linalg.norm(pin.difference(model.model, reference, _run(model, dt, 2.0)))
              for dt in (0.2, 0.1)]
    assert errors[0] / errors[1] == pytest.approx(16.0, rel=0.3)


@pytest.fixture(scope="module")
def paper_run(model: RobotModel) -> list[np.ndarray]:
    """The paper's scenario: 10 s at dt = 0.01 s; the configuration at every step."""
    ctrl = FreeFloatingRmrc(model, HANDS, joints=JOINTS)
    ctrl.reset(model.configuration(PAPER_ANGLES))
    trajectory = [ctrl.q]
    for _ in range(1000):
        trajectory.append(ctrl.step(PAPER_RATES, 0.01).q)
    return trajectory


def test_paper_scenario_right_hand_moves_along_the_commanded_line(
        model: RobotModel, paper_run: list[np.ndarray]) -> None:
    """The right hand is at p0 + [0.02, 0.03] t at every step of the 10 s (1e-9 m)."""
    p0 = model.frame_transform("right_hand", paper_run[0])[:2, 3]
    errors = [np.linalg.norm(model.frame_transform("right_hand", q)[:2, 3] - p0
                             - PAPER_RATES[:2] * 0.01 * k) for k, q in enumerate(paper_run)]
    assert max(errors) < 1e-9


def test_paper_scenario_left_hand_stays_still(
        model: RobotModel, paper_run: list[np.ndarray]) -> None:
    """The left hand (commanded [0, 0]) stays where it started (1e-9 m) while the base drifts."""
    p0 = model.frame_transform("left_hand", paper_run[0])[:2, 3]
    assert max(np.linalg.norm(model.frame_transform("left_hand", q)[:2, 3] - p0)
               for q in paper_run) < 1e-9


def test_paper_scenario_system_com_is_fixed(
        model: RobotModel, paper_run: list[np.ndarray]) -> None:
    """The system's centre of mass drifts less than 1e-9 m over the 10 s."""
    c0 = model.com(paper_run[0])
    assert max(np.linalg.norm(model.com(q) - c0) for q in paper_run) < 1e-9


def test_paper_scenario_base_reacts(model: RobotModel, paper_run: list[np.ndarray]) -> None:
    """The base does move (Figs. 3-4): more than 1 degree of attitude and 1 cm of position."""
    yaw = 2 * math.atan2(paper_run[-1][5], paper_run[-1][6])
    shift = np.linalg.norm(paper_run[-1][0:2] - paper_run[0][0:2])
    assert (abs(yaw) > math.radians(1.0), shift > 0.01) == (True, True)


def test_paper_scenario_stays_planar(model: RobotModel, paper_run: list[np.ndarray]) -> None:
    """The base never leaves the plane: z, roll and pitch stay at zero (1e-12)."""
    assert max(max(abs(q[2]), abs(q[3]), abs(q[4])) for q in paper_run) < 1e-12
