"""DDS settings for processes that run on this machine only (tests, demo, benchmarks).

On a robot the launch files leave DDS to the user's own settings so that rviz on
an operator's machine can join the graph; everything that starts DDS on a
development machine or in CI calls :func:`use_loopback_dds` *before* rclpy is
imported, so that no socket is ever bound outside 127.0.0.1.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

from humanoid_balance.resources import config_path

LOOPBACK_PROFILE = "fastdds_loopback.xml"


def loopback_dds_environment(domain_id: int | None = None) -> dict[str, str]:
    """Environment variables that keep Fast DDS on the loopback interface."""
    env = {
        "RMW_IMPLEMENTATION": "rmw_fastrtps_cpp",
        "FASTDDS_DEFAULT_PROFILES_FILE": str(config_path(LOOPBACK_PROFILE)),
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
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
