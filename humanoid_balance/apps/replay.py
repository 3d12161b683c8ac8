"""``humanoid-balance replay BAG``: publish a rosbag2 directory with /clock, like ``ros2 bag play --clock``.

    humanoid-balance replay results/demo/bag --rate 0.5 --wait-for /left_foot/ft

Messages go out in log-time order, byte for byte as recorded, paced at
``--rate``. ``/clock``: the bag's own when it has one (a simulation's time),
else one made from the log times before each message. Start the consumers
with ``use_sim_time:=true``. DDS stays on the loopback profile unless
``--robot-dds`` is given (then the environment's DDS settings are used).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from humanoid_balance.bag import CLOCK_MODES, BagError, BagPlayer, bag_topics
from humanoid_balance.exceptions import HumanoidBalanceError
from humanoid_balance.ros_env import add_dds_arguments, apply_dds_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of replay."""
    parser.add_argument("bag", type=Path, help="rosbag2 directory (MCAP or sqlite3)")
    parser.add_argument("--rate", type=float, default=1.0, help="speed factor (default 1)")
    parser.add_argument("--topics", nargs="+", default=None, help="only these topics")
    parser.add_argument("--exclude", nargs="+", default=[], help="never these topics")
    parser.add_argument("--clock", choices=CLOCK_MODES, default="auto",
                        help="auto: the bag's /clock if it has one, else from log times")
    parser.add_argument("--wait-for", nargs="+", default=[], metavar="TOPIC",
                        help="wait until these topics have a subscriber before starting")
    parser.add_argument("--wait-timeout", type=float, default=10.0, help="s (default 10)")
    parser.add_argument("--delay", type=float, default=0.5,
                        help="s to wait before the first message, after --wait-for, for discovery to "
                             "finish (default 0.5)")
    add_dds_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Replay the bag; 0 when every message went out."""
    apply_dds_arguments(args)
    import rclpy

    try:
        topics = bag_topics(args.bag)
    except BagError as error:
        print(f"replay: {error}", file=sys.stderr)
        return 2
    rclpy.init()
    node = rclpy.create_node("bag_player")
    try:
        player = BagPlayer(node, args.bag, rate=args.rate, topics=args.topics, exclude=args.exclude,
                           clock=args.clock)
    except HumanoidBalanceError as error:
        print(f"replay: {error}", file=sys.stderr)
        node.destroy_node()
        rclpy.try_shutdown()
        return 2

    def interrupt(signum: int, frame: FrameType | None) -> None:
        player.stop()

    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    count = sum(topics[t][1] for t in player.topics)
    print(f"replay: {args.bag}: {len(player.topics)} topics, {count} messages, clock from "
          f"{player.clock_mode}, rate {args.rate}", flush=True)
    if args.wait_for and not player.wait_for_subscribers(args.wait_for, args.wait_timeout):
        print(f"replay: no subscriber on {args.wait_for} after {args.wait_timeout} s", file=sys.stderr)
        node.destroy_node()
        rclpy.try_shutdown()
        return 3
    # a writer sees a reader before the reader has matched it back: give discovery time to finish
    time.sleep(max(0.0, args.delay))

    def progress(played: float, total: float, published: int) -> None:
        print(f"replay: {played:7.2f} / {total:.2f} s, {published} messages", flush=True)

    damaged = None
    try:
        published = player.play(progress)
    except BagError as error:  # a damaged chunk: what was before it went out
        damaged, published = error, -1
    # let reliable writers deliver the last samples before the participant goes away
    time.sleep(0.5)
    node.destroy_node()
    rclpy.try_shutdown()
    if damaged is not None:
        print(f"replay: {damaged}", file=sys.stderr)
        return 2
    print(f"replay: published {published} of {count} messages", flush=True)
    return 0 if published == count else 1
