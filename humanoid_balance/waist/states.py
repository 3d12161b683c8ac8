"""The waist's states, and the rules that move it between them.

:class:`ControllerState` is the controller's state machine::

    IDLE --enable--> HOLDING --command--> RUNNING --stop / command timeout--> STOPPING
      ^                 ^                                                        |
      |                 +----------------------- at rest ------------------------+
      +--disable-- (any enabled state)       any state --fault--> FAULT --reset--> IDLE

The functions here decide the transitions that depend on the drives and the bus, on the
feedback sample each drive sent last (read once per servo period): why an enabled waist
must fault (:func:`safety_reason`), why a fault cannot be left yet (:func:`standing_cause`),
why an enable is refused (:func:`outside_range`, :func:`encoder_zero_check`), and which
drives report enabled while nothing holds them (:func:`stray_drives`). Sample times and
``now_s`` are on the controller's clock [s].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import Enum
from typing import NamedTuple

from humanoid_balance.can.bus import FeedbackSample, MotorBus
from humanoid_balance.core.waist_kinematics import DifferentialWaist
from humanoid_balance.exceptions import CanBusOffError
from humanoid_balance.waist.pairs import Pair

__all__ = ["ENABLED_STATES", "ENABLE_RANGE_TOLERANCE_RAD", "REDISABLE_EVERY", "ControllerState",
           "EncoderCheck", "Samples", "encoder_zero_check", "outside_range", "safety_reason",
           "standing_cause", "stray_drives"]

#: rad, how far outside its joint range the waist may be and still be enabled (the hold is then
#: clamped to the edge: a step of at most this); further out, enable refuses (measured: from
#: 7 deg outside, the step to the edge reached 64 deg/s and saturated the current)
ENABLE_RANGE_TOLERANCE_RAD = math.radians(0.2)
#: servo periods after a DISABLE within which a drive may still report enabled (its feedback
#: lags the frame by a period or two); one that still does after them is sent DISABLE again
REDISABLE_EVERY = 25
#: each motor's latest feedback sample (None: none came yet), read once per servo period
Samples = tuple[FeedbackSample | None, FeedbackSample | None]


class ControllerState(Enum):
    """Controller states."""

    IDLE = "idle"          # motors disabled (brakes on)
    RUNNING = "running"    # following a trajectory
    STOPPING = "stopping"  # controlled stop in progress
    HOLDING = "holding"    # enabled, holding position
    FAULT = "fault"        # motors disabled after a fault; needs reset_fault()


ENABLED_STATES = (ControllerState.RUNNING, ControllerState.STOPPING, ControllerState.HOLDING)


def _fault_code(bus: MotorBus, node: int) -> int:
    """The fault code of drive ``node``'s last status frame (-1: none came)."""
    status = bus.status(node)
    return status.fault_code if status is not None else -1


def safety_reason(bus: MotorBus, nodes: Sequence[int], samples: Samples, now_s: float,
                  feedback_timeout_s: float, enabled_at_s: float) -> str:
    """Why an enabled waist must fault now ("" when it need not).

    Bus-off, a failed receive thread, a drive without feedback or silent for longer than
    ``feedback_timeout_s`` [s], a drive fault bit, or a drive whose feedback received after
    ``enabled_at_s`` [s] no longer says enabled.
    """
    if bus.bus_off:
        return CanBusOffError.message
    failure = bus.receive_failure
    if failure is not None:
        return f"feedback lost: {failure}"
    for node, sample in zip(nodes, samples, strict=True):
        if sample is None:
            return f"drive {node} sent no feedback"
        age = now_s - sample.stamp_s
        if age > feedback_timeout_s:
            return (f"drive {node} stopped answering: no feedback for {age * 1e3:.1f} ms "
                    f"(timeout {feedback_timeout_s * 1e3:.1f} ms)")
        fb = sample.feedback
        if fb.fault:
            return (f"drive {node} reported a fault (code {_fault_code(bus, node)}"
                    f"{', watchdog' if fb.watchdog else ''})")
        if not fb.enabled and sample.stamp_s > enabled_at_s:
            return f"drive {node} is no longer enabled"
    return ""


def standing_cause(bus: MotorBus, nodes: Sequence[int], samples: Samples, now_s: float,
                   feedback_timeout_s: float, since_s: float) -> str:
    """Why a fault cannot be left yet ("" when it can): bus, silence, or a fault bit in the
    feedback received after the reset request at ``since_s`` [s]."""
    if bus.bus_off:
        return CanBusOffError.message
    if bus.receive_failure is not None:
        return f"feedback lost: {bus.receive_failure}"
    for node, sample in zip(nodes, samples, strict=True):
        if sample is None or sample.stamp_s <= since_s:
            return f"drive {node} sent no feedback since the fault was cleared"
        if now_s - sample.stamp_s > feedback_timeout_s:
            return f"drive {node} stopped answering"
        if sample.feedback.fault:
            return f"drive {node} still reports a fault (code {_fault_code(bus, node)})"
    return ""


def stray_drives(nodes: Sequence[int], samples: Samples, now_s: float,
                 feedback_timeout_s: float) -> list[int]:
    """The drives whose fresh feedback says enabled (while the controller holds nothing)."""
    return [node for node, sample in zip(nodes, samples, strict=True)
            if sample is not None and sample.feedback.enabled
            and now_s - sample.stamp_s <= feedback_timeout_s]


def outside_range(q: Pair, waist: DifferentialWaist) -> str:
    """Which joint of ``q`` = ``[pitch, roll]`` [rad] is more than
    :data:`ENABLE_RANGE_TOLERANCE_RAD` outside its range, and by how much ("" when none)."""
    tolerance = ENABLE_RANGE_TOLERANCE_RAD
    for name, value, (lo, hi) in (("pitch", q[0], waist.pitch_limits_rad),
                                  ("roll", q[1], waist.roll_limits_rad)):
        if not lo - tolerance <= value <= hi + tolerance:
            return (f"{name} is at {math.degrees(value):.2f} deg, range "
                    f"[{math.degrees(lo):.1f}, {math.degrees(hi):.1f}] deg")
    return ""


class EncoderCheck(NamedTuple):
    """The encoders against the inclinometer at an enable.

    Attributes:
        problem: why they disagree (the enable is refused), or None.
        checked: True when a fresh sample agreed, False when there was none to check
            against, None when they disagree.
    """

    problem: str | None
    checked: bool | None


def encoder_zero_check(q_encoders: Pair, inclinometer: tuple[Pair, float] | None, now_s: float,
                       inclinometer_timeout_s: float, homing_tolerance_rad: float) -> EncoderCheck:
    """Whether the encoders' joint angles ``q_encoders`` [rad] agree with a fresh inclinometer
    sample ``((pitch, roll), time)``.

    The drives' encoders are incremental: they count from where the drives were powered
    on, and the joint angles are taken from them (``J_qw theta``). Powered on away from
    (0, 0), the waist is somewhere else than the controller believes; its range limits
    then guard the wrong angles, and the outer loop corrects at most
    :data:`~humanoid_balance.waist.servo.OFFSET_LIMIT_RAD`.
    """
    if inclinometer is None or now_s - inclinometer[1] > inclinometer_timeout_s:
        return EncoderCheck(None, False)
    (pitch, roll), _ = inclinometer
    apart = max(abs(pitch - q_encoders[0]), abs(roll - q_encoders[1]))
    if not apart > homing_tolerance_rad:
        return EncoderCheck(None, True)
    return EncoderCheck(
        f"the encoders put the waist at ({math.degrees(q_encoders[0]):.2f}, "
        f"{math.degrees(q_encoders[1]):.2f}) deg (pitch, roll), the inclinometer at "
        f"({math.degrees(pitch):.2f}, {math.degrees(roll):.2f}) deg: "
        f"{math.degrees(apart):.2f} deg apart, more than homing_tolerance="
        f"{math.degrees(homing_tolerance_rad):g} deg. The drives' "
        "incremental encoders count from where they were powered on: power them on "
        "with the waist at (0, 0) deg (or home them), and check the inclinometer's "
        "mounting", None)
