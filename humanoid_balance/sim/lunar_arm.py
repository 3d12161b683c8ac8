"""The seed-004 lunar arm in MuJoCo (no ROS): friction, current-measured torque, payload.

:class:`LunarArmSim` is :class:`~humanoid_balance.sim.robot.MujocoRobotSim`
on ``urdf/lunar_arm.urdf`` (fixed base) with

- joint Coulomb friction (MuJoCo ``frictionloss``) and viscous friction
  (``damping``) per joint, so the servo torque is ``G(q) + tau_f(qd)`` plus
  the (small) inertial terms at 3 deg/s (eq. 1);
- torque measured through the motor current, ``tau = k_e I`` (eq. 19): the
  current is the servo torque over ``k_e`` plus white noise whose mean
  absolute value is the paper's Table 6 ratio (mean noise amplitude / max
  torque: 0.13, 0.12, 0.21, 0.19, 0.90, 1.0) times each joint's peak
  gravity torque. Table 6 gives the noise in N m, measured on the unloaded
  arm at Earth gravity: it is the sensor's, so by default the reference is
  the peak of the *unloaded* arm at *Earth* gravity (over random
  configurations), whatever the payload and the gravity of this simulation
  (``noise_reference_torque`` overrides it);
- an optional payload at the hand (by default the experiment's 0.3 kg in
  ``link6``, 0.08 m along +y6; :data:`PAPER_PAYLOAD_OFFSET` is the paper's
  placement; a solid sphere of radius ``PAYLOAD_RADIUS``);
- gravity a parameter (Earth 9.81, Moon 9.81 / 6);
- contacts off (the arm's clearance is the planner's job, not the physics').

:func:`lunar_arm_model` is the same arm and payload as a pinocchio model (the
true model the identification is checked against).
:class:`LunarArmRosAdapter` (imports rclpy lazily) serves the simulation on
``/joint_states`` on a given node and follows ``/identification/command``,
for tests and demos.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import pinocchio as pin

from humanoid_balance.core.identification.procedure import SweepRecording
from humanoid_balance.core.identification.regressor import EARTH_GRAVITY, random_configurations
from humanoid_balance.core.identification.trajectory import Sweep
from humanoid_balance.exceptions import InvalidInputError
from humanoid_balance.resources import urdf_path
from humanoid_balance.sim.robot import JointStateSample, MujocoRobotSim, ServoGains

#: seed 004 Table 6: mean noise amplitude / max torque per joint (hardware)
TABLE6_NOISE_RATIO = (0.13, 0.12, 0.21, 0.19, 0.90, 1.0)
#: the paper's payload [kg], where we put it in link6 [m] and its radius (a solid sphere) [m]
PAYLOAD_MASS = 0.3
PAYLOAD_OFFSET = (0.0, 0.08, 0.0)
PAYLOAD_RADIUS = 0.02
#: [m] in link6: the paper's payload placement. Seed 004's Table 4 gives the maximum Moon torques
#: of the loaded arm, joints 3-6: 270.67, 266.12, 9.95, 4.77 N mm (Table 3 without load: 147.27,
#: 141.64, 7.27, 1.91, which this arm's peaks over random configurations match within 1 %). A
#: 0.3 kg mass here, 6.3 mm from the wrist centre (least squares of the relative errors of the
#: four peaks, Nelder-Mead), gives 271.4, 266.9, 9.95, 4.77 N mm; at PAYLOAD_OFFSET, 8 cm out,
#: 305, 303, 42, 41 N mm
PAPER_PAYLOAD_OFFSET = (0.0022, 0.0054, 0.0024)
#: seed 004 Table 4: maximum Moon torque per joint with the payload [N m]
PAPER_TABLE4_MAX_TORQUE_N_M = (0.85291, 0.80669, 0.27067, 0.26612, 0.00995, 0.00477)
MOON_GRAVITY = EARTH_GRAVITY / 6.0
#: servo gains of the arm (a stiff position servo; armature of a geared joint)
LUNAR_GAINS: tuple[tuple[str, ServoGains], ...] = (("", ServoGains(400.0, 20.0, 0.02)),)


def payload_inertia(payload: float) -> pin.Inertia:
    """The payload's spatial inertia about its centre: a solid sphere of ``PAYLOAD_RADIUS``."""
    return pin.Inertia.FromSphere(payload, PAYLOAD_RADIUS)


def lunar_arm_model(gravity: float = EARTH_GRAVITY, payload: float = 0.0,
                    urdf: str | Path | None = None,
                    payload_offset: Sequence[float] = PAYLOAD_OFFSET) -> pin.Model:
    """The arm as a pinocchio model at ``gravity`` [m/s^2], with ``payload`` [kg] at the hand.

    The payload is the simulation's (:class:`LunarArmSim`): a solid sphere at
    ``payload_offset`` in ``link6``, merged into joint 6's inertia.

    Args:
        gravity: magnitude of gravity along the world's -z [m/s^2].
        payload: payload mass [kg] (0 for none).
        urdf: the arm's URDF (default: the package's lunar_arm.urdf).
        payload_offset: the payload's centre in ``link6`` [m].
    """
    model = pin.buildModelFromUrdf(str(urdf if urdf is not None else urdf_path("lunar_arm")))
    model.gravity.linear = np.array([0.0, 0.0, -gravity])
    if payload > 0.0:
        model.appendBodyToJoint(model.njoints - 1, payload_inertia(payload),
                                pin.SE3(np.eye(3), _offset(payload_offset)))
    return model


def _offset(payload_offset: Sequence[float]) -> np.ndarray:
    offset = np.asarray(payload_offset, dtype=float)
    if offset.shape != (3,) or not np.all(np.isfinite(offset)):
        raise InvalidInputError(f"payload_offset={list(payload_offset)!r}: expected three finite "
                                "coordinates in link6 [m]")
    return offset


def peak_gravity_torque(urdf: str | Path, gravity: float, payload: float = 0.0,
                        samples: int = 2000, seed: int = 0,
                        payload_offset: Sequence[float] = PAYLOAD_OFFSET) -> np.ndarray:
    """Largest |G_i(q)| per joint [N m] over random configurations within the limits.

    Cached per (URDF path, gravity, payload, samples, seed, payload_offset):
    every :class:`LunarArmSim` needs the Earth peak of the unloaded arm. The
    URDF file is read once per path.
    """
    offset = tuple(float(v) for v in _offset(payload_offset))
    return _peak_gravity_torque(str(urdf), float(gravity), float(payload), samples, seed,
                                offset).copy()


@functools.lru_cache(maxsize=16)
def _peak_gravity_torque(urdf: str, gravity: float, payload: float, samples: int,
                         seed: int, payload_offset: tuple[float, ...]) -> np.ndarray:
    model = lunar_arm_model(gravity, payload, urdf, payload_offset)
    data = model.createData()
    peak = np.zeros(model.nv)
    for q in random_configurations(model, samples, seed):
        peak = np.maximum(peak, np.abs(pin.computeGeneralizedGravity(model, data, q)))
    peak.setflags(write=False)  # shared by the cache: callers get copies
    return peak


class LunarArmSim(MujocoRobotSim):
    """The seed-004 arm with friction, noisy current-based torque and an optional payload.

    Args:
        gravity: magnitude of gravity [m/s^2].
        coulomb_friction: Coulomb friction per joint (or one for all) [N m].
        viscous_friction: viscous friction per joint (or one for all) [N m s/rad].
        torque_noise_ratio: mean |noise| / reference torque per joint
            (Table 6); zeros for noise-free torque.
        noise_reference_torque: the reference torque per joint [N m]
            (default: the peak gravity torque of the unloaded arm at Earth
            gravity, where Table 6 was measured).
        torque_constants: ``k_e`` per joint [N m/A].
        payload: payload mass at the hand [kg] (0 for none).
        payload_offset: the payload's centre in ``link6`` [m].
        timestep: physics step [s].
        seed: seed of the noise.
        urdf: the arm's URDF (default: the package's lunar_arm.urdf).
    """

    def __init__(
        self,
        *,
        gravity: float = EARTH_GRAVITY,
        coulomb_friction: float | Sequence[float] = 0.0,
        viscous_friction: float | Sequence[float] = 0.0,
        torque_noise_ratio: Sequence[float] = TABLE6_NOISE_RATIO,
        noise_reference_torque: Sequence[float] | np.ndarray | None = None,
        torque_constants: Sequence[float] = (0.1,) * 6,
        payload: float = 0.0,
        payload_offset: Sequence[float] = PAYLOAD_OFFSET,
        timestep: float = 0.001,
        seed: int = 0,
        urdf: str | Path | None = None,
        integrator: str = "implicitfast",
    ) -> None:
        self.payload = float(payload)
        if not np.isfinite(self.payload) or self.payload < 0.0:
            raise InvalidInputError(f"payload={payload} kg must be finite and >= 0")
        self.payload_offset = _offset(payload_offset)
        self._coulomb = self._per_joint("coulomb_friction", coulomb_friction)
        self._viscous = self._per_joint("viscous_friction", viscous_friction)
        self.torque_constants = self._per_joint("torque_constants", torque_constants)
        if np.any(self.torque_constants <= 0.0):
            raise InvalidInputError(f"torque_constants {self.torque_constants} must be > 0 [N m/A]")
        ratio = self._per_joint("torque_noise_ratio", torque_noise_ratio)
        path = Path(urdf) if urdf is not None else urdf_path("lunar_arm")
        super().__init__(path, floating_base=False, timestep=timestep, gravity=gravity,
                         seed=seed, gains=LUNAR_GAINS, integrator=integrator)
        self.gravity = float(gravity)
        if noise_reference_torque is None:
            self.noise_reference_torque = peak_gravity_torque(path, EARTH_GRAVITY)
        else:
            self.noise_reference_torque = self._per_joint("noise_reference_torque",
                                                          noise_reference_torque)
        # Gaussian noise with mean |n| = ratio * reference: sigma = amplitude * sqrt(pi / 2)
        self.current_noise_std = ratio * self.noise_reference_torque * math.sqrt(math.pi / 2) \
            / self.torque_constants

    @staticmethod
    def _per_joint(name: str, value: float | Sequence[float] | np.ndarray) -> np.ndarray:
        arr = np.broadcast_to(np.asarray(value, dtype=float), (6,)).copy() \
            if np.ndim(value) == 0 else np.asarray(value, dtype=float)
        if arr.shape != (6,) or not np.all(np.isfinite(arr)) or np.any(arr < 0.0):
            raise InvalidInputError(f"{name}={value!r}: expected one or six finite values >= 0")
        return arr

    def _customize(self, spec: mujoco.MjSpec) -> None:
        spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
        joints = {j.name: j for j in spec.joints}
        for i, name in enumerate(self.joint_names):
            joints[name].frictionloss = float(self._coulomb[i])
            joints[name].damping = [float(self._viscous[i]), 0.0, 0.0]
        if self.payload > 0.0:
            hand = spec.body("link6")
            body = hand.add_body(name="payload", pos=self.payload_offset.tolist())
            body.mass = self.payload
            body.ipos = [0.0, 0.0, 0.0]  # the CoM at the body's origin
            body.inertia = np.diag(payload_inertia(self.payload).inertia).tolist()
            body.explicitinertial = True
            body.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[PAYLOAD_RADIUS, 0, 0],
                          contype=0, conaffinity=0, mass=0.0)

    def true_torque(self) -> np.ndarray:
        """Servo torque of every joint now [N m], noise-free."""
        return np.asarray(self.data.actuator_force.copy())

    def current(self) -> np.ndarray:
        """Measured motor current [A]: servo torque / k_e plus noise."""
        noise = self._rng.normal(0.0, 1.0, 6) * self.current_noise_std
        return self.true_torque() / self.torque_constants + noise

    def joint_state(self) -> JointStateSample:
        """Positions, velocities and the torque measured through the current (``k_e I``)."""
        sample = super().joint_state()
        sample.effort = self.torque_constants * self.current()
        return sample


def run_sweep(sim: LunarArmSim, sweep: Sweep, *, record_every: int = 1, trim_s: float = 0.5,
              settle_s: float = 0.5) -> SweepRecording:
    """Run one eq. 11 sweep in the simulation and record it (fast, no ROS).

    The arm is put at the sweep's start configuration (a reset: the move
    there is not simulated) and settles; then the servo target moves at the
    sweep speed, forward then backward, ``sweep.cycles`` times. Samples of the
    first ``trim_s`` seconds of each pass (the servo's acceleration
    transient) are dropped; every ``record_every``-th step is recorded with
    the measured torque (``k_e I``).
    """
    sim.reset(dict(zip(sim.joint_names, sweep.start_configuration(), strict=True)))
    sim.settle(settle_s)
    recording = SweepRecording(sweep.joint)
    steps = round(sweep.half_period / sim.timestep)
    trim = round(trim_s / sim.timestep)
    sign = math.copysign(1.0, sweep.end - sweep.start)
    name = [sim.joint_names[sweep.joint]]
    for _ in range(sweep.cycles):
        for direction in (1.0, -1.0):
            sim.set_targets(name, velocities=[sign * direction * sweep.speed])
            positions, efforts = [], []
            for k in range(steps):
                sim.step(1)
                if k >= trim and k % record_every == 0:
                    state = sim.joint_state()
                    positions.append(state.position)
                    efforts.append(state.effort)
            recording.extend(positions, efforts, direction)
    sim.set_targets(name, velocities=[0.0])
    return recording


def run_path(sim: LunarArmSim, path: np.ndarray, speed: float, *, update_every: int = 10,
             trim_s: float = 0.5, settle_s: float = 0.5,
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Follow a joint-space path there and back at ``speed`` (the fastest joint's) [rad/s].

    ``path`` (K, 6) waypoints are linearly interpolated; the arm goes from the
    first to the last waypoint and returns the same way, so every q is passed
    with opposite velocities (for eq. 5 pairing). Every physics step after the
    first ``trim_s`` seconds of each way is recorded. Returns positions [rad]
    (N, 6), measured torques [N m] (N, 6) and direction (+1/-1) (N,).
    """
    path = np.asarray(path, dtype=float)
    seg = np.abs(np.diff(path, axis=0)).max(axis=1)
    arc = np.concatenate([[0.0], np.cumsum(seg)])
    duration = arc[-1] / speed
    sim.reset(dict(zip(sim.joint_names, path[0], strict=True)))
    sim.settle(settle_s)
    dt = sim.timestep * update_every
    trim = round(trim_s / sim.timestep)
    out: list[list[np.ndarray]] = [[], [], []]
    names = list(sim.joint_names)
    for direction in (1.0, -1.0):
        chunks = round(duration / dt)
        for c in range(chunks):
            s0 = (c * dt) * speed
            s_now = s0 if direction > 0 else arc[-1] - s0
            s_next = min(s0 + dt * speed, arc[-1]) if direction > 0 else max(arc[-1] - s0 - dt * speed, 0.0)
            q_now = np.array([np.interp(s_now, arc, path[:, j]) for j in range(6)])
            q_next = np.array([np.interp(s_next, arc, path[:, j]) for j in range(6)])
            sim.set_targets(names, positions=q_now, velocities=(q_next - q_now) / dt)
            for k in range(update_every):
                sim.step(1)
                step_index = c * update_every + k
                if step_index >= trim:
                    state = sim.joint_state()
                    out[0].append(state.position)
                    out[1].append(state.effort)
                    out[2].append(np.array(direction))
    return np.array(out[0]), np.array(out[1]), np.array(out[2])


class LunarArmRosAdapter:
    """Serves a :class:`LunarArmSim` on a given rclpy node (imports rclpy lazily).

    Publishes ``/joint_states`` (position, velocity, effort = measured torque)
    at ``rate_hz`` and follows position (and velocity) targets on
    ``command_topic``; each timer tick advances the physics by
    ``real_time_factor / rate_hz`` seconds. Bad commands are ignored with a
    throttled warning.
    """

    def __init__(self, node: Any, sim: LunarArmSim, *, rate_hz: float = 200.0,
                 real_time_factor: float = 1.0,
                 command_topic: str = "/identification/command") -> None:
        from sensor_msgs.msg import JointState

        self.node, self.sim = node, sim
        self._msg_type = JointState
        self.lock = threading.Lock()
        self.pub = node.create_publisher(JointState, "/joint_states", 10)
        self.sub = node.create_subscription(JointState, command_topic, self._on_command, 10)
        self.steps = max(1, round(real_time_factor / rate_hz / sim.timestep))
        self.timer = node.create_timer(1.0 / rate_hz, self._on_timer)

    def _on_command(self, msg: Any) -> None:
        velocities = list(msg.velocity) if len(msg.velocity) == len(msg.name) else None
        try:
            with self.lock:
                self.sim.set_targets(list(msg.name), positions=list(msg.position),
                                     velocities=velocities)
        except (InvalidInputError, KeyError) as exc:
            self.node.get_logger().warning(f"command ignored: {exc}", throttle_duration_sec=2.0)

    def _on_timer(self) -> None:
        with self.lock:
            self.sim.step(self.steps)
            state = self.sim.joint_state()
        msg = self._msg_type()
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.name = list(state.names)
        msg.position = state.position.tolist()
        msg.velocity = state.velocity.tolist()
        msg.effort = state.effort.tolist()
        self.pub.publish(msg)

    def close(self) -> None:
        """Remove the timer, publisher and subscription from the node."""
        self.node.destroy_timer(self.timer)
        self.node.destroy_subscription(self.sub)
        self.node.destroy_publisher(self.pub)

