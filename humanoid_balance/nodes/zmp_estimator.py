"""``zmp_estimator``: ZMP, support polygon and stability margin from the feet's sensors.

Thin: parameters -> :class:`~humanoid_balance.core.zmp.ZmpEstimator` -> messages.

- Inputs: ``/left_foot/ft`` and ``/right_foot/ft`` (WrenchStamped, ``sensor_type:
  ft``) or ``/left_foot/fsr`` and ``/right_foot/fsr`` (Float64MultiArray, newtons,
  ``sensor_type: fsr``); ``/joint_states`` for the sole poses through the URDF.
- The world frame is the balance frame ``W`` of the URDF (on the ground midway
  between the soles at the neutral pose), published as ``world_frame_id``: the
  node is for standing balance, where the feet do not move; the sole poses
  relative to ``W`` follow the leg joints.
- Synchronisation (:mod:`humanoid_balance.core.sync`): the two feet's F/T
  samples are joined by stamp (within ``sync_tolerance``); each joined sample
  waits until a joint state stamped at or after it has arrived (at most
  ``joint_state_wait``), and uses the newest joint state stamped at or before
  it. So the output depends on the stamps only, not on message arrival order:
  a replayed bag yields the live run's ZMPs exactly (with ``use_sim_time``
  a sample's age, ``sensor_timeout``, is counted from the newest joined
  sample, not from ``/clock``, which a loaded executor may take before the
  queued samples). FSR arrays have no
  header: each is stamped with the node clock on arrival, and the two feet's
  arrays are joined in arrival order (:class:`ArrivalPairer`: the n-th
  waiting array of one foot with the n-th of the other; the pair takes the
  later arrival's stamp), so a loaded machine that delivers the feet's arrays
  milliseconds apart, or one foot's in a batch before the other's, still
  joins every pair. Lost arrays of one foot leave the other's waiting after
  every join (the pairs that many periods apart); after
  :attr:`ArrivalPairer.RESYNC_JOINS` such joins in a row those waiting arrays are
  dropped and the feet joined period with period again (``fsr_resyncs`` on
  ``/diagnostics``, a warning).
- Foot geometry from the URDF alone (:mod:`humanoid_balance.core.support`):
  the FSR points are the frames ``{side}.fsr_frames``, the support polygon is
  the hull of the frames ``{side}.contact_frames`` of the feet in contact (the
  seed humanoid's FSR pads, where it touches the floor).
- Outputs (stamped with the sample's stamp): ``/zmp``, ``/left_foot/zmp``,
  ``/right_foot/zmp`` (PointStamped), ``/support_polygon`` (PolygonStamped,
  when it changes and at least every 0.1 s),
  ``/zmp/stability_margin`` (Float64, m, positive inside), ``/zmp/markers``
  (MarkerArray at ``marker_rate``), ``/diagnostics`` at ``diagnostics_rate`` on the steady
  clock, from a thread of its own (:class:`~humanoid_balance.nodes.common.PeriodicThread`):
  at its rate on simulation time and while the executor is behind its inputs. (A timer on
  the node clock went silent for 16-25 s, then sent dozens of statuses at once, in the
  simulation graph; a steady-clock timer in the executor still waited 3-5 s behind the
  queued samples on a saturated machine.) The dynamic parameters are taken by the executor
  (each sample, and every second without samples), never by that thread.
- Bad input is dropped, counted, logged (throttled) and named on
  ``/diagnostics`` for as long as it lasts: a non-finite wrench or FSR array,
  an FSR array of the wrong size, values so large that the ZMP overflows, a
  wrench in a frame that is not the foot's (nor rigidly attached to it), a
  stamp more than ``future_tolerance`` ahead of the node clock, samples older
  than ``sensor_timeout``, feet whose stamps do not pair, joint states that
  are bad or missing. While every sample of a diagnostics period was dropped
  the level is ERROR ("no ZMP: ..."), while some were WARN; a silent sensor
  (``sensor_timeout``) makes it STALE; no foot in contact: no ZMP, WARN.
- Parameters: :mod:`humanoid_balance.params.zmp_estimator` (``SPEC``); the
  dynamic ones (``ros2 param set``) apply from the next sample, the others are
  refused with the reason once the node runs: a plain node, not a lifecycle one, it reads
  them at start-up only (restart it with the new value).
- ``~/zero_sensors`` (std_srvs/Trigger) zeros both F/T sensors from the mean of
  the last ``zero_window`` seconds, keeping the weight of the foot below each
  sensor; it refuses, naming the foot and its load, when a foot is loaded.
  ``~/zero_left_sensor`` and ``~/zero_right_sensor`` zero one foot (lift it first).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Sequence
from functools import partial
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Point, PointStamped, PolygonStamped, WrenchStamped
from rclpy.clock import ROSClock
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import ColorRGBA, Float64, Float64MultiArray
from std_srvs.srv import Trigger
from visualization_msgs.msg import Marker, MarkerArray

from humanoid_balance import cdr
from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.support import OUTSIDE_POLYGON
from humanoid_balance.core.sync import SampleSet, SampleSynchronizer, StampedBuffer
from humanoid_balance.core.zmp import (
    SIDES,
    FootGeometry,
    FootSample,
    ZmpEstimator,
    ZmpOutput,
    foot_geometry_from_model,
    wrench_in_sole,
)
from humanoid_balance.exceptions import HumanoidBalanceError, InvalidInputError, UnknownFrameError
from humanoid_balance.nodes.common import (
    ERROR,
    OK,
    READ_AT_START,
    STALE,
    WARN,
    Listeners,
    LogThrottle,
    PeriodicThread,
    all_finite,
    clock_ns,
    deserialize_refused,
    diagnostic_array,
    diagnostic_status,
    read_joint_state,
    run_node,
    stamp_msg,
    stamp_ns,
    steady_timer,
)
from humanoid_balance.params.ros import NodeParameters
from humanoid_balance.params.zmp_estimator import SPEC
from humanoid_balance.resources import urdf_path as package_urdf_path

NODE_NAME = "zmp_estimator"
POLYGON_PERIOD_NS = 100_000_000  # /support_polygon at least every 0.1 s while a ZMP is published
GREEN = ColorRGBA(r=0.1, g=0.8, b=0.1, a=1.0)
YELLOW = ColorRGBA(r=0.95, g=0.8, b=0.1, a=1.0)
RED = ColorRGBA(r=0.9, g=0.1, b=0.1, a=1.0)
GREY = ColorRGBA(r=0.6, g=0.6, b=0.6, a=1.0)
#: the counters of dropped input (``counts``), each a reason a sample gave no ZMP
DROPS = ("dropped_nonfinite", "dropped_shape", "dropped_invalid", "dropped_frame", "dropped_stale",
         "dropped_future", "dropped_joint_states", "dropped_unreadable")


class ArrivalPairer:
    """Joins the two feet's unstamped samples (FSR arrays) in arrival order.

    The n-th waiting sample of each foot is joined with the n-th of the other
    (first in, first out), stamped with the later arrival: the executor may hand
    over one foot's arrays in a batch before the other's, and they still pair
    one to one. A sample waits at most ``max_age_ns`` (and at most ``depth``
    samples per foot); older ones are dropped (counted in ``dropped``): a foot
    whose arrays stop does not hold the other's, and old arrays are never
    joined to new ones. A lost array shifts the pairing by one sample (one FSR
    period): the other foot then has arrays left waiting after every join (a
    batch leaves some only until the other foot's batch comes). After
    :attr:`RESYNC_JOINS` joins in a row that leave the same foot's arrays
    waiting, those are dropped (counted in ``dropped`` and ``resyncs``): the next
    arrays of the two feet are joined again. Measured before this rule: 40 lost
    arrays of one foot kept the pairs 40 ms apart for as long as the stream ran.

    Args:
        sensors: the feet's keys.
        max_age_ns: how long a sample waits for the other foot's [ns].
        depth: samples kept per foot waiting for the other's.
    """

    #: joins in a row leaving the same foot's arrays waiting before they are dropped (50 ms at
    #: 1 kHz: far longer than a batch of one foot's arrays, which the other's batch clears)
    RESYNC_JOINS = 50

    def __init__(self, sensors: Sequence[Hashable], max_age_ns: int = 100_000_000,
                 depth: int = 100) -> None:
        self.sensors = tuple(sensors)
        self.max_age_ns = max_age_ns
        self.depth = depth
        self._waiting: dict[Hashable, deque[tuple[int, Any]]] = {s: deque() for s in self.sensors}
        #: samples dropped before their partner came
        self.dropped = 0
        #: times the waiting arrays of one foot were dropped to join the feet period with period
        self.resyncs = 0
        self._backlog: tuple[Hashable | None, int] = (None, 0)  # (foot, joins in a row)

    def reset(self) -> None:
        """Forget the waiting samples (the counter is kept)."""
        for queue in self._waiting.values():
            queue.clear()

    def push(self, sensor: Hashable, arrival_ns: int, payload: Any) -> SampleSet | None:
        """Add one sample, stamped on arrival [ns]; returns the set it completes, if any."""
        for waiting in self._waiting.values():
            while waiting and arrival_ns - waiting[0][0] > self.max_age_ns:
                waiting.popleft()
                self.dropped += 1
        queue = self._waiting[sensor]
        queue.append((arrival_ns, payload))
        if len(queue) > self.depth:
            queue.popleft()
            self.dropped += 1
        if not all(self._waiting.values()):
            return None
        chosen = {s: q.popleft() for s, q in self._waiting.items()}
        self._track_backlog()
        return SampleSet(max(stamp for stamp, _ in chosen.values()), chosen)

    def _track_backlog(self) -> None:
        """After a join: count the joins in a row that leave one foot's arrays waiting; drop
        them after :attr:`RESYNC_JOINS` (a loss of the other foot's, not a batch)."""
        left = [s for s, q in self._waiting.items() if q]
        if len(left) != 1:
            self._backlog = (None, 0)
            return
        foot, joins = self._backlog
        joins = joins + 1 if foot == left[0] else 1
        if joins < self.RESYNC_JOINS:
            self._backlog = (left[0], joins)
            return
        queue = self._waiting[left[0]]
        self.dropped += len(queue)
        queue.clear()
        self.resyncs += 1
        self._backlog = (None, 0)


class ZmpEstimatorNode(Node):
    """The ``zmp_estimator`` node (see the module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self._configured = False
        # not a lifecycle node: a parameter read at start-up changes with a restart only
        self.params = NodeParameters(self, SPEC, configured=lambda: self._configured,
                                     read_only_reason=READ_AT_START)
        v = self.params.read()  # ConfigurationError with the reason
        self.sensor_type = str(v["sensor_type"])
        path = str(v["urdf_path"]) or str(package_urdf_path("humanoid"))
        self.model = RobotModel(path, world_frame=str(v["balance_frame"]))
        self.model.gravity = float(v["gravity"])
        self.q = self.model.neutral()
        self.frames = {s: {k: str(v[f"{s}.{k}"]) for k in ("sensor_frame", "sole_frame", "foot_link")}
                       for s in SIDES}
        feet: dict[str, FootGeometry] = {}
        for side in SIDES:
            frames = self.frames[side]
            for frame in frames.values():
                if not self.model.model.existFrame(frame):
                    raise UnknownFrameError(frame, self.model.name)
            feet[side] = foot_geometry_from_model(
                self.model, sensor_frame=frames["sensor_frame"], sole_frame=frames["sole_frame"],
                foot_link=frames["foot_link"], contact_frames=v[f"{side}.contact_frames"],
                fsr_frames=v[f"{side}.fsr_frames"])
        self.estimator = ZmpEstimator(
            feet, sensor_type=self.sensor_type, contact_threshold=float(v["contact_threshold"]),
            hysteresis=float(v["contact_hysteresis"]), gravity=float(v["gravity"]))
        self.world_frame_id = str(v["world_frame_id"])
        self.sync = SampleSynchronizer(SIDES, 0)
        self.pairer = ArrivalPairer(SIDES)
        self.joint_states: StampedBuffer[np.ndarray] = StampedBuffer(200)
        self.joint_state_wait_ns = int(float(v["joint_state_wait"]) * 1e9)
        self.zero_window_ns = int(float(v["zero_window"]) * 1e9)
        self._diagnostics: PeriodicThread | None = None
        self.publish_period_ns = self.marker_period_ns = 0
        self.joint_state_timeout_ns = self.sensor_timeout_ns = self.future_tolerance_ns = 0
        self.zero_max_load = self.margin_warn = self.margin_error = 0.0
        # a wrench in a frame rigidly attached to the foot is moved to the sensor frame
        self._frame_to_sensor: dict[str, dict[str, np.ndarray]] = {s: {} for s in SIDES}
        self._model_joints = set(self.model.joint_names)
        self._newest_set_ns = 0
        self._joint_q_index = np.zeros(0, dtype=int)
        self._joint_columns: tuple[tuple[str, ...], np.ndarray] | None = None
        self._pending: deque[SampleSet] = deque()
        self._sole_cache: tuple[bytes, dict[str, np.ndarray]] | None = None
        self._sole_ids = [self.model.frame_id(self.frames[s]["sole_frame"]) for s in SIDES]
        self._recent: dict[str, deque[tuple[int, np.ndarray]]] = {s: deque(maxlen=2000) for s in SIDES}
        self._last_arrival_ns: dict[str, int | None] = {s: None for s in SIDES}
        self._last_published_ns: int | None = None
        self._last_marker_ns: int | None = None
        self.last_output: ZmpOutput | None = None
        self._last_polygon: np.ndarray | None = None
        self._last_polygon_ns: int | None = None
        self.counts = dict.fromkeys(("samples", "published", *DROPS, "no_contact"), 0)
        # what was dropped since the last /diagnostics, and why (the newest reason, its level)
        self._period = {"dropped": 0, "published": 0, "unpaired": 0}
        self._drop_reason: tuple[int, str] | None = None

        qos = QoSProfile(depth=100)
        sensor_qos = QoSProfile(depth=100)
        if bool(v["best_effort_sensors"]):
            sensor_qos.reliability = ReliabilityPolicy.BEST_EFFORT
        # per message, the inputs are read from their CDR bytes and the outputs written as bytes
        # (humanoid_balance.cdr): no rclpy message is built on the 1 kHz path
        self._joint_reader = cdr.JointStateReader()
        self._point_writer = cdr.PointStampedWriter(self.world_frame_id)
        self._polygon_writer = cdr.PolygonStampedWriter(self.world_frame_id)
        self._warnings = LogThrottle(self.get_logger(), 1.0)
        self._errors = LogThrottle(self.get_logger(), 1.0)
        # /joint_states first: when both are ready, the executor takes it first (not relied on)
        self.create_subscription(JointState, "/joint_states", self._on_joint_states, sensor_qos,
                                 raw=True)
        for side in SIDES:
            if self.sensor_type == "ft":
                self.create_subscription(WrenchStamped, f"/{side}_foot/ft",
                                         partial(self._on_wrench, side), sensor_qos, raw=True)
            else:
                self.create_subscription(Float64MultiArray, f"/{side}_foot/fsr",
                                         partial(self._on_fsr, side), sensor_qos, raw=True)
        self.pub_zmp = self.create_publisher(PointStamped, "/zmp", qos)
        self.pub_foot = {s: self.create_publisher(PointStamped, f"/{s}_foot/zmp", qos) for s in SIDES}
        self.pub_polygon = self.create_publisher(PolygonStamped, "/support_polygon", qos)
        self.pub_margin = self.create_publisher(Float64, "/zmp/stability_margin", qos)
        self.pub_markers = self.create_publisher(MarkerArray, "/zmp/markers", qos)
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", qos)
        #: the per-foot ZMPs, the polygon and the markers are written only while heard (/zmp and
        #: the margin always: arm_balance's guard and the operator rely on them)
        self.listeners = Listeners((*self.pub_foot.values(), self.pub_polygon, self.pub_markers))
        # parameters changed without samples coming apply within a second (the executor's thread)
        self._parameter_timer = steady_timer(self, 1.0, self._take_parameters)
        self.create_service(Trigger, "~/zero_sensors", partial(self._zero, SIDES))
        for side in SIDES:
            self.create_service(Trigger, f"~/zero_{side}_sensor", partial(self._zero, (side,)))
        self._apply(v)
        self._configured = True
        self.get_logger().info(
            f"{self.sensor_type} mode, contact at {self.estimator.contacts['left'].threshold} N, "
            f"world = {v['balance_frame']} of {path}")

    # --- parameters -------------------------------------------------------------

    def _apply(self, v: dict[str, Any]) -> None:
        """Take the dynamic parameters among ``v`` (all of them at start-up)."""
        if "contact_threshold" in v or "contact_hysteresis" in v:
            values = self.params.values
            self.estimator.set_contact_threshold(float(values["contact_threshold"]),
                                                 float(values["contact_hysteresis"]))
        if "publish_rate" in v:
            rate = float(v["publish_rate"])
            self.publish_period_ns = int(1e9 / rate) if rate > 0 else 0
        if "marker_rate" in v:
            rate = float(v["marker_rate"])
            self.marker_period_ns = int(1e9 / rate) if rate > 0 else -1
        if "diagnostics_rate" in v:
            period_s = 1.0 / float(v["diagnostics_rate"])
            if self._diagnostics is None:
                self._diagnostics = PeriodicThread("zmp-diagnostics", period_s,
                                                   self.publish_diagnostics,
                                                   self._diagnostics_failed)
            else:
                self._diagnostics.set_period(period_s)
        if "sync_tolerance" in v:
            self.sync.tolerance_ns = int(float(v["sync_tolerance"]) * 1e9)
        for name in ("joint_state_timeout", "sensor_timeout", "future_tolerance"):
            if name in v:
                setattr(self, f"{name}_ns", int(float(v[name]) * 1e9))
        self.pairer.max_age_ns = self.sensor_timeout_ns
        for name in ("zero_max_load", "margin_warn", "margin_error"):
            if name in v:
                setattr(self, name, float(v[name]))

    def _take_parameters(self) -> None:
        """Apply the dynamic changes accepted since the last sample (``ros2 param set``)."""
        pending = self.params.take_pending()
        if pending:
            self._apply(pending)
            self.get_logger().info("parameters changed: " + ", ".join(
                f"{k}={v!r}" for k, v in sorted(pending.items())))

    def _drop(self, counter: str, reason: str, level: int = WARN) -> None:
        """Count a dropped sample (``counts[counter]``), log the reason, keep it for diagnostics."""
        self.counts[counter] += 1
        self._period["dropped"] += 1
        self._drop_reason = (level, reason)
        if level >= ERROR:
            self._errors.error(reason)
        else:
            self._warn(reason)

    # --- inputs -----------------------------------------------------------------

    def _now_ns(self) -> int:
        return clock_ns(self.get_clock())

    def _on_joint_states(self, msg: bytes | JointState) -> None:
        """A ``/joint_states`` message: serialized (the subscription is raw) or a JointState."""
        try:
            sample = read_joint_state(self._joint_reader, msg)
        except InvalidInputError as error:  # bytes neither cdr nor rclpy reads
            self._take_parameters()
            self._drop("dropped_unreadable", f"/joint_states: {error}: ignored")
            return
        self._joint_state(*sample)

    def _joint_state(self, stamp: int, names: tuple[str, ...], positions: np.ndarray) -> None:
        self._take_parameters()
        if len(positions) != len(names):
            self._drop("dropped_joint_states",
                       f"joint_states has {len(names)} names but {len(positions)} positions: ignored")
            return
        ahead = stamp - self._now_ns()
        if ahead > self.future_tolerance_ns:
            self._drop("dropped_future", f"joint_states stamped {1e-9 * ahead:.3f} s ahead of the "
                       f"node clock (future_tolerance {1e-9 * self.future_tolerance_ns:.3f} s): ignored")
            return
        if self._joint_columns is None or self._joint_columns[0] != names:
            known = [i for i, n in enumerate(names) if n in self._model_joints]
            self._joint_columns = (names, np.array(known, dtype=int))
            self._joint_q_index = self.model.q_index([names[i] for i in known])
        columns = self._joint_columns[1]
        position = positions[columns]
        if not np.all(np.isfinite(position)):
            self._drop("dropped_joint_states", "joint_states with a non-finite position: ignored")
            return
        # a message may carry some joints only (several drivers publish /joint_states): it
        # updates those on top of the latest values of the others
        self.q[self._joint_q_index] = position
        self.joint_states.push(stamp, self.q.copy())
        self._process_pending()

    def _decode(self, side: str, msg: Any, reader: Callable[[bytes], Any],
                message_type: type) -> Any:
        """A raw sample through ``reader``; bytes it leaves to rclpy (big endian, XCDR2) as an
        rclpy message; a message as it is; None when unreadable (dropped and counted)."""
        if not isinstance(msg, bytes):
            return msg
        try:
            return reader(msg)
        except InvalidInputError as error:
            try:
                return deserialize_refused(msg, message_type, error)
            except InvalidInputError as unreadable:
                self._drop("dropped_unreadable", f"{side} foot: {unreadable}: dropped")
                return None

    def _on_wrench(self, side: str, msg: bytes | WrenchStamped) -> None:
        """A foot's F/T message: serialized (the subscription is raw) or a WrenchStamped."""
        self._take_parameters()
        now = self._now_ns()
        self._last_arrival_ns[side] = now
        decoded = self._decode(side, msg, cdr.read_wrench_stamped, WrenchStamped)
        if decoded is None:
            return
        if isinstance(decoded, WrenchStamped):
            f, t = decoded.wrench.force, decoded.wrench.torque
            values = (f.x, f.y, f.z, t.x, t.y, t.z)
            stamp, frame = stamp_ns(decoded.header.stamp), decoded.header.frame_id
        else:
            stamp, frame, values = decoded
        if not all_finite(values):
            self._drop("dropped_nonfinite", f"{side} foot: non-finite wrench dropped "
                       f"({self.counts['dropped_nonfinite'] + 1} so far)")
            return
        if stamp - now > self.future_tolerance_ns:
            self._drop("dropped_future", f"{side} foot: wrench stamped {1e-9 * (stamp - now):.3f} s "
                       f"ahead of the node clock (future_tolerance "
                       f"{1e-9 * self.future_tolerance_ns:.3f} s): refused")
            return
        wrench = np.array(values)
        frame = frame or self.frames[side]["sensor_frame"]
        if frame != self.frames[side]["sensor_frame"]:
            try:
                force, torque = wrench_in_sole(wrench[:3], wrench[3:], self._sensor_from(side, frame))
                wrench = np.concatenate([force, torque])
            except HumanoidBalanceError as error:
                self._drop("dropped_frame", str(error), ERROR)
                return
        self._recent[side].append((stamp, wrench))
        self._on_sample(side, stamp, wrench)

    def _on_fsr(self, side: str, msg: bytes | Float64MultiArray) -> None:
        """A foot's FSR forces: serialized (the subscription is raw) or a Float64MultiArray."""
        self._take_parameters()
        now = self._now_ns()
        self._last_arrival_ns[side] = now
        decoded = self._decode(side, msg, cdr.read_float64_multi_array, Float64MultiArray)
        if decoded is None:
            return
        forces = np.asarray(decoded.data, dtype=float) \
            if isinstance(decoded, Float64MultiArray) else decoded
        expected = len(self.estimator.feet[side].fsr_positions)
        if forces.shape != (expected,):
            self._drop("dropped_shape", f"{side} foot: {forces.size} FSR forces, expected {expected}: "
                       "dropped")
            return
        if not np.all(np.isfinite(forces)):
            self._drop("dropped_nonfinite", f"{side} foot: non-finite FSR force dropped "
                       f"({self.counts['dropped_nonfinite'] + 1} so far)")
            return
        unpaired, resyncs = self.pairer.dropped, self.pairer.resyncs
        joined = self.pairer.push(side, now, forces)  # no stamp: joined in arrival order
        self._period["unpaired"] += self.pairer.dropped - unpaired
        if self.pairer.resyncs != resyncs:
            self._warn(f"FSR arrays: the feet were joined {ArrivalPairer.RESYNC_JOINS} times in a "
                       "row with one foot's arrays left waiting (the other's lost): those dropped, "
                       "the feet joined period with period again")
        if joined is not None:
            self._on_joined(joined)

    def _sensor_from(self, side: str, frame: str) -> np.ndarray:
        """sensor <- frame, for a frame rigidly attached to the sensor's link."""
        cache = self._frame_to_sensor[side]
        if frame not in cache:
            model = self.model.model
            sensor = self.frames[side]["sensor_frame"]
            if not model.existFrame(frame):
                raise UnknownFrameError(frame, self.model.name)
            if model.frames[model.getFrameId(frame)].parentJoint != \
                    model.frames[model.getFrameId(sensor)].parentJoint:
                raise InvalidInputError(
                    f"{side} foot wrench in frame {frame!r}, which is not attached to the foot of "
                    f"sensor {sensor!r}: publish it in {sensor!r}")
            q = self.model.neutral()
            cache[frame] = np.linalg.inv(self.model.frame_transform(sensor, q)) @ \
                self.model.frame_transform(frame, q)
        return cache[frame]

    # --- estimate ----------------------------------------------------------------

    def _on_sample(self, side: str, stamp: int, payload: np.ndarray) -> None:
        unpaired = self.sync.dropped
        joined = self.sync.push(side, stamp, payload)
        self._period["unpaired"] += self.sync.dropped - unpaired
        if joined is not None:
            self._on_joined(joined)

    def _on_joined(self, joined: SampleSet) -> None:
        if joined.stamp_ns < self._newest_set_ns:  # time went back (replay again, sim reset)
            self.counts["samples"] += len(self._pending)
            for _ in range(len(self._pending)):
                self._drop("dropped_stale", "stamps went back: the waiting samples were dropped")
            self._pending.clear()
            self.estimator.reset()  # contact states of another time
        self._newest_set_ns = joined.stamp_ns
        self._pending.append(joined)
        self._process_pending()

    def _process_pending(self) -> None:
        while self._pending:
            joined = self._pending[0]
            waited_enough = self._newest_set_ns - joined.stamp_ns >= self.joint_state_wait_ns
            if not (self.joint_states.covers(joined.stamp_ns) or waited_enough):
                return
            self._pending.popleft()
            self._estimate(joined)

    def _estimate(self, joined: SampleSet) -> None:
        self.counts["samples"] += 1
        stamp = joined.stamp_ns
        found = self.joint_states.at_or_before(stamp)
        now = self._now_ns()
        if found is None or stamp - found[0] > self.joint_state_timeout_ns:
            self._drop("dropped_stale", "no joint state within joint_state_timeout "
                       f"({1e-9 * self.joint_state_timeout_ns:.3f} s) of the foot samples: no ZMP")
            return
        # with use_sim_time, /clock is one more topic, taken in no fixed order with the samples
        # (a loaded executor takes the newest /clock before the queued samples): the age is then
        # counted in data time, from the newest joined sample, so a replay gives the live ZMPs
        clock = self.get_clock()
        sim_time = isinstance(clock, ROSClock) and clock.ros_time_is_active
        reference = self._newest_set_ns if sim_time else now
        if reference - stamp > self.sensor_timeout_ns:
            self._drop("dropped_stale", f"foot samples {1e-9 * (reference - stamp):.3f} s old "
                       f"(sensor_timeout {1e-9 * self.sensor_timeout_ns:.3f} s): no ZMP built from them")
            return
        soles = self._soles(found[1])
        samples = {}
        for side in SIDES:
            value = joined.samples[side][1]
            if self.sensor_type == "ft":
                samples[side] = FootSample(soles[side], value[:3], value[3:])
            else:
                samples[side] = FootSample(soles[side], fsr_forces=value)
        try:
            out = self.estimator.step(samples)
        except InvalidInputError as error:  # overflowing values, a non-finite sole pose
            self._drop("dropped_invalid", f"{error}: no ZMP")
            return
        self.last_output = out
        if out.zmp_in_world is None:
            self.counts["no_contact"] += 1
            return
        self._period["published"] += 1  # a ZMP came out (published now or thinned by publish_rate)
        if self._last_published_ns is not None and self.publish_period_ns and \
                0 <= stamp - self._last_published_ns < self.publish_period_ns:
            return
        self._last_published_ns = stamp
        heard = self.listeners.heard()
        self._publish(stamp, out, heard)
        if self.marker_period_ns >= 0 and self.pub_markers in heard and (
                self._last_marker_ns is None or
                not 0 <= stamp - self._last_marker_ns < self.marker_period_ns):
            self._last_marker_ns = stamp
            self.pub_markers.publish(self._markers(stamp, out, found[1]))

    def _soles(self, q: np.ndarray) -> dict[str, np.ndarray]:
        key = q.tobytes()
        if self._sole_cache is None or self._sole_cache[0] != key:
            poses = self.model.frame_transforms(self._sole_ids, q)
            self._sole_cache = (key, dict(zip(SIDES, poses, strict=True)))
        return self._sole_cache[1]

    # --- outputs -----------------------------------------------------------------

    def _point(self, stamp: int, xyz: np.ndarray) -> bytes:
        """A serialized PointStamped in the world frame."""
        return self._point_writer.write(stamp, float(xyz[0]), float(xyz[1]), float(xyz[2]))

    def _publish(self, stamp: int, out: ZmpOutput, heard: frozenset[Any]) -> None:
        """/zmp and the margin; the per-foot ZMPs and the polygon where ``heard``."""
        assert out.zmp_in_world is not None and out.polygon is not None and out.margin is not None
        # published as CDR bytes (humanoid_balance.cdr): the same messages, built without rclpy
        self.pub_zmp.publish(self._point(stamp, out.zmp_in_world))
        for side in SIDES:
            foot = out.foot_zmps_in_world[side]
            if foot is not None and self.pub_foot[side] in heard:
                self.pub_foot[side].publish(self._point(stamp, foot))
        # the polygon changes with the contacts and the leg joints only: sent when it changes,
        # and at least every POLYGON_PERIOD_NS so that late joiners get it
        if self.pub_polygon in heard and (
                out.polygon is not self._last_polygon or self._last_polygon_ns is None or
                not 0 <= stamp - self._last_polygon_ns < POLYGON_PERIOD_NS):
            self._last_polygon = out.polygon
            self._last_polygon_ns = stamp
            self.pub_polygon.publish(self._polygon_writer.write(stamp, out.polygon))
        self.pub_margin.publish(cdr.float64_message(float(out.margin)))
        self.counts["published"] += 1

    def margin_colour(self, margin: float) -> ColorRGBA:
        """Green with room, yellow near an edge, red at or beyond it."""
        if margin >= self.margin_warn:
            return GREEN
        if margin >= self.margin_error:
            return YELLOW
        return RED

    def _markers(self, stamp: int, out: ZmpOutput, q: np.ndarray) -> MarkerArray:
        assert out.zmp_in_world is not None and out.polygon is not None and out.margin is not None

        def marker(ident: int, kind: int, ns: str, colour: ColorRGBA, size: float) -> Marker:
            m = Marker()
            m.header.stamp = stamp_msg(stamp)
            m.header.frame_id = self.world_frame_id
            m.ns, m.id, m.type, m.action = ns, ident, kind, Marker.ADD
            m.pose.orientation.w = 1.0
            m.scale.x = m.scale.y = m.scale.z = size
            m.color = colour
            return m

        markers = []
        zmp = marker(0, Marker.SPHERE, "zmp", self.margin_colour(out.margin), 0.03)
        zmp.pose.position = Point(x=float(out.zmp_in_world[0]), y=float(out.zmp_in_world[1]), z=0.0)
        markers.append(zmp)
        for ident, side in enumerate(SIDES, start=1):
            foot = marker(ident, Marker.SPHERE, f"{side}_foot_zmp", GREY, 0.015)
            point = out.foot_zmps_in_world[side]
            if point is None:
                foot.action = Marker.DELETE
            else:
                foot.pose.position = Point(x=float(point[0]), y=float(point[1]), z=0.0)
            markers.append(foot)
        line = marker(3, Marker.LINE_STRIP, "support_polygon", self.margin_colour(out.margin), 0.005)
        closed = [*out.polygon, out.polygon[0]]
        line.points = [Point(x=float(x), y=float(y), z=0.0) for x, y in closed]
        markers.append(line)
        com = self.model.com(q)
        com_marker = marker(4, Marker.CYLINDER, "com_ground_projection", ColorRGBA(r=0.2, g=0.4, b=1.0,
                                                                                    a=0.8), 0.025)
        com_marker.scale.z = 0.002
        com_marker.pose.position = Point(x=float(com[0]), y=float(com[1]), z=0.0)
        markers.append(com_marker)
        text = marker(5, Marker.TEXT_VIEW_FACING, "margin", self.margin_colour(out.margin), 0.04)
        text.text = f"margin {1000 * out.margin:.0f} mm"
        text.pose.position = Point(x=float(out.zmp_in_world[0]), y=float(out.zmp_in_world[1]), z=0.08)
        markers.append(text)
        return MarkerArray(markers=markers)

    # --- diagnostics, zeroing ------------------------------------------------------------

    def _warn(self, text: str) -> None:
        """A warning, at most one a second (all warnings of the node share the one throttle)."""
        self._warnings.warning(text)

    def diagnostics_status(self, period: dict[str, int],
                           drop_reason: tuple[int, str] | None) -> tuple[int, str]:
        """The level and message diagnostics report now, from the period's counters and the
        last drop's reason (taken since the last /diagnostics)."""
        now = self._now_ns()
        silent = []
        for side in SIDES:
            arrival = self._last_arrival_ns[side]
            if arrival is None:
                silent.append(f"no {side} foot sensor data yet")
            elif now - arrival > self.sensor_timeout_ns:
                silent.append(f"{side} foot sensor silent for {1e-9 * (now - arrival):.3f} s")
        if silent:
            return STALE, (f"{'; '.join(silent)} (timeout {1e-9 * self.sensor_timeout_ns:.3f} s): "
                           "no ZMP")
        dropped, produced = period["dropped"], period["published"]
        if dropped == 0 and produced == 0 and period["unpaired"] > 0:
            if self.sensor_type == "fsr":
                return ERROR, (f"no ZMP: {period['unpaired']} FSR arrays found no array of the other "
                               f"foot within sensor_timeout {1e-9 * self.sensor_timeout_ns:.3f} s")
            tolerance = 1e-9 * self.sync.tolerance_ns
            return ERROR, (f"no ZMP: {period['unpaired']} foot samples did not pair (the feet's "
                           f"stamps differ by more than sync_tolerance {tolerance:.4f} s)")
        if dropped and drop_reason is not None:
            level, reason = drop_reason
            if produced == 0:
                return max(level, ERROR), f"no ZMP: {dropped} samples dropped: {reason}"
            return max(level, WARN), f"{dropped} samples dropped ({produced} ZMPs): {reason}"
        out = self.last_output
        if out is None:
            return WARN, "no ZMP yet (waiting for joint states)"
        if out.zmp_in_world is None:
            return WARN, "no foot in contact: no ZMP"
        touching = [s for s in SIDES if out.contacts[s]]
        support = "double support" if len(touching) == 2 else f"single support on the {touching[0]} foot"
        assert out.margin is not None
        if out.margin < 0:
            return ERROR, f"{support}, ZMP {1000 * -out.margin:.1f} mm {OUTSIDE_POLYGON}"
        return OK, f"{support}, margin {1000 * out.margin:.1f} mm"

    def publish_diagnostics(self) -> None:
        """Publish the node's status on /diagnostics (from the diagnostics thread: it reads what
        the executor writes). The period's counters are swapped for fresh ones first, each in
        one assignment, so a drop the executor counts meanwhile goes to the next period instead
        of being reset unreported."""
        period, self._period = self._period, {"dropped": 0, "published": 0, "unpaired": 0}
        drop_reason, self._drop_reason = self._drop_reason, None
        level, message = self.diagnostics_status(period, drop_reason)
        values: dict[str, Any] = dict(self.counts)
        values["dropped_unpaired"] = self.sync.dropped + self.pairer.dropped
        values["fsr_resyncs"] = self.pairer.resyncs
        values["unheard_topics"] = self.listeners.unheard()
        out = self.last_output
        if out is not None:
            for side in SIDES:
                values[f"{side}_contact"] = out.contacts[side]
                values[f"{side}_normal_force_N"] = out.normal_forces[side]
            if out.margin is not None:
                values["margin_m"] = out.margin
        self.pub_diag.publish(diagnostic_array(self, [diagnostic_status(
            f"{NODE_NAME}: ZMP", level, message, values, hardware_id=self.sensor_type)]))

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
        if self.sensor_type != "ft":
            response.success = False
            response.message = "zeroing is for F/T sensors; this node runs in fsr mode"
            return response
        q_entry = self.joint_states.newest()
        if q_entry is None:
            response.success = False
            response.message = "no joint state yet: the feet's orientation is unknown"
            return response
        soles = self._soles(q_entry[1])
        means = {}
        for side in sides:
            recent = self._recent[side]
            if not recent:
                response.success = False
                response.message = f"no {side} foot sensor data yet"
                return response
            newest = recent[-1][0]
            window = [w for t, w in recent if newest - t <= self.zero_window_ns]
            means[side] = np.mean(window, axis=0)
        previous = {s: self.estimator.offsets[s].copy() for s in sides}
        try:
            for side in sides:
                self.estimator.zero(side, means[side][:3], means[side][3:], soles[side],
                                    max_load=self.zero_max_load)
        except InvalidInputError as error:
            self.estimator.offsets.update(previous)  # all or nothing
            response.success = False
            response.message = f"refused: {error}"
            self.get_logger().warning(response.message)
            return response
        response.success = True
        response.message = "zeroed " + ", ".join(
            f"{s} (force offset {np.round(self.estimator.offsets[s][:3], 2).tolist()} N)" for s in sides)
        self.get_logger().info(response.message)
        return response


def main(args: Sequence[str] | None = None) -> int:
    """Console script ``zmp_estimator``."""
    return run_node(ZmpEstimatorNode, args, events=True, stop_signals=True, exit_process=True)


if __name__ == "__main__":
    raise SystemExit(main())

