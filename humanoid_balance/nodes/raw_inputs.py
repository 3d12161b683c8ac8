"""Raw (serialized) inputs of the nodes' subscriptions: read by :mod:`humanoid_balance.cdr`
(plain CDR and XCDR2, either byte order), refused otherwise; never handed to rclpy, whose C
type support prints a line to stderr for each malformed message it is given."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from humanoid_balance import cdr


def joint_state_sample(reader: Any, msg: Any) -> cdr.JointStateSample:
    """The fields of a ``sensor_msgs/JointState``, serialized or a message object.

    Args:
        reader: a :class:`humanoid_balance.cdr.JointStateReader` (names decoded once).
        msg: the bytes of a raw subscription, or a ``sensor_msgs/JointState``.

    The arrays of bytes read are read-only (views of little-endian bytes): copy what is kept.

    Raises:
        InvalidInputError: bytes the reader refuses.
    """
    if isinstance(msg, bytes):
        return reader.read(msg)  # type: ignore[no-any-return]
    return cdr.JointStateSample(
        int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec),
        msg.header.frame_id, tuple(msg.name),
        *(np.asarray(values, dtype=float) for values in (msg.position, msg.velocity, msg.effort)))


def read_joint_state(reader: Any, msg: Any) -> tuple[int, tuple[str, ...], Any]:
    """(stamp [ns], names, positions) of a ``/joint_states`` message, serialized or a JointState
    (see :func:`joint_state_sample`)."""
    sample = joint_state_sample(reader, msg)
    return sample.stamp_ns, sample.names, sample.position


def read_float64(msg: Any) -> float:
    """The value of a ``std_msgs/Float64``, serialized or a message object.

    Raises:
        InvalidInputError: bytes :func:`humanoid_balance.cdr.read_float64` refuses.
    """
    if isinstance(msg, bytes):
        return cdr.read_float64(msg)
    return float(msg.data)


def all_finite(values: Sequence[float]) -> bool:
    """True when every value is a finite float."""
    return all(math.isfinite(v) for v in values)
