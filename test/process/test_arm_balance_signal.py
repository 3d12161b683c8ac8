"""``arm_balance`` as a process stopped by SIGINT while it moves an arm: the braking ramp goes out.

``run_node`` destroys the node on SIGINT/SIGTERM without a lifecycle shutdown transition;
the node's ``destroy_node`` must bring the arms to rest within their acceleration limits
before it goes, and the process must still exit cleanly (status 0, no traceback).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from process_harness import (
    JOB_JOINTS,
    OUTPUT_TIMEOUT_S,
    Feeder,
    FeedSpec,
    Probe,
    RunningNode,
    arm_feed,
    bring_up,
    describe,
    exited_cleanly,
)

from humanoid_balance.graph import robot_graph
from humanoid_balance.nodes.common import stamp_ns

pytestmark = pytest.mark.ros

#: the robot graph's arm_balance rate [Hz]
PERIOD_NS = 2_000_000
#: rad/s: float rounding of velocities of a few rad/s (1e4 ulps); the ramp's steps are a dt exactly
ROUNDING = 1e-9


def test_sigint_while_moving_sends_the_braking_ramp(
        probe: Probe, launch: Callable[..., RunningNode],
        feed: Callable[[FeedSpec], Feeder]) -> None:
    """SIGINT while the job arm moves at 0.2 rad/s: the last command received stands still, each
    velocity step between received commands is within a_max times their stamps' periods, and the
    process exits with status 0, without a traceback."""
    from sensor_msgs.msg import JointState

    from humanoid_balance.core.joint_limits import arm_acceleration_limit

    running = launch(next(n for n in robot_graph() if n.name == "arm_balance"), tag="brake")
    bring_up(probe, running)
    commands = probe.record(JointState, "/arm_balance/command", keep=5000, depth=1000)
    feed(arm_feed())

    def moving() -> bool:
        return bool(commands.messages) and abs(dict(zip(
            commands.last.name, commands.last.velocity, strict=True))[JOB_JOINTS[0]] + 0.2) < 1e-6

    assert probe.spin_until(moving, OUTPUT_TIMEOUT_S), "the job arm never moved"
    probe.spin(0.2)
    report = running.stop()
    # what was sent before the exit: until a command at rest is heard (a loaded machine's probe
    # took longer than the 0.5 s this waited before), at most OUTPUT_TIMEOUT_S
    probe.spin_until(lambda: not any(commands.last.velocity), OUTPUT_TIMEOUT_S)
    probe.spin(0.1)  # nothing may follow it
    assert exited_cleanly(report), describe(report)
    tail = list(commands.messages)[-200:]
    names = tuple(tail[-1].name)
    velocities = np.array([[dict(zip(m.name, m.velocity, strict=True))[n] for n in names]
                           for m in tail])
    stamps = np.array([stamp_ns(m.header.stamp) for m in tail])
    periods = np.maximum(np.round(np.diff(stamps) / PERIOD_NS), 1.0)
    accel = np.array([arm_acceleration_limit(n) for n in names])
    steps = np.abs(np.diff(velocities, axis=0))
    bound = np.outer(periods, accel) * PERIOD_NS * 1e-9 + ROUNDING
    assert not np.any(velocities[-1]), f"last command still moving: {velocities[-1].tolist()}"
    assert np.all(steps <= bound), f"largest step over its bound: {float((steps - bound).max())}"
