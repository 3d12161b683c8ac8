#!/usr/bin/env python3
"""How the arms move while a limit bites: the strike's hand twist scaled up, through RmcController.

For each speed factor, along the seed-000 strike at 500 Hz from the strike's start pose
(the aux arm at its start posture): how many cycles were exact, scaled (the job motion
slowed along its direction) or nearest (no scale fits: ``job_scale`` NaN); in each kind,
the share of joint-cycles where a joint's acceleration reverses sign (both above
0.5 rad/s^2: chatter between the acceleration limits), per arm; the largest held-row
momentum and the mean job scale. README, arm_balance, "Known limit" quotes it.

    python tools/limit_chatter.py [--speeds 1 2 3]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.rmc import RmcController, RmcInput
from humanoid_balance.core.strike_trajectory import (
    AUX_START_DEG,
    StrikeTrajectory,
    arm_pose,
)
from humanoid_balance.core.support import SupportPolygon
from humanoid_balance.resources import urdf_path

DT = 0.002
KINDS = ("exact", "scaled", "nearest")


def reversal_share(velocity: np.ndarray, kind: np.ndarray, threshold: float = 0.5) -> list[float]:
    """Per cycle kind, the share of joint-cycles whose acceleration reverses sign."""
    acc = np.diff(velocity, axis=0) / DT
    rev = (np.sign(acc[1:]) * np.sign(acc[:-1]) < 0) & (np.abs(acc[1:]) > threshold) \
        & (np.abs(acc[:-1]) > threshold)
    k = kind[2:]
    return [float(rev[k == i].mean()) if (k == i).any() else float("nan") for i in range(3)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speeds", type=float, nargs="+", default=[1.0, 2.0, 3.0])
    args = parser.parse_args()
    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    strike = StrikeTrajectory(model)
    pose = {**dict(zip(strike.joint_names, strike.initial, strict=True)),
            **arm_pose("left", AUX_START_DEG)}
    q0 = model.configuration(pose)
    polygon = SupportPolygon.from_model(model).update_at(model, model.neutral())
    for speed in args.speeds:
        controller = RmcController(model, support_polygon=polygon)
        controller.reset(q0)
        aux, job, kind, held, scale = [], [], [], [], []
        for t in np.arange(0.0, strike.duration, DT):
            out = controller.step(RmcInput(q0, job_twist=speed * strike.hand_twist(float(t), q0)),
                                  DT)
            aux.append(out.aux_velocity)
            job.append(out.job_velocity)
            kind.append(0 if out.job_exact and out.balance_exact else
                        2 if np.isnan(out.job_scale) else 1)
            held.append(float(np.abs(out.selected_momentum).max()))
            scale.append(out.job_scale)
        kinds = np.array(kind)
        counts = np.bincount(kinds, minlength=3)
        print(f"speed x{speed:g}: cycles " + ", ".join(f"{n} {c}" for n, c in
                                                      zip(KINDS, counts, strict=True)))
        for arm, velocity in (("aux", np.array(aux)), ("job", np.array(job))):
            shares = reversal_share(velocity, kinds)
            print(f"  {arm} arm, acceleration reversals per joint-cycle: " + ", ".join(
                f"{n} {100 * s:.1f} %" for n, s in zip(KINDS, shares, strict=True)))
        print(f"  largest held-row momentum {max(held):.2g} N m s, mean job scale "
              f"{np.nanmean(scale):.3f} (NaN in {int(np.isnan(scale).sum())} cycles)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
