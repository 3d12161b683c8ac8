"""The waist servo's tunables (SI units, radians), checked against each other and the protocol.

:class:`WaistServoConfig` is what :class:`~humanoid_balance.waist.servo.WaistController` takes;
the ``waist_controller`` node makes it from its parameters
(:func:`humanoid_balance.params.waist_controller.config_from_values`). Values that the bus
cannot carry are refused when the controller is built, not met mid-motion
(:func:`check_against_protocol`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from humanoid_balance.can.bus import validate_node_ids
from humanoid_balance.can.protocol import CURRENT_CMD_ID, DBC_PATH, WaistProtocol
from humanoid_balance.core.servo import ServoGains
from humanoid_balance.core.waist_kinematics import DifferentialWaist
from humanoid_balance.exceptions import ConfigurationError

__all__ = ["RUN_TIME_FIELDS", "WaistServoConfig", "check_against_protocol"]

#: the fields that may change between two servo periods (the node's dynamic parameters); the
#: limits of the shaped reference apply to the next command, the command timeout also to the
#: running one
RUN_TIME_FIELDS = ("outer_gain_per_s", "limit_policy", "command_timeout_s",
                   "inclinometer_timeout_s", "velocity_limit_rad_s", "acceleration_limit_rad_s2")


@dataclass(frozen=True)
class WaistServoConfig:
    """Tunables of the waist controller (SI units, radians).

    Attributes:
        waist: geometry, gear ratios and joint range.
        gains: the per-motor servo (kp, kv, ki, dt = 1 / servo_rate).
        outer_rate_hz: RMRC outer loop rate (paper 50 Hz).
        outer_gain_per_s: inclinometer feedback gain of the outer loop.
        motor_ids: drive node ids of motor 1 and motor 2.
        command_timeout_s: command life after its end (see :mod:`~humanoid_balance.waist`).
        feedback_timeout_s: drive silence taken as a lost drive.
        inclinometer_timeout_s: older inclinometer samples are not used (encoders instead).
        homing_tolerance_rad: largest difference between the encoders' joint angles and a
            fresh inclinometer sample at which the controller enables.
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


def check_against_protocol(config: WaistServoConfig, protocol: WaistProtocol) -> None:
    """Refuse tunables the drives' protocol cannot carry.

    Raises:
        ConfigurationError: ``config.gains.current_limit_a`` beyond the range of the current
            setpoint signals (the DBC's ``WaistCurrentCmd``), or gear ratios and a joint range
            whose motor angles the feedback's position count cannot carry.
    """
    _check_current_limit(config.gains.current_limit_a, protocol)
    _check_encoder_span(config.waist, protocol)


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
