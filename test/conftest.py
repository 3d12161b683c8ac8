"""Test-wide settings: DDS stays on loopback, each test session on its own domain."""

from __future__ import annotations

import contextlib
import faulthandler
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from humanoid_balance.ros_env import use_loopback_dds  # noqa: E402

# Set before any test imports rclpy: every DDS participant of the suite, and of
# every process a test starts (they inherit os.environ), binds 127.0.0.1 only.
# The domain id is private to this test session (pid based) so that parallel
# sessions on one machine do not see each other.
TEST_DOMAIN_ID = int(os.environ.get("HB_TEST_DOMAIN_ID", 1 + os.getpid() % 100))
use_loopback_dds(TEST_DOMAIN_ID)
os.environ.setdefault("MPLBACKEND", "Agg")


#: s a test may take before the session ends with every thread's stack and exit status 1.
#: pytest-timeout (600 s, pyproject.toml) acts first, from a signal handler; that handler
#: never runs while the main thread is stuck in C holding the GIL (a DDS deadlock in
#: a participant's destruction did that once: the suite hung until the CI limit).
#: faulthandler's watchdog is a C thread that needs no GIL.
HANG_EXIT_S = float(os.environ.get("HB_TEST_HANG_EXIT_S", 660.0))


@contextlib.contextmanager
def hang_watchdog(seconds: float) -> Iterator[None]:
    """Print every thread's stack to stderr and exit the process with status 1 after ``seconds``."""
    faulthandler.dump_traceback_later(seconds, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    with hang_watchdog(HANG_EXIT_S):
        yield


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
