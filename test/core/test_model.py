"""RobotModel: loading, groups, kinematics and momentum against independent computations."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from humanoid_balance.core.model import RobotModel
from humanoid_balance.exceptions import (
    ConfigurationError,
    ModelFileError,
    UnknownFrameError,
    UnknownJointError,
)
from humanoid_balance.resources import urdf_path


@pytest.fixture(scope="module")
def humanoid() -> RobotModel:
    return RobotModel(urdf_path("humanoid"), world_frame="W")


def _body_momentum(robot: RobotModel, q: np.ndarray, v: np.ndarray,
                   point: np.ndarray) -> np.ndarray:
    """Momentum summed body by body from pinocchio's joint placements and velocities."""
    pin.forwardKinematics(robot.model, robot.data, q, v)
    p_total, l_total = np.zeros(3), np.zeros(3)
    for j in range(1, robot.model.njoints):
        body = robot.model.inertias[j]
        placement = robot.data.oMi[j]
        twist = robot.data.v[j]
        rotation = placement.rotation
        com = placement.act(body.lever)
        v_com = rotation @ (twist.linear + np.cross(twist.angular, body.lever))
        p_total += body.mass * v_com
        l_total += np.cross(com - point, body.mass * v_com)
        l_total += rotation @ body.inertia @ twist.angular
    return np.concatenate([p_total, l_total])


def test_momentum_matrix_about_a_point_equals_the_sum_over_bodies(humanoid: RobotModel) -> None:
    """A(q, point) v equals the body-by-body momentum about that point (1e-12)."""
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = humanoid.neutral() + 0.3 * rng.standard_normal(humanoid.nq)
        v = rng.standard_normal(humanoid.nv)
        point = rng.standard_normal(3)
        expected = _body_momentum(humanoid, q, v, point)
        assert humanoid.momentum(q, v, point) == pytest.approx(expected, abs=1e-11)


def test_momentum_about_the_com_is_pinocchios_centroidal_momentum(humanoid: RobotModel) -> None:
    """With no point the angular part is about the CoM: pinocchio's computeCentroidalMomentum."""
    rng = np.random.default_rng(1)
    q = humanoid.neutral() + 0.3 * rng.standard_normal(humanoid.nq)
    v = rng.standard_normal(humanoid.nv)
    h = pin.computeCentroidalMomentum(humanoid.model, humanoid.data, q, v)
    assert humanoid.momentum(q, v) == pytest.approx(np.concatenate([h.linear, h.angular]),
                                                    abs=1e-11)


def test_group_columns_add_up_to_the_whole(humanoid: RobotModel) -> None:
    """The momentum of the two arms is the sum of each arm's columns times its velocities."""
    q = humanoid.neutral()
    v = np.zeros(humanoid.nv)
    rng = np.random.default_rng(2)
    left, right = humanoid.group_v_index("left_arm"), humanoid.group_v_index("right_arm")
    v[left] = rng.standard_normal(7)
    v[right] = rng.standard_normal(7)
    a = humanoid.momentum_matrix(q, np.zeros(3))
    assert a[:, left] @ v[left] + a[:, right] @ v[right] == pytest.approx(a @ v, abs=1e-12)


def test_com_includes_the_welded_pelvis(humanoid: RobotModel) -> None:
    """The fixed-base CoM equals the free-flyer model's CoM with the pelvis placed the same."""
    floating = RobotModel(urdf_path("humanoid"), floating_base=True)
    pelvis_in_world = humanoid.frame_transform("pelvis", humanoid.neutral())[:3, 3]
    q = floating.configuration({}, base_position=pelvis_in_world)
    assert humanoid.com(humanoid.neutral()) == pytest.approx(floating.com(q), abs=1e-12)


def test_frame_jacobian_matches_finite_differences(humanoid: RobotModel) -> None:
    """The hand's linear Jacobian equals finite differences of its position (1e-6)."""
    rng = np.random.default_rng(3)
    q = humanoid.neutral() + 0.2 * rng.standard_normal(humanoid.nq)
    jac = humanoid.frame_jacobian("right_hand", q)
    eps = 1e-7
    for k in humanoid.group_v_index("right_arm"):
        dq = np.zeros(humanoid.nv)
        dq[k] = eps
        plus = humanoid.frame_transform("right_hand", q + dq)[:3, 3]
        minus = humanoid.frame_transform("right_hand", q - dq)[:3, 3]
        assert (plus - minus) / (2 * eps) == pytest.approx(jac[:3, k], abs=1e-6)


def test_frame_transforms_equal_one_frame_at_a_time(humanoid: RobotModel) -> None:
    """frame_transforms (one FK, chosen frames placed) gives frame_transform's poses exactly."""
    q = humanoid.neutral() + np.random.default_rng(1).uniform(-0.3, 0.3, humanoid.nq)
    frames = ("left_sole", "right_sole", "left_foot_ft")
    poses = humanoid.frame_transforms([humanoid.frame_id(f) for f in frames], q)
    for frame, pose in zip(frames, poses, strict=True):
        np.testing.assert_array_equal(pose, humanoid.frame_transform(frame, q))


def test_configuration_by_name(humanoid: RobotModel) -> None:
    """configuration() puts each named angle at its joint's index and the rest at zero."""
    q = humanoid.configuration({"right_elbow": 0.5, "waist_pitch": 0.1})
    assert q[humanoid.q_index(["right_elbow", "waist_pitch"])] == pytest.approx([0.5, 0.1])
    assert np.count_nonzero(q) == 2


def test_missing_urdf_is_a_clear_error() -> None:
    """A path that does not exist raises ModelFileError naming it."""
    with pytest.raises(ModelFileError, match=r"cannot load the robot model '/no/such\.urdf': "
                                             r"no such file"):
        RobotModel("/no/such.urdf")


def test_unparsable_urdf_is_a_clear_error(tmp_path: Path) -> None:
    """A file that is not URDF raises ModelFileError saying it does not parse."""
    path = tmp_path / "bad.urdf"
    path.write_text("<robot name='x'><link name='a'><joint")
    with pytest.raises(ModelFileError, match="does not parse as URDF"):
        RobotModel(path)


def test_unknown_joint_names_the_joint_and_the_model() -> None:
    """A group with a joint the model lacks raises UnknownJointError listing it."""
    with pytest.raises(UnknownJointError, match=r"joints \['right_pinky'\] are not in model"):
        RobotModel(urdf_path("humanoid"), groups={"hand": ["right_pinky"]})


def test_unknown_frame_names_the_frame(humanoid: RobotModel) -> None:
    """Asking for a frame the model lacks raises UnknownFrameError naming it."""
    with pytest.raises(UnknownFrameError, match="frame 'tail' is not in model"):
        humanoid.frame_transform("tail", humanoid.neutral())


def test_unknown_group_lists_the_groups(humanoid: RobotModel) -> None:
    """Asking for a group that does not exist raises ConfigurationError listing the groups."""
    with pytest.raises(ConfigurationError, match=r"joint group 'tail' is not defined.*left_arm"):
        humanoid.group("tail")


def test_gravity_is_a_validated_parameter(humanoid: RobotModel) -> None:
    """Gravity can be set (Moon) and refuses a negative or non-finite value."""
    model = RobotModel(urdf_path("humanoid"))
    model.gravity = 9.81 / 6
    assert model.model.gravity.linear == pytest.approx([0, 0, -9.81 / 6])
    with pytest.raises(ConfigurationError, match="gravity=nan"):
        model.gravity = float("nan")
