"""Discrete three-loop motor servo of the differential waist (seed 003, section 4).

Per motor, every inner period ``dt`` (2 ms in the paper):

* position loop, proportional: ``v_ref = w_ff + k_p (theta_ref - theta)``;
* velocity loop, PI ``k_v + k_i / s`` (paper: ``500 + 5/s``) on the velocity
  estimated from two successive encoder samples, ``v = (theta_k - theta_{k-1}) / dt``;
* the current loop runs in the drive (gain 20, time constant 11 ms); this class
  outputs its setpoint, limited to ``current_limit_a``.

Units: angles at the motor shaft in rad, speeds in rad/s. The paper gives the PI
gains without units; they are read here as acting on the drive's current unit
``current_unit_a`` (default 1 mA), i.e. ``k_v = 500`` mA per rad/s and
``k_i = 5`` mA per rad: ``i_ref = current_unit_a (k_v e_v + k_i \\int e_v dt)``.
This is an assumption of this package (the paper's drive is not specified),
stated once here and kept as parameters.

Anti-windup: conditional integration (the integrator is frozen while the output
is saturated and the error would drive it further into saturation) and an
explicit bound on the integral term equal to the current limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from humanoid_balance.exceptions import ConfigurationError, InvalidInputError


@dataclass(frozen=True)
class ServoGains:
    """Gains and limits of one motor servo (defaults: the paper's values).

    Attributes:
        kp: position gain, 1/s (paper 13).
        kv: velocity proportional gain, current units per rad/s (paper 500).
        ki: velocity integral gain, current units per rad (paper 5).
        dt: inner (velocity and position) loop period, s (paper 2 ms).
        current_limit_a: |current setpoint| bound, A.
        current_unit_a: the current unit the PI gains act on, A (default 1 mA).
        velocity_limit_rad_s: |velocity reference| bound, rad/s.
    """

    kp: float = 13.0
    kv: float = 500.0
    ki: float = 5.0
    dt: float = 0.002
    current_limit_a: float = 8.0
    current_unit_a: float = 1e-3
    velocity_limit_rad_s: float = 300.0

    def __post_init__(self) -> None:
        for name in ("kp", "kv", "ki"):
            value = getattr(self, name)
            if not np.isfinite(value) or value < 0.0:
                raise ConfigurationError(f"servo gain {name} must be finite and >= 0, got {value}")
        for name in ("dt", "current_limit_a", "current_unit_a", "velocity_limit_rad_s"):
            value = getattr(self, name)
            if not np.isfinite(value) or value <= 0.0:
                raise ConfigurationError(f"servo {name} must be finite and > 0, got {value}")


class ServoOutput(NamedTuple):
    """One servo step.

    Attributes:
        current_a: current setpoint for the drive, A (limited).
        velocity_ref_rad_s: velocity reference from the position loop, rad/s.
        velocity_rad_s: velocity estimated from two encoder samples, rad/s.
        saturated: whether the current limit was hit this step.
    """

    current_a: float
    velocity_ref_rad_s: float
    velocity_rad_s: float
    saturated: bool


class MotorServo:
    """Position-P / velocity-PI servo for one motor; the drive closes the current loop.

    Args:
        gains: the loop gains and limits.
    """

    def __init__(self, gains: ServoGains | None = None) -> None:
        self.gains = gains if gains is not None else ServoGains()
        self._integral = 0.0  # in current units * ... : k_i * int(e_v dt), current units
        self._previous_position: float | None = None

    def reset(self, position_rad: float | None = None) -> None:
        """Clear the integrator and the velocity history (start from rest at ``position_rad``)."""
        self._integral = 0.0
        self._previous_position = None if position_rad is None else float(position_rad)

    @property
    def integral_term_a(self) -> float:
        """The integral part of the current setpoint, A."""
        return self._integral * self.gains.current_unit_a

    def step(self, position_ref_rad: float, velocity_ff_rad_s: float,
             position_rad: float) -> ServoOutput:
        """One inner-loop period.

        Args:
            position_ref_rad: motor position reference, rad.
            velocity_ff_rad_s: motor velocity feed-forward (the RMRC rate), rad/s.
            position_rad: encoder position now, rad.

        Returns:
            The current setpoint and the loop internals.

        Raises:
            InvalidInputError: a non-finite input (nothing is integrated then).
        """
        if not (math.isfinite(position_ref_rad) and math.isfinite(velocity_ff_rad_s)
                and math.isfinite(position_rad)):
            raise InvalidInputError(
                f"servo inputs must be finite, got position_ref={position_ref_rad}, "
                f"velocity_ff={velocity_ff_rad_s}, position={position_rad}")
        # scalar arithmetic only: two of these run every 2 ms
        g = self.gains
        previous = position_rad if self._previous_position is None else self._previous_position
        velocity = (position_rad - previous) / g.dt
        self._previous_position = float(position_rad)
        v_lim = g.velocity_limit_rad_s
        v_ref = min(max(velocity_ff_rad_s + g.kp * (position_ref_rad - position_rad), -v_lim), v_lim)
        error = v_ref - velocity
        limit_units = g.current_limit_a / g.current_unit_a
        candidate = min(max(self._integral + g.ki * error * g.dt, -limit_units), limit_units)
        unsaturated = g.kv * error + candidate
        saturated = abs(unsaturated) > limit_units
        # conditional integration: freeze while saturated in the error's direction
        if not (saturated and (unsaturated > 0.0) == (error > 0.0) and error != 0.0):
            self._integral = candidate
        command = min(max(g.kv * error + self._integral, -limit_units), limit_units)
        return ServoOutput(command * g.current_unit_a, v_ref, velocity, saturated)
