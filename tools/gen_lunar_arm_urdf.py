#!/usr/bin/env python3
"""Generate urdf/lunar_arm.urdf: the seed-004 6-DOF humanoid arm ("Wuwei" arm).

Kinematics: the paper's Table 1, modified (Craig) DH parameters, one row per
joint i: ``alpha_{i-1}`` [deg], ``a_{i-1}`` [m], ``d_i`` [m], ``theta_i`` offset [deg]

====  ===========  =========  ======  ==============
i     alpha_{i-1}  a_{i-1}    d_i     theta offset
====  ===========  =========  ======  ==============
1     0            0          0       0
2     -90          0          0       -90
3     -90          0          -l1     -90
4     -90          0          0       0
5     90           0          -l2     0
6     -90          0          0       0
====  ===========  =========  ======  ==============

with l1 = 0.350 m (upper arm) and l2 = 0.250 m (forearm). The URDF link
``link<i>`` *is* the DH frame i: joint i's origin is the constant part
``RotX(alpha_{i-1}) TransX(a_{i-1}) RotZ(offset_i) TransZ(d_i)`` and the joint
turns about its z axis, so the URDF joint angle is ``q_i = theta_i - offset_i``.

Dynamics: the paper's Table 2 (CoM in mm in link frame i -> m, mass kg),
2.8 kg in all. Inertias are not in the paper: ours, those of uniform boxes
(the upper arm and forearm as 0.06 m square rods of their length, the other
links 0.06 m cubes), about the CoM, axes along the link frame.

Mounting (ours; the paper's Fig. 1/2 are not in the text we have): a fixed
base ``base_link`` (z up, the URDF root: a 10 kg torso box welded to the world, so
its mass never enters the arm's dynamics; the arm itself is 2.8 kg) with the shoulder at its origin.
Joint 1's axis must not be vertical, since the paper's Table 3 has gravity
torque on joint 1: DH frame 0 is turned so that z0 = world +y (a shoulder
pitch axis, lateral), x0 = world +z, y0 = world +x (the arm hangs down at q = 0). The torso is the
base link's collision box on the -y side of the shoulder.

Joint limits are not given in the paper; ours, plausible for a human-like
arm and stated here [deg]: j1 +-170, j2 +-100, j3 +-170, j4 +-120, j5 +-170,
j6 +-90; velocity 1 rad/s; effort 10, 10, 5, 5, 2, 2 N m. Joint names
``joint1`` .. ``joint6``; links ``link1`` .. ``link6``.

Collision geometry (for the clearance constraint of eq. 12 with coal):
cylinders of radius 0.03 m along the upper arm (link3, z from 0.05 to
l1 - 0.05) and the forearm (link5, z from 0.05 to l2 - 0.05), a 0.05 m cube
at the hand (link6, 0.08 m along +y6, the direction away from the elbow) and
the torso box. MuJoCo collisions between the arm's own links are switched
off by the simulation (humanoid_balance.sim.lunar_arm).

Run: ``python tools/gen_lunar_arm_urdf.py`` (writes urdf/lunar_arm.urdf);
``--check`` exits 1 if the committed file differs from this script's output.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# tools/ is on sys.path when run as a script
from urdf_common import box_inertia, inertial, num, vec, write_or_check

OUT = Path(__file__).resolve().parent.parent / "urdf" / "lunar_arm.urdf"

L1 = 0.350  # m, upper arm (along z3)
L2 = 0.250  # m, forearm (along z5)


@dataclass(frozen=True)
class DHRow:
    """One row of Table 1: alpha_{i-1} [deg], a_{i-1} [m], d_i [m], theta offset [deg]."""

    alpha_deg: float
    a: float
    d: float
    offset_deg: float


@dataclass(frozen=True)
class LinkRow:
    """One row of Table 2: CoM in link frame i [m], mass [kg], length [m]."""

    com: tuple[float, float, float]
    mass: float
    length: float


# --- seed 004 Table 1 and Table 2 ---------------------------------------------
DH_TABLE = (
    DHRow(0.0, 0.0, 0.0, 0.0),
    DHRow(-90.0, 0.0, 0.0, -90.0),
    DHRow(-90.0, 0.0, -L1, -90.0),
    DHRow(-90.0, 0.0, 0.0, 0.0),
    DHRow(90.0, 0.0, -L2, 0.0),
    DHRow(-90.0, 0.0, 0.0, 0.0),
)
LINKS = (
    LinkRow((0.0005, 0.0035, -0.070), 0.8, 0.0),
    LinkRow((0.0015, 0.0040, 0.0050), 0.7, 0.0),
    LinkRow((0.0055, 0.0130, 0.150), 0.5, L1),
    LinkRow((0.0075, -0.030, 0.0045), 0.3, 0.0),
    LinkRow((0.0035, 0.0110, 0.100), 0.3, L2),
    LinkRow((0.0020, 0.0055, 0.0030), 0.2, 0.0),
)
# --- our choices ----------------------------------------------------------------
JOINT_NAMES = tuple(f"joint{i}" for i in range(1, 7))
LINK_NAMES = tuple(f"link{i}" for i in range(1, 7))
JOINT_LIMITS_DEG = (170.0, 100.0, 170.0, 120.0, 170.0, 90.0)
JOINT_EFFORT = (10.0, 10.0, 5.0, 5.0, 2.0, 2.0)  # N m
JOINT_VELOCITY = 1.0  # rad/s
SECTION = 0.06  # m, box section used for the inertias
CAPSULE_RADIUS = 0.03  # m
CAPSULE_MARGIN = 0.05  # m, kept free at each joint
HAND_OFFSET = (0.0, 0.08, 0.0)  # m, hand centre in link6 (away from the elbow)
HAND_SIZE = 0.05  # m
TORSO_CENTER = (0.0, -0.20, -0.15)  # m, in base_link
TORSO_SIZE = (0.20, 0.25, 0.50)  # m
TORSO_MASS = 10.0  # kg, ours; welded to the world, so it never enters the arm's dynamics
#: rotation base_link -> DH frame 0, columns x0, y0, z0 in base_link
R_BASE_0 = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])


def _rotx(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _rotz(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def dh_origin(row: DHRow) -> tuple[np.ndarray, np.ndarray]:
    """Constant transform of a modified-DH row: rotation, translation [m].

    ``T = RotX(alpha) TransX(a) RotZ(offset) TransZ(d)`` (the joint angle follows).
    """
    rot = _rotx(math.radians(row.alpha_deg)) @ _rotz(math.radians(row.offset_deg))
    trans = _rotx(math.radians(row.alpha_deg)) @ np.array([row.a, 0.0, 0.0]) + rot @ np.array(
        [0.0, 0.0, row.d])
    return rot, trans


def rpy(rot: np.ndarray) -> tuple[float, float, float]:
    """URDF roll-pitch-yaw of a rotation matrix (``R = Rz(y) Ry(p) Rx(r)``)."""
    pitch = math.atan2(-rot[2, 0], math.hypot(rot[0, 0], rot[1, 0]))
    if abs(math.cos(pitch)) < 1e-9:
        roll = 0.0
        yaw = math.atan2(-rot[0, 1], rot[1, 1])
    else:
        roll = math.atan2(rot[2, 1], rot[2, 2])
        yaw = math.atan2(rot[1, 0], rot[0, 0])
    return roll, pitch, yaw


def _shape(tag: str, center: tuple[float, float, float], geometry: str) -> list[str]:
    return [
        f"    <{tag}>",
        f'      <origin xyz="{vec(center)}" rpy="0 0 0"/>',
        f"      <geometry>{geometry}</geometry>",
        f"    </{tag}>",
    ]


def _link_geometry(i: int, link: LinkRow) -> list[str]:
    if link.length > 0:
        length = link.length - 2 * CAPSULE_MARGIN
        geo = f'<cylinder radius="{num(CAPSULE_RADIUS)}" length="{num(length)}"/>'
        center = (0.0, 0.0, link.length / 2)
        return _shape("visual", center, geo) + _shape("collision", center, geo)
    if i == 6:
        geo = f'<box size="{vec((HAND_SIZE,) * 3)}"/>'
        return _shape("visual", HAND_OFFSET, geo) + _shape("collision", HAND_OFFSET, geo)
    return _shape("visual", (0.0, 0.0, 0.0), f'<sphere radius="{num(CAPSULE_RADIUS)}"/>')


def build() -> str:
    """The URDF text of the seed-004 lunar arm."""
    lines = [
        '<?xml version="1.0"?>',
        "<!-- Generated by tools/gen_lunar_arm_urdf.py: edit the script, not this file. -->",
        '<robot name="lunar_arm">',
        "  <mujoco>",
        '    <compiler discardvisual="false" fusestatic="false" balanceinertia="true"/>',
        "  </mujoco>",
        '  <link name="base_link">',
        *inertial(TORSO_MASS, TORSO_CENTER, box_inertia(TORSO_MASS, TORSO_SIZE)),
        *_shape("visual", TORSO_CENTER, f'<box size="{vec(TORSO_SIZE)}"/>'),
        *_shape("collision", TORSO_CENTER, f'<box size="{vec(TORSO_SIZE)}"/>'),
        "  </link>",
    ]
    parent = "base_link"
    for i, (row, link) in enumerate(zip(DH_TABLE, LINKS, strict=True), start=1):
        rot, trans = dh_origin(row)
        if i == 1:
            rot, trans = R_BASE_0 @ rot, R_BASE_0 @ trans
        limit = math.radians(JOINT_LIMITS_DEG[i - 1])
        lines += [
            f'  <joint name="{JOINT_NAMES[i - 1]}" type="revolute">',
            f'    <parent link="{parent}"/>',
            f'    <child link="{LINK_NAMES[i - 1]}"/>',
            f'    <origin xyz="{vec(trans)}" rpy="{vec(rpy(rot))}"/>',
            '    <axis xyz="0 0 1"/>',
            f'    <limit lower="{num(-limit)}" upper="{num(limit)}" '
            f'effort="{num(JOINT_EFFORT[i - 1])}" velocity="{num(JOINT_VELOCITY)}"/>',
            "  </joint>",
        ]
        size = (SECTION, SECTION, link.length if link.length > 0 else SECTION)
        lines += [f'  <link name="{LINK_NAMES[i - 1]}">',
                  *inertial(link.mass, link.com, box_inertia(link.mass, size)),
                  *_link_geometry(i, link), "  </link>"]
        parent = LINK_NAMES[i - 1]
    lines += ["</robot>", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` compare) urdf/lunar_arm.urdf."""
    return write_or_check(build, OUT, (__doc__ or "URDF generator").splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
