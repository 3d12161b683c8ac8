"""``waist_controller``: differential-waist RMRC over CAN with the three-loop servo (seed 003).

A lifecycle node around :class:`~humanoid_balance.waist.loop.WaistLoop` (servo thread,
requests, report; the waist's rules: :mod:`humanoid_balance.waist`): ``configure`` reads the
parameters (:class:`~humanoid_balance.params.waist_controller.WaistControllerConfig`), opens
the bus and starts the servo thread (it polls the drives while inactive); ``activate``
enables the drives; ``deactivate`` stops, then disables them; ``cleanup`` closes it all.
``simulated_drives``: the node hosts the drives for its life, stepped by the servo thread.
Topics ``/waist/command``, ``/waist/inclinometer``, ``/waist/sim/fault`` (test-only) in;
``/joint_states``, ``/waist/tracking_error``, ``/waist/reference``, ``/waist/motor_states``,
``/diagnostics`` out; services ``/waist/enable``, ``/waist/stop`` in every state
(docs/INTERFACES.md).
"""

from __future__ import annotations

import gc
import math
from collections.abc import Sequence
from typing import Any

from geometry_msgs.msg import Vector3Stamped
from rclpy.lifecycle import LifecycleState, TransitionCallbackReturn
from rclpy.lifecycle import Node as LifecycleNode
from rclpy.qos import QoSProfile
from sensor_msgs.msg import Imu, JointState
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory

from humanoid_balance import cdr
from humanoid_balance.can.sim_drive import SimulatedWaist
from humanoid_balance.core.waist_kinematics import pitch_roll_from_quaternion
from humanoid_balance.exceptions import HumanoidBalanceError, InvalidInputError
from humanoid_balance.nodes import common
from humanoid_balance.params.ros import NodeParameters
from humanoid_balance.params.waist_controller import SPEC, WaistControllerConfig, config_from_values
from humanoid_balance.waist.config import WaistServoConfig
from humanoid_balance.waist.load import humanoid_drives
from humanoid_balance.waist.loop import WaistLoop
from humanoid_balance.waist.reference import command_arrays
from humanoid_balance.waist.servo import CycleOutput
from humanoid_balance.waist.sim_faults import SIM_FAULT_TOPIC

NODE_NAME = "waist_controller"
JOINTS = ("waist_pitch", "waist_roll")


class WaistControllerNode(LifecycleNode):
    """The ``waist_controller`` lifecycle node; see the module docstring."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self.params = NodeParameters(self, SPEC, configured=lambda: self.loop is not None,
                                     read_only_reason=common.READ_AT_CONFIGURE)
        #: the simulated drives (``simulated_drives``), kept for the node's life
        self.simulated_waist: SimulatedWaist | None = None
        #: the servo loop, from configure to cleanup (None otherwise)
        self.loop: WaistLoop | None = None
        self._subs: list[Any] = []
        self._pubs: list[Any] = []
        self._diag_timer: Any = None
        self._publishing = True  # False once SIGINT/SIGTERM shut the context down
        self._epoch_ns = 0  # the controller's clock on the node clock's scale
        #: the lifecycle state is active: only then may /waist/enable enable the drives
        self._lifecycle_active = False
        # in every state (not lifecycle-managed): what the state does not allow is refused at once
        self.srv_enable = self.create_service(SetBool, "/waist/enable", self._on_enable)
        self.srv_stop = self.create_service(Trigger, "/waist/stop", self._on_stop)

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Check parameters and bus load, open the bus, start the servo thread (polling)."""
        try:
            config = config_from_values(self.params.read())
            loop = self._build_loop(config)
        except HumanoidBalanceError as exc:
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        self.loop = loop
        self._create_topics(loop)
        self._epoch_ns = common.clock_ns(self.get_clock()) - round(loop.now() * 1e9)
        # on the steady clock: the drives' state is reported while a simulation's clock pauses
        self._diag_timer = common.steady_timer(self, 1.0 / config.diagnostics_rate_hz,
                                        self._publish_diagnostics)
        self._publishing = True
        common.set_thread_priority(self, config.executor_priority, "the callbacks' thread")
        loop.start(lambda: common.set_thread_priority(self, config.servo_priority, "the servo thread"))
        servo = config.servo
        self.get_logger().info(
            f"configured: {servo.servo_rate_hz:g} Hz servo, {servo.outer_rate_hz:g} Hz outer "
            f"loop, bus load {loop.controller.bus_load.percent:.1f} % of {servo.bitrate} bit/s")
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Enable both drives at the measured position, once they confirm (``gc.freeze()``
        first: a full collection can stall every thread for tens of ms)."""
        gc.collect()
        gc.freeze()
        error = self.loop.enable() if self.loop is not None else self._refusal()
        if error:
            self.get_logger().error(f"activate failed: {error}")
            return TransitionCallbackReturn.FAILURE
        self._lifecycle_active = True
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Controlled stop, then disable the drives (brakes engage)."""
        self._lifecycle_active = False
        if self.loop is not None:
            self.loop.stop_then_disable()
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Disable, stop the servo thread, close the bus, drop topics (the services stay)."""
        return self._release()

    on_shutdown = on_error = on_cleanup

    def destroy_node(self) -> None:
        """Disable the drives and stop the thread before the node goes (simulated drives last)."""
        self._release()
        if self.simulated_waist is not None:
            self.simulated_waist.close()
            self.simulated_waist = None
        super().destroy_node()

    def _build_loop(self, config: WaistControllerConfig) -> WaistLoop:
        """The loop on its bus, with the simulated drives (kept while the channel stays)."""
        drives = self.simulated_waist
        if drives is not None and (not config.simulated_drives
                                   or drives.channel != config.can_channel):
            drives.close()
            drives = None
        if config.simulated_drives and drives is None:
            drives = humanoid_drives(config.can_channel, config.servo.waist, config.urdf_path)
            self.get_logger().info(f"simulated drives on virtual channel "
                                   f"{config.can_channel!r}, carrying {drives.torso}")
        self.simulated_waist = drives
        return WaistLoop.open(config.servo, interface=config.can_interface,
                              channel=config.can_channel, drives=drives, timing=config.thread,
                              logger=self.get_logger(), run_time_config=self._run_time_config,
                              publish=self._publish_fast)

    def _create_topics(self, loop: WaistLoop) -> None:
        from diagnostic_msgs.msg import DiagnosticArray

        qos = QoSProfile(depth=10)
        self._pubs = [self.create_publisher(kind, topic, qos) for kind, topic in (
            (JointState, "/joint_states"), (Vector3Stamped, "/waist/tracking_error"),
            (DiagnosticArray, "/waist/motor_states"), (DiagnosticArray, "/diagnostics"),
            (JointState, "/waist/reference"))]
        self.pub_joints, self.pub_error, self.pub_motors, self.pub_diag, self.pub_reference = self._pubs
        # serialized in the servo thread (cdr): an rclpy message costs as much as a period
        self._joint_writer = cdr.JointStateWriter(JOINTS)
        self._error_writer = cdr.StampedDoublesWriter("waist_plate", (0.0, 0.0, 0.0))
        # inclinometer depth 1, the newest sample only: the executor takes none while it answers
        # a request (a stop waits up to seconds); with a queue, the classic executor (one take
        # per subscription and wait) handed the next enable the oldest one queued
        self._subs = [
            self.create_subscription(JointTrajectory, "/waist/command", self._on_command, qos),
            self.create_subscription(Imu, "/waist/inclinometer", self._on_inclinometer,
                                     QoSProfile(depth=1))]
        if self.simulated_waist is not None:  # test-only fault injection into the simulation
            from std_msgs.msg import String

            self._subs.append(self.create_subscription(
                String, SIM_FAULT_TOPIC, lambda msg: loop.inject_sim_fault(str(msg.data)), qos))

    def _release(self) -> TransitionCallbackReturn:
        """Stop the servo thread, disable the drives, close the bus, drop the topics."""
        self._lifecycle_active = False
        if self.loop is not None:
            self.loop.close()  # and its bus
        for sub in self._subs:
            self.destroy_subscription(sub)
        common.destroy_timers(self, self._diag_timer)
        self._diag_timer = None
        for pub in self._pubs:
            self.destroy_publisher(pub)
        self._subs, self._pubs = [], []
        self.loop = None
        return TransitionCallbackReturn.SUCCESS

    def _refusal(self) -> str:
        """Why a request the state does not allow is refused: the state and what to do."""
        state = common.lifecycle_state(self)
        if state != "finalized":  # the node's own view (a transition may be under way)
            state = "unconfigured" if self.loop is None else "inactive"
        return common.lifecycle_refusal(NODE_NAME, state)

    def _on_enable(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        loop = self.loop
        if loop is None:
            response.success, response.message = False, self._refusal()
        elif request.data and not self._lifecycle_active:
            response.success = False
            response.message = (f"{self._refusal()} to enable the drives; /waist/enable only "
                                "re-enables an active node's drives")
        elif request.data:
            error = loop.enable()
            response.success = not error
            response.message = error or "enabled: holding the measured position"
        else:
            loop.stop_then_disable()
            response.success, response.message = True, "stopped and disabled (brakes on)"
        return response

    def _on_stop(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        if self.loop is None:
            response.success, response.message = False, self._refusal()
        else:
            response.success = True
            response.message = f"controlled stop requested (state {self.loop.stop().value})"
        return response

    def _on_command(self, msg: JointTrajectory) -> None:
        loop = self.loop
        if loop is None:
            return
        command = command_arrays(msg.joint_names, msg.points, JOINTS)
        if isinstance(command, str):
            loop.command_refused(command)
            return
        stamp = common.stamp_ns(msg.header.stamp)
        # the stamp is the start on the node clock: as far from now on the controller's clock
        delay = (stamp - common.clock_ns(self.get_clock())) * 1e-9 if stamp else None
        loop.submit_command(*command, delay)

    def _on_inclinometer(self, msg: Imu) -> None:
        loop = self.loop
        if loop is None:
            return
        o = msg.orientation
        try:
            pitch, roll = pitch_roll_from_quaternion(o.x, o.y, o.z, o.w)
        except InvalidInputError as exc:
            loop.log.warning("inclinometer", f"/waist/inclinometer ignored: {exc}")
            return
        loop.on_inclinometer(pitch, roll, loop.sample_time(common.clock_ns(self.get_clock()),
                                                           common.stamp_ns(msg.header.stamp)))

    def _run_time_config(self) -> WaistServoConfig | None:
        """Dynamic parameter changes since the last servo period, as the controller's tunables
        (asked by the servo thread between two periods)."""
        changes, loop = self.params.take_pending(), self.loop
        if not changes or loop is None:
            return None
        loop.log.info("parameters", "applied " + ", ".join(f"{n}={v!r}" for n, v in changes.items()))
        return config_from_values(self.params.values).servo

    def _publish_fast(self, out: CycleOutput, now_s: float) -> None:
        """From the servo thread: ``/waist/reference`` (on the controller's clock),
        ``/joint_states`` and ``/waist/tracking_error`` (node clock), each when finite."""
        if not self._publishing:
            return
        q, shaped, error = out.joint_position_rad, out.shaped_reference_rad, out.tracking_error_rad
        joints, finite = self._joint_writer, _finite
        try:
            if finite(shaped):
                self.pub_reference.publish(joints.write(
                    self._epoch_ns + round(now_s * 1e9), shaped, out.shaped_velocity_rad_s))
            now_ns = common.clock_ns(self.get_clock())
            if finite(q):
                self.pub_joints.publish(joints.write(now_ns, q, out.joint_velocity_rad_s))
            if finite(error):
                self.pub_error.publish(self._error_writer.write(
                    now_ns, (float(error[0]), float(error[1]), 0.0)))
        except Exception as exc:  # after SIGINT/SIGTERM the servo holds on without publishing
            if not common.shut_down_by(self, exc):  # until the node's teardown disables the drives
                raise
            self._publishing = False

    def _publish_diagnostics(self) -> None:
        """/waist/motor_states and /diagnostics; quietly nothing once SIGINT/SIGTERM shut the
        context down meanwhile."""
        loop = self.loop  # the timer's thread: a cleanup may drop it meanwhile
        if loop is None:
            return
        report = loop.report()
        for publisher, statuses in ((self.pub_motors, report.motors),
                                    (self.pub_diag, (report.controller,))):
            try:
                publisher.publish(common.diagnostic_array(self, [common.diagnostic_status(
                    s.name, int(s.level), s.message, s.values) for s in statuses]))
            except Exception as exc:
                if not common.shut_down_by(self, exc):
                    raise


def _finite(pair: Any) -> bool:
    """Both values of a 2-vector are finite (``math``: numpy's reductions cost microseconds)."""
    return math.isfinite(pair[0]) and math.isfinite(pair[1])


def main(args: Sequence[str] | None = None) -> int:
    """Console script ``waist_controller``."""
    return common.run_node(WaistControllerNode, args, stop_signals=True, exit_process=True)


if __name__ == "__main__":
    raise SystemExit(main())
