"""The two integrals that shift the waist's joint reference: the outer loop and the droop.

* The RMRC outer loop (:class:`~humanoid_balance.core.waist_kinematics.RmrcOuterLoop`, at
  ``outer_rate_hz``) compares a fresh inclinometer sample with the reference when the
  sample was taken, and integrates the difference into a joint offset: what the encoders
  do not see (the structure's deflection, the inclinometer's mounting). On the encoders it
  adds nothing: the droop integral already removes their error.
* The droop integral removes the servo's static error under load (a P position loop
  droops: the paper's torso 0.35 deg at 30 deg pitch): the encoders' error times
  ``droop_gain_per_s``, every servo period on a fresh sample.

Both are bounded (:data:`OFFSET_LIMIT_RAD`, :data:`DROOP_LIMIT_RAD`) and frozen while a
motor is held back (saturated current, lost or late samples, the encoders more than
:data:`HELD_BACK_RAD` behind), so a drive that falls behind does not wind them up into an
overshoot. Joint angles in rad, rates in rad/s, on pairs of floats
(:mod:`humanoid_balance.waist.pairs`).
"""

from __future__ import annotations

import math

from humanoid_balance.core.waist_kinematics import RmrcOuterLoop
from humanoid_balance.waist.config import WaistServoConfig
from humanoid_balance.waist.pairs import ZERO, Pair, integrate, mul, rows

__all__ = ["DROOP_LIMIT_RAD", "HELD_BACK_RAD", "OFFSET_LIMIT_RAD", "ReferenceOffsets"]

#: rad, the most the encoder-error integral may shift the reference (the paper's torso droops
#: 0.35 deg at 30 deg pitch under the P position loop)
DROOP_LIMIT_RAD = math.radians(0.5)
#: rad, the most the inclinometer feedback of the outer loop may shift the reference (what the
#: encoders do not see: the structure's deflection, the inclinometer's mounting)
OFFSET_LIMIT_RAD = math.radians(1.0)
#: rad, an encoder error (reference with its offsets minus the encoders) beyond which the motors
#: are held back (saturated current, a starved or braked drive): both integrals then freeze
HELD_BACK_RAD = math.radians(1.0)


class ReferenceOffsets:
    """The outer loop's offset and the droop integral, and their rates.

    Args:
        config: the waist (``J_qw``), the outer gain, the droop gain, the servo period.
    """

    def __init__(self, config: WaistServoConfig) -> None:
        self.outer = RmrcOuterLoop(config.waist, gain_per_s=config.outer_gain_per_s)
        self._j_qw = rows(config.waist.j_qw)
        self._droop_gain = config.droop_gain_per_s
        self._dt = config.gains.dt
        self.offset: Pair = ZERO  # joint offset the outer loop's inclinometer feedback adds
        self.offset_rate: Pair = ZERO
        self.droop: Pair = ZERO  # joint offset integrating the servo's static error out
        self.droop_rate: Pair = ZERO

    def reset(self) -> None:
        """Both integrals and their rates at zero (an enable)."""
        self.offset, self.offset_rate = ZERO, ZERO
        self.droop, self.droop_rate = ZERO, ZERO

    def set_outer_gain(self, gain_per_s: float) -> None:
        """A new outer-loop gain [1/s] (its joint-rate bound kept)."""
        self.outer = RmrcOuterLoop(self.outer.waist, gain_per_s=gain_per_s,
                                   max_joint_rate_rad_s=self.outer.max_joint_rate_rad_s)

    def outer_step(self, q_then: Pair, q_measured: Pair, on_inclinometer: bool) -> None:
        """The outer loop's step: the offset's rate from the reference ``q_then`` when the
        measurement ``q_measured`` was taken (a fresh inclinometer sample: ``on_inclinometer``);
        0 on the encoders (the offset is kept)."""
        if not on_inclinometer:
            # on the encoders the droop integral already removes their error: a second
            # integral of the same error only winds up
            self.offset_rate = ZERO
            return
        rates = self.outer.step(q_then, ZERO, q_measured).motor_rates  # type: ignore[arg-type]
        self.offset_rate = mul(self._j_qw, (float(rates[0]), float(rates[1])))

    def integrate(self, q_ref: Pair, q_encoders: Pair, fresh: tuple[bool, bool],
                  saturated: bool) -> None:
        """One servo period: the droop integral on the encoders (on fresh samples), both
        integrals bounded, frozen while a motor is held back (:meth:`held_back`)."""
        offset, droop = self.offset, self.droop
        encoder_error = (q_ref[0] + offset[0] + droop[0] - q_encoders[0],
                         q_ref[1] + offset[1] + droop[1] - q_encoders[1])
        if fresh[0] and fresh[1]:  # a repeated (lost) sample is no new measurement
            gain = self._droop_gain
            self.droop_rate = (gain * (q_ref[0] + offset[0] - q_encoders[0]),
                               gain * (q_ref[1] + offset[1] - q_encoders[1]))
        if self.held_back(encoder_error, fresh, saturated):
            # anti-windup: while a motor cannot follow (saturated current, a starved or braked
            # drive, lost samples) neither integral may grow; they resume once it follows
            self.offset_rate, self.droop_rate = ZERO, ZERO
        # both bounded: whatever happens, they shift the reference by little
        self.offset, self.offset_rate = integrate(offset, self.offset_rate, self._dt,
                                                  OFFSET_LIMIT_RAD)
        self.droop, self.droop_rate = integrate(droop, self.droop_rate, self._dt, DROOP_LIMIT_RAD)

    @staticmethod
    def held_back(encoder_error: Pair, fresh: tuple[bool, bool], saturated: bool) -> bool:
        """Whether a motor cannot follow its reference now (the integrals must not grow).

        Held back: a servo's current saturated last period, a sample not new (lost or late
        frames: a starved drive), or the encoders further than :data:`HELD_BACK_RAD` from the
        reference with its offsets (a static droop is smaller; a drive that falls behind is not).
        """
        return (saturated or not (fresh[0] and fresh[1])
                or max(abs(encoder_error[0]), abs(encoder_error[1])) > HELD_BACK_RAD)

    def shifted(self, q_ref: Pair, qd_ref: Pair) -> tuple[Pair, Pair]:
        """The joint reference ``q_ref`` [rad] and its rate ``qd_ref`` [rad/s] with both
        offsets and their rates added."""
        offset, droop = self.offset, self.droop
        offset_rate, droop_rate = self.offset_rate, self.droop_rate
        return ((q_ref[0] + offset[0] + droop[0], q_ref[1] + offset[1] + droop[1]),
                (qd_ref[0] + offset_rate[0] + droop_rate[0],
                 qd_ref[1] + offset_rate[1] + droop_rate[1]))
