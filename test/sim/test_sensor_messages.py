"""What mujoco_sim publishes each period (humanoid_balance.sim.sensor_messages), read back with
rclpy's deserializer (no DDS)."""

from __future__ import annotations

from typing import Any

import pytest

from humanoid_balance.params.mujoco_sim import MujocoSimConfig
from humanoid_balance.sim.models import simulation_for
from humanoid_balance.sim.runner import Period
from humanoid_balance.sim.sensor_messages import SensorMessages

HUMANOID_TOPICS = ("/clock", "/joint_states", "/sim/com", "/sim/base_pose", "/left_foot/ft",
                   "/left_foot/fsr", "/right_foot/ft", "/right_foot/fsr", "/waist/inclinometer",
                   "/sim/cop")


def read(topic: str, data: bytes) -> Any:
    """The message ``data`` holds (rclpy's deserializer: independent of the writer)."""
    from geometry_msgs.msg import PointStamped, PoseStamped, WrenchStamped
    from rclpy.serialization import deserialize_message
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import Imu, JointState
    from std_msgs.msg import Float64MultiArray

    types = {"/clock": Clock, "/joint_states": JointState, "/sim/com": PointStamped,
             "/sim/base_pose": PoseStamped, "/waist/inclinometer": Imu, "/sim/cop": PointStamped,
             "/left_foot/ft": WrenchStamped, "/right_foot/ft": WrenchStamped,
             "/left_foot/fsr": Float64MultiArray, "/right_foot/fsr": Float64MultiArray}
    return deserialize_message(data, types[topic])


def period(ns: int, *, clock: bool = True, inclinometer: bool = True) -> Period:
    return Period(ns, round(ns * 1e-6), clock, inclinometer, False)


def humanoid(noise: float = 1.0) -> Any:
    sim = simulation_for(MujocoSimConfig.defaults(sensor_noise=noise))
    sim.settle(0.2)
    return sim


def test_the_standing_humanoid_s_messages_carry_its_sensors() -> None:
    """Every topic in order, stamped with the period; 30 joints; each foot's F/T in its frame
    carrying more than 200 N of the robot's weight; the inclinometer in waist_plate."""
    messages = SensorMessages(humanoid())
    assert messages.topics == HUMANOID_TOPICS
    written = dict(messages.write(period(200_000_000), set(HUMANOID_TOPICS)))
    assert tuple(written) == HUMANOID_TOPICS
    msgs = {topic: read(topic, data) for topic, data in written.items()}
    assert msgs["/clock"].clock.sec == 0 and msgs["/clock"].clock.nanosec == 200_000_000
    joints = msgs["/joint_states"]
    assert (len(joints.name), len(joints.position), joints.header.stamp.nanosec) == (
        30, 30, 200_000_000)
    for side in ("left", "right"):
        wrench = msgs[f"/{side}_foot/ft"]
        assert wrench.header.frame_id == f"{side}_foot_ft"
        assert wrench.wrench.force.z > 200.0
        assert len(msgs[f"/{side}_foot/fsr"].data) == 4
    assert msgs["/waist/inclinometer"].header.frame_id == "waist_plate"
    assert msgs["/sim/com"].header.frame_id == msgs["/sim/cop"].header.frame_id == "world"


def test_unheard_topics_and_samples_not_due_are_not_written() -> None:
    """Nothing heard: /clock and /joint_states only; a period without /clock: no /clock; the
    inclinometer only in a period that has it."""
    messages = SensorMessages(humanoid())
    assert [t for t, _ in messages.write(period(1_000_000), set())] == ["/clock", "/joint_states"]
    assert [t for t, _ in messages.write(period(2_000_000, clock=False), set())] == [
        "/joint_states"]
    heard = {"/waist/inclinometer"}
    assert [t for t, _ in messages.write(period(3_000_000, inclinometer=False), heard)] == [
        "/clock", "/joint_states"]


def test_who_listens_does_not_change_the_simulation() -> None:
    """Two humanoids with nominal noise, one with every topic heard and one with none: the same
    /joint_states, noise draws included, period after period."""
    sims = [humanoid(), humanoid()]
    writers = [SensorMessages(sim) for sim in sims]
    for step in range(1, 21):
        joints = []
        for sim, writer, heard in zip(sims, writers, (set(HUMANOID_TOPICS), set()), strict=True):
            sim.step()
            joints.append(dict(writer.write(period(step * 1_000_000), heard))["/joint_states"])
        assert joints[0] == joints[1]


@pytest.mark.parametrize(("model", "topics"), [
    ("space_robot", ("/clock", "/joint_states", "/sim/com", "/sim/base_pose")),
    ("lunar_arm", ("/clock", "/joint_states", "/sim/com")),
])
def test_other_robots_have_joints_and_ground_truth_only(model: str, topics: tuple[str, ...]) -> None:
    """The space robot's floating base has a pose; the lunar arm (fixed) has none."""
    sim = simulation_for(MujocoSimConfig.defaults(model=model, gravity_m_s2=None))
    messages = SensorMessages(sim)
    assert messages.topics == topics
    assert tuple(t for t, _ in messages.write(period(1_000_000), set(topics))) == topics


def test_test_faults_move_every_stamp_stop_and_zero_the_ft_and_resume() -> None:
    """/sim/fault (the chaos run): the clock leaps with every stamp, F/T stops or reads zeros
    on one foot, and resumes; the simulation itself is not touched."""
    messages = SensorMessages(humanoid(noise=0.0))
    heard = set(HUMANOID_TOPICS)
    written = dict(messages.write(period(2_000_000_000), heard))
    assert read("/clock", written["/clock"]).clock.sec == 2
    text = messages.faults.apply("clock_jump 10", messages.last_stamp_ns)
    assert "clock offset +10.000 s" in text
    written = dict(messages.write(period(2_001_000_000), heard))
    for topic in ("/joint_states", "/left_foot/ft", "/sim/cop"):
        assert read(topic, written[topic]).header.stamp.sec == 12, topic
    assert read("/clock", written["/clock"]).clock.sec == 12
    messages.faults.apply("clock_zero", messages.last_stamp_ns)
    written = dict(messages.write(period(2_002_000_000), heard))
    stamp = read("/clock", written["/clock"]).clock
    assert (stamp.sec, stamp.nanosec) == (0, 1_000_000)
    messages.faults.apply("ft_stop", 0)
    written = dict(messages.write(period(2_003_000_000), heard))
    assert "/left_foot/ft" not in written and "/right_foot/ft" not in written
    assert "/left_foot/fsr" in written
    messages.faults.apply("ft_resume", 0)
    messages.faults.apply("ft_zero right", 0)
    written = dict(messages.write(period(2_004_000_000), heard))
    right = read("/right_foot/ft", written["/right_foot/ft"]).wrench
    left = read("/left_foot/ft", written["/left_foot/ft"]).wrench
    assert (right.force.z, right.torque.x) == (0.0, 0.0)
    assert abs(left.force.z) > 100.0
    messages.faults.apply("ft_resume", 0)
    written = dict(messages.write(period(2_005_000_000), heard))
    assert abs(read("/right_foot/ft", written["/right_foot/ft"]).wrench.force.z) > 100.0


@pytest.mark.parametrize("text", ["", "clock_jump", "clock_jump x", "clock_jump nan", "ft_zero middle",
                                  "ft_stop now", "reboot"])
def test_an_unknown_test_fault_is_refused_with_what_is_known(text: str) -> None:
    faults = SensorMessages(humanoid(noise=0.0)).faults
    with pytest.raises(ValueError, match="expected clock_jump S, clock_zero, ft_stop"):
        faults.apply(text, 0)
    assert faults.clock_offset_ns == 0 and not faults.ft_stopped and not faults.ft_zero
