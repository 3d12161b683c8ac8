"""The drives' feedback as one servo period reads it: each motor's latest sample, once.

Every servo period reads each drive's latest feedback sample once (:func:`read_samples`);
that one sample is what the safety checks judge (:mod:`humanoid_balance.waist.states`) and
what the servo uses (:func:`measure`). A sample seen before (its frame was lost) is no new
measurement: the motor speed estimate is held over it
(:class:`~humanoid_balance.core.servo.EncoderVelocity`) and the velocity integrator is not
advanced on it. Sample times and ``now_s`` are on the controller's clock [s].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from humanoid_balance.can.bus import MotorBus
from humanoid_balance.core.servo import EncoderVelocity
from humanoid_balance.waist.pairs import Pair
from humanoid_balance.waist.states import Samples

__all__ = ["Measurement", "fresh_positions", "measure", "read_samples"]


class Measurement(NamedTuple):
    """The motors as one period's samples show them.

    Attributes:
        theta: motor positions [rad] (NaN without a sample).
        omega: motor speeds [rad/s] (0 without a sample fresher than the timeout).
        current: motor currents [A] (NaN without a sample).
        fresh: whether each sample is a new measurement, not older than the timeout.
    """

    theta: Pair
    omega: Pair
    current: Pair
    fresh: tuple[bool, bool]


def read_samples(bus: MotorBus, nodes: Sequence[int]) -> Samples:
    """The latest feedback sample of each motor's drive (``nodes``: motor 1's, motor 2's)."""
    feedback = bus.feedback
    return feedback(nodes[0]), feedback(nodes[1])


def measure(samples: Samples, velocities: tuple[EncoderVelocity, EncoderVelocity], now_s: float,
            feedback_timeout_s: float) -> Measurement:
    """Motor positions, speeds and currents from the samples, and which samples are new.

    The speed comes from ``velocities`` (held over a repeated sample); without a sample,
    or with one older than ``feedback_timeout_s`` [s], there is no speed (0) and the next
    sample starts a new difference.
    """
    theta = [math.nan, math.nan]
    omega = [0.0, 0.0]
    current = [math.nan, math.nan]
    fresh = [False, False]
    for k, (sample, velocity) in enumerate(zip(samples, velocities, strict=True)):
        if sample is None:
            velocity.reset()
            continue
        fb = sample.feedback
        theta[k], current[k] = fb.position_rad, fb.current_a
        if now_s - sample.stamp_s > feedback_timeout_s:
            velocity.reset()
            continue
        fresh[k] = velocity.update(fb.position_rad, sample.stamp_s)
        omega[k] = velocity.velocity_rad_s
    return Measurement((theta[0], theta[1]), (omega[0], omega[1]), (current[0], current[1]),
                       (fresh[0], fresh[1]))


def fresh_positions(samples: Samples, now_s: float, feedback_timeout_s: float) -> Pair | None:
    """Both motors' positions [rad] from samples not older than ``feedback_timeout_s`` [s],
    or None when a drive has none."""
    theta = [0.0, 0.0]
    for k, sample in enumerate(samples):
        if sample is None or now_s - sample.stamp_s > feedback_timeout_s:
            return None
        theta[k] = sample.feedback.position_rad
    return theta[0], theta[1]
