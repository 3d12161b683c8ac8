"""arm_balance in free_floating mode driving the simulated space robot (seed 002) over ROS.

In one process: ``mujoco_sim`` (model ``space_robot``: floating base, no gravity)
publishing joint states and the base pose, ``arm_balance`` (``mode:
free_floating``, lifecycle-activated) and a probe commanding the right hand at
the paper's [0.02, 0.03] m/s in the world while the left hand holds still. The
hands' motion is measured from the simulation's joint states and base pose
(pinocchio forward kinematics of the floating model).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from humanoid_balance.experiments.free_floating import PAPER_ANGLES

pytestmark = [pytest.mark.ros, pytest.mark.slow]

HAND_VELOCITY = (0.02, 0.03)  # m/s, right hand, world (seed 002)


def test_job_hand_moves_at_the_commanded_velocity_and_the_other_holds(rclpy_context: object) -> None:
    """Over 2 s of simulation: right hand velocity within 5 % of [0.02, 0.03] m/s, left hand within 2 mm."""
    import rclpy
    from geometry_msgs.msg import PoseStamped, TwistStamped
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState

    from humanoid_balance.core.model import RobotModel
    from humanoid_balance.nodes.arm_balance import ArmBalanceNode
    from humanoid_balance.nodes.mujoco_sim import MujocoSimNode
    from humanoid_balance.resources import urdf_path

    sim_time = [Parameter("use_sim_time", value=True)]
    sim = MujocoSimNode(context=rclpy_context, parameter_overrides=[
        Parameter("model", value="space_robot"), Parameter("gravity", value=-1.0),
        # a fifth of real time: the three nodes share this process's executor, and at 0.5 on a
        # loaded machine the arm answered late and the hand moved 10 % slower than commanded
        # (0.0180, 0.0269 m/s for 0.02, 0.03). Lock-step would not depend on the load, but
        # arm_balance refuses a joint state ahead of a late /clock (the soak's finding, not
        # mended): each such period then waited out the lock-step timeout
        Parameter("real_time_factor", value=0.2),
        Parameter("publish_rate", value=500.0), Parameter("sensor_noise", value=0.0),
        Parameter("duration", value=3.0),
        Parameter("initial_joint_names", value=list(PAPER_ANGLES)),
        Parameter("initial_joint_positions", value=[float(v) for v in PAPER_ANGLES.values()])])
    arm = ArmBalanceNode(context=rclpy_context, parameter_overrides=[
        *sim_time, Parameter("mode", value="free_floating"), Parameter("trigger", value="joint_states"),
        Parameter("base_pose_topic", value="/sim/base_pose"), Parameter("gravity", value=0.0)])
    probe = rclpy.create_node("floating_probe", context=rclpy_context, parameter_overrides=sim_time)
    executor = SingleThreadedExecutor(context=rclpy_context)
    for node in (sim, arm, probe):
        executor.add_node(node)
    # each state and base pose kept by its stamp, paired afterwards: on a loaded machine this
    # process's one executor falls behind the free-running simulation, and the probe's queues
    # (deep enough for the whole run) then hand the two topics over at different times
    joints: dict[float, np.ndarray] = {}
    base: dict[float, np.ndarray] = {}

    def stamp(msg: Any) -> float:
        return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec

    probe.create_subscription(PoseStamped, "/sim/base_pose", lambda m: base.__setitem__(stamp(m), np.array([
        m.pose.position.x, m.pose.position.y, m.pose.position.z, m.pose.orientation.x,
        m.pose.orientation.y, m.pose.orientation.z, m.pose.orientation.w])), 5000)
    probe.create_subscription(JointState, "/joint_states",
                              lambda m: joints.__setitem__(stamp(m), np.asarray(m.position)), 5000)
    twist_pub = probe.create_publisher(TwistStamped, "/arm_balance/job_twist", 10)
    from rclpy.lifecycle import TransitionCallbackReturn

    assert arm.trigger_configure() == TransitionCallbackReturn.SUCCESS
    assert arm.trigger_activate() == TransitionCallbackReturn.SUCCESS
    try:
        wall_end = time.monotonic() + 120.0  # the run ends it (sim.finished); this, a hang
        next_twist = 0.0
        while not sim.finished.is_set() and time.monotonic() < wall_end:
            if time.monotonic() >= next_twist:  # 50 Hz, as a teleoperation device would
                next_twist = time.monotonic() + 0.02
                twist = TwistStamped()
                twist.header.frame_id = "world"
                twist.twist.linear.x, twist.twist.linear.y = HAND_VELOCITY
                twist_pub.publish(twist)
            executor.spin_once(timeout_sec=0.002)
        arm.trigger_deactivate()
        quiet_until = time.monotonic() + 1.0  # what the queues still hold
        while time.monotonic() < quiet_until:
            heard = len(joints) + len(base)
            executor.spin_once(timeout_sec=0.01)
            if len(joints) + len(base) != heard:
                quiet_until = time.monotonic() + 1.0
    finally:
        executor.shutdown()
        for node in (sim, arm, probe):
            node.destroy_node()
    model = RobotModel(urdf_path("space_robot"), floating_base=True)
    joint_q = model.q_index(list(sim.sim.joint_names))
    times, hands = [], []
    for t in sorted(set(joints) & set(base)):
        q = model.neutral()
        q[0:7] = base[t]
        q[joint_q] = joints[t]
        times.append(t)
        hands.append([model.frame_transform(f"{s}_hand", q)[:2, 3] for s in ("right", "left")])
    times_a, hands_a = np.array(times), np.array(hands)
    window = (times_a >= 0.5) & (times_a <= 2.5)  # after the arm starts; before the run ends
    assert window.sum() > 500
    fit = np.polyfit(times_a[window], hands_a[window, 0, :], 1)[0]
    left_travel = np.linalg.norm(hands_a[window, 1, :] - hands_a[window, 1, :][0], axis=1).max()
    print(f"\nright hand velocity {fit.round(5).tolist()} m/s (commanded {list(HAND_VELOCITY)}); "
          f"left hand travel {1e3 * left_travel:.3f} mm")
    np.testing.assert_allclose(fit, HAND_VELOCITY, rtol=0.05)
    assert left_travel < 2e-3
