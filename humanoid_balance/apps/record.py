"""``humanoid-balance record OUT``: record topics to a rosbag2 directory, like ``ros2 bag record``.

    humanoid-balance record results/run1 --topics /joint_states /left_foot/ft /right_foot/ft \
        /clock --duration 10

Without ``--topics`` every topic seen is recorded (looking again each second).
Log times come from this node's clock: wall time, or simulation time with
``--use-sim-time``. Stops on Ctrl-C or after ``--duration`` wall seconds.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from humanoid_balance.bag import STORAGES, BagRecorder
from humanoid_balance.exceptions import HumanoidBalanceError
from humanoid_balance.ros_env import add_dds_arguments, apply_dds_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of record."""
    parser.add_argument("out", type=Path, help="bag directory to create")
    parser.add_argument("--topics", nargs="+", default=None,
                        help="topics to record (default: every topic seen)")
    parser.add_argument("--exclude", nargs="+", default=[], help="topics never recorded")
    parser.add_argument("--storage", choices=STORAGES, default="mcap")
    parser.add_argument("--duration", type=float, default=0.0,
                        help="wall seconds to record (0: until Ctrl-C)")
    parser.add_argument("--use-sim-time", action="store_true", help="log times from /clock")
    parser.add_argument("--discovery-wait", type=float, default=2.0,
                        help="s to wait for the named topics' publishers to be seen (default 2)")
    add_dds_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Record until the duration ends or Ctrl-C; 0 on success."""
    apply_dds_arguments(args)
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter

    rclpy.init()
    node = rclpy.create_node("bag_recorder", parameter_overrides=[
        Parameter("use_sim_time", value=bool(args.use_sim_time))])
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    topics = None
    if args.topics:
        deadline = time.monotonic() + args.discovery_wait
        while True:
            seen = dict(node.get_topic_names_and_types())
            if all(t in seen for t in args.topics) or time.monotonic() > deadline:
                break
            executor.spin_once(timeout_sec=0.05)
        missing = [t for t in args.topics if t not in seen]
        if missing:
            print(f"record: no publisher of {missing} seen after {args.discovery_wait} s", file=sys.stderr)
            node.destroy_node()
            rclpy.try_shutdown()
            return 2
        topics = {t: seen[t][0] for t in args.topics}
    try:
        recorder = BagRecorder(node, args.out, topics, storage=args.storage, exclude=args.exclude)
    except HumanoidBalanceError as error:
        print(f"record: {error}", file=sys.stderr)
        node.destroy_node()
        rclpy.try_shutdown()
        return 2
    stop = False

    def interrupt(signum: int, frame: FrameType | None) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    start = time.monotonic()
    report = start + 1.0
    print(f"record: writing {args.out} ({args.storage})", flush=True)
    while not stop and (args.duration <= 0 or time.monotonic() - start < args.duration):
        executor.spin_once(timeout_sec=0.05)
        if time.monotonic() >= report:
            report += 1.0
            print(f"record: {time.monotonic() - start:6.1f} s, {recorder.message_count} messages on "
                  f"{len(recorder.counts)} topics", flush=True)
    recorder.close()
    node.destroy_node()
    rclpy.try_shutdown()
    print(f"record: {recorder.message_count} messages: "
          + ", ".join(f"{t} {n}" for t, n in sorted(recorder.counts.items())), flush=True)
    return 0
