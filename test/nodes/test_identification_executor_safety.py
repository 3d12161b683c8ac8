"""identification_executor in-process on a clock the test sets: clock steps, stops and starts.

The node's timer and joint-state callbacks are called directly (no executor), with the node's
ROS time overridden, so the clock can go back exactly when a case needs it; the commands are
captured as the node hands them to its output.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.ros

STATIC_DEG = [0.0, 30.0, 20.0, 60.0, 40.0, 30.0]
#: the node's defaults: 100 Hz commands, 30 deg/s^2, 3 deg/s sweeps
PERIOD_S = 0.01
ACCELERATION = math.radians(30.0)
SPEED = math.radians(3.0)
#: commands a 3 deg/s stop takes at 30 deg/s^2 and 100 Hz (v / a = 0.1 s), plus one period
STOP_COMMANDS = round(SPEED / ACCELERATION / PERIOD_S) + 1


class ClockRig:
    """The node on a manual ROS-time clock, fed joint states that follow its commands."""

    def __init__(self, context: Any, output: Path) -> None:
        from rclpy.parameter import Parameter

        from humanoid_balance.nodes.identification_executor import IdentificationExecutor

        params = {"sweep_half_range": 2.0, "trim": 0.2, "static_configuration": STATIC_DEG,
                  "output_path": str(output)}
        self.node = IdentificationExecutor(
            context=context, parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
        self.clock = self.node.get_clock()
        self.clock._set_ros_time_is_active(True)
        self.now_ns = 1000 * 10**9
        self.set_time(self.now_ns)
        self.sent: list[tuple[int, np.ndarray, np.ndarray]] = []
        self.q = np.radians(STATIC_DEG)
        self.qd = np.zeros(6)

    def set_time(self, ns: int) -> None:
        from rclpy.time import Time

        self.now_ns = ns
        self.clock.set_ros_time_override(Time(nanoseconds=ns, clock_type=self.clock.clock_type))

    def activate(self) -> None:
        from rclpy.lifecycle import TransitionCallbackReturn

        assert self.node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        publish = self.node.commands.publish

        def capture(stamp_ns: int, names: Any, position: Any, velocity: Any) -> Any:
            self.sent.append((stamp_ns, np.array(position, float), np.array(velocity, float)))
            return publish(stamp_ns, names, position, velocity)

        self.node.commands.publish = capture
        assert self.node.trigger_activate() == TransitionCallbackReturn.SUCCESS

    def joint_state(self, q: Any = None, qd: Any = None) -> None:
        from sensor_msgs.msg import JointState

        q = self.q if q is None else np.asarray(q, float)
        qd = self.qd if qd is None else np.asarray(qd, float)
        msg = JointState()
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(self.now_ns, 10**9)
        msg.name = [f"joint{i}" for i in range(1, 7)]
        msg.position, msg.velocity = q.tolist(), qd.tolist()
        msg.effort = self.node.regressor.gravity_torques(q).tolist()
        self.node._on_joint_states(msg)

    def start(self) -> Any:
        from std_srvs.srv import Trigger

        return self.node._on_start(Trigger.Request(), Trigger.Response())

    def tick(self, dt_ns: int = int(PERIOD_S * 1e9), follow: bool = True) -> None:
        """Advance the clock, feed a joint state at the last command, run the command timer."""
        self.set_time(self.now_ns + dt_ns)
        if follow and self.sent:
            _, self.q, self.qd = self.sent[-1]
        self.joint_state()
        self.node._on_timer()

    def cruise(self) -> None:
        """Start a run and go on until a sweep pass moves at its full speed (3 deg/s)."""
        self.joint_state()
        response = self.start()
        assert response.success, response.message
        for _ in range(3000):
            self.tick()
            point = self.node._point
            if point.phase in ("forward", "backward") and (
                    np.abs(point.velocity).max() > 0.97 * SPEED):
                return
        raise AssertionError("no pass reached the sweep speed")


@pytest.fixture
def rig(rclpy_context: Any, tmp_path: Path) -> Iterator[ClockRig]:
    """The node configured and active on a clock at 1000 s, the arm at rest at STATIC_DEG."""
    made = ClockRig(rclpy_context, tmp_path / "results.yaml")
    try:
        made.activate()
        yield made
    finally:
        made.node.destroy_node()


def assert_braking(commands: list[tuple[int, np.ndarray, np.ndarray]]) -> list[float]:
    """Velocities fall every command, within the limit over the stamps, to 0; the speeds.

    Between commands whose stamps went back (the clock did) one command period counts.
    """
    speeds = [float(np.abs(v).max()) for _, _, v in commands]
    dt = np.diff([s for s, _, _ in commands]) * 1e-9
    dt = np.where(dt > 0.0, dt, PERIOD_S)
    steps = -np.diff(speeds)
    assert np.all(steps >= 0.0) and np.all(steps <= ACCELERATION * dt * (1 + 1e-9)), speeds
    assert speeds[-1] == 0.0, speeds
    return speeds


def test_clock_back_20_s_mid_pass_brakes_to_rest_in_v_over_a(rig: ClockRig) -> None:
    """The clock 20 s back mid-pass: the run fails naming it, the commands brake to 0 in v/a."""
    rig.cruise()
    n = len(rig.sent)
    rig.set_time(rig.now_ns - 20 * 10**9)
    rig.node._on_timer()
    for _ in range(30):
        rig.set_time(rig.now_ns + int(PERIOD_S * 1e9))
        rig.node._on_timer()
    speeds = assert_braking(rig.sent[n - 1:])
    # at rest (to the rounding of 0.1 s / 0.01 s) after v / a, exactly 0 a period later
    assert speeds[STOP_COMMANDS - 1] < 1e-12 and speeds[STOP_COMMANDS:] == [0.0] * (
        len(speeds) - STOP_COMMANDS), [math.degrees(s) for s in speeds]
    assert (rig.node.state, rig.node.message) == (
        "failed", "the node's clock went back 20.000 s during the run (simulation restarted, or "
        "use_sim_time changed?): start again")


def test_cleanup_after_the_clock_went_back_ends_promptly(rig: ClockRig) -> None:
    """Clock 3 s back mid-pass, then deactivate and cleanup: the ramp ends in about v/a."""
    rig.cruise()
    rig.set_time(rig.now_ns - 3 * 10**9)
    rig.node._on_timer()
    n = len(rig.sent)
    began = time.monotonic()
    rig.node.trigger_deactivate()
    rig.node.trigger_cleanup()
    took = time.monotonic() - began
    assert took < 1.0, f"cleanup took {took:.2f} s (v / a = 0.1 s)"
    assert_braking(rig.sent[n - 2:])  # from the run's last command on
    stamps = [s for s, _, _ in rig.sent[n - 1:]]
    assert np.all(np.diff(stamps) > 0), stamps


def test_small_clock_step_back_stops_the_run_without_a_position_jump(rig: ClockRig) -> None:
    """The clock 0.4 s back (less than joint_state_timeout): the run stops; no step back."""
    rig.cruise()
    n = len(rig.sent)
    rig.set_time(rig.now_ns - int(0.4e9))
    rig.joint_state()
    rig.node._on_timer()
    (_, p0, v0), (_, p1, v1) = rig.sent[n - 1], rig.sent[n]
    # the fault checker's bound: the position moves as the velocities say, within the limit
    moved = p1 - p0 - 0.5 * (v0 + v1) * PERIOD_S
    assert np.abs(moved).max() <= ACCELERATION * PERIOD_S**2 / 4, np.degrees(p1 - p0)
    assert rig.node.state == "stopping"
    assert rig.node.message.startswith("the node's clock went back 0.400 s during the run")


def test_clock_jitter_within_a_millisecond_keeps_the_run(rig: ClockRig) -> None:
    """The clock 0.5 ms back: the run goes on, the plan is not sampled earlier."""
    rig.cruise()
    _, p0, _ = rig.sent[-1]
    rig.set_time(rig.now_ns - 500_000)
    rig.node._on_timer()
    _, p1, v1 = rig.sent[-1]
    assert rig.node.state == "running"
    assert np.array_equal(p1, p0) or np.all((p1 - p0) * np.sign(v1) >= 0.0)


def test_use_sim_time_refused_during_a_run(rig: ClockRig) -> None:
    """use_sim_time during a run: refused naming the run; the clock and the run go on."""
    from rclpy.parameter import Parameter

    rig.cruise()
    result = rig.node.set_parameters([Parameter("use_sim_time", value=False)])[0]
    assert (result.successful, result.reason) == (
        False, "use_sim_time cannot change during a run (it moves the node's clock): cancel first")
    assert rig.node._now_ns() == rig.now_ns and rig.node.state == "running"


def test_use_sim_time_allowed_while_idle(rig: ClockRig) -> None:
    """use_sim_time while idle (no run): accepted."""
    from rclpy.parameter import Parameter

    assert rig.node.set_parameters([Parameter("use_sim_time", value=True)])[0].successful


def test_start_refused_from_an_old_joint_state(rig: ClockRig) -> None:
    """A joint state 0.4 s old (timeout 0.5 s): start refused, naming its age; nothing sent."""
    rig.joint_state()
    rig.set_time(rig.now_ns + int(0.4e9))
    response = rig.start()
    assert (response.success, response.message) == (
        False, "refused to start: the newest /joint_states are 0.400 s old: a start needs one "
               "younger than 0.100 s")
    rig.node._on_timer()
    assert rig.sent == []


def test_start_refused_while_the_arm_moves(rig: ClockRig) -> None:
    """joint1 measured at 20 deg/s: start refused naming the joint and its speed."""
    qd = np.zeros(6)
    qd[0] = math.radians(20.0)
    rig.joint_state(qd=qd)
    response = rig.start()
    assert (response.success, response.message) == (
        False, "refused to start: the arm is moving: joint1 at 20.00 deg/s (at rest below "
               "0.30 deg/s): wait until it stops")


def test_start_accepted_at_rest_with_a_fresh_joint_state(rig: ClockRig) -> None:
    """The arm at rest (0.2 deg/s, below a * period), a 20 ms old joint state: start accepted."""
    qd = np.zeros(6)
    qd[2] = math.radians(0.2)
    rig.joint_state(qd=qd)
    rig.set_time(rig.now_ns + 20_000_000)
    response = rig.start()
    assert response.success, response.message


def test_start_refused_a_little_beyond_a_limit(rig: ClockRig) -> None:
    """joint6 measured 0.45 deg past its upper limit (90 deg): start refused naming it."""
    q = np.radians(STATIC_DEG)
    q[5] = math.radians(90.45)
    rig.joint_state(q=q)
    response = rig.start()
    assert (response.success, response.message) == (
        False, "refused to start: joints ['joint6'] left their limits: joint6 at 90.450 deg, "
               "limits [-90.000, 90.000] deg (a start needs every joint within its limits): "
               "move it back inside")


def test_start_within_encoder_noise_of_a_limit_begins_inside(rig: ClockRig) -> None:
    """joint6 0.03 deg past its limit (encoder noise): the first command is at the limit, at rest."""
    q = np.radians(STATIC_DEG)
    q[5] = math.radians(90.03)
    rig.q = q
    rig.joint_state()
    assert rig.start().success
    rig.tick(follow=False)
    _, position, velocity = rig.sent[0]
    # from rest at the limit: one period at 30 deg/s^2 moves it 0.0015 deg, at 0.3 deg/s
    assert 90.0 - 0.002 < math.degrees(position[5]) <= 90.0
    assert abs(velocity[5]) <= ACCELERATION * PERIOD_S * (1 + 1e-9)


def test_a_clipped_command_has_no_velocity_further_out(rig: ClockRig) -> None:
    """A position past a limit is clipped with its outward velocity zeroed (inward kept)."""
    upper, lower = rig.node.upper, rig.node.lower
    position = np.radians(STATIC_DEG)
    position[5], position[0] = upper[5] + 0.01, lower[0] - 0.01
    velocity = np.array([-0.05, 0.0, 0.0, 0.0, 0.0, 0.05])
    rig.node._command(position, velocity, rig.now_ns)
    _, sent_position, sent_velocity = rig.sent[-1]
    assert (sent_position[[0, 5]].tolist(), sent_velocity.tolist()) == (
        [lower[0], upper[5]], [0.0] * 6)
    position[5] = upper[5] + 0.01
    rig.node._command(position, -velocity, rig.now_ns)
    assert rig.sent[-1][2].tolist() == (-velocity).tolist()
