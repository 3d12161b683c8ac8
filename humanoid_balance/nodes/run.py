"""A node's process: its executor, its spin loop, SIGINT/SIGTERM, and its exit
(:func:`run_node`, which every console script's ``main`` calls)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any

import rclpy
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node

from humanoid_balance.exceptions import HumanoidBalanceError

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


class StopSignals:
    """SIGINT and SIGTERM set :attr:`requested` (Python handlers), in place of rclpy's handlers.

    rclpy's handlers shut the context down at once, from the signal, while a
    callback may be running: its next ``publish`` fails ("publisher's context is
    invalid"), or Python's ``KeyboardInterrupt`` is raised inside it; the
    EventsExecutor logs that as FATAL and raises it again from ``spin_once``.
    Here the signal only asks: the spin loop sees it between two callbacks and
    the node is destroyed and the context shut down after the last one returned.
    A Python handler runs in the main thread between bytecodes, so the request is
    seen within one executor turn (:data:`SPIN_PERIOD_S`).

    Use as a context manager around ``rclpy.init`` (with
    :attr:`rclpy_options`) and the spin; the previous handlers come back on exit.
    Outside the main thread (where Python cannot install handlers) it installs
    nothing and leaves rclpy's handlers in place.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested = False
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: Any) -> None:
        self.requested = True

    @property
    def rclpy_options(self) -> dict[str, Any]:
        """The keyword arguments of ``rclpy.init``: no rclpy handlers when these are installed."""
        if not self._previous:
            return {}
        from rclpy.signals import SignalHandlerOptions

        return {"signal_handler_options": SignalHandlerOptions.NO}

    def __enter__(self) -> StopSignals:
        try:
            for sig in self.SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        except ValueError:  # not the main thread
            self._restore()
        return self

    def _restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def __exit__(self, *exc: object) -> None:
        self._restore()


def run_node(
    factory: Callable[[], Node], args: Sequence[str] | None = None,
    done: Callable[[Node], bool] | None = None, events: bool = True,
    stop_signals: bool = False, exit_process: bool = False,
) -> int:
    """Create a node, spin it until SIGINT/SIGTERM, shutdown or ``done(node)``, clean up; body of ``main``.

    rclpy's own signal handlers turn SIGINT and SIGTERM into a context shutdown,
    which ends the spin; the node is then destroyed and 0 returned, without a
    traceback. ``events``: spin with the EventsExecutor where rclpy has one
    (:func:`make_executor`). ``stop_signals``: SIGINT and SIGTERM end the spin
    between two callbacks instead (:class:`StopSignals`), so that no callback
    runs on a shut-down context. ``exit_process`` (console scripts only): once the
    node is destroyed and the context shut down and destroyed (its DDS participant
    announced gone), flush the output and end the process with ``os._exit(0)``:
    what is left, the interpreter's finalisation and the middleware's own
    teardown, took 1 to 1.5 s of a 2 s stop budget on a loaded 2-core machine
    (0.1 to 0.2 s with the exit here, measured).

    A node whose construction refuses its parameters or model (a
    :class:`~humanoid_balance.exceptions.HumanoidBalanceError`) is reported in one line on
    stderr and the process ends with code 2, not a traceback.
    """
    code = 0
    with StopSignals() if stop_signals else contextlib.nullcontext() as signals:
        options = signals.rclpy_options if signals is not None else {}
        rclpy.init(args=None if args is None else list(args), **options)
        node = None
        executor = None
        try:
            try:
                node = factory()
            except HumanoidBalanceError as exc:
                print(f"[ERROR] {getattr(factory, '__name__', 'node')} not started: {exc}",
                      file=sys.stderr, flush=True)
                code = 2
            if node is not None:
                executor = make_executor(events)
                executor.add_node(node)
                built = node
                if signals is None:
                    spin_until(executor, None if done is None else (lambda: done(built)))
                else:
                    spin_until(executor,
                               lambda: signals.requested or (done is not None and done(built)))
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
        finally:
            if executor is not None:
                # the node leaves the executor before either ends, as rclpy.spin does: destroying
                # it after a shut-down EventsExecutor's wake (rclpy's destroy_node calls it) once
                # ended mujoco_sim with a segmentation fault on SIGTERM during start-up
                if node is not None:
                    executor.remove_node(node)
                executor.shutdown(timeout_sec=1.0)
            if node is not None:
                node.destroy_node()
            rclpy.try_shutdown()
    if exit_process:
        _exit_now(code)
    return code


def _exit_now(code: int) -> None:
    """Destroy the default context (the DDS participant says goodbye), flush, ``os._exit``."""
    context = rclpy.utilities.get_default_context()
    destroy = getattr(context, "destroy", None)  # Iron and later; Humble finalises at exit
    if destroy is not None:
        with contextlib.suppress(Exception):
            destroy()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def shut_down_by(node: Node, exc: BaseException) -> bool:
    """``exc`` came from using ``node`` after SIGINT/SIGTERM shut its context down.

    rclpy's signal handler shuts the rcl context down from a thread of its own: a
    publish fails with "publisher's context is invalid" while the context may still
    report ok for a moment.
    """
    return not node.context.ok() or "context is invalid" in str(exc)
