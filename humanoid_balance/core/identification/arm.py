"""The arm an identification run moves: model, limits, collision geometry, the checked plan.

:class:`IdentificationArm` is built once from the configuration (at the node's
``configure``): the URDF's chain, its gravity regressor and parameter set (the
paper's 12 composite parameters for the 6-DOF lunar arm, the QR base set for any
other chain), its joint limits (position, velocity, effort) and collision geometry,
and the plan of sweeps (eq. 11: joint n..1 sweeps at ``speed`` about its entry of
the static configuration by ``sweep_half_range``, the others hold it; with
``optimize_configuration`` the GA-PSO solution of eq. 12 for each sweep). Every
path of the plan (each sweep, and each move between two sweeps) is checked for
clearance here, so that a plan through a collision fails configure, not the run.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin

from humanoid_balance.core.identification.optimisation import (
    ClearanceChecker,
    joint_line,
    optimise_static_configurations,
    path_clearance,
)
from humanoid_balance.core.identification.regressor import (
    GravityRegressor,
    ParameterSet,
    identification_parameters,
)
from humanoid_balance.core.identification.trajectory import Sweep, identification_plan
from humanoid_balance.exceptions import ConfigurationError
from humanoid_balance.params.identification_executor import IdentificationExecutorConfig
from humanoid_balance.resources import urdf_path as package_urdf_path

__all__ = ["IdentificationArm"]


class IdentificationArm:
    """The arm of a run, from its configuration: model, limits, clearance checks and plan.

    Args:
        config: the run's configuration (its plan and model settings are used).
        logger: where the optimised static configurations are reported (``info``).

    Attributes:
        joints: the arm's joints, in chain order.
        regressor: the gravity regressor (eqs. 6-7) at ``config.gravity_m_s2``.
        pset: the parameter set identified (eq. 8's composite set, or a QR base set).
        clearance: the links' collision geometry.
        clearance_m: the smallest distance allowed between links [m].
        lower, upper: the joints' position limits [rad].
        velocity_limit: joint speed limits [rad/s] (inf where the URDF gives none).
        effort_limit: joint torque limits [N m] (inf where the URDF gives none).
        acceleration: the acceleration limit of every joint [rad/s^2].
        plan: the sweeps, in the order they run.

    Raises:
        ConfigurationError: no URDF at ``urdf_path``, ``arm_joints`` not its chain, one value
            per joint missing, a sweep starting outside the limits, or a path of the plan
            closer than ``clearance_m``.
    """

    def __init__(self, config: IdentificationExecutorConfig,
                 logger: Any = None) -> None:
        self.logger = logger if logger is not None else logging.getLogger(__name__)
        urdf = config.urdf_path or str(package_urdf_path("lunar_arm"))
        if not Path(urdf).is_file():
            raise ConfigurationError(f"urdf_path {urdf!r} is not a file: give the arm's URDF")
        model = pin.buildModelFromUrdf(urdf)
        joints = tuple(config.arm_joints)
        if joints != tuple(model.names[1:]):
            raise ConfigurationError(
                f"arm_joints {list(joints)} must be the URDF's chain "
                f"{list(model.names[1:])}, in order")
        self.joints = joints
        self.regressor = GravityRegressor(model, config.gravity_m_s2)
        self.pset: ParameterSet = identification_parameters(self.regressor)
        self.clearance = ClearanceChecker(urdf, model)
        self.clearance_m = config.clearance_m
        n = len(joints)
        static = np.asarray(config.static_configuration_rad, float)
        constants = np.asarray(config.torque_constants_n_m_a, float)
        if static.shape != (n,) or constants.shape != (n,):
            raise ConfigurationError(
                f"static_configuration has {static.size} and torque_constants "
                f"{constants.size} values: expected {n} each")
        self.static = static
        self.lower, self.upper = model.lowerPositionLimit.copy(), model.upperPositionLimit.copy()
        # a URDF without a limit gives 0 (or inf): no check then
        self.velocity_limit = np.where(model.velocityLimit > 0.0, model.velocityLimit, np.inf)
        self.effort_limit = np.where(model.effortLimit > 0.0, model.effortLimit, np.inf)
        self.acceleration = config.acceleration_limit_rad_s2
        half = config.sweep_half_range_rad
        ranges = [(max(s - half, lo), min(s + half, hi))
                  for s, lo, hi in zip(static, self.lower, self.upper, strict=True)]
        statics = [static] * n
        if config.optimize_configuration:
            statics = self._optimised_statics(static, ranges)
        self.plan: list[Sweep] = identification_plan(statics, ranges, config.speed_rad_s)
        self._check_plan()

    def _check_plan(self) -> None:
        """Every sweep starts within the limits; no path of the plan passes too close."""
        previous: np.ndarray | None = None
        for sweep in self.plan:
            q = sweep.start_configuration()
            if np.any(q < self.lower) or np.any(q > self.upper):
                raise ConfigurationError(
                    f"static configuration {np.degrees(q).round(1).tolist()} deg of "
                    f"{self.joints[sweep.joint]}'s sweep is outside the joint limits")
            # the whole path, not only where each sweep starts: the sweep, and the move to its
            # start from the sweep before (from another static configuration when optimised)
            end = q.copy()
            end[sweep.joint] = sweep.end
            name = f"{self.joints[sweep.joint]}'s sweep"
            if previous is not None:
                problem = self.path_problem(f"the move to {name}", joint_line(previous, q))
                if problem:
                    raise ConfigurationError(f"{problem}: choose another static_configuration")
            problem = self.path_problem(name, joint_line(q, end))
            if problem:
                raise ConfigurationError(f"{problem}: choose another static_configuration or a "
                                         "smaller sweep_half_range")
            previous = q

    def path_problem(self, what: str, path: np.ndarray) -> str | None:
        """Why ``path`` (k, n) [rad] comes closer than ``clearance_m``, or None."""
        closest = path_clearance(self.clearance, path)
        if closest.distance >= self.clearance_m:
            return None
        return (f"{what} passes {closest.distance * 1e3:.1f} mm between {closest.pair} at "
                f"{np.degrees(closest.configuration).round(1).tolist()} deg, less than "
                f"clearance {self.clearance_m * 1e3:.1f} mm")

    def clearance_problem(self, q: np.ndarray) -> str | None:
        """Why the arm may not move from ``q`` [rad] (links too close; None: it may)."""
        distance, pair = self.clearance.min_distance(q)
        if distance < self.clearance_m:
            return (f"clearance {distance * 1e3:.1f} mm between {pair} is below "
                    f"{self.clearance_m * 1e3:.1f} mm")
        return None

    def _optimised_statics(self, static: np.ndarray, ranges: Sequence[tuple[float, float]]
                           ) -> list[np.ndarray]:
        """Eq. 12 by GA-PSO for every sweep (kept only where it beats ``static_configuration``)."""
        choices = optimise_static_configurations(self.regressor, self.pset, static, ranges,
                                                 self.clearance, epsilon=self.clearance_m)
        for joint, choice in zip(self.joints, choices, strict=True):
            excitation = choice.chosen
            self.logger.info(
                f"sweep of {joint}: static {np.round(np.degrees(choice.static), 1).tolist()} deg, "
                f"Q {excitation.q_range:.3f}, condition number {excitation.condition_number:.2f}, "
                f"clearance {excitation.min_clearance * 1e3:.1f} mm")
        return [choice.static for choice in choices]
