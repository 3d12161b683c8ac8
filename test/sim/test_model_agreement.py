"""Pinocchio and MuJoCo load the same URDF into the same rigid-body model."""

from __future__ import annotations

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from humanoid_balance.core.model import RobotModel
from humanoid_balance.resources import urdf_path

MODELS = ["humanoid", "lunar_arm", "space_robot"]


def _load(name: str) -> tuple[RobotModel, mujoco.MjModel, np.ndarray]:
    path = urdf_path(name)
    robot = RobotModel(path)  # fixed base: the URDF root at the origin, as MuJoCo loads it
    mj = mujoco.MjModel.from_xml_path(str(path))
    if mj.nq != robot.nq:
        pytest.fail(f"{name}: MuJoCo has {mj.nq} joints, pinocchio {robot.nq}")
    mj_names = [mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(mj.njnt)]
    # column of each pinocchio joint in MuJoCo's q (the orders may differ)
    order = np.array([mj_names.index(n) for n in robot.joint_names])
    return robot, mj, order


def _full_mass_matrix(mj: mujoco.MjModel, data: mujoco.MjData, out: np.ndarray) -> None:
    try:
        mujoco.mj_fullM(mj, data, out)  # MuJoCo >= 4
    except TypeError:
        mujoco.mj_fullM(mj, out, data.qM)  # MuJoCo 3


def _random_q(robot: RobotModel, rng: np.random.Generator) -> np.ndarray:
    lower = np.maximum(robot.model.lowerPositionLimit, -np.pi)
    upper = np.minimum(robot.model.upperPositionLimit, np.pi)
    return rng.uniform(lower, upper)


@pytest.mark.parametrize("name", MODELS)
def test_total_mass_agrees(name: str) -> None:
    """Total mass: pinocchio (with a body welded to the base) equals MuJoCo's sum of body masses."""
    robot, mj, _ = _load(name)
    assert robot.total_mass == pytest.approx(float(np.sum(mj.body_mass)), rel=1e-12)


@pytest.mark.parametrize("name", MODELS)
def test_com_agrees_at_20_random_configurations(name: str) -> None:
    """Whole-robot centre of mass agrees within 1e-6 m at 20 random configurations."""
    robot, mj, order = _load(name)
    data = mujoco.MjData(mj)
    rng = np.random.default_rng(1)
    for _ in range(20):
        q = _random_q(robot, rng)
        data.qpos[order] = q
        mujoco.mj_forward(mj, data)
        assert robot.com(q) == pytest.approx(data.subtree_com[0], abs=1e-6)


@pytest.mark.parametrize("name", MODELS)
def test_mass_matrix_agrees_at_20_random_configurations(name: str) -> None:
    """Joint-space mass matrix agrees within 1e-6 relative (to its largest entry)."""
    robot, mj, order = _load(name)
    data = mujoco.MjData(mj)
    rng = np.random.default_rng(2)
    full = np.zeros((mj.nv, mj.nv))
    for _ in range(20):
        q = _random_q(robot, rng)
        data.qpos[order] = q
        mujoco.mj_forward(mj, data)
        _full_mass_matrix(mj, data, full)
        mass_mj = full[np.ix_(order, order)]
        mass_pin = pin.crba(robot.model, robot.data, q)
        mass_pin = np.triu(mass_pin) + np.triu(mass_pin, 1).T
        scale = np.abs(mass_pin).max()
        assert np.abs(mass_pin - mass_mj).max() <= 1e-6 * scale
