"""Tests of the compiled frame codec (humanoid_balance/can/codec.py) against cantools."""

from __future__ import annotations

import copy
import math
from typing import Any

import can
import cantools
import numpy as np
import pytest

from humanoid_balance.can.codec import CONVERSION, IDENTITY, LINEAR, FrameCodec
from humanoid_balance.can.protocol import Frame, WaistProtocol, load_database
from humanoid_balance.exceptions import ConfigurationError, InvalidInputError

MESSAGES = load_database().messages
SAMPLES = 400


def _values(message: Any, rng: np.random.Generator) -> list[dict[str, float]]:
    """Value sets for every signal of ``message``: the range ends, 0, ties of the rounding
    (half a step between two raw values) and uniform draws within the range."""
    sets: list[dict[str, float]] = []
    for k in range(SAMPLES):
        values: dict[str, float] = {}
        for signal in message.signals:
            lo, hi = signal.minimum, signal.maximum
            scale, offset = signal.conversion.scale, signal.conversion.offset
            kind = k % 5
            if kind == 0:
                value: float = lo if k % 2 else hi
            elif kind == 1 and lo <= 0 <= hi:
                value = 0 if scale == 1 else 0.0
            elif kind == 2:  # a tie: half a step above a raw value inside the range
                raw = rng.integers(round((lo - offset) / scale), round((hi - offset) / scale))
                value = min(offset + (float(raw) + 0.5) * scale, hi)
            elif scale == 1 and offset == 0:  # integer signals: integers
                value = int(rng.integers(int(lo), int(hi) + 1))
            else:
                value = float(rng.uniform(lo, hi))
            values[signal.name] = value
        sets.append(values)
    return sets


@pytest.mark.parametrize("message", MESSAGES, ids=[m.name for m in MESSAGES])
def test_encode_equals_cantools_over_the_ranges(message: Any) -> None:
    """Every frame of the DBC packs to cantools' bytes for values across each signal's range."""
    codec = FrameCodec(message)
    rng = np.random.default_rng(message.frame_id)
    for values in _values(message, rng):
        assert codec.encode(values) == message.encode(values, scaling=True, strict=False), values


@pytest.mark.parametrize("message", MESSAGES, ids=[m.name for m in MESSAGES])
def test_decode_equals_cantools_on_random_payloads(message: Any) -> None:
    """Random payloads (every bit pattern) decode to cantools' values, type included."""
    codec = FrameCodec(message)
    rng = np.random.default_rng(1000 + message.frame_id)
    payloads = [bytes(message.length), b"\xff" * message.length]
    payloads += [rng.integers(0, 256, message.length, dtype=np.uint8).tobytes()
                 for _ in range(SAMPLES)]
    for data in payloads:
        expected = message.decode(data, decode_choices=False, scaling=True)
        decoded = codec.decode(data)
        assert decoded == expected, data.hex()
        assert [type(v) for v in decoded.values()] == [type(v) for v in expected.values()]


def test_waist_frames_use_the_inline_roundings() -> None:
    """The waist DBC's signals are all rounded inline (identity or linear), none by call."""
    kinds = {s.name: s.rounding for m in MESSAGES for s in FrameCodec(m).signals}
    assert kinds["Current1"] == LINEAR and kinds["PositionCounts"] == IDENTITY
    assert CONVERSION not in kinds.values()


def test_value_outside_the_range_is_refused_with_the_range() -> None:
    """A value beyond its signal's [minimum|maximum] raises and names the signal and range."""
    codec = FrameCodec(load_database().get_message_by_name("DriveStatus1"))
    with pytest.raises(InvalidInputError,
                       match=r"DriveStatus1.Velocity = 400.0 rad/s is outside \[-327.68, 327.67\]"):
        codec.encode({"Velocity": 400.0, "FaultCode": 0, "State": 0})


def test_nan_is_refused_as_not_finite() -> None:
    """NaN is refused as not finite before anything is packed."""
    codec = FrameCodec(load_database().get_message_by_name("WaistCurrentCmd"))
    with pytest.raises(InvalidInputError, match=r"WaistCurrentCmd.Current2 must be finite"):
        codec.encode({"Current1": 0.0, "Current2": math.nan})


def test_wrong_payload_length_is_refused() -> None:
    """A payload shorter than the frame's length raises ValueError."""
    codec = FrameCodec(load_database().get_message_by_name("DriveFeedback1"))
    with pytest.raises(ValueError, match="DriveFeedback1: 4 bytes instead of 5"):
        codec.decode(bytes(4))


def _single_message(signal_line: str) -> Any:
    dbc = ('VERSION ""\n\nNS_ :\n\nBS_:\n\nBU_: A\n\n'
           f"BO_ 16 Test: 2 A\n {signal_line}\n")
    return cantools.database.load_string(dbc, database_format="dbc").messages[0]


@pytest.mark.parametrize(("line", "reason"), [
    ('SG_ Big : 7|16@0- (1,0) [-100|100] "" A', "only little-endian integer signals"),
    ('SG_ Wide : 0|8@1- (1,0) [-1000|1000] "" A', "the range end -1000 does not fit 8 bits"),
    ('SG_ Free : 0|16@1- (1,0) [0|0] "" A', r"needs a \[minimum\|maximum\] range"),
], ids=["big_endian", "range_beyond_bits", "no_range"])
def test_what_cannot_be_compiled_is_refused(line: str, reason: str) -> None:
    """A signal the codec cannot pack exactly is refused when the codec is built, with why."""
    with pytest.raises(ConfigurationError, match=reason):
        FrameCodec(_single_message(line))


def test_protocol_frames_equal_cantools_encoding() -> None:
    """WaistProtocol's encoders give the bytes cantools gives for the same signal values."""
    protocol, db = WaistProtocol(), load_database()
    msg = protocol.encode_feedback(2, -1234567, 3.2851, enabled=True, fault=False, watchdog=True,
                                   brake=False)
    expected = db.get_message_by_name("DriveFeedback2").encode(
        {"PositionCounts": -1234567, "Current": 3.2851, "Enabled": 1, "Fault": 0, "Watchdog": 1,
         "Brake": 0}, scaling=True, strict=False)
    assert bytes(msg.data) == expected and msg.arbitration_id == 0x182 and msg.dlc == 5


def test_standard_frame_has_the_fields_can_message_gives() -> None:
    """Frame.standard sets every can.Message field as can.Message's constructor would."""
    frame = Frame.standard(0x181, b"\x01\x02\x03\x04\x05")
    message = can.Message(arbitration_id=0x181, data=b"\x01\x02\x03\x04\x05",
                          is_extended_id=False)
    fields = [name for name in can.Message.__slots__ if name != "__weakref__"]
    assert [getattr(frame, n) for n in fields] == [getattr(message, n) for n in fields]
    assert type(frame.data) is bytearray


def test_frame_deep_copy_is_an_independent_equal_frame() -> None:
    """A Frame's deep copy (what the virtual bus hands each receiver) is equal and owns its data."""
    frame = Frame(arbitration_id=0x200, data=b"\x01\x02\x03\x04", is_extended_id=False,
                  channel="waist", timestamp=1.5)
    copied = copy.deepcopy(frame)
    assert type(copied) is Frame and copied.equals(frame, timestamp_delta=None)
    copied.data[0] = 0xFF
    assert frame.data[0] == 0x01


def test_frame_crosses_a_virtual_bus_unchanged() -> None:
    """A Frame sent on a python-can virtual bus arrives with its id, length and payload."""
    sender = can.Bus(interface="virtual", channel="test_codec_frame")
    receiver = can.Bus(interface="virtual", channel="test_codec_frame")
    try:
        sender.send(WaistProtocol().encode_currents((1.5, -2.25)))
        got = receiver.recv(timeout=1.0)
    finally:
        sender.shutdown()
        receiver.shutdown()
    assert got is not None and (got.arbitration_id, got.dlc, bytes(got.data)) == (
        0x200, 4, (1500).to_bytes(2, "little", signed=True) + (-2250).to_bytes(2, "little",
                                                                              signed=True))
