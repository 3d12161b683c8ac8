"""Fault injection: ``waist_controller`` as a process, attacked through its ROS interfaces.

The node runs as the simulation graph runs it (its own simulated drives, lock-step
with its servo thread; diagnostics at 20 Hz to keep waits short). The test sends it
bad commands (hand-picked and Hypothesis-generated: non-finite, extreme, wrong
joints, sizes and times), bad stamps, floods, bad inclinometer samples, every
lifecycle transition from every state, invalid parameters, and, through the
test-only ``/waist/sim/fault`` topic of the simulated drives, silent drives, drive
faults (passing and persistent), bus-off, malformed and error frames, lost frames;
then kill -9 and a restart.

Every case checks the node's shaped joint reference (``/waist/reference``: what the
servo follows) with the fault harness's :class:`CommandChecker`: finite, inside
the joint range, within the speed (60 deg/s) and acceleration (30 deg/s^2) limits,
no step; and that the node keeps running. Each case requires ``/diagnostics`` to
name the cause while it lasts and the waist to recover once it is gone.
"""

from __future__ import annotations

import math
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fault_harness import (
    ERROR,
    OK,
    REACTION_S,
    WARN,
    CommandChecker,
    CommandLimits,
    DiagnosticsWatch,
    Ledger,
    Target,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from process_harness import Probe, RunningNode, bring_up, start_node, wait_ready

from humanoid_balance.graph import GraphNode, sim_graph

pytestmark = pytest.mark.ros

NODE = "waist_controller"
JOINTS = ("waist_pitch", "waist_roll")
GENERATED = settings(max_examples=20, deadline=None, derandomize=True, database=None,
                     suppress_health_check=list(HealthCheck))
#: the node's shaped reference limits (config/waist.yaml): range, 60 deg/s, 30 deg/s^2
LIMITS = CommandLimits(JOINTS, np.radians([-5.0, -15.0]), np.radians([45.0, 15.0]),
                       np.radians([60.0, 60.0]), np.radians([30.0, 30.0]))
#: rad/s^2: the stop ramp's joint deceleration (50 rad/s^2 per motor, gear 100) stays within
STOP_DECELERATION = math.radians(30.0)


def waist_node(**overrides: Any) -> GraphNode:
    """The simulation graph's waist_controller on the monotonic clock, diagnostics at 20 Hz."""
    node = next(n for n in sim_graph(rmc=False, sensor_noise=0.0) if n.name == NODE)
    return node.with_parameters(**{"use_sim_time": False, "diagnostics_rate": 20.0,
                                   "can.channel": "waist_faults", **overrides})


class Rig:
    """The waist process, its reference checked, its diagnostics, and what the test sends."""

    def __init__(self, probe: Probe, logs: Path) -> None:
        from sensor_msgs.msg import Imu, JointState
        from std_msgs.msg import String
        from trajectory_msgs.msg import JointTrajectory

        self.probe, self.logs = probe, logs
        self.checker = CommandChecker(LIMITS)
        self.references = 0
        self.restarts = 0
        node = probe.node
        self._subs = [node.create_subscription(JointState, "/waist/reference", self._reference,
                                               200)]
        self.diag = DiagnosticsWatch(probe, NODE)
        self.commands = node.create_publisher(JointTrajectory, "/waist/command", 100)
        self.inclinometer = node.create_publisher(Imu, "/waist/inclinometer", 100)
        self.faults = node.create_publisher(String, "/waist/sim/fault", 10)
        self.target = Target(NODE, self._launch(), probe, self.checker)

    def _reference(self, msg: Any) -> None:
        self.references += 1
        self.checker(msg)

    def _launch(self) -> RunningNode:
        running = start_node(waist_node(), self.logs, tag=str(self.restarts))
        wait_ready(self.probe, running)
        self.checker.new_segment()  # enabling starts from the measured position
        bring_up(self.probe, running)
        self.probe.wait_for_subscribers(self.commands)
        self.probe.wait_for_subscribers(self.faults)
        return running

    def restart(self) -> None:
        """Start the process again (after it died)."""
        self.target.running.stop()
        self.restarts += 1
        self.diag.clear()
        self.target.running = self._launch()

    # --- what the test sends ---------------------------------------------------------------------

    def command(self, points: list[tuple[float, float, float]], names: tuple[str, ...] = JOINTS,
                stamp_ns: int = 0) -> None:
        """A /waist/command through ``(time s, pitch rad, roll rad)`` points."""
        from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

        msg = JointTrajectory(joint_names=list(names))
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
        for t, pitch, roll in points:
            point = JointTrajectoryPoint(positions=[pitch, roll][:len(names)])
            whole = math.floor(t) if math.isfinite(t) else 0
            point.time_from_start.sec = int(min(max(whole, -2**31), 2**31 - 1))
            point.time_from_start.nanosec = int((t - whole) * 1e9) if math.isfinite(t) else 0
            msg.points.append(point)
        self.commands.publish(msg)

    def raw_command(self, msg: Any) -> None:
        """Publish a JointTrajectory as it is."""
        self.commands.publish(msg)

    def fault(self, text: str) -> None:
        """A fault of the simulated drives (``/waist/sim/fault``)."""
        from std_msgs.msg import String

        self.faults.publish(String(data=text))

    def enable(self) -> Any:
        """``/waist/enable`` true: the response."""
        from std_srvs.srv import SetBool

        self.checker.new_segment()
        return self.probe.call(SetBool, "/waist/enable", SetBool.Request(data=True))

    def set_parameter(self, name: str, value: Any) -> Any:
        """``ros2 param set``: the SetParametersResult."""
        from rcl_interfaces.srv import SetParameters
        from rclpy.parameter import Parameter

        request = SetParameters.Request(parameters=[Parameter(name, value=value).to_parameter_msg()])
        return self.probe.call(SetParameters, f"/{NODE}/set_parameters", request).results[0]

    def lifecycle(self, transition: str) -> bool:
        """A lifecycle transition through the node's services; whether it succeeded."""
        if transition == "activate":
            self.checker.new_segment()
        return self.probe.lifecycle(NODE).change(transition)

    def state(self) -> str:
        """The node's lifecycle state."""
        return self.probe.lifecycle(NODE).state()

    # --- what the test checks --------------------------------------------------------------------

    def seen(self, level: int, text: str, since: float) -> bool:
        """A status at ``level`` naming ``text`` came after ``since``."""
        return self.diag.wait_for(level, text, REACTION_S, since)

    def ok(self, text: str = "") -> bool:
        """/diagnostics says OK (with ``text``) from now on."""
        return self.diag.wait_for(OK, text, REACTION_S)

    def moves_to(self, pitch_deg: float, seconds: float = 0.3) -> bool:
        """A good command to ``pitch_deg``: diagnostics OK again (the refusal cleared) and the
        reference follows."""
        since = self.diag.mark()
        self.command([(seconds, math.radians(pitch_deg), 0.0)])
        return self.seen(OK, "running", since)

    def references_flow(self, count: int = 5) -> bool:
        """``count`` more references come (the drives are enabled)."""
        start = self.references
        return self.probe.spin_until(lambda: self.references >= start + count, REACTION_S)

    def close(self) -> None:
        self.diag.close()
        for sub in self._subs:
            self.probe.node.destroy_subscription(sub)
        self.probe.node.destroy_publisher(self.commands)
        self.probe.node.destroy_publisher(self.inclinometer)
        self.probe.node.destroy_publisher(self.faults)
        self.target.running.stop()


@pytest.fixture(scope="module")
def rig(fault_probe: Probe, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    """The waist process, active and holding."""
    made = Rig(fault_probe, tmp_path_factory.mktemp("waist_faults"))
    try:
        yield made
    finally:
        made.close()


# --- commands ----------------------------------------------------------------------------------------

NAN, INF = math.nan, math.inf
BAD_COMMANDS: dict[str, tuple[list[tuple[float, float, float]], tuple[str, ...], str]] = {
    "NaN pitch": ([(0.5, NAN, 0.0)], JOINTS, "NaN or infinite"),
    "NaN roll": ([(0.5, 0.0, NAN)], JOINTS, "NaN or infinite"),
    "+inf pitch": ([(0.5, INF, 0.0)], JOINTS, "NaN or infinite"),
    "-inf roll": ([(0.5, 0.0, -INF)], JOINTS, "NaN or infinite"),
    "NaN in the second point": ([(0.5, 0.1, 0.0), (1.0, NAN, 0.0)], JOINTS, "NaN or infinite"),
    "pitch 1e308": ([(0.5, 1e308, 0.0)], JOINTS, "refused: point 0 pitch"),
    "pitch -1e308": ([(0.5, -1e308, 0.0)], JOINTS, "refused: point 0 pitch"),
    "roll 20 deg": ([(0.5, 0.0, math.radians(20.0))], JOINTS, "refused: point 0 roll 20.000 deg"),
    "pitch -12 deg (the paper's start)": ([(0.5, math.radians(-12.0), 0.0)], JOINTS,
                                          "refused: point 0 pitch -12.000 deg"),
    "times going back": ([(1.0, 0.1, 0.0), (0.5, 0.1, 0.0)], JOINTS, "strictly increasing"),
    "two points at one time": ([(0.5, 0.1, 0.0), (0.5, 0.2, 0.0)], JOINTS, "strictly increasing"),
    "negative time": ([(-1.0, 0.1, 0.0)], JOINTS, "point times must be >= 0"),
    "no points": ([], JOINTS, "ignored: no points"),
    "wrong joint names": ([(0.5, 0.1, 0.0)], ("pitch", "roll"), "ignored: joints"),
    "one joint only": ([(0.5, 0.1, 0.0)], ("waist_pitch",), "ignored: joints"),
}


@pytest.mark.parametrize("name", list(BAD_COMMANDS))
def test_bad_command_refused_named_and_recovered(rig: Rig, ledger: Ledger, name: str) -> None:
    """A bad /waist/command: refused, /diagnostics WARN names it; a good one clears it."""
    points, names, text = BAD_COMMANDS[name]
    with ledger.case(rig.target, "commands", name) as case:
        since = rig.diag.mark()
        rig.command(points, names)
        case.require(rig.seen(WARN, text, since), lambda: f"no WARN naming {text!r}: "
                     f"{rig.diag.latest()}")
        case.require(rig.moves_to(2.0), lambda: f"no recovery: {rig.diag.latest()}")


def test_positions_missing_in_a_point_refused(rig: Rig, ledger: Ledger) -> None:
    """A point with fewer positions than joints: ignored, named; a good command clears it."""
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    with ledger.case(rig.target, "commands", "a point lacks positions") as case:
        msg = JointTrajectory(joint_names=list(JOINTS))
        msg.points.append(JointTrajectoryPoint(positions=[0.01]))
        since = rig.diag.mark()
        rig.raw_command(msg)
        case.require(rig.seen(WARN, "a point lacks positions", since), "not named")
        case.require(rig.moves_to(1.0), "no recovery")


def test_points_at_the_range_edges_accepted(rig: Rig, ledger: Ledger) -> None:
    """A path through the range's corners (45, 15) and (-5, -15) deg is followed, within limits."""
    with ledger.case(rig.target, "commands", "points on the range edges") as case:
        since = rig.diag.mark()
        rig.command([(1.5, math.radians(45.0), math.radians(15.0)),
                     (3.0, math.radians(-5.0), math.radians(-15.0)),
                     (4.0, math.radians(2.0), 0.0)])
        case.require(rig.seen(OK, "running", since), "not running")
        case.require(rig.references_flow(50), "no reference")
        case.require(rig.moves_to(2.0, 3.0), "no recovery")


@given(pitch=st.floats(allow_nan=True, allow_infinity=True),
       roll=st.floats(allow_nan=True, allow_infinity=True),
       t=st.floats(min_value=-10.0, max_value=1e6, allow_nan=False))
@GENERATED
def test_generated_commands_keep_the_reference_safe(rig: Rig, ledger: Ledger, pitch: float,
                                                    roll: float, t: float) -> None:
    """Any pitch, roll, time (Hypothesis): the reference stays finite, in range, within limits."""
    with ledger.case(rig.target, "commands (generated)", f"t={t:g} pitch={pitch:g} roll={roll:g}",
                     generated=True) as case:
        rig.command([(t, pitch, roll)])
        rig.probe.spin(0.1)
        case.require(rig.references_flow(2), "no reference")


# --- stamps and floods ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "shift_s"), [("stamped 1 s ago: points past dropped", -1.0),
                                               ("stamped 100 s ago", -100.0),
                                               ("stamped 5 s ahead", 5.0),
                                               ("stamped 1e6 s ahead", 1e6)])
def test_command_stamps(rig: Rig, ledger: Ledger, name: str, shift_s: float) -> None:
    """A command whose start stamp is far from now: accepted, the reference within limits."""
    with ledger.case(rig.target, "stamps", name) as case:
        now = rig.probe.node.get_clock().now().nanoseconds
        rig.command([(0.5, math.radians(3.0), 0.0), (1.5, math.radians(1.0), 0.0)],
                    stamp_ns=max(now + int(shift_s * 1e9), 1))
        rig.probe.spin(0.3)
        case.require(rig.references_flow(5), "no reference")
        case.require(rig.moves_to(2.0), "no recovery")


def test_flood_of_good_commands(rig: Rig, ledger: Ledger) -> None:
    """500 commands in 1 s (10 times a 50 Hz planner): the reference stays within limits."""
    with ledger.case(rig.target, "floods", "good commands at 10x") as case:
        for k in range(500):
            rig.command([(0.2, math.radians(2.0 + math.sin(k / 10.0)), 0.0)])
            if k % 25 == 0:
                rig.probe.spin(0.05)
        case.require(rig.moves_to(2.0), "no recovery")


def test_flood_of_nan_commands(rig: Rig, ledger: Ledger) -> None:
    """500 NaN commands in 1 s: refused and named; the node holds, a good command recovers."""
    with ledger.case(rig.target, "floods", "NaN commands at 10x") as case:
        since = rig.diag.mark()
        for k in range(500):
            rig.command([(0.2, NAN, 0.0)])
            if k % 25 == 0:
                rig.probe.spin(0.05)
        case.require(rig.seen(WARN, "NaN or infinite", since), "not named")
        case.require(rig.moves_to(2.0), "no recovery")


# --- inclinometer -----------------------------------------------------------------------------------


def _imu(q: tuple[float, float, float, float], stamp_ns: int = 0) -> Any:
    from sensor_msgs.msg import Imu

    msg = Imu()
    msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w = q
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
    return msg


INCLINOMETER = {
    "NaN quaternion": (NAN, 0.0, 0.0, 1.0),
    "zero quaternion": (0.0, 0.0, 0.0, 0.0),
    "infinite quaternion": (0.0, INF, 0.0, 1.0),
    "huge quaternion": (1e300, 1e300, 0.0, 1e300),
}


@pytest.mark.parametrize("name", list(INCLINOMETER))
def test_bad_inclinometer_samples_ignored(rig: Rig, ledger: Ledger, name: str) -> None:
    """Bad inclinometer samples (20 at 50 Hz): ignored, the waist keeps holding safely."""
    with ledger.case(rig.target, "inclinometer", name) as case:
        for _ in range(20):
            rig.inclinometer.publish(_imu(INCLINOMETER[name]))
            rig.probe.spin(0.02)
        case.require(rig.ok(), lambda: f"not OK: {rig.diag.latest()}")
        case.require(rig.moves_to(2.0), "no recovery")


def test_inclinometer_stamped_in_the_future_is_not_kept_fresh(rig: Rig, ledger: Ledger) -> None:
    """A sample stamped 1000 s ahead is dated now: it goes stale (inclinometer_used false)."""
    with ledger.case(rig.target, "inclinometer", "stamped 1000 s ahead") as case:
        ahead = rig.probe.node.get_clock().now().nanoseconds + 1000 * 1_000_000_000
        rig.inclinometer.publish(_imu((0.0, 0.0, 0.0, 1.0), ahead))
        rig.probe.spin(0.5)
        case.require(rig.diag.wait_for(OK, "", REACTION_S)
                     and rig.diag.values.get("inclinometer_used") == "False",
                     lambda: f"still used: {rig.diag.values}")


# --- parameters -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "value", "reason"), [
    ("velocity_limit", NAN, "must be finite"), ("acceleration_limit", INF, "must be finite"),
    ("outer_gain", -1.0, "must be >= 0"), ("limit_policy", "maybe", "expected one of"),
    ("command_timeout", 0.0, "must be > 0"), ("servo_rate", 1000.0, "servo_rate"),
    ("motor_ids", [1, 1], "motor_ids"),
])
def test_invalid_parameters_refused(rig: Rig, ledger: Ledger, name: str, value: Any,
                                    reason: str) -> None:
    """An invalid (or read-only) parameter at run time: refused with the reason; nothing moves."""
    with ledger.case(rig.target, "parameters at run time", f"{name}={value!r}") as case:
        result = rig.set_parameter(name, value)
        case.require(not result.successful and reason in result.reason, result.reason)
        case.require(rig.ok(), "not OK")


# --- drives and the bus -------------------------------------------------------------------------------


def _fault_and_recover(rig: Rig, case: Any, inject: list[str], cause: str,
                       heal: list[str]) -> None:
    since = rig.diag.mark()
    for text in inject:
        rig.fault(text)
    case.require(rig.seen(ERROR, cause, since), lambda: f"no ERROR naming {cause!r}: "
                 f"{rig.diag.latest()}")
    for text in heal:
        rig.fault(text)
    rig.probe.spin(0.1)
    response = rig.enable()
    case.require(response.success, f"enable refused: {response.message}")
    case.require(rig.ok("holding"), lambda: f"not holding: {rig.diag.latest()}")
    case.require(rig.moves_to(2.0), "no recovery")


@pytest.mark.parametrize(("name", "inject", "cause", "heal"), [
    ("drive 1 silent", ["silent 1"], "drive 1 stopped answering", ["answer 1"]),
    ("drive 2 silent", ["silent 2"], "drive 2 stopped answering", ["answer 2"]),
    ("drive 1 overcurrent", ["fault 1 1"], "drive 1 reported a fault (code 1", []),
    ("drive 2 encoder fault", ["fault 2 3"], "drive 2 reported a fault (code 3", []),
    ("bus-off", ["bus_off"], "CAN bus off", []),
])
def test_drive_faults_named_and_recovered(rig: Rig, ledger: Ledger, name: str, inject: list[str],
                                          cause: str, heal: list[str]) -> None:
    """A drive or bus fault: both drives off, ERROR names it; an enable request recovers."""
    with ledger.case(rig.target, "drives", name) as case:
        _fault_and_recover(rig, case, inject, cause, heal)


def test_persistent_fault_refuses_enable_until_its_cause_is_gone(rig: Rig, ledger: Ledger) -> None:
    """A drive fault whose cause stays: enable refused with it, ERROR stays; then recovers."""
    with ledger.case(rig.target, "drives", "persistent overtemperature") as case:
        since = rig.diag.mark()
        rig.fault("fault 1 5 persist")
        case.require(rig.seen(ERROR, "drive 1 reported a fault (code 5", since), "not named")
        response = rig.enable()
        case.require(not response.success and "still reports a fault (code 5)" in response.message,
                     response.message)
        case.require(not rig.diag.held_for(ERROR, "still reports a fault", 0.3),
                     "the ERROR did not stay")
        rig.fault("remove_cause 1")
        rig.probe.spin(0.1)
        response = rig.enable()
        case.require(response.success, response.message)
        case.require(rig.moves_to(2.0), "no recovery")


@pytest.mark.parametrize(("name", "frames"), [
    ("short feedback frame", ["frame 181 01"]), ("foreign extended id", ["frame 1ABCDEF 00"]),
    ("error frame", ["error_frame"]), ("ten malformed frames", ["frame 181 0102"] * 10),
])
def test_malformed_frames_counted_and_ignored(rig: Rig, ledger: Ledger, name: str,
                                              frames: list[str]) -> None:
    """Malformed and error frames: no fault, the waist keeps following commands."""
    with ledger.case(rig.target, "drives", name) as case:
        for text in frames:
            rig.fault(text)
        rig.probe.spin(0.2)
        case.require(rig.ok(), lambda: f"not OK: {rig.diag.latest()}")
        case.require(rig.moves_to(1.5), "no recovery")


def test_lost_frames_keep_the_waist_safe(rig: Rig, ledger: Ledger) -> None:
    """Drive 1 losing 20 % of its frames during a motion: no fault, reference within limits."""
    with ledger.case(rig.target, "drives", "drive 1 loses 20 % of frames") as case:
        rig.fault("drop 1 0.2")
        try:
            case.require(rig.moves_to(4.0, 0.5), "not running")
            rig.probe.spin(0.8)
            case.require(rig.ok(), lambda: f"not OK: {rig.diag.latest()}")
        finally:
            rig.fault("drop 1 0")


# --- lifecycle ------------------------------------------------------------------------------------------


def test_every_lifecycle_transition_from_every_state(rig: Rig, ledger: Ledger) -> None:
    """active -> inactive -> unconfigured -> inactive -> active, and invalid ones refused."""
    steps = [("deactivate from active", "deactivate", True, "inactive"),
             ("deactivate from inactive (invalid)", "deactivate", False, "inactive"),
             ("parameters while inactive: velocity_limit 30", None, True, "inactive"),
             ("activate from inactive", "activate", True, "active"),
             ("configure from active (invalid)", "configure", False, "active"),
             ("deactivate again", "deactivate", True, "inactive"),
             ("cleanup from inactive", "cleanup", True, "unconfigured"),
             ("activate from unconfigured (invalid)", "activate", False, "unconfigured"),
             ("configure from unconfigured", "configure", True, "inactive"),
             ("activate after a cleanup", "activate", True, "active")]
    for name, transition, succeeds, state in steps:
        with ledger.case(rig.target, "lifecycle", name) as case:
            if transition is None:
                result = rig.set_parameter("velocity_limit", 30.0)
                case.require(result.successful, result.reason)
            else:
                case.require(rig.lifecycle(transition) == succeeds, f"{transition} answered "
                             f"{not succeeds}")
            case.require(rig.state() == state, f"state {rig.state()}, expected {state}")
    with ledger.case(rig.target, "lifecycle", "moves after the transitions") as case:
        case.require(rig.set_parameter("velocity_limit", 60.0).successful, "velocity_limit")
        case.require(rig.moves_to(2.0, 0.5), "no motion")


# --- kill -9 ---------------------------------------------------------------------------------------------


def test_kill_9_and_restart(rig: Rig, ledger: Ledger) -> None:
    """SIGKILL while moving, then a restart: configure, activate, and it moves again."""
    with ledger.case(rig.target, "kill -9", "while moving") as case:
        rig.command([(1.0, math.radians(6.0), 0.0)])
        rig.probe.spin(0.2)
        os.kill(rig.target.running.process.pid, signal.SIGKILL)
        rig.probe.spin_until(lambda: not rig.target.alive(), 5.0)
        case.note(f"exit {rig.target.running.process.popen.returncode}")
        rig.restart()
        case.require(rig.moves_to(2.0, 0.5), "no motion after the restart")
