"""arm_balance's callbacks called directly on a test clock: the braking ramp on destroy, stamps that
stop advancing, unstamped lock-step joint states, and what activation forgets."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.ros

PERIOD_NS = 2_000_000  # rate 500 Hz
ARM_POSE = {"right_shoulder_pitch": -0.3, "right_elbow": 0.8, "left_shoulder_pitch": -0.3,
            "left_elbow": 0.8}


class Direct:
    """An ArmBalanceNode whose clock the test sets and whose commands it records.

    ``sent`` holds (stamp [ns], names, position, velocity, repeated) for every command
    written, a repeat included (it writes the last one again).
    """

    def __init__(self, context: Any, **overrides: Any) -> None:
        from rclpy.lifecycle import TransitionCallbackReturn
        from rclpy.parameter import Parameter

        from humanoid_balance.nodes.arm_balance import ArmBalanceNode

        self.t_ns = 1_000_000_000_000
        self.node = ArmBalanceNode(context=context, parameter_overrides=[
            Parameter(k, value=v) for k, v in overrides.items()])
        self.node._now_ns = lambda: self.t_ns  # type: ignore[method-assign]
        assert self.node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        self.sent: list[tuple[int, tuple[str, ...], np.ndarray, np.ndarray, bool]] = []
        commands = self.node.commands
        publish, repeat = commands.publish, commands.repeat

        def record(stamp: int, names: Any, position: Any, velocity: Any) -> None:
            self.sent.append((stamp, tuple(names), np.array(position), np.array(velocity), False))
            publish(stamp, names, position, velocity)

        def again(stamp: int) -> None:
            last = self.sent[-1]
            self.sent.append((stamp, last[1], last[2], last[3], True))
            repeat(stamp)

        commands.publish, commands.repeat = record, again
        names = list(self.node.measured.joint_names)
        self.names = names
        self.positions = np.array([ARM_POSE.get(n, 0.0) for n in names])

    def joint_state(self, stamp_ns: int) -> None:
        from sensor_msgs.msg import JointState

        msg = JointState(name=self.names, position=[float(v) for v in self.positions])
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
        self.node._on_joint_states(msg)

    def twist(self, vx: float) -> None:
        from geometry_msgs.msg import TwistStamped

        msg = TwistStamped()
        msg.header.frame_id = "W"
        msg.twist.linear.x = vx
        self.node._on_twist(msg)

    def accelerations(self, names: tuple[str, ...]) -> np.ndarray:
        limits = self.node.loop.controller.arm_limits
        index = {n: k for k, n in enumerate(limits.names)}
        return limits.acceleration[[index[n] for n in names]]

    def steps_within_limits(self, sent: list[Any]) -> bool:
        """Velocity steps between consecutive commands within a_max times their stamps' whole
        periods (at least one): float rounding only, 1e-12 rad/s."""
        velocities = np.vstack([c[3] for c in sent])
        periods = np.maximum(np.round(np.diff([c[0] for c in sent]) / PERIOD_NS), 1.0)
        bound = np.outer(periods, self.accelerations(sent[0][1])) * PERIOD_NS * 1e-9 + 1e-12
        return bool(np.all(np.abs(np.diff(velocities, axis=0)) <= bound))


@pytest.fixture
def timer(rclpy_context: Any) -> Iterator[Direct]:
    d = Direct(rclpy_context)
    try:
        yield d
    finally:
        d.node.destroy_node()


@pytest.fixture
def lock_step(rclpy_context: Any) -> Iterator[Direct]:
    d = Direct(rclpy_context, trigger="joint_states")
    try:
        yield d
    finally:
        d.node.destroy_node()


def _move(d: Direct, cycles: int, stamped: bool = False) -> None:
    """``cycles`` periods with fresh joint states and a 0.3 m/s twist (timer: a cycle each)."""
    for _ in range(cycles):
        d.twist(0.3)
        d.joint_state(d.t_ns)
        if not stamped:
            d.node._cycle()
        d.t_ns += PERIOD_NS


def test_destroying_an_active_node_brakes_the_arms(timer: Direct) -> None:
    """SIGINT/SIGTERM path (run_node destroys the node, no shutdown transition): destroy_node
    sends the braking ramp, within the acceleration limits, to zero velocity."""
    d = timer
    d.node.trigger_activate()
    _move(d, 100)
    moving = len(d.sent)
    assert np.abs(d.sent[-1][3]).max() > 0.3
    d.node.destroy_node()
    ramp = d.sent[moving - 1:]
    assert len(ramp) > 2 and not np.any(ramp[-1][3])
    assert d.steps_within_limits(ramp)


def test_an_inactive_node_sends_nothing_on_destroy(timer: Direct) -> None:
    """Destroying a configured, inactive node commands nothing."""
    timer.node.destroy_node()
    assert timer.sent == []


def test_stamps_that_stop_advancing_hold_the_arms(lock_step: Direct) -> None:
    """trigger joint_states: a repeated stamp is answered by the last command only within
    joint_state_timeout (by arrival); after that the arms hold, one hold step per period of
    arrivals, within the acceleration limits, to zero; the problem is named."""
    d = lock_step
    d.node.trigger_activate()
    _move(d, 100, stamped=True)
    stamp = d.t_ns - PERIOD_NS
    moving = len(d.sent)
    assert np.abs(d.sent[-1][3]).max() > 0.3
    for _ in range(1000):  # 2 s of joint states at 500 Hz, the stamp frozen, the twist gone
        d.t_ns += PERIOD_NS
        d.joint_state(stamp)
    after = d.sent[moving:]
    assert all(c[0] == stamp for c in after)
    # the k-th frozen one arrives (k + 2) periods after the last fresh joint state: repeated while
    # younger than joint_state_timeout (0.05 s: k < 23), a hold once a period older (k = 24)
    within = round(0.05e9 / PERIOD_NS) - 2
    assert all(c[4] for c in after[:within]) and not after[within + 1][4]
    assert not np.any(after[-1][3])
    fresh = [c for c in d.sent[moving - 1:] if not c[4]]
    assert len(fresh) > 2
    # a hold step per period of arrivals: the ramp takes as many periods as its steps
    assert d.steps_within_limits([(k * PERIOD_NS, *c[1:]) for k, c in enumerate(fresh)])
    assert "stamps stopped advancing" in d.node.loop.problems["joint_states_input"]
    assert "older than joint_state_timeout" in d.node.loop.problems["joint_states"]


def test_hold_steps_keep_to_the_period_when_frozen_stamps_come_faster(lock_step: Direct) -> None:
    """Frozen stamps arriving every 0.5 ms: still one hold step per 2 ms period (the rest repeat)."""
    d = lock_step
    d.node.trigger_activate()
    _move(d, 100, stamped=True)
    stamp = d.t_ns - PERIOD_NS
    d.t_ns += 60_000_000  # past the timeout
    moving = len(d.sent)
    for _ in range(400):  # 0.2 s
        d.t_ns += PERIOD_NS // 4
        d.joint_state(stamp)
    fresh = [c for c in d.sent[moving:] if not c[4]]
    assert 0 < len(fresh) <= 100 + 1


def test_unstamped_joint_states_are_refused_in_lock_step(lock_step: Direct) -> None:
    """trigger joint_states, wall clock: stamp-0 joint states start no cycle and get no answer;
    the reason is named."""
    d = lock_step
    d.node.trigger_activate()
    d.twist(0.3)
    for _ in range(50):
        d.joint_state(0)
        d.t_ns += PERIOD_NS
    assert d.sent == [] and d.node.loop.cycles == 0
    assert d.node.loop.problems["joint_states_input"].startswith(
        "joint states unstamped (stamp 0): trigger joint_states needs")


def test_unstamped_joint_states_after_stamped_ones_hold(lock_step: Direct) -> None:
    """The driver's stamps drop to 0 while commanding: not fresh measurements, the arms hold."""
    d = lock_step
    d.node.trigger_activate()
    _move(d, 100, stamped=True)
    for _ in range(500):
        d.twist(0.3)
        d.joint_state(0)
        d.t_ns += PERIOD_NS
    assert not np.any(d.sent[-1][3])


def test_activation_drops_the_job_input_and_starts_from_the_measured_positions(
        timer: Direct) -> None:
    """Deactivated, the elbow moved 0.5 rad, activated again at once: the first command starts at
    the measured positions at rest (within a dt of acceleration), the job twist of before moves
    nothing."""
    d = timer
    d.node.trigger_activate()
    _move(d, 100)
    d.node.trigger_deactivate()
    held = dict(zip(d.sent[-1][1], d.sent[-1][2], strict=True))
    for k, name in enumerate(d.names):
        d.positions[k] = held.get(name, d.positions[k])
    d.positions[d.names.index("right_elbow")] -= 0.5
    d.t_ns += PERIOD_NS
    d.node.trigger_activate()
    d.node._cycle()  # no joint state since the activation: nothing
    count = len(d.sent)
    d.t_ns += PERIOD_NS
    d.joint_state(d.t_ns)
    d.node._cycle()
    assert len(d.sent) == count + 1
    _, names, position, velocity, _ = d.sent[-1]
    measured = dict(zip(d.names, d.positions, strict=True))
    # from rest at the measured positions: one period at most at the acceleration limit moves a
    # joint a dt^2 / 2 (the aux arm's posture task starts moving; noise-free joint states)
    dt, accel = PERIOD_NS * 1e-9, d.accelerations(names)
    assert np.all(np.abs(position - [measured[n] for n in names]) <= accel * dt**2 / 2 + 1e-12)
    assert np.all(np.abs(velocity) <= accel * dt + 1e-12)
    assert not np.any(velocity[:7])  # the job arm: no job input
