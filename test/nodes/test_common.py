"""Small pieces of humanoid_balance.nodes.common that need no DDS."""

from __future__ import annotations

import itertools
import time

import pytest

from humanoid_balance.nodes.common import LogThrottle, joint_state_sample, read_float64


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


class LoggingNode:
    """Stands in for an rclpy node: get_logger() gives a :class:`RecordingLogger`."""

    def __init__(self) -> None:
        self.logger = RecordingLogger()

    def get_logger(self) -> RecordingLogger:
        return self.logger


def _in_a_thread(priorities: list[int]) -> tuple[list[bool], list[int], list[tuple[str, str]]]:
    """Run set_thread_priority with each priority in a fresh thread (never pytest's own):
    what each call returned, the thread's policy after each, what was logged."""
    import os
    import threading

    from humanoid_balance.nodes.common import set_thread_priority

    node, held, policies = LoggingNode(), [], []

    def run() -> None:
        for priority in priorities:
            held.append(set_thread_priority(node, priority, "the test thread"))  # type: ignore[arg-type]
            policies.append(os.sched_getscheduler(0))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return held, policies, node.logger.lines


def test_thread_priority_goes_to_sched_fifo_and_back_or_says_how_to_allow_it() -> None:
    """Priority 20 puts the calling thread under SCHED_FIFO, 0 back to SCHED_OTHER; where the
    system refuses (no rtprio limit, no CAP_SYS_NICE) one warning names the fix and the thread
    stays at normal scheduling."""
    import os

    held, policies, lines = _in_a_thread([20, 0])
    if held[0]:
        assert policies == [os.SCHED_FIFO, os.SCHED_OTHER] and held == [True, True] and not lines
    else:
        assert policies == [os.SCHED_OTHER, os.SCHED_OTHER] and held == [False, True]
        assert len(lines) == 1 and "SCHED_FIFO 20 refused" in lines[0][1] and \
            "rtprio" in lines[0][1]


def test_priority_zero_leaves_a_normal_thread_alone() -> None:
    import os

    assert _in_a_thread([0]) == ([True], [os.SCHED_OTHER], [])


def test_a_refused_priority_warns_with_the_fix_and_keeps_normal_scheduling(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What a user without an rtprio limit meets (the system's refusal stood in for)."""
    import os

    def refuse(*args: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "sched_setscheduler", refuse)
    held, policies, lines = _in_a_thread([20])
    assert held == [False] and policies == [os.SCHED_OTHER]
    assert lines == [("warning", "the test thread stays at normal priority: SCHED_FIFO 20 refused "
                      "([Errno 1] Operation not permitted); give the user an rtprio limit "
                      "(/etc/security/limits.conf) or CAP_SYS_NICE")]


def test_clock_ns_reads_the_clock_as_now_does_simulation_time_included() -> None:
    """clock_ns is now().nanoseconds: the system time, and a ROS clock's /clock override."""
    from rclpy.clock import Clock, ClockType, ROSClock
    from rclpy.time import Time
    from rclpy.time_source import TimeSource

    from humanoid_balance.nodes.common import clock_ns

    before = time.time_ns()
    read = clock_ns(Clock(clock_type=ClockType.SYSTEM_TIME))
    assert before <= read <= time.time_ns()

    clock = ROSClock()
    source = TimeSource()
    source.attach_clock(clock)
    source.ros_time_is_active = True  # as use_sim_time does
    clock.set_ros_time_override(Time(nanoseconds=1_234_567_891, clock_type=ClockType.ROS_TIME))
    assert clock_ns(clock) == clock.now().nanoseconds == 1_234_567_891
    source.ros_time_is_active = False
    before = time.time_ns()
    assert before <= clock_ns(clock) <= time.time_ns()


def test_raw_inputs_read_as_their_message_objects() -> None:
    """A node's raw inputs read the same from CDR bytes and from the message object: a
    JointState's fields and a Float64's value."""
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64

    from humanoid_balance import cdr

    msg = JointState(name=["right_elbow", "right_wrist_pitch"], velocity=[0.5, -0.25])
    msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id = 3, 7, "base"
    data = serialize_message(msg)
    for given in (data, msg):
        sample = joint_state_sample(cdr.JointStateReader(), given)
        assert (sample.stamp_ns, sample.frame_id, sample.names) == \
            (3_000_000_007, "base", ("right_elbow", "right_wrist_pitch"))
        assert sample.velocity.tolist() == [0.5, -0.25]
        assert sample.position.size == 0 and sample.effort.size == 0
    margin = Float64(data=-0.0125)
    assert read_float64(serialize_message(margin)) == read_float64(margin) == -0.0125


class CountedPublisher:
    """Stands in for an rclpy publisher: a topic name and a subscription count."""

    def __init__(self, topic_name: str, count: int = 0) -> None:
        self.topic_name = topic_name
        self.count = count
        self.asked = 0

    def get_subscription_count(self) -> int:
        self.asked += 1
        return self.count


def test_listeners_serve_what_is_subscribed_and_look_again_after_the_period() -> None:
    """Until the first look every publisher counts as heard; a look keeps those with a
    subscriber; the counts are read at most once per period; a new subscriber is seen
    at the next look."""
    from humanoid_balance.nodes.common import Listeners

    heard_pub, unheard_pub = CountedPublisher("/a", 1), CountedPublisher("/b", 0)
    listeners = Listeners((heard_pub, None, unheard_pub), period_s=0.05)
    assert listeners.unheard() == "none"  # before the first look: everything is written
    assert listeners.heard() == frozenset({heard_pub})
    assert listeners.unheard() == "/b"
    for _ in range(100):
        listeners.heard()
    assert (heard_pub.asked, unheard_pub.asked) == (1, 1)  # one look in the period
    unheard_pub.count = 2
    assert unheard_pub not in listeners.heard()
    time.sleep(0.06)
    assert listeners.heard() == frozenset({heard_pub, unheard_pub})
    assert listeners.unheard() == "none"


def test_periodic_thread_keeps_its_period_and_goes_on_after_an_error() -> None:
    """Calls come a period apart on the monotonic clock; one that raises goes to on_error and
    the next comes; set_period applies at once; after stop no call comes."""
    from humanoid_balance.nodes.common import PeriodicThread

    calls: list[float] = []
    errors: list[Exception] = []

    def callback() -> None:
        calls.append(time.monotonic())
        if len(calls) == 2:
            raise RuntimeError("publisher gone")

    started = time.monotonic()
    thread = PeriodicThread("test-periodic", 0.05, callback, errors.append)
    try:
        time.sleep(0.33)
        thread.set_period(0.01)
        changed = time.monotonic()
        time.sleep(0.1)
    finally:
        thread.stop()
    stopped = len(calls)
    time.sleep(0.05)
    slow = [t for t in calls if t < changed]
    gaps = [b - a for a, b in itertools.pairwise([started, *slow])]
    assert [str(e) for e in errors] == ["publisher gone"]
    assert 4 <= len(slow) <= 7 and max(gaps) < 0.1, gaps  # 0.05 s apart (a loaded machine: +50 ms)
    assert len(calls) - len(slow) >= 4  # 0.01 s apart from the change on
    assert len(calls) == stopped


@pytest.mark.parametrize(("state", "message"), [
    ("unconfigured", "waist_controller is unconfigured: configure and activate it"),
    ("inactive", "waist_controller is inactive: activate it"),
    ("finalized", "waist_controller is finalized: it was shut down; start its process again"),
    ("activating", "waist_controller is activating: wait for its transition to end"),
])
def test_lifecycle_refusal_names_the_state_and_a_remedy_that_exists(state: str,
                                                                     message: str) -> None:
    """Each lifecycle state's refusal names the state and the transition (or restart) it needs."""
    from humanoid_balance.nodes.common import lifecycle_refusal

    assert lifecycle_refusal("waist_controller", state) == message



def test_read_float64_reads_big_endian_and_refuses_what_cdr_refuses() -> None:
    """The node-side read of a ``Float64``: big-endian bytes read by the package's reader (rclpy
    is never given bytes: it prints to stderr from C for each malformed one); bytes the reader
    refuses raise InvalidInputError, the node's drop."""
    import struct

    from humanoid_balance.exceptions import InvalidInputError
    from humanoid_balance.nodes.common import read_float64

    assert read_float64(b"\x00\x00\x00\x00" + struct.pack(">d", 2.5)) == 2.5
    for data in (b"\x00\x01\x00\x01", b"\x00\x01\x00\x00\x01", b"\x00\x00\x00\x03",
                 b"\x00\x00\x00\x00\x00"):
        with pytest.raises(InvalidInputError):
            read_float64(data)
