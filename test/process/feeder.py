"""Publish fixed messages at a fixed rate until SIGINT or SIGTERM: the inputs of a node under test.

A process of its own, so that the test's own process only spins its probe and
the node under test sees its inputs as it would from a robot's drivers.

Usage::

    python feeder.py '<spec as JSON>'

The spec (built by ``process_harness.FeedSpec``)::

    {"rate": 1000.0,                     # Hz of the base tick
     "wait_subscribers": 20.0,           # s to wait for every topic to have a subscriber
     "messages": [
        {"topic": "/joint_states", "type": "joint_state", "every": 1,
         "name": [...], "position": [...], "velocity": [...], "effort": [...]},
        {"topic": "/left_foot/ft", "type": "wrench", "every": 1, "frame_id": "left_foot_ft",
         "wrench": [fx, fy, fz, tx, ty, tz]}]}

Each tick publishes every message due (tick % every == 0), all with the same
stamp (the wall clock), ``/joint_states`` first as in the spec's order. It
prints ``feeding`` once every topic has a subscriber (``no subscriber on
<topic>`` and exit status 1 when the wait runs out) and ``published <n> ticks
in <s> s`` when it stops.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from typing import Any


def _build(spec: dict[str, Any]) -> Any:
    from geometry_msgs.msg import WrenchStamped
    from sensor_msgs.msg import JointState

    if spec["type"] == "joint_state":
        msg = JointState()
        msg.name = list(spec["name"])
        for field in ("position", "velocity", "effort"):
            if spec.get(field):
                setattr(msg, field, [float(v) for v in spec[field]])
        return msg
    if spec["type"] == "wrench":
        msg = WrenchStamped()
        msg.header.frame_id = str(spec["frame_id"])
        w = [float(v) for v in spec["wrench"]]
        msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = w[0], w[1], w[2]
        msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z = w[3], w[4], w[5]
        return msg
    raise ValueError(f"message type {spec['type']!r}: expected joint_state or wrench")


def main(argv: list[str]) -> int:
    """Feed until a signal; 1 when no subscriber appeared in time."""
    import rclpy
    from rclpy.signals import SignalHandlerOptions

    spec = json.loads(argv[1])
    stop = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    node = rclpy.create_node("process_test_feeder")
    entries = []
    for item in spec["messages"]:
        msg = _build(item)
        publisher = node.create_publisher(type(msg), item["topic"], 100)
        entries.append((item["topic"], int(item.get("every", 1)), msg, publisher))
    deadline = time.monotonic() + float(spec.get("wait_subscribers", 20.0))
    for topic, _, _, publisher in entries:
        while publisher.get_subscription_count() == 0 and not stop:
            if time.monotonic() > deadline:
                print(f"no subscriber on {topic}", flush=True)
                node.destroy_node()
                rclpy.shutdown()
                return 1
            time.sleep(0.01)
    print("feeding", flush=True)
    period = 1.0 / float(spec["rate"])
    clock = node.get_clock()
    start = time.monotonic()
    next_tick = start
    ticks = 0
    while not stop:
        stamp = clock.now().to_msg()
        for _, every, msg, publisher in entries:
            if ticks % every == 0:
                msg.header.stamp = stamp
                publisher.publish(msg)
        ticks += 1
        next_tick += period
        wait = next_tick - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        elif wait < -0.1:  # far behind (a loaded machine): do not burst to catch up
            next_tick = time.monotonic()
    print(f"published {ticks} ticks in {time.monotonic() - start:.3f} s", flush=True)
    node.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
