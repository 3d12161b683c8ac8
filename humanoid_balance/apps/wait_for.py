"""``humanoid-balance wait-for TOPIC ... --node NAME``: wait until a node subscribes to topics.

    humanoid-balance wait-for /joint_states /left_foot/ft /right_foot/ft --node /zmp_estimator

Exits 0 as soon as every topic has a subscription (of ``--node`` when given,
of anyone otherwise), 3 after ``--timeout`` seconds without. ``replay.launch.py``
runs it before the bag player, so that the first messages of a bag reach the
estimator. Reads the ROS graph only: it publishes and subscribes nothing.
"""

from __future__ import annotations

import argparse
import sys
import time

from humanoid_balance.processes import WAIT_TIMEOUT_STATUS, missing_subscriptions
from humanoid_balance.ros_env import add_dds_arguments, apply_dds_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of wait-for."""
    parser.add_argument("topics", nargs="+", metavar="TOPIC", help="absolute topic names")
    parser.add_argument("--node", default="",
                        help="fully qualified name of the subscribing node (/ns/name); "
                             "empty: any subscriber")
    parser.add_argument("--timeout", type=float, default=30.0, help="s (default 30)")
    parser.add_argument("--period", type=float, default=0.05, help="s between looks (default 0.05)")
    add_dds_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Wait; 0 when every topic has its subscription, 3 on timeout."""
    apply_dds_arguments(args)
    import rclpy

    rclpy.init()
    node = rclpy.create_node("wait_for_subscribers")
    who = args.node or "a subscriber"
    try:
        deadline = time.monotonic() + args.timeout
        missing = list(args.topics)
        while True:
            missing = missing_subscriptions(node, args.topics, args.node)
            if not missing:
                print(f"wait-for: {who} subscribes to {' '.join(args.topics)}", flush=True)
                return 0
            if time.monotonic() > deadline:
                break
            time.sleep(args.period)
        print(f"wait-for: after {args.timeout:g} s, {who} still does not subscribe to "
              f"{' '.join(missing)}: is it running, on this ROS_DOMAIN_ID, with these topic "
              "names?", file=sys.stderr, flush=True)
        return WAIT_TIMEOUT_STATUS
    except KeyboardInterrupt:
        return 130
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
