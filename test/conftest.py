"""Test-wide settings: DDS stays on loopback, each test session on its own domain."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from humanoid_balance.ros_env import use_loopback_dds  # noqa: E402


def _domain_id() -> int:
    """This session's (or xdist worker's) private ROS_DOMAIN_ID, 1-101 (``ros_env``: ports
    above collide on Linux).

    ``HB_TEST_DOMAIN_ID`` (else the pid) picks the session's; xdist worker ``gwN`` takes the
    one 50 N after it (modulo 101), so that a session's two workers never share a domain.
    """
    base = int(os.environ.get("HB_TEST_DOMAIN_ID", 1 + os.getpid() % 100))
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
    return 1 + (base - 1 + 50 * index) % 101


# Set before any test imports rclpy: every DDS participant of the suite, and of
# every process a test starts (they inherit os.environ), binds 127.0.0.1 only.
# The domain id is private to this test session (pid based) and xdist worker so that
# parallel sessions on one machine do not see each other.
TEST_DOMAIN_ID = _domain_id()
use_loopback_dds(TEST_DOMAIN_ID)
os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(scope="session")
def ros_domain_id() -> int:
    """The private ROS_DOMAIN_ID of this test session."""
    return TEST_DOMAIN_ID


@pytest.fixture
def rclpy_context() -> Iterator[object]:
    """An initialised rclpy context of its own, shut down after the test."""
    import rclpy
    from rclpy.context import Context

    context = Context()
    rclpy.init(context=context)
    try:
        yield context
    finally:
        if context.ok():
            rclpy.shutdown(context=context)


@pytest.fixture
def repo_root() -> Path:
    """The repository checkout."""
    return REPO


#: the test files that take longest, longest first (seconds of the file's tests summed, from
#: ``pytest --durations=0`` on the 2-core machine at 464ff3f: 1151 s in 119 files, the 30 here
#: 974 s of it; regenerate with tools/test_durations.py).
#: ``bootstrap.sh test`` hands whole files to its two workers in collection order: run in
#: plain order, a long file drawn last kept one worker busy for a minute after the other had
#: finished. These go first; the rest keep their order.
LONGEST_FIRST: tuple[str, ...] = (
    "test/faults/test_identification_executor.py",
    "test/sim/test_zmp_node_live_replay.py",
    "test/test_lint.py",
    "test/process/test_cycles.py",
    "test/process/test_signals.py",
    "test/sim/test_aux_posture.py",
    "test/test_fuzz_graph.py",
    "test/test_experiment_identification.py",
    "test/sim/test_strike.py",
    "test/faults/test_arm_balance.py",
    "test/faults/test_zmp_estimator.py",
    "test/process/test_diagnostics_gaps.py",
    "test/test_demo.py",
    "test/process/test_identification_parameters.py",
    "test/faults/test_mujoco_sim.py",
    "test/process/test_zmp_estimator.py",
    "test/faults/test_waist_controller.py",
    "test/sim/test_strike_rocking.py",
    "test/can/test_waist_random.py",
    "test/process/test_chaos.py",
    "test/process/test_waist_parameters.py",
    "test/process/test_replay_clock.py",
    "test/sim/test_free_floating_node.py",
    "test/process/test_identification_executor.py",
    "test/process/test_mujoco_sim_soak.py",
    "test/process/test_lock_step.py",
    "test/process/test_identification_run.py",
    "test/process/test_waist_sim_drives.py",
    "test/nodes/test_arm_balance.py",
    "test/process/test_arm_balance.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files of :data:`LONGEST_FIRST` first, longest first; within a file, its own order."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    root = config.rootpath

    def key(item: pytest.Item) -> int:
        try:
            name = item.path.relative_to(root).as_posix()
        except ValueError:
            return len(rank)
        return rank.get(name, len(rank))

    items.sort(key=key)  # stable: a file's tests keep their order
