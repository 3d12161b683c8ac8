"""CAN bus load of the waist drives at the chosen rates (seed 003, section 5).

The paper's controller (SJA1000, 16 MHz, 320 kbit/s) exchanges commands and
feedback with two drives every 2 ms; that is a real share of the bus. The
worst-case length of a classical CAN 2.0A frame (11-bit identifier) with
``n`` data bytes, bit stuffing at its worst (one stuff bit per four bits of the
34 + 8n stuffed bits), interframe space included (Davis et al., "Controller Area
Network (CAN) schedulability analysis: refuted, revisited and revised", 2007,
eq. 3):

.. math::

    C(n) = 8 n + 47 + \\lfloor (34 + 8 n - 1) / 4 \\rfloor \\ \\text{bits}

(for 29-bit identifiers: 54 stuffed bits, ``8n + 67 + floor((54 + 8n - 1)/4)``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from humanoid_balance.exceptions import BusLoadError, ConfigurationError

#: Default bit rate of the paper's bus, bit/s.
DEFAULT_BITRATE = 320_000
#: Largest allowed share of the bus (issue 5).
MAX_LOAD_FRACTION = 0.5


class FrameSpec(NamedTuple):
    """A periodic CAN frame: what, data length (bytes) and frames per second."""

    name: str
    dlc: int
    rate_hz: float
    extended_id: bool = False


class BusLoad(NamedTuple):
    """Bus load of a set of periodic frames.

    Attributes:
        frames_per_s: frames per second on the bus.
        bits_per_s: worst-case bits per second (stuffing included).
        fraction: ``bits_per_s / bitrate``.
        bitrate: bit rate, bit/s.
    """

    frames_per_s: float
    bits_per_s: float
    fraction: float
    bitrate: int

    @property
    def percent(self) -> float:
        """Load in percent of the bit rate."""
        return 100.0 * self.fraction


def frame_bits_worst_case(dlc: int, extended_id: bool = False) -> int:
    """Worst-case bits of one data frame with ``dlc`` bytes, stuffing and IFS included.

    Args:
        dlc: data bytes, 0..8 (classical CAN).
        extended_id: 29-bit identifier instead of 11-bit.

    Returns:
        Bits on the wire, e.g. 135 for an 8-byte standard frame, 55 for 0 bytes.
    """
    if not isinstance(dlc, (int, np.integer)) or not 0 <= dlc <= 8:
        raise ConfigurationError(f"a classical CAN frame has 0..8 data bytes, got dlc={dlc!r}")
    stuffed = (54 if extended_id else 34) + 8 * int(dlc)
    fixed = 13  # CRC delimiter, ACK slot + delimiter, EOF (7), interframe space (3)
    return stuffed + fixed + (stuffed - 1) // 4


def bus_load(frames: Iterable[FrameSpec], bitrate: int = DEFAULT_BITRATE) -> BusLoad:
    """Frames per second and share of the bus taken by ``frames``.

    Args:
        frames: the periodic frames (commands and feedback).
        bitrate: bus bit rate, bit/s (> 0).

    Returns:
        The load.
    """
    if not isinstance(bitrate, (int, np.integer)) or bitrate <= 0:
        raise ConfigurationError(f"bitrate must be a positive integer in bit/s, got {bitrate!r}")
    frames_per_s = 0.0
    bits_per_s = 0.0
    for frame in frames:
        if not np.isfinite(frame.rate_hz) or frame.rate_hz < 0.0:
            raise ConfigurationError(
                f"frame {frame.name!r} rate must be finite and >= 0 Hz, got {frame.rate_hz}")
        frames_per_s += frame.rate_hz
        bits_per_s += frame.rate_hz * frame_bits_worst_case(frame.dlc, frame.extended_id)
    return BusLoad(frames_per_s, bits_per_s, bits_per_s / bitrate, int(bitrate))


def check_bus_load(frames: Iterable[FrameSpec], bitrate: int = DEFAULT_BITRATE,
                   max_fraction: float = MAX_LOAD_FRACTION) -> BusLoad:
    """Like :func:`bus_load`, but refuse a load above ``max_fraction``.

    Raises:
        BusLoadError: with the figure, when the load exceeds ``max_fraction``.
    """
    frames = list(frames)
    load = bus_load(frames, bitrate)
    if load.fraction > max_fraction:
        detail = ", ".join(f"{f.name}: {f.dlc} B at {f.rate_hz:g} Hz" for f in frames)
        raise BusLoadError(load.percent, 100.0 * max_fraction, load.bitrate, detail)
    return load
