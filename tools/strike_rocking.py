#!/usr/bin/env python3
"""Where the strike's remaining ZMP shift with RMC comes from, and the physics it needs.

Runs the experiment's MuJoCo strike with RMC (``run_sim``, the paper's speed and rows) and
prints, every 25 ms of the job arm's motion: the measured ZMP's shift from standing, the
base's roll and pitch from standing, the angular momentum (Lx, Ly) about W that the
joints' measured velocities carry (arms, waist, legs and neck together: what the
encoders see) and MuJoCo's whole-body angular momentum about W (the base's motion
included). Then, for the wait (0.3-0.6 s, the arms still): the largest of each and the
base's pitch range. ``--standing S``: instead, the robot put at the strike's start pose
(``HumanoidSim.reset``) and left standing for S seconds, its centre of mass's velocity
every 0.1 s (the rocking mode alone). README, "Arm balance", quotes the tool.

``--bodies``: instead of the joints' and the base's columns, MuJoCo's Lx, Ly about W split
by bodies (arms, torso, pelvis, legs: :data:`BODY_GROUPS`), which shows what rocks.

``--settle S``: the strike starts S seconds after the reset (the experiment's 0.5 s by
default); the peak is printed beside the run without RMC's.

``--plants [NAME ...]``: instead, the strike with and without RMC on stiffer robots than the
default one (:data:`PLANTS`: the sole pads' contact, the legs' and the waist's servos, each
alone and together; all of them without names): how much of the remaining ratio the
compliance of the plant makes. The controller is the same in every row.

``--convergence``: instead, the strike with and without RMC on the default robot at each of
:data:`PHYSICS` (MuJoCo's integrator and step): the figures' dependence on the numerics,
which chose the experiment's :data:`~humanoid_balance.experiments.strike.SIM_PHYSICS`.

    python tools/strike_rocking.py [--until 1.0] [--settle 0.5] [--bodies] [--standing 4]
        [--plants [NAME ...]] [--convergence]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.rmc import PAPER_SELECTION
from humanoid_balance.experiments.strike import (
    SIDES,
    SIM_PHYSICS,
    SimRun,
    run_sim,
    zmp_peak_by_phase,
    zmp_shift,
)
from humanoid_balance.resources import urdf_path
from humanoid_balance.sim.humanoid import (
    DEFAULT_CONTACT_TIMECONST,
    DEFAULT_GAINS,
    HumanoidSim,
    ServoGains,
)

#: The stiffened plants: contact time constant [s] (MuJoCo ``solref``), and the factor on the
#: legs' and the waist's servo gains (kp and kv both).
PLANTS: dict[str, tuple[float, float, float]] = {
    "default": (DEFAULT_CONTACT_TIMECONST, 1.0, 1.0),
    "contact": (0.002, 1.0, 1.0),
    "legs": (DEFAULT_CONTACT_TIMECONST, 10.0, 1.0),
    "waist": (DEFAULT_CONTACT_TIMECONST, 1.0, 10.0),
    "contact+legs": (0.002, 10.0, 1.0),
    "contact+waist": (0.002, 1.0, 10.0),
    "legs+waist": (DEFAULT_CONTACT_TIMECONST, 10.0, 10.0),
    "stiff": (0.002, 10.0, 10.0),
}


#: The numerics compared by ``--convergence``: MuJoCo's integrator and physics step [s].
PHYSICS: tuple[tuple[str, float], ...] = (
    ("implicitfast", 0.001), ("implicitfast", 0.0005), ("implicitfast", 0.00025),
    ("implicitfast", 0.000125), ("implicitfast", 0.0000625),
    ("rk4", 0.0005), ("rk4", 0.00025), ("rk4", 0.000125))


#: The physics of ``--plants``: RK4 at the experiment's 0.25 ms is unstable with servos ten
#: times as stiff (``HumanoidSim`` refuses it), ``implicitfast`` at 0.0625 ms is stable with
#: any and within 0.2 mm of the experiment's peak on the default robot (``--convergence``).
PLANT_PHYSICS: dict[str, Any] = {"integrator": "implicitfast", "timestep": 0.0000625}


def plant_options(name: str) -> dict[str, Any]:
    """``run_sim``'s ``sim_options`` for one of :data:`PLANTS` (on :data:`PLANT_PHYSICS`)."""
    timeconst, legs, waist = PLANTS[name]
    gains = []
    for prefix, g in DEFAULT_GAINS:
        factor = legs if prefix == "" else waist if prefix == "waist_" else 1.0
        gains.append((prefix, ServoGains(g.kp * factor, g.kv * factor, g.armature)))
    return {**PLANT_PHYSICS, "contact_timeconst": timeconst, "gains": tuple(gains)}


def _with_and_without(model: RobotModel, settle: float,
                      options: dict[str, Any]) -> tuple[SimRun, SimRun]:
    """The paper's strike with RMC and without it on the simulation ``options`` make."""
    with_rmc, without = (run_sim(model, speed=None, selection=PAPER_SELECTION, balance=balance,
                                 rate_hz=500.0, settle=settle, sim_options=options)
                         for balance in (True, False))
    return with_rmc, without


def plants(model: RobotModel, names: list[str], settle: float) -> int:
    """The strike's peak ZMP shift with and without RMC on each plant."""
    print(f"{'plant':<14} {'contact [s]':>11} {'legs x':>6} {'waist x':>7} "
          f"{'with RMC [mm]':>13} {'without [mm]':>12} {'ratio':>7}")
    for name in names:
        peaks = [zmp_shift(run).total_m
                 for run in _with_and_without(model, settle, plant_options(name))]
        timeconst, legs, waist = PLANTS[name]
        print(f"{name:<14} {timeconst:11.3f} {legs:6g} {waist:7g} {peaks[0] * 1e3:13.2f} "
              f"{peaks[1] * 1e3:12.2f} {peaks[0] / peaks[1]:7.4f}", flush=True)
    return 0


def convergence(model: RobotModel, settle: float) -> int:
    """The strike's peak ZMP shift with and without RMC at each of :data:`PHYSICS`."""
    print(f"{'integrator':<12} {'step [ms]':>9} {'with RMC [mm]':>13} {'without [mm]':>12} "
          f"{'ratio':>7}  peak with RMC in")
    for integrator, step in PHYSICS:
        options = {"integrator": integrator, "timestep": step}
        runs = _with_and_without(model, settle, options)
        peaks = [zmp_shift(run).total_m for run in runs]
        phases = zmp_peak_by_phase(runs[0])
        where = max(phases, key=lambda phase: phases[phase])
        mark = "  (the experiment's)" if options == dict(SIM_PHYSICS) else ""
        print(f"{integrator:<12} {step * 1e3:9.4f} {peaks[0] * 1e3:13.2f} {peaks[1] * 1e3:12.2f} "
              f"{peaks[0] / peaks[1]:7.4f}  {where}{mark}", flush=True)
    return 0


def _roll_pitch(quat_wxyz: np.ndarray) -> tuple[float, float]:
    w, x, y, z = quat_wxyz
    return (float(np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))),
            float(np.arcsin(np.clip(2 * (w * y - z * x), -1.0, 1.0))))


#: MuJoCo's whole-body momentum split by bodies: each group's subtree roots (the torso's group
#: is the waist's subtree less the arms: waist link, torso, neck, head; the pelvis's is the
#: whole robot less the rest).
BODY_GROUPS = {"arms": ("left_shoulder_pitch_link", "right_shoulder_pitch_link"),
               "torso": ("waist_link",), "legs": ("left_hip_yaw_link", "right_hip_yaw_link")}
#: The columns of ``Observer.by_body``.
GROUP_NAMES = ("arms", "torso", "pelvis", "legs")


class Observer:
    """After each physics step: the base's roll and pitch [rad], the whole-body Lx, Ly about W,
    and their split by :data:`BODY_GROUPS` (arms, torso, pelvis, legs)."""

    def __init__(self) -> None:
        self.w: np.ndarray | None = None
        self.times: list[float] = []  # [s], the simulation's, after each physics step
        self.rows: list[tuple[float, float, float, float]] = []
        self.by_body: list[np.ndarray] = []  # (4, 2): arms, torso, pelvis, legs
        self._roots: dict[str, list[int]] = {}

    def _about_w(self, sim: Any, body: int) -> np.ndarray:
        """The angular momentum about W of ``body``'s subtree (after ``mj_subtreeVel``)."""
        m, d = sim.model, sim.data
        momentum = d.subtree_linvel[body] * m.body_subtreemass[body]
        return d.subtree_angmom[body] + np.cross(d.subtree_com[body] - self.w, momentum)

    def __call__(self, sim: Any) -> None:
        import mujoco

        m, d = sim.model, sim.data
        if self.w is None:  # W: the middle between the soles, on the floor, at the start
            self.w = np.mean([sim.sole_transform(s)[:3, 3] for s in SIDES], axis=0)
            self.w[2] = 0.0
            self._roots = {group: [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)
                                   for name in names] for group, names in BODY_GROUPS.items()}
        mujoco.mj_subtreeVel(m, d)
        root = 1  # the floating base: its subtree is the whole robot
        angular = self._about_w(sim, root)
        roll, pitch = _roll_pitch(d.qpos[3:7])
        self.times.append(float(d.time))
        self.rows.append((roll, pitch, float(angular[0]), float(angular[1])))
        arms, upper, legs = (sum(self._about_w(sim, b) for b in self._roots[group])
                             for group in BODY_GROUPS)
        self.by_body.append(np.array([arms, upper - arms, angular - upper - legs, legs])[:, :2])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--until", type=float, default=1.0, help="last time printed [s]")
    parser.add_argument("--settle", type=float, default=0.5,
                        help="standing time before the strike [s] (the experiment's: 0.5)")
    parser.add_argument("--standing", type=float, default=0.0,
                        help="instead: stand this long [s] at the start pose, no strike")
    parser.add_argument("--bodies", action="store_true",
                        help="print MuJoCo's Lx, Ly about W by bodies (arms, torso, pelvis, legs) "
                        "instead of the joints' and the base's")
    parser.add_argument("--plants", nargs="*", choices=list(PLANTS), default=None,
                        metavar="NAME", help="instead: the peak with and without RMC on these "
                        f"plants ({', '.join(PLANTS)}; none named: all)")
    parser.add_argument("--convergence", action="store_true",
                        help="instead: the peak with and without RMC at several MuJoCo "
                        "integrators and steps")
    args = parser.parse_args()
    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    if args.convergence:
        return convergence(model, args.settle)
    if args.plants is not None:
        return plants(model, args.plants or list(PLANTS), args.settle)
    if args.standing > 0.0:
        return standing(model, args.standing)
    observer = Observer()
    run = run_sim(model, speed=None, selection=PAPER_SELECTION, balance=True, rate_hz=500.0,
                  settle=args.settle, observer=observer)
    without = run_sim(model, speed=None, selection=PAPER_SELECTION, balance=False, rate_hz=500.0,
                      settle=args.settle)
    t = run.times_s - run.times_s[0]
    zmp = (run.zmp_m - run.zmp_m[0]) * 1e3
    # the observer's rows at the sensors' readings (it sees every physics step), the joints'
    # momentum at the control cycles'
    at = np.searchsorted(np.array(observer.times), run.times_s - 1e-9)
    base = np.array(observer.rows)[at]
    tilt = (base[:, :2] - base[0, :2]) * 1e3
    readings_per_cycle = len(t) // len(run.held_momentum_by_group["arms"])
    joints = sum(run.held_momentum_by_group.values())
    joints = np.repeat(joints, readings_per_cycle, axis=0)[:len(t)]
    bodies = np.array(observer.by_body)[at]
    if args.bodies:
        print(f"{'t [s]':>6} {'phase':<8} {'ZMP shift x, y [mm]':>20}   MuJoCo's Lx, Ly about W "
              "[N m s]: " + ", ".join(f"{g:>13}" for g in GROUP_NAMES))
    else:
        print(f"{'t [s]':>6} {'phase':<8} {'ZMP shift x, y [mm]':>20} "
              f"{'base roll, pitch [mrad]':>24} {'joints Lx, Ly [N m s]':>22} "
              f"{'whole body Lx, Ly':>18}")
    for tk in np.arange(0.0, args.until + 1e-9, 0.025):
        i = min(int(np.searchsorted(t, tk)), len(t) - 1)
        head = f"{t[i]:6.3f} {run.phase[i]:<8} {zmp[i, 0]:9.2f} {zmp[i, 1]:9.2f}   "
        if args.bodies:
            print(head + " " * 31 + "  ".join(f"{lx:6.3f} {ly:6.3f}" for lx, ly in bodies[i]))
        else:
            print(head + f"{tilt[i, 0]:10.3f} {tilt[i, 1]:10.3f}   {joints[i, 0]:9.3f} "
                  f"{joints[i, 1]:9.3f}   {base[i, 2]:8.3f} {base[i, 3]:8.3f}")
    wait = run.phase == "wait"
    pitch = tilt[wait, 1]
    peak, peak_without = zmp_shift(run).total_m, zmp_shift(without).total_m
    print(f"settled {args.settle:g} s: peak ZMP shift {peak * 1e3:.2f} mm, without RMC "
          f"{peak_without * 1e3:.2f} mm (ratio {peak / peak_without:.4f})")
    print(f"in the wait (arms still): largest |joints' Lx, Ly| "
          f"{np.abs(joints[wait]).max():.3f} N m s, largest |whole-body Lx, Ly| "
          f"{np.abs(base[wait, 2:]).max():.3f} N m s; base pitch {pitch.min():.3f} to "
          f"{pitch.max():.3f} mrad")
    largest = np.abs(bodies[wait]).max(axis=(0, 2))
    print("in the wait, MuJoCo's largest |Lx, Ly| about W by bodies: " + ", ".join(
        f"{g} {v:.3f}" for g, v in zip(GROUP_NAMES, largest, strict=True)) + " N m s")
    return 0


def standing(model: RobotModel, seconds: float) -> int:
    """The robot at the strike's start pose, standing: its CoM's velocity every 0.1 s."""
    import mujoco

    from humanoid_balance.core.rmc import RmcController
    from humanoid_balance.core.strike_trajectory import StrikeTrajectory

    strike = StrikeTrajectory(model)
    pose = {**dict(zip(strike.joint_names, strike.initial, strict=True)),
            **(RmcController(model).aux_posture_positions or {})}
    sim = HumanoidSim(**SIM_PHYSICS)
    sim.reset(pose)
    print(f"{'t [s]':>5} {'CoM velocity x, y, z [mm/s]':>30}")
    for k in range(1, round(seconds / 0.1) + 1):
        sim.settle(0.1)
        mujoco.mj_subtreeVel(sim.model, sim.data)
        v = sim.data.subtree_linvel[1] * 1e3
        print(f"{0.1 * k:5.1f} {v[0]:9.2f} {v[1]:9.2f} {v[2]:9.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
