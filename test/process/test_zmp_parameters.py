"""``zmp_estimator`` as a process: every dynamic parameter set over DDS changes what it does.

The node runs with ``config/zmp.yaml`` (the robot graph's overrides); the test
publishes the standing humanoid's sensors itself (``zmp_feet.Feet``), sets
each dynamic parameter through ``/zmp_estimator/set_parameters`` (what
``ros2 param set`` calls), watches the outputs change, and sets it back.
Invalid values and read-only parameters are refused with their reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from process_harness import Probe, RunningNode, sole_point_in_world, start_node, wait_ready
from zmp_feet import LOADS, Feet, stamp_ns, world_zmp

from humanoid_balance.graph import robot_graph

pytestmark = pytest.mark.ros

NODE = "zmp_estimator"
#: s to wait for an output that comes within a few samples
REACTION_S = 5.0


@pytest.fixture(scope="module")
def zmp(session_probe: Probe, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningNode]:
    """The robot graph's zmp_estimator, reachable."""
    node = next(n for n in robot_graph() if n.name == NODE)
    running = start_node(node, tmp_path_factory.mktemp("zmp_parameters"))
    try:
        wait_ready(session_probe, running)
        yield running
    finally:
        running.stop()


@pytest.fixture
def feet(probe: Probe, zmp: RunningNode) -> Iterator[Feet]:
    """The standing humanoid's sensors at 200 Hz, from the probe."""
    made = Feet(probe)
    try:
        yield made
    finally:
        made.close()


def set_parameter(probe: Probe, name: str, value: Any) -> Any:
    """``ros2 param set /NODE name value``: the SetParametersResult."""
    return probe.set_parameters(NODE, **{name: value})[0]


def set_ok(probe: Probe, name: str, value: Any) -> None:
    """Set a parameter; AssertionError with the node's reason when refused."""
    result = set_parameter(probe, name, value)
    assert result.successful, f"{name}={value!r} refused: {result.reason}"


def _xy(msg: Any) -> np.ndarray:
    return np.array([msg.point.x, msg.point.y])


def flowing(feet: Feet, recorder: Any, count: int = 20) -> bool:
    """``count`` more messages come within :data:`REACTION_S`."""
    start = recorder.count
    return feet.pump(REACTION_S, lambda: recorder.count >= start + count)


def stopped(feet: Feet, recorder: Any) -> bool:
    """After 0.3 s to settle, no message comes for 0.3 s."""
    feet.pump(0.3)
    start = recorder.count
    feet.pump(0.3)
    return recorder.count == start


def test_contact_threshold_takes_the_lighter_foot_out_of_contact(probe: Probe, feet: Feet) -> None:
    """contact_threshold 250 N: the 200 N right foot leaves contact and /zmp is the left foot's point."""
    from geometry_msgs.msg import PointStamped

    zmps = probe.record(PointStamped, "/zmp")
    assert flowing(feet, zmps)
    np.testing.assert_allclose(_xy(zmps.last), world_zmp()[:2], atol=1e-9)
    set_ok(probe, "contact_threshold", 250.0)
    try:
        left = sole_point_in_world("left", LOADS["left"][0])[:2]
        assert feet.pump(REACTION_S, lambda: np.allclose(_xy(zmps.last), left, atol=1e-9))
    finally:
        set_ok(probe, "contact_threshold", 20.0)


def test_contact_hysteresis_decides_when_a_loaded_foot_leaves(probe: Probe, feet: Feet) -> None:
    """Threshold raised to 310 N over the 300 N foot: it stays with hysteresis 20 N, leaves with 5 N."""
    from geometry_msgs.msg import PointStamped

    zmps = probe.record(PointStamped, "/zmp")
    set_ok(probe, "contact_threshold", 250.0)  # the left foot alone in contact
    try:
        set_ok(probe, "contact_hysteresis", 20.0)
        set_ok(probe, "contact_threshold", 310.0)
        assert flowing(feet, zmps), "the left foot left contact although 300 N >= 310 - 20 N"
        set_ok(probe, "contact_hysteresis", 5.0)
        assert stopped(feet, zmps), "the left foot stayed in contact although 300 N < 310 - 5 N"
    finally:
        set_ok(probe, "contact_threshold", 20.0)
        set_ok(probe, "contact_hysteresis", 5.0)
    assert flowing(feet, zmps)


def test_publish_rate_spaces_the_zmps_by_stamp(probe: Probe, feet: Feet) -> None:
    """publish_rate 20 Hz: consecutive /zmp stamps at least 50 ms apart (5 ms at 0: every sample)."""
    from geometry_msgs.msg import PointStamped

    set_ok(probe, "publish_rate", 20.0)
    try:
        feet.pump(0.2)
        zmps = probe.record(PointStamped, "/zmp")
        assert flowing(feet, zmps, 10)
        gaps = np.diff([stamp_ns(m) for m in zmps.messages])
    finally:
        set_ok(probe, "publish_rate", 0.0)
    assert gaps.min() >= 50_000_000


def test_marker_rate_spaces_the_markers_and_zero_stops_them(probe: Probe, feet: Feet) -> None:
    """marker_rate 5 Hz: markers at least 0.2 s apart by stamp; marker_rate 0: no markers."""
    from visualization_msgs.msg import MarkerArray

    set_ok(probe, "marker_rate", 5.0)
    try:
        feet.pump(0.3)
        markers = probe.record(MarkerArray, "/zmp/markers")
        assert flowing(feet, markers, 3)
        gaps = np.diff([stamp_ns(m.markers[0]) for m in markers.messages])
        set_ok(probe, "marker_rate", 0.0)
        none = stopped(feet, markers)
    finally:
        set_ok(probe, "marker_rate", 20.0)
    assert (gaps.min() >= 200_000_000, none) == (True, True)


def test_diagnostics_rate_sets_the_diagnostics_period(probe: Probe, feet: Feet) -> None:
    """diagnostics_rate 10 Hz: /diagnostics stamps 0.1 s apart (1 s at the default 1 Hz)."""
    from diagnostic_msgs.msg import DiagnosticArray

    set_ok(probe, "diagnostics_rate", 10.0)
    try:
        feet.pump(0.3)
        diagnostics = probe.record(DiagnosticArray, "/diagnostics")
        assert flowing(feet, diagnostics, 4)
        gaps = np.diff([stamp_ns(m) for m in diagnostics.messages]) * 1e-9
    finally:
        set_ok(probe, "diagnostics_rate", 1.0)
    assert np.median(gaps) == pytest.approx(0.1, abs=0.03)


def test_sync_tolerance_pairs_feet_stamped_apart(probe: Probe, feet: Feet) -> None:
    """Samples at 50 Hz, the right foot stamped 10 ms after the left: no ZMP at sync_tolerance 1 ms,
    ZMPs at 15 ms."""
    from geometry_msgs.msg import PointStamped

    zmps = probe.record(PointStamped, "/zmp")
    feet.rate_hz = 50.0
    feet.foot_shift_ns["right"] = 10_000_000
    try:
        assert stopped(feet, zmps)
        set_ok(probe, "sync_tolerance", 0.015)
        assert flowing(feet, zmps)
    finally:
        set_ok(probe, "sync_tolerance", 0.001)


def test_joint_state_timeout_accepts_older_joint_states(probe: Probe, feet: Feet) -> None:
    """Joint states stamped 0.3 s before the wrenches: no ZMP at 0.1 s timeout, ZMPs at 0.5 s."""
    from geometry_msgs.msg import PointStamped

    zmps = probe.record(PointStamped, "/zmp")
    feet.joint_shift_ns = -300_000_000
    try:
        assert stopped(feet, zmps)
        set_ok(probe, "joint_state_timeout", 0.5)
        assert flowing(feet, zmps)
    finally:
        set_ok(probe, "joint_state_timeout", 0.1)


def test_sensor_timeout_accepts_older_samples(probe: Probe, feet: Feet) -> None:
    """Every stamp 0.3 s behind the node clock: no ZMP at sensor_timeout 0.1 s, ZMPs at 0.5 s."""
    from geometry_msgs.msg import PointStamped

    zmps = probe.record(PointStamped, "/zmp")
    feet.shift_ns = -300_000_000
    try:
        assert stopped(feet, zmps)
        set_ok(probe, "sensor_timeout", 0.5)
        assert flowing(feet, zmps)
    finally:
        set_ok(probe, "sensor_timeout", 0.1)


def test_future_tolerance_accepts_stamps_ahead(probe: Probe, feet: Feet) -> None:
    """Every stamp 0.3 s ahead of the node clock: refused at 0.05 s, ZMPs at future_tolerance 0.5 s."""
    from geometry_msgs.msg import PointStamped

    zmps = probe.record(PointStamped, "/zmp")
    feet.shift_ns = 300_000_000
    try:
        assert stopped(feet, zmps)
        set_ok(probe, "future_tolerance", 0.5)
        assert flowing(feet, zmps)
    finally:
        set_ok(probe, "future_tolerance", 0.05)


def test_margin_thresholds_colour_the_zmp_marker(probe: Probe, feet: Feet) -> None:
    """The ZMP 80 mm inside: green; margin_warn 0.5 m: yellow; margin_error 0.45 m too: red."""
    from visualization_msgs.msg import MarkerArray

    markers = probe.record(MarkerArray, "/zmp/markers")

    def colour() -> tuple[float, float, float]:
        c = markers.last.markers[0].color
        return round(c.r, 2), round(c.g, 2), round(c.b, 2)

    assert flowing(feet, markers, 2)
    seen = [colour()]
    try:
        set_ok(probe, "margin_warn", 0.5)
        feet.pump(0.3)
        assert flowing(feet, markers, 2)
        seen.append(colour())
        set_ok(probe, "margin_error", 0.45)
        feet.pump(0.3)
        assert flowing(feet, markers, 2)
        seen.append(colour())
    finally:
        set_ok(probe, "margin_error", 0.01)
        set_ok(probe, "margin_warn", 0.03)
    assert seen == [(0.1, 0.8, 0.1), (0.95, 0.8, 0.1), (0.9, 0.1, 0.1)]


def test_zero_max_load_lets_a_loaded_foot_be_zeroed(probe: Probe, feet: Feet) -> None:
    """~/zero_sensors refused with the feet loaded; with zero_max_load 1000 N it zeros them (last test)."""
    from geometry_msgs.msg import PointStamped
    from std_srvs.srv import Trigger

    zmps = probe.record(PointStamped, "/zmp")
    assert flowing(feet, zmps)
    refused = probe.call(Trigger, f"/{NODE}/zero_sensors")
    set_ok(probe, "zero_max_load", 1000.0)
    try:
        feet.pump(0.05)
        accepted = probe.call(Trigger, f"/{NODE}/zero_sensors")
    finally:
        set_ok(probe, "zero_max_load", 10.0)
    assert (refused.success, accepted.success) == (False, True), (refused.message, accepted.message)


@pytest.mark.parametrize(("name", "value", "reason"), [
    ("contact_threshold", float("nan"), "contact_threshold=nan: must be finite"),
    ("contact_threshold", 0.0, "contact_threshold=0.0: must be > 0 N"),
    ("contact_threshold", 4.0, "contact_hysteresis 5 N must be below contact_threshold 4 N"),
    ("contact_hysteresis", -1.0, "contact_hysteresis=-1.0: must be >= 0 N"),
    ("contact_hysteresis", float("inf"), "contact_hysteresis=inf: must be finite"),
    ("publish_rate", -5.0, "publish_rate=-5.0: must be >= 0 Hz"),
    ("marker_rate", float("-inf"), "marker_rate=-inf: must be finite"),
    ("diagnostics_rate", 0.0, "diagnostics_rate=0.0: must be > 0 Hz"),
    ("sync_tolerance", 2.0, "sync_tolerance=2.0: must be <= 1 s"),
    ("joint_state_timeout", float("nan"), "joint_state_timeout=nan: must be finite"),
    ("sensor_timeout", 0.0, "sensor_timeout=0.0: must be > 0 s"),
    ("future_tolerance", -0.1, "future_tolerance=-0.1: must be >= 0 s"),
    ("zero_max_load", float("nan"), "zero_max_load=nan: must be finite"),
    ("margin_warn", 0.005, "margin_error 0.01 m must be below margin_warn 0.005 m"),
    ("margin_error", float("inf"), "margin_error=inf: must be finite"),
    ("contact_threshold", "high", "Wrong parameter type"),
    # not a lifecycle node: the remedy is a restart, not "deactivate, clean up and configure"
    ("sensor_type", "fsr",
     "sensor_type is read at start-up: restart the node to change it"),
    ("gravity", 1.635, "gravity is read at start-up: restart the node"),
    ("urdf_path", "/tmp/other.urdf", "urdf_path is read at start-up: restart the node"),
    ("left.contact_frames", ["left_fsr_0"], "left.contact_frames is read at start-up: restart"),
    ("joint_state_wait", 0.01, "joint_state_wait is read at start-up: restart the node"),
])
def test_invalid_value_is_refused_with_its_reason(
        probe: Probe, zmp: RunningNode, name: str, value: Any, reason: str) -> None:
    """An invalid value (or a read-only parameter) is refused, the reason naming the rule."""
    result = set_parameter(probe, name, value)
    assert (result.successful, reason in result.reason) == (False, True), result.reason
