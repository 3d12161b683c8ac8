"""Fault injection: ``arm_balance`` as a process, attacked through its ROS interfaces (issue 12).

The node runs as ``ros2 run`` runs it (``config/arm_balance.yaml`` with the
robot graph's overrides: job arm right, 500 Hz timer), with diagnostics at
50 Hz and the input timeouts at :data:`TIMEOUT_S` to keep waits short and the
loaded test machine from tripping them. The robot is faked by the test
(:class:`FakeRobot`): ``/joint_states`` of every joint at 200 Hz with the arm
joints where the last command put them (an ideal servo), a job on the job arm
(the shoulder pitch swinging at :data:`JOB_RAD_S` between two angles, or a
hand twist), ``/zmp/stability_margin`` and, in ``free_floating`` mode, the
base pose; every field, stamp, size, name and rate of these is bent by the
cases.

Every command the node sends in every case is checked (``fault_harness``'s
:class:`~fault_harness.CommandChecker`, by joint name: the job arm switches)
against the URDF's position and speed limits and the acceleration limits of
:mod:`humanoid_balance.core.joint_limits` at the command stamps (500 Hz: one
period): finite, inside the limits, no velocity step beyond the acceleration
limit, no position jump the commanded velocities do not explain. Each case
requires a log line and a ``/diagnostics`` level naming the cause while it
lasts, and recovery (commands from the controller, diagnostics OK) when good
input returns. One node process serves the whole module (restarted by the
kill -9 and shutdown cases only); the ``free_floating`` cases reconfigure it.
"""

from __future__ import annotations

import math
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from fault_harness import (
    ERROR,
    OK,
    REACTION_S,
    WARN,
    CommandChecker,
    CommandLimits,
    DiagnosticsWatch,
    Ledger,
    Target,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from process_harness import READY_TIMEOUT_S, Probe, RunningNode, pump_publishing, start_node

from humanoid_balance.core.joint_limits import ARM_ACCELERATION_LIMITS_DEG_S2
from humanoid_balance.graph import GraphNode, robot_graph
from humanoid_balance.resources import urdf_path

pytestmark = pytest.mark.ros

NODE = "arm_balance"
#: s, joint_state_timeout, job_input_timeout and margin_timeout here (0.05, 0.1, 0.1 in
#: config/arm_balance.yaml): the test's own process feeds the node and stalls on a loaded
#: 2-core machine
TIMEOUT_S = 0.3
#: Hz of the fake robot's joint states (and base pose), of its job input and margin
STATE_HZ, JOB_HZ, MARGIN_HZ = 200.0, 50.0, 50.0
#: Hz of the node's diagnostics here (10 in config/arm_balance.yaml): shorter waits
DIAGNOSTICS_HZ = 50.0
#: s a bad input lasts before its diagnostics are required
BAD_S = 0.05
#: rad/s, rad: the job's shoulder pitch speed and the angles it swings between
JOB_RAD_S = 1.0
JOB_SWING_RAD = (-0.6, -0.2)
#: m: the measured stability margin of the fake robot (the guard is free above 0.03)
MARGIN_M = 0.08
ARM_SUFFIXES = ("shoulder_pitch", "shoulder_roll", "shoulder_yaw", "elbow", "wrist_yaw",
                "wrist_roll", "wrist_pitch")
GENERATED = settings(max_examples=4, deadline=None, derandomize=True, database=None,
                     suppress_health_check=list(HealthCheck))
EXTREMES = (math.nan, math.inf, -math.inf, 1e308, -1e308)


def arm_node(**overrides: Any) -> GraphNode:
    """The robot graph's arm_balance, diagnostics at 50 Hz, timeouts :data:`TIMEOUT_S`."""
    node = next(n for n in robot_graph() if n.name == NODE)
    return node.with_parameters(**{"diagnostics_rate": DIAGNOSTICS_HZ,
                                   "joint_state_timeout": TIMEOUT_S,
                                   "job_input_timeout": TIMEOUT_S, "margin_timeout": TIMEOUT_S,
                                   **overrides})


def arm_joints(arm: str) -> tuple[str, ...]:
    """The humanoid's joints of one arm, URDF order."""
    return tuple(f"{arm}_{s}" for s in ARM_SUFFIXES)


def ground_limits() -> CommandLimits:
    """Both humanoid arms' limits: URDF positions and speeds, seed 000's accelerations."""
    names = tuple(sorted(arm_joints("right") + arm_joints("left")))
    accel = [math.radians(ARM_ACCELERATION_LIMITS_DEG_S2[n.split("_", 1)[1]]) for n in names]
    return CommandLimits.from_urdf(urdf_path("humanoid"), names, accel)


def model_joints(name: str) -> tuple[str, ...]:
    """Every moving joint of a package URDF, in file order."""
    import xml.etree.ElementTree as ET

    root = ET.parse(urdf_path(name)).getroot()
    return tuple(str(j.get("name")) for j in root.iter("joint") if j.get("type") != "fixed")


def by_name(limits: CommandLimits) -> Callable[[Any], Any]:
    """A command in the checker's joint order (when it names exactly those joints)."""
    def reorder(msg: Any) -> Any:
        names = list(msg.name)
        if sorted(names) != list(limits.names) or len(msg.position) != len(names) or \
                len(msg.velocity) != len(names):
            return msg
        index = [names.index(n) for n in limits.names]
        return SimpleNamespace(header=msg.header, name=list(limits.names),
                               position=[msg.position[i] for i in index],
                               velocity=[msg.velocity[i] for i in index])
    return reorder


class FakeRobot:
    """The robot's drivers and the job, faked from the test's probe (see the module docstring).

    Attributes:
        mutate: topic -> (message -> message to send, or None to drop it).
        paused: topics not published.
        rates: topic -> Hz.
        job: ``joints`` (job joint velocities) or ``twist`` (a hand twist).
        job_arm: the arm the job input names.
        margin_m: the stability margin published.
    """

    STATES, JOB_JOINTS, TWIST = "/joint_states", "/arm_balance/job_joint_velocities", \
        "/arm_balance/job_twist"
    MARGIN, POSE = "/zmp/stability_margin", "/base_pose"

    def __init__(self, probe: Probe, checker: CommandChecker) -> None:
        from geometry_msgs.msg import PoseStamped, TwistStamped
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64

        self.probe, self.checker = probe, checker
        self.reorder = by_name(checker.limits)
        node = probe.node
        from rosgraph_msgs.msg import Clock

        #: lock-step simulation: /clock and the joint states on a 2 ms grid of sim time, the
        #: next one once the command of the last came (or 20 ms later); the node on sim time
        self.sim_clock = False
        self.sim_ns = 0
        self._sim_sent = -math.inf
        self._sim_answered = True
        #: lock-step: makes an extra joint state from each good one (None: none), sent after it
        self.inject: Callable[[Any], Any] | None = None
        self.clock_pub = node.create_publisher(Clock, "/clock", 100)
        self.pubs = {self.STATES: node.create_publisher(JointState, self.STATES, 100),
                     self.JOB_JOINTS: node.create_publisher(JointState, self.JOB_JOINTS, 100),
                     self.TWIST: node.create_publisher(TwistStamped, self.TWIST, 100),
                     self.MARGIN: node.create_publisher(Float64, self.MARGIN, 100),
                     self.POSE: node.create_publisher(PoseStamped, self.POSE, 100)}
        self.sub = node.create_subscription(JointState, "/arm_balance/command", self._on_command,
                                            1000)
        self.commands = 0
        self.published = 0
        self.last_command: Any = None
        self.last_command_at = -math.inf
        self.free_floating = False
        self.joints = model_joints("humanoid")
        self.position = dict.fromkeys(self.joints, 0.0)
        self._next: dict[str, float] = {}
        self.direction = -1.0
        self.normal()

    def normal(self) -> None:
        """Good input again: nominal rates, no mutation, nothing paused, the shoulder swing job."""
        self.mutate: dict[str, Callable[[Any], Any]] = {}
        self.paused: set[str] = set()
        self.rates = {self.STATES: STATE_HZ, self.JOB_JOINTS: JOB_HZ, self.TWIST: JOB_HZ,
                      self.MARGIN: MARGIN_HZ, self.POSE: STATE_HZ}
        self.job = "twist" if self.free_floating else "joints"
        self.margin_m = MARGIN_M
        self.stamp_shift_ns = 0
        self.inject = None

    def use(self, urdf: str, checker: CommandChecker, free_floating: bool) -> None:
        """Fake another robot checked by ``checker``: the humanoid at zero, the space robot's arms
        bent (stretched, they are at a singularity of the generalized Jacobian)."""
        self.checker, self.reorder = checker, by_name(checker.limits)
        self.joints = model_joints(urdf)
        self.position = dict.fromkeys(self.joints, 0.0)
        if free_floating:
            self.position.update({f"{arm}_joint{k}": v for arm in ("right", "left")
                                  for k, v in ((2, 0.6), (3, 1.0))})
        self.free_floating = free_floating
        self.normal()

    def _on_command(self, msg: Any) -> None:
        if self.sim_clock and msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec == self.sim_ns:
            self._sim_answered = True
        self.checker(self.reorder(msg))
        self.commands += 1
        self.last_command, self.last_command_at = msg, time.monotonic()
        for name, p in zip(msg.name, msg.position, strict=False):
            if name in self.position and math.isfinite(p):
                self.position[name] = p

    def message(self, topic: str) -> Any:
        """The next good message of ``topic``."""
        from geometry_msgs.msg import PoseStamped, TwistStamped
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64

        from humanoid_balance.nodes.common import stamp_msg

        now_ns = self.sim_ns if self.sim_clock else self.probe.node.get_clock().now().nanoseconds
        stamp = stamp_msg(now_ns + self.stamp_shift_ns)
        if topic == self.STATES:
            msg = JointState(name=list(self.joints),
                             position=[self.position[n] for n in self.joints],
                             velocity=[0.0] * len(self.joints))
        elif topic == self.JOB_JOINTS:
            pitch = self.position[f"{self.job_arm}_shoulder_pitch"]
            if pitch <= JOB_SWING_RAD[0]:
                self.direction = 1.0
            elif pitch >= JOB_SWING_RAD[1]:
                self.direction = -1.0
            msg = JointState(name=list(arm_joints(self.job_arm)),
                             velocity=[self.direction * JOB_RAD_S] + [0.0] * 6)
        elif topic == self.TWIST:
            msg = TwistStamped()
            msg.header.frame_id = "world" if self.free_floating else "W"
            msg.twist.linear.x = 0.02 * math.sin(time.monotonic() * 2.0)
        elif topic == self.MARGIN:
            return Float64(data=self.margin_m)
        else:
            msg = PoseStamped()
            msg.header.frame_id = "world"
            msg.pose.orientation.w = 1.0
        msg.header.stamp = stamp
        return msg

    def active_topics(self) -> list[str]:
        """What is published now."""
        topics = [self.STATES, self.TWIST if self.job == "twist" else self.JOB_JOINTS]
        if not self.free_floating:
            topics.append(self.MARGIN)
        else:
            topics.append(self.POSE)
        return [t for t in topics if t not in self.paused]

    def publish(self, topic: str, msg: Any = None) -> None:
        """``msg`` (default: the next good one through ``mutate``) on ``topic``."""
        if msg is None:
            msg = self.message(topic)
            if topic == self.STATES and self.sim_clock:
                from rosgraph_msgs.msg import Clock

                self.clock_pub.publish(Clock(clock=msg.header.stamp))
                self._sim_answered, self._sim_sent = False, time.monotonic()
                if self.inject is not None:
                    self.pubs[topic].publish(msg)
                    self.published += 1
                    msg = self.inject(msg)
            if topic in self.mutate:
                msg = self.mutate[topic](msg)
        if msg is not None:
            self.pubs[topic].publish(msg)
            self.published += 1

    def pump(self, seconds: float, until: Callable[[], bool] | None = None) -> bool:
        """Publish at the rates and spin the probe for ``seconds`` or until ``until()``."""
        return pump_publishing(self.probe.executor, seconds, until, self._publish_due)

    def _publish_due(self, now: float) -> float:
        """Publish each topic due at ``now``; when the next publication is (monotonic s)."""
        due = math.inf
        for topic in self.active_topics():
            at = self._next.get(topic, now)
            if topic == self.STATES and self.sim_clock:  # lock-step: when answered
                at = now if self._sim_answered or now - self._sim_sent > 0.02 else now + 0.001
                if now >= at:
                    self.sim_ns += 2_000_000
                    self.publish(topic)
                due = min(due, at)
                continue
            if now >= at:
                self.publish(topic)
                at = max(at + 1.0 / self.rates[topic], now - 0.05)
                self._next[topic] = at
            due = min(due, at)
        return due

    def pump_until(self, condition: Callable[[], bool], timeout: float) -> bool:
        """:meth:`pump` until ``condition()`` (the DiagnosticsWatch's way of waiting)."""
        return self.pump(timeout, condition)

    @property
    def job_arm(self) -> str:
        """The arm the job input names (the rig's)."""
        return self._job_arm if hasattr(self, "_job_arm") else "right"

    @job_arm.setter
    def job_arm(self, arm: str) -> None:
        self._job_arm = arm

    def close(self) -> None:
        """Drop the publishers and the subscription."""
        for pub in [*self.pubs.values(), self.clock_pub]:
            self.probe.node.destroy_publisher(pub)
        self.probe.node.destroy_subscription(self.sub)


class ArmTarget(Target):
    """:class:`Target` whose liveness check reuses one parameter client (a new client per case
    waits for DDS to match it: tens of ms a case)."""

    _client: Any = None

    def answers(self, timeout: float = 5.0) -> bool:
        """Its parameter service answers within ``timeout`` s (asked again by a new client if
        the cached one's request is lost)."""
        from rcl_interfaces.srv import GetParameters

        if self._client is None:
            self._client = self.probe.node.create_client(GetParameters,
                                                         f"/{self.name}/get_parameters")
            return self._ask(timeout)
        if self._ask(min(timeout, 1.0)):
            return True
        self.close()
        return self.answers(timeout)

    def _ask(self, timeout: float) -> bool:
        from rcl_interfaces.srv import GetParameters

        cli = self._client
        if not self.probe.spin_until(cli.service_is_ready, timeout):
            return False
        future = cli.call_async(GetParameters.Request(names=["use_sim_time"]))
        if self.probe.spin_until(future.done, timeout):
            return True
        cli.remove_pending_request(future)
        return False

    def close(self) -> None:
        """Drop the client."""
        if self._client is not None:
            self.probe.node.destroy_client(self._client)
            self._client = None


class Rig:
    """The node process, the fake robot, the diagnostics."""

    def __init__(self, probe: Probe, logs: Path) -> None:
        self.probe, self.logs = probe, logs
        self.checker = CommandChecker(ground_limits())
        self.robot = FakeRobot(probe, self.checker)
        self.diag = DiagnosticsWatch(probe, NODE, self.robot.pump_until)
        self.restarts = 0
        self._clients: dict[str, Any] = {}
        self.free_floating = self.lock_step = False
        #: the last case ended commanding with good input (the next needs no reset)
        self.settled = False
        #: parameters or the lifecycle state may differ from the baseline
        self.changed = True
        self.target = ArmTarget(NODE, self._launch(), probe, self.checker)
        #: s from each start to reachable (noisy: a shared 2-core machine)
        self.ready_s = [self.target.running.ready_s or math.nan]

    def _launch(self) -> RunningNode:
        """Start the node and wait until its parameter service answers (as ``wait_ready``, but a
        request lost before the server matched is sent again after 0.2 s, not 2 s)."""
        from rcl_interfaces.srv import GetParameters

        running = start_node(arm_node(), self.logs, tag=str(self.restarts))
        cli = self.probe.node.create_client(GetParameters, f"/{NODE}/get_parameters")
        try:
            future, sent = None, 0.0
            end = running.started + READY_TIMEOUT_S
            while time.monotonic() < end:
                assert running.process.alive(), running.process.output()[-3000:]
                if future is not None and future.done():
                    running.ready_s = time.monotonic() - running.started
                    return running
                if future is not None and time.monotonic() - sent > 0.2:
                    cli.remove_pending_request(future)
                    future = None
                if future is None and cli.service_is_ready():
                    future = cli.call_async(GetParameters.Request(names=["use_sim_time"]))
                    sent = time.monotonic()
                self.robot.pump(0.01)
            raise AssertionError(f"not reachable in {READY_TIMEOUT_S} s: "
                                 f"{running.process.output()[-3000:]}")
        finally:
            self.probe.node.destroy_client(cli)

    def restart(self) -> None:
        """Stop the process (SIGKILL if need be) and start it again, unconfigured."""
        self.target.running.stop()
        self.restarts += 1
        self.drop_clients()
        self.target.running = self._launch()
        self.ready_s.append(self.target.running.ready_s or math.nan)
        self.checker.new_segment()
        self.diag.clear()
        self.free_floating = self.lock_step = self.robot.sim_clock = False
        self.use_ground()

    def use_ground(self) -> None:
        """Fake the humanoid again (after free_floating)."""
        self.checker = CommandChecker(ground_limits())
        self.target.checker = self.checker
        self.robot.use("humanoid", self.checker, free_floating=False)

    def use_free_floating(self) -> None:
        """Reconfigure the node in ``free_floating`` mode (the space robot), active, commanding."""
        if self.free_floating:
            return
        bring_to(self, "unconfigured")
        results = self.set_parameters(mode="free_floating", urdf_path="")
        assert all(r.successful for r in results), [r.reason for r in results]
        self.free_floating = True
        self.checker = CommandChecker(CommandLimits.from_urdf(
            urdf_path("space_robot"), tuple(sorted(model_joints("space_robot"))), 10.0))
        self.target.checker = self.checker
        self.robot.use("space_robot", self.checker, free_floating=True)
        assert self.transition("configure"), self.target.output()[-2000:]
        assert self.transition("activate"), self.target.output()[-2000:]
        assert self.commanding(), (self.diag.latest(), self.target.output()[-2000:])

    def use_lock_step(self) -> None:
        """Reconfigure the node with ``trigger: joint_states`` on sim time (lock-step, as in the
        simulation graph: the fake robot publishes /clock), active, commanding."""
        if self.lock_step:
            return
        bring_to(self, "unconfigured")
        self.robot.sim_ns = 10**9  # a simulation starts at t = 0; here 1 s
        self.robot.sim_clock = True
        results = self.set_parameters(trigger="joint_states", use_sim_time=True)
        assert all(r.successful for r in results), [r.reason for r in results]
        self.lock_step = True
        assert self.transition("configure"), self.target.output()[-2000:]
        assert self.transition("activate"), self.target.output()[-2000:]
        assert self.commanding(), (self.diag.latest(), self.target.output()[-2000:])

    def call(self, srv_type: Any, name: str, request: Any = None, timeout: float = 5.0) -> Any:
        """Call a service while the robot keeps publishing (one client per service, kept until
        the process is restarted: a new client per call waits for DDS to match it)."""
        cli = self._clients.get(name)
        if cli is None:
            cli = self._clients[name] = self.probe.node.create_client(srv_type, name)
        assert self.robot.pump(timeout, cli.service_is_ready), f"{name} not available"
        future = cli.call_async(srv_type.Request() if request is None else request)
        assert self.robot.pump(timeout, future.done), f"{name} did not answer in {timeout} s"
        return future.result()

    def drop_clients(self) -> None:
        """Destroy the service clients (the process they matched is gone)."""
        for cli in self._clients.values():
            self.probe.node.destroy_client(cli)
        self._clients.clear()
        self.target.close()

    def set_parameters(self, **values: Any) -> list[Any]:
        """SetParameters (what ``ros2 param set`` calls): the results, one per value."""
        from rcl_interfaces.srv import SetParameters
        from rclpy.parameter import Parameter

        request = SetParameters.Request(parameters=[
            Parameter(name, value=value).to_parameter_msg() for name, value in values.items()])
        results = list(self.call(SetParameters, f"/{NODE}/set_parameters", request).results)
        self.changed = self.changed or any(r.successful for r in results)
        return results

    def set_one(self, name: str, value: Any) -> Any:
        """One parameter's SetParametersResult."""
        return self.set_parameters(**{name: value})[0]

    def state(self) -> str:
        """The lifecycle state's label."""
        from lifecycle_msgs.srv import GetState

        return str(self.call(GetState, f"/{NODE}/get_state").current_state.label)

    def transition(self, name: str) -> bool:
        """A lifecycle transition's success (``shutdown`` from whatever state it is in)."""
        from lifecycle_msgs.srv import ChangeState

        self.changed = True
        ids = {"configure": 1, "cleanup": 2, "activate": 3, "deactivate": 4}
        request = ChangeState.Request()
        request.transition.id = ids[name] if name != "shutdown" else \
            {"unconfigured": 5, "inactive": 6, "active": 7}.get(self.state(), 5)
        return bool(self.call(ChangeState, f"/{NODE}/change_state", request, 10.0).success)

    def enable(self, on: bool) -> Any:
        """``/arm_balance/enable``'s answer."""
        from std_srvs.srv import SetBool

        return self.call(SetBool, "/arm_balance/enable", SetBool.Request(data=on))

    def bad(self, level: int, text: str, seconds: float = BAD_S) -> bool:
        """The bad input goes on for ``seconds``; then a status at ``level`` naming ``text`` came."""
        since = self.diag.mark()
        self.robot.pump(seconds)
        return self.diag.wait_for(level, text, REACTION_S, since)

    def commanding(self) -> bool:
        """Good input: commands come and the diagnostics say OK, commanding."""
        self.robot.normal()
        since = self.diag.mark()
        start = self.robot.commands
        self.settled = self.robot.pump(REACTION_S, lambda: self.robot.commands >= start + 10) and \
            self.diag.wait_for(OK, "commanding", REACTION_S, since)
        return self.settled

    def unaffected(self, seconds: float = 0.15) -> list[tuple[int, str]]:
        """What went wrong while an input the node does not use is bent for ``seconds``: statuses
        at ERROR or naming an input problem, or commands stopping (empty: nothing)."""
        since, start = self.diag.mark(), self.robot.commands
        self.robot.pump(seconds)
        wrong = [(lv, m) for t, lv, m in self.diag.history if t >= since and (
            lv == ERROR or "joint states" in m or "job input" in m)]
        if self.robot.commands - start < 5:
            wrong.append((-1, f"{self.robot.commands - start} commands in {seconds} s"))
        return wrong

    def logged(self, text: str, timeout: float = REACTION_S) -> bool:
        """The node's output has ``text`` (a log line) within ``timeout`` s."""
        return self.robot.pump(timeout, lambda: text in self.target.output())

    def quiet(self, seconds: float = 0.2) -> bool:
        """No command for ``seconds`` (what was on its way arrives first)."""
        self.robot.pump(0.1)
        count = self.robot.commands
        self.robot.pump(seconds)
        return self.robot.commands == count

    def reset(self, free_floating: bool = False, lock_step: bool = False) -> None:
        """Back to the baseline: alive, active, ground mode and timer (or ``free_floating``, or
        ``lock_step``), default dynamic parameters, OK."""
        self.robot.normal()
        if self.settled and not self.changed and self.target.alive() and \
                (self.free_floating, self.lock_step) == (free_floating, lock_step):
            return
        state = self.target.live_state(self.state, self.restart)
        if (self.free_floating and not free_floating) or (self.lock_step and not lock_step):
            if state == "active":
                assert self.transition("deactivate")
                state = "inactive"
            if state == "inactive":
                assert self.transition("cleanup")
                state = "unconfigured"
            self.free_floating = self.lock_step = self.robot.sim_clock = False
            self.use_ground()
        if state == "unconfigured":
            assert all(r.successful for r in self.set_parameters(**BASELINE_STATIC))
            assert self.transition("configure"), self.target.output()[-2000:]
            state = "inactive"
        if state == "inactive":
            assert self.transition("activate"), self.target.output()[-2000:]
        if free_floating:
            self.use_free_floating()
        if lock_step:
            self.use_lock_step()
        results = self.set_parameters(**{k: v for k, v in BASELINE.items()
                                         if not free_floating or k not in ("selection", "secondary")})
        assert all(r.successful for r in results), [r.reason for r in results]
        self.robot.job_arm = "right"
        self.enable(True)
        assert self.commanding(), (self.diag.latest(), self.target.output()[-2000:])
        self.changed = False

    def close(self) -> None:
        """Drop the probe's entities, then stop the process (the order ``launch`` keeps)."""
        self.drop_clients()
        self.diag.close()
        self.robot.close()
        self.target.running.stop()


#: the dynamic parameters at the baseline
BASELINE: dict[str, Any] = {
    "job_arm": "right", "selection": ["Lx", "Ly"], "secondary": "",
    "joint_state_timeout": TIMEOUT_S, "job_input_timeout": TIMEOUT_S, "margin_timeout": TIMEOUT_S,
    "guard_slow_margin": 0.03, "guard_hold_margin": 0.01}
#: the parameters read at configure, at the baseline
BASELINE_STATIC: dict[str, Any] = {"mode": "ground", "urdf_path": "", "rate": 500.0,
                                   "use_sim_time": False,
                                   "diagnostics_rate": DIAGNOSTICS_HZ, "trigger": "timer"}


@pytest.fixture(scope="module")
def rig(fault_probe: Probe, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    """The node as a process, configured and activated, fed by the fake robot."""
    made = Rig(fault_probe, tmp_path_factory.mktemp("faults_arm_balance"))
    try:
        made.reset()
        yield made
    finally:
        made.close()


@pytest.fixture
def good(rig: Rig) -> Iterator[Rig]:
    """The rig at its baseline before the test (and the robot's input normal after it)."""
    rig.reset()
    rig.settled = False
    yield rig
    rig.robot.normal()


def case_bad_then_good(rig: Rig, ledger: Ledger, group: str, name: str, level: int, text: str,
                       generated: bool = False) -> None:
    """The bad input (already set on the robot) is named at ``level``; good input recovers."""
    with ledger.case(rig.target, group, name, generated) as case:
        case.require(rig.bad(level, text), lambda: f"{rig.diag.latest()}")
        case.require(rig.commanding(), lambda: f"no recovery: {rig.diag.latest()}")


# --- /joint_states values --------------------------------------------------------------------------


def joint_value(field: str, joint: str, value: float) -> Callable[[Any], Any]:
    """A mutation setting one joint's ``field`` (position, velocity) to ``value``."""
    def mutate(msg: Any) -> Any:
        values = list(getattr(msg, field))
        values[list(msg.name).index(joint)] = value
        setattr(msg, field, values)
        return msg
    return mutate


#: (joint, position, what the diagnostics name): refused whole, named at once (WARN); the arms
#: hold once the last good states are older than the timeout (checked on the first: ERROR)
POSITION_CASES = [
    *[(j, v, "non-finite positions") for j in ("right_elbow", "left_knee") for v in EXTREMES[:3]],
    *[(j, v, "beyond their limits") for j in ("right_elbow", "left_knee") for v in EXTREMES[3:]],
    ("right_elbow", 3.0, "beyond their limits"), ("left_knee", -1.0, "beyond their limits"),
]


@pytest.mark.parametrize(("joint", "value", "text"), POSITION_CASES,
                         ids=[f"{c[0]}={c[1]}" for c in POSITION_CASES])
def test_bad_joint_positions_hold_named_and_recover(good: Rig, ledger: Ledger, joint: str,
                                                   value: float, text: str) -> None:
    """A non-finite or absurd position: refused and named; the arms hold (ERROR); recovery."""
    good.robot.mutate[FakeRobot.STATES] = joint_value("position", joint, value)
    level, seconds = (ERROR, TIMEOUT_S) if POSITION_CASES.index((joint, value, text)) == 0 else \
        (WARN, BAD_S)
    with ledger.case(good.target, "joint_states values", f"{joint} position={value}") as case:
        case.require(good.bad(level, text, seconds), lambda: f"{good.diag.latest()}")
        case.require(good.logged(text), "no log line names it")
        case.require(good.commanding(), lambda: f"no recovery: {good.diag.latest()}")


@pytest.mark.parametrize("value", [math.nan, math.inf, 1e308])
def test_joint_velocities_are_not_used(good: Rig, ledger: Ledger, value: float) -> None:
    """/joint_states velocities are not read: a bad one changes nothing, commanding goes on, OK."""
    good.robot.mutate[FakeRobot.STATES] = joint_value("velocity", "right_elbow", value)
    with ledger.case(good.target, "joint_states values", f"right_elbow velocity={value}") as case:
        wrong = good.unaffected()
        case.require(not wrong, lambda: f"meanwhile: {wrong[:3]}")


# --- job inputs --------------------------------------------------------------------------------------


def job_velocity(joint: int, value: float) -> Callable[[Any], Any]:
    """A mutation of the job joint velocities: one joint's set to ``value``."""
    def mutate(msg: Any) -> Any:
        values = list(msg.velocity)
        values[joint] = value
        msg.velocity = values
        return msg
    return mutate


#: what the diagnostics say of a finite job input beyond the speed limits: the job motion slowed
#: along the request (regime ``scaled`` of :class:`~humanoid_balance.core.rmc.RmcRegime`)
SCALED = "joint limits: scaled (job scale"

JOB_VALUE_CASES = [
    *[(k, math.nan, WARN, "non-finite values") for k in range(7)],
    (0, math.inf, WARN, "non-finite values"), (3, -math.inf, WARN, "non-finite values"),
    (0, 1e308, WARN, "speed limits: ignored"), (6, -1e308, WARN, "speed limits: ignored"),
    (0, 50.0, WARN, SCALED),
]


@pytest.mark.parametrize(("joint", "value", "level", "text"), JOB_VALUE_CASES,
                         ids=[f"{ARM_SUFFIXES[c[0]]}={c[1]}" for c in JOB_VALUE_CASES])
def test_bad_job_joint_velocity_is_named_and_recovered(good: Rig, ledger: Ledger, joint: int,
                                                       value: float, level: int, text: str) -> None:
    """A non-finite or absurd job velocity: the job arm stops or is limited, named; recovery."""
    good.robot.mutate[FakeRobot.JOB_JOINTS] = job_velocity(joint, value)
    case_bad_then_good(good, ledger, "job joint velocities", f"{ARM_SUFFIXES[joint]}={value}",
                       level, text)


TWIST_FIELDS = ("linear.x", "linear.y", "linear.z", "angular.x", "angular.y", "angular.z")


def field_value(member: str, name: str, value: float) -> Callable[[Any], Any]:
    """A mutation: field ``name`` (``part.axis``) of ``msg.<member>`` set to ``value``."""
    def mutate(msg: Any) -> Any:
        part, axis = name.split(".")
        setattr(getattr(getattr(msg, member), part), axis, value)
        return msg
    return mutate


TWIST_CASES = [*[(f, math.nan, "non-finite values") for f in TWIST_FIELDS],
               ("linear.x", math.inf, "non-finite values"),
               ("angular.z", -math.inf, "non-finite values"),
               ("linear.x", 1e308, "beyond any hand speed"),
               ("angular.y", -1e308, "beyond any hand speed"),
               ("linear.z", 5.0, SCALED)]
#: The 5 m/s twist comes while the job arm swings (1 rad/s): the request turns at once, so a few
#: cycles of ``turning`` are right, then a constant request is ``scaled``. (The turning solve
#: once aimed at the last scale times the twist and stayed in ``turning`` the whole 3 s wait;
#: it now aims at the part of the arm's motion along the request, which lines it up.)


@pytest.mark.parametrize(("name", "value", "text"), [
    pytest.param(*c, id=f"{c[0]}={c[1]}") for c in TWIST_CASES])
def test_bad_job_twist_is_named_and_recovered(good: Rig, ledger: Ledger, name: str, value: float,
                                              text: str) -> None:
    """A non-finite or absurd twist field: the job arm stops or is limited, WARN naming it."""
    good.robot.job = "twist"
    good.robot.mutate[FakeRobot.TWIST] = field_value("twist", name, value)
    case_bad_then_good(good, ledger, "job twist", f"{name}={value}", WARN, text)


def frame(frame_id: str) -> Callable[[Any], Any]:
    """A mutation of the header's frame."""
    def mutate(msg: Any) -> Any:
        msg.header.frame_id = frame_id
        return msg
    return mutate


@pytest.mark.parametrize("frame_id", ["world", "", "right_hand"])
def test_job_twist_in_a_wrong_frame_is_named(good: Rig, ledger: Ledger, frame_id: str) -> None:
    """A twist in another frame than W: ignored, the job arm stops, WARN naming the frame."""
    good.robot.job = "twist"
    good.robot.mutate[FakeRobot.TWIST] = frame(frame_id)
    case_bad_then_good(good, ledger, "sizes, names and frames", f"twist in frame {frame_id!r}",
                       WARN, f"frame {frame_id!r}")


# --- the measured stability margin -----------------------------------------------------------------

MARGIN_CASES = [(math.nan, WARN, "not finite"), (math.inf, WARN, "not finite"),
                (-math.inf, WARN, "not finite"), (-1e308, WARN, "holding the job arm"),
                (0.02, WARN, "slowing the job arm"), (-0.5, WARN, "holding the job arm")]


@pytest.mark.parametrize(("value", "level", "text"), MARGIN_CASES,
                         ids=[str(c[0]) for c in MARGIN_CASES])
def test_bad_or_low_margin_is_named_and_recovered(good: Rig, ledger: Ledger, value: float,
                                                  level: int, text: str) -> None:
    """Margins non-finite (ignored) or low (the guard slows, holds): named at WARN; recovery."""
    good.robot.margin_m = value
    case_bad_then_good(good, ledger, "stability margin", f"margin={value}", level, text)


def test_huge_margin_leaves_the_guard_free(good: Rig, ledger: Ledger) -> None:
    """A margin of 1e308 m: the guard stays free (the model's margin still counts); OK."""
    good.robot.margin_m = 1e308
    with ledger.case(good.target, "stability margin", "margin=1e308") as case:
        wrong = good.unaffected()
        case.require(not wrong, lambda: f"meanwhile: {wrong[:3]}")


# --- sizes, names -------------------------------------------------------------------------------------


def fewer_positions(msg: Any) -> Any:
    """Joint states with one position fewer than names."""
    msg.position = list(msg.position)[:-1]
    return msg


def only_names(names: list[str]) -> Callable[[Any], Any]:
    """Joint states naming ``names`` (positions zero)."""
    def mutate(msg: Any) -> Any:
        msg.name, msg.position, msg.velocity = names, [0.0] * len(names), []
        return msg
    return mutate


STATE_STRUCTURE_CASES = [
    ("one position fewer than names", fewer_positions, "positions for"),
    ("no arm joint (legs only)", only_names(["left_knee", "right_knee"]), "s old"),
    ("unknown names only", only_names(["joint1", "joint2"]), "s old"),
    ("empty joint states", only_names([]), "s old"),
]


@pytest.mark.parametrize(("label", "mutate", "text"), STATE_STRUCTURE_CASES,
                         ids=[c[0] for c in STATE_STRUCTURE_CASES])
def test_joint_states_of_wrong_shape_hold_named(good: Rig, ledger: Ledger, label: str,
                                               mutate: Callable[[Any], Any], text: str) -> None:
    """Joint states of the wrong size or without the arm joints: the arms hold, ERROR; recovery."""
    good.robot.mutate[FakeRobot.STATES] = mutate
    with ledger.case(good.target, "sizes, names and frames", f"joint_states: {label}") as case:
        case.require(good.bad(ERROR, text, TIMEOUT_S), lambda: f"{good.diag.latest()}")
        case.require(good.commanding(), lambda: f"no recovery: {good.diag.latest()}")


def job_names(names: list[str], count: int | None = None) -> Callable[[Any], Any]:
    """Job joint velocities naming ``names`` (``count`` velocities, default one each)."""
    def mutate(msg: Any) -> Any:
        msg.name = names
        msg.velocity = [0.1] * (len(names) if count is None else count)
        return msg
    return mutate


JOB_STRUCTURE_CASES = [
    ("the other arm's joints", job_names(list(arm_joints("left")))),
    ("six velocities for seven names", job_names(list(arm_joints("right")), 6)),
    ("unknown names", job_names([f"joint{k}" for k in range(7)])),
    ("six of the seven joints", job_names(list(arm_joints("right"))[:6])),
    ("no names, seven velocities", job_names([], 7)),
]


@pytest.mark.parametrize(("label", "mutate"), JOB_STRUCTURE_CASES,
                         ids=[c[0] for c in JOB_STRUCTURE_CASES])
def test_job_velocities_of_wrong_shape_are_named(good: Rig, ledger: Ledger, label: str,
                                                 mutate: Callable[[Any], Any]) -> None:
    """Job velocities naming other joints or of the wrong size: ignored, WARN naming it."""
    good.robot.mutate[FakeRobot.JOB_JOINTS] = mutate
    case_bad_then_good(good, ledger, "sizes, names and frames", f"job velocities: {label}", WARN,
                       "must name exactly")


# --- stamps ----------------------------------------------------------------------------------------------

#: (label, shift of every joint state's stamp [ns]): beyond joint_state_timeout from the node clock
STAMP_CASES = [("1 s old", -10**9, "behind the node clock"),
               ("5 s in the future", 5 * 10**9, "ahead of the node clock"),
               ("1 hour in the future", 3600 * 10**9, "ahead of the node clock"),
               ("1 hour old", -3600 * 10**9, "behind the node clock")]


def shift_stamp(shift_ns: int) -> Callable[[Any], Any]:
    """A mutation moving the header stamp by ``shift_ns``."""
    from humanoid_balance.nodes.common import stamp_msg

    def mutate(msg: Any) -> Any:
        stamp = int(msg.header.stamp.sec) * 10**9 + int(msg.header.stamp.nanosec)
        msg.header.stamp = stamp_msg(max(stamp + shift_ns, 1))
        return msg
    return mutate


@pytest.mark.parametrize(("label", "shift_ns", "text"), STAMP_CASES,
                         ids=[c[0] for c in STAMP_CASES])
def test_joint_states_stamped_far_from_the_clock_hold_named(good: Rig, ledger: Ledger, label: str,
                                                            shift_ns: int, text: str) -> None:
    """Joint states stamped beyond the timeout, back or ahead: refused and named (WARN); the arms
    hold (ERROR, checked on the first) once the last good ones are old; recovery."""
    good.robot.mutate[FakeRobot.STATES] = shift_stamp(shift_ns)
    level, seconds = (ERROR, TIMEOUT_S) if shift_ns == STAMP_CASES[0][1] else (WARN, BAD_S)
    with ledger.case(good.target, "stamps", f"joint states {label}") as case:
        case.require(good.bad(level, text, seconds), lambda: f"{good.diag.latest()}")
        case.require(good.commanding(), lambda: f"no recovery: {good.diag.latest()}")


def test_stamps_within_the_timeout_are_taken(good: Rig, ledger: Ledger) -> None:
    """Joint states stamped 50 ms ahead, then 50 ms behind, then unstamped: taken; OK."""
    for label, mutate in (("50 ms ahead", shift_stamp(50_000_000)),
                          ("50 ms behind", shift_stamp(-50_000_000)),
                          ("unstamped (0): timed on arrival", _unstamped)):
        good.robot.mutate[FakeRobot.STATES] = mutate
        with ledger.case(good.target, "stamps", f"joint states {label}") as case:
            wrong = good.unaffected()
            case.require(not wrong, f"meanwhile: {wrong[:3]}")


def _unstamped(msg: Any) -> Any:
    msg.header.stamp.sec, msg.header.stamp.nanosec = 0, 0
    return msg


def test_job_input_stamps_are_not_used(good: Rig, ledger: Ledger) -> None:
    """Job velocities stamped 1 hour old: timed on arrival (a job has no measurement to age); OK."""
    good.robot.mutate[FakeRobot.JOB_JOINTS] = shift_stamp(-3600 * 10**9)
    with ledger.case(good.target, "stamps", "job velocities stamped 1 hour old") as case:
        wrong = good.unaffected()
        case.require(not wrong, lambda: f"meanwhile: {wrong[:3]}")


def test_stamps_back_and_ahead_in_turn_hold_named(good: Rig, ledger: Ledger) -> None:
    """Joint states stamped 1 s back and 1 s ahead in turn: all refused, named; recovery."""
    flip = [1]

    def mutate(msg: Any) -> Any:
        flip[0] = -flip[0]
        return shift_stamp(flip[0] * 10**9)(msg)

    good.robot.mutate[FakeRobot.STATES] = mutate
    with ledger.case(good.target, "stamps", "joint states 1 s back and ahead in turn") as case:
        case.require(good.bad(ERROR, "the node clock", TIMEOUT_S), lambda: f"{good.diag.latest()}")
        case.require(good.commanding(), lambda: f"no recovery: {good.diag.latest()}")


# --- lock-step (trigger: joint_states): the stamps drive the cycles --------------------------------


def in_mode(rig: Rig, **mode: bool) -> Iterator[Rig]:
    """The rig reset into ``mode`` at its baseline, for a fixture (kept for the next test;
    reset() goes back); good input again afterwards."""
    rig.reset(**mode)
    rig.settled = False
    yield rig
    rig.robot.normal()


@pytest.fixture
def lock_step(rig: Rig) -> Iterator[Rig]:
    """The rig with ``trigger: joint_states``."""
    yield from in_mode(rig, lock_step=True)


def test_lock_step_commands_carry_the_joint_state_stamps(lock_step: Rig, ledger: Ledger) -> None:
    """Lock-step: the simulation steps on each answer, so commands come stamped with the states
    (checked continuous by the stamps): sim time advances by a period per command."""
    robot = lock_step.robot
    with ledger.case(lock_step.target, "lock-step", "commands stamped as the states") as case:
        start_ns, start = robot.sim_ns, robot.commands
        robot.pump(0.2)
        last = robot.last_command.header.stamp
        stamp = int(last.sec) * 10**9 + int(last.nanosec)
        case.require(stamp in (robot.sim_ns, robot.sim_ns - 2_000_000),
                     f"last command stamped {stamp}, sim time {robot.sim_ns}")
        steps = (robot.sim_ns - start_ns) // 2_000_000
        case.note(f"{steps} steps, {robot.commands - start} commands in 0.2 s")
        case.require(steps >= 10, f"{steps} simulation steps in 0.2 s")


def stamped(shift_ns: int, every: int = 5) -> Callable[[Any], Any]:
    """An injection: a copy of every ``every``-th joint state with its stamp moved by ``shift_ns``
    (the good states go on; others: None, nothing injected)."""
    count = [0]

    def inject(msg: Any) -> Any:
        count[0] += 1
        if count[0] % every:
            return None
        extra = type(msg)(name=list(msg.name), position=list(msg.position),
                          velocity=list(msg.velocity))
        extra.header.stamp = msg.header.stamp
        return shift_stamp(shift_ns)(extra)
    return inject


LOCK_STEP_CASES = [
    ("a copy 10 ms back (reordered) every 5th", stamped(-10_000_000), None),
    ("a copy 1 hour ahead every 5th", stamped(3600 * 10**9), "ahead of the node clock"),
    ("a copy 1 s back every 5th", stamped(-10**9), "behind the node clock"),
    ("every state twice (same stamp)", stamped(0, every=1), None),
    ("a copy 100 ms ahead (within the timeout) once", stamped(100_000_000, every=10**9), None),
]


@pytest.mark.parametrize(("label", "inject", "text"), LOCK_STEP_CASES,
                         ids=[c[0] for c in LOCK_STEP_CASES])
def test_lock_step_stamps(lock_step: Rig, ledger: Ledger, label: str,
                          inject: Callable[[Any], Any], text: str | None) -> None:
    """Lock-step states injected with stamps back, ahead, doubled: no command stamped back or
    jumping (checked), a stamp beyond the timeout named (WARN); commanding goes on or resumes."""
    if "once" in label:  # the one copy now
        inject = stamped(100_000_000, every=1)
        lock_step.robot.inject = lambda m: (setattr(lock_step.robot, "inject", None), inject(m))[1]
    else:
        lock_step.robot.inject = inject
    with ledger.case(lock_step.target, "lock-step", label) as case:
        if text is not None:
            case.require(lock_step.bad(WARN, text), lambda: f"{lock_step.diag.latest()}")
        else:
            lock_step.robot.pump(0.2)
        case.require(lock_step.commanding(), lambda: f"no commanding: {lock_step.diag.latest()}")


# --- inputs stopping and resuming, floods -------------------------------------------------------------

STOP_CASES = [
    ("joint states", (FakeRobot.STATES,), ERROR, "s old"),
    ("job joint velocities", (FakeRobot.JOB_JOINTS,), WARN, "job input older"),
    ("stability margin", (FakeRobot.MARGIN,), WARN, "older than margin_timeout"),
    ("every input", (FakeRobot.STATES, FakeRobot.JOB_JOINTS, FakeRobot.MARGIN), ERROR, "s old"),
]


@pytest.mark.parametrize(("label", "topics", "level", "text"), STOP_CASES,
                         ids=[c[0] for c in STOP_CASES])
def test_input_stopping_is_named_and_resuming_recovers(good: Rig, ledger: Ledger, label: str,
                                                       topics: tuple[str, ...], level: int,
                                                       text: str) -> None:
    """An input stops: named once older than its timeout (the arms hold, decelerating, then send
    nothing; or the job arm stops); commanding again when it resumes."""
    good.robot.paused = set(topics)
    with ledger.case(good.target, "inputs stopping", f"{label} stop") as case:
        case.require(good.bad(level, text, TIMEOUT_S), lambda: f"{good.diag.latest()}")
        case.require(good.logged(text), "no log line names it")
        if FakeRobot.STATES in topics:
            case.require(good.quiet(0.15), "commands still coming after the hold")
            last = good.robot.last_command
            case.require(not any(last.velocity), f"the hold did not stop: {list(last.velocity)}")
        case.require(good.commanding(), lambda: f"no recovery: {good.diag.latest()}")


FLOOD_CASES = [("joint states", FakeRobot.STATES, 10 * STATE_HZ),
               ("job joint velocities", FakeRobot.JOB_JOINTS, 10 * JOB_HZ),
               ("stability margin", FakeRobot.MARGIN, 10 * MARGIN_HZ)]


@pytest.mark.parametrize(("label", "topic", "rate"), FLOOD_CASES, ids=[c[0] for c in FLOOD_CASES])
def test_flood_at_ten_times_the_rate(good: Rig, ledger: Ledger, label: str, topic: str,
                                     rate: float) -> None:
    """An input at 10 times its rate for 0.2 s: commands stay safe and come; OK after."""
    good.robot.rates[topic] = rate
    with ledger.case(good.target, "floods", f"{label} at {rate:g} Hz") as case:
        start, sent = good.robot.commands, good.robot.published
        good.robot.pump(0.2)
        case.note(f"{good.robot.published - sent} messages sent, "
                  f"{good.robot.commands - start} commands came in 0.2 s")
        case.require(good.robot.commands - start > 10, "commands stopped during the flood")
        case.require(good.commanding(), lambda: f"no recovery: {good.diag.latest()}")


def test_flood_of_bad_joint_states(good: Rig, ledger: Ledger) -> None:
    """NaN joint states at 10 times the rate: named (log throttled, the node keeps up); recovery."""
    good.robot.rates[FakeRobot.STATES] = 10 * STATE_HZ
    good.robot.mutate[FakeRobot.STATES] = joint_value("position", "right_elbow", math.nan)
    case_bad_then_good(good, ledger, "floods", "NaN joint states at 2 kHz", ERROR,
                       "non-finite positions")


# --- /arm_balance/enable ---------------------------------------------------------------------------


def test_disable_stops_the_job_arm_within_its_limits_and_is_named(good: Rig, ledger: Ledger) -> None:
    """Disable mid-swing: the job arm decelerates (checked), diagnostics say disabled; enable resumes."""
    with ledger.case(good.target, "enable", "disable mid-swing, enable") as case:
        response = good.enable(False)
        case.require(response.success, response.message)
        case.require(good.diag.wait_for(OK, "disabled", REACTION_S), lambda: f"{good.diag.latest()}")
        good.robot.pump(0.2)
        last = good.robot.last_command
        pitch = dict(zip(last.name, last.velocity, strict=True))["right_shoulder_pitch"]
        case.require(abs(pitch) < 1e-9, f"job arm still at {pitch} rad/s")
        case.require(good.enable(True).success, "enable refused")
        case.require(good.commanding(), lambda: f"no recovery: {good.diag.latest()}")


def test_enable_toggled_fast(good: Rig, ledger: Ledger) -> None:
    """/arm_balance/enable toggled 20 times: every answer success, commands safe; commanding after."""
    with ledger.case(good.target, "enable", "20 toggles") as case:
        answers = [good.enable(k % 2 == 1).success for k in range(20)]
        case.require(all(answers), f"answers {answers}")
        case.require(good.commanding(), lambda: f"no recovery: {good.diag.latest()}")


# --- lifecycle ---------------------------------------------------------------------------------------

STATES = ("unconfigured", "inactive", "active")
TRANSITIONS = ("configure", "activate", "deactivate", "cleanup")
#: (state, transition) -> the state it leads to; the others are refused
VALID = {("unconfigured", "configure"): "inactive", ("inactive", "activate"): "active",
         ("inactive", "cleanup"): "unconfigured", ("active", "deactivate"): "inactive"}
#: a walk trying every transition from every state (shutdown apart: it ends the node): in each
#: state the refused ones first, then the valid one named here to the next state
WALK = (("unconfigured", "configure"), ("inactive", "cleanup"), ("unconfigured", "configure"),
        ("inactive", "activate"), ("active", "deactivate"), ("inactive", "activate"))


def bring_to(rig: Rig, state: str) -> None:
    """From active (the baseline) to ``state`` by valid transitions."""
    path = {"active": [], "inactive": ["deactivate"], "unconfigured": ["deactivate", "cleanup"]}
    for transition in path[state]:
        assert rig.transition(transition), f"{transition}: {rig.target.output()[-1500:]}"
    rig.checker.new_segment()  # a new configure starts from where the arm is measured


def test_every_transition_from_every_state(good: Rig, ledger: Ledger) -> None:
    """Walk the states: refused transitions change nothing, valid ones reach their state; commands
    only while active (each a case)."""
    bring_to(good, "unconfigured")
    tried: set[tuple[str, str]] = set()
    for state, onward in WALK:
        for transition in [t for t in TRANSITIONS if (state, t) not in VALID] + [onward]:
            if (state, transition) in tried and transition != onward:
                continue
            tried.add((state, transition))
            goal = VALID.get((state, transition), state)
            with ledger.case(good.target, "lifecycle", f"{transition} from {state}") as case:
                done = good.transition(transition)
                now = good.state()
                case.require((done, now) == ((state, transition) in VALID, goal),
                             f"{transition} from {state}: success {done}, now {now}")
                if transition == onward and now == "active":
                    case.require(good.commanding(), lambda: f"no commands: {good.diag.latest()}")
                elif transition == onward:
                    case.require(good.quiet(0.15), "commands while not active")
    assert len(tried) == len(STATES) * len(TRANSITIONS)
    assert good.commanding()


def test_deactivate_mid_swing_decelerates_and_activate_resumes(good: Rig, ledger: Ledger) -> None:
    """Deactivate with the job arm at 1 rad/s: holds decelerate (checked), then silence; resume."""
    with ledger.case(good.target, "lifecycle", "deactivate mid-swing, activate") as case:
        case.require(good.transition("deactivate"), "deactivate failed")
        case.require(good.quiet(), "commands after deactivate")
        last = good.robot.last_command
        case.require(not any(last.velocity), f"last command moving: {list(last.velocity)}")
        case.require(good.transition("activate"), "activate failed")
        case.require(good.commanding(), lambda: f"no recovery: {good.diag.latest()}")


def test_kill_9_and_restart(good: Rig, ledger: Ledger) -> None:
    """SIGKILL while commanding; the restarted node, configured and activated, commands again."""
    with ledger.case(good.target, "kill -9", "while commanding, restart") as case:
        os.kill(good.target.running.process.pid, signal.SIGKILL)
        good.target.running.process.popen.wait(5.0)
        good.restart()  # the arm stopped where it was: the new process starts from rest there
        case.note(f"reachable {good.target.running.ready_s:.2f} s after the start (noisy)")
        case.require(good.state() == "unconfigured", good.state)
        case.require(good.transition("configure") and good.transition("activate"),
                     lambda: good.target.output()[-1500:])
        case.require(good.commanding(), lambda: f"no commands: {good.diag.latest()}")


# --- parameters --------------------------------------------------------------------------------------


def job_arm(rig: Rig) -> str:
    """The job arm of the newest command (its first joint's side)."""
    return str(rig.robot.last_command.name[0]).split("_")[0]


def test_job_arm_switch_while_inactive_does_not_swap_the_arms(good: Rig, ledger: Ledger) -> None:
    """Issue 12: job_arm left set while inactive, activated: no step (checked by name); left works."""
    with ledger.case(good.target, "parameters while inactive", "job_arm left, activate") as case:
        good.robot.pump(0.2)  # the arm swinging
        case.require(good.transition("deactivate"), "deactivate failed")
        case.require(good.set_one("job_arm", "left").successful, "job_arm refused while inactive")
        good.robot.job_arm = "left"
        case.require(good.transition("activate"), "activate failed")
        case.require(good.commanding(), lambda: f"no commands: {good.diag.latest()}")
        case.require(job_arm(good) == "left", lambda: f"job arm {job_arm(good)}")
        good.robot.pump(0.3)
        pitch = dict(zip(good.robot.last_command.name, good.robot.last_command.velocity,
                         strict=True))["left_shoulder_pitch"]
        case.require(abs(pitch) > 0.1, f"the left arm does not do the job: {pitch} rad/s")


def test_job_arm_switch_while_active(good: Rig, ledger: Ledger) -> None:
    """job_arm switched mid-swing: no step (checked), the right arm's old input dropped; back again."""
    with ledger.case(good.target, "parameters at run time", "job_arm left and back mid-swing") as case:
        case.require(good.set_one("job_arm", "left").successful, "refused")
        good.robot.job_arm = "left"
        case.require(good.commanding(), lambda: f"{good.diag.latest()}")
        case.require(job_arm(good) == "left", lambda: f"job arm {job_arm(good)}")
        case.require(good.set_one("job_arm", "right").successful, "refused")
        good.robot.job_arm = "right"
        case.require(good.commanding(), lambda: f"{good.diag.latest()}")


#: dynamic parameters set while inactive: the guard margins above the measured margin (0.08 m)
INACTIVE_CHANGES = [("joint_state_timeout", 0.5), ("job_input_timeout", 0.5),
                    ("guard_slow_margin", 0.2), ("guard_hold_margin", 0.1)]


def test_dynamic_parameters_while_inactive_apply_at_activate(good: Rig, ledger: Ledger) -> None:
    """Dynamic parameters set while inactive are taken; read-only ones refused naming configure."""
    bring_to(good, "inactive")
    with ledger.case(good.target, "parameters while inactive", "dynamic ones taken") as case:
        results = good.set_parameters(**dict(INACTIVE_CHANGES))
        case.require(all(r.successful for r in results), str([r.reason for r in results]))
    with ledger.case(good.target, "parameters while inactive", "read-only ones refused") as case:
        for name, value in (("rate", 250.0), ("mode", "free_floating"), ("urdf_path", "/x.urdf")):
            result = good.set_one(name, value)
            case.require(not result.successful and "configure" in result.reason,
                         f"{name}: {result.successful} {result.reason!r}")
    with ledger.case(good.target, "parameters while inactive", "activate with them") as case:
        case.require(good.transition("activate"), "activate failed")
        case.require(good.diag.wait_for(WARN, "holding the job arm", REACTION_S),
                     lambda: f"the new guard margins not applied: {good.diag.latest()}")
        results = good.set_parameters(guard_hold_margin=0.01, guard_slow_margin=0.03)
        case.require(all(r.successful for r in results), str([r.reason for r in results]))
        case.require(good.commanding(), lambda: f"no commands: {good.diag.latest()}")


#: (name, value, what the refusal names)
BAD_PARAMETERS = [
    ("guard_hold_margin", math.nan, "finite"), ("guard_hold_margin", -math.inf, "finite"),
    ("guard_slow_margin", math.inf, "finite"), ("guard_slow_margin", math.nan, "finite"),
    ("guard_hold_margin", 0.05, "below"), ("guard_slow_margin", 0.0, "below"),
    ("joint_state_timeout", 0.0, "> 0"), ("joint_state_timeout", math.nan, "finite"),
    ("job_input_timeout", -1.0, "> 0"), ("margin_timeout", math.inf, "finite"),
    ("selection", ["Qx"], "Qx"), ("selection", ["Lx", "Lx"], "repeated"),
    ("secondary", "Lx", "both in selection"), ("secondary", "Lq", "unknown"),
    ("job_arm", "middle", "middle"), ("rate", 100.0, "configure"),
    ("diagnostics_rate", 1.0, "configure"),
]


@pytest.mark.parametrize(("name", "value", "text"), BAD_PARAMETERS,
                         ids=[f"{c[0]}={c[1]}" for c in BAD_PARAMETERS])
def test_bad_parameter_at_run_time_is_refused(good: Rig, ledger: Ledger, name: str, value: Any,
                                              text: str) -> None:
    """An invalid value at run time: refused with a reason naming it; commanding goes on, OK."""
    with ledger.case(good.target, "parameters at run time", f"{name}={value}") as case:
        result = good.set_one(name, value)
        case.require(not result.successful and text in result.reason,
                     f"{result.successful} {result.reason!r}")
        case.require(good.commanding(), lambda: f"{good.diag.latest()}")


@pytest.mark.parametrize(("name", "value"), [("guard_hold_margin", "low"),
                                             ("joint_state_timeout", True),
                                             ("selection", "Lx")])
def test_parameter_of_the_wrong_type_is_refused(good: Rig, ledger: Ledger, name: str,
                                                value: Any) -> None:
    """A value of another type: refused; commanding goes on."""
    with ledger.case(good.target, "parameters at run time", f"{name}={value!r} (type)") as case:
        result = good.set_one(name, value)
        case.require(not result.successful, "accepted")
        case.require(good.commanding(), lambda: f"{good.diag.latest()}")


def test_run_time_changes_really_apply(good: Rig, ledger: Ledger) -> None:
    """guard_slow/hold margins raised above the measured margin: the job arm holds, named; restored."""
    with ledger.case(good.target, "parameters at run time", "guard margins above the margin") as case:
        results = good.set_parameters(guard_slow_margin=0.5, guard_hold_margin=0.2)
        case.require(all(r.successful for r in results), str([r.reason for r in results]))
        case.require(good.bad(WARN, "holding the job arm"), lambda: f"{good.diag.latest()}")
        results = good.set_parameters(guard_hold_margin=0.01, guard_slow_margin=0.03)
        case.require(all(r.successful for r in results), str([r.reason for r in results]))
        case.require(good.commanding(), lambda: f"{good.diag.latest()}")


CONFIGURE_CASES = [
    ({"guard_hold_margin": 0.05}, "guard_hold_margin=0.05 must be below"),
    ({"urdf_path": "/nonexistent/robot.urdf"}, "/nonexistent/robot.urdf"),
    ({"command_interface": "forward_position", "command_joints": ["left_knee"]}, "left_knee"),
]


@pytest.mark.parametrize(("values", "text"), CONFIGURE_CASES, ids=[c[1] for c in CONFIGURE_CASES])
def test_bad_parameters_at_configure_fail_it_named(good: Rig, ledger: Ledger,
                                                   values: dict[str, Any], text: str) -> None:
    """Values valid one by one but not together (or a missing file): configure fails, logged."""
    bring_to(good, "unconfigured")
    with ledger.case(good.target, "parameters at configure", ", ".join(values)) as case:
        results = good.set_parameters(**values)
        case.require(all(r.successful for r in results), str([r.reason for r in results]))
        case.require(not good.transition("configure"), "configure succeeded")
        case.require(good.state() == "unconfigured", good.state)
        case.require(good.logged(text), lambda: f"no log naming it: {good.target.output()[-800:]}")
        defaults = {"guard_hold_margin": 0.01, "urdf_path": "", "command_interface": "joint_state",
                    "command_joints": [""]}
        good.set_parameters(**{k: defaults[k] for k in values})


# --- free_floating: the base pose ------------------------------------------------------------------

POSE_FIELDS = ("position.x", "position.y", "position.z", "orientation.x", "orientation.y",
               "orientation.z", "orientation.w")


@pytest.fixture
def floating(rig: Rig) -> Iterator[Rig]:
    """The rig in free_floating mode."""
    yield from in_mode(rig, free_floating=True)


POSE_CASES = [*[(f, math.nan, "base pose") for f in POSE_FIELDS],
              ("position.x", math.inf, "base pose"), ("orientation.w", -math.inf, "base pose"),
              ("orientation.w", 2.0, "quaternion is not unit"),
              ("position.x", 1e308, "implausible"), ("position.z", -1e308, "implausible")]


@pytest.mark.parametrize(("name", "value", "text"), POSE_CASES,
                         ids=[f"{c[0]}={c[1]}" for c in POSE_CASES])
def test_bad_base_pose_holds_named_and_recovers(floating: Rig, ledger: Ledger, name: str,
                                               value: float, text: str) -> None:
    """free_floating: a bad base pose is refused and named; once stale the arms hold (ERROR, the
    first two); recovery."""
    floating.robot.mutate[FakeRobot.POSE] = field_value("pose", name, value)
    level, seconds = (ERROR, TIMEOUT_S) if POSE_CASES.index((name, value, text)) < 2 else \
        (WARN, BAD_S)
    with ledger.case(floating.target, "base pose", f"{name}={value}") as case:
        case.require(floating.bad(level, text, seconds), lambda: f"{floating.diag.latest()}")
        case.require(floating.commanding(), lambda: f"no recovery: {floating.diag.latest()}")


def test_base_pose_stopping_holds_named(floating: Rig, ledger: Ledger) -> None:
    """free_floating: the base pose stops: the arms hold, ERROR naming it; it resumes."""
    floating.robot.paused = {FakeRobot.POSE}
    with ledger.case(floating.target, "inputs stopping", "base pose stops") as case:
        case.require(floating.bad(ERROR, "no base pose", TIMEOUT_S),
                     lambda: f"{floating.diag.latest()}")
        case.require(floating.commanding(), lambda: f"no recovery: {floating.diag.latest()}")


def test_base_pose_flood(floating: Rig, ledger: Ledger) -> None:
    """free_floating: the base pose at 10 times its rate: commands safe; OK after."""
    floating.robot.rates[FakeRobot.POSE] = 10 * STATE_HZ
    with ledger.case(floating.target, "floods", f"base pose at {10 * STATE_HZ:g} Hz") as case:
        floating.robot.pump(0.5)
        case.require(floating.commanding(), lambda: f"no recovery: {floating.diag.latest()}")


def test_selection_refused_in_free_floating_mode(floating: Rig, ledger: Ledger) -> None:
    """free_floating: selection does not apply: refused, naming the mode; commanding goes on."""
    with ledger.case(floating.target, "parameters at run time", "selection in free_floating") as case:
        result = floating.set_one("selection", ["Lx"])
        case.require(not result.successful and "free_floating" in result.reason, result.reason)
        case.require(floating.commanding(), lambda: f"{floating.diag.latest()}")


# --- generated (Hypothesis) -------------------------------------------------------------------------

ANY_FLOAT = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                      st.sampled_from([*EXTREMES, 0.0, 5e-324, -1e-300, 3.0, -3.0]))


def expect_named(rig: Rig, values: list[float], finite_text: str | None, bad_text: str,
                 level: int) -> Callable[[], bool]:
    """The check of a generated case: a non-finite value is named at ``level``; finite values
    are named by ``finite_text`` (None: anything goes but ERROR)."""
    def named() -> bool:
        since = rig.diag.mark()
        rig.robot.pump(BAD_S)
        if not all(math.isfinite(v) for v in values):
            return rig.diag.wait_for(level, bad_text, REACTION_S, since)
        if finite_text is not None:
            return rig.diag.wait_for_any([(level, finite_text), (OK, "commanding")], REACTION_S,
                                         since)
        return not any(lv == ERROR for t, lv, _ in rig.diag.history if t >= since)
    return named


def generated_job_case(rig: Rig, ledger: Ledger, group: str, values: list[float], topic: str,
                       mutate: Callable[[Any], Any], job: str | None = None) -> None:
    """Job input made by ``mutate`` from generated ``values``: safe commands; non-finite named;
    recovery."""
    rig.reset()
    shown = ", ".join(f"{v:g}" for v in values)
    with ledger.case(rig.target, group, f"[{shown}]", True) as case:
        if job is not None:
            rig.robot.job = job
        rig.robot.mutate[topic] = mutate
        case.require(expect_named(rig, values, None, "non-finite values", WARN)(),
                     lambda: f"{rig.diag.latest()}")
        case.require(rig.commanding(), lambda: f"no recovery: {rig.diag.latest()}")


@given(values=st.lists(ANY_FLOAT, min_size=7, max_size=7))
@GENERATED
def test_generated_job_joint_velocities(good: Rig, ledger: Ledger, values: list[float]) -> None:
    """Any seven floats as job velocities: safe commands; non-finite named; recovery."""
    def mutate(msg: Any) -> Any:
        msg.velocity = values
        return msg

    generated_job_case(good, ledger, "job joint velocities (generated)", values,
                       FakeRobot.JOB_JOINTS, mutate)


@given(values=st.lists(ANY_FLOAT, min_size=6, max_size=6))
@GENERATED
def test_generated_job_twists(good: Rig, ledger: Ledger, values: list[float]) -> None:
    """Any six floats as the job twist: safe commands; non-finite named; recovery."""
    def mutate(msg: Any) -> Any:
        for name, value in zip(TWIST_FIELDS, values, strict=True):
            field_value("twist", name, value)(msg)
        return msg

    generated_job_case(good, ledger, "job twist (generated)", values, FakeRobot.TWIST, mutate,
                       job="twist")


@given(values=st.lists(ANY_FLOAT, min_size=3, max_size=3),
       joints=st.lists(st.sampled_from([*sorted(ground_limits().names), "left_knee", "waist_pitch"]),
                       min_size=3, max_size=3, unique=True))
@GENERATED
def test_generated_joint_positions(good: Rig, ledger: Ledger, values: list[float],
                                   joints: list[str]) -> None:
    """Any floats as three joints' positions: safe commands; a refusal named; recovery."""
    good.reset()
    shown = ", ".join(f"{j}={v:g}" for j, v in zip(joints, values, strict=True))
    with ledger.case(good.target, "joint_states values (generated)", shown, True) as case:
        def mutate(msg: Any) -> Any:
            for joint, value in zip(joints, values, strict=True):
                joint_value("position", joint, value)(msg)
            return msg

        good.robot.mutate[FakeRobot.STATES] = mutate
        since = good.diag.mark()
        good.robot.pump(BAD_S)
        if not all(math.isfinite(v) for v in values):
            case.require(good.diag.wait_for(WARN, "non-finite positions", REACTION_S, since),
                         lambda: f"{good.diag.latest()}")
        case.require(good.commanding(), lambda: f"no recovery: {good.diag.latest()}")


@given(value=ANY_FLOAT)
@GENERATED
def test_generated_margins(good: Rig, ledger: Ledger, value: float) -> None:
    """Any float as the measured margin: safe commands; non-finite named; recovery."""
    good.reset()
    with ledger.case(good.target, "stability margin (generated)", f"{value:g}", True) as case:
        good.robot.margin_m = value
        case.require(expect_named(good, [value], None, "not finite", WARN)(),
                     lambda: f"{good.diag.latest()}")
        case.require(good.commanding(), lambda: f"no recovery: {good.diag.latest()}")


# --- shutdown (last: each ends the process) ----------------------------------------------------


def shutdown_from(rig: Rig, ledger: Ledger, state: str) -> None:
    """Shutdown from ``state``: success, finalized, no command after; a restart brings it back."""
    bring_to(rig, state)
    with ledger.case(rig.target, "lifecycle", f"shutdown from {state}") as case:
        case.require(rig.transition("shutdown"), "shutdown failed")
        case.require(rig.state() == "finalized", rig.state)
        case.require(rig.quiet(), "commands after shutdown")
        last = rig.robot.last_command
        case.require(not any(last.velocity), "the last command before shutdown moves")


@pytest.mark.parametrize("state", STATES)
def test_shutdown_from_every_state(good: Rig, ledger: Ledger, state: str) -> None:
    """Shutdown from each state finalizes the node (the active one after a deceleration).

    The module's last tests (a finalized node is started again by the next test's reset; the
    last one, from active, needs none).
    """
    shutdown_from(good, ledger, state)
