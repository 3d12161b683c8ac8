"""Resolved momentum control (seed 000): momentum matrices, solves, limits, indicators."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from humanoid_balance.core.joint_limits import (
    JointLimits,
    bound_shares,
    stopping_speed,
    velocity_box,
)
from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.rmc import (
    ConvexPolygon,
    RmcController,
    RmcInput,
    RmcRegime,
    arm_momentum_matrices,
    balance_indicators,
    boundary_preimage,
    damped_least_squares,
    damping_squared,
    extreme_scale,
    minimum_norm_least_squares,
    selection_matrix,
    zonotope_halfspaces,
)
from humanoid_balance.core.strike_trajectory import AUX_START_DEG, StrikeTrajectory, arm_pose
from humanoid_balance.exceptions import ConfigurationError, InvalidInputError
from humanoid_balance.resources import urdf_path

DT = 0.002
POSE = {"right_shoulder_pitch": -0.4, "right_shoulder_roll": -0.2, "right_elbow": 0.9,
        "right_wrist_pitch": 0.2, "left_shoulder_pitch": -0.2, "left_shoulder_roll": 0.3,
        "left_elbow": 0.6, "left_shoulder_yaw": 0.1, "waist_pitch": 0.05, "left_knee": 0.02}


@pytest.fixture(scope="module")
def model() -> RobotModel:
    """The humanoid, fixed base, world at W."""
    return RobotModel(urdf_path("humanoid"), world_frame="W")


@pytest.fixture(scope="module")
def q_pose(model: RobotModel) -> np.ndarray:
    """A generic configuration with bent arms."""
    return model.configuration(POSE)


def _strike_setup(model: RobotModel) -> tuple[StrikeTrajectory, np.ndarray]:
    trajectory = StrikeTrajectory(model)
    pose = {**dict(zip(trajectory.joint_names, trajectory.initial, strict=True)),
            **arm_pose("left", AUX_START_DEG)}
    return trajectory, model.configuration(pose)


def _body_momentum_about_origin(model: RobotModel, q: np.ndarray, v: np.ndarray,
                                h: float = 1e-6) -> np.ndarray:
    """[P; L] about the world origin by central finite differences of body poses (no Jacobians)."""
    data = model.model.createData()

    def poses(qq: np.ndarray) -> list[pin.SE3]:
        pin.forwardKinematics(model.model, data, qq)
        return [pin.SE3(data.oMi[j]) for j in range(1, model.model.njoints)]

    before = poses(pin.integrate(model.model, q, -h * v))
    after = poses(pin.integrate(model.model, q, h * v))
    now = poses(q)
    p_total = np.zeros(3)
    l_total = np.zeros(3)
    for j, (m_b, m_a, m_n) in enumerate(zip(before, after, now, strict=True), start=1):
        inertia = model.model.inertias[j]
        c_b = m_b.act(inertia.lever)
        c_a = m_a.act(inertia.lever)
        c_n = m_n.act(inertia.lever)
        c_dot = (c_a - c_b) / (2 * h)
        omega = pin.log3(m_a.rotation @ m_b.rotation.T) / (2 * h)
        p = inertia.mass * c_dot
        p_total += p
        l_total += np.cross(c_n, p) + m_n.rotation @ inertia.inertia @ m_n.rotation.T @ omega
    return np.concatenate([p_total, l_total])


# --- momentum matrices -----------------------------------------------------------------


def test_paper_selection_matrix_is_eq5() -> None:
    """S for (Lx, Ly) is the paper's eq. 5 matrix."""
    expected = np.array([[0, 0, 0, 1, 0, 0], [0, 0, 0, 0, 1, 0]], dtype=float)
    assert np.array_equal(selection_matrix(["Lx", "Ly"]), expected)


def test_selection_rejects_unknown_rows() -> None:
    """An unknown row name raises ConfigurationError naming the allowed rows."""
    with pytest.raises(ConfigurationError, match=r"expected a non-empty subset of \['Px', 'Py', "
                       r"'Pz', 'Lx', 'Ly', 'Lz'\] without repeats"):
        selection_matrix(["Lx", "Mz"])


def test_arm_momentum_about_w_matches_finite_differences(model: RobotModel,
                                                         q_pose: np.ndarray) -> None:
    """A_job qd_job + A_aux qd_aux about W equals [P; L] from finite differences of body poses."""
    rng = np.random.default_rng(1)
    arms = arm_momentum_matrices(model, q_pose, "right", "W")
    qd_job, qd_aux = rng.normal(size=7), rng.normal(size=7)
    v = np.zeros(model.nv)
    v[model.group_v_index("right_arm")] = qd_job
    v[model.group_v_index("left_arm")] = qd_aux
    reference = _body_momentum_about_origin(model, q_pose, v)  # W is the world origin
    assert np.allclose(arms.job @ qd_job + arms.aux @ qd_aux, reference, atol=1e-6)


def test_arm_momentum_about_com_shifts_by_c_cross_p(model: RobotModel, q_pose: np.ndarray) -> None:
    """L about the CoM equals L about W minus (c - w) x P (the reference-point parameter)."""
    w = arm_momentum_matrices(model, q_pose, "right", "W")
    g = arm_momentum_matrices(model, q_pose, "right", "com")
    qd = np.linspace(-1.0, 1.0, 7)
    h_w, h_g = w.job @ qd, g.job @ qd
    assert np.allclose(h_g[3:], h_w[3:] - np.cross(g.com - w.point, h_w[:3]), atol=1e-12)


def test_linear_momentum_is_mass_times_com_velocity(model: RobotModel, q_pose: np.ndarray) -> None:
    """P = M dc/dt with dc/dt by finite differences of the CoM (job arm columns)."""
    arms = arm_momentum_matrices(model, q_pose, "left", "W")
    qd = np.array([0.5, -0.3, 0.2, 0.8, -0.1, 0.4, 0.3])
    v = np.zeros(model.nv)
    v[model.group_v_index("left_arm")] = qd
    h = 1e-6
    c_dot = (model.com(pin.integrate(model.model, q_pose, h * v))
             - model.com(pin.integrate(model.model, q_pose, -h * v))) / (2 * h)
    assert np.allclose((arms.job @ qd)[:3], model.total_mass * c_dot, atol=1e-6)


# --- solves ------------------------------------------------------------------------------


def test_damping_is_zero_above_the_threshold() -> None:
    """lambda^2 = 0 when sigma_min >= epsilon (exact pseudo-inverse)."""
    assert damping_squared(0.05, 0.02, 0.05) == 0.0


def test_damping_is_maximal_at_a_singularity() -> None:
    """lambda^2 = lambda_max^2 when sigma_min = 0."""
    assert damping_squared(0.0, 0.02, 0.05) == pytest.approx(0.0025)


def test_damped_solve_is_exact_away_from_singularities() -> None:
    """J x = target holds to 1e-12 for a well-conditioned 6 x 7 J."""
    rng = np.random.default_rng(3)
    jac = rng.normal(size=(6, 7))
    target = rng.normal(size=6)
    x, _, lam2 = damped_least_squares(jac, target, 0.02, 0.05)
    assert lam2 == 0.0
    assert np.allclose(jac @ x, target, atol=1e-12)


def test_damped_solve_stays_bounded_at_a_singularity() -> None:
    """At a rank-deficient J the damped solution stays below |target| / (2 lambda_max) per mode."""
    jac = np.zeros((6, 7))
    jac[:5, :5] = np.eye(5)  # sixth row lost
    target = np.ones(6)
    x, sigma_min, lam2 = damped_least_squares(jac, target, 0.02, 0.05)
    assert sigma_min == 0.0 and lam2 == pytest.approx(0.0025)
    assert np.all(np.isfinite(x)) and np.linalg.norm(x) < 10.0


def test_minimum_norm_solution_equals_pinv() -> None:
    """B^+ b from the eigen-decomposition equals numpy's pinv, also at rank loss."""
    rng = np.random.default_rng(4)
    b_matrix = rng.normal(size=(3, 7))
    b_matrix[2] = b_matrix[0] + b_matrix[1]  # rank 2
    target = rng.normal(size=3)
    assert np.allclose(minimum_norm_least_squares(b_matrix, target),
                       np.linalg.pinv(b_matrix) @ target, atol=1e-10)


# --- the controller along the strike ----------------------------------------------------------


def test_selected_momentum_stays_zero_along_the_strike(model: RobotModel) -> None:
    """S [P; L] about W, recomputed by pinocchio from the commands, stays < 1e-9 along the motion."""
    trajectory, q0 = _strike_setup(model)
    controller = RmcController(model)
    controller.reset(q0)
    worst = 0.0
    for k in range(int(1.5 / DT)):
        q = q0.copy()
        q[model.q_index(controller.names)] = controller.commanded_positions
        out = controller.step(RmcInput(q0, job_joint_velocities=trajectory.sample(k * DT).velocity),
                              DT)
        v = np.zeros(model.nv)
        v[model.v_index(out.names)] = out.velocity
        h = model.momentum(q, v, point=np.zeros(3))
        worst = max(worst, abs(h[3]), abs(h[4]))
        assert out.balance_exact and out.job_exact
    assert worst < 1e-9


def test_reference_point_com_holds_the_momentum_about_the_whole_robots_com(
        model: RobotModel, q_pose: np.ndarray) -> None:
    """reference_point com: Lx, Ly about the CoM of the whole robot (the welded torso included,
    model.com) stay < 1e-9, recomputed by pinocchio about that point. Before, the controller
    held them about the moving bodies' CoM only, 2.8 mm off in z: 5.4e-3 N m s along this
    motion."""
    controller = RmcController(model, reference_point="com")
    controller.reset(q_pose)
    worst = 0.0
    for k in range(50):
        qd = 3.0 * np.sin(np.pi * k / 50) * np.array([0.3, 0.2, 0.0, 1.0, 0.0, 0.0, 0.3])
        q = q_pose.copy()
        q[model.q_index(controller.names)] = controller.commanded_positions
        out = controller.step(RmcInput(q_pose, job_joint_velocities=qd), DT)
        assert out.balance_exact
        v = np.zeros(model.nv)
        v[model.v_index(out.names)] = out.velocity
        h = model.momentum(q, v, point=model.com(q))
        worst = max(worst, abs(h[3]), abs(h[4]))
    assert worst < 1e-9


def test_any_selection_is_held_at_zero(model: RobotModel, q_pose: np.ndarray) -> None:
    """With S = (Px, Lz) the selected total momentum is zero for a job-arm motion within limits."""
    controller = RmcController(model, selection=("Px", "Lz"))
    controller.reset(q_pose)
    for k in range(50):
        qd = 0.5 * np.sin(np.pi * k / 50) * np.array([1.0, 0.2, 0.0, -0.8, 0.0, 0.0, 0.3])
        out = controller.step(RmcInput(q_pose, job_joint_velocities=qd), DT)
        assert out.balance_exact
        assert np.max(np.abs(out.selected_momentum)) < 1e-9


def test_job_twist_is_tracked_exactly_while_no_limit_is_active(model: RobotModel,
                                                               q_pose: np.ndarray) -> None:
    """J qd_job equals the commanded twist (to 1e-9) in every cycle with no active limit."""
    controller = RmcController(model)
    controller.reset(q_pose)
    fid = model.frame_id("right_hand")
    exact = 0
    for k in range(200):
        s = np.sin(np.pi * k / 200)
        twist = s * np.array([0.15, 0.05, 0.1, 0.0, 0.2, 0.0])
        q = q_pose.copy()
        q[model.q_index(controller.names)] = controller.commanded_positions
        out = controller.step(RmcInput(q_pose, job_twist=twist), DT)
        jac = pin.computeFrameJacobian(model.model, model.model.createData(), q, fid,
                                       pin.LOCAL_WORLD_ALIGNED)[:, model.v_index(controller.job_names)]
        if out.job_exact:
            exact += 1
            assert np.allclose(jac @ out.job_velocity, twist, atol=1e-9)
    assert exact == 200


def test_limits_are_never_exceeded(model: RobotModel, q_pose: np.ndarray) -> None:
    """Driven hard into its limits, no arm joint leaves its position, speed or acceleration limit."""
    margin = 0.02
    controller = RmcController(model, position_margin=margin, selection=("Lx", "Ly", "Lz"))
    controller.reset(q_pose)
    names = controller.names
    lower, upper = model.position_limits(names)
    vmax = model.velocity_limits(names)
    from humanoid_balance.core.joint_limits import arm_acceleration_limit

    amax = np.array([arm_acceleration_limit(n) for n in names])
    previous = np.zeros(len(names))
    saturated_seen = False
    for k in range(600):
        twist = np.array([2.0, -1.5, 1.5, 3.0, -2.0, 2.0]) * (1 if (k // 150) % 2 == 0 else -1)
        out = controller.step(RmcInput(q_pose, job_twist=twist), DT)
        saturated_seen |= bool(out.saturated_joints)
        assert np.all(out.position >= lower + margin - 1e-12)
        assert np.all(out.position <= upper - margin + 1e-12)
        assert np.all(np.abs(out.velocity) <= vmax + 1e-12)
        assert np.all(np.abs(out.velocity - previous) <= amax * DT + 1e-9)
        previous = out.velocity
    assert saturated_seen


def test_saturation_is_reported(model: RobotModel, q_pose: np.ndarray) -> None:
    """A job joint velocity beyond the speed limit is clipped and reported with the joint's name."""
    controller = RmcController(model)
    controller.reset(q_pose)
    out = controller.step(RmcInput(q_pose, job_joint_velocities=np.array(
        [20.0, 0, 0, 0, 0, 0, 0])), DT)
    assert not out.job_exact
    assert "right_shoulder_pitch" in out.saturated_joints


def test_twist_beyond_the_speed_limits_keeps_direction_and_held_momentum(
        model: RobotModel, q_pose: np.ndarray) -> None:
    """A twist 3x beyond the speed limits: hand direction within 1 deg, Lx, Ly < 1e-9, s < 1."""
    controller = RmcController(model)
    controller.reset(q_pose)
    fid = model.frame_id("right_hand")
    data = model.model.createData()
    job_v = model.v_index(controller.job_names)

    def jacobian() -> np.ndarray:
        q = q_pose.copy()
        q[model.q_index(controller.names)] = controller.commanded_positions
        return pin.computeFrameJacobian(model.model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)[:, job_v]

    unit = np.array([0.6, -0.3, 0.5, 0.4, -0.3, 0.2])
    ratio = np.max(np.abs(np.linalg.pinv(jacobian()) @ unit)
                   / model.velocity_limits(controller.job_names))
    twist = 3.0 * unit / ratio  # its exact joint velocities are 3x the speed limits
    angles, held, scales = [], [], []
    for _ in range(60):
        jac = jacobian()
        out = controller.step(RmcInput(q_pose, job_twist=twist), DT)
        achieved = jac @ out.job_velocity
        cos = achieved @ twist / (np.linalg.norm(achieved) * np.linalg.norm(twist))
        angles.append(np.degrees(np.arccos(min(1.0, cos))))
        held.append(np.max(np.abs(out.selected_momentum)))
        scales.append(out.job_scale)
    assert max(angles) <= 1.0 and max(held) <= 1e-9 and 0.0 < max(scales) < 1.0, (
        max(angles), max(held), scales)


@pytest.mark.parametrize("speed", [2.0, 3.0])
def test_a_scaled_job_motion_moves_the_aux_arm_smoothly(model: RobotModel, speed: float) -> None:
    """The strike's hand twist 2x and 3x: in the cycles where the job motion is scaled (regime
    SCALED), the held rows stay exact and the aux arm's acceleration does not jump between
    its limits from one cycle to the next (the bounded solve did: its sign reversed in 58 %
    and 65 % of the joint-cycles; eq. 6 on the scaled motion reverses it in at most 0.1 %)."""
    strike = StrikeTrajectory(model)
    pose = {**dict(zip(strike.joint_names, strike.initial, strict=True)),
            **arm_pose("left", AUX_START_DEG)}
    q0 = model.configuration(pose)
    controller = RmcController(model)
    controller.reset(q0)
    aux, scaled, held = [], [], []
    for t in np.arange(0.0, strike.duration, DT):
        out = controller.step(RmcInput(q0, job_twist=speed * strike.hand_twist(float(t), q0)), DT)
        aux.append(out.aux_velocity)
        is_scaled = out.regime is RmcRegime.SCALED
        scaled.append(is_scaled)
        if is_scaled:
            held.append(np.max(np.abs(out.selected_momentum)))
    acc = np.diff(np.array(aux), axis=0) / DT
    reversal = (np.sign(acc[1:]) * np.sign(acc[:-1]) < 0) & (np.abs(acc[1:]) > 0.5) \
        & (np.abs(acc[:-1]) > 0.5)
    in_scaled = np.array(scaled[2:])
    assert in_scaled.sum() > 100  # the case is exercised
    assert reversal[in_scaled].mean() <= 0.01, reversal[in_scaled].mean()
    assert max(held) <= 1e-9, max(held)


def test_balance_off_keeps_the_aux_arm_still(model: RobotModel, q_pose: np.ndarray) -> None:
    """balance_enabled=False commands zero aux velocities (the no-RMC comparison)."""
    controller = RmcController(model)
    controller.balance_enabled = False
    controller.reset(q_pose)
    out = controller.step(RmcInput(q_pose, job_joint_velocities=np.full(7, 0.01)), DT)
    assert np.all(out.aux_velocity == 0.0)


def test_step_before_reset_is_refused(model: RobotModel, q_pose: np.ndarray) -> None:
    """step() before reset() raises ConfigurationError with the fix in the message."""
    with pytest.raises(ConfigurationError, match=r"call reset first"):
        RmcController(model).step(RmcInput(q_pose), DT)


def test_nan_twist_is_refused_and_changes_nothing(model: RobotModel, q_pose: np.ndarray) -> None:
    """A NaN twist raises InvalidInputError and leaves the commanded state unchanged."""
    controller = RmcController(model)
    controller.reset(q_pose)
    before = controller.commanded_positions
    with pytest.raises(InvalidInputError, match=r"expected 6 finite values"):
        controller.step(RmcInput(q_pose, job_twist=np.array([np.nan, 0, 0, 0, 0, 0])), DT)
    assert np.array_equal(controller.commanded_positions, before)


def test_job_arm_swap_reorders_outputs(model: RobotModel, q_pose: np.ndarray) -> None:
    """set_job_arm('left') puts the left arm first in the outputs."""
    controller = RmcController(model)
    controller.reset(q_pose)
    controller.set_job_arm("left")
    out = controller.step(RmcInput(q_pose), DT)
    assert out.names[0] == "left_shoulder_pitch" and out.names[7] == "right_shoulder_pitch"


def test_a_twist_into_the_limits_reports_its_regime_and_a_finite_scale(
        model: RobotModel, q_pose: np.ndarray) -> None:
    """A twist 3x beyond the limits: every cycle's job_scale is finite, the regime is SCALED
    while s < 1, and /diagnostics says the regime and that scale (never 'nan'); its warning,
    where the balance indicators do not override it, too."""
    from humanoid_balance.core.arm_controller import GroundArmController

    controller = GroundArmController(model)
    controller.reset(q_pose)
    twist = 3.0 * np.array([0.6, -0.3, 0.5, 0.4, -0.3, 0.2])
    worded = 0
    for k in range(100):
        out = controller.step(RmcInput(q_pose, job_twist=min(1.0, (k + 1) / 50) * twist), DT)
        report = controller.report(out)
        assert np.isfinite(out.job_scale) and report.values["job_scale"] == out.job_scale
        assert report.values["regime"] == out.regime.value
        assert "nan" not in (report.warning or "")
        if out.regime is RmcRegime.SCALED:
            assert out.job_scale < 1.0 and report.warning is not None
            if out.indicators.balanced:
                worded += 1
                assert report.warning.startswith(
                    f"joint limits: scaled (job scale {out.job_scale:.3g}; ")
    assert worded > 0


def test_a_stop_request_brakes_the_hand_along_its_last_direction(
        model: RobotModel, q_pose: np.ndarray) -> None:
    """A zero twist while the hand moves at 0.97 m/s: STOPPING_JOB (job_scale 0) until it is at
    rest, the hand within 1e-5 deg of the last request, its speed falling every cycle within
    the acceleration limits, Lx, Ly < 1e-9."""
    controller = RmcController(model)
    controller.reset(q_pose)
    fid, data = model.frame_id("right_hand"), model.model.createData()
    twist = np.array([0.8, 0.2, 0.5, 0.0, 0.0, 0.0])
    for k in range(60):
        out = controller.step(RmcInput(q_pose, job_twist=min(1.0, (k + 1) / 50) * twist), DT)
    from humanoid_balance.core.joint_limits import arm_acceleration_limit

    amax = np.array([arm_acceleration_limit(n) for n in controller.names])
    speed, stopping = np.inf, 0
    for _ in range(40):
        q = q_pose.copy()
        q[model.q_index(controller.names)] = controller.commanded_positions
        jac = pin.computeFrameJacobian(model.model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)[
            :, model.v_index(controller.job_names)]
        previous = out.velocity
        out = controller.step(RmcInput(q_pose, job_twist=np.zeros(6)), DT)
        hand = jac @ out.job_velocity
        assert np.max(np.abs(out.selected_momentum)) < 1e-9
        assert np.all(np.abs(out.velocity - previous) <= amax * DT + 1e-9)
        if np.linalg.norm(hand) > 1e-9:
            stopping += 1
            assert out.regime is RmcRegime.STOPPING_JOB and out.job_scale == 0.0
            cos = hand @ twist / (np.linalg.norm(hand) * np.linalg.norm(twist))
            assert np.degrees(np.arccos(min(1.0, cos))) <= 1e-5
            assert np.linalg.norm(hand) < speed
            speed = float(np.linalg.norm(hand))
    assert stopping > 10 and speed < 0.05  # it braked over many cycles, to rest


def test_extreme_scale_equals_highs_on_random_two_variable_programs() -> None:
    """extreme_scale's largest and smallest s equal scipy's linprog (HiGHS) on 2000 random
    bounded programs, feasible or not, with parallel and s-only rows among them."""
    from scipy.optimize import linprog

    rng = np.random.default_rng(7)
    checked = 0
    for trial in range(1000):
        m = int(rng.integers(2, 20))
        rows = rng.normal(size=(m, 2))
        rows[int(rng.integers(0, m)), 1] = 0.0 if trial % 3 == 0 else rows[0, 1]
        if trial % 5 == 0:
            rows[-1] = 2.0 * rows[0]
        bound = rng.normal(size=m) + 0.5
        frame = [[1, 0], [-1, 0], [0, 1], [0, -1]] if trial % 2 else [[0, 1], [0, -1], [1, 1],
                                                                       [-1, -1]]
        rows, bound = np.vstack([rows, frame]), np.concatenate([bound, [3.0] * 4])
        for lowest in (False, True):
            reference = linprog([1.0 if lowest else -1.0, 0.0], A_ub=rows, b_ub=bound,
                                bounds=[(None, None)] * 2, method="highs")
            found = extreme_scale(rows, bound, lowest=lowest)
            if reference.status == 2:
                assert found is None or np.max(rows @ found - bound) <= 1e-9, (trial, found)
            else:
                assert found is not None, trial
                assert abs(found[0] - reference.x[0]) <= 1e-7, (trial, found, reference.x)
                assert np.max(rows @ found - bound) <= 1e-9, trial
                checked += 1
    assert checked > 500


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_zonotope_halfspaces_hold_exactly_its_points(k: int) -> None:
    """A random point lies in {G l : |l| <= 1} exactly when U y <= h (membership by linprog)."""
    from scipy.optimize import linprog

    rng = np.random.default_rng(k)
    generators = rng.normal(size=(k, 7))
    generators[:, 3] = 0.0  # a joint with a collapsed box
    normals, offsets = zonotope_halfspaces(generators)
    agree = 0
    for _ in range(200):
        y = rng.normal(size=k) * 2.5
        member = linprog(np.zeros(7), A_eq=generators, b_eq=y, bounds=[(-1, 1)] * 7,
                         method="highs").status == 0
        inside = bool(np.all(normals @ y <= offsets + 1e-9))
        assert member == inside, y
        agree += member
    assert 0 < agree < 200  # both kinds of points were drawn


def test_boundary_preimage_meets_a_target_on_the_zonotopes_edge() -> None:
    """For a target on the boundary of B [lower, upper] (2 rows, 7 joints, one box a sliver), the
    preimage lies in the box and meets B x = target to 1e-14, where BVLS can stall."""
    rng = np.random.default_rng(11)
    for _ in range(200):
        b_matrix = rng.normal(size=(2, 7))
        lower = rng.uniform(-2.0, 0.0, size=7)
        upper = lower + rng.uniform(0.1, 0.4, size=7)
        upper[2] = lower[2] + 1e-14
        direction = rng.normal(size=2)
        normals, offsets = zonotope_halfspaces(b_matrix * (0.5 * (upper - lower)))
        centre = b_matrix @ (0.5 * (lower + upper))
        reach = normals @ direction
        target = centre + float(np.min(offsets[reach > 0] / reach[reach > 0])) * direction
        x = boundary_preimage(b_matrix, target, lower, upper)
        assert x is not None
        assert np.all(x >= lower) and np.all(x <= upper)
        assert np.max(np.abs(b_matrix @ x - target)) <= 1e-14


# --- joint limits ------------------------------------------------------------------------------


def test_stopping_speed_stops_within_the_distance() -> None:
    """Braking at a from v_stop(d) in steps of dt travels at most d."""
    a, dt, d = 50.0, 0.002, 0.1
    v = float(stopping_speed(np.array([d]), np.array([a]), dt)[0])
    travelled = 0.0
    while v > 0:
        travelled += v * dt
        v -= a * dt
    assert travelled <= d + 1e-12


def test_velocity_box_yields_acceleration_to_position() -> None:
    """A joint too fast to brake before its limit gets the position-safe speed, flagged."""
    limits = JointLimits(("j",), np.array([-1.0]), np.array([1.0]), np.array([10.0]),
                         np.array([1.0]))
    box = velocity_box(limits, np.array([0.999]), np.array([5.0]), 0.002)
    assert box.acceleration_overridden[0]
    assert box.upper[0] * 0.002 <= 0.001 + 1e-12


def test_bound_shares_name_the_bound_that_makes_the_box() -> None:
    """At the box's upper edge (moving up, no acceleration conflict) the largest share is 1 and
    belongs to the bound that set the edge, computed here from the limits themselves; inside
    the box every share is below 1. 500 seeded random joints, margin 0.02 rad."""
    rng = np.random.default_rng(37)
    n, dt, margin = 500, 0.002, 0.02
    upper = rng.uniform(0.5, 2.5, n)
    limits = JointLimits(tuple(f"j{k}" for k in range(n)), -upper, upper,
                         rng.uniform(1.0, 6.0, n), rng.uniform(5.0, 60.0, n))
    q = rng.uniform(-upper + margin, upper - margin)
    qd_prev = rng.uniform(0.0, limits.velocity)
    box = velocity_box(limits, q, qd_prev, dt, margin)
    ok = ~box.acceleration_overridden & (box.upper > 0.0)
    shares = bound_shares(limits, q, qd_prev, box.upper, dt, margin)
    stack = np.vstack([shares["position"], shares["velocity"], shares["acceleration"]])
    assert np.allclose(stack.max(axis=0)[ok], 1.0, rtol=0, atol=1e-9)
    by_kind = {"position": stopping_speed(upper - margin - q, limits.acceleration, dt),
               "velocity": limits.velocity, "acceleration": qd_prev + limits.acceleration * dt}
    kinds = list(by_kind)
    setter = np.argmin(np.vstack(list(by_kind.values())), axis=0)
    assert all(kinds[int(np.argmax(stack[:, j]))] == kinds[int(setter[j])]
               for j in np.nonzero(ok)[0])
    inside = bound_shares(limits, q, qd_prev, 0.5 * (box.lower + box.upper), dt, margin)
    assert all(np.all(v[ok] < 1.0) for v in inside.values())
    assert ok.sum() >= 50 and len({kinds[int(k)] for k in setter[ok]}) == 3


# --- balance indicators ----------------------------------------------------------------------------


def test_zmp_shift_follows_the_paper_formula() -> None:
    """dZMPx = -dLy/(G + dPz), dZMPy = dLx/(G + dPz) (seed 000, section 3.2)."""
    rate = np.array([0.0, 0.0, 10.0, 3.0, -6.0, 0.0])
    ind = balance_indicators(rate, mass=55.0, gravity=9.81, friction_coefficient=0.3,
                             foot_distance=0.4, com=np.zeros(3))
    g = 55.0 * 9.81 + 10.0
    assert np.allclose(ind.zmp_shift, [6.0 / g, 3.0 / g])


def test_turn_limit_is_the_papers_32_34_nm() -> None:
    """mu C/2 G with M = 55 kg, g = 9.8, mu = 0.3, C = 0.4 m is 32.34 N m (seed 000)."""
    ind = balance_indicators(np.zeros(6), mass=55.0, gravity=9.8, friction_coefficient=0.3,
                             foot_distance=0.4, com=np.zeros(3))
    assert ind.turn_margin == pytest.approx(32.34)


def test_sliding_margin_uses_horizontal_force() -> None:
    """slide margin = mu (G + dPz) - |dP_xy|."""
    ind = balance_indicators(np.array([30.0, 40.0, 0.0, 0, 0, 0]), mass=10.0, gravity=10.0,
                             friction_coefficient=0.5, foot_distance=0.4, com=np.zeros(3))
    assert ind.slide_margin == pytest.approx(0.5 * 100.0 - 50.0)


def test_polygon_margin_is_signed() -> None:
    """Inside: distance to the nearest edge (positive); outside: minus the distance."""
    square = ConvexPolygon(np.array([[-1.0, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]]))
    assert square.margin(np.array([0.5, 0.0])) == pytest.approx(0.5)
    assert square.margin(np.array([2.0, 2.0])) == pytest.approx(-np.sqrt(2.0))


def test_support_polygon_covers_both_soles(model: RobotModel) -> None:
    """The FSR support polygon spans both feet (y from -0.25 to 0.25 m) and x of the pads."""
    from humanoid_balance.core.support import SupportPolygon

    poly = SupportPolygon.from_model(model).update_at(model, model.neutral())
    assert np.min(poly[:, 1]) == pytest.approx(-0.25) and np.max(poly[:, 1]) == pytest.approx(0.25)
    assert np.max(np.abs(poly[:, 0])) == pytest.approx(0.09)


# --- secondary rows (task priority) -------------------------------------------------------------


def test_secondary_row_is_cancelled_when_the_limits_allow(model: RobotModel, q_pose: np.ndarray) -> None:
    """With Lz secondary and a slow job motion, Lx, Ly and Lz all stay zero (null-space solution)."""
    controller = RmcController(model, secondary=("Lz",))
    controller.reset(q_pose)
    for k in range(40):
        qd = 0.2 * np.sin(np.pi * k / 40) * np.array([1.0, 0.0, 0.0, -0.5, 0.0, 0.0, 0.0])
        out = controller.step(RmcInput(q_pose, job_joint_velocities=qd), DT)
        assert out.balance_exact
        assert np.max(np.abs(out.momentum[3:6])) < 1e-9


def test_secondary_rows_keep_the_held_rows_at_zero_along_the_strike(model: RobotModel) -> None:
    """Along the 1.8 m/s strike with Lz secondary, Lx and Ly stay below 1e-9 N m s."""
    trajectory, q0 = _strike_setup(model)
    controller = RmcController(model, secondary=("Lz",))
    controller.reset(q0)
    worst = 0.0
    for k in range(int(1.4 / DT)):
        out = controller.step(
            RmcInput(q0, job_joint_velocities=trajectory.sample(k * DT).velocity), DT)
        worst = max(worst, float(np.max(np.abs(out.selected_momentum))))
    assert worst < 1e-9


def test_a_row_cannot_be_held_and_secondary() -> None:
    """selection and secondary sharing Lx is refused with the overlapping row named."""
    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    with pytest.raises(ConfigurationError, match=r"rows \['Lx'\] are both in selection and secondary"):
        RmcController(model, secondary=("Lx", "Lz"))


def _ready_strike_setup(model: RobotModel, controller: RmcController,
                        ) -> tuple[StrikeTrajectory, np.ndarray]:
    """The strike with the aux arm standing at the controller's posture (as after activation)."""
    trajectory = StrikeTrajectory(model)
    ready = controller.aux_posture_positions
    assert ready is not None
    pose = {**dict(zip(trajectory.joint_names, trajectory.initial, strict=True)), **ready}
    return trajectory, model.configuration(pose)


def test_aux_arm_approaches_its_posture_with_the_held_rows_at_zero(model: RobotModel) -> None:
    """Job still, aux 0.1 rad off its posture: in 2 s the error left in the held rows' null space is
    below 5 % of the start's, and Lx, Ly stay < 1e-9 (the rest lies in the rows' range)."""
    controller = RmcController(model)
    _, q_ready = _ready_strike_setup(model, controller)
    q0 = q_ready.copy()
    q0[model.q_index(controller.aux_names)] += 0.1
    controller.reset(q0)
    worst = 0.0
    for _ in range(int(2.0 / DT)):
        out = controller.step(RmcInput(q0), DT)
        worst = max(worst, float(np.max(np.abs(out.selected_momentum))))
    aux = model.q_index(controller.aux_names)
    start = float(np.linalg.norm(q0[aux] - q_ready[aux]))
    q_end = q0.copy()
    q_end[model.q_index(controller.names)] = out.position
    held = arm_momentum_matrices(model, q_end).aux[[3, 4]]
    null = np.eye(7) - np.linalg.pinv(held) @ held
    end = float(np.linalg.norm(null @ (out.position[7:] - q_ready[aux])))
    assert end < 0.05 * start and worst < 1e-9, (start, end, worst)


def test_posture_motion_keeps_the_held_rows_while_the_job_arm_moves(model: RobotModel,
                                                                     q_pose: np.ndarray) -> None:
    """Aux away from its posture, job arm moving: Lx, Ly stay below 1e-9 and the aux moves."""
    controller = RmcController(model)
    controller.reset(q_pose)
    worst, moved = 0.0, 0.0
    for _ in range(200):
        out = controller.step(RmcInput(q_pose, job_twist=np.array([0.05, 0, 0.02, 0, 0, 0])), DT)
        worst = max(worst, float(np.max(np.abs(out.selected_momentum))))
        moved = max(moved, float(np.max(np.abs(out.aux_velocity))))
    assert worst < 1e-9 and moved > 0.0, (worst, moved)


def test_posture_velocity_starts_within_the_posture_acceleration(model: RobotModel) -> None:
    """The first cycle's aux velocity, job still, is at most |v_p| <= sqrt(7) posture_acceleration dt."""
    _, q0 = _strike_setup(model)
    controller = RmcController(model, posture_acceleration=2.0)
    controller.reset(q0)
    out = controller.step(RmcInput(q0), DT)
    assert 0.0 < float(np.linalg.norm(out.aux_velocity)) <= np.sqrt(7) * 2.0 * DT + 1e-12


def test_posture_gain_zero_is_the_papers_pure_form(model: RobotModel) -> None:
    """posture_gain=0: the job arm still, the aux arm stays still (eq. 6 alone), no posture given."""
    _, q0 = _strike_setup(model)
    controller = RmcController(model, posture_gain=0.0)
    controller.reset(q0)
    out = controller.step(RmcInput(q0), DT)
    assert not np.any(out.aux_velocity) and controller.aux_posture_positions is None


def test_posture_is_mirrored_for_the_right_aux_arm(model: RobotModel) -> None:
    """With the left arm striking, the right aux arm's posture is the left one's mirror image."""
    controller = RmcController(model)
    left = controller.aux_posture_positions
    controller.set_job_arm("left")
    right = controller.aux_posture_positions
    assert left is not None and right is not None
    mirrored = {"shoulder_roll", "shoulder_yaw", "wrist_yaw", "wrist_roll"}
    for name, value in right.items():
        joint = name.removeprefix("right_")
        sign = -1.0 if joint in mirrored else 1.0
        assert value == pytest.approx(sign * left[f"left_{joint}"], abs=1e-15), name


@pytest.mark.parametrize(("posture", "message"), [
    ((0.0,) * 6, r"^aux_posture=\[0\.0, 0\.0, 0\.0, 0\.0, 0\.0, 0\.0\]: expected 7 finite angles"),
    ((0.0, 0.0, 0.0, 3.0, 0.0, 0.0, 0.0), r"^aux_posture puts \['left_elbow'\] outside their "
                                          r"position limits"),
])
def test_a_bad_posture_is_refused_with_the_reason(model: RobotModel, posture: tuple[float, ...],
                                                  message: str) -> None:
    """Six angles, or an elbow beyond its limit, are refused at construction with the reason."""
    with pytest.raises(ConfigurationError, match=message):
        RmcController(model, aux_posture=posture)


def test_from_the_ready_posture_the_strike_stays_below_the_turning_limit(model: RobotModel) -> None:
    """Default controller, aux arm ready: peak |dLz/dt| < 0.6 mu C/2 G (pure form: 1.002), Lx, Ly 0."""
    controller = RmcController(model)
    trajectory, q0 = _ready_strike_setup(model, controller)
    controller.reset(q0)
    peak, held = 0.0, 0.0
    for k in range(int(1.7 / DT)):
        out = controller.step(
            RmcInput(q0, job_joint_velocities=trajectory.sample(k * DT).velocity), DT)
        assert out.balance_exact and out.job_exact, k
        peak = max(peak, out.indicators.turn_torque)
        held = max(held, float(np.max(np.abs(out.selected_momentum))))
    assert peak < 0.6 * controller.friction_torque_limit and held < 1e-9, (peak, held)
