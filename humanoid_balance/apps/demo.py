"""``humanoid-balance demo``: the simulated robot with every node, in one process.

Starts the MuJoCo humanoid (``mujoco_sim``) and the package's nodes on one
executor, on loopback-only DDS with a private domain, and plays the seed-000
scenario on simulation time: the robot stands, then the right (job) arm
strikes at the paper's hand speed while ``arm_balance`` (resolved momentum
control, lifecycle-activated like on the robot) moves the left arm to hold the
angular momentum Lx, Ly at zero. Prints a summary table and writes
``<out>/demo.json`` (format of shared RESULTS.md) and records the run to
``<out>/bag`` (rosbag2, MCAP; ``humanoid-balance replay`` plays it back).

Nodes whose module is not in this build are left out, with a line saying so.
"""

from __future__ import annotations

import argparse
import importlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from humanoid_balance.ros_env import use_loopback_dds


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the demo."""
    parser.add_argument("--duration", type=float, default=3.5,
                        help="simulated seconds to run (default 3.5)")
    parser.add_argument("--strike-start", type=float, default=1.0,
                        help="simulated time at which the strike starts, s (default 1.0)")
    parser.add_argument("--strike-speed", type=float, default=None,
                        help="hand speed at the target, m/s (default: the paper's 1.8)")
    parser.add_argument("--no-rmc", action="store_true",
                        help="do not start arm_balance: the job arm moves alone")
    parser.add_argument("--out", type=Path, default=Path("results/demo"),
                        help="output folder for demo.json (default results/demo)")
    parser.add_argument("--real-time-factor", type=float, default=0.1,
                        help="simulation speed relative to wall time (default 0.1). Every node, "
                             "the waist's 500 Hz servo thread and its simulated drives share one "
                             "Python process here; measured on 2 cores with recording on: with "
                             "the waist at 0.1, CoP shift 17 mm (105 mm with --no-rmc); with "
                             "--no-waist, 24-25 mm at 0.2, and 32 or 251 mm at 0.4 (the balance "
                             "commands come late); at 0.2 with the waist its servo loop is "
                             "starved and the waist overshoots (8 deg for 3 asked)")
    parser.add_argument("--sensor-noise", type=float, default=1.0,
                        help="sensor noise scale: 0 noise-free, 1 nominal (default)")
    parser.add_argument("--no-waist", action="store_true",
                        help="do not run the waist controller and its simulated CAN drives")
    parser.add_argument("--waist-pitch", type=float, default=1.0,
                        help="waist pitch the waist controller moves to at the start, deg (default "
                             "1). Measured at real-time factor 0.1: 0 deg: CoP shift 16 mm; 1 deg: "
                             "17 mm, parked at 1.1 deg; 3 deg: 36-56 mm (the torso leans the CoP "
                             "forward), parked at 3.5 deg")
    parser.add_argument("--no-record", action="store_true",
                        help="do not record the run to <out>/bag (rosbag2, MCAP)")
    parser.add_argument("--domain-id", type=int, default=None,
                        help="ROS_DOMAIN_ID (default: from the environment, else private)")


@dataclass
class _Observer:
    """What the demo watches on the topics (simulation time, values)."""

    cop: list[tuple[float, float, float]] = field(default_factory=list)
    zmp: list[tuple[float, float, float]] = field(default_factory=list)
    momentum: list[tuple[float, ...]] = field(default_factory=list)
    commands: int = 0
    arm_holds: int = 0
    waist_error: list[float] = field(default_factory=list)  # rad, |tracking error|
    waist_sim: list[tuple[float, float, float]] = field(default_factory=list)  # t, pitch, roll
    faults: list[str] = field(default_factory=list)


#: s of simulation before the strike at which the waist is parked
WAIST_PARK_LEAD_S = 0.3

#: what the demo records (topic -> type): the simulation's sensors and truth, and the nodes' outputs
RECORDED_TOPICS = {
    "/clock": "rosgraph_msgs/msg/Clock",
    "/joint_states": "sensor_msgs/msg/JointState",
    "/left_foot/ft": "geometry_msgs/msg/WrenchStamped",
    "/right_foot/ft": "geometry_msgs/msg/WrenchStamped",
    "/left_foot/fsr": "std_msgs/msg/Float64MultiArray",
    "/right_foot/fsr": "std_msgs/msg/Float64MultiArray",
    "/waist/inclinometer": "sensor_msgs/msg/Imu",
    "/sim/cop": "geometry_msgs/msg/PointStamped",
    "/sim/com": "geometry_msgs/msg/PointStamped",
    "/zmp": "geometry_msgs/msg/PointStamped",
    "/zmp/stability_margin": "std_msgs/msg/Float64",
    "/arm_balance/command": "sensor_msgs/msg/JointState",
    "/arm_balance/momentum": "geometry_msgs/msg/WrenchStamped",
    "/diagnostics": "diagnostic_msgs/msg/DiagnosticArray",
    "/waist/joint_states": "sensor_msgs/msg/JointState",
    "/waist/tracking_error": "geometry_msgs/msg/Vector3Stamped",
}


def _optional(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        print(f"demo: {module} is not in this build: left out")
        return None


def run(args: argparse.Namespace) -> int:
    """Run the demo; 0 when it ran and no node reported an error."""
    domain = args.domain_id
    if domain is None:
        domain = int(os.environ.get("ROS_DOMAIN_ID", 1 + os.getpid() % 100))
    use_loopback_dds(domain)

    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
    from geometry_msgs.msg import PointStamped, Vector3Stamped, WrenchStamped
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from humanoid_balance.core.model import RobotModel
    from humanoid_balance.core.strike_trajectory import (
        AUX_START_DEG,
        RIGHT_INITIAL_DEG,
        StrikeTrajectory,
        arm_pose,
    )
    from humanoid_balance.nodes.common import make_executor
    from humanoid_balance.nodes.mujoco_sim import MujocoSimNode
    from humanoid_balance.resources import urdf_path
    from humanoid_balance.results import write_results

    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    strike = StrikeTrajectory(model, arm="right", target_speed=args.strike_speed,
                              start_time=args.strike_start)
    initial = {**arm_pose("right", RIGHT_INITIAL_DEG), **arm_pose("left", AUX_START_DEG)}
    sim_time = [Parameter("use_sim_time", value=True)]

    rclpy.init()
    executor = make_executor(events=True)
    sim_node = MujocoSimNode(parameter_overrides=[
        Parameter("real_time_factor", value=float(args.real_time_factor)),
        Parameter("sensor_noise", value=float(args.sensor_noise)),
        Parameter("duration", value=float(args.duration)),
        Parameter("publish_rate", value=500.0),
        Parameter("initial_joint_names", value=list(initial)),
        Parameter("initial_joint_positions", value=list(initial.values())),
    ])
    nodes: list[Any] = [sim_node]
    arm_node = None
    if not args.no_rmc:
        arm_module = _optional("humanoid_balance.nodes.arm_balance")
        if arm_module is not None:
            arm_node = arm_module.ArmBalanceNode(parameter_overrides=[
                *sim_time, Parameter("trigger", value="joint_states")])
            nodes.append(arm_node)
    zmp_module = _optional("humanoid_balance.nodes.zmp_estimator")
    if zmp_module is not None:
        nodes.append(zmp_module.ZmpEstimatorNode(parameter_overrides=sim_time))

    waist_node = waist_drives = None
    waist_module = None if args.no_waist else _optional("humanoid_balance.nodes.waist_controller")
    if waist_module is not None:
        from humanoid_balance.can.sim_drive import SimulatedWaist

        # the drives and the controller share a python-can virtual bus inside this process;
        # the drives run in wall time in their own thread and the MuJoCo waist joints follow
        # them. The drives carry the humanoid's upper body as a point mass (from the URDF):
        # feeding them MuJoCo's joint torque instead couples two simulations on different
        # clocks through a delay, which oscillated (1.3 deg tracking error, measured)
        channel = f"humanoid-balance-demo-{os.getpid()}"
        waist_drives = SimulatedWaist(channel=channel, torso=_upper_body(model))
        waist_drives.start_realtime(0.002)
        waist_node = waist_module.WaistControllerNode(
            parameter_overrides=[
                Parameter("can.interface", value="virtual"), Parameter("can.channel", value=channel),
                # in-process drives answer late (they share the GIL with every node here, and
                # gaps of 50 ms were seen at start-up on a loaded machine): 10 ms is for real drives
                Parameter("feedback_timeout", value=0.2), Parameter("servo_priority", value=0),
                # no busy-wait and Python's own GIL switching: every node shares this process
                # (the 50 us switch interval the servo thread asks for starved the others:
                # CoP shift 236 mm instead of 24 mm, measured)
                Parameter("spin_margin", value=0.0),
                Parameter("inclinometer_timeout", value=1e9)],  # sim-time stamps, wall-clock node
            cli_args=["--ros-args", "-r", "/joint_states:=/waist/joint_states"])
        nodes.append(waist_node)

    seen = _Observer()
    driver = rclpy.create_node("demo_driver", parameter_overrides=sim_time)
    nodes.append(driver)
    job_topic = "/arm_balance/job_joint_velocities" if arm_node else "/joint_commands"
    job_pub = driver.create_publisher(JointState, job_topic, 10)

    waist_pub = driver.create_publisher(JointState, "/joint_commands", 10)
    waist_joints = ("waist_pitch", "waist_roll")
    waist_index = [list(sim_node.sim.joint_names).index(j) for j in waist_joints]

    def follow_waist() -> None:
        """The MuJoCo waist joints follow the simulated drives."""
        if waist_drives is None:
            return
        state = sim_node.sim.joint_state()
        index = waist_index
        angles = waist_drives.joint_angles()
        msg = JointState(name=list(waist_joints), position=[float(v) for v in angles],
                         velocity=[float(v) for v in waist_drives.joint_velocities()])
        waist_pub.publish(msg)
        pitch, roll = (float(v) for v in state.position[index])
        seen.waist_sim.append((driver.get_clock().now().nanoseconds * 1e-9, pitch, roll))

    waist_parked = [False]

    def park_waist() -> None:
        """Before the strike: stop the waist (brakes hold) and close its bus.

        The waist servo (500 Hz), its bus threads and the drives' physics share this one
        Python process with everything else; with them running through the strike the
        RMC loop fell behind (CoP shift 235 mm instead of 24 mm, measured), so the waist
        does its move first and is then parked the way a robot would park it.
        """
        if waist_node is None or waist_drives is None or waist_parked[0]:
            return
        waist_parked[0] = True
        waist_node.trigger_deactivate()  # controlled stop, drives disabled, brakes engage
        waist_node.trigger_cleanup()     # servo thread stopped, bus closed
        follow_waist()
        waist_drives.stop_realtime()
        print(f"demo: waist parked at pitch {np.rad2deg(waist_drives.joint_angles()[0]):.2f} deg, "
              "held by the drives' brakes", flush=True)

    def drive() -> None:
        t = driver.get_clock().now().nanoseconds * 1e-9
        if not waist_parked[0]:
            follow_waist()
            if t >= args.strike_start - WAIST_PARK_LEAD_S:
                park_waist()
        if t <= 0.0:
            return
        sample = strike.sample(t)
        msg = JointState(name=list(strike.joint_names))
        msg.header.stamp = driver.get_clock().now().to_msg()
        msg.velocity = [float(v) for v in sample.velocity]
        if arm_node is None:  # straight to the simulation's servos
            msg.position = [float(v) for v in sample.position]
        job_pub.publish(msg)

    driver.create_timer(0.002, drive)

    def stamp(msg: Any) -> float:
        return float(msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9)

    driver.create_subscription(
        PointStamped, "/sim/cop",
        lambda m: seen.cop.append((stamp(m), m.point.x, m.point.y)), 100)
    driver.create_subscription(
        PointStamped, "/zmp", lambda m: seen.zmp.append((stamp(m), m.point.x, m.point.y)), 100)

    def on_momentum(m: WrenchStamped) -> None:
        w = m.wrench
        seen.momentum.append((stamp(m), w.force.x, w.force.y, w.force.z,
                              w.torque.x, w.torque.y, w.torque.z))

    driver.create_subscription(WrenchStamped, "/arm_balance/momentum", on_momentum, 100)
    driver.create_subscription(
        Vector3Stamped, "/waist/tracking_error",
        lambda m: seen.waist_error.append(float(np.hypot(m.vector.x, m.vector.y))), 100)

    def on_diagnostics(m: DiagnosticArray) -> None:
        for status in m.status:
            if status.name.startswith("arm_balance"):
                for kv in status.values:
                    if kv.key == "holds":
                        seen.arm_holds = max(seen.arm_holds, int(kv.value))
            if _level(status.level) == _level(DiagnosticStatus.ERROR):
                seen.faults.append(f"{status.name}: {status.message}")

    driver.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 100)

    def count_commands(_: JointState) -> None:
        seen.commands += 1

    driver.create_subscription(JointState, "/arm_balance/command", count_commands, 100)
    recorder = None
    bag_path = args.out / "bag"
    if not args.no_record:
        import shutil

        from humanoid_balance.bag import BagRecorder

        if bag_path.exists():
            shutil.rmtree(bag_path)  # the demo's own output folder: a new run replaces the old
        recorder = BagRecorder(driver, bag_path, RECORDED_TOPICS)
    for node in nodes:
        executor.add_node(node)
    if waist_node is not None:
        waist_node.trigger_configure()
        waist_node.trigger_activate()
        command = JointTrajectory(joint_names=["waist_pitch", "waist_roll"])
        for seconds, pitch in ((0.0, 0.0), (1.0, np.deg2rad(args.waist_pitch))):
            point = JointTrajectoryPoint(positions=[float(pitch), 0.0])
            point.time_from_start.sec = int(seconds)
            command.points.append(point)
        driver.create_publisher(JointTrajectory, "/waist/command", 10).publish(command)
    if arm_node is not None:
        arm_node.trigger_configure()
        arm_node.trigger_activate()
    print(f"demo: {len(nodes) - 1} nodes and the simulation, {args.duration:.1f} s simulated "
          f"(ROS_DOMAIN_ID={domain}, loopback DDS); strike at t = {args.strike_start:.2f} s, "
          f"{'with' if arm_node else 'WITHOUT'} resolved momentum control")
    wall0 = time.perf_counter()
    try:
        while not sim_node.finished.is_set():
            executor.spin_once(timeout_sec=0.05)
        for _ in range(20):  # deliver what is still queued
            executor.spin_once(timeout_sec=0.01)
    except KeyboardInterrupt:
        print("demo: interrupted")
    wall = time.perf_counter() - wall0
    simulated = sim_node.sim.time
    if arm_node is not None:
        arm_node.trigger_deactivate()
    if waist_node is not None and not waist_parked[0]:
        waist_node.trigger_deactivate()
    if recorder is not None:
        recorder.close()
        print(f"demo: recorded {recorder.message_count} messages to {bag_path}; replay them with "
              f"`humanoid-balance replay {bag_path} --exclude /zmp` and a zmp_estimator on use_sim_time")
    executor.shutdown()
    for node in nodes:
        node.destroy_node()
    if waist_drives is not None:
        waist_drives.close()
    rclpy.try_shutdown()

    metrics = _summary(seen, simulated, wall, args.strike_start)
    print("demo summary:")
    write_results("demo", metrics, command="humanoid-balance demo", directory=args.out)
    for fault in sorted(set(seen.faults))[:10]:
        print(f"  fault: {fault}")
    if seen.arm_holds:
        print(f"demo: arm_balance held the arms {seen.arm_holds} time(s): its inputs came late or "
              "bad; with a lower --real-time-factor this process keeps up")
    return 0 if not seen.faults else 1


def _upper_body(model: Any) -> Any:
    """The load on the waist drives: the mass above ``waist_pitch`` as a point at its CoM."""
    import pinocchio as pin

    from humanoid_balance.can.sim_drive import TorsoLoad

    q = model.neutral()
    pin.centerOfMass(model.model, model.data, q, True)  # subtree masses and CoMs
    joint = model.model.getJointId("waist_pitch")
    mass = float(model.data.mass[joint])
    height = float(model.data.com[joint][2])  # in the joint's frame: above the axes
    return TorsoLoad(mass_kg=mass, com_height_m=height,
                     inertia_kg_m2=(mass * height**2, mass * height**2))


def _level(value: bytes | int) -> int:
    """A diagnostic level as an int (the message field is bytes in some distributions)."""
    return value[0] if isinstance(value, (bytes, bytearray)) else int(value)


def _peak_shift_mm(samples: list[tuple[float, float, float]], start: float) -> float:
    """Peak distance [mm] of a ground point from its mean over the 0.2 s before ``start``."""
    if not samples:
        return float("nan")
    arr = np.array(samples)
    before = arr[(arr[:, 0] < start) & (arr[:, 0] >= start - 0.2)]
    after = arr[arr[:, 0] >= start]
    if len(before) == 0 or len(after) == 0:
        return float("nan")
    rest = before[:, 1:3].mean(axis=0)
    return float(np.linalg.norm(after[:, 1:3] - rest, axis=1).max() * 1e3)


def _summary(seen: _Observer, simulated: float, wall: float, start: float) -> dict[str, Any]:
    from humanoid_balance.results import metric

    momentum = np.array(seen.momentum) if seen.momentum else np.zeros((0, 7))
    lxy = float(np.abs(momentum[:, 4:6]).max()) if len(momentum) else float("nan")
    return {
        "simulated_s": metric(round(simulated, 3), "s"),
        "real_time_factor": metric(round(simulated / wall, 3), "x"),
        "cop_peak_shift_mm": metric(round(_peak_shift_mm(seen.cop, start), 2), "mm",
                                    better="lower"),
        "zmp_peak_shift_mm": metric(round(_peak_shift_mm(seen.zmp, start), 2), "mm",
                                    better="lower"),
        "max_abs_Lx_Ly_model": metric(lxy, "N m s", better="lower"),
        "arm_commands": metric(seen.commands, "msgs"),
        "arm_balance_holds": metric(seen.arm_holds, "", target=0, better="lower"),
        "waist_max_tracking_error_deg": metric(
            round(float(np.rad2deg(max(seen.waist_error))), 4) if seen.waist_error else float("nan"),
            "deg", better="lower"),
        "waist_pitch_final_deg_sim": metric(
            round(float(np.rad2deg(seen.waist_sim[-1][1])), 3) if seen.waist_sim else float("nan"),
            "deg"),
        "faults_seen": metric(len(seen.faults), "", target=0, better="lower"),
    }
