#!/usr/bin/env python3
"""Time of one RMC step and the arm_balance node's input-to-command latency.

1. ``step_us_*``: one :meth:`RmcController.step` for the 30-DOF humanoid
   (centroidal momentum map, job hand Jacobian, damped job solve, eq.-6 aux
   solve, joint-limit boxes, balance indicators) along the seed-000 strike
   driven by the hand twist (eq. 3), 500 Hz. Also per kind of cycle: joint
   velocity input (no job solve), and the cycles where a limit is active
   (bounded least squares).
2. ``echo_latency_*``: the same path through a bare rclpy node that
   republishes each joint state as the command: the floor that DDS and
   rclpy set on this machine.
3. ``node_latency_ms_p99_*``: the ``arm_balance`` node in a process of its
   own (``trigger: joint_states``, ``rate`` = the publishing rate), active;
   this process publishes ``/joint_states`` at 500 Hz or 1 kHz with a job
   twist, and times each ``/arm_balance/command`` from the publication of the
   joint state before it (both ends in this process, one clock).

    python benchmarks/rmc.py [--seconds 5]

Writes benchmarks/results/rmc.json (format of shared/RESULTS.md).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from humanoid_balance.ros_env import use_loopback_dds

NODE_DRIVER = r"""
import sys, time, rclpy
from humanoid_balance.nodes.common import make_executor
from rclpy.parameter import Parameter
from humanoid_balance.nodes.arm_balance import ArmBalanceNode
rclpy.init()
rate = float(sys.argv[1])
node = ArmBalanceNode(parameter_overrides=[
    Parameter("trigger", value="joint_states"), Parameter("rate", value=rate),
    Parameter("joint_state_timeout", value=0.5), Parameter("job_input_timeout", value=0.5)])
node.trigger_configure()
node.trigger_activate()
executor = make_executor(events=True)  # as the node's main() spins it
executor.add_node(node)
print("ready", flush=True)
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    executor.spin_once(timeout_sec=0.05)
node.trigger_deactivate()
node.destroy_node()
rclpy.try_shutdown()
"""


ECHO_DRIVER = r"""
import sys, time, rclpy
from sensor_msgs.msg import JointState
rclpy.init()
node = rclpy.create_node("rmc_echo")
pub = node.create_publisher(JointState, "/arm_balance/command", 10)
node.create_subscription(JointState, "/joint_states", pub.publish, 10)
print("ready", flush=True)
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    rclpy.spin_once(node, timeout_sec=0.05)
node.destroy_node()
rclpy.try_shutdown()
"""


def step_times(repeats: int = 3) -> dict[str, np.ndarray]:
    """Step times [s] along the strike: twist input (all, unlimited, limited), joint input."""
    from humanoid_balance.core.model import RobotModel
    from humanoid_balance.core.rmc import RmcController, RmcInput
    from humanoid_balance.core.strike_trajectory import AUX_START_DEG, StrikeTrajectory, arm_pose
    from humanoid_balance.core.support import SupportPolygon
    from humanoid_balance.resources import urdf_path

    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    trajectory = StrikeTrajectory(model)
    pose = {**dict(zip(trajectory.joint_names, trajectory.initial, strict=True)),
            **arm_pose("left", AUX_START_DEG)}
    q0 = model.configuration(pose)
    dt = 0.002
    times = np.arange(0.0, trajectory.duration + 0.1, dt)
    twists = [RmcInput(q0, job_twist=trajectory.hand_twist(float(t), q0)) for t in times]
    joints = [RmcInput(q0, job_joint_velocities=trajectory.sample(float(t)).velocity)
              for t in times]
    out: dict[str, list[float]] = {"twist": [], "twist_free": [], "twist_limited": [], "joint": []}
    polygon = SupportPolygon.from_model(model).update_at(model, model.neutral())
    for _ in range(repeats):
        for key, inputs in (("twist", twists), ("joint", joints)):
            controller = RmcController(model, support_polygon=polygon)
            controller.reset(q0)
            for item in inputs:
                t0 = time.perf_counter()
                result = controller.step(item, dt)
                elapsed = time.perf_counter() - t0
                out[key].append(elapsed)
                if key == "twist":
                    free = result.job_exact and result.balance_exact
                    out["twist_free" if free else "twist_limited"].append(elapsed)
    return {k: np.array(v) for k, v in out.items()}


def node_latency(rate: float, seconds: float, driver: str = NODE_DRIVER) -> np.ndarray:
    """Latencies [s] from a /joint_states publication to the next /arm_balance/command.

    ``driver``: the program answering (the node, or a bare echo for the DDS floor).
    """
    import rclpy
    from geometry_msgs.msg import TwistStamped
    from sensor_msgs.msg import JointState

    from humanoid_balance.core.model import RobotModel
    from humanoid_balance.resources import urdf_path

    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    names = list(model.joint_names)
    positions = [0.0] * len(names)
    for name, value in (("right_shoulder_pitch", -0.3), ("right_elbow", 0.8),
                        ("left_shoulder_pitch", -0.3), ("left_elbow", 0.8)):
        positions[names.index(name)] = value
    proc = subprocess.Popen([sys.executable, "-c", driver, str(rate), str(seconds + 4.0)],
                            env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        proc.stdout.readline()  # "ready"
        rclpy.init()
        node = rclpy.create_node("rmc_latency_probe")
        pub = node.create_publisher(JointState, "/joint_states", 10)
        pub_twist = node.create_publisher(TwistStamped, "/arm_balance/job_twist", 10)
        sent: list[float] = []
        latencies: list[float] = []
        measuring = [False]

        def on_command(_msg: JointState) -> None:
            now = time.monotonic()
            if measuring[0] and sent:
                latencies.append(now - sent[-1])

        node.create_subscription(JointState, "/arm_balance/command", on_command, 100)
        msg = JointState()
        msg.name = names
        msg.position = positions
        twist = TwistStamped()
        twist.header.frame_id = "W"
        period = 1.0 / rate
        start = time.monotonic()
        next_send = start
        k = 0
        while time.monotonic() - start < seconds + 1.0:
            now = time.monotonic()
            if now >= next_send:
                measuring[0] = now - start > 1.0  # discovery and warm-up first
                s = 0.05 * np.sin(2 * np.pi * 0.5 * k * period)
                twist.twist.linear.x = float(s)
                if k % 10 == 0:
                    pub_twist.publish(twist)
                msg.header.stamp = node.get_clock().now().to_msg()
                sent.append(time.monotonic())
                pub.publish(msg)
                k += 1
                next_send += period
            rclpy.spin_once(node, timeout_sec=max(0.0, min(period / 4, next_send - time.monotonic())))
        node.destroy_node()
        rclpy.try_shutdown()
        return np.array(latencies)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds per latency run")
    args = parser.parse_args()
    use_loopback_dds(int(os.environ.get("ROS_DOMAIN_ID", "94")))

    from humanoid_balance.results import metric, write_results

    steps = step_times()
    us = {k: 1e6 * v for k, v in steps.items()}
    lat500 = 1e3 * node_latency(500.0, args.seconds)
    lat1k = 1e3 * node_latency(1000.0, args.seconds)
    echo1k = 1e3 * node_latency(1000.0, args.seconds, ECHO_DRIVER)
    metrics = {
        "step_us_median": metric(round(float(np.median(us["twist"])), 2), "us", target=50,
                                 better="lower"),
        "step_us_p99": metric(round(float(np.percentile(us["twist"], 99)), 2), "us", target=50,
                              better="lower"),
        "step_us_median_no_limit_active": metric(round(float(np.median(us["twist_free"])), 2), "us"),
        "step_us_p99_no_limit_active": metric(round(float(np.percentile(us["twist_free"], 99)), 2),
                                              "us"),
        "step_us_median_limit_active": metric(
            round(float(np.median(us["twist_limited"])), 2) if us["twist_limited"].size else 0.0,
            "us"),
        "limit_active_share": metric(round(us["twist_limited"].size / us["twist"].size, 4), ""),
        "step_us_median_joint_input": metric(round(float(np.median(us["joint"])), 2), "us"),
        "step_us_p99_joint_input": metric(round(float(np.percentile(us["joint"], 99)), 2), "us"),
        "node_latency_ms_p50_500hz": metric(round(float(np.median(lat500)), 3), "ms"),
        "node_latency_ms_p99_500hz": metric(round(float(np.percentile(lat500, 99)), 3), "ms",
                                            better="lower"),
        "node_latency_ms_p50_1khz": metric(round(float(np.median(lat1k)), 3), "ms"),
        "node_latency_ms_p99_1khz": metric(round(float(np.percentile(lat1k, 99)), 3), "ms",
                                           target=1.0, better="lower"),
        "echo_latency_ms_p50_1khz": metric(round(float(np.median(echo1k)), 3), "ms"),
        "echo_latency_ms_p99_1khz": metric(round(float(np.percentile(echo1k, 99)), 3), "ms"),
        "node_commands_500hz": metric(int(lat500.size), "msgs"),
        "node_commands_1khz": metric(int(lat1k.size), "msgs"),
    }
    write_results("rmc", metrics, command=" ".join(["python", "benchmarks/rmc.py", *sys.argv[1:]]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
