"""``humanoid-balance wait-for``: what replay.launch.py runs before it starts the bag player."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from humanoid_balance.processes import WAIT_TIMEOUT_STATUS as TIMEOUT_STATUS
from humanoid_balance.processes import missing_subscriptions


def _wait_for(*args: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "humanoid_balance.cli", "wait-for", *args],
                          capture_output=True, text=True, timeout=timeout)


def _subscriber(context: Any, name: str, topics: list[str], namespace: str = "") -> Any:
    from rclpy.node import Node
    from std_msgs.msg import Empty

    node = Node(name, namespace=namespace, context=context)
    for topic in topics:
        node.create_subscription(Empty, topic, lambda msg: None, 10)
    return node


def test_missing_lists_the_topics_the_node_does_not_subscribe(rclpy_context: Any) -> None:
    """Only the topics without a subscription of that very node are missing."""
    subscriber = _subscriber(rclpy_context, "estimator", ["/a"])
    other = _subscriber(rclpy_context, "other", ["/b"])
    try:
        assert missing_subscriptions(subscriber, ["/a", "/b"], "/estimator") == ["/b"]
    finally:
        subscriber.destroy_node()
        other.destroy_node()


def test_a_namespaced_node_is_told_apart(rclpy_context: Any) -> None:
    """``/robot1/estimator`` subscribing does not satisfy a wait for ``/estimator``."""
    subscriber = _subscriber(rclpy_context, "estimator", ["/a"], namespace="robot1")
    try:
        assert missing_subscriptions(subscriber, ["/a"], "/estimator") == ["/a"]
        assert missing_subscriptions(subscriber, ["/a"], "/robot1/estimator") == []
    finally:
        subscriber.destroy_node()


@pytest.mark.slow
def test_wait_for_exits_0_once_the_node_subscribes(rclpy_context: Any) -> None:
    """The command, as a process, finds another process's subscriptions over DDS and exits 0."""
    subscriber = _subscriber(rclpy_context, "estimator", ["/left_foot/ft", "/right_foot/ft"])
    try:
        result = _wait_for("/left_foot/ft", "/right_foot/ft", "--node", "/estimator",
                           "--timeout", "20")
    finally:
        subscriber.destroy_node()
    assert (result.returncode, result.stdout.strip()) == (
        0, "wait-for: /estimator subscribes to /left_foot/ft /right_foot/ft")


@pytest.mark.slow
def test_wait_for_times_out_with_status_3_naming_the_missing_topics() -> None:
    """Without the subscription it exits 3 after the timeout and names what is missing."""
    result = _wait_for("/nobody/listens", "--node", "/estimator", "--timeout", "0.5")
    assert result.returncode == TIMEOUT_STATUS
    assert result.stderr.startswith(
        "wait-for: after 0.5 s, /estimator still does not subscribe to /nobody/listens")
