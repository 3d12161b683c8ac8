#!/usr/bin/env python3
"""Where zmp_estimator's per-sample time goes, on its ROS-free path (a measurement, no result file).

1. ``step``: :meth:`ZmpEstimator.step` on the two-foot samples of ``benchmarks/zmp.py``
   (sole poses given), µs per call, median and p99, and cProfile's functions by own time.
2. ``operations``: each costly operation of ``step`` timed alone on the same kind of
   objects, in interleaved rounds (``--rounds``; the best round and the median round),
   times how often one sample runs it: what each line costs a sample; ``2c``: the
   same for what ``step`` does more when a sole pose changed.
   ``moving``: the same with the sole poses changing every sample (the legs move, as in
   the simulation), and the pose-dependent parts that ``step`` then recomputes.
3. ``node path``: what the node does around ``step`` for one two-foot sample, ROS
   aside, timed stage by stage with the package's public pieces: the two wrenches
   read from CDR bytes, paired (:class:`SampleSynchronizer`), the joint state read
   and buffered (:class:`StampedBuffer`), the sole poses by forward kinematics when
   the legs moved, the samples built, ``step``, the outputs written as CDR bytes.
   ``--node``: the real node's three raw callbacks called in this process with CDR bytes
   (rclpy, no executor): what the node's Python costs a sample, back to back and paced at
   1 kHz (CPU time: caches cool between samples), with cProfile's functions.
4. ``floats``: the same estimate computed on Python floats end to end (no numpy
   array made or checked per sample; the contact detectors, offsets, foot weights
   and support polygon of the estimator itself), its outputs checked equal to
   ``step``'s on every sample: what a sample costs without numpy's per-call overhead.

    python benchmarks/zmp_profile.py [--samples 20000] [--rounds 30] [--json PATH] [--node]

The machine is shared: read the load averages printed with the figures.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import pstats
import subprocess
import sys
import time
import timeit
from collections.abc import Callable
from math import isfinite
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

SIDES = ("left", "right")


def percentiles_us(times_ns: np.ndarray) -> tuple[float, float]:
    """(median, p99) in µs."""
    return float(np.median(times_ns)) * 1e-3, float(np.percentile(times_ns, 99)) * 1e-3


def time_each(call: Callable[[Any], Any], items: list[Any],
              clock: Callable[[], int] = time.perf_counter_ns) -> np.ndarray:
    """ns of ``call(item)`` for each item, timed alone (wall time; ``clock``
    ``time.thread_time_ns``: this thread's CPU time)."""
    out = np.empty(len(items), dtype=np.int64)
    for k, item in enumerate(items):
        t0 = clock()
        call(item)
        out[k] = clock() - t0
    return out


def time_paced(call: Callable[[Any], Any], items: list[Any], pause_s: float = 0.0009) -> np.ndarray:
    """This thread's CPU ns of ``call(item)`` for each item, ``pause_s`` asleep before each (the
    sensors' 1 kHz: what other processes run meanwhile cools the caches)."""
    clock = time.thread_time_ns
    out = np.empty(len(items), dtype=np.int64)
    for k, item in enumerate(items):
        time.sleep(pause_s)
        t0 = clock()
        call(item)
        out[k] = clock() - t0
    return out


# --- 1. step -------------------------------------------------------------------------------------


def profile_step(step: Callable[[Any], Any], samples: list[Any], top: int = 15) -> list[dict]:
    """cProfile of ``step`` over the samples: the ``top`` functions by own time."""
    profile = cProfile.Profile(time.thread_time_ns, 1e-9)  # CPU time: preemption left out
    profile.enable()
    for sample in samples:
        step(sample)
    profile.disable()
    stats = pstats.Stats(profile, stream=io.StringIO())
    rows = []
    for (path, line, name), (_, calls, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append({"function": f"{Path(path).name}:{line}({name})", "calls_per_sample":
                     round(calls / len(samples), 2), "own_us_per_sample":
                     round(1e6 * tottime / len(samples), 2),
                     "cumulative_us_per_sample": round(1e6 * cumtime / len(samples), 2)})
    rows.sort(key=lambda r: -r["own_us_per_sample"])
    return rows[:top]


# --- 2. the operations of step -------------------------------------------------------------------


def interleaved_costs(operations: list[tuple[str, str, int, str]], space: dict[str, Any],
                      rounds: int, number: int = 200) -> list[dict]:
    """Each ``(where, what, per_sample, statement)`` timed in ``rounds`` rounds of ``number``
    calls, every operation once a round (the load of the machine hits all alike): µs per
    call, the best round's and the median round's, and per sample (times ``per_sample``)."""
    timers = [timeit.Timer(statement, globals=space) for *_, statement in operations]
    per_call: list[list[float]] = [[] for _ in operations]
    for _ in range(rounds):
        for k, timer in enumerate(timers):
            per_call[k].append(timer.timeit(number) / number * 1e6)
    rows = []
    for (where, what, per_sample, _), runs in zip(operations, per_call, strict=True):
        best, median = min(runs), float(np.median(runs))
        rows.append({"where": where, "operation": what, "per_sample": per_sample,
                     "us_per_call_best": round(best, 3), "us_per_call_median": round(median, 3),
                     "us_per_sample_best": round(best * per_sample, 2),
                     "us_per_sample_median": round(median * per_sample, 2)})
    return rows


def operation_space(estimator: Any, sample: dict[str, Any]) -> dict[str, Any]:
    """Objects of the kinds ``step`` handles, for the statements of :data:`STEP_OPERATIONS`
    and :data:`POSE_CHANGE_OPERATIONS`."""
    from humanoid_balance.core import support as support_module
    from humanoid_balance.core.zmp import ZmpOutput

    left = sample["left"]
    pose = np.asarray(left.sole_in_world, dtype=float)
    zmp = np.array([0.01, 0.02, 0.0])
    poses = {s: np.asarray(sample[s].sole_in_world, dtype=float) for s in SIDES}
    estimator.support.update(poses, list(SIDES))
    sensor_in_sole = estimator.feet["left"].sensor_in_sole
    points = [(float(x), float(y)) for side in SIDES  # the feet's contact points in the world
              for x, y, *_ in (poses[side] @ np.column_stack(
                  [estimator.support.points_in_sole[side],
                   np.zeros((len(estimator.support.points_in_sole[side]), 1)),
                   np.ones((len(estimator.support.points_in_sole[side]), 1))]).T).T]
    vertices = [tuple(v) for v in estimator.support.vertices.tolist()]
    return {"np": np, "pose": pose, "force": left.force_in_sensor,
            "torque": left.torque_in_sensor, "offsets": estimator.offsets["left"],
            "cache": {"left": (pose.tobytes(), [0.0] * 6, [0.0] * 12)}, "zmp": zmp,
            "zmps": {"left": zmp.copy(), "right": zmp.copy()}, "poses": poses,
            "touching": list(SIDES), "support": estimator.support, "isfinite": isfinite,
            "ZmpOutput": ZmpOutput, "values": (1.0, 2.0, 270.0, 0.5, 0.25, 0.01),
            "detector": estimator.contacts["left"], "forces": {"left": 1.0, "right": 1.0},
            "contacts": {"left": True, "right": True}, "x": 0.01, "y": 0.02, "z": 0.0,
            "estimator": estimator, "sensor_in_sole": sensor_in_sole,
            "rotation": (pose @ sensor_in_sole)[:3, :3], "support_module": support_module,
            "points": points, "vertices": vertices}


#: (where in core/zmp.py's ``ZmpEstimator.step`` or what it calls, what, times a two-foot
#: sample runs it, the statement): the sole poses unchanged (the caches hit)
STEP_OPERATIONS = [
    ("step: the sole pose as an array", "np.asarray(pose, dtype=float)", 2,
     "np.asarray(pose, dtype=float)"),
    ("_pose_terms: the pose cache's key", "pose.tobytes() and the cache compare", 2,
     "cache.get('left')[0] == pose.tobytes()"),
    ("_ft_foot: force and torque as floats",
     "np.asarray(v, dtype=float).reshape(3).tolist(), twice", 2,
     "np.asarray(force, dtype=float).reshape(3).tolist(); "
     "np.asarray(torque, dtype=float).reshape(3).tolist()"),
    ("_ft_foot: the offsets as floats", "offsets.tolist()", 2, "offsets.tolist()"),
    ("_ft_foot: the wrench finite", "isfinite of 6 floats", 2,
     "isfinite(1.0) and isfinite(2.0) and isfinite(3.0) and isfinite(4.0) and "
     "isfinite(5.0) and isfinite(6.0)"),
    ("step: the contact hysteresis", "ContactDetector.step", 2, "detector.step(270.0)"),
    ("step: a foot's ZMP as an array", "np.array([x, y, z])", 2, "np.array([x, y, z])"),
    ("step: the sums finite", "all(isfinite(v) for v in six floats)", 1,
     "all(isfinite(v) for v in values)"),
    ("step: the support polygon (cache hit)", "SupportPolygon.update(poses, touching)", 1,
     "support.update(poses, touching)"),
    ("step: the ZMP as an array", "np.array([...])", 1, "np.array([x, y, z])"),
    ("step: ZMP and feet's ZMPs finite",
     "np.isfinite(zmp).all() and all(np.isfinite(p).all() for p in zmps)", 1,
     "np.isfinite(zmp).all() and all(p is None or np.isfinite(p).all() for p in zmps.values())"),
    ("step: the same check on the 9 floats", "isfinite of 9 floats (an alternative)", 1,
     "isfinite(x) and isfinite(y) and isfinite(z) and isfinite(x) and isfinite(y) and "
     "isfinite(z) and isfinite(x) and isfinite(y) and isfinite(z)"),
    ("step: the margin", "SupportPolygon.margin(zmp)", 1, "support.margin(zmp)"),
    ("step: the result", "ZmpOutput(...)", 1, "ZmpOutput(zmp, zmps, forces, contacts, None, 0.0)"),
]

#: what ``step`` does more when a sole pose changed (each joint state moving the legs)
POSE_CHANGE_OPERATIONS = [
    ("_pose_terms (new pose)", "np.isfinite(pose).all()", 2, "np.isfinite(pose).all()"),
    ("_pose_terms (new pose)", "(pose @ sensor_in_sole)[:3, :3]", 2, "(pose @ sensor_in_sole)[:3, :3]"),
    ("_pose_terms (new pose)", "foot_weight_wrench(side, rotation).tolist()", 2,
     "estimator.foot_weight_wrench('left', rotation).tolist()"),
    ("_pose_terms (new pose)", "to_world: 12 numpy scalars to floats", 2,
     "[float(v) for v in [pose[0, 0], pose[0, 1], pose[0, 3], pose[1, 0], pose[1, 1], "
     "pose[1, 3], pose[2, 0], pose[2, 1], pose[2, 3], pose[0, 2], pose[1, 2], pose[2, 2]]]"),
    ("SupportPolygon.update (new poses)", "np.all(np.isfinite(pose))", 2,
     "np.all(np.isfinite(pose))"),
    ("SupportPolygon.update (new poses)", "_hull_indices of the 8 contact points", 1,
     "support_module._hull_indices(points)"),
    ("SupportPolygon.update (new poses)", "polygon_edges(vertices)", 1,
     "support_module.polygon_edges(vertices)"),
    ("SupportPolygon.update (new poses)", "np.array(vertices)", 1, "np.array(vertices)"),
]


def moving_sole_poses(model: Any, count: int) -> list[dict[str, np.ndarray]]:
    """``count`` sole poses of both feet, the legs' joints moving 0.1 mrad (as the simulated
    robot's do while it stands): each differs from the one before."""
    q = model.neutral()
    legs = model.group_q_index("legs")
    sole_ids = [model.frame_id(f"{s}_sole") for s in SIDES]
    moving = []
    for k in range(count):
        q_k = q.copy()
        q_k[legs] = 1e-4 * np.sin(0.01 * k + np.arange(len(legs)))
        moving.append(dict(zip(SIDES, model.frame_transforms(sole_ids, q_k), strict=True)))
    return moving


def moving_legs_costs(estimator: Any, samples: list[dict[str, Any]], model: Any,
                      count: int) -> dict[str, tuple[float, float]]:
    """µs (median, p99) per two-foot sample when the sole poses change every sample (the legs'
    joints move, as in the simulation: each joint state moves them a little): ``step`` then
    recomputes each foot's weight and pose terms and the support polygon's hull; those parts
    alone, on the same poses."""
    moving = moving_sole_poses(model, count)
    moved = []
    for sample, poses in zip(samples, moving, strict=False):
        moved.append({s: type(sample[s])(poses[s], sample[s].force_in_sensor,
                                         sample[s].torque_in_sensor) for s in SIDES})
    step_moving = percentiles_us(time_each(estimator.step, moved))
    step_fixed = percentiles_us(time_each(estimator.step, samples[:count]))
    sensor_in_sole = estimator.feet["left"].sensor_in_sole

    def pose_terms(poses: dict[str, np.ndarray]) -> None:
        for side in SIDES:  # what _pose_terms does on a new pose
            pose = poses[side]
            if not np.isfinite(pose).all():
                raise ValueError
            rotation = (pose @ sensor_in_sole)[:3, :3]
            estimator.foot_weight_wrench(side, rotation).tolist()

    support = estimator.support
    touching = list(SIDES)
    return {"step, sole poses fixed (benchmarks/zmp.py's core_us)": step_fixed,
            "step, sole poses moving every sample": step_moving,
            "  of which the 2 feet's weight and pose terms (_pose_terms, a new pose)":
                percentiles_us(time_each(pose_terms, moving)),
            "  of which the support polygon's hull (SupportPolygon.update, new poses)":
                percentiles_us(time_each(lambda poses: support.update(poses, touching), moving))}


# --- 3. the node's path around step --------------------------------------------------------------


def node_path_costs(model: Any, estimator: Any, count: int) -> dict[str, tuple[float, float]]:
    """Per stage, µs (median, p99) per two-foot sample of what zmp_estimator does per sample,
    ROS aside, with the package's public pieces (the node's own code calls the same ones)."""
    from humanoid_balance import cdr
    from humanoid_balance.core.sync import SampleSynchronizer, StampedBuffer
    from humanoid_balance.core.zmp import FootSample

    names = list(model.joint_names)
    rng = np.random.default_rng(3)
    stamps = [1_700_000_000_000_000_000 + 1_000_000 * k for k in range(count)]
    zeros = [0.0] * len(names)
    joint_bytes = [cdr.joint_state_message(
        s, names, (1e-4 * np.sin(0.01 * k + np.arange(len(names)))).tolist(), zeros, zeros)
        for k, s in enumerate(stamps)]
    writers = {s: cdr.wrench_stamped_writer(f"{s}_foot_ft") for s in SIDES}
    wrench_bytes = {s: [writers[s].write(st, (5 * math.sin(0.01 * k), 3.0, 300 + rng.normal(),
                                              1.0, 10 * math.sin(0.01 * k), 0.3))
                        for k, st in enumerate(stamps)] for s in SIDES}
    reader = cdr.JointStateReader()
    sync = SampleSynchronizer(SIDES, 0)
    buffer: StampedBuffer[np.ndarray] = StampedBuffer(200)
    q = model.neutral()
    q_index = model.q_index(names)
    sole_ids = [model.frame_id(f"{s}_sole") for s in SIDES]
    point = cdr.PointStampedWriter("W")
    polygon_writer = cdr.PolygonStampedWriter("W")
    names_of_stages = (
        "read joint state (cdr)", "joint state into q and buffer (StampedBuffer)",
        "read 2 wrenches (cdr)", "wrench arrays and pairing (SampleSynchronizer)",
        "joint state lookup (StampedBuffer)", "sole poses: forward kinematics (legs moved)",
        "2 FootSamples", "ZmpEstimator.step", "write /zmp, 2 foot ZMPs, margin (cdr)",
        "write polygon (cdr)")
    ticks = np.empty((count, len(names_of_stages) + 1), dtype=np.int64)
    clock = time.perf_counter_ns
    for k in range(count):
        row = ticks[k]
        row[0] = clock()
        sample = reader.read(joint_bytes[k])
        row[1] = clock()
        q[q_index] = sample.position
        buffer.push(sample.stamp_ns, q.copy())
        row[2] = clock()
        decoded = [cdr.read_wrench_stamped(wrench_bytes[s][k]) for s in SIDES]
        row[3] = clock()
        joined = None
        for side, (stamp, _, values) in zip(SIDES, decoded, strict=True):
            joined = sync.push(side, stamp, np.array(values)) or joined
        row[4] = clock()
        assert joined is not None
        found = buffer.at_or_before(joined.stamp_ns)
        assert found is not None
        row[5] = clock()
        poses = model.frame_transforms(sole_ids, found[1])
        row[6] = clock()
        feet = {}
        for side, pose in zip(SIDES, poses, strict=True):
            value = joined.samples[side][1]
            feet[side] = FootSample(pose, value[:3], value[3:])
        row[7] = clock()
        out = estimator.step(feet)
        row[8] = clock()
        stamp = joined.stamp_ns
        zmp = out.zmp_in_world
        point.write(stamp, float(zmp[0]), float(zmp[1]), float(zmp[2]))
        for side in SIDES:
            foot = out.foot_zmps_in_world[side]
            if foot is not None:
                point.write(stamp, float(foot[0]), float(foot[1]), float(foot[2]))
        cdr.float64_message(float(out.margin))
        row[9] = clock()
        polygon_writer.write(stamp, out.polygon)
        row[10] = clock()
    durations = np.diff(ticks, axis=1)
    costs = {name: percentiles_us(durations[:, i]) for i, name in enumerate(names_of_stages)}
    costs["total"] = percentiles_us(ticks[:, -1] - ticks[:, 0])
    return costs


#: a process taking every output of the node (raw): ``argv[1]`` JSON [(topic, module.Class)]
LISTENER = r"""
import importlib, json, sys, rclpy
from rclpy.executors import SingleThreadedExecutor
rclpy.init()
node = rclpy.create_node("zmp_profile_listener")
for topic, path in json.loads(sys.argv[1]):
    module, _, name = path.rpartition(".")
    node.create_subscription(getattr(importlib.import_module(module), name), topic,
                             lambda _m: None, 100, raw=True)
executor = SingleThreadedExecutor()
executor.add_node(node)
try:
    executor.spin()
except BaseException:
    pass
"""


def node_callbacks(count: int, top: int = 25) -> dict[str, Any]:
    """The real node's callbacks in this process (rclpy, no executor, no DDS take): a
    ``zmp_estimator`` built as its ``main`` builds it, its three raw subscriptions' callbacks
    called with CDR bytes stamped now (a joint state moving the legs, then both wrenches),
    every output subscribed by another process (so that the node writes them all). µs per
    two-foot sample (median, p99; writing the three inputs included, about 3 µs:
    ``benchmarks/cdr.py``) and cProfile's functions by own time."""
    import rclpy
    from rclpy.context import Context

    from humanoid_balance import cdr
    from humanoid_balance.core.model import RobotModel
    from humanoid_balance.nodes.zmp_estimator import ZmpEstimatorNode
    from humanoid_balance.resources import urdf_path

    context = Context()
    rclpy.init(context=context)
    listener = None
    try:
        node = ZmpEstimatorNode(context=context)
        outputs = [(pub.topic_name, pub.msg_type) for pub in node.publishers
                   if pub.topic_name not in ("/rosout", "/parameter_events")]
        # the outputs taken by another process, as in the graph (a subscriber in this process
        # would be served by Fast DDS's intra-process delivery inside each publish)
        listener = subprocess.Popen(
            [sys.executable, "-c", LISTENER, json.dumps([(t, f"{c.__module__}.{c.__name__}")
                                                        for t, c in outputs])],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=dict(os.environ))
        end = time.monotonic() + 30.0
        while time.monotonic() < end and not all(
                pub.get_subscription_count() > 0 for pub in node.publishers
                if pub.topic_name in dict(outputs)):
            time.sleep(0.1)
        time.sleep(0.2)  # the node's Listeners look again every 0.1 s
        callbacks: dict[str, Any] = {sub.topic_name: sub.callback for sub in node.subscriptions}
        model = RobotModel(urdf_path("humanoid"), world_frame="W")
        names = list(model.joint_names)
        joints = cdr.JointStateWriter(names)
        wrench = {s: cdr.wrench_stamped_writer(f"{s}_foot_ft") for s in SIDES}
        legs = np.arange(len(names))

        def feed(k: int) -> None:
            stamp = time.time_ns()
            position = 1e-4 * np.sin(0.01 * k + legs)
            callbacks["/joint_states"](joints.write(stamp, position, position * 0.0,
                                                    position * 0.0))
            for side, sign in (("left", 1.0), ("right", -1.0)):
                callbacks[f"/{side}_foot/ft"](wrench[side].write(stamp, (
                    5 * math.sin(0.01 * k), sign * 3.0, 270 + 80 * sign * math.sin(0.01 * k),
                    sign * 4.0, 20 * math.sin(0.01 * k), 0.3)))

        for k in range(500):
            feed(k)
        times = time_each(feed, list(range(count)))
        cpu_times = time_each(feed, list(range(count)), clock=time.thread_time_ns)
        paced_cpu = time_paced(feed, list(range(min(count, 3000))))
        profile = cProfile.Profile(time.thread_time_ns, 1e-9)  # CPU time: preemption left out
        profile.enable()
        for k in range(count):
            feed(k)
        profile.disable()
        stats = pstats.Stats(profile, stream=io.StringIO())
        rows = []
        for (path, line, name), (_, calls, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
            rows.append({"function": f"{Path(path).name}:{line}({name})",
                         "calls_per_sample": round(calls / count, 2),
                         "own_us_per_sample": round(1e6 * tottime / count, 2),
                         "cumulative_us_per_sample": round(1e6 * cumtime / count, 2)})
        rows.sort(key=lambda r: -r["own_us_per_sample"])
        counts = dict(node.counts) if hasattr(node, "counts") else {}
        node.destroy_node()
    finally:
        if listener is not None:
            listener.terminate()
            listener.wait(timeout=10)
        rclpy.try_shutdown(context=context)
    return {"us_per_sample": percentiles_us(times), "cpu_us_per_sample": percentiles_us(cpu_times),
            "paced_cpu_us_per_sample": percentiles_us(paced_cpu), "cprofile": rows[:top],
            "counts": counts}


def zmp_loop_costs(model: Any, count: int, top: int = 20) -> dict[str, Any] | None:
    """``humanoid_balance.core.zmp_loop.ZmpLoop`` (the node's ROS-free loop, where the tree has
    it; None where not) fed as the node feeds it: per two-foot sample a joint state moving the
    legs and both wrenches, read from CDR bytes, the estimates written as CDR bytes.
    µs (median, p99) per sample by stage, back to back, and the whole paced at 1 kHz (CPU),
    and cProfile's functions by own time."""
    try:
        from humanoid_balance.core.foot_sensors import WrenchReading
        from humanoid_balance.core.zmp_loop import ManualClock, ZmpLoop
        from humanoid_balance.params.zmp_estimator import config_from_values
    except ImportError:
        return None
    from humanoid_balance import cdr

    def fresh() -> tuple[Any, Any]:
        """A loop and its clock, the stamps to come ahead of nothing it has seen."""
        clock = ManualClock(1_700_000_000_000_000_000)
        return ZmpLoop(config_from_values({}), clock, model=model), clock

    state = dict(zip(("loop", "clock"), fresh(), strict=True))
    names = list(model.joint_names)
    legs = np.arange(len(names))
    zeros = np.zeros(len(names))
    total = count + 500
    stamps = [1_700_000_000_000_000_000 + 1_000_000 * k for k in range(total)]
    joint_bytes = [cdr.JointStateWriter(names).write(s, 1e-4 * np.sin(0.01 * k + legs), zeros, zeros)
                   for k, s in enumerate(stamps)]
    writers = {s: cdr.wrench_stamped_writer(f"{s}_foot_ft") for s in SIDES}
    wrench_bytes = [{side: writers[side].write(st, (
        5 * math.sin(0.01 * k), sign * 3.0, 270 + 80 * sign * math.sin(0.01 * k), sign * 4.0,
        20 * math.sin(0.01 * k), 0.3)) for side, sign in (("left", 1.0), ("right", -1.0))}
        for k, st in enumerate(stamps)]
    reader = cdr.JointStateReader()
    point = cdr.PointStampedWriter("W")
    polygon_writer = cdr.PolygonStampedWriter("W")

    def publish(results: list[Any]) -> None:
        for result in results:
            out, stamp = result.output, result.stamp_ns
            zmp = out.zmp_in_world
            point.write(stamp, float(zmp[0]), float(zmp[1]), float(zmp[2]))
            for side in SIDES:
                foot = out.foot_zmps_in_world[side]
                if foot is not None:
                    point.write(stamp, float(foot[0]), float(foot[1]), float(foot[2]))
            polygon_writer.write(stamp, out.polygon)
            cdr.float64_message(float(out.margin))

    published = [0]

    def sample(k: int) -> np.ndarray:
        ticks = np.empty(4, dtype=np.int64)
        loop = state["loop"]
        ticks[0] = time.perf_counter_ns()
        state["clock"].advance(1_000_000)
        js = reader.read(joint_bytes[k])
        results = loop.on_joint_state(js.stamp_ns, js.names, js.position)
        ticks[1] = time.perf_counter_ns()
        for side in SIDES:
            stamp, frame, values = cdr.read_wrench_stamped(wrench_bytes[k][side])
            results += loop.on_foot(side, WrenchReading(stamp, frame, values))
        ticks[2] = time.perf_counter_ns()
        publish(results)
        published[0] += len(results)
        ticks[3] = time.perf_counter_ns()
        return ticks

    for k in range(500):
        sample(k)
    published[0] = 0
    ticks = np.array([sample(k) for k in range(500, total)])
    stages = np.diff(ticks, axis=1)
    costs: dict[str, Any] = {
        "joint state: read (cdr) + on_joint_state": percentiles_us(stages[:, 0]),
        "2 wrenches: read (cdr) + on_foot (join, estimate)": percentiles_us(stages[:, 1]),
        "outputs written (cdr)": percentiles_us(stages[:, 2]),
        "total": percentiles_us(ticks[:, -1] - ticks[:, 0]),
        "estimates_per_sample": round(published[0] / count, 3)}
    state.update(zip(("loop", "clock"), fresh(), strict=True))  # again, paced
    costs["total_paced_cpu"] = percentiles_us(time_paced(sample, list(range(min(count, 3000)))))
    state.update(zip(("loop", "clock"), fresh(), strict=True))
    profile = cProfile.Profile(time.thread_time_ns, 1e-9)
    profile.enable()
    for k in range(count):
        sample(k)
    profile.disable()
    stats = pstats.Stats(profile, stream=io.StringIO())
    rows = []
    for (path, line, name), (_, calls, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append({"function": f"{Path(path).name}:{line}({name})",
                     "calls_per_sample": round(calls / count, 2),
                     "own_us_per_sample": round(1e6 * tottime / count, 2),
                     "cumulative_us_per_sample": round(1e6 * cumtime / count, 2)})
    rows.sort(key=lambda r: -r["own_us_per_sample"])
    costs["cprofile"] = rows[:top]
    return costs


# --- 4. the estimate on floats -------------------------------------------------------------------


class FloatEstimate:
    """``ZmpEstimator.step`` for F/T feet computed on Python floats (a measurement prototype).

    It uses the estimator's own state (contact detectors, offsets, foot geometry, foot
    weight, support polygon) and takes each foot's wrench as six floats and its sole pose
    with a version number that changes when the pose does (the node knows: its sole-pose
    cache), so that nothing per sample builds, reshapes or checks a numpy array.
    """

    def __init__(self, estimator: Any) -> None:
        self.estimator = estimator
        self._terms: dict[str, tuple[int, list[float], list[float], np.ndarray]] = {}
        self._rotation = {s: [float(v) for v in f.sensor_in_sole[:3, :3].reshape(9)]
                          for s, f in estimator.feet.items()}
        self._origin = {s: tuple(float(v) for v in f.sensor_in_sole[:3, 3])
                        for s, f in estimator.feet.items()}
        self._offsets = {s: estimator.offsets[s].tolist() for s in estimator.feet}
        self._polygon_key: tuple[Any, ...] | None = None

    def _pose(self, side: str, pose: np.ndarray, version: int) -> tuple[list[float], list[float]]:
        cached = self._terms.get(side)
        if cached is not None and cached[0] == version:
            return cached[1], cached[2]
        if not np.isfinite(pose).all():
            raise ValueError(f"{side} foot: sole pose not finite")
        rotation = (pose @ self.estimator.feet[side].sensor_in_sole)[:3, :3]
        weight = self.estimator.foot_weight_wrench(side, rotation).tolist()
        p = pose.tolist()
        to_world = [p[0][0], p[0][1], p[0][3], p[1][0], p[1][1], p[1][3], p[2][0], p[2][1],
                    p[2][3], p[0][2], p[1][2], p[2][2]]
        self._terms[side] = (version, weight, to_world, pose)
        return weight, to_world

    def step(self, wrenches: dict[str, tuple[float, ...]], poses: dict[str, np.ndarray],
             version: int) -> tuple[Any, ...]:
        """(zmp (x, y, z) or None, per foot (x, y, z) or None, margin or None, polygon)."""
        fx_w = fy_w = fz_w = tx_w = ty_w = sum_z = 0.0
        feet: dict[str, tuple[float, float, float] | None] = {}
        touching = []
        for side in SIDES:
            weight, w = self._pose(side, poses[side], version)
            fx, fy, fz, tx, ty, tz = wrenches[side]
            o = self._offsets[side]
            fx -= o[0] + weight[0]
            fy -= o[1] + weight[1]
            fz -= o[2] + weight[2]
            tx -= o[3] + weight[3]
            ty -= o[4] + weight[4]
            tz -= o[5] + weight[5]
            r, (px, py, pz) = self._rotation[side], self._origin[side]
            sfx = r[0] * fx + r[1] * fy + r[2] * fz
            sfy = r[3] * fx + r[4] * fy + r[5] * fz
            normal = r[6] * fx + r[7] * fy + r[8] * fz
            stx = r[0] * tx + r[1] * ty + r[2] * tz + py * normal - pz * sfy
            sty = r[3] * tx + r[4] * ty + r[5] * tz + pz * sfx - px * normal
            stz = r[6] * tx + r[7] * ty + r[8] * tz + px * sfy - py * sfx
            if not self.estimator.contacts[side].step(normal):
                feet[side] = None
                continue
            lx, ly = -sty / normal, stx / normal
            z = w[6] * lx + w[7] * ly + w[8]
            feet[side] = (w[0] * lx + w[1] * ly + w[2], w[3] * lx + w[4] * ly + w[5], z)
            touching.append(side)
            r00, r01, t0, r10, r11, t1, r20, r21, t2, r02, r12, r22 = w
            fwx = r00 * sfx + r01 * sfy + r02 * normal
            fwy = r10 * sfx + r11 * sfy + r12 * normal
            fwz = r20 * sfx + r21 * sfy + r22 * normal
            fx_w += fwx
            fy_w += fwy
            fz_w += fwz
            tx_w += r00 * stx + r01 * sty + r02 * stz + t1 * fwz - t2 * fwy
            ty_w += r10 * stx + r11 * sty + r12 * stz + t2 * fwx - t0 * fwz
            sum_z += fwz * z
        if not touching:
            return None, feet, None, None
        support = self.estimator.support
        key = (tuple(touching), version)
        if key != self._polygon_key:
            support.update({s: self._terms[s][3] for s in touching}, touching)
            self._polygon_key = key
        pz = sum_z / fz_w
        x, y = (-ty_w + pz * fx_w) / fz_w, (tx_w + pz * fy_w) / fz_w
        if not (isfinite(x) and isfinite(y) and isfinite(pz)):
            raise ValueError("ZMP not finite")
        return (x, y, pz), feet, support.margin((x, y)), support.vertices


def float_estimate(make: Callable[[], tuple[Any, list[dict[str, Any]]]],
                   moving: list[dict[str, np.ndarray]] | None = None) -> dict[str, Any]:
    """:class:`FloatEstimate` against ``step`` on the same samples (two fresh estimators):
    µs per sample of each, and the largest difference of their outputs. ``moving``: sole
    poses for the samples (a new one each), instead of the samples' fixed ones."""
    reference, samples = make()
    fast_estimator, _ = make()
    fast = FloatEstimate(fast_estimator)
    if moving is not None:
        samples = [{s: type(sample[s])(poses[s], sample[s].force_in_sensor,
                                       sample[s].torque_in_sensor) for s in SIDES}
                   for sample, poses in zip(samples, moving, strict=False)]
    inputs = []
    for k, sample in enumerate(samples):
        wrenches = {s: (*(float(v) for v in sample[s].force_in_sensor),
                        *(float(v) for v in sample[s].torque_in_sensor)) for s in SIDES}
        inputs.append((wrenches, {s: sample[s].sole_in_world for s in SIDES},
                       k if moving is not None else 0))
    worst = 0.0
    for sample, args in zip(samples, inputs, strict=True):
        ref = reference.step(sample)
        got = fast.step(*args)
        if (ref.zmp_in_world is None) != (got[0] is None):
            raise RuntimeError("the float estimate and step disagree on contact")
        if ref.zmp_in_world is not None:
            worst = max(worst, float(np.max(np.abs(ref.zmp_in_world - np.array(got[0])))),
                        abs(ref.margin - got[2]))
            for side in SIDES:
                foot = ref.foot_zmps_in_world[side]
                if foot is not None:
                    worst = max(worst, float(np.max(np.abs(foot - np.array(got[1][side])))))
    step_times = time_each(reference.step, samples)
    fast_times = time_each(lambda a: fast.step(*a), inputs)
    paced = min(len(samples), 2000)
    step_paced = time_paced(reference.step, samples[:paced])
    fast_paced = time_paced(lambda a: fast.step(*a), inputs[:paced])
    return {"step_us": percentiles_us(step_times), "floats_us": percentiles_us(fast_times),
            "step_paced_cpu_us": percentiles_us(step_paced),
            "floats_paced_cpu_us": percentiles_us(fast_paced), "largest_difference_m": worst}


# --- main ----------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--samples", type=int, default=20000, help="two-foot samples (default 20000)")
    parser.add_argument("--rounds", type=int, default=30,
                        help="interleaved rounds of 200 calls per operation (default 30)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--node", action="store_true",
                        help="also the node's callbacks in-process (rclpy; DDS on loopback)")
    args = parser.parse_args()
    from zmp import _estimator_and_samples

    report: dict[str, Any] = {"load_average_at_start": os.getloadavg()}
    estimator, samples, model, _ = _estimator_and_samples(args.samples)
    for sample in samples[:500]:
        estimator.step(sample)
    median, p99 = percentiles_us(time_each(estimator.step, samples))
    report["step_us"] = (median, p99)
    print(f"1. ZmpEstimator.step: median {median:.2f} us, p99 {p99:.2f} us "
          f"({len(samples)} samples; load {os.getloadavg()[0]:.2f})")
    paced_cpu = percentiles_us(time_paced(estimator.step, samples[:3000]))
    report["step_paced_cpu_us"] = paced_cpu
    print(f"   paced at 1 kHz (0.9 ms sleep before each sample; CPU time of the step): "
          f"median {paced_cpu[0]:.2f} us, p99 {paced_cpu[1]:.2f} us")
    report["cprofile"] = profile_step(estimator.step, samples)
    print("   cProfile (CPU time), own time per sample (the profiler adds its cost to every call):")
    for row in report["cprofile"]:
        print(f"   {row['own_us_per_sample']:>7.2f} us  x{row['calls_per_sample']:<5} "
              f"{row['function']}")
    space = operation_space(estimator, samples[0])
    for key, title, operations in (
            ("operations", "2. step's operations alone", STEP_OPERATIONS),
            ("pose_change_operations", "2c. what step does more on a new sole pose",
             POSE_CHANGE_OPERATIONS)):
        report[key] = interleaved_costs(operations, space, args.rounds)
        print(f"{title}, us per two-foot sample (best / median round of {args.rounds}):")
        for row in report[key]:
            print(f"   {row['us_per_sample_best']:>6.2f} / {row['us_per_sample_median']:<6.2f} "
                  f"x{row['per_sample']} {row['where']}: {row['operation']}")
    report["moving_legs"] = moving_legs_costs(estimator, samples, model, min(args.samples, 5000))
    print("2b. when the legs move, us per two-foot sample (median / p99):")
    for name, (m, p) in report["moving_legs"].items():
        print(f"   {m:>7.2f} / {p:<8.2f} {name}")
    report["node_path"] = node_path_costs(model, estimator, min(args.samples, 5000))
    print("3. the node's per-sample path, ROS aside, us (median / p99):")
    for name, (m, p) in report["node_path"].items():
        print(f"   {m:>7.2f} / {p:<8.2f} {name}")

    if args.node:
        report["node_callbacks"] = node = node_callbacks(min(args.samples, 5000))
        m, p = node["us_per_sample"]
        cm, cp = node["cpu_us_per_sample"]
        print(f"3b. the node's callbacks in-process (joint state + 2 wrenches, outputs written): "
              f"wall median {m:.2f} us, p99 {p:.2f} us; CPU median {cm:.2f} us, p99 {cp:.2f} us "
              f"per two-foot sample back to back; paced at 1 kHz (0.9 ms asleep before each) "
              f"CPU median {node['paced_cpu_us_per_sample'][0]:.2f} us, p99 "
              f"{node['paced_cpu_us_per_sample'][1]:.2f} us; counts {node['counts']}")
        for row in node["cprofile"]:
            print(f"   {row['own_us_per_sample']:>7.2f} us own, {row['cumulative_us_per_sample']:>7.2f}"
                  f" cumulative  x{row['calls_per_sample']:<5} {row['function']}")

    loop_costs = zmp_loop_costs(model, min(args.samples, 5000))
    if loop_costs is not None:
        report["zmp_loop"] = loop_costs
        print(f"3c. ZmpLoop (core/zmp_loop.py) fed as the node feeds it, us per two-foot sample "
              f"(median / p99; {loop_costs['estimates_per_sample']} estimates a sample):")
        for name, value in loop_costs.items():
            if isinstance(value, tuple):
                print(f"   {value[0]:>7.2f} / {value[1]:<8.2f} {name}")
        for row in loop_costs["cprofile"]:
            print(f"   {row['own_us_per_sample']:>7.2f} us own, {row['cumulative_us_per_sample']:>7.2f}"
                  f" cumulative  x{row['calls_per_sample']:<5} {row['function']}")

    def make() -> tuple[Any, list[dict[str, Any]]]:
        est, smp, _, _ = _estimator_and_samples(args.samples)
        return est, smp

    report["floats"] = float_estimate(make)
    report["floats_moving"] = float_estimate(make, moving_sole_poses(model, min(args.samples, 5000)))
    for key, what in (("floats", "sole poses fixed"), ("floats_moving", "sole poses moving")):
        f = report[key]
        print(f"4. {what}: step {f['step_us'][0]:.2f} / {f['step_us'][1]:.2f} us against floats "
              f"{f['floats_us'][0]:.2f} / {f['floats_us'][1]:.2f} us (median / p99); paced at "
              f"1 kHz (CPU) {f['step_paced_cpu_us'][0]:.2f} / {f['step_paced_cpu_us'][1]:.2f} "
              f"against {f['floats_paced_cpu_us'][0]:.2f} / {f['floats_paced_cpu_us'][1]:.2f} us; "
              f"largest output difference {f['largest_difference_m']:.3g} m")
    report["load_average_at_end"] = os.getloadavg()
    print(f"load averages: {report['load_average_at_start']} -> {report['load_average_at_end']}")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
