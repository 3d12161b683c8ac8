"""The feet's sensors, one class per kind: six-axis F/T sensors above the soles, or FSRs on them.

A sensor kind is an implementation of :class:`FootSensors`, picked once
(:func:`make_foot_sensors`, ``sensor_type`` ``ft`` or ``fsr``), that knows for the two
feet how a reading is

* **parsed** (:meth:`~FootSensors.parse`): checked (finite, size, frame, stamp) and
  turned into the payload the estimator takes;
* **joined** with the other foot's (:meth:`~FootSensors.make_joiner`): F/T wrenches by
  stamp (:class:`~humanoid_balance.core.sync.SampleSynchronizer`), FSR arrays, which
  have no header, in arrival order (:class:`~humanoid_balance.core.sync.ArrivalPairer`);
* **zeroed** (:meth:`~FootSensors.zero`): an F/T sensor's offsets, with the foot's own
  weight kept; FSRs are not zeroed here;
* **sampled** (:meth:`~FootSensors.ground_wrench`): the foot's ground reaction in the
  sole frame and its ZMP on the sole, seed 001's eq. 3.24/3.25 (F/T) and eq. 3.26 (FSR).

Conventions (seed 001, Kajita ch. 3): a foot wrench is the one the foot exerts on the
leg through the sensor, in the sensor frame, torque about the sensor origin (standing
gives ``fz > 0``): the ground reaction as the sensor sees it. Sole frames have their
origin on the sole surface, z up. [m], [N], [N m].
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from math import isfinite
from typing import Any, ClassVar, NamedTuple

import numpy as np

from humanoid_balance.core.freshness import stamp_problem
from humanoid_balance.core.sync import ArrivalPairer, Joiner, SampleSynchronizer
from humanoid_balance.exceptions import ConfigurationError, HumanoidBalanceError, InvalidInputError

__all__ = ["SENSOR_TYPES", "FootGeometry", "FootSample", "FootSensors", "FootWrench", "FsrReading",
           "FsrSensors", "FtSensors", "SampleRefusedError", "WrenchReading", "make_foot_sensors",
           "wrench_in_sole"]

#: diagnostic levels of a refusal (diagnostic_msgs/DiagnosticStatus values)
WARN, ERROR = 1, 2

#: (fx, fy, fz, tx, ty, tz, px, py): a foot's ground wrench in the sole frame (torque about
#: the sole origin) and its ZMP on the sole (NaN without a positive normal force)
FootWrench = tuple[float, float, float, float, float, float, float, float]
#: sensor <- frame (4 x 4) for (side, frame): a frame rigidly attached to that foot's sensor
FrameResolver = Callable[[str, str], np.ndarray]


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


def _three_floats(vector: Any) -> list[float]:
    """A 3-vector as Python floats (a float64 (3,) array's own ``tolist``: a third of the cost
    of ``np.asarray(...).reshape(3).tolist()`` at 1 kHz per foot)."""
    if type(vector) is np.ndarray and vector.shape == (3,) and vector.dtype == np.float64:
        return vector.tolist()  # type: ignore[no-any-return]
    return np.asarray(vector, dtype=float).reshape(3).tolist()  # type: ignore[no-any-return]


@dataclass
class FootSample:
    """One foot's reading: a wrench (sensor frame) or FSR forces, and the sole pose in the world."""

    sole_in_world: np.ndarray
    force_in_sensor: np.ndarray | None = None
    torque_in_sensor: np.ndarray | None = None
    fsr_forces: np.ndarray | None = None


class WrenchReading(NamedTuple):
    """An F/T message as read: its stamp [ns], frame (empty: the sensor's) and
    ``(fx, fy, fz, tx, ty, tz)`` [N, N m]. (Named tuples: made per message at 1 kHz.)"""

    stamp_ns: int
    frame: str
    values: Sequence[float]


class FsrReading(NamedTuple):
    """An FSR array as read: one normal force per FSR [N], in the order of the FSR frames.
    It has no header: it is stamped on arrival."""

    forces: np.ndarray


class SampleRefusedError(InvalidInputError):
    """A foot reading refused by :meth:`FootSensors.parse`.

    Attributes:
        counter: the drop counter it goes to (``dropped_nonfinite``, ...).
        level: the diagnostic level it reports (WARN, or ERROR for a wrong frame).
        count_in_reason: the reason ends with how many so far (the caller counts).
    """

    def __init__(self, counter: str, reason: str, level: int = WARN,
                 count_in_reason: bool = False) -> None:
        super().__init__(reason)
        self.counter, self.reason, self.level = counter, reason, level
        self.count_in_reason = count_in_reason


def wrench_in_sole(
    force_in_sensor: np.ndarray, torque_in_sensor: np.ndarray, sensor_in_sole: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Move a wrench to another frame of the same body (torque about the new origin).

    .. math:: f_o = R f_s, \\qquad \\tau_o = R \\tau_s + p_s \\times f_o

    Args:
        force_in_sensor: force (3,) [N] in the sensor frame.
        torque_in_sensor: torque (3,) [N m] about the sensor origin, in the sensor frame.
        sensor_in_sole: homogeneous transform target <- sensor (4 x 4), ``(R, p_s)``.
    """
    rotation = sensor_in_sole[:3, :3]
    origin = sensor_in_sole[:3, 3]
    force = rotation @ force_in_sensor
    torque = rotation @ torque_in_sensor + np.cross(origin, force)
    return force, torque


class FootSensors(ABC):
    """The two feet's sensors of one kind (see the module).

    Args:
        feet: geometry of each foot by side.
        gravity: g [m/s^2], for the weight of a foot below its sensor.

    Raises:
        ConfigurationError: no foot, or gravity not finite and >= 0.
    """

    #: the ``sensor_type`` parameter's value of this kind
    kind: ClassVar[str]
    #: what one reading is, in messages
    reading_name: ClassVar[str]

    def __init__(self, feet: Mapping[str, FootGeometry], gravity: float = 9.81) -> None:
        if not feet:
            raise ConfigurationError("no foot given")
        if not np.isfinite(gravity) or gravity < 0:
            raise ConfigurationError(f"gravity={gravity} must be finite and >= 0 m/s^2")
        self.feet = dict(feet)
        self.gravity = gravity
        #: per foot, the wrench offsets (6,) taken by :meth:`zero` (zeros: none)
        self.offsets = {side: np.zeros(6) for side in self.feet}

    @classmethod
    def build(cls, feet: Mapping[str, FootGeometry], gravity: float, *,
              sensor_frames: Mapping[str, str] | None,
              frame_in_sensor: FrameResolver | None) -> FootSensors:
        """This kind for ``feet``, with the frames its readings may be stamped in."""
        return cls(feet, gravity)

    @abstractmethod
    def parse(self, side: str, reading: WrenchReading | FsrReading, now_ns: int,
              ahead_s: float, ahead_name: str = "future_tolerance") -> tuple[int, np.ndarray]:
        """(stamp [ns], payload) of a reading received at ``now_ns`` [ns]; a stamp more than
        ``ahead_s`` [s] ahead of it (the parameters ``ahead_name``) is refused.

        Raises:
            SampleRefusedError: why it is dropped, with its counter.
        """

    @abstractmethod
    def make_joiner(self, tolerance_ns: int, max_age_ns: int) -> Joiner:
        """What joins the feet's payloads into samples of both feet."""

    @abstractmethod
    def unpaired_reason(self, count: int, tolerance_s: float, max_age_s: float) -> str:
        """Why ``count`` readings found no partner (for diagnostics)."""

    @abstractmethod
    def foot_sample(self, sole_in_world: np.ndarray, payload: np.ndarray) -> FootSample:
        """The estimator's sample of a foot from a parsed payload and the sole pose."""

    def weight_terms(self, side: str, sensor_rotation_in_world: np.ndarray) -> list[float]:
        """The wrench (6,) the unloaded foot puts on its sensor, in the sensor frame, for the
        sensor's orientation (none below an FSR)."""
        return [0.0] * 6

    @abstractmethod
    def ground_wrench(self, side: str, sample: FootSample, weight: list[float]) -> FootWrench:
        """The foot's ground wrench in the sole frame and its ZMP on the sole.

        Raises:
            InvalidInputError: the reading is missing, has a wrong size or is not finite.
        """

    def zero_problem(self) -> str | None:
        """Why this kind cannot be zeroed, or None."""
        return None

    @abstractmethod
    def zero(self, side: str, force: np.ndarray, torque: np.ndarray, sole_in_world: np.ndarray,
             max_load: float = 10.0) -> np.ndarray:
        """Take the offsets of an unloaded foot's sensor; the offset (6,).

        Raises:
            InvalidInputError: the foot carries load, the reading is not finite, or this
                kind is not zeroed.
        """


class FtSensors(FootSensors):
    """Six-axis force/torque sensors above the soles (the ankles').

    Args:
        feet: geometry of each foot by side.
        gravity: g [m/s^2], to compensate the foot's weight below each sensor.
        sensor_frames: side -> the sensor's URDF frame (a wrench stamped in it, or with an
            empty frame, is taken as it is).
        frame_in_sensor: sensor <- frame for a wrench stamped in another frame of the
            foot (cached per frame); None: such wrenches are refused.
    """

    kind = "ft"
    reading_name = "wrench"

    def __init__(self, feet: Mapping[str, FootGeometry], gravity: float = 9.81, *,
                 sensor_frames: Mapping[str, str] | None = None,
                 frame_in_sensor: FrameResolver | None = None) -> None:
        super().__init__(feet, gravity)
        self.sensor_frames = dict(sensor_frames or {})
        self._frame_in_sensor = frame_in_sensor
        self._moves: dict[tuple[str, str], np.ndarray] = {}
        self._what = {side: f"{side} foot: wrench" for side in self.feet}
        self._rotation = {s: [float(v) for v in f.sensor_in_sole[:3, :3].reshape(9)]
                          for s, f in self.feet.items()}
        self._origin = {s: tuple(float(v) for v in f.sensor_in_sole[:3, 3])
                        for s, f in self.feet.items()}

    @classmethod
    def build(cls, feet: Mapping[str, FootGeometry], gravity: float, *,
              sensor_frames: Mapping[str, str] | None,
              frame_in_sensor: FrameResolver | None) -> FootSensors:
        return cls(feet, gravity, sensor_frames=sensor_frames, frame_in_sensor=frame_in_sensor)

    def parse(self, side: str, reading: WrenchReading | FsrReading, now_ns: int,
              ahead_s: float, ahead_name: str = "future_tolerance") -> tuple[int, np.ndarray]:
        """A wrench: finite, stamped at most ``ahead_s`` ahead of the clock, in
        the sensor frame or one rigidly attached to the foot (then moved to the sensor's)."""
        if not isinstance(reading, WrenchReading):
            raise TypeError(f"F/T sensors read WrenchReading, not {type(reading).__name__}")
        values = reading.values
        if not all(isfinite(v) for v in values):
            raise SampleRefusedError("dropped_nonfinite", f"{side} foot: non-finite wrench dropped",
                                count_in_reason=True)
        problem = stamp_problem(1e-9 * reading.stamp_ns, 1e-9 * now_ns, self._what[side],
                                ahead_s=ahead_s, ahead_name=ahead_name)
        if problem is not None:
            raise SampleRefusedError("dropped_future", f"{problem}: refused")
        wrench = np.array(values, dtype=float)
        sensor = self.sensor_frames.get(side, "")
        frame = reading.frame or sensor
        if frame != sensor:
            try:
                force, torque = wrench_in_sole(wrench[:3], wrench[3:], self._move(side, frame))
            except HumanoidBalanceError as error:
                raise SampleRefusedError("dropped_frame", str(error), ERROR) from None
            wrench = np.concatenate([force, torque])
        return reading.stamp_ns, wrench

    def _move(self, side: str, frame: str) -> np.ndarray:
        key = (side, frame)
        if key not in self._moves:
            if self._frame_in_sensor is None:
                raise InvalidInputError(
                    f"{side} foot wrench in frame {frame!r}: publish it in the sensor frame "
                    f"{self.sensor_frames.get(side, '')!r}")
            self._moves[key] = self._frame_in_sensor(side, frame)
        return self._moves[key]

    def make_joiner(self, tolerance_ns: int, max_age_ns: int) -> Joiner:
        """By stamp, within ``tolerance_ns`` (``sync_tolerance``)."""
        return SampleSynchronizer(tuple(self.feet), tolerance_ns)

    def unpaired_reason(self, count: int, tolerance_s: float, max_age_s: float) -> str:
        return (f"{count} foot samples did not pair (the feet's stamps differ by more than "
                f"sync_tolerance {tolerance_s:.4f} s)")

    def foot_sample(self, sole_in_world: np.ndarray, payload: np.ndarray) -> FootSample:
        return FootSample(sole_in_world, payload[:3], payload[3:])

    def foot_weight_wrench(self, side: str, sensor_rotation_in_world: np.ndarray) -> np.ndarray:
        """Wrench (6,) the unloaded foot's weight puts on its sensor, in the sensor frame."""
        foot = self.feet[side]
        # R^T (0, 0, -m g) is -m g times R's last row; the cross product by hand (np.cross: ~10 us)
        wx, wy, wz = (-foot.mass_below_sensor * self.gravity * sensor_rotation_in_world[2]).tolist()
        cx, cy, cz = foot.com_below_sensor_in_sensor.tolist()
        return np.array([wx, wy, wz, cy * wz - cz * wy, cz * wx - cx * wz, cx * wy - cy * wx])

    def weight_terms(self, side: str, sensor_rotation_in_world: np.ndarray) -> list[float]:
        return self.foot_weight_wrench(side, sensor_rotation_in_world).tolist()

    def ground_wrench(self, side: str, sample: FootSample, weight: list[float]) -> FootWrench:
        """Seed 001, eq. 3.24/3.25: the ZMP of a six-axis sensor at any pose above the sole.

        The reading less the sensor's offsets and the foot's weight below it is the ground
        wrench ``(f, tau)`` in the sensor frame; moved to the sole frame
        (``R, p_s``: sole <- sensor),

        .. math::

            f_o = R f, \\quad \\tau_o = R \\tau + p_s \\times f_o, \\qquad
            p_x = -\\tau_{o,y} / f_{o,z}, \\quad p_y = \\tau_{o,x} / f_{o,z}

        on the sole surface (z = 0); on the sole's z axis at height ``d`` this is eq. 3.25,
        ``p_x = (-tau_y - f_x d) / f_z``, ``p_y = (tau_x - f_y d) / f_z``. Written out with
        Python floats: numpy's per-call cost on 3-vectors (about 1 us a call) would put the
        two-foot sample far above the 20 us budget of the 1 kHz estimator.
        """
        if sample.force_in_sensor is None or sample.torque_in_sensor is None:
            raise InvalidInputError(f"{side} foot: an F/T estimator needs force and torque")
        fx, fy, fz = _three_floats(sample.force_in_sensor)
        tx, ty, tz = _three_floats(sample.torque_in_sensor)
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
        r, (px, py, pz) = self._rotation[side], self._origin[side]
        sfx = r[0] * fx + r[1] * fy + r[2] * fz
        sfy = r[3] * fx + r[4] * fy + r[5] * fz
        sfz = r[6] * fx + r[7] * fy + r[8] * fz
        stx = r[0] * tx + r[1] * ty + r[2] * tz + py * sfz - pz * sfy
        sty = r[3] * tx + r[4] * ty + r[5] * tz + pz * sfx - px * sfz
        stz = r[6] * tx + r[7] * ty + r[8] * tz + px * sfy - py * sfx
        if sfz > 0.0:
            return sfx, sfy, sfz, stx, sty, stz, -sty / sfz, stx / sfz
        return sfx, sfy, sfz, stx, sty, stz, float("nan"), float("nan")

    def zero(self, side: str, force: np.ndarray, torque: np.ndarray, sole_in_world: np.ndarray,
             max_load: float = 10.0) -> np.ndarray:
        """The offsets of an unloaded foot: the reading less the foot's own weight.

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


class FsrSensors(FootSensors):
    """One-axis force-sensitive resistors on the soles (``fsr_positions`` of each foot).

    Raises:
        ConfigurationError: a foot has no FSR positions.
    """

    kind = "fsr"
    reading_name = "FSR forces"

    def __init__(self, feet: Mapping[str, FootGeometry], gravity: float = 9.81) -> None:
        super().__init__(feet, gravity)
        for side, foot in self.feet.items():
            if len(foot.fsr_positions) == 0:
                raise ConfigurationError(f"sensor_type='fsr' but foot {side!r} has no FSR positions")

    def parse(self, side: str, reading: WrenchReading | FsrReading, now_ns: int,
              ahead_s: float, ahead_name: str = "future_tolerance") -> tuple[int, np.ndarray]:
        """An array of one finite force per FSR, stamped with its arrival ``now_ns``."""
        if not isinstance(reading, FsrReading):
            raise TypeError(f"FSR sensors read FsrReading, not {type(reading).__name__}")
        forces = np.asarray(reading.forces, dtype=float)
        expected = len(self.feet[side].fsr_positions)
        if forces.shape != (expected,):
            raise SampleRefusedError("dropped_shape",
                                f"{side} foot: {forces.size} FSR forces, expected {expected}: dropped")
        if not np.all(np.isfinite(forces)):
            raise SampleRefusedError("dropped_nonfinite", f"{side} foot: non-finite FSR force dropped",
                                count_in_reason=True)
        return now_ns, forces

    def make_joiner(self, tolerance_ns: int, max_age_ns: int) -> Joiner:
        """In arrival order, waiting at most ``max_age_ns`` (``sensor_timeout``)."""
        return ArrivalPairer(tuple(self.feet), max_age_ns)

    def unpaired_reason(self, count: int, tolerance_s: float, max_age_s: float) -> str:
        return (f"{count} FSR arrays found no array of the other foot within sensor_timeout "
                f"{max_age_s:.3f} s")

    def foot_sample(self, sole_in_world: np.ndarray, payload: np.ndarray) -> FootSample:
        return FootSample(sole_in_world, fsr_forces=payload)

    def ground_wrench(self, side: str, sample: FootSample, weight: list[float]) -> FootWrench:
        """Seed 001, eq. 3.26 for one-axis sensors on the sole: the force-weighted mean.

        N sensors at ``p_j`` measuring ``f_j`` give ``p_x = sum(p_jx f_jz - p_jz f_jx) /
        sum(f_jz)`` (and y alike); FSRs on the sole (``p_jz = 0``) measure normal forces
        only, so

        .. math:: p = \\frac{\\sum_j p_j f_j}{\\sum_j f_j}, \\qquad
                  \\tau_{o,x} = p_y f_z, \\quad \\tau_{o,y} = -p_x f_z

        with ``f_z = sum f_j`` and no tangential force or torque about z.
        """
        fsr = np.asarray(sample.fsr_forces if sample.fsr_forces is not None else [], dtype=float)
        positions = self.feet[side].fsr_positions
        if fsr.shape != (len(positions),):
            raise InvalidInputError(
                f"{side} foot: {fsr.size} FSR forces for {len(positions)} FSR positions")
        if not np.isfinite(fsr).all():
            raise InvalidInputError(f"{side} foot: an FSR force is not finite")
        normal = float(fsr.sum())
        if normal > 0.0:
            lx, ly = (fsr @ positions / normal).tolist()
            return 0.0, 0.0, normal, ly * normal, -lx * normal, 0.0, lx, ly
        return 0.0, 0.0, normal, 0.0, 0.0, 0.0, float("nan"), float("nan")

    def zero_problem(self) -> str | None:
        return "zeroing is for F/T sensors; this node runs in fsr mode"

    def zero(self, side: str, force: np.ndarray, torque: np.ndarray, sole_in_world: np.ndarray,
             max_load: float = 10.0) -> np.ndarray:
        raise InvalidInputError(str(self.zero_problem()))


#: the sensor kinds by their ``sensor_type``
SENSOR_TYPES: dict[str, type[FootSensors]] = {"ft": FtSensors, "fsr": FsrSensors}


def make_foot_sensors(sensor_type: str, feet: Mapping[str, FootGeometry], gravity: float = 9.81, *,
                      sensor_frames: Mapping[str, str] | None = None,
                      frame_in_sensor: FrameResolver | None = None) -> FootSensors:
    """The implementation of ``sensor_type`` (``ft`` or ``fsr``) for ``feet``.

    Args:
        sensor_frames, frame_in_sensor: the frames a reading may be stamped in
            (:class:`FtSensors`; FSR arrays have no frame).

    Raises:
        ConfigurationError: an unknown type, or feet it cannot serve.
    """
    if sensor_type not in SENSOR_TYPES:
        raise ConfigurationError(f"sensor_type={sensor_type!r}: expected one of {tuple(SENSOR_TYPES)}")
    return SENSOR_TYPES[sensor_type].build(feet, gravity, sensor_frames=sensor_frames,
                                           frame_in_sensor=frame_in_sensor)
