"""The one freshness rule (core/freshness.py): ages, stamps ahead and behind, clock jumps."""

import math

import numpy as np
import pytest

from humanoid_balance.core.freshness import (
    CLOCK_BACK_TOLERANCE_S,
    ClockWatch,
    age_problem,
    is_fresh,
    stamp_problem,
)


def test_fresh_within_timeout_and_tolerance_only():
    assert is_fresh(1.0, 1.04, 0.05)
    assert not is_fresh(1.0, 1.0501, 0.05)
    assert is_fresh(1.0, 1.0 - 0.9 * CLOCK_BACK_TOLERANCE_S, 0.05)
    assert not is_fresh(1.0, 1.0 - 2 * CLOCK_BACK_TOLERANCE_S, 0.05)
    assert not is_fresh(None, 1.0, 0.05)


def test_fresh_matches_its_definition_on_random_draws():
    rng = np.random.default_rng(34)
    for received, now, timeout in rng.uniform([-5, -5, 0], [5, 5, 2], size=(2000, 3)):
        expected = bool(-CLOCK_BACK_TOLERANCE_S <= now - received <= timeout)
        assert is_fresh(received, now, timeout) is expected
        assert (age_problem(received, now, timeout, "x", "t") is None) is expected


def test_age_problem_names_the_parameter_and_the_direction():
    assert age_problem(None, 1.0, 0.1, "/joint_states", "joint_state_timeout") == (
        "no /joint_states received yet")
    assert age_problem(1.0, 1.5, 0.1, "/joint_states", "joint_state_timeout") == (
        "/joint_states 0.500 s old, older than joint_state_timeout=0.1 s")
    assert "went back" in age_problem(2.0, 1.0, 0.1, "/joint_states", "joint_state_timeout")


def test_stamp_problem_ahead_behind_and_unstamped():
    kw = dict(ahead_s=0.05, ahead_name="future_tolerance")
    assert stamp_problem(0.0, 100.0, "wrench", **kw) is None
    assert stamp_problem(100.04, 100.0, "wrench", **kw) is None
    assert stamp_problem(100.06, 100.0, "wrench", **kw) == (
        "wrench stamped 0.060 s ahead of the node clock, beyond future_tolerance=0.05 s: "
        "check that the clocks agree (use_sim_time)")
    assert stamp_problem(90.0, 100.0, "wrench", **kw) is None
    assert stamp_problem(90.0, 100.0, "wrench", behind_s=1.0, behind_name="sensor_timeout",
                         **kw) == ("wrench stamped 10.000 s behind the node clock, beyond "
                                   "sensor_timeout=1 s")


def test_clock_watch_reports_back_and_forward_jumps_once_each():
    watch = ClockWatch(max_forward_s=1.0)
    assert watch.update(10.0) is None
    assert watch.update(10.0 - 0.5 * CLOCK_BACK_TOLERANCE_S) is None  # jitter
    jump = watch.update(0.0)
    assert jump is not None and jump.back and jump.by_s == pytest.approx(10.0, abs=1e-3)
    assert "went back" in jump.describe()
    assert watch.update(0.5) is None
    jump = watch.update(10.5)
    assert jump is not None and not jump.back and jump.by_s == pytest.approx(10.0)
    assert watch.jumps == 2
    watch.reset()
    assert watch.update(-100.0) is None


def test_clock_watch_refuses_bad_bounds():
    with pytest.raises(ValueError):
        ClockWatch(max_forward_s=0.0)
    with pytest.raises(ValueError):
        ClockWatch(back_tolerance_s=-1.0)
    assert ClockWatch().max_forward_s == math.inf
