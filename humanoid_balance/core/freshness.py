"""Stamped inputs against a node's clock: age, stamps ahead of the clock, clock jumps.

One rule for every node (issue 34), so that a fix reaches them all:

* a node reads one clock (steady, system or simulation) for its inputs' arrival and for its
  cycles; an input received "after now", or a clock reading earlier than the last, by more
  than :data:`CLOCK_BACK_TOLERANCE_S` is a clock jump (a restarted simulation, a replayed
  bag), not jitter;
* an input is *fresh* while ``-CLOCK_BACK_TOLERANCE_S <= now - received <= timeout``: a
  negative age beyond the tolerance never counts as fresh;
* a message *stamped* further ahead of the clock than a node's bound is refused (a wrong
  clock, ``use_sim_time`` set on one side only, or a bogus stamp); one stamped further
  behind than its bound is a measurement that old.

Times are seconds (floats) on the node's clock. No rclpy: nodes convert their ``Time``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["CLOCK_BACK_TOLERANCE_S", "ClockJump", "ClockWatch", "age_problem", "is_fresh",
           "stamp_problem"]

#: s the clock may go back between two readings, or an input be received "after now",
#: without counting as a clock jump
CLOCK_BACK_TOLERANCE_S = 1e-3


def is_fresh(received_s: float | None, now_s: float, timeout_s: float) -> bool:
    """Whether an input received at ``received_s`` [s] (None: never) is fresh at ``now_s``:
    not older than ``timeout_s`` [s] and not received after now beyond the tolerance."""
    return received_s is not None and bool(
        -CLOCK_BACK_TOLERANCE_S <= now_s - received_s <= timeout_s)


def age_problem(received_s: float | None, now_s: float, timeout_s: float,
                what: str, timeout_name: str) -> str | None:
    """Why the input ``what`` received at ``received_s`` [s] is not fresh at ``now_s``, or
    None; the reason names the parameter ``timeout_name`` that bounds it."""
    if received_s is None:
        return f"no {what} received yet"
    age = now_s - received_s
    if age < -CLOCK_BACK_TOLERANCE_S:
        return (f"{what} received {-age:.3f} s after now: the node's clock went back "
                "(simulation restarted?)")
    if age > timeout_s:
        return f"{what} {age:.3f} s old, older than {timeout_name}={timeout_s:g} s"
    return None


def stamp_problem(stamp_s: float, now_s: float, what: str, *, ahead_s: float,
                  ahead_name: str, behind_s: float | None = None,
                  behind_name: str = "") -> str | None:
    """Why ``what`` stamped ``stamp_s`` [s] is refused at ``now_s`` [s], or None.

    Stamped more than ``ahead_s`` [s] ahead of the clock (parameter ``ahead_name``) or, when
    ``behind_s`` is given, more than ``behind_s`` behind it (parameter ``behind_name``).
    A stamp of 0 (unstamped) is never judged here: the caller times it on arrival.
    """
    if stamp_s == 0.0:
        return None
    offset = stamp_s - now_s
    if offset > ahead_s:
        return (f"{what} stamped {offset:.3f} s ahead of the node clock, beyond "
                f"{ahead_name}={ahead_s:g} s: check that the clocks agree (use_sim_time)")
    if behind_s is not None and -offset > behind_s:
        return (f"{what} stamped {-offset:.3f} s behind the node clock, beyond "
                f"{behind_name}={behind_s:g} s")
    return None


@dataclass(frozen=True)
class ClockJump:
    """A reading of the clock that left the previous one by more than the allowed.

    Attributes:
        back: True when the clock went back, False when it leapt forward.
        by_s: how far [s], positive.
        from_s: the previous reading [s].
        to_s: this reading [s].
    """

    back: bool
    by_s: float
    from_s: float
    to_s: float

    def describe(self) -> str:
        if self.back:
            return (f"the node's clock went back {self.by_s:.3f} s (simulation restarted, or "
                    "use_sim_time changed?)")
        return f"the node's clock leapt {self.by_s:.3f} s forward"


class ClockWatch:
    """Every reading of one node clock, in order: reports the jumps.

    Args:
        max_forward_s: a reading later than the previous by more than this [s] is a forward
            jump (inf: never).
        back_tolerance_s: a reading earlier than the previous by at most this [s] is
            jitter, not a jump.
    """

    def __init__(self, max_forward_s: float = math.inf,
                 back_tolerance_s: float = CLOCK_BACK_TOLERANCE_S) -> None:
        if not max_forward_s > 0.0 or not back_tolerance_s >= 0.0:
            raise ValueError(f"{max_forward_s=} must be > 0 and {back_tolerance_s=} >= 0")
        self.max_forward_s = max_forward_s
        self.back_tolerance_s = back_tolerance_s
        self.last_s: float | None = None
        #: jumps seen since construction (not cleared by reset)
        self.jumps = 0

    def reset(self) -> None:
        """Forget the last reading: the next one starts anew."""
        self.last_s = None

    def update(self, now_s: float) -> ClockJump | None:
        """Take the reading ``now_s`` [s]; the jump from the previous one, or None."""
        last, self.last_s = self.last_s, now_s
        if last is None:
            return None
        if now_s < last - self.back_tolerance_s:
            jump = ClockJump(True, last - now_s, last, now_s)
        elif now_s - last > self.max_forward_s:
            jump = ClockJump(False, now_s - last, last, now_s)
        else:
            return None
        self.jumps += 1
        return jump
