"""The one foot layout (core/foot_layout.py): frame names from the parameters, points from the URDF."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml

from humanoid_balance.core.foot_layout import FootLayout
from humanoid_balance.core.model import RobotModel
from humanoid_balance.exceptions import ConfigurationError, UnknownFrameError
from humanoid_balance.params.zmp_estimator import SPEC
from humanoid_balance.resources import config_path, urdf_path

SIDES = ("left", "right")


@pytest.fixture(scope="module")
def model() -> RobotModel:
    """The seed humanoid, world = the balance frame W."""
    return RobotModel(urdf_path("humanoid"), world_frame="W")


def _in_sole_by_pinocchio(side: str, frame: str) -> np.ndarray:
    """A frame's (x, y, z) in its sole frame, from pinocchio directly (no RobotModel, no support)."""
    pin_model = pin.buildModelFromUrdf(str(urdf_path("humanoid")))
    data = pin_model.createData()
    pin.forwardKinematics(pin_model, data, pin.neutral(pin_model))
    pin.updateFramePlacements(pin_model, data)
    sole = data.oMf[pin_model.getFrameId(f"{side}_sole")]
    return np.asarray(sole.actInv(data.oMf[pin_model.getFrameId(frame)]).translation)


def test_seed_names_the_soles_and_four_pads() -> None:
    """The seed layout: {side}_sole, contact and FSR frames {side}_fsr_{0..3}."""
    layout = FootLayout.seed()
    assert layout.sides == SIDES
    for side in SIDES:
        assert layout.sole_frames[side] == f"{side}_sole"
        assert layout.contact_frames[side] == tuple(f"{side}_fsr_{i}" for i in range(4))
        assert layout.fsr_frames[side] == layout.contact_frames[side]


def test_package_yaml_is_the_seed_layout() -> None:
    """config/zmp.yaml names the seed humanoid's frames."""
    assert FootLayout.from_zmp_yaml() == FootLayout.seed()


def test_from_yaml_matches_the_file_text() -> None:
    """Each side's frames are those written in config/zmp.yaml, in the file's order."""
    text = yaml.safe_load(config_path("zmp.yaml").read_text())
    written = text["/**/zmp_estimator"]["ros__parameters"]
    layout = FootLayout.from_zmp_yaml()
    for side in SIDES:
        assert layout.sole_frames[side] == written[side]["sole_frame"]
        assert list(layout.contact_frames[side]) == written[side]["contact_frames"]
        assert list(layout.fsr_frames[side]) == written[side]["fsr_frames"]


def test_spec_defaults_are_the_seed_layout() -> None:
    """zmp_estimator's parameter defaults give the seed layout (flat parameter names)."""
    assert FootLayout.from_zmp_values(SPEC.defaults()) == FootLayout.seed()


def test_team_file_overrides_the_package_file(tmp_path: Path) -> None:
    """A team's file changes the frames it names; the package's file gives the others."""
    team = tmp_path / "team.yaml"
    team.write_text("/**/zmp_estimator:\n  ros__parameters:\n    left:\n"
                    "      contact_frames: [left_fsr_0, left_fsr_1, left_fsr_3]\n")
    layout = FootLayout.from_zmp_yaml(team)
    assert layout.contact_frames["left"] == ("left_fsr_0", "left_fsr_1", "left_fsr_3")
    assert layout.contact_frames["right"] == FootLayout.seed().contact_frames["right"]
    assert layout.fsr_frames["left"] == FootLayout.seed().fsr_frames["left"]


def test_nested_values_read_like_flat_ones() -> None:
    """``{side}: {sole_frame: ...}`` (a YAML tree) gives the layout of the flat names."""
    nested = {side: {"sole_frame": f"{side}_sole",
                     "contact_frames": [f"{side}_fsr_{i}" for i in range(4)],
                     "fsr_frames": [f"{side}_fsr_{i}" for i in range(4)]} for side in SIDES}
    assert FootLayout.from_zmp_values(nested) == FootLayout.seed()


def test_contact_points_are_the_urdf_frames_in_the_sole(model: RobotModel) -> None:
    """Each contact point is its frame's placement in the sole frame, by pinocchio, on z = 0."""
    points = FootLayout.seed().contact_points_in_sole(model)
    for side in SIDES:
        expected = np.array([_in_sole_by_pinocchio(side, f"{side}_fsr_{i}") for i in range(4)])
        np.testing.assert_allclose(expected[:, 2], 0.0, atol=1e-12)
        np.testing.assert_allclose(points[side], expected[:, :2], atol=1e-12)
        np.testing.assert_allclose(np.abs(points[side]), [[0.09, 0.05]] * 4, atol=1e-12)


def test_fsr_points_follow_the_fsr_frame_order(model: RobotModel) -> None:
    """FSR points come in the order the layout names the frames (the array's order)."""
    seed = FootLayout.seed()
    order = ("left_fsr_3", "left_fsr_0", "left_fsr_2", "left_fsr_1")
    layout = FootLayout(seed.sole_frames, seed.contact_frames, {**seed.fsr_frames, "left": order})
    points = layout.fsr_points_in_sole(model)["left"]
    expected = np.array([_in_sole_by_pinocchio("left", f)[:2] for f in order])
    np.testing.assert_allclose(points, expected, atol=1e-12)


def test_support_polygon_at_neutral_is_the_hull_of_the_eight_pads(model: RobotModel) -> None:
    """Both feet down at the neutral pose: the polygon's vertices are the outer pads in W."""
    layout = FootLayout.seed()
    polygon = layout.support_polygon(model)
    vertices = polygon.update(layout.soles_in_world(model, model.neutral()))
    pads = np.array([model.frame_transform(f"{s}_fsr_{i}", model.neutral())[:2, 3]
                     for s in SIDES for i in range(4)])
    assert len(vertices) == 4
    for vertex in vertices:
        assert np.min(np.linalg.norm(pads - vertex, axis=1)) < 1e-12
    assert polygon.margin([0.0, 0.0]) == pytest.approx(0.09)


def test_unknown_frame_is_named(model: RobotModel) -> None:
    """A frame the URDF lacks raises UnknownFrameError naming it."""
    seed = FootLayout.seed()
    layout = FootLayout(seed.sole_frames, {**seed.contact_frames, "right": ("right_toe",)},
                        seed.fsr_frames)
    with pytest.raises(UnknownFrameError, match="right_toe"):
        layout.contact_points_in_sole(model)


def test_frame_off_the_sole_is_refused(model: RobotModel) -> None:
    """A contact frame above the sole surface (the F/T sensor) is refused with its height."""
    seed = FootLayout.seed()
    layout = FootLayout(seed.sole_frames, {**seed.contact_frames, "left": ("left_foot_ft",)},
                        seed.fsr_frames)
    with pytest.raises(ConfigurationError, match="mm off the surface of sole 'left_sole'"):
        layout.support_polygon(model)


def test_missing_parameter_is_named() -> None:
    """A parameter set without right.fsr_frames says which is missing."""
    values = {k: v for k, v in SPEC.defaults().items() if k != "right.fsr_frames"}
    with pytest.raises(ConfigurationError, match=r"no right\.fsr_frames"):
        FootLayout.from_zmp_values(values)


def test_empty_frame_list_is_refused() -> None:
    """An empty contact frame list is a configuration error naming the foot."""
    seed = FootLayout.seed()
    with pytest.raises(ConfigurationError, match="left foot: contact_frames"):
        FootLayout(seed.sole_frames, {**seed.contact_frames, "left": ()}, seed.fsr_frames)


def test_lists_become_tuples() -> None:
    """Frame lists given as lists (YAML) are stored as tuples: the layout compares equal."""
    seed = FootLayout.seed()
    listed = FootLayout(dict(seed.sole_frames), {s: list(f) for s, f in seed.contact_frames.items()},
                        {s: list(f) for s, f in seed.fsr_frames.items()})  # type: ignore[misc]
    assert listed == seed
