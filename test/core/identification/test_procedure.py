"""From a joint-state stream to parameters: segmentation, pairing, averaging (seed 004)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml

from humanoid_balance.core.identification import METHODS
from humanoid_balance.core.identification.estimation import (
    ILL_CONDITIONED,
    block_condition_numbers,
    fit_warnings,
)
from humanoid_balance.core.identification.procedure import (
    ESTIMATORS,
    identify,
    paired_samples,
    predict,
    prediction_regressor,
    results_document,
    segment_sweeps,
)
from humanoid_balance.core.identification.regressor import (
    GravityRegressor,
    lunar_arm_composite_parameters,
)
from humanoid_balance.core.identification.trajectory import PlanFollower, identification_plan
from humanoid_balance.exceptions import InvalidInputError
from humanoid_balance.resources import urdf_path
from humanoid_balance.results import write_yaml

STATIC = np.radians([0.0, 30.0, 20.0, 60.0, 40.0, 30.0])
HALF = math.radians(5.0)


def _plan_stream(regressor: GravityRegressor, halves: list[float]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A 200 Hz stream of the whole plan whose joint j sweeps STATIC[j] +- halves[j] [rad]
    (approaches included) with RNEA gravity + friction."""
    plan = identification_plan([STATIC] * 6, [(s - h, s + h) for s, h in zip(STATIC, halves, strict=True)])
    follower = PlanFollower(plan, np.zeros(6))
    t = np.arange(0.0, follower.duration, 0.005)
    points = [follower.at(tk) for tk in t]
    q = np.array([p.position for p in points])
    qd = np.array([p.velocity for p in points])
    tau = np.array([regressor.gravity_torques(qk) for qk in q]) + 0.05 * np.sign(qd) + 0.5 * qd
    return t, q, qd, tau


@pytest.fixture(scope="module")
def stream() -> tuple[GravityRegressor, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """The stream of the plan sweeping every joint +- 5 deg."""
    regressor = GravityRegressor(pin.buildModelFromUrdf(str(urdf_path("lunar_arm"))))
    return regressor, _plan_stream(regressor, [HALF] * 6)


def test_segmentation_finds_six_sweeps_back_to_front(stream: tuple) -> None:
    """The stream of a plan is cut into the six sweeps, joints 6 .. 1, approaches left out."""
    _, (t, q, qd, tau) = stream
    assert [r.joint for r in segment_sweeps(t, q, qd, tau, trim_s=0.1)] == [5, 4, 3, 2, 1, 0]


def test_single_joint_approach_is_not_taken_for_a_pass() -> None:
    """Started at the static pose, the first approach moves joint 6 alone, opposite to its forward
    pass: it is followed by a rest, not a turn, so both real passes pair, each covering the sweep."""
    regressor = GravityRegressor(pin.buildModelFromUrdf(str(urdf_path("lunar_arm"))))
    plan = identification_plan([STATIC] * 6, [(s - HALF, s + HALF) for s in STATIC])
    follower = PlanFollower(plan, STATIC.copy())
    t = np.arange(0.0, follower.duration, 0.005)
    points = [follower.at(tk) for tk in t]
    q = np.array([p.position for p in points])
    qd = np.array([p.velocity for p in points])
    tau = np.array([regressor.gravity_torques(qk) for qk in q])
    recordings = segment_sweeps(t, q, qd, tau, trim_s=0.1)
    assert [r.joint for r in recordings] == [5, 4, 3, 2, 1, 0]
    for rec in recordings:
        angles, _, direction = rec.arrays()
        for d in (1.0, -1.0):
            covered = np.ptp(angles[direction == d, rec.joint])
            assert covered > 2 * HALF - math.radians(0.5), (rec.joint, d, np.degrees(covered))


def test_stream_gives_true_parameters(stream: tuple) -> None:
    """Segmented and paired exact data give eq. 8's values within 1e-7 N m.

    What is left is the linear interpolation of eq. 5's pairing between
    samples 0.015 deg apart: (0.015 deg)^2 * |G''| / 8, about 3e-8 N m.
    """
    regressor, (t, q, qd, tau) = stream
    comp = lunar_arm_composite_parameters()
    recordings = segment_sweeps(t, q, qd, tau, trim_s=0.1)
    estimate = identify(recordings, regressor, comp)
    truth = comp.from_standard(regressor.standard_parameters())
    assert np.abs(estimate.values - truth).max() < 1e-7


def test_block_averaging_costs_only_curvature(stream: tuple) -> None:
    """Averaging blocks of 10 samples moves the estimate by < 2e-6 N m.

    The mean of G over a block differs from G at the mean angle by about
    |G''| * span^2 / 24 = 3.7 * (0.15 deg)^2 / 24 = 1e-6 N m here (200 Hz
    samples); at the experiment's 1 kHz the span is 5 times shorter.
    """
    regressor, (t, q, qd, tau) = stream
    comp = lunar_arm_composite_parameters()
    recordings = segment_sweeps(t, q, qd, tau, trim_s=0.1)
    plain = identify(recordings, regressor, comp).values
    averaged = identify(recordings, regressor, comp, average=10).values
    assert np.abs(averaged - plain).max() < 2e-6


def test_without_pairs_friction_biases_the_estimate(stream: tuple) -> None:
    """Without eq. 5's pairing the 0.05 N m Coulomb friction shifts the estimate (> 1e-3 N m)."""
    regressor, (t, q, qd, tau) = stream
    comp = lunar_arm_composite_parameters()
    recordings = segment_sweeps(t, q, qd, tau, trim_s=0.1)
    estimate = identify(recordings, regressor, comp, pair_friction=False)
    truth = comp.from_standard(regressor.standard_parameters())
    assert np.abs(estimate.values - truth).max() > 1e-3


def test_every_method_has_one_estimator() -> None:
    """ESTIMATORS names exactly the METHODS that parsers offer."""
    assert tuple(ESTIMATORS) == METHODS


@pytest.mark.parametrize("method", METHODS)
def test_identify_is_the_estimator_on_the_paired_samples(stream: tuple, method: str) -> None:
    """identify(method) equals ESTIMATORS[method] on paired_samples' regressor, to the bit."""
    regressor, (t, q, qd, tau) = stream
    comp = lunar_arm_composite_parameters()
    recordings = segment_sweeps(t, q + 1e-4 * np.sin(7.0 * t)[:, None], qd, tau, trim_s=0.1)
    qs, taus, joint = paired_samples(recordings, average=3)
    direct = ESTIMATORS[method](comp, comp.regressor(regressor.stacked(qs)), taus, joint)
    via = identify(recordings, regressor, comp, method=method, average=3)
    assert (via.values.tolist(), via.std.tolist()) == (direct.values.tolist(), direct.std.tolist())


def test_average_below_one_is_refused(stream: tuple) -> None:
    """A block of 0 samples raises InvalidInputError instead of silently not averaging."""
    _, (t, q, qd, tau) = stream
    recordings = segment_sweeps(t, q, qd, tau, trim_s=0.1)
    with pytest.raises(InvalidInputError,
                       match=re.escape("average=0: expected a block of >= 1 samples")):
        paired_samples(recordings, average=0)


def test_prediction_regressor_gives_predict_at_moon_gravity(stream: tuple) -> None:
    """H at Moon gravity times phi equals predict(..., 9.81 / 6) and G_moon(q) for the true phi."""
    regressor, (_, q, _, _) = stream
    comp = lunar_arm_composite_parameters()
    truth = comp.from_standard(regressor.standard_parameters())
    h = prediction_regressor(regressor, comp, q[::50], 9.81 / 6)
    moon = GravityRegressor(regressor.model, 9.81 / 6)
    expected = np.array([moon.gravity_torques(qk) for qk in q[::50]])
    assert h @ truth == pytest.approx(predict(truth, regressor, comp, q[::50], 9.81 / 6), abs=1e-15)
    assert h @ truth == pytest.approx(expected, abs=1e-11)  # C^+ C = I to rounding


def test_results_yaml_round_trips(stream: tuple, tmp_path: Path) -> None:
    """The results file: names, values, std and the fit RMSE per joint; its folder is created."""
    regressor, (t, q, qd, tau) = stream
    comp = lunar_arm_composite_parameters()
    estimate = identify(segment_sweeps(t, q, qd, tau, trim_s=0.1), regressor, comp)
    path = tmp_path / "new" / "results.yaml"
    joints = [f"joint{i}" for i in range(1, 7)]
    write_yaml(path, results_document(estimate, joints, 9.81, 6))
    doc = yaml.safe_load(path.read_text())
    assert (doc["gravity_m_s2"], doc["sweeps"], doc["samples"]) == (9.81, 6, estimate.samples)
    assert [p["name"] for p in doc["parameters"]] == list(comp.names)
    assert [p["value"] for p in doc["parameters"]] == estimate.values.tolist()
    assert list(doc["fit_rmse_n_m"]) == joints


def test_block_condition_numbers_are_each_joints_own_block_over_its_sweep() -> None:
    """Joint i's number is cond(H[rows of sweep i, i][:, columns of joint i]), by numpy's cond."""
    rng = np.random.default_rng(3)
    pset = lunar_arm_composite_parameters()
    h = rng.normal(size=(60, 6, len(pset.names)))
    sweep = np.repeat(np.arange(6), 10)
    owner = np.asarray(pset.owner)
    expected = [np.linalg.cond(h[sweep == i, i][:, owner == i]) for i in range(6)]
    assert block_condition_numbers(pset, h, sweep) == pytest.approx(expected, rel=1e-12)
    everything = [np.linalg.cond(h[:, i][:, owner == i]) for i in range(6)]
    assert block_condition_numbers(pset, h) == pytest.approx(everything, rel=1e-12)
    assert math.isnan(block_condition_numbers(pset, h, np.zeros(60, int))[3])  # no sample


def test_a_narrow_sweep_is_warned_by_name_and_wide_ones_are_not(stream: tuple) -> None:
    """+-5 deg sweeps: condition numbers about 20, no warning; joint 4 swept +-0.5 deg alone:
    its number over ILL_CONDITIONED and one warning naming it; the results file holds them."""
    regressor, (t, q, qd, tau) = stream
    comp = lunar_arm_composite_parameters()
    joints = [f"joint{i}" for i in range(1, 7)]
    wide = identify(segment_sweeps(t, q, qd, tau, trim_s=0.1), regressor, comp)
    assert np.all((wide.condition_numbers > 10.0) & (wide.condition_numbers < 40.0)), \
        wide.condition_numbers
    assert fit_warnings(wide, joints) == ()
    halves = [HALF] * 6
    halves[3] = math.radians(0.5)
    t2, q2, qd2, tau2 = _plan_stream(regressor, halves)
    for method in METHODS:
        narrow = identify(segment_sweeps(t2, q2, qd2, tau2, trim_s=0.1), regressor, comp,
                          method=method)
        assert narrow.condition_numbers[3] > ILL_CONDITIONED
        others = np.delete(narrow.condition_numbers, 3)
        assert np.all(others < 40.0), narrow.condition_numbers
        warnings = fit_warnings(narrow, joints)
        assert len(warnings) == 1 and warnings[0].startswith("the fit of joint4's parameters is "
                                                             "ill-conditioned"), warnings
        doc = results_document(narrow, joints, 9.81, 6)
        assert doc["condition_numbers"] == pytest.approx(
            dict(zip(joints, narrow.condition_numbers.tolist(), strict=True)), rel=1e-12)
