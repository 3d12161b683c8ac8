"""The seed robots ``mujoco_sim`` simulates, built by name or from its config (no rclpy)."""

from __future__ import annotations

from humanoid_balance.exceptions import HumanoidBalanceError
from humanoid_balance.params.mujoco_sim import MODELS, MujocoSimConfig
from humanoid_balance.resources import urdf_path as package_urdf_path
from humanoid_balance.sim.humanoid import HumanoidSim, SensorNoise
from humanoid_balance.sim.robot import MujocoRobotSim

__all__ = ["build_simulation", "simulation_for"]


def build_simulation(
    model: str, urdf_path: str | None, *, timestep: float, gravity: float | None,
    friction: float, joint_friction: float, sensor_noise: float, seed: int,
    arm_acceleration_limits: bool = False, integrator: str = "implicitfast",
) -> MujocoRobotSim:
    """The simulation of one of :data:`MODELS` (``gravity`` None: the model's default).

    ``arm_acceleration_limits``: the humanoid's arm servos close a command's jump within
    the arms' acceleration limits (:class:`~humanoid_balance.sim.humanoid.HumanoidSim`).
    """
    if model not in MODELS:
        raise HumanoidBalanceError(f"model={model!r}; mujoco_sim simulates {sorted(MODELS)}")
    g = MODELS[model] if gravity is None else gravity
    if model == "humanoid":
        return HumanoidSim(urdf_path, timestep=timestep, gravity=g, friction=friction,
                           joint_friction=joint_friction, noise=SensorNoise.nominal(sensor_noise),
                           seed=seed, arm_acceleration_limits=arm_acceleration_limits,
                           integrator=integrator)
    if model == "lunar_arm":
        from humanoid_balance.sim.lunar_arm import TABLE6_NOISE_RATIO, LunarArmSim

        # efforts as the arm's drives measure them: k_e I with the noise of seed 004's
        # Table 6 times sensor_noise, Coulomb friction from joint_friction
        return LunarArmSim(gravity=g, coulomb_friction=joint_friction, timestep=timestep, seed=seed,
                           torque_noise_ratio=[sensor_noise * r for r in TABLE6_NOISE_RATIO],
                           urdf=urdf_path, integrator=integrator)
    noise = SensorNoise.nominal(sensor_noise)
    path = urdf_path or str(package_urdf_path(model))
    return MujocoRobotSim(path, floating_base=(model == "space_robot"), timestep=timestep,
                          gravity=g, joint_friction=joint_friction,
                          joint_position_noise=noise.joint_position_rad, seed=seed,
                          integrator=integrator)


def simulation_for(config: MujocoSimConfig) -> MujocoRobotSim:
    """The simulation ``config`` describes, its arms' drives as the robot's: a command that
    jumps is closed within their acceleration limits."""
    return build_simulation(
        config.model, config.urdf_path, timestep=config.timestep_s, gravity=config.gravity_m_s2,
        friction=config.friction, joint_friction=config.joint_friction_n_m,
        sensor_noise=config.sensor_noise, seed=config.seed, arm_acceleration_limits=True,
        integrator=config.integrator)
