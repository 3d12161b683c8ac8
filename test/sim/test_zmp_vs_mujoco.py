"""The ZMP estimator on noise-free MuJoCo sensors against the simulator's contact-force CoP.

The estimator gets what the zmp_estimator node gets: joint positions (sole poses
through RobotModel, world = W) and the foot sensors. Ground truth: the CoP of
MuJoCo's contact forces (HumanoidSim.cop).
"""

from __future__ import annotations

import numpy as np
import pytest

from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.strike_trajectory import RIGHT_INITIAL_DEG, StrikeTrajectory, arm_pose
from humanoid_balance.core.zmp import FootSample, humanoid_zmp_estimator
from humanoid_balance.resources import urdf_path
from humanoid_balance.sim.humanoid import SIDES, HumanoidSim


def _run(sensor_type: str, moving: bool, seconds: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    """(estimated, true) ZMP x, y over a run sampled every 2 ms.

    The arm motion is the seed-000 strike at the paper's 1.8 m/s, without balance
    control (the ZMP travels most that way), starting from its initial pose.
    """
    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    sim = HumanoidSim()
    sim.reset(arm_pose("right", RIGHT_INITIAL_DEG))
    sim.settle(0.3)
    estimator = humanoid_zmp_estimator(model, sensor_type)
    strike = StrikeTrajectory(model, arm="right", start_time=0.4)
    q = model.neutral()
    estimated, truth = [], []
    for _ in range(round(seconds / 0.002)):
        if moving:
            ref = strike.sample(sim.time)
            sim.set_targets(strike.joint_names, ref.position, ref.velocity)
        sim.step(2)
        js = sim.joint_state()
        q[model.q_index(js.names)] = js.position
        samples = {}
        for side in SIDES:
            force, torque = sim.foot_wrench(side)
            samples[side] = FootSample(model.frame_transform(f"{side}_sole", q), force, torque,
                                       sim.fsr_forces(side))
        out = estimator.step(samples)
        cop = sim.cop()
        assert out.zmp_in_world is not None and cop is not None
        estimated.append(out.zmp_in_world[:2])
        truth.append(cop[:2])
    return np.array(estimated), np.array(truth)


@pytest.mark.parametrize("moving", [False, True], ids=["standing", "strike"])
def test_ft_zmp_matches_the_contact_cop(moving: bool) -> None:
    """F/T mode: RMS error <= 1 mm and max <= 3 mm, standing and during the fast strike."""
    est, true = _run("ft", moving)
    err = np.linalg.norm(est - true, axis=1)
    print(f"F/T {'strike' if moving else 'standing'}: RMS {np.sqrt(np.mean(err**2)) * 1e3:.4f} mm, "
          f"max {err.max() * 1e3:.4f} mm, ZMP travel {np.ptp(true, axis=0).max() * 1e3:.1f} mm")
    assert np.sqrt(np.mean(err**2)) <= 1e-3
    assert err.max() <= 3e-3


def test_fsr_zmp_matches_the_contact_cop_during_the_strike() -> None:
    """FSR mode with four FSRs per foot: RMS error <= 5 mm during the fast strike."""
    est, true = _run("fsr", True)
    err = np.linalg.norm(est - true, axis=1)
    print(f"FSR strike: RMS {np.sqrt(np.mean(err**2)) * 1e3:.4f} mm, max {err.max() * 1e3:.4f} mm")
    assert np.sqrt(np.mean(err**2)) <= 5e-3


def test_one_foot_unloaded_gives_the_other_foots_zmp() -> None:
    """A foot whose sensor reads only its own weight is out of contact; the ZMP is the other foot's."""
    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    sim = HumanoidSim()
    sim.settle(0.3)
    estimator = humanoid_zmp_estimator(model, "ft")
    q = model.neutral()
    js = sim.joint_state()
    q[model.q_index(js.names)] = js.position
    samples = {}
    for side in SIDES:
        force, torque = sim.foot_wrench(side)
        if side == "left":  # lifted: the sensor carries the foot's weight only
            force, torque = np.array([0.0, 0.0, -9.81]), np.array([0.0, 0.0, 0.0])
        samples[side] = FootSample(model.frame_transform(f"{side}_sole", q), force, torque)
    out = estimator.step(samples)
    assert out.contacts == {"left": False, "right": True}
    assert out.zmp_in_world == pytest.approx(out.foot_zmps_in_world["right"])
    # the ZMP near the right foot's centre: 0.05 m from the side edge of its pads (±0.05 m in y)
    assert out.margin == pytest.approx(0.05, abs=2e-3)
