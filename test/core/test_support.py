"""The one support polygon (core/support.py): from the URDF's contact frames, as the physics has it."""

from __future__ import annotations

import numpy as np
import pytest

from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.support import SupportPolygon, convex_hull, signed_distance
from humanoid_balance.core.zmp import FootSample, humanoid_zmp_estimator
from humanoid_balance.exceptions import ConfigurationError, InvalidInputError
from humanoid_balance.resources import urdf_path

PADS = np.array([[0.09, 0.05], [0.09, -0.05], [-0.09, 0.05], [-0.09, -0.05]])


@pytest.fixture(scope="module")
def model() -> RobotModel:
    """The seed humanoid, world = the balance frame W."""
    return RobotModel(urdf_path("humanoid"), world_frame="W")


def _pose(x: float, y: float, yaw: float = 0.0) -> np.ndarray:
    c, s = np.cos(yaw), np.sin(yaw)
    pose = np.eye(4)
    pose[:2, :2] = [[c, -s], [s, c]]
    pose[:2, 3] = [x, y]
    return pose


def test_seed_contact_points_are_the_urdf_fsr_pads(model: RobotModel) -> None:
    """From the URDF alone: each foot's contact points are its four FSR frames, in frame order."""
    polygon = SupportPolygon.from_model(model)
    assert polygon.sides == ("left", "right")
    for side in polygon.sides:
        np.testing.assert_allclose(polygon.points_in_sole[side], PADS, atol=1e-12)


def test_polygon_is_where_mujoco_touches_the_floor(model: RobotModel) -> None:
    """The MuJoCo humanoid collides with the floor through one pad per contact point, nothing else."""
    import mujoco

    from humanoid_balance.sim.humanoid import PAD_RADIUS, HumanoidSim

    sim = HumanoidSim()
    m, d = sim.model, sim.data
    mujoco.mj_forward(m, d)
    polygon = SupportPolygon.from_model(model)
    floor = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    colliding = {mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) for g in range(m.ngeom)
                 if g != floor and (m.geom_contype[g] & m.geom_conaffinity[floor]
                                    or m.geom_conaffinity[g] & m.geom_contype[floor])}
    assert colliding == {f"{s}_fsr_{i}_pad" for s in polygon.sides for i in range(4)}
    for side in polygon.sides:
        sole = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, f"{side}_sole")
        rotation, origin = d.xmat[sole].reshape(3, 3), d.xpos[sole]
        lowest = []
        for i in range(4):
            geom = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, f"{side}_fsr_{i}_pad")
            centre_in_sole = rotation.T @ (d.geom_xpos[geom] - origin)
            lowest.append(centre_in_sole - [0.0, 0.0, PAD_RADIUS])  # where the sphere meets the floor
        np.testing.assert_allclose(np.array(lowest), np.c_[polygon.points_in_sole[side], np.zeros(4)],
                                   atol=1e-9)


def test_margin_of_two_feet_inside_and_outside() -> None:
    """Two feet 0.2 m apart: margin 0.05 m at the centre, -0.03 m 0.03 m beyond the front edge."""
    polygon = SupportPolygon({"left": PADS, "right": PADS})
    polygon.update({"left": _pose(0.0, 0.1), "right": _pose(0.0, -0.1)})
    assert polygon.margin([0.0, 0.0]) == pytest.approx(0.09)
    assert polygon.margin([0.0, 0.12]) == pytest.approx(0.03)
    assert polygon.margin([0.12, 0.0]) == pytest.approx(-0.03)
    assert polygon.margin([0.12, 0.19]) == pytest.approx(-np.hypot(0.03, 0.04))


def test_single_support_is_that_foot_alone() -> None:
    """Only the right foot in contact: the polygon is its four pads, turned and moved with its sole."""
    polygon = SupportPolygon({"left": PADS, "right": PADS})
    pose = _pose(0.05, -0.1, 0.3)
    vertices = polygon.update({"left": _pose(0.0, 0.1), "right": pose}, ["right"])
    expected = (pose @ np.c_[PADS, np.zeros(4), np.ones(4)].T).T[:, :2]
    assert sorted(map(tuple, np.round(vertices, 12))) == sorted(map(tuple, np.round(expected, 12)))


def test_margin_equals_the_independent_signed_distance() -> None:
    """margin() equals signed_distance() on the same hull at 500 random points, inside and out."""
    rng = np.random.default_rng(3)
    polygon = SupportPolygon({"left": PADS, "right": PADS})
    vertices = polygon.update({"left": _pose(0.01, 0.11, 0.2), "right": _pose(-0.02, -0.1, -0.1)})
    for point in rng.uniform(-0.3, 0.3, (500, 2)):
        assert polygon.margin(point) == pytest.approx(signed_distance(point, vertices), abs=1e-12)


def test_same_poses_give_the_cached_polygon() -> None:
    """Unchanged poses and contacts: the same vertex array; a new pose: a new one."""
    polygon = SupportPolygon({"left": PADS, "right": PADS})
    soles = {"left": _pose(0.0, 0.1), "right": _pose(0.0, -0.1)}
    first = polygon.update(soles)
    assert polygon.update({k: v.copy() for k, v in soles.items()}) is first
    assert polygon.update({**soles, "left": _pose(0.01, 0.1)}) is not first


def test_convex_hull_is_counter_clockwise_without_collinear_points() -> None:
    """A square with edge midpoints: the four corners, counter-clockwise (positive area)."""
    points = np.array([[0, 0], [1, 0], [2, 0], [2, 2], [0, 2], [1, 2], [0, 1]], dtype=float)
    hull = convex_hull(points)
    area = 0.5 * np.sum(hull[:, 0] * np.roll(hull[:, 1], -1) - np.roll(hull[:, 0], -1) * hull[:, 1])
    assert (len(hull), area) == (4, pytest.approx(4.0))


def test_no_foot_in_contact_has_no_polygon() -> None:
    """No foot in contact: refused with the reason; margin before any polygon: refused."""
    polygon = SupportPolygon({"left": PADS})
    with pytest.raises(InvalidInputError, match="call update"):
        polygon.margin([0.0, 0.0])
    with pytest.raises(InvalidInputError, match="no foot in contact: no support polygon"):
        polygon.update({"left": np.eye(4)}, [])


def test_non_finite_point_has_no_margin() -> None:
    """A NaN point gets no margin (no NaN or inf comes out)."""
    polygon = SupportPolygon({"left": PADS})
    polygon.update({"left": np.eye(4)})
    with pytest.raises(InvalidInputError, match="finite point"):
        polygon.margin([float("nan"), 0.0])


def test_contact_frame_off_the_sole_is_refused(model: RobotModel) -> None:
    """A contact frame above the sole surface (the F/T frame, 50 mm up) is refused, naming it."""
    with pytest.raises(ConfigurationError, match=r"'left_foot_ft' is 50\.0 mm off the surface"):
        SupportPolygon.from_model(model, contact_frames={"left": ["left_foot_ft"]})


def test_estimator_and_update_at_give_one_margin(model: RobotModel) -> None:
    """The estimator's published margin equals SupportPolygon.update_at(model, q).margin(zmp)."""
    q = model.neutral()
    q[model.q_index(["left_hip_yaw", "right_hip_roll"])] = [0.1, -0.05]
    estimator = humanoid_zmp_estimator(model, "fsr")
    soles = {s: model.frame_transform(f"{s}_sole", q) for s in ("left", "right")}
    out = estimator.step({s: FootSample(soles[s], fsr_forces=np.array([50.0, 80.0, 60.0, 70.0]))
                          for s in soles})
    assert out.zmp_in_world is not None and out.margin is not None
    polygon = SupportPolygon.from_model(model)
    polygon.update_at(model, q)
    assert polygon.margin(out.zmp_in_world) == pytest.approx(out.margin, abs=1e-12)
