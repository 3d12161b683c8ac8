"""The balance indicators of seed 000, section 3.2, from the rates of the momentum about ``W``:
ZMP shift, model ZMP, lift-off, sliding and turning margins, the model ZMP's margin."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from humanoid_balance.core.rmc.polygon import ConvexPolygon

__all__ = ["BalanceIndicators", "balance_indicators"]


@dataclass(frozen=True)
class BalanceIndicators:
    """Balance indicators of seed 000, section 3.2, from momentum rates about ``W``.

    Attributes:
        zmp_shift: ``[dZMPx, dZMPy]`` [m]: ``[-dLy/dt, dLx/dt] / (G + dPz/dt)``.
        model_zmp: ZMP from motion [m] in ``W`` (seed 001, eq. 3.73/3.74 with p_z = 0):
            ``(M g c_xy + [-dLy, dLx]) / (M g + dPz)`` with ``L`` about ``W`` (on the ground).
        normal_force: ``G + dPz/dt`` [N], the floor's normal force.
        lift_off_margin: ``G + dPz/dt`` [N]; > 0: the feet stay on the floor.
        slide_margin: ``mu (G + dPz/dt) - |dP_xy/dt|`` [N]; > 0: no sliding.
        turn_margin: ``mu C / 2 (G + dPz/dt) - |dLz/dt|`` [N m]; > 0: no turning.
        turn_torque: ``|dLz/dt|`` [N m].
        zmp_margin: signed distance [m] of ``model_zmp`` to the support polygon's
            edge (positive inside), or NaN without a polygon.
    """

    zmp_shift: np.ndarray
    model_zmp: np.ndarray
    normal_force: float
    lift_off_margin: float
    slide_margin: float
    turn_margin: float
    turn_torque: float
    zmp_margin: float

    @property
    def balanced(self) -> bool:
        """No lift-off, no sliding, no turning, model ZMP inside the polygon (when given)."""
        inside = not np.isfinite(self.zmp_margin) or self.zmp_margin > 0
        return bool(self.lift_off_margin > 0 and self.slide_margin > 0
                    and self.turn_margin > 0 and inside)


def balance_indicators(
    momentum_rate: np.ndarray, *, mass: float, gravity: float, friction_coefficient: float,
    foot_distance: float, com: np.ndarray, support_polygon: ConvexPolygon | np.ndarray | None = None,
) -> BalanceIndicators:
    """Seed-000 balance indicators from ``d[P; L]/dt`` (L about ``W``, the world origin here).

    Args:
        momentum_rate: ``[dPx, dPy, dPz, dLx, dLy, dLz]/dt`` [N, N m].
        mass: total mass ``M`` [kg]; ``G = M g``.
        gravity: ``g`` [m/s^2].
        friction_coefficient: ``mu``.
        foot_distance: ``C``, distance between the foot centres [m].
        com: centre of mass [m] in ``W``.
        support_polygon: the support polygon in ``W`` (or its vertices, N x 2,
            counter-clockwise), or None.
    """
    g_force = mass * gravity
    dpx, dpy, dpz, dlx, dly, dlz = np.asarray(momentum_rate, dtype=float).tolist()
    normal = g_force + dpz
    if normal > 0:
        shift = np.array([-dly / normal, dlx / normal])
        model_zmp = np.array([(g_force * float(com[0]) - dly) / normal,
                              (g_force * float(com[1]) + dlx) / normal])
    else:
        shift = np.full(2, np.nan)
        model_zmp = np.full(2, np.nan)
    slide = friction_coefficient * normal - math.hypot(dpx, dpy)
    turn_torque = abs(dlz)
    turn = friction_coefficient * foot_distance / 2.0 * normal - turn_torque
    if support_polygon is not None and normal > 0:
        polygon = support_polygon if isinstance(support_polygon, ConvexPolygon) else \
            ConvexPolygon(support_polygon)
        margin = polygon.margin(model_zmp)
    else:
        margin = float("nan") if support_polygon is None else -math.inf
    return BalanceIndicators(shift, model_zmp, normal, normal, slide, turn, turn_torque, margin)
