"""The standing humanoid's sensors, published by the test's own probe, for ``zmp_estimator`` tests.

Unlike the feeder process (``feeder.py``), every message goes through the test
(stamps shifted, fields changed, messages dropped, rates changed), so
parameter and fault tests control the input sample by sample:
``/joint_states`` (30 joints at zero: feet flat) and each foot's F/T wrench or
FSR array for a ground force at a known sole point.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from process_harness import Probe, pump_publishing, sensor_wrench, standing_model

#: side -> (ZMP in the sole frame [m], ground force [N]): 500 N on the two feet
LOADS = {"left": ((0.03, -0.01), 300.0), "right": ((-0.02, 0.015), 200.0)}
#: the FSR pads in the sole frame [m] (the URDF's {side}_fsr_{0..3})
PADS = ((0.09, 0.05), (0.09, -0.05), (-0.09, 0.05), (-0.09, -0.05))


def fsr_forces(point: tuple[float, float], fz: float) -> list[float]:
    """Four pad forces [N] summing to ``fz`` whose centre of pressure is ``point`` (bilinear)."""
    x, y = point
    return [fz / 4.0 * (1 + x / px) * (1 + y / py) for px, py in PADS]


def stamp_ns(msg: Any) -> int:
    """A message's header stamp [ns]."""
    return int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec)


class Feet:
    """Joint states and both feet's sensors at ``rate_hz``, published from ``probe``.

    Attributes:
        sensor_type: ``ft`` (WrenchStamped) or ``fsr`` (Float64MultiArray).
        loads: side -> (point in the sole frame [m], ground force [N]).
        rate_hz: samples per second.
        paused: nothing is published.
        shift_ns: added to every stamp (joint states and wrenches).
        foot_shift_ns: side -> added to that foot's wrench stamps.
        joint_shift_ns: added to the joint states' stamps.
        mutate: (topic, message) -> message to send, or None to drop it.
        right_gap_s: the right foot's message goes this long after the left one's.
    """

    def __init__(self, probe: Probe, sensor_type: str = "ft", rate_hz: float = 200.0) -> None:
        from geometry_msgs.msg import WrenchStamped
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray

        self.probe, self.sensor_type = probe, sensor_type
        self.normal()
        self.rate_hz = rate_hz
        self.published = 0
        kind = WrenchStamped if sensor_type == "ft" else Float64MultiArray
        self.pub_joints = probe.node.create_publisher(JointState, "/joint_states", 100)
        self.pub_feet = {s: probe.node.create_publisher(kind, f"/{s}_foot/{sensor_type}", 100)
                         for s in ("left", "right")}
        self._next = time.monotonic()
        self._right_due: float | None = None
        self._right_msg: Any = None

    def normal(self) -> None:
        """Good input again: the standing loads, no shifts, no mutation, not paused."""
        self.loads = dict(LOADS)
        self.paused = False
        self.shift_ns = self.joint_shift_ns = 0
        self.foot_shift_ns = {"left": 0, "right": 0}
        self.mutate: Callable[[str, Any], Any] | None = None
        self.right_gap_s = 0.0
        self.rate_hz = 200.0

    def _send(self, topic: str, publisher: Any, msg: Any) -> None:
        if self.mutate is not None:
            msg = self.mutate(topic, msg)
        if msg is not None:
            publisher.publish(msg)

    def foot_message(self, side: str, stamp: int) -> Any:
        """One foot's message for its load, stamped ``stamp`` [ns] (F/T) or unstamped (FSR)."""
        from geometry_msgs.msg import WrenchStamped
        from std_msgs.msg import Float64MultiArray

        from humanoid_balance.nodes.common import stamp_msg

        point, fz = self.loads[side]
        if self.sensor_type == "fsr":
            return Float64MultiArray(data=fsr_forces(point, fz))
        msg = WrenchStamped()
        msg.header.stamp = stamp_msg(stamp)
        msg.header.frame_id = f"{side}_foot_ft"
        w = sensor_wrench(side, point, fz)
        f, t = msg.wrench.force, msg.wrench.torque
        f.x, f.y, f.z, t.x, t.y, t.z = (float(v) for v in w)
        return msg

    def publish_once(self) -> None:
        """One sample: joint states, then the feet (the right one ``right_gap_s`` later)."""
        from sensor_msgs.msg import JointState

        from humanoid_balance.nodes.common import stamp_msg

        if self._right_due is not None:  # the last sample's late right foot goes out first: a
            # loaded test process can come back after the next sample is due (never lose it)
            self._send(f"/right_foot/{self.sensor_type}", self.pub_feet["right"], self._right_msg)
            self._right_due = None
        now = self.probe.node.get_clock().now().nanoseconds + self.shift_ns
        js = JointState()
        js.header.stamp = stamp_msg(now + self.joint_shift_ns)
        js.name = list(standing_model().joint_names)
        js.position = [0.0] * len(js.name)
        self._send("/joint_states", self.pub_joints, js)
        for side in ("left", "right"):
            msg = self.foot_message(side, now + self.foot_shift_ns[side])
            if side == "right" and self.right_gap_s > 0:
                self._right_due, self._right_msg = time.monotonic() + self.right_gap_s, msg
            else:
                self._send(f"/{side}_foot/{self.sensor_type}", self.pub_feet[side], msg)
        self.published += 1

    def pump(self, seconds: float, until: Callable[[], bool] | None = None) -> bool:
        """Publish at ``rate_hz`` and spin the probe for ``seconds`` or until ``until()``."""
        return pump_publishing(self.probe.executor, seconds, until, self._publish_due)

    def _publish_due(self, now: float) -> float:
        """Publish what is due at ``now``; when the next publication is (monotonic s)."""
        if self._right_due is not None and now >= self._right_due:
            self._send(f"/right_foot/{self.sensor_type}", self.pub_feet["right"], self._right_msg)
            self._right_due = None
        if not self.paused and now >= self._next:
            self.publish_once()
            self._next = max(self._next + 1.0 / self.rate_hz, now)  # late: skip, no burst
        return self._next if self._right_due is None else min(self._next, self._right_due)

    def pump_until(self, condition: Callable[[], bool], timeout: float) -> bool:
        """:meth:`pump` until ``condition()`` (a DiagnosticsWatch's way of waiting)."""
        return self.pump(timeout, condition)

    def close(self) -> None:
        """Drop the publishers."""
        self.probe.node.destroy_publisher(self.pub_joints)
        for pub in self.pub_feet.values():
            self.probe.node.destroy_publisher(pub)


def world_zmp(loads: dict[str, tuple[tuple[float, float], float]] | None = None) -> np.ndarray:
    """The feet's force-weighted mean point (the ZMP of ``loads``) in the world frame [m]."""
    from process_harness import sole_point_in_world

    loads = LOADS if loads is None else loads
    touching = {s: v for s, v in loads.items() if v[1] > 0}
    total = sum(fz for _, fz in touching.values())
    return sum(fz * sole_point_in_world(s, xy) for s, (xy, fz) in touching.items()) / total
