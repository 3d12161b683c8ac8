"""Least-squares gravity identification (seed 004, eqs. 5 and 10) on exact and bad data."""

from __future__ import annotations

import re

import numpy as np
import pinocchio as pin
import pytest

from humanoid_balance.core.identification.estimation import (
    estimate_global,
    estimate_sequential,
    estimate_weighted,
    pair_passes,
    rmse_percent_of_peak,
)
from humanoid_balance.core.identification.regressor import (
    GravityRegressor,
    ParameterSet,
    base_parameters,
    lunar_arm_composite_parameters,
)
from humanoid_balance.core.identification.trajectory import MAX_SPEED_RAD_S, identification_plan
from humanoid_balance.exceptions import (
    ConfigurationError,
    InsufficientSamplesError,
    InvalidInputError,
    UnidentifiableParametersError,
)
from humanoid_balance.resources import urdf_path

STATIC = np.radians([0.0, 30.0, 20.0, 60.0, 40.0, 30.0])
RANGES = [tuple(np.radians(r)) for r in ((-60, 60), (0, 80), (-80, 80), (20, 110), (-80, 80),
                                         (-60, 60))]


@pytest.fixture(scope="module")
def regressor() -> GravityRegressor:
    return GravityRegressor(pin.buildModelFromUrdf(str(urdf_path("lunar_arm"))))


def _sweep_samples(regressor: GravityRegressor, pset: ParameterSet, per_pass: int = 40
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact RNEA gravity torques along the eq. 11 plan: regressors, torques, sweep joint."""
    h, tau, joint = [], [], []
    for sweep in identification_plan([STATIC] * 6, RANGES):
        q, _, _ = sweep.sample(np.linspace(0.0, sweep.duration, 2 * per_pass))
        for qk in q:
            h.append(pset.regressor(regressor(qk)))
            tau.append(regressor.gravity_torques(qk))
            joint.append(sweep.joint)
    return np.array(h), np.array(tau), np.array(joint)


def test_sequential_recovers_composite_parameters(regressor: GravityRegressor) -> None:
    """Eq. 10 on exact RNEA torques returns eq. 8's true values (relative error < 1e-6)."""
    comp = lunar_arm_composite_parameters()
    h, tau, joint = _sweep_samples(regressor, comp)
    est = estimate_sequential(comp, h, tau, joint)
    truth = comp.from_standard(regressor.standard_parameters())
    assert np.max(np.abs(est.values - truth) / np.abs(truth)) < 1e-6


def test_global_recovers_composite_parameters(regressor: GravityRegressor) -> None:
    """Global least squares on exact torques returns the true values (relative error < 1e-6)."""
    comp = lunar_arm_composite_parameters()
    h, tau, _ = _sweep_samples(regressor, comp)
    est = estimate_global(comp, h, tau)
    truth = comp.from_standard(regressor.standard_parameters())
    assert np.max(np.abs(est.values - truth) / np.abs(truth)) < 1e-6


def test_global_recovers_base_parameters(regressor: GravityRegressor) -> None:
    """The QR base set is recovered from exact torques too (relative error < 1e-6)."""
    base = base_parameters(regressor)
    h, tau, _ = _sweep_samples(regressor, base)
    est = estimate_global(base, h, tau)
    truth = base.from_standard(regressor.standard_parameters())
    assert np.max(np.abs(est.values - truth) / np.abs(truth)) < 1e-6


def test_exact_data_have_zero_residual(regressor: GravityRegressor) -> None:
    """Exact torques leave a per-joint fit RMSE below 1e-12 N m."""
    comp = lunar_arm_composite_parameters()
    h, tau, joint = _sweep_samples(regressor, comp)
    assert estimate_sequential(comp, h, tau, joint).rmse_per_joint.max() < 1e-12


def test_noise_gives_matching_standard_deviation(regressor: GravityRegressor) -> None:
    """With 0.01 N m white noise the errors stay within 5 reported standard deviations."""
    comp = lunar_arm_composite_parameters()
    h, tau, _ = _sweep_samples(regressor, comp, per_pass=200)
    noisy = tau + np.random.default_rng(0).normal(0.0, 0.01, tau.shape)
    est = estimate_global(comp, h, noisy)
    truth = comp.from_standard(regressor.standard_parameters())
    assert np.all(np.abs(est.values - truth) <= 5.0 * est.std)


def test_weighted_recovers_composite_parameters(regressor: GravityRegressor) -> None:
    """The noise-weighted least squares on exact torques returns the true values (< 1e-6)."""
    comp = lunar_arm_composite_parameters()
    h, tau, joint = _sweep_samples(regressor, comp)
    truth = comp.from_standard(regressor.standard_parameters())
    for sweep_joint in (joint, None):
        est = estimate_weighted(comp, h, tau, sweep_joint)
        assert np.max(np.abs(est.values - truth) / np.abs(truth)) < 1e-6


def test_weighting_by_joint_noise_beats_both_unweighted_fits(regressor: GravityRegressor) -> None:
    """Noise 50x larger on joints 1-2 than on 5-6: the weighted fit predicts best, and its std holds.

    Prediction error: RMS over the samples of each joint's torque error, as a fraction of the
    joint's peak, the worst joint; the sum over 10 noise draws.
    """
    comp = lunar_arm_composite_parameters()
    h, tau, joint = _sweep_samples(regressor, comp, per_pass=100)
    truth = comp.from_standard(regressor.standard_parameters())
    noise = np.array([0.5, 0.5, 0.1, 0.1, 0.01, 0.01])  # N m
    peak = np.abs(tau).max(axis=0)
    worst = {"sequential": 0.0, "global": 0.0, "weighted": 0.0}
    for seed in range(10):
        noisy = tau + np.random.default_rng(seed).normal(0.0, 1.0, tau.shape) * noise
        fits = {"sequential": estimate_sequential(comp, h, noisy, joint),
                "global": estimate_global(comp, h, noisy),
                "weighted": estimate_weighted(comp, h, noisy, joint)}
        for name, est in fits.items():
            error = np.sqrt(np.mean((h @ (est.values - truth)) ** 2, axis=0)) / peak
            worst[name] += float(error.max())
        weighted = fits["weighted"]
        assert np.all(np.abs(weighted.values - truth) <= 5.0 * weighted.std)
    # measured: sequential 0.96, global 6.6, weighted 0.26
    assert worst["weighted"] < 0.5 * min(worst["sequential"], worst["global"]), worst


def test_friction_pairing_cancels_coulomb_and_viscous(regressor: GravityRegressor) -> None:
    """(tau_fwd + tau_bwd) / 2 at equal q removes Coulomb + viscous friction exactly (eq. 5)."""
    sweep = identification_plan([STATIC] * 6, RANGES)[0]  # joint 6
    q, qd, direction = sweep.sample(np.linspace(0.0, sweep.duration, 401)[:-1])
    friction = 0.05 * np.sign(qd) + 0.3 * qd
    tau = np.array([regressor.gravity_torques(qk) for qk in q]) + friction
    fwd, bwd = direction > 0, direction < 0
    paired = pair_passes(sweep.joint, q[fwd], tau[fwd], q[bwd], tau[bwd])
    exact = np.array([regressor.gravity_torques(qk) for qk in paired.positions])
    assert np.abs(paired.torques - exact).max() < 1e-4  # linear interpolation of smooth G


def test_sweep_speed_above_3_deg_s_is_refused() -> None:
    """A sweep faster than 3 deg/s raises ConfigurationError."""
    with pytest.raises(ConfigurationError, match="expected > 0 and <= 3 deg/s"):
        identification_plan([STATIC] * 6, RANGES, speed=2 * MAX_SPEED_RAD_S)


def test_too_few_samples_names_parameters(regressor: GravityRegressor) -> None:
    """One sample for joint 6's two parameters raises InsufficientSamplesError naming them."""
    comp = lunar_arm_composite_parameters()
    h, tau, joint = _sweep_samples(regressor, comp)
    keep = np.flatnonzero(joint == 5)[:1]
    with pytest.raises(InsufficientSamplesError, match=r"\['m6\*g\*lx6', 'm6\*g\*ly6'\]"):
        estimate_sequential(comp, h[keep], tau[keep], joint[keep])


def test_static_joint_names_unidentifiable_parameters(regressor: GravityRegressor) -> None:
    """One configuration only: joint 6's block has rank 1 and one of its two parameters is named."""
    comp = lunar_arm_composite_parameters()
    h = np.repeat(comp.regressor(regressor(STATIC))[None], 30, axis=0)
    tau = np.repeat(regressor.gravity_torques(STATIC)[None], 30, axis=0)
    with pytest.raises(UnidentifiableParametersError) as info:
        estimate_sequential(comp, h, tau)
    assert (info.value.rank, len(info.value.unidentifiable)) == (1, 1)
    assert info.value.unidentifiable[0] in ("m6*g*lx6", "m6*g*ly6")


def test_nan_torques_are_refused(regressor: GravityRegressor) -> None:
    """A NaN torque raises InvalidInputError instead of producing parameters."""
    comp = lunar_arm_composite_parameters()
    h, tau, joint = _sweep_samples(regressor, comp)
    tau[3, 2] = np.nan
    with pytest.raises(InvalidInputError, match="NaN or inf"):
        estimate_sequential(comp, h, tau, joint)


def test_rmse_percent_of_peak_defaults_to_the_reference_peak() -> None:
    """RMSE % of each joint's peak |reference|: residuals 0.1 and 0.2, peaks 2 and 4 -> 5 %."""
    reference = np.array([[2.0, -4.0], [1.0, 1.0]])
    predicted = reference + np.array([[0.1, 0.2], [-0.1, -0.2]])
    assert rmse_percent_of_peak(predicted, reference) == pytest.approx([5.0, 5.0])


def test_rmse_percent_of_peak_takes_a_given_peak() -> None:
    """With ``peak`` (a noisy reference's noise-free peak) the RMSE is in % of that peak."""
    reference = np.array([[2.0, -4.0], [1.0, 1.0]])
    predicted = reference + np.array([[0.1, 0.2], [-0.1, -0.2]])
    assert rmse_percent_of_peak(predicted, reference, np.array([1.0, 10.0])) == pytest.approx(
        [10.0, 2.0])


def test_rmse_percent_of_peak_refuses_a_peak_per_wrong_joint_count() -> None:
    """A peak of 3 joints for torques of 2 raises InvalidInputError saying both."""
    with pytest.raises(InvalidInputError,
                       match=re.escape("peak.shape=(3,) but the torques have 2 joints")):
        rmse_percent_of_peak(np.zeros((4, 2)), np.ones((4, 2)), np.ones(3))
