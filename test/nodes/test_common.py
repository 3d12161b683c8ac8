"""Small pieces of humanoid_balance.nodes.common that need no DDS."""

from __future__ import annotations

import time

import pytest

from humanoid_balance.nodes.common import LogThrottle


class RecordingLogger:
    """Stands in for an rclpy logger: keeps what was logged."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def warning(self, text: str) -> None:
        self.lines.append(("warning", text))

    def error(self, text: str) -> None:
        self.lines.append(("error", text))


def test_log_throttle_logs_once_per_period() -> None:
    """A burst of warnings logs the first only; after the period the next one is logged."""
    logger = RecordingLogger()
    throttle = LogThrottle(logger, period_s=0.05)
    logged = [throttle.warning(f"late {k}") for k in range(100)]
    assert logged == [True] + [False] * 99
    time.sleep(0.06)
    assert throttle.error("again")
    assert logger.lines == [("warning", "late 0"), ("error", "again")]


def test_log_throttle_costs_no_logger_call_when_throttled() -> None:
    """Throttled calls never reach the logger (rclpy's own throttle inspects the caller each call)."""

    class Exploding(RecordingLogger):
        def warning(self, text: str) -> None:
            if self.lines:
                pytest.fail("the logger was called while throttled")
            super().warning(text)

    throttle = LogThrottle(Exploding(), period_s=60.0)
    assert sum(throttle.warning("x") for _ in range(1000)) == 1
