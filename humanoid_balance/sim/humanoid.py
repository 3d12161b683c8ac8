"""MuJoCo simulation of the seed humanoid standing on a floor (no ROS).

The URDF the controllers use (``urdf/humanoid.urdf``) is loaded into MuJoCo with
:class:`mujoco.MjSpec`, and this module adds what a URDF cannot say:

- a free joint at the pelvis and a flat floor (friction ``mu``, seed 000: 0.3);
- the sole contact: four small spheres per foot at the FSR points; each is a
  one-axis load cell, so an FSR reads the normal contact force of its sphere
  (a MuJoCo touch sensor on a zone around the sphere: computed in C with the
  other sensors, equal to summing ``mj_contactForce`` over the sphere's contacts);
- an actuator per joint: a stiff PD servo with velocity feed-forward,
  ``tau = kp (q_d - q) + kv (qd_d - qd)``, clipped to the URDF effort limit. It is
  a MuJoCo ``general`` actuator (``gain kp, bias [0, -kp, -kv]``, control
  ``q_d + kv/kp qd_d``), so the damping is integrated implicitly (``implicitfast``);
  with ``arm_acceleration_limits``, the arm joints' targets close a jump of their
  command within the arms' acceleration limits (seed 000, Table 2;
  :mod:`humanoid_balance.sim.robot`);
- a 6-axis force/torque sensor at each ankle (MuJoCo force and torque sensors at
  the foot body's origin, which is the URDF's ``{side}_foot_ft`` frame);
- an inclinometer: the orientation of the waist's upper plate (``waist_plate``).

Sensor convention: :meth:`HumanoidSim.foot_wrench` is the wrench the foot exerts
on the leg through the sensor, in the sensor frame (standing: ``fz > 0``), which
is the wrench Kajita's ZMP formulas take (seed 001, eq. 3.24).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import mujoco
import numpy as np

from humanoid_balance.core.joint_limits import (
    ARM_ACCELERATION_LIMITS_DEG_S2,
    arm_acceleration_limit,
)
from humanoid_balance.core.kernels import compiled
from humanoid_balance.exceptions import InvalidInputError, ModelFileError
from humanoid_balance.resources import urdf_path as package_urdf_path
from humanoid_balance.sim.robot import JointStateSample, MujocoRobotSim, ServoGains

__all__ = ["DEFAULT_CONTACT_TIMECONST", "DEFAULT_GAINS", "SIDES", "HumanoidSim",
           "JointStateSample", "SensorNoise", "SensorReadings", "ServoGains"]

SIDES = ("left", "right")
FSR_COUNT = 4
PAD_RADIUS = 0.01  # m, radius of the contact sphere under each FSR
DEFAULT_CONTACT_TIMECONST = 0.02  # s, MuJoCo's default solref time constant

#: Servo gains by joint-name prefix (first match wins); armature stands for the
#: reflected rotor inertia of the drives.
DEFAULT_GAINS: tuple[tuple[str, ServoGains], ...] = (
    ("_wrist", ServoGains(300.0, 6.0, 0.005)),
    ("_elbow", ServoGains(3000.0, 60.0, 0.01)),
    ("_shoulder", ServoGains(5000.0, 100.0, 0.02)),
    ("neck_", ServoGains(300.0, 6.0, 0.005)),
    ("waist_", ServoGains(8000.0, 200.0, 0.1)),
    ("", ServoGains(20000.0, 400.0, 0.1)),  # legs
)


@dataclass(frozen=True)
class SensorNoise:
    """Standard deviations of the sensor noise (zero = noise-free)."""

    force_n: float = 0.0
    torque_nm: float = 0.0
    fsr_n: float = 0.0
    inclinometer_rad: float = 0.0
    joint_position_rad: float = 0.0

    @staticmethod
    def nominal(scale: float = 1.0) -> SensorNoise:
        """Typical noise of the robot's sensors times ``scale`` (0 = noise-free).

        At scale 1: F/T 0.5 N and 0.05 N m, FSR 0.5 N, inclinometer 0.02 deg
        (seed 003 experiment), encoders 1e-4 rad.
        """
        if not np.isfinite(scale) or scale < 0:
            raise InvalidInputError(f"sensor noise scale={scale} must be finite and >= 0")
        return SensorNoise(
            force_n=0.5 * scale,
            torque_nm=0.05 * scale,
            fsr_n=0.5 * scale,
            inclinometer_rad=np.deg2rad(0.02) * scale,
            joint_position_rad=1e-4 * scale,
        )


class SensorReadings(NamedTuple):  # built every step: 0.5 us against 1.9 as a frozen dataclass
    """Every sensor of one step, as :meth:`HumanoidSim.read_sensors` reads them together.

    Attributes:
        joints: joint positions (with encoder noise) [rad], velocities [rad/s], efforts [N m].
        com: the robot's centre of mass in the world [m] (ground truth).
        base_position: the pelvis' position in the world [m] (ground truth).
        base_orientation_xyzw: the pelvis' orientation in the world (ground truth).
        wrench: per side (``SIDES`` order) the force [N] and torque [N m] the foot exerts on
            the leg in its ``{side}_foot_ft`` frame, with noise (2 x 6).
        fsr: per side the four FSRs' normal forces [N], with noise (2 x 4).
        cop: the ground-truth centre of pressure in the world [m]; None airborne.
        inclinometer_xyzw: the inclinometer's reading (with noise) when it was read, else None.
    """

    joints: JointStateSample
    com: np.ndarray
    base_position: np.ndarray
    base_orientation_xyzw: np.ndarray
    wrench: np.ndarray
    fsr: np.ndarray
    cop: np.ndarray | None
    inclinometer_xyzw: np.ndarray | None


@compiled
def _contacts(sensordata: np.ndarray, first: int, geom_xpos: np.ndarray, pads: np.ndarray,
              fsr: np.ndarray) -> tuple[float, np.ndarray, bool]:
    """The pads' touch readings (``sensordata[first:]``, one per pad) into ``fsr``; their total,
    the CoP (:meth:`HumanoidSim._update_contacts`) and whether any carries load."""
    total = 0.0
    for i in range(pads.shape[0]):
        fsr[i] = sensordata[first + i]
        total += fsr[i]
    cop = np.zeros(3)
    if total > 1e-9:
        for i in range(pads.shape[0]):
            for k in range(3):
                cop[k] += fsr[i] * geom_xpos[pads[i], k]
        for k in range(3):
            cop[k] /= total
        cop[2] = 0.5 * (cop[2] - PAD_RADIUS)
    return total, cop, total > 1e-9


@compiled
def _readings(qpos: np.ndarray, qvel: np.ndarray, actuator_force: np.ndarray,
              sensordata: np.ndarray, qadr: np.ndarray, dadr: np.ndarray,
              wrench_index: np.ndarray, fsr: np.ndarray, noise: np.ndarray,
              joint_noise: np.ndarray, wrench_noise: np.ndarray, fsr_noise: np.ndarray,
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Joint positions, velocities, efforts, both feet's wrenches (the reaction of their
    sensors) and FSRs (``fsr``), each entry plus ``noise[k]`` where its ``*_noise`` index
    ``k >= 0``: :meth:`HumanoidSim.read_sensors` in one call."""
    n = qadr.shape[0]
    position = np.empty(n)
    velocity = np.empty(n)
    for j in range(n):
        position[j] = qpos[qadr[j]]
        if joint_noise[j] >= 0:
            position[j] += noise[joint_noise[j]]
        velocity[j] = qvel[dadr[j]]
    effort = actuator_force.copy()
    wrench = np.empty(wrench_index.shape)
    feet = np.empty(fsr.shape)
    for side in range(wrench_index.shape[0]):
        for c in range(wrench_index.shape[1]):
            wrench[side, c] = -sensordata[wrench_index[side, c]]
            if wrench_noise[side, c] >= 0:
                wrench[side, c] += noise[wrench_noise[side, c]]
        for c in range(fsr.shape[1]):
            feet[side, c] = fsr[side, c]
            if fsr_noise[side, c] >= 0:
                feet[side, c] += noise[fsr_noise[side, c]]
    return position, velocity, effort, wrench, feet


class HumanoidSim(MujocoRobotSim):
    """The seed humanoid in MuJoCo: servos, foot sensors, inclinometer, ground truth.

    Args:
        urdf_path: the humanoid URDF (default: the package's ``urdf/humanoid.urdf``).
        timestep: physics step in [s].
        gravity: magnitude of gravity in [m/s^2].
        friction: foot-floor friction coefficient (seed 000: 0.3).
        joint_friction: Coulomb friction (MuJoCo ``frictionloss``) of every joint in [N m].
        noise: sensor noise (default noise-free).
        seed: seed of the noise generator.
        gains: servo gains by joint-name prefix (default :data:`DEFAULT_GAINS`).
        contact_timeconst: time constant [s] of the sole pads' contact with the floor
            (MuJoCo ``solref``, critically damped; MuJoCo's default 0.02, which lets the
            standing robot sink 0.81 mm into the floor). Smaller is stiffer; at least two
            physics steps.
        arm_acceleration_limits: the arm servos' targets move within the arms'
            acceleration limits (seed 000, Table 2): a command that jumps (late or sparse
            commands of a free-running simulation) is closed along a ramp instead of with an
            impulse (``mujoco_sim`` turns it on). Off, each command is taken as it comes (the
            in-process experiments, which command every period).
        integrator: MuJoCo's integrator (:data:`~humanoid_balance.sim.robot.INTEGRATORS`):
            ``implicitfast`` (default) or ``rk4``.
    """

    def __init__(
        self,
        urdf_path: str | Path | None = None,
        *,
        timestep: float = 0.001,
        gravity: float = 9.81,
        friction: float = 0.3,
        joint_friction: float = 0.0,
        noise: SensorNoise | None = None,
        seed: int = 0,
        gains: Sequence[tuple[str, ServoGains]] = DEFAULT_GAINS,
        contact_timeconst: float = DEFAULT_CONTACT_TIMECONST,
        arm_acceleration_limits: bool = False,
        integrator: str = "implicitfast",
    ) -> None:
        if not np.isfinite(friction) or friction < 0:
            raise InvalidInputError(f"friction={friction} must be finite and >= 0")
        # MuJoCo: a time constant under two steps is not resolved by the integrator
        if not np.isfinite(contact_timeconst) or contact_timeconst < 2.0 * timestep:
            raise InvalidInputError(f"contact_timeconst={contact_timeconst} must be finite and at "
                                    f"least two physics steps ({2.0 * timestep} s)")
        self.friction = friction
        self.contact_timeconst = float(contact_timeconst)
        self.arm_acceleration_limits = arm_acceleration_limits
        self.noise = noise if noise is not None else SensorNoise()
        self._contacts_valid_at = -1.0
        self._fsr = np.zeros((2, FSR_COUNT))
        self._fsr_flat = self._fsr.reshape(-1)  # a view: side * FSR_COUNT + i
        self._cop: np.ndarray | None = None
        self._fz_total = 0.0
        path = Path(urdf_path) if urdf_path is not None else package_urdf_path("humanoid")
        super().__init__(
            path, floating_base=True, timestep=timestep, gravity=gravity,
            joint_friction=joint_friction, joint_position_noise=self.noise.joint_position_rad,
            seed=seed, gains=gains, integrator=integrator,
        )

    # --- model construction ---------------------------------------------------

    def _customize(self, spec: mujoco.MjSpec) -> None:
        if self.root_body != "pelvis":
            raise ModelFileError(str(self.urdf_path), f"the root link is {self.root_body!r}, "
                                 "expected 'pelvis'")
        spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
        friction = [self.friction, 0.005, 0.0001]
        floor = spec.worldbody.add_geom(
            name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[5.0, 5.0, 0.1], friction=friction)
        floor.contype = 1
        floor.conaffinity = 1
        floor.solref = [self.contact_timeconst, 1.0]
        for side in SIDES:
            foot = spec.body(f"{side}_foot")
            if foot is None:
                raise ModelFileError(str(self.urdf_path), f"no link named '{side}_foot'")
            foot.add_site(name=f"{side}_foot_ft_site", pos=[0.0, 0.0, 0.0])
            spec.add_sensor(name=f"{side}_foot_force", type=mujoco.mjtSensor.mjSENS_FORCE,
                            objtype=mujoco.mjtObj.mjOBJ_SITE, objname=f"{side}_foot_ft_site")
            spec.add_sensor(name=f"{side}_foot_torque", type=mujoco.mjtSensor.mjSENS_TORQUE,
                            objtype=mujoco.mjtObj.mjOBJ_SITE, objname=f"{side}_foot_ft_site")
            for i in range(FSR_COUNT):
                fsr = spec.body(f"{side}_fsr_{i}")
                if fsr is None:
                    raise ModelFileError(str(self.urdf_path), f"no link named '{side}_fsr_{i}'")
                # the FSR body sits on the sole surface; the pad's bottom touches it
                pad = fsr.add_geom(name=f"{side}_fsr_{i}_pad", type=mujoco.mjtGeom.mjGEOM_SPHERE,
                                   size=[PAD_RADIUS, 0, 0], pos=[0.0, 0.0, PAD_RADIUS])
                pad.contype = 1
                pad.conaffinity = 1
                pad.mass = 0.0
                pad.condim = 3
                pad.friction = friction
                pad.solref = [self.contact_timeconst, 1.0]
        # the FSRs: touch sensors (sum of the normal forces of a body's contacts inside
        # the sensor's site), added after the ankle sensors so that their 8 readings are
        # contiguous in sensordata (left 0-3, right 0-3)
        for side in SIDES:
            for i in range(FSR_COUNT):
                zone = spec.body(f"{side}_fsr_{i}").add_site(
                    name=f"{side}_fsr_{i}_zone", type=mujoco.mjtGeom.mjGEOM_SPHERE,
                    size=[2.0 * PAD_RADIUS, 0, 0], pos=[0.0, 0.0, PAD_RADIUS])
                spec.add_sensor(name=f"{side}_fsr_{i}", type=mujoco.mjtSensor.mjSENS_TOUCH,
                                objtype=mujoco.mjtObj.mjOBJ_SITE, objname=zone.name)
        if spec.body("waist_plate") is None:
            raise ModelFileError(str(self.urdf_path), "no link named 'waist_plate'")
        spec.add_sensor(name="waist_plate_quat", type=mujoco.mjtSensor.mjSENS_FRAMEQUAT,
                        objtype=mujoco.mjtObj.mjOBJ_BODY, objname="waist_plate")

    def _after_compile(self) -> None:
        m = self.model
        pads = [f"{side}_fsr_{i}" for side in SIDES for i in range(FSR_COUNT)]
        #: the pads' geom ids in the order of ``_fsr_flat`` (side * FSR_COUNT + i)
        self._pad_geoms = np.array([mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, f"{pad}_pad")
                                    for pad in pads])
        touch = [int(m.sensor_adr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SENSOR, pad)])
                 for pad in pads]
        if touch != list(range(touch[0], touch[0] + len(pads))):  # _customize adds them so
            raise ModelFileError(str(self.urdf_path), f"FSR sensors not contiguous: {touch}")
        #: the FSRs' readings in sensordata, in the order of ``_fsr_flat``
        self._touch = slice(touch[0], touch[0] + len(pads))
        self._sensor_adr = {
            name: int(m.sensor_adr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SENSOR, name)])
            for name in ("left_foot_force", "left_foot_torque", "right_foot_force",
                         "right_foot_torque", "waist_plate_quat")
        }
        #: both feet's wrenches in sensordata (2 x 6, ``SIDES`` order: force, torque)
        self._wrench_index = np.array([
            [*range(force, force + 3), *range(torque, torque + 3)]
            for force, torque in ((self._sensor_adr[f"{side}_foot_force"],
                                   self._sensor_adr[f"{side}_foot_torque"]) for side in SIDES)])
        self._noise_layout()
        # the per-step kernels compiled now (or loaded from numba's cache), not in the first
        # step: calls on the arrays of the steps, which change nothing
        data = self.data
        _contacts(data.sensordata, self._touch.start, data.geom_xpos, self._pad_geoms,
                  np.zeros(len(pads)))
        _readings(data.qpos, data.qvel, data.actuator_force, data.sensordata, self._qadr,
                  self._dadr, self._wrench_index, self._fsr, np.zeros(len(self._noise_sigma)),
                  self._joint_noise, self._wrench_noise, self._fsr_noise)
        self._body = {
            name: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)
            for name in ("pelvis", "left_sole", "right_sole", "left_foot", "right_foot")
        }
        if self.arm_acceleration_limits:
            # the arms' drives: a command that jumps (late, sparse) is closed within their
            # acceleration limits, not with an impulse (see humanoid_balance.sim.robot)
            arms = [f"{side}_{joint}" for side in SIDES for joint in ARM_ACCELERATION_LIMITS_DEG_S2]
            self.set_acceleration_limits({n: arm_acceleration_limit(n) for n in arms
                                          if n in self.joint_names})

    def _place_base(self) -> None:
        """Stand on the floor: the lowest sole just touches it."""
        lowest = min(float(self.data.xpos[self._body[f"{s}_sole"], 2]) for s in SIDES)
        self.data.qpos[2] = -lowest
        self._contacts_valid_at = -1.0

    # --- sensors ---------------------------------------------------------------

    def foot_wrench(self, side: str) -> tuple[np.ndarray, np.ndarray]:
        """Force [N] and torque [N m] the foot exerts on the leg, in the ``{side}_foot_ft`` frame.

        MuJoCo's force/torque sensors give the wrench the parent (the leg) exerts
        on the foot; the sensor reports its reaction.
        """
        wrench = -self.data.sensordata[self._wrench_index[SIDES.index(side)]]  # a new array
        force, torque = wrench[:3], wrench[3:]
        if self.noise.force_n > 0:
            force += self._rng.normal(0.0, self.noise.force_n, 3)
        if self.noise.torque_nm > 0:
            torque += self._rng.normal(0.0, self.noise.torque_nm, 3)
        return force, torque

    def _noise_layout(self) -> None:
        """Where each sensor's noise lies in :meth:`read_sensors`'s one draw of a step.

        The draw takes the noisy sensors in the order in which reading them one by one
        draws (joints, then per side force, torque, FSRs, then the inclinometer): the
        same generator then gives the same readings either way.
        """
        n = self.noise
        sources = [("joints", len(self.joint_names), self.joint_position_noise)]
        for side in SIDES:
            sources += [(f"{side}_force", 3, n.force_n), (f"{side}_torque", 3, n.torque_nm),
                        (f"{side}_fsr", FSR_COUNT, n.fsr_n)]
        sources.append(("inclinometer", 3, n.inclinometer_rad))
        sigma: list[float] = []
        #: source -> its slice of the draw (None: noise-free)
        self._noise_slices: dict[str, slice | None] = {}
        for name, count, std in sources:
            self._noise_slices[name] = slice(len(sigma), len(sigma) + count) if std > 0 else None
            if std > 0:
                sigma += [float(std)] * count
        self._noise_sigma = np.array(sigma)
        # the feet's noisy parts as (0 wrench / 1 FSRs, side, columns, draw): neighbours in both
        # the reading and the draw (a side's force and torque) added in one step
        plan: list[tuple[int, int, slice, slice]] = []
        for i, side in enumerate(SIDES):
            for which, cols, name in ((0, slice(0, 3), f"{side}_force"),
                                      (0, slice(3, 6), f"{side}_torque"),
                                      (1, slice(0, FSR_COUNT), f"{side}_fsr")):
                part = self._noise_slices[name]
                if part is None:
                    continue
                if plan and plan[-1][:2] == (which, i) and plan[-1][2].stop == cols.start \
                        and plan[-1][3].stop == part.start:
                    last = plan.pop()
                    cols, part = slice(last[2].start, cols.stop), slice(last[3].start, part.stop)
                plan.append((which, i, cols, part))
        # the same as where each reading's noise lies in the draw (-1: none), for _readings
        self._joint_noise = np.full(len(self.joint_names), -1, dtype=np.int64)
        joints = self._noise_slices["joints"]
        if joints is not None:
            self._joint_noise[:] = np.arange(joints.start, joints.stop)
        self._wrench_noise = np.full((len(SIDES), 6), -1, dtype=np.int64)
        self._fsr_noise = np.full((len(SIDES), FSR_COUNT), -1, dtype=np.int64)
        for which, i, cols, part in plan:
            (self._wrench_noise, self._fsr_noise)[which][i, cols] = np.arange(part.start, part.stop)
        inclinometer = self._noise_slices["inclinometer"]
        self._noise_sigma_no_inclinometer = \
            self._noise_sigma if inclinometer is None else self._noise_sigma[:inclinometer.start]

    def read_sensors(self, inclinometer: bool = True) -> SensorReadings:
        """Every sensor now, with one draw of the noise generator (what ``mujoco_sim`` publishes).

        The readings equal those of :meth:`joint_state`, :meth:`com`, :meth:`base_pose`,
        :meth:`foot_wrench` and :meth:`fsr_forces` per side, :meth:`inclinometer_quaternion_xyzw`
        and :meth:`cop` called in that order, bit for bit, at about half their cost (one
        compiled call, ``_readings``; in-process, nominal noise, the contacts computed each
        time: 10.8 against 21.0 us, the smallest of 5 rounds): a simulation publishes every
        step.

        Args:
            inclinometer: read the inclinometer too (it is sampled at a lower rate).
        """
        data = self.data
        slices = self._noise_slices
        sigma = self._noise_sigma if inclinometer else self._noise_sigma_no_inclinometer
        # standard normals times sigma are normal(0, sigma)'s values (which checks its
        # scale array's sign every call)
        noise = self._rng.standard_normal(len(sigma)) * sigma if len(sigma) else sigma
        self._update_contacts()
        position, velocity, effort, wrench, fsr = _readings(
            data.qpos, data.qvel, data.actuator_force, data.sensordata, self._qadr, self._dadr,
            self._wrench_index, self._fsr, noise, self._joint_noise, self._wrench_noise,
            self._fsr_noise)
        joints = JointStateSample(self.joint_names, position, velocity, effort)
        if inclinometer:
            part = slices["inclinometer"]
            quat = self._inclinometer(None if part is None else noise[part])
        else:
            quat = None
        return SensorReadings(joints, self.com(), *self.base_pose(), wrench, fsr,
                              None if self._cop is None else self._cop.copy(), quat)

    def _update_contacts(self) -> None:
        """FSR forces, CoP and total vertical force from the pads' touch sensors (once per step).

        The floor is the horizontal plane z = 0: a pad's normal force is its vertical
        force, and MuJoCo puts a sphere's contact with it under the sphere's centre,
        halfway into the penetration (z = (centre z - radius) / 2): the CoP is the mean
        of those points weighted by the normal forces.
        """
        data = self.data
        if self._contacts_valid_at == data.time:
            return
        self._fz_total, cop, loaded = _contacts(data.sensordata, self._touch.start,
                                                data.geom_xpos, self._pad_geoms, self._fsr_flat)
        self._cop = cop if loaded else None
        self._contacts_valid_at = float(data.time)

    def fsr_forces(self, side: str) -> np.ndarray:
        """Normal forces [N] on the four FSRs of a sole, in the order ``{side}_fsr_0..3``."""
        self._update_contacts()
        forces = self._fsr[SIDES.index(side)].copy()
        if self.noise.fsr_n > 0:
            forces += self._rng.normal(0.0, self.noise.fsr_n, forces.shape)
        return forces

    def cop(self) -> np.ndarray | None:
        """Ground-truth centre of pressure [m] in the world from the contact forces.

        None when no contact carries load (airborne).
        """
        self._update_contacts()
        return None if self._cop is None else self._cop.copy()

    def vertical_contact_force(self) -> float:
        """Total vertical floor reaction on the robot in [N]."""
        self._update_contacts()
        return self._fz_total

    def inclinometer_quaternion_xyzw(self) -> np.ndarray:
        """Orientation of the waist's upper plate in the world (x, y, z, w), with noise."""
        noise = self._rng.normal(0.0, self.noise.inclinometer_rad, 3) \
            if self.noise.inclinometer_rad > 0 else None
        return self._inclinometer(noise)

    def _inclinometer(self, axis_angle: np.ndarray | None) -> np.ndarray:
        """The waist plate's orientation (x, y, z, w) tilted by the noise ``axis_angle`` [rad]."""
        adr = self._sensor_adr["waist_plate_quat"]
        w, x, y, z = self.data.sensordata[adr:adr + 4]
        quat = np.array([x, y, z, w])
        if axis_angle is not None:
            axis_angle[2] = 0.0  # an inclinometer does not see yaw
            angle = float(np.linalg.norm(axis_angle))
            if angle > 0:
                dq = np.concatenate([np.sin(angle / 2) * axis_angle / angle, [np.cos(angle / 2)]])
                quat = _quat_mul_xyzw(dq, quat)
        return quat

    def sole_transform(self, side: str) -> np.ndarray:
        """World <- sole homogeneous transform (4 x 4)."""
        body = self._body[f"{side}_sole"]
        t = np.eye(4)
        t[:3, :3] = self.data.xmat[body].reshape(3, 3)
        t[:3, 3] = self.data.xpos[body]
        return t


def _quat_mul_xyzw(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    ])
