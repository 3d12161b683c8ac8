"""Doing less than every time: logging at a limited rate (:class:`LogThrottle`) and writing
optional topics only while someone listens (:class:`Listeners`)."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from typing import Any


class LogThrottle:
    """At most one message per ``period_s`` [s] (steady clock), decided before rclpy's logger is called.

    rclpy's ``throttle_duration_sec`` looks up the caller (``inspect`` and file
    system calls) on every call, logged or throttled: about 0.4 ms a call. A
    node that warns per message at 1 kHz spends a core on it, and falls further
    behind the more it warns (a late sample warns, warning makes the next one
    later). The check here costs a clock read.

    Args:
        logger: the node's logger (``node.get_logger()``).
        period_s: the shortest time between two messages, s.
    """

    def __init__(self, logger: Any, period_s: float = 1.0) -> None:
        self.logger = logger
        self.period_s = period_s
        self._last = -math.inf

    def _due(self) -> bool:
        now = time.monotonic()
        if now - self._last < self.period_s:
            return False
        self._last = now
        return True

    def warning(self, text: str) -> bool:
        """Log ``text`` as a warning unless one was logged within the period; True when logged."""
        if not self._due():
            return False
        self.logger.warning(text)
        return True

    def error(self, text: str) -> bool:
        """Log ``text`` as an error unless one was logged within the period; True when logged."""
        if not self._due():
            return False
        self.logger.error(text)
        return True


class Listeners:
    """Which of a node's optional publishers have a subscriber, looked at every ``period_s``.

    A node writes its monitoring topics (per-foot ZMPs, markers, ground truth) only while
    someone listens, as drivers skip unheard topics: a 1 kHz topic nobody takes still costs
    its serialization and publish. A subscriber that joins is served within ``period_s``.
    Every publisher counts as heard until the first look. Asking costs a clock read; the
    subscription counts (an rmw call each) are read at most every ``period_s`` of wall time.

    Args:
        publishers: the optional publishers (None entries are left out).
        period_s: wall seconds between two looks.
    """

    def __init__(self, publishers: Iterable[Any], period_s: float = 0.1) -> None:
        self._publishers = [pub for pub in publishers if pub is not None]
        self._heard: frozenset[Any] = frozenset(self._publishers)
        self._period_s = float(period_s)
        self._next_s = 0.0

    def heard(self) -> frozenset[Any]:
        """The publishers with at least one matched subscription (as of the last look)."""
        now = time.monotonic()
        if now >= self._next_s:
            self._next_s = now + self._period_s
            self._heard = frozenset(pub for pub in self._publishers
                                    if pub.get_subscription_count() > 0)
        return self._heard

    def unheard(self) -> str:
        """The topics not written for want of a subscriber at the last look, for /diagnostics."""
        return ",".join(sorted(pub.topic_name for pub in self._publishers
                               if pub not in self._heard)) or "none"
