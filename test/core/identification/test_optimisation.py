"""Static-configuration optimisation of seed 004 (eqs. 12-17): clearance, objective, GA-PSO vs DE."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from humanoid_balance.apps.experiment_identification import (
    DEFAULT_STATIC_DEG,
    TABLE,
    sweep_ranges,
)
from humanoid_balance.core.identification.optimisation import (
    ClearanceChecker,
    StaticConfigurationProblem,
    differential_evolution,
    ga_pso,
)
from humanoid_balance.core.identification.regressor import (
    GravityRegressor,
    lunar_arm_composite_parameters,
)
from humanoid_balance.resources import urdf_path

# the experiment's static configuration, sweep ranges and table (one definition)
STATIC = np.radians(DEFAULT_STATIC_DEG)
RANGES = sweep_ranges()


@pytest.fixture(scope="module")
def setup() -> tuple[GravityRegressor, ClearanceChecker]:
    urdf = str(urdf_path("lunar_arm"))
    model = pin.buildModelFromUrdf(urdf)
    return GravityRegressor(model), ClearanceChecker(urdf, model, [TABLE])


def _problem(setup: tuple[GravityRegressor, ClearanceChecker], joint: int
             ) -> StaticConfigurationProblem:
    regressor, clearance = setup
    return StaticConfigurationProblem(regressor, lunar_arm_composite_parameters(), joint,
                                      RANGES[joint], clearance)


def test_hanging_arm_clears_torso_by_4_5_cm(setup: tuple[GravityRegressor, ClearanceChecker]) -> None:
    """At q = 0 the closest pair is the forearm and the torso, 4.5 cm apart (0.075 - 0.03)."""
    distance, pair = setup[1].min_distance(np.zeros(6))
    assert (distance, pair) == (pytest.approx(0.045, abs=1e-6), "base_link_0 / link5_0")


def test_folded_into_the_table_is_a_collision(
        setup: tuple[GravityRegressor, ClearanceChecker]) -> None:
    """The straight arm swung 40 deg forward puts the hand into the table: clearance <= 0."""
    q = np.radians([-40.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    assert setup[1].min_distance(q)[0] <= 0.0


def test_infeasible_configuration_scores_above_one(
        setup: tuple[GravityRegressor, ClearanceChecker]) -> None:
    """A static configuration whose sweep hits the table gets W > 1 (eq. 13 with the penalty)."""
    problem = _problem(setup, 5)
    x = np.radians([-40.0, 0.0, 0.0, 0.0, 0.0])
    assert problem.objective(x) > 1.0


def test_ga_pso_minimises_a_sphere() -> None:
    """GA-PSO finds the minimum of |x - 0.3|^2 in [-1, 1]^4 within 1e-3."""
    bounds = np.array([[-1.0, 1.0]] * 4)
    result = ga_pso(lambda x: float(np.sum((x - 0.3) ** 2)), bounds, pso_iterations=80)
    assert result.x == pytest.approx(np.full(4, 0.3), abs=1e-3)


def test_optimised_configuration_excites_more(
        setup: tuple[GravityRegressor, ClearanceChecker]) -> None:
    """For joint 6's sweep the GA-PSO configuration has a larger range Q than the default one."""
    problem = _problem(setup, 5)
    default = problem.evaluate(STATIC[problem.free]).q_range
    best = ga_pso(problem.objective, problem.bounds)
    assert problem.evaluate(best.x).q_range > default


def test_de_and_ga_pso_reach_the_same_objective(
        setup: tuple[GravityRegressor, ClearanceChecker]) -> None:
    """On joint 3's sweep DE and GA-PSO reach W within 1e-3 of each other."""
    problem = _problem(setup, 2)
    a = ga_pso(problem.objective, problem.bounds)
    b = differential_evolution(problem.objective, problem.bounds)
    assert a.objective == pytest.approx(b.objective, abs=1e-3)
