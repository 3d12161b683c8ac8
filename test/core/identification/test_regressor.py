"""Gravity regressor and parameter sets of the lunar arm (seed 004, eqs. 6-8)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from humanoid_balance.core.identification.regressor import (
    GravityRegressor,
    base_parameters,
    identification_parameters,
    lunar_arm_composite_parameters,
    random_configurations,
)
from humanoid_balance.exceptions import InvalidInputError, ModelError
from humanoid_balance.resources import urdf_path


@pytest.fixture(scope="module")
def regressor() -> GravityRegressor:
    return GravityRegressor(pin.buildModelFromUrdf(str(urdf_path("lunar_arm"))))


def test_standard_regressor_reproduces_rnea(regressor: GravityRegressor) -> None:
    """Y_s(q) pi_s equals pinocchio's generalized gravity at 20 random q (1e-12 N m)."""
    pi_s = regressor.standard_parameters()
    for q in random_configurations(regressor.model, 20, seed=5):
        assert regressor(q) @ pi_s == pytest.approx(regressor.gravity_torques(q), abs=1e-12)


def test_base_set_has_12_parameters(regressor: GravityRegressor) -> None:
    """QR finds 12 base gravity parameters for the 6-DOF arm, as many as eq. 8."""
    assert base_parameters(regressor).size == 12


def test_composite_set_loses_nothing(regressor: GravityRegressor) -> None:
    """Eq. 8's map C captures every torque direction of Y_s: |Y_s (I - C^+ C)| ~ 0."""
    stacked = regressor.stacked(random_configurations(regressor.model, 50, seed=6))
    scale = np.abs(stacked).max()
    assert lunar_arm_composite_parameters().lost_directions(stacked) < 1e-11 * scale


def test_composite_regressor_block_upper_triangular(regressor: GravityRegressor) -> None:
    """H_G has zeros left of joint i's two columns in row i (eq. 7)."""
    comp = lunar_arm_composite_parameters()
    h = comp.regressor(regressor.stacked(random_configurations(regressor.model, 30, seed=7)))
    nonzero = np.abs(h).max(axis=0) > 1e-12
    expected = np.array([[c >= 2 * i for c in range(12)] for i in range(6)])
    assert np.array_equal(nonzero, expected)


def test_composite_and_base_give_same_torques(regressor: GravityRegressor) -> None:
    """Eq. 8's 12 composite parameters and the QR base set predict the same G(q)."""
    pi_s = regressor.standard_parameters()
    comp, base = lunar_arm_composite_parameters(), base_parameters(regressor)
    for q in random_configurations(regressor.model, 20, seed=8):
        y = regressor(q)
        torque_comp = comp.regressor(y) @ comp.from_standard(pi_s)
        assert torque_comp == pytest.approx(base.regressor(y) @ base.from_standard(pi_s), abs=1e-10)


def test_composite_values_of_table2_model(regressor: GravityRegressor) -> None:
    """phi_G1 = m1 g lx1 = 0.8 * 9.81 * 0.0005 N m and phi_G12 = m6 g ly6 = 0.2 * 9.81 * 0.0055."""
    phi = lunar_arm_composite_parameters().from_standard(regressor.standard_parameters())
    assert (phi[0], phi[11]) == pytest.approx((0.8 * 9.81 * 0.0005, 0.2 * 9.81 * 0.0055), rel=1e-12)


def test_wrong_q_shape_is_refused(regressor: GravityRegressor) -> None:
    """A configuration of the wrong length raises InvalidInputError."""
    with pytest.raises(InvalidInputError, match="q must be 6 finite joint angles"):
        regressor(np.zeros(5))


def test_free_flyer_model_is_refused() -> None:
    """A floating-base model (nq != nv) raises ModelError."""
    model = pin.buildModelFromUrdf(str(urdf_path("lunar_arm")), pin.JointModelFreeFlyer())
    with pytest.raises(ModelError, match="fixed-base chain"):
        GravityRegressor(model)


def test_lunar_arm_is_identified_with_eq8_at_its_gravity() -> None:
    """identification_parameters of the lunar arm at 1.635 m/s^2: eq. 8's set at that gravity."""
    moon = GravityRegressor(pin.buildModelFromUrdf(str(urdf_path("lunar_arm"))), 1.635)
    pset = identification_parameters(moon)
    expected = lunar_arm_composite_parameters(gravity=1.635)
    assert (pset.names, pset.matrix.tolist()) == (expected.names, expected.matrix.tolist())


def test_other_chain_is_identified_with_the_base_set() -> None:
    """A planar two-link arm (not the lunar arm's chain) gets the QR base set: 4 parameters."""
    model = pin.Model()
    parent = 0
    for name in ("shoulder", "elbow"):
        placement = pin.SE3(np.eye(3), np.array([0.0, 0.0, -0.3 if parent else 0.0]))
        parent = model.addJoint(parent, pin.JointModelRY(), placement, name)
        model.appendBodyToJoint(parent, pin.Inertia(1.0, np.array([0.05, 0.0, -0.15]),
                                                    np.eye(3) * 1e-3), pin.SE3.Identity())
    regressor = GravityRegressor(model)
    pset = identification_parameters(regressor)
    expected = base_parameters(regressor)
    assert (pset.size, pset.names) == (4, expected.names)
