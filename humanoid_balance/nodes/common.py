"""Small pieces every node shares: main(), diagnostics, stamps, parameter checks.

No mathematics here: nodes read inputs, call a core object's ``step`` and publish.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import rclpy
from builtin_interfaces.msg import Time as TimeMsg
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
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


def stamp_ns(stamp: TimeMsg) -> int:
    """A header stamp in integer nanoseconds."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def stamp_msg(ns: int) -> TimeMsg:
    """Integer nanoseconds as a header stamp."""
    return TimeMsg(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def seconds_stamp(t: float) -> TimeMsg:
    """Seconds as a header stamp, rounded to the nanosecond (1.9999999999 s is 2 s, not 1 s)."""
    return stamp_msg(round(t * 1e9))


def destroy_timers(node: Node, *timers: Any) -> None:
    """Destroy the node's timers that exist (None is skipped); set the attributes to None after."""
    for timer in timers:
        if timer is not None:
            node.destroy_timer(timer)


def all_finite(values: Sequence[float]) -> bool:
    """True when every value is a finite float."""
    return all(math.isfinite(v) for v in values)


def make_executor(events: bool = False) -> Executor:
    """A single-threaded executor: rclpy's EventsExecutor when asked and available, else the classic one.

    The EventsExecutor (rclpy.experimental, Jazzy and newer) waits on middleware
    events instead of rebuilding a wait set each turn: measured with
    ``benchmarks/zmp.py``, it lets ``zmp_estimator`` keep up with 1 kHz feet where
    the SingleThreadedExecutor falls behind. Humble has no EventsExecutor: the
    classic executor is used there.
    """
    if events:
        try:
            from rclpy.experimental import EventsExecutor
        except ImportError:
            pass
        else:
            return EventsExecutor()  # type: ignore[no-any-return]
    return SingleThreadedExecutor()


def run_node(
    factory: Callable[[], Node], args: Sequence[str] | None = None,
    done: Callable[[Node], bool] | None = None, events: bool = False,
) -> int:
    """Create a node, spin it until Ctrl-C, shutdown or ``done(node)``, clean up; body of ``main``.

    ``events``: spin with the EventsExecutor where rclpy has one (:func:`make_executor`).
    """
    rclpy.init(args=None if args is None else list(args))
    node = None
    try:
        node = factory()
        executor = make_executor(events)
        executor.add_node(node)
        if done is None:
            executor.spin()
        else:
            while rclpy.ok() and not done(node):
                executor.spin_once(timeout_sec=0.1)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0
