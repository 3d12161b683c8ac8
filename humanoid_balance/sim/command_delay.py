"""A fixed command latency: stamped commands act a set time after their stamp (no rclpy).

Over a non-real-time transport (DDS between processes on a loaded machine) a
command stamped ``t`` reaches the simulation later by a different delay each time
(measured on the 2-core machine, free-running: 2-4 ms on average, 10-50 ms at
worst). Applied as it comes, as of its stamp, the joint's target jumps by what the
command's velocity would have covered meanwhile, and a controller running irregular
periods turns that into position steps of every joint at the servos (the free-running
demo: the strike's CoP peak with RMC from 0.25 to 2.1 of the peak without, run to run;
README, "Figures"). A robot's servo interface does what
:class:`CommandDelay` does: it plays the command stream back a fixed latency after
the stamps, so every command acts at ``stamp + latency``, in the order of the stamps,
and both arms of one command move together, whatever the transport did. A command
that arrives later than that acts at once, as of ``stamp + latency`` (the caller moves
it on by its velocity); an unstamped one (0), or one stamped further ahead of the
simulation than ``horizon_s`` (another clock), acts at once.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterator
from typing import Generic, TypeVar

from humanoid_balance.exceptions import InvalidInputError

__all__ = ["CommandDelay", "command_age_s"]

T = TypeVar("T")


class CommandDelay(Generic[T]):
    """Commands held until ``stamp + latency_s`` of simulation time.

    Args:
        latency_s: how long after its stamp a command acts [s] (>= 0; 0: at its stamp).
        horizon_s: a command stamped further than this ahead of the simulation's time is
            on another clock: it acts at once [s] (> 0; settable, e.g. with the command
            timeout).
    """

    def __init__(self, latency_s: float, *, horizon_s: float) -> None:
        if not math.isfinite(latency_s) or latency_s < 0:
            raise InvalidInputError(f"latency_s={latency_s} must be finite and >= 0")
        self.latency_ns = round(latency_s * 1e9)
        self.horizon_s = horizon_s
        #: (act at [ns], arrival order, command): a heap by act time, then arrival
        self._heap: list[tuple[int, int, T]] = []
        self._order = itertools.count()

    @property
    def horizon_s(self) -> float:
        """How far ahead of the simulation a stamp may be and still wait [s]."""
        return self._horizon_ns * 1e-9

    @horizon_s.setter
    def horizon_s(self, value: float) -> None:
        if not math.isfinite(value) or value <= 0:
            raise InvalidInputError(f"horizon_s={value} must be finite and > 0")
        self._horizon_ns = round(value * 1e9)

    def __len__(self) -> int:
        return len(self._heap)

    def push(self, stamp_ns: int, now_ns: int, command: T) -> None:
        """Hold ``command`` stamped ``stamp_ns``, received at simulation time ``now_ns`` [ns]."""
        act = stamp_ns + self.latency_ns
        if stamp_ns <= 0 or act - now_ns > self._horizon_ns:
            act = now_ns  # unstamped, or on another clock: as it comes
        heapq.heappush(self._heap, (act, next(self._order), command))

    def due(self, now_ns: int) -> Iterator[tuple[int, T]]:
        """The commands due at ``now_ns`` [ns], by act time then arrival: (act time [ns], command).

        A command yielded is removed.
        """
        heap = self._heap
        while heap and heap[0][0] <= now_ns:
            act, _, command = heapq.heappop(heap)
            yield act, command

    def due_aged(self, now_s: float, timeout_s: float) -> Iterator[tuple[float, T]]:
        """The commands due at simulation time ``now_s`` [s], each with its age: how long
        ago [s] it was meant to act (:func:`command_age_s` of its act time), for
        ``set_targets(..., age_s=age)``."""
        for act_ns, command in self.due(round(now_s * 1e9)):
            yield command_age_s(act_ns, now_s, timeout_s), command


def command_age_s(stamp_ns: int, now_s: float, timeout_s: float) -> float:
    """How long ago [s] a command stamped ``stamp_ns`` was meant to act, at simulation time ``now_s``.

    A command stamped with the simulation's time (what a node on ``use_sim_time`` that
    answers a joint state does) and received up to ``timeout_s`` (``command_timeout``)
    later is applied as of its stamp (see :meth:`MujocoRobotSim.set_targets
    <humanoid_balance.sim.robot.MujocoRobotSim.set_targets>`); 0, applied as it comes,
    for an unstamped one or one stamped ahead of the simulation (another clock, e.g. wall
    time); ``inf`` for one stamped further back than ``timeout_s``: older than the command
    timeout, it must not act (a joint whose last command is that old holds), nor be taken
    for a fresh one.
    """
    if stamp_ns <= 0:
        return 0.0
    age = now_s - stamp_ns * 1e-9
    if age > timeout_s:
        return math.inf
    # the simulation's time as published is rounded to the ns: a stamp equal to it is age 0
    return age if age > 1e-9 else 0.0
