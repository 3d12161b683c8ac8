"""Pairs of floats: the servo period's 2-vectors, ``[pitch, roll]`` or ``[motor 1, motor 2]``.

The servo period computes on pairs of Python floats, not on numpy arrays: with 2-vectors a
numpy call costs 1-4 us of overhead for a few nanoseconds of arithmetic, and the period ran
some 40 of them. The expressions are the array ones element by element, in the same order;
only the 2 x 2 products differ, by a rounding: numpy's BLAS fuses their multiply-adds, Python
rounds each product (which is also the same on every CPU).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

__all__ = ["NAN_PAIR", "ZERO", "Pair", "integrate", "mul", "rows"]

#: ``[pitch, roll]`` or ``[motor 1, motor 2]`` as two floats
Pair = tuple[float, float]
ZERO: Pair = (0.0, 0.0)
NAN_PAIR: Pair = (math.nan, math.nan)


def rows(matrix: NDArray[np.float64]) -> tuple[Pair, Pair]:
    """A 2 x 2 matrix as two rows of floats."""
    (a, b), (c, d) = (float(v) for v in matrix[0]), (float(v) for v in matrix[1])
    return (a, b), (c, d)


def mul(matrix: tuple[Pair, Pair], vector: Pair) -> Pair:
    """``matrix @ vector`` on floats (2 x 2 times 2)."""
    (a, b), (c, d) = matrix
    x, y = vector
    return a * x + b * y, c * x + d * y


def integrate(value: Pair, rate: Pair, dt: float, limit: float) -> tuple[Pair, Pair]:
    """``value + rate dt`` kept within ``+-limit``, and the rate that was really integrated.

    Args:
        value: the integral [rad].
        rate: its rate [rad/s].
        dt: period [s].
        limit: bound [rad].
    """
    new0 = min(max(value[0] + rate[0] * dt, -limit), limit)
    new1 = min(max(value[1] + rate[1] * dt, -limit), limit)
    return (new0, new1), ((new0 - value[0]) / dt, (new1 - value[1]) / dt)
