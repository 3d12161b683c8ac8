"""The transform ``world`` -> a simulated robot's base link, the one TF needs (no ROS).

``robot_state_publisher`` puts every link of the URDF on TF below the root link
(``pelvis`` for the humanoid, ``base_link`` for the lunar arm) from
``/joint_states``; what places the root link in ``world`` is the base pose,
which on a robot a state estimator gives and in simulation MuJoCo's free
joint. :func:`world_to_base` reads it from a
:class:`~humanoid_balance.sim.robot.MujocoRobotSim` as TF carries it
(``geometry_msgs/TransformStamped``: the child's origin and orientation in
the parent frame), so that a link ``L`` at ``T_base_L`` from forward kinematics
is at

.. math::

    T_{world,L} = T_{world,base} \\, T_{base,L}

in the world. A fixed-base robot's root link is the world's origin (its
URDF root is welded there).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from humanoid_balance.sim.robot import MujocoRobotSim

__all__ = ["WORLD_FRAME", "BaseTransform", "world_to_base"]

#: the frame the simulation's world is, and the fixed frame of rviz and of the ground truth
WORLD_FRAME = "world"


class BaseTransform(NamedTuple):
    """``parent_frame`` -> ``child_frame``: the child's origin [m] and orientation in the parent.

    Attributes:
        parent_frame: the parent frame (:data:`WORLD_FRAME`).
        child_frame: the robot's base link (the URDF's root link).
        position_base_in_world: the base link's origin in the world [m], shape (3,).
        orientation_base_in_world_xyzw: its orientation as a unit quaternion (x, y, z, w).
    """

    parent_frame: str
    child_frame: str
    position_base_in_world: np.ndarray
    orientation_base_in_world_xyzw: np.ndarray

    def matrix(self) -> np.ndarray:
        """The homogeneous transform world <- base (4 x 4): base coordinates to world's."""
        x, y, z, w = self.orientation_base_in_world_xyzw
        rotation = np.array([
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ])
        out = np.eye(4)
        out[:3, :3] = rotation
        out[:3, 3] = self.position_base_in_world
        return out


def world_to_base(sim: MujocoRobotSim) -> BaseTransform:
    """The simulated base pose as the ``world`` -> root-link transform TF carries.

    The pose is the free joint's state (``qpos``, so the state after the last
    step, not MuJoCo's kinematics of the step before); the quaternion is
    normalised (MuJoCo's integration keeps it within 1e-12 of unit length).

    Args:
        sim: the simulation; a fixed base gives the identity.
    """
    position, quaternion = sim.base_pose()
    norm = float(np.linalg.norm(quaternion))
    return BaseTransform(WORLD_FRAME, sim.root_body, np.asarray(position, dtype=float),
                         np.asarray(quaternion, dtype=float) / norm)
