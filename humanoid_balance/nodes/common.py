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


#: s each executor turn waits at most: bounds how long a shutdown (SIGINT, SIGTERM) or a
#: ``done`` condition waits to be noticed
SPIN_PERIOD_S = 0.1


def make_executor(events: bool = False) -> Executor:
    """A single-threaded executor: rclpy's EventsExecutor when asked and available, else the classic one.

    The EventsExecutor (rclpy.experimental, Jazzy and newer) waits on middleware
    events instead of rebuilding a wait set each turn: per message it costs about
    half the CPU of the SingleThreadedExecutor (``benchmarks/graph.py`` measures
    both). Humble has no EventsExecutor: the classic executor is used there.

    Drive it with :func:`spin_until`, never with ``spin()``: with the rclpy 9.1
    wheel, ``EventsExecutor.spin()`` busy-loops holding its queue lock, the DDS
    threads starve, nothing is delivered and SIGINT/SIGTERM are never acted on.
    ``spin_once(timeout_sec)`` in a loop does not (``test/process`` starts every
    node as a process this way).
    """
    if events:
        try:
            from rclpy.experimental import EventsExecutor
        except ImportError:
            pass
        else:
            return EventsExecutor()  # type: ignore[no-any-return]
    return SingleThreadedExecutor()


def spin_until(executor: Executor, done: Callable[[], bool] | None = None,
               context: Any = None) -> None:
    """Spin ``executor`` one callback at a time until shutdown or ``done()``.

    Each turn waits at most :data:`SPIN_PERIOD_S`, so a shutdown from a signal
    handler or ``done()`` is seen within that time.
    """
    while rclpy.ok(context=context) and (done is None or not done()):
        executor.spin_once(timeout_sec=SPIN_PERIOD_S)


def run_node(
    factory: Callable[[], Node], args: Sequence[str] | None = None,
    done: Callable[[Node], bool] | None = None, events: bool = True,
) -> int:
    """Create a node, spin it until SIGINT/SIGTERM, shutdown or ``done(node)``, clean up; body of ``main``.

    rclpy's own signal handlers turn SIGINT and SIGTERM into a context shutdown,
    which ends the spin; the node is then destroyed and 0 returned, without a
    traceback. ``events``: spin with the EventsExecutor where rclpy has one
    (:func:`make_executor`).
    """
    rclpy.init(args=None if args is None else list(args))
    node = None
    executor = None
    try:
        node = factory()
        executor = make_executor(events)
        executor.add_node(node)
        built = node
        spin_until(executor, None if done is None else (lambda: done(built)))
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if executor is not None:
            executor.shutdown(timeout_sec=1.0)
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0
