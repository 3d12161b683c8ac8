"""tools/chaos.py's monitor: the arm commands "flow" by the simulation's clock, not the wall's.

No DDS: the monitor's callbacks get serialized messages as its raw subscriptions would.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

from chaos import Monitor


class _NoDds:
    """A node whose subscriptions are never called (the test calls the callbacks)."""

    def create_subscription(self, *args: Any, **kwargs: Any) -> None:
        return None


def _sec_nanosec(t: float) -> tuple[int, int]:
    return divmod(round(t * 1e9), 1_000_000_000)


def _clock(monitor: Monitor, t: float) -> None:
    from rosgraph_msgs.msg import Clock

    msg = Clock()
    msg.clock.sec, msg.clock.nanosec = _sec_nanosec(t)
    monitor.on_clock(msg)


def _command(monitor: Monitor, t: float) -> None:
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState

    msg = JointState(name=["right_elbow"], position=[0.1])
    msg.header.stamp.sec, msg.header.stamp.nanosec = _sec_nanosec(t)
    monitor.on_command(serialize_message(msg))


def test_commands_flow_while_their_stamps_keep_up_with_the_clock() -> None:
    """Seeded draws of a graph slowed by any factor: commands stamped within 0.2 s of /clock
    flow; commands that stopped while the clock went on, or stamped from before a restarted
    simulation's clock went back, do not."""
    rng = np.random.default_rng(11)
    for _ in range(50):
        monitor = Monitor(_NoDds())
        assert not monitor.flowing()  # nothing yet
        t = float(rng.uniform(1.0, 100.0))
        _clock(monitor, t)
        _command(monitor, t - float(rng.uniform(0.0, 0.19)))
        assert monitor.flowing()
        _clock(monitor, t + float(rng.uniform(0.21, 5.0)))  # the commands stopped
        assert not monitor.flowing()
        _clock(monitor, float(rng.uniform(0.0, t - 0.3)))  # the simulation restarted
        assert not monitor.flowing()
