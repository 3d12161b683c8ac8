"""What the waist's loop runs between two servo periods: requests and the enable and stop sequences.

A :class:`Request` is advanced after each servo period, on that period's time and the
feedback it has just read (judged from another thread, a starved servo loop made fresh
feedback look stale), until it answers. :class:`EnableSequence` resets a fault, enables the
drives and waits for them to confirm; :class:`StopThenDisable` waits for a final controlled
stop to end, then disables the drives. Times in s: ``clock`` is the loop's (monotonic) clock
for the waits, ``now_s`` the controller's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from humanoid_balance.exceptions import HumanoidBalanceError, InvalidInputError
from humanoid_balance.waist.servo import WaistController
from humanoid_balance.waist.states import ControllerState

__all__ = ["ENABLE_MIN_PERIODS", "ENABLE_TIMEOUT_S", "STOP_WAIT_MARGIN_S", "STOP_WAIT_MAX_S",
           "EnableSequence", "Request", "StopThenDisable"]

#: s an enable waits for the fault's cause to clear, then for the drives to confirm
ENABLE_TIMEOUT_S = 0.3
#: servo periods each of those waits lasts at least (a starved loop runs fewer in 0.3 s)
ENABLE_MIN_PERIODS = 50
#: s, beyond the longest a controlled stop can take (velocity_limit / acceleration_limit), before
#: a stop that has not ended is given up and the drives are disabled moving (a stalled servo)
STOP_WAIT_MARGIN_S = 0.5
#: s, the longest a stop before a disable is waited for (the limits allow stops of minutes: a
#: lifecycle transition must end)
STOP_WAIT_MAX_S = 30.0
#: the text of an enable that went ahead without an inclinometer sample to check the encoders
UNCHECKED_ENABLE = (
    "enabled without checking the encoders against the inclinometer (no /waist/inclinometer "
    "sample within inclinometer_timeout): the drives' incremental encoders count from "
    "power-on, so the joint angles and limits are right only if the drives were powered on at "
    "(0, 0) deg")


class Request:
    """Something the loop runs after servo periods until it answers.

    Args:
        advance: called after each period with its time on the controller's clock [s]:
            None while not finished, else the answer ("" for success).
    """

    def __init__(self, advance: Callable[[float], str | None]) -> None:
        self._advance = advance
        self.answer: str | None = None
        self.done = threading.Event()

    def advance(self, now_s: float) -> bool:
        """One step; whether the request has its answer."""
        if self.done.is_set():
            return True
        try:
            answer = self._advance(now_s)
        except Exception as exc:
            self.finish(f"the request failed: {exc!r}")
            raise
        if answer is None:
            return False
        self.finish(answer)
        return True

    def finish(self, answer: str) -> None:
        """Answer now."""
        self.answer = answer
        self.done.set()


class EnableSequence:
    """An enable (``/waist/enable true``, activate), advanced after each servo period.

    In FAULT the fault is reset first, and only if its cause is gone (else the cause is the
    answer and the fault stays); the enable is retried each period until it succeeds, fails
    for good (the pose outside the range, the encoders disagreeing with the inclinometer: a
    retry once the sample went stale would enable unchecked) or :data:`ENABLE_TIMEOUT_S` and
    :data:`ENABLE_MIN_PERIODS` passed. Success is answered only once both drives' feedback
    says they are enabled; a fault meanwhile is the answer, and drives that do not confirm
    within the same wait are disabled again.

    Args:
        controller: the waist controller.
        clock: the loop's clock [s].
        asked_s: when the enable was asked, on the controller's clock [s]: an inclinometer
            sample fresh then checks the encoders (a node's executor takes no sample while it
            waits for the answer; the drives are disabled meanwhile).
        warn: where the warning of an unchecked enable goes.
    """

    def __init__(self, controller: WaistController, clock: Callable[[], float], asked_s: float,
                 warn: Callable[[str], Any]) -> None:
        self._ctl, self._clock, self._warn = controller, clock, warn
        self._asked_s = asked_s
        self._renew = True
        self._enabled_at_s: float | None = None  # None: not enabled yet
        self._since = (clock(), controller.cycles)

    def _waited_enough(self) -> bool:
        since_s, since_cycle = self._since
        return (self._clock() - since_s > ENABLE_TIMEOUT_S
                and self._ctl.cycles - since_cycle >= ENABLE_MIN_PERIODS)

    def _attempt(self, now_s: float) -> tuple[str, bool]:
        """Reset (in FAULT) and enable: the error ("" on success) and whether it is final."""
        ctl = self._ctl
        try:
            if ctl.state == ControllerState.FAULT:
                cause = ctl.reset_fault(now_s, renew=self._renew)
                self._renew = False
                if cause:
                    return f"the fault's cause is still there: {cause}", False
            ctl.enable(now_s, inclinometer_at_s=self._asked_s)
        except HumanoidBalanceError as exc:
            return str(exc), isinstance(exc, InvalidInputError)
        return "", False

    def advance(self, now_s: float) -> str | None:
        """After a servo period: None while under way, else the answer ("" when enabled)."""
        ctl = self._ctl
        if self._enabled_at_s is None:
            error, final = self._attempt(now_s)
            if not error:
                self._enabled_at_s = ctl.enabled_at_s
                self._since = (self._clock(), ctl.cycles)
                return None
            return error if final or self._waited_enough() else None
        if ctl.state == ControllerState.FAULT:
            return f"the drives faulted again after enabling: {ctl.fault_reason}"
        if ctl.drives_report_enabled(self._enabled_at_s):
            if not ctl.encoders_checked:
                self._warn(UNCHECKED_ENABLE)
            return ""
        if self._waited_enough():
            ctl.disable()
            return (f"the drives did not report enabled within {ENABLE_TIMEOUT_S:g} s: "
                    "disabled again; check the drives and the bus")
        return None


class StopThenDisable:
    """A final controlled stop (commands refused from now on), then the drives disabled once
    the waist rests (their brakes engage).

    A stop not ended :data:`STOP_WAIT_MARGIN_S` beyond the longest it can take with the present
    limits (:meth:`WaistController.stop_time_bound_s`, at most :data:`STOP_WAIT_MAX_S`) on the
    loop's clock is given up with an error, and the drives are disabled with the waist moving.
    Build it between two servo periods (it asks for the stop).

    Args:
        controller: the waist controller.
        clock: the loop's clock [s].
        error: where the error of a stop given up goes.
    """

    def __init__(self, controller: WaistController, clock: Callable[[], float],
                 error: Callable[[str], Any]) -> None:
        self._ctl, self._clock, self._error = controller, clock, error
        controller.stop(final=True)
        self.wait_s = min(controller.stop_time_bound_s() + STOP_WAIT_MARGIN_S, STOP_WAIT_MAX_S)
        self._deadline_s = clock() + self.wait_s

    def advance(self, now_s: float) -> str | None:
        """None while the waist still brakes, else "" (the drives disabled)."""
        ctl = self._ctl
        moving = ctl.state in (ControllerState.RUNNING, ControllerState.STOPPING)
        if moving and self._clock() < self._deadline_s:
            return None
        if moving:
            self._error(f"the controlled stop did not end within {self.wait_s:.2f} s: disabling "
                        "the drives with the waist moving (their brakes engage)")
        ctl.disable()
        return ""
