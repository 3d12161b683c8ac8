#!/usr/bin/env python3
"""Generate urdf/space_robot.urdf: the seed-002 planar dual-arm free-floating space robot.

The robot of seed 002 (Table 1): a base (link 0) carrying two symmetric 3-link
arms, all six joints revolute about the plane normal z. Numbers from the paper's
Table 1 (SPEC.md section 1):

====== ====== ====== ====== ======== ============
link   a [m]  b [m]  l [m]  m [kg]   I [kg m^2]
====== ====== ====== ====== ======== ============
0      0.5    0.5    --     5        0.208
1, 2   0.2    0.2    0.4    0.5      0.0067
3      0.063  0.063  0.126  0.2      0.0003
====== ====== ====== ====== ======== ============

``a_i``: joint i to the CoM of link i; ``b_i``: CoM of link i to joint i+1
(for the base, ``b_0``: base CoM to the arm's first joint); ``l_i = a_i + b_i``.

Geometry we had to choose (the paper's Fig. 1 is not in the text we have):

- The arms attach on opposite sides of the base, on the base's x axis:
  right arm at ``+b_0 x``, left arm at ``-b_0 x``. The paper calls the arms
  symmetric, and its initial angles, right (pi/4, pi/2, pi/4) and left
  (3pi/4, -pi/2, -pi/4), are the mirror image of each other about the base's
  y axis when the joint angles are *relative* (link i's absolute angle is the
  base angle plus the sum of joints 1..i, as in the paper's J_M whose columns
  sum ``k_i sin/cos`` from joint j outward) and measured from the base x axis
  with every joint axis along +z. That is the convention here.
- Link i's frame sits on joint i with x along the link; its CoM is at
  ``(a_i, 0, 0)`` and joint i+1 at ``(l_i, 0, 0)``; the hand frames
  ``right_hand`` / ``left_hand`` are at the tip of link 3 (``(l_3, 0, 0)``).
- The paper gives only the in-plane inertia I (about z). The out-of-plane
  inertias are ours, and they do not enter planar motion: the base is a
  0.5 m cube (5 kg * (0.5^2 + 0.5^2) / 12 = 0.2083 kg m^2, the paper's 0.208,
  so we use 0.208 about every axis); the links are slender rods along x
  (I_yy = I_zz = the paper's I, I_xx of a 2 cm square section).
- Joint limits +-pi, velocity limit 2 rad/s, effort 10 N m: not in the paper.

Run: ``python tools/gen_space_robot_urdf.py`` (writes urdf/space_robot.urdf);
``--check`` exits 1 if the committed file differs from this script's output.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

from urdf_common import write_or_check  # tools/ is on sys.path when run as a script

OUT = Path(__file__).resolve().parent.parent / "urdf" / "space_robot.urdf"


@dataclass(frozen=True)
class LinkParams:
    """One row of seed 002 Table 1: lengths [m], mass [kg], inertia about z [kg m^2]."""

    a: float
    b: float
    length: float
    mass: float
    inertia: float


# --- seed 002 Table 1 -----------------------------------------------------------
BASE = LinkParams(a=0.5, b=0.5, length=0.0, mass=5.0, inertia=0.208)
ARM_LINKS = (
    LinkParams(a=0.2, b=0.2, length=0.4, mass=0.5, inertia=0.0067),
    LinkParams(a=0.2, b=0.2, length=0.4, mass=0.5, inertia=0.0067),
    LinkParams(a=0.063, b=0.063, length=0.126, mass=0.2, inertia=0.0003),
)
TOTAL_MASS = BASE.mass + 2 * sum(link.mass for link in ARM_LINKS)  # 7.4 kg
# --- our choices ------------------------------------------------------------------
BASE_SIZE = 0.5  # m, cube edge (gives the paper's I0)
LINK_SECTION = 0.02  # m, square cross-section of the rods (I_xx only)
ARM_SIDES = (("right", 1.0), ("left", -1.0))  # arm -> sign of its mount on the base x axis
JOINT_LIMIT = math.pi  # rad
JOINT_VELOCITY = 2.0  # rad/s
JOINT_EFFORT = 10.0  # N m


def _f(x: float) -> str:
    return f"{x:.12g}"


def _v(xs: tuple[float, float, float]) -> str:
    return " ".join(_f(x) for x in xs)


def _inertial(mass: float, com: tuple[float, float, float],
              inertia: tuple[float, float, float]) -> list[str]:
    ixx, iyy, izz = inertia
    return [
        "    <inertial>",
        f'      <origin xyz="{_v(com)}" rpy="0 0 0"/>',
        f'      <mass value="{_f(mass)}"/>',
        f'      <inertia ixx="{_f(ixx)}" ixy="0" ixz="0" iyy="{_f(iyy)}" iyz="0" izz="{_f(izz)}"/>',
        "    </inertial>",
    ]


def _visual(center: tuple[float, float, float], size: tuple[float, float, float]) -> list[str]:
    return [
        "    <visual>",
        f'      <origin xyz="{_v(center)}" rpy="0 0 0"/>',
        f'      <geometry><box size="{_v(size)}"/></geometry>',
        "    </visual>",
    ]


def _joint(name: str, parent: str, child: str, xyz: tuple[float, float, float],
           revolute: bool) -> list[str]:
    lines = [
        f'  <joint name="{name}" type="{"revolute" if revolute else "fixed"}">',
        f'    <parent link="{parent}"/>',
        f'    <child link="{child}"/>',
        f'    <origin xyz="{_v(xyz)}" rpy="0 0 0"/>',
    ]
    if revolute:
        lines += [
            '    <axis xyz="0 0 1"/>',
            f'    <limit lower="{_f(-JOINT_LIMIT)}" upper="{_f(JOINT_LIMIT)}" '
            f'effort="{_f(JOINT_EFFORT)}" velocity="{_f(JOINT_VELOCITY)}"/>',
        ]
    lines.append("  </joint>")
    return lines


def _link(name: str, body: list[str]) -> list[str]:
    return [f'  <link name="{name}">', *body, "  </link>"]


def build() -> str:
    """The URDF text of the seed-002 space robot."""
    lines = [
        '<?xml version="1.0"?>',
        "<!-- Generated by tools/gen_space_robot_urdf.py: edit the script, not this file. -->",
        '<robot name="space_robot">',
        "  <mujoco>",
        '    <compiler discardvisual="false" fusestatic="false" balanceinertia="true"/>',
        "  </mujoco>",
    ]
    i0 = BASE.inertia
    lines += _link("base", _inertial(BASE.mass, (0.0, 0.0, 0.0), (i0, i0, i0))
                   + _visual((0.0, 0.0, 0.0), (BASE_SIZE, BASE_SIZE, BASE_SIZE)))
    for side, sign in ARM_SIDES:
        parent = "base"
        origin = (sign * BASE.b, 0.0, 0.0)
        for i, link in enumerate(ARM_LINKS, start=1):
            name = f"{side}_link{i}"
            lines += _joint(f"{side}_joint{i}", parent, name, origin, revolute=True)
            ixx = link.mass * 2 * LINK_SECTION**2 / 12
            lines += _link(name, _inertial(link.mass, (link.a, 0.0, 0.0),
                                           (ixx, link.inertia, link.inertia))
                           + _visual((link.length / 2, 0.0, 0.0),
                                     (link.length, LINK_SECTION, LINK_SECTION)))
            parent = name
            origin = (link.length, 0.0, 0.0)
        lines += _joint(f"{side}_hand_frame", parent, f"{side}_hand", origin, revolute=False)
        lines += _link(f"{side}_hand", [])
    lines += ["</robot>", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` compare) urdf/space_robot.urdf."""
    return write_or_check(build, OUT, (__doc__ or "URDF generator").splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
