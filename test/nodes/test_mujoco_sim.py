"""The mujoco_sim node across processes on loopback DDS: topics out, commands in, bad input."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest

pytestmark = pytest.mark.ros


@pytest.fixture(scope="module")
def sim_process() -> Iterator[subprocess.Popen[bytes]]:
    """A mujoco_sim node in a process of its own (real time, 1 kHz), ended after the tests."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "humanoid_balance.nodes.mujoco_sim", "--ros-args",
         "-p", "duration:=60.0", "-p", "real_time_factor:=1.0"],
        env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _spin_until(node: object, executor: object, done: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)  # type: ignore[attr-defined]
        if done():
            return True
    return done()


def test_topics_reach_another_process(sim_process: subprocess.Popen[bytes],
                                      rclpy_context: object) -> None:
    """A subscriber in another process receives /joint_states and both foot wrenches."""
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState

    node = rclpy.create_node("probe_topics", context=rclpy_context)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    got: dict[str, list[object]] = {"joints": [], "left": [], "right": []}
    node.create_subscription(JointState, "/joint_states", got["joints"].append, 10)
    node.create_subscription(WrenchStamped, "/left_foot/ft", got["left"].append, 10)
    node.create_subscription(WrenchStamped, "/right_foot/ft", got["right"].append, 10)
    ok = _spin_until(node, executor, lambda: all(len(v) >= 20 for v in got.values()), 30.0)
    executor.shutdown()
    node.destroy_node()
    assert ok, {k: len(v) for k, v in got.items()}
    joints = got["joints"][-1]
    assert len(joints.name) == 30 and len(joints.position) == 30  # type: ignore[attr-defined]
    for side in ("left", "right"):
        wrench = got[side][-1]
        assert wrench.header.frame_id == f"{side}_foot_ft"  # type: ignore[attr-defined]
        assert wrench.wrench.force.z > 200.0  # type: ignore[attr-defined]


def test_bad_commands_are_ignored_and_the_simulation_runs_on(
    sim_process: subprocess.Popen[bytes], rclpy_context: object
) -> None:
    """Unknown joints, NaN and mismatched lengths change nothing; a good command then moves the joint."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState

    node = rclpy.create_node("probe_commands", context=rclpy_context)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    latest: list[JointState] = []
    node.create_subscription(JointState, "/joint_states", lambda m: latest.append(m), 10)
    pub = node.create_publisher(JointState, "/joint_commands", 10)
    assert _spin_until(node, executor, lambda: len(latest) > 10 and pub.get_subscription_count() > 0,
                       30.0)
    bad = [
        JointState(name=["right_elbow", "no_such_joint"], position=[1.0, 1.0]),
        JointState(name=["right_elbow"], position=[float("nan")]),
        JointState(name=["right_elbow"], position=[1.0, 2.0]),
        JointState(name=["right_elbow"]),
    ]
    for msg in bad:
        pub.publish(msg)
    latest.clear()
    _spin_until(node, executor, lambda: False, 1.0)
    assert latest, "the simulation stopped publishing after bad commands"
    elbow = latest[-1].name.index("right_elbow")
    assert abs(latest[-1].position[elbow]) < 1e-3
    pub.publish(JointState(name=["right_elbow"], position=[0.6]))
    moved = _spin_until(node, executor, lambda: abs(latest[-1].position[elbow] - 0.6) < 0.02, 10.0)
    executor.shutdown()
    node.destroy_node()
    assert moved
    assert sim_process.poll() is None, "the simulation process died"


def test_the_simulation_binds_udp_only_on_loopback(sim_process: subprocess.Popen[bytes]) -> None:
    """The mujoco_sim process holds no UDP socket outside 127.0.0.0/8 and ::1."""
    from humanoid_balance.ros_env import non_loopback_udp_sockets

    assert sim_process.poll() is None
    assert non_loopback_udp_sockets(sim_process.pid) == []


def test_stamps_round_to_the_nanosecond_across_a_second() -> None:
    """A time a hair under a whole second is stamped as that second, never a second early."""
    from humanoid_balance.nodes.common import seconds_stamp

    stamp = seconds_stamp(1.9999999999)
    assert (stamp.sec, stamp.nanosec) == (2, 0)
    stamp = seconds_stamp(0.0015)
    assert (stamp.sec, stamp.nanosec) == (0, 1_500_000)


@pytest.mark.parametrize("model", ["lunar_arm", "space_robot"])
def test_the_other_seed_robots_simulate(model: str) -> None:
    """build_simulation makes the lunar arm (efforts as k_e I) and the floating space robot; they step."""
    import numpy as np

    from humanoid_balance.nodes.mujoco_sim import build_simulation

    sim = build_simulation(model, None, timestep=0.001, gravity=None, friction=0.3, joint_friction=0.0,
                           sensor_noise=0.0, seed=0)
    sim.reset()
    sim.step(100)
    state = sim.joint_state()
    assert len(state.names) == 6 and np.all(np.isfinite(state.position))
    assert sim.floating_base == (model == "space_robot")
    if model == "lunar_arm":
        assert type(sim).__name__ == "LunarArmSim"


@pytest.mark.parametrize("model", ["humanoid", "lunar_arm", "space_robot"])
def test_every_model_takes_the_integrator_asked(model: str) -> None:
    """``integrator``: ``rk4`` reaches MuJoCo for each robot (at 0.25 ms, the strike's step)."""
    import mujoco

    from humanoid_balance.nodes.mujoco_sim import build_simulation

    sim = build_simulation(model, None, timestep=0.00025, gravity=None, friction=0.3,
                           joint_friction=0.0, sensor_noise=0.0, seed=0, integrator="rk4")
    assert sim.integrator == "rk4"
    assert sim.model.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4


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
