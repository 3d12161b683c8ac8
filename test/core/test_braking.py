"""The controlled stop's braking profile (humanoid_balance/core/braking.py) against its closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest

from humanoid_balance.core.braking import plan_stop
from humanoid_balance.exceptions import ConfigurationError, InvalidInputError

LOWER, UPPER = (math.radians(-5.0), math.radians(-15.0)), (math.radians(45.0), math.radians(15.0))


def test_both_joints_stop_together_at_the_limit_keeping_the_direction() -> None:
    """v0 = (28, -16) deg/s, a = 30 deg/s^2: T = 28/30 s for both; the fastest joint brakes at a,
    the other at 16/28 of it; every sample's velocity is parallel to v0; rest at q0 + v0 T / 2."""
    a = math.radians(30.0)
    q0, v0 = np.radians([10.0, 2.0]), np.radians([28.0, -16.0])
    plan = plan_stop(q0, v0, a, LOWER, UPPER)
    assert plan.duration_s == pytest.approx(28.0 / 30.0, rel=1e-12)
    assert plan.deceleration == pytest.approx((a, a * 16.0 / 28.0), rel=1e-12)
    for t in np.linspace(0.0, plan.duration_s, 50)[:-1]:
        q, qd = plan.sample(float(t))
        np.testing.assert_allclose(qd, v0 * (1.0 - t / plan.duration_s), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(q, q0 + v0 * t - 0.5 * v0 / plan.duration_s * t * t, rtol=1e-12)
    np.testing.assert_allclose(plan.end_position, q0 + v0 * plan.duration_s / 2, rtol=1e-12)
    assert plan.sample(plan.duration_s + 1.0) == (plan.end_position, (0.0, 0.0))
    assert plan.sample(0.0) == (tuple(q0.tolist()), tuple(v0.tolist()))


def test_a_joint_that_would_pass_its_edge_rests_on_it() -> None:
    """Pitch 40.4 deg at 57 deg/s with a = 300 deg/s^2 would rest at 45.8 deg: it brakes at
    v^2 / (2 d) instead and rests on 45 deg; roll keeps the common time."""
    a = math.radians(300.0)
    q0, v0 = np.radians([40.4, 0.0]), np.radians([57.0, 10.0])
    plan = plan_stop(q0, v0, a, LOWER, UPPER)
    d = math.radians(45.0 - 40.4)
    assert plan.deceleration[0] == pytest.approx(v0[0] ** 2 / (2 * d), rel=1e-12)
    assert plan.deceleration[0] > a
    assert plan.deceleration[1] == pytest.approx(a * 10.0 / 57.0, rel=1e-12)
    assert plan.end_position[0] == pytest.approx(math.radians(45.0), abs=1e-12)
    pitch = [plan.sample(float(t))[0][0] for t in np.linspace(0.0, plan.duration_s, 200)]
    assert max(pitch) <= math.radians(45.0) + 1e-12


def test_at_rest_and_at_the_edge() -> None:
    """A joint at rest stays (deceleration 0); one at its edge moving out stops at once."""
    plan = plan_stop((0.1, math.radians(15.0)), (0.0, 0.2), 1.0, LOWER, UPPER)
    assert plan.deceleration[0] == 0.0 and math.isinf(plan.deceleration[1])
    assert plan.duration_s == 0.0
    assert plan.sample(0.01) == ((0.1, math.radians(15.0)), (0.0, 0.0))
    still = plan_stop((0.1, 0.2), (0.0, 0.0), 1.0, LOWER, UPPER)
    assert still.duration_s == 0.0 and still.end_position == (0.1, 0.2)


def test_bad_input_is_refused() -> None:
    """Non-finite values, mismatched lengths and a limit that is not > 0 are named."""
    with pytest.raises(InvalidInputError, match="non-finite"):
        plan_stop((math.nan, 0.0), (0.0, 0.0), 1.0, LOWER, UPPER)
    with pytest.raises(InvalidInputError, match="1 positions"):
        plan_stop((0.0,), (0.0, 0.0), 1.0, LOWER, UPPER)
    with pytest.raises(ConfigurationError, match="acceleration_limit"):
        plan_stop((0.0, 0.0), (0.0, 0.0), 0.0, LOWER, UPPER)
