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
  after that the controller makes a controlled stop (the motor rates ramp down at
  ``stop_deceleration_rad_s2``, then the servo holds the position), detected in the
  first servo period after the deadline;
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
  trajectory or setpoint is never resumed;
* only :meth:`servo_cycle` sends setpoints, so a stalled loop stops feeding the
  drives' watchdogs and they stop on their own.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple

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
        stop_deceleration_rad_s2: motor deceleration of a controlled stop.
        limit_policy: ``refuse`` or ``clamp`` for trajectory points beyond the range.
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
    stop_deceleration_rad_s2: float = 50.0
    limit_policy: str = "refuse"
    bitrate: int = 320_000
    max_bus_load: float = 0.5

    def __post_init__(self) -> None:
        servo_rate = 1.0 / self.gains.dt
        if not math.isfinite(self.outer_rate_hz) or not 0.0 < self.outer_rate_hz <= servo_rate:
            raise ConfigurationError(
                f"outer_rate must be in (0, servo_rate = {servo_rate:g}] Hz, got {self.outer_rate_hz}")
        for name in ("command_timeout_s", "feedback_timeout_s", "inclinometer_timeout_s",
                     "stop_deceleration_rad_s2"):
            value = getattr(self, name)
            if not math.isfinite(value) or value <= 0.0:
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
    """Joint trajectory of the waist, times relative to its start.

    Attributes:
        times_s: (N,) increasing times from the start, s.
        positions_rad: (N, 2) ``[pitch, roll]``.
        start_s: controller-clock time of ``times_s = 0``.
    """

    times_s: FloatArray
    positions_rad: FloatArray
    start_s: float

    @property
    def end_s(self) -> float:
        """Clock time of the last point."""
        return self.start_s + float(self.times_s[-1])

    def sample(self, now_s: float) -> tuple[FloatArray, FloatArray]:
        """Position and velocity at clock time ``now_s`` (linear interpolation, held at the end)."""
        t = now_s - self.start_s
        times, pos = self.times_s, self.positions_rad
        if t <= times[0]:
            return pos[0].copy(), np.zeros(2)
        if t >= times[-1]:
            return pos[-1].copy(), np.zeros(2)
        k = int(np.searchsorted(times, t, side="right")) - 1
        span = times[k + 1] - times[k]
        rate = (pos[k + 1] - pos[k]) / span
        return pos[k] + rate * (t - times[k]), rate


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
        self._command_deadline_s = math.inf
        self._theta_ref = np.zeros(2)
        self._motor_rate = np.zeros(2)
        self._q_ref = np.zeros(2)
        self._cycle = 0
        self._inclinometer: tuple[FloatArray, float] | None = None
        self._enabled_cycles = 0
        self._enabled_at_s = -math.inf

    # --- requests --------------------------------------------------------------------------

    def enable(self, now_s: float) -> None:
        """Enable both drives and hold the measured position (zero velocity).

        Raises:
            CanBusError: in FAULT (reset first), without fresh feedback, or when sending fails.
        """
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
        self._trajectory = None
        self._enabled_at_s = now_s  # feedback after this + feedback_timeout must say enabled
        self._command_deadline_s = math.inf
        self._theta_ref, self._q_ref = self._clamp_motor_reference(theta)
        self._motor_rate = np.zeros(2)
        for servo in self.servos:
            servo.reset()
        for node in self.nodes:
            self.bus.send_control(node, ControlCommand.MODE_CURRENT)
            self.bus.send_control(node, ControlCommand.ENABLE)
        self.state = ControllerState.HOLDING

    def disable(self) -> None:
        """Disable both drives now (brakes engage); the controller goes IDLE (or stays FAULT)."""
        self._disable_drives()
        if self.state != ControllerState.FAULT:
            self.state = ControllerState.IDLE
        self._trajectory = None

    def stop(self) -> None:
        """Request a controlled stop (ramp the motor rates to zero, then hold)."""
        if self.state in (ControllerState.RUNNING, ControllerState.HOLDING):
            self._trajectory = None
            self.state = ControllerState.STOPPING

    def reset_fault(self, now_s: float) -> None:
        """Leave FAULT on request: re-open the bus if it was off, clear the drives' faults."""
        if self.state != ControllerState.FAULT:
            return
        if self.bus.bus_off or self.bus.receive_failure is not None:
            self.bus.recover()
        for node in self.nodes:
            self.bus.send_control(node, ControlCommand.CLEAR_FAULT)
        self.fault_reason = ""
        self.state = ControllerState.IDLE

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
            pos = np.clip(pos, lo, hi)
            clamped = True
            message = f"clamped: {detail}; those values were clamped to the range"
        start = now_s if start_s is None else float(start_s)
        if times[0] > 0.0:  # start from the present reference
            times = np.concatenate([[0.0], times])
            pos = np.vstack([self._q_ref, pos])
        self._trajectory = WaistTrajectory(times, pos, start)
        self._command_deadline_s = max(now_s, self._trajectory.end_s) + self.config.command_timeout_s
        self.state = ControllerState.RUNNING
        return TrajectoryResult(True, clamped, message)

    def on_inclinometer(self, pitch_rad: float, roll_rad: float, now_s: float) -> bool:
        """Store an inclinometer sample; False (ignored) if non-finite."""
        if not (math.isfinite(pitch_rad) and math.isfinite(roll_rad)):
            return False
        self._inclinometer = (np.array([pitch_rad, roll_rad]), now_s)
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
        q_encoders = self.waist.joint_from_motor(theta)
        q_meas = self._measured_joint(q_encoders, now_s)
        if self.state in ENABLED_STATES:
            if self.state == ControllerState.RUNNING and now_s > self._command_deadline_s:
                self.messages.append(
                    f"no command for {self.config.command_timeout_s:.3f} s after the last one "
                    "ended: controlled stop")
                self._trajectory = None
                self.state = ControllerState.STOPPING
            try:
                sent = self._servo(theta, omega, fresh, q_meas, now_s)
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
        joint_vel = self.waist.j_qw @ omega
        error = (self._q_ref - q_meas) if self.state in ENABLED_STATES else np.full(2, np.nan)
        return CycleOutput(self.state, q_encoders, joint_vel, theta, omega, current, sent,
                           self._q_ref.copy(), error)

    # --- internals -----------------------------------------------------------------------------

    def _read_samples(self) -> tuple[FeedbackSample | None, FeedbackSample | None]:
        """The latest feedback sample of each motor's drive, read once."""
        feedback = self.bus.feedback
        return feedback(self.nodes[0]), feedback(self.nodes[1])

    def _measure(self, samples: tuple[FeedbackSample | None, FeedbackSample | None],
                 now_s: float) -> tuple[FloatArray, FloatArray, FloatArray, tuple[bool, bool]]:
        """Motor positions, speeds and currents from the samples, and which samples are new.

        The speed comes from :class:`EncoderVelocity` (held over a repeated sample); without
        a sample, or with one older than ``feedback_timeout_s``, there is no speed (0) and the
        next sample starts a new difference.
        """
        theta = np.full(2, math.nan)
        omega = np.zeros(2)
        current = np.full(2, math.nan)
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
        return theta, omega, current, (fresh[0], fresh[1])

    def _fresh_motor_positions(self, samples: tuple[FeedbackSample | None, FeedbackSample | None],
                               now_s: float) -> FloatArray | None:
        theta = np.zeros(2)
        for k, sample in enumerate(samples):
            if sample is None or now_s - sample.stamp_s > self.config.feedback_timeout_s:
                return None
            theta[k] = sample.feedback.position_rad
        return theta

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
                    and sample.stamp_s - self._enabled_at_s > self.config.feedback_timeout_s):
                return f"drive {node} is no longer enabled"
        return ""

    def _measured_joint(self, q_encoders: FloatArray, now_s: float) -> FloatArray:
        incl = self._inclinometer
        if incl is not None and now_s - incl[1] <= self.config.inclinometer_timeout_s:
            return incl[0]
        return q_encoders

    def _servo(self, theta: FloatArray, omega: FloatArray, fresh: tuple[bool, bool],
               q_meas: FloatArray, now_s: float) -> tuple[float, float]:
        dt = self.config.gains.dt
        self._enabled_cycles += 1
        if not np.all(np.isfinite(theta)):
            raise InvalidInputError("motor positions are not finite")
        if self.state == ControllerState.RUNNING and self._trajectory is not None:
            if self._cycle % self._outer_every == 0 or self._enabled_cycles == 1:
                q_ref, qd_ref = self._trajectory.sample(now_s)
                self._motor_rate = self.outer.step(q_ref, qd_ref, q_meas).motor_rates
        elif self.state == ControllerState.STOPPING:
            step = self.config.stop_deceleration_rad_s2 * dt
            self._motor_rate = np.sign(self._motor_rate) * np.maximum(np.abs(self._motor_rate) - step, 0.0)
            if not np.any(self._motor_rate):
                self.state = ControllerState.HOLDING
        else:
            self._motor_rate = np.zeros(2)
        self._theta_ref, self._q_ref = self._clamp_motor_reference(
            self._theta_ref + self._motor_rate * dt)
        theta_ref, rate = self._theta_ref, self._motor_rate
        currents = [servo.step(float(theta_ref[k]), float(rate[k]), float(theta[k]),
                               float(omega[k]), fresh=fresh[k]).current_a
                    for k, servo in enumerate(self.servos)]
        slots = (currents[self._motor_in_slot[0]], currents[self._motor_in_slot[1]])
        self.bus.send_currents(slots)
        return slots

    def _clamp_motor_reference(self, theta_ref: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``theta_ref`` kept inside the joint range, and its joint angles ``[pitch, roll]``."""
        q = self.waist.joint_from_motor(theta_ref)
        (p_lo, p_hi), (r_lo, r_hi) = self.waist.pitch_limits_rad, self.waist.roll_limits_rad
        q1, q2 = float(q[0]), float(q[1])
        if p_lo <= q1 <= p_hi and r_lo <= q2 <= r_hi:
            return theta_ref, q
        self._motor_rate = np.zeros(2)  # at a limit: stop the ramp there
        q = self.waist.clamp(q)
        return self.waist.motor_from_joint(q), q

    def _fault(self, reason: str) -> None:
        self.state = ControllerState.FAULT
        self.fault_reason = reason
        self.messages.append(f"FAULT: {reason}; both drives disabled")
        self._trajectory = None
        self._motor_rate = np.zeros(2)
        self._disable_drives()

    def _disable_drives(self) -> None:
        self._enabled_cycles = 0
        for node in self.nodes:
            # bus off: the drives' watchdogs stop them (no setpoints come)
            with contextlib.suppress(CanBusError):
                self.bus.send_control(node, ControlCommand.DISABLE)


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
