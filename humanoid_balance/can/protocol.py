"""The waist drives' CAN protocol, written once as data in ``waist_drive.dbc``.

Choice: a DBC file read with ``cantools`` rather than CANopen CiA 402 through the
``canopen`` library. The paper's drives speak a small private protocol on a
320 kbit/s bus that must carry a 2 ms cycle for two motors under 50 % load;
CiA 402's PDO/SYNC/heartbeat traffic and 8-byte object layout do not fit that
budget without re-mapping the PDOs anyway, and a DBC is the format every CAN
tool (cantools, SavvyCAN, candump decoders, Vector tools) reads, so the bytes on
the wire are documented in one file that both the controller and the simulated
drive use. Nothing is hand-packed: every frame goes through the DBC.

Frames (standard 11-bit ids; ``n`` = drive node id 1 or 2):

=========  ===========================  ====  =========================================
id         name                         DLC   when
=========  ===========================  ====  =========================================
0x200      WaistCurrentCmd              4     every servo period (both currents, 1 mA)
0x300      WaistVelocityCmd             4     velocity mode (both speeds, 0.01 rad/s)
0x400      WaistPositionCmd             8     position mode (both positions, 1e-4 rad)
0x100 + n  DriveControl<n>              1     on request: enable, disable, clear fault
0x180 + n  DriveFeedback<n>             5     answer to each setpoint frame
0x280 + n  DriveStatus<n>               4     10 Hz and on change: velocity, fault, state
=========  ===========================  ====  =========================================

Why one setpoint frame for both motors and a 5-byte feedback: per-motor 2-byte
commands with 8-byte feedback at 500 Hz take 65.6 % of 320 kbit/s (worst-case
stuffing, see :mod:`humanoid_balance.core.bus_load`); this layout takes about
48 %. The velocity used by the servo is the difference of two encoder samples
(as in the paper); the drive's own velocity estimate comes in the slower status
frame.

The decoder never raises: malformed, unknown, remote, extended-id and error
frames, and setpoints outside their signal's range, come back as :class:`Rejected`
with the reason, and are counted by the caller. The encoders refuse
(``InvalidInputError``) any non-finite value or a value outside the DBC signal's
range: nothing out of range is ever packed. Every range is the DBC's
``[minimum|maximum]``, read once when :class:`WaistProtocol` is built.

Cost: the frames are encoded and decoded by
:class:`~humanoid_balance.can.codec.FrameCodec`, each frame's layout compiled from the DBC
once (``cantools`` per frame cost more than the servo's mathematics), and they are
:class:`Frame`, a ``can.Message`` that python-can's ``virtual`` interface copies cheaply.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from enum import IntEnum
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple, Union

import can
import cantools
from cantools.database.can import Database

from humanoid_balance.can.codec import FrameCodec
from humanoid_balance.core.bus_load import FrameSpec
from humanoid_balance.exceptions import ConfigurationError

DBC_PATH = Path(__file__).resolve().parent / "waist_drive.dbc"
#: Encoder counts per motor revolution (4096-line incremental encoder, x4 decoding).
COUNTS_PER_REV = 16384
#: SocketCAN error class bit for bus-off in an error frame's identifier (linux/can/error.h).
CAN_ERR_BUSOFF = 0x40
NODE_IDS = (1, 2)

CURRENT_CMD_ID = 0x200
VELOCITY_CMD_ID = 0x300
POSITION_CMD_ID = 0x400
CONTROL_BASE_ID = 0x100
FEEDBACK_BASE_ID = 0x180
STATUS_BASE_ID = 0x280
#: Setpoint frames: kind and signal name prefix (``<prefix>1`` for node 1, ``<prefix>2``).
SETPOINT_FRAMES = {CURRENT_CMD_ID: ("current", "Current"), VELOCITY_CMD_ID: ("velocity", "Velocity"),
                   POSITION_CMD_ID: ("position", "Position")}


class ControlCommand(IntEnum):
    """``DriveControl<n>.Command`` values."""

    DISABLE = 0
    ENABLE = 1
    CLEAR_FAULT = 2
    MODE_CURRENT = 3
    MODE_VELOCITY = 4
    MODE_POSITION = 5


class FaultCode(IntEnum):
    """``DriveStatus<n>.FaultCode`` values."""

    NONE = 0
    OVERCURRENT = 1
    WATCHDOG = 2
    ENCODER = 3
    INTERNAL = 4
    OVERTEMPERATURE = 5


class DriveState(IntEnum):
    """``DriveStatus<n>.State`` values."""

    DISABLED = 0
    ENABLED = 1
    FAULT = 2
    HOLDING = 3


@dataclass(frozen=True)
class DriveFeedback:
    """A drive's answer to a setpoint frame (decoded ``DriveFeedback<n>``).

    Attributes:
        motor_id: drive node id.
        position_counts: encoder count (signed 24 bit).
        position_rad: motor shaft angle, rad.
        current_a: measured current, A (5 mA resolution).
        enabled, fault, watchdog, brake: state bits.
    """

    motor_id: int
    position_counts: int
    position_rad: float
    current_a: float
    enabled: bool
    fault: bool
    watchdog: bool
    brake: bool


@dataclass(frozen=True)
class DriveStatus:
    """A drive's slow status (decoded ``DriveStatus<n>``)."""

    motor_id: int
    velocity_rad_s: float
    fault_code: int
    state: int


@dataclass(frozen=True)
class SetpointCommand:
    """A decoded setpoint frame for both drives.

    Attributes:
        kind: ``current`` (A), ``velocity`` (rad/s) or ``position`` (rad).
        values: by node id: ``values[0]`` for node 1, ``values[1]`` for node 2.
    """

    kind: str
    values: tuple[float, float]


@dataclass(frozen=True)
class ControlFrame:
    """A decoded ``DriveControl<n>`` frame."""

    motor_id: int
    command: ControlCommand


class Rejected(NamedTuple):
    """A frame the decoder did not accept.

    ``reason``: ``error_frame``, ``remote_frame``, ``foreign_id``, ``unknown_id``,
    ``wrong_length``, ``undecodable`` or ``bad_value`` (a setpoint outside its signal's
    range, a command outside the table).
    """

    reason: str
    bus_off: bool = False

Decoded = Union[DriveFeedback, DriveStatus, SetpointCommand, ControlFrame, Rejected]  # noqa: UP007 (3.10 alias)


#: ``can.Message``'s fields in python-can 4; :class:`Frame` sets them directly while they are these
_MESSAGE_FIELDS = frozenset({
    "arbitration_id", "bitrate_switch", "channel", "data", "dlc", "error_state_indicator",
    "is_error_frame", "is_extended_id", "is_fd", "is_remote_frame", "is_rx", "timestamp"})
_FIELDS_KNOWN = set(can.Message.__slots__) - {"__weakref__"} == _MESSAGE_FIELDS


class Frame(can.Message):  # type: ignore[misc]
    """A :class:`can.Message` that is quick to make and to deep-copy.

    python-can's ``virtual`` interface deep-copies every frame for each receiver, and
    ``copy.deepcopy`` of a ``bytearray`` payload goes through ``__reduce_ex__``: 7-12 us a
    frame, more than encoding it. A ``Frame`` copies its payload directly, and sets its fields
    without ``can.Message.__init__``'s argument handling (when python-can's fields are those of
    :data:`_MESSAGE_FIELDS`; otherwise through ``__init__``). Apart from that a ``Frame`` is a
    ``can.Message``.
    """

    __slots__ = ()

    @classmethod
    def standard(cls, arbitration_id: int, data: bytes) -> Frame:
        """A data frame with an 11-bit id, ``dlc = len(data)``, timestamp 0."""
        if not _FIELDS_KNOWN:  # pragma: no cover - another python-can
            return cls(arbitration_id=arbitration_id, data=data, is_extended_id=False)
        frame = cls.__new__(cls)
        frame.timestamp, frame.arbitration_id, frame.is_extended_id = 0.0, arbitration_id, False
        frame.is_remote_frame = frame.is_error_frame = frame.is_fd = False
        frame.bitrate_switch = frame.error_state_indicator = False
        frame.is_rx, frame.channel = True, None
        frame.data = bytearray(data)
        frame.dlc = len(frame.data)
        return frame

    def __deepcopy__(self, memo: dict[int, Any] | None) -> Frame:
        if not _FIELDS_KNOWN:  # pragma: no cover - another python-can
            return Frame(timestamp=self.timestamp, arbitration_id=self.arbitration_id,
                         is_extended_id=self.is_extended_id, is_remote_frame=self.is_remote_frame,
                         is_error_frame=self.is_error_frame,
                         channel=copy.deepcopy(self.channel, memo), dlc=self.dlc,
                         data=bytearray(self.data), is_fd=self.is_fd, is_rx=self.is_rx,
                         bitrate_switch=self.bitrate_switch,
                         error_state_indicator=self.error_state_indicator)
        frame = Frame.__new__(Frame)
        frame.timestamp, frame.arbitration_id = self.timestamp, self.arbitration_id
        frame.is_extended_id, frame.is_remote_frame = self.is_extended_id, self.is_remote_frame
        frame.is_error_frame, frame.is_fd, frame.is_rx = self.is_error_frame, self.is_fd, self.is_rx
        frame.bitrate_switch = self.bitrate_switch
        frame.error_state_indicator = self.error_state_indicator
        frame.channel = copy.deepcopy(self.channel, memo)
        frame.dlc, frame.data = self.dlc, bytearray(self.data)
        return frame


@lru_cache(maxsize=1)
def load_database() -> Database:
    """The drive protocol database (parsed once)."""
    db = cantools.database.load_file(str(DBC_PATH))
    if not isinstance(db, Database):  # pragma: no cover - the file is a DBC
        raise ConfigurationError(f"{DBC_PATH} is not a CAN database")
    return db


def counts_to_rad(counts: int, counts_per_rev: int = COUNTS_PER_REV) -> float:
    """Encoder counts to motor angle in rad."""
    return 2.0 * math.pi * counts / counts_per_rev


def rad_to_counts(angle_rad: float, counts_per_rev: int = COUNTS_PER_REV) -> int:
    """Motor angle in rad to the encoder count (rounded down, as a quadrature counter)."""
    return math.floor(angle_rad / (2.0 * math.pi) * counts_per_rev)


class WaistProtocol:
    """Encode and decode the waist drives' frames through the DBC.

    Args:
        counts_per_rev: encoder counts per motor revolution.
    """

    def __init__(self, counts_per_rev: int = COUNTS_PER_REV) -> None:
        if counts_per_rev <= 0:
            raise ConfigurationError(f"counts_per_rev must be > 0, got {counts_per_rev}")
        self.counts_per_rev = counts_per_rev
        self.db = load_database()
        self._by_id = {m.frame_id: m for m in self.db.messages}
        #: each frame's layout compiled from the DBC once (the encoders' and decoder's codec);
        #: it refuses a signal that is not an integer with a [minimum|maximum] range, so every
        #: decoded value is finite
        self._codecs = {m.frame_id: FrameCodec(m) for m in self.db.messages}
        #: (signal, minimum, maximum) per frame, the codecs' (a decoded setpoint is checked on them)
        self._limits = {frame_id: tuple((s.name, s.minimum, s.maximum) for s in codec.signals)
                        for frame_id, codec in self._codecs.items()}
        #: setpoint frame id -> (kind, signal of node 1, signal of node 2)
        self._setpoints = {frame_id: (kind, f"{prefix}1", f"{prefix}2")
                           for frame_id, (kind, prefix) in SETPOINT_FRAMES.items()}
        self._feedback_current_a = self.signal_range("DriveFeedback1", "Current")
        lo_counts, hi_counts = self.signal_range("DriveFeedback1", "PositionCounts")
        #: the lowest count and the counter's span (counts wrap like the 24-bit counter)
        self._feedback_counts_span = (int(lo_counts), int(hi_counts - lo_counts) + 1)
        self._status_velocity_rad_s = self.signal_range("DriveStatus1", "Velocity")

    def signal_range(self, message_name: str, signal_name: str) -> tuple[float, float]:
        """``(minimum, maximum)`` of a DBC signal, in the signal's unit.

        Raises:
            KeyError: no such message or signal in the DBC.
        """
        frame_id = self.db.get_message_by_name(message_name).frame_id
        for name, lo, hi in self._limits[frame_id]:
            if name == signal_name:
                return lo, hi
        raise KeyError(f"{message_name} has no signal {signal_name!r}")

    # --- encoding --------------------------------------------------------------

    def _encode(self, frame_id: int, values: dict[str, Any]) -> can.Message:
        # the codec checks every value against its signal's range before packing (the DBC's
        # [minimum|maximum], as _limits), and packs with the DBC's layout, compiled
        return Frame.standard(frame_id, self._codecs[frame_id].encode(values))

    def encode_currents(self, currents_a: tuple[float, float]) -> can.Message:
        """``WaistCurrentCmd`` with the current setpoints of node 1 and node 2, A."""
        c1, c2 = currents_a
        return self._encode(CURRENT_CMD_ID, {"Current1": float(c1), "Current2": float(c2)})

    def encode_velocities(self, velocities_rad_s: tuple[float, float]) -> can.Message:
        """``WaistVelocityCmd`` with the speed setpoints of node 1 and node 2, rad/s."""
        v1, v2 = (float(v) for v in velocities_rad_s)
        return self._encode(VELOCITY_CMD_ID, {"Velocity1": v1, "Velocity2": v2})

    def encode_control(self, motor_id: int, command: ControlCommand) -> can.Message:
        """``DriveControl<n>`` for one drive."""
        _check_node(motor_id)
        return self._encode(CONTROL_BASE_ID + motor_id, {"Command": int(command)})

    def encode_feedback(self, motor_id: int, position_counts: int, current_a: float, *,
                        enabled: bool, fault: bool, watchdog: bool, brake: bool) -> can.Message:
        """``DriveFeedback<n>`` (the drive's side).

        The count wraps like the signal's counter (24 bit); the current saturates at the
        signal's range.
        """
        _check_node(motor_id)
        lo_counts, span = self._feedback_counts_span
        wrapped = (int(position_counts) - lo_counts) % span + lo_counts
        lo_a, hi_a = self._feedback_current_a
        current = min(max(float(current_a), lo_a), hi_a)
        return self._encode(FEEDBACK_BASE_ID + motor_id, {
            "PositionCounts": wrapped, "Current": current, "Enabled": int(enabled),
            "Fault": int(fault), "Watchdog": int(watchdog), "Brake": int(brake)})

    def encode_status(self, motor_id: int, velocity_rad_s: float, fault_code: int,
                      state: DriveState) -> can.Message:
        """``DriveStatus<n>`` (the drive's side); the velocity saturates at the signal range."""
        _check_node(motor_id)
        lo, hi = self._status_velocity_rad_s
        velocity = min(max(float(velocity_rad_s), lo), hi)
        return self._encode(STATUS_BASE_ID + motor_id, {
            "Velocity": velocity, "FaultCode": int(fault_code), "State": int(state)})

    # --- decoding ---------------------------------------------------------------

    def decode(self, msg: can.Message) -> Decoded:
        """Decode one received frame; never raises.

        Returns:
            The decoded frame, or :class:`Rejected` with the reason.
        """
        try:
            return self._decode(msg)
        except Exception:
            return Rejected("undecodable")

    def _decode(self, msg: can.Message) -> Decoded:
        if msg.is_error_frame:
            return Rejected("error_frame", bus_off=bool(int(msg.arbitration_id) & CAN_ERR_BUSOFF))
        if msg.is_remote_frame:
            return Rejected("remote_frame")
        if msg.is_extended_id or getattr(msg, "is_fd", False):
            return Rejected("foreign_id")
        frame_id = int(msg.arbitration_id)
        codec = self._codecs.get(frame_id)
        if codec is None:
            return Rejected("unknown_id")
        data = bytes(msg.data)
        if len(data) != codec.length or msg.dlc != codec.length:
            return Rejected("wrong_length")
        # every signal is an integer times a scale (the codecs refuse any other): always finite
        values = codec.decode(data)
        setpoint = self._setpoints.get(frame_id)
        if setpoint is not None:
            for name, lo, hi in self._limits[frame_id]:
                if not lo <= values[name] <= hi:
                    return Rejected("bad_value")
            kind, first, second = setpoint
            return SetpointCommand(kind, (float(values[first]), float(values[second])))
        if CONTROL_BASE_ID < frame_id <= CONTROL_BASE_ID + 2:
            try:
                command = ControlCommand(int(values["Command"]))
            except ValueError:
                return Rejected("bad_value")
            return ControlFrame(frame_id - CONTROL_BASE_ID, command)
        if FEEDBACK_BASE_ID < frame_id <= FEEDBACK_BASE_ID + 2:
            counts = int(values["PositionCounts"])
            return DriveFeedback(
                motor_id=frame_id - FEEDBACK_BASE_ID, position_counts=counts,
                position_rad=counts_to_rad(counts, self.counts_per_rev),
                current_a=float(values["Current"]), enabled=bool(values["Enabled"]),
                fault=bool(values["Fault"]), watchdog=bool(values["Watchdog"]),
                brake=bool(values["Brake"]))
        if STATUS_BASE_ID < frame_id <= STATUS_BASE_ID + 2:
            return DriveStatus(frame_id - STATUS_BASE_ID, float(values["Velocity"]),
                               int(values["FaultCode"]), int(values["State"]))
        return Rejected("unknown_id")  # pragma: no cover - every DBC id is handled above

    # --- bus budget ---------------------------------------------------------------

    def periodic_frames(self, servo_rate_hz: float, status_rate_hz: float = 10.0) -> list[FrameSpec]:
        """The periodic frames of the current-mode cycle, for the bus-load check."""
        return [
            FrameSpec("WaistCurrentCmd", self._by_id[CURRENT_CMD_ID].length, servo_rate_hz),
            FrameSpec("DriveFeedback1", self._by_id[FEEDBACK_BASE_ID + 1].length, servo_rate_hz),
            FrameSpec("DriveFeedback2", self._by_id[FEEDBACK_BASE_ID + 2].length, servo_rate_hz),
            FrameSpec("DriveStatus1", self._by_id[STATUS_BASE_ID + 1].length, status_rate_hz),
            FrameSpec("DriveStatus2", self._by_id[STATUS_BASE_ID + 2].length, status_rate_hz),
        ]


def _check_node(motor_id: int) -> None:
    if motor_id not in NODE_IDS:
        raise ConfigurationError(f"drive node id must be one of {NODE_IDS}, got {motor_id!r}")
