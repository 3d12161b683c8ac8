"""Tests of the waist drive protocol (waist_drive.dbc through cantools)."""

from __future__ import annotations

import math

import can
import pytest

from humanoid_balance.can.protocol import (
    COUNTS_PER_REV,
    ControlCommand,
    ControlFrame,
    DriveFeedback,
    DriveState,
    DriveStatus,
    Rejected,
    SetpointCommand,
    WaistProtocol,
)
from humanoid_balance.core.bus_load import bus_load
from humanoid_balance.exceptions import InvalidInputError

PROTOCOL = WaistProtocol()


def test_current_command_round_trip() -> None:
    """Current setpoints survive encode/decode at 1 mA resolution."""
    decoded = PROTOCOL.decode(PROTOCOL.encode_currents((1.234, -3.5)))
    assert decoded == SetpointCommand("current", (1.234, -3.5))


def test_current_command_is_four_bytes_at_0x200() -> None:
    """Both currents travel in one 4-byte standard frame with id 0x200."""
    msg = PROTOCOL.encode_currents((0.0, 0.0))
    assert (msg.arbitration_id, msg.dlc, msg.is_extended_id) == (0x200, 4, False)


def test_nan_current_is_never_packed() -> None:
    """A NaN current is refused before packing."""
    with pytest.raises(InvalidInputError, match=r"WaistCurrentCmd\.Current1 must be finite"):
        PROTOCOL.encode_currents((math.nan, 0.0))


def test_out_of_range_current_is_never_packed() -> None:
    """A current beyond the DBC range (+-10 A) is refused with the range."""
    with pytest.raises(InvalidInputError, match=r"Current2 = 12.0 A is outside \[-10, 10\]"):
        PROTOCOL.encode_currents((0.0, 12.0))


def test_signal_ranges_are_the_dbcs() -> None:
    """signal_range reads [minimum|maximum] from waist_drive.dbc."""
    assert PROTOCOL.signal_range("WaistCurrentCmd", "Current1") == (-10, 10)
    assert PROTOCOL.signal_range("DriveFeedback2", "Current") == (-10.24, 10.235)
    assert PROTOCOL.signal_range("DriveStatus1", "Velocity") == (-327.68, 327.67)


def test_out_of_range_current_setpoint_rejected_on_decode() -> None:
    """A received current setpoint of 10.001 A (beyond the DBC's 10 A) is rejected as bad value."""
    raw = (10001).to_bytes(2, "little", signed=True) + (0).to_bytes(2, "little", signed=True)
    msg = can.Message(arbitration_id=0x200, data=raw, is_extended_id=False)
    assert PROTOCOL.decode(msg) == Rejected("bad_value")


def test_setpoint_at_the_range_end_decoded() -> None:
    """A velocity setpoint of exactly -300 rad/s (the DBC minimum) is accepted."""
    decoded = PROTOCOL.decode(PROTOCOL.encode_velocities((-300.0, 0.0)))
    assert decoded == SetpointCommand("velocity", (-300.0, 0.0))


def test_feedback_saturates_current_and_wraps_counts() -> None:
    """The drive side clamps the current to the signal's range and wraps the 24-bit count."""
    decoded = PROTOCOL.decode(PROTOCOL.encode_feedback(
        1, 2**23 + 5, -11.0, enabled=True, fault=False, watchdog=False, brake=False))
    assert isinstance(decoded, DriveFeedback)
    assert (decoded.position_counts, decoded.current_a) == (-2**23 + 5, -10.24)


def test_status_velocity_saturates_at_the_signal_range() -> None:
    """A status velocity beyond 327.67 rad/s is sent as 327.67 (the DBC maximum)."""
    decoded = PROTOCOL.decode(PROTOCOL.encode_status(2, 400.0, 0, DriveState.ENABLED))
    assert decoded == DriveStatus(2, 327.67, 0, int(DriveState.ENABLED))


def test_feedback_round_trip() -> None:
    """Feedback position, current and bits decode as sent; the angle follows the count."""
    msg = PROTOCOL.encode_feedback(2, -12345, 2.5, enabled=True, fault=False, watchdog=False,
                                   brake=True)
    decoded = PROTOCOL.decode(msg)
    assert isinstance(decoded, DriveFeedback)
    assert (decoded.motor_id, decoded.position_counts, decoded.current_a) == (2, -12345, 2.5)
    assert (decoded.enabled, decoded.fault, decoded.watchdog, decoded.brake) == (
        True, False, False, True)
    assert decoded.position_rad == pytest.approx(-12345 * 2 * math.pi / COUNTS_PER_REV)


def test_status_round_trip() -> None:
    """Status velocity, fault code and state decode as sent."""
    decoded = PROTOCOL.decode(PROTOCOL.encode_status(1, -3.21, 2, DriveState.FAULT))
    assert decoded == DriveStatus(1, -3.21, 2, int(DriveState.FAULT))


def test_control_round_trip() -> None:
    """A DriveControl frame decodes to its node and command."""
    decoded = PROTOCOL.decode(PROTOCOL.encode_control(2, ControlCommand.ENABLE))
    assert decoded == ControlFrame(2, ControlCommand.ENABLE)


def test_error_frame_rejected_with_bus_off_flag() -> None:
    """An error frame with CAN_ERR_BUSOFF is rejected and flagged bus-off."""
    msg = can.Message(arbitration_id=0x40, is_error_frame=True, data=bytes(8))
    assert PROTOCOL.decode(msg) == Rejected("error_frame", bus_off=True)


def test_short_feedback_rejected() -> None:
    """A feedback frame with 4 bytes instead of 5 is rejected as wrong length."""
    msg = can.Message(arbitration_id=0x181, data=bytes(4), is_extended_id=False)
    assert PROTOCOL.decode(msg) == Rejected("wrong_length")


def test_unknown_id_rejected() -> None:
    """A frame id the protocol does not define is rejected as unknown."""
    msg = can.Message(arbitration_id=0x7FF, data=bytes(8), is_extended_id=False)
    assert PROTOCOL.decode(msg) == Rejected("unknown_id")


def test_extended_id_rejected() -> None:
    """A 29-bit frame, even with a known low id, is rejected as foreign."""
    msg = can.Message(arbitration_id=0x181, data=bytes(5), is_extended_id=True)
    assert PROTOCOL.decode(msg) == Rejected("foreign_id")


def test_unknown_control_command_rejected() -> None:
    """A DriveControl command value outside the table is rejected."""
    msg = can.Message(arbitration_id=0x101, data=bytes([9]), is_extended_id=False)
    assert PROTOCOL.decode(msg) == Rejected("bad_value")


def test_protocol_cycle_fits_half_the_bus() -> None:
    """The 500 Hz current-mode cycle with 10 Hz status stays under 50 % of 320 kbit/s."""
    load = bus_load(PROTOCOL.periodic_frames(500.0), 320_000)
    assert load.percent == pytest.approx(48.25)
