"""Random feasible waist paths: what users send, drawn from a seed (issue 32).

A path is *feasible* when a waist within the declared limits (``velocity_limit``,
``acceleration_limit``) can follow its points on their times and pass its corners
within :data:`CORNER_ROUNDING_DEG`: its points are samples of a motion whose speed
is at most :data:`LIMIT_SHARE` of the speed limit and whose acceleration is at most
:data:`LIMIT_SHARE` of the acceleration limit and, for coarse spacings ``h``, at most
``sqrt(8 a e) / h``, so that the velocity change at a point, ``dv <= alpha h``, is
rounded by at most ``e = dv^2 / (8 a)`` (a piecewise-linear command stops dead at every
corner; no motion within ``a`` passes a corner closer than that).

Kinds (one per draw, per joint the same kind):

* ``sines``: a sum of one to three sines per joint;
* ``ramps``: constant-speed stretches joined at the acceleration cap;
* ``steps``: rest-to-rest moves between random targets, holds between them.

Each starts at rest or moving: *moving* is the issue's case, a path whose first
segment already moves (at most :data:`MOVING_START_DEG_S` per joint, on a 0.5 s
straight lead-in) while the waist stands still. It ends at rest. Its points are
spaced ``spacing_s`` apart (2 ms to 1 s), starting at a random point of the range.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from humanoid_balance.core.waist_kinematics import PITCH_LIMITS_RAD, ROLL_LIMITS_RAD
from humanoid_balance.experiments.waist import WaistPath
from humanoid_balance.waist.config import WaistServoConfig

FloatArray = NDArray[np.float64]

#: share of the declared speed and acceleration limits a feasible path uses at most
LIMIT_SHARE = 0.8
#: the largest rounding a feasible path's corners may need [deg]
CORNER_ROUNDING_DEG = 0.015
#: a moving start's speed, at most, per joint [deg/s]
MOVING_START_DEG_S = 2.5
#: the waist's declared limits and range, from the controller's defaults (a change there
#: changes what is feasible here) [deg/s, deg/s^2, deg]
#: (rounded to 1e-9 deg: the degrees the limits were set in, not their radians' last bit)
VELOCITY_LIMIT_DEG_S = round(math.degrees(WaistServoConfig.velocity_limit_rad_s), 9)
ACCELERATION_LIMIT_DEG_S2 = round(math.degrees(WaistServoConfig.acceleration_limit_rad_s2), 9)
RANGE_DEG = tuple((round(math.degrees(lo), 9), round(math.degrees(hi), 9))
                  for lo, hi in (PITCH_LIMITS_RAD, ROLL_LIMITS_RAD))
#: margin kept from the range's edges [deg]
_EDGE_MARGIN_DEG = 1.0
#: step of the motion the points are sampled from [s]
_FINE_S = 5e-4
KINDS = ("sines", "ramps", "steps")
#: issue 32: the largest error against a feasible path's command, after the start's
#: catch-up window [deg]
RANDOM_PATH_TARGET_DEG = 0.05


@dataclass(frozen=True)
class DrawnPath:
    """A drawn path and how it was drawn.

    Attributes:
        path: the points (times from 0, pitch and roll in degrees).
        kind: ``sines``, ``ramps`` or ``steps``.
        moving_start: the first segment moves (the waist stands still when it comes).
        spacing_s: the points' spacing [s].
        acceleration_cap_deg_s2: the largest acceleration of the motion sampled [deg/s^2].
        seed: the seed that draws it again (:func:`draw_path`).
    """

    path: WaistPath
    kind: str
    moving_start: bool
    spacing_s: float
    acceleration_cap_deg_s2: float
    seed: int


def acceleration_cap(spacing_s: float) -> float:
    """The largest acceleration of a feasible path with points ``spacing_s`` apart [deg/s^2]."""
    # 1 % below the bound: the motion is sampled from a fine grid, whose velocity steps
    # bunch a little
    corner = 0.99 * math.sqrt(8.0 * ACCELERATION_LIMIT_DEG_S2 * CORNER_ROUNDING_DEG) / spacing_s
    return min(LIMIT_SHARE * ACCELERATION_LIMIT_DEG_S2, corner)


def draw_path(seed: int, spacing_s: float | None = None, duration_s: float = 3.0) -> DrawnPath:
    """The path of ``seed``: kind, start, spacing (log-uniform 2 ms to 1 s unless given).

    Args:
        seed: the draw's seed.
        spacing_s: the points' spacing [s] (None: drawn).
        duration_s: length of the motion before its final stop [s].
    """
    rng = np.random.default_rng(seed)
    if spacing_s is None:
        spacing_s = float(math.exp(rng.uniform(math.log(0.002), math.log(1.0))))
    kind = KINDS[int(rng.integers(len(KINDS)))]
    moving = bool(rng.integers(2))
    cap = acceleration_cap(spacing_s)
    vcap = LIMIT_SHARE * VELOCITY_LIMIT_DEG_S
    t = np.arange(0.0, duration_s, _FINE_S)
    velocity = np.column_stack([_velocity(kind, rng, t, cap, vcap) for _ in range(2)])
    if moving:
        lead_in = rng.uniform(0.3, 1.0, 2) * MOVING_START_DEG_S * rng.choice([-1.0, 1.0], 2)
        velocity = np.vstack([np.tile(lead_in, (round(0.5 / _FINE_S), 1)),
                              _ramp(lead_in, velocity[0], cap), velocity])
    else:
        velocity = np.vstack([_ramp(np.zeros(2), velocity[0], cap), velocity])
    velocity = np.vstack([velocity, _ramp(velocity[-1], np.zeros(2), cap), np.zeros((1, 2))])
    motion = np.vstack([np.zeros((1, 2)), np.cumsum(velocity[:-1], axis=0) * _FINE_S])
    motion = _fit_range(motion, rng)
    fine_t = _FINE_S * np.arange(len(motion))
    # points on the spacing's grid throughout: the motion rests until the next one after it
    times = spacing_s * np.arange(math.ceil(fine_t[-1] / spacing_s - 1e-9) + 1)
    points = np.column_stack([np.interp(times, fine_t, motion[:, k]) for k in range(2)])
    return DrawnPath(WaistPath(times, points), kind, moving, spacing_s, cap, seed)


def _velocity(kind: str, rng: np.random.Generator, t: FloatArray, cap: float,
              vcap: float) -> FloatArray:
    """One joint's velocity over ``t`` [deg/s], within ``vcap`` and ``cap`` [deg/s^2]."""
    if kind == "sines":
        n = int(rng.integers(1, 4))
        omega = rng.uniform(0.3, 6.0, n)
        amplitude = rng.uniform(0.2, 1.0, n)
        phase = rng.uniform(0.0, 2.0 * math.pi, n)
        # |v| <= sum(A w), |a| <= sum(A w^2): scaled to the caps
        scale = min(vcap / float(np.sum(amplitude * omega)),
                    cap / float(np.sum(amplitude * omega ** 2)))
        amplitude *= scale * rng.uniform(0.3, 1.0)
        return np.sum(amplitude * omega * np.cos(np.outer(t, omega) + phase), axis=1)
    levels: list[float] = []
    durations: list[float] = []
    while sum(durations) < t[-1]:
        speed = rng.uniform(-1.0, 1.0) * min(vcap, 15.0)
        if kind == "steps" and len(levels) % 2 == 1:
            speed = 0.0  # a hold between two moves
        levels.append(speed)
        durations.append(float(rng.uniform(0.2, 1.0)))
    out = np.empty(t.size)
    current, k, edges = 0.0, 0, np.cumsum(durations)
    for i, now in enumerate(t):  # toward the stretch's level at the cap
        while now >= edges[k]:
            k += 1
        step = float(np.clip(levels[k] - current, -cap * _FINE_S, cap * _FINE_S))
        current += step
        out[i] = current
    return out


def _ramp(v0: FloatArray, v1: FloatArray, cap: float) -> FloatArray:
    """Velocities from ``v0`` to ``v1`` at ``cap`` (both joints in the same time), (n, 2)."""
    n = max(1, math.ceil(float(np.max(np.abs(v1 - v0))) / (cap * _FINE_S)))
    return v0 + np.outer(np.arange(1, n + 1) / n, v1 - v0)


def _fit_range(motion: FloatArray, rng: np.random.Generator) -> FloatArray:
    """The motion (relative, from 0) placed at a random start inside the range, scaled down
    where its extent is wider than the range (scaling keeps it within the caps)."""
    placed = np.empty_like(motion)
    for k, (lo, hi) in enumerate(RANGE_DEG):
        lo, hi = lo + _EDGE_MARGIN_DEG, hi - _EDGE_MARGIN_DEG
        low, high = float(motion[:, k].min()), float(motion[:, k].max())
        scale = min(1.0, (hi - lo) / max(high - low, 1e-12))
        low, high = low * scale, high * scale
        start = rng.uniform(lo - low, hi - high)
        placed[:, k] = start + scale * motion[:, k]
    return placed
