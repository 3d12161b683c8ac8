"""CDR writers of the 1 kHz paths' messages: a template serialized once, stamp and values patched.

The format is described in :mod:`humanoid_balance.cdr`; padding bytes are written as zeros.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np

from humanoid_balance.cdr_primitives import (
    DOUBLE,
    ENCAPSULATION,
    PAYLOAD_START,
    STAMP,
    UINT32,
    align,
    check_encapsulation,
    header_template,
    pack_stamp,
    pad,
)
from humanoid_balance.exceptions import InvalidInputError


class StampedDoublesWriter:
    """Serialized messages made of a ``std_msgs/Header`` and then only ``float64`` fields.

    ``PointStamped`` (3), ``WrenchStamped`` (6: force, torque), ``PoseStamped``
    (7: position, orientation x, y, z, w), ``Imu`` (37: orientation, its
    covariance, angular velocity, its covariance, linear acceleration, its
    covariance): the doubles follow each other without padding once the first
    is aligned. The template holds ``initial``; :meth:`write` sets the stamp and
    the values given, from index ``at``.

    Args:
        frame_id: the header frame of every message.
        initial: every double of the message, in field order.
    """

    def __init__(self, frame_id: str, initial: Sequence[float]) -> None:
        self._buffer = header_template(frame_id)
        pad(self._buffer, 8)
        start = len(self._buffer)
        self.size = len(initial)
        self._buffer.extend(struct.pack(f"<{self.size}d", *initial))
        # the doubles as an array over the buffer: a numpy row is written 3 times faster than
        # packed value by value (Python floats as fast)
        self._values = np.frombuffer(self._buffer, dtype="<f8", count=self.size, offset=start)

    def write(self, stamp_ns: int, values: Sequence[float] | np.ndarray, at: int = 0) -> bytes:
        """The message stamped ``stamp_ns`` [ns] with ``values`` from double ``at`` on."""
        count = len(values)
        if not 0 <= at <= self.size - count:
            raise InvalidInputError(f"{count} values from index {at} do not fit the message's "
                                    f"{self.size} doubles")
        pack_stamp(self._buffer, stamp_ns)
        self._values[at:at + count] = values
        return bytes(self._buffer)


class PointStampedWriter:
    """Serialized ``geometry_msgs/PointStamped`` messages in one frame.

    Args:
        frame_id: the header frame of every message.
    """

    def __init__(self, frame_id: str) -> None:
        self._writer = StampedDoublesWriter(frame_id, (0.0, 0.0, 0.0))

    def write(self, stamp_ns: int, x: float, y: float, z: float) -> bytes:
        """The message stamped ``stamp_ns`` [ns] at point (x, y, z)."""
        return self._writer.write(stamp_ns, (x, y, z))


def wrench_stamped_writer(frame_id: str) -> StampedDoublesWriter:
    """A writer of ``geometry_msgs/WrenchStamped``: ``write(stamp_ns, (fx, fy, fz, tx, ty, tz))``."""
    return StampedDoublesWriter(frame_id, (0.0,) * 6)


def pose_stamped_writer(frame_id: str) -> StampedDoublesWriter:
    """A writer of ``geometry_msgs/PoseStamped``: ``write(stamp_ns, (x, y, z, qx, qy, qz, qw))``."""
    return StampedDoublesWriter(frame_id, (0.0,) * 6 + (1.0,))


#: where the fields of a ``sensor_msgs/Imu`` start among its 37 doubles
IMU_ORIENTATION, IMU_ANGULAR_VELOCITY, IMU_LINEAR_ACCELERATION = 0, 13, 25


def imu_writer(frame_id: str, orientation_covariance: Sequence[float] = (0.0,) * 9,
               angular_velocity_covariance: Sequence[float] = (0.0,) * 9,
               linear_acceleration_covariance: Sequence[float] = (0.0,) * 9) -> StampedDoublesWriter:
    """A writer of ``sensor_msgs/Imu`` with fixed covariances (``-1`` first: not provided).

    ``write(stamp_ns, (qx, qy, qz, qw))`` sets the orientation; ``at=IMU_ANGULAR_VELOCITY``
    or ``IMU_LINEAR_ACCELERATION`` the other vectors.
    """
    initial = [0.0, 0.0, 0.0, 1.0, *orientation_covariance, 0.0, 0.0, 0.0,
               *angular_velocity_covariance, 0.0, 0.0, 0.0, *linear_acceleration_covariance]
    if len(initial) != 37:
        raise InvalidInputError("each Imu covariance takes 9 values")
    return StampedDoublesWriter(frame_id, initial)


class PolygonStampedWriter:
    """Serialized ``geometry_msgs/PolygonStamped`` messages of points in a plane, in one frame.

    Args:
        frame_id: the header frame of every message.
    """

    def __init__(self, frame_id: str) -> None:
        self._header = header_template(frame_id)
        pad(self._header, 4)

    def write(self, stamp_ns: int, points_xy: np.ndarray, z: float = 0.0) -> bytes:
        """The polygon of ``points_xy`` (n x 2, m) at height ``z`` [m], stamped ``stamp_ns`` [ns].

        Coordinates become ``float32`` (``Point32``) by rounding to nearest, as rclpy does.
        """
        pack_stamp(self._header, stamp_ns)
        points = np.empty((len(points_xy), 3), dtype="<f4")
        points[:, :2] = points_xy
        points[:, 2] = z
        return bytes(self._header) + UINT32.pack(len(points)) + points.tobytes()


def with_stamp(data: bytes, stamp_ns: int) -> bytes:
    """A serialized message whose first field is a ``std_msgs/Header``, its stamp set to ``stamp_ns`` [ns].

    Raises:
        InvalidInputError: not plain little-endian CDR, or shorter than a stamp.
    """
    check_encapsulation(data, "header stamp")
    if len(data) < PAYLOAD_START + STAMP.size:
        raise InvalidInputError(f"header stamp: {len(data)} bytes, too short for a stamp")
    buffer = bytearray(data)
    pack_stamp(buffer, stamp_ns)
    return bytes(buffer)


def float64_message(value: float) -> bytes:
    """A serialized ``std_msgs/Float64``."""
    return ENCAPSULATION + DOUBLE.pack(value)


def clock_message(stamp_ns: int) -> bytes:
    """A serialized ``rosgraph_msgs/Clock``."""
    return ENCAPSULATION + STAMP.pack(*divmod(stamp_ns, 1_000_000_000))


#: a Float64MultiArray without layout up to its data: no dimension, data_offset 0, then the
#: count at byte 12 and the doubles from byte 20 (aligned to 8 from byte 4)
_MULTI_ARRAY_START = ENCAPSULATION + UINT32.pack(0) + UINT32.pack(0)


def float64_multi_array_message(values: np.ndarray | Sequence[float]) -> bytes:
    """A serialized ``std_msgs/Float64MultiArray`` with an empty layout (``Float64MultiArray(data=...)``)."""
    data = np.ascontiguousarray(values, dtype="<f8")
    if data.ndim != 1:
        raise InvalidInputError(f"Float64MultiArray data of shape {data.shape}: expected a flat array")
    count = UINT32.pack(len(data))
    if not len(data):
        return _MULTI_ARRAY_START + count
    return _MULTI_ARRAY_START + count + b"\x00\x00\x00\x00" + data.tobytes()


def _joint_state_arrays(buffer: bytearray, head_length: int, count: int,
                        arrays: int) -> tuple[np.ndarray, ...]:
    """Views of the first ``arrays`` arrays (``count`` doubles each) of a serialized JointState
    whose header and names take ``head_length`` bytes: the writers patch them in place."""
    start = align(align(head_length, 4) + 4, 8)  # uint32 count, then the data aligned to 8
    views = []
    for _ in range(arrays):
        views.append(np.frombuffer(buffer, dtype="<f8", count=count, offset=start))
        start = align(start + 8 * count + 4, 8)
    return tuple(views)


class JointStateWriter:
    """Serialized ``sensor_msgs/JointState`` messages of one set of joints.

    The header's frame and the names are serialized once; each message adds its
    stamp and arrays.

    Args:
        names: the joints, in the order of every array written.
        frame_id: the header frame.
    """

    def __init__(self, names: Sequence[str], frame_id: str = "") -> None:
        self.names = tuple(names)
        self._head = header_template(frame_id)
        pad(self._head, 4)
        self._head.extend(UINT32.pack(len(self.names)))
        for name in self.names:
            pad(self._head, 4)
            encoded = name.encode()
            self._head.extend(UINT32.pack(len(encoded) + 1) + encoded + b"\x00")
        # the message with all three arrays full, serialized once: a simulation's joint states,
        # written every step, patch its stamp and values in place (a third of the cost)
        count = len(self.names)
        self._full: bytearray | None = None
        self._full_arrays: tuple[np.ndarray, ...] = ()
        if count:
            zeros = np.zeros(count)
            self._full = bytearray(self.write(0, zeros, zeros, zeros))
            self._full_arrays = _joint_state_arrays(self._full, len(self._head), count, 3)

    def write(self, stamp_ns: int, position: np.ndarray | Sequence[float] = (),
              velocity: np.ndarray | Sequence[float] = (),
              effort: np.ndarray | Sequence[float] = ()) -> bytes:
        """The message stamped ``stamp_ns`` [ns]; each array empty or one value per name."""
        count = len(self.names)
        full = self._full
        if full is not None and len(position) == count and len(velocity) == count \
                and len(effort) == count:
            pack_stamp(full, stamp_ns)
            p, v, e = self._full_arrays
            p[:] = position
            v[:] = velocity
            e[:] = effort
            return bytes(full)
        pack_stamp(self._head, stamp_ns)
        buffer = bytearray(self._head)
        for label, values in (("position", position), ("velocity", velocity), ("effort", effort)):
            data = np.ascontiguousarray(values, dtype="<f8")
            if len(data) not in (0, len(self.names)):
                raise InvalidInputError(f"JointState {label} of {len(data)} values for "
                                        f"{len(self.names)} names: give one per name or none")
            pad(buffer, 4)
            buffer.extend(UINT32.pack(len(data)))
            if len(data):
                pad(buffer, 8)
                buffer.extend(data.tobytes())
        return bytes(buffer)


class JointStateCommandWriter:
    """Serialized ``sensor_msgs/JointState`` messages with positions and velocities, no efforts.

    The whole message is serialized once; each message patches the stamp and
    the values in place (no allocation but the returned ``bytes``): the
    writer of a command published every control cycle.

    Args:
        names: the joints, in the order of every array written.
        frame_id: the header frame.
    """

    def __init__(self, names: Sequence[str], frame_id: str = "") -> None:
        self.names = tuple(names)
        count = len(self.names)
        writer = JointStateWriter(self.names, frame_id)
        self._buffer = bytearray(writer.write(0, np.zeros(count), np.zeros(count)))
        arrays: tuple[np.ndarray, ...] = \
            _joint_state_arrays(self._buffer, len(writer._head), count, 2) if count \
            else (np.zeros(0), np.zeros(0))
        self._position, self._velocity = arrays

    def write(self, stamp_ns: int, position: np.ndarray | Sequence[float],
              velocity: np.ndarray | Sequence[float]) -> bytes:
        """The message stamped ``stamp_ns`` [ns]; one position [rad] and velocity [rad/s] per name.

        Raises:
            InvalidInputError: an array without one value per name.
        """
        if len(position) != len(self.names) or len(velocity) != len(self.names):
            raise InvalidInputError(f"JointState command of {len(position)} positions and "
                                    f"{len(velocity)} velocities for {len(self.names)} names")
        pack_stamp(self._buffer, stamp_ns)
        self._position[:] = position
        self._velocity[:] = velocity
        return bytes(self._buffer)


def joint_state_message(stamp_ns: int, names: Sequence[str], position: Sequence[float] = (),
                        velocity: Sequence[float] = (), effort: Sequence[float] = (),
                        frame_id: str = "") -> bytes:
    """A serialized ``sensor_msgs/JointState`` (for tests and feeders; not on a hot path)."""
    buffer = header_template(frame_id)
    pack_stamp(buffer, stamp_ns)
    pad(buffer, 4)
    buffer.extend(UINT32.pack(len(names)))
    for name in names:
        pad(buffer, 4)
        encoded = name.encode()
        buffer.extend(UINT32.pack(len(encoded) + 1) + encoded + b"\x00")
    for values in (position, velocity, effort):
        pad(buffer, 4)
        buffer.extend(UINT32.pack(len(values)))
        if len(values):
            pad(buffer, 8)
            buffer.extend(np.asarray(values, dtype="<f8").tobytes())
    return bytes(buffer)
