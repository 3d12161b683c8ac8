#!/usr/bin/env python3
"""Soak: the demo graph as processes in lock-step for minutes; no hold, no fault, no memory growth.

The simulation graph of the demo (:func:`humanoid_balance.graph.sim_graph` in
lock-step: ``mujoco_sim``, ``zmp_estimator``, ``arm_balance``,
``waist_controller`` with its simulated drives), every node its own process
with its parameter file (:class:`humanoid_balance.processes.NodeProcess`), the
lifecycle nodes configured and activated by their services. A driver node here
answers every ``arm_balance`` command (period ``t``) with the job arm's input
for the next period, stamped ``t`` (the demo's order): the right shoulder
pitch swings continuously, ``q = A sin(2 pi t / T)``, given as joint
velocities on ``/arm_balance/job_joint_velocities``.

Checked over the run (issue 12, item 3):

- no hold: no ``arm_balance`` diagnostic that names a hold, no ``mujoco_sim``
  command-timeout hold;
- no fault: no ``/diagnostics`` status at ERROR from any node, every process alive
  to the end and its exit clean (SIGINT, status 0, no traceback);
- memory: each node's resident set (``VmRSS`` of ``/proc/<pid>/status``) at the
  end against the end of the warm-up (a tenth of the run, at least 10 s): growth < 5 %.

Writes ``benchmarks/results/soak.json`` and prints a table::

    python benchmarks/soak.py [--seconds 600] [--domain-id 64]

Figures depend on the machine's load (a shared 2-core machine runs the graph at
a fraction of real time in lock-step); the memory growth does not.
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from humanoid_balance.graph import GraphNode, lifecycle_nodes, sim_graph
from humanoid_balance.processes import ExitReport, LifecycleClient, NodeProcess

JOB_TOPIC = "/arm_balance/job_joint_velocities"
JOB_JOINTS = ("right_shoulder_pitch", "right_shoulder_roll", "right_shoulder_yaw", "right_elbow",
              "right_wrist_yaw", "right_wrist_roll", "right_wrist_pitch")
#: the swing of the right shoulder pitch: amplitude [rad] and period [s of simulation time]
SWING_AMPLITUDE_RAD = 0.3
SWING_PERIOD_S = 4.0
#: rad the job shoulder must have moved for the run to count (the arm moved at all)
MIN_SWING_RAD = 0.05
#: allowed growth of a node's resident memory from the end of the warm-up to the end [%]
RSS_GROWTH_LIMIT_PCT = 5.0
#: s between two memory samples
SAMPLE_PERIOD_S = 5.0
READY_TIMEOUT_S = 60.0


def soak_graph() -> list[GraphNode]:
    """The demo's graph in lock-step, also waiting for the driver's job input."""
    return sim_graph(lock_step=True, extra_lock_step_topics=[f"{JOB_TOPIC}:sensor_msgs/msg/JointState"])


def rss_kib(pid: int) -> int | None:
    """The resident set of process ``pid`` [KiB] (None once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


class SwingDriver:
    """Answers each ``arm_balance`` command stamped ``t`` with the swing's velocity at ``t + period``."""

    def __init__(self, node: Any, period_s: float) -> None:
        from rclpy.qos import QoSProfile
        from sensor_msgs.msg import JointState

        self.period_s = period_s
        self.publisher = node.create_publisher(JointState, JOB_TOPIC, QoSProfile(depth=10))
        node.create_subscription(JointState, "/arm_balance/command", self._on_command,
                                 QoSProfile(depth=10), raw=True)
        self._msg = JointState(name=list(JOB_JOINTS))
        self.last_ns = -1
        self.answered = 0

    def _on_command(self, data: bytes) -> None:
        from humanoid_balance.cdr import header_stamp_ns
        from humanoid_balance.nodes.common import stamp_msg

        t_ns = header_stamp_ns(data)
        # a repeated stamp is answered again: before time runs, the t = 0 state is republished
        # until every lock-step topic answered, and an answer sent before mujoco_sim matched
        # this publisher (discovery, slow on a loaded machine) is lost: skipping it stalled
        # the start for good (a 12 s soak simulated 0 s at load 10)
        if t_ns < self.last_ns:
            return
        self.last_ns = t_ns
        t = t_ns * 1e-9 + self.period_s
        omega = 2.0 * math.pi / SWING_PERIOD_S
        velocity = [0.0] * len(JOB_JOINTS)
        velocity[0] = SWING_AMPLITUDE_RAD * omega * math.cos(omega * t)
        self._msg.header.stamp = stamp_msg(t_ns)
        self._msg.velocity = velocity
        self.publisher.publish(self._msg)
        self.answered += 1


@dataclass
class SoakResult:
    """What a soak measured."""

    wall_s: float = 0.0
    simulated_s: float = 0.0
    warm_up_s: float = 0.0
    rss_warm_kib: dict[str, int] = field(default_factory=dict)
    rss_end_kib: dict[str, int] = field(default_factory=dict)
    holds: list[str] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)
    warnings: int = 0
    lock_step_misses: int = 0
    exits: dict[str, ExitReport] = field(default_factory=dict)
    error: str = ""
    swing_rad: float = 0.0  # range of the job shoulder's measured position [rad]

    def growth_pct(self, name: str) -> float:
        """Resident memory growth of node ``name`` from the warm-up's end to the end [%]."""
        warm, end = self.rss_warm_kib.get(name), self.rss_end_kib.get(name)
        return 100.0 * (end - warm) / warm if warm and end else math.nan

    def problems(self) -> list[str]:
        """Every check that failed, one line each (empty: the soak held)."""
        out = [f"error: {self.error}"] if self.error else []
        if self.swing_rad < MIN_SWING_RAD:  # a loaded machine may simulate under a period
            out.append(f"the job arm swung {self.swing_rad:.3f} rad (commanded "
                       f"{2 * SWING_AMPLITUDE_RAD:g} rad peak to peak): it did not move")
        out += [f"hold: {h}" for h in self.holds[:5]] + [f"fault: {f}" for f in self.faults[:5]]
        for name in self.rss_warm_kib:
            growth = self.growth_pct(name)
            if not growth < RSS_GROWTH_LIMIT_PCT:
                out.append(f"{name}: resident memory grew {growth:.2f} % (limit {RSS_GROWTH_LIMIT_PCT} %)")
        out += [f"{name}: exit status {r.returncode}, traceback {r.traceback}, killed {r.killed}"
                for name, r in self.exits.items() if not r.clean]
        return out

    def table(self) -> str:
        """Per node: memory after the warm-up and at the end, growth; exit."""
        lines = [f"soak: {self.wall_s:.0f} s wall, {self.simulated_s:.1f} s simulated "
                 f"(lock-step), warm-up {self.warm_up_s:.0f} s; holds {len(self.holds)}, faults "
                 f"{len(self.faults)}, warnings {self.warnings}, lock-step misses "
                 f"{self.lock_step_misses}, job shoulder swing {self.swing_rad:.3f} rad",
                 f"{'node':<26}{'RSS warm MiB':>13}{'RSS end MiB':>12}{'growth %':>10}{'exit':>6}"]
        for name in self.rss_warm_kib:
            exit_text = str(self.exits[name].returncode) if name in self.exits else "-"
            lines.append(f"{name:<26}{self.rss_warm_kib[name] / 1024:>13.1f}"
                         f"{self.rss_end_kib.get(name, 0) / 1024:>12.1f}"
                         f"{self.growth_pct(name):>10.2f}{exit_text:>6}")
        return "\n".join(lines)


def _on_diagnostics(result: SoakResult, msg: Any) -> None:
    for status in msg.status:
        level = status.level[0] if isinstance(status.level, (bytes, bytearray)) else int(status.level)
        text = f"{status.name}: {status.message}"
        values = {kv.key: kv.value for kv in status.values}
        if status.name.startswith("mujoco_sim"):
            result.lock_step_misses = max(result.lock_step_misses,
                                          int(values.get("lock_step_misses", "0")))
            if values.get("holding", "none") != "none":
                result.holds.append(text)
        if status.name.startswith("arm_balance") and "hold" in status.message.lower():
            result.holds.append(text)
        if level >= 2:
            result.faults.append(text)
        elif level == 1:
            result.warnings += 1


def soak(seconds: float, log_dir: Path, *, progress: bool = True,
         warm_up_s: float | None = None) -> SoakResult:
    """Run the soak for ``seconds`` of wall time (after bring-up); the measured :class:`SoakResult`.

    Args:
        seconds: wall time of the run after bring-up [s].
        log_dir: where the nodes' logs go.
        progress: print a line every minute.
        warm_up_s: wall time before the first memory sample [s] (None: a tenth of the run, at
            least 10 s); the memory is sampled every :data:`SAMPLE_PERIOD_S` at most.
    """
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.serialization import deserialize_message
    from rclpy.signals import SignalHandlerOptions
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState

    from humanoid_balance.graph import LOCK_STEP_RATE_HZ

    result = SoakResult(warm_up_s=max(10.0, seconds / 10.0) if warm_up_s is None else warm_up_s)
    nodes = soak_graph()
    context = Context()
    rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node("soak_driver", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    clock_ns = [0]
    node.create_subscription(Clock, "/clock", lambda m: clock_ns.__setitem__(
        0, m.clock.sec * 1_000_000_000 + m.clock.nanosec), 10)
    node.create_subscription(DiagnosticArray, "/diagnostics",
                             lambda m: _on_diagnostics(result, m), 100)
    driver = SwingDriver(node, 1.0 / LOCK_STEP_RATE_HZ)
    swing: list[float] = []

    def on_joints(data: bytes) -> None:  # every 50th state: the arm's swing, cheaply
        if driver.answered % 50 == 0:
            msg = deserialize_message(data, JointState)
            swing.append(float(msg.position[list(msg.name).index(JOB_JOINTS[0])]))

    node.create_subscription(JointState, "/joint_states", on_joints, 10, raw=True)
    processes = [NodeProcess(n, log_path=log_dir / f"{n.name}.log") for n in nodes]

    def spin(duration: float) -> None:
        end = time.monotonic() + duration
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)

    try:
        for managed in lifecycle_nodes(nodes):
            client = LifecycleClient(node, managed.name, executor=executor)
            client.bring_up(timeout=READY_TIMEOUT_S)
            client.destroy()
        start = time.monotonic()
        while driver.answered == 0 and time.monotonic() - start < READY_TIMEOUT_S:
            spin(0.1)
        if driver.answered == 0:
            raise RuntimeError("arm_balance sent no command: the lock-step did not start")
        result.holds.clear()
        result.faults.clear()  # bring-up: the nodes hold until they are active
        start, sim0 = time.monotonic(), clock_ns[0]
        warm_taken = False
        next_report = start + 60.0
        while (now := time.monotonic()) - start < seconds:
            until_warm = result.warm_up_s - (now - start) if not warm_taken else math.inf
            spin(max(0.0, min(SAMPLE_PERIOD_S, seconds - (now - start), until_warm)))
            dead = [p.name for p in processes if not p.alive()]
            if dead:
                raise RuntimeError(f"{dead} exited during the soak")
            if not warm_taken and time.monotonic() - start >= result.warm_up_s:
                warm_taken = True
                result.rss_warm_kib = {p.name: rss_kib(p.pid) or 0 for p in processes}
            if progress and time.monotonic() >= next_report:
                next_report += 60.0
                print(f"  {time.monotonic() - start:.0f} s: simulated "
                      f"{(clock_ns[0] - sim0) * 1e-9:.1f} s, holds {len(result.holds)}, faults "
                      f"{len(result.faults)}", flush=True)
        result.rss_end_kib = {p.name: rss_kib(p.pid) or 0 for p in processes}
        result.wall_s = time.monotonic() - start
        result.simulated_s = (clock_ns[0] - sim0) * 1e-9
        result.swing_rad = max(swing) - min(swing) if swing else 0.0
    except Exception as exc:  # reported as the soak's failure, with the nodes' exits
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        for process in reversed(processes):
            result.exits[process.name] = process.stop(signal.SIGINT, timeout=5.0)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    from humanoid_balance.results import metric, write_results
    from humanoid_balance.ros_env import use_loopback_dds

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600.0, help="wall s after bring-up")
    parser.add_argument("--domain-id", type=int, default=64, help="ROS_DOMAIN_ID of the run")
    parser.add_argument("--logs", type=Path, default=None, help="node logs (default: a temp dir)")
    args = parser.parse_args(argv)
    use_loopback_dds(args.domain_id)
    log_dir = args.logs or Path(tempfile.mkdtemp(prefix="soak-"))
    result = soak(args.seconds, log_dir)
    print(result.table())
    metrics: dict[str, dict[str, Any]] = {
        "wall_s": metric(round(result.wall_s, 1), "s"),
        "simulated_s": metric(round(result.simulated_s, 2), "s"),
        "holds": metric(len(result.holds), "", 0, "lower"),
        "faults": metric(len(result.faults), "", 0, "lower"),
        "warnings": metric(result.warnings, ""),
        "lock_step_misses": metric(result.lock_step_misses, ""),
        "job_shoulder_swing_rad": metric(round(result.swing_rad, 3), "rad"),
    }
    for name in result.rss_warm_kib:
        metrics[f"{name}_rss_warm_mib"] = metric(round(result.rss_warm_kib[name] / 1024, 1), "MiB")
        metrics[f"{name}_rss_end_mib"] = metric(round(result.rss_end_kib.get(name, 0) / 1024, 1), "MiB")
        metrics[f"{name}_rss_growth_pct"] = metric(round(result.growth_pct(name), 2), "%",
                                                  RSS_GROWTH_LIMIT_PCT, "lower")
        if name in result.exits:
            metrics[f"{name}_exit_clean"] = metric(result.exits[name].clean, "")
    write_results("soak", metrics)
    problems = result.problems()
    for line in problems:
        print(line, file=sys.stderr)
    print(f"logs: {log_dir}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
