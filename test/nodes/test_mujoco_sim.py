"""The mujoco_sim node through its ROS interface: bytes in, diagnostics out, refused parameters.

What the simulation does (commands, holds, lock-step, pacing, stopping) is tested on the
runner without DDS (test/sim/test_runner.py); the console script as users run it in
test/process/test_mujoco_sim*.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable

import pytest

pytestmark = pytest.mark.ros

ANSWER = "/probe/answer"


def _value(status: object, key: str) -> str:
    return next(kv.value for kv in status.values if kv.key == key)  # type: ignore[attr-defined]


def test_unreadable_bytes_are_counted_and_named_and_a_good_command_applied(
        rclpy_context: object) -> None:
    """In this process: bytes that are no JointState on /joint_commands and no header on a
    lock-step topic are counted on /diagnostics (WARN naming the first); a JointState then
    answers and is applied; a wall-clock stamp answers no period."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
    from geometry_msgs.msg import PointStamped
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState

    from humanoid_balance.nodes.mujoco_sim import MujocoSimNode

    sim = MujocoSimNode(context=rclpy_context, parameter_overrides=[
        Parameter("model", value="lunar_arm"), Parameter("diagnostics_rate", value=20.0),
        Parameter("lock_step", value=True), Parameter("lock_step_timeout", value=0.05),
        Parameter("lock_step_topics", value=[f"{ANSWER}:geometry_msgs/msg/PointStamped"])])
    probe = rclpy.create_node("mujoco_sim_probe", context=rclpy_context)
    executor = SingleThreadedExecutor(context=rclpy_context)
    for node in (sim, probe):
        executor.add_node(node)
    statuses: list[object] = []
    probe.create_subscription(DiagnosticArray, "/diagnostics", lambda m: statuses.extend(
        s for s in m.status if s.name == "mujoco_sim"), 10)
    commands = probe.create_publisher(JointState, "/joint_commands", 10)
    answers = probe.create_publisher(PointStamped, ANSWER, 10)

    def spin_until(done: Callable[[], bool], timeout_s: float = 30.0) -> bool:
        end = time.monotonic() + timeout_s
        while not done() and time.monotonic() < end:
            executor.spin_once(timeout_sec=0.01)
        return done()

    try:
        assert spin_until(lambda: commands.get_subscription_count() > 0
                          and answers.get_subscription_count() > 0 and bool(statuses))
        commands.publish(b"\x00\x01\x00\x00\x01")  # CDR little-endian, then nothing
        answers.publish(b"\x00\x01\x00\x00")
        assert spin_until(lambda: _value(statuses[-1], "answers_unreadable") == "1"
                          and _value(statuses[-1], "commands_rejected") == "1")
        warned = next(s for s in statuses if s.level == DiagnosticStatus.WARN)  # type: ignore[attr-defined]
        assert "command(s) ignored since the last report, the newest because a command on " \
               "/joint_commands is not a readable JointState" in warned.message  # type: ignore[attr-defined]
        commands.publish(JointState(name=["joint1"], position=[0.1]))
        answers.publish(PointStamped())  # stamp 0: the t = 0 state's answer; time runs
        assert spin_until(lambda: _value(statuses[-1], "commands_applied") == "1"
                          and int(_value(statuses[-1], "lock_step_periods")) > 0)
        stamped = PointStamped()
        stamped.header.stamp.sec = 2_000_000_000  # wall-clock time: ahead of every period
        answers.publish(stamped)
        assert spin_until(lambda: _value(statuses[-1], "lock_step_answers_ahead") == "1")
    finally:
        executor.shutdown()
        for node in (sim, probe):
            node.destroy_node()
    assert sim.finished.is_set()  # destroy_node stopped the physics thread


def test_stamps_round_to_the_nanosecond_across_a_second() -> None:
    """A time a hair under a whole second is stamped as that second, never a second early."""
    from humanoid_balance.nodes.common import seconds_stamp

    stamp = seconds_stamp(1.9999999999)
    assert (stamp.sec, stamp.nanosec) == (2, 0)
    stamp = seconds_stamp(0.0015)
    assert (stamp.sec, stamp.nanosec) == (0, 1_500_000)


@pytest.mark.parametrize(("overrides", "message"), [
    (["integrator:=euler"], "integrator='euler': expected one of ['implicitfast', 'rk4']"),
    (["integrator:=rk4", "timestep:=0.001"], "RK4 integrates stably only with a step up to "
                                             "0.000647 s"),
])
def test_a_refused_parameter_is_one_line_and_exit_code_2(overrides: list[str], message: str) -> None:
    """The console script started with a parameter it refuses: no traceback, one error line
    naming it, exit code 2 (before: two chained tracebacks)."""
    args = [a for o in overrides for a in ("-p", o)]
    proc = subprocess.run([sys.executable, "-m", "humanoid_balance.nodes.mujoco_sim", "--ros-args",
                           *args], env=dict(os.environ), capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    errors = [line for line in proc.stderr.splitlines() if line.startswith("[ERROR]")]
    assert len(errors) == 1 and message in errors[0], proc.stderr
