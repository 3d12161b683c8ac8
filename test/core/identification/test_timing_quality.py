"""Timing figures of a run: irregular or late joint states and commands are named (issue 12)."""

from __future__ import annotations

import numpy as np
import pytest

from humanoid_balance.core.identification.procedure import timing_quality
from humanoid_balance.exceptions import InvalidInputError

PERIOD = 0.005  # s, 200 Hz joint states
COMMAND = 0.01  # s, 100 Hz commands


def regular(n: int, period: float) -> np.ndarray:
    """``n`` times ``period`` apart."""
    return np.arange(n) * period


def test_regular_run_has_no_warning() -> None:
    """Samples every 5 ms received 1 ms later, commands every 10 ms: no warning."""
    stamps = regular(2000, PERIOD)
    quality = timing_quality(stamps, stamps + 0.001, regular(1000, COMMAND), COMMAND)
    assert (quality.warnings, quality.sample_interval_s) == ((), pytest.approx(PERIOD))


def test_gaps_in_the_samples_are_named() -> None:
    """Every 20th sample interval 30 ms long (5 %): the warning names the irregular samples."""
    intervals = np.full(2000, PERIOD)
    intervals[::20] = 0.03
    stamps = np.cumsum(intervals)
    quality = timing_quality(stamps, stamps, regular(1000, COMMAND), COMMAND)
    assert (len(quality.warnings), "came irregularly" in quality.warnings[0],
            quality.longest_sample_gap_s) == (1, True, pytest.approx(0.03))


def test_late_samples_are_named() -> None:
    """Samples released in 100 ms bursts (each received up to 0.1 s after its stamp): named late."""
    stamps = regular(2000, PERIOD)
    received = np.floor(stamps / 0.1) * 0.1 + 0.1
    quality = timing_quality(stamps, received, regular(1000, COMMAND), COMMAND)
    assert [w.split(":")[0] for w in quality.warnings] == ["/joint_states came late"]


def test_irregular_commands_are_named() -> None:
    """Commands with every 10th period 50 ms long (10 %): named, with the longest gap."""
    intervals = np.full(1000, COMMAND)
    intervals[::10] = 0.05
    stamps = regular(2000, PERIOD)
    quality = timing_quality(stamps, stamps, np.cumsum(intervals), COMMAND)
    assert (quality.warnings[0].startswith("commands went out irregularly"),
            quality.longest_command_gap_s) == (True, pytest.approx(0.05))


def test_commands_slower_than_the_rate_are_named() -> None:
    """Commands regularly every 5 ms for a 2 ms period (a 200 Hz /clock): named slow, not irregular."""
    stamps = regular(2000, PERIOD)
    quality = timing_quality(stamps, stamps, regular(2000, 0.005), 0.002)
    assert [w.split(",")[0] for w in quality.warnings] == [
        "commands went out every 5.0 ms"]


def test_mismatched_receipt_times_are_refused() -> None:
    """One receipt time per sample is required."""
    with pytest.raises(InvalidInputError, match="receipt time per sample"):
        timing_quality(np.zeros(3), np.zeros(2), np.zeros(1), COMMAND)
