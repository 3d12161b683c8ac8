"""Parameters of ``mujoco_sim`` (the seed robots in MuJoCo behind the robot's topics).

``mujoco_sim`` is not a lifecycle node: it reads every parameter at start-up,
and from then on only the dynamic ones change. They apply between two
physics steps: ``real_time_factor`` paces the next step, ``command_timeout``
and ``hold_deceleration`` act on the next step's targets,
``lock_step_timeout`` bounds the next period's wait, and ``inclinometer_rate``
sets the next inclinometer sample. The others are refused with the reason (restart the node to change them).

:func:`config_from_values` turns the values into the typed :class:`MujocoSimConfig` that
the simulation runner (:class:`~humanoid_balance.sim.runner.SimRunner`) takes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from humanoid_balance.exceptions import ConfigurationError
from humanoid_balance.params import Param, ParamSpec
from humanoid_balance.params.typed import typed_config
from humanoid_balance.sim.lock_step import LockStepTopic, parse_lock_step_topics

__all__ = ["DYNAMIC_FIELDS", "JOINT_STATE_TYPE", "MODELS", "SPEC", "YAML_HEADER",
           "MujocoSimConfig", "config_from_values"]

#: model -> its default gravity [m/s^2] (``gravity`` < 0 picks it)
MODELS: dict[str, float] = {"humanoid": 9.81, "lunar_arm": 9.81, "space_robot": 0.0}

YAML_HEADER = """mujoco_sim: the simulated seed robots (ROS 2 parameter file).
Gravity: Earth 9.81, Moon 1.635, Mars 3.71 m/s^2; a negative value takes the model's own
(space_robot: 0). sensor_noise 1 is nominal: F/T 0.5 N and 0.05 N m, FSR 0.5 N, inclinometer
0.02 deg. lock_step_topics entries are "topic:package/msg/Type" (header first), e.g.
"/arm_balance/command:sensor_msgs/msg/JointState"."""


def _gravity(value: Any) -> str | None:
    return None if value >= 0.0 or value == -1.0 else (
        f"gravity={value!r}: expected >= 0 m/s^2, or -1 for the model's default")


def _consistent(values: Mapping[str, Any]) -> str | None:
    names = [n for n in values["initial_joint_names"] if n]
    positions = values["initial_joint_positions"]
    if names and len(positions) != len(names):
        return (f"initial_joint_names has {len(names)} names but initial_joint_positions "
                f"{len(positions)} values: give one position per name")
    if values["inclinometer_rate"] > values["publish_rate"] > 0:
        return (f"inclinometer_rate={values['inclinometer_rate']:g} Hz exceeds "
                f"publish_rate={values['publish_rate']:g} Hz: the inclinometer is sampled "
                "with the sensors")
    if values["clock_rate"] > values["publish_rate"] > 0:
        return (f"clock_rate={values['clock_rate']:g} Hz exceeds publish_rate="
                f"{values['publish_rate']:g} Hz: /clock is sampled with the sensors")
    if values["clock_rate"] > 0 and values["lock_step"]:
        return (f"clock_rate={values['clock_rate']:g} Hz with lock_step: a lock-step "
                "simulation's nodes answer each period's /clock; set clock_rate 0 (every publish)")
    if values["command_latency"] > 0 and values["lock_step"]:
        return (f"command_latency={values['command_latency']:g} s with lock_step: in lock-step "
                "each period's command acts from its stamp; set command_latency 0")
    if values["command_latency"] >= values["command_timeout"]:
        return (f"command_latency={values['command_latency']:g} s is not below command_timeout="
                f"{values['command_timeout']:g} s: every joint would hold before its command acts")
    if values["tf_rate"] > values["publish_rate"] > 0:
        return (f"tf_rate={values['tf_rate']:g} Hz exceeds publish_rate="
                f"{values['publish_rate']:g} Hz: /tf is sampled with the sensors")
    return None


SPEC = ParamSpec("mujoco_sim", [
    Param("model", "humanoid", "the robot: humanoid (seed 000, on a floor), lunar_arm (seed 004, "
          "fixed base) or space_robot (seed 002, free floating)", choices=tuple(MODELS)),
    Param("urdf_path", "", "the model's URDF (\"\": the package's)"),
    Param("gravity", 9.81, "gravity along -z (-1: the model's default)", "m/s^2", maximum=100.0,
          check=_gravity),
    Param("timestep", 0.001, "physics step", "s", minimum=1e-5, maximum=0.01),
    Param("integrator", "implicitfast", "MuJoCo's integrator: implicitfast (first order, stable "
          "at 1 ms) or rk4 (fourth order: the strike's ZMP figures converge at a 0.25 ms step, "
          "where implicitfast's 1 ms doubled a peak; the demo's lock-step run uses it; a step "
          "too long for the servos' damping is refused)", choices=("implicitfast", "rk4")),
    Param("real_time_factor", 1.0, "simulation time per wall time (0: as fast as possible)",
          minimum=0.0, maximum=100.0, dynamic=True),
    Param("publish_rate", 1000.0, "sensors and /clock (0: every step)", "Hz", minimum=0.0,
          maximum=100000.0),
    Param("clock_rate", 0.0, "/clock when slower than the sensors (0: with every publish): each "
          "node on simulation time handles every /clock message (free-running graph: 100 Hz, "
          "see humanoid_balance.graph.sim_graph); lock-step needs 0", "Hz", minimum=0.0),
    Param("command_topics", ["/arm_balance/command", "/joint_commands"],
          "sensor_msgs/JointState command topics (position and/or velocity by joint name)"),
    Param("sensor_noise", 1.0, "noise scale: 0 noise-free, 1 nominal", minimum=0.0, maximum=100.0),
    Param("joint_friction", 0.0, "Coulomb friction of every joint", "N m", minimum=0.0),
    Param("friction", 0.3, "foot-floor friction coefficient (seed 000)", minimum=0.0),
    Param("seed", 0, "seed of the sensor noise", minimum=0),
    Param("initial_joint_names", [""], "joints that start away from zero (\"\": none)"),
    Param("initial_joint_positions", [0.0], "their start positions, one per name", "rad"),
    Param("duration", 0.0, "stop after this much simulation time (0: run until shut down)", "s",
          minimum=0.0),
    Param("command_timeout", 0.2, "a joint whose last command is older (simulation time) holds: "
          "its commanded velocity decelerates to rest at hold_deceleration", "s",
          minimum=0.0, exclusive_minimum=True, maximum=60.0, dynamic=True),
    Param("command_latency", 0.0, "a stamped command acts this long after its stamp, as a "
          "servo interface plays a command stream back (free-running: the transport's varying "
          "delay does not reach the servos; later ones act at once, as of stamp plus latency); "
          "0: each acts as it comes, as of its stamp; lock-step needs 0", "s", minimum=0.0,
          maximum=0.1),
    Param("hold_deceleration", 5.0, "deceleration of a holding joint's commanded velocity",
          "rad/s^2", minimum=0.0, exclusive_minimum=True, maximum=10000.0, dynamic=True),
    Param("inclinometer_rate", 100.0, "/waist/inclinometer (a tilt sensor; the waist's outer "
          "loop runs at 50 Hz; 0: with every publish)", "Hz", minimum=0.0, dynamic=True),
    Param("tf_rate", 100.0, "/tf: world -> the base link (pelvis, base_link) from the simulated "
          "base pose; needs tf2_msgs (0: not published)", "Hz", minimum=0.0),
    Param("diagnostics_rate", 1.0, "/diagnostics: speed, commands, holds, lock-step misses", "Hz",
          minimum=0.0, exclusive_minimum=True, maximum=100.0),
    Param("lock_step", False, "each publish period waits for the answers on lock_step_topics"),
    Param("lock_step_topics", [""], "'topic:package/msg/Type' entries waited for (header stamp "
          ">= the period's; \"\": none)"),
    Param("lock_step_timeout", 1.0, "wall time a period waits at most for its answers, then "
          "steps on and counts a miss", "s", minimum=0.0, exclusive_minimum=True, maximum=60.0,
          dynamic=True),
], cross_check=_consistent, lifecycle=False)


#: the command topics' message type (a lock-step topic that is also a command topic has it)
JOINT_STATE_TYPE = "sensor_msgs/msg/JointState"


@dataclass(frozen=True)
class MujocoSimConfig:
    """The ``mujoco_sim`` parameters, typed and in SI units (see :data:`SPEC` for each).

    Attributes:
        model: a key of :data:`MODELS`.
        urdf_path: the model's URDF (None: the package's).
        gravity_m_s2: gravity along -z [m/s^2] (None: the model's default).
        timestep_s: physics step [s].
        integrator: MuJoCo's integrator (``implicitfast``, ``rk4``).
        real_time_factor: simulation time per wall time (0: as fast as possible); dynamic.
        publish_rate_hz: sensors and ``/clock`` [Hz] (0: every step).
        clock_rate_hz: ``/clock`` when slower than the sensors [Hz] (0: with every publish).
        command_topics: the JointState command topics.
        sensor_noise: noise scale (0 noise-free, 1 nominal).
        joint_friction_n_m: Coulomb friction of every joint [N m].
        friction: foot-floor friction coefficient.
        seed: seed of the sensor noise.
        initial_positions_rad: joints that start away from zero, name -> position [rad].
        duration_s: stop after this much simulation time [s] (0: run until stopped).
        command_timeout_s: a joint whose last command is older holds [s]; dynamic.
        command_latency_s: a stamped command acts this long after its stamp [s].
        hold_deceleration_rad_s2: a holding joint's commanded velocity decelerates at this
            [rad/s^2]; dynamic.
        inclinometer_rate_hz: the inclinometer's samples [Hz] (0: every publish); dynamic.
        tf_rate_hz: ``/tf`` [Hz] (0: none).
        diagnostics_rate_hz: ``/diagnostics`` [Hz].
        lock_step: each publish period waits for the answers on :attr:`lock_step_topics`.
        lock_step_topics: the topics waited for (parsed even when not in lock-step).
        lock_step_timeout_s: wall time a period waits at most [s]; dynamic.
    """

    model: str
    urdf_path: str | None
    gravity_m_s2: float | None
    timestep_s: float
    integrator: str
    real_time_factor: float
    publish_rate_hz: float
    clock_rate_hz: float
    command_topics: tuple[str, ...]
    sensor_noise: float
    joint_friction_n_m: float
    friction: float
    seed: int
    initial_positions_rad: tuple[tuple[str, float], ...]
    duration_s: float
    command_timeout_s: float
    command_latency_s: float
    hold_deceleration_rad_s2: float
    inclinometer_rate_hz: float
    tf_rate_hz: float
    diagnostics_rate_hz: float
    lock_step: bool
    lock_step_topics: tuple[LockStepTopic, ...]
    lock_step_timeout_s: float

    @classmethod
    def defaults(cls, **changes: Any) -> MujocoSimConfig:
        """The spec's defaults, with ``changes`` (field names) applied."""
        return replace(config_from_values(SPEC.defaults()), **changes)

    def with_dynamic(self, other: MujocoSimConfig) -> MujocoSimConfig:
        """This config with the dynamic fields (:data:`DYNAMIC_FIELDS`) of ``other``."""
        return replace(self, **{name: getattr(other, name) for name in DYNAMIC_FIELDS})


#: the fields of :class:`MujocoSimConfig` that change while the simulation runs
DYNAMIC_FIELDS = ("real_time_factor", "command_timeout_s", "hold_deceleration_rad_s2",
                  "inclinometer_rate_hz", "lock_step_timeout_s")


def config_from_values(values: Mapping[str, Any]) -> MujocoSimConfig:
    """The typed config of the parameter ``values`` (validated by :data:`SPEC`; each field
    named by :func:`~humanoid_balance.params.typed.typed_config`'s rule, the others computed).

    Raises:
        ConfigurationError: a value the spec refuses, a malformed ``lock_step_topics``
            entry, or a lock-step topic that is also a command topic of another type.
    """
    v = SPEC.coerce_all({**SPEC.defaults(), **values})
    names = [n for n in v["initial_joint_names"] if n]
    command_topics = tuple(t for t in v["command_topics"] if t)
    lock_topics = tuple(parse_lock_step_topics(list(v["lock_step_topics"])))
    for topic in lock_topics:
        if topic.topic in command_topics and topic.type_name != JOINT_STATE_TYPE:
            raise ConfigurationError(
                f"{topic.topic} is a command topic ({JOINT_STATE_TYPE}) and a lock-step topic "
                f"of type {topic.type_name}: give it one type")
    return typed_config(
        MujocoSimConfig, SPEC, v, urdf_path=v["urdf_path"] or None,
        gravity_m_s2=None if v["gravity"] < 0 else v["gravity"], command_topics=command_topics,
        initial_positions_rad=tuple(zip(names, v["initial_joint_positions"], strict=True))
        if names else (), lock_step_topics=lock_topics)
