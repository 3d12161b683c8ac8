"""ArmLoopRunner without ROS, on a test clock: the braking ramp on stop, stamps that stop
advancing, unstamped lock-step joint states, and what activation forgets.

The runner is built as the ``arm_balance`` node builds it (its parameters' defaults, the
``mode``'s controller); the test plays the node: joint states, twists and timer ticks in,
what the runner returns recorded as the commands the node would publish.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from humanoid_balance.core.arm_loop import ArmLoop, ArmLoopRunner, MeasuredState, Publish
from humanoid_balance.params.arm_balance import build_controller, config_from_values

PERIOD_NS = 2_000_000  # rate 500 Hz
ARM_POSE = {"right_shoulder_pitch": -0.3, "right_elbow": 0.8, "left_shoulder_pitch": -0.3,
            "left_elbow": 0.8}


class Rig:
    """An ArmLoopRunner on a clock the test sets, with the commands it returns recorded.

    ``sent`` holds (stamp [ns], names, position, velocity, repeated) for every command the
    node would write, a repeat included (the last one again).
    """

    def __init__(self, shared_clock: bool | None = None, **overrides: Any) -> None:
        config = config_from_values(overrides)
        model, controller = build_controller(config)
        self.t_ns = 1_000_000_000_000
        self.names = list(model.joint_names)
        measured = MeasuredState(self.names, model.q_index(self.names), model.neutral(),
                                 model.position_limits(self.names))
        self.loop = ArmLoop(controller, measured, config.loop_config())
        self.warnings: list[tuple[str, str]] = []
        self.runner = ArmLoopRunner(
            self.loop, measured, lock_step=config.lock_step,
            shared_clock=not config.lock_step if shared_clock is None else shared_clock,
            start_ns=self.t_ns, linger_s=2.0 / config.diagnostics_rate_hz,
            warn=lambda key, text: self.warnings.append((key, text)),
            monotonic=lambda: self.t_ns * 1e-9)
        self.sent: list[tuple[int, tuple[str, ...], np.ndarray, np.ndarray, bool]] = []
        self.positions = np.array([ARM_POSE.get(n, 0.0) for n in self.names])

    def record(self, out: Publish | None) -> None:
        if out is None:
            return
        if out.result is None:
            last = self.sent[-1]
            self.sent.append((out.stamp_ns, last[1], last[2], last[3], True))
        else:
            r = out.result
            self.sent.append((out.stamp_ns, tuple(r.names), np.array(r.position),
                              np.array(r.velocity), False))

    def joint_state(self, stamp_ns: int) -> None:
        self.record(self.runner.joint_states(self.t_ns, stamp_ns, tuple(self.names),
                                             self.positions.copy()))

    def twist(self, vx: float) -> None:
        self.runner.job_twist(self.t_ns, (vx, 0.0, 0.0, 0.0, 0.0, 0.0), "W")

    def tick(self) -> None:
        self.record(self.runner.tick(self.t_ns))

    def stop(self, reason: str) -> None:
        """The node's stop: every hold of the ramp, stamped as it sends them."""
        for hold in self.runner.stop(reason):
            self.record(Publish(self.runner.stamp_ns(hold, self.t_ns), hold))

    def accelerations(self, names: tuple[str, ...]) -> np.ndarray:
        limits = self.loop.controller.arm_limits
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
def timer() -> Rig:
    return Rig()


@pytest.fixture
def lock_step() -> Rig:
    return Rig(trigger="joint_states")


def _move(d: Rig, cycles: int, stamped: bool = False) -> None:
    """``cycles`` periods with fresh joint states and a 0.3 m/s twist (timer: a tick each)."""
    for _ in range(cycles):
        d.twist(0.3)
        d.joint_state(d.t_ns)
        if not stamped:
            d.tick()
        d.t_ns += PERIOD_NS


def test_stop_while_moving_sends_the_braking_ramp(timer: Rig) -> None:
    """stop (deactivate, shutdown, the node destroyed on SIGINT/SIGTERM) while moving: the braking
    ramp, within the acceleration limits, to zero velocity."""
    d = timer
    d.runner.activate()
    _move(d, 100)
    moving = len(d.sent)
    assert np.abs(d.sent[-1][3]).max() > 0.3
    d.stop("shutdown")
    ramp = d.sent[moving - 1:]
    assert len(ramp) > 2 and not np.any(ramp[-1][3])
    assert d.steps_within_limits(ramp)
    assert not d.runner.active


def test_an_inactive_runner_sends_nothing_on_stop(timer: Rig) -> None:
    """Configured, never activated: stop commands nothing; ticks command nothing either."""
    d = timer
    d.joint_state(d.t_ns)
    d.tick()
    d.stop("shutdown")
    assert d.sent == []


def test_stamps_that_stop_advancing_hold_the_arms(lock_step: Rig) -> None:
    """trigger joint_states: a repeated stamp is answered by the last command only within
    joint_state_timeout (by arrival); after that the arms hold, one hold step per period of
    arrivals, within the acceleration limits, to zero; the problem is named."""
    d = lock_step
    d.runner.activate()
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
    assert "stamps stopped advancing" in d.loop.problems["joint_states_input"]
    assert "older than joint_state_timeout" in d.loop.problems["joint_states"]


def test_hold_steps_keep_to_the_period_when_frozen_stamps_come_faster(lock_step: Rig) -> None:
    """Frozen stamps arriving every 0.5 ms: still one hold step per 2 ms period (the rest repeat)."""
    d = lock_step
    d.runner.activate()
    _move(d, 100, stamped=True)
    stamp = d.t_ns - PERIOD_NS
    d.t_ns += 60_000_000  # past the timeout
    moving = len(d.sent)
    for _ in range(400):  # 0.2 s
        d.t_ns += PERIOD_NS // 4
        d.joint_state(stamp)
    fresh = [c for c in d.sent[moving:] if not c[4]]
    assert 0 < len(fresh) <= 100 + 1


def test_unstamped_joint_states_are_refused_in_lock_step(lock_step: Rig) -> None:
    """trigger joint_states, wall clock: stamp-0 joint states start no cycle and get no answer;
    the reason is named."""
    d = lock_step
    d.runner.activate()
    d.twist(0.3)
    for _ in range(50):
        d.joint_state(0)
        d.t_ns += PERIOD_NS
    assert d.sent == [] and d.loop.cycles == 0
    assert d.loop.problems["joint_states_input"].startswith(
        "joint states unstamped (stamp 0): trigger joint_states needs")
    assert ("joint_states_input", d.loop.problems["joint_states_input"]) in d.warnings


def test_unstamped_joint_states_after_stamped_ones_hold(lock_step: Rig) -> None:
    """The driver's stamps drop to 0 while commanding: not fresh measurements, the arms hold."""
    d = lock_step
    d.runner.activate()
    _move(d, 100, stamped=True)
    for _ in range(500):
        d.twist(0.3)
        d.joint_state(0)
        d.t_ns += PERIOD_NS
    assert not np.any(d.sent[-1][3])


def test_activation_drops_the_job_input_and_starts_from_the_measured_positions(
        timer: Rig) -> None:
    """Deactivated, the elbow moved 0.5 rad, activated again at once: the first command starts at
    the measured positions at rest (within a dt of acceleration), the job twist of before moves
    nothing."""
    d = timer
    d.runner.activate()
    _move(d, 100)
    d.stop("deactivated")
    held = dict(zip(d.sent[-1][1], d.sent[-1][2], strict=True))
    for k, name in enumerate(d.names):
        d.positions[k] = held.get(name, d.positions[k])
    d.positions[d.names.index("right_elbow")] -= 0.5
    d.t_ns += PERIOD_NS
    d.runner.activate()
    d.tick()  # no joint state since the activation: nothing
    count = len(d.sent)
    d.t_ns += PERIOD_NS
    d.joint_state(d.t_ns)
    d.tick()
    assert len(d.sent) == count + 1
    _, names, position, velocity, _ = d.sent[-1]
    measured = dict(zip(d.names, d.positions, strict=True))
    # from rest at the measured positions: one period at most at the acceleration limit moves a
    # joint a dt^2 / 2 (the aux arm's posture task starts moving; noise-free joint states)
    dt, accel = PERIOD_NS * 1e-9, d.accelerations(names)
    assert np.all(np.abs(position - [measured[n] for n in names]) <= accel * dt**2 / 2 + 1e-12)
    assert np.all(np.abs(velocity) <= accel * dt + 1e-12)
    assert not np.any(velocity[:7])  # the job arm: no job input


def test_a_stopped_hold_is_stamped_on_the_cycles_grid(timer: Rig) -> None:
    """Every hold of the stop ramp is stamped a nominal period after the one before, from the
    last command's stamp (the runner's seconds back to the node clock's nanoseconds)."""
    d = timer
    d.runner.activate()
    _move(d, 20)
    last, count = d.sent[-1][0], len(d.sent)
    d.stop("deactivated")
    stamps = [c[0] for c in d.sent[count:]]
    assert len(stamps) > 2 and stamps[0] == last + PERIOD_NS
    assert np.all(np.diff(stamps) == PERIOD_NS)


def test_parameter_changes_are_applied_before_each_cycle(timer: Rig) -> None:
    """The runner calls before_cycle with the cycle's time [s] before each cycle, none while
    inactive."""
    d = timer
    seen: list[float] = []
    runner = ArmLoopRunner(d.loop, d.runner.measured, lock_step=False, shared_clock=True,
                           start_ns=d.t_ns, linger_s=0.2, warn=lambda key, text: None,
                           before_cycle=seen.append)
    runner.tick(d.t_ns)  # inactive: no cycle
    assert seen == []
    runner.activate()
    for k in range(3):
        runner.tick(d.t_ns + k * PERIOD_NS)
    assert seen == pytest.approx([0.0, 0.002, 0.004], abs=1e-12)


def test_a_standing_hold_is_not_sent_again(timer: Rig) -> None:
    """Joint states gone: the arms hold, decelerate and stand still; then a tick sends nothing."""
    d = timer
    d.runner.activate()
    _move(d, 5)
    for _ in range(200):
        d.tick()
        d.t_ns += PERIOD_NS
    count = len(d.sent)
    assert not np.any(d.sent[-1][3])
    d.tick()
    assert len(d.sent) == count


def test_after_the_clock_went_back_the_held_command_is_not_repeated(lock_step: Rig) -> None:
    """Held to rest (the stamps stopped), then the node clock goes back (a simulation restarted)
    with no joint state on the new clock yet: the held command is not sent again (it is where
    the old robot was held: tools/chaos.py saw the restarted simulation's arm sent 0.85 rad);
    the first joint state of the new clock is commanded from where it measures."""
    d = lock_step
    d.runner.activate()
    _move(d, 100, stamped=True)
    stamp = d.t_ns - PERIOD_NS
    for _ in range(200):  # frozen stamps: held to rest
        d.t_ns += PERIOD_NS
        d.joint_state(stamp)
    assert not np.any(d.sent[-1][3])
    sent = len(d.sent)
    d.t_ns = PERIOD_NS  # the clock back to the restarted simulation's
    d.record(d.runner.tick(d.t_ns, stamp))
    assert len(d.sent) == sent
    d.positions[d.names.index("right_elbow")] += 0.5  # the new robot elsewhere
    d.joint_state(d.t_ns)
    assert len(d.sent) == sent + 1 and not d.sent[-1][4]
    names = d.sent[-1][1]
    measured = d.positions[[d.names.index(n) for n in names]]
    # one step from the measured positions at rest: within the acceleration limits' dt^2
    assert np.all(np.abs(d.sent[-1][2] - measured) <= d.accelerations(names) * (PERIOD_NS * 1e-9) ** 2)


def test_held_still_a_refused_joint_state_is_not_answered() -> None:
    """trigger joint_states on the simulation's clock (stamps and node clock compared), held to
    rest: joint states then stamped far behind the node clock (a restarted simulation's, come
    before its /clock) are refused and not answered with the held command, which the new
    simulation applies at once (another clock) and which sent its arm 0.69 rad (tools/chaos.py)."""
    d = Rig(shared_clock=True, trigger="joint_states")
    d.runner.activate()
    _move(d, 100, stamped=True)
    stamp = d.t_ns - PERIOD_NS
    for _ in range(200):  # frozen stamps: held to rest
        d.t_ns += PERIOD_NS
        d.joint_state(stamp)
    assert not np.any(d.sent[-1][3])
    sent = len(d.sent)
    for k in range(50):  # the restarted simulation's, stamped from 2 ms
        d.t_ns += PERIOD_NS
        d.joint_state((k + 1) * PERIOD_NS)
    assert len(d.sent) == sent
    assert "behind the node clock" in d.loop.problems["joint_states_input"]
