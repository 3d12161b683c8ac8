"""Joints whose commands stopped hold: their commanded velocity decelerates to rest (no rclpy).

A simulated joint follows its last command. A velocity command is integrated
for as long as no other comes: when the commanding node dies or its messages
stop, the joint would keep moving (the lunar arm went on along its sweep).
:class:`CommandTimeout` is the simulation's watchdog: per joint it remembers
the simulation time of the last command naming it, and every step it brakes
the joints whose last command is older than ``timeout_s``,

.. math::

    |\\dot q_d(t + \\Delta t)| = \\max(0, |\\dot q_d(t)| - a_{hold} \\Delta t),

so a moving joint decelerates at ``deceleration_rad_s2`` to rest and then
holds its position (a position command is held as it is). A new command for
the joint ends its hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from humanoid_balance.exceptions import InvalidInputError
from humanoid_balance.sim.robot import MujocoRobotSim

__all__ = ["CommandTimeout"]


class CommandTimeout:
    """Per-joint command watchdog of a :class:`~humanoid_balance.sim.robot.MujocoRobotSim`.

    Args:
        joint_names: the simulation's joints, in its order.
        timeout_s: a joint whose last command is older than this holds [s of simulation time].
        deceleration_rad_s2: how fast a holding joint's commanded velocity goes to rest [rad/s^2].
    """

    def __init__(self, joint_names: Sequence[str], *, timeout_s: float,
                 deceleration_rad_s2: float) -> None:
        self.joint_names = tuple(joint_names)
        self._index = {n: i for i, n in enumerate(self.joint_names)}
        #: s, each joint's last command; +inf: never commanded (so never stale, and the
        #: minimum is the oldest last command of a commanded joint)
        self._last = np.full(len(self.joint_names), np.inf)
        #: the indices of a command's names, by the names
        self._indices: dict[tuple[str, ...], np.ndarray] = {}
        self.timeout_s = timeout_s
        self.deceleration_rad_s2 = deceleration_rad_s2
        self.configure(timeout_s=timeout_s, deceleration_rad_s2=deceleration_rad_s2)
        #: holds started since the start (a joint going from commanded to holding)
        self.holds = 0
        self._holding = np.zeros(len(self.joint_names), dtype=bool)
        self._any_holding = False
        self._oldest = np.inf  # s: the oldest last command of a commanded joint

    def configure(self, *, timeout_s: float | None = None,
                  deceleration_rad_s2: float | None = None) -> None:
        """Change the timeout [s] and/or the deceleration [rad/s^2] (both finite and > 0)."""
        for label, value in (("timeout_s", timeout_s), ("deceleration_rad_s2", deceleration_rad_s2)):
            if value is not None and (not np.isfinite(value) or value <= 0):
                raise InvalidInputError(f"{label}={value} must be finite and > 0")
        if timeout_s is not None:
            self.timeout_s = float(timeout_s)
        if deceleration_rad_s2 is not None:
            self.deceleration_rad_s2 = float(deceleration_rad_s2)

    def commanded(self, names: Iterable[str], now_s: float) -> None:
        """A command naming ``names`` was applied at simulation time ``now_s`` [s]."""
        key = tuple(names)
        idx = self._indices.get(key)
        if idx is None:
            idx = np.array([self._index[n] for n in key if n in self._index], dtype=np.intp)
            if len(self._indices) < 64:  # a few publishers' name lists
                self._indices[key] = idx
        self._last[idx] = now_s
        self._holding[idx] = False
        self._oldest = float(self._last.min(initial=np.inf))

    def step(self, sim: MujocoRobotSim, now_s: float) -> None:
        """Brake, for one physics step, every joint whose last command is older than the timeout."""
        if now_s - self._oldest <= self.timeout_s and not self._any_holding:
            return  # the common case, per step: nothing is stale
        stale = (now_s - self._last) > self.timeout_s  # never commanded: -inf, not stale
        started = stale & ~self._holding
        if np.any(started):
            self.holds += int(np.count_nonzero(started))
        self._holding = stale
        self._any_holding = bool(np.any(stale))
        if self._any_holding:
            sim.brake_targets(stale, self.deceleration_rad_s2 * sim.timestep)

    @property
    def holding(self) -> tuple[str, ...]:
        """The joints holding because their commands stopped (commanded once, then silent)."""
        return tuple(n for n, h in zip(self.joint_names, self._holding, strict=True) if h)

    def age_s(self, now_s: float) -> float:
        """The age of the newest command of any joint [s] (inf: none yet)."""
        commanded = self._last[np.isfinite(self._last)]
        return now_s - (float(commanded.max()) if commanded.size else -np.inf)
