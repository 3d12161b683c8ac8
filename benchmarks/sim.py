#!/usr/bin/env python3
"""Real-time factor of the humanoid simulation at 1 kHz physics with every sensor published.

Runs the ``mujoco_sim`` node in this process as fast as it can
(``real_time_factor: 0``) for ``--seconds`` of simulated time, publishing every
topic at every physics step (1 kHz), with a subscriber in a second process
listening to /joint_states and both foot wrenches so that DDS really delivers.
Also times the bare physics (no ROS) for comparison, as a ratio in the same run.

    python benchmarks/sim.py [--seconds 10]

Writes benchmarks/results/sim.json (format of shared/RESULTS.md).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from humanoid_balance.ros_env import use_loopback_dds

LISTENER = r"""
import sys, time, rclpy
from sensor_msgs.msg import JointState
from geometry_msgs.msg import WrenchStamped
rclpy.init()
node = rclpy.create_node("sim_benchmark_listener")
count = [0]
cb = lambda m: count.__setitem__(0, count[0] + 1)
node.create_subscription(JointState, "/joint_states", cb, 100)
node.create_subscription(WrenchStamped, "/left_foot/ft", cb, 100)
node.create_subscription(WrenchStamped, "/right_foot/ft", cb, 100)
print("ready", flush=True)
end = time.monotonic() + float(sys.argv[1])
last_change, seen = time.monotonic(), 0
while time.monotonic() < end:
    rclpy.spin_once(node, timeout_sec=0.1)
    if count[0] != seen:
        seen, last_change = count[0], time.monotonic()
    elif seen and time.monotonic() - last_change > 2.0:
        break  # the publisher has finished
print(count[0], flush=True)
node.destroy_node()
rclpy.try_shutdown()
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="simulated seconds")
    args = parser.parse_args()
    use_loopback_dds(int(os.environ.get("ROS_DOMAIN_ID", "97")))

    from humanoid_balance.results import metric, write_results
    from humanoid_balance.sim.humanoid import HumanoidSim

    sim = HumanoidSim()
    steps = round(args.seconds / sim.timestep)
    t0 = time.perf_counter()
    sim.step(steps)
    physics_rtf = args.seconds / (time.perf_counter() - t0)

    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from humanoid_balance.nodes.mujoco_sim import MujocoSimNode

    listener = subprocess.Popen([sys.executable, "-c", LISTENER, str(args.seconds * 3 + 20)],
                                stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    assert listener.stdout is not None
    listener.stdout.readline()  # "ready"
    rclpy.init()
    from rclpy.parameter import Parameter

    node = MujocoSimNode(parameter_overrides=[
        Parameter("real_time_factor", value=0.0),
        Parameter("publish_rate", value=1000.0),
        Parameter("duration", value=args.seconds),
    ])
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    t0 = time.perf_counter()
    while not node.finished.is_set():
        executor.spin_once(timeout_sec=0.05)
    wall = time.perf_counter() - t0
    node.destroy_node()
    rclpy.try_shutdown()
    out, _ = listener.communicate(timeout=args.seconds * 3 + 30)
    received = int(out.strip().splitlines()[-1]) if out.strip() else 0
    rtf = args.seconds / wall
    write_results("sim", {
        "real_time_factor": metric(round(rtf, 3), "x", target=1.0, better="higher"),
        "physics_only_real_time_factor": metric(round(physics_rtf, 2), "x", better="higher"),
        "publishing_cost_ratio": metric(round(physics_rtf / rtf, 2), "x", better="lower"),
        "messages_received_by_listener": metric(received, "msgs"),
        "messages_published_per_topic": metric(steps, "msgs"),
    })
    return 0


if __name__ == "__main__":
    sys.exit(main())
