#!/usr/bin/env python3
"""How the arms move while a limit bites: the strike's hand twist scaled up, through RmcController.

For each speed factor, along the seed-000 strike at 500 Hz from the strike's start pose
(the aux arm at its start posture), per regime of :class:`~humanoid_balance.core.rmc.RmcRegime`
(``RmcOutput.regime``: tracking, scaled, stopping job arm, turning): how many cycles were in
it; the share of joint-cycles where a joint's acceleration reverses sign (both above
0.5 rad/s^2: chatter between the acceleration limits), per arm; the largest held-row
momentum; the job scale's mean and range. README, arm_balance, "Known limit" quotes it.

``--beyond``: instead, ``test/core/test_rmc.py``'s twist 3x beyond the job arm's speed
limits (``-k beyond``: 60 cycles from its bent-arm pose), with the figures that test checks:
the hand's direction error, the held rows, the job scale and the regimes (README, "Figures",
arm balance).

    python tools/limit_chatter.py [--speeds 1 2 3] [--beyond]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.rmc import RmcController, RmcInput, RmcRegime
from humanoid_balance.core.strike_trajectory import (
    AUX_START_DEG,
    StrikeTrajectory,
    arm_pose,
)
from humanoid_balance.core.support import SupportPolygon
from humanoid_balance.resources import urdf_path

DT = 0.002
#: the regimes, in the order of the counts (a cycle's kind is its index here)
REGIMES = tuple(RmcRegime)
#: test/core/test_rmc.py's bent-arm pose and the direction of its twist beyond the limits
BEYOND_POSE = {"right_shoulder_pitch": -0.4, "right_shoulder_roll": -0.2, "right_elbow": 0.9,
               "right_wrist_pitch": 0.2, "left_shoulder_pitch": -0.2, "left_shoulder_roll": 0.3,
               "left_elbow": 0.6, "left_shoulder_yaw": 0.1, "waist_pitch": 0.05,
               "left_knee": 0.02}
BEYOND_UNIT = (0.6, -0.3, 0.5, 0.4, -0.3, 0.2)


def reversal_share(velocity: np.ndarray, kind: np.ndarray, threshold: float = 0.5) -> list[float]:
    """Per regime (index into :data:`REGIMES`), the share of joint-cycles whose acceleration
    reverses sign; NaN for a regime without such cycles."""
    acc = np.diff(velocity, axis=0) / DT
    rev = (np.sign(acc[1:]) * np.sign(acc[:-1]) < 0) & (np.abs(acc[1:]) > threshold) \
        & (np.abs(acc[:-1]) > threshold)
    k = kind[2:]
    return [float(rev[k == i].mean()) if (k == i).any() else float("nan")
            for i in range(len(REGIMES))]


def strike(model: RobotModel, speeds: list[float]) -> None:
    """The strike's hand twist times each speed factor: per regime, cycles, reversals, held rows."""
    trajectory = StrikeTrajectory(model)
    pose = {**dict(zip(trajectory.joint_names, trajectory.initial, strict=True)),
            **arm_pose("left", AUX_START_DEG)}
    q0 = model.configuration(pose)
    polygon = SupportPolygon.from_model(model).update_at(model, model.neutral())
    for speed in speeds:
        controller = RmcController(model, support_polygon=polygon)
        controller.reset(q0)
        aux, job, kind, held, scale = [], [], [], [], []
        for t in np.arange(0.0, trajectory.duration, DT):
            twist = speed * trajectory.hand_twist(float(t), q0)
            out = controller.step(RmcInput(q0, job_twist=twist), DT)
            aux.append(out.aux_velocity)
            job.append(out.job_velocity)
            kind.append(REGIMES.index(out.regime))
            held.append(float(np.abs(out.selected_momentum).max()))
            scale.append(out.job_scale)
        kinds, held_rows, scales = np.array(kind), np.array(held), np.array(scale)
        shares = {arm: reversal_share(np.array(v), kinds) for arm, v in (("aux", aux), ("job", job))}
        print(f"speed x{speed:g}: {len(kinds)} cycles, largest held-row momentum "
              f"{held_rows.max():.2g} N m s, job scale mean {scales.mean():.3f}")
        for i, regime in enumerate(REGIMES):
            mine = kinds == i
            if not mine.any():
                print(f"  {regime.value}: 0 cycles")
                continue
            print(f"  {regime.value}: {int(mine.sum())} cycles; acceleration reversals per "
                  f"joint-cycle aux {100 * shares['aux'][i]:.1f} %, job "
                  f"{100 * shares['job'][i]:.1f} %; held rows up to {held_rows[mine].max():.2g} "
                  f"N m s; job scale {scales[mine].min():.3g}-{scales[mine].max():.3g}")


def beyond(model: RobotModel) -> None:
    """test/core/test_rmc.py's twist 3x beyond the speed limits, with the figures it checks."""
    q_pose = model.configuration(BEYOND_POSE)
    controller = RmcController(model)
    controller.reset(q_pose)
    frame, data = model.frame_id("right_hand"), model.model.createData()
    job_v = model.v_index(controller.job_names)

    def jacobian() -> np.ndarray:
        q = q_pose.copy()
        q[model.q_index(controller.names)] = controller.commanded_positions
        return pin.computeFrameJacobian(model.model, data, q, frame,
                                        pin.LOCAL_WORLD_ALIGNED)[:, job_v]

    unit = np.array(BEYOND_UNIT)
    ratio = np.max(np.abs(np.linalg.pinv(jacobian()) @ unit)
                   / model.velocity_limits(controller.job_names))
    twist = 3.0 * unit / ratio  # its exact joint velocities are 3x the speed limits
    angles, held, scales, regimes = [], [], [], []
    for _ in range(60):
        achieved = jacobian() @ (out := controller.step(RmcInput(q_pose, job_twist=twist),
                                                        DT)).job_velocity
        cos = achieved @ twist / (np.linalg.norm(achieved) * np.linalg.norm(twist))
        angles.append(float(np.degrees(np.arccos(min(1.0, cos)))))
        held.append(float(np.max(np.abs(out.selected_momentum))))
        scales.append(out.job_scale)
        regimes.append(out.regime)
    counts = ", ".join(f"{r.value} {regimes.count(r)}" for r in REGIMES if r in regimes)
    print(f"twist 3x beyond the speed limits, 60 cycles: {counts}; hand direction error up to "
          f"{max(angles):.2g} deg, held rows up to {max(held):.2g} N m s, job scale "
          f"{min(scales):.3g}-{max(scales):.3g} (last {scales[-1]:.3g})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speeds", type=float, nargs="+", default=[1.0, 2.0, 3.0])
    parser.add_argument("--beyond", action="store_true",
                        help="test_rmc.py's twist 3x beyond the speed limits instead")
    args = parser.parse_args()
    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    if args.beyond:
        beyond(model)
    else:
        strike(model, args.speeds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
