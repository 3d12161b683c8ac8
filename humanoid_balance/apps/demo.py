"""``humanoid-balance demo``: the simulated robot with every node, in one process.

Starts the MuJoCo humanoid (``mujoco_sim``) and the package's nodes on one
executor, on loopback-only DDS with a private domain, drives a scenario on
simulation time, records the topics to a rosbag2 directory, prints a summary
table and writes ``<out>/demo.json`` (format of shared RESULTS.md).
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from humanoid_balance.ros_env import use_loopback_dds


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the demo."""
    parser.add_argument("--duration", type=float, default=5.0,
                        help="simulated seconds to run (default 5)")
    parser.add_argument("--out", type=Path, default=Path("results/demo"),
                        help="output folder for demo.json (default results/demo)")
    parser.add_argument("--real-time-factor", type=float, default=0.0,
                        help="simulation speed; 0 = as fast as possible (default)")
    parser.add_argument("--sensor-noise", type=float, default=1.0,
                        help="sensor noise scale: 0 noise-free, 1 nominal (default)")
    parser.add_argument("--domain-id", type=int, default=None,
                        help="ROS_DOMAIN_ID (default: from the environment, else private)")


@dataclass
class _Observer:
    """What the demo watches on the topics."""

    cop: list[tuple[float, float, float]] = field(default_factory=list)
    vertical_force: list[float] = field(default_factory=list)
    joint_positions: list[np.ndarray] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)


def run(args: argparse.Namespace) -> int:
    """Run the demo; 0 when it ran and nothing faulted."""
    domain = args.domain_id
    if domain is None:
        domain = int(os.environ.get("ROS_DOMAIN_ID", 1 + os.getpid() % 100))
    use_loopback_dds(domain)

    import rclpy
    from geometry_msgs.msg import PointStamped, WrenchStamped
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState

    from humanoid_balance.nodes.mujoco_sim import MujocoSimNode
    from humanoid_balance.results import metric, write_results

    rclpy.init()
    executor = SingleThreadedExecutor()
    sim_node = MujocoSimNode(parameter_overrides=[
        Parameter("real_time_factor", value=float(args.real_time_factor)),
        Parameter("sensor_noise", value=float(args.sensor_noise)),
        Parameter("duration", value=float(args.duration)),
    ])
    watcher = rclpy.create_node("demo_watcher")
    seen = _Observer()
    ft_z: dict[str, float] = {}

    def on_cop(msg: PointStamped) -> None:
        seen.cop.append((msg.point.x, msg.point.y, msg.point.z))

    def on_ft(side: str, msg: WrenchStamped) -> None:
        ft_z[side] = msg.wrench.force.z
        if len(ft_z) == 2:
            seen.vertical_force.append(sum(ft_z.values()))

    watcher.create_subscription(PointStamped, "/sim/cop", on_cop, 100)
    watcher.create_subscription(WrenchStamped, "/left_foot/ft", lambda m: on_ft("left", m), 100)
    watcher.create_subscription(WrenchStamped, "/right_foot/ft", lambda m: on_ft("right", m), 100)
    watcher.create_subscription(
        JointState, "/joint_states",
        lambda m: seen.joint_positions.append(np.array(m.position)), 100)
    executor.add_node(sim_node)
    executor.add_node(watcher)
    print(f"demo: simulating {args.duration:.1f} s (ROS_DOMAIN_ID={domain}, loopback DDS)")
    wall0 = time.perf_counter()
    try:
        while not sim_node.finished.is_set():
            executor.spin_once(timeout_sec=0.05)
        for _ in range(20):  # deliver what is still queued
            executor.spin_once(timeout_sec=0.01)
    except KeyboardInterrupt:
        print("demo: interrupted")
    wall = time.perf_counter() - wall0
    sim_time = sim_node.sim.time
    mass_g = sim_node.sim.total_mass * 9.81
    feet_g = 2 * 1.0 * 9.81
    executor.shutdown()
    sim_node.destroy_node()
    watcher.destroy_node()
    rclpy.try_shutdown()

    cop = np.array(seen.cop) if seen.cop else np.zeros((0, 3))
    joints = np.array(seen.joint_positions) if seen.joint_positions else np.zeros((0, 30))
    drift = float(np.abs(joints - joints[0]).max()) if len(joints) else float("nan")
    ft = np.array(seen.vertical_force) if seen.vertical_force else np.zeros(0)
    metrics = {
        "simulated_s": metric(round(sim_time, 3), "s"),
        "real_time_factor": metric(round(sim_time / wall, 2), "x", target=1.0, better="higher"),
        "cop_max_abs_x_mm": metric(round(float(np.abs(cop[:, 0]).max()) * 1e3, 3)
                                   if len(cop) else float("nan"), "mm", better="lower"),
        "cop_max_abs_y_mm": metric(round(float(np.abs(cop[:, 1]).max()) * 1e3, 3)
                                   if len(cop) else float("nan"), "mm", better="lower"),
        "ankle_fz_over_weight_less_feet": metric(
            round(float(np.mean(ft)) / (mass_g - feet_g), 4) if len(ft) else float("nan"), ""),
        "joint_drift_max_mrad": metric(round(drift * 1e3, 4), "mrad", better="lower"),
        "faults_seen": metric(len(seen.faults), "", target=0, better="lower"),
    }
    print("demo summary (standing, no command):")
    write_results("demo", metrics, command="humanoid-balance demo", directory=args.out)
    return 0 if not seen.faults else 1
