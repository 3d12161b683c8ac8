"""DDS stays on loopback: no UDP socket off 127.0.0.0/8 or ::1, and processes still find each other."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from humanoid_balance.ros_env import (
    _decode_address,
    _is_loopback,
    loopback_dds_environment,
    non_loopback_udp_sockets,
)

TALKER = r"""
import sys, time, rclpy
from std_msgs.msg import String
rclpy.init()
node = rclpy.create_node("loopback_talker")
pub = node.create_publisher(String, "/loopback_check", 10)
print("ready", flush=True)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    pub.publish(String(data="hello"))
    rclpy.spin_once(node, timeout_sec=0.05)
"""


def _start_talker(seconds: float) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env.update(loopback_dds_environment(int(os.environ["ROS_DOMAIN_ID"])))
    proc = subprocess.Popen([sys.executable, "-c", TALKER, str(seconds)], env=env,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_environment_names_the_project_profile_and_a_domain() -> None:
    """The environment selects Fast DDS, the project's loopback profile and the given domain."""
    env = loopback_dds_environment(42)
    assert env["RMW_IMPLEMENTATION"] == "rmw_fastrtps_cpp"
    assert env["FASTDDS_DEFAULT_PROFILES_FILE"].endswith("config/fastdds_loopback.xml")
    assert os.path.isfile(env["FASTDDS_DEFAULT_PROFILES_FILE"])
    assert env["ROS_DOMAIN_ID"] == "42"


def test_domain_ids_beyond_101_are_refused() -> None:
    """Domain ids whose ports collide with Linux ephemeral ports are refused."""
    with pytest.raises(ValueError, match="domain_id=150"):
        loopback_dds_environment(150)


def test_domain_id_option_holds_with_the_robots_dds(monkeypatch: pytest.MonkeyPatch) -> None:
    """--robot-dds leaves the DDS settings alone but still takes --domain-id; loopback sets both."""
    import argparse

    from humanoid_balance.ros_env import add_dds_arguments, apply_dds_arguments

    parser = argparse.ArgumentParser()
    add_dds_arguments(parser)
    # both set through monkeypatch first, so that both are restored after the test
    monkeypatch.setenv("FASTDDS_DEFAULT_PROFILES_FILE", "/robot/profile.xml")
    monkeypatch.setenv("ROS_DOMAIN_ID", "0")
    apply_dds_arguments(parser.parse_args(["--robot-dds", "--domain-id", "7"]))
    assert os.environ["ROS_DOMAIN_ID"] == "7"
    assert os.environ["FASTDDS_DEFAULT_PROFILES_FILE"] == "/robot/profile.xml"
    monkeypatch.setenv("ROS_DOMAIN_ID", "3")
    apply_dds_arguments(parser.parse_args(["--robot-dds"]))
    assert os.environ["ROS_DOMAIN_ID"] == "3"


def test_proc_net_addresses_decode() -> None:
    """/proc/net/udp(6) addresses decode to the right IP and port; loopback is told apart."""
    assert _decode_address("0100007F:6824") == ("127.0.0.1", 26660)
    assert _decode_address("020200C0:C000") == ("192.0.2.2", 49152)
    ip6, _ = _decode_address("00000000000000000000000001000000:1B58")
    assert _is_loopback(ip6)
    assert _is_loopback("127.0.0.1") and not _is_loopback("0.0.0.0")
    assert not _is_loopback("192.0.2.2")


@pytest.mark.ros
def test_a_node_binds_udp_only_on_loopback() -> None:
    """A node started with the project's DDS environment holds no UDP socket off loopback."""
    proc = _start_talker(10.0)
    try:
        time.sleep(1.0)  # let discovery open everything it opens
        leaks = non_loopback_udp_sockets(proc.pid)
        assert proc.poll() is None
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert leaks == [], f"UDP sockets bound outside loopback: {leaks}"


@pytest.mark.ros
def test_the_test_process_itself_binds_only_loopback(rclpy_context: object) -> None:
    """This pytest process, with a node of its own, holds no UDP socket off loopback."""
    import rclpy

    node = rclpy.create_node("loopback_self_check", context=rclpy_context)
    time.sleep(0.5)
    leaks = non_loopback_udp_sockets(os.getpid())
    node.destroy_node()
    assert leaks == [], f"UDP sockets bound outside loopback: {leaks}"


@pytest.mark.ros
def test_processes_find_each_other_on_loopback(rclpy_context: object) -> None:
    """A subscriber here receives what a publisher in another process sends."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import String

    proc = _start_talker(30.0)
    node = rclpy.create_node("loopback_listener", context=rclpy_context)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    got: list[str] = []
    node.create_subscription(String, "/loopback_check", lambda m: got.append(m.data), 10)
    deadline = time.monotonic() + 20.0
    try:
        while time.monotonic() < deadline and len(got) < 5:
            executor.spin_once(timeout_sec=0.1)
    finally:
        executor.shutdown()
        node.destroy_node()
        proc.terminate()
        proc.wait(timeout=10)
    assert len(got) >= 5 and got[0] == "hello"
