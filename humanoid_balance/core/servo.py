"""Discrete three-loop motor servo of the differential waist (seed 003, section 4).

Per motor, every inner period ``dt`` (2 ms in the paper):

* position loop, proportional: ``v_ref = w_ff + k_p (theta_ref - theta)``;
* velocity loop, PI ``k_v + k_i / s`` (paper: ``500 + 5/s``) on the velocity
  estimated from two successive encoder samples (:class:`EncoderVelocity`),
  ``v = (theta_k - theta_{k-1}) / (t_k - t_{k-1})`` with the samples' own times, which
  is the paper's ``/ dt`` when no sample is lost;
* the current loop runs in the drive (gain 20, time constant 11 ms); this class
  outputs its setpoint, limited to ``current_limit_a``.

A lost feedback frame leaves the previous sample in place for a period. Dividing by
a fixed ``dt`` would then give a speed of 0 for that period and twice the speed for
the next, and the velocity loop (``k_v`` = 0.5 A per rad/s) would turn that into
current steps of amperes. So a repeated sample is no measurement: the speed estimate
is held (the motor's inertia keeps its speed over a period far better than 0 does),
the velocity integrator is not advanced on it (``fresh=False``), and the next new
sample's difference is divided by the time that really passed. How long a held
sample may be used is the caller's feedback timeout.

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

#: The waist drives' current limit [A], written once: what a drive gives at most (the
#: simulated drive's :class:`~humanoid_balance.can.sim_drive.MotorParameters`) and so the
#: servo's default setpoint bound (:class:`ServoGains`, ``waist_controller``'s
#: ``current_limit``). The paper gives none: chosen for the simulated drive, inside the DBC's
#: ``WaistCurrentCmd`` range (+-10 A). Here, not in ``can/``, because the core imports no
#: python-can while ``can/`` and ``params/`` import the core.
WAIST_DRIVE_CURRENT_LIMIT_A = 8.0


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
    current_limit_a: float = WAIST_DRIVE_CURRENT_LIMIT_A
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


class EncoderVelocity:
    """Motor speed from two successive encoder samples and their times.

    .. math::

        v_k = \\frac{\\theta_k - \\theta_{k-1}}{t_k - t_{k-1}}

    A sample whose time is not later than the last one's is the same sample again
    (its feedback frame was lost): the estimate is held, not recomputed (module doc).
    Before the second sample the estimate is 0.

    Args:
        min_interval_s: smallest ``t_k - t_{k-1}`` divided by, s (>= 0). The times are
            receive times: two samples that reception bunched closer than the drives
            can answer (one answer per servo period) would otherwise divide a period's
            motion by a fraction of it.
    """

    def __init__(self, min_interval_s: float = 0.0) -> None:
        if not math.isfinite(min_interval_s) or min_interval_s < 0.0:
            raise ConfigurationError(f"min_interval_s must be finite and >= 0, got {min_interval_s}")
        self.min_interval_s = min_interval_s
        self.velocity_rad_s = 0.0
        self._position_rad = math.nan
        self._stamp_s = -math.inf

    def reset(self) -> None:
        """Forget the samples (the next one starts a new difference; speed 0 until then)."""
        self.velocity_rad_s = 0.0
        self._position_rad = math.nan
        self._stamp_s = -math.inf

    def update(self, position_rad: float, stamp_s: float) -> bool:
        """Take the latest sample; True if it is a new one (the estimate was updated).

        Args:
            position_rad: encoder position of the sample, rad.
            stamp_s: time of the sample, s.
        """
        if not stamp_s > self._stamp_s:
            return False
        if self._stamp_s > -math.inf:
            interval = max(stamp_s - self._stamp_s, self.min_interval_s)
            self.velocity_rad_s = (position_rad - self._position_rad) / interval
        self._position_rad = position_rad
        self._stamp_s = stamp_s
        return True


class ServoOutput(NamedTuple):
    """One servo step.

    Attributes:
        current_a: current setpoint for the drive, A (limited).
        velocity_ref_rad_s: velocity reference from the position loop, rad/s.
        saturated: whether the current limit was hit this step.
    """

    current_a: float
    velocity_ref_rad_s: float
    saturated: bool


class MotorServo:
    """Position-P / velocity-PI servo for one motor; the drive closes the current loop.

    Args:
        gains: the loop gains and limits.
    """

    def __init__(self, gains: ServoGains | None = None) -> None:
        self.gains = gains if gains is not None else ServoGains()
        self._integral = 0.0  # k_i * int(e_v dt), current units
        self._limit_units = self.gains.current_limit_a / self.gains.current_unit_a

    def reset(self) -> None:
        """Clear the integrator (start from rest)."""
        self._integral = 0.0

    @property
    def integral_term_a(self) -> float:
        """The integral part of the current setpoint, A."""
        return self._integral * self.gains.current_unit_a

    def step(self, position_ref_rad: float, velocity_ff_rad_s: float, position_rad: float,
             velocity_rad_s: float, *, fresh: bool = True) -> ServoOutput:
        """One inner-loop period.

        Args:
            position_ref_rad: motor position reference, rad.
            velocity_ff_rad_s: motor velocity feed-forward (the RMRC rate), rad/s.
            position_rad: encoder position, rad.
            velocity_rad_s: measured motor speed (:class:`EncoderVelocity`), rad/s.
            fresh: False when ``position_rad`` and ``velocity_rad_s`` repeat the last
                step's measurement (no new feedback): the integrator is not advanced.

        Returns:
            The current setpoint and the loop internals.

        Raises:
            InvalidInputError: a non-finite input (nothing is integrated then).
        """
        if not (math.isfinite(position_ref_rad) and math.isfinite(velocity_ff_rad_s)
                and math.isfinite(position_rad) and math.isfinite(velocity_rad_s)):
            raise InvalidInputError(
                f"servo inputs must be finite, got position_ref={position_ref_rad}, "
                f"velocity_ff={velocity_ff_rad_s}, position={position_rad}, "
                f"velocity={velocity_rad_s}")
        # scalar arithmetic only: two of these run every 2 ms
        g = self.gains
        v_lim = g.velocity_limit_rad_s
        v_ref = min(max(velocity_ff_rad_s + g.kp * (position_ref_rad - position_rad), -v_lim), v_lim)
        error = v_ref - velocity_rad_s
        limit_units = self._limit_units
        if fresh:
            candidate = min(max(self._integral + g.ki * error * g.dt, -limit_units), limit_units)
            unsaturated = g.kv * error + candidate
            saturated = abs(unsaturated) > limit_units
            # conditional integration: freeze while saturated in the error's direction
            if not (saturated and (unsaturated > 0.0) == (error > 0.0) and error != 0.0):
                self._integral = candidate
        else:  # the same measurement again: nothing new to integrate
            saturated = abs(g.kv * error + self._integral) > limit_units
        # limited in A, not in current units: (limit / unit) * unit can exceed the limit by
        # a rounding error, and a limit at the end of the protocol's range would then be refused
        limit_a = g.current_limit_a
        current_a = min(max((g.kv * error + self._integral) * g.current_unit_a, -limit_a), limit_a)
        return ServoOutput(current_a, v_ref, saturated)
