"""Tests of the worst-case CAN bus load (seed 003, section 5)."""

from __future__ import annotations

import pytest

from humanoid_balance.core.bus_load import (
    FrameSpec,
    bus_load,
    check_bus_load,
    frame_bits_worst_case,
)
from humanoid_balance.exceptions import BusLoadError, ConfigurationError


def test_eight_byte_standard_frame_is_135_bits() -> None:
    """An 8-byte 11-bit frame takes 135 bits at worst (Davis et al. 2007)."""
    assert frame_bits_worst_case(8) == 135


def test_empty_standard_frame_is_55_bits() -> None:
    """A 0-byte 11-bit frame takes 55 bits at worst."""
    assert frame_bits_worst_case(0) == 55


def test_eight_byte_extended_frame_is_160_bits() -> None:
    """An 8-byte 29-bit frame takes 160 bits at worst."""
    assert frame_bits_worst_case(8, extended_id=True) == 160


def test_nine_bytes_refused() -> None:
    """A 9-byte classical frame is refused."""
    with pytest.raises(ConfigurationError, match=r"0\.\.8 data bytes, got dlc=9"):
        frame_bits_worst_case(9)


def test_load_of_one_frame_at_1khz() -> None:
    """One 8-byte frame at 1 kHz is 135 kbit/s, 42.19 % of 320 kbit/s."""
    load = bus_load([FrameSpec("x", 8, 1000.0)], 320_000)
    assert load.frames_per_s == 1000.0
    assert load.percent == pytest.approx(42.1875)


def test_naive_per_motor_layout_is_refused_with_the_figure() -> None:
    """Per-motor 2-byte commands + 8-byte feedback at 500 Hz (65.6 %) are refused."""
    frames = [FrameSpec("cmd1", 2, 500.0), FrameSpec("cmd2", 2, 500.0),
              FrameSpec("fb1", 8, 500.0), FrameSpec("fb2", 8, 500.0)]
    with pytest.raises(BusLoadError, match=r"CAN bus load 65\.6 % of 320000 bit/s exceeds"):
        check_bus_load(frames, 320_000)


def test_load_under_limit_is_returned() -> None:
    """A load under 50 % passes and is returned."""
    load = check_bus_load([FrameSpec("x", 8, 1000.0)], 320_000)
    assert load.fraction < 0.5
