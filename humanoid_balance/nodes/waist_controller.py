"""``waist_controller``: differential-waist RMRC over CAN with the three-loop servo (seed 003).

A lifecycle node, thin around :class:`humanoid_balance.can.controller.WaistController`:

- ``configure``: read and check the parameters, check the bus load (refused above
  50 % with the figure), open the bus (:class:`~humanoid_balance.can.bus.WaistCanBus`,
  python-can with a Notifier receive thread), start the servo thread. While the
  node is inactive the thread polls the drives (zero-current frames that a disabled
  drive ignores) so that positions are published and activation starts from fresh
  feedback.
- ``activate``: enable both drives, holding the measured position at rest.
- ``deactivate``: controlled stop (the motor rates ramp to zero), then the drives
  are disabled (their holding brakes engage).
- ``cleanup`` / ``shutdown``: disable, stop the thread, close the bus.

The servo loop (``servo_rate``, 500 Hz) runs in a dedicated thread that sleeps to
absolute deadlines (``deadline += period``; never ``sleep(period)``, so errors do not
accumulate) and spins the last ``spin_margin`` seconds before each deadline,
rather than in an rclpy timer: a timer callback shares the executor with the
subscriptions and services and its period error is the executor's latency (ms
under load), while the thread only competes for the GIL. The thread also lowers
``sys.setswitchinterval`` (50 us) so other threads give the GIL back quickly, and
with ``servo_priority`` > 0 runs under SCHED_FIFO. (Putting the whole process
under SCHED_FIFO 10 as well, so that no GIL holder is preempted by other
processes, made it worse when measured: the GIL is not handed over by priority,
and same-priority FIFO threads, DDS's included, do not time-slice.) Measured on the shared 2-core
development machine: a bare sleep-to-deadline loop had a p99 period error of
2.1 ms at normal priority and 1.4 us under SCHED_FIFO; the node's loop under
SCHED_FIFO still shows p99 0.2-2 ms (run to run) because every other thread of
the process (bus receive, executor, publishing, in-process drives) holds the GIL
in turns: see ``benchmarks/waist.py``. Activation calls ``gc.freeze()`` (before
enabling) so that later collections stay short. The
outer RMRC loop runs every ``servo_rate / outer_rate`` periods on the latest
``/waist/inclinometer`` sample (encoders when it is older than
``inclinometer_timeout``). The servo thread's OS name is ``waist-servo``
(:func:`humanoid_balance.threads.name_os_thread`: per-thread CPU in ``top -H`` or
``/proc/<pid>/task``), and the ``waist_controller`` status of ``/diagnostics`` gives its
timing since the previous one: ``servo_periods``, ``servo_period_error_mean_us`` and
``servo_period_error_max_us`` (period start less its deadline).

Faults (a drive silent, a drive fault, bus-off, a dead receive thread) disable
both drives and put the controller in its FAULT state (``/diagnostics`` ERROR with
the reason); only a request leaves it: ``/waist/enable`` with ``data: true``
clears the fault, re-opens the bus if needed and enables again.

Simulation (``simulated_drives: true``, only with ``can.interface: virtual``): the node
hosts the two simulated drives (:class:`~humanoid_balance.can.sim_drive.SimulatedWaist`)
on its virtual channel, in its own process, carrying the humanoid's upper body (from
``urdf_path``) as a point mass
(:func:`~humanoid_balance.can.sim_drive.upper_body_load`). The servo thread steps them
by one servo period just before each servo cycle (lock-step; real time while the thread
keeps its deadlines), and the controller then reads their answers from the bus itself
(no receive thread), as the test rigs do: a drive answers every setpoint within its
period whatever the load of the machine, where drives stepped by a thread of their own
were starved past the 10 ms ``feedback_timeout`` (20 ms at activation, 110 ms under a
load average of 13, on the shared 2-core machine). A stall of the thread slows the
drives' time down instead of jumping ahead, and the controller's clock with them
(monotonic time less the accumulated lag), so its reference never runs ahead of the
waist it moves (stepped by the elapsed time, up to 8 ms, a starved thread made the waist
overshoot a 2 deg roll target by 0.3 deg). The frames still go through python-can and
the DBC protocol. The drives live as long as the node (a cleanup and configure finds the
waist where it was; they do not move while the node is unconfigured).

Clocks: the servo thread runs on the monotonic clock (less the simulated drives'
lag, see above: the controller's clock). Message stamps are on the node clock
(simulation time with ``use_sim_time``): a command's stamp and an inclinometer
sample's stamp are turned into controller times by their age on the node clock
(``now - stamp``), so the inclinometer timeout holds on simulation
time as on a robot (a sample is as old as its stamp says, and goes stale on the
monotonic clock while the simulation pauses). ``/diagnostics`` is published on
the steady clock, so it goes on while a simulation waits.

Topics: ``/waist/command`` (JointTrajectory, joints ``waist_pitch``,
``waist_roll``), ``/waist/inclinometer`` (Imu) in; ``/joint_states`` (waist
joints), ``/waist/tracking_error`` (Vector3Stamped, x = pitch, y = roll, rad),
``/waist/motor_states`` (per motor; ERROR ``no feedback for <age> s (stale)`` once its newest
feedback is older than ``feedback_timeout`` at the controller's last servo cycle, the stale
values kept beside ``feedback_stale``) and ``/diagnostics`` (DiagnosticArray) out;
``/waist/reference`` (JointState: the shaped joint reference and its rate, while the
drives are enabled; stamped on the controller's clock, which is the node clock with
real drives and falls behind it by the simulated drives' lag). Services
``/waist/enable`` (SetBool), ``/waist/stop`` (Trigger): they exist from the node's start
(services are not lifecycle-managed) and, unconfigured (or finalized), answer false with
the state and what to do (``waist_controller is unconfigured: configure and activate
it``); ``/waist/enable true`` also while inactive. Test-only, with
``simulated_drives``: ``/waist/sim/fault`` (String, :data:`SIM_FAULT_TOPIC`) injects
faults into the simulated drives (a real bus has no such topic).
"""

from __future__ import annotations

import gc
import math
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from geometry_msgs.msg import Vector3Stamped
from rclpy.lifecycle import LifecycleState, TransitionCallbackReturn
from rclpy.lifecycle import Node as LifecycleNode
from rclpy.qos import QoSProfile
from sensor_msgs.msg import Imu, JointState
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory

from humanoid_balance import cdr
from humanoid_balance.can.bus import WaistCanBus
from humanoid_balance.can.controller import (
    ControllerState,
    CycleOutput,
    WaistController,
    WaistControllerConfig,
)
from humanoid_balance.can.sim_drive import SimulatedWaist, upper_body_load
from humanoid_balance.core.servo import ServoGains
from humanoid_balance.core.waist_kinematics import DifferentialWaist, pitch_roll_from_quaternion
from humanoid_balance.exceptions import (
    ConfigurationError,
    HumanoidBalanceError,
    InvalidInputError,
)
from humanoid_balance.nodes.common import (
    ERROR,
    OK,
    READ_AT_CONFIGURE,
    WARN,
    clock_ns,
    destroy_timers,
    diagnostic_array,
    diagnostic_status,
    lifecycle_refusal,
    lifecycle_state,
    run_node,
    set_thread_priority,
    stamp_ns,
    steady_timer,
)
from humanoid_balance.params.ros import NodeParameters
from humanoid_balance.params.waist_controller import SPEC, simulated_drives_problem
from humanoid_balance.resources import urdf_path as package_urdf_path
from humanoid_balance.threads import name_os_thread

NODE_NAME = "waist_controller"
#: dynamic parameter -> (keyword of WaistController.update, conversion or None)
_RUN_TIME: dict[str, tuple[str, Callable[[float], float] | None]] = {
    "outer_gain": ("outer_gain_per_s", None),
    "limit_policy": ("limit_policy", None),
    "command_timeout": ("command_timeout_s", None),
    "inclinometer_timeout": ("inclinometer_timeout_s", None),
    "velocity_limit": ("velocity_limit_rad_s", math.radians),
    "acceleration_limit": ("acceleration_limit_rad_s2", math.radians),
}
JOINTS = ("waist_pitch", "waist_roll")
WARN_PERIOD_S = 2.0
#: s an enable request waits for the fault's cause to clear, then for the drives to confirm
ENABLE_TIMEOUT_S = 0.3
#: servo periods each of those waits lasts at least (a starved loop runs fewer in 0.3 s)
ENABLE_MIN_PERIODS = 50
#: s, beyond the longest a controlled stop can take (velocity_limit / acceleration_limit), before
#: a stop that has not ended is given up and the drives are disabled moving (a stalled servo)
STOP_WAIT_MARGIN_S = 0.5
#: s, the longest a deactivate or /waist/enable false waits for the stop (the limits allow
#: stops of minutes: a lifecycle transition must end)
STOP_WAIT_MAX_S = 30.0
#: test-only, with ``simulated_drives``: std_msgs/String faults of the simulated drives
#: (``fault N [CODE] [persist]``, ``remove_cause N``, ``silent N``, ``answer N``,
#: ``drop N P``, ``bus_off``, ``frame ID HEXDATA``, ``error_frame``); a real bus has no such
#: topic
SIM_FAULT_TOPIC = "/waist/sim/fault"
#: the servo thread's name, Python's and the OS's (``/proc/<pid>/task/<tid>/comm``)
SERVO_THREAD_NAME = "waist-servo"


def _sim_fault_action(drives: SimulatedWaist, words: list[str]) -> Callable[[], None]:
    """The simulated-drive fault that ``words`` name (see :data:`SIM_FAULT_TOPIC`).

    Raises:
        ValueError: an unknown fault or bad arguments.
    """
    import can

    from humanoid_balance.can.protocol import FaultCode

    kind, args = words[0], words[1:]

    def node() -> int:
        value = int(args[0])
        if value not in (1, 2):
            raise ValueError(f"drive {value}: expected 1 or 2")
        return value

    if kind == "fault":
        code = FaultCode(int(args[1])) if len(args) > 1 else FaultCode.INTERNAL
        n, persists = node(), "persist" in args[2:]
        return lambda: drives.inject_fault(n, code, persists=persists)
    if kind == "remove_cause":
        n = node()
        return lambda: drives.remove_fault_cause(n)
    if kind in ("silent", "answer"):
        n = node()
        return lambda: drives.stop_answering(n, kind == "silent")
    if kind == "drop":
        n, p = node(), float(args[1])
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"probability {p}: expected 0..1")
        return lambda: drives.drop_frames(n, p)
    if kind == "bus_off":
        return drives.inject_bus_off
    if kind == "frame":
        ident, data = int(args[0], 16), bytes.fromhex(args[1] if len(args) > 1 else "")
        message = can.Message(arbitration_id=ident, data=data, is_extended_id=ident > 0x7FF)
        return lambda: drives.send_raw(message)
    if kind == "error_frame":
        message = can.Message(arbitration_id=0x4, is_error_frame=True, data=bytes(8))
        return lambda: drives.send_raw(message)
    raise ValueError(f"unknown fault {kind!r}")


class WaistControllerNode(LifecycleNode):
    """The ``waist_controller`` lifecycle node; see the module docstring."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self.params = NodeParameters(self, SPEC, configured=lambda: self.controller is not None,
                                     read_only_reason=READ_AT_CONFIGURE)
        self._values: dict[str, Any] = SPEC.defaults()
        #: the simulated drives (``simulated_drives``), kept for the node's life
        self.simulated_waist: SimulatedWaist | None = None
        self.controller: WaistController | None = None
        self.bus: WaistCanBus | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop_thread = threading.Event()
        self._last: CycleOutput | None = None
        #: the controller's clock at its last servo cycle, s (the time it judged the feedback at)
        self._cycle_now_s: float | None = None
        self._subs: list[Any] = []
        self._pubs: list[Any] = []
        self._diag_timer: Any = None
        self.period_errors_s: list[float] = []  # the benchmark reads these
        self.cycle_durations_s: list[float] = []
        self.record_period_errors = False
        #: servo period errors (start - deadline) since the last /diagnostics: count, sum, max, s
        self._period_stats = [0, 0.0, 0.0]
        self._started = 0.0
        self._inclinometer_s: float | None = None  # monotonic time of the last sample
        self._warned: dict[str, tuple[float, str]] = {}  # channel -> (time, text) last logged
        self._command_problem = ""  # why the last /waist/command was refused or clamped
        self._commands_refused = 0
        self._drives_time_s = time.monotonic()  # simulated drives: stepped to this time
        #: s the simulated drives' time fell behind the monotonic clock (stalls of the servo
        #: thread); the controller's clock is monotonic minus this
        self._lag_s = 0.0
        self._requests: list[Callable[[float], None]] = []  # run by the servo thread
        #: the lifecycle state is active: only then may /waist/enable enable the drives
        self._lifecycle_active = False
        self._servo_failure = ""  # why the servo thread ended on an exception ("" while it runs)
        # from the start, in every state (services are not lifecycle-managed): a request the
        # state does not allow is answered at once with why, not left waiting for the service
        self.srv_enable = self.create_service(SetBool, "/waist/enable", self._on_enable)
        self.srv_stop = self.create_service(Trigger, "/waist/stop", self._on_stop)

    # --- parameters -------------------------------------------------------------------

    def _param(self, name: str) -> Any:
        """A parameter's value as read at configure (the spec's default before)."""
        return self._values[name]

    def _build_config(self) -> WaistControllerConfig:
        pitch = tuple(math.radians(float(v)) for v in self._param("pitch_limits"))
        roll = tuple(math.radians(float(v)) for v in self._param("roll_limits"))
        waist = DifferentialWaist(
            gear_ratio_pitch=float(self._param("gear_ratio_pitch")),
            gear_ratio_roll=float(self._param("gear_ratio_roll")),
            pitch_limits_rad=(pitch[0], pitch[1]), roll_limits_rad=(roll[0], roll[1]))
        gains = ServoGains(kp=float(self._param("kp")), kv=float(self._param("kv")),
                           ki=float(self._param("ki")), dt=1.0 / float(self._param("servo_rate")),
                           current_limit_a=float(self._param("current_limit")),
                           current_unit_a=float(self._param("current_unit")))
        ids = [int(v) for v in self._param("motor_ids")]
        return WaistControllerConfig(
            waist=waist, gains=gains, outer_rate_hz=float(self._param("outer_rate")),
            outer_gain_per_s=float(self._param("outer_gain")), motor_ids=(ids[0], ids[1]),
            command_timeout_s=float(self._param("command_timeout")),
            feedback_timeout_s=float(self._param("feedback_timeout")),
            inclinometer_timeout_s=float(self._param("inclinometer_timeout")),
            homing_tolerance_rad=math.radians(float(self._param("homing_tolerance"))),
            limit_policy=str(self._param("limit_policy")), bitrate=int(self._param("can.bitrate")),
            velocity_limit_rad_s=math.radians(float(self._param("velocity_limit"))),
            acceleration_limit_rad_s2=math.radians(float(self._param("acceleration_limit"))),
            droop_gain_per_s=float(self._param("droop_gain")))

    # --- lifecycle ----------------------------------------------------------------------

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Check parameters and bus load, open the bus, start the servo thread (polling)."""
        try:
            self._values = self.params.read()
            config = self._build_config()
            self._start_simulated_drives(config)
            simulated = self.simulated_waist is not None
            # simulated drives: answers are read in the servo cycle and stamped with the time the
            # drives were stepped to, so a speed from two samples is their true motion
            bus = WaistCanBus(interface=str(self._param("can.interface")),
                              channel=str(self._param("can.channel")),
                              bitrate=int(self._param("can.bitrate")), use_notifier=not simulated,
                              clock=(lambda: self._drives_time_s) if simulated else time.monotonic,
                              warn=self.get_logger().warning)
            try:
                controller = WaistController(config, bus)
            except HumanoidBalanceError:
                bus.close()
                raise
        except HumanoidBalanceError as exc:
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        self.bus, self.controller = bus, controller
        qos = QoSProfile(depth=10)
        from diagnostic_msgs.msg import DiagnosticArray

        self.pub_joints = self.create_publisher(JointState, "/joint_states", qos)
        self.pub_error = self.create_publisher(Vector3Stamped, "/waist/tracking_error", qos)
        self.pub_motors = self.create_publisher(DiagnosticArray, "/waist/motor_states", qos)
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", qos)
        self.pub_reference = self.create_publisher(JointState, "/waist/reference", qos)
        self._pubs = [self.pub_joints, self.pub_error, self.pub_motors, self.pub_diag,
                      self.pub_reference]
        self._subs = [
            self.create_subscription(JointTrajectory, "/waist/command", self._on_command, qos),
            # depth 1: the newest sample only. The executor takes none while it answers a
            # request (a stop waits up to seconds); with a queue, the classic executor (one
            # take per subscription and wait) handed the next enable the oldest one queued
            self.create_subscription(Imu, "/waist/inclinometer", self._on_inclinometer,
                                     QoSProfile(depth=1)),
        ]
        if self.simulated_waist is not None:  # test-only fault injection into the simulation
            from std_msgs.msg import String

            self._subs.append(self.create_subscription(String, SIM_FAULT_TOPIC,
                                                       self._on_sim_fault, qos))
        # the controller's clock on the node clock's scale (stamps of /waist/reference)
        self._epoch_ns = clock_ns(self.get_clock()) - round(self._controller_now() * 1e9)
        # on the steady clock: the drives' state is reported while a simulation's clock pauses
        self._diag_timer = steady_timer(self, 1.0 / float(self._param("diagnostics_rate")),
                                        self._publish_diagnostics)
        self._start_thread()
        self.get_logger().info(
            f"configured: {config.servo_rate_hz:g} Hz servo, {config.outer_rate_hz:g} Hz outer "
            f"loop, bus load {controller.bus_load.percent:.1f} % of {config.bitrate} bit/s")
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Enable both drives at the measured position (waits up to 0.2 s for feedback)."""
        # before enabling (a full collection can stall every thread for tens of ms):
        # objects alive now are never scanned again, so later collections stay short
        gc.collect()
        gc.freeze()
        error = self._enable()
        if error:
            self.get_logger().error(f"activate failed: {error}")
            return TransitionCallbackReturn.FAILURE
        self._lifecycle_active = True
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Controlled stop, then disable the drives (brakes engage)."""
        self._lifecycle_active = False
        self._controlled_stop_then_disable()
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Disable, stop the servo thread, close the bus, drop topics (the services stay)."""
        self._lifecycle_active = False
        self._teardown()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Same as cleanup."""
        self._lifecycle_active = False
        self._teardown()
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Disable the drives and release everything."""
        self._lifecycle_active = False
        self._teardown()
        return TransitionCallbackReturn.SUCCESS

    def destroy_node(self) -> None:
        """Disable the drives and stop the thread before the node goes (simulated drives last)."""
        self._teardown()
        if self.simulated_waist is not None:
            self.simulated_waist.close()
            self.simulated_waist = None
        super().destroy_node()

    def _start_simulated_drives(self, config: WaistControllerConfig) -> None:
        """``simulated_drives``: the drives on the virtual channel, stepping in real time."""
        simulated = bool(self._param("simulated_drives"))
        interface, channel = str(self._param("can.interface")), str(self._param("can.channel"))
        problem = simulated_drives_problem(simulated, interface)
        if problem:
            raise ConfigurationError(problem)
        drives = self.simulated_waist
        if drives is not None and (not simulated or drives.channel != channel):
            drives.close()
            self.simulated_waist = drives = None
        if not simulated or drives is not None:
            return
        from humanoid_balance.core.model import RobotModel

        path = str(self._param("urdf_path")) or str(package_urdf_path("humanoid"))
        torso = upper_body_load(RobotModel(path))
        self.simulated_waist = SimulatedWaist(channel=channel, waist=config.waist, torso=torso)
        self.get_logger().info(
            f"simulated drives on virtual channel {channel!r}, carrying {torso.mass_kg:.1f} kg at "
            f"{torso.com_height_m:.3f} m above the waist axes")

    # --- requests ----------------------------------------------------------------------------

    def _enable(self) -> str:
        """Enable the drives ("" on success, else why not).

        In FAULT the fault is reset first, and only if its cause is gone (else the cause is
        the answer and the fault stays). Success is answered only once both drives' feedback
        says they are enabled; a fault meanwhile is the answer. The reset and the enable run
        in the servo thread between two periods (:meth:`_between_periods`), on the
        controller's clock and the feedback it has just read: judged from another thread,
        a starved servo loop made fresh feedback look stale. Each wait ends after
        ``ENABLE_TIMEOUT_S`` and at least ``ENABLE_MIN_PERIODS`` servo periods.
        """
        ctl = self.controller
        if ctl is None:
            return self._refusal()
        renew, final = [True], [False]
        # this executor takes no inclinometer sample while the attempts below are retried: a
        # sample fresh when the request came checks the encoders (the drives are disabled)
        asked = self._controller_now()

        def attempt(now: float) -> str:
            try:
                if ctl.state == ControllerState.FAULT:
                    cause = ctl.reset_fault(now, renew=renew[0])
                    renew[0] = False
                    if cause:
                        return f"the fault's cause is still there: {cause}"
                ctl.enable(now, inclinometer_at_s=asked)
            except InvalidInputError as exc:
                # the pose outside the range, or the encoders disagreeing with the inclinometer:
                # no retry (this executor takes no inclinometer sample meanwhile: a retry once
                # the sample went stale would enable unchecked)
                final[0] = True
                return str(exc)
            except HumanoidBalanceError as exc:
                return str(exc)
            return ""

        started = (time.monotonic(), ctl.cycles)
        while True:
            error = self._between_periods(attempt)
            if not error:
                break
            if final[0] or self._waited_enough(ctl, *started):
                return error
            time.sleep(0.01)
        with self._lock:
            enabled_at = ctl.enabled_at_s
        started = (time.monotonic(), ctl.cycles)
        while True:  # confirmed by the drives
            time.sleep(0.005)
            with self._lock:
                if ctl.state == ControllerState.FAULT:
                    return f"the drives faulted again after enabling: {ctl.fault_reason}"
                if ctl.drives_report_enabled(enabled_at):
                    if not ctl.encoders_checked:
                        self.get_logger().warning(
                            "enabled without checking the encoders against the inclinometer (no "
                            "/waist/inclinometer sample within inclinometer_timeout): the drives' "
                            "incremental encoders count from power-on, so the joint angles and "
                            "limits are right only if the drives were powered on at (0, 0) deg")
                    return ""
                if self._waited_enough(ctl, *started):
                    ctl.disable()
                    return (f"the drives did not report enabled within {ENABLE_TIMEOUT_S:g} s: "
                            "disabled again; check the drives and the bus")

    @staticmethod
    def _waited_enough(ctl: WaistController, since_s: float, since_cycle: int) -> bool:
        """ENABLE_TIMEOUT_S passed (monotonic) and the servo ran ENABLE_MIN_PERIODS since."""
        return (time.monotonic() - since_s > ENABLE_TIMEOUT_S
                and ctl.cycles - since_cycle >= ENABLE_MIN_PERIODS)

    def _between_periods(self, request: Callable[[float], str]) -> str:
        """Run ``request(now)`` in the servo thread right after its next period; its answer.

        ``now`` is the time of that period on the controller's clock. Answers why not when
        the servo thread does not take it within 2 s.
        """
        done = threading.Event()
        answer = ["the servo thread did not take the request within 2 s"]

        def run(now: float) -> None:
            answer[0] = request(now)
            done.set()

        with self._lock:
            self._requests.append(run)
        if not done.wait(2.0):
            with self._lock:
                if run in self._requests:
                    self._requests.remove(run)
        return answer[0]

    def _controlled_stop_then_disable(self) -> None:
        """A final controlled stop (commands refused from now on), then disable the drives.

        Waits for the stop as long as it can take with the present limits
        (:meth:`WaistController.stop_time_bound_s`, plus :data:`STOP_WAIT_MARGIN_S`, at most
        :data:`STOP_WAIT_MAX_S`); a stop still running then (a stalled servo thread) is
        given up with an error and the drives are disabled (their brakes engage).
        """
        ctl = self.controller
        if ctl is None:
            return
        with self._lock:
            ctl.stop(final=True)
            wait_s = min(ctl.stop_time_bound_s() + STOP_WAIT_MARGIN_S, STOP_WAIT_MAX_S)
        deadline = time.monotonic() + wait_s
        stopped = False
        while not stopped and time.monotonic() < deadline:
            time.sleep(0.005)
            with self._lock:
                stopped = ctl.state not in (ControllerState.RUNNING, ControllerState.STOPPING)
        with self._lock:
            if not stopped and ctl.state in (ControllerState.RUNNING, ControllerState.STOPPING):
                self.get_logger().error(
                    f"the controlled stop did not end within {wait_s:.2f} s: disabling the "
                    "drives with the waist moving (their brakes engage)")
            ctl.disable()

    def _refusal(self) -> str:
        """Why a request the state does not allow is refused: the state and what to do."""
        state = lifecycle_state(self)
        if state != "finalized":  # the node's own view (a transition may be under way)
            state = "unconfigured" if self.controller is None else "inactive"
        return lifecycle_refusal(NODE_NAME, state)

    def _on_enable(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        if self.controller is None:
            response.success, response.message = False, self._refusal()
        elif request.data and not self._lifecycle_active:
            response.success = False
            response.message = (f"{self._refusal()} to enable the drives; /waist/enable only "
                                "re-enables an active node's drives")
        elif request.data:
            error = self._enable()
            response.success = not error
            response.message = error or "enabled: holding the measured position"
        else:
            self._controlled_stop_then_disable()
            response.success, response.message = True, "stopped and disabled (brakes on)"
        return response

    def _on_stop(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        if self.controller is None:
            response.success, response.message = False, self._refusal()
            return response
        with self._lock:
            self.controller.stop()
            state = self.controller.state
        response.success = True
        response.message = f"controlled stop requested (state {state.value})"
        return response

    def _on_command(self, msg: JointTrajectory) -> None:
        ctl = self.controller
        if ctl is None:
            return
        try:
            index = [list(msg.joint_names).index(j) for j in JOINTS]
        except ValueError:
            self._command_refused(f"ignored: joints {list(msg.joint_names)} must include "
                                  f"{list(JOINTS)}")
            return
        if not msg.points:
            self._command_refused("ignored: no points")
            return
        try:
            times = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec
                              for p in msg.points])
            positions = np.array([[p.positions[i] for i in index] for p in msg.points], dtype=float)
        except IndexError:
            self._command_refused("ignored: a point lacks positions")
            return
        delay: float | None = None
        stamp = stamp_ns(msg.header.stamp)
        if stamp:  # the stamp is the start on the node clock: as far from now on the controller's
            delay = (stamp - clock_ns(self.get_clock())) * 1e-9

        def plan(now: float) -> None:
            # in the servo thread, on the time of its period: planned from the reference of the
            # periods around it (planned on this thread's clock, the new path could start
            # before the next period's time and the reference step back: seen in a flood)
            result = ctl.set_trajectory(times, positions, now,
                                        None if delay is None else now + delay)
            if not result.accepted or result.clamped:
                self._command_refused(result.message)
            else:
                self._command_problem = ""

        with self._lock:
            self._requests.append(plan)

    def _command_refused(self, reason: str) -> None:
        """A /waist/command refused (or clamped): logged and on /diagnostics until a good one."""
        self._commands_refused += 1
        self._command_problem = reason
        self._warn("command", f"/waist/command {reason}")

    def _warn(self, channel: str, text: str, info: bool = False) -> None:
        """Log ``text``; the same text on the same channel at most every WARN_PERIOD_S, a new
        one at once (rclpy's throttle is per call site: it would hide a new cause)."""
        now = time.monotonic()
        last = self._warned.get(channel)
        if last is not None and last[1] == text and now - last[0] < WARN_PERIOD_S:
            return
        self._warned[channel] = (now, text)
        # one call site per severity: rclpy refuses another severity from the same call site
        # ("Logger severity cannot be changed between calls", which killed the node)
        if info:
            self.get_logger().info(text)
        else:
            self.get_logger().warning(text)

    def _on_inclinometer(self, msg: Imu) -> None:
        ctl = self.controller
        if ctl is None:
            return
        o = msg.orientation
        try:
            pitch, roll = pitch_roll_from_quaternion(o.x, o.y, o.z, o.w)
        except InvalidInputError as exc:
            self._warn("inclinometer", f"/waist/inclinometer ignored: {exc}")
            return
        sample_s = self._monotonic_time_of(msg.header.stamp)
        with self._lock:
            ctl.on_inclinometer(pitch, roll, sample_s)
        self._inclinometer_s = sample_s

    def _controller_now(self) -> float:
        """The controller's clock: monotonic, less the simulated drives' lag (s)."""
        return time.monotonic() - self._lag_s

    def _monotonic_time_of(self, stamp: Any) -> float:
        """A sample's time on the controller's clock: now minus its age on the node clock, s.

        The age is ``node clock now - stamp`` (simulation time with ``use_sim_time``),
        at least 0; an unstamped sample (0) is as old as its arrival.
        """
        now = self._controller_now()
        ns = stamp_ns(stamp)
        if ns == 0:
            return now
        age_s = (clock_ns(self.get_clock()) - ns) * 1e-9
        return now - max(age_s, 0.0)

    # --- servo thread ---------------------------------------------------------------------

    def _start_thread(self) -> None:
        self._stop_thread.clear()
        self._servo_failure = ""
        self._thread = threading.Thread(target=self._servo_loop, name=SERVO_THREAD_NAME,
                                        daemon=True)
        self._thread.start()

    def _servo_loop(self) -> None:
        """The servo thread: :meth:`_servo_periods`; if they end on an exception, the drives are
        disabled (brakes on: nothing would feed them setpoints any more) and /diagnostics reports
        it as an ERROR from then on."""
        try:
            self._servo_periods()
        except Exception as exc:
            self._servo_failure = f"the servo thread stopped: {exc!r}; drives disabled"
            with self._lock:
                ctl = self.controller
                if ctl is not None:
                    ctl.disable()
            self.get_logger().error(f"{self._servo_failure}\n{traceback.format_exc()}")

    def _servo_periods(self) -> None:
        ctl = self.controller
        if ctl is None:
            return
        name_os_thread(SERVO_THREAD_NAME)
        switch = float(self._param("gil_switch_interval"))
        if switch > 0:  # the other threads yield the GIL quickly (process-wide)
            sys.setswitchinterval(switch)
        set_thread_priority(self, int(self._param("servo_priority")), "the servo thread")
        period = ctl.config.gains.dt
        spin = float(self._param("spin_margin"))
        publish_every = max(1, round(ctl.config.servo_rate_hz / float(self._param("publish_rate"))))
        # serialized in this thread (cdr): an rclpy message costs about as much to build and
        # convert as the servo period's whole computation
        writers = _FastWriters(cdr.JointStateWriter(JOINTS),
                               cdr.StampedDoublesWriter("waist_plate", (0.0, 0.0, 0.0)))
        now = 0.0
        deadline = time.monotonic() + period
        cycle = 0
        publishing = True
        drives = self.simulated_waist
        self._drives_time_s = time.monotonic() - self._lag_s
        while not self._stop_thread.is_set():
            remaining = deadline - time.monotonic()
            if remaining > spin:
                time.sleep(remaining - spin)
            while time.monotonic() < deadline:
                pass
            started = time.monotonic()
            late = started - deadline
            stats = self._period_stats  # since the last /diagnostics: count, sum, max (s)
            stats[0] += 1
            stats[1] += late
            if late > stats[2]:
                stats[2] = late
            if self.record_period_errors:
                self.period_errors_s.append(late)
            with self._lock:
                try:
                    pending = self.params.take_pending()
                    if pending:  # between two servo periods
                        self._apply(ctl, pending)
                    if drives is not None:  # they answer the last period's setpoint now
                        # one servo period per cycle, in lock-step: a stall slows the drives'
                        # time down, and the controller's with it (its reference must not run
                        # ahead of the waist it moves, nor the drives hold a setpoint longer)
                        drives.step(period)
                        self._drives_time_s += period
                        self._lag_s = started - self._drives_time_s
                    now = started - self._lag_s
                    self._cycle_now_s = now
                    out = ctl.servo_cycle(now)
                    requests, self._requests = self._requests, []
                    for request in requests:  # enable / reset: on this period's feedback
                        request(now)
                except Exception as exc:
                    self._warn("servo", f"servo cycle failed: {exc!r}; disabling")
                    ctl.disable()
                    out = None
                self._last = out
            cycle += 1
            if out is not None and cycle % publish_every == 0 and publishing:
                try:
                    self._publish_fast(out, writers, now)
                except Exception as exc:
                    # rclpy's signal handler shuts the context down from a thread of its own: a
                    # publish then fails while the context may still report ok for a moment
                    if self.context.ok() and "context is invalid" not in str(exc):
                        raise
                    # SIGINT/SIGTERM shut the context down: the servo holds on until the node's
                    # teardown disables the drives, without publishing
                    publishing = False
            if self.record_period_errors:
                self.cycle_durations_s.append(time.monotonic() - started)
            deadline += period
            if time.monotonic() - deadline > 10 * period:  # overrun: skip, do not burst
                deadline = time.monotonic() + period

    def _apply(self, ctl: WaistController, changes: dict[str, Any]) -> None:
        """Dynamic parameter changes, applied to the controller between two servo periods."""
        self._values.update(changes)
        converted: dict[str, Any] = {}
        for name, value in changes.items():
            if name in _RUN_TIME:
                key, scale = _RUN_TIME[name]
                converted[key] = value if scale is None else scale(value)
        ctl.update(**converted)
        self._warn("parameters", "applied " + ", ".join(f"{n}={v!r}" for n, v in changes.items()),
                   info=True)

    def _on_sim_fault(self, msg: Any) -> None:
        """Test-only (``simulated_drives``): a fault of the simulated drives, applied between
        two servo periods; see :data:`SIM_FAULT_TOPIC`."""
        words = str(msg.data).split()
        drives = self.simulated_waist
        if drives is None or not words:
            return
        try:
            action = _sim_fault_action(drives, words)
        except (ValueError, IndexError, HumanoidBalanceError) as exc:
            self._warn("sim_fault", f"{SIM_FAULT_TOPIC} {msg.data!r} ignored: {exc}")
            return
        with self._lock:
            action()
        self._warn("sim_fault", f"simulated drives: {msg.data}", info=True)

    def _publish_fast(self, out: CycleOutput, writers: _FastWriters, now: float) -> None:
        """``/waist/reference`` (stamped on the controller's clock), ``/joint_states`` and
        ``/waist/tracking_error`` (on the node clock), each when its values are finite."""
        shaped = out.shaped_reference_rad
        if _finite(shaped):
            self.pub_reference.publish(writers.joints.write(
                self._epoch_ns + round(now * 1e9), shaped, out.shaped_velocity_rad_s))
        stamp_ns = clock_ns(self.get_clock())
        if _finite(out.joint_position_rad):
            self.pub_joints.publish(writers.joints.write(
                stamp_ns, out.joint_position_rad, out.joint_velocity_rad_s))
        error = out.tracking_error_rad
        if _finite(error):
            self.pub_error.publish(writers.error.write(
                stamp_ns, (float(error[0]), float(error[1]), 0.0)))

    def _publish_diagnostics(self) -> None:
        ctl, bus = self.controller, self.bus
        if ctl is None or bus is None:
            return
        with self._lock:
            out = self._last
            # the feedback's age as the controller judged it at its last servo cycle (its clock:
            # a stalled servo thread must not make fresh feedback look stale); once that thread
            # has ended nothing judges it any more: its clock now
            cycle_now_s = self._cycle_now_s
            if cycle_now_s is None or self._servo_failure:
                cycle_now_s = self._controller_now()
            state, reason, plan = ctl.state, ctl.fault_reason, ctl.last_plan
            messages, ctl.messages = ctl.messages, []
            periods, late_sum_s, late_max_s = self._period_stats
            self._period_stats = [0, 0.0, 0.0]
        for text in messages:
            self._warn("controller", text)
        motors = []
        for k, node in enumerate(ctl.nodes):
            sample = bus.feedback(node)
            status = bus.status(node)
            values: dict[str, Any] = {"node_id": node}
            level, text = OK, "ok"
            if out is not None:
                values.update(position_rad=float(out.motor_position_rad[k]),
                              velocity_rad_s=float(out.motor_velocity_rad_s[k]),
                              current_a=float(out.motor_current_a[k]))
            if sample is None:
                level, text = WARN, "no feedback yet"
            else:
                fb = sample.feedback
                age_s = max(cycle_now_s - sample.stamp_s, 0.0)
                stale = age_s > ctl.config.feedback_timeout_s
                values.update(enabled=fb.enabled, fault=fb.fault, watchdog=fb.watchdog,
                              brake=fb.brake, feedback_age_s=age_s, feedback_stale=stale)
                if stale:  # the values above are the last sample's, the motor's state unknown
                    level, text = ERROR, f"no feedback for {age_s:.3g} s (stale)"
                elif fb.fault:
                    level, text = ERROR, "fault"
            if status is not None:
                values.update(fault_code=status.fault_code, drive_state=status.state)
            motors.append(diagnostic_status(f"waist motor {k + 1}", level, text, values))
        self._publish_diagnostic(self.pub_motors, diagnostic_array(self, motors))
        level = ERROR if state == ControllerState.FAULT else OK
        summary: dict[str, Any] = {"state": state.value, "bus_load_pct": ctl.bus_load.percent,
                                   "commands_refused": self._commands_refused, **bus.counters()}
        if plan is not None:  # the last accepted command: its windows off the command's timing
            summary.update(command_catch_up_s=plan.catch_up_s,
                           command_max_lag_deg=math.degrees(plan.max_lag_rad),
                           command_end_lag_s=plan.end_lag_s)
        if ctl.encoders_checked is not None:  # against the inclinometer at the last enable
            summary["encoders_checked"] = ctl.encoders_checked
        if periods:  # the servo thread's timing since the last /diagnostics
            summary.update(servo_periods=periods,
                           servo_period_error_mean_us=1e6 * late_sum_s / periods,
                           servo_period_error_max_us=1e6 * late_max_s)
        if self._inclinometer_s is not None:  # the outer loop uses it while fresh
            age_s = self._controller_now() - self._inclinometer_s
            summary.update(inclinometer_age_s=age_s,
                           inclinometer_used=age_s <= ctl.config.inclinometer_timeout_s)
        text = f"FAULT: {reason}" if reason else state.value
        if self._servo_failure:
            level, text = ERROR, self._servo_failure
        if level == OK and self._command_problem:  # until a good command comes
            level, text = WARN, f"{state.value}; last /waist/command {self._command_problem}"
        self._publish_diagnostic(self.pub_diag, diagnostic_array(
            self, [diagnostic_status("waist_controller", level, text, summary)]))

    def _publish_diagnostic(self, publisher: Any, msg: Any) -> None:
        """Publish; quietly nothing once SIGINT/SIGTERM shut the context down meanwhile."""
        try:
            publisher.publish(msg)
        except Exception as exc:
            if self.context.ok() and "context is invalid" not in str(exc):
                raise

    def _teardown(self) -> None:
        ctl = self.controller
        if self._thread is not None:
            self._stop_thread.set()
            self._thread.join(timeout=1.0)
            self._thread = None
        if ctl is not None:
            # with the servo thread's lock when it can be had (a thread that did not end within
            # its join may hold it): disabled either way
            locked = self._lock.acquire(timeout=0.5)
            try:
                ctl.disable()
            finally:
                if locked:
                    self._lock.release()
        if self.bus is not None:
            self.bus.close()
        for sub in self._subs:
            self.destroy_subscription(sub)
        destroy_timers(self, self._diag_timer)
        self._diag_timer = None
        for pub in self._pubs:
            self.destroy_publisher(pub)
        self._subs, self._pubs = [], []
        self.controller, self.bus, self._last = None, None, None
        self._cycle_now_s = None


class _FastWriters(NamedTuple):
    """The servo thread's serialized messages: ``JointState`` of the waist joints (joint states
    and reference) and ``Vector3Stamped`` in ``waist_plate`` (tracking error)."""

    joints: cdr.JointStateWriter
    error: cdr.StampedDoublesWriter


def _finite(pair: Any) -> bool:
    """Both values of a 2-vector are finite (``math``: numpy's reductions cost microseconds)."""
    return math.isfinite(pair[0]) and math.isfinite(pair[1])


def main(args: Sequence[str] | None = None) -> int:
    """Console script ``waist_controller``."""
    return run_node(WaistControllerNode, args, stop_signals=True, exit_process=True)


if __name__ == "__main__":
    raise SystemExit(main())
