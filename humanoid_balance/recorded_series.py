"""Samples of a recorded quantity over time: the arrays a recorded run's figures are made of."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Series:
    """Samples of a quantity over time.

    Attributes:
        t: stamps [s] (n,).
        values: samples (n, k), in the quantity's unit.
    """

    t: np.ndarray
    values: np.ndarray

    @classmethod
    def empty(cls, width: int) -> Series:
        """A series without samples, ``width`` values each."""
        return cls(np.zeros(0), np.zeros((0, width)))

    @classmethod
    def of(cls, rows: list[tuple[float, ...]], width: int) -> Series:
        """A series from rows ``(t, v_1, ..., v_width)``, sorted by time."""
        if not rows:
            return cls.empty(width)
        arr = np.array(rows, dtype=float)
        arr = arr[np.argsort(arr[:, 0], kind="stable")]
        return cls(arr[:, 0], arr[:, 1:])

    def __len__(self) -> int:
        return int(self.t.size)

    def between(self, start: float, end: float) -> Series:
        """The samples with ``start <= t <= end``."""
        keep = (self.t >= start) & (self.t <= end)
        return Series(self.t[keep], self.values[keep])

