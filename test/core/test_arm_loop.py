"""ArmLoop.cycle without ROS: stale inputs, the balance guard, holds, dt, run-time switches."""

from __future__ import annotations

import math

import numpy as np
import pytest

from humanoid_balance.core.arm_controller import GroundArmController
from humanoid_balance.core.arm_loop import (
    ArmLoop,
    ArmLoopConfig,
    Command,
    Hold,
    JobInput,
    LoopState,
    MeasuredMargin,
    MeasuredState,
)
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
    rig.run(200, {"right_shoulder_pitch": -1.7, "right_elbow": 1.0})
    moving = rig.loop._cmd_v.copy()
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
    (1.5, 10 * PERIOD, 0),  # beyond MAX_LAG_S: a restart, 10 periods
])
def test_a_stamp_gap_is_integrated_whole_up_to_the_lag_limit(
        model: RobotModel, gap_s: float, integrated_s: float, counted: int) -> None:
    """Stamp-triggered cycles (lock-step, joint_states trigger): the commands' consumer went on
    with the last velocity over the gap, so the next command covers all of it (up to 1 s)."""
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
    from humanoid_balance.core.arm_loop import controller_from_parameters
    from humanoid_balance.core.zmp import humanoid_zmp_estimator
    from humanoid_balance.params.arm_balance import SPEC

    _, controller = controller_from_parameters(SPEC.coerce_all(SPEC.defaults()))
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
