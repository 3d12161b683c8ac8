"""The servo period's float arithmetic (humanoid_balance/waist/pairs.py) against the array
expressions it replaces: the same floats."""

from __future__ import annotations

import numpy as np

from humanoid_balance.waist.pairs import integrate, mul, rows


def test_integrate_equals_the_clipped_array_step() -> None:
    """integrate is np.clip(value + rate dt, -limit, limit) and (new - value) / dt, exactly."""
    rng = np.random.default_rng(7)
    for _ in range(5000):
        value, rate = rng.normal(size=2) * 0.01, rng.normal(size=2) * 5.0
        new = np.clip(value + rate * 0.002, -0.0087, 0.0087)
        expected = (tuple(new.tolist()), tuple(((new - value) / 0.002).tolist()))
        assert integrate((float(value[0]), float(value[1])), (float(rate[0]), float(rate[1])),
                         0.002, 0.0087) == expected


def test_mul_is_the_matrix_product_within_a_rounding() -> None:
    """mul(rows(M), v) is M @ v up to the rounding of a fused multiply-add."""
    rng = np.random.default_rng(3)
    for _ in range(1000):
        matrix, vector = rng.normal(size=(2, 2)), rng.normal(size=2)
        got = mul(rows(matrix), (float(vector[0]), float(vector[1])))
        np.testing.assert_allclose(got, matrix @ vector, rtol=1e-15, atol=1e-15)
