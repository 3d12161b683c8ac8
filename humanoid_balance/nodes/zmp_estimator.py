"""``zmp_estimator``: ZMP, support polygon and stability margin from the feet's sensors.

Thin: parameters -> :class:`~humanoid_balance.params.zmp_estimator.ZmpEstimatorConfig` ->
:class:`~humanoid_balance.core.zmp_loop.ZmpLoop` (checks, joins, joint states, drops, status,
zeroing: its docstring has the behaviour) -> messages, read from and written as CDR bytes
(:mod:`humanoid_balance.cdr`; bytes the readers leave to rclpy, big endian, rclpy reads).

- Inputs: ``/{side}_foot/ft`` (WrenchStamped, ``sensor_type: ft``) or ``/{side}_foot/fsr``
  (Float64MultiArray [N], ``fsr``); ``/joint_states`` for the sole poses through the URDF.
- Outputs in ``world_frame_id`` (the URDF's ``balance_frame``), stamped with the sample's
  stamp: ``/zmp``, ``/{side}_foot/zmp`` (PointStamped), ``/support_polygon`` (when it changes
  and at least every 0.1 s), ``/zmp/stability_margin`` (Float64 [m], positive inside),
  ``/zmp/markers`` (at ``marker_rate``); the per-foot ZMPs, polygon and markers only while
  heard. ``/diagnostics`` at ``diagnostics_rate`` from a steady-clock thread of its own
  (:class:`~humanoid_balance.nodes.common.PeriodicThread`): on time on simulation time and
  behind a saturated executor (a node-clock timer went silent for 16-25 s in the simulation
  graph). Dynamic parameters are taken by the executor (each message, and every second);
  the others are refused once the node runs (a plain node: restart it).
- ``~/zero_sensors``, ``~/zero_{side}_sensor`` (std_srvs/Trigger): zero the F/T sensors of
  lifted feet (refused, naming the foot and its load, for a loaded one).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PointStamped, PolygonStamped, WrenchStamped
from rclpy.clock import ROSClock
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64, Float64MultiArray
from std_srvs.srv import Trigger
from visualization_msgs.msg import MarkerArray

from humanoid_balance import cdr
from humanoid_balance.core.foot_sensors import FsrReading, WrenchReading
from humanoid_balance.core.zmp_loop import ERROR, ZmpLoop, ZmpResult
from humanoid_balance.exceptions import InvalidInputError
from humanoid_balance.nodes.common import (
    READ_AT_START,
    Listeners,
    LogThrottle,
    PeriodicThread,
    clock_ns,
    diagnostic_array,
    diagnostic_status,
    read_joint_state,
    run_node,
    stamp_ns,
    steady_timer,
)
from humanoid_balance.nodes.zmp_markers import zmp_markers
from humanoid_balance.params.ros import NodeParameters
from humanoid_balance.params.zmp_estimator import SPEC, ZmpEstimatorConfig, config_from_values

NODE_NAME = "zmp_estimator"
POLYGON_PERIOD_NS = 100_000_000  # /support_polygon at least every 0.1 s while a ZMP is published


def _wrench_reading(decoded: Any) -> WrenchReading:
    if isinstance(decoded, WrenchStamped):
        f, t = decoded.wrench.force, decoded.wrench.torque
        return WrenchReading(stamp_ns(decoded.header.stamp), decoded.header.frame_id,
                             (f.x, f.y, f.z, t.x, t.y, t.z))
    return WrenchReading(*decoded)


def _fsr_reading(decoded: Any) -> FsrReading:
    if isinstance(decoded, Float64MultiArray):
        return FsrReading(np.asarray(decoded.data, dtype=float))
    return FsrReading(decoded)


#: per sensor kind (``/{side}_foot/{kind}``): message type, CDR reader, reading of the message
INPUTS: dict[str, tuple[type, Callable[[bytes], Any], Callable[[Any], Any]]] = {
    "ft": (WrenchStamped, cdr.read_wrench_stamped, _wrench_reading),
    "fsr": (Float64MultiArray, cdr.read_float64_multi_array, _fsr_reading),
}


class _NodeClock:
    """The node's clock as :class:`~humanoid_balance.core.zmp_loop.LoopClock`."""

    def __init__(self, node: Node) -> None:
        self._clock = node.get_clock()

    def now_ns(self) -> int:
        return clock_ns(self._clock)

    def sim_time(self) -> bool:
        return isinstance(self._clock, ROSClock) and self._clock.ros_time_is_active


class ZmpEstimatorNode(Node):
    """The ``zmp_estimator`` node (see the module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self._configured = False
        self._diagnostics: PeriodicThread | None = None
        # not a lifecycle node: a parameter read at start-up changes with a restart only
        self.params = NodeParameters(self, SPEC, configured=lambda: self._configured,
                                     read_only_reason=READ_AT_START)
        self.config = config_from_values(self.params.read())  # ConfigurationError with the reason
        self._warnings = LogThrottle(self.get_logger(), 1.0)
        self._errors = LogThrottle(self.get_logger(), 1.0)
        self.loop = ZmpLoop(self.config, _NodeClock(self), log=self._log)
        self.sides = self.loop.sides
        self._last_marker_ns: int | None = None
        self._last_polygon: np.ndarray | None = None
        self._last_polygon_ns: int | None = None
        qos, sensor_qos = QoSProfile(depth=100), QoSProfile(depth=self.config.sensor_queue_depth)
        if self.config.best_effort_sensors:
            sensor_qos.reliability = ReliabilityPolicy.BEST_EFFORT
        self._joint_reader = cdr.JointStateReader()
        self._point_writer = cdr.PointStampedWriter(self.config.world_frame_id)
        self._polygon_writer = cdr.PolygonStampedWriter(self.config.world_frame_id)
        # /joint_states first: when both are ready, the executor takes it first (not relied on)
        self.create_subscription(JointState, "/joint_states", self._on_joint_states, sensor_qos,
                                 raw=True)
        kind = self.loop.sensors.kind
        self._input = INPUTS[kind]
        for side in self.sides:
            self.create_subscription(self._input[0], f"/{side}_foot/{kind}",
                                     partial(self._on_foot, side), sensor_qos, raw=True)
        self.pub_zmp = self.create_publisher(PointStamped, "/zmp", qos)
        self.pub_foot = {s: self.create_publisher(PointStamped, f"/{s}_foot/zmp", qos) for s in self.sides}
        self.pub_polygon = self.create_publisher(PolygonStamped, "/support_polygon", qos)
        self.pub_margin = self.create_publisher(Float64, "/zmp/stability_margin", qos)
        self.pub_markers = self.create_publisher(MarkerArray, "/zmp/markers", qos)
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", qos)
        #: the per-foot ZMPs, the polygon and the markers are written only while heard (/zmp and
        #: the margin always: arm_balance's guard and the operator rely on them)
        self.listeners = Listeners((*self.pub_foot.values(), self.pub_polygon, self.pub_markers))
        # parameters changed without samples coming apply within a second (the executor's thread)
        self._parameter_timer = steady_timer(self, 1.0, self._take_parameters)
        self.create_service(Trigger, "~/zero_sensors", partial(self._zero, self.sides))
        for side in self.sides:
            self.create_service(Trigger, f"~/zero_{side}_sensor", partial(self._zero, (side,)))
        self._apply(self.config)
        self._configured = True
        self.get_logger().info(
            f"{kind} mode, contact at {self.config.contact_threshold_n} N, world = "
            f"{self.config.balance_frame} of {self.loop.model.urdf_path}")

    # --- parameters, logs -----------------------------------------------------------

    def _apply(self, config: ZmpEstimatorConfig) -> None:
        """Take the dynamic parameters (all of them at start-up)."""
        self.config = config
        self.loop.set_config(config)
        rate = config.marker_rate_hz
        self.marker_period_ns = int(1e9 / rate) if rate > 0 else -1
        period_s = 1.0 / config.diagnostics_rate_hz
        if self._diagnostics is None:
            self._diagnostics = PeriodicThread("zmp-diagnostics", period_s, self.publish_diagnostics,
                                               self._diagnostics_failed)
        elif self._diagnostics.period_s != period_s:
            self._diagnostics.set_period(period_s)

    def _take_parameters(self) -> None:
        """Apply the dynamic changes accepted since the last message (``ros2 param set``)."""
        pending = self.params.take_pending()
        if pending:
            self._apply(config_from_values(self.params.values))
            self.get_logger().info("parameters changed: " + ", ".join(
                f"{k}={v!r}" for k, v in sorted(pending.items())))

    def _log(self, level: int, text: str) -> None:
        """A drop's or warning's text, at most one a second per level."""
        if level >= ERROR:
            self._errors.error(text)
        else:
            self._warnings.warning(text)

    # --- inputs -----------------------------------------------------------------

    def _on_joint_states(self, msg: bytes | JointState) -> None:
        """A ``/joint_states`` message: serialized (the subscription is raw) or a JointState."""
        self._take_parameters()
        try:
            sample = read_joint_state(self._joint_reader, msg)
        except InvalidInputError as error:  # bytes cdr refuses
            self.loop.drop("dropped_unreadable", f"/joint_states: {error}: ignored")
            return
        self._publish(self.loop.on_joint_state(*sample))

    def _on_foot(self, side: str, msg: Any) -> None:
        """A foot's message: serialized (the subscription is raw) or a message object."""
        self._take_parameters()
        _, reader, reading = self._input
        if isinstance(msg, bytes):
            try:
                msg = reader(msg)
            except InvalidInputError as error:  # the reader reads every encapsulation rclpy does
                self.loop.foot_unreadable(side, str(error))
                return
        self._publish(self.loop.on_foot(side, reading(msg)))

    # --- outputs -----------------------------------------------------------------

    def _publish(self, results: list[ZmpResult]) -> None:
        """/zmp and the margin of each result; the per-foot ZMPs, the polygon and the markers
        where heard."""
        for result in results:
            stamp, out = result.stamp_ns, result.output
            assert out.zmp_in_world is not None and out.polygon is not None and out.margin is not None
            heard = self.listeners.heard()
            self.pub_zmp.publish(self._point_writer.write(stamp, *map(float, out.zmp_in_world)))
            for side in self.sides:
                foot = out.foot_zmps_in_world[side]
                if foot is not None and self.pub_foot[side] in heard:
                    self.pub_foot[side].publish(self._point_writer.write(stamp, *map(float, foot)))
            # the polygon changes with the contacts and the leg joints only: sent when it
            # changes, and at least every POLYGON_PERIOD_NS so that late joiners get it
            if self.pub_polygon in heard and (
                    out.polygon is not self._last_polygon or self._last_polygon_ns is None or
                    not 0 <= stamp - self._last_polygon_ns < POLYGON_PERIOD_NS):
                self._last_polygon, self._last_polygon_ns = out.polygon, stamp
                self.pub_polygon.publish(self._polygon_writer.write(stamp, out.polygon))
            self.pub_margin.publish(cdr.float64_message(float(out.margin)))
            if self.marker_period_ns >= 0 and self.pub_markers in heard and (
                    self._last_marker_ns is None or
                    not 0 <= stamp - self._last_marker_ns < self.marker_period_ns):
                self._last_marker_ns = stamp
                self.pub_markers.publish(zmp_markers(
                    result, self.config, self.loop.model.com(result.q)))

    # --- diagnostics, zeroing ------------------------------------------------------------

    def publish_diagnostics(self) -> None:
        """Publish the loop's status on /diagnostics (from the diagnostics thread: it reads
        what the executor writes)."""
        status = self.loop.status()
        values = {**status.values, "unheard_topics": self.listeners.unheard()}
        self.pub_diag.publish(diagnostic_array(self, [diagnostic_status(
            f"{NODE_NAME}: ZMP", status.level, status.message, values,
            hardware_id=self.loop.sensors.kind)]))

    def _diagnostics_failed(self, exc: Exception) -> None:
        """A /diagnostics the thread could not publish: logged (throttled) while the node runs."""
        if self.context.ok():
            self._errors.error(f"/diagnostics not published: {exc!r}")

    def destroy_node(self) -> None:
        """Stop the diagnostics thread, then destroy the node (also one whose constructor
        failed before the thread was made)."""
        diagnostics = getattr(self, "_diagnostics", None)
        if diagnostics is not None:
            diagnostics.stop()
        super().destroy_node()

    def _zero(self, sides: Sequence[str], request: Trigger.Request,
              response: Trigger.Response) -> Trigger.Response:
        result = self.loop.zero(sides)
        response.success, response.message = result.success, result.message
        if result.success:
            self.get_logger().info(result.message)
        elif result.refused:
            self.get_logger().warning(result.message)
        return response


def main(args: Sequence[str] | None = None) -> int:
    """Console script ``zmp_estimator``."""
    return run_node(ZmpEstimatorNode, args, events=True, stop_signals=True, exit_process=True)


if __name__ == "__main__":
    raise SystemExit(main())
