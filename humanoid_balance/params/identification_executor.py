"""Parameters of ``identification_executor`` (seed 004's gravity identification).

The plan and the model are built from the read-only ones at configure. The
dynamic ones apply between runs: the estimation settings (``trim``,
``method``, ``average``, ``output_path``) at the end of the next run, the
input settings (``torque_source``, ``torque_constants``,
``joint_state_timeout``) from the next joint state, ``rate`` and
``diagnostics_rate`` at the next activation (the node refuses them while
active). The node refuses every change during a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from humanoid_balance.command_interface import command_params
from humanoid_balance.core.identification import (
    DEFAULT_AVERAGE,
    EARTH_GRAVITY,
    LUNAR_JOINTS,
    METHODS,
)
from humanoid_balance.params import Param, ParamSpec
from humanoid_balance.params.typed import MotorNodeConfig, typed_config

__all__ = ["SPEC", "TORQUE_SOURCES", "YAML_HEADER", "IdentificationExecutorConfig",
           "config_from_values"]

#: where the torque comes from: the effort field [N m], or the motor current [A] in it (eq. 19)
TORQUE_SOURCES = ("effort", "current")

YAML_HEADER = """identification_executor: gravity-parameter identification of the lunar arm (seed 004)
(ROS 2 parameter file). The default static_configuration keeps >= 28 mm clearance on every
+-30 deg sweep from it; an acceleration_limit of 30 deg/s^2 stops a 3 deg/s sweep in 0.1 s."""


def _non_blank(value: Any) -> str | None:
    return None if str(value).strip() else f"output_path={value!r}: expected a file path"


def _one_per_joint(values: Mapping[str, Any]) -> str | None:
    n = len(values["arm_joints"])
    for name in ("static_configuration", "torque_constants"):
        if len(values[name]) != n:
            return (f"{name} has {len(values[name])} values: expected {n}, one per arm joint "
                    f"({list(values['arm_joints'])})")
    return None


SPEC = ParamSpec("identification_executor", [
    Param("arm_joints", list(LUNAR_JOINTS), "the arm's joints, the URDF's chain in order",
          min_length=1),
    Param("urdf_path", "", "the arm's URDF (\"\": the package's urdf/lunar_arm.urdf)"),
    Param("speed", 3.0, "sweep speed (<= 3, the paper's quasi-static bound)", "deg/s",
          minimum=0.0, exclusive_minimum=True, maximum=3.0),
    Param("gravity", EARTH_GRAVITY, "gravity of the place of the run (Earth); scale the result "
          "for the Moon", "m/s^2", minimum=0.0, exclusive_minimum=True),
    Param("torque_source", "effort", "effort: /joint_states effort is torque [N m]; current: "
          "it is motor current [A] and tau = k_e I (eq. 19)", choices=TORQUE_SOURCES,
          dynamic=True),
    Param("torque_constants", [1.0] * 6, "k_e per joint (torque_source: current)", "N m/A",
          minimum=0.0, exclusive_minimum=True, min_length=1, dynamic=True),
    Param("optimize_configuration", False,
          "true: GA-PSO static configuration per sweep (eq. 12) at configure"),
    Param("clearance", 0.01, "smallest distance allowed between links, and a link and the torso",
          "m", minimum=0.0),
    Param("output_path", "identification_results.yaml",
          "results YAML: names, values, units, std, fit RMSE, timing", check=_non_blank,
          dynamic=True),
    Param("static_configuration", [0.0, 40.0, 20.0, 60.0, 40.0, 30.0],
          "held by the other joints during each sweep", "deg", min_length=1),
    Param("sweep_half_range", 30.0, "each joint sweeps static +- this (within its limits)",
          "deg", minimum=0.0, exclusive_minimum=True, maximum=180.0),
    Param("rate", 100.0, "command rate (applies at the next activation)", "Hz",
          minimum=1.0, maximum=1000.0, dynamic=True),
    Param("acceleration_limit", 30.0, "every pass, approach and stop accelerates and brakes at "
          "this", "deg/s^2", minimum=10.0, maximum=10000.0),
    Param("joint_state_timeout", 0.5, "joint states older (by stamp or arrival) stop the run; "
          "stamped further in the future: rejected", "s", minimum=0.001, maximum=5.0,
          dynamic=True),
    Param("trim", 0.5, "dropped at the start of each pass (servo acceleration)", "s",
          minimum=0.0, dynamic=True),
    Param("method", "sequential", "the estimator: eq. 10 back to front, one least squares, or one "
          "weighted by each joint's noise", choices=METHODS, dynamic=True),
    Param("average", DEFAULT_AVERAGE, "friction-free samples averaged per block before the fit "
          "(1: none)", minimum=1, dynamic=True),
    Param("diagnostics_rate", 2.0, "/diagnostics rate (applies at the next activation)", "Hz",
          minimum=0.1, maximum=100.0, dynamic=True),
    *command_params("/identification/command"),
], cross_check=_one_per_joint)


@dataclass(frozen=True)
class IdentificationExecutorConfig(MotorNodeConfig):
    """The parameters of ``identification_executor``, typed, in SI units (radians inside).

    Made by :func:`config_from_values` from the spec's values (validated there): see
    :data:`SPEC` for each one's meaning. The rate and the command output:
    :class:`~humanoid_balance.params.typed.MotorNodeConfig` (also the URDF, "": the package's
    lunar arm; the joint states' timeout; the diagnostics rate).

    Attributes:
        arm_joints: the arm's joints, the URDF's chain in order.
        speed_rad_s: sweep speed [rad/s].
        gravity_m_s2: gravity of the place of the run [m/s^2].
        torque_source: ``effort`` (torque [N m]) or ``current`` (motor current [A]).
        torque_constants_n_m_a: k_e per joint [N m/A].
        optimize_configuration: GA-PSO static configuration per sweep (eq. 12).
        clearance_m: smallest distance allowed between links [m].
        output_path: the results YAML.
        static_configuration_rad: held by the other joints during each sweep [rad].
        sweep_half_range_rad: each joint sweeps static +- this [rad].
        acceleration_limit_rad_s2: every pass, approach and stop [rad/s^2].
        trim_s: dropped at the start of each pass [s].
        method: the estimator (:data:`~humanoid_balance.core.identification.METHODS`).
        average: friction-free samples averaged per block.
    """

    arm_joints: tuple[str, ...]
    speed_rad_s: float
    gravity_m_s2: float
    torque_source: str
    torque_constants_n_m_a: tuple[float, ...]
    optimize_configuration: bool
    clearance_m: float
    output_path: str
    static_configuration_rad: tuple[float, ...]
    sweep_half_range_rad: float
    acceleration_limit_rad_s2: float
    trim_s: float
    method: str
    average: int


def config_from_values(values: Mapping[str, Any]) -> IdentificationExecutorConfig:
    """The typed config of ``values`` (every parameter of :data:`SPEC`): validated together
    (:meth:`~humanoid_balance.params.ParamSpec.coerce_all`), degrees converted to radians once.

    Raises:
        ConfigurationError: a value the spec refuses, with the reason.
    """
    v = SPEC.coerce_all({name: values[name] for name in SPEC.names})
    return typed_config(IdentificationExecutorConfig, SPEC, v)
