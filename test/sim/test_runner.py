"""The simulation runner (humanoid_balance.sim.runner) without ROS: commands, holds, lock-step,
pacing and stopping, run in this thread against a fake host and a fake wall clock."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import mujoco
import numpy as np
import pytest

from humanoid_balance.exceptions import SimulationError
from humanoid_balance.params.mujoco_sim import MujocoSimConfig, config_from_values
from humanoid_balance.sim.lock_step import LockStepTopic
from humanoid_balance.sim.models import build_simulation, simulation_for
from humanoid_balance.sim.robot import MujocoRobotSim
from humanoid_balance.sim.runner import OK, WARN, Period, SimHost, SimRunner, WallClock

JOINT = "joint1"  # the lunar arm's: velocity limit 1 rad/s
ANSWER = "/arm_balance/command"


class FakeClock(WallClock):
    """A wall clock that moves only when the runner waits (or the test says so)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waited_s = 0.0

    def now_s(self) -> float:
        return self.now

    def wait_s(self, seconds: float, stop: threading.Event) -> bool:
        self.now += seconds
        self.waited_s += seconds
        return stop.is_set()


class Host(SimHost):
    """Records the periods and the log; ``on_period`` answers a period (as the nodes would)."""

    def __init__(self) -> None:
        self.periods: list[Period] = []
        self.logs: list[tuple[str, str]] = []
        self.configs: list[MujocoSimConfig] = []
        self.on_period: Callable[[Period], None] | None = None
        self.publishing = True

    def publish_period(self, period: Period) -> bool:
        self.periods.append(period)
        if self.on_period is not None:
            self.on_period(period)
        return self.publishing

    def log(self, level: str, text: str, throttle_s: float = 0.0) -> None:
        self.logs.append((level, text))

    def take_config(self) -> MujocoSimConfig | None:
        return self.configs.pop(0) if self.configs else None


@pytest.fixture(scope="module")
def arm() -> MujocoRobotSim:
    """The lunar arm, noise-free (each runner resets it)."""
    return simulation_for(MujocoSimConfig.defaults(model="lunar_arm", sensor_noise=0.0))


def make(sim: MujocoRobotSim, clock: WallClock | None = None, **changes: Any) -> tuple[SimRunner, Host]:
    """A runner of ``sim`` on the defaults with ``changes`` (config fields), and its host."""
    host = Host()
    config = MujocoSimConfig.defaults(model="lunar_arm", sensor_noise=0.0, **changes)
    return SimRunner(sim, config, host, clock or FakeClock()), host


def position(runner: SimRunner, joint: str = JOINT) -> float:
    return float(runner.sim.joint_state().position[runner.sim.joint_names.index(joint)])


def steps(runner: SimRunner, seconds: float) -> list[Period]:
    periods = [runner.step() for _ in range(round(seconds / runner.sim.timestep))]
    return [p for p in periods if p is not None]


def send(runner: SimRunner, stamp_s: float, position: float | None = None,
         velocity: float | None = None, joint: str = JOINT) -> str | None:
    return runner.command(round(stamp_s * 1e9), (joint,),
                          None if position is None else np.array([position]),
                          None if velocity is None else np.array([velocity]))


# --- building the simulation ---------------------------------------------------------------


@pytest.mark.parametrize("model", ["lunar_arm", "space_robot"])
def test_the_other_seed_robots_simulate(model: str) -> None:
    """build_simulation makes the lunar arm (efforts as k_e I) and the floating space robot; they step."""
    sim = build_simulation(model, None, timestep=0.001, gravity=None, friction=0.3, joint_friction=0.0,
                           sensor_noise=0.0, seed=0)
    sim.reset()
    sim.step(100)
    state = sim.joint_state()
    assert len(state.names) == 6 and np.all(np.isfinite(state.position))
    assert sim.floating_base == (model == "space_robot")
    if model == "lunar_arm":
        assert type(sim).__name__ == "LunarArmSim"


@pytest.mark.parametrize("model", ["humanoid", "lunar_arm", "space_robot"])
def test_every_model_takes_the_integrator_asked(model: str) -> None:
    """``integrator``: ``rk4`` reaches MuJoCo for each robot (at 0.25 ms, the strike's step)."""
    sim = build_simulation(model, None, timestep=0.00025, gravity=None, friction=0.3,
                           joint_friction=0.0, sensor_noise=0.0, seed=0, integrator="rk4")
    assert sim.integrator == "rk4"
    assert sim.model.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4


def test_the_config_converts_the_parameters_once() -> None:
    """gravity -1 is the model's default (None); initial joints pair with their positions; '' is none."""
    config = config_from_values({"gravity": -1.0, "initial_joint_names": ["joint2", ""],
                                 "initial_joint_positions": [0.5], "urdf_path": ""})
    assert (config.gravity_m_s2, config.initial_positions_rad, config.urdf_path) == (
        None, (("joint2", 0.5),), None)


def test_a_lock_step_topic_of_another_type_than_its_command_topic_is_refused() -> None:
    """A topic both a command topic and a lock-step topic must be a JointState."""
    from humanoid_balance.exceptions import ConfigurationError

    with pytest.raises(ConfigurationError) as info:
        config_from_values({"lock_step_topics": [f"{ANSWER}:std_msgs/msg/Header"]})
    assert str(info.value) == (f"{ANSWER} is a command topic (sensor_msgs/msg/JointState) and a "
                               "lock-step topic of type std_msgs/msg/Header: give it one type")


def test_reset_puts_the_initial_joints_in_place_at_rest(arm: MujocoRobotSim) -> None:
    """The initial positions are where the runner starts, and again after reset."""
    runner, _ = make(arm, initial_positions_rad=(("joint2", 0.4),))
    assert position(runner, "joint2") == pytest.approx(0.4, abs=1e-12)
    steps(runner, 0.05)
    runner.reset()
    assert (runner.sim.time, position(runner, "joint2")) == (0.0, pytest.approx(0.4, abs=1e-12))


# --- commands ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("names", "positions", "velocities", "problem"), [
    ((), [], None, "a command names no joint"),
    ((JOINT,), None, None, "a command has neither position nor velocity"),
    ((JOINT, "no_such_joint"), [1.0, 1.0], None,
     "a command names joints the model does not have: ['no_such_joint']"),
    ((JOINT,), [math.nan], None, "a command has a non-finite position"),
    ((JOINT,), None, [math.inf], "a command has a non-finite velocity"),
    ((JOINT,), [1.0, 2.0], None, "a command has 2 position values for 1 names"),
])
def test_a_bad_command_is_refused_with_its_reason_and_the_simulation_runs_on(
        arm: MujocoRobotSim, names: tuple[str, ...], positions: list[float] | None,
        velocities: list[float] | None, problem: str) -> None:
    """Unknown joints, NaN, mismatched lengths: refused and counted, nothing moves; a good
    command then moves the joint."""
    runner, _ = make(arm)
    def as_array(values: list[float] | None) -> np.ndarray | None:
        return None if values is None else np.array(values, dtype=float)

    assert runner.command(0, names, as_array(positions), as_array(velocities)) == problem
    steps(runner, 0.1)
    assert (runner.commands_rejected, runner.last_rejection) == (1, problem)
    assert abs(position(runner)) < 1e-3
    assert send(runner, 0.0, position=0.2) is None
    steps(runner, 0.4)
    assert position(runner) == pytest.approx(0.2, abs=0.01)
    assert runner.commands_applied == 1


def test_a_command_stamped_in_the_past_acts_as_of_its_stamp(arm: MujocoRobotSim) -> None:
    """A position and velocity stamped 0.1 s back take the position its velocity has reached
    since (0.02 rad further than acting from its arrival); the delay is reported in ms."""
    runner, _ = make(arm, command_timeout_s=0.5)
    steps(runner, 0.2)
    stamp = runner.sim.time - 0.1
    send(runner, stamp, position=0.0, velocity=0.2)
    steps(runner, 0.2)
    assert position(runner) == pytest.approx(0.2 * (runner.sim.time - stamp), abs=0.005)
    values = runner.status().values
    assert (values["command_delay_ms_mean"], values["command_delay_ms_max"]) == (
        pytest.approx(100.0, abs=1e-6), pytest.approx(100.0, abs=1e-6))


def test_a_command_older_than_the_timeout_is_refused_and_the_joint_holds(arm: MujocoRobotSim) -> None:
    """A joint moving at 0.5 rad/s on stamped commands; its commands stop, it holds; a command
    of the same path stamped 0.3 s back (timeout 0.2 s) is refused: the joint stays held, the
    refusal is counted and named (before, it was applied as of now). One stamped 0.19 s back
    is applied: the hold ends and the joint moves toward the path."""
    runner, host = make(arm, command_timeout_s=0.2)
    send(runner, 0.0, position=0.0, velocity=0.5)
    steps(runner, 0.1)
    steps(runner, 0.6)  # no command since: the joint decelerates at 5 rad/s^2 and holds
    assert runner.timeout.holding == (JOINT,)
    held = position(runner)
    stamp = runner.sim.time - 0.3
    send(runner, stamp, position=0.5 * stamp, velocity=0.5)
    steps(runner, 0.1)
    assert runner.commands_rejected == 1
    assert "is older than command_timeout=0.2 s at simulation time" in runner.last_rejection
    assert host.logs == [("warning", runner.last_rejection)]
    assert runner.timeout.holding == (JOINT,)
    assert position(runner) == pytest.approx(held, abs=1e-3)
    stamp = runner.sim.time - 0.19
    send(runner, stamp, position=0.5 * stamp, velocity=0.5)
    steps(runner, 0.005)
    assert (runner.timeout.holding, runner.commands_applied) == ((), 2)
    steps(runner, 0.005)
    assert position(runner) > held + 1e-3  # on its way back to the path


def test_a_joint_without_commands_decelerates_to_a_hold_named_on_the_status(
        arm: MujocoRobotSim) -> None:
    """A velocity command, then silence: after command_timeout the joint brakes at
    hold_deceleration (0.5 rad/s at 5 rad/s^2: 0.025 rad) and the status says so (WARN)."""
    runner, _ = make(arm, command_timeout_s=0.2, hold_deceleration_rad_s2=5.0)
    send(runner, 0.0, velocity=0.5)
    steps(runner, 0.2)
    assert runner.status().level == OK
    steps(runner, 0.3)
    at_hold = 0.5 * 0.2 + 0.5 ** 2 / (2 * 5.0)
    assert position(runner) == pytest.approx(at_hold, abs=0.01)
    status = runner.status()
    assert status.level == WARN
    assert status.message == ("commands timed out: no command for more than 0.2 s on ['joint1']: "
                              "holding (decelerating at 5 rad/s^2 to rest) until their commands "
                              "resume")
    assert (status.values["holding"], status.values["holds"]) == (JOINT, 1)


def test_with_a_latency_a_stamped_command_acts_that_long_after_its_stamp(
        arm: MujocoRobotSim) -> None:
    """command_latency 0.05 s: a position command stamped now makes the motion it makes without
    a latency, 50 ms later (1e-4 rad); until then the joint stands (0.1 mrad)."""
    motions = []
    for latency_s in (0.0, 0.05):
        runner, _ = make(arm, command_latency_s=latency_s)
        steps(runner, 0.1)
        send(runner, runner.sim.time, position=0.3)
        motions.append(np.array([position(runner) for _ in steps_each(runner, 0.15)]))
    at_once, later = motions
    np.testing.assert_allclose(later[50:], at_once[:-50], atol=1e-4)
    assert np.ptp(later[:50]) < 1e-4 and at_once[49] > 0.01  # (it settles by 2e-5 rad)


def steps_each(runner: SimRunner, seconds: float) -> Iterator[None]:
    """Step ``seconds``, yielding after each step."""
    for _ in range(round(seconds / runner.sim.timestep)):
        runner.step()
        yield


# --- periods -----------------------------------------------------------------------------------


def test_periods_come_at_the_publish_rate_with_the_sampled_topics_at_theirs(
        arm: MujocoRobotSim) -> None:
    """publish_rate 500 Hz: a period every 2 steps; /clock at 100 Hz, the inclinometer at 50 Hz,
    /tf at 100 Hz; stamps rounded to the ns."""
    runner, _ = make(arm, publish_rate_hz=500.0, clock_rate_hz=100.0, inclinometer_rate_hz=50.0)
    periods = steps(runner, 0.1)
    assert [p.step for p in periods] == list(range(2, 101, 2))
    assert [p.stamp_ns for p in periods] == [round(p.step * 1e6) for p in periods]
    assert [p.step for p in periods if p.clock] == list(range(10, 101, 10))
    assert [p.step for p in periods if p.inclinometer] == list(range(20, 101, 20))
    assert [p.step for p in periods if p.tf] == list(range(10, 101, 10))


def test_a_new_inclinometer_rate_applies_from_the_next_step(arm: MujocoRobotSim) -> None:
    """reconfigure takes the dynamic fields only: the inclinometer rate changes, the model not."""
    runner, _ = make(arm)
    runner.reconfigure(MujocoSimConfig.defaults(inclinometer_rate_hz=20.0, model="humanoid"))
    periods = steps(runner, 0.1)
    assert [p.step for p in periods if p.inclinometer] == [50, 100]
    assert runner.config.model == "lunar_arm"


# --- run: pacing, lock-step, the end --------------------------------------------------------


def test_free_running_paces_at_the_real_time_factor(arm: MujocoRobotSim) -> None:
    """real_time_factor 2: 0.2 s of simulation take 0.1 s of (fake) wall time; 0: no wait."""
    clock = FakeClock()
    runner, host = make(arm, clock, real_time_factor=2.0, duration_s=0.2)
    runner.run()
    assert clock.now == pytest.approx(0.1, abs=1e-3)
    assert (len(host.periods), runner.finished.is_set()) == (200, True)
    assert host.logs[-1] == ("info", "ran 0.200 s of simulation: done")
    clock = FakeClock()
    runner, _ = make(arm, clock, real_time_factor=0.0, duration_s=0.2)
    runner.run()
    assert clock.waited_s == 0.0


@pytest.mark.parametrize(("stall_s", "wall_s"), [(0.3, 1.0), (0.7, 1.7)])
def test_free_running_catches_up_half_a_second_and_no_more(
        arm: MujocoRobotSim, stall_s: float, wall_s: float) -> None:
    """A stall of 0.3 s (a loaded machine) is made up: 1 s of simulation ends at 1 s of wall
    time; one of 0.7 s is given up: it ends at 1.7 s."""
    clock = FakeClock()
    runner, host = make(arm, clock, duration_s=1.0)

    def stall(period: Period) -> None:
        if period.step == 200:
            clock.now += stall_s

    host.on_period = stall
    runner.run()
    assert clock.now == pytest.approx(wall_s, abs=2e-3)


def test_a_new_real_time_factor_paces_from_its_change(arm: MujocoRobotSim) -> None:
    """At 1, then 0.5 from step 101 (taken between two steps): 50 ms of simulation take 50 ms
    of (fake) wall time before the change, 100 ms after it."""
    clock = FakeClock()
    runner, host = make(arm, clock, duration_s=0.2)
    wall: dict[int, float] = {}

    def record(period: Period) -> None:
        wall[period.step] = clock.now
        if period.step == 100:
            host.configs.append(MujocoSimConfig.defaults(real_time_factor=0.5))

    host.on_period = record
    runner.run()
    assert wall[100] - wall[50] == pytest.approx(0.05, abs=1e-9)
    assert wall[200] - wall[150] == pytest.approx(0.1, abs=1e-9)


def lock_step(arm: MujocoRobotSim, clock: WallClock | None = None,
              **changes: Any) -> tuple[SimRunner, Host]:
    return make(arm, clock, lock_step=True, publish_rate_hz=500.0, real_time_factor=0.0,
                lock_step_topics=(LockStepTopic(ANSWER, "sensor_msgs/msg/JointState"),),
                **changes)


def test_lock_step_waits_for_each_answer_and_its_command_acts_from_its_period(
        arm: MujocoRobotSim) -> None:
    """Each period answered with a velocity command stamped with its time: no miss, every
    command applied, and the joint follows the commands exactly as of their periods."""
    runner, host = lock_step(arm, duration_s=0.2)

    def answer(period: Period) -> None:
        send(runner, period.stamp_ns * 1e-9, velocity=0.5)
        assert runner.answer(ANSWER, period.stamp_ns)

    host.on_period = answer
    runner.run()
    status = runner.status()
    assert (status.values["lock_step_periods"], status.values["lock_step_misses"]) == (100, 0)
    assert runner.commands_applied == 101  # the t = 0 state's answer, then each period's
    assert host.periods[0].stamp_ns == 0 and host.logs[0] == (
        "info", "lock-step: every topic answered; time runs from t = 0.000 s")
    assert position(runner) == pytest.approx(0.5 * 0.2, abs=1e-3)


def test_a_late_lock_step_topic_is_named_counted_and_the_run_goes_on(arm: MujocoRobotSim) -> None:
    """Answers stop after the first period: each later period waits lock_step_timeout, counts a
    miss and logs it; the status is WARN with the late topic."""
    runner, host = lock_step(arm, duration_s=0.01, lock_step_timeout_s=0.01)
    host.on_period = lambda p: runner.answer(ANSWER, p.stamp_ns) if p.step <= 2 else None
    runner.run()
    status = runner.status()
    assert status.values["lock_step_misses"] == status.values[f"misses {ANSWER}"] == 4
    assert status.level == WARN and status.message.startswith(
        f"lock-step: 4 late answer(s) since the last report on ['{ANSWER}'] (total 4)")
    assert ("warning", f"lock-step: no answer on ['{ANSWER}'] for t = 0.004 s within "
            "lock_step_timeout=0.01 s: stepping on (misses: 1)") in host.logs


def test_lock_step_time_starts_once_every_topic_answered(arm: MujocoRobotSim) -> None:
    """Unanswered, the t = 0 state is published again (every 0.1 s of wall time) and the status
    says what it waits for; the third one answered, time runs."""
    runner, host = lock_step(arm, duration_s=0.004)
    host.on_period = lambda p: runner.answer(ANSWER, p.stamp_ns) if len(host.periods) >= 3 else None
    runner.run()
    assert [p.stamp_ns for p in host.periods[:3]] == [0, 0, 0]
    assert host.logs[0] == ("info", f"lock-step: waiting for a first message on ['{ANSWER}'] "
                                    "before time runs (the t = 0.000 s state and /clock are "
                                    "republished every 0.1 s)")
    assert host.logs[1] == ("info", "lock-step: every topic answered; time runs from t = 0.000 s")


def test_an_answer_beyond_the_newest_period_is_refused(arm: MujocoRobotSim) -> None:
    """An answer stamped after every period published (a wall-clock stamp) answers nothing."""
    runner, _ = lock_step(arm)
    assert not runner.answer(ANSWER, 10**18)
    assert runner.status().values["lock_step_answers_ahead"] == 1
    assert runner.answers(ANSWER) and not runner.answers("/joint_commands")


def test_the_run_ends_when_the_host_stops_publishing(arm: MujocoRobotSim) -> None:
    """publish_period False (the node stopping): the run ends after that period."""
    runner, host = make(arm)
    host.on_period = lambda p: setattr(host, "publishing", p.step < 5)
    runner.run()
    assert ([p.step for p in host.periods], runner.finished.is_set()) == ([1, 2, 3, 4, 5], True)


def test_a_diverged_simulation_ends_the_run_with_an_error(arm: MujocoRobotSim,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A SimulationError in a step is logged as an error; the run ends, finished."""
    runner, host = make(arm)

    def diverge(n: int = 1) -> None:
        raise SimulationError("the simulation diverged at t = 0.0010 s")

    monkeypatch.setattr(runner.sim, "step", diverge)
    runner.run()
    assert host.logs == [("error", "simulation stopped: the simulation diverged at t = 0.0010 s")]
    assert runner.finished.is_set()


# --- stopping --------------------------------------------------------------------------------


@pytest.fixture
def started() -> Iterator[Callable[..., tuple[SimRunner, Host]]]:
    """Runners started in their thread on the real wall clock; stopped after the test."""
    runners: list[SimRunner] = []

    def start(sim: MujocoRobotSim, **changes: Any) -> tuple[SimRunner, Host]:
        runner, host = make(sim, WallClock(), **changes)
        runners.append(runner)
        runner.start()
        return runner, host

    yield start
    for runner in runners:
        runner.stop()


def wait_for(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    end = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < end, "the runner did not get there"
        time.sleep(0.005)


@pytest.mark.parametrize("where", ["pacing", "lock-step wait", "start wait"])
def test_stop_wakes_the_thread_wherever_it_waits(
        arm: MujocoRobotSim, started: Callable[..., tuple[SimRunner, Host]], where: str) -> None:
    """The thread waits 100 s (pacing at real_time_factor 1e-5), 60 s (lock_step_timeout, no
    answer) or for a first answer: stop() ends it at once, not after the wait."""
    lock = {"lock_step": True, "lock_step_timeout_s": 60.0,
            "lock_step_topics": (LockStepTopic(ANSWER, "sensor_msgs/msg/JointState"),)}
    options: dict[str, Any] = {"pacing": {"real_time_factor": 1e-5},
                               "lock-step wait": {**lock, "publish_rate_hz": 10.0},
                               "start wait": lock}[where]
    runner, host = started(arm, **options)
    if where == "lock-step wait":
        host.on_period = lambda p: runner.answer(ANSWER, p.stamp_ns) if p.stamp_ns == 0 else None
    wait_for(lambda: len(host.periods) >= (2 if where == "lock-step wait" else 1))
    time.sleep(0.05)  # into the wait
    begin = time.monotonic()
    assert runner.stop(timeout_s=10.0), "the thread did not end within 10 s"
    assert time.monotonic() - begin < 5.0
    assert runner.finished.is_set()
    periods = len(host.periods)
    time.sleep(0.05)
    assert len(host.periods) == periods  # nothing published after stop
