"""Read and write the few messages of the 1 kHz paths as CDR bytes, without building rclpy messages.

A subscription created with ``raw=True`` hands its callback the serialized
message; a publisher publishes ``bytes`` as they are (both in rclpy since
Humble). Turning those bytes into a Python message costs about 20 µs (a
``WrenchStamped`` builds seven Python objects), and a message into bytes about
as much again: at 1 kHz on three inputs and four outputs that is most of a
node's own CPU. The readers here take the fields a node uses straight from the
bytes (``struct``, ``numpy.frombuffer``); the writers patch the stamp and the
values into a template serialized once.

The format is the one ROS 2's middlewares use for these types: an
encapsulation header of four bytes (``00 01``: plain CDR, little endian; then
two option bytes), then the fields in order, each aligned to its size (8 for
``float64``) counted from the end of the encapsulation header; a string is a
``uint32`` length including its NUL, then its bytes and the NUL; a sequence a
``uint32`` count, then its elements (no alignment for an empty one). Padding
bytes are written as zeros (rclpy leaves whatever was in memory there: compare
messages, not bytes).

A reader either gives the values ``rclpy.serialization.deserialize_message``
reads from the same bytes or raises :class:`InvalidInputError` (nothing else:
no ``struct.error``, no ``UnicodeDecodeError``, no allocation from a length
field; a count that cannot fit the bytes left is refused before any loop). It
refuses some bytes that rclpy reads, on purpose:

- another encapsulation than ``00 01`` (big endian, PL_CDR, XCDR2): rclpy
  byte-swaps big endian and reads XCDR2 with its own alignment; callers may hand
  these to rclpy (:func:`rclpy_may_read`);
- a string without its NUL (rclpy keeps the last byte as a character), with a
  NUL before its end (rclpy cuts it there) or not UTF-8 (rclpy puts U+FFFD in
  place of the bad bytes);
- content that runs into the padding the option bytes announce (their last two
  bits, DDS-XTypes 1.3 7.6.3.1.2): rclpy honours that count when the length is a
  multiple of 4 only.

It accepts what rclpy accepts otherwise, bytes after the content included.
``header_stamp_ns`` reads the stamp alone: it gives the stamp of bytes whose
rest rclpy refuses.

No rclpy here: ``test/test_cdr.py`` checks every reader and writer against
``rclpy.serialization`` on random messages; ``test/test_cdr_fuzz.py`` and
``tools/fuzz_cdr.py`` on mutated ones.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from humanoid_balance.exceptions import InvalidInputError

#: plain CDR, little endian, no options
ENCAPSULATION = b"\x00\x01\x00\x00"
#: the payload starts after the encapsulation header; alignment counts from there
PAYLOAD_START = 4

_STAMP = struct.Struct("<iI")
_HEADER = struct.Struct("<iII")  # stamp sec, nanosec, frame_id length
_UINT32 = struct.Struct("<I")
_DOUBLE = struct.Struct("<d")
_VECTOR3 = struct.Struct("<3d")
_WRENCH = struct.Struct("<6d")
_EMPTY = np.zeros(0)
_EMPTY.flags.writeable = False


def _align(offset: int, size: int) -> int:
    """``offset`` in the buffer moved up to a multiple of ``size`` counted from the payload start."""
    return offset + (-(offset - PAYLOAD_START) % size)


def _check_encapsulation(data: bytes, what: str) -> None:
    if data[:2] != ENCAPSULATION[:2] or len(data) < PAYLOAD_START:
        raise InvalidInputError(
            f"{what}: encapsulation {data[:4].hex(' ') or 'none'}, expected {ENCAPSULATION[:2].hex(' ')} "
            "(plain CDR, little endian) and two option bytes: deserialize it with rclpy instead")


def _check_end(data: bytes, end: int, what: str) -> None:
    """Refuse a message whose content (up to byte ``end``) runs into the padding that its
    encapsulation options announce (their last two bits: DDS-XTypes 1.3, 7.6.3.1.2)."""
    padding = data[3] & 3
    if padding and end > len(data) - padding:
        raise InvalidInputError(
            f"{what}: its content ends at byte {end}, in the last {padding} padding byte(s) of its "
            f"{len(data)} that the options announce (header {data[:4].hex(' ')}): truncated")


def _decode(data: bytes, start: int, length: int, what: str) -> str:
    """The string whose ``length`` bytes (its NUL included) start at ``start``."""
    end = start + length
    if end > len(data):
        raise InvalidInputError(f"{what}: a string of {length} bytes at offset {start} runs past "
                                f"the message's {len(data)} bytes")
    if not length:  # no NUL either: rclpy reads it as "" too
        return ""
    if data[end - 1]:
        raise InvalidInputError(f"{what}: the string of {length} bytes at offset {start} is "
                                "without its NUL terminator")
    inner = data.find(b"\x00", start, end - 1)
    if inner >= 0:
        raise InvalidInputError(f"{what}: the string of {length} bytes at offset {start} has a "
                                f"NUL at byte {inner} before its end")
    try:
        return data[start:end - 1].decode()
    except UnicodeDecodeError as error:
        raise InvalidInputError(f"{what}: the string at offset {start} is not UTF-8 "
                                f"({error.reason} at its byte {error.start})") from None


def _string(data: bytes, offset: int, what: str = "string") -> tuple[str, int]:
    """The string at ``offset`` (aligned to 4 here) and the offset after it."""
    offset = _align(offset, 4)
    (length,) = _UINT32.unpack_from(data, offset)
    return _decode(data, offset + 4, length, what), offset + 4 + length


def _doubles(data: bytes, offset: int) -> tuple[np.ndarray, int]:
    """The ``float64[]`` at ``offset`` (a read-only view of ``data``) and the offset after it."""
    offset = _align(offset, 4)
    (count,) = _UINT32.unpack_from(data, offset)
    offset += 4
    if not count:
        return _EMPTY, offset
    offset = _align(offset, 8)
    end = offset + 8 * count
    if end > len(data):
        raise InvalidInputError(f"{count} float64 values at offset {offset} run past the "
                                f"message's {len(data)} bytes")
    return np.frombuffer(data, dtype="<f8", count=count, offset=offset), end


def _count(data: bytes, offset: int, smallest: int, what: str) -> int:
    """The sequence count at ``offset``, refused when that many elements of at least
    ``smallest`` bytes each cannot fit the rest of the message."""
    (count,) = _UINT32.unpack_from(data, offset)
    room = len(data) - offset - 4
    if count > room // smallest:
        raise InvalidInputError(f"{what}: a count of {count} at offset {offset}, but {room} bytes "
                                f"follow (at least {smallest} bytes each)")
    return int(count)


def _read_header(data: bytes, what: str) -> tuple[int, str, int]:
    """(stamp ns, frame_id, offset after the header) of a message that starts with a Header."""
    _check_encapsulation(data, what)
    sec, nanosec, length = _HEADER.unpack_from(data, PAYLOAD_START)
    return sec * 1_000_000_000 + nanosec, _decode(data, 16, length, f"{what} frame_id"), 16 + length


#: the encapsulation identifiers rclpy (Fast CDR) reads besides ``00 01``: CDR_BE, PL_CDR_BE and
#: _LE, CDR2_BE and _LE, D_CDR2_BE and _LE, PL_CDR2_BE and _LE (it reads them all as plain CDR
#: of the byte order of their last bit)
OTHER_ENCAPSULATIONS_RCLPY_READS = frozenset(
    bytes([0, kind]) for kind in (0x00, 0x02, 0x03, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B))


def rclpy_may_read(data: bytes) -> bool:
    """Whether bytes a reader here refused may go to ``rclpy.serialization.deserialize_message``.

    Yes for an encapsulation the readers leave to rclpy (big endian, XCDR2: see
    :data:`OTHER_ENCAPSULATIONS_RCLPY_READS`) with more than its 4 header bytes.
    No for plain little-endian CDR: the reader's refusal stands (rclpy would read
    some of those bytes as garbage, e.g. a ``Float64MultiArray`` whose dimension
    count runs past the bytes comes out with values from the wrong offsets); and no
    for 4 bytes whose options announce padding: rclpy reads past their end
    (garbage values, at times a segmentation fault).
    """
    return len(data) > PAYLOAD_START and data[:2] in OTHER_ENCAPSULATIONS_RCLPY_READS


def header_stamp_ns(data: bytes) -> int:
    """The header stamp [ns] of a serialized message whose first field is a ``std_msgs/Header``.

    Only the stamp is read: bytes whose rest is malformed give their stamp all the same.

    Raises:
        InvalidInputError: not plain little-endian CDR, or shorter than a stamp.
    """
    _check_encapsulation(data, "header stamp")
    try:
        sec, nanosec = _STAMP.unpack_from(data, PAYLOAD_START)
    except struct.error as error:
        raise InvalidInputError(f"header stamp: {len(data)} bytes, too short ({error})") from error
    if data[3] & 3:  # options that announce padding at the end
        _check_end(data, PAYLOAD_START + _STAMP.size, "header stamp")
    return sec * 1_000_000_000 + nanosec


class StampedWrench(NamedTuple):
    """The fields of a ``geometry_msgs/WrenchStamped``.

    Attributes:
        stamp_ns: header stamp [ns].
        frame_id: header frame.
        values: force x, y, z [N], torque x, y, z [N m].
    """

    stamp_ns: int
    frame_id: str
    values: tuple[float, float, float, float, float, float]


def read_wrench_stamped(data: bytes) -> StampedWrench:
    """A serialized ``geometry_msgs/WrenchStamped``.

    Raises:
        InvalidInputError: not plain little-endian CDR, truncated, or a frame_id that is not
            a NUL-terminated UTF-8 string.
    """
    try:
        stamp, frame_id, offset = _read_header(data, "WrenchStamped")
        offset = _align(offset, 8)
        values = _WRENCH.unpack_from(data, offset)
    except struct.error as error:
        raise InvalidInputError(f"WrenchStamped of {len(data)} bytes: {error}") from error
    if data[3] & 3:  # options that announce padding at the end
        _check_end(data, offset + _WRENCH.size, "WrenchStamped")
    return StampedWrench(stamp, frame_id, values)  # type: ignore[arg-type]


class JointStateSample(NamedTuple):
    """The fields of a ``sensor_msgs/JointState``.

    ``position``, ``velocity`` and ``effort`` are read-only views of the
    message's bytes (copy them to keep or change them).

    Attributes:
        stamp_ns: header stamp [ns].
        frame_id: header frame.
        names: joint names.
        position: rad or m, as many as the message has (may differ from ``names``).
        velocity: rad/s or m/s.
        effort: N m or N.
    """

    stamp_ns: int
    frame_id: str
    names: tuple[str, ...]
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


class JointStateReader:
    """Reads serialized ``sensor_msgs/JointState`` messages.

    A publisher sends the same names in every message: the reader keeps the
    bytes of the last names and decodes the names again only when they change.
    The padding between the strings is left out of that comparison: Fast CDR
    does not clear it (a message serialized by rclpy or a C++ node carries
    whatever was in its buffer there), so the names' bytes differ from one
    message to the next although the names do not.
    """

    def __init__(self) -> None:
        #: the last names' bytes (count, then each string's length and characters), the
        #: padding zeroed; ``_names_mask``: 0xFF on those bytes, 0 on the padding
        self._names_bytes = b""
        self._names_mask = np.zeros(0, dtype=np.uint8)
        self._names: tuple[str, ...] = ()
        #: the last message's length, where its names ended and, per array, where its count
        #: is, the count and where its values start: a message of that length whose names end
        #: there and whose counts are those has its values there
        self._layout: tuple[int, int, tuple[tuple[int, int, int], ...]] = (-1, -1, ())

    def read(self, data: bytes) -> JointStateSample:
        """The message's fields.

        Raises:
            InvalidInputError: not plain little-endian CDR, truncated, or a frame_id or a name
                that is not a NUL-terminated UTF-8 string.
        """
        try:
            stamp, frame_id, offset = _read_header(data, "JointState")
            start = _align(offset, 4)
            known = self._names_bytes
            if known and self._same_names(data, start):
                names = self._names
                offset = start + len(known)
                length, names_end, arrays = self._layout
                if length == len(data) and names_end == offset:
                    unpack = _UINT32.unpack_from
                    (p_at, p_count, p_start), (v_at, v_count, v_start), (e_at, e_count, e_start) \
                        = arrays
                    if unpack(data, p_at)[0] == p_count and unpack(data, v_at)[0] == v_count \
                            and unpack(data, e_at)[0] == e_count:
                        if data[3] & 3:  # options that announce padding at the end
                            _check_end(data, e_start + 8 * e_count, "JointState")
                        # (three calls written out: a generator costs more than a read)
                        return JointStateSample(
                            stamp, frame_id, names,
                            np.frombuffer(data, "<f8", p_count, p_start) if p_count else _EMPTY,
                            np.frombuffer(data, "<f8", v_count, v_start) if v_count else _EMPTY,
                            np.frombuffer(data, "<f8", e_count, e_start) if e_count else _EMPTY)
            else:
                count = _count(data, start, 4, "JointState names")  # each has its length
                offset = start + 4
                decoded = []
                significant = [(start, offset)]  # the count, then each string, not the padding
                for _ in range(count):
                    name, end = _string(data, offset, "JointState name")
                    significant.append((_align(offset, 4), end))  # length, characters
                    decoded.append(name)
                    offset = end
                names = tuple(decoded)
                mask = np.zeros(offset - start, dtype=np.uint8)
                for first, end in significant:
                    mask[first - start:end - start] = 0xFF
                self._names_mask = mask
                self._names_bytes = (np.frombuffer(data, np.uint8, offset - start, start)
                                     & mask).tobytes()
                self._names = names
            names_end = offset
            layout: list[tuple[int, int, int]] = []
            values: list[np.ndarray] = []
            for _ in range(3):  # position, velocity, effort
                at = _align(offset, 4)
                array, offset = _doubles(data, offset)
                layout.append((at, len(array), offset - 8 * len(array)))
                values.append(array)
            if data[3] & 3:  # options that announce padding at the end
                _check_end(data, offset, "JointState")
            self._layout = (len(data), names_end, tuple(layout))
        except (struct.error, ValueError) as error:
            if isinstance(error, InvalidInputError):
                raise
            raise InvalidInputError(f"JointState of {len(data)} bytes: {error}") from error
        return JointStateSample(stamp, frame_id, names, *values)

    def _same_names(self, data: bytes, start: int) -> bool:
        """Whether ``data`` holds the last names at ``start``, padding aside."""
        known = self._names_bytes
        end = start + len(known)
        if data[start:end] == known:  # zeroed padding (this package's writers)
            return True
        if end > len(data):
            return False
        view = np.frombuffer(data, np.uint8, len(known), start)
        return (view & self._names_mask).tobytes() == known


def read_float64_multi_array(data: bytes) -> np.ndarray:
    """The ``data`` of a serialized ``std_msgs/Float64MultiArray`` (a read-only view).

    Raises:
        InvalidInputError: not plain little-endian CDR, truncated, or a dimension label that
            is not a NUL-terminated UTF-8 string.
    """
    _check_encapsulation(data, "Float64MultiArray")
    try:
        # label (its length at least), size, stride: 12 bytes a dimension at least
        dims = _count(data, PAYLOAD_START, 12, "Float64MultiArray dimensions")
        offset = PAYLOAD_START + 4
        for _ in range(dims):
            _, offset = _string(data, offset, "Float64MultiArray label")
            offset = _align(offset, 4) + 8
        offset = _align(offset, 4) + 4  # data_offset
        values, end = _doubles(data, offset)
    except struct.error as error:
        raise InvalidInputError(f"Float64MultiArray of {len(data)} bytes: {error}") from error
    if data[3] & 3:  # options that announce padding at the end
        _check_end(data, end, "Float64MultiArray")
    return values


# --- writers -------------------------------------------------------------------------------------

def _header_template(frame_id: str) -> bytearray:
    """Encapsulation, a zero stamp and ``frame_id``: the start of every stamped message."""
    encoded = frame_id.encode()
    return bytearray(ENCAPSULATION + _HEADER.pack(0, 0, len(encoded) + 1) + encoded + b"\x00")


def _pad(buffer: bytearray, size: int) -> None:
    buffer.extend(b"\x00" * (_align(len(buffer), size) - len(buffer)))


def _pack_stamp(buffer: bytearray, stamp_ns: int) -> None:
    sec, nanosec = divmod(stamp_ns, 1_000_000_000)
    _STAMP.pack_into(buffer, PAYLOAD_START, sec, nanosec)


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
        self._buffer = _header_template(frame_id)
        _pad(self._buffer, 8)
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
        _pack_stamp(self._buffer, stamp_ns)
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
        self._header = _header_template(frame_id)
        _pad(self._header, 4)

    def write(self, stamp_ns: int, points_xy: np.ndarray, z: float = 0.0) -> bytes:
        """The polygon of ``points_xy`` (n x 2, m) at height ``z`` [m], stamped ``stamp_ns`` [ns].

        Coordinates become ``float32`` (``Point32``) by rounding to nearest, as rclpy does.
        """
        _pack_stamp(self._header, stamp_ns)
        points = np.empty((len(points_xy), 3), dtype="<f4")
        points[:, :2] = points_xy
        points[:, 2] = z
        return bytes(self._header) + _UINT32.pack(len(points)) + points.tobytes()


def with_stamp(data: bytes, stamp_ns: int) -> bytes:
    """A serialized message whose first field is a ``std_msgs/Header``, its stamp set to ``stamp_ns`` [ns].

    Raises:
        InvalidInputError: not plain little-endian CDR, or shorter than a stamp.
    """
    _check_encapsulation(data, "header stamp")
    if len(data) < PAYLOAD_START + _STAMP.size:
        raise InvalidInputError(f"header stamp: {len(data)} bytes, too short for a stamp")
    buffer = bytearray(data)
    _pack_stamp(buffer, stamp_ns)
    return bytes(buffer)


def float64_message(value: float) -> bytes:
    """A serialized ``std_msgs/Float64``."""
    return ENCAPSULATION + _DOUBLE.pack(value)


def read_float64(data: bytes) -> float:
    """The value of a serialized ``std_msgs/Float64``.

    Raises:
        InvalidInputError: not plain little-endian CDR, or shorter than a double.
    """
    _check_encapsulation(data, "Float64")
    if len(data) < PAYLOAD_START + _DOUBLE.size:
        raise InvalidInputError(f"Float64 of {len(data)} bytes: too short for its value")
    if data[3] & 3:  # options that announce padding at the end
        _check_end(data, PAYLOAD_START + _DOUBLE.size, "Float64")
    return float(_DOUBLE.unpack_from(data, PAYLOAD_START)[0])


def clock_message(stamp_ns: int) -> bytes:
    """A serialized ``rosgraph_msgs/Clock``."""
    return ENCAPSULATION + _STAMP.pack(*divmod(stamp_ns, 1_000_000_000))


#: a Float64MultiArray without layout up to its data: no dimension, data_offset 0, then the
#: count at byte 12 and the doubles from byte 20 (aligned to 8 from byte 4)
_MULTI_ARRAY_START = ENCAPSULATION + _UINT32.pack(0) + _UINT32.pack(0)


def float64_multi_array_message(values: np.ndarray | Sequence[float]) -> bytes:
    """A serialized ``std_msgs/Float64MultiArray`` with an empty layout (``Float64MultiArray(data=...)``)."""
    data = np.ascontiguousarray(values, dtype="<f8")
    if data.ndim != 1:
        raise InvalidInputError(f"Float64MultiArray data of shape {data.shape}: expected a flat array")
    count = _UINT32.pack(len(data))
    if not len(data):
        return _MULTI_ARRAY_START + count
    return _MULTI_ARRAY_START + count + b"\x00\x00\x00\x00" + data.tobytes()


def _joint_state_arrays(buffer: bytearray, head_length: int, count: int,
                        arrays: int) -> tuple[np.ndarray, ...]:
    """Views of the first ``arrays`` arrays (``count`` doubles each) of a serialized JointState
    whose header and names take ``head_length`` bytes: the writers patch them in place."""
    start = _align(_align(head_length, 4) + 4, 8)  # uint32 count, then the data aligned to 8
    views = []
    for _ in range(arrays):
        views.append(np.frombuffer(buffer, dtype="<f8", count=count, offset=start))
        start = _align(start + 8 * count + 4, 8)
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
        self._head = _header_template(frame_id)
        _pad(self._head, 4)
        self._head.extend(_UINT32.pack(len(self.names)))
        for name in self.names:
            _pad(self._head, 4)
            encoded = name.encode()
            self._head.extend(_UINT32.pack(len(encoded) + 1) + encoded + b"\x00")
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
            _pack_stamp(full, stamp_ns)
            p, v, e = self._full_arrays
            p[:] = position
            v[:] = velocity
            e[:] = effort
            return bytes(full)
        _pack_stamp(self._head, stamp_ns)
        buffer = bytearray(self._head)
        for label, values in (("position", position), ("velocity", velocity), ("effort", effort)):
            data = np.ascontiguousarray(values, dtype="<f8")
            if len(data) not in (0, len(self.names)):
                raise InvalidInputError(f"JointState {label} of {len(data)} values for "
                                        f"{len(self.names)} names: give one per name or none")
            _pad(buffer, 4)
            buffer.extend(_UINT32.pack(len(data)))
            if len(data):
                _pad(buffer, 8)
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
        _pack_stamp(self._buffer, stamp_ns)
        self._position[:] = position
        self._velocity[:] = velocity
        return bytes(self._buffer)


def joint_state_message(stamp_ns: int, names: Sequence[str], position: Sequence[float] = (),
                        velocity: Sequence[float] = (), effort: Sequence[float] = (),
                        frame_id: str = "") -> bytes:
    """A serialized ``sensor_msgs/JointState`` (for tests and feeders; not on a hot path)."""
    buffer = _header_template(frame_id)
    _pack_stamp(buffer, stamp_ns)
    _pad(buffer, 4)
    buffer.extend(_UINT32.pack(len(names)))
    for name in names:
        _pad(buffer, 4)
        encoded = name.encode()
        buffer.extend(_UINT32.pack(len(encoded) + 1) + encoded + b"\x00")
    for values in (position, velocity, effort):
        _pad(buffer, 4)
        buffer.extend(_UINT32.pack(len(values)))
        if len(values):
            _pad(buffer, 8)
            buffer.extend(np.asarray(values, dtype="<f8").tobytes())
    return bytes(buffer)
