"""urdf/humanoid.urdf against the seed numbers (SPEC.md: seed 000 arms, seed 003 waist)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from humanoid_balance.core.model import RobotModel
from humanoid_balance.resources import urdf_path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
import gen_humanoid_urdf  # noqa: E402

# seed 000 Table: right arm (name, min deg, max deg, max vel deg/s)
ARM_TABLE = {
    "shoulder_pitch": (-130, 50, 450),
    "shoulder_roll": (-120, 20, 450),
    "shoulder_yaw": (-160, 90, 600),
    "elbow": (-30, 120, 600),
    "wrist_yaw": (-120, 120, 600),
    "wrist_roll": (-90, 90, 500),
    "wrist_pitch": (-70, 70, 500),
}
MIRRORED = {"shoulder_roll", "shoulder_yaw", "wrist_yaw", "wrist_roll"}
# link: (length m, mass kg, box section m)
ARM_LINKS = {"upper_arm": (0.25, 3.5, 0.10), "forearm": (0.25, 2.5, 0.08),
             "hand_link": (0.20, 0.5, 0.05)}


@pytest.fixture(scope="module")
def model() -> RobotModel:
    return RobotModel(urdf_path("humanoid"), world_frame="W")


def test_committed_urdf_is_the_generator_output() -> None:
    """urdf/humanoid.urdf is exactly what tools/gen_humanoid_urdf.py writes (no hand edits)."""
    assert urdf_path("humanoid").read_text() == gen_humanoid_urdf.build()


def test_total_mass_is_55_kg(model: RobotModel) -> None:
    """The robot weighs 55 kg (+-0.1)."""
    assert model.total_mass == pytest.approx(55.0, abs=0.1)


def test_height_is_1_65_m() -> None:
    """Standing straight, sole to the top of the head measures 1.65 m (+-0.01), from MuJoCo's geoms."""
    m = mujoco.MjModel.from_xml_path(str(urdf_path("humanoid")))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    tops, bottoms = [], []
    for g in range(m.ngeom):
        half = m.geom_size[g] if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_BOX else None
        if half is None:
            continue
        corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
        world = d.geom_xpos[g] + (d.geom_xmat[g].reshape(3, 3) @ (corners * half).T).T
        tops.append(world[:, 2].max())
        bottoms.append(world[:, 2].min())
    assert max(tops) - min(bottoms) == pytest.approx(1.65, abs=0.01)


def test_thirty_actuated_joints(model: RobotModel) -> None:
    """30 actuated joints: 2 x 7 arm, 2 waist, 12 leg, 2 neck."""
    assert len(model.joint_names) == 30
    assert {g: len(j) for g, j in model.groups.items()} == {
        "left_arm": 7, "right_arm": 7, "waist": 2, "legs": 12, "neck": 2}


@pytest.mark.parametrize("side", ["left", "right"])
def test_arm_joint_limits_follow_the_seed_table(model: RobotModel, side: str) -> None:
    """Each arm joint's position and velocity limits are the table's (roll/yaw mirrored on the left)."""
    for joint, (lo, hi, vel) in ARM_TABLE.items():
        if side == "left" and joint in MIRRORED:
            lo, hi = -hi, -lo
        lower, upper = model.position_limits([f"{side}_{joint}"])
        assert lower[0] == pytest.approx(math.radians(lo)), joint
        assert upper[0] == pytest.approx(math.radians(hi)), joint
        assert model.velocity_limits([f"{side}_{joint}"])[0] == pytest.approx(math.radians(vel))


def test_arm_joint_order(model: RobotModel) -> None:
    """Arm joints run shoulder pitch, roll, yaw, elbow, wrist yaw, roll, pitch."""
    assert model.group("right_arm") == tuple(f"right_{j}" for j in ARM_TABLE)


@pytest.mark.parametrize("side", ["left", "right"])
def test_arm_links_have_the_seed_lengths_masses_and_box_inertias(side: str) -> None:
    """Upper arm, forearm, hand: length between joints, mass and solid-box inertia of the seed."""
    m = pin.buildModelFromUrdf(str(urdf_path("humanoid")))
    d = m.createData()
    pin.forwardKinematics(m, d, pin.neutral(m))
    joint_of = {"upper_arm": "shoulder_yaw", "forearm": "elbow", "hand_link": "wrist_pitch"}
    next_joint = {"upper_arm": "elbow", "forearm": "wrist_yaw"}
    for link, (length, mass, section) in ARM_LINKS.items():
        jid = m.getJointId(f"{side}_{joint_of[link]}")
        inertia = m.inertias[jid]
        assert inertia.mass == pytest.approx(mass, abs=1e-9), link
        expected = mass / 12 * np.array([section**2 + length**2, section**2 + length**2,
                                         2 * section**2])
        assert np.diag(inertia.inertia) == pytest.approx(expected, rel=1e-9), link
        if link in next_joint:
            nid = m.getJointId(f"{side}_{next_joint[link]}")
            distance = np.linalg.norm(d.oMi[nid].translation - d.oMi[jid].translation)
            assert distance == pytest.approx(length, abs=1e-12), link
    hand = RobotModel(urdf_path("humanoid"))
    q = hand.neutral()
    wrist = hand.frame_transform(f"{side}_hand_link", q)[:3, 3]
    centre = hand.frame_transform(f"{side}_hand", q)[:3, 3]
    assert np.linalg.norm(centre - wrist) == pytest.approx(0.10, abs=1e-12)


def test_waist_limits(model: RobotModel) -> None:
    """Waist pitch -5..45 deg and roll -15..15 deg (seed 003)."""
    lower, upper = model.position_limits(["waist_pitch", "waist_roll"])
    assert np.degrees(lower) == pytest.approx([-5.0, -15.0])
    assert np.degrees(upper) == pytest.approx([45.0, 15.0])


def test_foot_centres_are_0_4_m_apart_and_w_is_midway(model: RobotModel) -> None:
    """The sole centres are 0.4 m apart on the ground and W is the midpoint, z up."""
    q = model.neutral()
    left = model.frame_transform("left_sole", q)
    right = model.frame_transform("right_sole", q)
    w = model.frame_transform("W", q)
    assert np.linalg.norm(left[:3, 3] - right[:3, 3]) == pytest.approx(0.4, abs=1e-12)
    assert w[:3, 3] == pytest.approx(0.5 * (left[:3, 3] + right[:3, 3]), abs=1e-12)
    assert w[:3, 3] == pytest.approx(np.zeros(3), abs=1e-12)
    assert left[2, 3] == pytest.approx(0.0, abs=1e-12)


def test_ft_sensor_frames_are_above_the_soles_on_their_axis(model: RobotModel) -> None:
    """Each ankle F/T frame lies on its sole's z axis, FT_HEIGHT above it, same axes."""
    q = model.neutral()
    for side in ("left", "right"):
        sole = model.frame_transform(f"{side}_sole", q)
        sensor = model.frame_transform(f"{side}_foot_ft", q)
        offset = np.linalg.inv(sole) @ sensor
        assert offset[:3, 3] == pytest.approx([0, 0, gen_humanoid_urdf.FT_HEIGHT], abs=1e-12)
        assert offset[:3, :3] == pytest.approx(np.eye(3), abs=1e-12)


def test_four_fsr_points_per_sole_lie_on_the_sole(model: RobotModel) -> None:
    """Four FSR frames per sole, on the sole surface, inside the sole rectangle."""
    q = model.neutral()
    half = np.array(gen_humanoid_urdf.SOLE_SIZE) / 2
    for side in ("left", "right"):
        sole = model.frame_transform(f"{side}_sole", q)
        for i in range(4):
            local = (np.linalg.inv(sole) @ model.frame_transform(f"{side}_fsr_{i}", q))[:3, 3]
            assert local[2] == pytest.approx(0.0, abs=1e-12)
            assert np.all(np.abs(local[:2]) < half)
