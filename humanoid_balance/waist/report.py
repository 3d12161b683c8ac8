"""What the waist reports on ``/waist/motor_states`` and ``/diagnostics``, without ROS.

:func:`motor_status` gives one motor's status from its drive's last feedback, judged at the
controller's last servo period (a stalled servo thread must not make fresh feedback look
stale); :func:`controller_status` the controller's state, the last command, the servo
thread's timing and the inclinometer's age. The node turns them into
``diagnostic_msgs/DiagnosticStatus`` (:class:`Level` has its values).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, NamedTuple

from humanoid_balance.waist.servo import CycleOutput, WaistController
from humanoid_balance.waist.states import ControllerState

__all__ = ["Level", "LoopFigures", "Report", "Status", "controller_status", "motor_status"]


class Level(IntEnum):
    """A status level (the values of ``diagnostic_msgs/DiagnosticStatus``)."""

    OK = 0
    WARN = 1
    ERROR = 2


@dataclass(frozen=True)
class Status:
    """One status of the report: a name, a level, a message and named values."""

    name: str
    level: Level
    message: str
    values: dict[str, Any]


class Report(NamedTuple):
    """What ``/waist/motor_states`` (``motors``, one per motor) and ``/diagnostics``
    (``controller``) say."""

    motors: tuple[Status, ...]
    controller: Status


class LoopFigures(NamedTuple):
    """The loop's side of the controller's status.

    Attributes:
        periods, late_sum_s, late_max_s: servo periods since the last report, the sum and the
            largest of their errors (start less deadline) [s].
        failure: why the servo thread ended ("" while it runs).
        command_problem: why the last command was refused or clamped ("" after a good one).
        commands_refused: commands refused or clamped so far.
        inclinometer_age_s: the last inclinometer sample's age [s] (None: none came).
    """

    periods: int
    late_sum_s: float
    late_max_s: float
    failure: str
    command_problem: str
    commands_refused: int
    inclinometer_age_s: float | None


def motor_status(controller: WaistController, k: int, out: CycleOutput | None,
                 judged_s: float) -> Status:
    """Motor ``k + 1``: its last values (``out``), its drive's feedback age at ``judged_s`` on
    the controller's clock [s] (stale beyond ``feedback_timeout_s``: ERROR, the last values
    kept and labelled), its drive's state."""
    node = controller.nodes[k]
    bus = controller.bus
    sample, status = bus.feedback(node), bus.status(node)
    values: dict[str, Any] = {"node_id": node}
    level, text = Level.OK, "ok"
    if out is not None:
        values.update(position_rad=float(out.motor_position_rad[k]),
                      velocity_rad_s=float(out.motor_velocity_rad_s[k]),
                      current_a=float(out.motor_current_a[k]))
    if sample is None:
        level, text = Level.WARN, "no feedback yet"
    else:
        fb = sample.feedback
        age_s = max(judged_s - sample.stamp_s, 0.0)
        stale = age_s > controller.config.feedback_timeout_s
        values.update(enabled=fb.enabled, fault=fb.fault, watchdog=fb.watchdog,
                      brake=fb.brake, feedback_age_s=age_s, feedback_stale=stale)
        if stale:  # the values above are the last sample's, the motor's state unknown
            level, text = Level.ERROR, f"no feedback for {age_s:.3g} s (stale)"
        elif fb.fault:
            level, text = Level.ERROR, "fault"
    if status is not None:
        values.update(fault_code=status.fault_code, drive_state=status.state)
    return Status(f"waist motor {k + 1}", level, text, values)


def controller_status(controller: WaistController, loop: LoopFigures) -> Status:
    """The ``waist_controller`` status: ERROR in FAULT (with the reason) or when the servo
    thread ended, WARN while the last command was refused or clamped, else OK."""
    ctl = controller
    state, reason, plan = ctl.state, ctl.fault_reason, ctl.last_plan
    level = Level.ERROR if state == ControllerState.FAULT else Level.OK
    values: dict[str, Any] = {"state": state.value, "bus_load_pct": ctl.bus_load.percent,
                              "commands_refused": loop.commands_refused, **ctl.bus.counters()}
    if plan is not None:  # the last accepted command: its windows off the command's timing
        values.update(command_catch_up_s=plan.catch_up_s,
                      command_max_lag_deg=math.degrees(plan.max_lag_rad),
                      command_end_lag_s=plan.end_lag_s)
    if ctl.encoders_checked is not None:  # against the inclinometer at the last enable
        values["encoders_checked"] = ctl.encoders_checked
    if loop.periods:  # the servo thread's timing since the last report
        values.update(servo_periods=loop.periods,
                      servo_period_error_mean_us=1e6 * loop.late_sum_s / loop.periods,
                      servo_period_error_max_us=1e6 * loop.late_max_s)
    if loop.inclinometer_age_s is not None:  # the outer loop uses it while fresh
        values.update(inclinometer_age_s=loop.inclinometer_age_s,
                      inclinometer_used=loop.inclinometer_age_s <= ctl.config.inclinometer_timeout_s)
    text = f"FAULT: {reason}" if reason else state.value
    if loop.failure:
        level, text = Level.ERROR, loop.failure
    if level == Level.OK and loop.command_problem:  # until a good command comes
        level, text = Level.WARN, f"{state.value}; last /waist/command {loop.command_problem}"
    return Status("waist_controller", level, text, values)
