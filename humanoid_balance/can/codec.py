"""The DBC's frame layouts compiled once into shifts and masks: the servo path's codec.

``cantools`` encodes and decodes any DBC through dictionaries, ``bitstruct`` and a
conversion object per signal: 2-10 us a frame on the development machine. The waist
servo moves three frames every 2 ms period and, with the simulated drives in the same
process, encodes and decodes each of them once: with the range checks before packing,
about a fifth of the servo thread's CPU went there. :class:`FrameCodec` reads one DBC
message's signals once (start bit, length, signedness, factor, offset, range) and packs
them into one little-endian integer. The DBC stays the only description of the layout;
``test/can/test_codec.py`` holds the codec equal to ``cantools`` over every signal's range.

Rounding is ``cantools``': a signal whose conversion is the identity or linear is
rounded here with the same expression (``round(value)``, ``round((value - offset) /
scale)``), any other through the signal's own conversion (``numeric_scaled_to_raw``);
decoding computes ``raw * scale + offset`` as its conversions do.

Only what the waist protocol uses is compiled: little-endian integer signals with a
``[minimum|maximum]`` range that fits their bits, no multiplexing. Anything else is
refused when the codec is built (:class:`~humanoid_balance.exceptions.ConfigurationError`),
never mis-packed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from cantools.database.conversion import BaseConversion, IdentityConversion, LinearConversion

from humanoid_balance.exceptions import ConfigurationError, InvalidInputError

#: how a signal's value becomes its raw integer: ``round(value)``, ``round((value - offset) /
#: scale)``, or its ``cantools`` conversion
IDENTITY, LINEAR, CONVERSION = 0, 1, 2


class SignalLayout(NamedTuple):
    """Where one signal sits in its frame, its range, and how its raw value scales.

    Attributes:
        name: the DBC signal name.
        shift: bit position of its least significant bit in the little-endian payload word.
        width: bits.
        signed: two's complement.
        scale, offset: ``value = raw * scale + offset`` (the DBC's factor and offset).
        minimum, maximum: the DBC's range, in the signal's unit.
        unit: the DBC's unit ("" without one).
        rounding: :data:`IDENTITY`, :data:`LINEAR` or :data:`CONVERSION`.
        to_raw: the signal's value to its raw integer (``cantools``' conversion).
    """

    name: str
    shift: int
    width: int
    signed: bool
    scale: float
    offset: float
    minimum: float
    maximum: float
    unit: str
    rounding: int
    to_raw: Callable[[float], int]


class FrameCodec:
    """One DBC message's payload layout, compiled from its ``cantools`` description.

    Args:
        message: a ``cantools.database.can.Message``.

    Raises:
        ConfigurationError: a signal that is not a little-endian integer, has no range, or
            a range whose raw values do not fit the signal's bits; a multiplexed message.
    """

    def __init__(self, message: Any) -> None:
        self.name: str = message.name
        self.frame_id: int = message.frame_id
        self.length: int = message.length
        layouts = [_layout(message, signal) for signal in message.signals]
        self.signals: tuple[SignalLayout, ...] = tuple(layouts)
        self.names: tuple[str, ...] = tuple(s.name for s in layouts)
        # the hot loops' tuples
        self._packers = tuple((s.name, s.minimum, s.maximum, s.rounding, s.scale, s.offset,
                               s.to_raw, (1 << s.width) - 1, s.shift) for s in layouts)
        self._unpackers = tuple((s.name, s.shift, (1 << s.width) - 1,
                                 (1 << (s.width - 1)) if s.signed else 0, s.scale, s.offset)
                                for s in layouts)

    def encode(self, values: Mapping[str, float]) -> bytes:
        """The payload of ``values`` (by signal name, every signal of the frame).

        Raises:
            InvalidInputError: a value outside its signal's ``[minimum|maximum]`` or not
                finite (nothing is packed).
            KeyError: a signal without a value.
        """
        word = 0
        for name, lo, hi, rounding, scale, offset, to_raw, mask, shift in self._packers:
            value = values[name]
            if not lo <= value <= hi:  # NaN fails this too
                self._refuse(name, value)
            if rounding == LINEAR:
                raw = round((value - offset) / scale)
            elif rounding == IDENTITY:
                raw = round(value)
            else:
                raw = to_raw(value)
            word |= (raw & mask) << shift
        return word.to_bytes(self.length, "little")

    def decode(self, data: bytes) -> dict[str, float]:
        """The signals' values (``raw * scale + offset``) from a payload of :attr:`length` bytes.

        Raises:
            ValueError: ``data`` is not :attr:`length` bytes long.
        """
        if len(data) != self.length:
            raise ValueError(f"{self.name}: {len(data)} bytes instead of {self.length}")
        word = int.from_bytes(data, "little")
        values = {}
        for name, shift, mask, sign_bit, scale, offset in self._unpackers:
            raw = (word >> shift) & mask
            if raw & sign_bit:
                raw -= mask + 1
            values[name] = raw * scale + offset
        return values

    def _refuse(self, name: str, value: float) -> None:
        signal = self.signals[self.names.index(name)]
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidInputError(f"{self.name}.{name} must be finite, got {value}: nothing is sent")
        raise InvalidInputError(
            f"{self.name}.{name} = {value} {signal.unit} is outside [{signal.minimum}, "
            f"{signal.maximum}]: nothing is sent; limit the value before sending")


def _layout(message: Any, signal: Any) -> SignalLayout:
    """One signal of ``message`` compiled; refuses what :class:`FrameCodec` cannot pack."""
    where = f"{message.name}.{signal.name}"
    if signal.byte_order != "little_endian" or signal.is_float \
            or signal.multiplexer_ids or signal.is_multiplexer:
        raise ConfigurationError(
            f"{where}: only little-endian integer signals without multiplexing are compiled; "
            "encode such a message with cantools")
    if signal.start + signal.length > 8 * message.length:
        raise ConfigurationError(f"{where} does not fit the {message.length}-byte frame")
    if signal.minimum is None or signal.maximum is None:
        raise ConfigurationError(f"{where} needs a [minimum|maximum] range in the DBC")
    conversion = signal.conversion
    numeric = BaseConversion.factory(scale=conversion.scale, offset=conversion.offset)
    rounding = (IDENTITY if type(numeric) is IdentityConversion
                else LINEAR if type(numeric) is LinearConversion else CONVERSION)
    layout = SignalLayout(signal.name, signal.start, signal.length, signal.is_signed,
                          conversion.scale, conversion.offset, signal.minimum, signal.maximum,
                          signal.unit or "", rounding, conversion.numeric_scaled_to_raw)
    lowest, highest = ((-(1 << (signal.length - 1)), (1 << (signal.length - 1)) - 1)
                       if signal.is_signed else (0, (1 << signal.length) - 1))
    for bound in (signal.minimum, signal.maximum):
        if not lowest <= layout.to_raw(bound) <= highest:
            raise ConfigurationError(f"{where}: the range end {bound} does not fit {signal.length} bits")
    return layout
