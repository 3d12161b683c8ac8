"""Tests of the differential-waist kinematics and RMRC (seed 003, eqs. 1-11)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from humanoid_balance.core.waist_kinematics import DifferentialWaist, RmrcOuterLoop
from humanoid_balance.exceptions import ConfigurationError, InvalidInputError

WAIST = DifferentialWaist(gear_ratio_pitch=120.0, gear_ratio_roll=80.0, height_m=0.12)


def _grid() -> list[np.ndarray]:
    pitches = np.linspace(*WAIST.pitch_limits_rad, 26)
    rolls = np.linspace(*WAIST.roll_limits_rad, 16)
    return [np.array([p, r]) for p in pitches for r in rolls]


def test_j_qw_inverse_is_the_papers_eq4() -> None:
    """J_qw^-1 of eq. 4 is the matrix inverse of J_qw of eq. 3."""
    np.testing.assert_allclose(WAIST.j_qw_inv @ WAIST.j_qw, np.eye(2), atol=1e-15)


def test_equal_motor_speeds_move_pitch_only() -> None:
    """Both motors at the same speed give pure pitch qd1 = -w/i1 (eq. 1)."""
    qd = WAIST.j_qw @ np.array([1.0, 1.0])
    np.testing.assert_allclose(qd, [-1.0 / 120.0, 0.0], atol=1e-15)


def test_fk_ik_round_trip_over_the_joint_range() -> None:
    """IK(FK(q)) returns q within 1e-12 rad on a grid of the joint range."""
    worst = max(np.max(np.abs(WAIST.inverse(WAIST.forward(q).rotation) - q)) for q in _grid())
    assert worst < 1e-12


def test_fk_rotation_is_orthonormal() -> None:
    """Eq. 5's rotation is a proper rotation (R R^T = I, det 1)."""
    rot = WAIST.forward(np.array([0.4, -0.2])).rotation
    np.testing.assert_allclose(rot @ rot.T, np.eye(3), atol=1e-14)
    assert np.linalg.det(rot) == pytest.approx(1.0, abs=1e-14)


def test_jacobian_matches_finite_difference_of_fk() -> None:
    """The geometric Jacobian of eq. 8 matches finite differences of eq. 5 (v and w)."""
    h = 1e-7
    for q in _grid()[::17]:
        pose = WAIST.forward(q)
        numeric = np.zeros((6, 2))
        for k in range(2):
            dq = np.zeros(2)
            dq[k] = h
            moved = WAIST.forward(q + dq)
            numeric[:3, k] = (moved.position - pose.position) / h
            numeric[3:, k] = pin.log3(moved.rotation @ pose.rotation.T) / h
        np.testing.assert_allclose(WAIST.jacobian(q), numeric, atol=1e-6)


def test_j0_matches_finite_difference_of_drive_to_orientation_map() -> None:
    """J0 (eq. 11) equals the finite-difference Jacobian of motor angles -> [wy0, wz0]."""
    h = 1e-6
    for q in _grid()[::13]:
        theta = WAIST.motor_from_joint(q)
        rot = WAIST.forward(WAIST.joint_from_motor(theta)).rotation
        numeric = np.zeros((2, 2))
        for k in range(2):
            dtheta = np.zeros(2)
            dtheta[k] = h
            moved = WAIST.forward(WAIST.joint_from_motor(theta + dtheta)).rotation
            numeric[:, k] = (pin.log3(moved @ rot.T) / h)[[1, 2]]
        np.testing.assert_allclose(WAIST.j0(q), numeric, rtol=1e-5, atol=1e-10)


def test_j0_is_the_papers_closed_form() -> None:
    """J0 = J1 J_qw equals eq. 11 written out."""
    q1 = 0.5
    i1, i2 = 120.0, 80.0
    expected = np.array([[-np.cos(q1) / (2 * i2), np.cos(q1) / (2 * i2)],
                         [-1 / (2 * i1), -1 / (2 * i1)]])
    np.testing.assert_allclose(WAIST.j0(np.array([q1, 0.1])), expected, atol=1e-15)


def test_j0_full_rank_over_the_pitch_range() -> None:
    """J0's smallest singular value stays well above zero over -5..45 deg pitch."""
    assert WAIST.min_j0_singular_value() > 0.5 * np.cos(np.deg2rad(45.0)) / 120.0 * 0.5


def test_rmrc_reproduces_a_constant_body_rate() -> None:
    """Motor rates from the RMRC outer loop, integrated, give the commanded plate rate."""
    body_rate = np.array([0.05, -0.02])  # [wy0, wz0] rad/s
    q = np.array([0.2, 0.05])
    dt = 1e-4
    theta = WAIST.motor_from_joint(q)
    loop = RmrcOuterLoop(WAIST, gain_per_s=0.0)
    for _ in range(100):
        q_now = WAIST.joint_from_motor(theta)
        qd = np.linalg.solve(WAIST.j1(q_now), body_rate)  # the joint rate of that plate rate
        w = loop.step(q_now, qd, q_now).motor_rates
        rot0 = WAIST.forward(q_now).rotation
        theta = theta + w * dt
        rot1 = WAIST.forward(WAIST.joint_from_motor(theta)).rotation
        achieved = (pin.log3(rot1 @ rot0.T) / dt)[[1, 2]]
        np.testing.assert_allclose(achieved, body_rate, rtol=1e-3)


def test_rmrc_rejects_nan_rate() -> None:
    """A NaN reference rate is rejected, not turned into motor speeds."""
    loop = RmrcOuterLoop(WAIST)
    with pytest.raises(InvalidInputError, match=r"outer loop inputs must be finite, .*qd_ref=\[nan"):
        loop.step(np.zeros(2), np.array([np.nan, 0.0]), np.zeros(2))


def test_rmrc_refuses_a_singular_pitch() -> None:
    """A measured pitch of 90 deg (cos q1 = 0, J0 singular) is refused, not divided by."""
    loop = RmrcOuterLoop(WAIST)
    with pytest.raises(InvalidInputError, match=r"pitch 90\.000 deg makes J0 singular"):
        loop.step(np.zeros(2), np.zeros(2), np.array([np.pi / 2, 0.0]))


def test_pitch_range_reaching_90_deg_is_refused() -> None:
    """A pitch range that reaches cos q1 = 0 is refused (J0 singular)."""
    with pytest.raises(ConfigurationError, match="J0 loses rank"):
        DifferentialWaist(pitch_limits_rad=(0.0, np.pi / 2))


def test_zero_gear_ratio_is_refused() -> None:
    """A zero gear ratio is refused with the parameter's name."""
    with pytest.raises(ConfigurationError, match="gear_ratio_roll must be a finite ratio > 0"):
        DifferentialWaist(gear_ratio_roll=0.0)


def test_clamp_brings_minus_12_deg_pitch_to_the_limit() -> None:
    """The paper's -12 deg pitch start clamps to -5 deg."""
    clamped = WAIST.clamp(np.deg2rad([-12.0, -1.0]))
    np.testing.assert_allclose(np.rad2deg(clamped), [-5.0, -1.0], atol=1e-12)


def test_outer_loop_feedforward_only_when_on_track() -> None:
    """With zero error the outer loop sends the RMRC image of the reference rate."""
    loop = RmrcOuterLoop(WAIST, gain_per_s=3.0)
    q = np.array([0.1, 0.0])
    qd = np.array([np.deg2rad(1.0), np.deg2rad(-0.167)])
    out = loop.step(q, qd, q)
    np.testing.assert_allclose(out.motor_rates, WAIST.j_qw_inv @ qd, atol=1e-12)


def test_pitch_roll_from_quaternion_inverts_ry_rx() -> None:
    """The inclinometer conversion recovers pitch and roll of R = Ry(pitch) Rx(roll)."""
    from humanoid_balance.core.waist_kinematics import pitch_roll_from_quaternion

    pitch, roll = 0.3, -0.2
    rot = pin.utils.rotate("y", pitch) @ pin.utils.rotate("x", roll)
    q = pin.Quaternion(rot)
    assert pitch_roll_from_quaternion(q.x, q.y, q.z, q.w) == pytest.approx((pitch, roll), abs=1e-12)


def test_outer_loop_equals_rmrc_of_the_corrected_rate() -> None:
    """With an error, the outer loop's motor rates are J0^-1 J1 (qd_ref + K e) (eq. 10 inverted)."""
    loop = RmrcOuterLoop(WAIST, gain_per_s=3.0)
    q_ref, q_meas = np.array([0.3, 0.1]), np.array([0.29, 0.12])
    qd_ref = np.array([0.01, -0.02])
    out = loop.step(q_ref, qd_ref, q_meas)
    body = WAIST.j1(q_meas) @ (qd_ref + 3.0 * (q_ref - q_meas))
    np.testing.assert_allclose(out.motor_rates, np.linalg.solve(WAIST.j0(q_meas), body), rtol=1e-12)
