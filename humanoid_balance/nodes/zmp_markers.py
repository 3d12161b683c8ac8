"""``zmp_estimator``'s RViz markers (``/zmp/markers``): the ZMP, the feet's ZMPs, the support
polygon, the CoM's ground projection and the margin, coloured by the margin."""

from __future__ import annotations

from typing import Any

import numpy as np
from geometry_msgs.msg import Point
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

from humanoid_balance.core.zmp_loop import ZmpResult
from humanoid_balance.nodes.common import stamp_msg
from humanoid_balance.params.zmp_estimator import ZmpEstimatorConfig

GREEN = ColorRGBA(r=0.1, g=0.8, b=0.1, a=1.0)
YELLOW = ColorRGBA(r=0.95, g=0.8, b=0.1, a=1.0)
RED = ColorRGBA(r=0.9, g=0.1, b=0.1, a=1.0)
GREY = ColorRGBA(r=0.6, g=0.6, b=0.6, a=1.0)
BLUE = ColorRGBA(r=0.2, g=0.4, b=1.0, a=0.8)


def margin_colour(margin: float, config: ZmpEstimatorConfig) -> ColorRGBA:
    """Green with room, yellow below ``margin_warn``, red below ``margin_error`` [m]."""
    if margin >= config.margin_warn_m:
        return GREEN
    return YELLOW if margin >= config.margin_error_m else RED


def zmp_markers(result: ZmpResult, config: ZmpEstimatorConfig, com: np.ndarray) -> MarkerArray:
    """The markers of one estimate (``com``: the centre of mass in the world [m])."""
    out = result.output
    assert out.zmp_in_world is not None and out.polygon is not None and out.margin is not None
    colour = margin_colour(out.margin, config)

    def marker(ident: int, kind: int, ns: str, colour: ColorRGBA, size: float,
               xy: Any = None, z: float = 0.0) -> Marker:
        m = Marker()
        m.header.stamp = stamp_msg(result.stamp_ns)
        m.header.frame_id = config.world_frame_id
        m.ns, m.id, m.type, m.action = ns, ident, kind, Marker.ADD
        m.pose.orientation.w = 1.0
        m.scale.x = m.scale.y = m.scale.z = size
        m.color = colour
        if xy is not None:
            m.pose.position = Point(x=float(xy[0]), y=float(xy[1]), z=z)
        return m

    markers = [marker(0, Marker.SPHERE, "zmp", colour, 0.03, out.zmp_in_world)]
    for ident, side in enumerate(out.foot_zmps_in_world, start=1):
        point = out.foot_zmps_in_world[side]
        foot = marker(ident, Marker.SPHERE, f"{side}_foot_zmp", GREY, 0.015, point)
        if point is None:
            foot.action = Marker.DELETE
        markers.append(foot)
    line = marker(3, Marker.LINE_STRIP, "support_polygon", colour, 0.005)
    line.points = [Point(x=float(x), y=float(y), z=0.0) for x, y in [*out.polygon, out.polygon[0]]]
    centre = marker(4, Marker.CYLINDER, "com_ground_projection", BLUE, 0.025, com)
    centre.scale.z = 0.002
    text = marker(5, Marker.TEXT_VIEW_FACING, "margin", colour, 0.04, out.zmp_in_world, 0.08)
    text.text = f"margin {1000 * out.margin:.0f} mm"
    return MarkerArray(markers=[*markers, line, centre, text])
