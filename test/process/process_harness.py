"""Process-level test harness: each node is its console script in a process of its own.

As a user runs them (``ros2 run``, ``ros2 launch``): a node of the graph
description (:mod:`humanoid_balance.graph`) is started with its parameter file
by :class:`humanoid_balance.processes.NodeProcess`, reached over DDS from the
test's own rclpy node (:class:`Probe`), driven through its lifecycle by its
services, fed by a :class:`Feeder` process, and stopped by a signal whose
:class:`~humanoid_balance.processes.ExitReport` the tests check.

Readiness is waited for, never slept for: a node is *reachable* once its
parameter service answers (so its executor spins: every subscription and
service of its constructor exists); a feeder starts publishing once every
topic it feeds has a subscriber; outputs are waited for message by message.
"""

from __future__ import annotations

import itertools
import json
import math
import signal
import statistics
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from humanoid_balance.graph import GraphNode
from humanoid_balance.processes import ExitReport, LifecycleClient, NodeProcess

FEEDER_SCRIPT = Path(__file__).with_name("feeder.py")
#: s a node should take to exit after SIGINT or SIGTERM (issue 10): measured and reported
#: (:func:`exit_table`'s "over" column, the README's exit rows), not asserted: on a shared
#: machine beside two busy loops, 5 of 100 clean exits took 2.0-2.3 s
EXIT_LIMIT_S = 2.0
#: s after the signal at which a node still running is killed (SIGKILL) and its exit unclean:
#: a deadline for the event, not a measure of it
STOP_DEADLINE_S = 10.0
#: s a node may take to become reachable on a loaded 2-core machine. Measured (noisy, shared
#: machine): imports and constructor 0.4-1.2 s (zmp_estimator: 0.7 s, scipy.spatial and
#: pinocchio), then DDS discovery 0-2 s more; alone 0.5-3.9 s, the five started together
#: a median of 2.4-4.7 s and at most 10.5 s (``test_cycles.py -s``). A deadline for an event,
#: not a measure: beside two busy loops and the suite's other worker (load 5-6) mujoco_sim was
#: not reachable within 30 s in ``test_cycles.py``; a passing run never waits for it
READY_TIMEOUT_S = 90.0
#: s an expected output may take to come once its inputs flow
OUTPUT_TIMEOUT_S = 10.0
#: s after which an unanswered readiness request is sent again (a request sent while the
#: server has not matched the client yet is lost)
REQUEST_RETRY_S = 2.0
#: s a service of an idle node takes at most to answer once the request is sent: a refusal
#: comes at once (before issue 33, a lifecycle node's services did not exist unconfigured:
#: ``ros2 service call`` waited forever)
ANSWER_LIMIT_S = 2.0
SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM}


class Recorder:
    """Messages of one topic as they arrive (the newest ``keep``), with their count."""

    def __init__(self, keep: int) -> None:
        self.messages: deque[Any] = deque(maxlen=keep)
        self.count = 0

    def __call__(self, msg: Any) -> None:
        self.messages.append(msg)
        self.count += 1

    @property
    def last(self) -> Any:
        """The newest message (AssertionError when none came)."""
        assert self.messages, "no message received"
        return self.messages[-1]


def spin_executor_until(executor: Any, condition: Callable[[], bool], timeout: float) -> bool:
    """Spin ``executor`` until ``condition()`` holds (True) or ``timeout`` s pass (False)."""
    end = time.monotonic() + timeout
    while True:
        if condition():
            return True
        left = end - time.monotonic()
        if left <= 0:
            return condition()
        executor.spin_once(timeout_sec=min(0.02, left))


def pump_publishing(executor: Any, seconds: float, until: Callable[[], bool] | None,
                    publish_due: Callable[[float], float], max_wait_s: float = 0.005) -> bool:
    """A feeder's loop: spin ``executor`` for ``seconds`` or until ``until()`` (its value).

    Each turn calls ``publish_due(now)`` (monotonic s), which publishes what is due and
    returns when the next publication is; the executor spins until then (at most
    ``max_wait_s``).
    """
    end = time.monotonic() + seconds
    while True:
        if until is not None and until():
            return True
        now = time.monotonic()
        if now >= end:
            return until() if until is not None else True
        due = min(publish_due(now), end)
        executor.spin_once(timeout_sec=max(min(due - time.monotonic(), max_wait_s), 0.0))


class Probe:
    """The test's own rclpy node, in an rclpy context of its own, spun only by the test.

    Subscriptions, publishers and clients made through it are dropped by
    :meth:`release` (after each test), so that a test's 1 kHz subscriptions do
    not load the next one.
    """

    def __init__(self, name: str = "process_test_probe") -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.signals import SignalHandlerOptions

        self.context = Context()
        # no rclpy signal handlers: Ctrl-C still interrupts pytest
        rclpy.init(context=self.context, signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._entities: list[tuple[Callable[[Any], Any], Any]] = []

    def record(self, msg_type: Any, topic: str, keep: int = 1000, depth: int = 100) -> Recorder:
        """Subscribe to ``topic`` and record what comes (reliable, keep-last ``depth``)."""
        recorder = Recorder(keep)
        sub = self.node.create_subscription(msg_type, topic, recorder, depth)
        self._entities.append((self.node.destroy_subscription, sub))
        return recorder

    def subscribe(self, msg_type: Any, topic: str, callback: Callable[[Any], None],
                  depth: int = 100) -> Any:
        """A subscription calling ``callback`` (dropped by :meth:`release`)."""
        sub = self.node.create_subscription(msg_type, topic, callback, depth)
        self._entities.append((self.node.destroy_subscription, sub))
        return sub

    def publisher(self, msg_type: Any, topic: str, depth: int = 10) -> Any:
        """A publisher on ``topic`` (dropped by :meth:`release`)."""
        pub = self.node.create_publisher(msg_type, topic, depth)
        self._entities.append((self.node.destroy_publisher, pub))
        return pub

    def client(self, srv_type: Any, name: str) -> Any:
        """A service client (dropped by :meth:`release`)."""
        cli = self.node.create_client(srv_type, name)
        self._entities.append((self.node.destroy_client, cli))
        return cli

    def lifecycle(self, target: str) -> LifecycleClient:
        """A lifecycle client of node ``target``, spun with this probe's executor."""
        lc = LifecycleClient(self.node, target, executor=self.executor)
        self._entities.append((lambda client: client.destroy(), lc))
        return lc

    def release(self) -> None:
        """Drop every subscription, publisher and client made since the last release."""
        for destroy, entity in reversed(self._entities):
            destroy(entity)
        self._entities.clear()

    def spin(self, seconds: float) -> None:
        """Handle what comes for ``seconds``."""
        self.spin_until(lambda: False, seconds)

    def spin_until(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Spin until ``condition()`` holds (True) or ``timeout`` s pass (False)."""
        return spin_executor_until(self.executor, condition, timeout)

    def wait_for_subscribers(self, publisher: Any, timeout: float = OUTPUT_TIMEOUT_S) -> None:
        """Spin until ``publisher`` has a subscriber (the node under test discovered it)."""
        assert self.spin_until(lambda: publisher.get_subscription_count() > 0, timeout), (
            f"nobody subscribed to {publisher.topic_name} within {timeout} s")

    def call(self, srv_type: Any, name: str, request: Any = None,
             timeout: float = OUTPUT_TIMEOUT_S) -> Any:
        """Call service ``name`` and return the response (AssertionError on a timeout)."""
        cli = self.client(srv_type, name)
        assert self.spin_until(cli.service_is_ready, timeout), f"{name} not available in {timeout} s"
        future = cli.call_async(srv_type.Request() if request is None else request)
        assert self.spin_until(future.done, timeout), f"{name} did not answer within {timeout} s"
        return future.result()

    def timed_call(self, srv_type: Any, name: str, request: Any = None,
                   timeout: float = OUTPUT_TIMEOUT_S) -> tuple[Any, float]:
        """Call service ``name``: (the response, s from sending the request to the answer).

        The service must be there within ``timeout`` (AssertionError otherwise); the time
        counts from the request, not from the wait for the service's discovery.
        """
        cli = self.client(srv_type, name)
        assert self.spin_until(cli.service_is_ready, timeout), f"{name} not available in {timeout} s"
        sent = time.monotonic()
        future = cli.call_async(srv_type.Request() if request is None else request)
        assert self.spin_until(future.done, timeout), f"{name} did not answer within {timeout} s"
        return future.result(), time.monotonic() - sent

    def set_parameters(self, node: str, **values: Any) -> list[Any]:
        """``ros2 param set /node name value`` for each value, in one call: the
        SetParametersResults in order (names with dots: ``**{"can.channel": ...}``)."""
        from rcl_interfaces.srv import SetParameters
        from rclpy.parameter import Parameter

        request = SetParameters.Request(parameters=[
            Parameter(name, value=value).to_parameter_msg() for name, value in values.items()])
        return list(self.call(SetParameters, f"/{node}/set_parameters", request).results)

    def get_parameter(self, node: str, name: str) -> Any:
        """``ros2 param get /node name``: the value (a Python value)."""
        from rcl_interfaces.srv import GetParameters
        from rclpy.parameter import parameter_value_to_python

        response = self.call(GetParameters, f"/{node}/get_parameters",
                             GetParameters.Request(names=[name]))
        return parameter_value_to_python(response.values[0])

    def close(self) -> None:
        """Destroy the node and shut the context down."""
        import rclpy

        self.release()
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


@dataclass
class RunningNode:
    """A node process under test and how long it took to become reachable."""

    process: NodeProcess
    started: float  # time.monotonic() at the start
    ready_s: float | None = None  # s from the start until its parameter service answered
    #: service -> (success, message, s to answer) of the calls made before configure
    unconfigured: dict[str, tuple[bool, str, float]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The node's name."""
        return self.process.name

    def stop(self, sig: int = signal.SIGINT) -> ExitReport:
        """Send ``sig``; the exit report (SIGKILL after :data:`STOP_DEADLINE_S`)."""
        return self.process.stop(sig, timeout=STOP_DEADLINE_S)


def start_node(node: GraphNode, log_dir: Path, tag: str = "") -> RunningNode:
    """Start ``node``'s console script with its parameter file; its output to ``log_dir``."""
    log = log_dir / f"{node.name}{'-' + tag if tag else ''}.log"
    started = time.monotonic()
    return RunningNode(NodeProcess(node, log_path=log), started)


def wait_ready(probe: Probe, running: RunningNode, timeout: float = READY_TIMEOUT_S) -> float:
    """Wait until the node's parameter service answers; the seconds since its start.

    A node's services answer only once its executor spins, i.e. after its
    constructor (imports, model, subscriptions, services) finished.
    """
    from rcl_interfaces.srv import GetParameters

    process = running.process
    cli = probe.client(GetParameters, f"/{running.name}/get_parameters")
    end = running.started + timeout
    future = None
    sent = 0.0
    while time.monotonic() < end:
        assert process.alive(), (f"{running.name} exited with {process.popen.returncode} before it "
                                 f"was reachable:\n{process.output()[-3000:]}")
        if future is not None and not future.done() and time.monotonic() - sent > REQUEST_RETRY_S:
            cli.remove_pending_request(future)  # sent before the server matched the client
            future = None
        if future is None and cli.service_is_ready():
            future = cli.call_async(GetParameters.Request(names=["use_sim_time"]))
            sent = time.monotonic()
        if future is not None and future.done():
            running.ready_s = time.monotonic() - running.started
            return running.ready_s
        probe.executor.spin_once(timeout_sec=0.02)
    raise AssertionError(f"{running.name} not reachable within {timeout} s:\n"
                         f"{process.output()[-3000:]}")


def call_unconfigured(probe: Probe, running: RunningNode,
                      calls: Sequence[tuple[str, Any, Any]]) -> None:
    """Call each ``(service, type, request)`` of the reachable, unconfigured node; the answers
    and their times go to ``running.unconfigured`` (key: the service, `` true``/`` false``
    appended for a SetBool)."""
    for name, srv_type, request in calls:
        response, seconds = probe.timed_call(srv_type, name, request)
        data = getattr(request, "data", None)
        key = name if data is None else f"{name} {str(data).lower()}"
        running.unconfigured[key] = (bool(response.success), str(response.message), seconds)


def bring_up(probe: Probe, running: RunningNode) -> None:
    """Configure, then activate the lifecycle node through its services (its log on a failure)."""
    from humanoid_balance.processes import LifecycleError

    try:
        probe.lifecycle(running.name).bring_up()
    except LifecycleError as error:
        raise AssertionError(f"{error}:\n{running.process.output()[-3000:]}") from error


def start_identification(probe: Probe, timeout: float = OUTPUT_TIMEOUT_S) -> str:
    """Call ``/identification/start`` until the executor accepts; its answer's message.

    The executor refuses a start until it holds fresh joint states of the arm: the
    refusal is its readiness signal, so the call is repeated while it refuses.
    """
    from std_srvs.srv import Trigger

    end = time.monotonic() + timeout
    while True:
        response = probe.call(Trigger, "/identification/start", timeout=timeout)
        if response.success or time.monotonic() > end:
            assert response.success, response.message
            return str(response.message)
        probe.spin(0.1)


def diagnostics_gaps_on_sim_time(probe: Probe, node: str, prefix: str, seconds: float,
                                 clock_hz: float = 100.0, switch: bool = True) -> list[float]:
    """Wall seconds between the ``/diagnostics`` statuses named ``prefix*`` while ``node`` runs on
    simulation time, the probe publishing ``/clock`` at ``clock_hz`` for ``seconds``.

    ``switch``: set the node's ``use_sim_time`` true for the window (``ros2 param set``) and
    false after. ``/clock`` carries the wall time (``time.time()``), so the node's clock does
    not jump and its inputs' stamps stay comparable with it. ``clock_hz`` 0: a simulation
    publishes ``/clock`` (the probe none).
    """
    from diagnostic_msgs.msg import DiagnosticArray
    from rosgraph_msgs.msg import Clock

    from humanoid_balance.nodes.common import stamp_msg

    timer = None
    if clock_hz > 0:
        clock = probe.publisher(Clock, "/clock")
        timer = probe.node.create_timer(
            1.0 / clock_hz, lambda: clock.publish(Clock(clock=stamp_msg(time.time_ns()))))
    arrivals: list[float] = []

    def on_diagnostics(msg: Any) -> None:
        if any(status.name.startswith(prefix) for status in msg.status):
            arrivals.append(time.monotonic())

    try:
        if switch:
            result = probe.set_parameters(node, use_sim_time=True)[0]
            assert result.successful, result.reason
        probe.spin(1.0)  # the node takes /clock from now on
        probe.subscribe(DiagnosticArray, "/diagnostics", on_diagnostics)
        probe.spin(seconds)
    finally:
        if timer is not None:
            probe.node.destroy_timer(timer)
        if switch:
            probe.set_parameters(node, use_sim_time=False)
    assert len(arrivals) >= 2, f"{len(arrivals)} {prefix} statuses in {seconds} s"
    return [b - a for a, b in itertools.pairwise(arrivals)]


def describe(report: ExitReport) -> str:
    """An exit report in one paragraph, for assertion messages."""
    return (f"exit status {report.returncode}, {report.seconds:.3f} s, killed {report.killed}, "
            f"traceback {report.traceback}; output (end):\n{report.output[-3000:]}")


def exited_cleanly(report: ExitReport) -> bool:
    """Exit status 0, no traceback, not killed (the exit time goes to :func:`exit_table`)."""
    return report.clean


# --- feeding ------------------------------------------------------------------------------------


@dataclass
class FeedSpec:
    """What a :class:`Feeder` publishes: messages at ``rate`` Hz (each every ``every`` ticks)."""

    rate: float
    messages: list[dict[str, Any]] = field(default_factory=list)

    def joint_state(self, topic: str, names: Sequence[str], position: Sequence[float] = (),
                    velocity: Sequence[float] = (), effort: Sequence[float] = (),
                    every: int = 1) -> FeedSpec:
        """Add a sensor_msgs/JointState."""
        self.messages.append({"topic": topic, "type": "joint_state", "every": every,
                              "name": list(names), "position": [float(v) for v in position],
                              "velocity": [float(v) for v in velocity],
                              "effort": [float(v) for v in effort]})
        return self

    def wrench(self, topic: str, frame_id: str, wrench: Sequence[float], every: int = 1) -> FeedSpec:
        """Add a geometry_msgs/WrenchStamped (force then torque)."""
        self.messages.append({"topic": topic, "type": "wrench", "every": every,
                              "frame_id": frame_id, "wrench": [float(v) for v in wrench]})
        return self


class Feeder:
    """``feeder.py`` as a process publishing a :class:`FeedSpec` until stopped."""

    def __init__(self, spec: FeedSpec, log_path: Path) -> None:
        self.log_path = log_path
        self._log = open(log_path, "w")  # noqa: SIM115 (closed in stop)
        payload = json.dumps({"rate": spec.rate, "messages": spec.messages,
                              "wait_subscribers": READY_TIMEOUT_S})
        self.popen = subprocess.Popen([sys.executable, str(FEEDER_SCRIPT), payload],
                                      stdout=self._log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL)
        self.output = ""

    def wait_feeding(self, probe: Probe, timeout: float = READY_TIMEOUT_S) -> None:
        """Spin the probe until the feeder publishes (every topic has a subscriber)."""
        def feeding() -> bool:
            return "feeding" in self.log_path.read_text() or self.popen.poll() is not None

        assert probe.spin_until(feeding, timeout), f"feeder not publishing within {timeout} s"
        assert "feeding" in self.log_path.read_text(), (
            f"feeder stopped: {self.log_path.read_text()[-2000:]}")

    def stop(self) -> str:
        """Stop it (SIGINT) and return what it printed."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGINT)
            try:
                self.popen.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self._log.close()
        self.output = self.log_path.read_text()
        return self.output


# --- the humanoid standing: a known ZMP ---------------------------------------------------------

SIDES = ("left", "right")
SOLE_CORNERS = np.array([[0.11, 0.06], [-0.11, 0.06], [-0.11, -0.06], [0.11, -0.06]])
GRAVITY = 9.81


@dataclass(frozen=True)
class StandingModel:
    """The humanoid at q = 0 (feet flat) as the ZMP oracle sees it."""

    joint_names: tuple[str, ...]
    soles: dict[str, np.ndarray]  # side -> W <- sole (4x4)
    geometry: dict[str, Any]  # side -> core.zmp.FootGeometry


@lru_cache(maxsize=1)
def standing_model() -> StandingModel:
    """The humanoid URDF's joints, sole poses and foot geometry at q = 0."""
    from humanoid_balance.core.model import RobotModel
    from humanoid_balance.core.zmp import foot_geometry_from_model
    from humanoid_balance.resources import urdf_path

    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    q0 = model.neutral()
    soles = {s: model.frame_transform(f"{s}_sole", q0) for s in SIDES}
    geometry = {s: foot_geometry_from_model(model, sensor_frame=f"{s}_foot_ft",
                                            sole_frame=f"{s}_sole", foot_link=f"{s}_foot",
                                            sole_corners=SOLE_CORNERS) for s in SIDES}
    return StandingModel(tuple(model.joint_names), soles, geometry)


def sensor_wrench(side: str, zmp_in_sole: tuple[float, float], fz: float) -> np.ndarray:
    """What the ankle F/T sensor reads (sensor frame) for a ground force ``fz`` [N] at a sole point.

    The foot (and so the ground) pushes up on the leg through the sensor
    (force.z > 0 when standing), plus the weight of the foot below the sensor,
    the foot at rest and flat.
    """
    standing = standing_model()
    geometry = standing.geometry[side]
    rotation = geometry.sensor_in_sole[:3, :3]
    sensor_origin = geometry.sensor_in_sole[:3, 3]
    point = np.array([zmp_in_sole[0], zmp_in_sole[1], 0.0])
    force_sole = np.array([0.0, 0.0, fz])
    torque_sole = np.cross(point - sensor_origin, force_sole)  # about the sensor origin
    force = rotation.T @ force_sole
    torque = rotation.T @ torque_sole
    weight_in_world = np.array([0.0, 0.0, -geometry.mass_below_sensor * GRAVITY])
    weight = rotation.T @ (standing.soles[side][:3, :3].T @ weight_in_world)
    return np.concatenate([force + weight, torque + np.cross(geometry.com_below_sensor_in_sensor,
                                                             weight)])


def sole_point_in_world(side: str, xy: tuple[float, float]) -> np.ndarray:
    """A point of a sole in the world (``W``) frame, m."""
    return (standing_model().soles[side] @ np.array([xy[0], xy[1], 0.0, 1.0]))[:3]


def standing_feed(rate: float, loads: dict[str, tuple[tuple[float, float], float]]) -> FeedSpec:
    """Joint states (all 30 joints at zero) and both feet's wrenches at ``rate`` Hz.

    Args:
        rate: Hz of the samples.
        loads: side -> (ZMP point in the sole frame [m], ground force [N]).
    """
    spec = FeedSpec(rate)
    names = standing_model().joint_names
    spec.joint_state("/joint_states", names, position=[0.0] * len(names))
    for side in SIDES:
        point, fz = loads[side]
        spec.wrench(f"/{side}_foot/ft", f"{side}_foot_ft", sensor_wrench(side, point, fz))
    return spec


#: the right arm's joints (the job arm of the robot graph), URDF order
JOB_JOINTS = ("right_shoulder_pitch", "right_shoulder_roll", "right_shoulder_yaw", "right_elbow",
              "right_wrist_yaw", "right_wrist_roll", "right_wrist_pitch")
#: both arms' joints
ARM_JOINTS = frozenset(f"{side}{name[len('right'):]}" for side in ("left", "right")
                       for name in JOB_JOINTS)


def arm_feed(rate: float = 500.0) -> FeedSpec:
    """Joint states (30 joints at zero) at ``rate``, the job arm raising forward at ``rate`` / 10.

    The job: shoulder pitch at -0.2 rad/s on ``/arm_balance/job_joint_velocities``.
    """
    names = standing_model().joint_names
    spec = FeedSpec(rate).joint_state("/joint_states", names, position=[0.0] * len(names))
    return spec.joint_state("/arm_balance/job_joint_velocities", JOB_JOINTS,
                            velocity=[-0.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], every=10)


def lunar_arm_feed(rate: float, position_deg: Sequence[float]) -> FeedSpec:
    """The lunar arm's joint states (joint1..6 at ``position_deg``, at rest, 1 N m efforts)."""
    from humanoid_balance.core.identification import LUNAR_JOINTS

    return FeedSpec(rate).joint_state(
        "/joint_states", LUNAR_JOINTS, position=[math.radians(v) for v in position_deg],
        velocity=[0.0] * len(LUNAR_JOINTS), effort=[1.0] * len(LUNAR_JOINTS))


# --- results --------------------------------------------------------------------------------------


def level_of(status: Any) -> int:
    """A DiagnosticStatus level as an int (rclpy gives bytes)."""
    level = status.level
    return level[0] if isinstance(level, (bytes, bytearray)) else int(level)


def statuses(recorder: Recorder, prefix: str) -> Iterator[Any]:
    """Every DiagnosticStatus recorded whose name starts with ``prefix``."""
    for array in recorder.messages:
        for status in array.status:
            if status.name.startswith(prefix):
                yield status


def all_finite(values: Sequence[float]) -> bool:
    """Every value is a finite float."""
    return all(math.isfinite(v) for v in values)


def exit_table(times: dict[str, list[float]], title: str, limit: float = EXIT_LIMIT_S) -> str:
    """Per-node count, max, median and the count over ``limit`` s of lists of seconds."""
    lines = [title, f"{'node':<26}{'n':>4}{'max s':>9}{'median s':>10}{f'> {limit:g} s':>9}"]
    for name, values in times.items():
        if values:
            lines.append(f"{name:<26}{len(values):>4}{max(values):>9.3f}"
                         f"{statistics.median(values):>10.3f}{sum(v > limit for v in values):>9}")
    return "\n".join(lines)
