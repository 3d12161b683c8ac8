"""What a MuJoCo strike records, per physics step, and the ZMP shift read from it.

:class:`SimRun` holds the series of one run of
:func:`~humanoid_balance.experiments.strike_sim.run_sim`: the ZMP measured from the
simulated ankle F/T sensors as ``zmp_estimator`` computes it (:func:`measured_zmp`), the
contact CoP, the CoM, the feet's forces, slip and yaw, the support polygon and the
momentum of each joint group. :func:`zmp_shift` splits the measured ZMP shift into its
static part (CoM ground projection) and its dynamic part (ZMP minus CoM projection).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from humanoid_balance.core.zmp import FootSample  # numpy only: cheap to import here

SIDES = ("left", "right")
#: joint groups whose measured momentum the MuJoCo runs record (``arms``: both arms)
MOMENTUM_GROUPS = ("arms", "waist", "legs", "neck")


@dataclass(frozen=True)
class SimRun:
    """Time series of one MuJoCo run, one row per physics step (1 kHz)."""

    speed_m_s: float
    selection: tuple[str, ...]
    balance: bool
    times_s: np.ndarray  # (n,)
    zmp_m: np.ndarray  # (n, 2) measured from the F/T sensors, world (NaN: no contact)
    cop_truth_m: np.ndarray  # (n, 2) from the contact forces, world
    com_xy_m: np.ndarray  # (n, 2)
    min_fz_n: np.ndarray  # (n,) smaller of the two feet's vertical forces
    slip_m: np.ndarray  # (n,) largest horizontal sole displacement since the start
    yaw_rad: np.ndarray  # (n,) largest sole yaw change since the start
    polygon_m: np.ndarray  # (N, 2) support polygon (FSR pads) in the world at the start
    #: group -> (m, 2) Lx, Ly about ``W`` [N m s] of that joint group's measured velocities, per
    #: control cycle (:data:`MOMENTUM_GROUPS`; fixed-base model at the measured joint positions):
    #: where the momentum RMC holds at zero in its commands goes in the simulated robot
    held_momentum_by_group: dict[str, np.ndarray]
    #: (n,) the job arm's trajectory phase (:data:`~humanoid_balance.core.strike_trajectory.PHASES`)
    #: of the control cycle each physics step belongs to
    phase: np.ndarray


def measured_zmp(sim: Any, estimator: Any) -> np.ndarray | None:
    """ZMP [m] (world x, y) of both feet from the ankle F/T sensors, as ``zmp_estimator`` computes it.

    :class:`~humanoid_balance.core.zmp.ZmpEstimator` (seed 001, eq. 3.24/3.25/3.27,
    foot weight below the sensors compensated, contact threshold with hysteresis),
    with the soles' poses in the simulation's world; None when no foot is in contact.
    """
    samples = {}
    for side in SIDES:
        force, torque = sim.foot_wrench(side)
        samples[side] = FootSample(sim.sole_transform(side), force, torque)
    out = estimator.step(samples)
    return None if out.zmp_in_world is None else out.zmp_in_world[:2]


def _yaw(rot: np.ndarray) -> float:
    return float(np.arctan2(rot[1, 0], rot[0, 0]))


def support_polygon_in_world(model: Any, soles_in_world: dict[str, np.ndarray]) -> np.ndarray:
    """The support polygon (N x 2, counter-clockwise) [m] of both feet at the soles' poses.

    The hull of the seed humanoid's contact points (its FSR pads, the only contacts in the
    simulation) from the one foot layout
    (:meth:`~humanoid_balance.core.foot_layout.FootLayout.support_polygon`).
    """
    from humanoid_balance.core.foot_layout import FootLayout

    return np.array(FootLayout.seed().support_polygon(model).update(soles_in_world))


@dataclass
class SimRecorder:
    """Per physics step: what :class:`SimRun` holds, appended as the simulation runs.

    Attributes:
        sole0: side -> world <- sole (4 x 4) at the start: slip and yaw count from there.
        polygon_m: the support polygon (N x 2) [m] in the world at the start.
    """

    sole0: dict[str, np.ndarray]
    polygon_m: np.ndarray
    times_s: list[float] = field(default_factory=list)
    zmp_m: list[Any] = field(default_factory=list)
    cop_truth_m: list[Any] = field(default_factory=list)
    com_xy_m: list[Any] = field(default_factory=list)
    min_fz_n: list[float] = field(default_factory=list)
    slip_m: list[float] = field(default_factory=list)
    yaw_rad: list[float] = field(default_factory=list)
    held_momentum: list[np.ndarray] = field(default_factory=list)
    phase: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, sim: Any, model: Any) -> SimRecorder:
        """A recorder of ``sim`` from its current sole poses (``model``: the humanoid's)."""
        sole0 = {s: sim.sole_transform(s) for s in SIDES}
        return cls(sole0, support_polygon_in_world(model, sole0))

    def record(self, sim: Any, estimator: Any, phase: str) -> None:
        """Read the sensors (ZMP estimator included) and the ground truth after one physics step
        of the trajectory's ``phase``."""
        z = measured_zmp(sim, estimator)
        self.phase.append(phase)
        cop = sim.cop()
        self.times_s.append(sim.time)
        self.zmp_m.append(z if z is not None else (np.nan, np.nan))
        self.cop_truth_m.append(cop[:2] if cop is not None else (np.nan, np.nan))
        self.com_xy_m.append(sim.com()[:2])
        self.min_fz_n.append(min(float(sim.foot_wrench(s)[0][2]) for s in SIDES))
        soles = {s: sim.sole_transform(s) for s in SIDES}
        self.slip_m.append(max(float(np.linalg.norm(soles[s][:2, 3] - self.sole0[s][:2, 3]))
                               for s in SIDES))
        self.yaw_rad.append(max(abs(_yaw(soles[s][:3, :3]) - _yaw(self.sole0[s][:3, :3]))
                                for s in SIDES))

    def run(self, *, speed_m_s: float, selection: Sequence[str], balance: bool) -> SimRun:
        """The recorded series as a :class:`SimRun` (float arrays)."""
        return SimRun(
            speed_m_s=speed_m_s, selection=tuple(selection), balance=balance,
            times_s=np.array(self.times_s, dtype=float), zmp_m=np.array(self.zmp_m, dtype=float),
            cop_truth_m=np.array(self.cop_truth_m, dtype=float),
            com_xy_m=np.array(self.com_xy_m, dtype=float),
            min_fz_n=np.array(self.min_fz_n, dtype=float),
            slip_m=np.array(self.slip_m, dtype=float), yaw_rad=np.array(self.yaw_rad, dtype=float),
            polygon_m=self.polygon_m, held_momentum_by_group={
                g: np.array([h[i] for h in self.held_momentum], dtype=float).reshape(-1, 2)
                for i, g in enumerate(MOMENTUM_GROUPS)},
            phase=np.array(self.phase, dtype=object))


def zmp_vs_contact_cop(run: SimRun) -> float:
    """Largest distance [m] between the sensor ZMP and the ground-truth contact CoP."""
    ok = np.all(np.isfinite(run.zmp_m), axis=1) & np.all(np.isfinite(run.cop_truth_m), axis=1)
    return float(np.max(np.hypot(*(run.zmp_m[ok] - run.cop_truth_m[ok]).T))) if ok.any() else \
        float("nan")


@dataclass(frozen=True)
class ZmpShift:
    """Peak distances of the measured ZMP from the standing position, and its least margin.

    Attributes:
        total_m: peak ZMP shift [m].
        static_m: peak shift of the CoM's ground projection [m].
        dynamic_m: peak shift of the ZMP relative to the CoM projection [m].
        min_margin_m: least distance [m] of the ZMP to the support polygon's edge (> 0 inside).
    """

    total_m: float
    static_m: float
    dynamic_m: float
    min_margin_m: float


def shift_series(run: SimRun) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distances [m] from standing per step: total ZMP, static (CoM), dynamic (ZMP minus CoM)."""
    zmp0 = run.zmp_m[0]
    com0 = run.com_xy_m[0]
    total = np.hypot(*(run.zmp_m - zmp0).T)
    static = np.hypot(*(run.com_xy_m - com0).T)
    dynamic = np.hypot(*((run.zmp_m - run.com_xy_m) - (zmp0 - com0)).T)
    return total, static, dynamic


def zmp_peak_by_phase(run: SimRun) -> dict[str, float]:
    """Peak total ZMP shift [m] from standing within each trajectory phase, in the run's order.

    Tells where a run's peak comes from: with RMC the strike itself moves the ZMP less than
    the slower moves to and from the ready pose, which the waist's and legs' servos let the
    upper body rock after.
    """
    total = shift_series(run)[0]
    peaks: dict[str, float] = {}
    for phase in dict.fromkeys(run.phase.tolist()):  # first-seen order
        inside = total[run.phase == phase]
        if np.isfinite(inside).any():
            peaks[phase] = float(np.nanmax(inside))
    return peaks


def zmp_shift(run: SimRun) -> ZmpShift:
    """Split of the measured ZMP shift into static (CoM projection) and dynamic parts."""
    from humanoid_balance.core.rmc import ConvexPolygon

    total, static, dynamic = shift_series(run)
    poly = ConvexPolygon(run.polygon_m)
    margins = [poly.margin(z) for z in run.zmp_m if np.all(np.isfinite(z))]
    return ZmpShift(float(np.nanmax(total)), float(np.nanmax(static)), float(np.nanmax(dynamic)),
                    float(min(margins)) if margins else float("nan"))

