"""The waist's real-time loop without ROS: the servo thread, its requests, its report.

:class:`WaistLoop` runs a :class:`~humanoid_balance.waist.servo.WaistController` as the
``waist_controller`` node does; the clock and the simulated drives are passed in, so the
tests run it in lock-step (a fake clock, :class:`LockStepDrives`) without DDS.

* :meth:`WaistLoop.step`: one servo period at the clock's time: run-time tunables taken
  between two periods, the simulated drives stepped by one period, the controller's period
  (:meth:`~humanoid_balance.waist.servo.WaistController.servo_cycle`), then the requests
  waiting for it. An exception there disables the drives (a warning says why).
* :meth:`WaistLoop.start`: the servo thread (:data:`SERVO_THREAD_NAME`) calls :meth:`step` at
  absolute deadlines (``deadline += period``; never ``sleep(period)``, so errors do not
  accumulate), sleeping until ``spin_margin_s`` before each and spinning the rest, rather
  than in an rclpy timer: a timer callback shares the executor with the subscriptions and
  services and its period error is the executor's latency (ms under load), while the
  thread only competes for the GIL. The thread lowers ``sys.setswitchinterval`` (50 us) so
  other threads give the GIL back quickly; the node's ``setup`` puts it under SCHED_FIFO.
  (The whole process under SCHED_FIFO 10 as well, so that no GIL holder is preempted by
  other processes, made it worse when measured: the GIL is not handed over by priority, and
  same-priority FIFO threads, DDS's included, do not time-slice.) Measured on the shared
  2-core machine: a bare sleep-to-deadline loop had a p99 period error of 2.1 ms at normal
  priority and 1.4 us under SCHED_FIFO; the node's loop under SCHED_FIFO still shows p99
  0.2-2 ms because every other thread of the process holds the GIL in turns (see
  ``benchmarks/waist.py``). An exception that ends the thread disables the drives (nothing
  would feed them setpoints any more) and stays in :attr:`WaistLoop.failure`.
* Requests run between two periods, on that period's time and the feedback it has just read
  (judged from another thread, a starved servo loop made fresh feedback look stale):
  commands (:meth:`WaistLoop.submit_command`), the enable sequence
  (:meth:`WaistLoop.request_enable`) and the final stop before a disable
  (:meth:`WaistLoop.request_stop_then_disable`; both in
  :mod:`humanoid_balance.waist.requests`); a service callback waits for them
  (:meth:`WaistLoop.enable`, :meth:`WaistLoop.stop_then_disable`).
* Simulated drives (:class:`LockStepDrives`) are stepped by one servo period just before
  each period, and the controller reads their answers from the bus itself (no receive
  thread): a drive answers every setpoint within its period whatever the load of the
  machine, where drives stepped by a thread of their own were starved past the 10 ms
  ``feedback_timeout`` (110 ms under a load average of 13). A stall of the thread slows the
  drives' time down instead of jumping ahead, and the controller's clock with them (the
  loop's clock less the accumulated lag, :meth:`WaistLoop.now`), so its reference never runs
  ahead of the waist it moves (stepped by the elapsed time, up to 8 ms, a starved thread
  made the waist overshoot a 2 deg roll target by 0.3 deg).
* :meth:`WaistLoop.report`: the drives' and the controller's state for ``/diagnostics``
  (:mod:`humanoid_balance.waist.report`); a drive's feedback age is judged at the
  controller's last period.

Times in s: the loop's clock (monotonic) for deadlines and waits, the controller's clock
(:meth:`WaistLoop.now`) for everything the controller judges.
"""

from __future__ import annotations

import logging
import math
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from humanoid_balance.can.bus import WaistCanBus
from humanoid_balance.exceptions import ConfigurationError, HumanoidBalanceError
from humanoid_balance.threads import name_os_thread
from humanoid_balance.waist.config import WaistServoConfig
from humanoid_balance.waist.report import LoopFigures, Report, controller_status, motor_status
from humanoid_balance.waist.requests import EnableSequence, Request, StopThenDisable
from humanoid_balance.waist.servo import CycleOutput, WaistController
from humanoid_balance.waist.sim_faults import SIM_FAULT_TOPIC, sim_fault_action
from humanoid_balance.waist.states import ControllerState

if TYPE_CHECKING:
    from humanoid_balance.can.sim_drive import SimulatedWaist

__all__ = ["REQUEST_TIMEOUT_S", "SERVO_THREAD_NAME", "ChannelLog", "LockStepDrives", "ThreadTiming",
           "WaistLoop", "sample_time_s"]

#: the servo thread's name, Python's and the OS's (``/proc/<pid>/task/<tid>/comm``)
SERVO_THREAD_NAME = "waist-servo"
#: s without a servo period after which a request waited for is given up
REQUEST_TIMEOUT_S = 2.0
#: s, the same text on the same log channel at most this often
WARN_PERIOD_S = 2.0


class Logger(Protocol):
    """Where the loop's lines go (an rclpy logger, a :class:`logging.Logger`)."""

    def info(self, msg: str) -> Any: ...

    def warning(self, msg: str) -> Any: ...

    def error(self, msg: str) -> Any: ...


class ChannelLog:
    """Lines per channel: the same text on a channel at most every ``period_s`` [s], a new one
    at once (a throttle per call site would hide a new cause).

    One call site per severity: rclpy refuses another severity from the same call site
    ("Logger severity cannot be changed between calls", which killed the node).
    """

    def __init__(self, logger: Logger, period_s: float = WARN_PERIOD_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self.period_s = period_s
        self._clock = clock
        self._last: dict[str, tuple[float, str]] = {}  # channel -> (time, text) last logged

    def _due(self, channel: str, text: str) -> bool:
        now = self._clock()
        last = self._last.get(channel)
        if last is not None and last[1] == text and now - last[0] < self.period_s:
            return False
        self._last[channel] = (now, text)
        return True

    def warning(self, channel: str, text: str) -> None:
        """Log ``text`` as a warning unless it was the channel's last within the period."""
        if self._due(channel, text):
            self.logger.warning(text)

    def info(self, channel: str, text: str) -> None:
        """Log ``text`` as information unless it was the channel's last within the period."""
        if self._due(channel, text):
            self.logger.info(text)


class LockStepDrives:
    """Simulated drives stepped by the loop, one servo period just before each period, and the
    clock of their answers: pass this object to the bus as its ``clock``, so a speed from two
    samples is their true motion.

    Args:
        drives: the simulated drives.
        clock: the loop's clock [s]; the drives' time starts at it.
    """

    def __init__(self, drives: SimulatedWaist, clock: Callable[[], float] = time.monotonic) -> None:
        self.drives = drives
        #: the time the drives were stepped to, on the loop's clock less the lag [s]
        self.time_s = clock()

    def __call__(self) -> float:
        return self.time_s


@dataclass(frozen=True)
class ThreadTiming:
    """How the servo thread keeps its deadlines.

    Attributes:
        spin_margin_s: it busy-waits this long before each deadline (sleeps before) [s].
        gil_switch_interval_s: ``sys.setswitchinterval`` while it runs (0: Python's) [s].
        publish_every: servo periods per call of the publisher.
    """

    spin_margin_s: float = 3e-4
    gil_switch_interval_s: float = 5e-5
    publish_every: int = 5

    def __post_init__(self) -> None:
        if not (math.isfinite(self.spin_margin_s) and self.spin_margin_s >= 0.0
                and math.isfinite(self.gil_switch_interval_s) and self.gil_switch_interval_s >= 0.0):
            raise ConfigurationError(f"{self.spin_margin_s=} and {self.gil_switch_interval_s=} "
                                     "must be finite and >= 0")
        if self.publish_every < 1:
            raise ConfigurationError(f"{self.publish_every=} must be >= 1")


def sample_time_s(now_s: float, node_now_ns: int, stamp_ns: int) -> float:
    """A stamped sample's time on the controller's clock ``now_s`` [s]: now less its age on the
    node clock (``node_now_ns - stamp_ns`` [ns], at least 0: a stamp ahead of the node clock is
    a sample taken now); an unstamped sample (``stamp_ns`` 0) is as old as its arrival."""
    if stamp_ns == 0:
        return now_s
    return now_s - max((node_now_ns - stamp_ns) * 1e-9, 0.0)


class WaistLoop:
    """The waist controller's loop: servo periods, requests between them, the servo thread.

    Args:
        controller: the waist controller (its bus inside).
        clock: the loop's clock [s] (monotonic; a fake one in lock-step tests).
        drives: simulated drives stepped in lock-step (None: real drives).
        timing: the servo thread's deadlines and publishing.
        logger: where warnings and errors go (``humanoid_balance.waist`` by default).
        run_time_config: asked before each period: new run-time tunables, or None.
        publish: called by the servo thread every ``timing.publish_every`` periods with the
            period's outputs and its time on the controller's clock [s].
        sleep: how the servo thread sleeps [s].
        owns_bus: :meth:`close` closes the controller's bus.
    """

    def __init__(self, controller: WaistController, *, clock: Callable[[], float] = time.monotonic,
                 drives: LockStepDrives | None = None, timing: ThreadTiming | None = None,
                 logger: Logger | None = None,
                 run_time_config: Callable[[], WaistServoConfig | None] | None = None,
                 publish: Callable[[CycleOutput, float], None] | None = None,
                 sleep: Callable[[float], None] = time.sleep, owns_bus: bool = False) -> None:
        self.controller = controller
        self._owns_bus = owns_bus
        self.drives = drives
        self.timing = timing if timing is not None else ThreadTiming()
        self.clock = clock
        self.log = ChannelLog(logger if logger is not None else logging.getLogger("humanoid_balance.waist"),
                              clock=clock)
        self._run_time_config = run_time_config
        self._publish = publish
        self._sleep = sleep
        self._lock = threading.Lock()
        self._requests: list[Request] = []
        self._lag_s = 0.0  # the simulated drives' time behind the loop's clock [s]
        self._thread: threading.Thread | None = None
        self._stop_thread = threading.Event()
        #: the last period's outputs (None: none yet, or it failed)
        self.last: CycleOutput | None = None
        #: the controller's clock at its last period [s] (the time it judged the feedback at)
        self.cycle_now_s: float | None = None
        #: why the servo thread ended on an exception ("" while it runs)
        self.failure = ""
        #: commands refused or clamped, and the last one's reason ("" after a good one)
        self.commands_refused = 0
        self.command_problem = ""
        #: the time of the last inclinometer sample on the controller's clock [s]
        self.inclinometer_s: float | None = None
        #: the servo thread's period errors (start - deadline) and durations [s], while set
        self.record_period_errors = False
        self.period_errors_s: list[float] = []
        self.cycle_durations_s: list[float] = []
        self._period_stats = [0, 0.0, 0.0]  # since the last report: count, sum, max [s]

    @classmethod
    def open(cls, config: WaistServoConfig, *, interface: str, channel: str,
             drives: SimulatedWaist | None = None, clock: Callable[[], float] = time.monotonic,
             logger: Logger | None = None, **kwargs: Any) -> WaistLoop:
        """The loop of a controller on its own bus (python-can ``interface`` and ``channel``,
        closed with the loop); with simulated ``drives``, stepped in lock-step, the bus read in
        the servo period (no receive thread) and stamped with the time they were stepped to,
        so a speed from two samples is their true motion. ``kwargs``: the loop's.

        Raises:
            CanBusError: the bus cannot be opened.
            ConfigurationError: ``config`` refused by the controller (the bus is closed again).
        """
        lock_step = LockStepDrives(drives, clock) if drives is not None else None
        warn = (logger if logger is not None else logging.getLogger("humanoid_balance.can")).warning
        bus = WaistCanBus(interface=interface, channel=channel, bitrate=config.bitrate,
                          use_notifier=lock_step is None,
                          clock=clock if lock_step is None else lock_step, warn=warn)
        try:
            controller = WaistController(config, bus)
        except HumanoidBalanceError:
            bus.close()
            raise
        return cls(controller, clock=clock, drives=lock_step, logger=logger, owns_bus=True, **kwargs)

    @property
    def thread(self) -> threading.Thread | None:
        """The servo thread (None: not started)."""
        return self._thread

    def now(self) -> float:
        """The controller's clock: the loop's, less the simulated drives' lag [s]."""
        return self.clock() - self._lag_s

    def sample_time(self, node_now_ns: int, stamp_ns: int) -> float:
        """:func:`sample_time_s` now."""
        return sample_time_s(self.now(), node_now_ns, stamp_ns)

    def reset(self) -> None:
        """Disable the drives; drop the requests waiting (answered that the loop was reset), the
        last period, its statistics and the last command's problem."""
        with self._lock:
            requests, self._requests = self._requests, []
            self.controller.disable()
            self.last, self.cycle_now_s = None, None
            self._period_stats = [0, 0.0, 0.0]
            self.commands_refused, self.command_problem = 0, ""
        for request in requests:
            request.finish("the waist loop was reset")

    # --- servo periods -----------------------------------------------------------------------

    def step(self, started_s: float | None = None) -> CycleOutput | None:
        """One servo period started at ``started_s`` on the loop's clock (default now); its
        outputs, None when it failed (the drives are then disabled)."""
        started = self.clock() if started_s is None else started_s
        ctl = self.controller
        with self._lock:
            try:
                now = self._period_time(started)
                out: CycleOutput | None = ctl.servo_cycle(now)
                for request in list(self._requests):  # enable, reset, commands: on this period
                    if request.advance(now):
                        self._requests.remove(request)
            except Exception as exc:
                self.log.warning("servo", f"servo cycle failed: {exc!r}; disabling")
                ctl.disable()
                out = None
            self.last = out
        return out

    def _period_time(self, started: float) -> float:
        """Run-time tunables taken, the simulated drives stepped by one period (they answer the
        last period's setpoint now); this period's time on the controller's clock."""
        ctl = self.controller
        if self._run_time_config is not None:
            config = self._run_time_config()
            if config is not None:
                ctl.update(config)
        drives = self.drives
        if drives is not None:
            # one servo period per period, in lock-step: a stall slows the drives' time down, and
            # the controller's with it (its reference must not run ahead of the waist it moves,
            # nor the drives hold a setpoint longer)
            period = ctl.config.gains.dt
            drives.drives.step(period)
            drives.time_s += period
            self._lag_s = started - drives.time_s
        now = started - self._lag_s
        self.cycle_now_s = now
        return now

    def start(self, setup: Callable[[], object] | None = None) -> None:
        """Start the servo thread; ``setup`` runs first in it (its scheduling priority)."""
        if self._thread is not None:
            return
        self._stop_thread.clear()
        self.failure = ""
        self._thread = threading.Thread(target=self._run, args=(setup,), name=SERVO_THREAD_NAME,
                                        daemon=True)
        self._thread.start()

    def close(self, join_timeout_s: float = 1.0) -> None:
        """Stop the servo thread, answer the requests waiting, disable the drives (with the
        loop's lock when it can be had: a thread that did not end within its join may hold
        it), close the bus when the loop opened it."""
        thread = self._thread
        if thread is not None:
            self._stop_thread.set()
            thread.join(timeout=join_timeout_s)
            self._thread = None
        locked = self._lock.acquire(timeout=0.5)
        try:
            self.controller.disable()
            requests, self._requests = self._requests, []
        finally:
            if locked:
                self._lock.release()
        for request in requests:
            request.finish("the waist loop was closed")
        if self._owns_bus:
            self.controller.bus.close()

    def _run(self, setup: Callable[[], object] | None) -> None:
        try:
            self._periods(setup)
        except Exception as exc:
            self.failure = f"the servo thread stopped: {exc!r}; drives disabled"
            with self._lock:
                self.controller.disable()
            self.log.logger.error(f"{self.failure}\n{traceback.format_exc()}")

    def _periods(self, setup: Callable[[], object] | None) -> None:
        name_os_thread(SERVO_THREAD_NAME)
        timing = self.timing
        if timing.gil_switch_interval_s > 0:  # the other threads yield the GIL quickly
            sys.setswitchinterval(timing.gil_switch_interval_s)
        if setup is not None:
            setup()
        clock, sleep, spin = self.clock, self._sleep, timing.spin_margin_s
        period = self.controller.config.gains.dt
        deadline = clock() + period
        if self.drives is not None:
            self.drives.time_s = clock() - self._lag_s
        cycle = 0
        while not self._stop_thread.is_set():
            remaining = deadline - clock()
            if remaining > spin:
                sleep(remaining - spin)
            while clock() < deadline:
                pass
            started = clock()
            self._count_period(started - deadline)
            out = self.step(started)
            cycle += 1
            if (out is not None and self._publish is not None and self.cycle_now_s is not None
                    and cycle % timing.publish_every == 0):
                self._publish(out, self.cycle_now_s)
            if self.record_period_errors:
                self.cycle_durations_s.append(clock() - started)
            deadline += period
            if clock() - deadline > 10 * period:  # overrun: skip, do not burst
                deadline = clock() + period

    def _count_period(self, late_s: float) -> None:
        stats = self._period_stats
        stats[0] += 1
        stats[1] += late_s
        if late_s > stats[2]:
            stats[2] = late_s
        if self.record_period_errors:
            self.period_errors_s.append(late_s)

    # --- requests ------------------------------------------------------------------------------

    def submit(self, advance: Callable[[float], str | None]) -> Request:
        """Run ``advance`` after each servo period from the next on, until it answers."""
        request = Request(advance)
        with self._lock:
            self._requests.append(request)
        return request

    def wait(self, request: Request) -> str:
        """Block until ``request`` has its answer (the servo thread runs it); given up when no
        servo period ran for :data:`REQUEST_TIMEOUT_S`."""
        ctl, clock = self.controller, self.clock
        cycles, since = ctl.cycles, clock()
        while not request.done.wait(0.005):
            if ctl.cycles != cycles:
                cycles, since = ctl.cycles, clock()
            elif clock() - since > REQUEST_TIMEOUT_S:
                with self._lock:
                    if request in self._requests:
                        self._requests.remove(request)
                        request.finish("the servo thread did not take the request within "
                                       f"{REQUEST_TIMEOUT_S:g} s")
        return request.answer or ""

    def submit_command(self, times_s: NDArray[np.float64], positions_rad: NDArray[np.float64],
                       delay_s: float | None = None) -> Request:
        """Plan a command in the next servo period, on its time (planned on another clock, the
        new path could start before that period's time and the reference step back).

        Args:
            times_s: (N,) point times from the start [s].
            positions_rad: (N, 2) ``[pitch, roll]`` points [rad].
            delay_s: the start, after that period's time [s] (None: then).

        A refused or clamped command is counted and logged, and stays the loop's
        :attr:`command_problem` until a command is taken as sent.
        """
        ctl = self.controller

        def plan(now_s: float) -> str:
            result = ctl.set_trajectory(times_s, positions_rad, now_s,
                                        None if delay_s is None else now_s + delay_s)
            if not result.accepted or result.clamped:
                self.command_refused(result.message)
            else:
                self.command_problem = ""
            return result.message

        return self.submit(plan)

    def command_refused(self, reason: str) -> None:
        """A command refused (or clamped): counted, logged and reported until a good one."""
        self.commands_refused += 1
        self.command_problem = reason
        self.log.warning("command", f"/waist/command {reason}")

    def request_enable(self) -> Request:
        """Enable the drives after the next servo periods
        (:class:`~humanoid_balance.waist.requests.EnableSequence`): answered "" once both
        drives confirm, else why not."""
        sequence = EnableSequence(self.controller, self.clock, self.now(), self.log.logger.warning)
        return self.submit(sequence.advance)

    def enable(self) -> str:
        """:meth:`request_enable`, waited for: "" once enabled, else why not."""
        return self.wait(self.request_enable())

    def request_stop_then_disable(self) -> Request:
        """A final controlled stop now, then the drives disabled after the period in which the
        waist rests (:class:`~humanoid_balance.waist.requests.StopThenDisable`)."""
        with self._lock:
            sequence = StopThenDisable(self.controller, self.clock, self.log.logger.error)
            request = Request(sequence.advance)
            self._requests.append(request)
        return request

    def stop_then_disable(self) -> None:
        """:meth:`request_stop_then_disable`, waited for; judged every 5 ms from the calling
        thread as well (the servo thread may have stopped)."""
        request = self.request_stop_then_disable()
        while not request.done.wait(0.005):
            with self._lock:
                if request.advance(self.now()) and request in self._requests:
                    self._requests.remove(request)

    def stop(self) -> ControllerState:
        """A controlled stop (the waist then holds); the state after the request."""
        with self._lock:
            self.controller.stop()
            return self.controller.state

    def disable(self) -> None:
        """Disable the drives now (brakes engage)."""
        with self._lock:
            self.controller.disable()

    def on_inclinometer(self, pitch_rad: float, roll_rad: float, sample_s: float) -> None:
        """An inclinometer sample taken at ``sample_s`` on the controller's clock [s]."""
        with self._lock:
            self.controller.on_inclinometer(pitch_rad, roll_rad, sample_s)
        self.inclinometer_s = sample_s

    def inject_sim_fault(self, text: str) -> None:
        """Test-only: a fault of the simulated drives (:mod:`~humanoid_balance.waist.sim_faults`),
        applied between two servo periods; a bad one is logged and ignored."""
        words = text.split()
        drives = self.drives
        if drives is None or not words:
            return
        try:
            action = sim_fault_action(drives.drives, words)
        except (ValueError, IndexError, HumanoidBalanceError) as exc:
            self.log.warning("sim_fault", f"{SIM_FAULT_TOPIC} {text!r} ignored: {exc}")
            return
        with self._lock:
            action()
        self.log.info("sim_fault", f"simulated drives: {text}")

    # --- the report ------------------------------------------------------------------------------

    def report(self) -> Report:
        """The drives' and the controller's state now; the controller's messages since the
        last report are logged, the period statistics start again."""
        ctl = self.controller
        with self._lock:
            out = self.last
            # the feedback's age as the controller judged it at its last servo period (its clock:
            # a stalled servo thread must not make fresh feedback look stale); once that thread
            # has ended nothing judges it any more: its clock now
            judged_s = self.cycle_now_s
            if judged_s is None or self.failure:
                judged_s = self.now()
            messages, ctl.messages = ctl.messages, []
            (periods, late_sum_s, late_max_s), self._period_stats = self._period_stats, [0, 0.0, 0.0]
            age_s = None if self.inclinometer_s is None else self.now() - self.inclinometer_s
            controller = controller_status(ctl, LoopFigures(
                int(periods), late_sum_s, late_max_s, self.failure, self.command_problem,
                self.commands_refused, age_s))
        for text in messages:
            self.log.warning("controller", text)
        motors = tuple(motor_status(ctl, k, out, judged_s) for k in range(len(ctl.nodes)))
        return Report(motors, controller)

