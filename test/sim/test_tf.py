"""``world`` -> base link (sim/tf.py) against MuJoCo's own link poses and the URDF's kinematics."""

from __future__ import annotations

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from humanoid_balance.resources import urdf_path
from humanoid_balance.sim.humanoid import HumanoidSim
from humanoid_balance.sim.lunar_arm import LunarArmSim
from humanoid_balance.sim.tf import world_to_base

#: links placed through TF (robot_state_publisher's part: the URDF's kinematics below pelvis)
LINKS = ("left_sole", "right_sole", "right_hand", "waist_plate")
#: a base pose away from the origin and turned about every axis, and bent joints
BASE_POSITION = (0.3, -0.2, 1.1)
BASE_ROTATION_AXIS_ANGLE = ((0.3, -0.5, 0.8), 0.7)
BENT = {"right_shoulder_pitch": -0.8, "right_elbow": 1.1, "waist_pitch": 0.3, "left_knee": 0.4}


def _links_in_world_by_tf(sim: HumanoidSim) -> dict[str, np.ndarray]:
    """World <- link (4 x 4) as rviz composes it: sim/tf.py's base pose times the URDF's FK."""
    model = pin.buildModelFromUrdf(str(urdf_path("humanoid")))
    data = model.createData()
    q = pin.neutral(model)
    state = sim.joint_state()
    for name, value in zip(state.names, state.position, strict=True):
        q[model.joints[model.getJointId(name)].idx_q] = value
    pin.framesForwardKinematics(model, data, q)
    base = world_to_base(sim).matrix()
    return {link: base @ data.oMf[model.getFrameId(link)].homogeneous for link in LINKS}


def _links_in_world_by_mujoco(sim: HumanoidSim) -> dict[str, np.ndarray]:
    """World <- link (4 x 4) from MuJoCo's kinematics of the current state."""
    mujoco.mj_kinematics(sim.model, sim.data)
    out = {}
    for link in LINKS:
        body = mujoco.mj_name2id(sim.model, mujoco.mjtObj.mjOBJ_BODY, link)
        t = np.eye(4)
        t[:3, :3] = sim.data.xmat[body].reshape(3, 3)
        t[:3, 3] = sim.data.xpos[body]
        out[link] = t
    return out


def test_a_turned_base_places_the_links_where_mujoco_has_them() -> None:
    """A base moved and turned about every axis, joints bent: TF's link poses are MuJoCo's (1e-9)."""
    sim = HumanoidSim()
    sim.reset(BENT)
    axis, angle = BASE_ROTATION_AXIS_ANGLE
    quat_wxyz = np.zeros(4)
    mujoco.mju_axisAngle2Quat(quat_wxyz, np.array(axis) / np.linalg.norm(axis), angle)
    sim.data.qpos[0:3] = BASE_POSITION
    sim.data.qpos[3:7] = quat_wxyz
    by_tf, by_mujoco = _links_in_world_by_tf(sim), _links_in_world_by_mujoco(sim)
    worst = max(float(np.abs(by_tf[k] - by_mujoco[k]).max()) for k in LINKS)
    assert worst < 1e-9


def test_the_standing_robot_after_a_step_places_the_links_where_mujoco_has_them() -> None:
    """After 0.3 s of physics (the base settled on the floor), TF's link poses are MuJoCo's (1e-9)."""
    sim = HumanoidSim()
    sim.reset(BENT)
    sim.settle(0.3)
    by_tf, by_mujoco = _links_in_world_by_tf(sim), _links_in_world_by_mujoco(sim)
    worst = max(float(np.abs(by_tf[k] - by_mujoco[k]).max()) for k in LINKS)
    assert worst < 1e-9


def test_the_humanoid_transform_is_world_to_pelvis() -> None:
    """The humanoid's transform goes from ``world`` to its floating base, ``pelvis``."""
    transform = world_to_base(HumanoidSim())
    assert (transform.parent_frame, transform.child_frame) == ("world", "pelvis")


def test_a_fixed_base_is_the_identity_at_its_root_link() -> None:
    """The lunar arm (fixed base): ``world`` -> ``base_link`` is the identity."""
    transform = world_to_base(LunarArmSim(timestep=0.001))
    assert (transform.child_frame, transform.matrix().tolist()) == ("base_link",
                                                                    np.eye(4).tolist())


def test_the_orientation_is_a_unit_quaternion() -> None:
    """The orientation TF gets has unit norm (1e-12) after physics has run."""
    sim = HumanoidSim()
    sim.settle(0.3)
    norm = np.linalg.norm(world_to_base(sim).orientation_base_in_world_xyzw)
    assert norm == pytest.approx(1.0, abs=1e-12)
