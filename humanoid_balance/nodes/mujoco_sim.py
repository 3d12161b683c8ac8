"""``mujoco_sim``: the seed robots in MuJoCo, behind the robot's own topics.

``model``: ``humanoid`` (seed 000, on a floor), ``lunar_arm`` (seed 004, fixed base) or
``space_robot`` (seed 002, free floating; default gravity 0). Publishes what the robot's
drivers would (``/joint_states``; the humanoid's foot F/T and FSR sensors and waist
inclinometer), ``/clock`` (every stamp is simulation time), ground truth (``/sim/com``,
``/sim/base_pose``, ``/sim/cop``) and ``/tf`` (``world`` -> the base link; without
``tf2_msgs``, a ROS package, the node says once why not). Topics beside ``/joint_states``,
``/clock`` and ``/diagnostics`` are written only while heard (``Listeners``). Follows
JointState commands on ``command_topics``; test-only faults on ``/sim/fault``
(:data:`~humanoid_balance.sim.sensor_messages.SIM_FAULT_TOPIC`). Commands, the command
timeout, publish periods, lock-step and pacing: :class:`~humanoid_balance.sim.runner.SimRunner`,
in a thread of its own. Parameters: :mod:`humanoid_balance.params.mujoco_sim`.

Stopping: SIGINT and SIGTERM end the node with status 0; :meth:`MujocoSimNode.stop` ends the
physics thread before anything is destroyed (also through ``destroy_node``). The physics
thread makes every rclpy call under one lock and only while not stopping; ``stop`` stops the
runner (its waits wake at once), joins its thread and takes that lock once, so no call of
the thread runs or starts after it. A publish failing on a context shut down ends the thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

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
from std_msgs.msg import Float64MultiArray, Header, String

from humanoid_balance import cdr
from humanoid_balance.cdr import header_stamp_ns
from humanoid_balance.exceptions import HumanoidBalanceError
from humanoid_balance.nodes.common import (
    READ_AT_START,
    Listeners,
    diagnostic_array,
    diagnostic_status,
    run_node,
    shut_down_by,
    stamp_msg,
    steady_timer,
)
from humanoid_balance.params.mujoco_sim import SPEC, MujocoSimConfig, config_from_values
from humanoid_balance.params.ros import NodeParameters
from humanoid_balance.sim.models import simulation_for
from humanoid_balance.sim.runner import Period, SimHost, SimRunner
from humanoid_balance.sim.sensor_messages import ALWAYS, SIM_FAULT_TOPIC, SensorMessages
from humanoid_balance.sim.tf import world_to_base

NODE_NAME = "mujoco_sim"


def tf_message_class() -> Any | None:
    """``tf2_msgs/msg/TFMessage``, or None where ``tf2_msgs`` (a ROS install) is missing."""
    try:
        from tf2_msgs.msg import TFMessage
    except ImportError:
        return None
    return TFMessage


class MujocoSimNode(Node, SimHost):
    """The simulation node; see the module docstring."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(NODE_NAME, **kwargs)  # type: ignore[arg-type]
        # first: a node whose parameters are refused below is still destroyed (stop())
        self.runner: SimRunner | None = None
        #: held by the physics thread around each of its rclpy calls (module docstring)
        self._rclpy_lock = threading.Lock()
        self.params = NodeParameters(self, SPEC, configured=lambda: self.runner is not None,
                                     read_only_reason=READ_AT_START)
        config = config_from_values(self.params.read())
        self.sim = simulation_for(config)
        self.messages = SensorMessages(self.sim)
        runner = SimRunner(self.sim, config, host=self)
        #: set when the simulation ended (its duration done, stopped, or failed)
        self.finished = runner.finished
        self._make_publishers(runner.tf_every > 0)
        self._subscribe(config, runner)
        self._diag_timer = steady_timer(self, 1.0 / config.diagnostics_rate_hz,
                                        self._publish_diagnostics)
        self.get_logger().info(runner.describe())
        self.runner = runner
        runner.start()

    def _make_publishers(self, tf: bool) -> None:
        qos = QoSProfile(depth=10)
        types = {"/clock": Clock, "/joint_states": JointState, "/sim/com": PointStamped,
                 "/sim/base_pose": PoseStamped, "/left_foot/ft": WrenchStamped,
                 "/right_foot/ft": WrenchStamped, "/left_foot/fsr": Float64MultiArray,
                 "/right_foot/fsr": Float64MultiArray, "/waist/inclinometer": Imu,
                 "/sim/cop": PointStamped}
        # reliable /clock: matches reliable and best-effort subscribers (rclpy's TimeSource)
        self.pubs = {topic: self.create_publisher(types[topic], topic, qos)
                     for topic in self.messages.topics}
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", qos)
        self._tf_message = tf_message_class() if tf else None
        self.pub_tf = None if self._tf_message is None else \
            self.create_publisher(self._tf_message, "/tf", QoSProfile(depth=100))
        self.listeners = Listeners([*(pub for topic, pub in self.pubs.items()
                                      if topic not in ALWAYS), self.pub_tf])
        self._heard: tuple[frozenset[Any], frozenset[str]] = (frozenset(), frozenset())
        if tf and self.pub_tf is None:
            where = "on /sim/base_pose" if self.sim.floating_base else "the identity (fixed base)"
            self.get_logger().warning(f"/tf is not published: tf2_msgs is not installed (it comes "
                                      f"with ROS, e.g. ros-<distro>-tf2-msgs, not from PyPI), so "
                                      f"nothing gives world -> {self.sim.root_body} to rviz; the "
                                      f"base pose is {where}")

    def _subscribe(self, config: MujocoSimConfig, runner: SimRunner) -> None:
        """Raw subscriptions (no rclpy message built per command): the command topics, and the
        lock-step topics that are not command topics (one subscription when both)."""
        qos = QoSProfile(depth=10)
        for topic in config.command_topics:
            self.create_subscription(JointState, topic, self._on_command(topic, runner), qos,
                                     raw=True)
        if runner.gate is not None:
            for lock_topic in config.lock_step_topics:
                if lock_topic.topic not in config.command_topics:
                    self.create_subscription(lock_topic.message_class(), lock_topic.topic,
                                             self._on_answer(lock_topic.topic, runner), qos,
                                             raw=True)
        self.create_subscription(String, SIM_FAULT_TOPIC, self._on_fault, qos)  # test-only

    def _on_fault(self, msg: String) -> None:  # test-only: see SIM_FAULT_TOPIC
        try:
            text = self.messages.faults.apply(msg.data, self.messages.last_stamp_ns)
        except ValueError as exc:
            text = str(exc)
        self.get_logger().warning(text, throttle_duration_sec=0.1)

    # --- messages in (the executor) -----------------------------------------------------

    def _on_command(self, topic: str, runner: SimRunner) -> Callable[[bytes], None]:
        """The raw callback of command topic ``topic`` (also the lock-step answer when it is one)."""
        answers = runner.answers(topic)
        reader = cdr.JointStateReader()  # one per topic: it caches that publisher's names

        def on_command(data: bytes) -> None:
            problem: str | None
            try:
                msg = reader.read(data)
            except HumanoidBalanceError as exc:
                problem = f"a command on {topic} is not a readable JointState ({exc})"
                runner.reject(problem)
            else:
                # copies: the reader's arrays are views of the message's bytes; a test clock
                # offset (SIM_FAULT_TOPIC) comes off the stamps made on that clock
                problem = runner.command(msg.stamp_ns - self.messages.faults.clock_offset_ns,
                                         msg.names,
                                         msg.position.copy() if len(msg.position) else None,
                                         msg.velocity.copy() if len(msg.velocity) else None)
                if answers:
                    self._deliver(runner, topic, msg.stamp_ns)
            if problem is not None:
                self.get_logger().warning(f"{problem}: command ignored", throttle_duration_sec=1.0)

        return on_command

    def _on_answer(self, topic: str, runner: SimRunner) -> Callable[[bytes], None]:
        """The raw callback of lock-step topic ``topic``: only its header stamp is read."""
        def on_answer(data: bytes) -> None:
            try:
                stamp = header_stamp_ns(data)
            except HumanoidBalanceError as exc:
                runner.answer_unreadable()
                self.get_logger().warning(f"{topic}: {exc}: not an answer",
                                          throttle_duration_sec=1.0)
                return
            self._deliver(runner, topic, stamp)

        return on_answer

    def _deliver(self, runner: SimRunner, topic: str, stamp_ns: int) -> None:
        stamp_ns -= self.messages.faults.clock_offset_ns
        if not runner.answer(topic, stamp_ns):
            self.log("warning", f"lock-step: an answer on {topic} stamped {stamp_ns * 1e-9:.3f} s, "
                                "beyond the newest period published: not taken (is its node on "
                                "use_sim_time?)", throttle_s=1.0)

    # --- SimHost: called by the physics thread ------------------------------------------

    def take_config(self) -> MujocoSimConfig | None:
        """The parameters accepted over DDS since the last call, as a config (None: none)."""
        changes = self.params.take_pending()
        if not changes:
            return None
        self.log("info", "parameters changed: " + ", ".join(
            f"{name}={value!r}" for name, value in changes.items()))
        return config_from_values(self.params.values)

    def _ros(self, call: Callable[[], object]) -> bool:
        """Run ``call`` (an rclpy call of the physics thread) unless the node is stopping.

        Under :attr:`_rclpy_lock`: once :meth:`stop` took that lock, no call runs or
        starts. A call that fails because the context went away anyway stops the runner.

        Returns:
            False when the node is stopping (the call did not run or failed for that).
        """
        runner = self.runner
        with self._rclpy_lock:
            if runner is None or runner.stopping or not self.context.ok():
                return False
            try:
                call()
            except Exception as exc:
                if not runner.stopping and not shut_down_by(self, exc):
                    raise
                runner.stop()
                return False
        return True

    def log(self, level: str, text: str, throttle_s: float = 0.0) -> None:
        """Log from the physics thread (nothing once the node is stopping)."""
        logger = self.get_logger()
        log = {"warning": logger.warning, "error": logger.error}.get(level, logger.info)
        self._ros(lambda: log(text, throttle_duration_sec=throttle_s) if throttle_s > 0
                  else log(text))

    def publish_period(self, period: Period) -> bool:
        """Publish the sensors (CDR bytes) as of ``period``; False when stopping."""
        return self._ros(lambda: self._publish(period))

    def _publish(self, period: Period) -> None:
        listened = self.listeners.heard()
        if listened is not self._heard[0]:  # the topics heard, by the names the writer uses
            self._heard = (listened, frozenset(t for t, p in self.pubs.items() if p in listened))
        for topic, data in self.messages.write(period, self._heard[1]):
            self.pubs[topic].publish(data)
        if period.tf and self.pub_tf is not None and self.pub_tf in listened:
            self.pub_tf.publish(self._tf(stamp_msg(period.stamp_ns)))

    def _tf(self, stamp: TimeMsg) -> Any:
        """The ``/tf`` message: ``world`` -> the base link at ``stamp`` (tf2_msgs/TFMessage)."""
        base = world_to_base(self.sim)
        x, y, z = (float(v) for v in base.position_base_in_world)
        qx, qy, qz, qw = (float(v) for v in base.orientation_base_in_world_xyzw)
        return self._tf_message(transforms=[TransformStamped(  # type: ignore[misc]
            header=Header(stamp=stamp, frame_id=base.parent_frame),
            child_frame_id=base.child_frame,
            transform=Transform(translation=Vector3(x=x, y=y, z=z),
                                rotation=Quaternion(x=qx, y=qy, z=qz, w=qw)))])

    # --- diagnostics and stopping ---------------------------------------------------------

    def _publish_diagnostics(self) -> None:
        """The runner's status on /diagnostics, with the topics nobody listens to."""
        if self.runner is None:
            return
        status = self.runner.status()
        values = {**status.values, "unheard_topics": self.listeners.unheard()}
        msg = diagnostic_array(self, [diagnostic_status(NODE_NAME, status.level, status.message,
                                                        values)])
        try:
            self.pub_diag.publish(msg)
        except Exception as exc:
            if not shut_down_by(self, exc):
                raise

    def stop(self) -> None:
        """Stop the physics thread: no rclpy call of it runs or starts after this; join it."""
        if self.runner is None:
            return  # parameters refused: no physics thread
        self.runner.stop()  # wakes its waits; joins it (unless called from it)
        with self._rclpy_lock:  # should the join time out: a publish or log under way ends first
            pass

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
