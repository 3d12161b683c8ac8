"""The CDR layout shared by :mod:`humanoid_balance.cdr`'s readers and writers.

Alignment counted from the end of the 4-byte encapsulation header, the header and
its checks, the encodings the readers read (byte order, alignment of 8-byte values),
strings, ``float64`` sequences and sequence counts: the format is described in
:mod:`humanoid_balance.cdr`. Numpy and ``struct`` only.
"""

from __future__ import annotations

import struct
import sys
from typing import NamedTuple, NoReturn

import numpy as np

from humanoid_balance.exceptions import InvalidInputError

#: plain CDR, little endian, no options
ENCAPSULATION = b"\x00\x01\x00\x00"
#: the payload starts after the encapsulation header; alignment counts from there
PAYLOAD_START = 4

#: a header stamp: sec, nanosec
STAMP = struct.Struct("<iI")
#: a header up to its frame: stamp sec, nanosec, frame_id length
HEADER = struct.Struct("<iII")
UINT32 = struct.Struct("<I")
DOUBLE = struct.Struct("<d")
#: a wrench's force x, y, z and torque x, y, z
WRENCH = struct.Struct("<6d")
#: the empty, read-only array the readers give for an empty sequence
EMPTY = np.zeros(0)
EMPTY.flags.writeable = False


class Encoding(NamedTuple):
    """How a payload lays out its numbers: byte order and the alignment of 8-byte values.

    Attributes:
        name: the encapsulation's name in DDS-XTypes 1.3 (``CDR_LE``, ``CDR2_BE``, ...).
        align8: the alignment of a ``float64`` [bytes]: 8 in XCDR1, 4 in XCDR2 (which aligns
            no value to more than 4 bytes).
        stamp: a header stamp (sec, nanosec) in its byte order.
        header: a header up to its frame (sec, nanosec, frame_id length).
        uint32: a length or count.
        double: a ``float64``.
        wrench: six ``float64`` one after the other.
        float64: the numpy dtype of its doubles.
        native: its byte order is this machine's (its doubles are read as views of the bytes;
            otherwise as native copies).
    """

    name: str
    align8: int
    stamp: struct.Struct
    header: struct.Struct
    uint32: struct.Struct
    double: struct.Struct
    wrench: struct.Struct
    float64: str
    native: bool


def _encoding(name: str, order: str, align8: int) -> Encoding:
    return Encoding(name, align8, struct.Struct(order + "iI"), struct.Struct(order + "iII"),
                    struct.Struct(order + "I"), struct.Struct(order + "d"),
                    struct.Struct(order + "6d"), order + "f8",
                    (order == "<") == (sys.byteorder == "little"))


#: plain CDR (XCDR1), little endian: what ROS 2's middlewares write (the structs above)
CDR_LE = Encoding("CDR_LE", 8, STAMP, HEADER, UINT32, DOUBLE, WRENCH, "<f8",
                  sys.byteorder == "little")
CDR_BE = _encoding("CDR_BE", ">", 8)
CDR2_LE = _encoding("CDR2_LE", "<", 4)
CDR2_BE = _encoding("CDR2_BE", ">", 4)
#: the encodings the readers read, by the encapsulation's first two bytes (DDS-XTypes 1.3):
#: plain CDR and plain XCDR2 of either byte order, the layouts of a final type
#: (every ROS 2 message type)
ENCODINGS = {b"\x00\x01": CDR_LE, b"\x00\x00": CDR_BE, b"\x00\x07": CDR2_LE, b"\x00\x06": CDR2_BE}
#: the identifiers of a mutable or appendable type's layout (parameter lists, a DHEADER first):
#: rclpy reads them as plain CDR of their version and byte order; the readers refuse them
NOT_FINAL = {b"\x00\x02": "PL_CDR_BE", b"\x00\x03": "PL_CDR_LE", b"\x00\x08": "D_CDR2_BE",
             b"\x00\x09": "D_CDR2_LE", b"\x00\x0a": "PL_CDR2_BE", b"\x00\x0b": "PL_CDR2_LE"}


def align(offset: int, size: int) -> int:
    """``offset`` in the buffer moved up to a multiple of ``size`` counted from the payload start."""
    return offset + (-(offset - PAYLOAD_START) % size)


def refuse_encapsulation(data: bytes, what: str) -> NoReturn:
    """Raise the :class:`InvalidInputError` of bytes whose first two are not a key of
    :data:`ENCODINGS`, or shorter than the encapsulation header.

    The readers look the encoding up themselves (``ENCODINGS.get(data[:2])``: a function
    around it costs as much again on the 1 kHz paths) and call this when it is refused.
    """
    raise InvalidInputError(_encapsulation_refused(data, what))


def _encapsulation_refused(data: bytes, what: str) -> str:
    if data[:2] in ENCODINGS:
        return (f"{what}: {len(data)} bytes ({data.hex(' ')}), shorter than the encapsulation "
                "header (two identifier and two option bytes)")
    kind = NOT_FINAL.get(data[:2])
    why = (f" ({kind}: the layout of a mutable or appendable type, where a ROS 2 message is "
           "final; rclpy would read it as plain CDR)" if kind else "")
    return (f"{what}: encapsulation {data[:4].hex(' ') or 'none'}{why}, expected 00 01 (CDR_LE), "
            "00 00 (CDR_BE), 00 07 (CDR2_LE) or 00 06 (CDR2_BE) and two option bytes")


def check_encapsulation(data: bytes, what: str) -> None:
    """Refuse bytes that are not plain little-endian CDR (``00 01`` and two option bytes): what
    the writers patch."""
    if data[:2] != ENCAPSULATION[:2] or len(data) < PAYLOAD_START:
        raise InvalidInputError(
            f"{what}: encapsulation {data[:4].hex(' ') or 'none'}, expected {ENCAPSULATION[:2].hex(' ')} "
            "(plain CDR, little endian) and two option bytes")


def check_end(data: bytes, end: int, what: str) -> None:
    """Refuse a message whose content (up to byte ``end``) runs into the padding that its
    encapsulation options announce (their last two bits: DDS-XTypes 1.3, 7.6.3.1.2)."""
    padding = data[3] & 3
    if padding and end > len(data) - padding:
        raise InvalidInputError(
            f"{what}: its content ends at byte {end}, in the last {padding} padding byte(s) of its "
            f"{len(data)} that the options announce (header {data[:4].hex(' ')}): truncated")


def decode_string(data: bytes, start: int, length: int, what: str, field: str = "") -> str:
    """The string whose ``length`` bytes (its NUL included) start at ``start``; ``what`` and
    ``field`` name it in an error (apart: the label is not built for every message read)."""
    end = start + length
    if end > len(data):
        raise InvalidInputError(f"{what}{field}: a string of {length} bytes at offset {start} "
                                f"runs past the message's {len(data)} bytes")
    if not length:  # no NUL either: rclpy reads it as "" too
        return ""
    if data[end - 1]:
        raise InvalidInputError(f"{what}{field}: the string of {length} bytes at offset {start} "
                                "is without its NUL terminator")
    inner = data.find(b"\x00", start, end - 1)
    if inner >= 0:
        raise InvalidInputError(f"{what}{field}: the string of {length} bytes at offset {start} "
                                f"has a NUL at byte {inner} before its end")
    try:
        return data[start:end - 1].decode()
    except UnicodeDecodeError as error:
        raise InvalidInputError(f"{what}{field}: the string at offset {start} is not UTF-8 "
                                f"({error.reason} at its byte {error.start})") from None


def read_string(data: bytes, offset: int, encoding: Encoding, what: str = "string") -> tuple[str, int]:
    """The string at ``offset`` (aligned to 4 here) and the offset after it."""
    offset = align(offset, 4)
    (length,) = encoding.uint32.unpack_from(data, offset)
    return decode_string(data, offset + 4, length, what), offset + 4 + length


def native(values: np.ndarray) -> np.ndarray:
    """``values`` of the other byte order as a read-only array of this machine's ``float64``."""
    values = values.astype(np.float64)
    values.flags.writeable = False
    return values


def read_doubles(data: bytes, offset: int, encoding: Encoding) -> tuple[np.ndarray, int]:
    """The ``float64[]`` at ``offset`` (a read-only view of ``data``, or a read-only copy in this
    machine's byte order) and the offset after it."""
    offset = align(offset, 4)
    (count,) = encoding.uint32.unpack_from(data, offset)
    offset += 4
    if not count:
        return EMPTY, offset
    offset = align(offset, encoding.align8)
    end = offset + 8 * count
    if end > len(data):
        raise InvalidInputError(f"{count} float64 values at offset {offset} run past the "
                                f"message's {len(data)} bytes")
    values = np.frombuffer(data, encoding.float64, count, offset)  # (keywords cost more)
    return (values if encoding.native else native(values)), end


def read_count(data: bytes, offset: int, smallest: int, what: str, encoding: Encoding) -> int:
    """The sequence count at ``offset``, refused when that many elements of at least
    ``smallest`` bytes each cannot fit the rest of the message."""
    (count,) = encoding.uint32.unpack_from(data, offset)
    room = len(data) - offset - 4
    if count > room // smallest:
        raise InvalidInputError(f"{what}: a count of {count} at offset {offset}, but {room} bytes "
                                f"follow (at least {smallest} bytes each)")
    return int(count)


def read_header(data: bytes, what: str) -> tuple[Encoding, int, str, int]:
    """(encoding, stamp ns, frame_id, offset after the header) of a message that starts with a
    Header."""
    encoding = ENCODINGS.get(data[:2])
    if encoding is None or len(data) < PAYLOAD_START:
        refuse_encapsulation(data, what)
    sec, nanosec, length = encoding.header.unpack_from(data, PAYLOAD_START)
    frame_id = decode_string(data, 16, length, what, " frame_id")
    return encoding, sec * 1_000_000_000 + nanosec, frame_id, 16 + length


def header_template(frame_id: str) -> bytearray:
    """Encapsulation, a zero stamp and ``frame_id``: the start of every stamped message."""
    encoded = frame_id.encode()
    return bytearray(ENCAPSULATION + HEADER.pack(0, 0, len(encoded) + 1) + encoded + b"\x00")


def pad(buffer: bytearray, size: int) -> None:
    """Zeros appended to ``buffer`` up to the next multiple of ``size`` (from the payload start)."""
    buffer.extend(b"\x00" * (align(len(buffer), size) - len(buffer)))


def pack_stamp(buffer: bytearray, stamp_ns: int) -> None:
    """Write the header stamp ``stamp_ns`` [ns] into a serialized stamped message."""
    sec, nanosec = divmod(stamp_ns, 1_000_000_000)
    STAMP.pack_into(buffer, PAYLOAD_START, sec, nanosec)

