"""Zero-moment point (ZMP) from foot sensors (seed 001: Kajita, ch. 3).

Conventions: a foot wrench is the one the foot exerts on the leg through the
sensor, expressed in the sensor frame, with the torque about the sensor origin
(standing gives ``fz > 0``): the ground reaction as the sensor sees it. Sole
frames have their origin on the sole surface, z up. All lengths in [m], forces
in [N], torques in [N m].

Where each of seed 001's equations runs (what :meth:`ZmpEstimator.step` calls):

- eq. 3.24/3.25, a six-axis sensor at any pose above the sole:
  :meth:`humanoid_balance.core.foot_sensors.FtSensors.ground_wrench`;
- eq. 3.26, force sensors on the sole (FSRs):
  :meth:`humanoid_balance.core.foot_sensors.FsrSensors.ground_wrench`;
- eq. 3.27 (3.30/3.31), both feet: :func:`zmp_of_total_wrench`, which computes the
  exact ZMP of the feet's total ground wrench instead of the force-weighted mean of
  the feet's ZMPs (equal on level soles at one height);
- eq. 3.73/3.74, the model ZMP from the momentum rates (it may leave the polygon):
  :func:`humanoid_balance.core.rmc.indicators.balance_indicators`, which the arm balance runs.

The support polygon and the margin are :mod:`humanoid_balance.core.support`'s.
Nothing here divides by a force below the contact threshold: a foot out of
contact has no ZMP (``None``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import isfinite

import numpy as np

from humanoid_balance.core.foot_layout import FootLayout
from humanoid_balance.core.foot_sensors import (
    SENSOR_TYPES,
    FootGeometry,
    FootSample,
    FootSensors,
    FootWrench,
    FrameResolver,
    make_foot_sensors,
    wrench_in_sole,
)
from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.support import SupportPolygon
from humanoid_balance.exceptions import ConfigurationError, InvalidInputError, UnknownFrameError

__all__ = ["SENSOR_TYPES", "ContactDetector", "FootGeometry", "FootSample", "ZmpEstimator",
           "ZmpOutput", "foot_geometry_from_model", "frame_in_sensor_resolver",
           "humanoid_zmp_estimator", "wrench_in_sole", "zmp_of_total_wrench"]


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


# --- both feet --------------------------------------------------------------------


def zmp_of_total_wrench(fx: float, fy: float, fz: float, tx: float, ty: float,
                        pz: float) -> tuple[float, float]:
    """Seed 001, eq. 3.27 (3.30/3.31) done exactly: the ZMP of the feet's total ground wrench.

    Eq. 3.27 takes the feet's ZMPs ``p_R``, ``p_L`` weighted by their normal forces,
    ``p = (p_R f_Rz + p_L f_Lz) / (f_Rz + f_Lz)``. Here eq. 3.24/3.25 is applied to the
    sum of the feet's wrenches in the world, ``F`` and ``T`` (torque about the world
    origin), on the plane ``z = p_z`` at the feet's ZMP heights weighted by their
    world-vertical forces:

    .. math:: p_x = \\frac{-T_y + p_z F_x}{F_z}, \\qquad p_y = \\frac{T_x + p_z F_y}{F_z}

    On level soles at one height the two are equal; on tilted or stepped soles this
    form keeps the horizontal forces' moments, which eq. 3.27 drops.

    Args:
        fx, fy, fz: the total ground force in the world [N] (``fz > 0``).
        tx, ty: its torque about the world origin [N m].
        pz: the plane's height [m].
    """
    return (-ty + pz * fx) / fz, (tx + pz * fy) / fz


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
        sensor_type: ``ft`` (6-axis sensors) or ``fsr`` (one-axis force sensors); the
            implementation is :mod:`humanoid_balance.core.foot_sensors`'.
        contact_threshold: normal force [N] at which a foot is in contact.
        hysteresis: [N] below the threshold before a foot leaves contact.
        gravity: g [m/s^2], to compensate the foot weight below an F/T sensor.
        sensors: the feet's sensors, instead of those ``sensor_type`` makes of ``feet``.

    Raises:
        ConfigurationError: an unknown sensor type, no foot, FSR mode without FSR
            positions, gravity not finite and >= 0, or a bad contact threshold.
    """

    def __init__(
        self,
        feet: Mapping[str, FootGeometry],
        *,
        sensor_type: str = "ft",
        contact_threshold: float = 20.0,
        hysteresis: float = 5.0,
        gravity: float = 9.81,
        sensors: FootSensors | None = None,
    ) -> None:
        self.sensors = sensors if sensors is not None else make_foot_sensors(sensor_type, feet, gravity)
        self.feet = dict(self.sensors.feet)
        self.contacts = {side: ContactDetector(contact_threshold, hysteresis) for side in self.feet}
        #: per foot, the F/T offsets (6,) (the sensors' own, set by :meth:`zero`)
        self.offsets = self.sensors.offsets
        self.support = SupportPolygon({side: foot.contact_points for side, foot in self.feet.items()})
        self._pose_cache: dict[str, tuple[bytes, list[float], list[float]]] = {}

    def reset(self) -> None:
        """Forget the contact states (offsets are kept)."""
        for detector in self.contacts.values():
            detector.reset()

    def foot_weight_wrench(self, side: str, sensor_rotation_in_world: np.ndarray) -> np.ndarray:
        """Wrench (6,) the unloaded foot puts on its sensor, in the sensor frame (zeros below FSRs)."""
        return np.array(self.sensors.weight_terms(side, sensor_rotation_in_world))

    def zero(self, side: str, force: np.ndarray, torque: np.ndarray, sole_in_world: np.ndarray,
             max_load: float = 10.0) -> np.ndarray:
        """Take the sensor offsets of an unloaded foot (:meth:`FtSensors.zero`).

        Raises:
            InvalidInputError: the foot carries load, or the sensors are not zeroed (FSRs).
        """
        return self.sensors.zero(side, force, torque, sole_in_world, max_load)

    def set_contact_threshold(self, threshold: float, hysteresis: float) -> None:
        """New contact threshold and hysteresis [N] from the next sample on; contact states kept.

        Raises:
            ConfigurationError: as :class:`ContactDetector`.
        """
        for side, detector in self.contacts.items():
            fresh = ContactDetector(threshold, hysteresis)
            fresh.in_contact = detector.in_contact
            self.contacts[side] = fresh

    def _pose_terms(self, side: str, pose: np.ndarray) -> tuple[list[float], list[float]]:
        """(foot-weight wrench in the sensor frame, sole -> world terms) for a sole pose, cached.

        The terms: rows of the sole's rotation with the translation after each row,
        ``[R00, R01, t0, R10, R11, t1, R20, R21, t2, R02, R12, R22]``. Both change when the
        legs move only, so they are recomputed (and the pose checked) when the pose's bytes
        change.

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
        weight = self.sensors.weight_terms(side, rotation)
        to_world = [pose[0, 0], pose[0, 1], pose[0, 3], pose[1, 0], pose[1, 1], pose[1, 3],
                    pose[2, 0], pose[2, 1], pose[2, 3], pose[0, 2], pose[1, 2], pose[2, 2]]
        self._pose_cache[side] = (key, weight, [float(v) for v in to_world])
        return weight, self._pose_cache[side][2]

    def _foot(self, side: str, samples: Mapping[str, FootSample]) -> tuple[
            FootWrench, list[float], np.ndarray]:
        """One foot's ground wrench and ZMP in its sole frame, its sole -> world terms and pose.

        Raises:
            InvalidInputError: the foot's sample is missing, has a bad pose, or overflows.
        """
        if side not in samples:
            raise InvalidInputError(f"no sample for the {side} foot")
        sample = samples[side]
        pose = np.asarray(sample.sole_in_world, dtype=float)
        if pose.shape != (4, 4):
            raise InvalidInputError(f"{side} foot: sole_in_world must be a finite 4 x 4 transform")
        weight, w = self._pose_terms(side, pose)
        wrench = self.sensors.ground_wrench(side, sample, weight)
        sfx, sfy, normal, stx, sty, stz = wrench[:6]
        if not (isfinite(normal) and isfinite(sfx) and isfinite(sfy) and isfinite(stx)
                and isfinite(sty) and isfinite(stz)):
            raise InvalidInputError(
                f"{side} foot: the {self.sensors.reading_name} overflow(s) in the sole frame "
                "(values beyond any sensor's range)")
        return wrench, w, pose

    def step(self, samples: Mapping[str, FootSample]) -> ZmpOutput:
        """The ZMP of one sample of both feet: each foot's (eq. 3.24-3.26, by its sensors)
        and the two feet's (:func:`zmp_of_total_wrench`), the polygon and the margin.

        Raises:
            InvalidInputError: a foot is missing, an input is not finite or has a wrong shape,
                or its values are so large that the ZMP overflows (no finite ZMP or margin).
        """
        zmps: dict[str, np.ndarray | None] = {}
        forces: dict[str, float] = {}
        contacts: dict[str, bool] = {}
        poses: dict[str, np.ndarray] = {}
        # the total ground wrench in the world (torque about the origin), and the feet's
        # ZMP heights weighted by their world-vertical force
        fx_w = fy_w = fz_w = tx_w = ty_w = sum_z = 0.0
        touching: list[str] = []
        for side in self.feet:
            (sfx, sfy, normal, stx, sty, stz, lx, ly), w, poses[side] = self._foot(side, samples)
            forces[side] = normal
            contacts[side] = in_contact = self.contacts[side].step(normal)
            if not in_contact:
                zmps[side] = None
                continue
            r00, r01, t0, r10, r11, t1, r20, r21, t2, r02, r12, r22 = w
            x, y, z = r00 * lx + r01 * ly + t0, r10 * lx + r11 * ly + t1, r20 * lx + r21 * ly + t2
            if not (isfinite(x) and isfinite(y) and isfinite(z)):
                raise InvalidInputError(f"the {side} foot's ZMP overflows ({x}, {y}, {z}): values "
                                        "beyond any sensor's range")
            zmps[side] = np.array((x, y, z))
            touching.append(side)
            # the foot's wrench in the world: f = R f_s, tau_O = R tau_s + t x f
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
        if not (isfinite(fx_w) and isfinite(fy_w) and isfinite(fz_w) and isfinite(tx_w)
                and isfinite(ty_w) and isfinite(sum_z)):
            raise InvalidInputError(
                "the feet's wrenches overflow in their sum (values beyond any sensor's range)")
        polygon = self.support.update(poses, touching)
        if not fz_w > 0.0:  # soles so steep that the ground pulls down: no ZMP on a plane
            return ZmpOutput(None, zmps, forces, contacts, polygon, None)
        pz = sum_z / fz_w
        px, py = zmp_of_total_wrench(fx_w, fy_w, fz_w, tx_w, ty_w, pz)
        # on the floats (numpy's isfinite on the arrays cost a quarter of the sample)
        if not (isfinite(px) and isfinite(py) and isfinite(pz)):
            raise InvalidInputError(
                f"the ZMP of the feet's wrenches overflows ({[px, py, pz]}): values beyond any "
                "sensor's range")
        zmp = np.array((px, py, pz))
        return ZmpOutput(zmp, zmps, forces, contacts, polygon, self.support.margin((px, py)))


# --- from the URDF ------------------------------------------------------------------


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


def frame_in_sensor_resolver(model: RobotModel, sensor_frames: Mapping[str, str]) -> FrameResolver:
    """sensor <- frame (4 x 4) of a frame rigidly attached to a foot's sensor, for
    :class:`~humanoid_balance.core.foot_sensors.FtSensors` (wrenches stamped in another
    frame of the foot).

    The resolver raises UnknownFrameError for a frame the model lacks and
    InvalidInputError for one on another link, saying which frame to publish in.
    """
    pin_model = model.model

    def resolve(side: str, frame: str) -> np.ndarray:
        sensor = sensor_frames[side]
        if not pin_model.existFrame(frame):
            raise UnknownFrameError(frame, model.name)
        if pin_model.frames[pin_model.getFrameId(frame)].parentJoint != \
                pin_model.frames[pin_model.getFrameId(sensor)].parentJoint:
            raise InvalidInputError(
                f"{side} foot wrench in frame {frame!r}, which is not attached to the foot of "
                f"sensor {sensor!r}: publish it in {sensor!r}")
        q = model.neutral()
        return np.linalg.inv(model.frame_transform(sensor, q)) @ model.frame_transform(frame, q)

    return resolve


def humanoid_zmp_estimator(model: RobotModel, sensor_type: str = "ft", *,
                           contact_threshold: float = 20.0, hysteresis: float = 5.0,
                           gravity: float = 9.81) -> ZmpEstimator:
    """The estimator of the seed humanoid (frames ``{side}_foot_ft``, ``{side}_sole``, ``{side}_foot``).

    The support polygon and the FSR points are the FSR pads ``{side}_fsr_{0..3}`` of the
    URDF (:meth:`FootLayout.seed`); the tunables are :class:`ZmpEstimator`'s.
    """
    layout = FootLayout.seed()
    feet = {side: foot_geometry_from_model(
        model, sensor_frame=f"{side}_foot_ft", sole_frame=layout.sole_frames[side],
        foot_link=f"{side}_foot", contact_frames=layout.contact_frames[side],
        fsr_frames=layout.fsr_frames[side]) for side in layout.sides}
    return ZmpEstimator(feet, sensor_type=sensor_type, contact_threshold=contact_threshold,
                        hysteresis=hysteresis, gravity=gravity)
