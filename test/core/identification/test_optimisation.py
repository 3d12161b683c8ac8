"""Static-configuration optimisation of seed 004 (eqs. 12-17): clearance, objective, GA-PSO vs DE."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from humanoid_balance.core.identification.optimisation import (
    PATH_STEP_RAD,
    ClearanceChecker,
    Excitation,
    StaticConfigurationProblem,
    differential_evolution,
    ga_pso,
    joint_line,
    optimise_static_configurations,
    path_clearance,
)
from humanoid_balance.core.identification.regressor import (
    GravityRegressor,
    lunar_arm_composite_parameters,
)
from humanoid_balance.experiments.identification import DEFAULT_STATIC_DEG, TABLE, sweep_ranges
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


def test_optimised_statics_keep_gapso_where_it_beats_the_default(
        setup: tuple[GravityRegressor, ClearanceChecker]) -> None:
    """For joint 6's sweep GA-PSO's configuration is kept: more range Q, default sweep angle."""
    regressor, clearance = setup
    choice = optimise_static_configurations(regressor, lunar_arm_composite_parameters(), STATIC,
                                            RANGES, clearance)[5]
    assert choice.optimised
    assert choice.chosen.q_range > choice.default.q_range
    assert choice.static[5] == STATIC[5]
    _assert_same_excitation(choice.chosen, _problem(setup, 5).evaluate(choice.static[:5]))


def test_optimised_statics_keep_a_default_that_gapso_does_not_beat(
        setup: tuple[GravityRegressor, ClearanceChecker]) -> None:
    """A default already at GA-PSO's optimum (same W) is kept, not replaced."""
    regressor, clearance = setup
    problem = _problem(setup, 0)
    default = STATIC.copy()
    default[problem.free] = ga_pso(problem.objective, problem.bounds).x
    (choice,) = optimise_static_configurations(regressor, lunar_arm_composite_parameters(),
                                               default, RANGES[:1], clearance)
    assert not choice.optimised
    assert choice.static.tolist() == default.tolist()
    _assert_same_excitation(choice.chosen, choice.default)


def _assert_same_excitation(a: Excitation, b: Excitation) -> None:
    """Q and condition number to the bit; clearance to 1e-6 m (coal's GJK warm-starts)."""
    assert (a.q_range, a.condition_number) == (b.q_range, b.condition_number)
    assert a.min_clearance == pytest.approx(b.min_clearance, abs=1e-6)


def test_joint_line_keeps_its_ends_and_its_step() -> None:
    """The line includes both ends exactly; no joint moves more than the step between two."""
    a = np.radians([0.0, 40.0, 20.0, 60.0, 40.0, 30.0])
    b = np.radians([-30.0, 45.0, 20.0, 61.0, -10.0, 30.0])
    line = joint_line(a, b)
    assert np.array_equal(line[0], a) and np.array_equal(line[-1], b)
    assert np.abs(np.diff(line, axis=0)).max() <= PATH_STEP_RAD + 1e-15
    assert len(line) == int(np.ceil(np.radians(50.0) / PATH_STEP_RAD)) + 1
    assert joint_line(a, a).shape == (2, 6)  # a standstill: its two ends


def test_path_clearance_finds_a_collision_between_clear_ends() -> None:
    """Joint 1 swept -31 -> 29 deg from [_, -2, 99, 48, 43, -15] deg: both ends keep more than
    2 cm, the links pass through each other in between. The path's least distance is the one of
    a 100 times finer sampling to 0.1 mm."""
    urdf = str(urdf_path("lunar_arm"))
    checker = ClearanceChecker(urdf, pin.buildModelFromUrdf(urdf))
    start = np.radians([-31.0, -2.0, 99.0, 48.0, 43.0, -15.0])
    end = start.copy()
    end[0] = np.radians(29.0)
    assert checker.min_distance(start)[0] > 0.02 and checker.min_distance(end)[0] > 0.02
    closest = path_clearance(checker, joint_line(start, end))
    fine = min(checker.min_distance(q)[0] for q in joint_line(start, end, PATH_STEP_RAD / 100))
    assert closest.distance < 0.0
    assert abs(closest.distance - fine) < 1e-4, (closest.distance, fine)
    # (coal's penetration depth depends on its warm start to about 1e-7 m: not bit for bit)
    assert closest.distance == pytest.approx(checker.min_distance(closest.configuration)[0],
                                             abs=1e-6)
    assert "/" in closest.pair
