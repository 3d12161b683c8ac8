"""Tests of the three-loop motor servo (seed 003, section 4)."""

from __future__ import annotations

import numpy as np
import pytest

from humanoid_balance.core.servo import EncoderVelocity, MotorServo, ServoGains
from humanoid_balance.exceptions import ConfigurationError, InvalidInputError


def test_defaults_are_the_papers() -> None:
    """Default gains and period are kp 13, kv 500, ki 5, 2 ms."""
    g = ServoGains()
    assert (g.kp, g.kv, g.ki, g.dt) == (13.0, 500.0, 5.0, 0.002)


def test_proportional_action_at_rest() -> None:
    """At rest with a position error e, current = unit * kv * kp * e (+ one integral step)."""
    servo = MotorServo()
    servo.reset()
    out = servo.step(0.01, 0.0, 0.0, 0.0)
    v_ref = 13.0 * 0.01
    expected = 1e-3 * (500.0 * v_ref + 5.0 * v_ref * 0.002)
    assert out.current_a == pytest.approx(expected)


def test_velocity_from_two_encoder_samples() -> None:
    """Velocity is the difference of two successive positions over dt."""
    speed = EncoderVelocity()
    speed.update(0.0, 0.0)
    assert speed.update(0.004, 0.002)
    assert speed.velocity_rad_s == pytest.approx(2.0)


def test_repeated_sample_holds_the_velocity() -> None:
    """The same sample again (a lost frame) is not new and keeps the estimate, not 0."""
    speed = EncoderVelocity()
    speed.update(0.0, 0.0)
    speed.update(0.004, 0.002)
    assert not speed.update(0.004, 0.002)
    assert speed.velocity_rad_s == pytest.approx(2.0)


def test_velocity_after_a_lost_sample_divides_by_the_elapsed_time() -> None:
    """After a lost sample the next one is divided by the two periods that passed, not by dt."""
    speed = EncoderVelocity()
    speed.update(0.0, 0.0)
    speed.update(0.004, 0.002)
    speed.update(0.004, 0.002)  # lost: the previous sample again
    assert speed.update(0.012, 0.006)
    assert speed.velocity_rad_s == pytest.approx(2.0)


def test_bunched_samples_are_divided_by_at_least_the_minimum_interval() -> None:
    """Two samples received 0.1 ms apart are divided by min_interval_s (1 ms), not 0.1 ms."""
    speed = EncoderVelocity(min_interval_s=0.001)
    speed.update(0.0, 0.0)
    speed.update(0.004, 0.0001)
    assert speed.velocity_rad_s == pytest.approx(4.0)


def test_velocity_is_zero_until_the_second_sample_and_after_reset() -> None:
    """One sample gives no speed; reset forgets the samples."""
    speed = EncoderVelocity()
    assert speed.update(1.0, 0.0) and speed.velocity_rad_s == 0.0
    speed.update(1.004, 0.002)
    speed.reset()
    assert speed.update(2.0, 0.004) and speed.velocity_rad_s == 0.0


def test_stale_measurement_does_not_advance_the_integrator() -> None:
    """fresh=False gives the same current again and leaves the integral term unchanged."""
    servo = MotorServo()
    servo.reset()
    first = servo.step(0.01, 0.0, 0.0, 0.0)
    integral = servo.integral_term_a
    again = servo.step(0.01, 0.0, 0.0, 0.0, fresh=False)
    assert servo.integral_term_a == integral
    assert again.current_a == first.current_a


def test_current_is_limited() -> None:
    """A large error saturates the current at the limit."""
    servo = MotorServo(ServoGains(current_limit_a=2.0))
    servo.reset()
    out = servo.step(100.0, 0.0, 0.0, 0.0)
    assert out.current_a == pytest.approx(2.0)
    assert out.saturated


def test_saturated_current_is_exactly_the_limit() -> None:
    """At saturation the setpoint is the limit itself, not (limit / unit) * unit (> 10 A here)."""
    gains = ServoGains(current_limit_a=10.0, current_unit_a=0.0085)
    assert (10.0 / 0.0085) * 0.0085 > 10.0  # the rounding this guards against
    servo = MotorServo(gains)
    assert servo.step(100.0, 0.0, 0.0, 0.0).current_a == 10.0
    assert servo.step(-100.0, 0.0, 0.0, 0.0).current_a == -10.0


def test_anti_windup_freezes_integral_in_saturation() -> None:
    """The integral does not grow while saturated in the error's direction."""
    servo = MotorServo(ServoGains(current_limit_a=1.0))
    servo.reset()
    for _ in range(1000):
        servo.step(10.0, 0.0, 0.0, 0.0)
    assert abs(servo.integral_term_a) < 1e-3 * 5.0 * 130.0 * 0.002 * 2


def test_integral_removes_steady_velocity_error() -> None:
    """On a first-order motor with a constant load, the PI drives the speed error to zero."""
    gains = ServoGains()
    servo = MotorServo(gains)
    servo.reset()
    inertia, kt, load = 1e-4, 0.05, 0.02  # kg m^2, N m/A, N m
    theta, omega, dt = 0.0, 0.0, gains.dt
    ff = 5.0
    speed = EncoderVelocity()
    for k in range(20000):
        fresh = speed.update(theta, k * dt)
        out = servo.step(ff * k * dt, ff, theta, speed.velocity_rad_s, fresh=fresh)
        for _ in range(10):
            omega += (kt * out.current_a - load) / inertia * dt / 10
            theta += omega * dt / 10
    assert abs(omega - ff) < 0.05


def test_nan_position_rejected() -> None:
    """A NaN encoder position is rejected, nothing integrated."""
    servo = MotorServo()
    servo.reset()
    with pytest.raises(InvalidInputError, match="servo inputs must be finite"):
        servo.step(0.0, 0.0, float(np.nan), 0.0)
    assert servo.integral_term_a == 0.0


def test_nan_velocity_rejected() -> None:
    """A NaN measured speed is rejected, nothing integrated."""
    servo = MotorServo()
    with pytest.raises(InvalidInputError, match=r"servo inputs must be finite, .*velocity=nan"):
        servo.step(0.0, 0.0, 0.0, float(np.nan))
    assert servo.integral_term_a == 0.0


def test_negative_gain_refused() -> None:
    """A negative gain is refused with its name."""
    with pytest.raises(ConfigurationError, match="servo gain kv must be finite and >= 0, got -1"):
        ServoGains(kv=-1.0)
