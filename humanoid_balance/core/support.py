"""The support polygon of the humanoid's feet, built once from the URDF's contact frames.

API (stable; ``zmp_estimator`` and ``arm_balance`` both use it)::

    from humanoid_balance.core.support import (
        SupportPolygon, contact_frame_names, convex_hull, signed_distance)

    polygon = SupportPolygon.from_model(model)   # RobotModel; contact frames {side}_fsr_{0..3},
                                                 # sole frames {side}_sole (the seed humanoid's)
    SupportPolygon.from_model(model, contact_frames={"left": [...], "right": [...]},
                              sole_frames={"left": "left_sole", "right": "right_sole"})
    SupportPolygon({"left": points_in_sole (N, 2), ...})     # without a model (tests)
    polygon.sides                  # ("left", "right")
    polygon.points_in_sole[side]   # (N, 2) contact points in the sole frame [m], frame order
    polygon.update(soles_in_world, in_contact=None) -> (M, 2)   # vertices, counter-clockwise
        # soles_in_world: side -> world <- sole (4 x 4); in_contact: the sides touching
        # (None: all). Cached: the same poses and contact set give the same array object.
    polygon.update_at(model, q, in_contact=None) -> (M, 2)   # sole poses by FK at q
    polygon.vertices               # (M, 2) of the last update, or None before one
    polygon.margin(point_xy) -> float   # signed distance [m] to the edge, positive inside
    convex_hull(points_xy) -> (M, 2)    # counter-clockwise, collinear points left out
    signed_distance(point_xy, vertices) -> float

"World" is the model's world frame: ``W`` (the balance frame on the ground
between the soles) when the model is built with ``world_frame="W"``, as both
nodes do; so the two nodes give the same margin for the same point and
configuration.

Which outline is the polygon: the **contact pads**. The seed humanoid touches
the floor only through the four FSR pads under each sole (``{side}_fsr_{0..3}``
frames of the URDF, on the sole surface, ±0.09 m x ±0.05 m): the URDF's foot box
(0.22 m x 0.12 m) is visual only, and the MuJoCo model
(:mod:`humanoid_balance.sim.humanoid`) puts a 10 mm contact sphere at each FSR
frame and no other collision geometry under the foot, so the centre of pressure
can only lie in the hull of the pads (the sole outline is 10-20 mm larger and
would overstate the margin). A robot whose flat sole touches everywhere names
its sole corners as contact frames instead (``contact_frames``); the polygon is
always the hull of the contact frames of the feet in contact, projected on the
world's ground plane (x, y).

The margin is seed 001's stability margin: the signed distance from the ZMP to
the nearest edge,

.. math:: m(p) = \\min_i \\; n_i \\cdot (p - a_i) \\quad (p \\text{ inside}),

with ``a_i`` the vertices and ``n_i`` the inward unit normals of a
counter-clockwise polygon, and minus the distance to the nearest edge point
outside. Computed with Python floats: for the eight pads of two feet numpy's
per-call cost would be several times the whole 1 kHz estimator budget.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from math import hypot, isfinite
from typing import TYPE_CHECKING

import numpy as np

from humanoid_balance.exceptions import ConfigurationError, InvalidInputError

if TYPE_CHECKING:  # pinocchio is imported by whoever builds a model, not by the polygon
    from humanoid_balance.core.model import RobotModel

__all__ = ["SIDES", "SupportPolygon", "contact_frame_names", "convex_hull", "polygon_distance",
           "polygon_edges", "signed_distance"]

SIDES = ("left", "right")
#: the words of zmp_estimator's ERROR when the measured ZMP leaves the support polygon (the
#: robot tipping, not a node failing; recorded runs tell the two apart by them)
OUTSIDE_POLYGON = "outside the support polygon"
#: FSR pads per foot of the seed humanoid (``{side}_fsr_{0..3}`` in the URDF)
SEED_PADS = 4


def contact_frame_names(side: str, count: int = SEED_PADS) -> tuple[str, ...]:
    """The seed humanoid's contact frames of one foot: its FSR pads ``{side}_fsr_{i}``."""
    return tuple(f"{side}_fsr_{i}" for i in range(count))


def _hull_indices(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the convex hull, counter-clockwise (Andrew's monotone chain), collinear out.

    Not scipy's ``ConvexHull``: the estimator builds the polygon per sample at 1 kHz, and on
    the 8 pad points scipy took 45 us against this loop's 6.6 us (measured with timeit on
    this machine); Qhull also needs a fallback for the collinear points of one foot.
    """
    order = sorted(range(len(points)), key=lambda i: points[i])

    def cross(o: int, a: int, b: int) -> float:
        (ox, oy), (ax, ay), (bx, by) = points[o], points[a], points[b]
        return (ax - ox) * (by - oy) - (ay - oy) * (bx - ox)

    lower: list[int] = []
    for i in order:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], i) <= 0.0:
            lower.pop()
        lower.append(i)
    upper: list[int] = []
    for i in reversed(order):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], i) <= 0.0:
            upper.pop()
        upper.append(i)
    return lower[:-1] + upper[:-1]


def convex_hull(points_xy: np.ndarray) -> np.ndarray:
    """Convex hull (M, 2) of ground points [m], counter-clockwise, collinear points left out.

    Raises:
        InvalidInputError: not finite, or fewer than three points not on one line.
    """
    pts = np.asarray(points_xy, dtype=float)
    if pts.ndim != 2 or pts.shape[1] < 2:
        raise InvalidInputError(f"points_xy.shape={pts.shape}: expected (N, 2)")
    if not np.all(np.isfinite(pts[:, :2])):
        raise InvalidInputError("the support points must be finite")
    listed = [(float(x), float(y)) for x, y in pts[:, :2].tolist()]
    vertices = _hull_indices(listed)
    if len(vertices) < 3:
        raise InvalidInputError(f"the {len(listed)} contact points span no area: no support polygon")
    return np.array([listed[i] for i in vertices])


def polygon_edges(vertices: Sequence[tuple[float, float]]) -> list[tuple[float, float, float, float]]:
    """(a_x, a_y, unit edge x, unit edge y) of each edge of a counter-clockwise polygon."""
    out = []
    for (ax, ay), (bx, by) in zip(vertices, [*vertices[1:], vertices[0]], strict=True):
        length = hypot(bx - ax, by - ay)
        out.append((ax, ay, (bx - ax) / length, (by - ay) / length))
    return out


def polygon_distance(x: float, y: float, vertices: Sequence[tuple[float, float]],
              edges: Sequence[tuple[float, float, float, float]]) -> float:
    """Signed distance [m] from (x, y) to a CCW polygon with :func:`polygon_edges`' edges."""
    best = float("inf")
    for ax, ay, ux, uy in edges:
        signed = ux * (y - ay) - uy * (x - ax)  # inward normal of a CCW edge: turned left
        if signed < best:
            best = signed
    if best >= 0.0:
        return best
    # outside: minus the distance to the nearest point of the boundary
    nearest = float("inf")
    for (ax, ay, ux, uy), (bx, by) in zip(edges, [*vertices[1:], vertices[0]], strict=True):
        length = hypot(bx - ax, by - ay)
        t = min(max(ux * (x - ax) + uy * (y - ay), 0.0), length)
        nearest = min(nearest, hypot(x - (ax + t * ux), y - (ay + t * uy)))
    return -nearest


def signed_distance(point_xy: np.ndarray | Sequence[float], vertices: np.ndarray) -> float:
    """Signed distance [m] from a point to the edge of a convex CCW polygon: positive inside.

    Raises:
        InvalidInputError: the point is not finite.
    """
    x, y = float(point_xy[0]), float(point_xy[1])
    if not (isfinite(x) and isfinite(y)):
        raise InvalidInputError(f"point ({x}, {y}): a margin needs a finite point")
    listed = [(float(a), float(b)) for a, b in np.asarray(vertices, dtype=float)[:, :2].tolist()]
    return polygon_distance(x, y, listed, polygon_edges(listed))


class SupportPolygon:
    """The hull of the contact points of the feet in contact, in the world (see the module).

    Args:
        points_in_sole: side -> (N, 2) contact points [m] in that foot's sole frame (its
            surface is z = 0), in the order of the contact frames.

    Raises:
        ConfigurationError: no foot, or a foot's points are not a finite (N >= 1, 2) array.
    """

    def __init__(self, points_in_sole: Mapping[str, np.ndarray]) -> None:
        if not points_in_sole:
            raise ConfigurationError("a support polygon needs at least one foot")
        self.points_in_sole: dict[str, np.ndarray] = {}
        for side, points in points_in_sole.items():
            pts = np.asarray(points, dtype=float)
            if pts.ndim != 2 or pts.shape[1] != 2 or len(pts) == 0 or not np.all(np.isfinite(pts)):
                raise ConfigurationError(
                    f"{side} foot: contact points of shape {pts.shape}, expected finite (N >= 1, 2) [m]")
            self.points_in_sole[side] = pts
        self.sides = tuple(self.points_in_sole)
        self._listed = {s: [(float(x), float(y)) for x, y in p.tolist()]
                        for s, p in self.points_in_sole.items()}
        self._key: tuple[object, ...] | None = None
        self._vertices: list[tuple[float, float]] = []
        self._edge_list: list[tuple[float, float, float, float]] = []
        self.vertices: np.ndarray | None = None

    @classmethod
    def from_model(cls, model: RobotModel, *,
                   contact_frames: Mapping[str, Sequence[str]] | None = None,
                   sole_frames: Mapping[str, str] | None = None) -> SupportPolygon:
        """The polygon of a robot model's feet: contact frames read in their sole frames.

        Args:
            model: the robot (the contact frames are rigidly attached to their soles).
            contact_frames: side -> contact frames; default the seed humanoid's FSR pads
                ``{side}_fsr_{0..3}`` for ``left`` and ``right``.
            sole_frames: side -> sole frame (origin on the sole surface, z up); default
                ``{side}_sole``.

        Raises:
            UnknownFrameError: a frame is not in the model.
            ConfigurationError: a contact frame is not on its sole's surface (z != 0 in
                the sole frame, beyond 0.1 mm) or not rigidly attached to it.
        """
        frames = dict(contact_frames) if contact_frames is not None else {
            side: contact_frame_names(side) for side in SIDES}
        soles = dict(sole_frames) if sole_frames is not None else {s: f"{s}_sole" for s in frames}
        q = model.neutral()
        pin_model = model.model
        points = {}
        for side, names in frames.items():
            if side not in soles:
                raise ConfigurationError(f"{side} foot: no sole frame given")
            sole_id = model.frame_id(soles[side])
            sole = model.frame_transform(soles[side], q)
            inverse = np.linalg.inv(sole)
            rows = []
            for name in names:
                frame_id = model.frame_id(name)
                if pin_model.frames[frame_id].parentJoint != pin_model.frames[sole_id].parentJoint:
                    raise ConfigurationError(
                        f"contact frame {name!r} is not rigidly attached to sole {soles[side]!r}")
                local = inverse @ model.frame_transform(name, q)
                if abs(local[2, 3]) > 1e-4:
                    raise ConfigurationError(
                        f"contact frame {name!r} is {1000 * local[2, 3]:.1f} mm off the surface of "
                        f"sole {soles[side]!r}: contact frames lie on the sole (z = 0)")
                rows.append(local[:2, 3])
            points[side] = np.array(rows).reshape(-1, 2)
        return cls(points)

    def update(self, soles_in_world: Mapping[str, np.ndarray],
               in_contact: Iterable[str] | None = None) -> np.ndarray:
        """The polygon (M, 2), counter-clockwise, of the feet in contact at these sole poses.

        Args:
            soles_in_world: side -> world <- sole (4 x 4) of (at least) the feet in contact.
            in_contact: the sides in contact; None: every side.

        Raises:
            InvalidInputError: no foot in contact, a pose missing or not finite, or the
                contact points span no area.
        """
        touching = self.sides if in_contact is None else tuple(in_contact)
        if not touching:
            raise InvalidInputError("no foot in contact: no support polygon")
        poses = []
        for side in touching:
            if side not in self._listed:
                raise InvalidInputError(f"unknown foot {side!r}; the polygon has {list(self.sides)}")
            if side not in soles_in_world:
                raise InvalidInputError(f"no sole pose for the {side} foot")
            poses.append(np.asarray(soles_in_world[side], dtype=float))
        key = (touching, *(p.tobytes() for p in poses))
        if key == self._key and self.vertices is not None:
            return self.vertices
        points = []
        for side, pose in zip(touching, poses, strict=True):
            if pose.shape != (4, 4) or not np.all(np.isfinite(pose)):
                raise InvalidInputError(f"{side} foot: the sole pose must be a finite 4 x 4 transform")
            r00, r01, t0 = float(pose[0, 0]), float(pose[0, 1]), float(pose[0, 3])
            r10, r11, t1 = float(pose[1, 0]), float(pose[1, 1]), float(pose[1, 3])
            points += [(r00 * x + r01 * y + t0, r10 * x + r11 * y + t1) for x, y in self._listed[side]]
        indices = _hull_indices(points)
        if len(indices) < 3:
            raise InvalidInputError(
                f"the {len(points)} contact points of {list(touching)} span no area: no support polygon")
        self._vertices = [points[i] for i in indices]
        self._edge_list = polygon_edges(self._vertices)
        self.vertices = np.array(self._vertices)
        self._key = key
        return self.vertices

    def update_at(self, model: RobotModel, q: np.ndarray,
                  in_contact: Iterable[str] | None = None) -> np.ndarray:
        """:meth:`update` with the sole poses of configuration ``q`` (frames ``{side}_sole``)."""
        return self.update({side: model.frame_transform(f"{side}_sole", q) for side in self.sides},
                           in_contact)

    def margin(self, point_xy: np.ndarray | Sequence[float]) -> float:
        """Signed distance [m] from ``point_xy`` to the edge of the current polygon, positive inside.

        Raises:
            InvalidInputError: no polygon yet (call :meth:`update`), or the point is not finite.
        """
        if self.vertices is None:
            raise InvalidInputError("no support polygon yet: call update() with the sole poses")
        x, y = float(point_xy[0]), float(point_xy[1])
        if not (isfinite(x) and isfinite(y)):
            raise InvalidInputError(f"point ({x}, {y}): a margin needs a finite point")
        return polygon_distance(x, y, self._vertices, self._edge_list)
