"""The torso the waist carries: a point mass above the waist joints (the simulated drives' load).

:class:`TorsoLoad` gives the joint gravity torque of that mass; :func:`upper_body_load` takes
it from the humanoid's model (everything above ``waist_pitch``); :func:`humanoid_drives` are
the simulated drives carrying it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from humanoid_balance.core.waist_kinematics import DifferentialWaist
from humanoid_balance.exceptions import ConfigurationError

if TYPE_CHECKING:
    from humanoid_balance.can.sim_drive import SimulatedWaist
    from humanoid_balance.core.model import RobotModel

__all__ = ["GRAVITY", "TorsoLoad", "humanoid_drives", "upper_body_load"]

FloatArray = NDArray[np.float64]
GRAVITY = 9.81


@dataclass(frozen=True)
class TorsoLoad:
    """The torso carried by the waist: a point mass above the waist joints.

    Joint gravity torque for the chain pitch (about y) then roll (about x), CoM at
    ``com_height_m`` on the plate's z axis:
    ``tau = m g h [sin q1 cos q2, cos q1 sin q2]`` (it pulls the torso further over).

    Attributes:
        mass_kg: carried mass.
        com_height_m: CoM height above the joint axes.
        inertia_kg_m2: joint-space inertia ``[pitch, roll]`` about the joint axes.
    """

    mass_kg: float = 25.0
    com_height_m: float = 0.3
    inertia_kg_m2: tuple[float, float] = (2.6, 2.3)

    def __str__(self) -> str:
        return f"{self.mass_kg:.1f} kg at {self.com_height_m:.3f} m above the waist axes"

    def gravity_torque(self, q: FloatArray) -> FloatArray:
        """Joint torque of gravity ``[pitch, roll]`` at joint angles ``q``, N m."""
        return np.array(self.gravity_torque_at(float(q[0]), float(q[1])))

    def gravity_torque_at(self, pitch_rad: float, roll_rad: float) -> tuple[float, float]:
        """:meth:`gravity_torque` on plain floats ``(pitch, roll)`` rad -> N m."""
        mgh = self.mass_kg * GRAVITY * self.com_height_m
        return (mgh * math.sin(pitch_rad) * math.cos(roll_rad),
                mgh * math.cos(pitch_rad) * math.sin(roll_rad))


def upper_body_load(model: RobotModel, joint: str = "waist_pitch") -> TorsoLoad:
    """The load on the waist drives: everything above ``joint`` as a point mass at its CoM.

    The mass ``m`` of the kinematic subtree of ``joint`` and the height ``h`` of its
    CoM above the joint axes (in the joint's frame, at the neutral configuration),
    from pinocchio's subtree centres of mass; the joint-space inertia is that of the
    point mass, ``m h^2`` about both axes.

    Args:
        model: the humanoid (:class:`~humanoid_balance.core.model.RobotModel`).
        joint: the first waist joint (the subtree above it is carried).

    Raises:
        ConfigurationError: the model has no joint ``joint``.
    """
    import pinocchio as pin

    if not model.model.existJointName(joint):
        raise ConfigurationError(f"the model {model.name!r} has no joint {joint!r} to carry a "
                                 "torso above")
    data = model.model.createData()
    pin.centerOfMass(model.model, data, model.neutral(), True)  # subtree masses and CoMs
    jid = model.model.getJointId(joint)
    mass = float(data.mass[jid])
    height = float(data.com[jid][2])  # in the joint's frame: above the axes
    return TorsoLoad(mass_kg=mass, com_height_m=height,
                     inertia_kg_m2=(mass * height**2, mass * height**2))


def humanoid_drives(channel: str, waist: DifferentialWaist, urdf_path: str = "") -> SimulatedWaist:
    """Simulated drives on the virtual ``channel`` carrying the humanoid's upper body
    (:func:`upper_body_load` of the model at ``urdf_path``; "": the package's humanoid)."""
    from humanoid_balance.can.sim_drive import SimulatedWaist
    from humanoid_balance.core.model import RobotModel
    from humanoid_balance.resources import urdf_path as package_urdf_path

    torso = upper_body_load(RobotModel(urdf_path or str(package_urdf_path("humanoid"))))
    return SimulatedWaist(channel=channel, waist=waist, torso=torso)
