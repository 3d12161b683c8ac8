#!/usr/bin/env python3
"""Fuzz every raw subscription of every node through DDS (issue 35, item 1).

For each (node, topic) of :func:`fuzz_topics` the node runs alone as a process
(its console script with the package's parameter file, and the overrides of the
graph it runs in; a lifecycle node configured and activated through its
services), kept in its running state by valid *companion* inputs published here
(:attr:`FuzzTopic.companions`, stamped like the mutants). Mutants of real
messages (``tools/cdr_mutations.py``: mutation-based over messages shaped like
the robot's, plus random rclpy-made ones, structure-aware) are published raw on
the topic at its nominal rate for ``--seconds`` (``tools/publish_cdr_mutations.py``);
a mutant whose stamp survived mutation carries the publish time (wall, or the
simulation's ``/clock`` for ``mujoco_sim``), so that what the node reads reaches
past its freshness checks. Then:

- **crash**: the process died, or printed a Python traceback;
- the node's own count of what it refused (``/diagnostics``: :attr:`FuzzTopic.refusals`)
  and, where it counts every message it received (``mujoco_sim``'s commands: applied
  plus rejected), the receptions, each as the change over the run;
- **offline**: every payload as DDS delivers it (zeros up to a multiple of 4
  bytes), in order, through the node's own read path (its ``humanoid_balance.cdr``
  reader, then, where the node does, ``rclpy`` for the encapsulations the readers
  leave to it) and through ``rclpy.serialization.deserialize_message``: *accepted*
  (equal values, compared as ``tools/fuzz_cdr.py`` does: NaN equals NaN, -0.0 is
  not 0.0), *refused*, *accepted but different* (or accepted where rclpy refuses:
  both count; must be 0). ``header_stamp_ns`` (a lock-step answer) reads the stamp
  alone: a stamp from bytes whose rest rclpy refuses is its contract (counted apart).
  The node's counted refusals are compared with this prediction (a gap: samples DDS
  did not deliver, see the receptions; ``--rate-factor 0.1`` publishes at a tenth of the
  rates, where the counts come out exact);
- the node's warning and error lines per second while fuzzed (rate-limited logging), and
  the lines it printed past its logger (*stray*: rclpy's C typesupport prints ``sequence
  size exceeds remaining buffer`` on stderr for every message it refuses so, unthrottled).

    python tools/fuzz_graph.py [--seconds 60] [--seed 1] [--only zmp] [--share-process]

Prints the table and writes it (``--json``, default ``test/faults/results/fuzz_graph.json``).
A crash or an accepted-but-different payload saves the run's payloads (hex, one a
line, as published) under ``--inputs-dir``. Exit status 1 on any crash or
accepted-but-different payload.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import multiprocessing
import os
import re
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

TOOLS = Path(__file__).resolve().parent
sys.path.insert(0, str(TOOLS))
sys.path.insert(0, str(TOOLS.parent))

import fuzz_cdr  # noqa: E402
from cdr_mutations import SCHEMAS, Mutant, Mutator, encode, parse, rclpy_seeds  # noqa: E402

from humanoid_balance.graph import LOCK_STEP_RATE_HZ, NODES, GraphNode, sim_graph  # noqa: E402
from humanoid_balance.ros_env import add_dds_arguments, apply_dds_arguments  # noqa: E402

RESULTS = TOOLS.parent / "test" / "faults" / "results"

# --- stamps -------------------------------------------------------------------------------------

#: the stamp of every real seed and companion: replaced by the publish time where it survived
SENTINEL = (0x13579BDF, 0x02468ACE)
_SENTINELS = (struct.pack("<iI", *SENTINEL), struct.pack(">iI", *SENTINEL))


def restamp(data: bytes, stamp_ns: int) -> bytes:
    """``data`` with every sentinel stamp (little or big endian) replaced by ``stamp_ns``."""
    sec, nanosec = divmod(stamp_ns, 1_000_000_000)
    for sentinel, form in zip(_SENTINELS, ("<iI", ">iI"), strict=True):
        if sentinel in data:
            data = data.replace(sentinel, struct.pack(form, sec, nanosec))
    return data


# --- what is fuzzed ------------------------------------------------------------------------------

def _defaults(node: str) -> dict[str, Any]:
    from humanoid_balance.params import spec_for

    return spec_for(node).defaults()


#: Hz: the simulation's sensors (the robot's drivers): joint states, F/T, FSR, and so the ZMP's
#: margin (zmp_estimator publishes one per joined sample) and a direct job (one per period)
SENSOR_RATE_HZ = float(_defaults("mujoco_sim")["publish_rate"])
#: Hz: arm_balance's cycle, so its commands and the strike driver's job velocities
ARM_RATE_HZ = float(_defaults("arm_balance")["rate"])
#: Hz: the waist controller's /joint_states (/waist/joint_states in the simulation)
WAIST_RATE_HZ = float(_defaults("waist_controller")["publish_rate"])

JOINTS = ("left_hip_yaw", "left_hip_roll", "left_hip_pitch", "left_knee", "left_ankle_pitch",
          "left_ankle_roll", "right_hip_yaw", "right_hip_roll", "right_hip_pitch", "right_knee",
          "right_ankle_pitch", "right_ankle_roll", "waist_pitch", "waist_roll",
          *(f"{side}_{joint}" for side in ("left", "right") for joint in (
              "shoulder_pitch", "shoulder_roll", "shoulder_yaw", "elbow", "wrist_yaw",
              "wrist_roll", "wrist_pitch")), "neck_yaw", "neck_pitch")
JOB_JOINTS = tuple(n for n in JOINTS if n.startswith("right_") and "hip" not in n
                   and "knee" not in n and "ankle" not in n)
ARM_JOINTS = tuple(n.replace("right_", "left_") for n in JOB_JOINTS) + JOB_JOINTS
WAIST_JOINTS = ("waist_pitch", "waist_roll")
#: the lock-step answer topic fuzzed: a driver's job input the simulation waits for
ANSWER_TOPIC = "/arm_balance/job_joint_velocities"


def joint_state(names: tuple[str, ...], rng: np.random.Generator, position: bool = True,
                velocity: bool = True, effort: bool = False) -> Any:
    """A JointState such as a driver sends (small positions and velocities), sentinel-stamped."""
    from sensor_msgs.msg import JointState

    msg = JointState(name=list(names))
    msg.header.stamp.sec, msg.header.stamp.nanosec = SENTINEL
    if position:
        msg.position = rng.normal(0.0, 0.05, len(names)).tolist()
    if velocity:
        msg.velocity = rng.normal(0.0, 0.1, len(names)).tolist()
    if effort:
        msg.effort = rng.normal(0.0, 2.0, len(names)).tolist()
    return msg


def wrench(side: str, rng: np.random.Generator) -> Any:
    """A standing foot's F/T reading in its sensor frame, sentinel-stamped."""
    from geometry_msgs.msg import WrenchStamped

    msg = WrenchStamped()
    msg.header.stamp.sec, msg.header.stamp.nanosec = SENTINEL
    msg.header.frame_id = f"{side}_foot_ft"
    f, t = msg.wrench.force, msg.wrench.torque
    f.x, f.y, f.z = float(rng.normal(0, 5)), float(rng.normal(0, 5)), float(rng.uniform(150, 350))
    t.x, t.y, t.z = (float(v) for v in rng.normal(0.0, 3.0, 3))
    return msg


def fsr(rng: np.random.Generator) -> Any:
    """A standing foot's four FSR forces [N]."""
    from std_msgs.msg import Float64MultiArray

    return Float64MultiArray(data=rng.uniform(40.0, 90.0, 4).tolist())


def margin(rng: np.random.Generator) -> Any:
    """A stability margin [m] of a robot standing."""
    from std_msgs.msg import Float64

    return Float64(data=float(rng.uniform(0.02, 0.08)))


@dataclass(frozen=True)
class Companion:
    """A valid input published beside the mutants (every ``every`` mutants, same stamp)."""

    topic: str
    type_name: str
    make: Callable[[np.random.Generator], Any]
    every: int = 1


@dataclass(frozen=True)
class Target:
    """A node as started for fuzzing.

    Attributes:
        key: its name in the table (node, and the configuration when there are several).
        node: the graph node (spec, overrides) started as a process.
        status: the name of its /diagnostics status.
        sim_clock: the node runs the simulation: stamps are its ``/clock``, not the wall's.
    """

    key: str
    node: GraphNode
    status: str
    sim_clock: bool = False


def targets(diagnostics_rate_hz: float | None = None) -> dict[str, Target]:
    """The nodes started for fuzzing, by key (``diagnostics_rate_hz``: their /diagnostics
    rate instead of the package's, for short runs)."""
    plain = {name: GraphNode(NODES[name]) for name in ("zmp_estimator", "arm_balance")}
    free = sim_graph()[0]
    lock = sim_graph(lock_step=True,
                     extra_lock_step_topics=[f"{ANSWER_TOPIC}:sensor_msgs/msg/JointState"])[0]
    assert free.name == lock.name == "mujoco_sim"
    made: tuple[Target, ...] = (
        Target("zmp_estimator", plain["zmp_estimator"], "zmp_estimator: ZMP"),
        Target("zmp_estimator (fsr)", plain["zmp_estimator"].with_parameters(sensor_type="fsr"),
               "zmp_estimator: ZMP"),
        Target("arm_balance", plain["arm_balance"], "arm_balance: control"),
        Target("mujoco_sim", free, "mujoco_sim", sim_clock=True),
        Target("mujoco_sim (lock-step)", lock, "mujoco_sim", sim_clock=True),
    )
    if diagnostics_rate_hz is not None:
        made = tuple(replace(t, node=t.node.with_parameters(diagnostics_rate=diagnostics_rate_hz))
                     for t in made)
    return {t.key: t for t in made}


@dataclass(frozen=True)
class FuzzTopic:
    """A raw subscription of a node, and how it is fuzzed.

    Attributes:
        target: the :func:`targets` key of the node.
        topic, type_name: the subscription.
        rate_hz: the topic's nominal rate [Hz].
        reader: the ``tools/fuzz_cdr.py`` reader the node reads it with.
        seed_message: a real message of the topic (sentinel-stamped).
        refusals: the /diagnostics key counting the unreadable messages.
        checks_counted: that key also counts the readable messages the node's checks refuse
            (``mujoco_sim``'s ``commands_rejected``: unknown joints, non-finite values, old
            stamps), so it is at least the unreadable ones.
        receptions: /diagnostics keys whose sum counts every message taken (empty: none).
        companions: the valid inputs that keep the node running meanwhile.
    """

    target: str
    topic: str
    type_name: str
    rate_hz: float
    reader: str
    seed_message: Callable[[np.random.Generator], Any]
    refusals: str
    receptions: tuple[str, ...] = ()
    companions: tuple[Companion, ...] = ()
    checks_counted: bool = False
    #: why the node may count fewer than were sent (None: it takes every message)
    loss: str | None = None

    @property
    def key(self) -> str:
        return f"{self.target} {self.topic}"


JOINT_STATE, WRENCH = "sensor_msgs/msg/JointState", "geometry_msgs/msg/WrenchStamped"
FSR, FLOAT64 = "std_msgs/msg/Float64MultiArray", "std_msgs/msg/Float64"
JS_READER = "JointStateReader.read"


ZMP_LOSS = ("zmp_estimator's subscriptions keep 100 messages (QoS depth 100): a stall of its "
            "executor longer than that overwrites the oldest")


def _zmp_topics() -> list[FuzzTopic]:
    def states(rng: np.random.Generator) -> Any:
        return joint_state(JOINTS, rng, effort=True)

    def foot(side: str) -> Callable[[np.random.Generator], Any]:
        return lambda rng: wrench(side, rng)

    both_feet = tuple(Companion(f"/{s}_foot/ft", WRENCH, foot(s)) for s in ("left", "right"))
    topics = [FuzzTopic("zmp_estimator", "/joint_states", JOINT_STATE, SENSOR_RATE_HZ, JS_READER,
                        states, "dropped_unreadable", companions=both_feet)]
    for side, other in (("left", "right"), ("right", "left")):
        topics.append(FuzzTopic(
            "zmp_estimator", f"/{side}_foot/ft", WRENCH, SENSOR_RATE_HZ, "read_wrench_stamped",
            foot(side), "dropped_unreadable",
            companions=(Companion(f"/{other}_foot/ft", WRENCH, foot(other)),
                        Companion("/joint_states", JOINT_STATE, states, every=5))))
    for side, other in (("left", "right"), ("right", "left")):
        topics.append(FuzzTopic(
            "zmp_estimator (fsr)", f"/{side}_foot/fsr", FSR, SENSOR_RATE_HZ,
            "read_float64_multi_array", fsr, "dropped_unreadable",
            companions=(Companion(f"/{other}_foot/fsr", FSR, fsr),
                        Companion("/joint_states", JOINT_STATE, states, every=5))))
    return [replace(t, loss=ZMP_LOSS) for t in topics]


ARM_LOSS = ("arm_balance's subscriptions keep the newest message only (QoS depth 1): one "
            "replaced by the next before its executor took it is never read, nor counted")


def _arm_topics() -> list[FuzzTopic]:
    def states(rng: np.random.Generator) -> Any:
        return joint_state(JOINTS, rng, effort=True)

    def job(rng: np.random.Generator) -> Any:
        return joint_state(JOB_JOINTS, rng, position=False)

    every = max(1, round(SENSOR_RATE_HZ / 100.0))  # the margin and the job at 100 Hz beside
    topics = [
        FuzzTopic("arm_balance", "/joint_states", JOINT_STATE, SENSOR_RATE_HZ, JS_READER,
                  states, "unreadable_messages",
                  companions=(Companion("/zmp/stability_margin", FLOAT64, margin, every),
                              Companion(ANSWER_TOPIC, JOINT_STATE, job, every))),
        FuzzTopic("arm_balance", ANSWER_TOPIC, JOINT_STATE, ARM_RATE_HZ, JS_READER, job,
                  "unreadable_messages",
                  companions=(Companion("/joint_states", JOINT_STATE, states),
                              Companion("/zmp/stability_margin", FLOAT64, margin,
                                        max(1, round(ARM_RATE_HZ / 100.0))))),
        FuzzTopic("arm_balance", "/zmp/stability_margin", FLOAT64, SENSOR_RATE_HZ, "read_float64",
                  margin, "unreadable_messages",
                  companions=(Companion("/joint_states", JOINT_STATE, states),
                              Companion(ANSWER_TOPIC, JOINT_STATE, job, every))),
    ]
    return [replace(t, loss=ARM_LOSS) for t in topics]


SIM_LOSS = ("mujoco_sim's subscriptions keep 10 messages (QoS depth 10, as the publisher "
            "here): a stall of its executor longer than 10 periods overwrites the oldest")


def _sim_topics() -> list[FuzzTopic]:
    def command(names: tuple[str, ...]) -> Callable[[np.random.Generator], Any]:
        return lambda rng: joint_state(names, rng)

    counted = ("commands_applied", "commands_rejected")
    topics = [FuzzTopic("mujoco_sim", topic, JOINT_STATE, rate, JS_READER, command(names),
                        "commands_rejected", counted, checks_counted=True)
              for topic, rate, names in (("/arm_balance/command", ARM_RATE_HZ, ARM_JOINTS),
                                         ("/joint_commands", SENSOR_RATE_HZ, JOB_JOINTS),
                                         ("/waist/joint_states", WAIST_RATE_HZ, WAIST_JOINTS))]
    topics.append(FuzzTopic(
        "mujoco_sim (lock-step)", ANSWER_TOPIC, JOINT_STATE, LOCK_STEP_RATE_HZ, "header_stamp_ns",
        command(JOB_JOINTS), "answers_unreadable",
        companions=(Companion("/arm_balance/command", JOINT_STATE, command(ARM_JOINTS)),)))
    return [replace(t, loss=SIM_LOSS) for t in topics]


def fuzz_topics() -> list[FuzzTopic]:
    """Every raw subscription of every node (see ``grep -n raw=True humanoid_balance/nodes``)."""
    return [*_zmp_topics(), *_arm_topics(), *_sim_topics()]


# --- the mutants ----------------------------------------------------------------------------------

def serialize(msg: Any) -> bytes:
    """``msg`` serialized by rclpy, its padding zeroed and nothing after its content."""
    from rclpy.serialization import serialize_message

    type_name = f"{type(msg).__module__.split('.')[0]}/msg/{type(msg).__name__}"
    return encode(parse(serialize_message(msg), SCHEMAS[type_name]))


def topic_mutator(fuzz: FuzzTopic, seed: int, real: int = 48, random: int = 16) -> Mutator:
    """Mutants of ``real`` messages shaped like the topic's and ``random`` rclpy-made ones; the
    other types' random messages for splices and wrong-type payloads."""
    rng = np.random.default_rng([seed, 35])
    seeds = {name: rclpy_seeds(name, random, seed * 1000 + k) for k, name in enumerate(SCHEMAS)}
    seeds[fuzz.type_name] = [serialize(fuzz.seed_message(rng)) for _ in range(real)] + \
        seeds[fuzz.type_name]
    return Mutator(seeds, seed)


@dataclass
class Restamped:
    """A mutator whose mutants carry ``now_ns()`` where their seed's stamp survived; each call
    first publishes the companions due (same stamp). The first call waits ``warm_up_s``: a
    writer matched on one side only loses its first samples."""

    mutator: Mutator
    now_ns: Callable[[], int]
    companions: list[tuple[Any, bytes, int]]
    warm_up_s: float = 0.5
    calls: int = 0

    def mutate(self, type_name: str) -> Mutant:
        if self.calls == 0:
            time.sleep(self.warm_up_s)
        stamp = self.now_ns()
        for publisher, data, every in self.companions:
            if self.calls % every == 0:
                publisher.publish(restamp(data, stamp))
        self.calls += 1
        mutant = self.mutator.mutate(type_name)
        return mutant._replace(data=restamp(mutant.data, stamp))


class PacedSleep:
    """``publish_mutations``' wait: sleeps the time left less the sleeps' typical overshoot
    (a loaded machine wakes a sleeper 0.1-0.5 ms late, and the publisher does not catch up
    after a late tick), then yields until the time is due. Measured at 1 kHz without
    companions: 950 payloads a second with ``time.sleep``, 990 with this; the table's
    ``made Hz`` says what each run made."""

    def __init__(self, most_s: float = 0.0005) -> None:
        self.overshoot_s = 0.0
        self.most_s = most_s

    def __call__(self, left: float) -> None:
        target = left - self.overshoot_s
        if target <= 0.0:
            time.sleep(0)
            return
        start = time.monotonic()
        time.sleep(target)
        late = time.monotonic() - start - target
        self.overshoot_s = min(self.most_s, max(0.0, 0.8 * self.overshoot_s + 0.2 * late))


# --- offline: the node's read path and rclpy on what DDS delivered --------------------------------

#: outcome columns of the offline check
COLUMNS = ("accepted", "refused", "accepted_but_different",
           "accepted_stamp_only", "refused_rclpy_reads", "refused_undocumented", "reader_crash")


def delivered(data: bytes) -> bytes:
    """``data`` as a DDS subscriber gets it: zeros up to a multiple of 4 bytes."""
    return data + bytes(-len(data) % 4)


@dataclass
class Offline:
    """The offline outcomes of a run's payloads, with a few examples of each failing kind."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COLUMNS, 0))
    narrowings: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def note(self, column: str, data: bytes | None = None, **extra: Any) -> None:
        self.counts[column] += 1
        if data is not None and len(self.examples.setdefault(column, [])) < 5:
            self.examples[column].append({"hex": data.hex(), **extra})

    @property
    def node_refused(self) -> int:
        """What the node's read path refuses."""
        return self.counts["refused"] + self.counts["reader_crash"]

    @property
    def different(self) -> int:
        return self.counts["accepted_but_different"]


def check_payloads(reader_name: str, type_name: str, payloads: list[bytes]) -> Offline:
    """Each payload as delivered, in order, through the node's read path and rclpy."""
    from rclpy.serialization import deserialize_message

    from humanoid_balance.exceptions import InvalidInputError

    reader = fuzz_cdr.READERS[reader_name]
    read, cls, out = reader.make(), fuzz_cdr.message_class(type_name), Offline()
    for data in map(delivered, payloads):
        try:
            ours, error = reader.ours(read(data)), None
        except InvalidInputError as exc:
            ours, error = None, str(exc)
        except Exception as exc:  # the node's callback would raise it: a crash
            out.note("reader_crash", data, error=f"{type(exc).__name__}: {exc}")
            continue
        msg = None
        if not fuzz_cdr.rclpy_over_reads(data):
            try:
                msg = deserialize_message(data, cls)
            except Exception:  # rclpy's RMWError
                msg = None
        if error is None:
            if msg is None:
                out.note("accepted_stamp_only" if reader.partial else "accepted_but_different",
                         data, rclpy="refused")
            elif reader.theirs(msg) != ours:
                out.note("accepted_but_different", data, ours=repr(ours)[:300],
                         rclpy=repr(reader.theirs(msg))[:300])
            else:
                out.note("accepted")
        else:
            out.note("refused")
            if msg is not None:
                narrowing = fuzz_cdr.classify_refusal(reader, error, data, msg)
                if narrowing is None:
                    out.note("refused_undocumented", data, error=error)
                else:
                    out.note("refused_rclpy_reads")
                    out.narrowings[narrowing] = out.narrowings.get(narrowing, 0) + 1
    return out


class OfflineChecker:
    """:func:`check_payloads` in a worker process whose address space is capped (a huge
    allocation fails there; a crash of rclpy ends the worker, reported as such), while the
    next topic is fuzzed. The worker comes from a fork server: not forked from this process,
    whose DDS threads hold locks. It starts (and imports rclpy) at once."""

    def __init__(self, memory_gb: float = 3.0) -> None:
        self.memory_gb = memory_gb
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._pool_for_use().submit(check_payloads, JS_READER, JOINT_STATE, True, [])

    def _pool_for_use(self) -> concurrent.futures.ProcessPoolExecutor:
        if self._pool is None:
            self._pool = concurrent.futures.ProcessPoolExecutor(
                1, mp_context=multiprocessing.get_context("forkserver"),
                initializer=fuzz_cdr._init_worker, initargs=(self.memory_gb,))
        return self._pool

    def submit(self, fuzz: FuzzTopic, payloads: list[bytes]) -> Callable[[], Offline]:
        """Start checking ``payloads``; call the result for the outcome (it waits)."""
        args = (fuzz.reader, fuzz.type_name, payloads)
        future = self._pool_for_use().submit(check_payloads, *args)

        def result() -> Offline:
            try:
                return future.result()
            except concurrent.futures.process.BrokenProcessPool:  # this check, or another
                self.close()
            try:  # again alone: it was this one if the worker dies again
                return self._pool_for_use().submit(check_payloads, *args).result()
            except concurrent.futures.process.BrokenProcessPool:
                self.close()
                out = Offline()
                out.note("reader_crash", b"", error="the offline worker died (rclpy or the reader)")
                return out

        return result

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None


# --- live: the fuzzing process's node -----------------------------------------------------------

class Session:
    """This process's rclpy node: publishes, reads /diagnostics and /clock, drives lifecycles."""

    def __init__(self) -> None:
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import QoSProfile
        from rosgraph_msgs.msg import Clock

        rclpy.init()
        self.node = rclpy.create_node("fuzz_graph")
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        #: status name -> (arrival [monotonic s], its values)
        self.status: dict[str, tuple[float, dict[str, str]]] = {}
        self.clock_ns = 0
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics,
                                      QoSProfile(depth=100))
        self.node.create_subscription(Clock, "/clock", self._on_clock, QoSProfile(depth=10),
                                      raw=True)

    def _on_diagnostics(self, msg: Any) -> None:
        now = time.monotonic()
        for status in msg.status:
            self.status[status.name] = (now, {kv.key: kv.value for kv in status.values})

    def _on_clock(self, data: bytes) -> None:
        if len(data) >= 12:
            sec, nanosec = struct.unpack_from("<iI", data, 4)
            self.clock_ns = sec * 1_000_000_000 + nanosec  # a restarted simulation goes back

    def spin(self, seconds: float) -> None:
        """Serve the subscriptions for ``seconds``."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            self.executor.spin_once(timeout_sec=min(left, 0.05))

    @contextlib.contextmanager
    def spinning(self) -> Iterator[None]:
        """The executor spun in a thread of its own meanwhile (the caller publishes)."""
        stop = threading.Event()

        def spin() -> None:
            while not stop.is_set():
                self.executor.spin_once(timeout_sec=0.05)

        thread = threading.Thread(target=spin, name="fuzz-graph-spin", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def spin_until(self, condition: Callable[[], bool], timeout: float) -> bool:
        end = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > end:
                return False
            self.executor.spin_once(timeout_sec=0.05)
        return True

    def values_after(self, name: str, after: float, timeout: float) -> dict[str, str] | None:
        """The values of the first ``name`` status received after the monotonic time ``after``."""
        def fresh() -> bool:
            return name in self.status and self.status[name][0] > after

        return self.status[name][1] if self.spin_until(fresh, timeout) else None

    def subscribed(self, node: str, topics: list[str]) -> bool:
        return all(any(i.node_name == node for i in self.node.get_subscriptions_info_by_topic(t))
                   for t in topics)

    def close(self) -> None:
        import rclpy

        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown()


def _count(values: dict[str, str] | None, keys: tuple[str, ...]) -> int | None:
    if values is None or not keys or any(k not in values for k in keys):
        return None
    return sum(int(float(values[k])) for k in keys)


# --- one topic -------------------------------------------------------------------------------------

@dataclass
class Row:
    """One (node, topic) of the table."""

    node: str
    topic: str
    type_name: str
    rate_hz: float
    seconds: float = 0.0
    #: mutants made per second (published, refused by DDS at publish, empty ones skipped)
    made_hz: float = 0.0
    sent: int = 0
    dds_refused: int = 0
    accepted: int = 0
    refused: int = 0
    crashes: int = 0
    accepted_but_different: int = 0
    node_refused: int | None = None
    received: int | None = None
    log_lines_per_s: float = 0.0
    #: lines the node printed past its logger during the run (rclpy's own stderr, unthrottled)
    stray_lines: int = 0
    #: the node's last /diagnostics values during the run (its running state: ZMPs, commands)
    diagnostics_during: dict[str, str] = field(default_factory=dict)
    #: its /diagnostics values after the run (the counters read)
    diagnostics: dict[str, str] = field(default_factory=dict)
    offline: dict[str, Any] = field(default_factory=dict)
    mutations: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


_LOG_LINE = re.compile(r"^\[(DEBUG|INFO|WARN|ERROR|FATAL)\] \[\d+\.\d+\]")


def log_lines(output: str) -> tuple[int, int]:
    """(warning and error lines of the node's logger, other lines: printed past it, e.g. by
    rclpy's C++ on stderr) in ``output``."""
    logged = stray = 0
    for line in output.splitlines():
        match = _LOG_LINE.match(line)
        if match is None:
            stray += bool(line.strip())
        elif match[1] in ("WARN", "ERROR", "FATAL"):
            logged += 1
    return logged, stray


def fuzz_one(session: Session, target: Target, fuzz: FuzzTopic, running: Any, seconds: float,
             seed: int, settle_s: float = 1.0, depth: int = 10,
             warm_up_s: float = 0.5) -> tuple[Row, list[bytes]]:
    """Publish the mutants of ``fuzz`` at its rate for ``seconds`` at the running node; the row
    (without the offline columns) and the payloads published."""
    from publish_cdr_mutations import message_class, publish_mutations

    row = Row(target.key, fuzz.topic, fuzz.type_name, fuzz.rate_hz)
    keys = (fuzz.refusals, *fuzz.receptions)
    before = session.values_after(target.status, 0.0, 30.0)
    if before is None:
        row.notes.append(f"no /diagnostics status {target.status!r} before the run")
    rng = np.random.default_rng([seed, 7])
    companions = []
    for companion in fuzz.companions:
        publisher = session.node.create_publisher(message_class(companion.type_name),
                                                  companion.topic, depth)
        companions.append((publisher, serialize(companion.make(rng)), companion.every))
    session.spin_until(lambda: all(p.get_subscription_count() for p, _, _ in companions), 20.0)

    def now_ns() -> int:
        return session.clock_ns if target.sim_clock else time.time_ns()

    source = Restamped(topic_mutator(fuzz, seed), now_ns, companions, warm_up_s)
    log_start = len(running.output())
    try:
        with session.spinning():  # /clock and /diagnostics taken meanwhile
            report = publish_mutations(session.node, fuzz.topic, fuzz.type_name, fuzz.rate_hz,
                                       seconds + source.warm_up_s, seed, qos=depth, keep=True,
                                       wait_subscribers_s=20.0, wait=PacedSleep(),
                                       mutator=source)  # type: ignore[arg-type]
    finally:
        for publisher, _, _ in companions:
            session.node.destroy_publisher(publisher)
    during = session.status.get(target.status, (0.0, {}))[1]
    session.spin(settle_s)  # what is queued is taken, delayed commands act
    after = session.values_after(target.status, time.monotonic(), 30.0)
    row.seconds = round(report.duration_s - source.warm_up_s, 2)
    row.sent, row.dds_refused = report.published, report.refused
    row.made_hz = round((report.published + report.refused + report.skipped_empty)
                        / max(row.seconds, 1e-9), 1)
    row.mutations = dict(report.mutations)
    row.diagnostics, row.diagnostics_during = dict(after or {}), dict(during)
    if report.subscribers == 0:
        row.notes.append("no subscriber matched before publishing")
    start, end = _count(before, keys[:1]), _count(after, keys[:1])
    if start is not None and end is not None:
        row.node_refused = end - start
    start, end = _count(before, fuzz.receptions), _count(after, fuzz.receptions)
    if start is not None and end is not None:
        row.received = end - start
    if not running.alive() or "Traceback (most recent call last)" in running.output():
        row.crashes = 1
    logged, row.stray_lines = log_lines(running.output()[log_start:])
    row.log_lines_per_s = round(logged / (report.duration_s + settle_s), 2)
    return row, report.sent


# --- the runs --------------------------------------------------------------------------------------

def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")


def start_target(session: Session, target: Target, topics: list[FuzzTopic], log_dir: Path,
                 timeout: float = 90.0) -> Any:
    """``target``'s node as a process, brought up, subscribed to ``topics``."""
    from humanoid_balance.processes import LifecycleClient, NodeProcess

    session.clock_ns = 0
    session.status.pop(target.status, None)  # a status of the node's previous process
    running = NodeProcess(target.node, log_path=log_dir / f"{_slug(target.key)}.log")
    if target.node.spec.lifecycle:
        client = LifecycleClient(session.node, target.node.name, session.executor)
        try:
            client.bring_up(timeout)
        finally:
            client.destroy()
    names = [t.topic for t in topics]
    if not session.spin_until(lambda: session.subscribed(target.node.name, names)
                              or not running.alive(), timeout) or not running.alive():
        report = running.stop()
        raise RuntimeError(f"{target.key} did not subscribe to {names} within {timeout} s: "
                           f"{report.output[-3000:]}")
    return running


def finish_row(row: Row, fuzz: FuzzTopic, payloads: list[bytes], inputs_dir: Path,
               offline: Offline) -> None:
    """The offline columns of ``row``; the payloads saved when the node crashed or differed."""
    c = offline.counts
    row.accepted = c["accepted"] + c["accepted_stamp_only"] + c["accepted_but_different"]
    row.refused = offline.node_refused
    row.accepted_but_different = offline.different
    row.offline = {"counts": c, "narrowings": offline.narrowings,
                   "examples": offline.examples}
    counted = row.node_refused
    if counted is not None and fuzz.checks_counted:
        if counted >= row.refused:
            row.notes.append(f"the node refused {counted}: the {row.refused} unreadable, and "
                             f"{counted - row.refused} readable ones its checks refuse")
        else:
            row.notes.append(f"the node refused {counted}, fewer than the {row.refused} "
                             "unreadable payloads")
    elif counted is not None and counted != row.refused:
        row.notes.append(f"the node counted {counted} refusals, {row.refused} predicted"
                         + (f": {fuzz.loss}" if counted < row.refused and fuzz.loss else ""))
    if row.received is not None and row.received != row.sent:
        row.notes.append(f"the node took {row.received} of {row.sent} messages sent"
                         + (f": {fuzz.loss}" if row.received < row.sent and fuzz.loss else ""))
    if row.crashes or row.accepted_but_different or c["reader_crash"]:
        inputs_dir.mkdir(parents=True, exist_ok=True)
        path = inputs_dir / f"{_slug(row.node)}_{_slug(row.topic)}.hex"
        path.write_text("".join(data.hex() + "\n" for data in payloads))
        row.notes.append(f"payloads saved: {path}")


def run(topics: list[FuzzTopic], seconds: float, seed: int, share_process: bool,
        log_dir: Path, inputs_dir: Path, depth: int = 10, settle_s: float = 1.0,
        warm_up_s: float = 0.5, diagnostics_rate_hz: float | None = None) -> list[Row]:
    """Fuzz each topic; a node started per topic, or per node (``share_process``), and again
    after a crash."""
    known = targets(diagnostics_rate_hz)
    started = time.monotonic()
    checker = OfflineChecker()
    session = Session()
    rows: list[Row] = []
    pending: list[tuple[Row, FuzzTopic, list[bytes], Callable[[], Offline]]] = []
    try:
        for k, fuzz in enumerate(topics):
            target = known[fuzz.target]
            group = [t for t in topics if t.target == fuzz.target] if share_process else [fuzz]
            if k == 0 or not share_process or topics[k - 1].target != fuzz.target \
                    or rows[-1].crashes:
                running = start_target(session, target, group, log_dir)
            print(f"[{time.monotonic() - started:.1f} s] fuzzing {fuzz.key} at {fuzz.rate_hz:g} Hz "
                  f"for {seconds:g} s", flush=True)
            row, payloads = fuzz_one(session, target, fuzz, running, seconds, seed + k,
                                     settle_s, depth, warm_up_s)
            last = not share_process or k + 1 == len(topics) or topics[k + 1].target != fuzz.target
            if last or row.crashes:
                exit_report = running.stop(timeout=10.0)
                if exit_report.traceback:
                    row.crashes = 1
                if not exit_report.clean:
                    row.notes.append(f"exit status {exit_report.returncode}"
                                     f"{' (killed)' if exit_report.killed else ''}"
                                     f"{', traceback' if exit_report.traceback else ''}: "
                                     f"log {running.log_path}")
            print(f"[{time.monotonic() - started:.1f} s] sent {row.sent}, the node counted "
                  f"{row.node_refused} refusals, crashes {row.crashes}", flush=True)
            pending.append((row, fuzz, payloads, checker.submit(fuzz, payloads)))
            rows.append(row)
        for row, fuzz, payloads, result in pending:
            finish_row(row, fuzz, payloads, inputs_dir, result())
    finally:
        session.close()
        checker.close()
    return rows


def table(rows: list[Row]) -> str:
    """The rows as a Markdown table."""
    head = ["node", "topic", "Hz", "made Hz", "messages sent", "accepted", "refused", "crashes",
            "accepted-but-different", "refusals counted by the node", "received (counted)",
            "warn lines/s", "stray lines"]
    lines = [head, ["---"] * len(head)]
    for r in rows:
        lines.append([r.node, r.topic, f"{r.rate_hz:g}", f"{r.made_hz:g}", str(r.sent), str(r.accepted),
                      str(r.refused), str(r.crashes), str(r.accepted_but_different),
                      "-" if r.node_refused is None else str(r.node_refused),
                      "-" if r.received is None else str(r.received), f"{r.log_lines_per_s:g}",
                      str(r.stray_lines)])
    return "\n".join("| " + " | ".join(line) + " |" for line in lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="per topic")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", action="append", default=[],
                        help="fuzz the topics whose 'node topic' contains this (repeatable)")
    parser.add_argument("--share-process", action="store_true",
                        help="one process per node for all its topics (CI), not one per topic")
    parser.add_argument("--json", type=Path, default=RESULTS / "fuzz_graph.json")
    parser.add_argument("--log-dir", type=Path, default=Path("/tmp/fuzz_graph_logs"))
    parser.add_argument("--inputs-dir", type=Path, default=RESULTS / "fuzz_graph_inputs")
    parser.add_argument("--depth", type=int, default=10,
                        help="history depth of the publishers here (the simulation's: 10)")
    parser.add_argument("--settle", type=float, default=1.0,
                        help="s between the last mutant and reading the node's counters")
    parser.add_argument("--warm-up", type=float, default=0.5,
                        help="s between the fuzz publisher's matching and its first mutant")
    parser.add_argument("--diagnostics-rate", type=float, default=None,
                        help="Hz of the nodes' /diagnostics (default: their parameter files')")
    parser.add_argument("--rate-factor", type=float, default=1.0,
                        help="publish at this fraction of each topic's rate (a check that the "
                             "nodes count every message when DDS loses none)")
    parser.add_argument("--list", action="store_true", help="list the topics and exit")
    add_dds_arguments(parser)
    args = parser.parse_args(argv)
    topics = [replace(t, rate_hz=t.rate_hz * args.rate_factor) for t in fuzz_topics()
              if not args.only or any(o in t.key for o in args.only)]
    if args.list or not topics:
        for t in topics:
            print(f"{t.key}: {t.type_name} at {t.rate_hz:g} Hz, reader {t.reader}, companions "
                  f"{[c.topic for c in t.companions]}")
        return 0 if topics else 2
    apply_dds_arguments(args)
    started, load_before = time.monotonic(), os.getloadavg()
    rows = run(topics, args.seconds, args.seed, args.share_process, args.log_dir, args.inputs_dir,
               args.depth, args.settle, args.warm_up, args.diagnostics_rate)
    print(table(rows))
    for row in rows:
        for note in row.notes:
            print(f"{row.node} {row.topic}: {note}")
    result = {"seed": args.seed, "seconds_per_topic": args.seconds, "depth": args.depth,
              "rate_factor": args.rate_factor,
              "share_process": args.share_process, "load_before": list(load_before),
              "load_after": list(os.getloadavg()), "cpus": os.cpu_count(),
              "elapsed_s": round(time.monotonic() - started, 1),
              "rows": [asdict(r) for r in rows]}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(f"written: {args.json} ({result['elapsed_s']} s; load {load_before} -> "
          f"{result['load_after']})")
    return 1 if any(r.crashes or r.accepted_but_different for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
