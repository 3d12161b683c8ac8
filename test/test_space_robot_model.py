"""urdf/space_robot.urdf against seed 002 Table 1 (SPEC.md section 1, free-floating variant)."""

from __future__ import annotations

import math
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from humanoid_balance.core.model import RobotModel
from humanoid_balance.resources import urdf_path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
import gen_space_robot_urdf  # noqa: E402

# seed 002 Table 1: link -> (a m, b m, l m, mass kg, I kg m^2)
TABLE_1 = {
    0: (0.5, 0.5, None, 5.0, 0.208),
    1: (0.2, 0.2, 0.4, 0.5, 0.0067),
    2: (0.2, 0.2, 0.4, 0.5, 0.0067),
    3: (0.063, 0.063, 0.126, 0.2, 0.0003),
}
SIDES = ("right", "left")


@pytest.fixture(scope="module")
def model() -> RobotModel:
    return RobotModel(urdf_path("space_robot"), floating_base=True)


def _urdf_link(name: str) -> ET.Element:
    root = ET.parse(urdf_path("space_robot")).getroot()
    for link in root.findall("link"):
        if link.get("name") == name:
            return link
    raise AssertionError(f"no link {name!r}")


def _izz(name: str) -> float:
    inertia = _urdf_link(name).find("inertial/inertia")
    assert inertia is not None
    return float(inertia.get("izz", "nan"))


def _joint_origin(name: str) -> np.ndarray:
    root = ET.parse(urdf_path("space_robot")).getroot()
    for joint in root.findall("joint"):
        if joint.get("name") == name:
            origin = joint.find("origin")
            assert origin is not None
            return np.array([float(v) for v in origin.get("xyz", "").split()])
    raise AssertionError(f"no joint {name!r}")


def test_committed_urdf_is_the_generator_output() -> None:
    """urdf/space_robot.urdf is exactly what tools/gen_space_robot_urdf.py writes."""
    assert urdf_path("space_robot").read_text() == gen_space_robot_urdf.build()


def test_urdf_has_the_mujoco_compiler_tag() -> None:
    """The URDF tells MuJoCo to keep visuals, not fuse static bodies and balance inertias."""
    compiler = ET.parse(urdf_path("space_robot")).getroot().find("mujoco/compiler")
    assert compiler is not None
    assert compiler.attrib == {"discardvisual": "false", "fusestatic": "false",
                               "balanceinertia": "true"}


def test_pinocchio_loads_it_with_a_free_flyer(model: RobotModel) -> None:
    """With a free flyer the model has 7 + 6 configuration and 6 + 6 velocity entries."""
    assert (model.nq, model.nv) == (13, 12)


def test_default_groups_are_the_two_arms(model: RobotModel) -> None:
    """RobotModel's default group patterns find the arms right_joint1-3 and left_joint1-3."""
    assert model.groups == {f"{side}_arm": tuple(f"{side}_joint{i}" for i in (1, 2, 3))
                            for side in ("left", "right")}


def test_joints_are_six_revolute_joints_about_z(model: RobotModel) -> None:
    """right_joint1..3 and left_joint1..3 all turn about the z axis (the plane normal)."""
    names = sorted(f"{s}_joint{i}" for s in SIDES for i in (1, 2, 3))
    assert sorted(model.joint_names) == names
    for name in names:
        joint = model.model.joints[model.model.getJointId(name)]
        assert joint.shortname() == "JointModelRZ"


def test_total_mass_is_7_4_kg(model: RobotModel) -> None:
    """Base 5 kg + 2 x (0.5 + 0.5 + 0.2) kg = 7.4 kg."""
    assert model.total_mass == pytest.approx(7.4, abs=1e-12)


def test_base_mass_and_inertia_match_table_1(model: RobotModel) -> None:
    """Base (link 0): m0 = 5 kg, I0 = 0.208 kg m^2 about z, CoM at the base frame origin."""
    inertia = model.model.inertias[model.model.getJointId("root_joint")]
    assert inertia.mass == pytest.approx(5.0, abs=1e-12)
    assert inertia.inertia[2, 2] == pytest.approx(0.208, abs=1e-12)
    assert np.asarray(inertia.lever) == pytest.approx(np.zeros(3), abs=1e-12)


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("i", [1, 2, 3])
def test_link_mass_inertia_and_com_match_table_1(model: RobotModel, side: str, i: int) -> None:
    """Each arm link's mass, inertia about z and CoM distance a_i from its joint are Table 1's."""
    a, _, _, mass, izz = TABLE_1[i]
    inertia = model.model.inertias[model.model.getJointId(f"{side}_joint{i}")]
    assert inertia.mass == pytest.approx(mass, abs=1e-12)
    assert inertia.inertia[2, 2] == pytest.approx(izz, abs=1e-12)
    assert np.asarray(inertia.lever) == pytest.approx([a, 0.0, 0.0], abs=1e-12)
    assert _izz(f"{side}_link{i}") == pytest.approx(izz, abs=1e-12)


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("i", [1, 2])
def test_link_length_is_a_plus_b(side: str, i: int) -> None:
    """Joint i+1 sits l_i = a_i + b_i from joint i along the link's x axis."""
    a, b, length, _, _ = TABLE_1[i]
    assert length == pytest.approx(a + b)
    assert _joint_origin(f"{side}_joint{i + 1}") == pytest.approx([length, 0.0, 0.0], abs=1e-12)


@pytest.mark.parametrize("side", SIDES)
def test_hand_frame_is_at_the_link3_tip(side: str) -> None:
    """The hand frame is l_3 = 0.126 m from joint 3 along link 3."""
    assert _joint_origin(f"{side}_hand_frame") == pytest.approx([0.126, 0.0, 0.0], abs=1e-12)


def test_arms_attach_b0_from_the_base_com_on_opposite_sides() -> None:
    """Right arm at +b0 x, left arm at -b0 x of the base frame, b0 = 0.5 m."""
    assert _joint_origin("right_joint1") == pytest.approx([0.5, 0.0, 0.0], abs=1e-12)
    assert _joint_origin("left_joint1") == pytest.approx([-0.5, 0.0, 0.0], abs=1e-12)


def test_paper_initial_pose_is_mirror_symmetric(model: RobotModel) -> None:
    """At the paper's initial angles the two hands mirror each other about the base y axis."""
    q = model.configuration({
        "right_joint1": math.pi / 4, "right_joint2": math.pi / 2, "right_joint3": math.pi / 4,
        "left_joint1": 3 * math.pi / 4, "left_joint2": -math.pi / 2, "left_joint3": -math.pi / 4,
    })
    right = model.frame_transform("right_hand", q)[:3, 3]
    left = model.frame_transform("left_hand", q)[:3, 3]
    assert left == pytest.approx([-right[0], right[1], right[2]], abs=1e-12)


def test_hand_is_at_the_reach_of_the_stretched_arm(model: RobotModel) -> None:
    """With every joint at zero the right hand is at b0 + l1 + l2 + l3 = 1.426 m on x."""
    q = model.neutral()
    hand = model.frame_transform("right_hand", q)[:3, 3]
    assert hand == pytest.approx([1.426, 0.0, 0.0], abs=1e-12)


def test_mass_matrix_is_planar_at_a_random_configuration(model: RobotModel) -> None:
    """Joint torques about z never couple into out-of-plane base motion (z, roll, pitch)."""
    rng = np.random.default_rng(3)
    q = model.neutral()
    q[3:7] = [0.0, 0.0, math.sin(0.3), math.cos(0.3)]  # base yawed in the plane
    q[7:] = rng.uniform(-math.pi, math.pi, 6)
    mass = pin.crba(model.model, model.data, q)
    mass = np.triu(mass) + np.triu(mass, 1).T
    out_of_plane = [2, 3, 4]
    in_plane = [0, 1, 5, *range(6, 12)]
    assert np.abs(mass[np.ix_(out_of_plane, in_plane)]).max() == pytest.approx(0.0, abs=1e-12)
