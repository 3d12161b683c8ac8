"""ArmLoop.cycle without ROS: stale inputs, the balance guard, holds, dt, run-time switches."""

from __future__ import annotations

import math

import numpy as np
import pytest

from humanoid_balance.core.arm_controller import GroundArmController
from humanoid_balance.core.arm_loop import (
    CLOCK_PROBLEM_S,
    ArmLoop,
    ArmLoopConfig,
    Command,
    Hold,
    JobInput,
    LoopState,
    MeasuredMargin,
    MeasuredState,
    joint_state_stamp_problem,
)
from humanoid_balance.core.freshness import CLOCK_BACK_TOLERANCE_S
from humanoid_balance.core.model import RobotModel
from humanoid_balance.exceptions import ConfigurationError
from humanoid_balance.resources import urdf_path

PERIOD = 0.002
POSE = {"right_shoulder_pitch": -0.3, "right_elbow": 0.8, "left_shoulder_pitch": -0.3,
        "left_elbow": 0.8}
RIGHT = tuple(f"right_{j}" for j in ("shoulder_pitch", "shoulder_roll", "shoulder_yaw", "elbow",
                                     "wrist_yaw", "wrist_roll", "wrist_pitch"))
LEFT = tuple("left" + n[len("right"):] for n in RIGHT)


@pytest.fixture(scope="module")
def model() -> RobotModel:
    return RobotModel(urdf_path("humanoid"), world_frame="W")


class Rig:
    """A loop on the ground controller with a measured state the test feeds, one cycle per call."""

    def __init__(self, model: RobotModel, **config: float) -> None:
        self.model = model
        # posture task off: these tests are about switching, not the aux arm's posture
        self.controller = GroundArmController(model, position_margin=0.02, posture_gain=0.0)
        self.state = MeasuredState(model.joint_names, model.q_index(list(model.joint_names)),
                                   model.neutral())
        self.loop = ArmLoop(self.controller, self.state, ArmLoopConfig(**config))
        self.t = 0.0
        self.positions = np.array([POSE.get(n, 0.0) for n in model.joint_names])
        self.job: JobInput | None = None
        self.margin: MeasuredMargin | None = None

    def measure(self) -> None:
        assert self.state.update_joints(tuple(self.model.joint_names), self.positions, self.t) is None

    def cycle(self, measure: bool = True, dt: float = PERIOD) -> Command | Hold | None:
        self.t += dt
        if measure:
            self.measure()
        return self.loop.cycle(self.t, self.state, self.job, self.margin)

    def hold_at(self, positions: dict[str, float]) -> None:
        """Measure the joints ``positions`` names there from now on."""
        for k, name in enumerate(self.model.joint_names):
            self.positions[k] = positions.get(name, self.positions[k])

    def ask(self, velocity: dict[str, float], names: tuple[str, ...] = RIGHT) -> None:
        self.job = JobInput(self.t, joint_names=names,
                            joint_velocities=np.array([velocity.get(n, 0.0) for n in names]))

    def run(self, cycles: int, velocity: dict[str, float] | None = None) -> Command:
        out = None
        for _ in range(cycles):
            if velocity is not None:
                self.ask(velocity)
            out = self.cycle()
        assert isinstance(out, Command)
        return out


def _accelerations(limits_names: tuple[str, ...]) -> np.ndarray:
    from humanoid_balance.core.joint_limits import arm_acceleration_limit

    return np.array([arm_acceleration_limit(n) for n in limits_names])


def test_fresh_joint_states_give_a_command_for_both_arms(model: RobotModel) -> None:
    """With fresh arm joint states the cycle commands both arms, job arm first."""
    out = Rig(model).cycle()
    assert isinstance(out, Command) and out.names == RIGHT + LEFT


def test_missing_arm_joint_gives_nothing_and_names_it(model: RobotModel) -> None:
    """Joint states without right_elbow: nothing is commanded; the problem names the joint."""
    rig = Rig(model)
    names = tuple(n for n in model.joint_names if n != "right_elbow")
    rig.state.update_joints(names, np.zeros(len(names)), 0.0)
    assert rig.loop.cycle(0.002, rig.state, None, None) is None
    assert rig.loop.problems["joint_states"] == "joint states lack arm joints ['right_elbow']: holding"


def test_stale_joint_states_hold_decelerating_within_the_acceleration_limits(model: RobotModel) -> None:
    """Issue 12: a hold from 1.7 rad/s ramps down at most a dt per cycle (no step to zero), then stops."""
    rig = Rig(model)
    rig.run(200, {"right_shoulder_pitch": -1.7})
    sent: list[Command | Hold] = []
    while not sent or not isinstance(sent[-1], Hold) or not sent[-1].stopped:
        out = rig.cycle(measure=False)  # joint states stop; a few cycles later they are stale
        assert out is not None and len(sent) < 1000
        sent.append(out)
    holds = [h for h in sent if isinstance(h, Hold)]
    moving = sent[-len(holds) - 1].velocity
    assert abs(moving[0] + 1.7) < 1e-9
    velocities = np.vstack([moving, *[h.velocity for h in holds]])
    step = np.abs(np.diff(velocities, axis=0)).max(axis=0)
    assert np.all(step <= _accelerations(RIGHT + LEFT) * PERIOD + 1e-12)
    assert len(holds) > 1 and holds[0].velocity[0] < 0.0  # the first hold still moves


def test_a_held_loop_sends_nothing_new(model: RobotModel) -> None:
    """Once stopped, further stale cycles return a hold that is not fresh (nothing to send)."""
    rig = Rig(model)
    rig.run(5)
    first = rig.cycle(measure=False, dt=0.1)
    again = rig.cycle(measure=False)
    assert isinstance(first, Hold) and first.fresh and first.stopped
    assert isinstance(again, Hold) and not again.fresh
    assert "older than joint_state_timeout=0.05 s" in first.reason


def test_stop_decelerates_within_the_acceleration_limits(model: RobotModel) -> None:
    """stop() (deactivate) ramps the velocities to zero within each joint's acceleration limit."""
    rig = Rig(model)
    moving = rig.run(200, {"right_shoulder_pitch": -1.7, "right_elbow": 1.0}).velocity.copy()
    holds = rig.loop.stop("deactivated")
    velocities = np.vstack([moving, *[h.velocity for h in holds]])
    assert holds[-1].stopped and rig.loop.state is LoopState.HELD
    assert np.all(np.abs(np.diff(velocities, axis=0)) <= _accelerations(RIGHT + LEFT) * PERIOD + 1e-12)


def test_job_arm_switched_while_held_resumes_without_a_step(model: RobotModel) -> None:
    """Issue 12: job arm changed while inactive; the first command keeps every joint where it was held."""
    rig = Rig(model)
    rig.run(100, {"right_shoulder_pitch": -0.5, "right_shoulder_yaw": 0.5})
    holds = rig.loop.stop("deactivated")
    held = dict(zip(holds[-1].names, holds[-1].position, strict=True))
    rig.hold_at(held)  # the arms followed their commands: measured where they were held
    rig.loop.set_job_arm("left", rig.t)
    rig.loop.restart()
    out = rig.cycle()
    assert isinstance(out, Command) and out.names == LEFT + RIGHT
    jump = max(abs(p - held[n]) for n, p in zip(out.names, out.position, strict=True))
    assert jump < 1e-9


def test_job_input_from_before_a_switch_is_dropped(model: RobotModel) -> None:
    """Right-arm velocities received before the switch to the left arm move nothing, no complaint."""
    rig = Rig(model)
    rig.ask({"right_shoulder_pitch": -0.5})
    rig.loop.set_job_arm("left", rig.t)
    out = rig.cycle()
    assert isinstance(out, Command) and not np.any(out.velocity)
    assert "job_input" not in rig.loop.problems


def test_job_velocities_naming_the_other_arm_are_refused(model: RobotModel) -> None:
    """Job velocities for the left arm while the right one is the job arm: zero input, the reason kept."""
    rig = Rig(model)
    rig.ask({"left_shoulder_pitch": -0.5}, names=LEFT)
    out = rig.cycle()
    assert isinstance(out, Command) and not np.any(out.velocity)
    assert rig.loop.problems["job_input"].startswith("job joint velocities must name exactly")


def test_twist_in_another_frame_is_refused(model: RobotModel) -> None:
    """A twist in 'world' for the ground controller (frame W): zero input and the frame named."""
    rig = Rig(model)
    rig.job = JobInput(0.0, twist=np.array([0.1, 0, 0, 0, 0, 0]), frame="world")
    out = rig.cycle()
    assert isinstance(out, Command) and not np.any(out.velocity)
    assert rig.loop.problems["job_input"] == ("job twist in frame 'world', expected 'W': ignored, "
                                              "job arm stopping")


def test_stale_job_input_stops_the_job_arm(model: RobotModel) -> None:
    """A job input older than job_input_timeout counts as zero: the job arm decelerates to rest."""
    rig = Rig(model)
    rig.run(50, {"right_shoulder_pitch": -0.3})
    out = rig.run(100)  # no new input: it goes stale after 0.1 s
    assert not np.any(out.velocity[:7])
    assert "older than job_input_timeout=0.1 s" in rig.loop.problems["job_input"]


def test_guard_scales_the_job_input_between_the_margins(model: RobotModel) -> None:
    """A measured margin halfway between hold (10 mm) and slow (30 mm) halves the job velocity."""
    rig = Rig(model)
    rig.margin = MeasuredMargin(0.02, 0.0)
    for _ in range(50):
        rig.margin = MeasuredMargin(0.02, rig.t)
        out = rig.run(1, {"right_shoulder_pitch": -0.2})
    assert rig.loop.guard_scale == pytest.approx(0.5)
    assert out.velocity[0] == pytest.approx(-0.1)
    assert rig.loop.problems["guard"] == "stability margin 20.0 mm: slowing the job arm to 50 %"


def test_guard_ignores_an_old_measured_margin(model: RobotModel) -> None:
    """A measured margin older than margin_timeout does not slow the job arm."""
    rig = Rig(model)
    rig.margin = MeasuredMargin(0.0, 0.0)
    out = rig.run(100, {"right_shoulder_pitch": -0.2})
    assert rig.loop.guard_scale == 1.0 and out.velocity[0] == pytest.approx(-0.2)


def test_a_predicted_lift_off_holds_the_job_arm(model: RobotModel) -> None:
    """The model predicting lift-off (margin -inf, the feet's normal force <= 0) holds the job
    arm, as a measured margin at the hold margin would; before, -inf was taken for "no margin"
    and, with no measured margin either, the guard let the job arm go at full speed."""
    from types import SimpleNamespace

    rig = Rig(model)
    lift_off = SimpleNamespace(indicators=SimpleNamespace(zmp_margin=-math.inf))
    no_polygon = SimpleNamespace(indicators=SimpleNamespace(zmp_margin=math.nan))
    assert rig.loop.controller.predicted_margin(lift_off) == -math.inf  # type: ignore[arg-type]
    assert rig.loop.controller.predicted_margin(no_polygon) is None  # type: ignore[arg-type]
    rig.run(20, {"right_shoulder_pitch": -0.2})
    rig.loop.controller.predicted_margin = lambda out: -math.inf  # type: ignore[method-assign]
    out = rig.run(100, {"right_shoulder_pitch": -0.2})
    assert rig.loop.guard_scale == 0.0 and not np.any(out.velocity[:7])
    assert rig.loop.problems["guard"] == "stability margin -inf mm: holding the job arm"


def test_dt_is_clamped_to_ten_periods(model: RobotModel) -> None:
    """A 40 ms gap between cycles integrates the command over 10 periods (20 ms), not 40 ms."""
    rig = Rig(model)
    before = rig.run(100, {"right_shoulder_pitch": -0.2})
    rig.ask({"right_shoulder_pitch": -0.2})
    rig.t += 0.038
    after = rig.cycle()
    assert isinstance(after, Command)
    assert after.position[0] - before.position[0] == pytest.approx(-0.2 * 10 * PERIOD)


@pytest.mark.parametrize(("gap_s", "integrated_s", "counted"), [
    (0.038 + PERIOD, 0.038 + PERIOD, 1),  # beyond 10 periods: whole, in two steps
    (0.010, 0.010, 0),  # within 10 periods: one step
    # beyond MAX_LAG_S: the stamps leapt (a clock jump), one period: ten made the command resume
    # 0.06 rad ahead of the arm after /clock leapt 10 s (tools/chaos.py --lock-step)
    (1.5, PERIOD, 0),
    (10.0, PERIOD, 0),
])
def test_a_stamp_gap_is_integrated_whole_up_to_the_lag_limit(
        model: RobotModel, gap_s: float, integrated_s: float, counted: int) -> None:
    """Stamp-triggered cycles (lock-step, joint_states trigger): the commands' consumer went on
    with the last velocity over the gap, so the next command covers all of it (up to 1 s); a
    longer gap is a clock jump, not time the arm moved: one period."""
    rig = Rig(model)
    velocity = {"right_shoulder_pitch": -0.2}
    for _ in range(100):
        rig.ask(velocity)
        rig.t += PERIOD
        rig.measure()
        before = rig.loop.cycle(rig.t, rig.state, rig.job, rig.margin, stamp_s=rig.t)
    assert isinstance(before, Command)
    rig.t += gap_s
    rig.ask(velocity)
    rig.measure()
    after = rig.loop.cycle(rig.t, rig.state, rig.job, rig.margin, stamp_s=rig.t)
    assert isinstance(after, Command)
    assert after.position[0] - before.position[0] == pytest.approx(-0.2 * integrated_s)
    assert rig.loop.caught_up_gaps == counted


def test_stamp_triggered_cycles_of_equal_gaps_get_equal_dt(model: RobotModel) -> None:
    """Stamps whole nanoseconds apart: every 2 ms gap gives the controller the same dt, an hour
    in (the difference of two times since the first stamp varies in its last bits)."""
    rig = Rig(model)
    dts: set[float] = set()
    step = rig.controller.step

    def recording_step(inputs: object, dt: float) -> object:
        dts.add(dt)
        return step(inputs, dt)  # type: ignore[arg-type]

    rig.controller.step = recording_step  # type: ignore[method-assign]
    start_ns = 3600 * 10**9
    for k in range(200):
        stamp_s = (start_ns + k * 2_000_000) * 1e-9
        rig.t = stamp_s
        rig.measure()
        rig.loop.cycle(stamp_s, rig.state, rig.job, rig.margin, stamp_s=stamp_s)
    assert len(dts) == 1 and dts.pop() == pytest.approx(PERIOD, abs=1e-15)


def test_selection_switches_between_cycles(model: RobotModel) -> None:
    """set_selection(Lx, Ly, Lz): outputs hold three rows, at zero once the aux arm caught up."""
    rig = Rig(model)
    rig.run(20, {"right_shoulder_pitch": -0.5})
    rig.loop.set_selection(["Lx", "Ly", "Lz"])
    out = rig.run(50, {"right_shoulder_pitch": -0.5})
    assert out.output.selected_momentum.shape == (3,)
    assert np.abs(out.output.selected_momentum).max() < 1e-9


def test_new_timeout_applies_from_the_next_cycle(model: RobotModel) -> None:
    """joint_state_timeout raised to 0.5 s: joint states 0.1 s old no longer hold the arms."""
    rig = Rig(model)
    rig.run(5)
    rig.loop.set_config(ArmLoopConfig(joint_state_timeout_s=0.5))
    assert isinstance(rig.cycle(measure=False, dt=0.1), Command)


def test_disabled_job_arm_gets_no_input(model: RobotModel) -> None:
    """set_enabled(False): the job input counts as zero; balance goes on."""
    rig = Rig(model)
    rig.loop.set_enabled(False)
    out = rig.run(50, {"right_shoulder_pitch": -0.5})
    assert not np.any(out.velocity)


@pytest.mark.parametrize("bad", [{"guard_hold_margin_m": math.nan},
                                 {"guard_slow_margin_m": -math.inf},
                                 {"guard_hold_margin_m": 0.05}])
def test_config_refuses_non_finite_or_inverted_guard_margins(bad: dict[str, float]) -> None:
    """ArmLoopConfig refuses NaN / -inf margins and a hold margin not below the slow one."""
    with pytest.raises(ConfigurationError):
        ArmLoopConfig(**bad)


def _both_margins(model: RobotModel) -> tuple[GroundArmController, object]:
    """arm_balance's controller as the node builds it, and zmp_estimator's estimator with its polygon."""
    from humanoid_balance.core.zmp import humanoid_zmp_estimator
    from humanoid_balance.params.arm_balance import build_controller, config_from_values

    _, controller = build_controller(config_from_values({}))
    estimator = humanoid_zmp_estimator(model)
    estimator.support.update_at(model, model.neutral())  # both feet down, standing
    assert isinstance(controller, GroundArmController)
    return controller, estimator


def test_both_nodes_give_the_same_margin_for_the_same_point(model: RobotModel) -> None:
    """arm_balance's and zmp_estimator's margins agree (1e-12 m) on a grid in and around the feet."""
    controller, estimator = _both_margins(model)
    assert controller.support_polygon is not None
    grid = [np.array([x, y]) for x in np.linspace(-0.2, 0.2, 21) for y in np.linspace(-0.3, 0.3, 31)]
    gap = max(abs(controller.support_polygon.margin(p) - estimator.support.margin(p))  # type: ignore[attr-defined]
              for p in grid)
    assert gap < 1e-12


def test_both_nodes_give_the_same_margin_for_the_model_zmp(model: RobotModel) -> None:
    """The margin arm_balance reports for its model ZMP is zmp_estimator's margin of that point."""
    controller, estimator = _both_margins(model)
    state = MeasuredState(model.joint_names, model.q_index(list(model.joint_names)), model.neutral())
    loop = ArmLoop(controller, state, ArmLoopConfig())
    job = np.array([-1.5, 0.3, 0, 0.5, 0, 0, 0])
    margins = []
    for k in range(60):
        t = (k + 1) * PERIOD
        state.update_joints(tuple(model.joint_names), np.zeros(len(model.joint_names)), t)
        out = loop.cycle(t, state, JobInput(t, joint_names=RIGHT, joint_velocities=job), None)
        assert isinstance(out, Command) and out.model_zmp is not None
        margins.append((out.output.indicators.zmp_margin, estimator.support.margin(out.model_zmp)))  # type: ignore[attr-defined]
    arm, zmp = np.array(margins).T
    assert np.ptp(arm) > 1e-6  # the model ZMP moved with the arm
    np.testing.assert_allclose(arm, zmp, rtol=0, atol=1e-12)


# --- the clock going back, stamps that stop advancing, re-activation -------------------------------


def _velocity_steps_within_limits(sent: list[Command | Hold], dt: float = PERIOD) -> bool:
    """Every velocity step between consecutive commands (same names) within a_max dt (+ float
    rounding: velocities of a few rad/s, 1e-12 is 1e4 ulps)."""
    velocities = np.vstack([out.velocity for out in sent])
    accel = _accelerations(sent[0].names)
    return bool(np.all(np.abs(np.diff(velocities, axis=0)) <= accel * dt + 1e-12))


def test_clock_going_back_drops_every_input_and_holds_decelerating(model: RobotModel) -> None:
    """The clock 99 s back (simulation restart): the job input received before counts for nothing
    (it is not 'fresh' at a negative age), the arms hold within the acceleration limits, the
    problem is named and counted."""
    rig = Rig(model)
    before = rig.run(100, {"right_shoulder_pitch": -1.0})  # the job input stays, received at 0.2 s
    assert abs(before.velocity[0] + 1.0) < 1e-9
    rig.t -= 99.0 + PERIOD  # the next cycle 99 s behind the last one; joint states still come
    sent: list[Command | Hold] = [before]
    for _ in range(200):
        out = rig.cycle()
        assert out is not None
        sent.append(out)
    assert isinstance(sent[1], Hold) and sent[1].reason == (
        "no arm joint states received since the clock went back 99.000 s: holding")
    assert rig.loop.clock_jumps == 1
    assert rig.loop.problems["clock"].startswith("node clock went back 99.000 s")
    assert _velocity_steps_within_limits(sent)
    assert not np.any(sent[-1].velocity[:7])  # the old job input never moved the arm again


def test_after_a_clock_jump_commanding_resumes_from_the_measured_positions(
        model: RobotModel) -> None:
    """The clock back (a simulation restarted: the robot at its start pose again), the arms held
    to rest, joint states again with the elbow 0.5 rad elsewhere: the first command starts at
    the measured positions, not where the arms were held (a 0.5 rad step)."""
    rig = Rig(model)
    rig.run(100, {"right_shoulder_pitch": -0.5})
    rig.t -= 50.0
    rig.job = None
    for _ in range(100):  # no joint states on the new clock yet: held to rest
        out = rig.cycle(measure=False)
    assert isinstance(out, Hold) and out.stopped
    rig.positions[model.joint_names.index("right_elbow")] -= 0.5
    out = rig.cycle()
    assert isinstance(out, Command)
    measured = rig.positions[rig.state.index(out.names)]
    assert np.array_equal(out.position, measured)
    assert np.all(np.abs(out.velocity) <= _accelerations(out.names) * PERIOD + 1e-12)


def test_a_simulation_restarted_while_held_is_commanded_from_its_first_joint_state(
        model: RobotModel) -> None:
    """The simulation down (no joint states: held to rest on the old clock), then restarted: its
    clock back at 0 and its first joint state, the robot at its start pose (the elbow 0.5 rad
    elsewhere), come together. That cycle commands the measured positions at rest: never a
    hold at the old positions, which would send the new simulation's arm back there (tools/
    chaos.py: 2.1 rad)."""
    rig = Rig(model)
    rig.run(100, {"right_shoulder_pitch": -0.5})
    rig.job = None
    for _ in range(100):  # the simulation down: stale joint states, held to rest
        out = rig.cycle(measure=False)
    assert isinstance(out, Hold) and out.stopped
    rig.t = 0.002  # restarted: its clock from 0, its first joint state with it
    rig.positions[model.joint_names.index("right_elbow")] -= 0.5
    out = rig.cycle(dt=0.0)
    assert isinstance(out, Command), out
    measured = rig.positions[rig.state.index(out.names)]
    assert np.array_equal(out.position, measured)
    assert not np.any(out.velocity)
    assert rig.loop.clock_jumps == 1


def test_clock_problem_clears_after_its_time_on_the_new_clock(model: RobotModel) -> None:
    """The clock problem stays CLOCK_PROBLEM_S on the new clock (the diagnostics carry it), then goes."""
    rig = Rig(model)
    rig.run(5)
    rig.t -= 10.0
    rig.run(2)
    assert "clock" in rig.loop.problems
    rig.run(round(CLOCK_PROBLEM_S / PERIOD))
    assert "clock" not in rig.loop.problems


def test_clock_going_back_without_new_joint_states_holds(model: RobotModel) -> None:
    """Joint states received at t = 100 s, the clock back to 1 s and none since: they are not fresh."""
    rig = Rig(model)
    rig.t = 100.0
    rig.run(5, {"right_shoulder_pitch": -0.5})
    rig.t = 1.0
    for _ in range(50):
        rig.ask({"right_shoulder_pitch": -0.5})  # the job keeps asking on the new clock
        out = rig.cycle(measure=False)
    assert isinstance(out, Hold) and out.stopped
    assert "joint_states" in rig.loop.problems


def test_clock_going_back_within_the_tolerance_is_no_jump(model: RobotModel) -> None:
    """The clock read half a tolerance earlier than the last cycle: nothing dropped, no problem."""
    rig = Rig(model)
    rig.run(5, {"right_shoulder_pitch": -0.5})
    rig.t -= 0.5 * CLOCK_BACK_TOLERANCE_S
    rig.loop.cycle(rig.t, rig.state, rig.job, None)
    out = rig.run(1, {"right_shoulder_pitch": -0.5})
    assert rig.loop.clock_jumps == 0 and "clock" not in rig.loop.problems
    assert out.velocity[0] < 0.0


def test_switch_time_is_reset_when_the_clock_goes_back(model: RobotModel) -> None:
    """A job-arm switch at t = 100 s, the clock back to 1 s: later job inputs are taken again."""
    rig = Rig(model)
    rig.t = 100.0
    rig.run(5)
    rig.loop.set_job_arm("left", rig.t)
    rig.t = 1.0
    rig.run(5)  # the jump's hold, then joint states again
    out = None
    for _ in range(20):
        rig.ask({"left_shoulder_pitch": -0.5}, names=LEFT)
        out = rig.cycle()
    assert isinstance(out, Command) and out.names[:7] == LEFT and out.velocity[0] < -0.1


def test_inputs_received_after_now_are_not_fresh(model: RobotModel) -> None:
    """A job input and a margin received 1 s 'after now' (negative age) count as stale, not fresh."""
    rig = Rig(model)
    rig.run(5)
    rig.job = JobInput(rig.t + 1.0, joint_names=RIGHT,
                       joint_velocities=np.array([-0.5, 0, 0, 0, 0, 0, 0.0]))
    rig.margin = MeasuredMargin(0.0, rig.t + 1.0)  # would hold the job arm if it counted
    out = rig.cycle()
    assert isinstance(out, Command) and not np.any(out.velocity[:7])
    assert "older than job_input_timeout" in rig.loop.problems["job_input"]
    assert "older than margin_timeout" in rig.loop.problems["margin"]


def test_joint_states_received_after_now_hold(model: RobotModel) -> None:
    """Arm joint states timed 1 s after the cycle's now are not fresh: the arms hold, named."""
    rig = Rig(model)
    rig.run(5)
    rig.state.update_joints(tuple(model.joint_names), rig.positions, rig.t + 1.0)
    out = rig.loop.cycle(rig.t + PERIOD, rig.state, None, None)
    assert isinstance(out, Hold)
    assert out.reason == ("arm joint states received 0.998 s after the node clock's now (the "
                          "clock went back?): holding")


def test_a_repeated_stamp_does_not_refresh_the_joint_times(model: RobotModel) -> None:
    """The same nonzero stamp again keeps the joints' time (not a new measurement); stamp 0 and a
    new stamp refresh it."""
    state = MeasuredState(model.joint_names, model.q_index(list(model.joint_names)), model.neutral())
    names, q = tuple(model.joint_names), np.zeros(len(model.joint_names))
    state.update_joints(names, q, 1.0, stamp_ns=5)
    state.update_joints(names, q, 2.0, stamp_ns=5)
    assert np.all(state.joint_times_s == 1.0)
    state.update_joints(names, q, 3.0, stamp_ns=6)
    assert np.all(state.joint_times_s == 3.0)
    state.update_joints(names, q, 4.0)
    state.update_joints(names, q, 5.0)
    assert np.all(state.joint_times_s == 5.0)


def test_stamps_that_stop_advancing_go_stale_and_hold(model: RobotModel) -> None:
    """Joint states arriving every period with a frozen stamp: after joint_state_timeout the arms
    hold, decelerating within the acceleration limits."""
    rig = Rig(model)
    names = tuple(model.joint_names)
    sent: list[Command | Hold] = []
    for k in range(200):
        rig.t += PERIOD
        stamp = 1_000_000 + (min(k, 100)) * 2_000_000  # frozen from cycle 100 on
        rig.ask({"right_shoulder_pitch": -1.0})
        assert rig.state.update_joints(names, rig.positions, rig.t, stamp_ns=stamp) is None
        out = rig.loop.cycle(rig.t, rig.state, rig.job, None)
        assert out is not None
        sent.append(out)
    assert isinstance(sent[-1], Hold) and sent[-1].stopped
    assert "older than joint_state_timeout=0.05 s" in sent[-1].reason
    assert _velocity_steps_within_limits(sent[50:])
    first_hold = next(k for k, out in enumerate(sent) if isinstance(out, Hold))
    assert first_hold == 100 + round(0.05 / PERIOD)  # the first cycle past the timeout


def test_lock_step_refuses_unstamped_joint_states_but_a_simulation_s_t0(model: RobotModel) -> None:
    """trigger joint_states: stamp 0 cannot mark a period (refused, named) unless the node clock
    is the simulation's at t = 0; timer mode times it on arrival."""
    config = ArmLoopConfig()
    assert joint_state_stamp_problem(0, None, config, lock_step=True) == (
        "joint states unstamped (stamp 0): trigger joint_states needs each joint state stamped "
        "with its period; ignored (stamp them, or use trigger: timer)")
    assert joint_state_stamp_problem(0, 10**12, config, lock_step=True) is not None
    assert joint_state_stamp_problem(0, 0, config, lock_step=True) is None  # use_sim_time, before time runs
    assert joint_state_stamp_problem(0, 10**12, config) is None


def test_restart_starts_from_the_measured_positions(model: RobotModel) -> None:
    """Deactivated, the elbow moved 0.5 rad, activated: nothing until a joint state after the
    activation, then the first command starts at the measured positions, velocity within a dt."""
    rig = Rig(model)
    rig.run(100, {"right_shoulder_pitch": -0.5})
    holds = rig.loop.stop("deactivated")
    held = dict(zip(holds[-1].names, holds[-1].position, strict=True))
    rig.hold_at(held)
    rig.positions[model.joint_names.index("right_elbow")] -= 0.5  # moved by hand, motors off
    rig.loop.restart()
    rig.job = None
    waiting = rig.cycle(measure=False)  # the joint states before the activation do not count
    assert isinstance(waiting, Hold) and not waiting.fresh
    assert waiting.reason == "no arm joint states received since activation: holding"
    out = rig.cycle()
    assert isinstance(out, Command)
    measured = rig.positions[rig.state.index(out.names)]
    assert np.array_equal(out.position, measured)
    assert np.all(np.abs(out.velocity) <= _accelerations(out.names) * PERIOD + 1e-12)


# --- the loop's config and controller from arm_balance's parameters ---------------------------------


def test_config_from_values_converts_units_once() -> None:
    """arm_balance's parameters become a typed config: degrees to radians, the secondary rows
    parsed, the loop's tunables with their units; an invalid value is refused with the spec's
    reason."""
    from humanoid_balance.params.arm_balance import config_from_values

    config = config_from_values({"aux_posture": [90.0, 0.0, 0.0, 45.0, 0.0, 0.0, -90.0],
                                 "secondary": " Lz, Pz ", "joint_state_timeout": 0.2,
                                 "guard_slow_margin": 0.05, "rate": 250.0})
    assert config.aux_posture_rad == pytest.approx((math.pi / 2, 0, 0, math.pi / 4, 0, 0,
                                                    -math.pi / 2), abs=1e-15)
    assert config.secondary == ("Lz", "Pz") and config.selection == ("Lx", "Ly")
    assert config.loop_config() == ArmLoopConfig(
        rate_hz=250.0, joint_state_timeout_s=0.2, job_input_timeout_s=0.1, margin_timeout_s=0.1,
        guard_slow_margin_m=0.05, guard_hold_margin_m=0.01, base_pose_source="/base_pose")
    with pytest.raises(ConfigurationError, match="must be below guard_slow_margin"):
        config_from_values({"guard_hold_margin": 0.05})


def test_ground_controller_takes_the_feet_from_the_foot_layout(model: RobotModel) -> None:
    """mode ground: the model ZMP's polygon is the seed foot layout's contact hull at the standing
    pose (the hull of the FSR pads the zmp_estimator uses), vertex for vertex."""
    from humanoid_balance.core.foot_layout import FootLayout
    from humanoid_balance.params.arm_balance import build_controller, config_from_values

    _, controller = build_controller(config_from_values({}))
    assert isinstance(controller, GroundArmController) and controller.support_polygon is not None
    feet = FootLayout.seed()
    hull = feet.support_polygon(model).update(feet.soles_in_world(model, model.neutral()))
    assert np.array_equal(controller.support_polygon.vertices, hull)


def test_a_joint_measured_past_its_limit_is_commanded_from_the_limit(model: RobotModel) -> None:
    """The first cycle from measured positions with the elbow 0.6 mrad past its lower limit (a
    simulation's soft limit; tools/chaos.py after restarting arm_balance): the command starts at
    the limit, never beyond it, and no command goes beyond it after."""
    rig = Rig(model)
    elbow = model.joint_names.index("right_elbow")
    lower = float(model.position_limits(["right_elbow"])[0][0])
    rig.positions[elbow] = lower - 6e-4
    sent = [rig.cycle() for _ in range(20)]
    commands = [out for out in sent if isinstance(out, Command)]
    assert commands
    k = commands[0].names.index("right_elbow")
    assert commands[0].position[k] == lower
    assert all(out.position[k] >= lower for out in commands)


def _held_at_rest(model: RobotModel) -> tuple[Rig, Hold, int]:
    """A rig whose shoulder swung at -0.5 rad/s, then held to rest without joint states: the rig,
    the last hold, and the shoulder pitch's index in it; the joint states (from the next cycle)
    put the arms where they were held."""
    rig = Rig(model)
    rig.run(100, {"right_shoulder_pitch": -0.5})
    rig.job = None
    for _ in range(100):
        out = rig.cycle(measure=False)
    assert isinstance(out, Hold) and out.stopped
    rig.positions[rig.state.index(out.names)] = out.position
    return rig, out, out.names.index("right_shoulder_pitch")


def test_held_at_rest_and_measured_elsewhere_resumes_from_the_measurement(
        model: RobotModel) -> None:
    """Held to rest (joint states stopped), then joint states again with the shoulder 0.75 rad
    from the held command and no clock jump (a restarted simulation whose joint states came
    before its /clock; tools/chaos.py): once the measurement has stayed put for SETTLE_S
    (nothing new is sent before), the first command is at the measured positions, not a
    0.75 rad step back to where the arm was held; within RESUME_FROM_MEASURED_RAD it resumes
    from the held command."""
    from humanoid_balance.core.arm_loop.config import SETTLE_S

    rig, hold, k = _held_at_rest(model)
    held = hold.position
    rig.positions[model.joint_names.index("right_shoulder_pitch")] = held[k] + 0.75
    waited = []
    out = rig.cycle()
    while not isinstance(out, Command):
        assert isinstance(out, Hold) and not out.fresh and np.array_equal(out.position, held)
        waited.append(out)
        out = rig.cycle()
    assert SETTLE_S / PERIOD - 1 <= len(waited) <= SETTLE_S / PERIOD + 1
    assert np.array_equal(out.position, rig.positions[rig.state.index(out.names)])
    rig2, hold, k = _held_at_rest(model)
    held = hold.position
    rig2.positions[model.joint_names.index("right_shoulder_pitch")] = held[k] + 0.01
    out = rig2.cycle()
    assert isinstance(out, Command)
    assert abs(out.position[k] - held[k]) < 1e-9  # from the held command: within the tolerance


def test_held_and_measured_late_on_its_way_resumes_from_the_held_command(
        model: RobotModel) -> None:
    """Held to rest, then joint states again that lag the commands (a loaded machine: the servos'
    report of the braking arrives late, 0.26 rad behind the held command) and move on towards
    it: nothing new is sent while they move, and commanding resumes from the held command once
    they reach it, never a step back to where the late measurement was (the enable cases of
    test/faults/test_arm_balance.py beside two busy loops: 14.9 and 16.7 deg in one cycle)."""
    rig, hold, k = _held_at_rest(model)
    held = hold.position
    joint = model.joint_names.index("right_shoulder_pitch")
    sent: list[Command | Hold] = [hold]
    for lag in np.linspace(0.26, 0.0, 60):  # the measurement catching up at 2.2 rad/s
        rig.positions[joint] = held[k] + lag
        out = rig.cycle()
        assert out is not None
        sent.append(out)
    commands = [out for out in sent if isinstance(out, Command)]
    assert commands and all(isinstance(out, Hold) and not out.fresh
                            for out in sent[1:sent.index(commands[0])])
    assert abs(commands[0].position[k] - held[k]) < 1e-9
    assert _velocity_steps_within_limits(sent)


def test_braking_when_the_clock_goes_back_goes_on_from_the_measured_positions(
        model: RobotModel) -> None:
    """Moving when the clock goes back, with the joint state of the new clock saying the arm is
    0.5 rad elsewhere (a restarted simulation, no hold steps while it was down): the holds brake
    from the measured positions, within the acceleration limits, never a step back to where the
    arm was commanded (tools/chaos.py: 0.85 rad)."""
    rig = Rig(model)
    before = rig.run(100, {"right_shoulder_pitch": -1.0})
    assert abs(before.velocity[0] + 1.0) < 1e-9
    rig.t = 0.002
    k = before.names.index("right_shoulder_pitch")
    rig.positions[model.joint_names.index("right_shoulder_pitch")] = before.position[k] + 0.5
    sent: list[Command | Hold] = [before]
    for _ in range(100):
        out = rig.cycle()
        assert out is not None
        sent.append(out)
    assert isinstance(sent[1], Hold)
    assert abs(sent[1].position[k] - (before.position[k] + 0.5)) <= 1.0 * PERIOD + 1e-9
    assert _velocity_steps_within_limits(sent)
