#!/usr/bin/env python3
"""Fuzz the raw CDR readers of humanoid_balance.cdr against rclpy.serialization (issue 35).

For each reader, ``--cases`` mutants of its message type (``tools/cdr_mutations.py``)
go to the reader and to ``rclpy.serialization.deserialize_message``:

- the reader **accepts**: rclpy must read the same bytes to the same values (stamp,
  frame, names, arrays, NaN equal to NaN, -0.0 not equal to 0.0); otherwise
  *accepted but different*. ``header_stamp_ns`` reads the stamp alone: that it takes
  a stamp from bytes whose rest rclpy refuses is its contract (column
  *accepted, rclpy refused*, an error for every other reader);
- the reader **refuses**: with ``InvalidInputError`` only; anything else (an
  ``IndexError``, ``struct.error``, ``MemoryError``, a case that takes more than
  ``--hang-ms`` of CPU time) is a *crash*. Where rclpy reads bytes the reader refuses, the
  reader's reason must be one of its documented narrowings (:data:`NARROWINGS`);
  otherwise *refused, undocumented*.

rclpy is not run on the bytes it reads past its buffer (4 bytes whose options
announce padding: garbage values or a segmentation fault; see
:func:`rclpy_over_reads`): column *rclpy not run*. Each chunk of cases runs in a
worker process whose address space is capped (``--memory-gb``): a huge
allocation fails there instead of swapping, and a crash of rclpy or the reader
ends that worker only; the chunk is then run again case by case to name the
input (``--trace-dir``).

    python tools/fuzz_cdr.py --cases 100000 [--seed 1] [--jobs 2] [--json out.json]

The exit status is 1 when any reader has a crash, an accepted-but-different case,
an undocumented refusal or (but ``header_stamp_ns``) an accepted case rclpy refuses.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import importlib
import json
import math
import os
import re
import resource
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cdr_mutations import Mutator

from humanoid_balance import cdr
from humanoid_balance.exceptions import InvalidInputError

#: why a reader may refuse bytes rclpy reads, as its messages say it (see humanoid_balance.cdr)
NARROWINGS = {
    "encapsulation": re.compile(r"encapsulation .* expected 00 01"),
    "not UTF-8": re.compile(r"not UTF-8"),
    "NUL": re.compile(r"without its NUL|NUL at byte"),
    "announced padding": re.compile(r"padding byte"),
}
#: a Float64MultiArray whose dimension count runs past its bytes: rclpy prints "sequence size
#: exceeds remaining buffer", takes no dimension and reads data_offset and data from the bytes
#: after the count (garbage)
RCLPY_EMPTY_MULTI_ARRAY = "rclpy: overlong dimension count ignored"

CHUNK = 2500


def _canonical(values: Any) -> tuple[int, ...]:
    """Doubles as bit patterns, every NaN as one pattern: NaN equals NaN, -0.0 differs from 0.0."""
    array = np.array(values, dtype="<f8")
    array[np.isnan(array)] = np.nan
    return tuple(array.view("<u8").tolist())


def _stamp_ns(stamp: Any) -> int:
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


class Reader(NamedTuple):
    """A reader of humanoid_balance.cdr and how its result compares with rclpy's message.

    Attributes:
        name: as in the table.
        type_names: the types whose mutants it is given (in turn).
        make: a new reading function (a new JointStateReader: its caches start empty).
        ours: the reader's result as a comparable value.
        theirs: rclpy's message as a comparable value.
        partial: it reads a part of the message only (rclpy may refuse the rest).
    """

    name: str
    type_names: tuple[str, ...]
    make: Callable[[], Callable[[bytes], Any]]
    ours: Callable[[Any], Any]
    theirs: Callable[[Any], Any]
    partial: bool = False


def _joint_state_ours(read: Any) -> Any:
    return (read.stamp_ns, read.frame_id, tuple(read.names), _canonical(read.position),
            _canonical(read.velocity), _canonical(read.effort))


def _joint_state_theirs(msg: Any) -> Any:
    return (_stamp_ns(msg.header.stamp), msg.header.frame_id, tuple(msg.name),
            _canonical(msg.position), _canonical(msg.velocity), _canonical(msg.effort))


def _wrench_theirs(msg: Any) -> Any:
    f, t = msg.wrench.force, msg.wrench.torque
    return (_stamp_ns(msg.header.stamp), msg.header.frame_id,
            _canonical([f.x, f.y, f.z, t.x, t.y, t.z]))


READERS = {
    reader.name: reader for reader in (
        Reader("read_wrench_stamped", ("geometry_msgs/msg/WrenchStamped",),
               lambda: cdr.read_wrench_stamped,
               lambda r: (r.stamp_ns, r.frame_id, _canonical(r.values)), _wrench_theirs),
        Reader("JointStateReader.read", ("sensor_msgs/msg/JointState",),
               lambda: cdr.JointStateReader().read, _joint_state_ours, _joint_state_theirs),
        Reader("read_float64_multi_array", ("std_msgs/msg/Float64MultiArray",),
               lambda: cdr.read_float64_multi_array, _canonical, lambda m: _canonical(m.data)),
        Reader("read_float64", ("std_msgs/msg/Float64",),
               lambda: cdr.read_float64, lambda v: _canonical([v]), lambda m: _canonical([m.data])),
        Reader("header_stamp_ns", ("geometry_msgs/msg/PointStamped", "sensor_msgs/msg/JointState"),
               lambda: cdr.header_stamp_ns, int, lambda m: _stamp_ns(m.header.stamp), partial=True),
    )
}

#: the outcome columns of the table, in order
COLUMNS = ("accepted", "refused", "crashes", "accepted_but_different", "accepted_rclpy_refused",
           "refused_rclpy_accepted_documented", "refused_rclpy_accepted_undocumented",
           "rclpy_not_run")
#: the columns that fail the run (accepted_rclpy_refused: for readers that read all of a message)
FAILURES = ("crashes", "accepted_but_different", "refused_rclpy_accepted_undocumented")


def rclpy_over_reads(data: bytes) -> bool:
    """Whether ``rclpy.serialization.deserialize_message`` reads past ``data``.

    rclpy (rmw_fastrtps, Fast CDR 2) takes the last two bits of the second option
    byte as the count of padding bytes at the end (DDS-XTypes 1.3, 7.6.3.1.2) and,
    when the length is a multiple of 4, moves the end of the buffer back by that
    many. Four bytes that announce padding leave an end before the first field:
    every bounds check then passes, and the message is read from the memory after
    the buffer: garbage values (a ``WrenchStamped``, a ``Float64``), or a
    segmentation fault (a ``Float64MultiArray``: in each of 3 runs of a raw DDS
    subscriber given ``00 01 00 01``; a ``JointState`` given ``00 01 f0 62`` in one run).
    """
    return len(data) == 4 and data[3] & 3 != 0


@dataclass
class Tally:
    """The outcomes of one reader's cases, with a few examples of each failing kind."""

    reader: str
    cases: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COLUMNS, 0))
    narrowings: dict[str, int] = field(default_factory=dict)
    max_us: float = 0.0
    #: the case that took longest: type, hex
    slowest: tuple[str, str] = ("", "")
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def add(self, other: Tally) -> None:
        self.cases += other.cases
        for key, value in other.counts.items():
            self.counts[key] += value
        for key, value in other.narrowings.items():
            self.narrowings[key] = self.narrowings.get(key, 0) + value
        if other.max_us > self.max_us:
            self.max_us, self.slowest = other.max_us, other.slowest
        for key, items in other.examples.items():
            self.examples.setdefault(key, []).extend(items)
            del self.examples[key][5:]

    def note(self, column: str, example: dict[str, Any] | None = None) -> None:
        self.counts[column] += 1
        if example is not None and len(self.examples.setdefault(column, [])) < 5:
            self.examples[column].append(example)

    def failures(self) -> int:
        fail = sum(self.counts[c] for c in FAILURES)
        if not READERS[self.reader].partial:
            fail += self.counts["accepted_rclpy_refused"]
        return fail


class _Hang(BaseException):
    """Raised by the watchdog (a CPU-time timer: a worker waiting for the CPU is no hang) in the
    middle of a case that takes too long."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Hang


_CLASSES: dict[str, Any] = {}


def message_class(type_name: str) -> Any:
    """The rclpy message class of ``package/msg/Type``."""
    if type_name not in _CLASSES:
        package, _, name = type_name.split("/")
        _CLASSES[type_name] = getattr(importlib.import_module(f"{package}.msg"), name)
    return _CLASSES[type_name]


def classify_refusal(reader: Reader, error: str, data: bytes, msg: Any) -> str | None:
    """The documented narrowing that explains a refusal of bytes rclpy read as ``msg``, if any."""
    for name, pattern in NARROWINGS.items():
        if pattern.search(error):
            return name
    if reader.name == "read_float64_multi_array" and not msg.layout.dim \
            and len(data) >= 8 and data[4:8] != b"\x00\x00\x00\x00":
        return RCLPY_EMPTY_MULTI_ARRAY
    return None


def check_case(reader: Reader, read: Callable[[bytes], Any], type_name: str, data: bytes,
               mutations: tuple[str, ...], tally: Tally, hang_s: float) -> None:
    """One case: the reader, then rclpy, the outcome noted in ``tally``."""
    from rclpy.serialization import deserialize_message

    example = {"type": type_name, "mutations": list(mutations), "hex": data.hex()}
    tally.cases += 1
    error: str | None = None
    ours: Any = None
    start = time.thread_time()
    signal.setitimer(signal.ITIMER_PROF, hang_s)
    try:
        ours = reader.ours(read(data))
    except InvalidInputError as exc:
        error = str(exc)
    except _Hang:
        tally.note("crashes", {**example, "error": f"no answer within {hang_s} s of CPU time"})
        return
    except Exception as exc:  # the defects this looks for: any other exception
        tally.note("crashes", {**example, "error": f"{type(exc).__name__}: {exc}"})
        return
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
    took_us = 1e6 * (time.thread_time() - start)
    if took_us > tally.max_us:
        tally.max_us, tally.slowest = took_us, (type_name, data.hex())
    tally.counts["refused" if error is not None else "accepted"] += 1
    if rclpy_over_reads(data):
        tally.note("rclpy_not_run")
        if error is None:  # the reader took 4 bytes: never right
            tally.note("accepted_rclpy_refused", example)
        return
    try:
        msg = deserialize_message(data, message_class(type_name))
    except Exception as exc:  # rclpy refuses with RMWError (a RuntimeError)
        if error is None:
            tally.note("accepted_rclpy_refused", {**example, "rclpy": str(exc)[:200]})
        return
    if error is None:
        theirs = reader.theirs(msg)
        if theirs != ours:
            tally.note("accepted_but_different", {**example, "ours": repr(ours)[:300],
                                                  "rclpy": repr(theirs)[:300]})
        return
    narrowing = classify_refusal(reader, error, data, msg)
    if narrowing is None:
        tally.note("refused_rclpy_accepted_undocumented", {**example, "error": error})
    else:
        tally.note("refused_rclpy_accepted_documented")
        tally.narrowings[narrowing] = tally.narrowings.get(narrowing, 0) + 1


def mutants(reader: Reader, seed: int, chunk: int,
            count: int) -> Iterator[tuple[str, bytes, tuple[str, ...]]]:
    """The ``count`` mutants of chunk ``chunk``: the same for the same seed, wherever run."""
    mutator = _mutator(seed)
    mutator.rng = np.random.default_rng([seed, chunk, list(READERS).index(reader.name)])
    for k in range(count):
        type_name = reader.type_names[k % len(reader.type_names)]
        mutant = mutator.mutate(type_name)
        yield type_name, mutant.data, mutant.mutations


_MUTATORS: dict[int, Mutator] = {}


def _mutator(seed: int) -> Mutator:
    """A mutator over the seeds of every type read (splices and wrong types mix them in)."""
    if seed not in _MUTATORS:
        _MUTATORS[seed] = Mutator.from_rclpy(sorted({n for r in READERS.values() for n in r.type_names}),
                                             seed)
    return _MUTATORS[seed]


def run_chunk(reader_name: str, seed: int, chunk: int, count: int, hang_s: float,
              trace: str | None = None, skip: frozenset[int] = frozenset()) -> Tally:
    """A chunk of cases of one reader (in a worker process).

    Args:
        trace: write each case there (its index first) before running it: after a crash,
            the case that crashed.
        skip: the indices of cases not to run (those that crashed a process before).
    """
    signal.signal(signal.SIGPROF, _on_alarm)
    reader = READERS[reader_name]
    read = reader.make()
    tally = Tally(reader_name)
    for index, (type_name, data, mutations) in enumerate(mutants(reader, seed, chunk, count)):
        if index in skip:
            continue
        if trace is not None:
            Path(trace).write_text(json.dumps({"index": index, "type": type_name,
                                               "mutations": mutations, "hex": data.hex()}))
        check_case(reader, read, type_name, data, mutations, tally, hang_s)
    return tally


def _init_worker(memory_gb: float) -> None:
    limit = int(memory_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # rclpy prints "sequence size exceeds remaining buffer" on stderr for some refusals
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)


def fuzz(cases: int, seed: int = 1, jobs: int = 2, readers: list[str] | None = None,
         hang_s: float = 1.0, memory_gb: float = 3.0, trace_dir: Path | None = None) -> list[Tally]:
    """``cases`` cases per reader, in chunks over ``jobs`` worker processes.

    A worker that dies (a segmentation fault) breaks the pool: every chunk not
    finished then runs again in a process of its own, which writes each case down
    before running it; a chunk that kills that process too has its last case
    noted as a crash and runs again without it, until it ends.
    """
    names = readers or list(READERS)
    tallies = {name: Tally(name) for name in names}
    work = [(name, chunk, min(CHUNK, cases - chunk * CHUNK))
            for name in names for chunk in range(math.ceil(cases / CHUNK))]
    broken: list[tuple[str, int, int]] = []
    with concurrent.futures.ProcessPoolExecutor(jobs, initializer=_init_worker,
                                                initargs=(memory_gb,)) as pool:
        futures = {pool.submit(run_chunk, name, seed, chunk, count, hang_s): (name, chunk, count)
                   for name, chunk, count in work}
        for future in concurrent.futures.as_completed(futures):
            try:
                tallies[futures[future][0]].add(future.result())
            except concurrent.futures.process.BrokenProcessPool:
                broken.append(futures[future])
    for name, chunk, count in sorted(broken):
        tallies[name].add(_run_traced(name, seed, chunk, count, hang_s, memory_gb,
                                      trace_dir or Path("/tmp")))
    return [tallies[name] for name in names]


def _run_traced(name: str, seed: int, chunk: int, count: int, hang_s: float, memory_gb: float,
                folder: Path) -> Tally:
    """A chunk run in processes of its own, each case written down first: each case that ends
    such a process is a crash, the chunk then runs again without it."""
    import subprocess

    trace = folder / f"fuzz_cdr_{name}_{seed}_{chunk}.json"
    result_path = folder / f"fuzz_cdr_{name}_{seed}_{chunk}.result.json"
    crashes: list[dict[str, Any]] = []
    while True:
        skip = sorted(c["index"] for c in crashes)
        code = ("import dataclasses, json, sys; "
                f"sys.path.insert(0, {str(Path(__file__).parent)!r}); import fuzz_cdr; "
                f"fuzz_cdr._init_worker({memory_gb}); "
                f"t = fuzz_cdr.run_chunk({name!r}, {seed}, {chunk}, {count}, {hang_s}, "
                f"{str(trace)!r}, frozenset({skip})); "
                f"open({str(result_path)!r}, 'w').write(json.dumps(dataclasses.asdict(t)))")
        trace.unlink(missing_ok=True)
        result_path.unlink(missing_ok=True)
        result = subprocess.run([sys.executable, "-c", code], check=False)
        if result.returncode == 0 and result_path.exists():
            tally = Tally(**{**json.loads(result_path.read_text()), "slowest": ("", "")})
            trace.unlink(missing_ok=True)
            result_path.unlink()
            break
        crashes.append({**json.loads(trace.read_text()),
                        "error": f"the process ended with status {result.returncode}"})
    for crash in crashes:
        tally.cases += 1
        tally.note("crashes", crash)
    return tally


def retime(tally: Tally, repeat: int = 200) -> float:
    """The shortest of ``repeat`` readings [µs] of the reader's slowest case, here alone: a
    long maximum that this does not repeat was a cold cache or the collector."""
    reader = READERS[tally.reader]
    read = reader.make()
    data = bytes.fromhex(tally.slowest[1])
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        with contextlib.suppress(InvalidInputError):
            reader.ours(read(data))
        best = min(best, time.perf_counter() - start)
    return 1e6 * best


def table(tallies: list[Tally]) -> str:
    """The results as a Markdown table."""
    head = ["reader", "cases", *COLUMNS, "max CPU µs", "slowest again µs"]
    rows = [head, ["---"] * len(head)]
    for t in tallies:
        rows.append([t.reader, str(t.cases), *(str(t.counts[c]) for c in COLUMNS), f"{t.max_us:.0f}",
                     f"{retime(t):.1f}" if t.slowest[1] else "-"])
    lines = ["| " + " | ".join(row) + " |" for row in rows]
    for t in tallies:
        if t.narrowings:
            lines.append(f"{t.reader} refusals of what rclpy reads: "
                         + ", ".join(f"{k} {v}" for k, v in sorted(t.narrowings.items())))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=100_000, help="cases per reader")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--reader", action="append", choices=list(READERS),
                        help="fuzz only this reader (repeat for more)")
    parser.add_argument("--hang-ms", type=float, default=1000.0,
                        help="a case taking more CPU time than this is a crash")
    parser.add_argument("--memory-gb", type=float, default=3.0, help="address space of a worker")
    parser.add_argument("--trace-dir", type=Path, default=None,
                        help="where a crashed chunk's last case is written")
    parser.add_argument("--json", type=Path, default=None, help="write the tallies there")
    args = parser.parse_args(argv)
    started = time.monotonic()
    tallies = fuzz(args.cases, args.seed, args.jobs, args.reader, args.hang_ms / 1000.0,
                   args.memory_gb, args.trace_dir)
    print(table(tallies))
    print(f"seed {args.seed}, {time.monotonic() - started:.0f} s")
    for t in tallies:
        for column, items in t.examples.items():
            for item in items[:3]:
                print(f"{t.reader} {column}: {json.dumps(item)[:600]}")
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(t) for t in tallies], indent=1))
    return 1 if any(t.failures() for t in tallies) else 0


if __name__ == "__main__":
    sys.exit(main())
