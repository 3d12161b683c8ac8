"""urdf/lunar_arm.urdf is the seed-004 arm: Table 1 kinematics, Table 2 masses and CoMs."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from humanoid_balance.resources import urdf_path

# seed 004 Table 1 (modified DH): alpha_{i-1} deg, a_{i-1} m, d_i m, theta offset deg
L1, L2 = 0.350, 0.250
DH = [(0, 0, 0, 0), (-90, 0, 0, -90), (-90, 0, -L1, -90), (-90, 0, 0, 0), (90, 0, -L2, 0),
      (-90, 0, 0, 0)]
# seed 004 Table 2: CoM [mm] in link frame i, mass [kg]
TABLE2 = [((0.5, 3.5, -70), 0.8), ((1.5, 4.0, 5.0), 0.7), ((5.5, 13, 150), 0.5),
          ((7.5, -30, 4.5), 0.3), ((3.5, 11, 100), 0.3), ((2.0, 5.5, 3.0), 0.2)]
JOINTS = [f"joint{i}" for i in range(1, 7)]
# DH frame 0 in base_link (the mounting stated in tools/gen_lunar_arm_urdf.py)
R_BASE_0 = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])


def _model() -> pin.Model:
    return pin.buildModelFromUrdf(str(urdf_path("lunar_arm")))


def _dh_transform(alpha: float, a: float, d: float, theta: float) -> np.ndarray:
    """Craig's modified DH: RotX(alpha) TransX(a) RotZ(theta) TransZ(d)."""
    ca, sa, ct, st = math.cos(alpha), math.sin(alpha), math.cos(theta), math.sin(theta)
    return np.array([
        [ct, -st, 0.0, a],
        [st * ca, ct * ca, -sa, -sa * d],
        [st * sa, ct * sa, ca, ca * d],
        [0.0, 0.0, 0.0, 1.0],
    ])


def _dh_forward(q: np.ndarray) -> list[np.ndarray]:
    """Poses of DH frames 1..6 in base_link."""
    t = np.eye(4)
    t[:3, :3] = R_BASE_0
    poses = []
    for (alpha, a, d, offset), qi in zip(DH, q, strict=True):
        t = t @ _dh_transform(math.radians(alpha), a, d, qi + math.radians(offset))
        poses.append(t.copy())
    return poses


def test_joint_names_in_chain_order() -> None:
    """The URDF has the revolute joints joint1..joint6, in chain order."""
    assert list(_model().names[1:]) == JOINTS


def test_arm_mass_is_2_8_kg() -> None:
    """The six arm links weigh 2.8 kg together (Table 2)."""
    model = _model()
    assert sum(model.inertias[i].mass for i in range(1, 7)) == pytest.approx(2.8, abs=1e-12)


@pytest.mark.parametrize("i", range(1, 7))
def test_link_mass_and_com_as_table2(i: int) -> None:
    """Link i's mass [kg] and CoM [m] in its DH frame equal Table 2 (mm -> m)."""
    model = _model()
    com_mm, mass = TABLE2[i - 1]
    inertia = model.inertias[model.getJointId(f"joint{i}")]
    assert inertia.mass == pytest.approx(mass, abs=1e-12)
    assert inertia.lever == pytest.approx(np.array(com_mm) / 1000.0, abs=1e-12)


def test_dh_forward_kinematics_equals_pinocchio() -> None:
    """Our modified-DH forward kinematics equals pinocchio's joint frames at 50 random q."""
    model = _model()
    data = model.createData()
    rng = np.random.default_rng(4)
    for _ in range(50):
        q = rng.uniform(model.lowerPositionLimit, model.upperPositionLimit)
        pin.forwardKinematics(model, data, q)
        for i, pose in enumerate(_dh_forward(q), start=1):
            # 1e-9: the URDF stores the origins with 12 significant digits
            assert data.oMi[i].homogeneous == pytest.approx(pose, abs=1e-9)


def test_arm_hangs_down_at_zero() -> None:
    """At q = 0 the wrist is l1 + l2 = 0.6 m straight below the shoulder."""
    model = _model()
    data = model.createData()
    pin.forwardKinematics(model, data, np.zeros(6))
    assert data.oMi[6].translation == pytest.approx([0.0, 0.0, -0.6], abs=1e-9)


def test_urdf_is_generated_by_the_tool() -> None:
    """urdf/lunar_arm.urdf is the output of tools/gen_lunar_arm_urdf.py (--check)."""
    tool = Path(__file__).resolve().parent.parent / "tools" / "gen_lunar_arm_urdf.py"
    out = subprocess.run([sys.executable, str(tool), "--check", "--out", str(urdf_path("lunar_arm"))],
                         check=False)
    assert out.returncode == 0
