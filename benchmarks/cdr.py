#!/usr/bin/env python3
"""µs per message of each hand-written CDR reader and writer against rclpy's and rosbags' serialization.

For every reader and writer of :mod:`humanoid_balance.cdr` (its ``__all__``) and
the arm command writers of :mod:`humanoid_balance.command_interface`, on the
messages the nodes exchange (a 30-joint ``JointState`` with positions,
velocities and efforts, the 14-joint arm command, a ``WrenchStamped``, ...),
three implementations do the same job:

- ``cdr``: the package's reader or writer, as the nodes call it;
- ``rclpy``: ``rclpy.serialization.deserialize_message`` / ``serialize_message``,
  what a node without :mod:`humanoid_balance.cdr` does (a typed subscription
  deserializes, ``publish(msg)`` serializes);
- ``rosbags``: the CDR serde of the ``rosbags`` type store of this ROS 2
  (``typestore.deserialize_cdr`` / ``serialize_cdr``).

Each does the whole job of the call it stands for. A reader's job is the
fields the cdr reader returns (stamp in ns, frame, names, the arrays as numpy
arrays; the message deserialized, then its fields taken). A writer's job is the
bytes to publish from the values the node holds (stamp in ns, numpy arrays): a
message object kept between calls, its fields set, serialized (rosbags' memoryview
made ``bytes``, as ``publish`` takes). The timer's own cost (``perf_counter_ns``
twice and a call of nothing) is measured the same way and reported, not subtracted.

Inputs: a pool of 64 messages per case, values varying. A reader reads the
bytes Fast CDR writes (``rclpy.serialization.serialize_message``: the padding
holds whatever was in memory, as from a C++ or rclpy publisher), cut to the
message's length (rclpy returns 8 bytes more for a ``JointState``, which
rosbags refuses and DDS does not send).

Equality: before timing, each implementation's result for every input of the
pool is compared with the cdr one's: a reader's fields exactly, a writer's
bytes deserialized by rclpy as messages (padding bytes may differ).

Timing: each call timed alone (``time.perf_counter_ns``) in rounds of
``--batch`` calls; in each round every case and implementation takes its turn, the
implementations' order rotating, so that the load of this shared machine hits all
alike; ``--calls`` calls per implementation and case (>= 20000). Median and p99 of
µs per call; ``*_over_cdr``: the other implementation's median over the cdr one's.

    python benchmarks/cdr.py [--calls 20000] [--batch 500] [--cases read_joint_state_30,...]

Writes benchmarks/results/cdr.json (format of shared/RESULTS.md) and prints a table.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

IMPLEMENTATIONS = ("cdr", "rclpy", "rosbags")
POOL = 64
#: the nodes' joints: the 30 of the humanoid (as benchmarks/graph.py feeds them), its 14 arm joints
JOINTS = (
    [f"{side}_{j}" for side in ("left", "right")
     for j in ("hip_yaw", "hip_roll", "hip_pitch", "knee", "ankle_pitch", "ankle_roll")]
    + ["waist_pitch", "waist_roll"]
    + [f"{side}_{j}" for side in ("left", "right")
       for j in ("shoulder_pitch", "shoulder_roll", "shoulder_yaw", "elbow", "wrist_yaw",
                 "wrist_roll", "wrist_pitch")]
    + ["neck_yaw", "neck_pitch"])
ARM_JOINTS = [j for j in JOINTS if "shoulder" in j or "elbow" in j or "wrist" in j]
WAIST_JOINTS = ["waist_pitch", "waist_roll"]
NOT_PROVIDED = (-1.0,) + (0.0,) * 8  # mujoco_sim's Imu covariances
EMPTY = np.zeros(0)


@dataclass
class Case:
    """One reader or writer on one message.

    Attributes:
        key: the name in the results (``read_...`` or ``write_...``).
        api: the cdr function or class it measures.
        type_name: ``package/msg/Type``.
        inputs: the pool: bytes for a reader, argument tuples for a writer.
        calls: per implementation, a function of one input.
        canonical: a result made comparable across the implementations.
        used_by: where the package calls it.
    """

    key: str
    api: str
    type_name: str
    inputs: list[Any]
    calls: dict[str, Callable[[Any], Any]]
    canonical: Callable[[Any], Any]
    used_by: str = ""
    times_ns: dict[str, list[np.ndarray]] = field(default_factory=dict)


def message_class(type_name: str) -> Any:
    """The rclpy class of ``package/msg/Type``."""
    import importlib

    package, _, name = type_name.split("/")
    return getattr(importlib.import_module(f"{package}.msg"), name)


def typestore() -> Any:
    """rosbags' type store of the ROS 2 this rclpy belongs to (Kilted: rclpy 9, rcl 10)."""
    from rosbags.typesys import Stores, get_typestore

    store = getattr(Stores, "ROS2_KILTED", None) or Stores.ROS2_JAZZY
    return get_typestore(store)


# --- readers ------------------------------------------------------------------------------------


def _stamp_ns(header: Any) -> int:
    return int(header.stamp.sec) * 1_000_000_000 + int(header.stamp.nanosec)


def _reader_inputs(type_name: str, build: Callable[[int], Any], ts: Any) -> list[bytes]:
    """``POOL`` serialized messages ``build(k)`` as Fast CDR writes them (``serialize_message``:
    the padding as it was in memory), cut to the message's length: the one prefix rosbags reads
    (it refuses trailing bytes)."""
    from rclpy.serialization import deserialize_message, serialize_message

    cls = message_class(type_name)
    inputs = []
    for k in range(POOL):
        msg = build(k)
        data = serialize_message(msg)
        for end in range(len(data), 3, -1):
            try:
                ts.deserialize_cdr(data[:end], type_name)
            except Exception:  # rosbags' SerdeError, or an error of a cut too short
                continue
            break
        else:
            raise RuntimeError(f"rosbags reads no prefix of this {type_name}")
        cut = data[:end]
        if deserialize_message(cut, cls) != msg:
            raise RuntimeError(f"{type_name}: the cut bytes are no longer the message")
        inputs.append(cut)
    return inputs


def joint_state(k: int, names: Sequence[str], arrays: str = "pve") -> Any:
    """A ``JointState`` of ``names`` (stamp and values varying with ``k``) with the arrays
    of ``arrays`` (p: position, v: velocity, e: effort)."""
    from sensor_msgs.msg import JointState

    n = len(names)
    msg = JointState()
    msg.header.stamp.sec, msg.header.stamp.nanosec = 1_700_000_000 + k, 1_000 * k + 7
    msg.name = list(names)
    rng = np.random.default_rng(k)
    if "p" in arrays:
        msg.position = rng.uniform(-1.0, 1.0, n).tolist()
    if "v" in arrays:
        msg.velocity = rng.uniform(-2.0, 2.0, n).tolist()
    if "e" in arrays:
        msg.effort = rng.uniform(-50.0, 50.0, n).tolist()
    return msg


def _joint_state_fields(stamp: int, frame: str, names: Any, p: Any, v: Any, e: Any) -> tuple:
    return stamp, frame, tuple(names), tuple(p), tuple(v), tuple(e)


def joint_state_reader_case(key: str, names: Sequence[str], arrays: str, used_by: str,
                            ts: Any) -> Case:
    """``JointStateReader.read`` on joint states of ``names``."""
    from rclpy.serialization import deserialize_message

    from humanoid_balance import cdr

    type_name = "sensor_msgs/msg/JointState"
    cls = message_class(type_name)
    reader = cdr.JointStateReader()
    asarray = np.asarray

    def by_rclpy(data: bytes) -> tuple:
        m = deserialize_message(data, cls)
        return (_stamp_ns(m.header), m.header.frame_id, tuple(m.name), asarray(m.position),
                asarray(m.velocity), asarray(m.effort))

    def by_rosbags(data: bytes) -> tuple:
        m = ts.deserialize_cdr(data, type_name)
        return (_stamp_ns(m.header), m.header.frame_id, tuple(m.name), m.position, m.velocity,
                m.effort)

    return Case(key, "JointStateReader.read", type_name,
                _reader_inputs(type_name, lambda k: joint_state(k, names, arrays), ts),
                {"cdr": reader.read, "rclpy": by_rclpy, "rosbags": by_rosbags},
                lambda r: _joint_state_fields(*r), used_by)


def wrench(k: int, frame: str = "left_foot_ft") -> Any:
    """A ``WrenchStamped`` as a foot's F/T sensor sends it."""
    from geometry_msgs.msg import WrenchStamped

    msg = WrenchStamped()
    msg.header.stamp.sec, msg.header.stamp.nanosec = 1_700_000_000 + k, 1_000 * k + 7
    msg.header.frame_id = frame
    f, t = msg.wrench.force, msg.wrench.torque
    f.x, f.y, f.z = 5.0 * math.sin(k), 3.0, 270.0 + 80.0 * math.sin(0.1 * k)
    t.x, t.y, t.z = 4.0 * math.cos(k), 20.0 * math.sin(k), 0.3
    return msg


def _wrench_values(w: Any) -> tuple[float, ...]:
    return (w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z)


def reader_cases(ts: Any) -> list[Case]:
    """Every reader of ``humanoid_balance.cdr`` on the messages the nodes read."""
    from rclpy.serialization import deserialize_message
    from std_msgs.msg import Float64, Float64MultiArray

    from humanoid_balance import cdr

    cases = [
        joint_state_reader_case("read_joint_state_30", JOINTS, "pve",
                                "zmp_estimator, arm_balance: /joint_states at 1 kHz", ts),
        joint_state_reader_case("read_joint_state_arm_command_14", ARM_JOINTS, "pv",
                                "mujoco_sim: /arm_balance/command at 500 Hz", ts),
        joint_state_reader_case("read_joint_state_job_velocities_14", ARM_JOINTS, "v",
                                "arm_balance: /arm_balance/job_joint_velocities", ts)]

    wrench_type = "geometry_msgs/msg/WrenchStamped"
    wrench_cls = message_class(wrench_type)

    def wrench_rclpy(data: bytes) -> tuple:
        m = deserialize_message(data, wrench_cls)
        return _stamp_ns(m.header), m.header.frame_id, _wrench_values(m.wrench)

    def wrench_rosbags(data: bytes) -> tuple:
        m = ts.deserialize_cdr(data, wrench_type)
        return _stamp_ns(m.header), m.header.frame_id, _wrench_values(m.wrench)

    cases.append(Case("read_wrench_stamped", "read_wrench_stamped", wrench_type,
                      _reader_inputs(wrench_type, wrench, ts),
                      {"cdr": cdr.read_wrench_stamped, "rclpy": wrench_rclpy,
                       "rosbags": wrench_rosbags},
                      lambda r: (r[0], r[1], tuple(r[2])),
                      "zmp_estimator: /{left,right}_foot/ft at 1 kHz"))

    fsr_type = "std_msgs/msg/Float64MultiArray"

    def fsr(k: int) -> Any:
        return Float64MultiArray(data=[100.0 + k, 50.0, 50.5, 70.25])

    cases.append(Case("read_float64_multi_array_4", "read_float64_multi_array", fsr_type,
                      _reader_inputs(fsr_type, fsr, ts),
                      {"cdr": cdr.read_float64_multi_array,
                       "rclpy": lambda d: np.asarray(deserialize_message(d, Float64MultiArray).data),
                       "rosbags": lambda d: ts.deserialize_cdr(d, fsr_type).data},
                      lambda r: tuple(r), "zmp_estimator: /{left,right}_foot/fsr at 1 kHz"))

    f64_type = "std_msgs/msg/Float64"
    cases.append(Case("read_float64", "read_float64", f64_type,
                      _reader_inputs(f64_type, lambda k: Float64(data=0.01 * k - 0.2), ts),
                      {"cdr": cdr.read_float64,
                       "rclpy": lambda d: deserialize_message(d, Float64).data,
                       "rosbags": lambda d: ts.deserialize_cdr(d, f64_type).data},
                      float, "arm_balance: /zmp/stability_margin"))

    js_type = "sensor_msgs/msg/JointState"
    js_cls = message_class(js_type)
    cases.append(Case("read_header_stamp_ns_arm_command_14", "header_stamp_ns", js_type,
                      _reader_inputs(js_type, lambda k: joint_state(k, ARM_JOINTS, "pv"), ts),
                      {"cdr": cdr.header_stamp_ns,
                       "rclpy": lambda d: _stamp_ns(deserialize_message(d, js_cls).header),
                       "rosbags": lambda d: _stamp_ns(ts.deserialize_cdr(d, js_type).header)},
                      int, "mujoco_sim lock-step (sim/lock_step.py), apps/demo.py: answers' stamps"))
    return cases


# --- writers ------------------------------------------------------------------------------------


def _rosbags_twin(ts: Any, type_name: str, msg: Any) -> Any:
    """The rosbags message equal to rclpy message ``msg``."""
    from rclpy.serialization import serialize_message

    data = serialize_message(msg)
    for end in range(len(data), 3, -1):
        try:
            return ts.deserialize_cdr(data[:end], type_name)
        except Exception:  # rosbags refuses trailing bytes: a shorter cut
            continue
    raise RuntimeError(f"rosbags reads no prefix of this {type_name}")


def _set_stamp(header: Any, stamp_ns: int) -> None:
    header.stamp.sec, header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)


def writer_case(key: str, api: str, type_name: str, template: Any, inputs: list[tuple],
                write: Callable[..., bytes], fill: Callable[..., None], ts: Any,
                used_by: str, fill_rosbags: Callable[..., None] | None = None) -> Case:
    """A writer against a kept rclpy message and a kept rosbags message (``template``'s
    twin), each ``fill(message, *args)``-ed and serialized; results compared as the messages
    rclpy reads from the bytes."""
    from rclpy.serialization import deserialize_message, serialize_message

    cls = message_class(type_name)
    kept = template
    twin = _rosbags_twin(ts, type_name, template)
    fill_twin = fill_rosbags or fill
    serialize_cdr = ts.serialize_cdr

    def by_rclpy(args: tuple) -> bytes:
        fill(kept, *args)
        return serialize_message(kept)

    def by_rosbags(args: tuple) -> bytes:
        fill_twin(twin, *args)
        return bytes(serialize_cdr(twin, type_name))

    return Case(key, api, type_name, inputs,
                {"cdr": lambda args: write(*args), "rclpy": by_rclpy, "rosbags": by_rosbags},
                lambda data: deserialize_message(data, cls), used_by)


def _stamps() -> list[int]:
    return [1_700_000_000_123_456_789 + 1_000_003 * k for k in range(POOL)]


def _arrays(count: int, how_many: int, scale: float = 1.0) -> list[tuple[np.ndarray, ...]]:
    rng = np.random.default_rng(count * 10 + how_many)
    return [tuple(rng.uniform(-scale, scale, count) for _ in range(how_many)) for _ in range(POOL)]


def joint_state_writer_cases(ts: Any) -> list[Case]:
    """The JointState and arm command writers (cdr and command_interface)."""
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from humanoid_balance import cdr
    from humanoid_balance.command_interface import command_writer

    js = "sensor_msgs/msg/JointState"

    def template(names: Sequence[str]) -> Any:
        return JointState(name=list(names))

    def fill_pve(m: Any, ns: int, p: np.ndarray, v: np.ndarray, e: np.ndarray = EMPTY) -> None:
        _set_stamp(m.header, ns)
        m.position, m.velocity, m.effort = p, v, e

    full: list[tuple] = [(ns, *a) for ns, a in zip(_stamps(), _arrays(30, 3, 2.0), strict=True)]
    arm: list[tuple] = [(ns, *a) for ns, a in zip(_stamps(), _arrays(14, 2, 2.0), strict=True)]
    waist: list[tuple] = [(ns, *a) for ns, a in zip(_stamps(), _arrays(2, 2, 0.3), strict=True)]
    cases = [
        writer_case("write_joint_state_30", "JointStateWriter.write", js, template(JOINTS), full,
                    cdr.JointStateWriter(JOINTS).write, fill_pve, ts,
                    "mujoco_sim: /joint_states at 1 kHz"),
        writer_case("write_joint_state_waist_2", "JointStateWriter.write", js,
                    template(WAIST_JOINTS), waist, cdr.JointStateWriter(WAIST_JOINTS).write,
                    fill_pve, ts, "waist_controller: /waist/joint_states, /waist/reference at 100 Hz"),
        writer_case("write_joint_state_command_14", "JointStateCommandWriter.write", js,
                    template(ARM_JOINTS), arm, cdr.JointStateCommandWriter(ARM_JOINTS).write,
                    fill_pve, ts, "arm_balance: /arm_balance/command at 500 Hz"),
        writer_case("write_joint_state_message_30", "joint_state_message", js, template(JOINTS),
                    full, lambda ns, p, v, e: cdr.joint_state_message(ns, JOINTS, p, v, e),
                    fill_pve, ts, "tests and feeders (not a node's hot path)")]

    # command_output.repeat: the last command (kept as bytes, or as a message) restamped
    p0, v0 = arm[0][1], arm[0][2]
    last = cdr.JointStateCommandWriter(ARM_JOINTS).write(0, p0, v0)
    kept = template(ARM_JOINTS)
    kept.position, kept.velocity = p0, v0

    def fill_stamp(m: Any, data: bytes, ns: int) -> None:
        _set_stamp(m.header, ns)

    cases.append(writer_case(
        "write_with_stamp_command_14", "with_stamp", js, kept, [(last, ns) for ns, *_ in arm],
        cdr.with_stamp, fill_stamp, ts,
        "arm_balance (command_output.repeat): the last command again, restamped"))

    jt = "trajectory_msgs/msg/JointTrajectory"
    trajectory = JointTrajectory(joint_names=list(ARM_JOINTS))
    point = JointTrajectoryPoint()
    point.time_from_start.nanosec = 2_000_000
    trajectory.points = [point]

    def fill_point(m: Any, ns: int, p: np.ndarray, v: np.ndarray) -> None:
        m.points[0].positions, m.points[0].velocities = p, v  # header stamp stays 0

    cases.append(writer_case(
        "write_joint_trajectory_command_14", "command_interface.JointTrajectoryCommandWriter.write",
        jt, trajectory, arm, command_writer("joint_trajectory", ARM_JOINTS, period_s=0.002).write,
        fill_point, ts, "arm_balance with command_interface joint_trajectory, 500 Hz"))

    def fill_forward(m: Any, ns: int, p: np.ndarray, v: np.ndarray) -> None:
        m.data = p

    from std_msgs.msg import Float64MultiArray

    cases.append(writer_case(
        "write_forward_position_command_14", "command_interface.ForwardPositionCommandWriter.write",
        "std_msgs/msg/Float64MultiArray", Float64MultiArray(), arm,
        command_writer("forward_position", ARM_JOINTS, period_s=0.002).write, fill_forward, ts,
        "arm_balance with command_interface forward_position, 500 Hz"))
    return cases


def doubles_writer_cases(ts: Any) -> list[Case]:
    """The writers of messages made of a header and doubles."""
    from geometry_msgs.msg import PointStamped, PoseStamped, Vector3Stamped, WrenchStamped
    from sensor_msgs.msg import Imu

    from humanoid_balance import cdr

    stamps = _stamps()
    rng = np.random.default_rng(1)

    def stamped(frame: str, msg: Any) -> Any:
        msg.header.frame_id = frame
        return msg

    def xyz(v: Any, values: Sequence[float]) -> None:
        v.x, v.y, v.z = values

    def fill_point(m: Any, ns: int, x: float, y: float, z: float) -> None:
        _set_stamp(m.header, ns)
        m.point.x, m.point.y, m.point.z = x, y, z

    def fill_vector(m: Any, ns: int, values: tuple[float, ...]) -> None:
        _set_stamp(m.header, ns)
        xyz(m.vector, values)

    def fill_wrench(m: Any, ns: int, values: tuple[float, ...]) -> None:
        _set_stamp(m.header, ns)
        xyz(m.wrench.force, values[:3])
        xyz(m.wrench.torque, values[3:])

    def fill_pose(m: Any, ns: int, values: tuple[float, ...]) -> None:
        _set_stamp(m.header, ns)
        xyz(m.pose.position, values[:3])
        o = m.pose.orientation
        o.x, o.y, o.z, o.w = values[3:]

    def fill_imu(m: Any, ns: int, values: tuple[float, ...]) -> None:
        _set_stamp(m.header, ns)
        o = m.orientation
        o.x, o.y, o.z, o.w = values

    imu = stamped("waist_plate", Imu())
    imu.orientation.w = 1.0
    imu.angular_velocity_covariance[0] = -1.0
    imu.linear_acceleration_covariance[0] = -1.0

    def floats(n: int, scale: float = 1.0) -> list[tuple[float, ...]]:
        return [tuple(float(x) for x in rng.uniform(-scale, scale, n)) for _ in range(POOL)]

    def quaternions() -> list[tuple[float, ...]]:
        q = rng.normal(size=(POOL, 4))
        return [tuple(float(x) for x in row / np.linalg.norm(row)) for row in q]

    point_stamped = cdr.PointStampedWriter("world")
    vector = cdr.StampedDoublesWriter("waist_plate", (0.0, 0.0, 0.0))
    wrench_writer = cdr.wrench_stamped_writer("left_foot_ft")
    pose = cdr.pose_stamped_writer("world")
    imu_writer = cdr.imu_writer("waist_plate", angular_velocity_covariance=NOT_PROVIDED,
                                linear_acceleration_covariance=NOT_PROVIDED)
    cases = [
        writer_case("write_point_stamped", "PointStampedWriter.write",
                    "geometry_msgs/msg/PointStamped", stamped("world", PointStamped()),
                    [(ns, *v) for ns, v in zip(stamps, floats(3, 0.2), strict=True)],
                    point_stamped.write, fill_point, ts,
                    "zmp_estimator: /zmp, /{left,right}_foot/zmp at 1 kHz; mujoco_sim, arm_balance"),
        writer_case("write_vector3_stamped", "StampedDoublesWriter.write",
                    "geometry_msgs/msg/Vector3Stamped", stamped("waist_plate", Vector3Stamped()),
                    [(ns, (a, b, 0.0)) for ns, (a, b) in zip(stamps, floats(2, 0.01), strict=True)],
                    vector.write, fill_vector, ts, "waist_controller: /waist/tracking_error"),
        writer_case("write_wrench_stamped", "wrench_stamped_writer", "geometry_msgs/msg/WrenchStamped",
                    stamped("left_foot_ft", WrenchStamped()),
                    [(ns, v) for ns, v in zip(stamps, floats(6, 300.0), strict=True)],
                    wrench_writer.write, fill_wrench, ts,
                    "mujoco_sim: /{left,right}_foot/ft at 1 kHz; arm_balance momentum"),
        writer_case("write_pose_stamped", "pose_stamped_writer", "geometry_msgs/msg/PoseStamped",
                    stamped("world", PoseStamped()),
                    [(ns, (*p, *q)) for ns, p, q in zip(stamps, floats(3), quaternions(),
                                                        strict=True)],
                    pose.write, fill_pose, ts, "mujoco_sim: /sim/base_pose at 1 kHz"),
        writer_case("write_imu", "imu_writer", "sensor_msgs/msg/Imu", imu,
                    [(ns, q) for ns, q in zip(stamps, quaternions(), strict=True)],
                    imu_writer.write, fill_imu, ts, "mujoco_sim: /waist/inclinometer at 100 Hz")]

    return cases


def other_writer_cases(ts: Any) -> list[Case]:
    """The polygon writer and the writers of messages without a header."""
    from geometry_msgs.msg import Point32, PolygonStamped
    from rosgraph_msgs.msg import Clock
    from std_msgs.msg import Float64, Float64MultiArray

    from humanoid_balance import cdr

    stamps = _stamps()
    rng = np.random.default_rng(2)
    polygon_type = "geometry_msgs/msg/PolygonStamped"
    polygons = [(ns, rng.uniform(-0.3, 0.3, (8, 2)), 0.0) for ns in stamps]
    rb_point32 = ts.types["geometry_msgs/msg/Point32"]
    polygon = PolygonStamped()
    polygon.header.frame_id = "world"

    def fill_polygon(m: Any, ns: int, xy: np.ndarray, z: float) -> None:
        _set_stamp(m.header, ns)
        m.polygon.points = [Point32(x=float(x), y=float(y), z=z) for x, y in xy]

    def fill_polygon_rosbags(m: Any, ns: int, xy: np.ndarray, z: float) -> None:
        _set_stamp(m.header, ns)
        m.polygon.points = [rb_point32(x=float(x), y=float(y), z=z) for x, y in xy]

    cases = [writer_case(
        "write_polygon_stamped_8", "PolygonStampedWriter.write", polygon_type,
        polygon, polygons, cdr.PolygonStampedWriter("world").write,
        fill_polygon, ts, "zmp_estimator: /support_polygon when it changes", fill_polygon_rosbags)]

    def fill_data(m: Any, value: Any) -> None:
        m.data = value

    def fill_clock(m: Any, ns: int) -> None:
        m.clock.sec, m.clock.nanosec = divmod(ns, 1_000_000_000)

    cases += [
        writer_case("write_float64", "float64_message", "std_msgs/msg/Float64", Float64(),
                    [(float(v),) for v in rng.uniform(-0.1, 0.1, POOL)], cdr.float64_message,
                    fill_data, ts,
                    "zmp_estimator: /zmp/stability_margin at 1 kHz"),
        writer_case("write_float64_multi_array_4", "float64_multi_array_message",
                    "std_msgs/msg/Float64MultiArray", Float64MultiArray(),
                    [(np.abs(a),) for (a,) in _arrays(4, 1, 300.0)],
                    cdr.float64_multi_array_message, fill_data, ts,
                    "mujoco_sim: /{left,right}_foot/fsr at 1 kHz"),
        writer_case("write_clock", "clock_message", "rosgraph_msgs/msg/Clock", Clock(),
                    [(ns,) for ns in stamps], cdr.clock_message, fill_clock, ts,
                    "mujoco_sim: /clock")]
    return cases


# --- equality and timing ------------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    """Equal results: tuples element by element, arrays by value (nan nowhere here)."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    return bool(a == b)


def check_equal(case: Case) -> dict[str, str]:
    """Per implementation other than cdr: "equal" when its result equals cdr's on every input
    of the pool, else what differs first."""
    verdict = {}
    for impl in IMPLEMENTATIONS[1:]:
        verdict[impl] = "equal"
        for k, args in enumerate(case.inputs):
            expected = case.canonical(case.calls["cdr"](args))
            got = case.canonical(case.calls[impl](args))
            if not _same(expected, got):
                verdict[impl] = f"differs on input {k}: cdr {expected!r:.200} / {impl} {got!r:.200}"
                break
    return verdict


def time_batch(call: Callable[[Any], Any], inputs: Sequence[Any], start: int,
               count: int) -> np.ndarray:
    """ns of each of ``count`` calls, inputs taken in turn from ``start``."""
    clock = time.perf_counter_ns
    out = np.empty(count, dtype=np.int64)
    pool = len(inputs)
    for i in range(count):
        args = inputs[(start + i) % pool]
        t0 = clock()
        call(args)
        out[i] = clock() - t0
    return out


def run_rounds(cases: Sequence[Case], calls: int, batch: int) -> np.ndarray:
    """Time every case's implementations in interleaved rounds; the timer's own cost (a call
    of nothing, the same way), ns per call."""
    timer: list[np.ndarray] = []
    rounds = math.ceil(calls / batch)
    for case in cases:
        case.times_ns = {impl: [] for impl in IMPLEMENTATIONS}
        for impl in IMPLEMENTATIONS:  # warm-up: caches, the readers' name caches
            time_batch(case.calls[impl], case.inputs, 0, POOL)
    for r in range(rounds):
        count = min(batch, calls - r * batch)
        timer.append(time_batch(lambda args: None, (0,), 0, count))
        for case in cases:
            order = IMPLEMENTATIONS[r % 3:] + IMPLEMENTATIONS[:r % 3]
            for impl in order:
                case.times_ns[impl].append(time_batch(case.calls[impl], case.inputs, r * batch,
                                                      count))
    return np.concatenate(timer)


def _us(times_ns: np.ndarray, q: float) -> float:
    return round(float(np.percentile(times_ns, q)) * 1e-3, 2)


# --- main ---------------------------------------------------------------------------------------


def all_cases(ts: Any) -> list[Case]:
    """Every case: the readers, then the writers."""
    return (reader_cases(ts) + joint_state_writer_cases(ts) + doubles_writer_cases(ts)
            + other_writer_cases(ts))


def covered_api(cases: Sequence[Case]) -> tuple[set[str], set[str]]:
    """(``humanoid_balance.cdr.__all__`` names measured, names not measured)."""
    from humanoid_balance import cdr

    measured = {c.api.split(".")[0] for c in cases}
    names = getattr(cdr, "__all__", None) or [
        n for n in vars(cdr) if not n.startswith("_")
        and getattr(getattr(cdr, n), "__module__", "").startswith("humanoid_balance.cdr")]
    # the readers and writers: not the result types (NamedTuples), not the constants
    functions = {n for n in names if callable(getattr(cdr, n))
                 and not hasattr(getattr(cdr, n), "_fields")}
    return functions & measured, functions - measured


def working_tree_state() -> str:
    """"clean", or the package files modified since the commit (others edit this tree)."""
    repo = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--", "humanoid_balance"],
                             capture_output=True, text=True, cwd=repo, check=False).stdout
    except OSError:
        return "unknown"
    files = [line[3:] for line in out.splitlines() if line.strip()]
    return "clean" if not files else "modified: " + ", ".join(files)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000,
                        help="timed calls per implementation and case (default 20000)")
    parser.add_argument("--batch", type=int, default=500, help="calls per round (default 500)")
    parser.add_argument("--cases", default="", help="comma-separated keys (default: all)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    if args.calls < 1 or args.batch < 1:
        parser.error("--calls and --batch must be >= 1")
    from humanoid_balance.results import metric, write_results

    ts = typestore()
    cases = all_cases(ts)
    if args.cases:
        wanted = set(args.cases.split(","))
        unknown = wanted - {c.key for c in cases}
        if unknown:
            parser.error(f"--cases {sorted(unknown)}: choose from {[c.key for c in cases]}")
        cases = [c for c in cases if c.key in wanted]
    load_start = os.getloadavg()
    equal = {c.key: check_equal(c) for c in cases}
    gc.collect()
    t0 = time.monotonic()
    timer = run_rounds(cases, args.calls, args.batch)
    elapsed = time.monotonic() - t0
    load_end = os.getloadavg()

    metrics: dict[str, dict[str, Any]] = {}
    header = (f"{'case':<36} {'cdr med/p99':>14} {'rclpy med/p99':>15} {'rosbags med/p99':>16} "
              f"{'rclpy/cdr':>9} {'rosbags/cdr':>11}  equal")
    print(header)
    print("-" * len(header))
    for case in cases:
        times = {impl: np.concatenate(case.times_ns[impl]) for impl in IMPLEMENTATIONS}
        med = {impl: _us(t, 50) for impl, t in times.items()}
        p99 = {impl: _us(t, 99) for impl, t in times.items()}
        for impl in IMPLEMENTATIONS:
            metrics[f"{case.key}_{impl}_us_median"] = metric(med[impl], "us", better="lower")
            metrics[f"{case.key}_{impl}_us_p99"] = metric(p99[impl], "us", better="lower")
        for impl in IMPLEMENTATIONS[1:]:
            metrics[f"{case.key}_{impl}_over_cdr"] = metric(
                round(med[impl] / med["cdr"], 2) if med["cdr"] > 0 else "nan", "x")
        verdict = equal[case.key]
        metrics[f"{case.key}_equal"] = metric(
            "; ".join(f"{impl} {v}" for impl, v in verdict.items()),
            f"{case.api} on {case.type_name}; {case.used_by}")
        same = "yes" if all(v == "equal" for v in verdict.values()) else "NO"
        print(f"{case.key:<36} {med['cdr']:>6.2f}/{p99['cdr']:<7.2f} "
              f"{med['rclpy']:>6.2f}/{p99['rclpy']:<8.2f} {med['rosbags']:>7.2f}/{p99['rosbags']:<8.2f} "
              f"{med['rclpy'] / med['cdr']:>9.1f} {med['rosbags'] / med['cdr']:>11.1f}  {same}")
    print(f"timer (perf_counter_ns twice, a call of nothing): median {_us(timer, 50)} us, "
          f"p99 {_us(timer, 99)} us; {elapsed:.0f} s; load average {load_start[0]:.2f} -> "
          f"{load_end[0]:.2f}")
    measured, unmeasured = covered_api(cases)
    metrics["timer_us_median"] = metric(_us(timer, 50), "us")
    metrics["timer_us_p99"] = metric(_us(timer, 99), "us")
    metrics["calls_per_implementation"] = metric(args.calls, "")
    metrics["load_average_1min_at_start"] = metric(round(load_start[0], 2), "")
    metrics["load_average_1min_at_end"] = metric(round(load_end[0], 2), "")
    metrics["working_tree"] = metric(working_tree_state())
    metrics["notes"] = metric(
        f"each call timed alone, timer included (timer_us_*); rounds of {args.batch} calls, "
        "every case and implementation in each round, their order rotating; readers: Fast CDR "
        "bytes (rclpy-serialized, cut to length) to the fields cdr returns; writers: a kept "
        "message's fields set, then serialized to bytes; rosbags typestore "
        f"{getattr(ts, 'name', '') or 'ROS2_KILTED'}; not measured: {sorted(unmeasured) or 'none'} "
        f"(measured: {len(measured)} readers and writers); a 2-core machine shared with other "
        "processes (see the load averages)")
    if not args.no_write:
        command = " ".join(["python benchmarks/cdr.py", *sys.argv[1:]])
        write_results("cdr", metrics, command=command)
    return 0 if all(v == "equal" for e in equal.values() for v in e.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
