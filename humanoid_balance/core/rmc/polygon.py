"""A convex support polygon with its edges made once, for the margin asked every cycle."""

from __future__ import annotations

import numpy as np

from humanoid_balance.core.support import polygon_distance, polygon_edges
from humanoid_balance.exceptions import ConfigurationError

__all__ = ["ConvexPolygon"]


class ConvexPolygon:
    """A convex polygon (support polygon) with precomputed edges, for fast margins.

    The margin is :mod:`humanoid_balance.core.support`'s (the one the nodes' polygon uses),
    with the edges computed once here: the controller asks for a margin every cycle.

    Args:
        vertices: (N >= 3, 2) vertices [m], counter-clockwise.

    Raises:
        ConfigurationError: wrong shape, non-finite, or not counter-clockwise convex.
    """

    def __init__(self, vertices: np.ndarray) -> None:
        v = np.asarray(vertices, dtype=float)
        if v.ndim != 2 or v.shape[1] != 2 or v.shape[0] < 3 or not np.all(np.isfinite(v)):
            raise ConfigurationError(
                f"support polygon has shape {v.shape}, expected (N >= 3, 2) finite vertices [m]")
        edge = np.roll(v, -1, axis=0) - v
        if np.any(np.hypot(edge[:, 0], edge[:, 1]) <= 0):
            raise ConfigurationError("support polygon has repeated vertices")
        cross = edge[:, 0] * np.roll(edge, -1, axis=0)[:, 1] - edge[:, 1] * np.roll(edge, -1, axis=0)[:, 0]
        if np.any(cross < -1e-12):
            raise ConfigurationError(
                "support polygon must be convex and counter-clockwise; got vertices "
                f"{v.tolist()} (humanoid_balance.core.support.convex_hull orders them)")
        self.vertices = v
        self._listed = [(float(x), float(y)) for x, y in v.tolist()]
        self._edges = polygon_edges(self._listed)

    def margin(self, point: np.ndarray) -> float:
        """Signed distance [m] from ``point`` (2,) to the edge: positive inside."""
        return polygon_distance(float(point[0]), float(point[1]), self._listed, self._edges)
