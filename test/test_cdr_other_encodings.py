"""The CDR readers on big-endian CDR and XCDR2 (issue 35, DDS fuzz finding F1).

rclpy used to read what the readers refused of these encodings; given malformed bytes, its C
type support prints "sequence size exceeds remaining buffer" (or the like) to the process's
stderr once per message, a flood at the sender's rate. The readers now read plain CDR and
plain XCDR2 of either byte order themselves: well-formed bytes read as rclpy reads them,
malformed ones raise InvalidInputError and write nothing to fd 2 (checked in a child process:
rosidl writes from C, past Python's sys.stderr).
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from humanoid_balance import cdr
from humanoid_balance.exceptions import InvalidInputError

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import cdr_mutations  # noqa: E402
import fuzz_cdr  # noqa: E402

rclpy_serialization = pytest.importorskip("rclpy.serialization")
deserialize_message = rclpy_serialization.deserialize_message

#: the types the nodes read from raw subscriptions, and the reader of each (tools/fuzz_cdr.py)
TYPES = {
    "sensor_msgs/msg/JointState": "JointStateReader.read",
    "geometry_msgs/msg/WrenchStamped": "read_wrench_stamped",
    "std_msgs/msg/Float64MultiArray": "read_float64_multi_array",
    "std_msgs/msg/Float64": "read_float64",
}
#: (name, big endian, largest alignment, encapsulation identifier) of each encoding read
FORMS = (("CDR_BE", True, 8, b"\x00\x00"), ("CDR2_LE", False, 4, b"\x00\x07"),
         ("CDR2_BE", True, 4, b"\x00\x06"))


def _forms(data: bytes, type_name: str) -> Iterator[tuple[str, bool, bytes, list[tuple[str, int]]]]:
    """Each encoding of the plain little-endian message ``data``: (name, big endian, bytes, the
    (kind, offset) of each of its tokens in those bytes)."""
    layout = cdr_mutations.parse(data, cdr_mutations.SCHEMAS[type_name])
    for name, big, largest, identifier in FORMS:
        form = cdr_mutations.encode(layout, big_endian=big, max_alignment=largest,
                                    encapsulation=identifier + b"\x00\x00")
        offsets, at = [], 4
        for token in layout.tokens:  # where encode put each token
            size = min(token.alignment, largest)
            at += -(at - 4) % size
            offsets.append((token.kind, at))
            at += len(token.raw)
        assert at == len(form)
        yield name, big, form, offsets


def _seeds(type_name: str, count: int = 24) -> list[bytes]:
    return cdr_mutations.rclpy_seeds(type_name, count, seed=72 + list(TYPES).index(type_name))


def _same_as_rclpy(type_name: str, data: bytes, what: str) -> None:
    """The reader reads ``data`` to the values rclpy reads from it; arrays native, read-only."""
    reader = fuzz_cdr.READERS[TYPES[type_name]]
    read = reader.make()(data)
    assert reader.ours(read) == reader.theirs(
        deserialize_message(data, fuzz_cdr.message_class(type_name))), f"{what}: {data.hex()}"
    arrays = [read] if isinstance(read, np.ndarray) else [
        v for v in (getattr(read, "position", None), getattr(read, "velocity", None),
                    getattr(read, "effort", None)) if v is not None]
    for array in arrays:
        assert array.dtype == np.float64 and array.dtype.isnative and not array.flags.writeable


@pytest.mark.parametrize("type_name", list(TYPES))
def test_well_formed_big_endian_and_xcdr2_read_as_rclpy_reads_them(type_name: str) -> None:
    """Random messages in CDR_BE, CDR2_LE and CDR2_BE: each reader gives rclpy's values."""
    for data in _seeds(type_name):
        for name, _, form, _ in _forms(data, type_name):
            _same_as_rclpy(type_name, form, name)


@pytest.mark.parametrize("type_name", list(TYPES))
def test_big_endian_from_rosbags_reads_as_rclpy_reads_it(type_name: str) -> None:
    """rosbags' big-endian serializer (independent of the mutator's byte swap) gives bytes the
    readers read as rclpy does."""
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(getattr(Stores, "ROS2_KILTED", None) or Stores.ROS2_JAZZY)
    for data in _seeds(type_name, 12):
        msg = store.deserialize_cdr(data, type_name)
        big = bytes(store.serialize_cdr(msg, type_name, little_endian=False))
        assert big[:2] == b"\x00\x00"
        _same_as_rclpy(type_name, big, "rosbags CDR_BE")


@pytest.mark.parametrize("type_name", list(TYPES))
def test_announced_padding_and_trailing_bytes_read_as_rclpy_reads_them(type_name: str) -> None:
    """Bytes after the content, and padding the option bytes announce (the length a multiple
    of 4), read as rclpy reads them in every encoding."""
    for data in _seeds(type_name, 8):
        for name, _, form, _ in _forms(data, type_name):
            _same_as_rclpy(type_name, form + b"\x00" * 5, f"{name} + 5 bytes")
            padded = form + b"\x00" * (-len(form) % 4)
            if len(padded) > len(form):
                announced = padded[:3] + bytes([len(padded) - len(form)]) + padded[4:]
                _same_as_rclpy(type_name, announced, f"{name}, padding announced")


def test_joint_state_reader_forgets_its_layout_when_the_encoding_changes() -> None:
    """One reader given the same joint state as CDR_LE, then as XCDR2 with 4 trailing bytes (the
    same length, its doubles 4 bytes earlier), then big endian: each read as rclpy reads it."""
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState

    msg = JointState(name=["a"], position=[1.5, -2.0], velocity=[0.25])
    type_name = "sensor_msgs/msg/JointState"
    little = cdr_mutations.encode(cdr_mutations.parse(serialize_message(msg),
                                                      cdr_mutations.SCHEMAS[type_name]))
    forms = {name: form for name, _, form, _ in _forms(little, type_name)}
    xcdr2 = forms["CDR2_LE"] + b"\x00" * 4
    assert len(xcdr2) == len(little)
    reader = cdr.JointStateReader()
    for data in (little, little, xcdr2, xcdr2, forms["CDR_BE"], forms["CDR2_BE"], little):
        sample = reader.read(data)
        assert (sample.names, sample.position.tolist(), sample.velocity.tolist(),
                sample.effort.tolist()) == (("a",), [1.5, -2.0], [0.25], []), data.hex()


def test_layouts_of_types_that_are_not_final_are_refused_naming_them() -> None:
    """PL_CDR, D_CDR2 and PL_CDR2 (rclpy reads them as plain CDR) are refused with their name
    and the encapsulations the readers read; so is an unknown identifier."""
    value = struct.pack("<d", 2.5)
    for identifier, name in ((3, "PL_CDR_LE"), (9, "D_CDR2_LE"), (0x0B, "PL_CDR2_LE")):
        data = bytes([0, identifier, 0, 0]) + value
        assert deserialize_message(data, fuzz_cdr.message_class("std_msgs/msg/Float64")).data == 2.5
        with pytest.raises(InvalidInputError, match=rf"Float64: encapsulation 00 0{identifier:x} "
                           rf"00 00 \({name}: .*expected 00 01 \(CDR_LE\), 00 00 \(CDR_BE\), 00 07"):
            cdr.read_float64(data)
    with pytest.raises(InvalidInputError, match=r"encapsulation 00 10 00 00, expected 00 01"):
        cdr.read_float64(b"\x00\x10\x00\x00" + value)
    with pytest.raises(InvalidInputError, match=r"3 bytes \(00 06 00\), shorter than the"):
        cdr.header_stamp_ns(b"\x00\x06\x00")


def test_big_endian_is_read_and_unknown_encapsulations_refused_with_what_to_do() -> None:
    """Big-endian bytes are read as rclpy reads them; an encapsulation the readers do not read
    is refused, naming it and the ones they read."""
    from geometry_msgs.msg import WrenchStamped

    msg = WrenchStamped()
    msg.header.frame_id, msg.wrench.force.z, msg.wrench.torque.x = "left_foot_ft", 300.5, -0.25
    little = rclpy_serialization.serialize_message(msg)
    big = (b"\x00\x00\x00\x00" + struct.pack(">iII", 0, 0, 13) + b"left_foot_ft\x00" + bytes(7)
           + struct.pack(">6d", 0.0, 0.0, 300.5, -0.25, 0.0, 0.0))
    assert deserialize_message(big, WrenchStamped) == msg
    assert cdr.read_wrench_stamped(big) == cdr.read_wrench_stamped(little) == \
        (0, "left_foot_ft", (0.0, 0.0, 300.5, -0.25, 0.0, 0.0))
    with pytest.raises(InvalidInputError, match=r"WrenchStamped: encapsulation 01 01 00 00, "
                       r"expected 00 01 \(CDR_LE\), 00 00 \(CDR_BE\), 00 07 \(CDR2_LE\) or "
                       r"00 06 \(CDR2_BE\) and two option bytes"):
        cdr.read_wrench_stamped(b"\x01\x01" + little[2:])


def test_big_endian_and_xcdr2_are_read_and_every_other_layout_refused() -> None:
    """The readers read big endian and XCDR2 themselves, as rclpy does, and refuse cut bytes,
    the layouts of types that are not final and unknown encapsulations."""
    from std_msgs.msg import Float64

    big = b"\x00\x00\x00\x00" + struct.pack(">d", 2.5)
    xcdr2 = b"\x00\x07\x00\x00" + struct.pack("<d", 2.5)
    for data in (big, xcdr2):
        assert cdr.read_float64(data) == deserialize_message(data, Float64).data == 2.5
    for data in (big[:11], xcdr2[:11], cdr.float64_message(2.5)[:11], b"\x00\x03\x00\x00" + bytes(8),
                 b"\x00\x00\x00\x03", b"\x00\x01\x00\x01", b"\x01\x01\x00\x00" + bytes(8)):
        with pytest.raises(InvalidInputError):
            cdr.read_float64(data)


# --- malformed bytes, in a child process whose fd 2 is captured ---------------------------------

#: counts and lengths that cannot fit the bytes left, whatever follows them
HUGE = (2**31, 2**32 - 1)


def malformed(type_name: str) -> Iterator[tuple[str, bytes]]:
    """Seeded malformed messages of ``type_name`` in each encoding: every count and string length
    set past the bytes left, every cut short of the content; then random mutants (the fuzzer's)
    of the same encodings, which may be well-formed."""
    for data in _seeds(type_name, 6):
        for name, big, form, offsets in _forms(data, type_name):
            order = ">I" if big else "<I"
            for kind, at in offsets:
                if kind in ("count", "length"):
                    for value in (*HUGE, len(form) - at - 3):  # one byte more than there is
                        bad = bytearray(form)
                        bad[at:at + 4] = struct.pack(order, value)
                        yield f"{name} {kind} at {at} = {value}", bytes(bad)
            for cut in range(len(form)):
                yield f"{name} cut to {cut}", form[:cut]
    mutator = cdr_mutations.Mutator({type_name: _seeds(type_name, 16)}, seed=72)
    produced = 0
    while produced < 400:
        mutant = mutator.mutate(type_name)
        if mutant.data[:2] in (b"\x00\x00", b"\x00\x06", b"\x00\x07") and \
                {"big_endian", "xcdr2"} & set(mutant.mutations):
            produced += 1
            yield "mutant " + "+".join(mutant.mutations), mutant.data


#: the child: reads every case of argv[2] (a JSON list of hex) of type argv[1] the nodes' way (argv[3]:
#: "nodes") or with rclpy (control), prints a JSON tally; writes nothing to stderr itself
CHILD = """
import importlib, json, sys
from humanoid_balance import cdr
from humanoid_balance.exceptions import InvalidInputError
from humanoid_balance.nodes import raw_inputs
type_name, path, how = sys.argv[1:4]
cases = [bytes.fromhex(h) for h in json.load(open(path))]
module, _, name = type_name.replace("/msg/", ".msg.").rpartition(".")
cls = getattr(importlib.import_module(module), name)
tally = {"refused": 0, "accepted": []}
if how == "rclpy":
    from rclpy.serialization import deserialize_message
    for data in cases:
        try:
            deserialize_message(data, cls)
        except RuntimeError:
            tally["refused"] += 1
else:
    joint_reader = cdr.JointStateReader()
    readers = {"sensor_msgs/msg/JointState": lambda d: raw_inputs.joint_state_sample(joint_reader, d),
               "geometry_msgs/msg/WrenchStamped": cdr.read_wrench_stamped,
               "std_msgs/msg/Float64MultiArray": cdr.read_float64_multi_array,
               "std_msgs/msg/Float64": raw_inputs.read_float64}
    read = readers[type_name]
    for data in cases:
        try:
            read(data)
        except InvalidInputError:  # the nodes' drop
            tally["refused"] += 1
        else:
            tally["accepted"].append(data.hex())
print(json.dumps(tally))
"""


def _run_child(type_name: str, cases: list[bytes], how: str, tmp_path: Path) -> tuple[dict, str]:
    path = tmp_path / "cases.json"
    path.write_text(json.dumps([data.hex() for data in cases]))
    result = subprocess.run([sys.executable, "-c", CHILD, type_name, str(path), how],
                            capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr[-3000:]}"
    return json.loads(result.stdout), result.stderr


@pytest.mark.timeout(300)
@pytest.mark.parametrize("type_name", list(TYPES))
def test_malformed_big_endian_and_xcdr2_are_refused_with_nothing_on_stderr(
        type_name: str, tmp_path: Path) -> None:
    """Through the nodes' read path, every malformed case raises InvalidInputError and the
    process's fd 2 stays empty; a mutant accepted is read as rclpy reads it."""
    cases = list(malformed(type_name))
    broken = sum(1 for what, _ in cases if not what.startswith("mutant"))
    tally, stderr = _run_child(type_name, [data for _, data in cases], "nodes", tmp_path)
    assert stderr == ""
    accepted = [bytes.fromhex(h) for h in tally["accepted"]]
    for data in accepted:
        what = next(w for w, d in cases if d == data)
        assert what.startswith("mutant"), f"{what} accepted: {data.hex()}"
        _same_as_rclpy(type_name, data, what)
    assert tally["refused"] + len(accepted) == len(cases)
    assert tally["refused"] >= broken > 100


@pytest.mark.timeout(300)
def test_rclpy_prints_to_fd_2_for_each_malformed_message(tmp_path: Path) -> None:
    """The control: the same malformed bytes given to rclpy itself: it refuses each, and prints
    "sequence size exceeds remaining buffer" to the child's fd 2 once for each sequence count
    past the bytes left (string lengths it refuses quietly): the flood the test above would
    have seen. This fails once rclpy stops printing: the readers' own paths may stay."""
    type_name = "sensor_msgs/msg/JointState"
    cases = [(what, data) for what, data in malformed(type_name)
             if " count at " in what or " length at " in what][:200]
    counts = sum(" count at " in what for what, _ in cases)
    tally, stderr = _run_child(type_name, [data for _, data in cases], "rclpy", tmp_path)
    assert tally["refused"] == len(cases)
    assert stderr.splitlines() == ["sequence size exceeds remaining buffer"] * counts
    assert counts > 50
