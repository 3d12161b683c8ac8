"""CDR readers of the 1 kHz paths' messages: the fields a node uses, straight from the bytes.

Each gives the values ``rclpy.serialization.deserialize_message`` reads from the same
bytes or raises :class:`~humanoid_balance.exceptions.InvalidInputError`; what they
refuse on purpose is listed in :mod:`humanoid_balance.cdr`. They read plain CDR and
plain XCDR2 of either byte order (:data:`~humanoid_balance.cdr_primitives.ENCODINGS`):
no bytes need rclpy, which prints a line to the process's stderr for each malformed
message it is given (a sender of such bytes would flood the log at its own rate).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np

from humanoid_balance.cdr_primitives import (
    CDR_LE,
    EMPTY,
    ENCODINGS,
    PAYLOAD_START,
    Encoding,
    align,
    check_end,
    native,
    read_count,
    read_doubles,
    read_header,
    read_string,
    refuse_encapsulation,
)
from humanoid_balance.exceptions import InvalidInputError

#: the encapsulation identifiers rclpy (Fast CDR) reads besides ``00 01``: CDR_BE, PL_CDR_BE and
#: _LE, CDR2_BE and _LE, D_CDR2_BE and _LE, PL_CDR2_BE and _LE (it reads them all as plain CDR
#: of their version and of the byte order of their last bit). The readers read CDR_BE, CDR2_LE
#: and CDR2_BE themselves and refuse the others (layouts of types that are not final).
OTHER_ENCAPSULATIONS_RCLPY_READS = frozenset(
    bytes([0, kind]) for kind in (0x00, 0x02, 0x03, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B))


def header_stamp_ns(data: bytes) -> int:
    """The header stamp [ns] of a serialized message whose first field is a ``std_msgs/Header``.

    Only the stamp is read: bytes whose rest is malformed give their stamp all the same.

    Raises:
        InvalidInputError: an encapsulation the readers do not read, or shorter than a stamp.
    """
    encoding = ENCODINGS.get(data[:2])
    if encoding is None or len(data) < PAYLOAD_START:
        refuse_encapsulation(data, "header stamp")
    try:
        sec, nanosec = encoding.stamp.unpack_from(data, PAYLOAD_START)
    except struct.error as error:
        raise InvalidInputError(f"header stamp: {len(data)} bytes, too short ({error})") from error
    if data[3] & 3:  # options that announce padding at the end
        check_end(data, PAYLOAD_START + 8, "header stamp")
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
        InvalidInputError: an encapsulation the readers do not read, truncated, or a frame_id
            that is not a NUL-terminated UTF-8 string.
    """
    try:
        encoding, stamp, frame_id, offset = read_header(data, "WrenchStamped")
        offset = align(offset, encoding.align8)
        values = encoding.wrench.unpack_from(data, offset)
    except struct.error as error:
        raise InvalidInputError(f"WrenchStamped of {len(data)} bytes: {error}") from error
    if data[3] & 3:  # options that announce padding at the end
        check_end(data, offset + 48, "WrenchStamped")
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
        #: the encoding of the messages the names and the layout above were read from
        self._encoding = CDR_LE

    def read(self, data: bytes) -> JointStateSample:
        """The message's fields.

        Raises:
            InvalidInputError: an encapsulation the readers do not read, truncated, or a
                frame_id or a name that is not a NUL-terminated UTF-8 string.
        """
        try:
            encoding, stamp, frame_id, offset = read_header(data, "JointState")
            if encoding is not self._encoding:  # another byte order or alignment: forget all
                self._names_bytes, self._layout, self._encoding = b"", (-1, -1, ()), encoding
            start = align(offset, 4)
            known = self._names_bytes
            if known and self._same_names(data, start):
                names = self._names
                offset = start + len(known)
                length, names_end, arrays = self._layout
                if length == len(data) and names_end == offset:
                    unpack = encoding.uint32.unpack_from
                    (p_at, p_count, p_start), (v_at, v_count, v_start), (e_at, e_count, e_start) \
                        = arrays
                    if unpack(data, p_at)[0] == p_count and unpack(data, v_at)[0] == v_count \
                            and unpack(data, e_at)[0] == e_count:
                        if data[3] & 3:  # options that announce padding at the end
                            check_end(data, e_start + 8 * e_count, "JointState")
                        f8 = encoding.float64
                        # (three calls written out: a generator costs more than a read)
                        sample = JointStateSample(
                            stamp, frame_id, names,
                            np.frombuffer(data, f8, p_count, p_start) if p_count else EMPTY,
                            np.frombuffer(data, f8, v_count, v_start) if v_count else EMPTY,
                            np.frombuffer(data, f8, e_count, e_start) if e_count else EMPTY)
                        return sample if encoding.native else _native(sample)
            else:
                names, offset = self._decode_names(data, start, encoding)
            names_end = offset
            layout: list[tuple[int, int, int]] = []
            values: list[np.ndarray] = []
            for _ in range(3):  # position, velocity, effort
                at = align(offset, 4)
                array, offset = read_doubles(data, offset, encoding)
                layout.append((at, len(array), offset - 8 * len(array)))
                values.append(array)
            if data[3] & 3:  # options that announce padding at the end
                check_end(data, offset, "JointState")
            self._layout = (len(data), names_end, tuple(layout))
        except (struct.error, ValueError) as error:
            if isinstance(error, InvalidInputError):
                raise
            raise InvalidInputError(f"JointState of {len(data)} bytes: {error}") from error
        return JointStateSample(stamp, frame_id, names, *values)

    def _decode_names(self, data: bytes, start: int, encoding: Encoding) -> tuple[tuple[str, ...], int]:
        """The names whose count is at ``start`` and the offset after them; kept with their
        bytes (the padding masked out) for the next messages."""
        count = read_count(data, start, 4, "JointState names", encoding)  # each has its length
        offset = start + 4
        decoded = []
        significant = [(start, offset)]  # the count, then each string, not the padding
        for _ in range(count):
            name, end = read_string(data, offset, encoding, "JointState name")
            significant.append((align(offset, 4), end))  # length, characters
            decoded.append(name)
            offset = end
        names = tuple(decoded)
        mask = np.zeros(offset - start, dtype=np.uint8)
        for first, end in significant:
            mask[first - start:end - start] = 0xFF
        self._names_mask = mask
        self._names_bytes = (np.frombuffer(data, np.uint8, offset - start, start) & mask).tobytes()
        self._names = names
        return names, offset

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


def _native(sample: JointStateSample) -> JointStateSample:
    """``sample`` with its arrays (views of bytes of the other byte order) as native copies."""
    position, velocity, effort = (native(values) if values.size else EMPTY
                                  for values in sample[3:])
    return sample._replace(position=position, velocity=velocity, effort=effort)


def read_float64_multi_array(data: bytes) -> np.ndarray:
    """The ``data`` of a serialized ``std_msgs/Float64MultiArray`` (read-only: a view of the
    bytes, or a native copy of big-endian ones).

    Raises:
        InvalidInputError: an encapsulation the readers do not read, truncated, or a dimension
            label that is not a NUL-terminated UTF-8 string.
    """
    encoding = ENCODINGS.get(data[:2])
    if encoding is None or len(data) < PAYLOAD_START:
        refuse_encapsulation(data, "Float64MultiArray")
    try:
        # label (its length at least), size, stride: 12 bytes a dimension at least
        dims = read_count(data, PAYLOAD_START, 12, "Float64MultiArray dimensions", encoding)
        offset = PAYLOAD_START + 4
        for _ in range(dims):
            _, offset = read_string(data, offset, encoding, "Float64MultiArray label")
            offset = align(offset, 4) + 8
        offset = align(offset, 4) + 4  # data_offset
        values, end = read_doubles(data, offset, encoding)
    except struct.error as error:
        raise InvalidInputError(f"Float64MultiArray of {len(data)} bytes: {error}") from error
    if data[3] & 3:  # options that announce padding at the end
        check_end(data, end, "Float64MultiArray")
    return values


def read_float64(data: bytes) -> float:
    """The value of a serialized ``std_msgs/Float64``.

    Raises:
        InvalidInputError: an encapsulation the readers do not read, or shorter than a double.
    """
    encoding = ENCODINGS.get(data[:2])
    if encoding is None or len(data) < PAYLOAD_START:
        refuse_encapsulation(data, "Float64")
    if len(data) < PAYLOAD_START + 8:
        raise InvalidInputError(f"Float64 of {len(data)} bytes: too short for its value")
    if data[3] & 3:  # options that announce padding at the end
        check_end(data, PAYLOAD_START + 8, "Float64")
    return float(encoding.double.unpack_from(data, PAYLOAD_START)[0])
