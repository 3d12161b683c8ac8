"""Pairing time-stamped samples of several sensors, and looking up the joint state of a stamp.

Pure bookkeeping on integer nanosecond stamps (no rclpy): the ``zmp_estimator``
node feeds it message stamps, a test or a bag reader feeds it the same stamps
and gets the same pairs. What it guarantees:

- :class:`SampleSynchronizer`: one set per stamp, each sensor's sample used
  once, the sample of every other sensor closest in time (within a tolerance)
  joined to the newest sample. Sensors stamped alike (a simulator, a shared
  clock) pair exactly whatever order their messages arrive in; sensors on
  different clocks pair when within the tolerance (message_filters'
  ApproximateTime does the same for ROS 1/2 C++ and Python; it is not used
  here because it needs header stamps on every input, and FSR arrays have
  none, and because its result depends on arrival order).
- :class:`ArrivalPairer`: samples without stamps (FSR arrays) joined in arrival
  order, the n-th waiting sample of each sensor with the n-th of the others, and
  joined period with period again after a sensor's samples were lost.
- :class:`StampedBuffer`: the newest entry at or before a stamp, and whether an
  entry at or after it has arrived (so a result never depends on whether the
  joint state of the same instant had arrived yet).

Both are a :class:`Joiner`: ``push(sensor, stamp_ns, payload)`` returns the
set a sample completes; ``dropped`` counts the samples that found no partner.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from humanoid_balance.exceptions import ConfigurationError

__all__ = ["ArrivalPairer", "Joiner", "SampleSet", "SampleSynchronizer", "StampedBuffer"]

T = TypeVar("T")


@dataclass
class SampleSet:
    """Samples of every sensor that belong together.

    Attributes:
        stamp_ns: the newest of the samples' stamps [ns].
        samples: sensor -> (stamp_ns, payload).
    """

    stamp_ns: int
    samples: dict[Hashable, tuple[int, Any]] = field(default_factory=dict)


class Joiner(Protocol):
    """Joins the samples of several sensors into sets (:class:`SampleSynchronizer`,
    :class:`ArrivalPairer`)."""

    #: samples that found no partner (cumulative)
    dropped: int
    #: times the waiting samples of one sensor were dropped to join the sensors anew
    resyncs: int

    def push(self, sensor: Hashable, stamp_ns: int, payload: Any) -> SampleSet | None:
        """Add one sample stamped ``stamp_ns``; the set it completes, if any."""

    def reset(self) -> None:
        """Forget every waiting sample (the counters are kept)."""

    def set_limits(self, *, tolerance_ns: int, max_age_ns: int) -> None:
        """The largest stamp difference in a set and the longest wait for a partner [ns]."""


class SampleSynchronizer:
    """Joins the samples of several sensors into sets with stamps within ``tolerance_ns``.

    Args:
        sensors: the sensors' keys (for example ``("left", "right")``).
        tolerance_ns: the largest stamp difference inside a set [ns].
        queue_size: samples kept per sensor waiting for partners; older ones are dropped
            and counted in ``dropped``.

    Raises:
        ConfigurationError: no sensor, a negative tolerance or a queue size below 1.
    """

    def __init__(self, sensors: Sequence[Hashable], tolerance_ns: int, queue_size: int = 50) -> None:
        if not sensors:
            raise ConfigurationError("SampleSynchronizer needs at least one sensor")
        if tolerance_ns < 0:
            raise ConfigurationError(f"tolerance {tolerance_ns} ns must be >= 0")
        if queue_size < 1:
            raise ConfigurationError(f"queue_size {queue_size} must be >= 1")
        self.sensors = tuple(sensors)
        self.tolerance_ns = int(tolerance_ns)
        self.queue_size = queue_size
        self._queues: dict[Hashable, deque[tuple[int, Any]]] = {s: deque() for s in self.sensors}
        self._last_stamp: dict[Hashable, int] = {}
        self._last_set_stamp: int | None = None
        #: samples that never found partners, or came older than the last set
        self.dropped = 0
        #: never: stamped samples pair by their stamps after a loss
        self.resyncs = 0

    def set_limits(self, *, tolerance_ns: int, max_age_ns: int) -> None:
        """Take a new tolerance [ns]; the wait is bounded by ``queue_size``, not an age."""
        if tolerance_ns < 0:
            raise ConfigurationError(f"tolerance {tolerance_ns} ns must be >= 0")
        self.tolerance_ns = int(tolerance_ns)

    def reset(self) -> None:
        """Forget every waiting sample (the counters are kept)."""
        for queue in self._queues.values():
            queue.clear()
        self._last_stamp.clear()
        self._last_set_stamp = None

    def push(self, sensor: Hashable, stamp_ns: int, payload: Any) -> SampleSet | None:
        """Add one sample; returns the set it completes, if any.

        A sample older than its sensor's previous one means that sensor's
        clock went back: its waiting samples are dropped. If it is also older
        than a set already given out (a bag replayed again, a simulator
        reset), time went back for all: everything waiting is dropped and
        pairing starts again from this sample. (Every set holds a sample of
        every sensor, so a sample older than a set is always older than its
        own sensor's previous one.)

        Raises:
            KeyError: an unknown sensor.
        """
        queue = self._queues[sensor]
        previous = self._last_stamp.get(sensor)
        if previous is not None and stamp_ns < previous:
            if self._last_set_stamp is not None and \
                    stamp_ns < self._last_set_stamp - self.tolerance_ns:
                self.dropped += sum(len(q) for q in self._queues.values())
                self.reset()
            else:
                self.dropped += len(queue)
                queue.clear()
        self._last_stamp[sensor] = stamp_ns
        queue.append((stamp_ns, payload))
        if len(queue) > self.queue_size:
            queue.popleft()
            self.dropped += 1
        chosen: dict[Hashable, tuple[int, Any]] = {sensor: (stamp_ns, payload)}
        for other in self.sensors:
            if other == sensor:
                continue
            best = None
            for candidate in self._queues[other]:
                gap = abs(candidate[0] - stamp_ns)
                if gap <= self.tolerance_ns and (best is None or gap < abs(best[0] - stamp_ns)):
                    best = candidate
            if best is None:
                return None
            chosen[other] = best
        for key, (stamp, _) in chosen.items():
            waiting = self._queues[key]
            while waiting and waiting[0][0] <= stamp:
                used = waiting.popleft()
                if used[0] != stamp:
                    self.dropped += 1
        newest = max(stamp for stamp, _ in chosen.values())
        self._last_set_stamp = newest
        return SampleSet(newest, chosen)


class ArrivalPairer:
    """Joins the sensors' unstamped samples (FSR arrays) in arrival order.

    The n-th waiting sample of each sensor is joined with the n-th of the others
    (first in, first out), stamped with the latest arrival: an executor may hand
    over one foot's arrays in a batch before the other's, and they still pair one
    to one. A sample waits at most ``max_age_ns`` (and at most ``depth`` samples per
    sensor); older ones are dropped (counted in ``dropped``): a sensor whose samples
    stop does not hold the others', and old samples are never joined to new ones.
    A lost sample shifts the pairing by one period: another sensor then has samples
    left waiting after every join (a batch leaves some only until the other's batch
    comes). After :attr:`RESYNC_JOINS` joins in a row that leave the same sensor's
    samples waiting, those are dropped (counted in ``dropped`` and ``resyncs``): the
    next samples are joined again. Measured before this rule: 40 lost arrays of one
    foot kept the pairs 40 ms apart for as long as the stream ran.

    Args:
        sensors: the sensors' keys.
        max_age_ns: how long a sample waits for the others' [ns].
        depth: samples kept per sensor waiting for the others'.
    """

    #: joins in a row leaving the same sensor's samples waiting before they are dropped (50 ms
    #: at 1 kHz: far longer than a batch of one foot's arrays, which the other's batch clears)
    RESYNC_JOINS = 50

    def __init__(self, sensors: Sequence[Hashable], max_age_ns: int = 100_000_000,
                 depth: int = 100) -> None:
        if not sensors:
            raise ConfigurationError("ArrivalPairer needs at least one sensor")
        self.sensors = tuple(sensors)
        self.max_age_ns = max_age_ns
        self.depth = depth
        self._waiting: dict[Hashable, deque[tuple[int, Any]]] = {s: deque() for s in self.sensors}
        #: samples dropped before their partner came
        self.dropped = 0
        #: times the waiting samples of one sensor were dropped to join period with period
        self.resyncs = 0
        self._backlog: tuple[Hashable | None, int] = (None, 0)  # (sensor, joins in a row)

    def reset(self) -> None:
        """Forget the waiting samples (the counters are kept)."""
        for queue in self._waiting.values():
            queue.clear()

    def set_limits(self, *, tolerance_ns: int, max_age_ns: int) -> None:
        """Take a new longest wait [ns]; arrivals have no stamp tolerance."""
        self.max_age_ns = int(max_age_ns)

    def push(self, sensor: Hashable, stamp_ns: int, payload: Any) -> SampleSet | None:
        """Add one sample, stamped on arrival [ns]; returns the set it completes, if any."""
        for waiting in self._waiting.values():
            while waiting and stamp_ns - waiting[0][0] > self.max_age_ns:
                waiting.popleft()
                self.dropped += 1
        queue = self._waiting[sensor]
        queue.append((stamp_ns, payload))
        if len(queue) > self.depth:
            queue.popleft()
            self.dropped += 1
        if not all(self._waiting.values()):
            return None
        chosen = {s: q.popleft() for s, q in self._waiting.items()}
        self._track_backlog()
        return SampleSet(max(stamp for stamp, _ in chosen.values()), chosen)

    def _track_backlog(self) -> None:
        """After a join: count the joins in a row that leave one sensor's samples waiting; drop
        them after :attr:`RESYNC_JOINS` (a loss of the other's, not a batch)."""
        left = [s for s, q in self._waiting.items() if q]
        if len(left) != 1:
            self._backlog = (None, 0)
            return
        foot, joins = self._backlog
        joins = joins + 1 if foot == left[0] else 1
        if joins < self.RESYNC_JOINS:
            self._backlog = (left[0], joins)
            return
        queue = self._waiting[left[0]]
        self.dropped += len(queue)
        queue.clear()
        self.resyncs += 1
        self._backlog = (None, 0)


class StampedBuffer(Generic[T]):
    """The last ``size`` values of a signal by stamp.

    Args:
        size: how many values to keep.
    """

    def __init__(self, size: int = 200) -> None:
        if size < 1:
            raise ConfigurationError(f"buffer size {size} must be >= 1")
        self._items: deque[tuple[int, T]] = deque(maxlen=size)

    def __len__(self) -> int:
        return len(self._items)

    def push(self, stamp_ns: int, value: T) -> None:
        """Add a value; one older than the newest means time went back, and restarts the buffer."""
        if self._items and stamp_ns < self._items[-1][0]:
            self._items.clear()
        self._items.append((stamp_ns, value))

    def newest(self) -> tuple[int, T] | None:
        """The newest (stamp, value), or None when empty."""
        return self._items[-1] if self._items else None

    def covers(self, stamp_ns: int) -> bool:
        """True when a value at or after ``stamp_ns`` has arrived."""
        return bool(self._items) and self._items[-1][0] >= stamp_ns

    def at_or_before(self, stamp_ns: int) -> tuple[int, T] | None:
        """The newest (stamp, value) with stamp <= ``stamp_ns``, or None."""
        for stamp, value in reversed(self._items):
            if stamp <= stamp_ns:
                return stamp, value
        return None
