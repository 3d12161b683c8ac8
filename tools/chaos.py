#!/usr/bin/env python3
"""Chaos run of the simulated graph (issue 35, item 2): seeded faults during repeated strikes.

The simulation graph (``graph.sim_graph``, free-running or lock-step) runs as processes, each
node with its parameter file, the lifecycle nodes brought up by their services, as the demo
does. A driver here sends the seed strike (``core/strike_trajectory.py``) over and over as
the job arm's input. A seeded schedule injects, one at a time, during the strikes:

========== ==============================================================================
kill       SIGKILL of a node, then its restart by hand as README's "a node died" says:
           start the executable again with its parameter file, configure and activate it
stop       SIGSTOP of a node for 0.1-2 s, then SIGCONT
bus_off    the waist's simulated CAN bus goes bus-off (``/waist/sim/fault bus_off``);
           cleared by the documented operator step ``/waist/enable``
drive_off  a waist drive stops answering (powered off) for 0.5-2 s; cleared likewise
clock_jump ``/clock`` leaps 10 s forward (``/sim/fault clock_jump 10``)
ft_stop    the F/T topics stop for 0.5-2 s (``/sim/fault ft_stop``)
ft_zero    one foot's F/T sensor returns zeros for 0.5-2 s (``/sim/fault ft_zero left``)
========== ==============================================================================

(``/clock`` going back to 0, a restarted simulation, is ``kill mujoco_sim``.)

Watched all along, independently of the package's readers (``rclpy`` deserializes):

* every ``/arm_balance/command``: finite, positions within the URDF limits, speeds within
  the joint speed limits, and no jump: consecutive commands apart by at most the speed limit
  times their stamps' difference (+1 mrad), the first after a silence within 0.05 rad of the
  measured position;
* ``/diagnostics``: when each node holds after the fault (hold time), when every node is
  back at the level it had before the fault and the arm commands flow (recovery time);
* a bag recorded by ``humanoid-balance record`` (a process of its own) through all faults:
  readable, its chunks' CRCs checked, and its ``/clock`` count against what the monitor got.

    python tools/chaos.py --seed 1 --faults 14 [--lock-step] [--quick]

Prints the chaos table and writes it to ``test/faults/results/chaos.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict, deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from humanoid_balance.graph import GraphNode, lifecycle_nodes, sim_graph
from humanoid_balance.processes import LifecycleClient, NodeProcess

NODES = ("mujoco_sim", "zmp_estimator", "arm_balance", "waist_controller")
KINDS = ("kill", "stop", "bus_off", "drive_off", "clock_jump", "ft_stop", "ft_zero")
JOB_TOPIC = "/arm_balance/job_joint_velocities"
SIM_FAULT_TOPIC = "/sim/fault"
WAIST_FAULT_TOPIC = "/waist/sim/fault"
#: s a fault's effects are watched for at most before it is cleared / after it cleared
HOLD_WATCH_S = 5.0
RECOVER_TIMEOUT_S = 30.0
#: s the graph must stay recovered (every node at its baseline level, the arm commands keeping
#: up with /clock, the simulation going on)
SETTLE_S = 1.0
#: s of the commands' stamps (simulation time) between two arm commands after which the next
#: is compared with the measured position (of the newest joint state stamped at or before it)
COMMAND_SILENCE_S = 0.1
#: joint states kept by stamp for that comparison
MEASURED_HISTORY = 2000
JUMP_TOLERANCE_RAD = 1e-3
RESUME_TOLERANCE_RAD = 0.05
LIMIT_TOLERANCE_RAD = 1e-6
READY_TIMEOUT_S = 90.0
RESULTS = Path(__file__).resolve().parent.parent / "test" / "faults" / "results" / "chaos.json"


@dataclass(frozen=True)
class Fault:
    """One scheduled fault: kind, target node (or foot / drive), how long it lasts [s]."""

    kind: str
    target: str
    duration_s: float

    def label(self) -> str:
        return f"{self.kind} {self.target}".strip()


def schedule(seed: int, count: int, kinds: tuple[str, ...] = KINDS) -> list[Fault]:
    """``count`` faults drawn with ``seed``: one of every kind first (a node drawn for kill and
    stop), then kill and stop of every other node, then repeats, each round in a seeded order;
    durations drawn in each kind's range."""
    rng = random.Random(seed)

    def target(kind: str) -> str:
        if kind in ("kill", "stop"):
            return rng.choice(NODES)
        return {"drive_off": "1", "ft_zero": rng.choice(("left", "right"))}.get(kind, "")

    first = [(kind, target(kind)) for kind in kinds]
    rng.shuffle(first)
    rest = [(kind, node) for kind in kinds if kind in ("kill", "stop") for node in NODES
            if (kind, node) not in first]
    rng.shuffle(rest)
    pool = first + rest
    out: list[Fault] = []
    while len(out) < count:
        for kind, name in pool:
            if len(out) == count:
                break
            low, high = (0.1, 2.0) if kind == "stop" else (0.5, 2.0)
            out.append(Fault(kind, name, round(rng.uniform(low, high), 2)))
        rng.shuffle(pool)
    return out


@dataclass
class FaultResult:
    """What one injected fault did (a row of the chaos table)."""

    fault: str
    duration_s: float
    unsafe_commands: int = 0
    hold_s: float | None = None  # fault -> first hold/ERROR of another node; None: no hold seen
    recover_s: float | None = None  # fault cleared -> graph back to its baseline; None: never
    operator_step: str = ""
    notes: list[str] = field(default_factory=list)


class Monitor:
    """The independent watcher: arm commands, diagnostics, clock, measured joints."""

    def __init__(self, node: Any) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.qos import QoSProfile
        from rosgraph_msgs.msg import Clock
        from sensor_msgs.msg import JointState

        from humanoid_balance.core.model import RobotModel
        from humanoid_balance.resources import urdf_path

        self.model = RobotModel(urdf_path("humanoid"))
        self.node = node
        qos = QoSProfile(depth=100)
        node.create_subscription(JointState, "/arm_balance/command", self.on_command, qos,
                                 raw=True)
        node.create_subscription(JointState, "/joint_states", self._on_joints, qos, raw=True)
        node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, qos)
        node.create_subscription(Clock, "/clock", self.on_clock, qos)
        self.unsafe: list[str] = []
        self.commands = 0
        self.clocks = 0
        #: the newest /clock [ns] (it goes back to 0 when the simulation restarts)
        self.clock_ns = 0
        #: every arm command's stamp [ns], as received (the bag is checked against them)
        self.command_stamps: list[int] = []
        self.last_command: tuple[float, dict[str, float]] | None = None  # wall s, positions
        self.last_command_stamp_ns = 0
        #: (stamp, command) of the last command stamped before the newest one
        self.reference: tuple[int, tuple[float, dict[str, float]] | None] = (0, None)
        self.measured: dict[str, float] = {}
        #: while True (before the first fault), the largest |command - measured| is recorded
        self.learning = True
        self.tracking_max = 0.0
        #: (stamp [ns], positions by name) of the newest joint states, in arrival order
        self.measured_history: deque[tuple[int, dict[str, float]]] = deque(maxlen=MEASURED_HISTORY)
        #: status name -> (level, message, wall s)
        self.status: dict[str, tuple[int, str, float]] = {}
        self.events: list[tuple[float, str, int, str]] = []  # wall s, name, level, message
        self._limits: dict[str, tuple[float, float, float]] = {}

    def _limit(self, name: str) -> tuple[float, float, float] | None:
        if name not in self._limits:
            try:
                lower, upper = self.model.position_limits([name])
                speed = self.model.velocity_limits([name])
            except Exception:  # a joint the model does not have: reported as unsafe
                return None
            self._limits[name] = (float(lower[0]), float(upper[0]), float(speed[0]))
        return self._limits[name]

    def _on_joints(self, data: bytes) -> None:
        from rclpy.serialization import deserialize_message
        from sensor_msgs.msg import JointState

        msg = deserialize_message(data, JointState)
        self.measured.update(zip(msg.name, msg.position, strict=False))
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        self.measured_history.append((stamp, dict(self.measured)))

    def on_clock(self, msg: Any) -> None:
        self.clocks += 1
        self.clock_ns = msg.clock.sec * 1_000_000_000 + msg.clock.nanosec

    def on_command(self, data: bytes) -> None:
        from rclpy.serialization import deserialize_message
        from sensor_msgs.msg import JointState

        msg = deserialize_message(data, JointState)
        now = time.monotonic()
        self.commands += 1
        stamp_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        self.command_stamps.append(stamp_ns)
        positions = dict(zip(msg.name, msg.position, strict=False))
        problems = []
        for name, q in positions.items():
            limit = self._limit(name)
            if limit is None:
                problems.append(f"unknown joint {name}")
                continue
            lower, upper, _speed = limit
            if not math.isfinite(q) or not lower - LIMIT_TOLERANCE_RAD <= q <= upper + LIMIT_TOLERANCE_RAD:
                problems.append(f"{name} position {q!r} outside [{lower:.3f}, {upper:.3f}]")
        for name, v in zip(msg.name, msg.velocity, strict=False):
            limit = self._limit(name)
            if limit is not None and not (math.isfinite(v) and abs(v) <= limit[2] * (1 + 1e-6)):
                problems.append(f"{name} velocity {v!r} beyond {limit[2]:.3f} rad/s")
        # a silence by the stamps (not by when this monitor got to them: under load it falls
        # behind), or the stamps going back (a restarted simulation)
        gap_s = 1e-9 * (stamp_ns - self.last_command_stamp_ns)
        silent = self.last_command is None or not 0.0 <= gap_s <= COMMAND_SILENCE_S
        # a command stamped as the last one replaces it (the simulation applies commands by
        # stamp): both are compared with the command before them
        if stamp_ns != self.last_command_stamp_ns:
            self.reference = (self.last_command_stamp_ns, self.last_command)
        ref_stamp, ref = self.reference
        if not silent and ref is not None:
            dt = max(0.0, 1e-9 * (stamp_ns - ref_stamp))
            for name, q in positions.items():
                before, limit = ref[1].get(name), self._limit(name)
                if before is not None and limit is not None and math.isfinite(q) and (
                        abs(q - before) > limit[2] * dt + JUMP_TOLERANCE_RAD):
                    problems.append(f"{name} jumped {q - before:+.4f} rad in {dt * 1e3:.1f} ms")
        at = self._measured_at(stamp_ns)
        if at is not None and self.learning:  # how far commands lead the arm, no fault in force
            self.tracking_max = max([self.tracking_max] + [
                abs(q - at[n]) for n, q in positions.items() if n in at and math.isfinite(q)])
        if silent and at is not None:
            # the commands lead the measured arm by the servo's lag at speed: a resume counts as
            # a jump beyond 1.5 times the largest lead seen before any fault
            tolerance = max(RESUME_TOLERANCE_RAD, 1.5 * self.tracking_max)
            for name, q in positions.items():
                measured = at.get(name)
                if measured is not None and math.isfinite(q) and abs(q - measured) > tolerance:
                    problems.append(f"{name} resumed {q - measured:+.4f} rad from its measured "
                                    "position")
        if problems:
            self.unsafe.append(f"{now:.3f}: " + "; ".join(problems[:3]))
        self.last_command = (now, positions)
        self.last_command_stamp_ns = stamp_ns

    def _measured_at(self, stamp_ns: int) -> dict[str, float] | None:
        """The joint positions of the newest joint state stamped at or before ``stamp_ns`` (on
        the same clock: one stamped later than that is from after a restart), or None."""
        for stamp, positions in reversed(self.measured_history):
            if stamp <= stamp_ns:
                return positions
        return None

    def _on_diagnostics(self, msg: Any) -> None:
        now = time.monotonic()
        for status in msg.status:
            level = status.level[0] if isinstance(status.level, (bytes, bytearray)) else int(status.level)
            before = self.status.get(status.name)
            self.status[status.name] = (level, status.message, now)
            if before is None or before[0] != level:
                self.events.append((now, status.name, level, status.message))

    def levels(self) -> dict[str, int]:
        return {name: level for name, (level, _, _) in self.status.items()}

    def command_lag_s(self) -> float:
        """s of simulation time by which the newest arm command's stamp trails the newest
        /clock (inf before either came). Both as this monitor received them: on a machine
        too busy for real time the graph, and this monitor, fall behind together, and the
        lag measures the commands against the simulation, not against the wall clock."""
        if self.commands == 0 or self.clocks == 0:
            return math.inf
        return 1e-9 * (self.clock_ns - self.last_command_stamp_ns)

    def flowing(self, within_s: float = 0.2) -> bool:
        """The arm commands keep up with the simulation's clock (within ``within_s``; a
        command stamped further ahead of /clock than that is from before a restart)."""
        return abs(self.command_lag_s()) < within_s


class ChaosGraph:
    """The graph's processes, restartable one by one, and a helper node to bring them up."""

    def __init__(self, nodes: list[GraphNode], log_dir: Path, executor: Any, helper: Any) -> None:
        self.nodes = {n.name: n for n in nodes}
        self.log_dir = log_dir
        self.executor = executor
        self.helper = helper
        self.processes: dict[str, NodeProcess] = {}
        self.starts: dict[str, int] = defaultdict(int)

    def start(self, name: str) -> None:
        self.starts[name] += 1
        log = self.log_dir / f"{name}.{self.starts[name]}.log"
        self.processes[name] = NodeProcess(self.nodes[name], log_path=log)

    def bring_up(self, name: str) -> None:
        if not self.nodes[name].spec.lifecycle:
            return
        client = LifecycleClient(self.helper, name, executor=self.executor)
        try:
            client.bring_up(timeout=READY_TIMEOUT_S)
        finally:
            client.destroy()

    def start_all(self) -> None:
        for name in self.nodes:
            self.start(name)
        for managed in lifecycle_nodes(list(self.nodes.values())):
            self.bring_up(managed.name)

    def signal(self, name: str, sig: int) -> None:
        import os

        os.kill(self.processes[name].pid, sig)

    def stop_all(self) -> dict[str, Any]:
        exits = {}
        for name, process in reversed(list(self.processes.items())):
            exits[name] = process.stop(signal.SIGINT, timeout=10.0)
        return exits


class StrikeLoop:
    """Sends the seed strike as the job arm's joint velocities, again and again.

    Free-running: one input per ``/joint_states`` period (the demo's driver); each strike
    takes the trajectory's duration plus a rest of ``rest_s``.
    """

    def __init__(self, node: Any, rest_s: float = 0.6) -> None:
        from rclpy.qos import QoSProfile
        from sensor_msgs.msg import JointState

        from humanoid_balance import cdr
        from humanoid_balance.core.model import RobotModel
        from humanoid_balance.core.strike_trajectory import StrikeTrajectory
        from humanoid_balance.resources import urdf_path

        self.strike = StrikeTrajectory(RobotModel(urdf_path("humanoid"), world_frame="W"),
                                       arm="right")
        self.cycle_s = self.strike.duration + rest_s
        self.writer = cdr.JointStateWriter(self.strike.joint_names)
        self.publisher = node.create_publisher(JointState, JOB_TOPIC, QoSProfile(depth=10))
        node.create_subscription(JointState, "/joint_states", self._on_state,
                                 QoSProfile(depth=10), raw=True)
        self.origin_ns: int | None = None
        self.last_ns: int | None = None
        self.strikes = 0

    def _on_state(self, data: bytes) -> None:
        from humanoid_balance import cdr

        now_ns = cdr.header_stamp_ns(data)
        if self.last_ns is not None and now_ns < self.last_ns - 50_000_000:
            self.origin_ns = None  # the simulation restarted: a new strike from its start
        self.last_ns = now_ns
        if self.origin_ns is None:
            self.origin_ns = now_ns
        t = 1e-9 * (now_ns - self.origin_ns)
        self.strikes = int(t // self.cycle_s)
        phase = t % self.cycle_s
        sample = self.strike.sample(min(phase, self.strike.duration))
        velocity = sample.velocity if phase < self.strike.duration else 0.0 * sample.velocity
        self.publisher.publish(self.writer.write(now_ns, (), velocity))


def _spin(executor: Any, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.01)


def _publish_string(publisher: Any, text: str) -> None:
    from std_msgs.msg import String

    publisher.publish(String(data=text))


def _enable_waist(helper: Any, executor: Any) -> str:
    """The documented operator step after a waist fault: ``/waist/enable`` true."""
    from std_srvs.srv import SetBool

    client = helper.create_client(SetBool, "/waist/enable")
    try:
        if not client.wait_for_service(timeout_sec=5.0):
            return "no /waist/enable"
        future = client.call_async(SetBool.Request(data=True))
        end = time.monotonic() + 15.0
        while not future.done() and time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)
        if not future.done():
            return "/waist/enable did not answer"
        answer = future.result()
        return "" if answer.success else answer.message
    finally:
        helper.destroy_client(client)


class Chaos:
    """Runs a schedule of faults on the graph and fills the table."""

    def __init__(self, graph: ChaosGraph, monitor: Monitor, driver: StrikeLoop, executor: Any,
                 helper: Any) -> None:
        from rclpy.qos import QoSProfile
        from std_msgs.msg import String

        self.graph, self.monitor, self.driver = graph, monitor, driver
        self.executor, self.helper = executor, helper
        self.sim_fault = helper.create_publisher(String, SIM_FAULT_TOPIC, QoSProfile(depth=10))
        self.waist_fault = helper.create_publisher(String, WAIST_FAULT_TOPIC, QoSProfile(depth=10))
        self.baseline: dict[str, int] = {}

    def settle(self, timeout_s: float) -> float | None:
        """Wall s until every status is at or below its baseline level and commands flow, held
        for :data:`SETTLE_S`; None after ``timeout_s``."""
        start = time.monotonic()
        good_since: float | None = None
        clock_then = 0
        while time.monotonic() - start < timeout_s:
            _spin(self.executor, 0.05)
            levels = self.monitor.levels()
            ok = self.monitor.flowing() and all(
                levels.get(name, 0) <= level for name, level in self.baseline.items()) and all(
                self.graph.processes[n].alive() for n in self.graph.processes)
            now = time.monotonic()
            if ok:
                if good_since is None:
                    good_since, clock_then = now, self.monitor.clock_ns
                # held for SETTLE_S, in which the simulation went on (a stopped one does not)
                if now - good_since >= SETTLE_S and self.monitor.clock_ns > clock_then:
                    return good_since - start
            else:
                good_since = None
        return None

    def not_recovered(self) -> str:
        """Why :meth:`settle` found the graph not recovered, for the notes."""
        levels = self.monitor.levels()
        why = [f"{n} {lv}" for n, lv in levels.items() if lv > self.baseline.get(n, 0)]
        why += [f"{n} not running" for n, p in self.graph.processes.items() if not p.alive()]
        if not self.monitor.flowing():
            why.append(f"arm commands {self.monitor.command_lag_s():.3f} s behind /clock")
        return ", ".join(why)

    def inject(self, fault: Fault) -> FaultResult:
        result = FaultResult(fault.label(), fault.duration_s)
        unsafe_before = len(self.monitor.unsafe)
        events_before = len(self.monitor.events)
        t0 = time.monotonic()
        clear = self._apply(fault, result)
        _spin(self.executor, fault.duration_s)
        clear()
        recover = self.settle(RECOVER_TIMEOUT_S)
        holds = [t for t, name, level, _ in self.monitor.events[events_before:]
                 if level >= 1 and not name.startswith(fault.target or "\0")]
        result.hold_s = round(min(holds) - t0, 3) if holds else None
        if recover is None:
            result.notes.append(f"not recovered within {RECOVER_TIMEOUT_S:g} s: "
                                + self.not_recovered())
        else:
            result.recover_s = round(recover, 3)
        result.unsafe_commands = len(self.monitor.unsafe) - unsafe_before
        result.notes += self.monitor.unsafe[unsafe_before:unsafe_before + 3]
        return result

    def _apply(self, fault: Fault, result: FaultResult) -> Any:
        """Inject ``fault``; the function that clears it (and does the operator step)."""
        graph = self.graph
        if fault.kind == "kill":
            graph.signal(fault.target, signal.SIGKILL)

            def restart() -> None:  # activating the waist enables its drives
                graph.processes[fault.target].stop(signal.SIGKILL, timeout=5.0)
                graph.start(fault.target)
                graph.bring_up(fault.target)
            result.operator_step = "restart" + (" + configure, activate" if
                                                graph.nodes[fault.target].spec.lifecycle else "")
            return restart
        if fault.kind == "stop":
            graph.signal(fault.target, signal.SIGSTOP)
            result.operator_step = "no"
            return lambda: graph.signal(fault.target, signal.SIGCONT)
        if fault.kind in ("bus_off", "drive_off"):
            _publish_string(self.waist_fault, "bus_off" if fault.kind == "bus_off"
                            else f"silent {fault.target}")
            result.operator_step = "/waist/enable"

            def enable() -> None:
                if fault.kind == "drive_off":
                    _publish_string(self.waist_fault, f"answer {fault.target}")
                    _spin(self.executor, 0.1)
                problem = _enable_waist(self.helper, self.executor)
                if problem:
                    result.notes.append(f"/waist/enable: {problem}")
            return enable
        if fault.kind == "clock_jump":
            _publish_string(self.sim_fault, "clock_jump 10")
            result.operator_step = "no"
            return lambda: None
        if fault.kind == "ft_stop":
            _publish_string(self.sim_fault, "ft_stop")
        elif fault.kind == "ft_zero":
            _publish_string(self.sim_fault, f"ft_zero {fault.target}")
        else:
            raise ValueError(f"unknown fault kind {fault.kind!r}")
        result.operator_step = "no"
        return lambda: _publish_string(self.sim_fault, "ft_resume")


def _recorder(out: Path, env_domain: int) -> subprocess.Popen:
    import os

    from humanoid_balance.processes import executable_path

    env = dict(os.environ)
    return subprocess.Popen([executable_path("humanoid-balance"), "record", str(out),
                             "--topics", "/clock", "/arm_balance/command"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def run(args: argparse.Namespace) -> dict[str, Any]:
    import rclpy
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.signals import SignalHandlerOptions

    faults = schedule(args.seed, args.faults, tuple(args.kinds))
    log_dir = Path(args.logs or tempfile.mkdtemp(prefix="chaos-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    context = Context()
    rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
    helper = rclpy.create_node("chaos_monitor", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(helper)
    monitor = Monitor(helper)
    driver = StrikeLoop(helper)
    graph = ChaosGraph(sim_graph(lock_step=args.lock_step, real_time_factor=1.0), log_dir,
                       executor, helper)
    chaos = Chaos(graph, monitor, driver, executor, helper)
    rows: list[FaultResult] = []
    bag = log_dir / "bag"
    recorder = None
    exits: dict[str, Any] = {}
    error = ""
    try:
        graph.start_all()
        print(f"chaos: graph up (logs {log_dir})", flush=True)
        recorder = _recorder(bag, 0)
        _spin(executor, 3.0)
        first = chaos.settle(READY_TIMEOUT_S)
        if first is None:
            raise RuntimeError(f"the graph did not settle: {monitor.levels()}")
        _spin(executor, driver.cycle_s + 0.5)  # a whole strike before any fault: the lead learnt
        chaos.baseline = monitor.levels()
        monitor.learning = False
        print(f"chaos: commands lead the measured arm by up to {monitor.tracking_max:.4f} rad "
              "before any fault", flush=True)
        print(f"chaos: baseline levels {chaos.baseline}", flush=True)
        for index, fault in enumerate(faults, 1):
            row = chaos.inject(fault)
            rows.append(row)
            print(f"chaos: {index}/{len(faults)} {row.fault} ({row.duration_s} s): unsafe "
                  f"{row.unsafe_commands}, hold {row.hold_s}, recover {row.recover_s}, "
                  f"step {row.operator_step} {'; '.join(row.notes)[:200]}", flush=True)
            if row.recover_s is None:
                _spin(executor, 2.0)
    except Exception as exc:  # the run's failure, reported with the table so far
        error = f"{type(exc).__name__}: {exc}"
    finally:
        if recorder is not None:
            recorder.send_signal(signal.SIGINT)
            try:
                recorder.wait(timeout=20)
            except subprocess.TimeoutExpired:
                recorder.kill()
        exits = {name: report.clean for name, report in graph.stop_all().items()}
        executor.shutdown()
        helper.destroy_node()
        rclpy.try_shutdown(context=context)
    bag_check = _check_bag(bag, monitor.command_stamps)
    return {"seed": args.seed, "lock_step": args.lock_step, "faults": [asdict(r) for r in rows],
            "commands": monitor.commands, "strikes": driver.strikes, "unsafe": monitor.unsafe,
            "command_lead_rad": round(monitor.tracking_max, 4),
            "bag": bag_check, "exits_clean": exits, "error": error, "logs": str(log_dir)}


def _check_bag(bag: Path, monitor_stamps: list[int]) -> dict[str, Any]:
    """The recorded bag read with the ``mcap`` reader (not the package's), its CRCs checked;
    the arm commands the monitor got between the bag's first and last one that the bag lacks."""
    files = sorted(bag.glob("*.mcap")) if bag.exists() else []
    if not files:
        return {"readable": False, "why": f"no MCAP in {bag}"}
    try:
        from mcap.reader import make_reader
        from rclpy.serialization import deserialize_message
        from sensor_msgs.msg import JointState

        counts: dict[str, int] = defaultdict(int)
        stamps: list[int] = []
        with open(files[0], "rb") as stream:
            reader = make_reader(stream, validate_crcs=True)
            for _, channel, message in reader.iter_messages():
                counts[channel.topic] += 1
                if channel.topic == "/arm_balance/command":
                    stamp = deserialize_message(message.data, JointState).header.stamp
                    stamps.append(stamp.sec * 1_000_000_000 + stamp.nanosec)
    except Exception as exc:  # the finding: a bag readers refuse
        return {"readable": False, "why": f"{type(exc).__name__}: {exc}"}
    missing = 0
    if stamps:
        recorded = set(stamps)
        # between the bag's first and last command by arrival (a restarted simulation's stamps
        # start again from 0): what the monitor got meanwhile
        first, last = monitor_stamps.index(stamps[0]) if stamps[0] in monitor_stamps else 0, \
            len(monitor_stamps) - 1 - monitor_stamps[::-1].index(stamps[-1]) \
            if stamps[-1] in monitor_stamps else len(monitor_stamps) - 1
        missing = sum(1 for s in monitor_stamps[first:last + 1] if s not in recorded)
    return {"readable": True, "crc_checked": True, "counts": dict(counts),
            "commands_missing_from_bag": missing}


def table(result: dict[str, Any]) -> str:
    lines = [f"{'fault':<28}{'times':>6}{'unsafe':>8}{'hold s':>9}{'recover s':>11}  operator step"]
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in result["faults"]:
        grouped[row["fault"]].append(row)
    for fault, rows in grouped.items():
        holds = [r["hold_s"] for r in rows if r["hold_s"] is not None]
        recovers = [r["recover_s"] for r in rows if r["recover_s"] is not None]
        lines.append(f"{fault:<28}{len(rows):>6}{sum(r['unsafe_commands'] for r in rows):>8}"
                     f"{(max(holds) if holds else float('nan')):>9.3f}"
                     f"{(max(recovers) if len(recovers) == len(rows) else float('nan')):>11.3f}  "
                     f"{rows[0]['operator_step']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from humanoid_balance.ros_env import use_loopback_dds

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--faults", type=int, default=len(KINDS) + 6)
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--lock-step", action="store_true")
    parser.add_argument("--domain-id", type=int, default=65)
    parser.add_argument("--logs", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    use_loopback_dds(args.domain_id)
    result = run(args)
    print(table(result))
    print(f"bag: {result['bag']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    problems = [r for r in result["faults"] if r["unsafe_commands"] or r["recover_s"] is None]
    if result["error"]:
        print(f"chaos: {result['error']}", file=sys.stderr)
    lost = result["bag"].get("commands_missing_from_bag", 0)
    return 1 if problems or result["error"] or not result["bag"].get("readable") or lost else 0


if __name__ == "__main__":
    sys.exit(main())
