"""What one arm-loop cycle gives: a :class:`Command`, a :class:`Hold`, and the loop's state and
status for the diagnostics: a :class:`~humanoid_balance.core.diagnostics.LoopStatus` at
:data:`OK`, :data:`WARN` or :data:`ERROR` (:mod:`humanoid_balance.core.diagnostics`, re-exported
here)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np

from humanoid_balance.core.diagnostics import ERROR, OK, WARN, LoopStatus

__all__ = ["ERROR", "OK", "WARN", "Command", "Hold", "LoopState", "LoopStatus"]


class LoopState(Enum):
    """Where the loop is."""

    WAITING = "waiting"    # never commanded: nothing to hold
    RUNNING = "running"    # commanding from the controller
    STOPPING = "stopping"  # a hold, still decelerating
    HELD = "held"          # a hold, standing still


@dataclass(frozen=True)
class Command:
    """A cycle's command from the controller.

    Attributes:
        names: joint names (job arm, then the other arm).
        position: commanded positions [rad] at the end of the cycle.
        velocity: commanded velocities [rad/s].
        momentum: ``[P; L]`` [N s, N m s] in the controller's momentum frame.
        model_zmp: model ZMP ``[x, y]`` [m] in ``W``, or None (no ground, lift-off).
        guard_scale: the job input's scale by the balance guard (1: free).
        output: the controller's own output of the cycle.
        time_s: the time [s] the command is for (its stamp), on the cycle's clock.
    """

    names: tuple[str, ...]
    position: np.ndarray
    velocity: np.ndarray
    momentum: np.ndarray
    model_zmp: np.ndarray | None
    guard_scale: float
    output: Any
    time_s: float = math.nan


@dataclass(frozen=True)
class Hold:
    """A hold command: decelerating at the acceleration limits, then standing still.

    Attributes:
        names: joint names.
        position: commanded positions [rad].
        velocity: commanded velocities [rad/s] (zero once stopped).
        reason: why the arms hold.
        fresh: the command differs from the previous one (else there is nothing new to send).
        time_s: the time [s] the command is for (its stamp), on the cycle's clock.
    """

    names: tuple[str, ...]
    position: np.ndarray
    velocity: np.ndarray
    reason: str
    fresh: bool
    time_s: float = math.nan

    @property
    def stopped(self) -> bool:
        """Every velocity is zero."""
        return not bool(np.any(self.velocity))
