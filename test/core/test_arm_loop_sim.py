"""ArmLoop in lock-step with the MuJoCo humanoid (no ROS), like the waist's rig.

Each 2 ms cycle: the simulation's joint states and the measured stability margin
(its contact CoP against the one :class:`~humanoid_balance.core.support.SupportPolygon`)
go into ``ArmLoop.cycle``; the command goes to the servos; the physics steps two
1 ms steps. One run (module fixture), in phases: the job arm raised at 1 rad/s;
then the guard's slow margin raised at run time above the measured margin; then
the joint states stop (the loop holds).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pytest

from humanoid_balance.core.arm_controller import GroundArmController
from humanoid_balance.core.arm_loop import (
    ArmLoop,
    ArmLoopConfig,
    Command,
    Hold,
    JobInput,
    MeasuredMargin,
    MeasuredState,
)
from humanoid_balance.core.joint_limits import arm_acceleration_limit
from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.support import SupportPolygon
from humanoid_balance.resources import urdf_path
from humanoid_balance.sim.humanoid import SIDES, HumanoidSim

pytestmark = pytest.mark.slow

PERIOD = 0.002
POSE = {"right_shoulder_pitch": -0.3, "right_elbow": 0.8, "left_shoulder_pitch": -0.3,
        "left_elbow": 0.8}
JOB = "right_shoulder_pitch"
ASKED = -1.0  # rad/s
FREE_END, GUARD_END, END = 0.3, 0.6, 0.8  # s of control: phase ends


@dataclass
class Run:
    """What the rig recorded, one row per cycle."""

    t: np.ndarray
    names: tuple[str, ...]
    velocity: np.ndarray  # commanded
    measured: np.ndarray  # the sim's arm positions (command order)
    measured_velocity: np.ndarray
    guard_scale: np.ndarray
    kinds: list[str]  # "command" | "hold"
    sole_shift_m: float
    margin_m: np.ndarray


@pytest.fixture(scope="module")
def run() -> Run:
    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    sim = HumanoidSim()
    sim.reset(POSE)
    sim.settle(0.3)
    controller = GroundArmController(model, position_margin=0.02)
    state = MeasuredState(model.joint_names, model.q_index(list(model.joint_names)), model.neutral())
    loop = ArmLoop(controller, state, ArmLoopConfig())
    polygon = SupportPolygon.from_model(model)
    sim_to_names = [list(sim.joint_names).index(n) for n in controller.names]
    soles0 = np.array([sim.sole_transform(s)[:3, 3] for s in SIDES])
    rows: dict[str, list] = {k: [] for k in ("t", "velocity", "measured", "measured_velocity",
                                            "guard_scale", "kinds", "margin")}
    start = sim.time
    while sim.time - start < END - 1e-9:
        t = sim.time - start
        sample = sim.joint_state()
        if t < GUARD_END:  # then the joint states stop
            state.update_joints(tuple(sample.names), sample.position, sim.time)
        if FREE_END <= t < FREE_END + PERIOD / 2:
            loop.set_config(replace(loop.config, guard_slow_margin_m=0.2, guard_hold_margin_m=0.0))
        polygon.update({s: sim.sole_transform(s) for s in SIDES})
        cop = sim.cop()
        margin = None if cop is None else MeasuredMargin(polygon.margin(cop[:2]), sim.time)
        job = JobInput(sim.time, joint_names=(JOB, *controller.job_names[1:]),
                       joint_velocities=np.array([ASKED] + [0.0] * 6))
        out = loop.cycle(sim.time, state, job, margin)
        assert isinstance(out, (Command, Hold))
        sim.set_targets(out.names, out.position - out.velocity * PERIOD, out.velocity)
        sim.step(round(PERIOD / sim.timestep))
        after = sim.joint_state()
        rows["t"].append(t)
        rows["velocity"].append(out.velocity)
        rows["measured"].append(after.position[sim_to_names])
        rows["measured_velocity"].append(after.velocity[sim_to_names])
        rows["guard_scale"].append(loop.guard_scale)
        rows["kinds"].append("command" if isinstance(out, Command) else "hold")
        rows["margin"].append(np.nan if margin is None else margin.value_m)
    soles = np.array([sim.sole_transform(s)[:3, 3] for s in SIDES])
    return Run(np.array(rows["t"]), controller.names, np.array(rows["velocity"]),
               np.array(rows["measured"]), np.array(rows["measured_velocity"]),
               np.array(rows["guard_scale"]), rows["kinds"],
               float(np.abs(soles - soles0)[:, :2].max()), np.array(rows["margin"]))


def _slope(run: Run, lo: float, hi: float) -> float:
    window = (run.t >= lo) & (run.t < hi)
    return float(np.polyfit(run.t[window], run.measured[window, 0], 1)[0])


def test_the_job_arm_moves_at_the_asked_speed(run: Run) -> None:
    """Free phase: the simulated right shoulder pitch turns at the asked -1 rad/s (within 3 %)."""
    assert _slope(run, 0.1, FREE_END) == pytest.approx(ASKED, rel=0.03)


def test_the_guard_slows_the_job_arm_by_its_scale(run: Run) -> None:
    """Slow margin raised at run time above the measured margin: the arm turns at scale x asked."""
    window = (run.t >= FREE_END + 0.1) & (run.t < GUARD_END)
    scale = float(np.mean(run.guard_scale[window]))
    assert 0.05 < scale < 0.9
    assert _slope(run, FREE_END + 0.1, GUARD_END) == pytest.approx(scale * ASKED, rel=0.1)


def test_no_command_steps_beyond_the_acceleration_limits(run: Run) -> None:
    """Every command, the hold's included, changes each velocity by at most a dt from the last."""
    accel = np.array([arm_acceleration_limit(n) for n in run.names])
    assert np.all(np.abs(np.diff(run.velocity, axis=0)) <= accel * PERIOD + 1e-9)


def test_stopped_joint_states_bring_the_arms_to_rest(run: Run) -> None:
    """Joint states stop: the loop holds and the simulated arms come to rest (< 0.01 rad/s)."""
    assert "hold" in run.kinds[-20:] and run.kinds[-1] == "hold"
    assert np.abs(run.measured_velocity[-1]).max() < 0.01


def test_the_feet_stay_put(run: Run) -> None:
    """Over the whole run the soles slide less than 1 mm and the measured margin stays positive."""
    assert run.sole_shift_m < 1e-3
    assert np.nanmin(run.margin_m) > 0.0
