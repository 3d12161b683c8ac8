#!/usr/bin/env python3
"""What each controller lever alone gives on the strike, against the shipped defaults (issue 37).

Each lever (:data:`LEVERS`) changes one thing of the defaults (held rows ``Lx, Ly``, the aux arm's
:data:`~humanoid_balance.core.rmc.AUX_READY_POSTURE`, the seed's phase durations): secondary rows,
a longer approach, return, or both at the same hand speed at the target (:data:`TIMING`), or an aux
ready posture that exists already (no search is run). ``pure`` (the paper's eq. 6: no posture task,
the aux arm from rest) is a reference, not a lever; ``lz_secondary_pure`` (as ``sweep_point`` runs
it) and ``pxpy_secondary_pure`` are secondary rows on it.

Per (lever, speed): the MuJoCo strike (``run_sim``'s defaults: RK4 at 0.25 ms) with RMC and
without (once per speed and timing), read by ``zmp_shift`` and the feet's slip and yaw; the
strike through the controller alone as ``sweep_point`` runs it (``run_model``): the held rows'
largest |Lx, Ly|, the limits reached (``failures``; with secondary rows, as ``sweep_point``
does, the aux arm's limits count only where the held rows are lost) and the first cycle a limit
changed the command (arm, joint, kind). Balanced (issue 37): ZMP margin >= 10 mm, slip <= the
no-RMC slip + 1 mm, sole yaw < 1 deg, held rows < 1e-9 N m s in the controller model. Then the
controller-only sweep 1.8-3.4 m/s per lever (``highest_balanced_speed`` over ``failures``).

The timing levers pass their phase durations to ``run_sim`` and ``run_model`` (``durations``);
each has its own no-RMC baseline at the same durations.

    python tools/strike_levers.py [--speeds 1.8 2.5 ...] [--levers defaults timing ...]
        [--out results/strike_levers] [--quick]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from humanoid_balance.core.foot_layout import FootLayout
from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.rmc import PAPER_SELECTION, selection_rows
from humanoid_balance.core.strike_trajectory import PAPER_DURATIONS, StrikeTrajectory
from humanoid_balance.experiments.aux_posture import HELD_ROWS_TOLERANCE
from humanoid_balance.experiments.strike import (
    SIM_PHYSICS,
    failures,
    highest_balanced_speed,
    run_model,
    run_sim,
    sweep_point,
    zmp_peak_by_phase,
    zmp_shift,
)
from humanoid_balance.experiments.strike_metrics import MAX_SOLE_YAW_DEG, SLIP_ALLOWANCE_M
from humanoid_balance.experiments.strike_model import first_limit, secondary_failures
from humanoid_balance.resources import urdf_path

RATE_HZ = 500.0
SPEEDS = (1.8, 2.5, 2.6, 2.8, 3.0, 3.2)
SWEEP = tuple(np.round(np.arange(1.8, 3.4 + 1e-9, 0.1), 3))
#: issue 37: the least ZMP margin to the support polygon of a balanced strike [m]
MIN_MARGIN_M = 0.010
#: the timing levers' durations [s] (to ready, wait, strike, return; the seed's 0.3, 0.3, 0.3,
#: 0.5): approach and return 1.5x the seed's, each alone; wait and strike as the seed's
TIMING = {"approach_return": (0.45, 0.3, 0.3, 0.75), "approach": (0.45, 0.3, 0.3, 0.5),
          "return": (0.3, 0.3, 0.3, 0.75)}
#: the aux posture before the search (d7f540d), and the one searched on the 1 ms simulation [deg]
HAND_PICKED_DEG = (-36.0, 7.0, 63.0, 89.0, -49.0, 58.0, 11.0)
SEARCHED_1MS_DEG = (-20.2, 9.4, 39.6, 71.1, -39.6, 77.3, 24.8)
LEVERS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "secondary_PxPy": {"secondary": ("Px", "Py")},
    "secondary_Lz": {"secondary": ("Lz",)},
    "secondary_PxPyLz": {"secondary": ("Px", "Py", "Lz")},
    **{f"timing_{k}": {"durations": d} for k, d in TIMING.items()},
    "aux_hand_picked": {"aux_posture_deg": HAND_PICKED_DEG},
    "aux_searched_1ms": {"aux_posture_deg": SEARCHED_1MS_DEG},
    "lz_secondary_pure": {"secondary": ("Lz",), "paper_form": True},
    "pure": {"paper_form": True},
    "pxpy_secondary_pure": {"secondary": ("Px", "Py"), "paper_form": True},
}


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def controller_kwargs(lever: dict[str, Any]) -> dict[str, Any]:
    """``run_sim`` / ``run_model`` keywords of a lever (the held rows always the paper's)."""
    deg = lever.get("aux_posture_deg")
    return {"selection": PAPER_SELECTION, "rate_hz": RATE_HZ,
            "secondary": selection_rows(lever["secondary"]) if lever.get("secondary") else (),
            "paper_form": bool(lever.get("paper_form", False)),
            "aux_posture": None if deg is None else tuple(np.deg2rad(deg)),
            "durations": lever.get("durations")}


def model_point(model: RobotModel, polygon: np.ndarray, lever: dict[str, Any],
                speed: float) -> dict[str, Any]:
    """The strike through the controller alone, as ``sweep_point`` runs S = Lx, Ly."""
    kw = controller_kwargs(lever)
    trajectory = StrikeTrajectory(model, target_speed=speed,
                                  durations=kw["durations"] or PAPER_DURATIONS)
    ratios = trajectory.limit_ratios()
    run = run_model(model, polygon, speed=speed, balance=True, extra=0.1, **kw)
    limit = first_limit(run, trajectory, RATE_HZ)
    held = float(np.max(np.abs(run.selected_momentum)))
    # with secondary rows, as sweep_point's Lz-secondary runs: the held rows decide, not the aux box
    fails = secondary_failures(run, ratios, HELD_ROWS_TOLERANCE) if kw["secondary"] else \
        failures(run, ratios)
    lost = np.nonzero(np.max(np.abs(run.selected_momentum), axis=1) >= HELD_ROWS_TOLERANCE)[0]
    kind, joint, ratio = ratios.worst
    return {"speed_m_s": float(speed), "failures": fails, "held_lxly_max_n_m_s": held,
            "held_rows_lost_cycles": int(lost.size),
            "held_rows_lost_from_s": float(run.times_s[lost[0]]) if lost.size else None,
            "limited_cycles": int(np.sum(~(run.job_exact & run.balance_exact))),
            "first_limited": None if limit is None else {**asdict(limit),
                                                         "text": limit.describe()},
            "job_trajectory_worst": {"kind": kind, "joint": joint, "ratio": round(ratio, 4)},
            "peak_dlz_dt_n_m": float(np.max(run.turn_torque_n_m)),
            "min_model_zmp_margin_mm": 1e3 * float(np.min(run.zmp_margin_m))}


def sim_figures(run: Any) -> dict[str, Any]:
    """The MuJoCo run's figures: ``zmp_shift``, where its peak is, slip, yaw, the arms' momentum."""
    shift, phases = zmp_shift(run), zmp_peak_by_phase(run)
    return {"peak_mm": 1e3 * shift.total_m, "static_mm": 1e3 * shift.static_m,
            "dynamic_mm": 1e3 * shift.dynamic_m, "min_margin_mm": 1e3 * shift.min_margin_m,
            "peak_phase": max(phases, key=phases.__getitem__),
            "slip_mm": 1e3 * float(np.max(run.slip_m)),
            "yaw_deg": float(np.rad2deg(np.max(run.yaw_rad))),
            "min_foot_fz_n": float(np.min(run.min_fz_n)),
            "arms_lxy_peak_n_m_s": float(np.max(np.hypot(*run.held_momentum_by_group["arms"].T)))}


def sim_run(model: RobotModel, lever: dict[str, Any], speed: float, balance: bool) -> dict[str, Any]:
    started = time.process_time()
    run = run_sim(model, speed=speed, balance=balance, **controller_kwargs(lever))
    return {**sim_figures(run), "cpu_s": round(time.process_time() - started, 2)}


def limit_text(point: dict[str, Any]) -> str:
    """``failures`` (aux joints counted, not named) and the first limited cycle's joints."""
    fails = [f"aux arm joint limit ({f.count(',') + 1} joints)" if f.startswith("aux arm") else f
             for f in point["failures"]]
    first = point["first_limited"]
    return (f"{'; '.join(fails) or 'none'}; first limited cycle "
            f"{'none' if first is None else first['text']}")


def model_sweep(model: RobotModel, polygon: np.ndarray, levers: list[str],
                speeds: tuple[float, ...], started: float) -> dict[str, Any]:
    """Per lever: the controller-only points, the highest balanced speed; ``sweep_point``'s
    failures for the defaults beside ours (the same rows, so they must agree)."""
    points: dict[str, dict[float, dict[str, Any]]] = {n: {} for n in levers}
    check: dict[float, list[str]] = {}
    for v in speeds:
        for name in levers:
            points[name][float(v)] = model_point(model, polygon, LEVERS[name], float(v))
        if "defaults" in levers:
            check[float(v)] = list(sweep_point(model, polygon, float(v), RATE_HZ).failures)
        say(f"[{time.perf_counter() - started:6.0f} s] model sweep {v:.1f} m/s done")
    out: dict[str, Any] = {"sweep_point_failures_defaults": check, "sweep_point_agrees": all(
        points["defaults"][v]["failures"] == f for v, f in check.items()) if check else None}
    for name in levers:
        namespaces: list[Any] = [SimpleNamespace(**p) for p in points[name].values()]
        best = highest_balanced_speed(namespaces, lambda p: p.failures)
        failing = next((p for p in points[name].values() if p["failures"]), None)
        out[name] = {"highest_balanced_speed_m_s": best.speed_m_s,
                     "limits_at_first_failing_speed": None if failing is None else limit_text(failing),
                     "points": points[name]}
    return out


def sim_rows(model: RobotModel, polygon: np.ndarray, levers: list[str], speeds: list[float],
             sweep: dict[str, Any], started: float) -> list[dict[str, Any]]:
    """Per speed and lever: the MuJoCo strike with RMC against the one without, the model's point."""
    baselines: dict[tuple[float, Any], dict[str, Any]] = {}
    rows = []
    for v in speeds:
        for name in levers:
            lever = LEVERS[name]
            key = (float(v), lever.get("durations"))
            for k in dict.fromkeys([(float(v), None), key]):  # the seed's timing's, the lever's
                if k not in baselines:
                    baselines[k] = sim_run(model, {"durations": k[1]}, v, balance=False)
                    say(f"[{time.perf_counter() - started:6.0f} s] no RMC {v:.1f} m/s "
                        f"(durations {k[1] or 'seed'}): {baselines[k]['peak_mm']:.2f} mm")
            off, rmc = baselines[key], sim_run(model, lever, v, balance=True)
            mp = sweep[name]["points"].get(round(float(v), 3)) or model_point(model, polygon, lever,
                                                                              float(v))
            checks = {"margin": rmc["min_margin_mm"] >= 1e3 * MIN_MARGIN_M,
                      "slip": rmc["slip_mm"] <= off["slip_mm"] + 1e3 * SLIP_ALLOWANCE_M,
                      "yaw": rmc["yaw_deg"] < MAX_SOLE_YAW_DEG,
                      "held_rows": mp["held_lxly_max_n_m_s"] < HELD_ROWS_TOLERANCE}
            rows.append({"lever": name, "speed_m_s": float(v), "rmc": rmc, "no_rmc": off,
                         "ratio": rmc["peak_mm"] / off["peak_mm"],
                         "ratio_vs_seed_timing_no_rmc": rmc["peak_mm"]
                         / baselines[(float(v), None)]["peak_mm"],
                         "model": mp, "checks": checks, "balanced": all(checks.values())})
            say(f"[{time.perf_counter() - started:6.0f} s] {name} {v:.1f} m/s: "
                f"{rmc['peak_mm']:.2f} / {off['peak_mm']:.2f} mm, balanced {all(checks.values())}")
    return rows


def cell(text: str) -> str:
    """``text`` in a markdown table's cell (its pipes escaped)."""
    return text.replace("|", "\\|")


def markdown(rows: list[dict[str, Any]], sweep: dict[str, Any], levers: list[str]) -> str:
    table = ["| lever | speed m/s | ratio | peak RMC / no-RMC mm | margin mm | slip RMC / no-RMC mm "
             "| yaw RMC / no-RMC deg | held max abs(Lx,Ly) N m s | binding limit (model) "
             "| balanced |", "|" + "---|" * 10]
    for r in rows:
        a, b = r["rmc"], r["no_rmc"]
        failed = ", ".join(k for k, ok in r["checks"].items() if not ok)
        table.append(
            f"| {r['lever']} | {r['speed_m_s']:.1f} | {r['ratio']:.4f} | {a['peak_mm']:.2f} / "
            f"{b['peak_mm']:.2f} | {a['min_margin_mm']:.2f} | {a['slip_mm']:.3f} / "
            f"{b['slip_mm']:.3f} | {a['yaw_deg']:.4f} / {b['yaw_deg']:.4f} | "
            f"{r['model']['held_lxly_max_n_m_s']:.2e} | {cell(limit_text(r['model']))} | "
            f"{'yes' if r['balanced'] else f'no ({failed})'} |")
    table += ["", "| lever | highest balanced speed (controller model) m/s "
              "| limits at the first failing speed |", "|---|---|---|"]
    table += [f"| {n} | {sweep[n]['highest_balanced_speed_m_s']:.1f} "
              f"| {cell(sweep[n]['limits_at_first_failing_speed'] or 'none')} |" for n in levers]
    return "\n".join(table) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speeds", type=float, nargs="+", default=list(SPEEDS),
                        help="hand speeds of the MuJoCo runs [m/s]")
    parser.add_argument("--levers", nargs="+", choices=list(LEVERS), default=list(LEVERS))
    parser.add_argument("--out", type=Path, default=Path("results/strike_levers"))
    parser.add_argument("--quick", action="store_true",
                        help="speeds 1.8 and 3.2 only, the sweep at 1.8, 2.2, 2.6, 3.0, 3.4 m/s")
    args = parser.parse_args()
    speeds = [1.8, 3.2] if args.quick else args.speeds
    started = time.perf_counter()
    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    layout = FootLayout.seed()  # the strike experiment's polygon: the hull of the FSR pads
    polygon = layout.support_polygon(model).update(layout.soles_in_world(model, model.neutral()))
    accepted = {n: list(controller_kwargs(LEVERS[n])["secondary"]) for n in args.levers}
    say(f"secondary rows accepted (selection_rows): {accepted}")
    sweep = model_sweep(model, polygon, args.levers,
                        (1.8, 2.2, 2.6, 3.0, 3.4) if args.quick else SWEEP, started)
    rows = sim_rows(model, polygon, args.levers, speeds, sweep, started)
    text = markdown(rows, sweep, args.levers)
    print(text)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parent.parent).stdout.strip()
    result = {"commit": commit, "command": " ".join([sys.executable, *sys.argv]),
              "physics": dict(SIM_PHYSICS), "rate_hz": RATE_HZ,
              "criteria": {"min_margin_mm": 1e3 * MIN_MARGIN_M, "held_rows_n_m_s": HELD_ROWS_TOLERANCE,
                           "slip_allowance_mm": 1e3 * SLIP_ALLOWANCE_M, "max_yaw_deg": MAX_SOLE_YAW_DEG},
              "levers": {n: LEVERS[n] for n in args.levers}, "secondary_accepted": accepted,
              "rows": rows, "sweep": sweep, "wall_s": round(time.perf_counter() - started, 1)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "strike_levers.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "strike_levers.md").write_text(text)
    say(f"wrote {args.out / 'strike_levers.json'} in {result['wall_s']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
