"""Tests of the three-loop motor servo (seed 003, section 4)."""

from __future__ import annotations

import numpy as np
import pytest

from humanoid_balance.core.servo import MotorServo, ServoGains
from humanoid_balance.exceptions import ConfigurationError, InvalidInputError


def test_defaults_are_the_papers() -> None:
    """Default gains and period are kp 13, kv 500, ki 5, 2 ms."""
    g = ServoGains()
    assert (g.kp, g.kv, g.ki, g.dt) == (13.0, 500.0, 5.0, 0.002)


def test_proportional_action_at_rest() -> None:
    """At rest with a position error e, current = unit * kv * kp * e (+ one integral step)."""
    servo = MotorServo()
    servo.reset(0.0)
    out = servo.step(0.01, 0.0, 0.0)
    v_ref = 13.0 * 0.01
    expected = 1e-3 * (500.0 * v_ref + 5.0 * v_ref * 0.002)
    assert out.current_a == pytest.approx(expected)


def test_velocity_from_two_encoder_samples() -> None:
    """Velocity is the difference of two successive positions over dt."""
    servo = MotorServo()
    servo.reset(0.0)
    out = servo.step(0.0, 0.0, 0.004)
    assert out.velocity_rad_s == pytest.approx(2.0)


def test_current_is_limited() -> None:
    """A large error saturates the current at the limit."""
    servo = MotorServo(ServoGains(current_limit_a=2.0))
    servo.reset(0.0)
    out = servo.step(100.0, 0.0, 0.0)
    assert out.current_a == pytest.approx(2.0)
    assert out.saturated


def test_anti_windup_freezes_integral_in_saturation() -> None:
    """The integral does not grow while saturated in the error's direction."""
    servo = MotorServo(ServoGains(current_limit_a=1.0))
    servo.reset(0.0)
    for _ in range(1000):
        servo.step(10.0, 0.0, 0.0)
    assert abs(servo.integral_term_a) < 1e-3 * 5.0 * 130.0 * 0.002 * 2


def test_integral_removes_steady_velocity_error() -> None:
    """On a first-order motor with a constant load, the PI drives the speed error to zero."""
    gains = ServoGains()
    servo = MotorServo(gains)
    servo.reset(0.0)
    inertia, kt, load = 1e-4, 0.05, 0.02  # kg m^2, N m/A, N m
    theta, omega, dt = 0.0, 0.0, gains.dt
    ff = 5.0
    for k in range(20000):
        out = servo.step(ff * k * dt, ff, theta)
        for _ in range(10):
            omega += (kt * out.current_a - load) / inertia * dt / 10
            theta += omega * dt / 10
    assert abs(omega - ff) < 0.05


def test_nan_position_rejected() -> None:
    """A NaN encoder position is rejected, nothing integrated."""
    servo = MotorServo()
    servo.reset(0.0)
    with pytest.raises(InvalidInputError, match="servo inputs must be finite"):
        servo.step(0.0, 0.0, float(np.nan))
    assert servo.integral_term_a == 0.0


def test_negative_gain_refused() -> None:
    """A negative gain is refused with its name."""
    with pytest.raises(ConfigurationError, match="servo gain kv must be finite and >= 0, got -1"):
        ServoGains(kv=-1.0)
