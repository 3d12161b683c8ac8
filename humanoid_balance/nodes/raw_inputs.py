"""Raw (serialized) inputs of the nodes' subscriptions: read by :mod:`humanoid_balance.cdr`,
left to rclpy where the readers leave them (big endian, XCDR2), refused otherwise."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64

from humanoid_balance import cdr
from humanoid_balance.exceptions import InvalidInputError


def deserialize_refused(data: bytes, message_type: Any, error: InvalidInputError) -> Any:
    """The message a :mod:`humanoid_balance.cdr` reader refused with ``error``, read by rclpy
    when it is one the readers leave to rclpy (big endian, XCDR2: ``cdr.rclpy_may_read``).

    Raises:
        InvalidInputError: ``error`` again for plain little-endian CDR (the reader's refusal
            stands: rclpy would read some of it as garbage, and past the end of 4 bytes that
            announce padding, at times a segmentation fault); or rclpy refuses it too.
    """
    if not cdr.rclpy_may_read(data):
        raise error
    try:
        return deserialize_message(data, message_type)
    except RuntimeError as exc:  # rclpy's RMWError
        raise InvalidInputError(f"{error}; rclpy cannot read it either ({exc})") from exc


def joint_state_sample(reader: Any, msg: Any) -> cdr.JointStateSample:
    """The fields of a ``sensor_msgs/JointState``, serialized or a message object.

    Args:
        reader: a :class:`humanoid_balance.cdr.JointStateReader` (names decoded once).
        msg: the bytes of a raw subscription, or a ``sensor_msgs/JointState``.

    Bytes that are not plain little-endian CDR are deserialized by rclpy. The arrays of
    bytes read are read-only views of them: copy what is kept.

    Raises:
        InvalidInputError: bytes that neither the reader nor rclpy reads (see
            :func:`deserialize_refused`).
    """
    if isinstance(msg, bytes):
        try:
            return reader.read(msg)  # type: ignore[no-any-return]
        except InvalidInputError as error:
            msg = deserialize_refused(msg, JointState, error)
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
    """The value of a ``std_msgs/Float64``, serialized (rclpy reads what is not plain
    little-endian CDR) or a message object.

    Raises:
        InvalidInputError: bytes that neither reads (see :func:`deserialize_refused`).
    """
    if isinstance(msg, bytes):
        try:
            return cdr.read_float64(msg)
        except InvalidInputError as error:
            msg = deserialize_refused(msg, Float64, error)
    return float(msg.data)


def all_finite(values: Sequence[float]) -> bool:
    """True when every value is a finite float."""
    return all(math.isfinite(v) for v in values)
