"""Seeded mutations of serialized ROS 2 messages: the inputs that fuzz the raw CDR readers (issue 35).

One generator for both halves of the fuzzing: in-process (``tools/fuzz_cdr.py``,
``test/test_cdr_fuzz.py`` hand the bytes to ``humanoid_balance.cdr``'s readers) and
over DDS (``tools/publish_cdr_mutations.py`` publishes them on a node's raw
subscription).

- **Seeds**: random valid messages of each type (:data:`SCHEMAS`) built as rclpy
  messages and serialized by ``rclpy.serialization.serialize_message`` (rclpy is
  imported only there: the rest of the module needs numpy alone), then
  re-encoded with their padding zeroed and the bytes Fast CDR leaves after the
  content cut off, so that a seed gives the same bytes in every run.
- **Mutations** (:data:`MUTATIONS`), from a seed and a ``numpy`` generator:
  byte-level (bit flips, random bytes, truncation, insertion, deletion,
  duplication, a splice with another seed, bytes of no message at all) and
  structure-aware, from the seed's :class:`Layout`: string lengths and sequence
  counts set to 0, off by one, 2^31, 2^32 - 1 ...; a string without its NUL, with
  a NUL inside, or not UTF-8; NaN, infinities, -0.0 and subnormals in the
  doubles; stamps at their limits; random padding; another encapsulation (big
  endian with the bytes left as they are, or truly byte-swapped; PL_CDR; XCDR2
  plain, delimited or parameter-list, with the doubles aligned to 4 as XCDR2
  aligns them).

The CDR layout of each type is written out here (:data:`SCHEMAS`) and walked by
:func:`parse`, independently of ``humanoid_balance.cdr``: an oracle must not share
the code it checks.

    from cdr_mutations import Mutator
    mutator = Mutator.from_rclpy(["sensor_msgs/msg/JointState"], seed=1)
    mutant = mutator.mutate("sensor_msgs/msg/JointState")   # .data: bytes, .mutations: names
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Union

import numpy as np

#: plain CDR, little endian: what ``rclpy.serialization`` writes
CDR_LE = b"\x00\x01"
#: every other encapsulation identifier of DDS-XTypes 1.3 (7.6.2.1.2) and a few that are none
OTHER_ENCAPSULATIONS = (
    b"\x00\x00",  # CDR_BE
    b"\x00\x02", b"\x00\x03",  # PL_CDR_BE, PL_CDR_LE
    b"\x00\x06", b"\x00\x07",  # CDR2_BE, CDR2_LE
    b"\x00\x08", b"\x00\x09",  # D_CDR2_BE, D_CDR2_LE
    b"\x00\x0a", b"\x00\x0b",  # PL_CDR2_BE, PL_CDR2_LE
    b"\x00\x10", b"\x00\x11",  # ENC_HEADER PLAIN_CDR2 (7.4.3.4)
    b"\x01\x00", b"\x01\x01", b"\xff\xff", b"\x80\x01",
)
#: length and count values that break readers: none, one, signed and unsigned limits
HUGE_LENGTHS = (2**31 - 1, 2**31, 2**32 - 1, 2**32 - 2, 2**16, 2**24, 0x7FFFFFF8, 0x1FFFFFFF)
#: doubles that a message may carry (all valid CDR)
SPECIAL_DOUBLES = (
    float("nan"), -float("nan"), float("inf"), -float("inf"), -0.0, 0.0, 5e-324, -5e-324,
    2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308,
)
#: NaNs with payloads (quiet and signalling bit patterns, both signs)
NAN_PATTERNS = (0x7FF8000000000001, 0x7FF0000000000001, 0xFFF4000000000000, 0x7FFFFFFFFFFFFFFF)
#: bytes that are not UTF-8 where they stand (lone continuation, cut sequence, surrogate, 0xFF)
BAD_UTF8 = (b"\x80", b"\xc3", b"\xed\xa0\x80", b"\xff", b"\xfe", b"\xc0\xaf", b"\xf4\x90\x80\x80")

PAYLOAD_START = 4

# --- schemas -------------------------------------------------------------------------------------

INT32, UINT32, FLOAT64, STRING = "int32", "uint32", "float64", "string"


@dataclass(frozen=True)
class Seq:
    """An unbounded sequence of ``element`` (one primitive or the fields of a struct)."""

    element: tuple[Spec, ...]


Spec = Union[str, Seq]  # noqa: UP007 (an alias evaluated at run time: Python 3.10 has no str | Seq here)

_TIME = (INT32, UINT32)
_HEADER = (*_TIME, STRING)

#: the CDR layout of each type, field by field (nested messages flattened)
SCHEMAS: dict[str, tuple[Spec, ...]] = {
    "geometry_msgs/msg/WrenchStamped": (*_HEADER, *(FLOAT64,) * 6),
    "geometry_msgs/msg/PointStamped": (*_HEADER, *(FLOAT64,) * 3),
    "sensor_msgs/msg/JointState": (*_HEADER, Seq((STRING,)), Seq((FLOAT64,)), Seq((FLOAT64,)),
                                   Seq((FLOAT64,))),
    # layout: dim (label, size, stride), data_offset; then data
    "std_msgs/msg/Float64MultiArray": (Seq((STRING, UINT32, UINT32)), UINT32, Seq((FLOAT64,))),
    "std_msgs/msg/Float64": (FLOAT64,),
    "rosgraph_msgs/msg/Clock": _TIME,
}


class LayoutError(ValueError):
    """Bytes that are not a plain little-endian CDR message of the schema given."""


class Token(NamedTuple):
    """One serialized item of a message.

    Attributes:
        kind: ``int32``, ``uint32``, ``float64``, ``length`` (a string's), ``count`` (a
            sequence's) or ``chars`` (a string's bytes and its NUL).
        offset: where it starts in the message [byte].
        raw: its bytes as found (little endian).
        stamp: whether it is a field of a ``builtin_interfaces/Time``.
    """

    kind: str
    offset: int
    raw: bytes
    stamp: bool = False

    @property
    def end(self) -> int:
        return self.offset + len(self.raw)

    @property
    def alignment(self) -> int:
        return 1 if self.kind == "chars" else len(self.raw)


class Layout(NamedTuple):
    """Where each item of a message is: its tokens in order and where the content ends."""

    tokens: tuple[Token, ...]
    end: int

    def of(self, *kinds: str) -> list[Token]:
        """The tokens of these kinds."""
        return [t for t in self.tokens if t.kind in kinds]

    def padding(self) -> list[tuple[int, int]]:
        """The (start, end) byte ranges between the tokens."""
        gaps, at = [], PAYLOAD_START
        for token in self.tokens:
            if token.offset > at:
                gaps.append((at, token.offset))
            at = token.end
        return gaps


def _align(offset: int, size: int) -> int:
    return offset + (-(offset - PAYLOAD_START) % size)


def parse(data: bytes, schema: Sequence[Spec]) -> Layout:
    """The layout of ``data``, a plain little-endian CDR message of ``schema``.

    Raises:
        LayoutError: another encapsulation, or bytes that do not hold such a message.
    """
    if data[:2] != CDR_LE or len(data) < PAYLOAD_START:
        raise LayoutError(f"encapsulation {data[:4].hex(' ')}: expected {CDR_LE.hex(' ')}")
    tokens: list[Token] = []
    end = _walk(data, schema, PAYLOAD_START, tokens, stamp_fields=_stamp_fields(schema))
    return Layout(tuple(tokens), end)


def _stamp_fields(schema: Sequence[Spec]) -> int:
    """How many leading fields of ``schema`` are a stamp (sec, nanosec): 2 for a Header or Clock."""
    return 2 if tuple(schema[:2]) == _TIME else 0


def _take(data: bytes, offset: int, size: int, what: str) -> bytes:
    if offset + size > len(data):
        raise LayoutError(f"{what} at {offset} runs past the {len(data)} bytes")
    return data[offset:offset + size]


def _walk(data: bytes, specs: Sequence[Spec], offset: int, tokens: list[Token],
          stamp_fields: int = 0) -> int:
    for index, spec in enumerate(specs):
        if isinstance(spec, Seq):
            offset = _align(offset, 4)
            raw = _take(data, offset, 4, "a sequence count")
            tokens.append(Token("count", offset, raw))
            offset += 4
            (count,) = struct.unpack("<I", raw)
            if count > len(data) - offset:  # every element takes a byte at least
                raise LayoutError(f"{count} elements at {offset} cannot fit {len(data)} bytes")
            for _ in range(count):
                offset = _walk(data, spec.element, offset, tokens)
        elif spec == STRING:
            offset = _align(offset, 4)
            raw = _take(data, offset, 4, "a string length")
            tokens.append(Token("length", offset, raw))
            offset += 4
            (length,) = struct.unpack("<I", raw)
            chars = _take(data, offset, length, "a string")
            if length and chars[-1:] != b"\x00":
                raise LayoutError(f"a string at {offset} without its NUL")
            if length:
                tokens.append(Token("chars", offset, chars))
            offset += length
        else:
            size = 8 if spec == FLOAT64 else 4
            offset = _align(offset, size)
            tokens.append(Token(spec, offset, _take(data, offset, size, spec), index < stamp_fields))
            offset += size
    return offset


def encode(layout: Layout, *, big_endian: bool = False, max_alignment: int = 8,
           encapsulation: bytes = b"\x00\x01\x00\x00") -> bytes:
    """The tokens of ``layout`` serialized again, every padding byte zero.

    Args:
        big_endian: byte-swap every number (the encapsulation is not changed: give it).
        max_alignment: 8 for XCDR1, 4 for XCDR2 (doubles aligned to 4).
        encapsulation: the 4 bytes written first.
    """
    out = bytearray(encapsulation)
    for token in layout.tokens:
        out.extend(b"\x00" * (_align(len(out), min(token.alignment, max_alignment)) - len(out)))
        out.extend(token.raw[::-1] if big_endian and token.kind != "chars" else token.raw)
    return bytes(out)


# --- seeds ---------------------------------------------------------------------------------------

_LETTERS = list("abcdefghijklmnopqrstuvwxyz_/0123456789")
_WIDE = ["ü", "é", "関節", "ß", "Ω"]  # valid UTF-8 of 2 and 3 bytes
#: name lists one publisher would send again and again (a reader's names cache hits them)
_JOINT_LISTS: tuple[list[str], ...] = (
    ["left_knee", "right_knee", "waist_pitch"],
    ["a", "bc", "def", "ghij", "left_knee"],  # every padding length 0 to 3
    [f"arm_{k}" for k in range(7)],
    [],
)


def _text(rng: np.random.Generator, longest: int = 12) -> str:
    text = "".join(rng.choice(_LETTERS, size=int(rng.integers(0, longest + 1))))
    if rng.random() < 0.1:
        text += _WIDE[int(rng.integers(len(_WIDE)))]
    return text


def random_doubles(rng: np.random.Generator, count: int) -> list[float]:
    """``count`` doubles, a fifth of them special (NaN, infinities, -0.0, subnormal, extremes)."""
    values: list[float] = rng.normal(0.0, 100.0, count).tolist()
    for k in range(count):
        if rng.random() < 0.2:
            values[k] = SPECIAL_DOUBLES[int(rng.integers(len(SPECIAL_DOUBLES)))]
    return values


def _stamp(rng: np.random.Generator) -> tuple[int, int]:
    if rng.random() < 0.1:
        return (int(rng.choice([-2**31, 2**31 - 1, 0, -1])),
                int(rng.choice([0, 999_999_999, 1_000_000_000, 2**32 - 1])))
    return int(rng.integers(-2**31, 2**31)), int(rng.integers(0, 1_000_000_000))


def random_message(type_name: str, rng: np.random.Generator) -> Any:
    """A random valid rclpy message of ``type_name`` (one of :data:`SCHEMAS`)."""
    module_name, _, class_name = type_name.replace("/msg/", ".msg.").rpartition(".")
    module = __import__(module_name, fromlist=[class_name])
    msg = getattr(module, class_name)()
    stamp = getattr(msg, "header", None)
    stamp = stamp.stamp if stamp is not None else getattr(msg, "clock", None)
    if stamp is not None:
        stamp.sec, stamp.nanosec = _stamp(rng)
    if hasattr(msg, "header"):
        msg.header.frame_id = _text(rng)
    if class_name == "WrenchStamped":
        f, t = msg.wrench.force, msg.wrench.torque
        f.x, f.y, f.z, t.x, t.y, t.z = random_doubles(rng, 6)
    elif class_name == "PointStamped":
        msg.point.x, msg.point.y, msg.point.z = random_doubles(rng, 3)
    elif class_name == "JointState":
        if rng.random() < 0.6:
            msg.name = list(_JOINT_LISTS[int(rng.integers(len(_JOINT_LISTS)))])
        else:
            msg.name = [_text(rng, 14) for _ in range(int(rng.integers(0, 13)))]
        for array in ("position", "velocity", "effort"):
            size = len(msg.name) if rng.random() < 0.6 else int(rng.integers(0, 9))
            setattr(msg, array, random_doubles(rng, size))
    elif class_name == "Float64MultiArray":
        from std_msgs.msg import MultiArrayDimension

        msg.layout.dim = [MultiArrayDimension(label=_text(rng), size=int(rng.integers(0, 2**32)),
                                              stride=int(rng.integers(0, 2**32)))
                          for _ in range(int(rng.integers(0, 4)) if rng.random() < 0.4 else 0)]
        msg.layout.data_offset = int(rng.integers(0, 5))
        msg.data = random_doubles(rng, int(rng.integers(0, 13)))
    elif class_name == "Float64":
        msg.data = random_doubles(rng, 1)[0]
    return msg


def rclpy_seeds(type_name: str, count: int, seed: int) -> list[bytes]:
    """``count`` random valid messages of ``type_name`` serialized by rclpy, padding zeroed.

    Raises:
        ImportError: rclpy or the message package is not installed (source the ROS setup, or
            ``pip install -r requirements.txt``).
    """
    from rclpy.serialization import serialize_message

    rng = np.random.default_rng(seed)
    schema = SCHEMAS[type_name]
    seeds = []
    for _ in range(count):
        data = serialize_message(random_message(type_name, rng))
        seeds.append(encode(parse(data, schema)))  # zero padding, no trailing bytes
    return seeds


# --- mutations -----------------------------------------------------------------------------------

@dataclass
class _Case:
    """What a mutation works on: the bytes, the seed's layout (None once bytes moved), the rng."""

    data: bytearray
    layout: Layout | None
    rng: np.random.Generator
    others: Sequence[bytes]


def _pick(rng: np.random.Generator, items: Sequence[Any]) -> Any:
    return items[int(rng.integers(len(items)))]


def _u32_value(rng: np.random.Generator, current: int, room: int) -> int:
    """An interesting replacement for a length or count of ``current``, ``room`` bytes left."""
    choices = [0, 1, current + 1, max(current - 1, 0), room, room + 1, room // 4, room // 8 + 1,
               *HUGE_LENGTHS, int(rng.integers(0, 2**32)), int(rng.integers(0, 64))]
    return int(_pick(rng, choices)) % 2**32


def _set_u32(case: _Case, kind: str) -> bool:
    assert case.layout is not None
    tokens = case.layout.of(kind)
    if not tokens:
        return False
    token = _pick(case.rng, tokens)
    (current,) = struct.unpack("<I", token.raw)
    value = _u32_value(case.rng, current, len(case.data) - token.end)
    case.data[token.offset:token.end] = struct.pack("<I", value)
    return True


def _string_length(case: _Case) -> bool:
    return _set_u32(case, "length")


def _sequence_count(case: _Case) -> bool:
    return _set_u32(case, "count")


def _no_nul(case: _Case) -> bool:
    """A string's NUL replaced by a letter (the length kept): a string without its terminator."""
    assert case.layout is not None
    tokens = case.layout.of("chars")
    if not tokens:
        return False
    token = _pick(case.rng, tokens)
    case.data[token.end - 1] = int(case.rng.choice([ord("x"), 0x20, 0x7F, 0xC3, 0xFF, 0x01]))
    return True


def _embedded_nul(case: _Case) -> bool:
    """A character of a string set to NUL: a string that ends before its length says."""
    assert case.layout is not None
    tokens = [t for t in case.layout.of("chars") if len(t.raw) >= 2]
    if not tokens:
        return False
    token = _pick(case.rng, tokens)
    case.data[token.offset + int(case.rng.integers(len(token.raw) - 1))] = 0
    return True


def _bad_utf8(case: _Case) -> bool:
    """Bytes that are not UTF-8 put inside a string (its length and NUL kept)."""
    assert case.layout is not None
    tokens = [t for t in case.layout.of("chars") if len(t.raw) >= 2]
    if not tokens:
        return False
    token = _pick(case.rng, tokens)
    bad = _pick(case.rng, BAD_UTF8)[:len(token.raw) - 1]
    at = token.offset + int(case.rng.integers(len(token.raw) - len(bad)))
    case.data[at:at + len(bad)] = bad
    return True


def _special_double(case: _Case) -> bool:
    """Doubles set to NaN (with payloads), infinities, -0.0, subnormals, extremes: still valid."""
    assert case.layout is not None
    tokens = case.layout.of(FLOAT64)
    if not tokens:
        return False
    for _ in range(int(case.rng.integers(1, 4))):
        token = _pick(case.rng, tokens)
        if case.rng.random() < 0.3:
            raw = struct.pack("<Q", _pick(case.rng, NAN_PATTERNS))
        else:
            raw = struct.pack("<d", _pick(case.rng, SPECIAL_DOUBLES))
        case.data[token.offset:token.end] = raw
    return True


def _stamp_limits(case: _Case) -> bool:
    """The stamp's sec and nanosec at their limits (nanosec >= 1e9 included): still valid."""
    assert case.layout is not None
    tokens = [t for t in case.layout.tokens if t.stamp]
    if not tokens:
        return False
    sec, nanosec = tokens
    case.data[sec.offset:sec.end] = struct.pack(
        "<i", int(_pick(case.rng, [-2**31, 2**31 - 1, -1, 0, int(case.rng.integers(-2**31, 2**31))])))
    case.data[nanosec.offset:nanosec.end] = struct.pack(
        "<I", int(_pick(case.rng, [0, 999_999_999, 1_000_000_000, 2**32 - 1])))
    return True


def _random_padding(case: _Case) -> bool:
    """Every padding byte random (Fast CDR leaves its buffer's bytes there): still valid."""
    assert case.layout is not None
    gaps = case.layout.padding()
    if not gaps:
        return False
    for start, end in gaps:
        case.data[start:end] = case.rng.integers(0, 256, end - start, dtype=np.uint8).tobytes()
    return True


def _encapsulation(case: _Case) -> bool:
    """Another encapsulation identifier, the bytes after it as they were."""
    if case.rng.random() < 0.8:
        case.data[0:2] = _pick(case.rng, OTHER_ENCAPSULATIONS)
    else:
        case.data[0:2] = case.rng.integers(0, 256, 2, dtype=np.uint8).tobytes()
    return True


def _options(case: _Case) -> bool:
    """The two option bytes of the encapsulation header random: still valid."""
    if len(case.data) < PAYLOAD_START:
        return False
    case.data[2:4] = case.rng.integers(0, 256, 2, dtype=np.uint8).tobytes()
    return True


def _big_endian(case: _Case) -> bool:
    """The message truly byte-swapped, ``00 00`` first: rclpy reads it; the readers refuse it."""
    assert case.layout is not None
    case.data[:] = encode(case.layout, big_endian=True, encapsulation=b"\x00\x00\x00\x00")
    case.layout = None
    return True


def _xcdr2(case: _Case) -> bool:
    """The message in XCDR2 (doubles aligned to 4): plain, delimited (DHEADER) or parameter list."""
    assert case.layout is not None
    big = bool(case.rng.random() < 0.3)
    kind = int(case.rng.integers(3))
    identifier = (b"\x00\x07", b"\x00\x09", b"\x00\x0b")[kind]
    if big:
        identifier = bytes([0, identifier[1] - 1])
    body = encode(case.layout, big_endian=big, max_alignment=4, encapsulation=identifier + b"\x00\x00")
    if kind:  # a DHEADER: the length of what follows
        body = body[:4] + struct.pack(">I" if big else "<I", len(body) - 4) + body[4:]
    case.data[:] = body
    case.layout = None
    return True


def _truncate(case: _Case) -> bool:
    """The message cut short: anywhere, or just before, at or after an item's start."""
    if not case.data:
        return False
    if case.layout is not None and case.layout.tokens and case.rng.random() < 0.5:
        token = _pick(case.rng, case.layout.tokens)
        cut = max(0, min(len(case.data) - 1, token.offset + int(case.rng.integers(-3, 4))))
    else:
        cut = int(case.rng.integers(len(case.data)))
    del case.data[cut:]
    case.layout = None
    return True


def _bit_flips(case: _Case) -> bool:
    if not case.data:
        return False
    for _ in range(int(case.rng.integers(1, 9))):
        at = int(case.rng.integers(len(case.data)))
        case.data[at] ^= 1 << int(case.rng.integers(8))
    return True


def _byte_set(case: _Case) -> bool:
    if not case.data:
        return False
    for _ in range(int(case.rng.integers(1, 5))):
        at = int(case.rng.integers(len(case.data)))
        case.data[at] = int(_pick(case.rng, [0x00, 0xFF, 0x7F, 0x80, 0x01, int(case.rng.integers(256))]))
    return True


def _append(case: _Case) -> bool:
    """Bytes after the content (rclpy and the readers ignore them): still valid if it was."""
    case.data.extend(case.rng.integers(0, 256, int(case.rng.integers(1, 65)), dtype=np.uint8).tobytes())
    return True


def _insert(case: _Case) -> bool:
    at = int(case.rng.integers(len(case.data) + 1))
    case.data[at:at] = case.rng.integers(0, 256, int(case.rng.integers(1, 17)), dtype=np.uint8).tobytes()
    case.layout = None
    return True


def _delete(case: _Case) -> bool:
    if len(case.data) < 2:
        return False
    start = int(case.rng.integers(len(case.data)))
    del case.data[start:start + int(case.rng.integers(1, 17))]
    case.layout = None
    return True


def _duplicate(case: _Case) -> bool:
    if not case.data:
        return False
    start = int(case.rng.integers(len(case.data)))
    chunk = case.data[start:start + int(case.rng.integers(1, 33))]
    at = int(case.rng.integers(len(case.data) + 1))
    case.data[at:at] = chunk
    case.layout = None
    return True


def _splice(case: _Case) -> bool:
    """The head of this message, the tail of another seed (of any type)."""
    if not case.others:
        return False
    other = _pick(case.rng, case.others)
    cut = int(case.rng.integers(len(case.data) + 1))
    case.data[cut:] = other[int(case.rng.integers(len(other) + 1)):]
    case.layout = None
    return True


def _other_type(case: _Case) -> bool:
    """A valid message of another type instead (a publisher on the wrong topic)."""
    if not case.others:
        return False
    case.data[:] = _pick(case.rng, case.others)
    case.layout = None
    return True


def _random_bytes(case: _Case) -> bool:
    """Bytes of no message: random, of 0 to 256 bytes, half of them after ``00 01 00 00``."""
    data = case.rng.integers(0, 256, int(case.rng.integers(0, 257)), dtype=np.uint8).tobytes()
    case.data[:] = (b"\x00\x01\x00\x00" + data) if case.rng.random() < 0.5 else data
    case.layout = None
    return True


#: mutations that need the seed's layout and keep the bytes where they are (several may stack)
FIELD_MUTATIONS: dict[str, Callable[[_Case], bool]] = {
    "string_length": _string_length,
    "sequence_count": _sequence_count,
    "no_nul": _no_nul,
    "embedded_nul": _embedded_nul,
    "bad_utf8": _bad_utf8,
    "special_double": _special_double,
    "stamp_limits": _stamp_limits,
    "random_padding": _random_padding,
    "encapsulation": _encapsulation,
    "options": _options,
}
#: mutations that write the whole message anew (one at most, after the field mutations)
WHOLE_MUTATIONS: dict[str, Callable[[_Case], bool]] = {
    "big_endian": _big_endian,
    "xcdr2": _xcdr2,
    "other_type": _other_type,
    "random_bytes": _random_bytes,
}
#: mutations of the bytes alone (after the others)
BYTE_MUTATIONS: dict[str, Callable[[_Case], bool]] = {
    "truncate": _truncate,
    "bit_flips": _bit_flips,
    "byte_set": _byte_set,
    "append": _append,
    "insert": _insert,
    "delete": _delete,
    "duplicate": _duplicate,
    "splice": _splice,
}
MUTATIONS = {**FIELD_MUTATIONS, **WHOLE_MUTATIONS, **BYTE_MUTATIONS}
#: the mutations that read the seed's layout: skipped once the bytes moved
_NEED_LAYOUT = frozenset([*FIELD_MUTATIONS, "big_endian", "xcdr2"])


class Mutant(NamedTuple):
    """A mutated message: its type (that of its seed), its bytes and the mutations applied."""

    type_name: str
    data: bytes
    mutations: tuple[str, ...]


@dataclass
class Mutator:
    """Mutants of seed messages, reproducible from ``seed``.

    Each :meth:`mutate` takes a random seed of the type, then applies, in this order,
    0 to 2 field mutations, at most one whole-message mutation and 0 to 2 byte
    mutations (one mutation at least; about 3 % of the mutants are a seed as it
    is). The same seeds and ``seed`` give the same mutants in the same order.

    Args:
        seeds: valid plain little-endian CDR messages, per type name of :data:`SCHEMAS`.
        seed: of the generator.
    """

    seeds: dict[str, list[bytes]]
    seed: int = 0
    rng: np.random.Generator = field(init=False)
    _layouts: dict[str, list[Layout]] = field(init=False)
    _others: dict[str, list[bytes]] = field(init=False)

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)
        self._layouts = {name: [parse(data, SCHEMAS[name]) for data in seeds]
                         for name, seeds in self.seeds.items()}
        for name, seeds in self.seeds.items():
            if not seeds:
                raise ValueError(f"no seed message of {name}: give one at least")
        # what a splice or another type takes from: the other types' seeds (its own if alone)
        self._others = {name: [d for other, seeds in self.seeds.items() if other != name
                               for d in seeds] or seeds for name, seeds in self.seeds.items()}

    @classmethod
    def from_rclpy(cls, type_names: Iterable[str], seed: int = 0, seeds_per_type: int = 64) -> Mutator:
        """A mutator over ``seeds_per_type`` random messages of each type, serialized by rclpy."""
        names = list(type_names)
        return cls({name: rclpy_seeds(name, seeds_per_type, seed * 1000 + k)
                    for k, name in enumerate(names)}, seed)

    def mutate(self, type_name: str) -> Mutant:
        """A mutant of a random seed of ``type_name``."""
        rng = self.rng
        index = int(rng.integers(len(self.seeds[type_name])))
        case = _Case(bytearray(self.seeds[type_name][index]), self._layouts[type_name][index], rng,
                     self._others[type_name])
        if rng.random() < 0.03:
            return Mutant(type_name, bytes(case.data), ())
        applied: list[str] = []
        plan = self._plan()
        for name in plan:
            if case.layout is None and name in _NEED_LAYOUT:
                continue
            if MUTATIONS[name](case):
                applied.append(name)
        if not applied:  # none applied to this seed (no string, no padding ...): random bytes
            _random_bytes(case)
            applied.append("random_bytes")
        return Mutant(type_name, bytes(case.data), tuple(applied))

    def _plan(self) -> list[str]:
        rng = self.rng
        while True:
            plan = [_pick(rng, list(FIELD_MUTATIONS)) for _ in range(int(rng.choice([0, 1, 1, 2])))]
            if rng.random() < 0.2:
                plan.append(_pick(rng, list(WHOLE_MUTATIONS)))
            plan += [_pick(rng, list(BYTE_MUTATIONS))
                     for _ in range(int(rng.choice([0, 0, 1, 1, 2])))]
            if plan:
                return plan
