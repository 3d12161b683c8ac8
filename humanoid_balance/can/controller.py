"""The waist controller without ROS: RMRC outer loop, three-loop servo, safety (seed 003).

:class:`WaistController` is what the ``waist_controller`` node runs in its servo
thread, and what the experiment and the tests run in lock-step with the simulated
drives. It owns the safety logic of issue 5:

* trajectories are checked before use: non-finite values are rejected; a point
  outside the joint range is refused (``limit_policy="refuse"``, default) or
  clamped into it (``"clamp"``), with a message saying which point and by how much;
  the motor references are clamped into the joint range again every period, so no
  target beyond a limit is ever sent;
* the command stays live until ``max(receipt, last point time) + command_timeout``;
  after that the controller makes a controlled stop, detected in the first servo
  period after the deadline;
* a controlled stop (:meth:`WaistController.stop`, the command timeout) is a reference
  too: the joints brake from where the reference is, as it moves, to rest within
  ``acceleration_limit_rad_s2``, together (the direction kept) and each resting before
  a range edge ahead (:mod:`humanoid_balance.core.braking`); the integrals and the outer
  loop keep working during it, and the servo then holds where it ended. A stop before a
  disable (``final``) also refuses every command until the next enable, so that a
  command arriving meanwhile cannot start the waist again while the drives are about
  to be disabled;
* a drive that sends no feedback for ``feedback_timeout_s``, a drive fault bit, a
  bus-off, or a failure of the bus receive thread puts the controller in ``FAULT``:
  both drives are sent ``DISABLE`` (their holding brakes engage) and the reason is
  kept; only :meth:`reset_fault` (a request) leaves ``FAULT``;
* each period reads every drive's latest feedback sample once, and that one sample
  is what the safety checks judge and what the servo uses; a sample seen before (its
  frame was lost) is no new measurement: the motor speed estimate is held and the
  velocity integrator is not advanced on it (see :mod:`humanoid_balance.core.servo`),
  and once it is older than ``feedback_timeout_s`` the controller faults;
* a current limit beyond what ``WaistCurrentCmd`` can carry (the DBC range) is
  refused when the controller is built, not met mid-motion;
* enabling starts from the measured motor positions with zero velocity; an old
  trajectory or setpoint is never resumed; a waist more than
  :data:`ENABLE_RANGE_TOLERANCE_RAD` outside its joint range is not enabled (holding it
  would step the reference to the edge), and a send that fails during the enable
  disables both drives again before the error is raised (no drive is left enabled, its
  brake released, while the controller is idle); a drive that reports enabled while the
  controller is idle or faulted is sent ``DISABLE`` again;
* the two integrals that shift the reference (the outer loop's inclinometer offset, the
  encoder-error integral that removes the servo's droop under load) are bounded
  (:data:`OFFSET_LIMIT_RAD`, :data:`DROOP_LIMIT_RAD`) and frozen while a motor is held
  back (saturated current, lost or late samples, the encoders more than
  :data:`HELD_BACK_RAD` behind); the offset integrates only on a fresh inclinometer
  sample (on the encoders the droop integral already removes their error), so a drive
  that falls behind does not wind them up into an overshoot;
* only :meth:`servo_cycle` sends setpoints, so a stalled loop stops feeding the
  drives' watchdogs and they stop on their own.

The servo period computes on pairs of Python floats (:data:`Pair`), not on numpy arrays:
with 2-vectors a numpy call costs 1-4 us of overhead for a few nanoseconds of arithmetic,
and the period ran some 40 of them. The expressions are the array ones element by element,
in the same order; only the 2 x 2 products differ, by a rounding: numpy's BLAS fuses their
multiply-adds, Python rounds each product (which is also the same on every CPU). The
outputs (:class:`CycleOutput`) are arrays as before.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from humanoid_balance.can.bus import FeedbackSample, MotorBus, validate_node_ids
from humanoid_balance.can.protocol import (
    CURRENT_CMD_ID,
    DBC_PATH,
    NODE_IDS,
    ControlCommand,
    WaistProtocol,
)
from humanoid_balance.core.blended_trajectory import BlendedTrajectory
from humanoid_balance.core.braking import StopPlan, plan_stop
from humanoid_balance.core.bus_load import BusLoad, check_bus_load
from humanoid_balance.core.servo import EncoderVelocity, MotorServo, ServoGains
from humanoid_balance.core.waist_kinematics import DifferentialWaist, RmrcOuterLoop
from humanoid_balance.exceptions import (
    CanBusError,
    CanBusOffError,
    ConfigurationError,
    InvalidInputError,
)

FloatArray = NDArray[np.float64]
#: ``[pitch, roll]`` or ``[motor 1, motor 2]`` as two floats: the servo period's vectors
Pair = tuple[float, float]
ZERO: Pair = (0.0, 0.0)
NAN_PAIR: Pair = (math.nan, math.nan)
#: rad, the most the encoder-error integral may shift the reference (the paper's torso droops
#: 0.35 deg at 30 deg pitch under the P position loop)
DROOP_LIMIT_RAD = math.radians(0.5)
#: rad, the most the inclinometer feedback of the outer loop may shift the reference (what the
#: encoders do not see: the structure's deflection, the inclinometer's mounting)
OFFSET_LIMIT_RAD = math.radians(1.0)
#: rad, an encoder error (reference with its offsets minus the encoders) beyond which the motors
#: are held back (saturated current, a starved or braked drive): both integrals then freeze
HELD_BACK_RAD = math.radians(1.0)
#: rad, how far outside its joint range the waist may be and still be enabled (the hold is then
#: clamped to the edge: a step of at most this); further out, enable refuses (measured: from
#: 7 deg outside, the step to the edge reached 64 deg/s and saturated the current)
ENABLE_RANGE_TOLERANCE_RAD = math.radians(0.2)
#: servo periods after a DISABLE within which a drive may still report enabled (its feedback
#: lags the frame by a period or two); one that still does after them is sent DISABLE again
REDISABLE_EVERY = 25


class ControllerState(Enum):
    """Controller states."""

    IDLE = "idle"          # motors disabled (brakes on)
    RUNNING = "running"    # following a trajectory
    STOPPING = "stopping"  # controlled stop in progress
    HOLDING = "holding"    # enabled, holding position
    FAULT = "fault"        # motors disabled after a fault; needs reset_fault()


ENABLED_STATES = (ControllerState.RUNNING, ControllerState.STOPPING, ControllerState.HOLDING)


@dataclass(frozen=True)
class WaistControllerConfig:
    """Tunables of the waist controller (SI units, radians).

    Attributes:
        waist: geometry, gear ratios and joint range.
        gains: the per-motor servo (kp, kv, ki, dt = 1 / servo_rate).
        outer_rate_hz: RMRC outer loop rate (paper 50 Hz).
        outer_gain_per_s: inclinometer feedback gain of the outer loop.
        motor_ids: drive node ids of motor 1 and motor 2.
        command_timeout_s: command life after its end (see module doc).
        feedback_timeout_s: drive silence taken as a lost drive.
        inclinometer_timeout_s: older inclinometer samples are not used (encoders instead).
        homing_tolerance_rad: largest difference between the encoders' joint angles and a
            fresh inclinometer sample at which :meth:`WaistController.enable` enables.
        limit_policy: ``refuse`` or ``clamp`` for trajectory points beyond the range.
        velocity_limit_rad_s: joint speed bound of the shaped reference (URDF: 60 deg/s).
        acceleration_limit_rad_s2: joint acceleration bound of the shaped reference (commands,
            clamps and controlled stops).
        droop_gain_per_s: gain of the integral of the encoders' error (the servo's static
            error under load; 0 = none), 1/s.
        bitrate: bus bit rate for the load check, bit/s.
        max_bus_load: allowed bus share (0.5).
    """

    waist: DifferentialWaist = field(default_factory=DifferentialWaist)
    gains: ServoGains = field(default_factory=ServoGains)
    outer_rate_hz: float = 50.0
    outer_gain_per_s: float = 2.0
    motor_ids: tuple[int, int] = (1, 2)
    command_timeout_s: float = 0.5
    feedback_timeout_s: float = 0.01
    inclinometer_timeout_s: float = 0.1
    homing_tolerance_rad: float = math.radians(2.0)
    limit_policy: str = "refuse"
    velocity_limit_rad_s: float = math.radians(60.0)
    acceleration_limit_rad_s2: float = math.radians(30.0)
    droop_gain_per_s: float = 20.0
    bitrate: int = 320_000
    max_bus_load: float = 0.5

    def __post_init__(self) -> None:
        servo_rate = 1.0 / self.gains.dt
        if not math.isfinite(self.outer_rate_hz) or not 0.0 < self.outer_rate_hz <= servo_rate:
            raise ConfigurationError(
                f"outer_rate must be in (0, servo_rate = {servo_rate:g}] Hz, got {self.outer_rate_hz}")
        for name in ("command_timeout_s", "feedback_timeout_s", "inclinometer_timeout_s",
                     "homing_tolerance_rad", "velocity_limit_rad_s",
                     "acceleration_limit_rad_s2", "outer_gain_per_s", "droop_gain_per_s"):
            value = getattr(self, name)
            if not math.isfinite(value) or (value <= 0.0 and not name.endswith("gain_per_s")) \
                    or value < 0.0:
                raise ConfigurationError(f"{name} must be finite and > 0, got {value}")
        if self.feedback_timeout_s < 2.0 * self.gains.dt:
            raise ConfigurationError(
                f"feedback_timeout_s {self.feedback_timeout_s} must be at least two servo periods "
                f"({2 * self.gains.dt}): feedback answers the previous period's frame")
        if self.limit_policy not in ("refuse", "clamp"):
            raise ConfigurationError(
                f"limit_policy must be 'refuse' or 'clamp', got {self.limit_policy!r}")
        validate_node_ids(self.motor_ids)

    @property
    def servo_rate_hz(self) -> float:
        """Servo (inner loop) rate, Hz."""
        return 1.0 / self.gains.dt

    @property
    def outer_every(self) -> int:
        """Servo periods per outer-loop step (``servo_rate / outer_rate``, rounded)."""
        return max(1, round(self.servo_rate_hz / self.outer_rate_hz))


class TrajectoryResult(NamedTuple):
    """What became of a trajectory: accepted or not, clamped or not, and why."""

    accepted: bool
    clamped: bool
    message: str


@dataclass(frozen=True)
class WaistTrajectory:
    """The shaped joint reference of a command (see :mod:`humanoid_balance.core.blended_trajectory`).

    Attributes:
        path: the blended path, times from ``start_s``.
        start_s: controller-clock time of the path's time 0 (when it was planned).
    """

    path: BlendedTrajectory
    start_s: float

    @property
    def end_s(self) -> float:
        """Clock time at which the path is at rest on its last point."""
        return self.start_s + self.path.duration_s

    def sample(self, now_s: float) -> tuple[FloatArray, FloatArray]:
        """Position [rad] and velocity [rad/s] at clock time ``now_s`` (held at the end)."""
        return self.path.sample(now_s - self.start_s)

    def sample_pair(self, now_s: float) -> tuple[Pair, Pair]:
        """:meth:`sample` on floats, for the servo period (:meth:`BlendedTrajectory.sample_floats`)."""
        q, qd = self.path.sample_floats(now_s - self.start_s)
        return (q[0], q[1]), (qd[0], qd[1])


def clamp_path(times_s: FloatArray, positions_rad: FloatArray, lower: FloatArray,
               upper: FloatArray) -> tuple[FloatArray, FloatArray]:
    """A piecewise-linear path clamped into ``[lower, upper]`` along its segments.

    Where a segment crosses a bound, a point is inserted at the crossing, so the
    clamped path follows the commanded one up to the edge and then stays on it
    (clamping the points alone would bend the in-range part of a segment).

    Args:
        times_s: (N,) increasing times [s].
        positions_rad: (N, J) points [rad].
        lower, upper: (J,) the range [rad].

    Returns:
        The times and the clamped points (N or more).
    """
    out_t = [float(times_s[0])]
    out_p = [positions_rad[0]]
    for k in range(1, len(times_s)):
        t0, t1 = float(times_s[k - 1]), float(times_s[k])
        p0, p1 = positions_rad[k - 1], positions_rad[k]
        crossings = []
        for bound in (lower, upper):
            d = p1 - p0
            with np.errstate(divide="ignore", invalid="ignore"):
                f = (bound - p0) / d
            crossings += [float(x) for x in f if 0.0 < x < 1.0]
        for f in sorted(set(crossings)):
            out_t.append(t0 + f * (t1 - t0))
            out_p.append(p0 + f * (p1 - p0))
        out_t.append(t1)
        out_p.append(p1)
    times = np.array(out_t)
    keep = np.concatenate([[True], np.diff(times) > 0.0])
    return times[keep], np.clip(np.array(out_p), lower, upper)[keep]


class CycleOutput(NamedTuple):
    """One servo period's outputs, for publishing.

    Attributes:
        state: controller state after the period.
        joint_position_rad: ``[pitch, roll]`` from the encoders (NaN before feedback).
        joint_velocity_rad_s: from the encoders (the motor speed estimates).
        motor_position_rad, motor_velocity_rad_s, motor_current_a: per motor (1, 2); the
            speed is held over a lost sample and 0 without feedback fresher than
            ``feedback_timeout_s``.
        currents_sent_a: the setpoints sent this period (None = nothing sent).
        reference_rad: joint reference.
        tracking_error_rad: reference minus measured (inclinometer if fresh).
        shaped_reference_rad: the shaped joint reference the outer loop follows (the
            command within the speed and acceleration limits, a hold, or a stop's ramp),
            without the feedback's offsets; NaN while the drives are disabled.
        shaped_velocity_rad_s: its rate (rad/s); NaN while disabled.
    """

    state: ControllerState
    joint_position_rad: FloatArray
    joint_velocity_rad_s: FloatArray
    motor_position_rad: FloatArray
    motor_velocity_rad_s: FloatArray
    motor_current_a: FloatArray
    currents_sent_a: tuple[float, float] | None
    reference_rad: FloatArray
    tracking_error_rad: FloatArray
    shaped_reference_rad: FloatArray = np.full(2, np.nan)
    shaped_velocity_rad_s: FloatArray = np.full(2, np.nan)


class WaistController:
    """Differential-waist RMRC with the three-loop servo and the safety rules.

    Args:
        config: tunables.
        bus: the drives' bus (real or simulated).

    Raises:
        ConfigurationError: ``config.gains.current_limit_a`` beyond the range of the
            protocol's current setpoint signals (the DBC's ``WaistCurrentCmd``).
        BusLoadError: the protocol at the chosen servo rate loads the bus beyond
            ``config.max_bus_load`` (with the figure).
    """

    def __init__(self, config: WaistControllerConfig, bus: MotorBus) -> None:
        self.config = config
        self.bus = bus
        self.nodes = validate_node_ids(config.motor_ids)
        # WaistCurrentCmd carries the node-1 setpoint first: the motor in each slot
        self._motor_in_slot = (self.nodes.index(NODE_IDS[0]), self.nodes.index(NODE_IDS[1]))
        protocol = WaistProtocol()
        _check_current_limit(config.gains.current_limit_a, protocol)
        _check_encoder_span(config.waist, protocol)
        self.bus_load: BusLoad = check_bus_load(
            protocol.periodic_frames(config.servo_rate_hz), config.bitrate, config.max_bus_load)
        self.waist = config.waist
        self.outer = RmrcOuterLoop(config.waist, gain_per_s=config.outer_gain_per_s)
        self.servos = (MotorServo(config.gains), MotorServo(config.gains))
        # drives answer once per servo period: samples closer than half of one were bunched
        # by reception, not taken that close
        self.velocities = (EncoderVelocity(0.5 * config.gains.dt),
                           EncoderVelocity(0.5 * config.gains.dt))
        self._outer_every = config.outer_every
        self.state = ControllerState.IDLE
        self.fault_reason = ""
        self.messages: list[str] = []
        self._trajectory: WaistTrajectory | None = None
        #: the shaped reference of the last accepted command (its catch-up windows, lag and
        #: end lag are on the node's /diagnostics); None before the first
        self.last_plan: BlendedTrajectory | None = None
        self._command_deadline_s = math.inf
        self._command_received_s = -math.inf
        # J_qw and J_qw^-1 (eqs. 3-4) as rows of floats, for the servo period's products
        self._j_qw = _rows(config.waist.j_qw)
        self._j_qw_inv = _rows(config.waist.j_qw_inv)
        self._offset = ZERO  # joint offset the outer loop's inclinometer feedback adds
        self._offset_rate = ZERO
        self._hold_q = ZERO  # the reference of a hold [rad]
        self._clear_requested_s: float | None = None  # when reset_fault asked the drives
        self._droop = ZERO  # joint offset integrating the servo's static error out
        self._droop_rate = ZERO
        self._measured_at_s = -math.inf  # time of the joint measurement the outer loop uses
        self._theta_ref = ZERO
        self._motor_rate = ZERO
        self._q_ref = ZERO
        self._cycle = 0
        self._inclinometer: tuple[Pair, float] | None = None
        #: at the last enable: the encoders agreed with a fresh inclinometer sample (True), or
        #: there was none to check them against (False); None before any enable
        self.encoders_checked: bool | None = None
        self._enabled_cycles = 0
        self._enabled_at_s = -math.inf
        self._enable_requested_s = -math.inf
        self._on_inclinometer = False  # the outer loop's measurement is a fresh inclinometer sample
        self._saturated = False  # a servo's current saturated in the last period
        #: a controlled stop: the path it brakes from (None: from a hold), its plan (None until
        #: the next servo period makes it, on that period's time) and the plan's start time
        self._stop_from: WaistTrajectory | None = None
        self._stop_plan: StopPlan | None = None
        self._stop_start_s = 0.0
        self._stop_end_s = 0.0  # when the plan rests (its duration taken once, not every period)
        #: a stop before a disable was requested: commands are refused until the next enable
        self._commands_closed = False
        self._disable_cycle = -REDISABLE_EVERY  # the servo period DISABLE was last sent in

    @property
    def cycles(self) -> int:
        """Servo periods run so far."""
        return self._cycle

    @property
    def enabled_at_s(self) -> float:
        """Clock time of the last successful :meth:`enable`, s (-inf: never)."""
        return self._enable_requested_s

    def shaped_reference(self, now_s: float) -> FloatArray | None:
        """The running command's shaped joint reference at ``now_s`` (rad), None without one.

        This is the path the outer loop follows (within the speed and acceleration limits),
        without the offsets the feedback adds to the motor reference.
        """
        if self.state != ControllerState.RUNNING or self._trajectory is None:
            return None
        return self._trajectory.sample(now_s)[0]

    @property
    def command_deadline_s(self) -> float:
        """Clock time after which a running command ends in a controlled stop (inf: none), s.

        The shaped path's end (a command slowed to the joints' limits ends later than its
        last point's time) plus ``command_timeout_s``.
        """
        return self._command_deadline_s

    # --- requests --------------------------------------------------------------------------

    def enable(self, now_s: float, inclinometer_at_s: float | None = None) -> None:
        """Enable both drives and hold the measured position (zero velocity).

        ``inclinometer_at_s`` (default ``now_s``): the time at which the inclinometer sample
        that checks the encoders must be fresh. A node that retries an enable while its
        executor takes no sample passes the request's arrival: the drives are disabled
        (brakes on) meanwhile, so a sample fresh then still shows the pose, and judged at a
        retry's time it went stale and the waist enabled unchecked.

        Raises:
            CanBusError: in FAULT (reset first), without fresh feedback, or when sending fails.
        """
        if self.state == ControllerState.FAULT and self._clear_requested_s is not None:
            self.reset_fault(now_s)  # a reset was requested: judge the drives again
        if self.state == ControllerState.FAULT:
            raise CanBusError(f"cannot enable in FAULT ({self.fault_reason}): call reset first")
        if self.state in ENABLED_STATES:
            return
        self.bus.poll()
        theta = self._fresh_motor_positions(self._read_samples(), now_s)
        if theta is None:
            raise CanBusError(
                "cannot enable: no fresh feedback from both drives; check the bus and the drives "
                "(the loop polls them while disabled)")
        q_encoders = _mul(self._j_qw, theta)
        outside = self._outside_range(q_encoders)
        if outside:
            raise InvalidInputError(
                f"cannot enable: {outside}, more than {math.degrees(ENABLE_RANGE_TOLERANCE_RAD):g} "
                "deg outside the joint range: holding it would step the waist to the edge; "
                "configure limits that include this pose, then command it into the range")
        unhomed = self._encoder_zero_problem(
            q_encoders, now_s if inclinometer_at_s is None else min(now_s, inclinometer_at_s))
        if unhomed:
            raise InvalidInputError(f"cannot enable: {unhomed}")
        self._trajectory = None
        self._stop_from, self._stop_plan = None, None
        self._commands_closed = False
        # feedback received after the second servo period's setpoint must say enabled (set then:
        # an answer to a setpoint sent before the enable may be received after it, and late when
        # the loop is starved, so the time of the request says nothing)
        self._enabled_at_s = math.inf
        self._enable_requested_s = now_s
        self._command_deadline_s = math.inf
        self._theta_ref, self._q_ref = self._clamp_motor_reference(theta)
        self._hold_q = self._q_ref
        self._offset, self._offset_rate = ZERO, ZERO
        self._droop, self._droop_rate = ZERO, ZERO
        self._motor_rate = ZERO
        self._saturated = False
        for servo in self.servos:
            servo.reset()
        try:
            for node in self.nodes:
                self.bus.send_control(node, ControlCommand.MODE_CURRENT)
                self.bus.send_control(node, ControlCommand.ENABLE)
        except CanBusError:
            # a drive that took its ENABLE would hold nothing (the controller stays idle and
            # polls with zero current) with its brake released: disable both again
            self._disable_drives()
            raise
        self.state = ControllerState.HOLDING

    def disable(self) -> None:
        """Disable both drives now (brakes engage); the controller goes IDLE (or stays FAULT)."""
        self._disable_drives()
        if self.state != ControllerState.FAULT:
            self.state = ControllerState.IDLE
        self._trajectory = None
        self._stop_from, self._stop_plan = None, None

    def stop(self, final: bool = False) -> None:
        """Request a controlled stop: the reference brakes to rest, then holds (module doc).

        Args:
            final: the stop before a disable: every command is refused until the next
                :meth:`enable` (one arriving meanwhile would start the waist again).
        """
        if final:
            self._commands_closed = True
        if self.state in (ControllerState.RUNNING, ControllerState.HOLDING):
            self._begin_stop()

    def _begin_stop(self) -> None:
        """STOPPING from the path followed now (planned on the next servo period's time)."""
        self._stop_from = self._trajectory if self.state == ControllerState.RUNNING else None
        self._stop_plan = None
        self._trajectory = None
        self.state = ControllerState.STOPPING

    def stop_time_bound_s(self) -> float:
        """The longest a controlled stop can take with the present limits [s].

        The shaped reference moves at most at ``velocity_limit_rad_s``; a stop brakes the
        fastest joint at ``acceleration_limit_rad_s2`` (an edge only shortens it).
        """
        return self.config.velocity_limit_rad_s / self.config.acceleration_limit_rad_s2

    def drives_report_enabled(self, since_s: float) -> bool:
        """Both drives' feedback, received after ``since_s``, says enabled and no fault."""
        samples = self._read_samples()
        return all(s is not None and s.stamp_s > since_s and s.feedback.enabled
                   and not s.feedback.fault for s in samples)

    def reset_fault(self, now_s: float, renew: bool = False) -> str:
        """Leave FAULT on request, but only once its cause is gone.

        The first call after a fault re-opens the bus if it was off and asks the drives to
        clear their faults; every call then judges the feedback received *after* that
        request (an older sample still shows the fault): no fresh feedback from a drive,
        a drive still reporting a fault, bus-off or a dead receive thread keep the
        controller in FAULT with that cause as its reason.

        Returns:
            "" when the controller left FAULT (it is IDLE), else the cause that remains.

        Args:
            now_s: controller clock now.
            renew: ask the bus and the drives again (a new request).
        """
        if self.state != ControllerState.FAULT:
            return ""
        if self._clear_requested_s is None or renew:
            if self.bus.bus_off or self.bus.receive_failure is not None:
                with contextlib.suppress(CanBusError):
                    self.bus.recover()
            for node in self.nodes:
                with contextlib.suppress(CanBusError):
                    self.bus.send_control(node, ControlCommand.CLEAR_FAULT)
            self._clear_requested_s = now_s
        cause = self._standing_cause(self._read_samples(), now_s, self._clear_requested_s)
        if cause:
            self.fault_reason = f"{cause} (after the reset request)"
            return cause
        self.fault_reason = ""
        self._clear_requested_s = None
        self.state = ControllerState.IDLE
        return ""

    def _standing_cause(self, samples: tuple[FeedbackSample | None, FeedbackSample | None],
                        now_s: float, since_s: float) -> str:
        """Why the drives cannot be enabled: bus, silence, or a fault bit after ``since_s``."""
        bus = self.bus
        if bus.bus_off:
            return CanBusOffError.message
        if bus.receive_failure is not None:
            return f"feedback lost: {bus.receive_failure}"
        for node, sample in zip(self.nodes, samples, strict=True):
            if sample is None or sample.stamp_s <= since_s:
                return f"drive {node} sent no feedback since the fault was cleared"
            if now_s - sample.stamp_s > self.config.feedback_timeout_s:
                return f"drive {node} stopped answering"
            if sample.feedback.fault:
                status = bus.status(node)
                code = status.fault_code if status is not None else -1
                return f"drive {node} still reports a fault (code {code})"
        return ""

    def set_trajectory(self, times_s: FloatArray, positions_rad: FloatArray,
                       now_s: float, start_s: float | None = None) -> TrajectoryResult:
        """Take a new trajectory (replaces the current one).

        Args:
            times_s: (N,) strictly increasing times from the start, s (>= 0).
            positions_rad: (N, 2) ``[pitch, roll]`` points.
            now_s: controller clock now.
            start_s: clock time of ``times_s = 0`` (default now).

        Returns:
            The result; a refused trajectory changes nothing.
        """
        times = np.asarray(times_s, dtype=float).reshape(-1)
        pos = np.asarray(positions_rad, dtype=float)
        if pos.ndim != 2 or pos.shape[1] != 2 or pos.shape[0] != times.shape[0] or times.size == 0:
            return TrajectoryResult(False, False, (
                f"refused: expected N times and N x 2 positions (pitch, roll), got times "
                f"{times.shape} and positions {pos.shape}"))
        if not (np.all(np.isfinite(times)) and np.all(np.isfinite(pos))):
            return TrajectoryResult(False, False,
                                    "refused: the trajectory holds NaN or infinite values")
        if times[0] < 0.0 or np.any(np.diff(times) <= 0.0):
            return TrajectoryResult(False, False,
                                    "refused: point times must be >= 0 and strictly increasing")
        if self.state not in ENABLED_STATES:
            return TrajectoryResult(False, False,
                                    f"refused: the waist is {self.state.value}, enable it first")
        if self._commands_closed:
            return TrajectoryResult(False, False,
                                    "refused: the waist is stopping before its drives are "
                                    "disabled (deactivate or /waist/enable false); enable it "
                                    "again first")
        lo = np.array([self.waist.pitch_limits_rad[0], self.waist.roll_limits_rad[0]])
        hi = np.array([self.waist.pitch_limits_rad[1], self.waist.roll_limits_rad[1]])
        outside = np.argwhere((pos < lo - 1e-12) | (pos > hi + 1e-12))
        clamped = False
        message = "accepted"
        if outside.size:
            k, j = (int(v) for v in outside[0])
            name = ("pitch", "roll")[j]
            detail = (f"point {k} {name} {math.degrees(pos[k, j]):.3f} deg is outside "
                      f"[{math.degrees(lo[j]):.1f}, {math.degrees(hi[j]):.1f}] deg "
                      f"({len(outside)} values out of range)")
            if self.config.limit_policy == "refuse":
                return TrajectoryResult(False, False, (
                    f"refused: {detail}; send targets inside the joint range "
                    "(or set limit_policy to clamp)"))
            times, pos = clamp_path(times, pos, lo, hi)
            clamped = True
            message = f"clamped: {detail}; the path was clamped at the range's edge"
        # times from now: points already past are dropped (the last one is kept, reached as soon
        # as the limits allow)
        ahead = times + ((now_s if start_s is None else float(start_s)) - now_s)
        future = ahead > 0.0
        if not np.any(future):
            ahead, pos = np.array([self.config.gains.dt]), pos[-1:]
        else:
            ahead, pos = ahead[future], pos[future]
        q_now, qd_now = self._reference_now(now_s)
        try:
            path = BlendedTrajectory.plan(
                ahead, pos, initial_position=q_now, initial_velocity=qd_now,
                velocity_limit=self.config.velocity_limit_rad_s,
                acceleration_limit=self.config.acceleration_limit_rad_s2, lower=lo, upper=hi)
        except InvalidInputError as exc:
            return TrajectoryResult(False, False, f"refused: {exc}")
        if path.end_lag_s > 1e-3:
            message += (f"; beyond the joints' limits: the waist comes to rest on the last "
                        f"point {path.end_lag_s:.3f} s after the command's own stop")
        self.last_plan = path
        self._trajectory = WaistTrajectory(path, now_s)
        self._stop_from, self._stop_plan = None, None
        self._command_received_s = now_s
        self._command_deadline_s = max(now_s, self._trajectory.end_s) + self.config.command_timeout_s
        self.state = ControllerState.RUNNING
        return TrajectoryResult(True, clamped, message)

    def _reference_now(self, now_s: float) -> tuple[FloatArray, FloatArray]:
        """The joint reference and its velocity now: where a new path starts from."""
        q, qd = self._reference_pair(now_s)
        return np.array(q), np.array(qd)

    def _reference_pair(self, now_s: float) -> tuple[Pair, Pair]:
        """:meth:`_reference_now` as floats."""
        if self.state == ControllerState.RUNNING and self._trajectory is not None:
            q, qd = self._trajectory.sample_pair(now_s)
            return self._clamp_joint(q), qd
        if self.state == ControllerState.STOPPING:
            return self._stop_reference(now_s)
        return self._hold_q, ZERO

    def _stop_reference(self, now_s: float) -> tuple[Pair, Pair]:
        """A controlled stop's reference at ``now_s``: its plan, or (not planned yet) the path
        it brakes from (the hold's position for a stop from a hold)."""
        plan = self._stop_plan
        if plan is not None:
            (q0, q1), (v0, v1) = plan.sample(now_s - self._stop_start_s)
            return (q0, q1), (v0, v1)
        source = self._stop_from
        if source is None:
            return self._hold_q, ZERO
        q, qd = source.sample_pair(now_s)
        return self._clamp_joint(q), qd

    def update(self, *, outer_gain_per_s: float | None = None, limit_policy: str | None = None,
               command_timeout_s: float | None = None,
               inclinometer_timeout_s: float | None = None,
               velocity_limit_rad_s: float | None = None,
               acceleration_limit_rad_s2: float | None = None) -> None:
        """Change run-time tunables between two servo periods (None: unchanged).

        The limits of the shaped reference apply to the next command; the command
        timeout also to the current one.

        Raises:
            ConfigurationError: an invalid value (nothing is changed).
        """
        changes: dict[str, Any] = {k: v for k, v in (
            ("outer_gain_per_s", outer_gain_per_s), ("limit_policy", limit_policy),
            ("command_timeout_s", command_timeout_s),
            ("inclinometer_timeout_s", inclinometer_timeout_s),
            ("velocity_limit_rad_s", velocity_limit_rad_s),
            ("acceleration_limit_rad_s2", acceleration_limit_rad_s2)) if v is not None}
        config = dataclasses.replace(self.config, **changes)
        outer = RmrcOuterLoop(config.waist, gain_per_s=config.outer_gain_per_s,
                              max_joint_rate_rad_s=self.outer.max_joint_rate_rad_s)
        self.config, self.outer = config, outer
        if self._trajectory is not None:
            self._command_deadline_s = (max(self._command_received_s, self._trajectory.end_s)
                                        + config.command_timeout_s)

    def _encoder_zero_problem(self, q_encoders: Pair, now_s: float) -> str | None:
        """Why the encoders' joint angles disagree with a fresh inclinometer sample, or None.

        The drives' encoders are incremental: they count from where the drives were powered
        on, and the joint angles are taken from them (``J_qw theta``). Powered on away from
        (0, 0), the waist is somewhere else than the controller believes; its range limits
        then guard the wrong angles, and the outer loop corrects at most
        :data:`OFFSET_LIMIT_RAD`. Sets :attr:`encoders_checked` (False: no fresh sample to
        check against).
        """
        incl = self._inclinometer
        if incl is None or now_s - incl[1] > self.config.inclinometer_timeout_s:
            self.encoders_checked = False
            return None
        (pitch, roll), _ = incl
        apart = max(abs(pitch - q_encoders[0]), abs(roll - q_encoders[1]))
        if apart > self.config.homing_tolerance_rad:
            return (f"the encoders put the waist at ({math.degrees(q_encoders[0]):.2f}, "
                    f"{math.degrees(q_encoders[1]):.2f}) deg (pitch, roll), the inclinometer at "
                    f"({math.degrees(pitch):.2f}, {math.degrees(roll):.2f}) deg: "
                    f"{math.degrees(apart):.2f} deg apart, more than homing_tolerance="
                    f"{math.degrees(self.config.homing_tolerance_rad):g} deg. The drives' "
                    "incremental encoders count from where they were powered on: power them on "
                    "with the waist at (0, 0) deg (or home them), and check the inclinometer's "
                    "mounting")
        self.encoders_checked = True
        return None

    def on_inclinometer(self, pitch_rad: float, roll_rad: float, now_s: float) -> bool:
        """Store an inclinometer sample; False (ignored) if non-finite."""
        if not (math.isfinite(pitch_rad) and math.isfinite(roll_rad)):
            return False
        self._inclinometer = ((float(pitch_rad), float(roll_rad)), now_s)
        return True

    # --- the servo period ----------------------------------------------------------------------

    def servo_cycle(self, now_s: float) -> CycleOutput:
        """One servo period: feedback, safety checks, outer loop (every N periods), servo, send."""
        bus = self.bus
        bus.poll()
        self._cycle += 1
        samples = self._read_samples()  # once: the checks and the servo judge the same samples
        theta, omega, current, fresh = self._measure(samples, now_s)
        if self.state in ENABLED_STATES:
            reason = self._safety_reason(samples, now_s)
            if reason:
                self._fault(reason)
        sent: tuple[float, float] | None = None
        q_encoders = _mul(self._j_qw, theta)
        q_meas = self._measured_joint(q_encoders, now_s)
        if self.state in ENABLED_STATES:
            if self.state == ControllerState.RUNNING and now_s > self._command_deadline_s:
                self.messages.append(
                    f"no command for {self.config.command_timeout_s:.3f} s after the last one "
                    "ended: controlled stop")
                self._begin_stop()
            try:
                sent = self._servo(theta, omega, fresh, q_encoders, q_meas, now_s)
            except CanBusOffError as exc:  # the bus went off after the safety check
                self._fault(str(exc))
            except (InvalidInputError, CanBusError) as exc:
                self._fault(f"servo step failed: {exc}")
        elif not bus.bus_off:
            # disabled: poll the drives (a disabled drive ignores the setpoint, answers feedback)
            try:
                bus.send_currents((0.0, 0.0))
                sent = (0.0, 0.0)
            except CanBusError as exc:  # another failed poll is retried next period
                if isinstance(exc, CanBusOffError) and self.state != ControllerState.FAULT:
                    self._fault(str(exc))
            self._disable_stray_drives(samples, now_s)
        if self.state in ENABLED_STATES:
            q_ref = self._q_ref
            error = (q_ref[0] - q_meas[0], q_ref[1] - q_meas[1])
            shaped, shaped_rate = self._reference_pair(now_s)
        else:
            error = shaped = shaped_rate = NAN_PAIR
        # one (9, 2) array, a row per output: one numpy call instead of nine
        rows = np.array((q_encoders, _mul(self._j_qw, omega), theta, omega, current, self._q_ref,
                         error, shaped, shaped_rate))
        return CycleOutput(self.state, rows[0], rows[1], rows[2], rows[3], rows[4], sent, rows[5],
                           rows[6], rows[7], rows[8])

    # --- internals -----------------------------------------------------------------------------

    def _read_samples(self) -> tuple[FeedbackSample | None, FeedbackSample | None]:
        """The latest feedback sample of each motor's drive, read once."""
        feedback = self.bus.feedback
        return feedback(self.nodes[0]), feedback(self.nodes[1])

    def _measure(self, samples: tuple[FeedbackSample | None, FeedbackSample | None],
                 now_s: float) -> tuple[Pair, Pair, Pair, tuple[bool, bool]]:
        """Motor positions, speeds and currents from the samples, and which samples are new.

        The speed comes from :class:`EncoderVelocity` (held over a repeated sample); without
        a sample, or with one older than ``feedback_timeout_s``, there is no speed (0) and the
        next sample starts a new difference.
        """
        theta = [math.nan, math.nan]
        omega = [0.0, 0.0]
        current = [math.nan, math.nan]
        fresh = [False, False]
        timeout = self.config.feedback_timeout_s
        for k, (sample, velocity) in enumerate(zip(samples, self.velocities, strict=True)):
            if sample is None:
                velocity.reset()
                continue
            fb = sample.feedback
            theta[k], current[k] = fb.position_rad, fb.current_a
            if now_s - sample.stamp_s > timeout:
                velocity.reset()
                continue
            fresh[k] = velocity.update(fb.position_rad, sample.stamp_s)
            omega[k] = velocity.velocity_rad_s
        return ((theta[0], theta[1]), (omega[0], omega[1]), (current[0], current[1]),
                (fresh[0], fresh[1]))

    def _fresh_motor_positions(self, samples: tuple[FeedbackSample | None, FeedbackSample | None],
                               now_s: float) -> Pair | None:
        theta = [0.0, 0.0]
        for k, sample in enumerate(samples):
            if sample is None or now_s - sample.stamp_s > self.config.feedback_timeout_s:
                return None
            theta[k] = sample.feedback.position_rad
        return theta[0], theta[1]

    def _safety_reason(self, samples: tuple[FeedbackSample | None, FeedbackSample | None],
                       now_s: float) -> str:
        bus = self.bus
        if bus.bus_off:
            return CanBusOffError.message
        failure = bus.receive_failure
        if failure is not None:
            return f"feedback lost: {failure}"
        for node, sample in zip(self.nodes, samples, strict=True):
            if sample is None:
                return f"drive {node} sent no feedback"
            age = now_s - sample.stamp_s
            if age > self.config.feedback_timeout_s:
                return (f"drive {node} stopped answering: no feedback for {age * 1e3:.1f} ms "
                        f"(timeout {self.config.feedback_timeout_s * 1e3:.1f} ms)")
            fb = sample.feedback
            if fb.fault:
                status = bus.status(node)
                code = status.fault_code if status is not None else -1
                return f"drive {node} reported a fault (code {code}{', watchdog' if fb.watchdog else ''})"
            if (not fb.enabled
                    and sample.stamp_s > self._enabled_at_s):
                return f"drive {node} is no longer enabled"
        return ""

    def _measured_joint(self, q_encoders: Pair, now_s: float) -> Pair:
        incl = self._inclinometer
        if incl is not None and now_s - incl[1] <= self.config.inclinometer_timeout_s:
            self._measured_at_s = min(incl[1], now_s)
            self._on_inclinometer = True
            return incl[0]
        self._measured_at_s = now_s
        self._on_inclinometer = False
        return q_encoders

    def _servo(self, theta: Pair, omega: Pair, fresh: tuple[bool, bool], q_enc: Pair,
               q_meas: Pair, now_s: float) -> tuple[float, float]:
        dt = self.config.gains.dt
        self._enabled_cycles += 1
        if self._enabled_cycles == 2:  # this period's setpoint follows one sent after the enable
            self._enabled_at_s = now_s
        if not (math.isfinite(theta[0]) and math.isfinite(theta[1])):
            raise InvalidInputError("motor positions are not finite")
        running = self.state == ControllerState.RUNNING and self._trajectory is not None
        stopping = self.state == ControllerState.STOPPING
        if stopping:
            stopping = self._step_stop(now_s)
        if running or stopping or self.state == ControllerState.HOLDING:
            # the shaped reference every period (feed-forward); the inclinometer feedback of the
            # outer loop at the outer rate, integrated into a joint offset (a hold is a path at
            # rest, a stop a path braking to rest)
            if self._trajectory is not None and running:
                q_ref, qd_ref = self._trajectory.sample_pair(now_s)
            elif stopping:
                q_ref, qd_ref = self._stop_reference(now_s)
            else:
                q_ref, qd_ref = self._hold_q, ZERO
            if self._cycle % self._outer_every == 0 or self._enabled_cycles == 1:
                if self._on_inclinometer:
                    # the reference when the measurement was taken (an inclinometer sample is up
                    # to an outer period old: compared with the present reference, a moving waist
                    # would look late by as much and the offset would wind up)
                    q_then = (self._trajectory.sample_pair(self._measured_at_s)[0]
                              if running and self._trajectory is not None
                              else self._stop_reference(self._measured_at_s)[0] if stopping
                              else q_ref)
                    rates = self.outer.step(q_then, ZERO, q_meas).motor_rates  # type: ignore[arg-type]
                    self._offset_rate = _mul(self._j_qw, (float(rates[0]), float(rates[1])))
                else:
                    # on the encoders the droop integral below already removes their error: a
                    # second integral of the same error only winds up (the offset is kept)
                    self._offset_rate = ZERO
            # the servo's own static error (a P position loop droops under load) integrated out on
            # the encoders, every period
            offset, droop = self._offset, self._droop
            encoder_error = (q_ref[0] + offset[0] + droop[0] - q_enc[0],
                             q_ref[1] + offset[1] + droop[1] - q_enc[1])
            if fresh[0] and fresh[1]:  # a repeated (lost) sample is no new measurement
                gain = self.config.droop_gain_per_s
                self._droop_rate = (gain * (q_ref[0] + offset[0] - q_enc[0]),
                                    gain * (q_ref[1] + offset[1] - q_enc[1]))
            if self._held_back(encoder_error, fresh):
                # anti-windup: while a motor cannot follow (saturated current, a starved or braked
                # drive, lost samples) neither integral may grow; they resume once it follows
                self._offset_rate, self._droop_rate = ZERO, ZERO
            # both bounded: whatever happens, they shift the reference by little
            self._offset, self._offset_rate = _integrate(offset, self._offset_rate, dt,
                                                         OFFSET_LIMIT_RAD)
            self._droop, self._droop_rate = _integrate(droop, self._droop_rate, dt,
                                                       DROOP_LIMIT_RAD)
            offset, droop = self._offset, self._droop
            offset_rate, droop_rate = self._offset_rate, self._droop_rate
            self._motor_rate = _mul(self._j_qw_inv, (qd_ref[0] + offset_rate[0] + droop_rate[0],
                                                     qd_ref[1] + offset_rate[1] + droop_rate[1]))
            self._theta_ref, self._q_ref = self._clamp_motor_reference(_mul(
                self._j_qw_inv, (q_ref[0] + offset[0] + droop[0], q_ref[1] + offset[1] + droop[1])))
            return self._send_servo(theta, omega, fresh)
        # RUNNING without a path (not reached: every RUNNING has one): stay where the reference is
        self._motor_rate = ZERO
        theta_ref, rate = self._theta_ref, self._motor_rate
        self._theta_ref, self._q_ref = self._clamp_motor_reference(
            (theta_ref[0] + rate[0] * dt, theta_ref[1] + rate[1] * dt))
        return self._send_servo(theta, omega, fresh)

    def _step_stop(self, now_s: float) -> bool:
        """A controlled stop's period: planned on its first (from the reference then), HOLDING
        once it rests. Whether it still brakes."""
        plan = self._stop_plan
        if plan is None:
            q0, v0 = self._stop_reference(now_s)
            (p_lo, p_hi), (r_lo, r_hi) = self.waist.pitch_limits_rad, self.waist.roll_limits_rad
            plan = plan_stop(q0, v0, self.config.acceleration_limit_rad_s2, (p_lo, r_lo),
                             (p_hi, r_hi))
            self._stop_plan, self._stop_start_s, self._stop_from = plan, now_s, None
            self._stop_end_s = now_s + plan.duration_s
        if now_s < self._stop_end_s:
            return True
        end = plan.end_position
        self._hold_q = (end[0], end[1])
        self._stop_plan = None
        self.state = ControllerState.HOLDING
        return False

    def _held_back(self, encoder_error: Pair, fresh: tuple[bool, bool]) -> bool:
        """Whether a motor cannot follow its reference now (the integrals must not grow).

        Held back: a servo's current saturated last period, a sample not new (lost or late
        frames: a starved drive), or the encoders further than :data:`HELD_BACK_RAD` from the
        reference with its offsets (a static droop is smaller; a drive that falls behind is not).
        """
        return (self._saturated or not (fresh[0] and fresh[1])
                or max(abs(encoder_error[0]), abs(encoder_error[1])) > HELD_BACK_RAD)

    def _send_servo(self, theta: Pair, omega: Pair, fresh: tuple[bool, bool]) -> tuple[float, float]:
        """The motor servos on the reference, and the current setpoints sent."""
        theta_ref, rate = self._theta_ref, self._motor_rate
        first, second = self.servos
        out1 = first.step(theta_ref[0], rate[0], theta[0], omega[0], fresh=fresh[0])
        out2 = second.step(theta_ref[1], rate[1], theta[1], omega[1], fresh=fresh[1])
        self._saturated = out1.saturated or out2.saturated
        currents = (out1.current_a, out2.current_a)
        slots = (currents[self._motor_in_slot[0]], currents[self._motor_in_slot[1]])
        self.bus.send_currents(slots)
        return slots

    def _clamp_motor_reference(self, theta_ref: Pair) -> tuple[Pair, Pair]:
        """``theta_ref`` kept inside the joint range, and its joint angles ``[pitch, roll]``."""
        q = _mul(self._j_qw, theta_ref)
        (p_lo, p_hi), (r_lo, r_hi) = self.waist.pitch_limits_rad, self.waist.roll_limits_rad
        if p_lo <= q[0] <= p_hi and r_lo <= q[1] <= r_hi:
            return theta_ref, q
        self._motor_rate = ZERO  # at a limit: stop the ramp there
        q = self._clamp_joint(q)
        return _mul(self._j_qw_inv, q), q

    def _clamp_joint(self, q: Pair) -> Pair:
        """``[pitch, roll]`` clamped into the joint range (:meth:`DifferentialWaist.clamp`)."""
        if not (math.isfinite(q[0]) and math.isfinite(q[1])):
            raise InvalidInputError(f"q must be finite, got {[q[0], q[1]]}")
        (p_lo, p_hi), (r_lo, r_hi) = self.waist.pitch_limits_rad, self.waist.roll_limits_rad
        return min(max(q[0], p_lo), p_hi), min(max(q[1], r_lo), r_hi)

    def _disable_stray_drives(self, samples: tuple[FeedbackSample | None, FeedbackSample | None],
                              now_s: float) -> None:
        """Disabled: a drive whose fresh feedback still says enabled :data:`REDISABLE_EVERY`
        periods after the last DISABLE is sent DISABLE again: nothing holds it, its brake is
        released (within those periods it is the feedback's lag behind a DISABLE just sent)."""
        stray = [node for node, sample in zip(self.nodes, samples, strict=True)
                 if sample is not None and sample.feedback.enabled
                 and now_s - sample.stamp_s <= self.config.feedback_timeout_s]
        if not stray or self._cycle - self._disable_cycle < REDISABLE_EVERY:
            return
        self.messages.append(f"drive(s) {stray} report enabled while the controller is "
                             f"{self.state.value}: DISABLE sent again")
        self._disable_drives()

    def _outside_range(self, q: Pair) -> str:
        """Which joint is more than :data:`ENABLE_RANGE_TOLERANCE_RAD` outside its range, and by how
        much ("" when none)."""
        tolerance = ENABLE_RANGE_TOLERANCE_RAD
        for name, value, (lo, hi) in (("pitch", q[0], self.waist.pitch_limits_rad),
                                      ("roll", q[1], self.waist.roll_limits_rad)):
            if not lo - tolerance <= value <= hi + tolerance:
                return (f"{name} is at {math.degrees(value):.2f} deg, range "
                        f"[{math.degrees(lo):.1f}, {math.degrees(hi):.1f}] deg")
        return ""

    def _fault(self, reason: str) -> None:
        self._clear_requested_s = None
        self.state = ControllerState.FAULT
        self.fault_reason = reason
        self.messages.append(f"FAULT: {reason}; both drives disabled")
        self._trajectory = None
        self._stop_from, self._stop_plan = None, None
        self._motor_rate = ZERO
        self._disable_drives()

    def _disable_drives(self) -> None:
        self._enabled_cycles = 0
        self._disable_cycle = self._cycle
        for node in self.nodes:
            # bus off: the drives' watchdogs stop them (no setpoints come)
            with contextlib.suppress(CanBusError):
                self.bus.send_control(node, ControlCommand.DISABLE)


def _rows(matrix: FloatArray) -> tuple[Pair, Pair]:
    """A 2 x 2 matrix as two rows of floats."""
    (a, b), (c, d) = (float(v) for v in matrix[0]), (float(v) for v in matrix[1])
    return (a, b), (c, d)


def _mul(matrix: tuple[Pair, Pair], vector: Pair) -> Pair:
    """``matrix @ vector`` on floats (2 x 2 times 2)."""
    (a, b), (c, d) = matrix
    x, y = vector
    return a * x + b * y, c * x + d * y


def _integrate(value: Pair, rate: Pair, dt: float, limit: float) -> tuple[Pair, Pair]:
    """``value + rate dt`` kept within ``+-limit``, and the rate that was really integrated.

    Args:
        value: the integral [rad].
        rate: its rate [rad/s].
        dt: period [s].
        limit: bound [rad].
    """
    new0 = min(max(value[0] + rate[0] * dt, -limit), limit)
    new1 = min(max(value[1] + rate[1] * dt, -limit), limit)
    return (new0, new1), ((new0 - value[0]) / dt, (new1 - value[1]) / dt)


def _check_encoder_span(waist: DifferentialWaist, protocol: WaistProtocol) -> None:
    """Refuse gear ratios and a joint range whose motor angles the feedback's position count
    cannot carry: the count wraps (24 bits) and is not unwrapped, so a motor angle beyond half
    its span would read as another one."""
    lo, hi = protocol.signal_range("DriveFeedback1", "PositionCounts")
    span_rad = (hi - lo + 1) / 2.0 * 2.0 * math.pi / protocol.counts_per_rev
    corners = [(p, r) for p in waist.pitch_limits_rad for r in waist.roll_limits_rad]
    largest = max(float(np.max(np.abs(waist.j_qw_inv @ np.array(q)))) for q in corners)
    if largest >= span_rad:
        raise ConfigurationError(
            f"gear ratios {waist.gear_ratio_pitch:g} (pitch), {waist.gear_ratio_roll:g} (roll) "
            f"with the joint range put a motor at {largest:.0f} rad, beyond the +-{span_rad:.0f} rad "
            "the drives' 24-bit position count carries without wrapping: lower the gear "
            "ratios or narrow the range")


def _check_current_limit(current_limit_a: float, protocol: WaistProtocol) -> None:
    """Refuse a current limit that the current setpoint signals cannot carry (DBC range)."""
    message = protocol.db.get_message_by_frame_id(CURRENT_CMD_ID)
    for signal in message.signals:
        lo, hi = protocol.signal_range(message.name, signal.name)
        if not (lo <= -current_limit_a and current_limit_a <= hi):
            raise ConfigurationError(
                f"current_limit {current_limit_a} A is outside the range [{lo}, {hi}] A of "
                f"{message.name}.{signal.name} in {DBC_PATH.name}: such setpoints cannot be "
                f"sent; set current_limit to at most {min(-lo, hi)} A")
