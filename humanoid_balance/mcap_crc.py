"""CRCs for the MCAP files rosbags writes (issue 35).

rosbags' MCAP writer (``rosbags.rosbag2.storage_mcap.McapWriter``, 0.10 to 0.11 at least)
leaves every CRC of the file 0: the chunks' ``uncompressed_crc``, the DataEnd record's
``data_section_crc`` and the footer's ``summary_crc``. A CRC of 0 means "not computed" to
MCAP readers, so a bag with bytes flipped in a chunk replays with no word. rosbags has no
option to compute them, and the ``mcap`` package's writer does not write rosbag2's
``metadata.yaml``; so :func:`seal` fills them in after rosbags closed the file, in place,
as the MCAP specification defines them (https://mcap.dev/spec):

* Chunk: CRC-32 of the chunk's records, uncompressed;
* DataEnd: CRC-32 of every byte from the file's start up to the DataEnd record;
* Footer: CRC-32 of every byte from the summary's start up to and including the footer's
  ``summary_offset_start`` field.

Readers that check them (rosbags' reader for the chunks, ``mcap``'s with ``validate_crcs``)
then refuse a damaged bag.
"""

from __future__ import annotations

import struct
from binascii import crc32
from pathlib import Path

MAGIC = b"\x89MCAP0\r\n"
OP_FOOTER = 0x02
OP_CHUNK = 0x06
OP_DATA_END = 0x0F
_HEADER = struct.Struct("<BQ")  # opcode, content length
#: chunk content up to its CRC: message start time, end time, uncompressed size (u64 each)
_CHUNK_TIMES = struct.Struct("<QQQ")


def _error(text: str) -> Exception:
    from humanoid_balance.bag import BagError  # bag.py imports this module when closing

    return BagError(text)


def seal(path: str | Path) -> int:
    """Write the CRCs of the MCAP file ``path`` in place; returns the number of chunks sealed.

    Raises:
        BagError: the file is not an MCAP file this understands (no magic, a record running
            past the end, a chunk compression it cannot undo, no DataEnd or Footer).
    """
    path = Path(path)
    data = bytearray(path.read_bytes())
    if data[:8] != MAGIC or data[-8:] != MAGIC:
        raise _error(f"{path}: not an MCAP file (no magic at its start and end)")
    chunks = 0
    offset = 8
    data_end: int | None = None
    footer: int | None = None
    while offset < len(data) - 8:
        if offset + _HEADER.size > len(data):
            raise _error(f"{path}: a record header runs past the end at byte {offset}")
        opcode, length = _HEADER.unpack_from(data, offset)
        content = offset + _HEADER.size
        if content + length > len(data):
            raise _error(f"{path}: a record (opcode {opcode:#x}) runs past the end")
        if opcode == OP_CHUNK:
            _seal_chunk(data, content, path)
            chunks += 1
        elif opcode == OP_DATA_END and data_end is None:
            data_end = offset
        elif opcode == OP_FOOTER:
            footer = offset
        offset = content + length
    if data_end is None or footer is None:
        raise _error(f"{path}: no DataEnd or Footer record (was the bag closed?)")
    struct.pack_into("<I", data, data_end + _HEADER.size, crc32(data[:data_end]))
    summary_start, _ = struct.unpack_from("<QQ", data, footer + _HEADER.size)
    start = summary_start if summary_start else footer
    summary_crc_at = footer + _HEADER.size + 16
    struct.pack_into("<I", data, summary_crc_at, crc32(data[start:summary_crc_at]))
    path.write_bytes(bytes(data))
    return chunks


def _seal_chunk(data: bytearray, content: int, path: Path) -> None:
    """Write one chunk's CRC (over its records, uncompressed)."""
    crc_at = content + _CHUNK_TIMES.size
    (name_length,) = struct.unpack_from("<I", data, crc_at + 4)
    compression = bytes(data[crc_at + 8:crc_at + 8 + name_length]).decode()
    records_at = crc_at + 8 + name_length
    (records_length,) = struct.unpack_from("<Q", data, records_at)
    records = bytes(data[records_at + 8:records_at + 8 + records_length])
    if compression:
        records = _decompress(records, compression, path)
    struct.pack_into("<I", data, crc_at, crc32(records))


def _decompress(records: bytes, compression: str, path: Path) -> bytes:
    """A compressed chunk's records, with the libraries rosbags reads them with."""
    if compression == "lz4":
        from lz4.frame import decompress

        return bytes(decompress(records))
    if compression == "zstd":
        try:
            from compression import zstd  # type: ignore[import-not-found]  # Python 3.14
        except ImportError:
            from backports import zstd  # type: ignore[import-not-found,no-redef]
        return bytes(zstd.decompress(records))
    raise _error(f"{path}: a chunk compressed with {compression!r}, which this cannot undo")
