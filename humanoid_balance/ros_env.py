"""DDS settings for processes that run on this machine only (tests, demo, benchmarks).

On a robot the launch files leave DDS to the user's own settings so that rviz on
an operator's machine can join the graph; everything that starts DDS on a
development machine or in CI calls :func:`use_loopback_dds` *before* rclpy is
imported, so that no socket is ever bound outside 127.0.0.1.

Why ``ROS_AUTOMATIC_DISCOVERY_RANGE=SYSTEM_DEFAULT`` and not ``LOCALHOST``: with
``LOCALHOST``, rmw_fastrtps (Jazzy and later; checked with the Kilted wheel
9.3.3, ``rmw_fastrtps_shared_cpp/src/participant.cpp``) replaces the built-in
transports by its own shared-memory transport *and a UDPv4 transport without an
interface allowlist*, added on top of the profile's transports. Fast DDS then
opens sending sockets on 0.0.0.0 and on every interface address (seen with
strace: ``bind(0.0.0.0:0)`` and ``bind(192.0.2.2:0)``). ``SYSTEM_DEFAULT`` tells
the rmw to leave discovery to the DDS configuration, i.e. to the loopback
profile, which binds 127.0.0.1 only and finds peers through the initial peer
127.0.0.1 with multicast off: the effect LOCALHOST is meant to have, without
the extra transport. ``test/test_dds_loopback.py`` checks both halves: no
socket off loopback, and separate processes still talk.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import MutableMapping
from pathlib import Path

from humanoid_balance.resources import config_path

LOOPBACK_PROFILE = "fastdds_loopback.xml"


def loopback_dds_environment(domain_id: int | None = None) -> dict[str, str]:
    """Environment variables that keep Fast DDS on the loopback interface."""
    env = {
        "RMW_IMPLEMENTATION": "rmw_fastrtps_cpp",
        "FASTDDS_DEFAULT_PROFILES_FILE": str(config_path(LOOPBACK_PROFILE)),
        # not LOCALHOST: see the module docstring
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "SYSTEM_DEFAULT",
    }
    if domain_id is not None:
        if not 0 <= domain_id <= 101:
            raise ValueError(f"{domain_id=} must be in 0..101 (ports above collide on Linux)")
        env["ROS_DOMAIN_ID"] = str(domain_id)
    return env


def use_loopback_dds(
    domain_id: int | None = None, environ: MutableMapping[str, str] | None = None
) -> dict[str, str]:
    """Set the loopback DDS variables in ``environ`` (default ``os.environ``); return them."""
    target = os.environ if environ is None else environ
    env = loopback_dds_environment(domain_id)
    target.update(env)
    return env


def add_dds_arguments(parser: argparse.ArgumentParser) -> None:
    """``--robot-dds`` and ``--domain-id`` for the command-line tools that start DDS."""
    parser.add_argument("--robot-dds", action="store_true",
                        help="use the environment's DDS settings instead of the loopback profile")
    parser.add_argument("--domain-id", type=int, default=None, help="ROS_DOMAIN_ID")


def apply_dds_arguments(args: argparse.Namespace) -> None:
    """Loopback DDS unless ``--robot-dds``; ``--domain-id`` either way (call before importing rclpy)."""
    if not args.robot_dds:
        use_loopback_dds(args.domain_id)
    elif args.domain_id is not None:
        os.environ["ROS_DOMAIN_ID"] = str(args.domain_id)


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    fd_dir = f"/proc/{pid}/fd"
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    return inodes


def _decode_address(hex_address: str) -> tuple[str, int]:
    address, port = hex_address.split(":")
    raw = bytes.fromhex(address)
    if len(raw) == 4:
        ip = ".".join(str(b) for b in raw[::-1])
    else:  # /proc/net/udp6: four little-endian 32-bit words
        words = [raw[i:i + 4][::-1] for i in range(0, 16, 4)]
        ip = ":".join(b"".join(words)[i:i + 2].hex() for i in range(0, 16, 2))
    return ip, int(port, 16)


def _is_loopback(ip: str) -> bool:
    if "." in ip:
        return ip.startswith("127.")
    groups = ip.split(":")
    if groups == ["0000"] * 7 + ["0001"]:
        return True  # ::1
    # IPv4-mapped ::ffff:127.x.y.z
    return groups[:6] == ["0000"] * 5 + ["ffff"] and int(groups[6][:2], 16) == 127


def udp_sockets(pid: int) -> list[tuple[str, int]]:
    """Local (address, port) of every UDP socket (v4 and v6) that process ``pid`` holds."""
    inodes = _socket_inodes(pid)
    found = []
    for table in (f"/proc/{pid}/net/udp", f"/proc/{pid}/net/udp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[9] in inodes:
                found.append(_decode_address(fields[1]))
    return found


def non_loopback_udp_sockets(pid: int) -> list[str]:
    """``address:port`` of each UDP socket of process ``pid`` bound outside 127.0.0.0/8 and ::1."""
    return [f"{ip}:{port}" for ip, port in udp_sockets(pid) if not _is_loopback(ip)]
