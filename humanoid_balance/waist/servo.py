"""The waist's servo over the drives' bus: RMRC outer loop, three-loop servo, safety (seed 003).

:class:`WaistController` is what the ``waist_controller`` node's loop
(:class:`~humanoid_balance.waist.loop.WaistLoop`) runs every servo period, and what the
experiments and tests run in lock-step with the simulated drives. It owns the safety rules
listed in :mod:`humanoid_balance.waist`: the states and their transitions
(:mod:`~humanoid_balance.waist.states`), the shaped reference
(:mod:`~humanoid_balance.waist.reference`), and here the servo period itself: each period
reads every drive's latest feedback sample once, and that one sample is what the safety
checks judge and what the servo uses; a sample seen before (its frame was lost) is no new
measurement (the motor speed estimate is held, the velocity integrator not advanced, see
:mod:`~humanoid_balance.waist.feedback`). The outer loop and the droop integral shift the
reference (:mod:`~humanoid_balance.waist.offsets`). Only :meth:`WaistController.servo_cycle`
sends setpoints, so a stalled loop stops feeding the drives' watchdogs and they stop on their
own.

The period computes on pairs of floats (:mod:`humanoid_balance.waist.pairs`); its outputs
(:class:`CycleOutput`) are arrays.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from humanoid_balance.can.bus import MotorBus, validate_node_ids
from humanoid_balance.can.protocol import NODE_IDS, ControlCommand, WaistProtocol
from humanoid_balance.core.blended_trajectory import BlendedTrajectory
from humanoid_balance.core.bus_load import BusLoad, check_bus_load
from humanoid_balance.core.servo import EncoderVelocity, MotorServo
from humanoid_balance.exceptions import CanBusError, CanBusOffError, InvalidInputError
from humanoid_balance.waist.config import RUN_TIME_FIELDS, WaistServoConfig, check_against_protocol
from humanoid_balance.waist.feedback import fresh_positions, measure, read_samples
from humanoid_balance.waist.offsets import ReferenceOffsets
from humanoid_balance.waist.pairs import NAN_PAIR, ZERO, Pair, mul, rows
from humanoid_balance.waist.reference import (
    TrajectoryResult,
    WaistReference,
    WaistTrajectory,
    plan_command,
    points_problem,
)
from humanoid_balance.waist.states import (
    ENABLE_RANGE_TOLERANCE_RAD,
    ENABLED_STATES,
    REDISABLE_EVERY,
    ControllerState,
    Samples,
    encoder_zero_check,
    outside_range,
    safety_reason,
    standing_cause,
    stray_drives,
)

__all__ = ["CycleOutput", "WaistController"]

FloatArray = NDArray[np.float64]


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
        ConfigurationError: tunables the protocol cannot carry
            (:func:`~humanoid_balance.waist.config.check_against_protocol`).
        BusLoadError: the protocol at the chosen servo rate loads the bus beyond
            ``config.max_bus_load`` (with the figure).
    """

    def __init__(self, config: WaistServoConfig, bus: MotorBus) -> None:
        self.config = config
        self.bus = bus
        self.nodes = validate_node_ids(config.motor_ids)
        # WaistCurrentCmd carries the node-1 setpoint first: the motor in each slot
        self._motor_in_slot = (self.nodes.index(NODE_IDS[0]), self.nodes.index(NODE_IDS[1]))
        protocol = WaistProtocol()
        check_against_protocol(config, protocol)
        self.bus_load: BusLoad = check_bus_load(
            protocol.periodic_frames(config.servo_rate_hz), config.bitrate, config.max_bus_load)
        self.waist = config.waist
        #: the outer loop's offset and the droop integral
        self.offsets = ReferenceOffsets(config)
        self.servos = (MotorServo(config.gains), MotorServo(config.gains))
        # drives answer once per servo period: samples closer than half of one were bunched
        # by reception, not taken that close
        self.velocities = (EncoderVelocity(0.5 * config.gains.dt),
                           EncoderVelocity(0.5 * config.gains.dt))
        self._outer_every = config.outer_every
        self.state = ControllerState.IDLE
        self.fault_reason = ""
        self.messages: list[str] = []
        #: the shaped reference: a command's path, a hold or a stop
        self.reference = WaistReference(config.waist)
        #: the shaped reference of the last accepted command (its catch-up windows, lag and
        #: end lag are on the node's /diagnostics); None before the first
        self.last_plan: BlendedTrajectory | None = None
        self._command_deadline_s = math.inf
        self._command_received_s = -math.inf
        # J_qw and J_qw^-1 (eqs. 3-4) as rows of floats, for the servo period's products
        self._j_qw = rows(config.waist.j_qw)
        self._j_qw_inv = rows(config.waist.j_qw_inv)
        self._clear_requested_s: float | None = None  # when reset_fault asked the drives
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
        path = self.reference.path
        if self.state != ControllerState.RUNNING or path is None:
            return None
        return path.sample(now_s)[0]

    def reference_at(self, now_s: float) -> tuple[FloatArray, FloatArray]:
        """The joint reference [rad] and its velocity [rad/s] at ``now_s``: where a new path
        starts (a hold's position at rest while the drives are disabled)."""
        q, qd = self.reference.at(now_s, self.state)
        return np.array(q), np.array(qd)

    @property
    def command_deadline_s(self) -> float:
        """Clock time after which a running command ends in a controlled stop (inf: none), s.

        The shaped path's end (a command slowed to the joints' limits ends later than its
        last point's time) plus ``command_timeout_s``.
        """
        return self._command_deadline_s

    @property
    def command_received_s(self) -> float:
        """Clock time at which the last command was accepted, s (-inf: none since built)."""
        return self._command_received_s

    # --- requests --------------------------------------------------------------------------

    def enable(self, now_s: float, inclinometer_at_s: float | None = None) -> None:
        """Enable both drives and hold the measured position (zero velocity).

        ``inclinometer_at_s`` (default ``now_s``): the time at which the inclinometer sample
        that checks the encoders must be fresh. A loop that retries an enable while no sample
        is taken passes the request's arrival: the drives are disabled (brakes on)
        meanwhile, so a sample fresh then still shows the pose, and judged at a retry's time
        it went stale and the waist enabled unchecked.

        Raises:
            CanBusError: in FAULT (reset first), without fresh feedback, or when sending fails.
            InvalidInputError: the waist outside its range, or the encoders disagreeing with
                a fresh inclinometer sample.
        """
        if self.state == ControllerState.FAULT and self._clear_requested_s is not None:
            self.reset_fault(now_s)  # a reset was requested: judge the drives again
        if self.state == ControllerState.FAULT:
            raise CanBusError(f"cannot enable in FAULT ({self.fault_reason}): call reset first")
        if self.state in ENABLED_STATES:
            return
        self.bus.poll()
        theta = fresh_positions(read_samples(self.bus, self.nodes), now_s,
                                self.config.feedback_timeout_s)
        if theta is None:
            raise CanBusError(
                "cannot enable: no fresh feedback from both drives; check the bus and the drives "
                "(the loop polls them while disabled)")
        q_encoders = mul(self._j_qw, theta)
        outside = outside_range(q_encoders, self.waist)
        if outside:
            raise InvalidInputError(
                f"cannot enable: {outside}, more than {math.degrees(ENABLE_RANGE_TOLERANCE_RAD):g} "
                "deg outside the joint range: holding it would step the waist to the edge; "
                "configure limits that include this pose, then command it into the range")
        config = self.config
        check = encoder_zero_check(
            q_encoders, self._inclinometer,
            now_s if inclinometer_at_s is None else min(now_s, inclinometer_at_s),
            config.inclinometer_timeout_s, config.homing_tolerance_rad)
        if check.problem:
            raise InvalidInputError(f"cannot enable: {check.problem}")
        self.encoders_checked = check.checked
        self._start_hold(theta, now_s)
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

    def _start_hold(self, theta: Pair, now_s: float) -> None:
        """An enable's reference: hold the measured motor positions ``theta``, integrals and
        servos reset, commands open again."""
        self._commands_closed = False
        # feedback received after the second servo period's setpoint must say enabled (set then:
        # an answer to a setpoint sent before the enable may be received after it, and late when
        # the loop is starved, so the time of the request says nothing)
        self._enabled_at_s = math.inf
        self._enable_requested_s = now_s
        self._command_deadline_s = math.inf
        self._theta_ref, self._q_ref = self._clamp_motor_reference(theta)
        self.reference.hold(self._q_ref)
        self.offsets.reset()
        self._motor_rate = ZERO
        self._saturated = False
        for servo in self.servos:
            servo.reset()

    def disable(self) -> None:
        """Disable both drives now (brakes engage); the controller goes IDLE (or stays FAULT)."""
        self._disable_drives()
        if self.state != ControllerState.FAULT:
            self.state = ControllerState.IDLE
        self.reference.clear()

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
        self.reference.begin_stop(running=self.state == ControllerState.RUNNING)
        self.state = ControllerState.STOPPING

    def stop_time_bound_s(self) -> float:
        """The longest a controlled stop can take with the present limits [s].

        The shaped reference moves at most at ``velocity_limit_rad_s``; a stop brakes the
        fastest joint at ``acceleration_limit_rad_s2`` (an edge only shortens it).
        """
        return self.config.velocity_limit_rad_s / self.config.acceleration_limit_rad_s2

    def drives_report_enabled(self, since_s: float) -> bool:
        """Both drives' feedback, received after ``since_s``, says enabled and no fault."""
        samples = read_samples(self.bus, self.nodes)
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
        cause = standing_cause(self.bus, self.nodes, read_samples(self.bus, self.nodes), now_s,
                               self.config.feedback_timeout_s, self._clear_requested_s)
        if cause:
            self.fault_reason = f"{cause} (after the reset request)"
            return cause
        self.fault_reason = ""
        self._clear_requested_s = None
        self.state = ControllerState.IDLE
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
        problem = points_problem(times, pos)
        if problem is None and self.state not in ENABLED_STATES:
            problem = f"refused: the waist is {self.state.value}, enable it first"
        if problem is None and self._commands_closed:
            problem = ("refused: the waist is stopping before its drives are disabled "
                       "(deactivate or /waist/enable false); enable it again first")
        if problem is not None:
            return TrajectoryResult(False, False, problem)
        q_now, qd_now = self.reference_at(now_s)
        path, result = plan_command(times, pos, now_s, start_s, q_now, qd_now, self.config)
        if path is None:
            return result
        self.last_plan = path
        trajectory = WaistTrajectory(path, now_s)
        self.reference.follow(trajectory)
        self._command_received_s = now_s
        self._command_deadline_s = max(now_s, trajectory.end_s) + self.config.command_timeout_s
        self.state = ControllerState.RUNNING
        return result

    def update(self, config: WaistServoConfig) -> None:
        """Take ``config``'s run-time tunables (:data:`~humanoid_balance.waist.config.RUN_TIME_FIELDS`)
        between two servo periods; its other fields are not used.

        The limits of the shaped reference apply to the next command; the command
        timeout also to the current one.
        """
        changes = {name: getattr(config, name) for name in RUN_TIME_FIELDS}
        config = dataclasses.replace(self.config, **changes)
        self.offsets.set_outer_gain(config.outer_gain_per_s)
        self.config = config
        path = self.reference.path
        if path is not None:
            self._command_deadline_s = (max(self._command_received_s, path.end_s)
                                        + config.command_timeout_s)

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
        samples = read_samples(self.bus, self.nodes)  # once: the checks and the servo judge the same samples
        theta, omega, current, fresh = measure(samples, self.velocities, now_s,
                                               self.config.feedback_timeout_s)
        if self.state in ENABLED_STATES:
            reason = safety_reason(bus, self.nodes, samples, now_s, self.config.feedback_timeout_s,
                                   self._enabled_at_s)
            if reason:
                self._fault(reason)
        sent: tuple[float, float] | None = None
        q_encoders = mul(self._j_qw, theta)
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
            sent = self._poll_disabled(samples, now_s)
        if self.state in ENABLED_STATES:
            q_ref = self._q_ref
            error = (q_ref[0] - q_meas[0], q_ref[1] - q_meas[1])
            shaped, shaped_rate = self.reference.at(now_s, self.state)
        else:
            error = shaped = shaped_rate = NAN_PAIR
        # one (9, 2) array, a row per output: one numpy call instead of nine
        out = np.array((q_encoders, mul(self._j_qw, omega), theta, omega, current, self._q_ref,
                        error, shaped, shaped_rate))
        return CycleOutput(self.state, out[0], out[1], out[2], out[3], out[4], sent, out[5],
                           out[6], out[7], out[8])

    def _poll_disabled(self, samples: Samples, now_s: float) -> tuple[float, float] | None:
        """Disabled: poll the drives (a disabled drive ignores the setpoint, answers feedback);
        a drive that reports enabled regardless is disabled again. The setpoints sent."""
        sent: tuple[float, float] | None = None
        try:
            self.bus.send_currents((0.0, 0.0))
            sent = (0.0, 0.0)
        except CanBusError as exc:  # another failed poll is retried next period
            if isinstance(exc, CanBusOffError) and self.state != ControllerState.FAULT:
                self._fault(str(exc))
        self._disable_stray_drives(samples, now_s)
        return sent

    # --- internals -----------------------------------------------------------------------------

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
        self._enabled_cycles += 1
        if self._enabled_cycles == 2:  # this period's setpoint follows one sent after the enable
            self._enabled_at_s = now_s
        if not (math.isfinite(theta[0]) and math.isfinite(theta[1])):
            raise InvalidInputError("motor positions are not finite")
        reference = self.reference
        running = self.state == ControllerState.RUNNING and reference.path is not None
        stopping = self.state == ControllerState.STOPPING
        if stopping:
            stopping = reference.step_stop(now_s, self.config.acceleration_limit_rad_s2)
            if not stopping:
                self.state = ControllerState.HOLDING
        if running or stopping or self.state == ControllerState.HOLDING:
            # the shaped reference every period (feed-forward); the inclinometer feedback of the
            # outer loop at the outer rate, integrated into a joint offset (a hold is a path at
            # rest, a stop a path braking to rest)
            if running and reference.path is not None:
                q_ref, qd_ref = reference.path.sample_pair(now_s)
            elif stopping:
                q_ref, qd_ref = reference.stop_at(now_s)
            else:
                q_ref, qd_ref = reference.hold_q, ZERO
            offsets = self.offsets
            if self._cycle % self._outer_every == 0 or self._enabled_cycles == 1:
                # the reference when the measurement was taken (an inclinometer sample is up to
                # an outer period old: compared with the present reference, a moving waist would
                # look late by as much and the offset would wind up)
                at = self._measured_at_s
                q_then = (reference.path.sample_pair(at)[0] if running and reference.path is not None
                          else reference.stop_at(at)[0] if stopping else q_ref)
                offsets.outer_step(q_then, q_meas, self._on_inclinometer)
            offsets.integrate(q_ref, q_enc, fresh, self._saturated)
            q_shifted, qd_shifted = offsets.shifted(q_ref, qd_ref)
            self._motor_rate = mul(self._j_qw_inv, qd_shifted)
            self._theta_ref, self._q_ref = self._clamp_motor_reference(
                mul(self._j_qw_inv, q_shifted))
            return self._send_servo(theta, omega, fresh)
        # RUNNING without a path (not reached: every RUNNING has one): stay where the reference is
        dt = self.config.gains.dt
        self._motor_rate = ZERO
        theta_ref, rate = self._theta_ref, self._motor_rate
        self._theta_ref, self._q_ref = self._clamp_motor_reference(
            (theta_ref[0] + rate[0] * dt, theta_ref[1] + rate[1] * dt))
        return self._send_servo(theta, omega, fresh)

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
        q = mul(self._j_qw, theta_ref)
        (p_lo, p_hi), (r_lo, r_hi) = self.waist.pitch_limits_rad, self.waist.roll_limits_rad
        if p_lo <= q[0] <= p_hi and r_lo <= q[1] <= r_hi:
            return theta_ref, q
        self._motor_rate = ZERO  # at a limit: stop the ramp there
        q = self.reference.clamp_joint(q)
        return mul(self._j_qw_inv, q), q

    def _disable_stray_drives(self, samples: Samples, now_s: float) -> None:
        """Disabled: a drive whose fresh feedback still says enabled :data:`REDISABLE_EVERY`
        periods after the last DISABLE is sent DISABLE again: nothing holds it, its brake is
        released (within those periods it is the feedback's lag behind a DISABLE just sent)."""
        stray = stray_drives(self.nodes, samples, now_s, self.config.feedback_timeout_s)
        if not stray or self._cycle - self._disable_cycle < REDISABLE_EVERY:
            return
        self.messages.append(f"drive(s) {stray} report enabled while the controller is "
                             f"{self.state.value}: DISABLE sent again")
        self._disable_drives()

    def _fault(self, reason: str) -> None:
        self._clear_requested_s = None
        self.state = ControllerState.FAULT
        self.fault_reason = reason
        self.messages.append(f"FAULT: {reason}; both drives disabled")
        self.reference.clear()
        self._motor_rate = ZERO
        self._disable_drives()

    def _disable_drives(self) -> None:
        self._enabled_cycles = 0
        self._disable_cycle = self._cycle
        for node in self.nodes:
            # bus off: the drives' watchdogs stop them (no setpoint comes)
            with contextlib.suppress(CanBusError):
                self.bus.send_control(node, ControlCommand.DISABLE)
