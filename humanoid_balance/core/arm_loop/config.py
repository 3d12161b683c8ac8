"""The arm loop's tunables (SI units) and its timing constants."""

from __future__ import annotations

import math
from dataclasses import dataclass

from humanoid_balance.exceptions import ConfigurationError

__all__ = ["CLOCK_PROBLEM_S", "MAX_LAG_S", "MAX_STEPS", "RESUME_FROM_MEASURED_RAD", "ArmLoopConfig"]

#: a cycle integrates at most this many nominal periods (a longer gap is caught up over the
#: next cycles, its commands stamped on the grid, behind the clock meanwhile)
MAX_STEPS = 10
#: s the timer grid may lag the clock before it starts anew (a clock jump)
MAX_LAG_S = 1.0
#: s (on the new clock) the ``clock`` problem stays after the clock went back: long enough for
#: the diagnostics to carry it
CLOCK_PROBLEM_S = 1.0
#: rad: held at rest, commands resume from the measured positions (not from the held command)
#: where an arm joint is measured further than this from it: the robot is not where it was held
#: (a restarted simulation whose first joint states came before its /clock; tools/chaos.py saw
#: one command 0.75 rad from the arm, then a jump back)
RESUME_FROM_MEASURED_RAD = 0.05
#: rad, s: a held arm measured elsewhere resumes from the measurement only once it has settled
#: there (every arm joint within SETTLED_RAD for SETTLE_S); while it still moves, the joint
#: states are the servos catching up with the held command, late (a loaded machine: resuming
#: from such a measurement commanded steps of 14.9 and 16.7 deg in one cycle back to where the
#: arm had been, test/faults/test_arm_balance.py's enable cases beside two busy loops)
SETTLED_RAD = 0.002
SETTLE_S = 0.05


@dataclass(frozen=True)
class ArmLoopConfig:
    """Tunables of :class:`~humanoid_balance.core.arm_loop.ArmLoop` (SI units).

    Attributes:
        rate_hz: nominal cycle rate [Hz] (> 0).
        joint_state_timeout_s: arm joint states (and base pose) older than this hold the arms [s].
        job_input_timeout_s: a job input older than this counts as zero [s].
        margin_timeout_s: a measured margin older than this is not used by the guard [s].
        guard_slow_margin_m: stability margin [m] where the job arm starts to slow.
        guard_hold_margin_m: stability margin [m] where it stops (below ``guard_slow_margin_m``).
        base_pose_source: where the base pose comes from, for messages.

    Raises:
        ConfigurationError: a value not finite, a rate or timeout not > 0, or
            ``guard_hold_margin_m >= guard_slow_margin_m``.
    """

    rate_hz: float = 500.0
    joint_state_timeout_s: float = 0.05
    job_input_timeout_s: float = 0.1
    margin_timeout_s: float = 0.1
    guard_slow_margin_m: float = 0.03
    guard_hold_margin_m: float = 0.01
    base_pose_source: str = "the base pose topic"

    def __post_init__(self) -> None:
        for name in ("rate_hz", "joint_state_timeout_s", "job_input_timeout_s", "margin_timeout_s",
                     "guard_slow_margin_m", "guard_hold_margin_m"):
            value = getattr(self, name)
            if not math.isfinite(value):
                raise ConfigurationError(f"ArmLoopConfig.{name}={value} must be finite")
            if name.endswith(("_hz", "_s")) and value <= 0:
                raise ConfigurationError(f"ArmLoopConfig.{name}={value} must be > 0")
        if self.guard_hold_margin_m >= self.guard_slow_margin_m:
            raise ConfigurationError(
                f"guard_hold_margin={self.guard_hold_margin_m} must be below "
                f"guard_slow_margin={self.guard_slow_margin_m}")

    @property
    def period_s(self) -> float:
        """Nominal period [s]."""
        return 1.0 / self.rate_hz
