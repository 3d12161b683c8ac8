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
