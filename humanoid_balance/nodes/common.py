"""Small pieces every node shares: diagnostics, stamps, timers, lifecycle answers, priority.

No mathematics here: nodes read inputs, call a core object's ``step`` and publish. Also
here, from their own modules, for the nodes' one import: :mod:`~humanoid_balance.nodes.run`
(``run_node``, executors, signals), :mod:`~humanoid_balance.nodes.raw_inputs` (serialized
inputs) and :mod:`~humanoid_balance.nodes.throttles` (``LogThrottle``, ``Listeners``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from builtin_interfaces.msg import Time as TimeMsg
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.clock import Clock, ClockType
from rclpy.node import Node

OK = DiagnosticStatus.OK
WARN = DiagnosticStatus.WARN
ERROR = DiagnosticStatus.ERROR
STALE = DiagnosticStatus.STALE


def diagnostic_status(
    name: str, level: int, message: str, values: Mapping[str, Any] | None = None,
    hardware_id: str = "",
) -> DiagnosticStatus:
    """One DiagnosticStatus; ``level`` is OK, WARN, ERROR or STALE (as bytes in the message)."""
    status = DiagnosticStatus()
    status.name = name
    status.level = bytes([level]) if isinstance(level, int) else level
    status.message = message
    status.hardware_id = hardware_id
    status.values = [
        KeyValue(key=str(k), value=_format_value(v)) for k, v in (values or {}).items()
    ]
    return status


def _format_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def diagnostic_array(node: Node, statuses: Iterable[DiagnosticStatus]) -> DiagnosticArray:
    """A DiagnosticArray stamped with the node's clock."""
    msg = DiagnosticArray()
    msg.header.stamp = node.get_clock().now().to_msg()
    msg.status = list(statuses)
    return msg


def clock_ns(clock: Any) -> int:
    """``clock.now().nanoseconds`` of an rclpy ``Clock`` without building a ``Time``.

    For the per-message reads (a node's receive time, a bag's log time): 2 us
    against 4 (measured, rclpy 9.1). It reads the rcl clock through ``Clock.handle``
    as ``now()`` does (rclpy Humble to Kilted), so the simulation time override
    applies as there.
    """
    handle = clock.handle
    with handle:
        return int(handle.get_now().nanoseconds)


def stamp_ns(stamp: TimeMsg) -> int:
    """A header stamp in integer nanoseconds."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def stamp_msg(ns: int) -> TimeMsg:
    """Integer nanoseconds as a header stamp."""
    return TimeMsg(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def seconds_stamp(t: float) -> TimeMsg:
    """Seconds as a header stamp, rounded to the nanosecond (1.9999999999 s is 2 s, not 1 s)."""
    return stamp_msg(round(t * 1e9))


def steady_timer(node: Node, period_s: float, callback: Callable[[], None]) -> Any:
    """A timer of ``node`` on the steady (monotonic) clock, whatever ``use_sim_time`` says.

    For ``/diagnostics``, as robot drivers publish it: at its rate on wall time, while a
    simulation runs slower than real time, pauses or restarts. On the node's clock with
    ``use_sim_time``, rclpy's EventsExecutor (9.1, Kilted) re-examines its ROS-time timers on
    every ``/clock`` message it handles and queues one more call of a due timer each time,
    until the first call has run; each call moves the timer a period on. A node whose queue
    is behind its inputs so sent bursts of dozens of calls, then none for as many periods
    (``zmp_estimator`` in the simulation graph: 16 s and more without a status, measured;
    reproduced in-process with a 1 Hz timer behind a 96 % busy queue: 10 calls in 0.1 s,
    then 10.5 s of silence). A steady-clock timer is woken by the clock, not by ``/clock``.
    ``create_timer(..., clock=Clock(clock_type=STEADY_TIME))`` exists from Humble on. The
    messages keep the node clock's stamps.
    """
    return node.create_timer(period_s, callback, clock=Clock(clock_type=ClockType.STEADY_TIME))


class PeriodicThread:
    """Calls ``callback()`` every ``period_s`` [s] of the monotonic clock, in a thread of its
    own: outside the executor's queue.

    For a node whose executor can fall behind its inputs (``zmp_estimator``: three 1 kHz
    topics). rclpy's EventsExecutor queues one event per message that arrives, taken or not,
    first in first out, and a timer's call waits behind that queue twice (the wake-up, then
    the call): on a saturated machine its 1 Hz ``/diagnostics`` came 3-5 s apart while the
    samples it handled were 0.1-0.4 s old (measured in the simulation graph). The thread
    keeps the rate; the callback must only read what the executor thread writes.

    Deadlines are absolute (``+= period_s``); a late call is not caught up in a burst.
    :meth:`set_period` applies at once; an exception of ``callback`` goes to ``on_error``
    and the calls go on. Stop it (:meth:`stop`) before the node is destroyed.
    """

    def __init__(self, name: str, period_s: float, callback: Callable[[], None],
                 on_error: Callable[[Exception], None]) -> None:
        self.period_s = float(period_s)
        self._callback = callback
        self._on_error = on_error
        self._stop = threading.Event()
        self._changed = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def set_period(self, period_s: float) -> None:
        """The next call ``period_s`` after the last one (or now, when that is past)."""
        self.period_s = float(period_s)
        self._changed.set()

    def stop(self, timeout_s: float = 1.0) -> None:
        """End the thread (waits up to ``timeout_s`` for a call under way)."""
        self._stop.set()
        self._changed.set()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout_s)

    def _run(self) -> None:
        last = time.monotonic()
        while not self._stop.is_set():
            deadline = last + self.period_s
            if self._changed.wait(max(deadline - time.monotonic(), 0.0)):
                self._changed.clear()
                continue  # stopped, or a new period: the deadline again from the last call
            if self._stop.is_set():
                return
            now = time.monotonic()
            last = deadline if now - deadline < self.period_s else now  # late: no burst
            try:
                self._callback()
            except Exception as exc:  # a monitoring thread must not end on one bad call
                self._on_error(exc)


def lifecycle_state(node: Node) -> str:
    """The label of a lifecycle node's state (``unconfigured``, ``inactive``, ``active``,
    ``finalized``, or a transition's), ``unknown`` where rclpy does not say."""
    machine = getattr(node, "_state_machine", None)  # rclpy's, Humble to Kilted
    try:
        return str(machine.current_state[1])  # type: ignore[union-attr]
    except (AttributeError, IndexError, TypeError):
        return "unknown"


#: what to do in each lifecycle state before a request that needs the node active
LIFECYCLE_REMEDIES = {
    "unconfigured": "configure and activate it",
    "inactive": "activate it",
    "finalized": "it was shut down; start its process again",
}


def lifecycle_refusal(name: str, state: str) -> str:
    """Why lifecycle node ``name`` refuses a request in ``state``, and what to do
    (``waist_controller is unconfigured: configure and activate it``)."""
    return f"{name} is {state}: {LIFECYCLE_REMEDIES.get(state, 'wait for its transition to end')}"


#: why a parameter read at start-up is refused once a plain (not lifecycle) node runs (after
#: its name in the refusal): there is no configure to read it again
READ_AT_START = "is read at start-up: restart the node to change it"
#: the same for a lifecycle node, configured: an inactive node has no deactivate transition
#: (``ros2 lifecycle set`` answers "Unknown transition requested"), only an active one
READ_AT_CONFIGURE = ("is read at configure: to change it, deactivate (if active), clean up, set "
                     "it and configure again")


def destroy_timers(node: Node, *timers: Any) -> None:
    """Destroy the node's timers that exist (None is skipped); set the attributes to None after."""
    for timer in timers:
        if timer is not None:
            node.destroy_timer(timer)


def set_thread_priority(node: Node, priority: int, what: str) -> bool:
    """Put the calling thread under SCHED_FIFO ``priority`` (1-99), or back to normal
    scheduling (0); when the system refuses, a warning naming the fix. Whether it holds.

    ros2_control's controller manager does the same for its loop: a control loop that
    shares a loaded machine with monitoring and logging must not wait behind them.
    """
    try:
        if priority <= 0:
            if os.sched_getscheduler(0) != os.SCHED_OTHER:
                os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
            return True
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        return True
    except (OSError, AttributeError) as exc:  # no rtprio limit, or not Linux
        node.get_logger().warning(
            f"{what} stays at normal priority: SCHED_FIFO {priority} refused ({exc}); give "
            "the user an rtprio limit (/etc/security/limits.conf) or CAP_SYS_NICE")
        return False


# the nodes' one import (see the module docstring); these modules import nothing from here
from humanoid_balance.nodes.raw_inputs import (  # noqa: E402
    all_finite,
    joint_state_sample,
    read_float64,
    read_joint_state,
)
from humanoid_balance.nodes.run import (  # noqa: E402
    SPIN_PERIOD_S,
    StopSignals,
    make_executor,
    run_node,
    shut_down_by,
    spin_until,
)
from humanoid_balance.nodes.throttles import Listeners, LogThrottle  # noqa: E402

__all__ = [
    "ERROR", "LIFECYCLE_REMEDIES", "OK", "READ_AT_CONFIGURE", "READ_AT_START", "SPIN_PERIOD_S",
    "STALE", "WARN", "Listeners", "LogThrottle", "PeriodicThread", "StopSignals", "all_finite",
    "clock_ns", "destroy_timers", "diagnostic_array", "diagnostic_status",
    "joint_state_sample", "lifecycle_refusal", "lifecycle_state", "make_executor", "read_float64",
    "read_joint_state", "run_node", "seconds_stamp", "set_thread_priority", "shut_down_by",
    "spin_until", "stamp_msg", "stamp_ns", "steady_timer"]
