"""The arm loop on a node's clock and inputs: what ``arm_balance`` does between its messages.

:class:`ArmLoopRunner` takes the node's times in integer nanoseconds (its clock, the joint
states' stamps) and its inputs as values, runs :class:`~humanoid_balance.core.arm_loop.ArmLoop`
when a cycle is due, and returns what to send (:class:`Publish`). It owns:

* **the node clock as seconds**: times since the first reading (and stamps since the first
  stamp): floats keep nanoseconds there, not 0.2 us as seconds since 1970 would;
* **the lock-step trigger** (``trigger: joint_states``): a joint state stamped at least
  0.9 nominal periods after the last triggering one starts a cycle
  (:func:`~humanoid_balance.core.arm_loop.lock_step.triggers`), whose command carries its
  stamp; the same stamp again is the same period asked again: the last command is repeated
  while the joint states are fresh; once they are stale (stamps that stopped advancing do
  not refresh the measurement) the arms hold, one hold step per nominal period of arrivals;
* **activation and stop** (:meth:`ArmLoopRunner.activate`, :meth:`ArmLoopRunner.stop`);
* **input problems** as the diagnostics see them (kept until their next good message,
  at least two diagnostics periods) and their warnings, through the ``warn`` it is given.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from humanoid_balance.core.arm_loop.job_input import JobInput, MeasuredMargin
from humanoid_balance.core.arm_loop.lock_step import joint_state_stamp_problem, triggers
from humanoid_balance.core.arm_loop.loop import ArmLoop, LoopState
from humanoid_balance.core.arm_loop.measured import MeasuredState
from humanoid_balance.core.arm_loop.outputs import Command, Hold, LoopStatus

__all__ = ["ArmLoopRunner", "Publish"]


@dataclass(frozen=True)
class Publish:
    """What to send after an input or a tick.

    Attributes:
        stamp_ns: the stamp [ns, node clock] of what is sent.
        result: the cycle's command or (fresh) hold; None: the last command again (a lock-step
            simulation asking for a period it already has the answer to).
    """

    stamp_ns: int
    result: Command | Hold | None


class ArmLoopRunner:
    """The arm loop driven by a node's clock, joint states and inputs; see the module docstring.

    Args:
        loop: the loop (its controller and config set).
        measured: the measured state the loop reads (the runner fills it).
        lock_step: ``trigger: joint_states`` (else a timer calls :meth:`tick`).
        shared_clock: the joint states' stamps and the node clock are comparable (the timer
            trigger, or ``use_sim_time``); else stamps are not judged against the clock.
        start_ns: the node clock [ns] at configure (its seconds count from there).
        linger_s: how long [s] an input problem stays after it was last reported.
        warn: ``warn(key, text)`` logs a problem (rate-limited by the caller).
        before_cycle: called with the cycle's time [s] before each cycle (parameter changes
            applied between cycles).
        monotonic: the clock [s] input problems linger on.
        perf_counter: the clock [s] the cycles' periods are measured on (diagnostics).
    """

    def __init__(self, loop: ArmLoop, measured: MeasuredState, *, lock_step: bool,
                 shared_clock: bool, start_ns: int, linger_s: float,
                 warn: Callable[[str, str], None],
                 before_cycle: Callable[[float], None] | None = None,
                 monotonic: Callable[[], float] = time.monotonic,
                 perf_counter: Callable[[], float] = time.perf_counter) -> None:
        self.loop = loop
        self.measured = measured
        self.lock_step = lock_step
        self.shared_clock = shared_clock
        self.linger_s = linger_s
        self.active = False
        #: the latest job input and measured margin (only the newest counts)
        self.job: JobInput | None = None
        self.margin: MeasuredMargin | None = None
        self._warn = warn
        self._before_cycle = before_cycle
        self._monotonic = monotonic
        self._perf_counter = perf_counter
        self._epochs = {False: start_ns}  # clock, stamps (the first one): seconds count from them
        self._last_trigger_ns: int | None = None
        self._hold_step_ns: int | None = None  # node clock [ns] of the last untriggered hold step
        self._periods: list[float] = []
        self._last_wall = 0.0

    # --- times ---------------------------------------------------------------------------------

    def seconds(self, ns: int, stamp: bool = False) -> float:
        """The node clock's ``ns`` (or a stamp's, ``stamp``) as seconds since its epoch."""
        return (ns - self._epochs.setdefault(stamp, ns)) * 1e-9

    def stamp_ns(self, out: Command | Hold, default_ns: int) -> int:
        """The stamp [ns] of ``out``: its time on the cycles' clock, else ``default_ns``."""
        epoch = self._epochs.get(self.lock_step, 0)
        return default_ns if math.isnan(out.time_s) else epoch + round(out.time_s * 1e9)

    # --- lifecycle -----------------------------------------------------------------------------

    def activate(self) -> None:
        """Start commanding: from joint states measured from now on, without the job input of
        before (it was not for this activation)."""
        self.loop.restart()
        self.job = None
        self.active = True
        self._last_trigger_ns = None
        self._hold_step_ns = None

    def stop(self, reason: str) -> list[Hold]:
        """Stop commanding: the loop's deceleration to standstill, one hold per nominal period
        (send them a period apart); empty when nothing was commanded."""
        self.active = False
        return self.loop.stop(reason)

    # --- inputs --------------------------------------------------------------------------------

    def report(self, key: str, problem: str | None) -> bool:
        """Keep (and warn of) or clear an input's problem (until its next good message); whether
        there is one."""
        self.loop.report_input(key, problem, self._monotonic(), self.linger_s)
        if problem is not None:
            self._warn(key, problem)
        return problem is not None

    def joint_states(self, now_ns: int, stamp_ns: int, names: tuple[str, ...],
                     position: np.ndarray) -> Publish | None:
        """A joint state received at ``now_ns``, stamped ``stamp_ns`` [ns]; in lock-step, what
        its cycle (or the repeat, or the hold step) sends."""
        clock = now_ns if self.shared_clock else None  # stamps and the node clock comparable
        refused = self.report("joint_states_input", joint_state_stamp_problem(
            stamp_ns, clock, self.loop.config, self.lock_step) or self.measured.update_joints(
            names, position, self.seconds(now_ns), stamp_ns))
        if not (self.active and self.lock_step):
            return None
        last = self._last_trigger_ns
        if not refused and stamp_ns != last and triggers(stamp_ns, last, clock, self.loop.config):
            self._last_trigger_ns = stamp_ns
            return self.tick(now_ns, stamp_ns)
        if refused and self.loop.state is LoopState.HELD:
            # standing still, a refused sample is no period to answer: the held command repeated
            # reached a restarted simulation (its first joint states, stamped from 0, came
            # before its /clock) and sent its arm where the old one was held (tools/chaos.py)
            return None
        if last is not None:
            return self._untriggered(now_ns, last, same=not refused and stamp_ns == last)
        return None

    def _untriggered(self, now_ns: int, last_ns: int, same: bool) -> Publish | None:
        """A joint state that starts no lock-step cycle (the last stamp again, refused, reordered).

        While the joint states are fresh, the same stamp again is the same period asked again
        (a lock-step simulation): the last command is repeated. Once they are stale, the
        arms hold: a hold step, stamped with the last period, at most one per nominal period
        of arrivals (node clock), so that the ramp keeps to the acceleration limits in time;
        the last hold repeated in between.
        """
        problem = self.loop.state_problem(self.seconds(now_ns), self.measured)
        if problem is None:
            return Publish(last_ns, None) if same else None  # the same period: the same answer
        if same:
            self.report("joint_states_input", (
                f"joint states keep stamp {last_ns * 1e-9:.6f} s beyond joint_state_timeout="
                f"{self.loop.config.joint_state_timeout_s} s (their stamps stopped advancing): "
                "stale, holding"))
        step = self._hold_step_ns
        if step is None or now_ns - step >= 0.9e9 * self.loop.config.period_s or now_ns < step:
            self._hold_step_ns = now_ns
            return self.tick(now_ns, last_ns)
        return Publish(last_ns, None) if same else None

    def job_twist(self, now_ns: int, twist: Sequence[float], frame: str) -> None:
        """A job hand twist ``[v; w]`` [m/s, rad/s] in ``frame``, received at ``now_ns``."""
        self.job = JobInput(self.seconds(now_ns), twist=np.asarray(twist, dtype=float),
                            frame=frame)

    def job_joint_velocities(self, now_ns: int, names: tuple[str, ...],
                             velocity: Sequence[float] | np.ndarray) -> None:
        """Job arm joint velocities [rad/s] by name, received at ``now_ns``."""
        self.job = JobInput(self.seconds(now_ns), joint_names=names,
                            joint_velocities=np.array(velocity, dtype=float))

    def measured_margin(self, now_ns: int, margin_m: float) -> None:
        """A measured stability margin [m], received at ``now_ns``."""
        self.margin = MeasuredMargin(margin_m, self.seconds(now_ns))

    def base_pose(self, now_ns: int, pose: np.ndarray) -> None:
        """A base pose ``[x, y, z, qx, qy, qz, qw]`` (world), received at ``now_ns``."""
        self.report("base_pose", self.measured.update_base_pose(pose, self.seconds(now_ns)))

    # --- cycles --------------------------------------------------------------------------------

    def tick(self, now_ns: int, stamp_ns: int | None = None) -> Publish | None:
        """One cycle at node-clock ``now_ns``; its outputs stamped ``stamp_ns`` (default: the
        cycle's time). Nothing while inactive (a timer event queued before a stop)."""
        if not self.active:
            return None
        wall = self._perf_counter()
        if self._last_wall:
            self._periods.append(wall - self._last_wall)
        self._last_wall = wall
        now_s = self.seconds(now_ns)
        if self._before_cycle is not None:
            self._before_cycle(now_s)
        result = self.loop.cycle(now_s, self.measured, self.job, self.margin,
                                 stamp_s=None if stamp_ns is None else self.seconds(stamp_ns, True))
        if isinstance(result, Command) or (isinstance(result, Hold) and result.fresh):
            return Publish(stamp_ns if stamp_ns is not None else self.stamp_ns(result, now_ns),
                           result)
        if stamp_ns is not None and self.loop.repeatable:
            return Publish(stamp_ns, None)  # a lock-step simulation gets its answer
        return None

    # --- diagnostics ---------------------------------------------------------------------------

    def status(self) -> LoopStatus:
        """The loop's status with the cycles' periods since the last call; each problem warned of."""
        status = self.loop.status()
        for key, text in self.loop.problems.items():
            self._warn(key, text)
        status.values["caught_up_gaps"] = self.loop.caught_up_gaps
        if self._periods:
            periods = np.array(self._periods)
            status.values.update(period_ms_mean=1e3 * float(periods.mean()),
                                 period_ms_max=1e3 * float(periods.max()),
                                 overruns=int(np.sum(periods > 1.5 * self.loop.config.period_s)))
            self._periods.clear()
        return status
