"""``zmp_estimator`` as a process: fed the standing humanoid's foot wrenches, its ZMP is where they put it.

The node runs as ``ros2 run humanoid_balance zmp_estimator`` with
``config/zmp.yaml`` and the robot graph's overrides; a feeder process
publishes ``/joint_states`` (the 30 joints at zero: feet flat) and both feet's
F/T wrenches (sensor frame, force.z > 0) for ground forces at known sole points.
At the end, fed at 1 kHz, it runs a few seconds on simulation time (the probe's
``/clock``) while its ``/diagnostics`` rate is measured.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from process_harness import (
    OUTPUT_TIMEOUT_S,
    Feeder,
    FeedSpec,
    Probe,
    RunningNode,
    diagnostics_gaps_on_sim_time,
    sole_point_in_world,
    standing_feed,
    start_node,
    statuses,
    wait_ready,
)

from humanoid_balance.graph import robot_graph

pytestmark = pytest.mark.ros

#: side -> (ZMP in the sole frame [m], ground force [N]): 500 N on the two feet
LOADS = {"left": ((0.03, -0.01), 300.0), "right": ((-0.02, 0.015), 200.0)}
UNLOADED = {"left": ((0.0, 0.0), 0.0), "right": ((0.0, 0.0), 0.0)}
RATE_HZ = 500.0


def expected_zmp() -> np.ndarray:
    """The force-weighted mean of the two feet's points, in the world frame, m."""
    total = sum(fz for _, fz in LOADS.values())
    return sum(fz * sole_point_in_world(side, xy) for side, (xy, fz) in LOADS.items()) / total


@pytest.fixture(scope="module")
def zmp(session_probe: Probe, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningNode]:
    """The robot graph's zmp_estimator, reachable."""
    node = next(n for n in robot_graph() if n.name == "zmp_estimator")
    running = start_node(node, tmp_path_factory.mktemp("zmp"))
    try:
        wait_ready(session_probe, running)
        session_probe.release()
        yield running
    finally:
        running.stop()


def _feed_until(probe: Probe, recorder: Any, count: int) -> None:
    assert probe.spin_until(lambda: recorder.count >= count, OUTPUT_TIMEOUT_S), (
        f"{recorder.count} messages within {OUTPUT_TIMEOUT_S} s, expected {count}")


def test_zmp_is_the_force_weighted_mean_of_the_loaded_points(
        probe: Probe, zmp: RunningNode, feed: Callable[[FeedSpec], Feeder]) -> None:
    """/zmp (world frame) is where the standing wrenches put it: the feet's force-weighted mean."""
    from geometry_msgs.msg import PointStamped

    zmps = probe.record(PointStamped, "/zmp")
    feed(standing_feed(RATE_HZ, LOADS))
    _feed_until(probe, zmps, 50)
    last = zmps.last
    assert last.header.frame_id == "world"
    np.testing.assert_allclose([last.point.x, last.point.y], expected_zmp()[:2], atol=1e-9)


def test_each_foot_zmp_is_its_loaded_point(
        probe: Probe, zmp: RunningNode, feed: Callable[[FeedSpec], Feeder]) -> None:
    """/left_foot/zmp and /right_foot/zmp are the points where each foot's force acts."""
    from geometry_msgs.msg import PointStamped

    feet = {side: probe.record(PointStamped, f"/{side}_foot/zmp") for side in LOADS}
    feed(standing_feed(RATE_HZ, LOADS))
    for recorder in feet.values():
        _feed_until(probe, recorder, 50)
    got = {side: [r.last.point.x, r.last.point.y] for side, r in feet.items()}
    want = {side: sole_point_in_world(side, xy)[:2].tolist() for side, (xy, _) in LOADS.items()}
    np.testing.assert_allclose(np.array([got["left"], got["right"]]),
                               np.array([want["left"], want["right"]]), atol=1e-9)


def test_stability_margin_is_the_zmp_distance_to_the_support_polygon_edge(
        probe: Probe, zmp: RunningNode, feed: Callable[[FeedSpec], Feeder]) -> None:
    """/zmp/stability_margin is the distance from the ZMP to the edge of the hull of both feet's pads."""
    from std_msgs.msg import Float64

    from humanoid_balance.core.support import convex_hull, signed_distance

    margins = probe.record(Float64, "/zmp/stability_margin")
    feed(standing_feed(RATE_HZ, LOADS))
    _feed_until(probe, margins, 50)
    pads = [sole_point_in_world(side, (x, y))[:2] for side in LOADS
            for x, y in ((0.09, 0.05), (-0.09, 0.05), (-0.09, -0.05), (0.09, -0.05))]
    expected = signed_distance(expected_zmp()[:2], convex_hull(np.array(pads)))
    assert margins.last.data == pytest.approx(expected, abs=1e-9)


def test_diagnostics_report_double_support(
        probe: Probe, zmp: RunningNode, feed: Callable[[FeedSpec], Feeder]) -> None:
    """/diagnostics comes and reports OK, double support, while both feet carry the robot.

    A status of a second in which the feeder's samples came too late (a busy machine) says
    so, at WARN, with the ZMPs it still made; the test reads on to the next status then.
    """
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
    from geometry_msgs.msg import PointStamped

    zmps = probe.record(PointStamped, "/zmp")
    feed(standing_feed(RATE_HZ, LOADS))
    _feed_until(probe, zmps, 10)
    diagnostics = probe.record(DiagnosticArray, "/diagnostics")  # from now on: inputs flow

    def seen() -> list[tuple[bytes, str]]:
        return [(s.level, s.message) for s in statuses(diagnostics, "zmp_estimator: ZMP")]

    def first_ok() -> int | None:
        return next((i for i, (level, _) in enumerate(seen()) if level == DiagnosticStatus.OK), None)

    # diagnostics_rate: 1 Hz; at most five statuses until the OK one
    assert probe.spin_until(lambda: first_ok() is not None or len(seen()) >= 5,
                            5 * OUTPUT_TIMEOUT_S), seen()
    got, ok = seen(), first_ok()
    assert ok is not None and got[ok][1].startswith("double support"), got
    assert all(level == DiagnosticStatus.WARN and " samples dropped (" in message
               for level, message in got[:ok]), got


def test_zero_sensors_is_refused_while_the_feet_carry_the_robot(
        probe: Probe, zmp: RunningNode, feed: Callable[[FeedSpec], Feeder]) -> None:
    """~/zero_sensors (as `ros2 service call`) refuses while standing, naming a loaded foot."""
    from geometry_msgs.msg import PointStamped
    from std_srvs.srv import Trigger

    zmps = probe.record(PointStamped, "/zmp")
    feed(standing_feed(RATE_HZ, LOADS))
    _feed_until(probe, zmps, 50)
    response = probe.call(Trigger, "/zmp_estimator/zero_sensors")
    assert (response.success, response.message.split(" N ")[0]) == (
        False, "refused: left foot carries 300.0")


def test_zero_sensors_zeros_unloaded_feet(
        probe: Probe, zmp: RunningNode, feed: Callable[[FeedSpec], Feeder]) -> None:
    """~/zero_sensors succeeds when the feet carry only their own weight (sensors read it exactly)."""
    from diagnostic_msgs.msg import DiagnosticArray
    from std_srvs.srv import Trigger

    diagnostics = probe.record(DiagnosticArray, "/diagnostics")
    feed(standing_feed(RATE_HZ, UNLOADED))
    # the node's own word that it handles the unloaded samples (not only that they were sent)
    assert probe.spin_until(lambda: any(s.message == "no foot in contact: no ZMP" for s in
                                        statuses(diagnostics, "zmp_estimator")), OUTPUT_TIMEOUT_S)
    response = probe.call(Trigger, "/zmp_estimator/zero_sensors")
    assert (response.success, response.message[:len("zeroed left")]) == (True, "zeroed left"), (
        response.message)


def test_diagnostics_keep_their_rate_on_simulation_time(
        probe: Probe, zmp: RunningNode, feed: Callable[[FeedSpec], Feeder]) -> None:
    """Fed both feet and the joint states at 1 kHz, on simulation time (/clock at 100 Hz),
    /diagnostics comes at diagnostics_rate: no gap longer than two periods in 5 s."""
    period_s = 1.0 / float(probe.get_parameter("zmp_estimator", "diagnostics_rate"))
    feed(standing_feed(1000.0, LOADS))
    gaps = diagnostics_gaps_on_sim_time(probe, "zmp_estimator", "zmp_estimator", 5.0)
    assert max(gaps) <= 2 * period_s, f"period {period_s} s, gaps {[round(g, 3) for g in gaps]}"
