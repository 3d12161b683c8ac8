"""The interface of ``arm_balance``'s controllers: one implementation per mode.

:class:`~humanoid_balance.core.arm_loop.ArmLoop` runs any :class:`ArmController`;
what differs between the modes lives in the implementation, not in branches on
a mode string:

* ``ground``: :class:`GroundArmController`, resolved momentum control of seed 000
  (:class:`~humanoid_balance.core.rmc.RmcController`, unchanged, with what the
  loop needs added: its frames, its joint limits, the predicted stability margin
  of the model ZMP); output :class:`~humanoid_balance.core.rmc.RmcOutput`.
* ``free_floating``: :class:`~humanoid_balance.core.free_floating.FreeFloatingArmController`
  (seed 002, generalized Jacobian); output
  :class:`~humanoid_balance.core.free_floating.FreeFloatingOutput`, which has no
  ground indicators (a floating robot has no ZMP).

Every output carries the fields of :class:`ArmOutput` (the command and the
momentum); each controller reads its own output for the model ZMP, the predicted
margin and the diagnostics (:meth:`ArmController.report`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from humanoid_balance.core.joint_limits import JointLimits, arm_acceleration_limit
from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.rmc import RmcController, RmcInput, RmcOutput

__all__ = ["ArmController", "ArmOutput", "ArmReport", "GroundArmController"]


class ArmOutput(Protocol):
    """What every controller's output of one cycle carries.

    Attributes:
        names: joint names, the job arm's then the other arm's.
        position: commanded positions [rad] at the end of the cycle.
        velocity: commanded velocities [rad/s] for the cycle.
        momentum: total ``[P; L]`` [N s, N m s] in the controller's momentum frame.
    """

    @property
    def names(self) -> tuple[str, ...]: ...

    @property
    def position(self) -> np.ndarray: ...

    @property
    def velocity(self) -> np.ndarray: ...

    @property
    def momentum(self) -> np.ndarray: ...


@dataclass
class ArmReport:
    """A cycle's output as diagnostics: key values and, when something is off, a warning.

    Attributes:
        values: diagnostic key -> value.
        warning: why the output is not what was asked (limits, balance), or None.
    """

    values: dict[str, object] = field(default_factory=dict)
    warning: str | None = None


class ArmController(Protocol):
    """A controller of both arms for :class:`~humanoid_balance.core.arm_loop.ArmLoop`.

    Attributes:
        job_arm: the arm that does the job (``right`` or ``left``).
        twist_frame: the frame a job twist must be given in.
        momentum_frame: the frame of :attr:`ArmOutput.momentum`.
        has_selection: the momentum selection applies (:meth:`set_selection`).
        needs_base_pose: the measured configuration includes a measured base pose.
    """

    job_arm: str
    twist_frame: str
    has_selection: bool
    needs_base_pose: bool

    @property
    def momentum_frame(self) -> str: ...

    @property
    def names(self) -> tuple[str, ...]: ...

    @property
    def job_names(self) -> tuple[str, ...]: ...

    @property
    def arm_limits(self) -> JointLimits:
        """Limits of both arms' joints, in the order of :attr:`names`."""
        ...

    @property
    def commanded_positions(self) -> np.ndarray | None: ...

    def set_job_arm(self, job_arm: str) -> None: ...

    def set_selection(self, selection: Sequence[str], secondary: Sequence[str] = ()) -> None: ...

    def reset(self, q: np.ndarray, arm_velocities: np.ndarray | None = None) -> None: ...

    def step(self, inputs: RmcInput, dt: float) -> Any:
        """One cycle of ``dt`` [s]; an :class:`ArmOutput` of the controller's own type."""
        ...

    def predicted_margin(self, out: Any) -> float | None:
        """The stability margin [m] ``out`` predicts (positive inside), or None."""
        ...

    def model_zmp(self, out: Any) -> np.ndarray | None:
        """The model ZMP ``[x, y]`` [m] in ``W`` of ``out``, or None."""
        ...

    def report(self, out: Any) -> ArmReport:
        """``out`` as diagnostics."""
        ...


def default_arm_limits(model: RobotModel, names: Sequence[str]) -> JointLimits:
    """URDF position and speed limits with the seed-000 acceleration table (Table 2)."""
    lower, upper = model.position_limits(list(names))
    return JointLimits(tuple(names), lower, upper, model.velocity_limits(list(names)),
                       np.array([arm_acceleration_limit(n) for n in names]))


class GroundArmController(RmcController):
    """``ground`` mode: :class:`~humanoid_balance.core.rmc.RmcController` as an :class:`ArmController`.

    Takes :class:`RmcController`'s keyword arguments; ``limits`` defaults to
    :func:`default_arm_limits` (which :attr:`arm_limits` returns in command order).
    """

    twist_frame = "W"
    has_selection = True
    needs_base_pose = False

    def __init__(self, model: RobotModel, **kwargs: Any) -> None:
        arms = model.group("right_arm") + model.group("left_arm")
        self._loop_limits: JointLimits = kwargs.pop("limits", None) or default_arm_limits(model,
                                                                                         arms)
        super().__init__(model, limits=self._loop_limits, **kwargs)

    @property
    def momentum_frame(self) -> str:
        """The reference point the momentum is taken about (``W`` or ``com``)."""
        return self.reference_point

    @property
    def arm_limits(self) -> JointLimits:
        """Limits of both arms' joints in the order of :attr:`names`."""
        index = {n: i for i, n in enumerate(self._loop_limits.names)}
        return self._loop_limits.subset([index[n] for n in self.names])

    def predicted_margin(self, out: RmcOutput) -> float | None:
        """The model ZMP's margin [m] to the support polygon (-inf when the feet would lift off:
        the guard then holds the job arm), or None without a polygon (NaN)."""
        margin = out.indicators.zmp_margin
        return None if math.isnan(margin) else float(margin)

    def model_zmp(self, out: RmcOutput) -> np.ndarray | None:
        """The model ZMP [m] in ``W``, or None when the feet would lift off."""
        zmp = out.indicators.model_zmp
        x, y = float(zmp[0]), float(zmp[1])  # (math on two floats: this runs every cycle)
        return np.array([x, y]) if math.isfinite(x) and math.isfinite(y) else None

    def report(self, out: RmcOutput) -> ArmReport:
        """Balance indicators, exactness and saturations; a warning when limits or balance bite."""
        ind = out.indicators
        values: dict[str, object] = dict(
            zmp_shift_x_m=float(ind.zmp_shift[0]), zmp_shift_y_m=float(ind.zmp_shift[1]),
            model_zmp_margin_m=ind.zmp_margin, lift_off_margin_n=ind.lift_off_margin,
            slide_margin_n=ind.slide_margin, turn_margin_nm=ind.turn_margin,
            selected_momentum_max=float(np.max(np.abs(out.selected_momentum))),
            job_exact=out.job_exact, balance_exact=out.balance_exact, job_scale=out.job_scale,
            regime=out.regime.value,
            saturated=",".join(out.saturated_joints) or "none",
            acceleration_overridden=",".join(out.acceleration_overridden) or "none")
        warning = None
        if not (out.job_exact and out.balance_exact):
            warning = (f"joint limits: {out.regime.value} (job scale {out.job_scale:.3g}; "
                       f"{','.join(out.saturated_joints) or 'no joint at its limit'})")
        if not ind.balanced:
            warning = "balance indicators out of bounds (lift-off, slide, turn or ZMP)"
        return ArmReport(values, warning)
