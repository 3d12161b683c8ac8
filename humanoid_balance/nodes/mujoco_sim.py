"""``mujoco_sim``: the seed robots in MuJoCo, behind the robot's own topics.

``model``: ``humanoid`` (seed 000, standing on a floor), ``lunar_arm`` (seed
004, fixed base) or ``space_robot`` (seed 002, free floating; its default
gravity is 0). Publishes what the robot's drivers would (``/joint_states``;
for the humanoid also the foot F/T and FSR sensors and the waist
inclinometer), ``/clock`` (simulation time; every stamp is simulation time)
and ground truth for checks (``/sim/com``; ``/sim/cop`` for the humanoid). Each topic
but ``/joint_states``, ``/clock`` and ``/diagnostics`` is written only while something
subscribes to it
(:class:`~humanoid_balance.nodes.common.Listeners`: looked at every 0.1 s).
``/tf`` carries ``world`` -> the robot's base link (the URDF's root link: ``pelvis``,
``base_link``) from the simulated base pose at ``tf_rate``
(:mod:`humanoid_balance.sim.tf`), what rviz needs above ``robot_state_publisher``'s
links; it needs ``tf2_msgs`` (a ROS install, no PyPI wheel): without it the node says
once at start-up that ``/tf`` is not published and why (the floating base's pose is
on ``/sim/base_pose`` all the same).
Follows joint commands (sensor_msgs/JointState: position and/or velocity by
name) on each topic of ``command_topics``. A command stamped with the simulation's
time acts as of its stamp
(:func:`~humanoid_balance.sim.command_delay.command_age_s`): one that arrives late, as
commands do free-running on a loaded machine (measured: 2-20 ms, up to 0.3 s),
takes its position where its velocity has moved it since (and its command timeout
runs from its stamp), instead of pulling the servo back to where the arm was meant
to be when it was sent; one stamped further back than ``command_timeout`` is refused
(its joints hold, as for no command); the humanoid's arm servos also close what still jumps
(late or sparse commands free-running, a velocity step in any mode) within the arms'
acceleration limits, as drives do (``arm_acceleration_limits`` of
:class:`~humanoid_balance.sim.humanoid.HumanoidSim`). With ``command_latency`` > 0
(free-running, set by :func:`humanoid_balance.graph.sim_graph`) a stamped command
acts ``command_latency`` after its stamp, as a servo interface plays a command
stream back (:mod:`humanoid_balance.sim.command_delay`): the transport's varying
delay no longer moves the servos' targets; only a command later than that acts as of
``stamp + command_latency``. ``/diagnostics`` gives how late the stamped commands
acted (``command_delay_ms_mean``, ``_max``: after their stamp, or after stamp plus
latency).

The physics runs in a thread of its own at ``real_time_factor`` times wall
time (0 = as fast as possible); subscriptions run in the executor. A command
with an unknown joint, a NaN or mismatched lengths is ignored with a
rate-limited warning; the simulation keeps running.

Lock-step (``lock_step: true``): each time the simulation publishes its sensors
stamped ``t`` it waits, before stepping on, until every topic of
``lock_step_topics`` delivered a message stamped ``>= t`` (the nodes' answer to
that period), at most ``lock_step_timeout`` s of wall time; a late topic is
named in a rate-limited warning and counted as a miss on ``/diagnostics``
(:mod:`humanoid_balance.sim.lock_step`). Time starts only once every lock-step
topic answered once: until then the t = 0 state and ``/clock`` are republished
every 0.1 s, so that a driver can configure and activate the lifecycle nodes
first. A lock-step topic that is also a command topic is applied before the
wait ends, so the command of period ``t`` always acts from ``t`` on.
``real_time_factor`` still caps the speed. A run's result then depends on the
nodes and not on how loaded the machine is.

Joints whose commands stop hold (:mod:`humanoid_balance.sim.command_timeout`):
``command_timeout`` s of simulation time after the last command naming a
joint, its commanded velocity decelerates to rest at ``hold_deceleration``;
``/diagnostics`` says which joints hold until their commands resume.
Parameters: :mod:`humanoid_balance.params.mujoco_sim` (the dynamic ones apply
between two physics steps).

Stopping: SIGINT and SIGTERM end the node with status 0, at any moment. While
the process still imports, they exit it at once
(:mod:`humanoid_balance.nodes.quiet_start`, installed by ``humanoid_balance.nodes`` for
every node); from ``run_node`` on they only
ask the spin loop to stop, and the node's :meth:`MujocoSimNode.stop` then ends
the physics thread before anything is destroyed. The physics thread makes
every rclpy call (publish, log) under one lock and only while not stopped;
``stop`` sets the flag, closes the lock-step wait, takes that lock once (so no
call of the thread runs or starts after it) and joins the thread. rclpy's own
shutdown path (``Context.shutdown`` destroys the node before the rcl context)
goes through ``destroy_node`` and so through ``stop`` too. Should the context
be shut down anyway under a running thread, its failed publish ends the thread
quietly.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from builtin_interfaces.msg import Time as TimeMsg
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import (
    PointStamped,
    PoseStamped,
    Quaternion,
    Transform,
    TransformStamped,
    Vector3,
    WrenchStamped,
)
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray, Header

from humanoid_balance import cdr
from humanoid_balance.cdr import header_stamp_ns
from humanoid_balance.exceptions import ConfigurationError, HumanoidBalanceError
from humanoid_balance.nodes.common import (
    OK,
    READ_AT_START,
    WARN,
    Listeners,
    diagnostic_array,
    diagnostic_status,
    run_node,
    stamp_msg,
    steady_timer,
)
from humanoid_balance.params.mujoco_sim import MODELS, SPEC
from humanoid_balance.params.ros import NodeParameters
from humanoid_balance.resources import urdf_path as package_urdf_path
from humanoid_balance.sim.command_delay import CommandDelay, command_age_s
from humanoid_balance.sim.command_timeout import CommandTimeout
from humanoid_balance.sim.humanoid import SIDES, HumanoidSim, SensorNoise
from humanoid_balance.sim.lock_step import LockStepGate, parse_lock_step_topics
from humanoid_balance.sim.robot import MujocoRobotSim
from humanoid_balance.sim.tf import world_to_base

NODE_NAME = "mujoco_sim"
#: wall s between republications of the t = 0 state while lock-step waits for its first answers
STARTUP_REPUBLISH_S = 0.1
#: wall s a lock-step simulation may run behind real_time_factor and still catch up; beyond
#: it the time spent waiting is given up (the simulation does not race to make it good). With
#: 2 ms it kept 0.86 of real time at real_time_factor 1 (sleep overshoot and waits were lost
#: every period), with 50 ms 0.98, the same as free-running (2-core machine, shared: noisy)
LOCK_STEP_SLACK_S = 0.05
JOINT_STATE_TYPE = "sensor_msgs/msg/JointState"
#: s: the physics thread paces with time.sleep up to this long (stop() waits it out), with
#: the stop event beyond
SHORT_SLEEP_S = 0.02
#: s :meth:`MujocoSimNode.stop` waits for the physics thread (a step and a publish take ~1 ms)
JOIN_TIMEOUT_S = 1.0


def build_simulation(
    model: str, urdf_path: str | None, *, timestep: float, gravity: float | None,
    friction: float, joint_friction: float, sensor_noise: float, seed: int,
    arm_acceleration_limits: bool = False, integrator: str = "implicitfast",
) -> MujocoRobotSim:
    """The simulation of one of :data:`MODELS` (``gravity`` None: the model's default).

    ``arm_acceleration_limits``: the humanoid's arm servos close a command's jump within
    the arms' acceleration limits (:class:`~humanoid_balance.sim.humanoid.HumanoidSim`).
    """
    if model not in MODELS:
        raise HumanoidBalanceError(f"model={model!r}; mujoco_sim simulates {sorted(MODELS)}")
    g = MODELS[model] if gravity is None else gravity
    if model == "humanoid":
        return HumanoidSim(urdf_path, timestep=timestep, gravity=g, friction=friction,
                           joint_friction=joint_friction, noise=SensorNoise.nominal(sensor_noise),
                           seed=seed, arm_acceleration_limits=arm_acceleration_limits,
                           integrator=integrator)
    if model == "lunar_arm":
        from humanoid_balance.sim.lunar_arm import TABLE6_NOISE_RATIO, LunarArmSim

        # efforts as the arm's drives measure them: k_e I with the noise of seed 004's
        # Table 6 times sensor_noise, Coulomb friction from joint_friction
        return LunarArmSim(gravity=g, coulomb_friction=joint_friction, timestep=timestep, seed=seed,
                           torque_noise_ratio=[sensor_noise * r for r in TABLE6_NOISE_RATIO],
                           urdf=urdf_path, integrator=integrator)
    noise = SensorNoise.nominal(sensor_noise)
    path = urdf_path or str(package_urdf_path(model))
    return MujocoRobotSim(path, floating_base=(model == "space_robot"), timestep=timestep,
                          gravity=g, joint_friction=joint_friction,
                          joint_position_noise=noise.joint_position_rad, seed=seed,
                          integrator=integrator)


def tf_message_class() -> Any | None:
    """``tf2_msgs/msg/TFMessage``, or None where ``tf2_msgs`` is not installed.

    It comes with a ROS install (``ros-<distro>-tf2-msgs``), not from PyPI.
    """
    try:
        from tf2_msgs.msg import TFMessage
    except ImportError:
        return None
    return TFMessage


def shut_down_by(node: Node, exc: BaseException) -> bool:
    """``exc`` came from using ``node`` after SIGINT/SIGTERM shut its context down.

    rclpy's signal handler shuts the rcl context down from a thread of its own: a
    publish fails with "publisher's context is invalid" while the context may still
    report ok for a moment.
    """
    return not node.context.ok() or "context is invalid" in str(exc)


class MujocoSimNode(Node):
    """The simulation node; see the module docstring."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(NODE_NAME, **kwargs)  # type: ignore[arg-type]
        # first: a node whose parameters are refused below is still destroyed (stop()) at the
        # context's shutdown
        self._stop = threading.Event()
        self.gate: LockStepGate | None = None
        self._thread: threading.Thread | None = None
        self._started = False
        self.params = NodeParameters(self, SPEC, configured=lambda: self._started,
                                     read_only_reason=READ_AT_START)
        p = self.params.read()
        model = str(p["model"])
        self.sim = build_simulation(
            model, p["urdf_path"] or None, timestep=p["timestep"],
            gravity=None if p["gravity"] < 0 else p["gravity"], friction=p["friction"],
            joint_friction=p["joint_friction"], sensor_noise=p["sensor_noise"], seed=p["seed"],
            # the arms' drives, as the robot's: a command that jumps is closed within their limits
            arm_acceleration_limits=True, integrator=p["integrator"])
        self.humanoid = self.sim if isinstance(self.sim, HumanoidSim) else None
        names = [n for n in p["initial_joint_names"] if n]
        if names:
            self.sim.reset(dict(zip(names, p["initial_joint_positions"], strict=True)))
        self.real_time_factor = float(p["real_time_factor"])
        lock_topics = parse_lock_step_topics(list(p["lock_step_topics"]))
        self.lock_step_timeout = float(p["lock_step_timeout"])
        #: the lock-step wait (None: free-running)
        self.gate = LockStepGate([t.topic for t in lock_topics]) if p["lock_step"] else None
        self._waiting_for: list[str] = []
        rate = float(p["publish_rate"])
        self.publish_every = max(1, round(1.0 / (rate * self.sim.timestep))) if rate > 0 else 1
        self.inclinometer_every = self._sample_every(p["inclinometer_rate"])
        self.clock_every = self._sample_every(p["clock_rate"])
        #: steps between two /tf messages (0: none)
        self.tf_every = self._sample_every(p["tf_rate"]) if p["tf_rate"] > 0 else 0
        self.duration = float(p["duration"])
        self.timeout = CommandTimeout(self.sim.joint_names, timeout_s=p["command_timeout"],
                                      deceleration_rad_s2=p["hold_deceleration"])
        #: stamped commands held until stamp + command_latency (None: each acts as it comes)
        self.delay: CommandDelay[tuple[int, tuple[str, ...], np.ndarray | None,
                                       np.ndarray | None]] | None = \
            CommandDelay(p["command_latency"], horizon_s=p["command_timeout"]) \
            if p["command_latency"] > 0 else None

        qos = QoSProfile(depth=10)
        self.pub_joints = self.create_publisher(JointState, "/joint_states", qos)
        # reliable /clock: matches reliable and best-effort subscribers (rclpy's TimeSource)
        self.pub_clock = self.create_publisher(Clock, "/clock", qos)
        self.pub_com = self.create_publisher(PointStamped, "/sim/com", qos)
        # ground truth of a floating base (humanoid, space robot): what a state estimator gives
        self.pub_base = self.create_publisher(PoseStamped, "/sim/base_pose", qos) \
            if self.sim.floating_base else None
        sides = SIDES if self.humanoid is not None else ()
        self.pub_ft = {s: self.create_publisher(WrenchStamped, f"/{s}_foot/ft", qos) for s in sides}
        self.pub_fsr = {s: self.create_publisher(Float64MultiArray, f"/{s}_foot/fsr", qos)
                        for s in sides}
        if self.humanoid is not None:
            self.pub_imu = self.create_publisher(Imu, "/waist/inclinometer", qos)
            self.pub_cop = self.create_publisher(PointStamped, "/sim/cop", qos)
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", qos)
        self._tf_message = tf_message_class() if self.tf_every else None
        self.pub_tf = None if self._tf_message is None else \
            self.create_publisher(self._tf_message, "/tf", QoSProfile(depth=100))
        #: the ground truth and the sensors beside /joint_states and /clock: each is written and
        #: published only while a subscriber is matched. The readings, noise draws included, are
        #: the same either way: who listens does not change the simulation
        self.listeners = Listeners((self.pub_com, self.pub_base, *self.pub_ft.values(),
                                    *self.pub_fsr.values(), getattr(self, "pub_imu", None),
                                    getattr(self, "pub_cop", None), self.pub_tf))
        if self.tf_every and self.pub_tf is None:
            where = "on /sim/base_pose (geometry_msgs/PoseStamped)" if self.sim.floating_base \
                else "the identity (a fixed base)"
            self.get_logger().warning(
                f"/tf is not published: tf2_msgs is not installed (it comes with ROS, e.g. "
                f"ros-<distro>-tf2-msgs, not from PyPI), so nothing gives world -> "
                f"{self.sim.root_body} to rviz; the base pose is {where}")
        self._lock = threading.Lock()
        self._pending: list[tuple[int, tuple[str, ...], np.ndarray | None,
                                  np.ndarray | None]] = []
        #: the commands' delays [s of simulation time] since the last diagnostics (sum, count,
        #: max): how late a stamped command arrived
        self._delays = [0.0, 0, 0.0]
        self.commands_applied = 0
        self.commands_rejected = 0
        #: lock-step answers whose bytes hold no header stamp (not plain little-endian CDR,
        #: shorter than a stamp)
        self.answers_unreadable = 0
        #: why the newest rejected command was rejected ("" : none yet)
        self.last_rejection = ""
        command_topics = [str(t) for t in p["command_topics"] if t]
        #: command names already checked (the tuple a reader returns while the names repeat) ->
        #: the names the model does not have
        self._unknown_names: dict[tuple[str, ...], list[str]] = {}
        for topic in command_topics:
            # raw: read with humanoid_balance.cdr, no rclpy message built per command
            self.create_subscription(JointState, topic, self._command_callback(topic), qos,
                                     raw=True)
        if self.gate is not None:
            for lock_topic in lock_topics:
                if lock_topic.topic in command_topics:
                    # one subscription: the command is queued before its period's wait ends
                    if lock_topic.type_name != JOINT_STATE_TYPE:
                        raise ConfigurationError(
                            f"{lock_topic.topic} is a command topic ({JOINT_STATE_TYPE}) and a "
                            f"lock-step topic of type {lock_topic.type_name}: give it one type")
                    continue
                self.create_subscription(lock_topic.message_class(), lock_topic.topic,
                                         self._answer_callback(lock_topic.topic), qos, raw=True)

        # the 1 kHz messages are written as CDR bytes (humanoid_balance.cdr): no rclpy message is
        # built in the physics thread (the IMU gives its orientation only: -1 covariances)
        not_provided = (-1.0,) + (0.0,) * 8
        self._raw_joints = cdr.JointStateWriter(self.sim.joint_names)
        self._raw_point = cdr.PointStampedWriter("world")
        self._raw_base = cdr.pose_stamped_writer("world")
        self._raw_ft = {s: cdr.wrench_stamped_writer(f"{s}_foot_ft") for s in SIDES}
        self._raw_imu = cdr.imu_writer("waist_plate", angular_velocity_covariance=not_provided,
                                       linear_acceleration_covariance=not_provided)
        #: held by the physics thread around each of its rclpy calls (see the module docstring)
        self._rclpy_lock = threading.Lock()
        self.finished = threading.Event()
        # wall, sim time, lock-step misses, rejected commands at the last report
        self._report = (time.monotonic(), self.sim.time, 0, 0)
        # the steady clock, as every node's /diagnostics (steady_timer)
        self._diag_timer = steady_timer(self, 1.0 / p["diagnostics_rate"],
                                        self._publish_diagnostics)
        self._thread = threading.Thread(target=self._run, name="mujoco_sim_physics", daemon=True)
        lock = "free-running" if self.gate is None else \
            f"lock-step on {list(self.gate.topics)} (timeout {self.lock_step_timeout:g} s)"
        self.get_logger().info(
            f"simulating {model} ({len(self.sim.joint_names)} joints), gravity "
            f"{-self.sim.model.opt.gravity[2]:.3f} m/s^2, dt {self.sim.timestep} s, "
            f"real-time factor {self.real_time_factor or 'max'}, publishing every "
            f"{self.publish_every} step(s) (/clock every {self.clock_every}), {lock}, command timeout "
            f"{self.timeout.timeout_s:g} s")
        self._started = True
        self._thread.start()

    # --- parameters and commands ----------------------------------------------

    def _sample_every(self, rate_hz: float) -> int:
        """Steps between two samples at ``rate_hz`` (0: every publish): every Nth publish.

        The inclinometer's rate is a tilt sensor's (the waist's outer loop runs at 50 Hz),
        so that a waist controller does not spend its time on 1 kHz of samples it cannot
        use; /tf's is what a display needs.
        """
        if rate_hz <= 0:
            return self.publish_every
        return self.publish_every * max(1, round(
            1.0 / (rate_hz * self.sim.timestep * self.publish_every)))

    def _apply_parameters(self, changes: Mapping[str, Any]) -> None:
        """Dynamic parameter changes accepted by the spec; called between two physics steps."""
        if "real_time_factor" in changes:
            self.real_time_factor = float(changes["real_time_factor"])
        if "lock_step_timeout" in changes:
            self.lock_step_timeout = float(changes["lock_step_timeout"])
        if "inclinometer_rate" in changes:
            self.inclinometer_every = self._sample_every(float(changes["inclinometer_rate"]))
        if "command_timeout" in changes or "hold_deceleration" in changes:
            self.timeout.configure(timeout_s=changes.get("command_timeout"),
                                   deceleration_rad_s2=changes.get("hold_deceleration"))
            if self.delay is not None and "command_timeout" in changes:
                self.delay.horizon_s = float(changes["command_timeout"])
        self._log("info", "parameters changed: " + ", ".join(
            f"{name}={value!r}" for name, value in changes.items()))

    def _command_callback(self, topic: str) -> Callable[[bytes], None]:
        """The raw callback of command topic ``topic`` (also the lock-step answer when it is one)."""
        answers = self.gate is not None and topic in self.gate.topics
        reader = cdr.JointStateReader()  # one per topic: it caches that publisher's names

        def on_command(data: bytes) -> None:
            try:
                msg = reader.read(data)
            except HumanoidBalanceError as exc:
                self._reject(f"a command on {topic} is not a readable JointState ({exc})")
                return
            self._on_command(msg)
            if answers:
                assert self.gate is not None
                self._deliver(topic, msg.stamp_ns)

        return on_command

    def _answer_callback(self, topic: str) -> Callable[[bytes], None]:
        """The raw callback of lock-step topic ``topic``: only its header stamp is read."""
        def on_answer(cdr: bytes) -> None:
            assert self.gate is not None
            try:
                stamp = header_stamp_ns(cdr)
            except HumanoidBalanceError as exc:
                self.answers_unreadable += 1
                self.get_logger().warning(f"{topic}: {exc}: not an answer",
                                          throttle_duration_sec=1.0)
                return
            self._deliver(topic, stamp)

        return on_answer

    def _deliver(self, topic: str, stamp_ns: int) -> None:
        """A lock-step answer to the gate; one stamped beyond the newest published period is
        refused with a rate-limited warning (it answers no period of this simulation)."""
        assert self.gate is not None
        if not self.gate.deliver(topic, stamp_ns):
            self._log("warning", f"lock-step: an answer on {topic} stamped {stamp_ns * 1e-9:.3f} s, "
                                 "beyond the newest period published: not taken (is its node on "
                                 "use_sim_time?)", throttle_s=1.0)

    def _on_command(self, msg: cdr.JointStateSample) -> None:
        names = msg.names
        # copies: the reader's arrays are views of the message's bytes
        position = msg.position.copy() if len(msg.position) else None
        velocity = msg.velocity.copy() if len(msg.velocity) else None
        problem = None
        if not names:
            problem = "a command names no joint"
        elif position is None and velocity is None:
            problem = "a command has neither position nor velocity"
        else:
            unknown = self._unknown_names.get(names)
            if unknown is None:
                unknown = [n for n in names if n not in self.sim.joint_names]
                if len(self._unknown_names) < 64:  # a few publishers' name lists
                    self._unknown_names[names] = unknown
            if unknown:
                problem = f"a command names joints the model does not have: {unknown}"
            for label, values in (("position", position), ("velocity", velocity)):
                if problem is None and values is not None:
                    if values.shape != (len(names),):
                        problem = (f"a command has {values.size} {label} values "
                                   f"for {len(names)} names")
                    elif not np.isfinite(values).all():
                        problem = f"a command has a non-finite {label}"
        if problem is not None:
            self._reject(problem)
            return
        with self._lock:
            self._pending.append((msg.stamp_ns, names, position, velocity))

    def _reject(self, problem: str) -> None:
        """Count and (rate-limited) log a command ignored because of ``problem``."""
        self.commands_rejected += 1
        self.last_rejection = problem
        self.get_logger().warning(f"{problem}: command ignored", throttle_duration_sec=1.0)

    # --- physics thread -------------------------------------------------------------

    def _running(self) -> bool:
        """Neither stopped nor shut down (SIGINT, SIGTERM)."""
        return not self._stop.is_set() and self.context.ok()

    def _ros(self, call: Callable[[], object]) -> bool:
        """Run ``call`` (an rclpy call of the physics thread) unless the node is stopping.

        Under :attr:`_rclpy_lock`: once :meth:`stop` took that lock, no call runs or
        starts. A call that fails because the context went away anyway stops the thread.

        Returns:
            False when the node is stopping (the call did not run or failed for that).
        """
        with self._rclpy_lock:
            if not self._running():
                return False
            try:
                call()
            except Exception as exc:
                if self._running() and not shut_down_by(self, exc):
                    raise
                self._stop.set()
                return False
        return True

    def _log(self, level: str, text: str, throttle_s: float = 0.0) -> None:
        """Log from the physics thread (nothing once the node is stopping)."""
        def call() -> None:
            logger = self.get_logger()
            log = logger.warning if level == "warning" else (
                logger.error if level == "error" else logger.info)
            if throttle_s > 0:
                log(text, throttle_duration_sec=throttle_s)
            else:
                log(text)

        self._ros(call)

    def _run(self) -> None:
        sim_t0 = self.sim.time
        try:
            if self._wait_for_start():
                self._simulate()
        except HumanoidBalanceError as exc:
            self._log("error", f"simulation stopped: {exc}")
        finally:
            self.finished.set()
        if self.duration > 0:
            self._log("info", f"ran {self.sim.time - sim_t0:.3f} s of simulation: done")

    def _publish_or_stop(self) -> int | None:
        """Publish the sensors; their stamp, ns, or None when the node is stopping."""
        # the time rounded to the ns, as nodes.common.seconds_stamp (1.9999999999 s is 2 s)
        ns = round(self.sim.time * 1e9)
        if self.gate is not None:  # before the state goes out: its answers may come at once
            self.gate.publishing(ns)
        return ns if self._ros(lambda: self._publish(ns)) else None

    def _wait_for_start(self) -> bool:
        """Lock-step: republish the t = 0 state until every lock-step topic answered once.

        Returns:
            False when the node stopped meanwhile.
        """
        gate = self.gate
        if gate is None:
            return True
        logged = False
        while self._running():
            t_ns = self._publish_or_stop()
            if t_ns is None:
                return False
            late = gate.wait(t_ns, STARTUP_REPUBLISH_S, count_misses=False)
            if gate.closed:
                return False
            self._waiting_for = late
            if not late:
                self._log("info", f"lock-step: every topic answered; time runs from "
                                  f"t = {self.sim.time:.3f} s")
                return True
            if not logged:
                logged = True
                self._log("info", f"lock-step: waiting for a first message on {late} before time "
                                  f"runs (the t = {self.sim.time:.3f} s state and /clock are "
                                  f"republished every {STARTUP_REPUBLISH_S:g} s)")
        return False

    def _apply_pending(self) -> None:
        delay = self.delay
        if not self._pending and not delay:  # most steps (a racing append is taken the next step)
            return
        pending = []
        if self._pending:
            with self._lock:
                pending, self._pending = self._pending, []
        now = self.sim.time
        timeout_s = self.timeout.timeout_s
        if delay is not None:  # held until stamp + latency; applied as of that time
            now_ns = round(now * 1e9)
            for command in pending:
                delay.push(command[0], now_ns, command)
            aged = list(delay.due_aged(now, timeout_s))
        else:  # each as of its stamp
            aged = [(command_age_s(command[0], now, timeout_s), command) for command in pending]
        for age, (stamp_ns, names, position, velocity) in aged:
            if age == math.inf:  # older than the command timeout: its joints hold
                self._reject_due(
                    f"a command stamped {stamp_ns * 1e-9:.3f} s is older than command_timeout="
                    f"{timeout_s:g} s at simulation time {now:.3f} s: not applied (its joints "
                    "hold); stamp commands with the simulation's time (use_sim_time) or leave "
                    "them unstamped")
                continue
            try:
                self.sim.set_targets(names, position, velocity, age_s=age)
                self.timeout.commanded(names, now - age)
                self.commands_applied += 1
                if age > 0.0:
                    delays = self._delays
                    delays[0] += age
                    delays[1] += 1
                    delays[2] = max(delays[2], age)
            except HumanoidBalanceError as exc:  # checked on receipt; belt and braces
                self._reject_due(str(exc))

    def _reject_due(self, problem: str) -> None:
        """:meth:`_reject` for a command due in the physics thread (logged through :meth:`_log`)."""
        self.commands_rejected += 1
        self.last_rejection = problem
        self._log("warning", problem, throttle_s=1.0)

    def _simulate(self) -> None:
        """Step, publish every ``publish_every`` steps (and wait in lock-step), pace to real time."""
        sim, gate = self.sim, self.gate
        wall0 = time.perf_counter()
        sim_t0 = pace_t0 = sim.time  # pace_t0: when the factor in use took effect
        rtf_in_use = self.real_time_factor
        steps = 0
        # free-running catches up to 0.5 s of lag; lock-step never runs faster than the factor
        behind_limit = 0.5 if gate is None else LOCK_STEP_SLACK_S
        # rclpy's context (Context.ok takes a lock) is checked where the state goes out, in
        # _ros every publish_every steps, not here as well every step
        while not self._stop.is_set():
            changes = self.params.take_pending()
            if changes:
                self._apply_parameters(changes)
            self._apply_pending()
            self.timeout.step(sim, sim.time)
            sim.step()
            steps += 1
            if steps % self.publish_every == 0:
                t_ns = self._publish_or_stop()
                if t_ns is None:
                    return
                if gate is not None:
                    late = gate.wait(t_ns, self.lock_step_timeout)
                    if gate.closed:
                        return
                    if late:
                        self._log("warning",
                                  f"lock-step: no answer on {late} for t = {t_ns * 1e-9:.3f} s "
                                  f"within lock_step_timeout={self.lock_step_timeout:g} s: "
                                  f"stepping on (misses: {sum(gate.misses.values())})",
                                  throttle_s=1.0)
                    self._apply_pending()  # the answers of this period act from now on
            if self.duration > 0 and sim.time - sim_t0 >= self.duration:
                return
            rtf = self.real_time_factor
            if rtf != rtf_in_use:  # a new factor paces from here on
                rtf_in_use = rtf
                wall0, pace_t0 = time.perf_counter(), sim.time
            if rtf > 0:
                ahead = (sim.time - pace_t0) / rtf - (time.perf_counter() - wall0)
                if ahead > 0.0005:
                    # a plain sleep for the usual < 1 ms (Event.wait allocates a lock per call);
                    # a long wait stays interruptible by stop()
                    if ahead <= SHORT_SLEEP_S:
                        time.sleep(ahead)
                    else:
                        self._stop.wait(ahead)
                elif ahead < -behind_limit:  # behind: do not try to catch up
                    wall0 = time.perf_counter() - (sim.time - pace_t0) / rtf

    def _publish(self, ns: int) -> None:
        """Publish the sensors (CDR bytes) stamped ``ns`` [ns]."""
        sim = self.sim
        step = round(sim.time / sim.timestep)  # the step's index, for the sampled topics
        if step % self.clock_every == 0:
            self.pub_clock.publish(cdr.clock_message(ns))
        listened = self.listeners.heard()
        humanoid = self.humanoid
        # the humanoid's sensors in one read (one noise draw: the readings of reading them
        # one by one, at about four fifths of the cost); other robots have joints and ground truth only
        readings = None if humanoid is None else \
            humanoid.read_sensors(inclinometer=step % self.inclinometer_every == 0)
        js = sim.joint_state() if readings is None else readings.joints
        self.pub_joints.publish(self._raw_joints.write(ns, js.position, js.velocity, js.effort))
        if self.pub_com in listened:
            x, y, z = (sim.com() if readings is None else readings.com).tolist()
            self.pub_com.publish(self._raw_point.write(ns, x, y, z))
        if self.pub_base is not None and self.pub_base in listened:
            position, quaternion = sim.base_pose() if readings is None else \
                (readings.base_position, readings.base_orientation_xyzw)
            self.pub_base.publish(self._raw_base.write(ns, (*position, *quaternion)))
        if self.pub_tf is not None and self.pub_tf in listened and step % self.tf_every == 0:
            self.pub_tf.publish(self._tf(stamp_msg(ns)))
        if readings is None:
            return
        for i, side in enumerate(SIDES):
            if self.pub_ft[side] in listened:
                self.pub_ft[side].publish(self._raw_ft[side].write(ns, readings.wrench[i]))
            if self.pub_fsr[side] in listened:
                self.pub_fsr[side].publish(cdr.float64_multi_array_message(readings.fsr[i]))
        if readings.inclinometer_xyzw is not None and self.pub_imu in listened:
            self.pub_imu.publish(self._raw_imu.write(ns, readings.inclinometer_xyzw))
        if readings.cop is not None and self.pub_cop in listened:
            x, y, z = readings.cop.tolist()
            self.pub_cop.publish(self._raw_point.write(ns, x, y, z))

    def _tf(self, stamp: TimeMsg) -> Any:
        """The ``/tf`` message: ``world`` -> the base link at ``stamp`` (tf2_msgs/TFMessage)."""
        base = world_to_base(self.sim)
        x, y, z = (float(v) for v in base.position_base_in_world)
        qx, qy, qz, qw = (float(v) for v in base.orientation_base_in_world_xyzw)
        assert self._tf_message is not None
        return self._tf_message(transforms=[TransformStamped(
            header=Header(stamp=stamp, frame_id=base.parent_frame),
            child_frame_id=base.child_frame,
            transform=Transform(translation=Vector3(x=x, y=y, z=z),
                                rotation=Quaternion(x=qx, y=qy, z=qz, w=qw)))])

    def _publish_diagnostics(self) -> None:
        """Speed, commands, holds and (lock-step) late answers on /diagnostics."""
        wall, sim_time = time.monotonic(), self.sim.time
        last_wall, last_sim, last_misses, last_rejected = self._report
        holding = self.timeout.holding
        values: dict[str, object] = {
            "sim_time_s": sim_time,
            "real_time_factor": (sim_time - last_sim) / max(wall - last_wall, 1e-9),
            "commands_applied": self.commands_applied,
            "commands_rejected": self.commands_rejected,
            "answers_unreadable": self.answers_unreadable,
            "command_age_s": self.timeout.age_s(sim_time),
            **self._take_delays(),
            "holding": ",".join(holding) or "none",
            "holds": self.timeout.holds,
            "lock_step": self.gate is not None,
            "unheard_topics": self.listeners.unheard(),
        }
        level, message = OK, "finished" if self.finished.is_set() else "running"
        misses = 0
        gate = self.gate
        if gate is not None:
            misses = sum(gate.misses.values())
            values.update(lock_step_periods=gate.periods, lock_step_misses=misses,
                          lock_step_answers_ahead=sum(gate.ahead.values()))
            for topic, count in gate.misses.items():
                values[f"misses {topic}"] = count
            if gate.periods == 0 and self._waiting_for:
                message = f"lock-step: waiting for a first message on {self._waiting_for}"
        problems = []
        if gate is not None and misses > last_misses:
            late = [t for t, n in gate.misses.items() if n]
            problems.append(f"lock-step: {misses - last_misses} late answer(s) since the last "
                            f"report on {late} (total {misses}): the simulation went on after "
                            f"lock_step_timeout={self.lock_step_timeout:g} s")
        if holding:
            problems.append(f"commands timed out: no command for more than "
                            f"{self.timeout.timeout_s:g} s on {list(holding)}: holding "
                            f"(decelerating at {self.timeout.deceleration_rad_s2:g} rad/s^2 to "
                            "rest) until their commands resume")
        rejected = self.commands_rejected
        if rejected > last_rejected:
            problems.append(f"{rejected - last_rejected} command(s) ignored since the last "
                            f"report, the newest because {self.last_rejection}")
        if problems:
            level, message = WARN, "; ".join(problems)
        self._report = (wall, sim_time, misses, rejected)
        status = diagnostic_status(NODE_NAME, level, message, values)
        try:
            self.pub_diag.publish(diagnostic_array(self, [status]))
        except Exception as exc:
            if not shut_down_by(self, exc):
                raise

    def _take_delays(self) -> dict[str, float]:
        """The stamped commands' delays since the last call [ms]: mean and max (0: none late)."""
        total, count, largest = self._delays
        self._delays = [0.0, 0, 0.0]
        return {"command_delay_ms_mean": 1e3 * total / count if count else 0.0,
                "command_delay_ms_max": 1e3 * largest}

    def stop(self) -> None:
        """Stop the physics thread: no rclpy call of it runs or starts after this; join it."""
        self._stop.set()
        if self.gate is not None:
            self.gate.close()
        if self._thread is None or self._thread is threading.current_thread():
            return  # no physics thread yet (parameters refused) or called from it
        with self._rclpy_lock:  # a publish or log of the thread under way ends first
            pass
        if self._thread.is_alive():
            self._thread.join(timeout=JOIN_TIMEOUT_S)

    def destroy_node(self) -> None:
        """Stop the physics, then destroy the node."""
        self.stop()
        super().destroy_node()


def main(args: Sequence[str] | None = None) -> int:
    """Console script ``mujoco_sim``."""
    def finished(node: Node) -> bool:
        return isinstance(node, MujocoSimNode) and node.finished.is_set()

    return run_node(MujocoSimNode, args, done=finished, stop_signals=True, exit_process=True)


if __name__ == "__main__":
    raise SystemExit(main())
