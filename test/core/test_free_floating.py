"""arm_balance's free-floating mode on the humanoid with a floating base: J* RMRC, limits, singularity."""

from __future__ import annotations

import numpy as np
import pytest

from humanoid_balance.core.free_floating import FreeFloatingArmController
from humanoid_balance.core.gjm import free_floating_rmrc
from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.rmc import RmcInput
from humanoid_balance.exceptions import ConfigurationError, DynamicSingularityError, InvalidInputError
from humanoid_balance.resources import urdf_path

BENT = {"right_shoulder_pitch": -0.4, "right_elbow": 1.0, "right_shoulder_roll": -0.2,
        "left_shoulder_pitch": -0.3, "left_elbow": 0.9, "left_shoulder_roll": 0.2,
        "right_wrist_pitch": 0.3, "left_wrist_pitch": -0.2}


@pytest.fixture(scope="module")
def model() -> RobotModel:
    return RobotModel(urdf_path("humanoid"), floating_base=True)


def _controller(model: RobotModel, **kwargs: object) -> FreeFloatingArmController:
    options: dict[str, object] = {"rows": ("vx", "vy", "vz", "wx", "wy", "wz"), **kwargs}
    return FreeFloatingArmController(
        model, {a: model.group(f"{a}_arm") for a in ("right", "left")},
        {a: f"{a}_hand" for a in ("right", "left")}, **options)  # type: ignore[arg-type]


def _q(model: RobotModel, pose: dict[str, float]) -> np.ndarray:
    q = model.neutral()
    q[model.q_index(list(pose))] = list(pose.values())
    return q


def test_job_hand_moves_the_other_holds_and_momentum_stays_zero(model: RobotModel) -> None:
    """No limit active: qd = J*^+ [twist; 0], the hands do that, the system momentum stays 0."""
    controller = _controller(model)
    q = _q(model, BENT)
    twist = np.array([0.05, -0.02, 0.03, 0.0, 0.1, 0.0])
    expected = free_floating_rmrc(model, q, ("right_hand", "left_hand"), np.r_[twist, np.zeros(6)],
                                  joints=controller.names)
    controller.reset(q, expected.joint_velocities)  # already moving: no acceleration limit
    out = controller.step(RmcInput(q, job_twist=twist), 0.002)
    np.testing.assert_allclose(out.velocity, expected.joint_velocities, atol=1e-12)
    assert out.job_exact and not out.saturated_joints
    np.testing.assert_allclose(out.twist_error, 0.0, atol=1e-9)
    # hands through the floating-base Jacobians: job hand = twist, other hand still
    v = expected.velocity
    for frame, target in (("right_hand", twist), ("left_hand", np.zeros(6))):
        np.testing.assert_allclose(model.frame_jacobian(frame, q) @ v, target, atol=1e-9)
    assert np.abs(out.momentum).max() < 1e-9


def test_fast_twist_is_slowed_within_the_limits_along_its_direction(model: RobotModel) -> None:
    """A twist beyond the joints' speed: every command within the velocity box, direction kept."""
    controller = _controller(model)
    q = _q(model, BENT)
    controller.reset(q)
    twist = np.array([3.0, 0.0, 2.0, 0.0, 0.0, 0.0])
    out = controller.step(RmcInput(q, job_twist=twist), 0.002)
    assert not out.job_exact and out.saturated_joints
    box = controller._boxer(q[model.q_index(list(controller.names))], np.zeros(len(controller.names)),
                            0.002)
    assert np.all(out.velocity <= box.upper + 1e-12) and np.all(out.velocity >= box.lower - 1e-12)
    free = free_floating_rmrc(model, q, ("right_hand", "left_hand"), np.r_[twist, np.zeros(6)],
                              joints=controller.names).joint_velocities
    cosine = out.velocity @ free / np.linalg.norm(out.velocity) / np.linalg.norm(free)
    assert cosine == pytest.approx(1.0, abs=1e-9)
    assert np.abs(out.momentum).max() < 1e-9  # the base still reacts to what is commanded


def test_dynamic_singularity_is_raised_not_divided_through(model: RobotModel) -> None:
    """Both arms straight (the hands' Jacobians lose rank): DynamicSingularityError, nothing commanded."""
    controller = _controller(model)
    q = model.neutral()
    controller.reset(q)
    before = controller.commanded_positions
    with pytest.raises(DynamicSingularityError):
        controller.step(RmcInput(q, job_twist=np.array([0.01, 0, 0, 0, 0, 0])), 0.002)
    np.testing.assert_array_equal(controller.commanded_positions, before)


def test_joint_velocity_input_is_refused(model: RobotModel) -> None:
    """Job joint velocities instead of a hand twist: InvalidInputError saying so."""
    controller = _controller(model)
    q = _q(model, BENT)
    controller.reset(q)
    with pytest.raises(InvalidInputError, match="hand twist"):
        controller.step(RmcInput(q, job_joint_velocities=np.zeros(7)), 0.002)


def test_only_the_joints_at_a_bound_are_reported_saturated(model: RobotModel) -> None:
    """A scaled-down command lists the joints at a bound of the velocity box, not every joint."""
    controller = _controller(model)
    q = _q(model, BENT)
    controller.reset(q)
    out = controller.step(RmcInput(q, job_twist=np.array([3.0, 0.0, 2.0, 0.0, 0.0, 0.0])), 0.002)
    box = controller._boxer(q[model.q_index(list(controller.names))], np.zeros(len(controller.names)),
                            0.002)
    at_bound = tuple(n for n, v, lo, hi in zip(controller.names, out.velocity, box.lower, box.upper,
                                               strict=True)
                     if v <= lo + 1e-12 or v >= hi - 1e-12)
    assert out.saturated_joints == at_bound
    assert 0 < len(out.saturated_joints) < len(controller.names)


def test_repeated_rows_are_refused_at_construction(model: RobotModel) -> None:
    """rows naming vx twice: ConfigurationError when the controller is built, not at every step."""
    with pytest.raises(ConfigurationError, match=r"^rows=\['vx', 'vx'\]: .* without repetition"):
        _controller(model, rows=("vx", "vx"))


def test_bad_thresholds_are_refused_at_construction(model: RobotModel) -> None:
    """min_singular_value=0: ConfigurationError when the controller is built."""
    with pytest.raises(ConfigurationError, match=r"^min_singular_value=0.0: expected a finite value > 0"):
        _controller(model, min_singular_value=0.0)


def test_job_arm_swap_keeps_the_commanded_state_by_joint(model: RobotModel) -> None:
    """set_job_arm('left'): outputs reorder to the left arm first, same positions per joint."""
    controller = _controller(model)
    q = _q(model, BENT)
    controller.reset(q)
    controller.step(RmcInput(q, job_twist=np.array([0.05, 0.0, 0.0, 0.0, 0.0, 0.0])), 0.002)
    before = controller.commanded_positions
    controller.set_job_arm("left")
    after = controller.commanded_positions
    assert before is not None and after is not None
    assert controller.names == model.group("left_arm") + model.group("right_arm")
    n_right = len(model.group("right_arm"))
    np.testing.assert_array_equal(after, np.r_[before[n_right:], before[:n_right]])


def test_selection_is_refused(model: RobotModel) -> None:
    """set_selection always raises: a floating robot conserves its whole momentum."""
    with pytest.raises(ConfigurationError, match="do not apply in free_floating mode"):
        _controller(model).set_selection(("Lx",))
