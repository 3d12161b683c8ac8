#!/usr/bin/env python3
"""Time to plan a waist command's shaped reference (issue 32), on random feasible paths.

The waist controller plans every ``/waist/command`` in its servo thread, between two 2 ms
periods (``WaistController.set_trajectory`` -> ``BlendedTrajectory.plan``), so a plan's
time is a servo period's lateness. This plans the paths of
:func:`~humanoid_balance.experiments.waist_paths.draw_path` (seeds 0..N-1: sines, ramps,
steps, 2 ms to 1 s points, 3 s of motion, from rest) from rest on their first point, within
the waist's declared limits and range, and reports the median, p99 and largest time per
plan, and how many points the paths had.

    python benchmarks/waist_plan.py [--draws 200]

Writes benchmarks/results/waist_plan.json (format of shared/RESULTS.md).
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np


def plan_times_ms(draws: int) -> tuple[np.ndarray, np.ndarray]:
    """Each draw's plan time [ms] and point count."""
    from humanoid_balance.core.blended_trajectory import BlendedTrajectory
    from humanoid_balance.experiments.waist_paths import (
        ACCELERATION_LIMIT_DEG_S2,
        RANGE_DEG,
        VELOCITY_LIMIT_DEG_S,
        draw_path,
    )

    lower = np.radians([RANGE_DEG[0][0], RANGE_DEG[1][0]])
    upper = np.radians([RANGE_DEG[0][1], RANGE_DEG[1][1]])
    times_ms, points = [], []
    for seed in range(draws):
        path = draw_path(seed).path
        t, q = path.times_s, np.radians(path.points_deg)
        start = time.perf_counter()
        BlendedTrajectory.plan(t[1:], q[1:], initial_position=q[0], initial_velocity=np.zeros(2),
                               velocity_limit=math.radians(VELOCITY_LIMIT_DEG_S),
                               acceleration_limit=math.radians(ACCELERATION_LIMIT_DEG_S2),
                               lower=lower, upper=upper)
        times_ms.append(1e3 * (time.perf_counter() - start))
        points.append(len(t))
    return np.array(times_ms), np.array(points)


def main() -> int:
    from humanoid_balance.results import metric, write_results

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200, help="paths planned (default 200)")
    args = parser.parse_args()
    if args.draws < 1:
        parser.error("--draws must be >= 1")
    plan_times_ms(5)  # imports and first calls out of the figures
    times_ms, points = plan_times_ms(args.draws)
    write_results("waist_plan", {
        "plan_ms_median": metric(float(np.median(times_ms)), "ms", better="lower"),
        "plan_ms_p99": metric(float(np.percentile(times_ms, 99)), "ms", better="lower"),
        "plan_ms_max": metric(float(times_ms.max()), "ms", better="lower"),
        "points_median": metric(int(np.median(points)), ""),
        "points_max": metric(int(points.max()), ""),
        "draws": metric(args.draws, ""),
    }, command=" ".join(["python", "benchmarks/waist_plan.py", *sys.argv[1:]]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
