#!/usr/bin/env python3
"""Time of the seed-004 estimation and of the static-configuration optimisers.

1. ``estimate_s``: :func:`identify` (friction pairing of eq. 5, regressor of
   eq. 8 at every paired sample, back-to-front least squares of eq. 10) on
   the six 60-degree sweeps of the lunar arm sampled at the paper's 1000 Hz
   at 3 deg/s (240 000 samples): torques from pinocchio's RNEA
   gravity plus Coulomb + viscous friction plus noise (no physics engine,
   so only the estimation is timed); ``estimate_weighted_s`` the same with
   the noise-weighted least squares (eq. 10 first, then the weighted fit).
2. ``gapso_*`` / ``de_*``: eq. 12 for the six sweeps (5 free angles each,
   clearance > 1 cm between links, torso and a table), solved by the
   paper's GA-PSO (eqs. 13-17) and by scipy's differential evolution with
   the same evaluation budget (620 per sweep): summed objective
   ``sum_j W_j = sum_j 1 / (1 + Q_j)`` (lower is better) and total time.

    python benchmarks/identification.py

Writes benchmarks/results/identification.json (format of shared/RESULTS.md).
"""

from __future__ import annotations

import time

import numpy as np
import pinocchio as pin

from humanoid_balance.core.identification.optimisation import (
    ClearanceChecker,
    StaticConfigurationProblem,
    differential_evolution,
    ga_pso,
)
from humanoid_balance.core.identification.procedure import SweepRecording, identify
from humanoid_balance.core.identification.regressor import (
    GravityRegressor,
    lunar_arm_composite_parameters,
)
from humanoid_balance.core.identification.trajectory import identification_plan
from humanoid_balance.experiments.identification import DEFAULT_STATIC_DEG, TABLE, sweep_ranges
from humanoid_balance.resources import urdf_path
from humanoid_balance.results import metric, write_results

# the experiment's static configuration, sweep ranges and table (one definition)
STATIC = np.radians(DEFAULT_STATIC_DEG)
RANGES = sweep_ranges()


def synthetic_recordings(regressor: GravityRegressor, rate_hz: float = 1000.0
                         ) -> list[SweepRecording]:
    """The six sweeps at rate_hz with RNEA gravity + friction + noise."""
    rng = np.random.default_rng(0)
    recordings = []
    for sweep in identification_plan([STATIC] * 6, RANGES):
        t = np.arange(0.0, sweep.duration, 1.0 / rate_hz)
        q, qd, direction = sweep.sample(t)
        rec = SweepRecording(sweep.joint)
        for qk, qdk, d in zip(q, qd, direction, strict=True):
            tau = regressor.gravity_torques(qk) + 0.05 * np.sign(qdk) + 0.5 * qdk
            rec.add(qk, tau + rng.normal(0.0, 0.01, 6), d)
        recordings.append(rec)
    return recordings


def main() -> int:
    """Run both benchmarks once and write the results."""
    urdf = str(urdf_path("lunar_arm"))
    model = pin.buildModelFromUrdf(urdf)
    regressor = GravityRegressor(model)
    pset = lunar_arm_composite_parameters()
    recordings = synthetic_recordings(regressor)
    samples = sum(len(r.positions) for r in recordings)
    started = time.perf_counter()
    identify(recordings, regressor, pset)
    estimate_s = time.perf_counter() - started
    started = time.perf_counter()
    identify(recordings, regressor, pset, method="weighted")
    weighted_s = time.perf_counter() - started

    clearance = ClearanceChecker(urdf, model, [TABLE])
    totals = {"gapso": [0.0, 0.0], "de": [0.0, 0.0]}
    for j, sweep_range in enumerate(RANGES):
        problem = StaticConfigurationProblem(regressor, pset, j, sweep_range, clearance)
        for key, solver in (("gapso", ga_pso), ("de", differential_evolution)):
            result = solver(problem.objective, problem.bounds)
            totals[key][0] += result.seconds
            totals[key][1] += result.objective
    metrics = {
        "estimate_s": metric(round(estimate_s, 4), "s", better="lower"),
        "estimate_samples": metric(int(samples)),
        "estimate_weighted_s": metric(round(weighted_s, 4), "s", better="lower"),
        "gapso_s": metric(round(totals["gapso"][0], 3), "s", better="lower"),
        "gapso_objective": metric(round(totals["gapso"][1], 6), "", better="lower"),
        "de_s": metric(round(totals["de"][0], 3), "s", better="lower"),
        "de_objective": metric(round(totals["de"][1], 6), "", better="lower"),
    }
    write_results("identification", metrics, command="python benchmarks/identification.py")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
