#!/usr/bin/env python3
"""Publish mutated serialized messages on a topic, raw, at a rate for a time (issue 35, DDS part).

The publisher half of fuzzing a node's raw subscription through DDS: the
mutants of ``tools/cdr_mutations.py`` (the same generator as the in-process
fuzzing, ``tools/fuzz_cdr.py``) handed to ``Publisher.publish(bytes)``, which
rclpy publishes as they are (``publish_raw``). Nothing here starts or watches the
node: count its refusals on its side (``/diagnostics``).

What DDS (rmw_fastrtps_cpp, Fast DDS 3, rclpy 9.1) does to such bytes, seen on
loopback: a subscriber receives them padded with zeros to a multiple of 4 bytes
(the option bytes unchanged); a type of bounded size (``std_msgs/Float64``: 12
bytes) refuses longer payloads, at ``publish`` ("cannot publish data", counted
in :attr:`PublishReport.refused`) or at the reader (a Fast DDS error log, the
sample lost); and an **empty** payload on a reliable topic stops that writer:
no later sample of it reaches a reliable reader (a best-effort reader drops the
empty one only). Empty mutants are therefore left out unless ``include_empty``.

    python tools/publish_cdr_mutations.py --topic /left_foot/ft \\
        --type geometry_msgs/msg/WrenchStamped --rate 1000 --duration 10 --seed 1
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cdr_mutations import SCHEMAS, Mutator

from humanoid_balance.ros_env import add_dds_arguments, apply_dds_arguments


@dataclass
class PublishReport:
    """What :func:`publish_mutations` did.

    Attributes:
        published: payloads handed to DDS.
        refused: payloads ``publish`` raised on (too long for a bounded type).
        skipped_empty: empty mutants not published (see the module's note).
        duration_s: from the first publish to the last [s].
        subscribers: matched subscriptions when publishing started.
        mutations: how often each mutation is in the published payloads (a payload
            counts once per mutation it went through; an unmutated seed as ``seed``).
        sent: the payloads published, in order, when ``keep`` was asked.
    """

    published: int = 0
    refused: int = 0
    skipped_empty: int = 0
    duration_s: float = 0.0
    subscribers: int = 0
    mutations: Counter[str] = field(default_factory=Counter)
    sent: list[bytes] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The counts as plain JSON values (not the payloads)."""
        return {"published": self.published, "refused": self.refused,
                "skipped_empty": self.skipped_empty, "duration_s": round(self.duration_s, 3),
                "subscribers": self.subscribers, "mutations": dict(self.mutations)}


def message_class(type_name: str) -> Any:
    """The rclpy message class of ``package/msg/Type``."""
    import importlib

    package, _, name = type_name.split("/")
    return getattr(importlib.import_module(f"{package}.msg"), name)


def publish_mutations(node: Any, topic: str, type_name: str, rate_hz: float, duration_s: float,
                      seed: int = 0, *, qos: Any = 10, include_empty: bool = False,
                      keep: bool = False, wait: Callable[[float], None] = time.sleep,
                      wait_subscribers_s: float = 0.0,
                      mutator: Mutator | None = None) -> PublishReport:
    """Publish mutants of ``type_name`` on ``topic`` at ``rate_hz`` [Hz] for ``duration_s`` [s].

    Args:
        node: the rclpy node that owns the publisher (created here, destroyed after).
        topic: where to publish.
        type_name: ``package/msg/Type``, one of ``cdr_mutations.SCHEMAS``.
        rate_hz: payloads per second, paced on the monotonic clock (no catch-up burst
            after a late one).
        duration_s: how long to publish.
        seed: of the mutator (the same seed, the same payloads in the same order).
        qos: the publisher's QoS (a profile or a depth).
        include_empty: publish empty mutants too (they stop a reliable writer).
        keep: keep the payloads in :attr:`PublishReport.sent`.
        wait: how to wait between two payloads, given the seconds left (``time.sleep``;
            an executor's ``spin_once`` to serve subscriptions of the same process).
        wait_subscribers_s: how long to wait for a first matched subscription before
            publishing [s] (what is published before it matches is lost).
        mutator: mutants from this one instead of one over rclpy-made seeds.

    Raises:
        ValueError: a type without a schema, or a rate or duration not > 0.
    """
    if type_name not in SCHEMAS:
        raise ValueError(f"type {type_name}: expected one of {sorted(SCHEMAS)}")
    if not rate_hz > 0 or not duration_s > 0:
        raise ValueError(f"rate {rate_hz} Hz, duration {duration_s} s: both must be > 0")
    if mutator is None:
        mutator = Mutator.from_rclpy(list(SCHEMAS), seed)
    publisher = node.create_publisher(message_class(type_name), topic, qos)
    deadline = time.monotonic() + wait_subscribers_s
    while publisher.get_subscription_count() == 0 and time.monotonic() < deadline:
        wait(0.05)
    report = PublishReport(subscribers=publisher.get_subscription_count())
    period = 1.0 / rate_hz
    start = time.monotonic()
    due = start
    try:
        while due - start < duration_s:
            mutant = mutator.mutate(type_name)
            if not mutant.data and not include_empty:
                report.skipped_empty += 1
            else:
                try:
                    publisher.publish(mutant.data)
                except Exception:  # rclpy's RCLError: "cannot publish data" (too long)
                    report.refused += 1
                else:
                    report.published += 1
                    report.mutations.update(mutant.mutations or ("seed",))
                    if keep:
                        report.sent.append(mutant.data)
            due = max(due + period, time.monotonic())
            while (left := due - time.monotonic()) > 0:
                wait(left)
        report.duration_s = time.monotonic() - start
    finally:
        node.destroy_publisher(publisher)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topic", required=True)
    parser.add_argument("--type", required=True, choices=sorted(SCHEMAS), dest="type_name")
    parser.add_argument("--rate", type=float, default=100.0, help="Hz")
    parser.add_argument("--duration", type=float, default=10.0, help="s")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reliability", choices=("reliable", "best_effort"), default="reliable")
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--wait-subscribers", type=float, default=5.0,
                        help="s to wait for a subscriber before publishing (0: do not wait)")
    parser.add_argument("--include-empty", action="store_true",
                        help="publish empty payloads too (they stop a reliable writer)")
    add_dds_arguments(parser)
    args = parser.parse_args(argv)
    apply_dds_arguments(args)

    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    rclpy.init()
    node = rclpy.create_node("publish_cdr_mutations")
    try:
        reliability = ReliabilityPolicy.RELIABLE if args.reliability == "reliable" \
            else ReliabilityPolicy.BEST_EFFORT
        qos = QoSProfile(depth=args.depth, reliability=reliability)
        report = publish_mutations(node, args.topic, args.type_name, args.rate, args.duration,
                                   args.seed, qos=qos, include_empty=args.include_empty,
                                   wait_subscribers_s=args.wait_subscribers)
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    print(json.dumps(report.summary(), indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
