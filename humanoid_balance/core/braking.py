"""A controlled stop as a reference: every joint brakes to rest within the acceleration limit.

A stop (``/waist/stop``, deactivate, ``/waist/enable false``, a command timeout) ends the
shaped reference wherever it is: at ``q0``, moving at ``v0``. :func:`plan_stop` turns that
into a braking profile, each joint at a constant deceleration ``a_j`` until it rests:

* all joints stop together, ``T = max_j |v0_j| / a``, so the path keeps its direction
  and the fastest joint brakes at the acceleration limit ``a`` (the others at less);
* a joint that would then pass its range edge brakes harder, just enough to rest on
  the edge, ``a_j = v0_j^2 / (2 d_j)`` with ``d_j`` its distance to the edge ahead
  (the range wins over the direction). A reference shaped within ``a`` that stays in
  the range can always stop there at ``a_j <= a``; a larger ``a_j`` only answers a
  reference that was not shaped (it is what stops it before the edge);
* a joint at or past the edge ahead (``d_j <= 0``) stops at once (``a_j`` infinite):
  the controller's range clamp holds it there.

Positions in rad, velocities in rad/s, times from the stop's start in s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from humanoid_balance.exceptions import ConfigurationError, InvalidInputError

__all__ = ["StopPlan", "plan_stop"]


@dataclass(frozen=True)
class StopPlan:
    """Each joint from ``start_position`` at ``start_velocity`` decelerating at ``deceleration``.

    Attributes:
        start_position: q0 per joint [rad].
        start_velocity: v0 per joint [rad/s].
        deceleration: a_j >= 0 per joint [rad/s^2] (0 for a joint at rest, inf: at once).
    """

    start_position: tuple[float, ...]
    start_velocity: tuple[float, ...]
    deceleration: tuple[float, ...]

    def stop_time_s(self, joint: int) -> float:
        """When joint ``joint`` comes to rest [s]."""
        v, a = abs(self.start_velocity[joint]), self.deceleration[joint]
        return 0.0 if v == 0.0 or math.isinf(a) else v / a

    @property
    def duration_s(self) -> float:
        """When the last joint comes to rest [s]."""
        return max((self.stop_time_s(j) for j in range(len(self.start_position))), default=0.0)

    @property
    def end_position(self) -> tuple[float, ...]:
        """Where every joint rests [rad]."""
        return self.sample(math.inf)[0]

    def sample(self, t_s: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """Positions [rad] and velocities [rad/s] at ``t_s`` after the start (held at rest after)."""
        t_s = max(t_s, 0.0)
        q: list[float] = []
        qd: list[float] = []
        for j, (q0, v0) in enumerate(zip(self.start_position, self.start_velocity, strict=True)):
            t = min(t_s, self.stop_time_s(j))
            if t <= 0.0:
                q.append(q0)
                qd.append(0.0 if t_s > 0.0 or math.isinf(self.deceleration[j]) else v0)
                continue
            a = math.copysign(self.deceleration[j], v0)  # against the motion
            q.append(q0 + v0 * t - 0.5 * a * t * t)
            qd.append(v0 - a * t if t_s < self.stop_time_s(j) else 0.0)
        return tuple(q), tuple(qd)


def plan_stop(position: Sequence[float], velocity: Sequence[float], acceleration_limit: float,
              lower: Sequence[float], upper: Sequence[float]) -> StopPlan:
    """The braking profile from ``position`` moving at ``velocity`` (see the module doc).

    Args:
        position: q0 per joint [rad], finite.
        velocity: v0 per joint [rad/s], finite.
        acceleration_limit: ``a`` [rad/s^2], finite and > 0.
        lower, upper: the joint range [rad].

    Raises:
        ConfigurationError: ``acceleration_limit`` not finite and > 0.
        InvalidInputError: non-finite positions or velocities, or lengths that differ.
    """
    if not (math.isfinite(acceleration_limit) and acceleration_limit > 0.0):
        raise ConfigurationError(
            f"acceleration_limit must be finite and > 0, got {acceleration_limit}")
    q0 = tuple(float(v) for v in position)
    v0 = tuple(float(v) for v in velocity)
    if not (len(q0) == len(v0) == len(lower) == len(upper)):
        raise InvalidInputError(
            f"{len(q0)} positions, {len(v0)} velocities and {len(lower)}, {len(upper)} limits")
    if not all(math.isfinite(v) for v in q0 + v0):
        raise InvalidInputError(f"a stop from non-finite values: q {list(q0)}, v {list(v0)}")
    fastest = max((abs(v) for v in v0), default=0.0)
    duration = fastest / acceleration_limit
    deceleration = []
    for q, v, lo, hi in zip(q0, v0, lower, upper, strict=True):
        if v == 0.0:
            deceleration.append(0.0)
            continue
        a = abs(v) / duration  # together with the fastest joint: the direction kept
        ahead = (hi - q) if v > 0.0 else (q - lo)  # distance to the edge ahead
        if ahead <= 0.0:
            a = math.inf
        elif v * v / (2.0 * a) > ahead:  # would pass the edge: rest on it
            a = v * v / (2.0 * ahead)
        deceleration.append(a)
    return StopPlan(q0, v0, tuple(deceleration))
