"""The lock-step wait of the simulation (humanoid_balance.sim.lock_step), without DDS."""

from __future__ import annotations

import threading
import time

import pytest

from humanoid_balance.exceptions import ConfigurationError
from humanoid_balance.sim.lock_step import LockStepGate, LockStepTopic, parse_lock_step_topics

ARM = "/arm_balance/command"
JOB = "/demo/job"


def test_an_entry_names_a_topic_and_its_type() -> None:
    """'topic:package/msg/Type' parses into the topic and the type."""
    topic = LockStepTopic.parse(" /arm_balance/command:sensor_msgs/msg/JointState ")
    assert topic == LockStepTopic(ARM, "sensor_msgs/msg/JointState")


def test_a_malformed_entry_is_refused_with_the_expected_form() -> None:
    """An entry without a type is refused, saying what form is expected."""
    with pytest.raises(ConfigurationError) as info:
        LockStepTopic.parse("/arm_balance/command")
    assert str(info.value) == (
        "lock_step_topics entry '/arm_balance/command' is not 'topic:package/msg/Type' "
        "(e.g. '/arm_balance/command:sensor_msgs/msg/JointState')")


def test_empty_entries_are_skipped_and_a_repeated_topic_refused() -> None:
    """'' entries (the parameter's default) are none; the same topic twice is refused."""
    assert parse_lock_step_topics([""]) == []
    with pytest.raises(ConfigurationError) as info:
        parse_lock_step_topics([f"{ARM}:sensor_msgs/msg/JointState"] * 2)
    assert str(info.value) == f"lock_step_topics names ['{ARM}'] more than once"


def test_a_type_without_a_header_is_refused() -> None:
    """std_msgs/msg/Float64 has no header to pair with a period: refused."""
    with pytest.raises(ConfigurationError) as info:
        LockStepTopic("/x", "std_msgs/msg/Float64").message_class()
    assert "std_msgs/msg/Float64 has no header" in str(info.value)


def test_an_answer_already_there_ends_the_wait_at_once() -> None:
    """Every topic answered period t (stamp >= t): the wait returns no late topic, no miss."""
    gate = LockStepGate([ARM, JOB])
    gate.publishing(3_000_000)
    gate.deliver(ARM, 2_000_000)
    gate.deliver(JOB, 3_000_000)
    assert gate.wait(2_000_000, timeout_s=30.0) == []
    assert gate.misses == {ARM: 0, JOB: 0} and gate.periods == 1


def test_a_late_topic_is_named_and_counted_after_the_timeout() -> None:
    """Only the topic without an answer for t is returned and counted as a miss."""
    gate = LockStepGate([ARM, JOB])
    gate.publishing(4_000_000)
    gate.deliver(ARM, 4_000_000)
    gate.deliver(JOB, 2_000_000)  # the previous period's answer
    assert gate.wait(4_000_000, timeout_s=0.05) == [JOB]
    assert gate.misses == {ARM: 0, JOB: 1}


def test_a_delivery_from_another_thread_ends_the_wait() -> None:
    """The answer arriving while the physics thread waits releases it before the timeout."""
    gate = LockStepGate([ARM])
    gate.publishing(6_000_000)
    timer = threading.Timer(0.05, gate.deliver, args=(ARM, 6_000_000))
    timer.start()
    started = time.monotonic()
    late = gate.wait(6_000_000, timeout_s=30.0)
    timer.join()
    assert late == [] and time.monotonic() - started < 30.0
    assert gate.misses == {ARM: 0}


def test_an_older_answer_never_lowers_the_newest_stamp() -> None:
    """A stale message after a newer one leaves the topic answered up to the newer stamp."""
    gate = LockStepGate([ARM])
    gate.publishing(10)
    gate.deliver(ARM, 10)
    gate.deliver(ARM, 4)
    assert gate.latest(ARM) == 10
    assert gate.late(10) == [] and gate.late(11) == [ARM]


def test_an_answer_stamped_beyond_the_published_period_is_refused() -> None:
    """An answer stamped ahead of every period published (wall time, a stamp from an earlier
    run) is refused and counted: the next period still waits, and misses when unanswered.
    Before, it satisfied every later period: 1000 unanswered periods passed in 3 ms, no miss."""
    gate = LockStepGate([ARM])
    assert not gate.deliver(ARM, 5_000_000_000)  # before anything was published
    gate.publishing(1_000_000)
    assert not gate.deliver(ARM, 1_700_000_000 * 10**9)  # wall time
    assert gate.ahead == {ARM: 2} and gate.latest(ARM) is None
    assert gate.wait(1_000_000, timeout_s=0.01) == [ARM] and gate.misses == {ARM: 1}
    assert gate.deliver(ARM, 1_000_000)
    gate.publishing(2_000_000)
    assert gate.wait(2_000_000, timeout_s=0.01) == [ARM] and gate.misses == {ARM: 2}


def test_the_start_up_wait_counts_no_miss() -> None:
    """count_misses=False (waiting for the first answers) leaves the counters alone."""
    gate = LockStepGate([ARM])
    assert gate.wait(0, timeout_s=0.01, count_misses=False) == [ARM]
    assert gate.misses == {ARM: 0} and gate.periods == 0


def test_close_wakes_a_waiter_and_later_waits_return_at_once() -> None:
    """close() (shutdown) ends a wait in progress and every later one, without misses."""
    gate = LockStepGate([ARM])
    timer = threading.Timer(0.05, gate.close)
    timer.start()
    started = time.monotonic()
    assert gate.wait(2_000_000, timeout_s=30.0) == []
    timer.join()
    assert time.monotonic() - started < 30.0
    assert gate.closed and gate.wait(4_000_000, timeout_s=30.0) == []
    assert gate.misses == {ARM: 0}
