"""The CDR layout shared by :mod:`humanoid_balance.cdr`'s readers and writers.

Alignment counted from the end of the 4-byte encapsulation header, the header and
its checks, strings, ``float64`` sequences and sequence counts: the format is
described in :mod:`humanoid_balance.cdr`. Numpy and ``struct`` only.
"""

from __future__ import annotations

import struct

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


def align(offset: int, size: int) -> int:
    """``offset`` in the buffer moved up to a multiple of ``size`` counted from the payload start."""
    return offset + (-(offset - PAYLOAD_START) % size)


def check_encapsulation(data: bytes, what: str) -> None:
    """Refuse bytes that are not plain little-endian CDR (``00 01`` and two option bytes)."""
    if data[:2] != ENCAPSULATION[:2] or len(data) < PAYLOAD_START:
        raise InvalidInputError(
            f"{what}: encapsulation {data[:4].hex(' ') or 'none'}, expected {ENCAPSULATION[:2].hex(' ')} "
            "(plain CDR, little endian) and two option bytes: deserialize it with rclpy instead")


def check_end(data: bytes, end: int, what: str) -> None:
    """Refuse a message whose content (up to byte ``end``) runs into the padding that its
    encapsulation options announce (their last two bits: DDS-XTypes 1.3, 7.6.3.1.2)."""
    padding = data[3] & 3
    if padding and end > len(data) - padding:
        raise InvalidInputError(
            f"{what}: its content ends at byte {end}, in the last {padding} padding byte(s) of its "
            f"{len(data)} that the options announce (header {data[:4].hex(' ')}): truncated")


def decode_string(data: bytes, start: int, length: int, what: str) -> str:
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


def read_string(data: bytes, offset: int, what: str = "string") -> tuple[str, int]:
    """The string at ``offset`` (aligned to 4 here) and the offset after it."""
    offset = align(offset, 4)
    (length,) = UINT32.unpack_from(data, offset)
    return decode_string(data, offset + 4, length, what), offset + 4 + length


def read_doubles(data: bytes, offset: int) -> tuple[np.ndarray, int]:
    """The ``float64[]`` at ``offset`` (a read-only view of ``data``) and the offset after it."""
    offset = align(offset, 4)
    (count,) = UINT32.unpack_from(data, offset)
    offset += 4
    if not count:
        return EMPTY, offset
    offset = align(offset, 8)
    end = offset + 8 * count
    if end > len(data):
        raise InvalidInputError(f"{count} float64 values at offset {offset} run past the "
                                f"message's {len(data)} bytes")
    return np.frombuffer(data, dtype="<f8", count=count, offset=offset), end


def read_count(data: bytes, offset: int, smallest: int, what: str) -> int:
    """The sequence count at ``offset``, refused when that many elements of at least
    ``smallest`` bytes each cannot fit the rest of the message."""
    (count,) = UINT32.unpack_from(data, offset)
    room = len(data) - offset - 4
    if count > room // smallest:
        raise InvalidInputError(f"{what}: a count of {count} at offset {offset}, but {room} bytes "
                                f"follow (at least {smallest} bytes each)")
    return int(count)


def read_header(data: bytes, what: str) -> tuple[int, str, int]:
    """(stamp ns, frame_id, offset after the header) of a message that starts with a Header."""
    check_encapsulation(data, what)
    sec, nanosec, length = HEADER.unpack_from(data, PAYLOAD_START)
    frame_id = decode_string(data, 16, length, f"{what} frame_id")
    return sec * 1_000_000_000 + nanosec, frame_id, 16 + length


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

