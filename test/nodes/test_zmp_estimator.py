"""The zmp_estimator node in-process on loopback DDS, fed synthetic foot wrenches with a known ZMP.

The wrenches are built by hand here: a ground force ``fz`` at a chosen point of
the sole (so the true ZMP is that point), moved to the sensor frame, plus the
weight of the foot below the sensor (mass and centre of mass read from the
URDF's inertial tags by ``foot_geometry_from_model``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.zmp import foot_geometry_from_model, stability_margin, support_polygon
from humanoid_balance.resources import urdf_path

pytestmark = pytest.mark.ros

SIDES = ("left", "right")
SOLE = np.array([[0.11, 0.06], [-0.11, 0.06], [-0.11, -0.06], [0.11, -0.06]])
#: the FSR pads, where the feet touch the ground: the support polygon's points (core/support.py)
PADS = np.array([[0.09, 0.05], [0.09, -0.05], [-0.09, 0.05], [-0.09, -0.05]])
G = 9.81


def _model() -> RobotModel:
    return RobotModel(urdf_path("humanoid"), world_frame="W")


MODEL = _model()
Q0 = MODEL.neutral()
SOLES = {s: MODEL.frame_transform(f"{s}_sole", Q0) for s in SIDES}
GEOMETRY = {s: foot_geometry_from_model(MODEL, sensor_frame=f"{s}_foot_ft", sole_frame=f"{s}_sole",
                                        foot_link=f"{s}_foot", sole_corners=SOLE) for s in SIDES}


def sensor_wrench(side: str, zmp_in_sole: tuple[float, float], fz: float) -> np.ndarray:
    """What the ankle sensor reads (sensor frame) for ground force fz at a sole point, foot at rest."""
    geometry = GEOMETRY[side]
    sole_from_sensor = geometry.sensor_in_sole
    rotation = sole_from_sensor[:3, :3]
    sensor_origin = sole_from_sensor[:3, 3]
    point = np.array([zmp_in_sole[0], zmp_in_sole[1], 0.0])
    force_sole = np.array([0.0, 0.0, fz])
    torque_sole = np.cross(point - sensor_origin, force_sole)  # about the sensor origin
    force = rotation.T @ force_sole
    torque = rotation.T @ torque_sole
    # the foot's weight hangs on the sensor (world z is the sole's z when standing flat)
    weight = rotation.T @ (SOLES[side][:3, :3].T @ np.array([0.0, 0.0, -geometry.mass_below_sensor * G]))
    force = force + weight
    torque = torque + np.cross(geometry.com_below_sensor_in_sensor, weight)
    return np.concatenate([force, torque])


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

        params = [Parameter(k, value=v) for k, v in {"diagnostics_rate": 10.0, **(overrides or {})}.items()]
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
        self.wrench_classes = (WrenchStamped, JointState, Float64MultiArray)
        self.frames = {s: f"{s}_foot_ft" for s in SIDES}
        self.silent: set[str] = set()
        self.stamp_shift_ns = 0  # added to the probe's clock in every stamp

    def publish(self, wrenches: dict[str, np.ndarray]) -> None:
        """One sample: joint states, then each foot's wrench (or FSR forces), all with one stamp."""
        wrench_stamped, joint_state, fsr_array = self.wrench_classes
        from humanoid_balance.nodes.common import stamp_msg

        stamp = stamp_msg(self.probe.get_clock().now().nanoseconds + self.stamp_shift_ns)
        js = joint_state()
        js.header.stamp = stamp
        js.name = list(MODEL.joint_names)
        js.position = [0.0] * len(js.name)
        self.pub_joints.publish(js)
        for side, value in wrenches.items():
            if side in self.silent:
                continue
            if value.shape == (6,):
                msg = wrench_stamped()
                msg.header.stamp = stamp
                msg.header.frame_id = self.frames[side]
                (msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z, msg.wrench.torque.x,
                 msg.wrench.torque.y, msg.wrench.torque.z) = (float(v) for v in value)
                self.pub_ft[side].publish(msg)
            else:
                self.pub_fsr[side].publish(fsr_array(data=[float(v) for v in value]))

    def run(self, wrenches: Callable[[], dict[str, np.ndarray]] | dict[str, np.ndarray], samples: int,
            period: float = 0.004) -> None:
        """Publish ``samples`` samples ``period`` apart, spinning in between."""
        for _ in range(samples):
            self.publish(wrenches() if callable(wrenches) else wrenches)
            deadline = time.monotonic() + period
            while time.monotonic() < deadline:
                self.executor.spin_once(timeout_sec=0.001)

    def settle(self, seconds: float = 0.3) -> None:
        """Spin without publishing."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.01)

    def last_status(self) -> Any:
        """The newest diagnostic status of the node."""
        assert self.diagnostics, "no /diagnostics received"
        return self.diagnostics[-1].status[0]

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
        h.settle(0.3)  # discovery between the two nodes
        return h

    yield make
    for h in made:
        h.close()


def _xy(point: Any) -> np.ndarray:
    return np.array([point.point.x, point.point.y])


def _level(status: Any) -> int:
    level = status.level
    return level[0] if isinstance(level, (bytes, bytearray)) else int(level)


def test_double_support_zmp_is_the_force_weighted_mean_of_the_feet(harness: Any) -> None:
    """Both feet loaded at known points: /zmp is their force-weighted mean, feet ZMPs are the points."""
    h = harness()
    left, right = (0.03, -0.01), (-0.02, 0.015)
    h.run({"left": sensor_wrench("left", left, 300.0), "right": sensor_wrench("right", right, 200.0)}, 20)
    h.settle(0.1)
    assert len(h.zmp) >= 15
    expected = (300.0 * world_point("left", left) + 200.0 * world_point("right", right)) / 500.0
    np.testing.assert_allclose(_xy(h.zmp[-1]), expected[:2], atol=1e-9)
    np.testing.assert_allclose(_xy(h.foot["left"][-1]), world_point("left", left)[:2], atol=1e-9)
    np.testing.assert_allclose(_xy(h.foot["right"][-1]), world_point("right", right)[:2], atol=1e-9)
    assert h.zmp[-1].header.frame_id == "world"


def test_double_support_polygon_and_margin(harness: Any) -> None:
    """The polygon is the hull of both feet's pads and the margin is the ZMP's distance to its edge."""
    h = harness()
    h.run({"left": sensor_wrench("left", (0.0, 0.0), 250.0),
           "right": sensor_wrench("right", (0.05, 0.0), 250.0)}, 10)
    h.settle(0.1)
    corners = np.vstack([(SOLES[s] @ np.c_[PADS, np.zeros(4), np.ones(4)].T).T[:, :2] for s in SIDES])
    hull = support_polygon(corners)
    polygon = np.array([[p.x, p.y] for p in h.polygons[-1].polygon.points])
    assert len(polygon) == 4
    assert sorted(map(tuple, np.round(polygon, 6))) == sorted(map(tuple, np.round(hull, 6)))
    zmp = _xy(h.zmp[-1])
    # the hull of two feet's 0.18 x 0.10 pads 0.4 m apart: the nearest edge is the front or the back one
    assert h.margins[-1] == pytest.approx(min(0.09 - zmp[0], zmp[0] + 0.09), abs=1e-6)
    assert h.margins[-1] == pytest.approx(stability_margin(zmp, hull), abs=1e-9)


def test_one_foot_unloaded_gives_the_other_feet_zmp_and_polygon(harness: Any) -> None:
    """Left foot lifted: ZMP = right foot's ZMP, polygon = right pads, margin to their hull's edge."""
    h = harness()
    point = (0.04, 0.02)
    h.run({"left": sensor_wrench("left", (0.0, 0.0), 0.0),
           "right": sensor_wrench("right", point, 540.0)}, 10)
    h.settle(0.1)
    zmp = _xy(h.zmp[-1])
    np.testing.assert_allclose(zmp, world_point("right", point)[:2], atol=1e-9)
    np.testing.assert_allclose(_xy(h.foot["right"][-1]), zmp, atol=1e-12)
    polygon = np.array([[p.x, p.y] for p in h.polygons[-1].polygon.points])
    right_corners = (SOLES["right"] @ np.c_[PADS, np.zeros(4), np.ones(4)].T).T[:, :2]
    assert sorted(map(tuple, np.round(polygon, 6))) == sorted(map(tuple, np.round(right_corners, 6)))
    assert h.margins[-1] == pytest.approx(min(0.09 - point[0], 0.05 - point[1]), abs=1e-9)
    assert not h.foot["left"], "a foot out of contact must not get a ZMP"


def test_no_foot_in_contact_publishes_no_zmp_and_says_so(harness: Any) -> None:
    """Robot lifted (only the feet's weight on the sensors): no /zmp, diagnostics say no foot in contact."""
    h = harness({"diagnostics_rate": 50.0})
    h.run({s: sensor_wrench(s, (0.0, 0.0), 0.0) for s in SIDES}, 50)
    assert h.zmp == []
    live = [st for d in h.diagnostics for st in d.status if _level(st) != 3]  # while data flowed
    assert live and all("no foot in contact" in st.message for st in live[-3:])
    assert all(_level(st) == 1 for st in live[-3:])


def test_nan_wrench_is_dropped_and_counted(harness: Any) -> None:
    """A NaN in a wrench: that sample gives no ZMP, the drop is counted, good samples go on."""
    h = harness()
    good = {side: sensor_wrench(side, (0.0, 0.0), 270.0) for side in SIDES}
    bad = dict(good)
    bad["left"] = good["left"].copy()
    bad["left"][4] = float("nan")
    h.run(good, 5)
    h.run(bad, 5)
    h.run({**good, "right": sensor_wrench("right", (0.0, 0.0), 270.0)}, 5)
    h.settle(0.2)
    assert h.node.counts["dropped_nonfinite"] == 5
    assert len(h.zmp) == 10
    assert all(np.all(np.isfinite(_xy(p))) for p in h.zmp)
    values = {kv.key: kv.value for kv in h.last_status().values}
    assert values["dropped_nonfinite"] == "5"


def test_infinite_fsr_force_is_dropped(harness: Any) -> None:
    """FSR mode: an infinite force drops the sample; good FSR samples give the FSR-weighted ZMP."""
    h = harness({"sensor_type": "fsr"})
    fsr = np.array([100.0, 50.0, 50.0, 70.0])
    h.run({"left": fsr, "right": fsr}, 5)
    h.run({"left": np.array([100.0, np.inf, 50.0, 70.0]), "right": fsr}, 3)
    h.settle(0.2)
    assert h.node.counts["dropped_nonfinite"] == 3
    positions = np.array([[0.09, 0.05], [0.09, -0.05], [-0.09, 0.05], [-0.09, -0.05]])
    local = fsr @ positions / fsr.sum()
    expected = (world_point("left", tuple(local)) + world_point("right", tuple(local))) / 2
    assert len(h.zmp) >= 4
    np.testing.assert_allclose(_xy(h.zmp[-1]), expected[:2], atol=1e-9)


def test_silent_sensor_goes_stale_and_no_zmp_is_built(harness: Any) -> None:
    """The right sensor stops: after the timeout diagnostics are STALE and no ZMP comes from old data."""
    h = harness({"sensor_timeout": 0.1})
    loaded = {s: sensor_wrench(s, (0.0, 0.0), 270.0) for s in SIDES}
    h.run(loaded, 10)
    h.settle(0.1)
    before = len(h.zmp)
    h.silent.add("right")
    h.run(loaded, 60)  # 0.24 s of left-only samples
    h.settle(0.15)
    assert len(h.zmp) == before
    status = h.last_status()
    assert _level(status) == 3  # STALE
    assert "right foot sensor silent" in status.message


def test_wrench_in_unknown_frame_is_an_error_naming_the_frame(harness: Any) -> None:
    """A wrench stamped in a frame the robot does not have: dropped, diagnostics ERROR name the frame."""
    h = harness()
    h.frames["left"] = "left_foot_ft_typo"
    h.run({s: sensor_wrench(s, (0.0, 0.0), 270.0) for s in SIDES}, 10)
    h.settle(0.15)
    assert h.zmp == []
    assert h.node.counts["dropped_frame"] == 10
    errors = [st for d in h.diagnostics for st in d.status if _level(st) == 2]
    assert errors and "'left_foot_ft_typo'" in errors[-1].message


def test_wrench_in_a_frame_of_the_foot_is_moved_to_the_sensor(harness: Any) -> None:
    """A wrench given in the sole frame (rigidly on the foot) gives the same ZMP as in the sensor frame."""
    h = harness()
    point = (0.03, 0.01)
    in_sensor = sensor_wrench("left", point, 300.0)
    move = np.linalg.inv(GEOMETRY["left"].sensor_in_sole)  # sensor <- sole
    rotation, origin = move[:3, :3].T, -move[:3, :3].T @ move[:3, 3]  # sole <- sensor
    force = rotation @ in_sensor[:3]
    torque = rotation @ in_sensor[3:] + np.cross(origin, force)
    h.frames["left"] = "left_sole"
    h.run({"left": np.concatenate([force, torque]), "right": sensor_wrench("right", point, 300.0)}, 10)
    h.settle(0.1)
    np.testing.assert_allclose(_xy(h.foot["left"][-1]), world_point("left", point)[:2], atol=1e-9)


def test_wrench_in_a_frame_of_another_link_is_refused(harness: Any) -> None:
    """A wrench in a frame not attached to that foot (the other foot's sensor) is refused by name."""
    h = harness()
    h.frames["left"] = "right_foot_ft"
    h.run({s: sensor_wrench(s, (0.0, 0.0), 270.0) for s in SIDES}, 5)
    h.settle(0.15)
    assert h.zmp == []
    errors = [st for d in h.diagnostics for st in d.status if _level(st) == 2]
    assert errors and "'right_foot_ft'" in errors[-1].message


def test_zero_sensors_refuses_when_a_foot_is_loaded(harness: Any) -> None:
    """~/zero_sensors with the robot standing: refused, the reason names the loaded foot."""
    from std_srvs.srv import Trigger

    h = harness()
    h.run({s: sensor_wrench(s, (0.0, 0.0), 270.0) for s in SIDES}, 30)
    response = h.node._zero(("left", "right"), Trigger.Request(), Trigger.Response())
    assert not response.success
    assert "left foot carries" in response.message and "lift the foot" in response.message
    assert np.all(h.node.estimator.offsets["left"] == 0.0)


def test_zero_sensors_removes_offsets_and_keeps_the_foot_weight(harness: Any) -> None:
    """Feet lifted with sensor offsets: zeroing removes the offsets; the loaded ZMP is then exact."""
    from std_srvs.srv import Trigger

    h = harness()
    offsets = {"left": np.array([3.0, -2.0, 6.0, 0.4, -0.3, 0.1]),
               "right": np.array([-1.0, 4.0, -5.0, -0.2, 0.5, 0.05])}
    h.run({s: sensor_wrench(s, (0.0, 0.0), 0.0) + offsets[s] for s in SIDES}, 40)
    # through the service, as a user calls it
    client = h.probe.create_client(Trigger, "/zmp_estimator/zero_sensors")
    assert client.wait_for_service(timeout_sec=2.0)
    future = client.call_async(Trigger.Request())
    h.executor.spin_until_future_complete(future, timeout_sec=2.0)
    response = future.result()
    assert response is not None and response.success, response
    for side in SIDES:
        np.testing.assert_allclose(h.node.estimator.offsets[side], offsets[side], atol=1e-9)
    point = (0.05, -0.02)
    h.run({s: sensor_wrench(s, point, 270.0) + offsets[s] for s in SIDES}, 10)
    h.settle(0.1)
    np.testing.assert_allclose(_xy(h.foot["left"][-1]), world_point("left", point)[:2], atol=1e-9)


def test_markers_show_zmp_feet_polygon_com_and_colour_by_margin(harness: Any) -> None:
    """The MarkerArray has the ZMP, feet ZMPs, polygon strip and CoM projection; red outside, green inside."""
    from visualization_msgs.msg import Marker

    h = harness({"marker_rate": 1000.0})
    h.run({s: sensor_wrench(s, (0.0, 0.0), 270.0) for s in SIDES}, 5)
    h.settle(0.1)
    markers = {m.ns: m for m in h.markers[-1].markers}
    assert {"zmp", "left_foot_zmp", "right_foot_zmp", "support_polygon",
            "com_ground_projection"} <= set(markers)
    assert markers["support_polygon"].type == Marker.LINE_STRIP
    assert len(markers["support_polygon"].points) == 5  # closed strip of 4 corners
    com = MODEL.com(Q0)
    assert markers["com_ground_projection"].pose.position.x == pytest.approx(com[0], abs=1e-9)
    assert markers["zmp"].color.g > 0.5 and markers["zmp"].color.r < 0.5  # green: well inside
    assert h.node.margin_colour(-0.001).r > 0.5 and h.node.margin_colour(-0.001).g < 0.5  # red outside
    assert h.node.margin_colour(0.02).r > 0.5 and h.node.margin_colour(0.02).g > 0.5  # yellow near


def test_foot_exactly_at_threshold_is_in_contact(harness: Any) -> None:
    """A foot with exactly the contact threshold of normal force counts as in contact."""
    h = harness({"contact_threshold": 25.0})
    h.run({"left": sensor_wrench("left", (0.01, 0.0), 25.0),
           "right": sensor_wrench("right", (0.0, 0.0), 400.0)}, 5)
    h.settle(0.1)
    assert h.foot["left"], "the foot at the threshold got no ZMP"
    np.testing.assert_allclose(_xy(h.foot["left"][-1]), world_point("left", (0.01, 0.0))[:2], atol=1e-9)


def test_unknown_sensor_type_is_refused(rclpy_context: Any) -> None:
    """sensor_type other than ft/fsr: the node refuses to start, naming the choices."""
    from rclpy.parameter import Parameter

    from humanoid_balance.exceptions import HumanoidBalanceError
    from humanoid_balance.nodes.zmp_estimator import ZmpEstimatorNode

    with pytest.raises(HumanoidBalanceError, match="sensor_type='fts'"):
        ZmpEstimatorNode(context=rclpy_context, parameter_overrides=[Parameter("sensor_type", value="fts")])


def test_stamps_going_back_restart_the_estimate(harness: Any) -> None:
    """Stamps jump 60 s back (a bag played again, a simulator reset): /zmp comes again from there."""
    h = harness({"future_tolerance": 100.0})  # the first stamps are 60 s ahead of the node clock
    wrenches = {"left": sensor_wrench("left", (0.0, 0.0), 300.0),
                "right": sensor_wrench("right", (0.0, 0.0), 300.0)}
    h.stamp_shift_ns = 60 * 10**9
    h.run(wrenches, 10)
    h.settle(0.1)
    before = len(h.zmp)
    assert before >= 5
    h.stamp_shift_ns = 0
    h.run(wrenches, 20)
    h.settle(0.1)
    assert len(h.zmp) - before >= 15
    assert h.zmp[-1].header.stamp.sec < h.zmp[before - 1].header.stamp.sec


def test_partial_joint_states_update_only_their_joints(harness: Any) -> None:
    """A joint-state message with the waist joints only keeps the legs of the last full message."""
    from sensor_msgs.msg import JointState

    h = harness()
    names = list(MODEL.joint_names)
    full = JointState(name=names, position=[0.0] * len(names))
    full.position[names.index("left_knee")] = 0.3
    full.header.stamp.sec = 10
    h.node._on_joint_states(full)
    waist = JointState(name=["waist_pitch", "waist_roll"], position=[0.1, -0.05])
    waist.header.stamp.sec = 11
    h.node._on_joint_states(waist)
    stamp, q = h.node.joint_states.at_or_before(11 * 10**9)
    assert stamp == 11 * 10**9
    assert q[MODEL.q_index(["left_knee"])][0] == 0.3
    assert list(q[MODEL.q_index(["waist_pitch", "waist_roll"])]) == [0.1, -0.05]


def _big_endian_wrench(stamp_ns: int, frame: str, values: np.ndarray) -> bytes:
    """A WrenchStamped as big-endian CDR (another middleware's bytes): rclpy reads it, cdr does not."""
    import struct

    encoded = frame.encode() + b"\x00"
    data = b"\x00\x00\x00\x00" + struct.pack(">iII", stamp_ns // 10**9, stamp_ns % 10**9, len(encoded))
    data += encoded
    return data + b"\x00" * (-(len(data) - 4) % 8) + struct.pack(">6d", *values)


def test_typed_little_and_big_endian_inputs_give_one_zmp(harness: Any) -> None:
    """A sample given as messages, as little-endian CDR bytes or as big-endian bytes: the same ZMP."""
    from geometry_msgs.msg import WrenchStamped
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState

    from humanoid_balance.nodes.common import stamp_msg

    h = harness()
    names = list(MODEL.joint_names)
    wrenches = {"left": sensor_wrench("left", (0.03, -0.01), 300.0),
                "right": sensor_wrench("right", (-0.02, 0.015), 200.0)}
    zmps = {}
    for k, encoding in enumerate(("typed", "little", "big")):
        stamp = h.probe.get_clock().now().nanoseconds + k
        joints = JointState(name=names, position=[0.0] * len(names))
        joints.header.stamp = stamp_msg(stamp)
        h.node._on_joint_states(joints if encoding == "typed" else serialize_message(joints))
        for side, values in wrenches.items():
            msg = WrenchStamped()
            msg.header.stamp, msg.header.frame_id = stamp_msg(stamp), f"{side}_foot_ft"
            (msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z, msg.wrench.torque.x,
             msg.wrench.torque.y, msg.wrench.torque.z) = (float(v) for v in values)
            data = {"typed": msg, "little": serialize_message(msg),
                    "big": _big_endian_wrench(stamp, f"{side}_foot_ft", values)}[encoding]
            h.node._on_wrench(side, data)
        assert h.node.last_output is not None and h.node.last_output.zmp_in_world is not None
        zmps[encoding] = h.node.last_output.zmp_in_world.copy()
    expected = (300.0 * world_point("left", (0.03, -0.01))
                + 200.0 * world_point("right", (-0.02, 0.015))) / 500
    np.testing.assert_allclose(zmps["typed"][:2], expected[:2], atol=1e-9)
    assert np.array_equal(zmps["little"], zmps["typed"]) and np.array_equal(zmps["big"], zmps["typed"])


def test_published_messages_read_back_as_built(harness: Any) -> None:
    """/zmp, the feet's ZMPs, the polygon and the margin, written as bytes, arrive as proper messages."""
    h = harness()
    h.run({s: sensor_wrench(s, (0.02, 0.01), 270.0) for s in SIDES}, 10)
    h.settle(0.1)
    out = h.node.last_output
    assert out is not None and out.zmp_in_world is not None and out.polygon is not None
    last = h.zmp[-1]
    assert (last.header.frame_id, last.point.z) == ("world", float(out.zmp_in_world[2]))
    assert [last.point.x, last.point.y] == [float(v) for v in out.zmp_in_world[:2]]
    assert h.foot["left"][-1].header.stamp == last.header.stamp
    polygon = h.polygons[-1]
    assert polygon.header.frame_id == "world"
    assert [(p.x, p.y, p.z) for p in polygon.polygon.points] == \
        [(float(np.float32(x)), float(np.float32(y)), 0.0) for x, y in out.polygon]
    assert h.margins[-1] == float(out.margin)


# --- the FSR arrays' join (ArrivalPairer) -----------------------------------------------------

MS = 1_000_000


def _joined_skews(lost: set[int], batches: int = 1, periods: int = 2000) -> tuple[list[int], Any]:
    """Both feet's arrays every 1 ms (payload: its period), the right's of ``lost`` never
    arriving, each foot's delivered in batches of ``batches`` periods (one foot's batch before
    the other's); the left-minus-right period of every join, and the pairer."""
    from humanoid_balance.nodes.zmp_estimator import ArrivalPairer

    pairer = ArrivalPairer(("left", "right"), max_age_ns=100 * MS)
    skews = []
    for start in range(0, periods, batches):
        for side in ("left", "right"):
            for k in range(start, start + batches):
                if side == "right" and k in lost:
                    continue
                joined = pairer.push(side, (start + batches) * MS, k)
                if joined is not None:
                    skews.append(joined.samples["left"][1] - joined.samples["right"][1])
    return skews, pairer


def test_lost_arrays_of_one_foot_are_resynchronised() -> None:
    """40 right arrays lost: the joins are 40 periods apart only until RESYNC_JOINS joins in a
    row left the left foot's arrays waiting, then period with period again (before: 40 ms apart
    for as long as the stream ran)."""
    from humanoid_balance.nodes.zmp_estimator import ArrivalPairer

    skews, pairer = _joined_skews(set(range(100, 140)))
    assert skews[:100] == [0] * 100
    shifted = [s for s in skews if s != 0]
    assert shifted == [-40] * ArrivalPairer.RESYNC_JOINS  # the left array 40 periods older
    assert skews[-1000:] == [0] * 1000
    assert pairer.resyncs == 1 and pairer.dropped == 40


def test_batches_of_one_foot_before_the_other_are_no_loss() -> None:
    """Each foot's arrays handed over in batches of 20 (the left's first): every array is joined
    with the other foot's of its period, nothing dropped, no resynchronisation."""
    skews, pairer = _joined_skews(set(), batches=20)
    assert len(skews) == 2000 and set(skews) == {0}
    assert pairer.resyncs == 0 and pairer.dropped == 0


def test_unreadable_raw_inputs_are_dropped_and_counted(harness: Any) -> None:
    """Raw bytes that neither humanoid_balance.cdr nor rclpy reads (4 bytes that announce
    padding: rclpy would read past them; cut short; a length that runs past the end; a string
    without its NUL) are dropped and counted as dropped_unreadable, on /diagnostics too; the
    node goes on with the next good sample."""
    from geometry_msgs.msg import WrenchStamped
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState

    h = harness()
    bad = [b"\x00\x01\x00\x01", b"\x00\x01\x00\x03", b"\x00\x01",
           b"\x00\x01\x00\x00" + bytes(8) + b"\xff\xff\xff\x7f"]
    for data in bad:
        h.node._on_wrench("left", data)
        h.node._on_fsr("right", data)
        h.node._on_joint_states(data)
    joints = bytearray(serialize_message(JointState(name=["a"])))
    joints[29] = ord("x")  # the NUL of "a"
    h.node._on_joint_states(bytes(joints))
    wrench = WrenchStamped()
    wrench.header.frame_id = "left_foot_ft"
    no_nul = bytearray(serialize_message(wrench))
    no_nul[16 + len("left_foot_ft")] = ord("x")
    h.node._on_wrench("left", bytes(no_nul))
    assert h.node.counts["dropped_unreadable"] == 3 * len(bad) + 2
    h.settle(0.3)
    values = {kv.key: kv.value for kv in h.last_status().values}
    assert values["dropped_unreadable"] == str(3 * len(bad) + 2)
    wrenches = {s: sensor_wrench(s, (0.0, 0.0), 300.0) for s in SIDES}
    h.run(wrenches, 20)
    assert h.zmp, "no ZMP after the unreadable inputs"


def test_big_endian_fsr_forces_are_still_read_by_rclpy(harness: Any) -> None:
    """A big-endian Float64MultiArray (another middleware's bytes) goes to rclpy and is read."""
    import struct

    h = harness({"sensor_type": "fsr"})
    # no dimension, data_offset 0, 4 values aligned to 8 from the payload's start
    data = b"\x00\x00\x00\x00" + struct.pack(">III", 0, 0, 4) + bytes(4) \
        + struct.pack(">4d", 1.0, 2.0, 3.0, 4.0)
    h.node._on_fsr("left", data)
    assert h.node.counts["dropped_unreadable"] == 0
