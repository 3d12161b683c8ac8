#!/usr/bin/env python3
"""Time of one two-foot ZMP estimate, and the zmp_estimator node's throughput and latency at 1 kHz.

1. ``core_us_*``: :meth:`ZmpEstimator.step` on a two-foot F/T sample (foot
   weight compensation, both feet's ZMPs, contact hysteresis, polygon from
   the cache, margin), sole poses given, wrenches varying every sample like a
   strike's (wall time; ``core_cpu_us_*``: the same on this thread's CPU clock, which
   leaves out the time the process was preempted). ``core_with_fk_us_*`` adds the
   sole poses from a joint state (pinocchio forward kinematics of the 30-joint model),
   which the node does when the legs move.
2. ``node_*``: ``zmp_estimator`` in a process of its own; this process
   publishes ``/joint_states`` and both ``/{side}_foot/ft`` at 1 kHz (stamped
   with the wall clock at publication) and times each ``/zmp`` from its stamp
   (same machine, same clock). ``node_rate_hz``: /zmp messages received per
   second over the run. The node spins with rclpy's EventsExecutor as its
   ``main`` does (``*_single_threaded_executor``: the same with the classic
   executor, what Humble has). ``echo_latency_*``: the same path through a
   bare rclpy node that republishes each right-foot wrench as a point: the
   floor that DDS and rclpy set on this machine.

    python benchmarks/zmp.py [--seconds 5]

Writes benchmarks/results/zmp.json (format of shared/RESULTS.md).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from humanoid_balance.ros_env import use_loopback_dds

NODE_DRIVER = r"""
import sys, time, rclpy
from rclpy.parameter import Parameter
from humanoid_balance.nodes.zmp_estimator import ZmpEstimatorNode
rclpy.init()
node = ZmpEstimatorNode(parameter_overrides=[Parameter("marker_rate", value=20.0)])
from humanoid_balance.nodes.common import make_executor
executor = make_executor(events=sys.argv[2] == "events")
executor.add_node(node)
print("ready", flush=True)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    executor.spin_once(timeout_sec=0.05)
# the counts on the node, or on its ROS-free loop (core/zmp_loop.py) where it has one
owner = getattr(node, "loop", node)
print(getattr(owner, "counts", None), getattr(getattr(owner, "sync", None), "dropped", None),
      flush=True)
node.destroy_node()
rclpy.try_shutdown()
"""

ECHO_DRIVER = r"""
import sys, time, rclpy
from geometry_msgs.msg import PointStamped, WrenchStamped
rclpy.init()
node = rclpy.create_node("zmp_echo")
pub = node.create_publisher(PointStamped, "/zmp", 100)
def echo(msg):
    out = PointStamped()
    out.header = msg.header
    pub.publish(out)
node.create_subscription(WrenchStamped, "/right_foot/ft", echo, 100)
print("ready", flush=True)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    rclpy.spin_once(node, timeout_sec=0.05)
node.destroy_node()
rclpy.try_shutdown()
"""


def _estimator_and_samples(count: int) -> tuple[Any, list[dict[str, Any]], Any, np.ndarray]:
    from humanoid_balance.core.model import RobotModel
    from humanoid_balance.core.zmp import FootSample, humanoid_zmp_estimator
    from humanoid_balance.resources import urdf_path

    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    estimator = humanoid_zmp_estimator(model)
    q = model.neutral()
    soles = {s: model.frame_transform(f"{s}_sole", q) for s in ("left", "right")}
    rng = np.random.default_rng(0)
    samples = []
    for k in range(count):
        phase = 2 * np.pi * k / 700
        sample = {}
        for side, sign in (("left", 1.0), ("right", -1.0)):
            force = np.array([5 * np.sin(phase), sign * 3.0, 270 + 80 * sign * np.sin(phase)])
            torque = np.array([sign * 4 * np.cos(phase), 20 * np.sin(phase), 0.3]) + rng.normal(0, 0.05, 3)
            sample[side] = FootSample(soles[side], force, torque)
        samples.append(sample)
    return estimator, samples, model, q


def core_cpu_times(count: int = 20000) -> np.ndarray:
    """Per-sample CPU times [s] of the estimate alone (this thread's CPU clock: the time the
    process was preempted left out, which on a loaded machine makes most of a wall p99)."""
    estimator, samples, _, _ = _estimator_and_samples(count)
    step = estimator.step
    for sample in samples[:500]:  # warm-up
        step(sample)
    cpu = np.empty(count)
    clock = time.thread_time_ns
    for k, sample in enumerate(samples):
        t0 = clock()
        step(sample)
        cpu[k] = (clock() - t0) * 1e-9
    return cpu


def core_times(count: int = 20000) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample times [s]: the estimate alone, and with the sole poses from joint positions."""
    estimator, samples, model, q = _estimator_and_samples(count)
    step = estimator.step
    for sample in samples[:500]:  # warm-up
        step(sample)
    alone = np.empty(count)
    for k, sample in enumerate(samples):
        t0 = time.perf_counter()
        step(sample)
        alone[k] = time.perf_counter() - t0
    with_fk = np.empty(count // 4)
    legs = model.group_q_index("legs")
    for k in range(len(with_fk)):
        q_k = q.copy()
        q_k[legs] = 1e-4 * np.sin(k)  # the legs move a little: no cache hit
        sample = samples[k]
        t0 = time.perf_counter()
        for side in ("left", "right"):
            sample[side].sole_in_world = model.frame_transform(f"{side}_sole", q_k)
        step(sample)
        with_fk[k] = time.perf_counter() - t0
    return alone, with_fk


def node_latency(seconds: float, rate: float, driver: str,
                 executor_kind: str = "single") -> tuple[np.ndarray, int, str]:
    """Latencies [s] of /zmp from its stamp, the count received while measuring, the driver's output."""
    import rclpy
    from geometry_msgs.msg import PointStamped, WrenchStamped
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState

    from humanoid_balance.core.model import RobotModel
    from humanoid_balance.resources import urdf_path

    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    proc = subprocess.Popen([sys.executable, "-c", driver, str(seconds + 6.0), executor_kind],
                            env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    proc.stdout.readline()  # "ready"
    rclpy.init()
    node = rclpy.create_node("zmp_benchmark")
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    latencies: list[float] = []
    measuring = [False]

    def on_zmp(msg: PointStamped) -> None:
        if measuring[0]:
            sent = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
            latencies.append(time.time() - sent)

    node.create_subscription(PointStamped, "/zmp", on_zmp, 1000)
    pub_joints = node.create_publisher(JointState, "/joint_states", 100)
    pub_ft = {s: node.create_publisher(WrenchStamped, f"/{s}_foot/ft", 100) for s in ("left", "right")}
    joints = JointState()
    joints.name = list(model.joint_names)
    joints.position = [0.0] * len(joints.name)
    wrenches = {s: WrenchStamped() for s in ("left", "right")}
    for side in wrenches:
        wrenches[side].header.frame_id = f"{side}_foot_ft"
        wrenches[side].wrench.force.z = 270.0
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:  # discovery
        executor.spin_once(timeout_sec=0.01)
    period = 1.0 / rate
    start = time.monotonic()
    warm_up = 1.0
    next_tick = start
    k = 0
    while time.monotonic() - start < seconds + warm_up:
        now = time.monotonic()
        if now >= next_tick:
            measuring[0] = now - start >= warm_up
            stamp = node.get_clock().now().to_msg()
            joints.header.stamp = stamp
            pub_joints.publish(joints)
            for side, wrench in wrenches.items():
                wrench.header.stamp = stamp
                wrench.wrench.torque.y = 10.0 * np.sin(0.01 * k)
                pub_ft[side].publish(wrench)
            k += 1
            next_tick += period
        executor.spin_once(timeout_sec=max(0.0, next_tick - time.monotonic()))
    measuring[0] = False
    received = len(latencies)
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.01)
    executor.shutdown()
    node.destroy_node()
    rclpy.try_shutdown()
    output = proc.communicate(timeout=30)[0].decode(errors="replace")
    return np.array(latencies[:received]), received, output


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="node measurement, s (default 5)")
    parser.add_argument("--rate", type=float, default=1000.0, help="sensor rate, Hz (default 1000)")
    args = parser.parse_args()
    use_loopback_dds(int(os.environ.get("ROS_DOMAIN_ID", "93")))
    from humanoid_balance.results import metric, write_results

    load_start = os.getloadavg()
    alone, with_fk = core_times()
    cpu = core_cpu_times()
    load_after_core = os.getloadavg()
    us = 1e6
    print(f"core: median {np.median(alone) * us:.1f} us, p99 {np.percentile(alone, 99) * us:.1f} us "
          f"({len(alone)} samples); CPU time median {np.median(cpu) * us:.1f} us, p99 "
          f"{np.percentile(cpu, 99) * us:.1f} us")
    latency, received, output = node_latency(args.seconds, args.rate, NODE_DRIVER, "events")
    print(f"node: {received} /zmp in {args.seconds} s; driver said: {output.strip()[-300:]}")
    classic, classic_received, _ = node_latency(args.seconds, args.rate, NODE_DRIVER, "single")
    echo, echo_received, _ = node_latency(args.seconds, args.rate, ECHO_DRIVER)
    ms = 1e3
    metrics = {
        "core_us_median": metric(round(float(np.median(alone)) * us, 2), "us", target=20, better="lower"),
        "core_us_p99": metric(round(float(np.percentile(alone, 99)) * us, 2), "us", target=20,
                              better="lower"),
        "core_cpu_us_median": metric(round(float(np.median(cpu)) * us, 2), "us"),
        "core_cpu_us_p99": metric(round(float(np.percentile(cpu, 99)) * us, 2), "us"),
        "core_with_fk_us_median": metric(round(float(np.median(with_fk)) * us, 2), "us"),
        "core_with_fk_us_p99": metric(round(float(np.percentile(with_fk, 99)) * us, 2), "us"),
        "node_rate_hz": metric(round(received / args.seconds, 1), "Hz", target=args.rate,
                               better="higher"),
        "node_latency_ms_p50": metric(round(float(np.percentile(latency, 50)) * ms, 3), "ms"),
        "node_latency_ms_p99": metric(round(float(np.percentile(latency, 99)) * ms, 3), "ms", target=1.0,
                                      better="lower"),
        "node_latency_ms_max": metric(round(float(latency.max()) * ms, 3), "ms"),
        "node_rate_hz_single_threaded_executor": metric(round(classic_received / args.seconds, 1), "Hz"),
        "node_latency_ms_p50_single_threaded_executor": metric(
            round(float(np.percentile(classic, 50)) * ms, 3), "ms"),
        "node_latency_ms_p99_single_threaded_executor": metric(
            round(float(np.percentile(classic, 99)) * ms, 3), "ms"),
        "echo_rate_hz": metric(round(echo_received / args.seconds, 1), "Hz"),
        "echo_latency_ms_p50": metric(round(float(np.percentile(echo, 50)) * ms, 3), "ms"),
        "echo_latency_ms_p99": metric(round(float(np.percentile(echo, 99)) * ms, 3), "ms"),
    }
    # a shared machine: the load beside the figures (1-minute load averages of its 2 cores)
    metrics["load_average_1min_at_start"] = metric(round(load_start[0], 2), "")
    metrics["load_average_1min_after_core"] = metric(round(load_after_core[0], 2), "")
    metrics["load_average_1min_at_end"] = metric(round(os.getloadavg()[0], 2), "")
    write_results("zmp", metrics, command=f"python benchmarks/zmp.py --seconds {args.seconds:g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
