"""The zmp_estimator node in-process on loopback DDS, reached through its topics, services and
parameters only.

What the node adds to :class:`~humanoid_balance.core.zmp_loop.ZmpLoop` (whose behaviour
test/core/test_zmp_loop.py checks): reading the messages (typed, little- and big-endian CDR,
unreadable bytes), writing the outputs as bytes, the markers, /diagnostics, the zeroing
services and refusing bad parameters at start-up. The wrenches are built by hand as in
test_zmp_loop.py: a ground force at a chosen sole point, plus the foot's weight.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from humanoid_balance.core.foot_sensors import WrenchReading
from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.zmp import foot_geometry_from_model
from humanoid_balance.core.zmp_loop import ManualClock, ZmpLoop
from humanoid_balance.params.zmp_estimator import config_from_values
from humanoid_balance.resources import urdf_path

pytestmark = pytest.mark.ros

#: s to wait for an output at most: a test waits for events, never assumes the machine keeps time
WAIT_S = 20.0

SIDES = ("left", "right")
G = 9.81
MODEL = RobotModel(urdf_path("humanoid"), world_frame="W")
NAMES = tuple(MODEL.joint_names)
SOLES = {s: MODEL.frame_transform(f"{s}_sole", MODEL.neutral()) for s in SIDES}
GEOMETRY = {s: foot_geometry_from_model(MODEL, sensor_frame=f"{s}_foot_ft", sole_frame=f"{s}_sole",
                                        foot_link=f"{s}_foot", fsr_frames=[f"{s}_fsr_0"])
            for s in SIDES}


def sensor_wrench(side: str, zmp_in_sole: tuple[float, float], fz: float) -> np.ndarray:
    """What the ankle sensor reads (sensor frame) for ground force fz at a sole point, foot at rest."""
    geometry = GEOMETRY[side]
    rotation, sensor_origin = geometry.sensor_in_sole[:3, :3], geometry.sensor_in_sole[:3, 3]
    force_sole = np.array([0.0, 0.0, fz])
    torque_sole = np.cross(np.array([*zmp_in_sole, 0.0]) - sensor_origin, force_sole)
    weight = rotation.T @ (SOLES[side][:3, :3].T @ np.array([0.0, 0.0, -geometry.mass_below_sensor * G]))
    return np.concatenate([rotation.T @ force_sole + weight,
                           rotation.T @ torque_sole + np.cross(geometry.com_below_sensor_in_sensor, weight)])


def world_point(side: str, xy: tuple[float, float]) -> np.ndarray:
    """A sole point in the world (W) frame."""
    return (SOLES[side] @ np.array([xy[0], xy[1], 0.0, 1.0]))[:3]


class Harness:
    """The node under test and a probe that feeds it and records what it publishes."""

    def __init__(self, context: Any, overrides: dict[str, Any] | None = None) -> None:
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from geometry_msgs.msg import PointStamped, PolygonStamped, WrenchStamped
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.parameter import Parameter
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64, Float64MultiArray
        from visualization_msgs.msg import MarkerArray

        from humanoid_balance.nodes.zmp_estimator import ZmpEstimatorNode

        # a loaded machine may hand over samples late: no sample is too old here (the loop's
        # tests check sensor_timeout on a manual clock)
        self.overrides = {"diagnostics_rate": 10.0, "sensor_timeout": 30.0,
                          "joint_state_timeout": 30.0, **(overrides or {})}
        params = [Parameter(k, value=v) for k, v in self.overrides.items()]
        self.node = ZmpEstimatorNode(context=context, parameter_overrides=params)
        self.probe = rclpy.create_node("zmp_probe", context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.executor.add_node(self.probe)
        self.zmp: list[Any] = []
        self.foot: dict[str, list[Any]] = {s: [] for s in SIDES}
        self.polygons: list[Any] = []
        self.margins: list[float] = []
        self.diagnostics: list[Any] = []
        self.markers: list[Any] = []
        sub = self.probe.create_subscription
        sub(PointStamped, "/zmp", self.zmp.append, 100)
        for s in SIDES:
            sub(PointStamped, f"/{s}_foot/zmp", self.foot[s].append, 100)
        sub(PolygonStamped, "/support_polygon", self.polygons.append, 100)
        sub(Float64, "/zmp/stability_margin", lambda m: self.margins.append(m.data), 100)
        sub(DiagnosticArray, "/diagnostics", self.diagnostics.append, 100)
        sub(MarkerArray, "/zmp/markers", self.markers.append, 100)
        self.pub_joints = self.probe.create_publisher(JointState, "/joint_states", 100)
        self.pub_ft = {s: self.probe.create_publisher(WrenchStamped, f"/{s}_foot/ft", 100) for s in SIDES}
        self.pub_fsr = {s: self.probe.create_publisher(Float64MultiArray, f"/{s}_foot/fsr", 100)
                        for s in SIDES}
        self.types = (WrenchStamped, JointState, Float64MultiArray)
        #: (stamp, wrenches) of every sample published
        self.sent: list[tuple[int, dict[str, np.ndarray]]] = []

    def joint_state(self, stamp: int) -> Any:
        from humanoid_balance.nodes.common import stamp_msg

        js = self.types[1](name=list(NAMES), position=[0.0] * len(NAMES))
        js.header.stamp = stamp_msg(stamp)
        return js

    def wrench_msg(self, side: str, stamp: int, value: np.ndarray) -> Any:
        from humanoid_balance.nodes.common import stamp_msg

        msg = self.types[0]()
        msg.header.stamp, msg.header.frame_id = stamp_msg(stamp), f"{side}_foot_ft"
        (msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z, msg.wrench.torque.x,
         msg.wrench.torque.y, msg.wrench.torque.z) = (float(v) for v in value)
        return msg

    def publish(self, wrenches: dict[str, np.ndarray]) -> None:
        """One sample: joint states, then each foot's wrench (or FSR forces), all with one stamp."""
        stamp = self.probe.get_clock().now().nanoseconds
        self.pub_joints.publish(self.joint_state(stamp))
        for side, value in wrenches.items():
            if value.shape == (6,):
                self.pub_ft[side].publish(self.wrench_msg(side, stamp, value))
            else:
                self.pub_fsr[side].publish(self.types[2](data=[float(v) for v in value]))
        self.sent.append((stamp, wrenches))

    def run(self, wrenches: dict[str, np.ndarray], samples: int, period: float = 0.004) -> None:
        """Publish ``samples`` samples ``period`` apart, spinning in between."""
        for _ in range(samples):
            self.publish(wrenches)
            self.settle(period)

    def settle(self, seconds: float = 0.3, until: Callable[[], bool] | None = None) -> None:
        """Spin without publishing (until ``until()``, at most ``seconds``)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not (until and until()):
            self.executor.spin_once(timeout_sec=0.01)

    def values(self) -> dict[str, str]:
        """The key values of the newest /diagnostics."""
        assert self.diagnostics, "no /diagnostics received"
        return {kv.key: kv.value for kv in self.diagnostics[-1].status[0].values}

    def close(self) -> None:
        """Destroy both nodes."""
        self.executor.shutdown()
        self.node.destroy_node()
        self.probe.destroy_node()


@pytest.fixture
def harness(rclpy_context: Any) -> Any:
    made: list[Harness] = []

    def make(overrides: dict[str, Any] | None = None) -> Harness:
        h = Harness(rclpy_context, overrides)
        made.append(h)
        feet = h.pub_fsr if h.overrides.get("sensor_type") == "fsr" else h.pub_ft
        inputs = [h.pub_joints, *feet.values()]
        h.settle(WAIT_S, until=lambda: all(p.get_subscription_count() > 0 for p in inputs) and all(
            h.probe.count_publishers(t) > 0 for t in ("/zmp", "/diagnostics", "/zmp/markers")))
        h.settle(0.2)  # the other side of each match
        return h

    yield make
    for h in made:
        h.close()


def _xy(point: Any) -> list[float]:
    return [point.point.x, point.point.y]


def _level(status: Any) -> int:
    level = status.level
    return level[0] if isinstance(level, (bytes, bytearray)) else int(level)


def _offline(h: Harness) -> Any:
    """The loop's estimate of the last sample ``h`` sent, computed here without ROS."""
    clock = ManualClock()
    loop = ZmpLoop(config_from_values(h.overrides), clock, model=MODEL)
    results = []
    for stamp, wrenches in h.sent:
        clock.t_ns = stamp
        loop.on_joint_state(stamp, NAMES, np.zeros(len(NAMES)))
        for side, value in wrenches.items():
            results += loop.on_foot(side, WrenchReading(stamp, f"{side}_foot_ft", tuple(value)))
    return results[-1]


def test_outputs_are_the_loops_estimate_written_as_messages(harness: Any) -> None:
    """/zmp, the feet's ZMPs, the polygon and the margin, written as bytes, arrive as proper
    messages in world_frame_id, equal to the loop's estimate of the same stamped inputs."""
    h = harness()
    left, right = (0.03, -0.01), (-0.02, 0.015)
    h.run({"left": sensor_wrench("left", left, 300.0), "right": sensor_wrench("right", right, 200.0)},
          10)
    h.settle(WAIT_S, until=lambda: len(h.zmp) >= 10 and len(h.margins) >= 10)
    assert len(h.zmp) == 10
    result = _offline(h)
    out = result.output
    last = h.zmp[-1]
    assert (last.header.frame_id, last.point.z) == ("world", float(out.zmp_in_world[2]))
    assert _xy(last) == [float(v) for v in out.zmp_in_world[:2]]
    expected = (300.0 * world_point("left", left) + 200.0 * world_point("right", right)) / 500.0
    np.testing.assert_allclose(_xy(last), expected[:2], atol=1e-9)
    for side in SIDES:
        assert h.foot[side][-1].header.stamp == last.header.stamp
        assert _xy(h.foot[side][-1]) == [float(v) for v in out.foot_zmps_in_world[side][:2]]
    polygon = h.polygons[-1]
    assert polygon.header.frame_id == "world"
    assert [(p.x, p.y, p.z) for p in polygon.polygon.points] == \
        [(float(np.float32(x)), float(np.float32(y)), 0.0) for x, y in out.polygon]
    assert h.margins[-1] == float(out.margin)


def test_markers_show_zmp_feet_polygon_com_and_colour_by_margin(harness: Any) -> None:
    """The MarkerArray has the ZMP, feet ZMPs, polygon strip and CoM projection; green well inside."""
    from visualization_msgs.msg import Marker

    h = harness({"marker_rate": 1000.0})
    h.run({s: sensor_wrench(s, (0.0, 0.0), 270.0) for s in SIDES}, 5)
    h.settle(WAIT_S, until=lambda: len(h.markers) >= 5)
    markers = {m.ns: m for m in h.markers[-1].markers}
    assert {"zmp", "left_foot_zmp", "right_foot_zmp", "support_polygon",
            "com_ground_projection", "margin"} <= set(markers)
    assert markers["support_polygon"].type == Marker.LINE_STRIP
    assert len(markers["support_polygon"].points) == 5  # closed strip of 4 corners
    com = MODEL.com(MODEL.neutral())
    assert markers["com_ground_projection"].pose.position.x == pytest.approx(com[0], abs=1e-9)
    assert markers["zmp"].color.g > 0.5 and markers["zmp"].color.r < 0.5  # green: well inside
    assert markers["margin"].text == "margin 90 mm"


def test_margin_colours() -> None:
    """Red outside (below margin_error), yellow near an edge (below margin_warn), green inside."""
    from humanoid_balance.nodes.zmp_markers import GREEN, RED, YELLOW, margin_colour

    config = config_from_values({})
    assert margin_colour(-0.001, config) is RED
    assert margin_colour(0.02, config) is YELLOW
    assert margin_colour(0.05, config) is GREEN


def test_no_foot_in_contact_publishes_no_zmp_and_says_so(harness: Any) -> None:
    """Robot lifted (only the feet's weight on the sensors): no /zmp, /diagnostics WARN saying why."""
    h = harness({"diagnostics_rate": 50.0})
    h.run({s: sensor_wrench(s, (0.0, 0.0), 0.0) for s in SIDES}, 50)
    h.settle(WAIT_S, until=lambda: bool(h.diagnostics) and h.values()["no_contact"] == "50")
    assert h.zmp == []
    live = [st for d in h.diagnostics for st in d.status if _level(st) != 3]  # while data flowed
    assert live and all(st.message == "no foot in contact: no ZMP" for st in live[-3:])
    assert all(_level(st) == 1 and st.hardware_id == "ft" for st in live[-3:])
    assert h.values()["no_contact"] == "50"


def _zero(h: Harness, service: str) -> Any:
    from std_srvs.srv import Trigger

    client = h.probe.create_client(Trigger, f"/zmp_estimator/{service}")
    assert client.wait_for_service(timeout_sec=2.0)
    future = client.call_async(Trigger.Request())
    h.executor.spin_until_future_complete(future, timeout_sec=2.0)
    assert future.result() is not None
    return future.result()


def test_zero_sensors_refuses_when_a_foot_is_loaded(harness: Any) -> None:
    """~/zero_sensors with the robot standing: refused, the reason names the loaded foot."""
    h = harness()
    h.run({s: sensor_wrench(s, (0.0, 0.0), 270.0) for s in SIDES}, 30)
    response = _zero(h, "zero_sensors")
    assert not response.success
    assert "left foot carries" in response.message and "lift the foot" in response.message


def test_zero_sensors_removes_offsets_and_keeps_the_foot_weight(harness: Any) -> None:
    """Feet lifted with sensor offsets: zeroing removes the offsets; the loaded ZMP is then exact."""
    h = harness()
    offsets = {"left": np.array([3.0, -2.0, 6.0, 0.4, -0.3, 0.1]),
               "right": np.array([-1.0, 4.0, -5.0, -0.2, 0.5, 0.05])}
    h.run({s: sensor_wrench(s, (0.0, 0.0), 0.0) + offsets[s] for s in SIDES}, 40)
    response = _zero(h, "zero_sensors")
    assert response.success, response
    assert response.message.startswith("zeroed left (force offset [3.0, -2.0, 6.0] N), right")
    point = (0.05, -0.02)
    h.run({s: sensor_wrench(s, point, 270.0) + offsets[s] for s in SIDES}, 10)
    h.settle(WAIT_S, until=lambda: len(h.foot["left"]) >= 10)
    np.testing.assert_allclose(_xy(h.foot["left"][-1]), world_point("left", point)[:2], atol=1e-9)


def test_unknown_sensor_type_is_refused(rclpy_context: Any) -> None:
    """sensor_type other than ft/fsr: the node refuses to start, naming the choices."""
    from rclpy.parameter import Parameter

    from humanoid_balance.exceptions import HumanoidBalanceError
    from humanoid_balance.nodes.zmp_estimator import ZmpEstimatorNode

    with pytest.raises(HumanoidBalanceError, match="sensor_type='fts'"):
        ZmpEstimatorNode(context=rclpy_context, parameter_overrides=[Parameter("sensor_type", value="fts")])


def _big_endian_wrench(stamp_ns: int, frame: str, values: np.ndarray) -> bytes:
    """A WrenchStamped as big-endian CDR (another middleware's bytes): rclpy reads it, cdr does not."""
    encoded = frame.encode() + b"\x00"
    data = b"\x00\x00\x00\x00" + struct.pack(">iII", stamp_ns // 10**9, stamp_ns % 10**9, len(encoded))
    data += encoded
    return data + b"\x00" * (-(len(data) - 4) % 8) + struct.pack(">6d", *values)


def test_typed_little_and_big_endian_inputs_give_one_zmp(harness: Any) -> None:
    """A sample sent as little-endian CDR (rclpy's), as raw little-endian bytes or as big-endian
    bytes: the same ZMP."""
    from rclpy.serialization import serialize_message

    h = harness()
    wrenches = {"left": sensor_wrench("left", (0.03, -0.01), 300.0),
                "right": sensor_wrench("right", (-0.02, 0.015), 200.0)}
    for encoding in ("typed", "little", "big"):
        stamp = h.probe.get_clock().now().nanoseconds
        joints = h.joint_state(stamp)
        h.pub_joints.publish(joints if encoding == "typed" else serialize_message(joints))
        for side, values in wrenches.items():
            msg = h.wrench_msg(side, stamp, values)
            h.pub_ft[side].publish({"typed": msg, "little": serialize_message(msg),
                                    "big": _big_endian_wrench(stamp, f"{side}_foot_ft", values)}[encoding])
        count = len(h.zmp)
        h.settle(WAIT_S, until=lambda: len(h.zmp) > count)  # noqa: B023 (called in this iteration)
    assert len(h.zmp) == 3
    expected = (300.0 * world_point("left", (0.03, -0.01))
                + 200.0 * world_point("right", (-0.02, 0.015))) / 500
    np.testing.assert_allclose(_xy(h.zmp[0]), expected[:2], atol=1e-9)
    assert _xy(h.zmp[1]) == _xy(h.zmp[0]) and _xy(h.zmp[2]) == _xy(h.zmp[0])


#: bytes neither humanoid_balance.cdr nor rclpy reads: 4 bytes that announce padding (rclpy
#: would read past them), cut short, a length that runs past the end
UNREADABLE = [b"\x00\x01\x00\x01", b"\x00\x01\x00\x03", b"\x00\x01",
              b"\x00\x01\x00\x00" + bytes(8) + b"\xff\xff\xff\x7f"]


def test_unreadable_raw_inputs_are_dropped_and_counted(harness: Any) -> None:
    """Unreadable bytes on /left_foot/ft and /joint_states (and a string without its NUL) are
    dropped and counted as dropped_unreadable on /diagnostics; good samples go on."""
    from rclpy.serialization import serialize_message

    h = harness()
    for data in UNREADABLE:
        h.pub_ft["left"].publish(data)
        h.pub_joints.publish(data)
    joints = bytearray(serialize_message(h.types[1](name=["a"])))
    joints[29] = ord("x")  # the NUL of "a"
    h.pub_joints.publish(bytes(joints))
    no_nul = bytearray(serialize_message(h.wrench_msg("left", 0, np.zeros(6))))
    no_nul[16 + len("left_foot_ft")] = ord("x")
    h.pub_ft["left"].publish(bytes(no_nul))
    expected = str(2 * len(UNREADABLE) + 2)
    h.settle(WAIT_S, until=lambda: bool(h.diagnostics) and h.values()["dropped_unreadable"] == expected)
    assert h.values()["dropped_unreadable"] == expected
    h.run({s: sensor_wrench(s, (0.0, 0.0), 300.0) for s in SIDES}, 20)
    h.settle(WAIT_S, until=lambda: bool(h.zmp))
    assert h.zmp, "no ZMP after the unreadable inputs"


def test_fsr_arrays_big_endian_and_unreadable(harness: Any) -> None:
    """FSR mode: big-endian Float64MultiArrays (rclpy reads them) give the FSR-weighted ZMP;
    unreadable bytes on /left_foot/fsr are counted as dropped_unreadable."""
    h = harness({"sensor_type": "fsr"})
    forces = (100.0, 50.0, 50.0, 70.0)
    # no dimension, data_offset 0, 4 values aligned to 8 from the payload's start
    data = b"\x00\x00\x00\x00" + struct.pack(">III", 0, 0, 4) + bytes(4) + struct.pack(">4d", *forces)
    for bad in UNREADABLE:
        h.pub_fsr["left"].publish(bad)
    # an array pair, stamped on arrival, waits joint_state_wait of later arrivals for a joint
    # state stamped after it: pairs are sent until some come out
    deadline = time.monotonic() + WAIT_S
    while len(h.zmp) < 3 and time.monotonic() < deadline:
        h.pub_joints.publish(h.joint_state(h.probe.get_clock().now().nanoseconds))
        for side in SIDES:
            h.pub_fsr[side].publish(data)
        h.settle(0.004)
    h.settle(WAIT_S, until=lambda: bool(h.diagnostics)
             and h.values()["dropped_unreadable"] == str(len(UNREADABLE)))
    assert len(h.zmp) >= 3
    pads = np.array([[0.09, 0.05], [0.09, -0.05], [-0.09, 0.05], [-0.09, -0.05]])
    local = np.array(forces) @ pads / sum(forces)
    expected = (world_point("left", tuple(local)) + world_point("right", tuple(local))) / 2
    np.testing.assert_allclose(_xy(h.zmp[-1]), expected[:2], atol=1e-9)
    assert h.values()["dropped_unreadable"] == str(len(UNREADABLE))
    assert h.diagnostics[-1].status[0].hardware_id == "fsr"
