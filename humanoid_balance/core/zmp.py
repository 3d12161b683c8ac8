"""Zero-moment point (ZMP) from foot sensors and from motion (seed 001: Kajita, ch. 3).

Conventions: a foot wrench is the one the foot exerts on the leg through the
sensor, expressed in the sensor frame, with the torque about the sensor origin
(standing gives ``fz > 0``): the ground reaction as the sensor sees it. Sole
frames have their origin on the sole surface, z up. All lengths in [m], forces
in [N], torques in [N m].

Equations (seed 001):

- eq. 3.24/3.25, a 6-axis sensor with its origin at ``p_s`` (any pose) above a
  sole whose surface is the plane z = 0 of the sole frame: with the wrench
  ``(f, tau)`` moved to the sole frame, ``tau_o = tau + p_s x f`` and

  .. math:: p_x = -\\tau_{o,y} / f_z, \\qquad p_y = \\tau_{o,x} / f_z

  (on the sole's z axis at height ``d`` this is ``p_x = (-tau_y - f_x d) / f_z``,
  ``p_y = (tau_x - f_y d) / f_z``);
- eq. 3.26, N force sensors at ``p_j`` measuring ``f_j``:
  ``p_x = sum(p_jx f_jz - p_jz f_jx) / sum(f_jz)`` (and y alike); for one-axis
  FSRs on the sole this is ``p = sum(p_j f_j) / sum(f_j)``;
- eq. 3.27 (3.30/3.31), both feet: ``p = (p_R f_Rz + p_L f_Lz) / (f_Rz + f_Lz)`` in
  the world, with ``f_z`` the world-vertical force. :class:`ZmpEstimator` computes the
  exact ZMP of the total ground wrench instead (eq. 3.24/3.25 applied to the sum of
  the feet's wrenches in the world, on the plane at the feet's force-weighted
  height ``p_z``): ``p_x = (-T_y + p_z F_x) / F_z``, ``p_y = (T_x + p_z F_y) / F_z``.
  On level soles at one height the two are equal; on tilted or stepped soles the
  exact form keeps the horizontal forces' moments, which eq. 3.27 drops;
- eq. 3.73/3.74, from the momentum rates (the model ZMP; may leave the polygon):
  ``p_x = (M g x + p_z dP_x - dL_y) / (M g + dP_z)``,
  ``p_y = (M g y + p_z dP_y + dL_x) / (M g + dP_z)``, with ``L`` about the
  world origin and ``p_z`` the ground height.

Nothing here divides by a force below the contact threshold: a foot out of
contact has no ZMP (``None``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from math import isfinite

import numpy as np

from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.support import SupportPolygon, contact_frame_names, convex_hull, signed_distance
from humanoid_balance.exceptions import ConfigurationError, InvalidInputError

#: six-axis F/T sensors above the soles, or one-axis force sensors (FSRs) on them
SENSOR_TYPES = ("ft", "fsr")
SIDES = ("left", "right")
#: gravity [m/s^2] by name, for the ``gravity`` parameters of the nodes
GRAVITY = {"earth": 9.81, "moon": 9.81 / 6.0, "mars": 3.71}


# --- one foot ------------------------------------------------------------------


def wrench_in_sole(
    force_in_sensor: np.ndarray, torque_in_sensor: np.ndarray, sensor_in_sole: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Move a wrench from the sensor frame to the sole frame (torque about the sole origin).

    Args:
        force_in_sensor: force (3,) [N] in the sensor frame.
        torque_in_sensor: torque (3,) [N m] about the sensor origin, in the sensor frame.
        sensor_in_sole: homogeneous transform sole <- sensor (4 x 4).
    """
    rotation = sensor_in_sole[:3, :3]
    origin = sensor_in_sole[:3, 3]
    force = rotation @ force_in_sensor
    torque = rotation @ torque_in_sensor + np.cross(origin, force)
    return force, torque


def zmp_from_wrench(force_in_sole: np.ndarray, torque_in_sole: np.ndarray) -> np.ndarray:
    """ZMP (3,) on the sole surface (z = 0 of the sole frame) from a wrench about the sole origin.

    Seed 001, eq. 3.24/3.25. The caller checks the normal force against the contact threshold.

    Raises:
        InvalidInputError: the normal force is not positive.
    """
    fz = float(force_in_sole[2])
    if not fz > 0.0:
        raise InvalidInputError(f"normal force {fz} N: a ZMP needs a positive normal force")
    return np.array([-torque_in_sole[1] / fz, torque_in_sole[0] / fz, 0.0])


def zmp_from_ft_sensor(
    force_in_sensor: np.ndarray, torque_in_sensor: np.ndarray, sensor_in_sole: np.ndarray
) -> np.ndarray:
    """ZMP (3,) in the sole frame from a 6-axis sensor at any pose (eq. 3.24/3.25)."""
    force, torque = wrench_in_sole(force_in_sensor, torque_in_sensor, sensor_in_sole)
    return zmp_from_wrench(force, torque)


def zmp_from_force_sensors(positions: np.ndarray, forces: np.ndarray) -> np.ndarray:
    """ZMP (3,) on the plane z = 0 from N force sensors (eq. 3.26).

    Args:
        positions: (N, 3) sensor points, or (N, 2) points on the plane.
        forces: (N, 3) force vectors, or (N,) normal forces of one-axis sensors (FSRs).

    Raises:
        InvalidInputError: shapes differ or the total normal force is not positive.
    """
    pts = np.asarray(positions, dtype=float)
    f = np.asarray(forces, dtype=float)
    if pts.ndim != 2 or pts.shape[1] not in (2, 3) or len(pts) == 0:
        raise InvalidInputError(f"positions.shape={pts.shape}: expected (N, 2) or (N, 3)")
    if pts.shape[1] == 2:
        pts = np.column_stack([pts, np.zeros(len(pts))])
    if f.ndim == 1:
        f = np.column_stack([np.zeros((len(f), 2)), f])
    if f.shape != pts.shape:
        raise InvalidInputError(f"forces.shape={f.shape} does not match positions.shape={pts.shape}")
    total = float(f[:, 2].sum())
    if not total > 0.0:
        raise InvalidInputError(f"total normal force {total} N: a ZMP needs a positive total")
    px = float((pts[:, 0] * f[:, 2] - pts[:, 2] * f[:, 0]).sum()) / total
    py = float((pts[:, 1] * f[:, 2] - pts[:, 2] * f[:, 1]).sum()) / total
    return np.array([px, py, 0.0])


def combine_feet(zmps_in_world: Sequence[np.ndarray], normal_forces: Sequence[float]) -> np.ndarray:
    """ZMP of several feet in contact (eq. 3.27): the normal-force-weighted mean.

    Raises:
        InvalidInputError: no foot, or the total normal force is not positive.
    """
    if len(zmps_in_world) == 0 or len(zmps_in_world) != len(normal_forces):
        raise InvalidInputError(
            f"{len(zmps_in_world)} ZMPs for {len(normal_forces)} forces: need one per foot, >= 1")
    f = np.asarray(normal_forces, dtype=float)
    total = float(f.sum())
    if not total > 0.0:
        raise InvalidInputError(f"total normal force {total} N: a ZMP needs a positive total")
    return (np.asarray(zmps_in_world, dtype=float) * f[:, None]).sum(axis=0) / total


# --- support polygon (humanoid_balance.core.support) ------------------------------


def support_polygon(points_xy: np.ndarray) -> np.ndarray:
    """Convex hull (M, 2) of ground points, counter-clockwise (:func:`.support.convex_hull`).

    Raises:
        InvalidInputError: fewer than three points or all on a line.
    """
    return convex_hull(points_xy)


def stability_margin(point_xy: np.ndarray, polygon: np.ndarray) -> float:
    """Signed distance [m] from a point to the edge of a convex CCW polygon: positive inside
    (:func:`.support.signed_distance`)."""
    return signed_distance(point_xy, polygon)


# --- contact --------------------------------------------------------------------


class ContactDetector:
    """Contact of one foot from its normal force, with hysteresis.

    A foot comes into contact when its normal force reaches ``threshold`` [N]
    (a force exactly at the threshold counts as contact) and leaves it when the
    force falls below ``threshold - hysteresis``.
    """

    def __init__(self, threshold: float = 20.0, hysteresis: float = 5.0) -> None:
        if not np.isfinite(threshold) or threshold <= 0:
            raise ConfigurationError(f"contact threshold={threshold} N must be > 0")
        if not np.isfinite(hysteresis) or not 0 <= hysteresis < threshold:
            raise ConfigurationError(
                f"hysteresis={hysteresis} N must be >= 0 and below the threshold {threshold} N")
        self.threshold = threshold
        self.hysteresis = hysteresis
        self.in_contact = False

    def reset(self) -> None:
        """Out of contact."""
        self.in_contact = False

    def step(self, normal_force: float) -> bool:
        """Update with a normal force [N]; True while in contact."""
        if self.in_contact:
            self.in_contact = normal_force >= self.threshold - self.hysteresis
        else:
            self.in_contact = normal_force >= self.threshold
        return self.in_contact


# --- the estimator ---------------------------------------------------------------


@dataclass(frozen=True)
class FootGeometry:
    """What the estimator knows of one foot, all from the URDF.

    Attributes:
        sensor_in_sole: sole <- F/T sensor transform (4 x 4).
        contact_points: (K, 2) points where the foot touches the ground, in the sole frame
            [m]: the support polygon is the hull of those of the feet in contact
            (:mod:`humanoid_balance.core.support`; the seed humanoid's FSR pads).
        fsr_positions: (N, 2) FSR points in the sole frame [m] (may be empty).
        mass_below_sensor: mass of the foot between the sensor and the ground [kg].
        com_below_sensor_in_sensor: its centre of mass in the sensor frame [m].
    """

    sensor_in_sole: np.ndarray
    contact_points: np.ndarray
    fsr_positions: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    mass_below_sensor: float = 0.0
    com_below_sensor_in_sensor: np.ndarray = field(default_factory=lambda: np.zeros(3))


@dataclass
class FootSample:
    """One foot's reading: a wrench (sensor frame) or FSR forces, and the sole pose in the world."""

    sole_in_world: np.ndarray
    force_in_sensor: np.ndarray | None = None
    torque_in_sensor: np.ndarray | None = None
    fsr_forces: np.ndarray | None = None


@dataclass
class ZmpOutput:
    """The estimate at one sample.

    Attributes:
        zmp_in_world: two-foot ZMP (3,) or None when no foot is in contact.
        foot_zmps_in_world: per foot, its ZMP or None (not in contact).
        normal_forces: per foot, the ground's normal force [N] after foot-weight compensation.
        contacts: per foot, in contact or not.
        polygon: the support polygon (M, 2) of the feet in contact, or None.
        margin: signed stability margin [m] of the ZMP, or None.
    """

    zmp_in_world: np.ndarray | None
    foot_zmps_in_world: dict[str, np.ndarray | None]
    normal_forces: dict[str, float]
    contacts: dict[str, bool]
    polygon: np.ndarray | None
    margin: float | None


class ZmpEstimator:
    """ZMP, support polygon and stability margin from the two feet's sensors.

    Args:
        feet: geometry of each foot by side (``left``, ``right``).
        sensor_type: ``ft`` (6-axis sensors) or ``fsr`` (one-axis force sensors).
        contact_threshold: normal force [N] at which a foot is in contact.
        hysteresis: [N] below the threshold before a foot leaves contact.
        gravity: g [m/s^2], to compensate the foot weight below an F/T sensor.
    """

    def __init__(
        self,
        feet: Mapping[str, FootGeometry],
        *,
        sensor_type: str = "ft",
        contact_threshold: float = 20.0,
        hysteresis: float = 5.0,
        gravity: float = 9.81,
    ) -> None:
        if sensor_type not in SENSOR_TYPES:
            raise ConfigurationError(f"sensor_type={sensor_type!r}: expected one of {SENSOR_TYPES}")
        if not feet:
            raise ConfigurationError("no foot given")
        if sensor_type == "fsr":
            for side, foot in feet.items():
                if len(foot.fsr_positions) == 0:
                    raise ConfigurationError(f"sensor_type='fsr' but foot {side!r} has no FSR positions")
        if not np.isfinite(gravity) or gravity < 0:
            raise ConfigurationError(f"gravity={gravity} must be finite and >= 0 m/s^2")
        self.feet = dict(feet)
        self.sensor_type = sensor_type
        self.gravity = gravity
        self.contacts = {side: ContactDetector(contact_threshold, hysteresis) for side in self.feet}
        self.offsets = {side: np.zeros(6) for side in self.feet}
        self.support = SupportPolygon({side: foot.contact_points for side, foot in self.feet.items()})
        self._pose_cache: dict[str, tuple[bytes, list[float], list[float]]] = {}
        self._sensor_rotation = {s: [float(v) for v in f.sensor_in_sole[:3, :3].reshape(9)]
                                 for s, f in self.feet.items()}
        self._sensor_origin = {s: tuple(float(v) for v in f.sensor_in_sole[:3, 3])
                               for s, f in self.feet.items()}

    def reset(self) -> None:
        """Forget the contact states (offsets are kept)."""
        for detector in self.contacts.values():
            detector.reset()

    # --- F/T offsets --------------------------------------------------------------

    def foot_weight_wrench(self, side: str, sensor_in_world_rotation: np.ndarray) -> np.ndarray:
        """Wrench (6,) the unloaded foot's weight puts on its sensor, in the sensor frame."""
        foot = self.feet[side]
        # R^T (0, 0, -m g) is -m g times R's last row; the cross product by hand (np.cross: ~10 us)
        wx, wy, wz = (-foot.mass_below_sensor * self.gravity * sensor_in_world_rotation[2]).tolist()
        cx, cy, cz = foot.com_below_sensor_in_sensor.tolist()
        return np.array([wx, wy, wz, cy * wz - cz * wy, cz * wx - cx * wz, cx * wy - cy * wx])

    def zero(self, side: str, force: np.ndarray, torque: np.ndarray, sole_in_world: np.ndarray,
             max_load: float = 10.0) -> np.ndarray:
        """Take the sensor offsets of an unloaded foot: the reading less the foot's own weight.

        Args:
            max_load: [N] the most the reading's normal force may differ from the foot weight.

        Raises:
            InvalidInputError: the foot carries load (it must be lifted to zero its sensor).
        """
        rotation = (sole_in_world @ self.feet[side].sensor_in_sole)[:3, :3]
        expected = self.foot_weight_wrench(side, rotation)
        measured = np.concatenate([force, torque])
        if not np.all(np.isfinite(measured)):
            raise InvalidInputError(f"{side} foot: the wrench is not finite, cannot zero")
        offset = measured - expected
        world_load = float((rotation @ offset[:3])[2])
        if abs(world_load) > max_load:
            raise InvalidInputError(
                f"{side} foot carries {world_load:.1f} N beyond its own weight (limit {max_load} N): "
                "lift the foot before zeroing its sensor")
        self.offsets[side] = offset
        return offset.copy()

    # --- the estimate ----------------------------------------------------------------

    def _foot_ground_wrench(self, side: str, sample: FootSample) -> tuple[np.ndarray, np.ndarray]:
        """Ground reaction about the sole origin, in the sole frame, foot weight removed.

        The reference form of what :meth:`step` computes with scalars (tests compare them).
        """
        foot = self.feet[side]
        assert sample.force_in_sensor is not None and sample.torque_in_sensor is not None
        measured = np.concatenate([sample.force_in_sensor, sample.torque_in_sensor]) - self.offsets[side]
        rotation = (sample.sole_in_world @ foot.sensor_in_sole)[:3, :3]
        ground = measured - self.foot_weight_wrench(side, rotation)
        return wrench_in_sole(ground[:3], ground[3:], foot.sensor_in_sole)

    def _pose_terms(self, side: str, pose: np.ndarray) -> tuple[list[float], list[float]]:
        """(foot-weight wrench in the sensor frame, sole -> world terms) for a sole pose, cached.

        The terms: rows of the sole's rotation with the translation after each row,
        ``[R00, R01, t0, R10, R11, t1, R20, R21, t2, R02, R12, R22]``.

        The weight wrench depends on the sensor's orientation only; both change when
        the legs move, so they are recomputed (and the pose checked) only when the
        pose's bytes change.

        Raises:
            InvalidInputError: a new pose is not finite.
        """
        key = pose.tobytes()
        cached = self._pose_cache.get(side)
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
        if not np.isfinite(pose).all():
            raise InvalidInputError(f"{side} foot: sole_in_world must be a finite 4 x 4 transform")
        rotation = (pose @ self.feet[side].sensor_in_sole)[:3, :3]
        weight = self.foot_weight_wrench(side, rotation).tolist()
        to_world = [pose[0, 0], pose[0, 1], pose[0, 3], pose[1, 0], pose[1, 1], pose[1, 3],
                    pose[2, 0], pose[2, 1], pose[2, 3], pose[0, 2], pose[1, 2], pose[2, 2]]
        self._pose_cache[side] = (key, weight, [float(v) for v in to_world])
        return weight, self._pose_cache[side][2]

    def _ft_foot(self, side: str, sample: FootSample,
                 weight: list[float]) -> tuple[float, float, float, float, float, float]:
        """Ground wrench of one F/T foot in the sole frame, torque about the sole origin.

        Eq. 3.24/3.25 written out with Python floats: numpy's per-call cost on
        3-vectors (about 1 us a call) would put the two-foot sample far above the
        20 us budget of the 1 kHz estimator; :meth:`_foot_ground_wrench` is the
        same computation with arrays, and the tests hold the two equal.
        """
        if sample.force_in_sensor is None or sample.torque_in_sensor is None:
            raise InvalidInputError(f"{side} foot: an F/T estimator needs force and torque")
        fx, fy, fz = np.asarray(sample.force_in_sensor, dtype=float).reshape(3).tolist()
        tx, ty, tz = np.asarray(sample.torque_in_sensor, dtype=float).reshape(3).tolist()
        if not (isfinite(fx) and isfinite(fy) and isfinite(fz) and isfinite(tx) and isfinite(ty)
                and isfinite(tz)):
            raise InvalidInputError(f"{side} foot: the wrench is not finite")
        o = self.offsets[side].tolist()
        fx -= o[0] + weight[0]
        fy -= o[1] + weight[1]
        fz -= o[2] + weight[2]
        tx -= o[3] + weight[3]
        ty -= o[4] + weight[4]
        tz -= o[5] + weight[5]
        r, (px, py, pz) = self._sensor_rotation[side], self._sensor_origin[side]
        sfx = r[0] * fx + r[1] * fy + r[2] * fz
        sfy = r[3] * fx + r[4] * fy + r[5] * fz
        sfz = r[6] * fx + r[7] * fy + r[8] * fz
        stx = r[0] * tx + r[1] * ty + r[2] * tz + py * sfz - pz * sfy
        sty = r[3] * tx + r[4] * ty + r[5] * tz + pz * sfx - px * sfz
        stz = r[6] * tx + r[7] * ty + r[8] * tz + px * sfy - py * sfx
        return sfx, sfy, sfz, stx, sty, stz

    def step(self, samples: Mapping[str, FootSample]) -> ZmpOutput:
        """The ZMP of one sample of both feet.

        Raises:
            InvalidInputError: a foot is missing, an input is not finite or has a wrong shape,
                or its values are so large that the ZMP overflows (no finite ZMP or margin).
        """
        zmps: dict[str, np.ndarray | None] = {}
        forces: dict[str, float] = {}
        contacts: dict[str, bool] = {}
        # the total ground wrench in the world (torque about the origin), and the feet's
        # ZMP heights weighted by their world-vertical force
        fx_w = fy_w = fz_w = tx_w = ty_w = 0.0
        sum_z = 0.0
        touching: list[str] = []
        poses: dict[str, np.ndarray] = {}
        for side in self.feet:
            if side not in samples:
                raise InvalidInputError(f"no sample for the {side} foot")
            sample = samples[side]
            pose = np.asarray(sample.sole_in_world, dtype=float)
            if pose.shape != (4, 4):
                raise InvalidInputError(f"{side} foot: sole_in_world must be a finite 4 x 4 transform")
            weight, w = self._pose_terms(side, pose)
            poses[side] = pose
            if self.sensor_type == "ft":
                sfx, sfy, normal, stx, sty, stz = self._ft_foot(side, sample, weight)
                lx = ly = float("nan")
                if normal > 0.0:  # eq. 3.24/3.25 on the sole
                    lx, ly = -sty / normal, stx / normal
            else:
                fsr = np.asarray(sample.fsr_forces if sample.fsr_forces is not None else [], dtype=float)
                positions = self.feet[side].fsr_positions
                if fsr.shape != (len(positions),):
                    raise InvalidInputError(
                        f"{side} foot: {fsr.size} FSR forces for {len(positions)} FSR positions")
                if not np.isfinite(fsr).all():
                    raise InvalidInputError(f"{side} foot: an FSR force is not finite")
                normal = float(fsr.sum())
                lx = ly = float("nan")
                sfx = sfy = stz = 0.0  # one-axis sensors: normal forces only
                stx = sty = 0.0
                if normal > 0.0:  # eq. 3.26 for one-axis sensors on the sole
                    lx, ly = (fsr @ positions / normal).tolist()
                    stx, sty = ly * normal, -lx * normal
            if not (isfinite(normal) and isfinite(sfx) and isfinite(sfy) and isfinite(stx)
                    and isfinite(sty) and isfinite(stz)):
                raise InvalidInputError(
                    f"{side} foot: the {'wrench' if self.sensor_type == 'ft' else 'FSR forces'} "
                    "overflow(s) in the sole frame (values beyond any sensor's range)")
            in_contact = self.contacts[side].step(normal)
            forces[side] = normal
            contacts[side] = in_contact
            if not in_contact:
                zmps[side] = None
                continue
            x = w[0] * lx + w[1] * ly + w[2]
            y = w[3] * lx + w[4] * ly + w[5]
            z = w[6] * lx + w[7] * ly + w[8]
            zmps[side] = np.array([x, y, z])
            touching.append(side)
            # the foot's wrench in the world: f = R f_s, tau_O = R tau_s + t x f
            r00, r01, t0, r10, r11, t1, r20, r21, t2, r02, r12, r22 = w
            fwx = r00 * sfx + r01 * sfy + r02 * normal
            fwy = r10 * sfx + r11 * sfy + r12 * normal
            fwz = r20 * sfx + r21 * sfy + r22 * normal
            fx_w += fwx
            fy_w += fwy
            fz_w += fwz
            tx_w += r00 * stx + r01 * sty + r02 * stz + t1 * fwz - t2 * fwy
            ty_w += r10 * stx + r11 * sty + r12 * stz + t2 * fwx - t0 * fwz
            sum_z += fwz * z
        if not touching:
            return ZmpOutput(None, zmps, forces, contacts, None, None)
        # each foot's wrench is finite, but their sum may not be (two 1.5e308 N forces): then
        # the divisions below give finite zeros (x / inf), a ZMP at the origin that looks valid
        if not all(isfinite(v) for v in (fx_w, fy_w, fz_w, tx_w, ty_w, sum_z)):
            raise InvalidInputError(
                "the feet's wrenches overflow in their sum (values beyond any sensor's range)")
        polygon = self.support.update(poses, touching)
        if not fz_w > 0.0:  # soles so steep that the ground pulls down: no ZMP on a plane
            return ZmpOutput(None, zmps, forces, contacts, polygon, None)
        pz = sum_z / fz_w
        zmp = np.array([(-ty_w + pz * fx_w) / fz_w, (tx_w + pz * fy_w) / fz_w, pz])
        if not (np.isfinite(zmp).all() and all(
                p is None or np.isfinite(p).all() for p in zmps.values())):
            raise InvalidInputError(
                f"the ZMP of the feet's wrenches overflows ({zmp.tolist()}): values beyond any "
                "sensor's range")
        return ZmpOutput(zmp, zmps, forces, contacts, polygon, self.support.margin(zmp))

    def set_contact_threshold(self, threshold: float, hysteresis: float) -> None:
        """New contact threshold and hysteresis [N] from the next sample on; contact states kept.

        Raises:
            ConfigurationError: as :class:`ContactDetector`.
        """
        for side, detector in self.contacts.items():
            fresh = ContactDetector(threshold, hysteresis)
            fresh.in_contact = detector.in_contact
            self.contacts[side] = fresh


def foot_geometry_from_model(
    model: RobotModel,
    *,
    sensor_frame: str,
    sole_frame: str,
    foot_link: str,
    contact_frames: Sequence[str] | None = None,
    fsr_frames: Sequence[str] | None = None,
    sole_corners: np.ndarray | None = None,
    fsr_positions: np.ndarray | None = None,
) -> FootGeometry:
    """A foot's geometry from the robot model at its neutral configuration.

    The contact points and FSR points come from the URDF's frames (``contact_frames``,
    ``fsr_frames``, read in the sole frame by
    :meth:`~humanoid_balance.core.support.SupportPolygon.from_model`); tests may give
    them as arrays instead (``sole_corners``, ``fsr_positions``).

    Args:
        model: the robot model (the sensor, sole and foot link are rigidly attached).
        sensor_frame: the F/T sensor frame.
        sole_frame: the sole frame (origin on the sole surface, z up).
        foot_link: the link between the sensor and the ground, whose weight the sensor carries.
        contact_frames: the frames where the foot touches the ground (default ``fsr_frames``).
        fsr_frames: the FSR frames, in the order of the FSR array.
        sole_corners: (K, 2) contact points in the sole frame [m], instead of ``contact_frames``.
        fsr_positions: (N, 2) FSR points in the sole frame [m], instead of ``fsr_frames``.

    Raises:
        ConfigurationError: no contact points given, or a frame off its sole.
        UnknownFrameError: a frame is not in the model.
    """

    def in_sole(frames: Sequence[str]) -> np.ndarray:
        polygon = SupportPolygon.from_model(model, contact_frames={"foot": frames},
                                            sole_frames={"foot": sole_frame})
        return polygon.points_in_sole["foot"]

    q = model.neutral()
    sole = model.frame_transform(sole_frame, q)
    sensor = model.frame_transform(sensor_frame, q)
    link = model.frame_transform(foot_link, q)
    mass, com_in_link = model.link_inertial(foot_link)
    com_in_sensor = (np.linalg.inv(sensor) @ link @ np.append(com_in_link, 1.0))[:3]
    if fsr_positions is not None:
        fsr = np.asarray(fsr_positions, float).reshape(-1, 2)
    else:
        fsr = in_sole(fsr_frames) if fsr_frames else np.zeros((0, 2))
    if sole_corners is not None:
        contact = np.asarray(sole_corners, dtype=float).reshape(-1, 2)
    elif contact_frames or fsr_frames:
        contact = in_sole(contact_frames or fsr_frames or ())
    else:
        raise ConfigurationError(f"{sole_frame}: no contact frames (nor points) for the support polygon")
    return FootGeometry(
        sensor_in_sole=np.linalg.inv(sole) @ sensor,
        contact_points=contact,
        fsr_positions=fsr,
        mass_below_sensor=mass,
        com_below_sensor_in_sensor=com_in_sensor,
    )


def humanoid_zmp_estimator(model: RobotModel, sensor_type: str = "ft", **kwargs: float) -> ZmpEstimator:
    """The estimator of the seed humanoid (frames ``{side}_foot_ft``, ``{side}_sole``, ``{side}_foot``).

    The support polygon and the FSR points are the FSR pads ``{side}_fsr_{0..3}`` of the
    URDF (:mod:`humanoid_balance.core.support`). ``kwargs`` go to :class:`ZmpEstimator`
    (``contact_threshold``, ``hysteresis``, ``gravity``).
    """
    feet = {side: foot_geometry_from_model(
        model, sensor_frame=f"{side}_foot_ft", sole_frame=f"{side}_sole", foot_link=f"{side}_foot",
        fsr_frames=contact_frame_names(side)) for side in SIDES}
    return ZmpEstimator(feet, sensor_type=sensor_type, **kwargs)
