"""core/zmp.py and core/foot_sensors.py against seed 001's equations, hand-worked cases and an
independent CoP: each equation checked on the function the estimator runs."""

from __future__ import annotations

import numpy as np
import pytest

from humanoid_balance.core.foot_sensors import FsrSensors, FtSensors
from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.support import convex_hull, signed_distance
from humanoid_balance.core.zmp import (
    ContactDetector,
    FootGeometry,
    FootSample,
    ZmpEstimator,
    foot_geometry_from_model,
    zmp_of_total_wrench,
)
from humanoid_balance.exceptions import ConfigurationError, InvalidInputError
from humanoid_balance.resources import urdf_path

SOLE = np.array([[0.11, 0.06], [-0.11, 0.06], [-0.11, -0.06], [0.11, -0.06]])


def _translation(x: float, y: float, z: float) -> np.ndarray:
    t = np.eye(4)
    t[:3, 3] = [x, y, z]
    return t


def _rot_z(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    t = np.eye(4)
    t[:2, :2] = [[c, -s], [s, c]]
    return t


def _wrench_at(point: np.ndarray, forces: np.ndarray, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Resultant force and torque about ``point`` of point forces (all in one frame)."""
    return forces.sum(axis=0), np.cross(points - point, forces).sum(axis=0)


def _ft_zmp(sensor_in_sole: np.ndarray, force: np.ndarray, torque: np.ndarray) -> np.ndarray:
    """(p_x, p_y) on the sole of FtSensors.ground_wrench (what the estimator runs), no weight."""
    sensors = FtSensors({"left": FootGeometry(sensor_in_sole, SOLE)})
    return np.array(sensors.ground_wrench("left", FootSample(np.eye(4), force, torque), [0.0] * 6)[6:])


def _weighted_mean(points: list[np.ndarray], forces: list[float]) -> np.ndarray:
    """Eq. 3.27 as printed: the feet's ZMPs weighted by their normal forces."""
    return sum(f * p for p, f in zip(points, forces, strict=True)) / sum(forces)


def test_ft_sensor_on_the_sole_axis_is_kajitas_eq_3_25() -> None:
    """Sensor d above the sole: px = (-ty - fx d)/fz, py = (tx - fy d)/fz (hand-worked numbers)."""
    d = 0.05
    f = np.array([10.0, -4.0, 300.0])
    t = np.array([6.0, -9.0, 1.0])
    zmp = _ft_zmp(_translation(0, 0, d), f, t)
    assert zmp == pytest.approx([(9.0 - 10.0 * d) / 300.0, (6.0 + 4.0 * d) / 300.0])


def test_ft_sensor_5_cm_up_2_cm_aside_equals_the_cop_of_the_contact_forces() -> None:
    """A sensor 5 cm above and 2 cm lateral: the ZMP equals the CoP of the distributed forces."""
    rng = np.random.default_rng(0)
    points = np.column_stack([rng.uniform(-0.1, 0.1, 30), rng.uniform(-0.05, 0.05, 30), np.zeros(30)])
    forces = np.column_stack([rng.normal(0, 5, 30), rng.normal(0, 5, 30), rng.uniform(1, 20, 30)])
    cop = (points * forces[:, 2:3]).sum(axis=0) / forces[:, 2].sum()
    sensor_in_sole = _rot_z(0.3) @ _translation(0.0, 0.02, 0.05)
    sensor_in_sole[:3, 3] = [0.0, 0.02, 0.05]
    f_sole, t_sensor_sole = _wrench_at(sensor_in_sole[:3, 3], forces, points)
    rot = sensor_in_sole[:3, :3]
    zmp = _ft_zmp(sensor_in_sole, rot.T @ f_sole, rot.T @ t_sensor_sole)
    assert zmp == pytest.approx(cop[:2], abs=1e-12)


def test_fsr_zmp_is_the_force_weighted_mean() -> None:
    """Four FSRs, eq. 3.26 on the sole: p = sum(p_j f_j) / sum(f_j) (hand-worked)."""
    positions = np.array([[0.09, 0.05], [0.09, -0.05], [-0.09, 0.05], [-0.09, -0.05]])
    sensors = FsrSensors({"left": FootGeometry(np.eye(4), SOLE, fsr_positions=positions)})
    wrench = sensors.ground_wrench(
        "left", FootSample(np.eye(4), fsr_forces=np.array([10.0, 30.0, 10.0, 50.0])), [0.0] * 6)
    assert wrench[6:] == pytest.approx(((0.09 * 40 - 0.09 * 60) / 100, (0.05 * 20 - 0.05 * 80) / 100))
    assert wrench[:6] == pytest.approx((0.0, 0.0, 100.0, wrench[7] * 100.0, -wrench[6] * 100.0, 0.0))


def test_two_feet_on_level_ground_combine_by_normal_force() -> None:
    """eq. 3.27: on level soles at one height the total wrench's ZMP is
    p = (p_R f_R + p_L f_L) / (f_R + f_L) (hand-worked: 0.075, -0.1)."""
    (lx, ly, fl), (rx, ry, fr) = (0.0, 0.2, 100.0), (0.1, -0.2, 300.0)
    total = zmp_of_total_wrench(0.0, 0.0, fl + fr, ly * fl + ry * fr, -(lx * fl + rx * fr), 0.0)
    assert total == pytest.approx((0.075, -0.1))


def _model_zmp(mass: float, com: np.ndarray, rate: np.ndarray, g: float) -> np.ndarray:
    """The model ZMP of eq. 3.73/3.74 (floor at z = 0) as the RMC computes it."""
    from humanoid_balance.core.rmc import balance_indicators

    return balance_indicators(rate, mass=mass, gravity=g, friction_coefficient=0.5,
                              foot_distance=0.4, com=com).model_zmp


def test_model_zmp_at_rest_is_the_com_projection_and_shifts_with_dL() -> None:
    """eq. 3.73/3.74: at rest the CoM's projection; dLy = +M g 0.01 moves px by -1 cm."""
    mass, g = 55.0, 9.81
    com = np.array([0.02, -0.01, 0.9])
    assert _model_zmp(mass, com, np.zeros(6), g) == pytest.approx(com[:2])
    shifted = _model_zmp(mass, com, np.array([0, 0, 0, 0.0, mass * g * 0.01, 0.0]), g)
    assert shifted[0] == pytest.approx(0.01)
    assert np.all(np.isnan(_model_zmp(mass, com, np.array([0, 0, -mass * g, 0, 0, 0]), g)))


def test_model_zmp_on_the_moon_uses_lunar_gravity() -> None:
    """With g = 9.81/6 the same dL moves the ZMP six times as far."""
    mass, com, rate = 55.0, np.zeros(3), np.array([0, 0, 0, 0.0, 10.0, 0.0])
    earth = _model_zmp(mass, com, rate, 9.81)
    moon = _model_zmp(mass, com, rate, 9.81 / 6)
    assert moon[0] == pytest.approx(6 * earth[0])


def test_margin_is_positive_inside_negative_outside() -> None:
    """The margin is the distance to the nearest edge inside, minus the distance outside."""
    polygon = convex_hull(SOLE)
    assert signed_distance(np.array([0.0, 0.0]), polygon) == pytest.approx(0.06)
    assert signed_distance(np.array([0.10, 0.0]), polygon) == pytest.approx(0.01)
    assert signed_distance(np.array([0.14, 0.0]), polygon) == pytest.approx(-0.03)
    assert signed_distance(np.array([0.14, 0.10]), polygon) == pytest.approx(-0.05)


def test_contact_at_exactly_the_threshold_counts_and_hysteresis_holds() -> None:
    """A foot exactly at the threshold is in contact; it leaves only below threshold - hysteresis."""
    detector = ContactDetector(20.0, 5.0)
    assert detector.step(19.999) is False
    assert detector.step(20.0) is True
    assert detector.step(16.0) is True
    assert detector.step(14.999) is False


def test_contact_detector_refuses_bad_thresholds() -> None:
    """A hysteresis larger than the threshold is a configuration error."""
    with pytest.raises(ConfigurationError, match="hysteresis=30"):
        ContactDetector(20.0, 30.0)


def _feet() -> dict[str, FootGeometry]:
    return {side: FootGeometry(sensor_in_sole=_translation(0, 0, 0.05), contact_points=SOLE)
            for side in ("left", "right")}


def _standing(left_fz: float, right_fz: float, cop_left_x: float = 0.0) -> dict[str, FootSample]:
    return {
        "left": FootSample(_translation(0, 0.2, 0), np.array([0, 0, left_fz]),
                           np.array([0.0, -cop_left_x * left_fz, 0.0])),
        "right": FootSample(_translation(0, -0.2, 0), np.array([0, 0, right_fz]), np.zeros(3)),
    }


def test_single_support_equals_the_supporting_foot() -> None:
    """One foot unloaded: the ZMP is the other foot's and the polygon is that sole alone."""
    estimator = ZmpEstimator(_feet())
    out = estimator.step(_standing(0.0, 500.0))
    assert out.contacts == {"left": False, "right": True}
    assert out.zmp_in_world == pytest.approx(out.foot_zmps_in_world["right"])
    assert out.polygon is not None and len(out.polygon) == 4
    assert out.margin == pytest.approx(0.06)


def test_double_support_polygon_spans_both_soles() -> None:
    """Both feet loaded: the polygon is the hull of both soles; the ZMP lies between the feet."""
    estimator = ZmpEstimator(_feet())
    out = estimator.step(_standing(300.0, 100.0, cop_left_x=0.04))
    assert out.zmp_in_world == pytest.approx([0.03, 0.1, 0.0])
    assert out.margin == pytest.approx(0.11 - 0.03)


def test_no_foot_in_contact_gives_no_zmp() -> None:
    """Both feet below the threshold: no ZMP, no polygon, no margin."""
    out = ZmpEstimator(_feet()).step(_standing(1.0, 2.0))
    assert out.zmp_in_world is None and out.polygon is None and out.margin is None


def test_nan_wrench_is_refused() -> None:
    """A non-finite wrench raises InvalidInputError naming the foot."""
    samples = _standing(300.0, 300.0)
    samples["left"].force_in_sensor = np.array([0.0, np.nan, 300.0])
    with pytest.raises(InvalidInputError, match="left foot: the wrench is not finite"):
        ZmpEstimator(_feet()).step(samples)


@pytest.mark.parametrize(("left", "right"), [(1.5e308, 1.5e308), (1.5e308, 0.75e308)])
def test_wrenches_whose_sum_overflows_are_refused(left: float, right: float) -> None:
    """Issue 35: feet at 1.5e308 N and 0.75e308 N, each finite, overflow in their sum; the
    ZMP was (0, 0) with a 90 mm margin (x / inf = 0). Now the sample is refused, saying why."""
    with pytest.raises(InvalidInputError, match="overflow in their sum"):
        ZmpEstimator(_feet()).step(_standing(left, right, cop_left_x=0.04))


@pytest.mark.parametrize("scale", [1.0, 1e6, 1e300, 0.25e306])
def test_the_zmp_does_not_depend_on_the_wrenches_scale(scale: float) -> None:
    """The same wrenches scaled by 1e-3 ... 1e300 (finite sums) give the same ZMP: the ZMP
    is a ratio of moments to forces."""
    out = ZmpEstimator(_feet()).step(_standing(300.0 * scale, 100.0 * scale, cop_left_x=0.04))
    assert out.zmp_in_world == pytest.approx([0.03, 0.1, 0.0], abs=1e-12)


def test_foot_weight_below_the_sensor_is_compensated() -> None:
    """A sensor above a 1 kg foot reads 9.81 N less; the estimator gives back the ground force."""
    feet = {s: FootGeometry(_translation(0, 0, 0.05), SOLE, mass_below_sensor=1.0,
                            com_below_sensor_in_sensor=np.array([0.0, 0.0, -0.025]))
            for s in ("left", "right")}
    out = ZmpEstimator(feet).step(_standing(300.0 - 9.81, 300.0 - 9.81))
    assert out.normal_forces["left"] == pytest.approx(300.0)


def test_zeroing_removes_an_offset_and_refuses_a_loaded_foot() -> None:
    """Zeroing an unloaded foot removes a bias; zeroing a loaded one is refused with the reason."""
    feet = {s: FootGeometry(_translation(0, 0, 0.05), SOLE, mass_below_sensor=1.0)
            for s in ("left", "right")}
    estimator = ZmpEstimator(feet)
    bias = np.array([2.0, -1.0, 7.0, 0.1, 0.2, 0.0])
    pose = _translation(0, 0.2, 0)
    unloaded_force = np.array([0.0, 0.0, -9.81]) + bias[:3]
    estimator.zero("left", unloaded_force, bias[3:], pose)
    assert estimator.offsets["left"] == pytest.approx(bias)
    with pytest.raises(InvalidInputError, match=r"left foot carries 309\.8 N.*lift the foot"):
        estimator.zero("left", np.array([0.0, 0.0, 300.0]), np.zeros(3), pose)


def test_humanoid_foot_geometry_comes_from_the_urdf() -> None:
    """From the URDF: sensor 5 cm above the sole, a 1 kg foot below it, CoM 2.5 cm below the sensor."""
    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    foot = foot_geometry_from_model(model, sensor_frame="left_foot_ft", sole_frame="left_sole",
                                    foot_link="left_foot", sole_corners=SOLE)
    assert foot.sensor_in_sole[:3, 3] == pytest.approx([0, 0, 0.05])
    assert foot.mass_below_sensor == pytest.approx(1.0)
    assert foot.com_below_sensor_in_sensor == pytest.approx([0, 0, -0.025])


def _ground_wrench_reference(foot: FootGeometry, offset: np.ndarray, sample: FootSample,
                             gravity: float = 9.81) -> tuple[np.ndarray, np.ndarray]:
    """The ground wrench about the sole origin in the sole frame, with arrays: the reading less
    the offset and the foot's weight below the sensor, moved from the sensor to the sole."""
    measured = np.concatenate([sample.force_in_sensor, sample.torque_in_sensor]) - offset
    rotation = (sample.sole_in_world @ foot.sensor_in_sole)[:3, :3]  # world <- sensor
    weight = rotation.T @ np.array([0.0, 0.0, -foot.mass_below_sensor * gravity])
    ground_force = measured[:3] - weight
    ground_torque = measured[3:] - np.cross(foot.com_below_sensor_in_sensor, weight)
    r, p = foot.sensor_in_sole[:3, :3], foot.sensor_in_sole[:3, 3]
    force = r @ ground_force
    return force, r @ ground_torque + np.cross(p, force)


def _zmp_from_wrench(force: np.ndarray, torque: np.ndarray) -> np.ndarray:
    """Eq. 3.24/3.25 on the sole surface, with arrays."""
    return np.array([-torque[1] / force[2], torque[0] / force[2], 0.0])


def test_scalar_estimate_equals_the_reference_formulas_at_random_poses() -> None:
    """step()'s scalar path equals array forms of eq. 3.24/3.25, per foot and on the total wrench.

    Tilted and offset sensors, tilted soles, offsets and foot weight, 200 random cases.
    """
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(7)
    for _ in range(200):
        feet = {}
        samples = {}
        for side, y in (("left", 0.2), ("right", -0.2)):
            sensor = np.eye(4)
            sensor[:3, :3] = Rotation.from_rotvec(rng.normal(0, 0.3, 3)).as_matrix()
            sensor[:3, 3] = [rng.uniform(-0.03, 0.03), rng.uniform(-0.02, 0.02), rng.uniform(0.03, 0.08)]
            feet[side] = FootGeometry(sensor, SOLE, mass_below_sensor=rng.uniform(0, 2),
                                      com_below_sensor_in_sensor=rng.normal(0, 0.02, 3))
            pose = _translation(rng.uniform(-0.01, 0.01), y, rng.uniform(0, 0.01))
            pose[:3, :3] = Rotation.from_rotvec([0, 0, rng.uniform(-0.3, 0.3)]).as_matrix()
            samples[side] = FootSample(pose, rng.normal([0, 0, 250], [20, 20, 80]), rng.normal(0, 8, 3))
        estimator = ZmpEstimator(feet, contact_threshold=20.0)
        for side in feet:
            estimator.offsets[side] = rng.normal(0, 2, 6)
        out = estimator.step(samples)
        zmps, forces = [], []
        for side in feet:
            force, torque = _ground_wrench_reference(feet[side], estimator.offsets[side], samples[side])
            if force[2] < 20.0:
                assert out.foot_zmps_in_world[side] is None
                continue
            local = _zmp_from_wrench(force, torque)
            world = (samples[side].sole_in_world @ np.append(local, 1.0))[:3]
            np.testing.assert_allclose(out.foot_zmps_in_world[side], world, atol=1e-12)
            assert out.normal_forces[side] == pytest.approx(force[2], abs=1e-9)
            zmps.append(world)
            forces.append(force[2])
        if not zmps:
            assert out.zmp_in_world is None
            continue
        expected = _total_wrench_zmp(feet, estimator.offsets, samples,
                                     [s for s in feet if out.foot_zmps_in_world[s] is not None])
        np.testing.assert_allclose(out.zmp_in_world, expected, atol=1e-12)
        assert out.polygon is not None
        assert out.margin == pytest.approx(signed_distance(expected[:2], out.polygon), abs=1e-12)


def _total_wrench_zmp(feet: dict[str, FootGeometry], offsets: dict[str, np.ndarray],
                      samples: dict[str, FootSample], touching: list[str]) -> np.ndarray:
    """Eq. 3.24/3.25 on the sum of the touching feet's ground wrenches in the world (arrays).

    The plane: the feet's ZMP heights weighted by their world-vertical force.
    """
    force_sum, torque_sum, weighted_z = np.zeros(3), np.zeros(3), 0.0
    for side in touching:
        force, torque = _ground_wrench_reference(feet[side], offsets[side], samples[side])
        pose = samples[side].sole_in_world
        f_world = pose[:3, :3] @ force
        force_sum += f_world
        torque_sum += pose[:3, :3] @ torque + np.cross(pose[:3, 3], f_world)
        weighted_z += f_world[2] * (pose @ np.append(_zmp_from_wrench(force, torque), 1.0))[2]
    pz = weighted_z / force_sum[2]
    return np.array([(-torque_sum[1] + pz * force_sum[0]) / force_sum[2],
                     (torque_sum[0] + pz * force_sum[1]) / force_sum[2], pz])


def _tilted_feet_with_contact_forces(rng: np.random.Generator) -> tuple[
        dict[str, np.ndarray], list[tuple[np.ndarray, np.ndarray]]]:
    """Sole poses (tilted up to 8 deg, yawed, offset up to 3 cm in height) and point forces on them."""
    from scipy.spatial.transform import Rotation

    poses, contacts = {}, []
    for side, y in (("left", 0.2), ("right", -0.2)):
        pose = _translation(rng.uniform(-0.05, 0.05), y + rng.uniform(-0.03, 0.03),
                            rng.uniform(0.0, 0.03))
        pose[:3, :3] = Rotation.from_euler(
            "zyx", [rng.uniform(-0.4, 0.4), *rng.uniform(-0.14, 0.14, 2)]).as_matrix()
        poses[side] = pose
        for _ in range(4):  # forces at points of the sole, with a tangential part (friction)
            point_in_sole = np.array([rng.uniform(-0.11, 0.11), rng.uniform(-0.06, 0.06), 0.0])
            force_in_sole = np.array([*rng.normal(0, 15, 2), rng.uniform(30, 120)])
            contacts.append(((pose @ np.append(point_in_sole, 1.0))[:3],
                             pose[:3, :3] @ force_in_sole))
    return poses, contacts


def test_tilted_yawed_offset_soles_give_the_exact_zmp_of_the_total_ground_wrench() -> None:
    """Tilted, yawed, offset soles: the ground forces have no horizontal moment about the estimate.

    The ZMP's definition checked directly: about the estimated point the summed
    moment of the contact forces has zero x and y components (to 0.1 um as a
    position), i.e. it is the exact ZMP of the total ground wrench on its plane.
    The foot-normal-weighted form of eq. 3.27 misses it by millimetres here.
    """
    rng = np.random.default_rng(11)
    sensor_in_sole = _translation(0.01, -0.005, 0.05)
    feet = {side: FootGeometry(sensor_in_sole, SOLE) for side in ("left", "right")}
    worst_eq_327 = 0.0
    for _ in range(100):
        poses, contacts = _tilted_feet_with_contact_forces(rng)
        samples = {}
        for k, side in enumerate(("left", "right")):
            sensor_in_world = poses[side] @ sensor_in_sole
            rotation, origin = sensor_in_world[:3, :3], sensor_in_world[:3, 3]
            force = sum(f for _, f in contacts[4 * k:4 * k + 4])
            torque = sum(np.cross(c - origin, f) for c, f in contacts[4 * k:4 * k + 4])
            samples[side] = FootSample(poses[side], rotation.T @ force, rotation.T @ torque)
        out = ZmpEstimator(feet, gravity=0.0).step(samples)
        assert out.zmp_in_world is not None
        total_force = sum(f for _, f in contacts)
        moment = sum(np.cross(c - out.zmp_in_world, f) for c, f in contacts)
        np.testing.assert_allclose(moment[:2] / total_force[2], 0.0, atol=1e-7)
        old = _weighted_mean([out.foot_zmps_in_world[s] for s in ("left", "right")],
                             [out.normal_forces[s] for s in ("left", "right")])
        worst_eq_327 = max(worst_eq_327, float(np.linalg.norm(old[:2] - out.zmp_in_world[:2])))
    assert worst_eq_327 > 1e-3  # the case is one where the weighting matters


def test_fsr_feet_on_tilted_soles_give_the_zmp_of_their_normal_forces() -> None:
    """FSR mode on tilted soles: no horizontal moment about the estimate from the FSRs' forces."""
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(5)
    fsr = np.array([[0.09, 0.05], [0.09, -0.05], [-0.09, 0.05], [-0.09, -0.05]])
    feet = {s: FootGeometry(_translation(0, 0, 0.05), SOLE, fsr_positions=fsr)
            for s in ("left", "right")}
    for _ in range(50):
        samples, contacts = {}, []
        for side, y in (("left", 0.2), ("right", -0.2)):
            pose = _translation(0.0, y, rng.uniform(0.0, 0.03))
            pose[:3, :3] = Rotation.from_euler("zyx", rng.uniform(-0.14, 0.14, 3)).as_matrix()
            forces = rng.uniform(20, 150, 4)
            samples[side] = FootSample(pose, fsr_forces=forces)
            contacts += [((pose @ np.array([x, yy, 0.0, 1.0]))[:3], pose[:3, 2] * f)
                         for (x, yy), f in zip(fsr, forces, strict=True)]
        out = ZmpEstimator(feet, sensor_type="fsr").step(samples)
        assert out.zmp_in_world is not None
        moment = sum(np.cross(c - out.zmp_in_world, f) for c, f in contacts)
        total = sum(f for _, f in contacts)
        np.testing.assert_allclose(moment[:2] / total[2], 0.0, atol=1e-7)


def test_polygon_follows_moving_feet_between_hull_recomputations() -> None:
    """Feet sliding and turning in small steps: the estimator's polygon is the hull made anew.

    Checked through the margin of the ZMP and of 50 probe points inside and outside.
    """
    rng = np.random.default_rng(3)
    estimator = ZmpEstimator(_feet())
    for k in range(60):
        samples = _standing(300.0, 200.0)
        samples["left"].sole_in_world = _translation(0.0004 * k, 0.2 + 0.0003 * k, 0) @ _rot_z(0.004 * k)
        samples["right"].sole_in_world = _translation(-0.0002 * k, -0.2, 0) @ _rot_z(-0.003 * k)
        out = estimator.step(samples)
        corners = np.vstack([SOLE @ s.sole_in_world[:2, :2].T + s.sole_in_world[:2, 3]
                             for s in samples.values()])
        fresh = convex_hull(corners)
        assert out.polygon is not None
        assert len(out.polygon) == len(fresh)
        assert out.margin == pytest.approx(signed_distance(out.zmp_in_world[:2], fresh), abs=1e-12)
        for probe in rng.uniform([-0.2, -0.4], [0.2, 0.4], (50, 2)):
            assert signed_distance(probe, out.polygon) == pytest.approx(
                signed_distance(probe, fresh), abs=1e-12)
