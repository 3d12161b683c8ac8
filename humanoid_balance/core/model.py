"""One small wrapper over pinocchio: load a URDF, name joint groups, kinematics and momentum.

Everything the controllers and estimators need from a robot model goes through
:class:`RobotModel`, so that no other module parses a URDF or indexes a
configuration vector by hand. Pinocchio does the work (forward kinematics,
frame Jacobians, centre of mass, centroidal momentum map); this class only
adds names, groups, a chosen world frame and checks.

Velocity conventions are pinocchio's: with ``floating_base=True`` the first six
entries of ``v`` are the base's spatial velocity in the base frame (linear,
angular) and ``q[0:7]`` is the base position and quaternion (x, y, z, w).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pinocchio as pin

from humanoid_balance.exceptions import (
    ConfigurationError,
    ModelFileError,
    UnknownFrameError,
    UnknownJointError,
)

#: Joint groups by joint-name pattern (in model order): the seed humanoid's, whose
#: arm patterns also match the space robot's arms (``right_joint1`` .. ``left_joint3``).
HUMANOID_GROUP_PATTERNS: dict[str, str] = {
    "left_arm": r"^left_(shoulder|elbow|wrist|joint)",
    "right_arm": r"^right_(shoulder|elbow|wrist|joint)",
    "waist": r"^waist_",
    "legs": r"^(left|right)_(hip|knee|ankle)",
    "neck": r"^neck_",
}

_REFERENCE_FRAMES = {
    "local_world_aligned": pin.ReferenceFrame.LOCAL_WORLD_ALIGNED,
    "world": pin.ReferenceFrame.WORLD,
    "local": pin.ReferenceFrame.LOCAL,
}


def _load(urdf_path: Path, floating_base: bool) -> pin.Model:
    if not urdf_path.is_file():
        raise ModelFileError(str(urdf_path), "no such file")
    try:
        if floating_base:
            return pin.buildModelFromUrdf(str(urdf_path), pin.JointModelFreeFlyer())
        return pin.buildModelFromUrdf(str(urdf_path))
    except (RuntimeError, ValueError) as exc:  # pinocchio raises RuntimeError on bad XML
        raise ModelFileError(str(urdf_path), f"does not parse as URDF ({exc})") from exc


class RobotModel:
    """A pinocchio model with named joint groups.

    Args:
        urdf_path: the URDF file.
        floating_base: add a free-flyer root joint (7 q, 6 v) before the URDF root.
        groups: joint group name -> joint names. Default: the humanoid's groups
            (``left_arm``, ``right_arm``, ``waist``, ``legs``, ``neck``) found
            by joint-name pattern; groups with no joint are left out.
        world_frame: fixed base only: place the URDF root so that this frame is
            the world origin at the neutral configuration (the humanoid uses
            ``"W"``, the balance frame on the ground between the soles). ``None``
            keeps the root at the origin.
        gravity: magnitude of gravity in [m/s^2] along -z.

    Raises:
        ModelFileError: the URDF does not exist or does not parse.
        UnknownJointError: a group names a joint the model does not have.
        UnknownFrameError: ``world_frame`` is not a frame of the model.
    """

    def __init__(
        self,
        urdf_path: str | Path,
        *,
        floating_base: bool = False,
        groups: Mapping[str, Sequence[str]] | None = None,
        world_frame: str | None = None,
        gravity: float = 9.81,
    ) -> None:
        self.urdf_path = Path(urdf_path)
        self.floating_base = floating_base
        self.model: pin.Model = _load(self.urdf_path, floating_base)
        self.name: str = self.model.name
        first = 2 if floating_base else 1
        self.joint_names: tuple[str, ...] = tuple(self.model.names[first:])
        for jid in range(first, self.model.njoints):
            if self.model.joints[jid].nq != 1 or self.model.joints[jid].nv != 1:
                raise ModelFileError(
                    str(self.urdf_path),
                    f"joint {self.model.names[jid]!r} is not 1-DOF; only revolute and "
                    "prismatic joints are supported",
                )
        if world_frame is not None:
            if floating_base:
                raise ConfigurationError(
                    "world_frame places a fixed base; with floating_base=True set the base "
                    "pose in q instead"
                )
            self._place_root(world_frame)
        self.data: pin.Data = self.model.createData()
        self.gravity = gravity
        self._joint_index = {name: i for i, name in enumerate(self.joint_names)}
        self._q_offset = 7 if floating_base else 0
        self._v_offset = 6 if floating_base else 0
        if groups is None:
            groups = {
                group: [n for n in self.joint_names if re.search(pattern, n)]
                for group, pattern in HUMANOID_GROUP_PATTERNS.items()
            }
            groups = {g: names for g, names in groups.items() if names}
        self.groups: dict[str, tuple[str, ...]] = {}
        for group, names in groups.items():
            self._check_joints(names)
            self.groups[group] = tuple(names)

    # --- construction helpers ------------------------------------------------

    def _place_root(self, frame: str) -> None:
        if not self.model.existFrame(frame):
            raise UnknownFrameError(frame, self.model.name)
        data = self.model.createData()
        pin.framesForwardKinematics(self.model, data, pin.neutral(self.model))
        world_in_frame = data.oMf[self.model.getFrameId(frame)].inverse()
        for jid in range(1, self.model.njoints):
            if self.model.parents[jid] == 0:
                self.model.jointPlacements[jid] = world_in_frame * self.model.jointPlacements[jid]
        for f in self.model.frames:
            if f.parentJoint == 0:
                f.placement = world_in_frame * f.placement
        self.model.inertias[0] = world_in_frame.act(self.model.inertias[0])

    def _check_joints(self, names: Sequence[str]) -> None:
        missing = [n for n in names if n not in self._joint_index]
        if missing:
            raise UnknownJointError(missing, self.name, self.joint_names)

    # --- sizes and indices ---------------------------------------------------

    @property
    def nq(self) -> int:
        """Size of the configuration vector."""
        return int(self.model.nq)

    @property
    def nv(self) -> int:
        """Size of the velocity vector."""
        return int(self.model.nv)

    @property
    def gravity(self) -> float:
        """Magnitude of gravity along -z in [m/s^2]."""
        return float(-self.model.gravity.linear[2])

    @gravity.setter
    def gravity(self, value: float) -> None:
        if not np.isfinite(value) or value < 0.0:
            raise ConfigurationError(f"gravity={value} must be a finite magnitude >= 0 in m/s^2")
        self.model.gravity.linear = np.array([0.0, 0.0, -float(value)])

    @property
    def total_mass(self) -> float:
        """Mass of every body in [kg], including one welded to a fixed base."""
        return float(sum(inertia.mass for inertia in self.model.inertias))

    def q_index(self, names: Sequence[str]) -> np.ndarray:
        """Indices in ``q`` of the named joints."""
        self._check_joints(names)
        return np.array([self._q_offset + self._joint_index[n] for n in names], dtype=int)

    def v_index(self, names: Sequence[str]) -> np.ndarray:
        """Indices in ``v`` of the named joints."""
        self._check_joints(names)
        return np.array([self._v_offset + self._joint_index[n] for n in names], dtype=int)

    def group_q_index(self, group: str) -> np.ndarray:
        """Indices in ``q`` of a joint group."""
        return self.q_index(self.group(group))

    def group_v_index(self, group: str) -> np.ndarray:
        """Indices in ``v`` of a joint group."""
        return self.v_index(self.group(group))

    def group(self, group: str) -> tuple[str, ...]:
        """Joint names of a group, in model order.

        Raises:
            ConfigurationError: no such group.
        """
        try:
            return self.groups[group]
        except KeyError:
            raise ConfigurationError(
                f"joint group {group!r} is not defined for model {self.name!r}; "
                f"groups: {sorted(self.groups)}"
            ) from None

    # --- configurations ------------------------------------------------------

    def neutral(self) -> np.ndarray:
        """The neutral configuration (joints at zero, base at the origin)."""
        return np.asarray(pin.neutral(self.model), dtype=float)

    def configuration(
        self,
        joint_positions: Mapping[str, float],
        base_position: Sequence[float] | None = None,
        base_quaternion_xyzw: Sequence[float] | None = None,
    ) -> np.ndarray:
        """A configuration vector from joint positions by name (others at zero) in [rad]."""
        q = self.neutral()
        names = list(joint_positions)
        if names:
            q[self.q_index(names)] = [float(joint_positions[n]) for n in names]
        if base_position is not None or base_quaternion_xyzw is not None:
            if not self.floating_base:
                raise ConfigurationError("a base pose was given but the model has a fixed base")
            if base_position is not None:
                q[0:3] = base_position
            if base_quaternion_xyzw is not None:
                quat = np.asarray(base_quaternion_xyzw, dtype=float)
                q[3:7] = quat / np.linalg.norm(quat)
        return q

    def position_limits(self, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper position limits in [rad] of the named joints."""
        idx = self.q_index(names)
        return (np.array(self.model.lowerPositionLimit[idx]),
                np.array(self.model.upperPositionLimit[idx]))

    def velocity_limits(self, names: Sequence[str]) -> np.ndarray:
        """Velocity limits in [rad/s] of the named joints."""
        return np.array(self.model.velocityLimit[self.v_index(names)])

    def effort_limits(self, names: Sequence[str]) -> np.ndarray:
        """Effort limits in [N m] of the named joints."""
        return np.array(self.model.effortLimit[self.v_index(names)])

    def link_inertial(self, link: str) -> tuple[float, np.ndarray]:
        """Mass [kg] and centre of mass [m] in the link frame, as the URDF gives them.

        Pinocchio merges links on fixed joints into their parent body; this reads
        the one link's own ``<inertial>`` (zero mass when it has none).

        Raises:
            UnknownFrameError: the URDF has no such link.
        """
        import xml.etree.ElementTree as ET

        root = ET.parse(self.urdf_path).getroot()
        for element in root.findall("link"):
            if element.get("name") != link:
                continue
            inertial = element.find("inertial")
            if inertial is None:
                return 0.0, np.zeros(3)
            mass_el = inertial.find("mass")
            mass = float(mass_el.get("value", "0")) if mass_el is not None else 0.0
            origin = inertial.find("origin")
            xyz = origin.get("xyz", "0 0 0") if origin is not None else "0 0 0"
            return mass, np.array([float(v) for v in xyz.split()])
        raise UnknownFrameError(link, self.name)

    # --- kinematics -----------------------------------------------------------

    def frame_id(self, frame: str) -> int:
        """Pinocchio id of a frame.

        Raises:
            UnknownFrameError: no such frame.
        """
        if not self.model.existFrame(frame):
            raise UnknownFrameError(frame, self.name)
        return int(self.model.getFrameId(frame))

    def forward(self, q: np.ndarray) -> None:
        """Update joint and frame placements of ``self.data`` for ``q``."""
        pin.framesForwardKinematics(self.model, self.data, q)

    def frame_transform(self, frame: str, q: np.ndarray) -> np.ndarray:
        """Homogeneous transform world <- frame (4 x 4) at configuration ``q``."""
        fid = self.frame_id(frame)
        self.forward(q)
        return np.array(self.data.oMf[fid].homogeneous)

    def frame_transforms(self, frame_ids: Sequence[int], q: np.ndarray) -> list[np.ndarray]:
        """Transforms world <- frame (4 x 4) of several frames (ids from :meth:`frame_id`) at ``q``.

        One forward kinematics and only these frames' placements: for per-sample use,
        where :meth:`frame_transform` would place every frame of the model each call.
        """
        pin.forwardKinematics(self.model, self.data, q)
        return [np.array(pin.updateFramePlacement(self.model, self.data, i).homogeneous)
                for i in frame_ids]

    def frame_jacobian(
        self, frame: str, q: np.ndarray, reference: str = "local_world_aligned"
    ) -> np.ndarray:
        """Frame Jacobian (6 x nv), rows [linear; angular].

        ``reference``: ``local_world_aligned`` (velocity of the frame origin in
        world axes, the usual choice for an end-effector twist), ``local`` or ``world``.
        """
        try:
            ref = _REFERENCE_FRAMES[reference]
        except KeyError:
            raise ConfigurationError(
                f"reference={reference!r}; expected one of {sorted(_REFERENCE_FRAMES)}"
            ) from None
        fid = self.frame_id(frame)
        return np.array(pin.computeFrameJacobian(self.model, self.data, q, fid, ref))

    def com(self, q: np.ndarray) -> np.ndarray:
        """Centre of mass in world coordinates [m], including a welded root body."""
        pin.centerOfMass(self.model, self.data, q, False)
        moving_mass = float(self.data.mass[0])
        welded = self.model.inertias[0]  # a body welded to a fixed base's world
        if welded.mass <= 0.0:
            return np.array(self.data.com[0])
        total = moving_mass + welded.mass
        return (moving_mass * np.asarray(self.data.com[0]) + welded.mass * welded.lever) / total

    # --- momentum ---------------------------------------------------------------

    def momentum_matrix(self, q: np.ndarray, point: np.ndarray | None = None) -> np.ndarray:
        """Momentum matrix ``A`` (6 x nv) with ``[P; L] = A v``.

        ``P`` is the linear momentum [N s]; ``L`` the angular momentum [N m s]
        about ``point`` (world coordinates, fixed in the world) or about the
        centre of mass when ``point`` is None. Pinocchio's centroidal momentum
        map ``A_G`` (about the CoM) is shifted with ``L_p = L_G + (c - p) x P``.
        """
        ag = np.array(pin.computeCentroidalMap(self.model, self.data, q))
        if point is None:
            return ag
        r = np.asarray(self.data.com[0]) - np.asarray(point, dtype=float)
        a = ag.copy()
        a[3:6] += np.cross(r, ag[0:3].T).T
        return a

    def momentum(self, q: np.ndarray, v: np.ndarray, point: np.ndarray | None = None) -> np.ndarray:
        """Momentum ``[P; L]`` (6,) at ``(q, v)``, L about ``point`` or the CoM."""
        return self.momentum_matrix(q, point) @ np.asarray(v, dtype=float)
