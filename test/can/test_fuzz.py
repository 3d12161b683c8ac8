"""Fuzz the frame decoder and the command encoders (issue 5: >= 100000 frames)."""

from __future__ import annotations

import math

import can
import numpy as np

from humanoid_balance.can.protocol import (
    DriveFeedback,
    DriveStatus,
    Rejected,
    SetpointCommand,
    WaistProtocol,
)
from humanoid_balance.exceptions import InvalidInputError

PROTOCOL = WaistProtocol()
KNOWN_IDS = [0x200, 0x300, 0x400, 0x101, 0x102, 0x181, 0x182, 0x281, 0x282]
BOUNDS = {"current": 10.0, "velocity": 300.0, "position": 200000.0}


def _random_frame(rng: np.random.Generator) -> can.Message:
    kind = rng.integers(6)
    length = int(rng.integers(0, 9))
    data = rng.integers(0, 256, size=length, dtype=np.uint8).tobytes()
    if kind == 0:
        return can.Message(arbitration_id=int(rng.integers(0, 0x20000000)), is_error_frame=True,
                           data=data, is_extended_id=bool(rng.integers(2)))
    if kind == 1:
        return can.Message(arbitration_id=int(rng.integers(0, 0x20000000)), data=data,
                           is_extended_id=True)
    if kind == 2:
        return can.Message(arbitration_id=int(rng.integers(0, 0x800)), data=data,
                           is_extended_id=False)
    if kind == 3:
        return can.Message(arbitration_id=int(rng.choice(KNOWN_IDS)), is_remote_frame=True,
                           dlc=length, is_extended_id=False)
    msg = can.Message(arbitration_id=int(rng.choice(KNOWN_IDS)), data=data, is_extended_id=False)
    if kind == 5:
        msg.dlc = int(rng.integers(0, 16))  # a DLC that lies about the data
    return msg


def _plausible(decoded: object) -> bool:
    if isinstance(decoded, Rejected):
        return True
    if isinstance(decoded, SetpointCommand):
        return all(math.isfinite(v) and abs(v) <= BOUNDS[decoded.kind] for v in decoded.values)
    if isinstance(decoded, DriveFeedback):
        return (math.isfinite(decoded.position_rad) and abs(decoded.position_counts) <= 2**23
                and abs(decoded.current_a) <= 10.24)
    if isinstance(decoded, DriveStatus):
        return math.isfinite(decoded.velocity_rad_s)
    return True


def test_decoder_survives_100000_random_frames() -> None:
    """100000 random frames (error, remote, foreign, wrong length): no exception, no bad value."""
    rng = np.random.default_rng(20261123)
    bad = 0
    for _ in range(100_000):
        decoded = PROTOCOL.decode(_random_frame(rng))
        if not _plausible(decoded):
            bad += 1
    assert bad == 0


def test_encoder_never_packs_bad_values() -> None:
    """20000 random currents incl. NaN/inf/huge: either refused or packed within +-10 A."""
    rng = np.random.default_rng(7)
    specials = [math.nan, math.inf, -math.inf, 1e300, -1e300, 10.0005, -10.0005]
    packed_out_of_range = 0
    for _ in range(20_000):
        pair = []
        for _ in range(2):
            pick = rng.integers(4)
            pair.append(float(rng.choice(specials)) if pick == 0 else float(rng.normal(0.0, 8.0)))
        try:
            msg = PROTOCOL.encode_currents((pair[0], pair[1]))
        except InvalidInputError:
            continue
        decoded = PROTOCOL.decode(msg)
        if not (isinstance(decoded, SetpointCommand)
                and all(abs(v) <= 10.0 and math.isfinite(v) for v in decoded.values)):
            packed_out_of_range += 1
    assert packed_out_of_range == 0
