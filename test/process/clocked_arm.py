"""``identification_executor`` as a process on a clock the test drives, with a fake lunar arm.

The executor runs as users run it (its console script, the robot graph's parameter file,
``use_sim_time``); the test publishes ``/clock`` and ``/joint_states`` in lock-step with the
executor's commands (:class:`ClockedArm`), so a loaded machine slows the run down instead of
leaving the arm behind. :class:`Rig` makes the calls a user makes (services, parameters,
lifecycle transitions) while the clock and the arm go on; :func:`executor_rig` starts it all.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from process_harness import (
    Probe,
    RunningNode,
    bring_up,
    spin_executor_until,
    start_node,
    wait_ready,
)

from humanoid_balance.core.identification import LUNAR_JOINTS
from humanoid_balance.graph import robot_graph

NODE = "identification_executor"
#: deg, config/identification.yaml's static_configuration (the arm starts there)
STATIC_DEG = (0.0, 40.0, 20.0, 60.0, 40.0, 30.0)
#: s of the test's clock a run of 0.5-degree sweeps may take (its plan 9.8 s, then the arm settles
#: for up to 2 s and the node estimates, which on a loaded machine takes seconds of wall time)
RUN_S = 30.0


class ClockedArm:
    """The fake arm and the clock: the test drives time (``/clock``, the executor runs on it).

    Each tick advances the clock by 5 ms and publishes a joint state stamped then (unless
    ``paused``): the last command's position and velocity (``pushed_to`` at rest while set),
    effort the gravity torques there plus N(0, 0.005 N m) noise (seeded). While commands
    flow (one came within ``FLOWING_NS`` and the last wait did not time out), each tick waits
    in lock-step until the executor's command for the current time arrived (``LAG_NS``), so a
    loaded machine slows the run down instead of leaving the arm behind; ticks then go at up
    to twice real time, otherwise at real time.
    """

    TICK_NS = 5_000_000
    FLOWING_NS = 60_000_000
    LAG_NS = 25_000_000

    def __init__(self, probe: Probe, position_deg: tuple[float, ...] = STATIC_DEG) -> None:
        import pinocchio as pin
        from rosgraph_msgs.msg import Clock
        from sensor_msgs.msg import JointState

        from humanoid_balance.core.identification.regressor import GravityRegressor
        from humanoid_balance.resources import urdf_path

        self.probe = probe
        self.regressor = GravityRegressor(pin.buildModelFromUrdf(str(urdf_path("lunar_arm"))))
        self.position, self.velocity = np.radians(position_deg), np.zeros(6)
        self.rng = np.random.default_rng(0)
        self.now_ns = 1_000 * 1_000_000_000
        self.last_command_ns = 0
        self.lock_step = False
        self.paused = False
        #: rad: where the arm is pushed (a collision, a slipping joint): published instead of
        #: the commanded position, at rest, while set
        self.pushed_to: np.ndarray | None = None
        self.commands: list[Any] = []
        self.clock_pub = probe.node.create_publisher(Clock, "/clock", 10)
        self.pub = probe.node.create_publisher(JointState, "/joint_states", 100)
        self.sub = probe.node.create_subscription(JointState, "/identification/command",
                                                  self._on_command, 100)

    def _on_command(self, msg: Any) -> None:
        self.commands.append(msg)
        self.last_command_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        self.lock_step = True
        self.position, self.velocity = np.array(msg.position), np.array(msg.velocity)

    def tick(self) -> None:
        """Advance the clock by one tick; publish it and the joint state."""
        from builtin_interfaces.msg import Time
        from rosgraph_msgs.msg import Clock
        from sensor_msgs.msg import JointState

        self.now_ns += self.TICK_NS
        stamp = Time(sec=self.now_ns // 1_000_000_000, nanosec=self.now_ns % 1_000_000_000)
        self.clock_pub.publish(Clock(clock=stamp))
        if self.paused:
            return
        msg = JointState()
        msg.header.stamp = stamp
        msg.name = list(LUNAR_JOINTS)
        position, velocity = (self.position, self.velocity) if self.pushed_to is None else \
            (self.pushed_to, np.zeros(6))
        msg.position, msg.velocity = position.tolist(), velocity.tolist()
        msg.effort = (self.regressor.gravity_torques(position)
                      + self.rng.normal(0.0, 0.005, 6)).tolist()
        self.pub.publish(msg)

    def pump(self, seconds: float, until: Callable[[], bool] | None = None) -> bool:
        """Tick for ``seconds`` of the clock, or until ``until()``; handle what comes."""
        ticks = round(seconds * 1e9 / self.TICK_NS)
        due = time.monotonic()
        for _ in range(ticks):
            if until is not None and until():
                return True
            self.tick()
            self.probe.executor.spin_once(timeout_sec=0.0)
            stepping = self.lock_step and self.now_ns - self.last_command_ns <= self.FLOWING_NS
            if stepping:
                self.lock_step = spin_executor_until(
                    self.probe.executor,
                    lambda: self.now_ns - self.last_command_ns <= self.LAG_NS, 0.3)
            due += self.TICK_NS * 1e-9 / (2.0 if stepping else 1.0)
            ahead = due - time.monotonic()
            if ahead > 0.0:
                self.probe.executor.spin_once(timeout_sec=ahead)
            else:
                due = time.monotonic()
        return until() if until is not None else True

    def close(self) -> None:
        for pub in (self.clock_pub, self.pub):
            self.probe.node.destroy_publisher(pub)
        self.probe.node.destroy_subscription(self.sub)


class Rig:
    """The executor process, the clocked arm and the calls a user makes."""

    def __init__(self, probe: Probe, running: RunningNode, arm: ClockedArm, folder: Path) -> None:
        self.probe, self.running, self.arm, self.folder = probe, running, arm, folder

    def call(self, srv_type: Any, name: str, request: Any = None) -> Any:
        """A service's answer; the clock and the arm go on meanwhile."""
        cli = self.probe.client(srv_type, name)
        assert self.arm.pump(10.0, cli.service_is_ready), f"{name} not available"
        future = cli.call_async(srv_type.Request() if request is None else request)
        assert self.arm.pump(10.0, future.done), f"{name} did not answer"
        return future.result()

    def set(self, **values: Any) -> list[Any]:
        """SetParameters (what ``ros2 param set`` calls): one result per value."""
        from rcl_interfaces.srv import SetParameters
        from rclpy.parameter import Parameter

        request = SetParameters.Request(parameters=[
            Parameter(name, value=value).to_parameter_msg() for name, value in values.items()])
        return list(self.call(SetParameters, f"/{NODE}/set_parameters", request).results)

    def trigger(self, service: str) -> Any:
        """``/identification/<service>``'s answer."""
        from std_srvs.srv import Trigger

        return self.call(Trigger, f"/identification/{service}")

    def transition(self, name: str) -> None:
        """A lifecycle transition through the node's services (it must succeed)."""
        from lifecycle_msgs.msg import Transition
        from lifecycle_msgs.srv import ChangeState

        ids = {"activate": Transition.TRANSITION_ACTIVATE,
               "deactivate": Transition.TRANSITION_DEACTIVATE}
        request = ChangeState.Request(transition=Transition(id=ids[name]))
        assert self.call(ChangeState, f"/{NODE}/change_state", request).success, name

    def run(self, output: Path, seconds: float = RUN_S) -> dict[str, Any]:
        """Start a run, wait (``seconds`` of the clock) for its results file, return it."""
        response = self.trigger("start")
        assert response.success, response.message
        assert self.arm.pump(seconds, output.exists), (
            f"no {output}:\n{self.running.process.output()[-2000:]}")
        return dict(yaml.safe_load(output.read_text()))


@contextmanager
def executor_rig(folder: Path, probe_name: str, **parameters: Any) -> Iterator[Rig]:
    """The robot graph's executor with ``parameters`` on the test's clock, configured and active.

    The process logs to ``folder``; the probe (``probe_name``, an rclpy context of its own)
    carries the clocked arm; everything is stopped and closed after.
    """
    node = next(n for n in robot_graph(identification=True, waist=False) if n.name == NODE)
    node = node.with_parameters(**parameters, use_sim_time=True)
    probe = Probe(probe_name)
    arm = ClockedArm(probe)
    running = start_node(node, folder)
    try:
        wait_ready(probe, running)
        arm.pump(0.2)
        bring_up(probe, running)
        made = Rig(probe, running, arm, folder)
        arm.pump(0.5)
        yield made
    finally:
        running.stop()
        arm.close()
        probe.close()
