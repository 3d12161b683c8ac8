"""The MuJoCo humanoid stands on its own, its sensors agree with physics, bad input is refused."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from scipy.spatial import ConvexHull, Delaunay

from humanoid_balance.core import kernels
from humanoid_balance.exceptions import (
    InvalidInputError,
    ModelFileError,
    UnknownJointError,
)
from humanoid_balance.sim import humanoid, robot
from humanoid_balance.sim.humanoid import SIDES, HumanoidSim, SensorNoise

SOLE_HALF = (0.11, 0.06)


@pytest.fixture(scope="module")
def standing() -> dict[str, np.ndarray]:
    """10 s of standing with no command, after 0.5 s of settling, recorded every 10 ms."""
    sim = HumanoidSim()
    sim.settle(0.5)
    q0 = sim.joint_state().position
    record: dict[str, list[np.ndarray]] = {"cop": [], "fz": [], "ft_fz": [], "drift": [], "fsr": []}
    polygon = _support_polygon(sim)
    for _ in range(1000):
        sim.step(10)
        cop = sim.cop()
        assert cop is not None
        record["cop"].append(cop)
        record["fz"].append(np.array(sim.vertical_contact_force()))
        record["ft_fz"].append(np.array(sum(sim.foot_wrench(s)[0][2] for s in SIDES)))
        record["fsr"].append(np.array(sum(sim.fsr_forces(s).sum() for s in SIDES)))
        record["drift"].append(np.abs(sim.joint_state().position - q0).max())
    out = {k: np.array(v) for k, v in record.items()}
    out["polygon"] = polygon
    out["mg"] = np.array(sim.total_mass * 9.81)
    out["feet_weight"] = np.array(2 * 1.0 * 9.81)  # foot links below the sensors: 1 kg each
    return out


def _support_polygon(sim: HumanoidSim) -> np.ndarray:
    corners = []
    for side in SIDES:
        t = sim.sole_transform(side)
        for sx in (-1, 1):
            for sy in (-1, 1):
                corners.append((t @ np.array([sx * SOLE_HALF[0], sy * SOLE_HALF[1], 0, 1]))[:2])
    pts = np.array(corners)
    return pts[ConvexHull(pts).vertices]


def test_cop_stays_inside_the_support_polygon(standing: dict[str, np.ndarray]) -> None:
    """For 10 s of standing the ground-truth CoP lies inside the hull of the two soles."""
    inside = Delaunay(standing["polygon"]).find_simplex(standing["cop"][:, :2]) >= 0
    assert inside.all()


def test_vertical_contact_force_is_the_weight(standing: dict[str, np.ndarray]) -> None:
    """The floor carries M g within 1 % at every sample."""
    assert np.abs(standing["fz"] / standing["mg"] - 1.0).max() <= 0.01


def test_ankle_sensors_read_the_weight_less_the_feet(standing: dict[str, np.ndarray]) -> None:
    """The two ankle F/T sensors read M g less the weight of the feet below them (within 1 %)."""
    expected = standing["mg"] - standing["feet_weight"]
    assert np.abs(standing["ft_fz"] / expected - 1.0).max() <= 0.01


def test_fsrs_read_the_weight(standing: dict[str, np.ndarray]) -> None:
    """The eight FSRs together read M g within 1 % (they are the only contacts)."""
    assert np.abs(standing["fsr"] / standing["mg"] - 1.0).max() <= 0.01


def _contact_readings(sim: HumanoidSim) -> tuple[np.ndarray, np.ndarray]:
    """The FSRs (left 0-3, right 0-3) and the CoP from MuJoCo's contact forces, contact by contact."""
    model, data = sim.model, sim.data
    floor = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    pads = {mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, f"{side}_fsr_{i}_pad"): 4 * s + i
            for s, side in enumerate(SIDES) for i in range(4)}
    fsr, moment, total, wrench = np.zeros(8), np.zeros(3), 0.0, np.zeros(6)
    for k in range(data.ncon):
        contact = data.contact[k]
        other = contact.geom2 if contact.geom1 == floor else contact.geom1
        assert floor in (contact.geom1, contact.geom2) and other in pads
        mujoco.mj_contactForce(model, data, k, wrench)
        fz = float(wrench[:3] @ contact.frame.reshape(3, 3)[:, 2])  # world z of the force
        fsr[pads[other]] += wrench[0]
        moment += fz * contact.pos
        total += fz
    return fsr, moment / total


def test_fsrs_and_cop_equal_the_contact_forces_while_the_arms_move() -> None:
    """The touch sensors read what summing mj_contactForce over each pad's contacts gives
    (to 1e-9 N); the CoP is the contact points weighted by their vertical forces (to
    1e-9 m); over 1.5 s of arm swings."""
    sim = HumanoidSim(arm_acceleration_limits=True)  # swings, not impulses that make it hop
    sim.settle(0.5)
    rng = np.random.default_rng(3)
    arms = tuple(n for n in sim.joint_names if "shoulder" in n or "elbow" in n)
    worst_fsr = worst_cop = 0.0
    for k in range(1500):
        if k % 250 == 0:
            sim.set_targets(arms, 0.4 * rng.standard_normal(len(arms)), None)
        sim.step()
        if k % 10 == 0:
            fsr, cop = _contact_readings(sim)
            measured = np.concatenate([sim.fsr_forces(side) for side in SIDES])
            truth = sim.cop()
            assert truth is not None
            worst_fsr = max(worst_fsr, float(np.abs(measured - fsr).max()))
            worst_cop = max(worst_cop, float(np.abs(truth - cop).max()))
            assert sim.vertical_contact_force() == pytest.approx(fsr.sum(), abs=1e-9)
    assert worst_fsr <= 1e-9 and worst_cop <= 1e-9, (worst_fsr, worst_cop)


@pytest.mark.parametrize("noise", [SensorNoise.nominal(), SensorNoise(), SensorNoise(
    force_n=0.5, fsr_n=0.0, inclinometer_rad=1e-3, joint_position_rad=0.0, torque_nm=0.0)],
    ids=["nominal", "none", "some"])
def test_read_sensors_equals_the_sensors_read_one_by_one(noise: SensorNoise) -> None:
    """read_sensors (mujoco_sim's one read a step) gives what joint_state, com, base_pose,
    foot_wrench and fsr_forces per side, inclinometer_quaternion_xyzw and cop give called in
    that order on a twin with the same seed, bit for bit, the noise included; while the
    arms swing, the inclinometer read every third step."""
    sims = [HumanoidSim(noise=noise, seed=7, arm_acceleration_limits=True) for _ in range(2)]
    arms = tuple(n for n in sims[0].joint_names if "shoulder" in n or "elbow" in n)
    rng = np.random.default_rng(5)
    for k in range(300):
        if k % 100 == 0:
            targets = 0.4 * rng.standard_normal(len(arms))
            for sim in sims:
                sim.set_targets(arms, targets, None)
        for sim in sims:
            sim.step()
        inclinometer = k % 3 == 0
        got = sims[0].read_sensors(inclinometer=inclinometer)
        one = sims[1]
        js = one.joint_state()
        expected = [js.position, js.velocity, js.effort, one.com(), *one.base_pose()]
        for side in SIDES:
            expected += [np.concatenate(one.foot_wrench(side)), one.fsr_forces(side)]
        if inclinometer:
            expected.append(one.inclinometer_quaternion_xyzw())
        expected.append(one.cop())
        actual = [got.joints.position, got.joints.velocity, got.joints.effort, got.com,
                  got.base_position, got.base_orientation_xyzw]
        for i in range(len(SIDES)):
            actual += [got.wrench[i], got.fsr[i]]
        if inclinometer:
            actual.append(got.inclinometer_xyzw)
        else:
            assert got.inclinometer_xyzw is None
        actual.append(got.cop)
        assert got.joints.names == js.names
        for n, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert (a is None) == (e is None), (k, n)
            if a is not None:
                assert np.asarray(a).tobytes() == np.asarray(e).tobytes(), (k, n)


def test_no_joint_drifts_more_than_1_mrad(standing: dict[str, np.ndarray]) -> None:
    """No joint moves more than 1 mrad over 10 s of standing."""
    assert standing["drift"].max() <= 1e-3


def test_a_missing_urdf_is_a_clear_error(tmp_path: object) -> None:
    """A URDF path that does not exist raises ModelFileError naming the path."""
    with pytest.raises(ModelFileError, match=r"no_such\.urdf.*no such file"):
        HumanoidSim("/nonexistent/no_such.urdf")


def test_a_urdf_that_does_not_parse_is_a_clear_error(tmp_path: pytest.TempPathFactory) -> None:
    """A file that is not a URDF raises ModelFileError saying MuJoCo cannot load it."""
    path = tmp_path / "broken.urdf"  # type: ignore[operator]
    path.write_text("<robot name='x'><link name=")
    with pytest.raises(ModelFileError, match="MuJoCo cannot load it"):
        HumanoidSim(path)


def test_unknown_joint_in_a_command_is_refused() -> None:
    """A target for a joint the model does not have raises and changes nothing."""
    sim = HumanoidSim()
    before = sim.data.ctrl.copy()
    with pytest.raises(UnknownJointError, match="nose_wiggle"):
        sim.set_targets(["right_elbow", "nose_wiggle"], [0.5, 0.1])
    sim.step()
    assert sim.data.ctrl == pytest.approx(before)


def test_nan_in_a_command_is_refused_and_the_simulation_keeps_running() -> None:
    """A NaN target raises, nothing is applied, and stepping continues with finite state."""
    sim = HumanoidSim()
    with pytest.raises(InvalidInputError, match="non-finite positions for joints"):
        sim.set_targets(["right_elbow"], [float("nan")])
    sim.step(100)
    assert np.all(np.isfinite(sim.data.qpos))
    assert abs(sim.joint_state().position[sim.joint_names.index("right_elbow")]) < 1e-3


def test_position_and_velocity_targets_move_a_joint() -> None:
    """A position target is reached; a velocity target moves the joint at that rate."""
    sim = HumanoidSim()
    sim.settle(0.2)
    i = sim.joint_names.index("right_elbow")
    sim.set_targets(["right_elbow"], [0.5])
    sim.step(500)
    assert sim.joint_state().position[i] == pytest.approx(0.5, abs=0.01)
    sim.set_targets(["right_elbow"], velocities=[0.4])
    start = sim.joint_state().position[i]
    sim.step(500)
    assert sim.joint_state().position[i] - start == pytest.approx(0.2, abs=0.01)


def _drive(sim: HumanoidSim, steps: int = 1500) -> np.ndarray:
    """The servo controls, positions and sensors of ``steps`` steps under changing commands:
    position goals with velocities (late, so ramped within the arms' acceleration limits),
    the waist's goals, brakes, and one goal held (the ramp's closing path)."""
    rng = np.random.default_rng(11)
    arms = [n for n in sim.joint_names if "shoulder" in n or "elbow" in n or "wrist" in n]
    waist = [n for n in sim.joint_names if "waist" in n]
    rows = []
    for k in range(steps):
        if k % 7 == 0 and k < 1000:
            sim.set_targets(arms, 0.3 * rng.standard_normal(len(arms)),
                            0.5 * rng.standard_normal(len(arms)), age_s=float(rng.uniform(0, 0.01)))
        if k % 50 == 3:
            sim.set_targets(waist, 0.05 * rng.standard_normal(len(waist)), None)
        if k % 400 == 200:
            sim.brake_targets(np.arange(len(sim.joint_names)), 0.01)
        if k >= 1000:
            sim.set_targets(arms, np.full(len(arms), 0.2), None)
        sim.step()
        r = sim.read_sensors(inclinometer=k % 10 == 0)
        rows.append(np.concatenate([sim.data.ctrl, sim.data.qpos, r.joints.position, r.wrench.ravel(),
                                    r.fsr.ravel(), np.zeros(3) if r.cop is None else r.cop]))
    return np.array(rows)


@pytest.mark.skipif(not kernels.COMPILED, reason="numba is not installed")
def test_the_step_kernels_compiled_equal_them_interpreted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The servo targets' and the sensors' kernels compiled give, bit for bit, what their
    plain-Python forms (a robot without numba) give."""
    noise = SensorNoise.nominal()
    compiled_run = _drive(HumanoidSim(noise=noise, seed=3, arm_acceleration_limits=True))
    for module, names in ((robot, ("_servo_step", "_limited_targets", "_toward_goal",
                                   "_servo_controls", "all_finite")),
                          (humanoid, ("_readings", "_contacts"))):
        for name in names:
            monkeypatch.setattr(module, name, getattr(module, name).py_func)
    interpreted = _drive(HumanoidSim(noise=noise, seed=3, arm_acceleration_limits=True))
    np.testing.assert_array_equal(compiled_run, interpreted)


@pytest.mark.skipif(not kernels.COMPILED, reason="numba is not installed")
def test_no_step_waits_for_the_compiler() -> None:
    """A simulation built compiles (or loads) its kernels: its steps compile nothing."""
    sim = HumanoidSim(noise=SensorNoise.nominal(), seed=3, arm_acceleration_limits=True)
    dispatchers = [robot._servo_step, robot._limited_targets, robot._toward_goal,
                   robot._servo_controls, humanoid._readings, humanoid._contacts,
                   kernels.all_finite]
    before = [len(d.signatures) for d in dispatchers]
    _drive(sim, steps=1100)
    assert [len(d.signatures) for d in dispatchers] == before


def _penetration_mm(sim: HumanoidSim) -> float:
    """The sole pads' deepest penetration into the floor [mm], standing."""
    return -1e3 * min(sim.data.contact[i].dist for i in range(sim.data.ncon))


def test_the_contact_time_constant_sets_the_pads_and_floors_stiffness() -> None:
    """The default is MuJoCo's (0.02 s: the robot sinks 0.81 mm); at a tenth of it 0.017 mm,
    on pads and floor alike."""
    default = HumanoidSim()
    default.settle(1.0)
    stiff = HumanoidSim(contact_timeconst=0.002)
    stiff.settle(1.0)
    for sim, timeconst in ((default, 0.02), (stiff, 0.002)):
        geoms = [*sim._pad_geoms, mujoco.mj_name2id(sim.model, mujoco.mjtObj.mjOBJ_GEOM, "floor")]
        assert sim.model.geom_solref[geoms] == pytest.approx(np.tile([timeconst, 1.0], (9, 1)))
        assert sim.data.ncon == 8
    assert _penetration_mm(default) == pytest.approx(0.81, abs=0.01)
    assert _penetration_mm(stiff) == pytest.approx(0.017, abs=0.002)


@pytest.mark.parametrize("timeconst", [float("nan"), 0.0, 0.0019])
def test_a_contact_time_constant_under_two_steps_is_refused(timeconst: float) -> None:
    with pytest.raises(InvalidInputError, match=r"contact_timeconst=.* at least two physics steps"):
        HumanoidSim(contact_timeconst=timeconst)


def test_the_integrator_is_the_one_asked_and_an_unknown_one_is_refused() -> None:
    """``rk4`` (the strike experiment's) stands as the default does: the weight on the floor,
    the joints where they were."""
    sim = HumanoidSim(integrator="rk4", timestep=0.00025)
    assert sim.model.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4
    assert HumanoidSim().model.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    q0 = sim.joint_state().position
    sim.settle(1.0)
    weight = float(sim.model.body_subtreemass[1]) * 9.81
    assert sim.vertical_contact_force() == pytest.approx(weight, rel=1e-6)
    assert np.abs(sim.joint_state().position - q0).max() < 1e-5  # 4.1e-6 rad, as implicitfast
    with pytest.raises(InvalidInputError, match=r"integrator='euler': expected one of"):
        HumanoidSim(integrator="euler")


def test_an_rk4_step_too_long_for_the_servos_damping_is_refused() -> None:
    """RK4 integrates the servos' damping explicitly: the default humanoid's fastest rate is
    3865 / s, so 1 ms (r dt = 3.9, beyond RK4's 2.785) is refused with the longest step it
    takes, 0.5 ms is taken."""
    with pytest.raises(InvalidInputError, match=r"decays at up to 3865 / s.* up to 0\.000647 s"):
        HumanoidSim(integrator="rk4", timestep=0.001)
    assert HumanoidSim(integrator="rk4", timestep=0.0005).timestep == 0.0005
