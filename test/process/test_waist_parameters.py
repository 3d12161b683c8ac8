"""``waist_controller`` as a process: every dynamic parameter set over DDS changes what it does.

The node runs with its simulated drives (the simulation graph's overrides, on the
monotonic clock); the test sets each dynamic parameter through
``/waist_controller/set_parameters`` (what ``ros2 param set`` calls), watches the
waist or ``/diagnostics`` change, and sets it back. Invalid values and read-only
parameters are refused with their reason.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from process_harness import Probe, RunningNode, bring_up, start_node, wait_ready

from humanoid_balance.graph import SIM_WAIST_JOINT_STATES, sim_graph

pytestmark = pytest.mark.ros

NODE = "waist_controller"
#: s to wait for a reaction that comes within a few servo or diagnostics periods
REACTION_S = 5.0


@pytest.fixture(scope="module")
def waist(session_probe: Probe, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningNode]:
    """The simulation graph's waist_controller on its own drives, active, holding."""
    node = next(n for n in sim_graph(rmc=False, sensor_noise=0.0) if n.name == NODE)
    node = node.with_parameters(use_sim_time=False, diagnostics_rate=20.0,
                                **{"can.channel": "waist_parameters"})
    running = start_node(node, tmp_path_factory.mktemp("waist_parameters"))
    try:
        wait_ready(session_probe, running)
        bring_up(session_probe, running)
        yield running
    finally:
        running.stop()


def set_parameter(probe: Probe, name: str, value: Any) -> Any:
    """``ros2 param set /NODE name value``: the SetParametersResult."""
    return probe.set_parameters(NODE, **{name: value})[0]


def set_ok(probe: Probe, name: str, value: Any) -> None:
    """Set a parameter; AssertionError with the node's reason when refused."""
    result = set_parameter(probe, name, value)
    assert result.successful, f"{name}={value!r} refused: {result.reason}"


class Waist:
    """The probe's view of the waist: its joint states, its /diagnostics, a command publisher."""

    def __init__(self, probe: Probe) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        from sensor_msgs.msg import JointState
        from trajectory_msgs.msg import JointTrajectory

        self.probe = probe
        self.joints = probe.record(JointState, SIM_WAIST_JOINT_STATES, keep=2000)
        self.diagnostics = probe.record(DiagnosticArray, "/diagnostics", keep=200)
        self.commands = probe.publisher(JointTrajectory, "/waist/command")
        probe.wait_for_subscribers(self.commands)
        assert probe.spin_until(lambda: self.joints.count > 5, REACTION_S)

    def pitch_deg(self) -> float:
        """The latest encoder pitch, deg."""
        return math.degrees(self.joints.last.position[0])

    def command(self, points: list[tuple[float, float, float]]) -> None:
        """A /waist/command through ``(time s, pitch deg, roll deg)`` points."""
        from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

        msg = JointTrajectory(joint_names=["waist_pitch", "waist_roll"])
        for t, pitch, roll in points:
            point = JointTrajectoryPoint(positions=[math.radians(pitch), math.radians(roll)])
            point.time_from_start.sec = int(t)
            point.time_from_start.nanosec = round((t % 1) * 1e9)
            msg.points.append(point)
        self.commands.publish(msg)

    def status(self) -> Any:
        """The latest waist_controller diagnostic status (None before one)."""
        for array in reversed(self.diagnostics.messages):
            for status in array.status:
                if status.name == NODE:
                    return status
        return None

    def wait_status(self, predicate: Any, timeout: float = REACTION_S) -> bool:
        """Spin until the latest status satisfies ``predicate``."""
        return self.probe.spin_until(lambda: (s := self.status()) is not None and predicate(s),
                                     timeout)

    def peak_speed_deg_s(self, seconds: float) -> float:
        """Largest pitch speed over ``seconds``, deg/s (encoder speeds averaged over 10 samples)."""
        start = self.joints.count
        self.probe.spin(seconds)
        recent = list(self.joints.messages)[-(self.joints.count - start):]
        speed = np.array([m.velocity[0] for m in recent])
        smooth = np.convolve(speed, np.ones(10) / 10.0, mode="valid")
        return float(np.degrees(np.max(np.abs(smooth))))

    def move_to(self, pitch: float, seconds: float = 0.5) -> None:
        """Command a pitch (roll 0) and wait until the waist holds it (0.05 deg)."""
        self.command([(seconds, pitch, 0.0)])
        assert self.probe.spin_until(
            lambda: abs(self.pitch_deg() - pitch) < 0.05
            and abs(math.degrees(self.joints.last.position[1])) < 0.05, 10.0)


def _value(status: Any, key: str) -> str:
    return str(next((kv.value for kv in status.values if kv.key == key), ""))


@pytest.fixture
def view(probe: Probe, waist: RunningNode) -> Iterator[Waist]:
    """The waist, holding at 5 deg pitch."""
    w = Waist(probe)
    w.move_to(5.0)
    yield w


def test_velocity_limit_slows_the_reference(probe: Probe, view: Waist) -> None:
    """velocity_limit 4 deg/s: a 2 deg step in 0.1 s peaks at <= 4.4 deg/s (> 8 deg/s at 60)."""
    set_ok(probe, "acceleration_limit", 1000.0)
    try:
        view.command([(0.1, 7.0, 0.0)])
        fast = view.peak_speed_deg_s(1.0)
        set_ok(probe, "velocity_limit", 4.0)
        view.command([(0.1, 5.0, 0.0)])
        slow = view.peak_speed_deg_s(1.5)
    finally:
        set_ok(probe, "velocity_limit", 60.0)
        set_ok(probe, "acceleration_limit", 30.0)
    assert fast > 8.0 and slow <= 4.4, (fast, slow)


def test_acceleration_limit_shapes_the_reference(probe: Probe, view: Waist) -> None:
    """acceleration_limit 4 deg/s^2: a 1 deg step peaks at most sqrt(4 * 1) = 2 deg/s (<= 2.3).

    At the shipped 30 deg/s^2 the same step peaks at 5.5 deg/s.
    """
    set_ok(probe, "acceleration_limit", 4.0)
    try:
        view.command([(0.1, 6.0, 0.0)])
        peak = view.peak_speed_deg_s(1.6)
    finally:
        set_ok(probe, "acceleration_limit", 30.0)
    assert 1.0 < peak <= 2.3, peak


def test_limit_policy_clamp_takes_a_command_beyond_the_range(probe: Probe, view: Waist) -> None:
    """limit_policy refuse: a 20 deg roll is refused (WARN); clamp: taken to the 15 deg edge."""
    view.command([(0.5, 5.0, 20.0)])
    assert view.wait_status(lambda s: "refused: point 0 roll 20.000 deg" in s.message)
    set_ok(probe, "limit_policy", "clamp")
    try:
        view.command([(0.5, 5.0, 20.0)])
        assert view.wait_status(lambda s: "clamped: point 0 roll 20.000 deg" in s.message)
        assert probe.spin_until(lambda: math.degrees(view.joints.last.position[1]) > 14.95, 10.0)
        assert math.degrees(view.joints.last.position[1]) <= 15.02
    finally:
        set_ok(probe, "limit_policy", "refuse")
        view.move_to(5.0, 1.0)


def test_command_timeout_decides_when_a_hold_begins(probe: Probe, view: Waist) -> None:
    """command_timeout 60 s keeps the controller running after a command; 0.2 s stops it."""
    set_ok(probe, "command_timeout", 60.0)
    try:
        view.command([(0.2, 5.5, 0.0)])
        assert view.wait_status(lambda s: s.message == "running")
        probe.spin(1.5)
        assert view.status().message == "running"
        set_ok(probe, "command_timeout", 0.2)  # the current command's deadline too
        assert view.wait_status(lambda s: s.message == "holding")
    finally:
        set_ok(probe, "command_timeout", 0.5)


def test_inclinometer_timeout_decides_whether_a_sample_is_used(probe: Probe, view: Waist) -> None:
    """A sample 0.5 s old is not used with inclinometer_timeout 0.1 s, and used with 2 s."""
    from sensor_msgs.msg import Imu

    publisher = probe.publisher(Imu, "/waist/inclinometer")
    probe.wait_for_subscribers(publisher)

    def send() -> None:
        msg = Imu()
        half = math.radians(view.pitch_deg()) / 2.0
        msg.orientation.y, msg.orientation.w = math.sin(half), math.cos(half)
        stamp = probe.node.get_clock().now().nanoseconds - 500_000_000
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp, 1_000_000_000)
        publisher.publish(msg)

    # outer_gain 0: a used sample moves nothing. At 2 1/s the outer loop would integrate the
    # error of this one stale sample for as long as it is used (up to 1.5 s on a loaded machine)
    # into an offset the controller keeps, and the next test's waist would hold off its 5 deg
    set_ok(probe, "outer_gain", 0.0)
    try:
        send()
        assert view.wait_status(lambda s: _value(s, "inclinometer_used") == "False")
        set_ok(probe, "inclinometer_timeout", 2.0)
        send()
        assert view.wait_status(lambda s: _value(s, "inclinometer_used") == "True")
    finally:
        set_ok(probe, "inclinometer_timeout", 0.1)
        set_ok(probe, "outer_gain", 2.0)


def test_outer_gain_decides_whether_the_inclinometer_moves_the_waist(probe: Probe,
                                                                     view: Waist) -> None:
    """An inclinometer reading 0.6 deg above: outer_gain 0 leaves the waist; 2 1/s moves it down."""
    from sensor_msgs.msg import Imu

    publisher = probe.publisher(Imu, "/waist/inclinometer")
    probe.wait_for_subscribers(publisher)
    start = view.pitch_deg()

    def feed(seconds: float) -> None:
        end = probe.node.get_clock().now().nanoseconds + int(seconds * 1e9)
        while probe.node.get_clock().now().nanoseconds < end:
            msg = Imu()  # the waist as it is, plus 0.6 deg: a mounting error the loop corrects
            half = math.radians(view.pitch_deg() + 0.6) / 2.0
            msg.orientation.y, msg.orientation.w = math.sin(half), math.cos(half)
            publisher.publish(msg)
            probe.spin(0.02)

    set_ok(probe, "outer_gain", 0.0)
    try:
        feed(1.0)
        assert abs(view.pitch_deg() - start) < 0.05
        set_ok(probe, "outer_gain", 2.0)
        feed(2.0)
        assert view.pitch_deg() < start - 0.3
    finally:
        set_ok(probe, "outer_gain", 2.0)
        probe.spin(0.3)  # the samples go stale: the encoders again (the offset is kept)
        lifecycle = probe.lifecycle(NODE)  # enabling again starts without an offset
        assert lifecycle.change("deactivate") and lifecycle.change("activate")


def test_enable_refused_while_the_inclinometer_disagrees_with_the_encoders(probe: Probe,
                                                                          view: Waist) -> None:
    """The inclinometer 5 deg from the encoders (drives powered on away from (0, 0), or the
    sensor mounted off): ``/waist/enable true`` is refused with both angles and the drives stay
    disabled; 0.3 deg from them it enables, and /diagnostics says the encoders were checked."""
    from sensor_msgs.msg import Imu
    from std_srvs.srv import SetBool

    publisher = probe.publisher(Imu, "/waist/inclinometer")
    probe.wait_for_subscribers(publisher)
    apart = [5.0]

    def send() -> None:  # at 50 Hz (the enable waits up to 0.3 s; samples stay fresh 0.1 s)
        msg = Imu()
        half = math.radians(view.pitch_deg() + apart[0]) / 2.0
        msg.orientation.y, msg.orientation.w = math.sin(half), math.cos(half)
        publisher.publish(msg)

    def enable(on: bool) -> Any:
        return probe.call(SetBool, "/waist/enable", SetBool.Request(data=on))

    set_ok(probe, "outer_gain", 0.0)  # the samples must not move the waist once enabled
    timer = probe.node.create_timer(0.02, send)
    try:
        assert enable(False).success
        # the node takes no sample while it answers a request (the stop): let it take fresh ones,
        # else the enable finds none within inclinometer_timeout and enables unchecked
        probe.spin(0.3)
        answer = enable(True)
        assert not answer.success
        # the angles as the node measured them: the waist holds about 5 deg of pitch (a
        # hundredth either way, as its servo left it), the inclinometer 5 deg further
        found = re.search(r"the encoders put the waist at \(([-\d.]+), ([-\d.]+)\) deg "
                          r"\(pitch, roll\), the inclinometer at \(([-\d.]+), ([-\d.]+)\) deg: "
                          r"([\d.]+) deg apart", answer.message)
        assert found is not None, answer.message
        encoder_pitch, _, inclinometer_pitch, _, distance = (float(v) for v in found.groups())
        assert encoder_pitch == pytest.approx(5.0, abs=0.05), answer.message
        assert inclinometer_pitch - encoder_pitch == pytest.approx(5.0, abs=0.02), answer.message
        assert distance == pytest.approx(5.0, abs=0.02), answer.message
        assert "more than homing_tolerance=2 deg" in answer.message, answer.message
        assert view.wait_status(lambda s: s.message == "idle")
        apart[0] = 0.3
        probe.spin(0.3)  # the node has taken the new samples
        answer = enable(True)
        assert answer.success, answer.message
        assert view.wait_status(lambda s: _value(s, "encoders_checked") == "True"
                                and s.message == "holding")
    finally:
        probe.node.destroy_timer(timer)
        set_ok(probe, "outer_gain", 2.0)
        probe.spin(0.3)  # the samples go stale
        if view.status() is None or view.status().message != "holding":
            assert enable(True).success  # the next test finds the waist held


@pytest.mark.parametrize(("name", "value", "reason"), [
    ("velocity_limit", math.nan, "velocity_limit=nan: must be finite"),
    ("acceleration_limit", -1.0, "acceleration_limit=-1.0: must be > 0"),
    ("limit_policy", "ignore", "limit_policy='ignore': expected one of ['refuse', 'clamp']"),
    ("command_timeout", math.inf, "command_timeout=inf: must be finite"),
])
def test_invalid_values_refused_with_the_reason(probe: Probe, waist: RunningNode, name: str,
                                                value: Any, reason: str) -> None:
    """An invalid run-time value is refused and the refusal says why."""
    result = set_parameter(probe, name, value)
    assert not result.successful and result.reason.startswith(reason), result.reason


def test_read_only_parameter_refused_at_run_time(probe: Probe, waist: RunningNode) -> None:
    """servo_rate is read at configure: a change while configured is refused, saying so."""
    result = set_parameter(probe, "servo_rate", 400.0)
    assert not result.successful and "servo_rate" in result.reason, result.reason
    assert "configure" in result.reason, result.reason
