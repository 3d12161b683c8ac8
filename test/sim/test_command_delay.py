"""The fixed command latency of the simulation (:mod:`humanoid_balance.sim.command_delay`)."""

from __future__ import annotations

import pytest

from humanoid_balance.exceptions import InvalidInputError
from humanoid_balance.sim.command_delay import CommandDelay

MS = 1_000_000  # ns


def drain(delay: CommandDelay[str], now_ns: int) -> list[tuple[int, str]]:
    return list(delay.due(now_ns))


def test_a_command_acts_the_latency_after_its_stamp_not_when_it_arrives() -> None:
    """Stamped 100 ms, received at 103 ms, latency 10 ms: held until 110 ms, then due once."""
    delay: CommandDelay[str] = CommandDelay(0.010, horizon_s=0.2)
    delay.push(100 * MS, 103 * MS, "a")
    assert drain(delay, 109 * MS) == []
    assert drain(delay, 110 * MS) == [(110 * MS, "a")]
    assert drain(delay, 111 * MS) == [] and len(delay) == 0


def test_commands_act_in_the_order_of_their_stamps_whatever_order_they_arrive_in() -> None:
    """Arrival 3 then 1 then 2 (stamps 104, 100, 102 ms): due in stamp order, each at its time."""
    delay: CommandDelay[str] = CommandDelay(0.010, horizon_s=0.2)
    for stamp_ms, name in ((104, "third"), (100, "first"), (102, "second")):
        delay.push(stamp_ms * MS, 105 * MS, name)
    assert drain(delay, 112 * MS) == [(110 * MS, "first"), (112 * MS, "second")]
    assert drain(delay, 120 * MS) == [(114 * MS, "third")]


def test_equal_stamps_act_in_arrival_order() -> None:
    """Two commands of one stamp (two topics, or a repeat): the later one is applied last."""
    delay: CommandDelay[str] = CommandDelay(0.010, horizon_s=0.2)
    delay.push(50 * MS, 51 * MS, "arms")
    delay.push(50 * MS, 52 * MS, "waist")
    assert [c for _, c in drain(delay, 60 * MS)] == ["arms", "waist"]


def test_a_command_later_than_the_latency_acts_at_once_as_of_stamp_plus_latency() -> None:
    """Stamped 100 ms, received at 130 ms (latency 10 ms): due at 130 ms, its act time 110 ms
    (the caller moves it on by 20 ms of its velocity)."""
    delay: CommandDelay[str] = CommandDelay(0.010, horizon_s=0.2)
    delay.push(100 * MS, 130 * MS, "late")
    assert drain(delay, 130 * MS) == [(110 * MS, "late")]


def test_due_aged_gives_how_long_ago_each_was_meant_to_act() -> None:
    """Latency 10 ms: one stamped 100 ms received at 130 ms is 20 ms old when due at 130 ms;
    one stamped 125 ms received on time is due at 135 ms, age 0 (as it acts)."""
    delay: CommandDelay[str] = CommandDelay(0.010, horizon_s=0.2)
    delay.push(100 * MS, 130 * MS, "late")
    delay.push(125 * MS, 130 * MS, "on time")
    aged = list(delay.due_aged(0.130, 0.2))
    assert [c for _, c in aged] == ["late"] and aged[0][0] == pytest.approx(0.020, abs=1e-9)
    assert list(delay.due_aged(0.135, 0.2)) == [(0.0, "on time")]


@pytest.mark.parametrize(("stamp_ns", "why"), [
    (0, "unstamped"),
    (10_000 * MS, "stamped 9.9 s ahead of the simulation: another clock"),
])
def test_unstamped_or_foreign_clock_commands_act_on_arrival(stamp_ns: int, why: str) -> None:
    delay: CommandDelay[str] = CommandDelay(0.010, horizon_s=0.2)
    delay.push(stamp_ns, 100 * MS, why)
    assert drain(delay, 100 * MS) == [(100 * MS, why)], why


def test_a_stamp_just_ahead_of_the_simulation_waits_for_its_time() -> None:
    """Stamped 50 ms ahead (within the horizon, e.g. a /clock that lags): acts at stamp + latency."""
    delay: CommandDelay[str] = CommandDelay(0.010, horizon_s=0.2)
    delay.push(150 * MS, 100 * MS, "ahead")
    assert drain(delay, 159 * MS) == []
    assert drain(delay, 160 * MS) == [(160 * MS, "ahead")]


def test_zero_latency_acts_at_the_stamp() -> None:
    delay: CommandDelay[str] = CommandDelay(0.0, horizon_s=0.2)
    delay.push(100 * MS, 101 * MS, "x")
    assert drain(delay, 101 * MS) == [(100 * MS, "x")]


def test_a_shorter_horizon_set_later_applies_to_the_next_command() -> None:
    """The horizon follows the command timeout when that changes at run time."""
    delay: CommandDelay[str] = CommandDelay(0.010, horizon_s=0.2)
    delay.horizon_s = 0.02
    delay.push(150 * MS, 100 * MS, "now beyond the horizon")
    assert drain(delay, 100 * MS) == [(100 * MS, "now beyond the horizon")]


@pytest.mark.parametrize(("latency", "horizon"), [(-0.001, 0.2), (float("nan"), 0.2), (0.01, 0.0),
                                                  (0.01, float("inf"))])
def test_bad_settings_are_refused(latency: float, horizon: float) -> None:
    with pytest.raises(InvalidInputError, match="must be finite"):
        CommandDelay(latency, horizon_s=horizon)
