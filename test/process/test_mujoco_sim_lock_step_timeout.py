"""``mujoco_sim``'s ``lock_step_timeout`` set over DDS at run time.

In a module of its own: ``test_mujoco_sim.py``'s module-wide free-running
simulation would publish ``/clock`` beside this one's.
"""

from __future__ import annotations

import pytest
from process_harness import OUTPUT_TIMEOUT_S, Probe, start_node, wait_ready

from humanoid_balance.graph import sim_graph
from humanoid_balance.nodes.common import stamp_ns

pytestmark = pytest.mark.ros



def test_lock_step_timeout_set_at_run_time_paces_a_silent_lock_step(
        probe: Probe, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A lock-step simulation whose arm commands stop after the first period steps one period
    per lock_step_timeout: set over DDS from 1 s to 0.05 s, its clock runs about 20x faster.

    Load only slows a simulation down, so what is checked are the bounds load cannot break:
    at most one period a second before (1 s each), and after the set ten periods in less
    than the 10 s they take at 1 s each (0.5 s at 0.05 s on a quiet machine)."""
    import time

    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState

    node = next(n for n in sim_graph(lock_step=True) if n.name == "mujoco_sim")
    running = start_node(node, tmp_path_factory.mktemp("mujoco_sim_lock_step"))
    try:
        wait_ready(probe, running)
        clock = probe.record(Clock, "/clock", keep=10_000)
        # the t = 0 period is answered (an empty command stamped 0): time starts, and no
        # answer comes after it
        start = probe.publisher(JointState, "/arm_balance/command")
        probe.wait_for_subscribers(start)
        assert probe.spin_until(lambda: clock.count > 0, OUTPUT_TIMEOUT_S)
        start.publish(JointState())
        assert probe.spin_until(lambda: stamp_ns(clock.last.clock) > 0, OUTPUT_TIMEOUT_S)

        def periods_per_s(seconds: float) -> float:
            probe.spin_until(lambda: clock.count > 0, OUTPUT_TIMEOUT_S)
            t0, w0 = stamp_ns(clock.last.clock), time.monotonic()
            probe.spin(seconds)
            return (stamp_ns(clock.last.clock) - t0) / 2e6 / (time.monotonic() - w0)

        slow = periods_per_s(2.0)
        assert slow <= 2.0, slow
        result = probe.set_parameters("mujoco_sim", lock_step_timeout=0.05)[0]
        assert result.successful, result.reason
        probe.spin(0.3)
        t0, w0 = stamp_ns(clock.last.clock), time.monotonic()
        assert probe.spin_until(lambda: stamp_ns(clock.last.clock) - t0 >= 10 * 2_000_000, 60.0)
        ten = time.monotonic() - w0
        assert ten < 10.0, f"10 periods took {ten:.2f} s: lock_step_timeout 0.05 s not in force"
    finally:
        assert running.stop().returncode == 0
