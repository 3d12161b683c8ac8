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
``inclinometer_timeout``).

Faults (a drive silent, a drive fault, bus-off, a dead receive thread) disable
both drives and put the controller in its FAULT state (``/diagnostics`` ERROR with
the reason); only a request leaves it: ``/waist/enable`` with ``data: true``
clears the fault, re-opens the bus if needed and enables again.

Simulation (``simulated_drives: true``, only with ``can.interface: virtual``): the
node hosts the two simulated drives (:class:`~humanoid_balance.can.sim_drive.SimulatedWaist`)
on its virtual channel, in its own process, carrying the humanoid's upper body
(from ``urdf_path``) as a point mass (:func:`~humanoid_balance.can.sim_drive.upper_body_load`).
The servo thread steps them by the monotonic time elapsed (real time), just before
each servo cycle, and the controller then reads their answers from the bus itself
(no receive thread), as the test rigs do: a drive answers every setpoint within
its period whatever the load of the machine, where drives stepped by a thread of
their own were starved past the 10 ms ``feedback_timeout`` (20 ms at activation,
110 ms under a load average of 13, on the shared 2-core machine). A stall longer
than :data:`SIMULATED_DRIVE_MAX_STEP_S` slows the drives' time down instead of
jumping ahead. The frames still go through python-can and the DBC protocol. The
drives live as long as the node (a cleanup and configure finds the waist where it
was; they do not move while the node is unconfigured).

Clocks: the servo thread runs on the monotonic clock. Message stamps are on the
node clock (simulation time with ``use_sim_time``): a command's stamp and an
inclinometer sample's stamp are turned into monotonic times by their age on the
node clock (``now - stamp``), so the inclinometer timeout holds on simulation
time as on a robot (a sample is as old as its stamp says, and goes stale on the
monotonic clock while the simulation pauses). ``/diagnostics`` is published on
the steady clock, so it goes on while a simulation waits.

Topics: ``/waist/command`` (JointTrajectory, joints ``waist_pitch``,
``waist_roll``), ``/waist/inclinometer`` (Imu) in; ``/joint_states`` (waist
joints), ``/waist/tracking_error`` (Vector3Stamped, x = pitch, y = roll, rad),
``/waist/motor_states`` and ``/diagnostics`` (DiagnosticArray) out. Services
``/waist/enable`` (SetBool), ``/waist/stop`` (Trigger).
"""

from __future__ import annotations

import gc
import math
import os
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from geometry_msgs.msg import Vector3Stamped
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.clock import Clock, ClockType
from rclpy.lifecycle import LifecycleState, TransitionCallbackReturn
from rclpy.lifecycle import Node as LifecycleNode
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from sensor_msgs.msg import Imu, JointState
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory

from humanoid_balance.can.bus import WaistCanBus, validate_node_ids
from humanoid_balance.can.controller import (
    ControllerState,
    CycleOutput,
    WaistController,
    WaistControllerConfig,
)
from humanoid_balance.can.sim_drive import SimulatedWaist, upper_body_load
from humanoid_balance.core.servo import ServoGains
from humanoid_balance.core.waist_kinematics import DifferentialWaist, pitch_roll_from_quaternion
from humanoid_balance.exceptions import ConfigurationError, HumanoidBalanceError, InvalidInputError
from humanoid_balance.nodes.common import (
    ERROR,
    OK,
    WARN,
    destroy_timers,
    diagnostic_array,
    diagnostic_status,
    run_node,
    stamp_ns,
)
from humanoid_balance.resources import urdf_path as package_urdf_path

NODE_NAME = "waist_controller"
JOINTS = ("waist_pitch", "waist_roll")
WARN_PERIOD_S = 2.0
#: s, the longest step of the simulated drives (a longer stall of the servo thread slows
#: their time down); under their 20 ms watchdog
SIMULATED_DRIVE_MAX_STEP_S = 0.008

_POSITIVE = ("can.bitrate", "gear_ratio_pitch", "gear_ratio_roll", "servo_rate", "outer_rate",
             "current_limit", "current_unit", "command_timeout", "feedback_timeout",
             "inclinometer_timeout", "stop_deceleration", "publish_rate", "diagnostics_rate")
_NON_NEGATIVE = ("kp", "kv", "ki", "outer_gain", "spin_margin", "gil_switch_interval")


def validate(name: str, value: Any) -> str | None:
    """Why a parameter value is unusable, or None."""
    if name in _POSITIVE or name in _NON_NEGATIVE:
        try:
            v = float(value)
        except (TypeError, ValueError):
            return f"{name} must be a number, got {value!r}"
        if not math.isfinite(v) or (v <= 0.0 if name in _POSITIVE else v < 0.0):
            bound = "> 0" if name in _POSITIVE else ">= 0"
            return f"{name} must be finite and {bound}, got {value!r}"
    elif name in ("pitch_limits", "roll_limits"):
        try:
            lo, hi = (float(v) for v in value)
        except (TypeError, ValueError):
            return f"{name} must be [min, max] in degrees, got {value!r}"
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            return f"{name} must be finite [min, max] degrees with min < max, got {list(value)}"
    elif name == "motor_ids":
        try:
            validate_node_ids(tuple(value))
        except InvalidInputError as exc:
            return str(exc)
        except (TypeError, ValueError):
            return f"motor_ids must be a list of the two drive node ids, got {value!r}"
    elif name == "servo_priority":
        if not isinstance(value, int) or not 0 <= value <= 99:
            return f"{name} must be an integer 0..99 (0 = normal scheduling), got {value!r}"
    elif name == "limit_policy" and value not in ("refuse", "clamp"):
        return f"limit_policy must be 'refuse' or 'clamp', got {value!r}"
    return None


def simulated_drives_problem(simulated_drives: bool, interface: str) -> str | None:
    """Why ``simulated_drives`` cannot be used with CAN ``interface``, or None."""
    if simulated_drives and interface != "virtual":
        return (f"simulated_drives needs can.interface 'virtual' (the drives share a python-can "
                f"virtual bus with the controller in this process), got {interface!r}: set "
                "simulated_drives false to use real drives")
    return None


class WaistControllerNode(LifecycleNode):
    """The ``waist_controller`` lifecycle node; see the module docstring."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        d = ParameterDescriptor
        self.declare_parameter("can.interface", "virtual",
                               d(description="python-can interface: socketcan on the robot, "
                                 "virtual in simulation"))
        self.declare_parameter("can.channel", "waist", d(description="can0, or a virtual channel"))
        self.declare_parameter("can.bitrate", 320000, d(description="bit/s (paper: 320 kbit/s)"))
        self.declare_parameter("motor_ids", [1, 2], d(description="drive node ids of motors 1, 2"))
        self.declare_parameter("gear_ratio_pitch", 100.0, d(description="i1"))
        self.declare_parameter("gear_ratio_roll", 100.0, d(description="i2"))
        self.declare_parameter("servo_rate", 500.0, d(description="inner loops, Hz (paper 500)"))
        self.declare_parameter("outer_rate", 50.0, d(description="RMRC outer loop, Hz (paper 50)"))
        self.declare_parameter("kp", 13.0, d(description="position gain, 1/s (paper 13)"))
        self.declare_parameter("kv", 500.0, d(description="velocity P, current units per rad/s"))
        self.declare_parameter("ki", 5.0, d(description="velocity I, current units per rad"))
        self.declare_parameter("current_unit", 0.001, d(description="current unit of kv, ki, A"))
        self.declare_parameter("current_limit", 8.0, d(description="current setpoint limit, A"))
        self.declare_parameter("outer_gain", 2.0, d(description="inclinometer feedback, 1/s"))
        self.declare_parameter("pitch_limits", [-5.0, 45.0], d(description="deg"))
        self.declare_parameter("roll_limits", [-15.0, 15.0], d(description="deg"))
        self.declare_parameter("limit_policy", "refuse",
                               d(description="refuse | clamp targets beyond the joint range"))
        self.declare_parameter("command_timeout", 0.5,
                               d(description="s after a command's end before a controlled stop"))
        self.declare_parameter("feedback_timeout", 0.01, d(description="drive silence = fault, s"))
        self.declare_parameter("inclinometer_timeout", 0.1,
                               d(description="older inclinometer: encoders are used, s"))
        self.declare_parameter("stop_deceleration", 50.0,
                               d(description="motor deceleration of a controlled stop, rad/s^2"))
        self.declare_parameter("publish_rate", 100.0,
                               d(description="/joint_states and tracking error, Hz"))
        self.declare_parameter("diagnostics_rate", 10.0, d(description="Hz"))
        self.declare_parameter("servo_priority", 0,
                               d(description="SCHED_FIFO priority of the servo thread, 1..99; "
                                 "0 = normal scheduling"))
        self.declare_parameter("gil_switch_interval", 5e-5,
                               d(description="sys.setswitchinterval for the process while the servo "
                                             "runs, s; 0 = leave Python's (5 ms)"))
        self.declare_parameter("spin_margin", 0.0003,
                               d(description="servo thread busy-waits this long before a deadline, s"))
        self.declare_parameter("simulated_drives", False,
                               d(description="host simulated drives on the virtual channel (needs "
                                             "can.interface virtual)"))
        self.declare_parameter("urdf_path", "",
                               d(description="simulated_drives: the humanoid whose upper body the "
                                             "drives carry; empty: the package's"))
        self.add_on_set_parameters_callback(self._on_set_parameters)
        #: the simulated drives (``simulated_drives``), kept for the node's life
        self.simulated_waist: SimulatedWaist | None = None
        self.controller: WaistController | None = None
        self.bus: WaistCanBus | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop_thread = threading.Event()
        self._last: CycleOutput | None = None
        self._subs: list[Any] = []
        self._srvs: list[Any] = []
        self._pubs: list[Any] = []
        self._diag_timer: Any = None
        self.period_errors_s: list[float] = []  # the benchmark reads these
        self.cycle_durations_s: list[float] = []
        self.record_period_errors = False
        self._started = 0.0
        self._inclinometer_s: float | None = None  # monotonic time of the last sample
        self._drives_time_s = time.monotonic()  # simulated drives: stepped to this time

    # --- parameters -------------------------------------------------------------------

    def _on_set_parameters(self, params: Sequence[Parameter]) -> SetParametersResult:
        new = {p.name: p.value for p in params}
        problem = simulated_drives_problem(
            bool(new.get("simulated_drives", self._param("simulated_drives"))),
            str(new.get("can.interface", self._param("can.interface"))))
        if problem and ("simulated_drives" in new or "can.interface" in new):
            return SetParametersResult(successful=False, reason=problem)
        for param in params:
            problem = validate(param.name, param.value)
            if problem:
                return SetParametersResult(successful=False, reason=problem)
            if self.controller is not None and param.name != "use_sim_time":
                return SetParametersResult(
                    successful=False, reason=f"{param.name} is read at configure: deactivate, "
                    "cleanup and configure again to change it")
        return SetParametersResult(successful=True)

    def _param(self, name: str) -> Any:
        return self.get_parameter(name).value

    def _build_config(self) -> WaistControllerConfig:
        for name in (*_POSITIVE, *_NON_NEGATIVE, "pitch_limits", "roll_limits", "motor_ids",
                     "limit_policy", "servo_priority"):
            problem = validate(name, self._param(name))
            if problem:
                raise InvalidInputError(problem)
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
            stop_deceleration_rad_s2=float(self._param("stop_deceleration")),
            limit_policy=str(self._param("limit_policy")), bitrate=int(self._param("can.bitrate")))

    # --- lifecycle ----------------------------------------------------------------------

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Check parameters and bus load, open the bus, start the servo thread (polling)."""
        try:
            config = self._build_config()
            self._start_simulated_drives(config)
            simulated = self.simulated_waist is not None
            # simulated drives: answers are read in the servo cycle and stamped with the time the
            # drives were stepped to, so a speed from two samples is their true motion
            bus = WaistCanBus(interface=str(self._param("can.interface")),
                              channel=str(self._param("can.channel")),
                              bitrate=int(self._param("can.bitrate")), use_notifier=not simulated,
                              clock=(lambda: self._drives_time_s) if simulated else time.monotonic)
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
        self._pubs = [self.pub_joints, self.pub_error, self.pub_motors, self.pub_diag]
        self._subs = [
            self.create_subscription(JointTrajectory, "/waist/command", self._on_command, qos),
            self.create_subscription(Imu, "/waist/inclinometer", self._on_inclinometer, qos),
        ]
        self._srvs = [self.create_service(SetBool, "/waist/enable", self._on_enable),
                      self.create_service(Trigger, "/waist/stop", self._on_stop)]
        # on the steady clock: the drives' state is reported while a simulation's clock pauses
        self._diag_timer = self.create_timer(1.0 / float(self._param("diagnostics_rate")),
                                             self._publish_diagnostics,
                                             clock=Clock(clock_type=ClockType.STEADY_TIME))
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
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Controlled stop, then disable the drives (brakes engage)."""
        self._controlled_stop_then_disable()
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Disable, stop the servo thread, close the bus, drop topics and services."""
        self._teardown()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Same as cleanup."""
        self._teardown()
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Disable the drives and release everything."""
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
        ctl = self.controller
        if ctl is None:
            return "not configured"
        deadline = time.monotonic() + 0.2
        while True:
            with self._lock:
                try:
                    if ctl.state == ControllerState.FAULT:
                        ctl.reset_fault(time.monotonic())
                    ctl.enable(time.monotonic())
                    return ""
                except HumanoidBalanceError as exc:
                    error = str(exc)
            if time.monotonic() > deadline:
                return error
            time.sleep(0.01)

    def _controlled_stop_then_disable(self) -> None:
        ctl = self.controller
        if ctl is None:
            return
        with self._lock:
            ctl.stop()
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            with self._lock:
                if ctl.state not in (ControllerState.RUNNING, ControllerState.STOPPING):
                    break
            time.sleep(0.005)
        with self._lock:
            ctl.disable()

    def _on_enable(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        if self.controller is None:
            response.success, response.message = False, "not configured"
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
            response.success, response.message = False, "not configured"
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
            self.get_logger().warning(
                f"/waist/command ignored: joints {list(msg.joint_names)} must include "
                f"{list(JOINTS)}", throttle_duration_sec=WARN_PERIOD_S)
            return
        if not msg.points:
            self.get_logger().warning("/waist/command ignored: no points",
                                      throttle_duration_sec=WARN_PERIOD_S)
            return
        try:
            times = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec
                              for p in msg.points])
            positions = np.array([[p.positions[i] for i in index] for p in msg.points], dtype=float)
        except IndexError:
            self.get_logger().warning("/waist/command ignored: a point lacks positions",
                                      throttle_duration_sec=WARN_PERIOD_S)
            return
        now = time.monotonic()
        start = None
        stamp = stamp_ns(msg.header.stamp)
        if stamp:  # the stamp is the start on the node clock: as far from now on the monotonic one
            start = now + (stamp - self.get_clock().now().nanoseconds) * 1e-9
        with self._lock:
            result = ctl.set_trajectory(times, positions, now, start)
        if not result.accepted or result.clamped:
            self.get_logger().warning(f"/waist/command {result.message}",
                                      throttle_duration_sec=WARN_PERIOD_S)

    def _on_inclinometer(self, msg: Imu) -> None:
        ctl = self.controller
        if ctl is None:
            return
        o = msg.orientation
        try:
            pitch, roll = pitch_roll_from_quaternion(o.x, o.y, o.z, o.w)
        except InvalidInputError as exc:
            self.get_logger().warning(f"/waist/inclinometer ignored: {exc}",
                                      throttle_duration_sec=WARN_PERIOD_S)
            return
        sample_s = self._monotonic_time_of(msg.header.stamp)
        with self._lock:
            ctl.on_inclinometer(pitch, roll, sample_s)
        self._inclinometer_s = sample_s

    def _monotonic_time_of(self, stamp: Any) -> float:
        """A sample's time on the monotonic clock: now minus its age on the node clock, s.

        The age is ``node clock now - stamp`` (simulation time with ``use_sim_time``),
        at least 0; an unstamped sample (0) is as old as its arrival.
        """
        now = time.monotonic()
        ns = stamp_ns(stamp)
        if ns == 0:
            return now
        age_s = (self.get_clock().now().nanoseconds - ns) * 1e-9
        return now - max(age_s, 0.0)

    # --- servo thread ---------------------------------------------------------------------

    def _set_fifo(self, priority: int, what: str) -> None:
        """Put the calling thread under SCHED_FIFO ``priority`` (0: leave it); warn if refused."""
        if priority <= 0:
            return
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        except (OSError, AttributeError) as exc:
            self.get_logger().warning(
                f"{what} stays at normal priority: SCHED_FIFO {priority} refused ({exc}); give "
                "the user an rtprio limit (/etc/security/limits.conf) or CAP_SYS_NICE")

    def _start_thread(self) -> None:
        self._stop_thread.clear()
        self._thread = threading.Thread(target=self._servo_loop, name="waist-servo", daemon=True)
        self._thread.start()

    def _servo_loop(self) -> None:
        ctl = self.controller
        if ctl is None:
            return
        switch = float(self._param("gil_switch_interval"))
        if switch > 0:  # the other threads yield the GIL quickly (process-wide)
            sys.setswitchinterval(switch)
        self._set_fifo(int(self._param("servo_priority")), "the servo thread")
        period = ctl.config.gains.dt
        spin = float(self._param("spin_margin"))
        publish_every = max(1, round(ctl.config.servo_rate_hz / float(self._param("publish_rate"))))
        joint_msg = JointState()
        joint_msg.name = list(JOINTS)
        error_msg = Vector3Stamped()
        error_msg.header.frame_id = "waist_plate"
        deadline = time.monotonic() + period
        cycle = 0
        publishing = True
        drives = self.simulated_waist
        drives_stepped = time.monotonic()
        while not self._stop_thread.is_set():
            remaining = deadline - time.monotonic()
            if remaining > spin:
                time.sleep(remaining - spin)
            while time.monotonic() < deadline:
                pass
            started = time.monotonic()
            if self.record_period_errors:
                self.period_errors_s.append(started - deadline)
            with self._lock:
                try:
                    if drives is not None:  # they answer the last period's setpoint now
                        drives.step(min(max(started - drives_stepped, 1e-6),
                                        SIMULATED_DRIVE_MAX_STEP_S))
                        drives_stepped = self._drives_time_s = started
                    out = ctl.servo_cycle(started)
                except Exception as exc:
                    self.get_logger().error(f"servo cycle failed: {exc!r}; disabling",
                                            throttle_duration_sec=WARN_PERIOD_S)
                    ctl.disable()
                    out = None
                self._last = out
            cycle += 1
            if out is not None and cycle % publish_every == 0 and publishing:
                try:
                    self._publish_fast(out, joint_msg, error_msg)
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

    def _publish_fast(self, out: CycleOutput, joint_msg: JointState,
                      error_msg: Vector3Stamped) -> None:
        stamp = self.get_clock().now().to_msg()
        if np.all(np.isfinite(out.joint_position_rad)):
            joint_msg.header.stamp = stamp
            joint_msg.position = [float(v) for v in out.joint_position_rad]
            joint_msg.velocity = [float(v) for v in out.joint_velocity_rad_s]
            self.pub_joints.publish(joint_msg)
        if np.all(np.isfinite(out.tracking_error_rad)):
            error_msg.header.stamp = stamp
            error_msg.vector.x = float(out.tracking_error_rad[0])
            error_msg.vector.y = float(out.tracking_error_rad[1])
            error_msg.vector.z = 0.0
            self.pub_error.publish(error_msg)

    def _publish_diagnostics(self) -> None:
        ctl, bus = self.controller, self.bus
        if ctl is None or bus is None:
            return
        with self._lock:
            out = self._last
            state, reason = ctl.state, ctl.fault_reason
            messages, ctl.messages = ctl.messages, []
        for text in messages:
            self.get_logger().warning(text, throttle_duration_sec=WARN_PERIOD_S)
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
                values.update(enabled=fb.enabled, fault=fb.fault, watchdog=fb.watchdog,
                              brake=fb.brake)
                if fb.fault:
                    level, text = ERROR, "fault"
            if status is not None:
                values.update(fault_code=status.fault_code, drive_state=status.state)
            motors.append(diagnostic_status(f"waist motor {k + 1}", level, text, values))
        self._publish_diagnostic(self.pub_motors, diagnostic_array(self, motors))
        level = ERROR if state == ControllerState.FAULT else OK
        summary: dict[str, Any] = {"state": state.value, "bus_load_pct": ctl.bus_load.percent,
                                   **bus.counters()}
        if self._inclinometer_s is not None:  # the outer loop uses it while fresh
            age_s = time.monotonic() - self._inclinometer_s
            summary.update(inclinometer_age_s=age_s,
                           inclinometer_used=age_s <= ctl.config.inclinometer_timeout_s)
        text = f"FAULT: {reason}" if reason else state.value
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
            ctl.disable()
        if self.bus is not None:
            self.bus.close()
        for sub in self._subs:
            self.destroy_subscription(sub)
        for srv in self._srvs:
            self.destroy_service(srv)
        destroy_timers(self, self._diag_timer)
        self._diag_timer = None
        for pub in self._pubs:
            self.destroy_publisher(pub)
        self._subs, self._srvs, self._pubs = [], [], []
        self.controller, self.bus, self._last = None, None, None


def main(args: Sequence[str] | None = None) -> int:
    """Console script ``waist_controller``."""
    return run_node(WaistControllerNode, args, stop_signals=True, exit_process=True)


if __name__ == "__main__":
    raise SystemExit(main())
