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
messages, not bytes). The readers also read the same layout big endian
(``00 00``, CDR_BE) and plain XCDR2 (``00 07`` and ``00 06``: no value aligned to
more than 4 bytes), as rclpy does; the writers write ``00 01`` only.

A reader either gives the values ``rclpy.serialization.deserialize_message``
reads from the same bytes or raises :class:`InvalidInputError` (nothing else:
no ``struct.error``, no ``UnicodeDecodeError``, no allocation from a length
field; a count, a length or a sequence that cannot fit the bytes left is
refused before anything of it is read). No bytes need rclpy then: given malformed bytes, rclpy's C
type support prints a line such as "sequence size exceeds remaining buffer" to
the process's stderr for each such message, unthrottled. The readers refuse
some bytes that rclpy reads, on purpose:

- an encapsulation of a type that is not final (``00 02``, ``00 03``: PL_CDR;
  ``00 08`` to ``00 0b``: D_CDR2, PL_CDR2): rclpy reads them as plain CDR,
  which they are not (parameter headers, a DHEADER); a ROS 2 message type is
  final;
- a string without its NUL (rclpy keeps the last byte as a character), with a
  NUL before its end (rclpy cuts it there) or not UTF-8 (rclpy puts U+FFFD in
  place of the bad bytes);
- content that runs into the padding the option bytes announce (their last two
  bits, DDS-XTypes 1.3 7.6.3.1.2): rclpy honours that count when the length is a
  multiple of 4 only;
- a ``Float64MultiArray`` whose dimension count runs past its bytes (rclpy
  takes no dimension and reads the rest from the bytes after the count).

It accepts what rclpy accepts otherwise, bytes after the content included.
``header_stamp_ns`` reads the stamp alone: it gives the stamp of bytes whose
rest rclpy refuses.

The layout's pieces (alignment, strings, sequences, the header) are in
:mod:`humanoid_balance.cdr_primitives`, the readers in :mod:`humanoid_balance.cdr_readers`,
the writers in :mod:`humanoid_balance.cdr_writers`; this module gathers them, the name the
nodes import.

No rclpy here: ``test/test_cdr.py`` checks every reader and writer against
``rclpy.serialization`` on random messages; ``test/test_cdr_other_encodings.py`` the
big-endian and XCDR2 ones, and that malformed ones leave stderr silent;
``test/test_cdr_fuzz.py`` and ``tools/fuzz_cdr.py`` on mutated ones.
"""


from __future__ import annotations

from humanoid_balance.cdr_primitives import ENCAPSULATION, PAYLOAD_START
from humanoid_balance.cdr_readers import (
    OTHER_ENCAPSULATIONS_RCLPY_READS,
    JointStateReader,
    JointStateSample,
    StampedWrench,
    header_stamp_ns,
    read_float64,
    read_float64_multi_array,
    read_wrench_stamped,
)
from humanoid_balance.cdr_writers import (
    IMU_ANGULAR_VELOCITY,
    IMU_LINEAR_ACCELERATION,
    IMU_ORIENTATION,
    JointStateCommandWriter,
    JointStateWriter,
    PointStampedWriter,
    PolygonStampedWriter,
    StampedDoublesWriter,
    clock_message,
    float64_message,
    float64_multi_array_message,
    imu_writer,
    joint_state_message,
    pose_stamped_writer,
    with_stamp,
    wrench_stamped_writer,
)

__all__ = [
    "ENCAPSULATION",
    "IMU_ANGULAR_VELOCITY",
    "IMU_LINEAR_ACCELERATION",
    "IMU_ORIENTATION",
    "OTHER_ENCAPSULATIONS_RCLPY_READS",
    "PAYLOAD_START",
    "JointStateCommandWriter",
    "JointStateReader",
    "JointStateSample",
    "JointStateWriter",
    "PointStampedWriter",
    "PolygonStampedWriter",
    "StampedDoublesWriter",
    "StampedWrench",
    "clock_message",
    "float64_message",
    "float64_multi_array_message",
    "header_stamp_ns",
    "imu_writer",
    "joint_state_message",
    "pose_stamped_writer",
    "read_float64",
    "read_float64_multi_array",
    "read_wrench_stamped",
    "with_stamp",
    "wrench_stamped_writer",
]
