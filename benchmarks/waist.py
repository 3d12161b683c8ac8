#!/usr/bin/env python3
"""Timing of the waist controller: servo-loop period jitter and the core step time.

1. ``period_error_ms_*``: the ``waist_controller`` node's 500 Hz servo thread
   (absolute deadlines, sleep then a short spin), active and following a
   trajectory, with ROS publishing on: ``/joint_states`` and
   ``/waist/tracking_error`` at ``publish_rate`` (100 Hz, the config default;
   ``*_publish_500hz``: at every servo period),
   ``/waist/motor_states`` and ``/diagnostics`` at 10 Hz, to a probe process that
   subscribes to ``/joint_states`` and publishes the trajectory and a 50 Hz
   ``/waist/inclinometer``. The drives must share the node's process (python-can's
   virtual bus does not cross processes): ``period_error_ms_*`` with drives that
   only answer (what hardware drives cost the process), ``*_with_sim_drives`` with
   the simulated drives' physics in a 1 kHz thread of the same process (the demo).
   The error is the start of each period minus its absolute deadline.
   The servo thread runs under SCHED_FIFO 50 (``--priority``, the node's
   ``servo_priority`` in config/waist.yaml); 0 measures normal scheduling.
   ``--process-priority N`` also puts every other thread of the process under
   SCHED_FIFO N (as ``chrt -f N``; measured worse, see the node's docstring).
   The probe stays at normal priority.
2. ``step_us_median``: one period of the core mathematics: the RMRC outer step
   (:class:`RmrcOuterLoop`, eqs. 10-11), the two encoder speed estimates
   (:class:`EncoderVelocity`) and the two motor servos (:class:`MotorServo`),
   without the bus. ``cycle_us_median``: one whole
   :meth:`WaistController.servo_cycle` on a virtual bus (decode, safety checks,
   servo, DBC encode, send).
3. CPU of one servo period with the simulated drives in the process (the simulation
   graph's ``waist_controller``: ``simulated_drives``, the drives stepped by the servo
   thread), each figure from a fresh process:
   ``sim_servo_period_cpu_us``: the servo thread's work per period, ``drives.step`` then
   ``servo_cycle`` (drives answer, encode and decode on the DBC, frames through python-can's
   virtual bus, the drives' physics, the controller), back to back, CPU time of the thread;
   ``*_paced``: the same paced at 500 Hz (the thread sleeps between periods as in the node,
   and finds its caches cold); ``node_servo_thread_cpu_us_per_period``: the node itself,
   in-process with ``graph.sim_graph``'s parameters, active and following a command, the
   ``waist-servo`` thread's CPU (``/proc/self/task/<tid>/schedstat``: sleeping, the loop,
   the drives, the controller, publishing) per servo period.
   ``--baseline DIR`` measures another source tree too (e.g. ``git archive`` of an older
   commit unpacked in DIR), alternating with this one ``--rounds`` times, and adds
   ``*_baseline`` and ``*_ratio`` (this tree over the baseline, median of the rounds'
   ratios: what counts on a shared machine). ``--cpu-only`` skips part 1.

    python benchmarks/waist.py [--seconds 10] [--cpu-only] [--baseline DIR [--rounds 3]]

Writes benchmarks/results/waist.json (format of shared/RESULTS.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

# the source tree measured: this checkout, or HB_SOURCE_ROOT (the --baseline probes)
sys.path.insert(0, os.environ.get("HB_SOURCE_ROOT") or str(Path(__file__).resolve().parent.parent))

from humanoid_balance.ros_env import use_loopback_dds


def core_step_us(samples: int = 20000) -> float:
    """Median time of one RMRC outer step + two speed estimates + two servo steps, microseconds."""
    from humanoid_balance.core.servo import EncoderVelocity, MotorServo, ServoGains
    from humanoid_balance.core.waist_kinematics import DifferentialWaist, RmrcOuterLoop

    waist = DifferentialWaist()
    outer = RmrcOuterLoop(waist)
    gains = ServoGains()
    servos = (MotorServo(gains), MotorServo(gains))
    speeds = (EncoderVelocity(0.5 * gains.dt), EncoderVelocity(0.5 * gains.dt))
    times = np.empty(samples)
    q = np.array([0.1, -0.02])
    qd = np.radians([1.0, -0.167])
    theta = waist.motor_from_joint(q)
    for k in range(samples):
        stamp = k * gains.dt
        t0 = time.perf_counter()
        rates = outer.step(q, qd, q).motor_rates
        th1, th2 = float(theta[0]), float(theta[1])
        fresh1 = speeds[0].update(th1, stamp)
        fresh2 = speeds[1].update(th2, stamp)
        servos[0].step(th1, float(rates[0]), th1, speeds[0].velocity_rad_s, fresh=fresh1)
        servos[1].step(th2, float(rates[1]), th2, speeds[1].velocity_rad_s, fresh=fresh2)
        times[k] = time.perf_counter() - t0
    return float(np.median(times) * 1e6)


def controller_cycle_us(samples: int = 5000) -> float:
    """Median time of one WaistController.servo_cycle on a virtual bus, microseconds."""
    from humanoid_balance.can.bus import WaistCanBus
    from humanoid_balance.can.sim_drive import SimulatedWaist
    from humanoid_balance.waist import WaistController, WaistServoConfig
    from humanoid_balance.waist.load import TorsoLoad

    with SimulatedWaist(channel="bench_cycle", torso=TorsoLoad()) as sim, WaistCanBus(
            channel="bench_cycle", use_notifier=False, clock=lambda: sim.time_s) as bus:
        ctl = WaistController(WaistServoConfig(), bus)
        for _ in range(5):
            ctl.servo_cycle(sim.time_s)
            sim.step(0.002)
        ctl.enable(sim.time_s)
        times = np.linspace(0.0, 60.0, 61)
        ctl.set_trajectory(times, np.radians(np.column_stack([times * 0.5, -1 - 0.05 * times])),
                           sim.time_s)
        out = np.empty(samples)
        for k in range(samples):
            t0 = time.perf_counter()
            ctl.servo_cycle(sim.time_s)
            out[k] = time.perf_counter() - t0
            sim.step(0.002)
    return float(np.median(out) * 1e6)


def _sim_rig(channel: str) -> tuple[Any, Any, Any]:
    """Simulated drives (the torso on them), a polled bus and an enabled controller following a
    60 s ramp in pitch and roll: the lock-step rig of the node with ``simulated_drives``."""
    from humanoid_balance.can.bus import WaistCanBus
    from humanoid_balance.can.sim_drive import SimulatedWaist
    from humanoid_balance.waist import WaistController, WaistServoConfig
    from humanoid_balance.waist.load import TorsoLoad

    sim = SimulatedWaist(channel=channel, torso=TorsoLoad())
    bus = WaistCanBus(channel=channel, use_notifier=False, clock=lambda: sim.time_s)
    ctl = WaistController(WaistServoConfig(), bus)
    for _ in range(5):
        sim.step(0.002)
        ctl.servo_cycle(sim.time_s)
    ctl.enable(sim.time_s)
    times = np.linspace(0.0, 60.0, 61)
    ctl.set_trajectory(times, np.radians(np.column_stack([times * 0.5, -1 - 0.05 * times])),
                       sim.time_s)
    return sim, bus, ctl


def sim_servo_period_cpu_us(periods: int = 4000, pace_s: float = 0.0) -> float:
    """Mean CPU time of one servo period with simulated drives (``drives.step`` then
    ``servo_cycle``, as the node's servo thread runs them), microseconds.

    Args:
        periods: servo periods measured (after 200 not measured).
        pace_s: sleep before each period (0: back to back; 0.0015: about the node's pace at
            500 Hz, where the thread wakes to cold caches).
    """
    import gc

    sim, bus, ctl = _sim_rig(f"bench_cpu_{os.getpid()}")
    try:
        gc.collect()
        gc.freeze()  # as the node does when it activates
        dt = ctl.config.gains.dt
        total = 0.0
        for k in range(200 + periods):
            if pace_s > 0.0:
                time.sleep(pace_s)
            start = time.thread_time()
            sim.step(dt)
            ctl.servo_cycle(sim.time_s)
            if k >= 200:
                total += time.thread_time() - start
        if ctl.state.value != "running":
            raise RuntimeError(f"the rig left RUNNING ({ctl.state.value}: {ctl.fault_reason})")
    finally:
        gc.unfreeze()
        bus.close()
        sim.close()
    return 1e6 * total / periods


def node_servo_thread_cpu_us(seconds: float) -> float:
    """CPU of the node's ``waist-servo`` thread per servo period, microseconds: the node
    in-process with ``graph.sim_graph``'s parameters (simulated drives hosted and stepped by the
    servo thread) on the wall clock, active, following a ramp, publishing."""
    use_loopback_dds()
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.lifecycle import TransitionCallbackReturn
    from rclpy.parameter import Parameter
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from humanoid_balance import graph
    from humanoid_balance.nodes.waist_controller import JOINTS, WaistControllerNode
    from humanoid_balance.waist.reference import command_arrays

    spec = next(n for n in graph.sim_graph(lock_step=False) if n.name == "waist_controller")
    overrides = {**spec.parameters, "use_sim_time": False,
                 "can.channel": f"bench_node_cpu_{os.getpid()}"}
    rclpy.init()
    node = WaistControllerNode(parameter_overrides=[Parameter(k, value=v)
                                                    for k, v in overrides.items()])
    executor = SingleThreadedExecutor()
    executor.add_node(node)

    def spin(duration: float) -> None:
        end = time.monotonic() + duration
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.01)

    try:
        if node.trigger_configure() != TransitionCallbackReturn.SUCCESS:
            raise RuntimeError("configure failed")
        if node.trigger_activate() != TransitionCallbackReturn.SUCCESS:
            raise RuntimeError("activate failed")
        command = JointTrajectory(joint_names=["waist_pitch", "waist_roll"])
        for t in np.linspace(0.0, seconds + 5.0, 11):
            point = JointTrajectoryPoint(positions=[np.radians(0.5 * t), np.radians(-1 - 0.1 * t)])
            point.time_from_start.sec, point.time_from_start.nanosec = int(t), int(t % 1 * 1e9)
            command.points.append(point)
        loop = node.loop
        assert loop is not None
        times_positions = command_arrays(command.joint_names, command.points, JOINTS)
        assert not isinstance(times_positions, str), times_positions
        loop.submit_command(*times_positions, None)  # as the subscription hands it over
        spin(1.0)
        thread, controller = loop.thread, loop.controller
        assert thread is not None
        stat = Path(f"/proc/self/task/{thread.native_id}/schedstat")
        cpu0, cycles0 = int(stat.read_text().split()[0]), controller.cycles
        spin(seconds)
        cpu1, cycles1 = int(stat.read_text().split()[0]), controller.cycles
        if controller.state.value != "running":
            raise RuntimeError(f"the node left RUNNING ({controller.fault_reason})")
        node.trigger_deactivate()
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return (cpu1 - cpu0) * 1e-3 / (cycles1 - cycles0)


#: the CPU figures of part 3, each from a fresh process (``--probe``)
CPU_PROBES = ("sim_servo_period_cpu_us", "sim_servo_period_cpu_us_paced",
              "node_servo_thread_cpu_us_per_period")


def cpu_probe(name: str, seconds: float) -> float:
    """One CPU figure of this process's source tree."""
    if name == "sim_servo_period_cpu_us":
        return sim_servo_period_cpu_us()
    if name == "sim_servo_period_cpu_us_paced":
        return sim_servo_period_cpu_us(periods=2500, pace_s=0.0015)
    return node_servo_thread_cpu_us(seconds)


def run_probe(name: str, seconds: float, source_root: str | None = None) -> float:
    """:func:`cpu_probe` in a fresh process, on ``source_root`` (default this checkout)."""
    env = dict(os.environ)
    if source_root is not None:
        env["HB_SOURCE_ROOT"] = source_root
    else:
        env.pop("HB_SOURCE_ROOT", None)
    done = subprocess.run([sys.executable, __file__, "--probe", name, "--seconds", str(seconds)],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"probe {name} on {source_root or sys.path[0]} failed:\n"
                           f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return float(json.loads(lines[-1])[name])


def cpu_metrics(seconds: float, baseline: str | None, rounds: int) -> dict[str, dict[str, Any]]:
    """Part 3: each CPU figure (median of ``rounds`` fresh processes); with a baseline tree its
    figures too, measured alternately with this tree's, and the median ratio."""
    from humanoid_balance.results import metric

    metrics: dict[str, dict[str, Any]] = {}
    for name in CPU_PROBES:
        ours: list[float] = []
        theirs: list[float] = []
        for _ in range(rounds):
            if baseline is not None:
                theirs.append(run_probe(name, seconds, baseline))
            ours.append(run_probe(name, seconds))
            print(f"{name}: this tree {ours[-1]:.1f} us"
                  + (f", baseline {theirs[-1]:.1f} us" if theirs else ""), flush=True)
        metrics[name] = metric(round(statistics.median(ours), 1), "us", better="lower")
        if theirs:
            metrics[f"{name}_baseline"] = metric(round(statistics.median(theirs), 1), "us")
            ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
            metrics[f"{name}_ratio"] = metric(round(statistics.median(ratios), 2), "x",
                                              better="lower")
            metrics[f"{name}_ratios_per_round"] = metric(
                ",".join(f"{r:.2f}" for r in ratios), "x")
    return metrics


class _EchoDrives:
    """Drives that only answer (no physics): what real drives on the bus cost this process."""

    def __init__(self, channel: str) -> None:
        import can

        from humanoid_balance.can.protocol import WaistProtocol

        self.protocol = WaistProtocol()
        self.enabled = {1: False, 2: False}
        self.bus = can.Bus(interface="virtual", channel=channel)
        self.notifier = can.Notifier(self.bus, [self._on_message], timeout=0.05)

    def _on_message(self, msg: object) -> None:
        from humanoid_balance.can.protocol import ControlCommand, ControlFrame, SetpointCommand

        decoded = self.protocol.decode(msg)  # type: ignore[arg-type]
        if isinstance(decoded, ControlFrame):
            if decoded.command in (ControlCommand.ENABLE, ControlCommand.DISABLE):
                self.enabled[decoded.motor_id] = decoded.command == ControlCommand.ENABLE
        elif isinstance(decoded, SetpointCommand):
            for node in (1, 2):
                current = decoded.values[node - 1] if self.enabled[node] else 0.0
                self.bus.send(self.protocol.encode_feedback(
                    node, 0, current, enabled=self.enabled[node], fault=False, watchdog=False,
                    brake=not self.enabled[node]))

    def close(self) -> None:
        self.notifier.stop()
        self.bus.shutdown()


PROBE = r"""
import math, sys, time
import numpy as np
import rclpy
from builtin_interfaces.msg import Duration
from sensor_msgs.msg import Imu, JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
rclpy.init()
node = rclpy.create_node("waist_bench_probe")
count = [0]
node.create_subscription(JointState, "/joint_states", lambda m: count.__setitem__(0, count[0] + 1), 50)
pub_imu = node.create_publisher(Imu, "/waist/inclinometer", 10)
pub_cmd = node.create_publisher(JointTrajectory, "/waist/command", 10)
seconds = float(sys.argv[1])
deadline = time.monotonic() + 10.0
while pub_cmd.get_subscription_count() == 0 and time.monotonic() < deadline:
    rclpy.spin_once(node, timeout_sec=0.05)
print("ready", flush=True)
sys.stdin.readline()  # the node is active
cmd = JointTrajectory()
cmd.joint_names = ["waist_pitch", "waist_roll"]
for t in np.linspace(0.0, seconds + 2.0, 21):
    p = JointTrajectoryPoint()
    p.positions = [math.radians(0.5 * t), math.radians(-1.0 - 0.1 * t)]
    p.time_from_start = Duration(sec=int(t), nanosec=int((t % 1.0) * 1e9))
    cmd.points.append(p)
pub_cmd.publish(cmd)
imu = Imu()
imu.orientation.w = 1.0
end = time.monotonic() + seconds + 1.0
next_imu = time.monotonic()
while time.monotonic() < end:
    if time.monotonic() >= next_imu:
        pub_imu.publish(imu)
        next_imu += 0.02
    rclpy.spin_once(node, timeout_sec=0.005)
print(count[0], flush=True)
node.destroy_node()
rclpy.try_shutdown()
"""


def node_period_errors(seconds: float, priority: int, drives: str,
                       publish_rate: float) -> np.ndarray:
    """Period errors (s) of the node's servo thread while active and publishing.

    The node publishes ``/joint_states`` and ``/waist/tracking_error`` at 500 Hz to a
    probe process (which also sends the trajectory and a 50 Hz inclinometer), as rviz
    or a bag recorder would. ``drives``: ``echo`` (drives that answer and nothing else:
    what hardware drives cost this process) or ``sim`` (the simulated drives' physics
    in a thread of this process, as in the demo).
    """
    use_loopback_dds()
    import subprocess

    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.lifecycle import TransitionCallbackReturn
    from rclpy.parameter import Parameter

    from humanoid_balance.can.sim_drive import SimulatedWaist
    from humanoid_balance.nodes.waist_controller import WaistControllerNode
    from humanoid_balance.waist.load import TorsoLoad

    probe = subprocess.Popen(  # the probe runs at normal priority, like rviz or a recorder
        [sys.executable, "-c", PROBE, str(seconds)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True, preexec_fn=lambda: os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0)))
    rclpy.init()
    channel = f"bench_node_{drives}"
    sim: SimulatedWaist | None = None
    echo: _EchoDrives | None = None
    if drives == "sim":
        sim = SimulatedWaist(channel=channel, torso=TorsoLoad())
        sim.start_realtime()
    else:
        echo = _EchoDrives(channel)
    node = WaistControllerNode(parameter_overrides=[
        Parameter("can.channel", value=channel), Parameter("publish_rate", value=publish_rate),
        Parameter("feedback_timeout", value=0.05), Parameter("servo_priority", value=priority)])
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    errors = np.zeros(0)
    try:
        if node.trigger_configure() != TransitionCallbackReturn.SUCCESS:
            raise RuntimeError("configure failed")
        assert probe.stdout is not None and probe.stdin is not None
        while probe.stdout.readline().strip() != "ready":
            executor.spin_once(timeout_sec=0.01)
        if node.trigger_activate() != TransitionCallbackReturn.SUCCESS:
            raise RuntimeError("activate failed")
        probe.stdin.write("go\n")
        probe.stdin.flush()
        end = time.monotonic() + 0.5
        while time.monotonic() < end:  # the command arrives
            executor.spin_once(timeout_sec=0.005)
        assert node.loop is not None
        node.loop.period_errors_s.clear()
        node.loop.record_period_errors = True
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.005)
        node.loop.record_period_errors = False
        errors = np.array(node.loop.period_errors_s)
        durations = np.array(node.loop.cycle_durations_s) * 1e3
        print(f"cycle+publish ms: p50 {np.percentile(durations, 50):.3f} "
              f"p99 {np.percentile(durations, 99):.3f} max {durations.max():.3f}; "
              f"late > 0.2 ms: {(np.abs(errors) > 2e-4).sum()} of {errors.size}")
        state = node.controller.state.value if node.controller else "?"
        received = probe.stdout.readline().strip()
        print(f"{drives} drives, publishing at {publish_rate:g} Hz: node state {state}, "
              f"{received} joint states received by the "
              f"probe, {errors.size} periods")
        node.trigger_deactivate()
    finally:
        executor.shutdown()
        node.destroy_node()
        if sim is not None:
            sim.close()
        if echo is not None:
            echo.close()
        rclpy.try_shutdown()
        probe.kill()
        probe.wait()
    return errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="node run time, s")
    parser.add_argument("--priority", type=int, default=50,
                        help="servo_priority: servo thread SCHED_FIFO priority (0 = normal)")
    parser.add_argument("--process-priority", type=int, default=0,
                        help="SCHED_FIFO of the whole process, as chrt -f (0 = normal)")
    parser.add_argument("--cpu-only", action="store_true",
                        help="only the CPU figures (part 3), not the period jitter")
    parser.add_argument("--baseline", default=None,
                        help="another source tree whose CPU figures are measured alternately")
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per CPU figure")
    parser.add_argument("--probe", choices=CPU_PROBES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe is not None:  # one CPU figure of this tree (run_probe's subprocess)
        print(json.dumps({args.probe: cpu_probe(args.probe, args.seconds)}), flush=True)
        return 0
    from humanoid_balance.results import metric, write_results

    cpu = cpu_metrics(min(args.seconds, 5.0), args.baseline, args.rounds)
    command = (f"python benchmarks/waist.py --seconds {args.seconds:g} --priority {args.priority} "
               f"--process-priority {args.process_priority} --rounds {args.rounds}"
               + (" --cpu-only" if args.cpu_only else "")
               + (f" --baseline {args.baseline}" if args.baseline else ""))
    if args.cpu_only:
        write_results("waist", cpu, command=command)
        return 0
    step = core_step_us()
    cycle = controller_cycle_us()
    if args.process_priority > 0:  # as `chrt -f N python benchmarks/waist.py`: every thread
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(args.process_priority))
    prio = args.priority
    errors_ms = np.abs(node_period_errors(args.seconds, prio, "echo", 100.0)) * 1e3
    fast_ms = np.abs(node_period_errors(args.seconds, prio, "echo", 500.0)) * 1e3
    sim_ms = np.abs(node_period_errors(args.seconds, prio, "sim", 100.0)) * 1e3
    metrics = {
        "period_error_ms_p50": metric(float(np.percentile(errors_ms, 50)), "ms", better="lower"),
        "period_error_ms_p99": metric(float(np.percentile(errors_ms, 99)), "ms", target=0.2,
                                      better="lower"),
        "period_error_ms_max": metric(float(errors_ms.max()), "ms", better="lower"),
        "period_error_ms_p99_publish_500hz": metric(float(np.percentile(fast_ms, 99)), "ms",
                                                    target=0.2, better="lower"),
        "period_error_ms_max_publish_500hz": metric(float(fast_ms.max()), "ms", better="lower"),
        "period_error_ms_p99_with_sim_drives": metric(float(np.percentile(sim_ms, 99)), "ms",
                                                      better="lower"),
        "period_error_ms_max_with_sim_drives": metric(float(sim_ms.max()), "ms", better="lower"),
        "step_us_median": metric(step, "us", target=20.0, better="lower"),
        "cycle_us_median": metric(cycle, "us", better="lower"),
        **cpu,
    }
    write_results("waist", metrics, command=command)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
