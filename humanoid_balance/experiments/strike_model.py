"""The seed-000 strike at model level: the controller alone, its commands integrated by the model.

:func:`run_model` runs the strike of :mod:`humanoid_balance.core.strike_trajectory`
through :class:`~humanoid_balance.core.rmc.RmcController` (no physics) and returns a
:class:`ModelRun`: the momentum of job arm, aux arm and total about ``W`` and the
balance indicators of seed 000 section 3.2, one row per control cycle;
:func:`failures` names the limits a run reaches. :func:`strike_controller` and
:func:`strike_setup` are shared with the MuJoCo runs
(:mod:`humanoid_balance.experiments.strike_sim`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class ModelRun:
    """Time series of one model-level run (controller only), one row per control cycle.

    Momentum rows are ``[Px, Py, Pz, Lx, Ly, Lz]`` about ``W`` [N s, N m s]; joint
    columns are the job arm's then the aux arm's (``names``).
    """

    speed_m_s: float
    selection: tuple[str, ...]
    balance: bool
    times_s: np.ndarray  # (n,)
    names: tuple[str, ...]
    position_rad: np.ndarray  # (n, 14) commanded at the start of the cycle
    velocity_rad_s: np.ndarray  # (n, 14)
    momentum_job: np.ndarray  # (n, 6)
    momentum_aux: np.ndarray  # (n, 6)
    momentum: np.ndarray  # (n, 6)
    momentum_rate: np.ndarray  # (n, 6) [N, N m]
    selected_momentum: np.ndarray  # (n, k) S [P; L]
    model_zmp_m: np.ndarray  # (n, 2) in W
    zmp_margin_m: np.ndarray  # (n,) model ZMP to the support polygon's edge, > 0 inside
    turn_torque_n_m: np.ndarray  # (n,) |dLz/dt|
    turn_margin_n_m: np.ndarray  # (n,)
    slide_margin_n: np.ndarray  # (n,)
    lift_margin_n: np.ndarray  # (n,)
    job_exact: np.ndarray  # (n,) bool
    balance_exact: np.ndarray  # (n,) bool
    saturated: tuple[tuple[str, ...], ...]  # joints whose limits changed the command, per cycle
    step_s: np.ndarray  # (n,) wall-clock time of the controller step (machine dependent)
    twist_error: np.ndarray  # (n,) max |commanded - achieved job twist| [m/s, rad/s]
    limits: Any = None  # JointLimits of names: the controller's box every cycle
    position_margin: float = 0.0  # [rad] the box keeps from the position limits


@dataclass(frozen=True)
class _ModelCycle:
    """One cycle's record: the controller output and what is derived from it at that time."""

    time_s: float
    output: Any  # RmcOutput
    start_position_rad: np.ndarray
    step_s: float


def _model_run(cycles: list[_ModelCycle], *, speed_m_s: float, selection: Sequence[str],
               balance: bool, controller: Any) -> ModelRun:
    """Stack the cycles' records into a :class:`ModelRun`."""
    def stack(pick: Callable[[Any], Any]) -> np.ndarray:
        return np.array([pick(c.output) for c in cycles])

    return ModelRun(
        speed_m_s=speed_m_s, selection=tuple(selection), balance=balance,
        times_s=np.array([c.time_s for c in cycles]), names=controller.names,
        position_rad=np.array([c.start_position_rad for c in cycles]),
        velocity_rad_s=stack(lambda o: o.velocity),
        momentum_job=stack(lambda o: o.momentum_job), momentum_aux=stack(lambda o: o.momentum_aux),
        momentum=stack(lambda o: o.momentum), momentum_rate=stack(lambda o: o.momentum_rate),
        selected_momentum=stack(lambda o: o.selected_momentum),
        model_zmp_m=stack(lambda o: o.indicators.model_zmp),
        zmp_margin_m=stack(lambda o: o.indicators.zmp_margin),
        turn_torque_n_m=stack(lambda o: o.indicators.turn_torque),
        turn_margin_n_m=stack(lambda o: o.indicators.turn_margin),
        slide_margin_n=stack(lambda o: o.indicators.slide_margin),
        lift_margin_n=stack(lambda o: o.indicators.lift_off_margin),
        job_exact=stack(lambda o: o.job_exact), balance_exact=stack(lambda o: o.balance_exact),
        saturated=tuple(c.output.saturated_joints for c in cycles),
        step_s=np.array([c.step_s for c in cycles]),
        twist_error=np.array([float(np.max(np.abs(c.output.twist_error))) for c in cycles]),
        limits=controller.limits, position_margin=controller.position_margin)


def strike_controller(model: Any, *, job_arm: str, selection: Sequence[str],
                      secondary: Sequence[str], balance: bool, paper_form: bool,
                      support_polygon: np.ndarray | None = None,
                      aux_posture: Sequence[float] | None = None) -> Any:
    """The controller of a run: the default one, or the paper's pure form (no aux posture).

    ``aux_posture`` [rad] (right-arm signs): the aux arm's ready posture instead of the
    controller's default (:data:`~humanoid_balance.core.rmc.AUX_READY_POSTURE`).
    """
    from humanoid_balance.core.rmc import RmcController

    controller = RmcController(model, job_arm=job_arm, selection=selection, secondary=secondary,
                               support_polygon=support_polygon)
    if aux_posture is not None:
        controller.set_aux_posture(aux_posture)
    if paper_form:
        controller.set_aux_posture(controller.aux_posture, gain=0.0)
    controller.balance_enabled = balance
    return controller


def strike_setup(model: Any, speed: float | None, controller: Any, start_time: float = 0.0,
                 job_arm: str = "right", durations: Sequence[float] | None = None,
                 ) -> tuple[Any, dict[str, float]]:
    """The strike trajectory and the standing pose: job arm at its start, aux arm ready.

    ``durations``: the trajectory's phases (to ready, wait, strike, return) [s]; None: the
    seed's (:data:`~humanoid_balance.core.strike_trajectory.PAPER_DURATIONS`).

    The aux arm stands at the controller's posture (where its posture task has brought
    it before the strike, as after ``arm_balance``'s activation), or at rest
    (:data:`~humanoid_balance.core.strike_trajectory.AUX_START_DEG`) without RMC or
    without a posture task (the paper's pure form).
    """
    from humanoid_balance.core.strike_trajectory import (
        AUX_START_DEG,
        PAPER_DURATIONS,
        StrikeTrajectory,
        arm_pose,
    )

    trajectory = StrikeTrajectory(model, arm=job_arm, target_speed=speed, start_time=start_time,
                                  durations=PAPER_DURATIONS if durations is None else durations)
    aux_arm = "left" if job_arm == "right" else "right"
    ready = controller.aux_posture_positions if controller.balance_enabled else None
    pose = {**dict(zip(trajectory.joint_names, trajectory.initial, strict=True)),
            **(arm_pose(aux_arm, AUX_START_DEG) if ready is None else ready)}
    return trajectory, pose


def run_model(model: Any, polygon: np.ndarray | None, *, speed: float | None,
              selection: Sequence[str],
              balance: bool, rate_hz: float, extra: float = 0.3,
              twist_mode: bool = False, secondary: Sequence[str] = (),
              job_arm: str = "right", paper_form: bool = False,
              aux_posture: Sequence[float] | None = None,
              durations: Sequence[float] | None = None) -> ModelRun:
    """The strike through the controller alone (the model's configuration integrates the commands).

    Args:
        model: the humanoid (fixed base, ``world_frame="W"``).
        polygon: support polygon (N x 2) in ``W`` [m] for the model ZMP's margin, or None
            (no margin: ``zmp_margin_m`` is NaN).
        speed: hand speed at the target [m/s]; None: the paper's.
        selection: momentum rows held at zero.
        balance: False: the aux arm holds still (no RMC).
        rate_hz: controller rate [Hz].
        extra: time run after the trajectory's end [s].
        twist_mode: drive the job arm by the reference hand twist (eq. 3) instead
            of the reference joint velocities.
        secondary: rows reduced best effort after ``selection`` (task priority,
            see :class:`~humanoid_balance.core.rmc.RmcController`).
        job_arm: the striking arm, ``right`` or ``left``.
        paper_form: the paper's pure eq. 6 (no aux posture task, aux arm from rest)
            instead of the controller's defaults.
        aux_posture: the aux arm's ready posture [rad] (right-arm signs, 7 angles);
            None: the controller's default.
        durations: the job trajectory's phases [s]; None: the seed's (:func:`strike_setup`).
    """
    from humanoid_balance.core.rmc import RmcInput

    controller = strike_controller(model, job_arm=job_arm, selection=selection,
                                   secondary=secondary, balance=balance, paper_form=paper_form,
                                   support_polygon=polygon, aux_posture=aux_posture)
    trajectory, pose = strike_setup(model, speed, controller, job_arm=job_arm,
                                    durations=durations)
    q0 = model.configuration(pose)
    controller.reset(q0)
    dt = 1.0 / rate_hz
    cycles: list[_ModelCycle] = []
    for k in range(round((trajectory.duration + extra) / dt)):
        t = k * dt
        if twist_mode:
            inputs = RmcInput(q0, job_twist=trajectory.hand_twist(t, q0))
        else:
            inputs = RmcInput(q0, job_joint_velocities=trajectory.sample(t).velocity)
        t0 = time.perf_counter()
        out = controller.step(inputs, dt)
        step_s = time.perf_counter() - t0
        cycles.append(_ModelCycle(t, out, out.position - out.velocity * dt, step_s))
    return _model_run(cycles, speed_m_s=float(trajectory.target_speed), selection=selection,
                      balance=balance, controller=controller)


def secondary_failures(run: ModelRun, trajectory_ratios: Any,
                       tolerance: float = 1e-9) -> list[str]:
    """:func:`failures` of a run with secondary rows: the aux arm's limits, which may cost only
    the secondary rows, do not count; ``held rows not held`` where ``|S [P; L]|`` reached
    ``tolerance`` [N m s, N s]."""
    held = float(np.max(np.abs(run.selected_momentum))) < tolerance
    return [f for f in failures(run, trajectory_ratios) if not f.startswith("aux arm")] + (
        [] if held else ["held rows not held"])


def failures(run: ModelRun, trajectory_ratios: Any) -> list[str]:
    """The limits a model-level run reaches (empty: balanced within every limit)."""
    out: list[str] = []
    kind, joint, ratio = trajectory_ratios.worst
    job_names, aux_names = set(run.names[:7]), set(run.names[7:])
    limited = [set(s) for s, ok in zip(run.saturated, run.job_exact, strict=True) if not ok]
    if ratio > 1.0 or any(s & job_names for s in limited):
        out.append(f"job arm joint {kind} ({joint})")
    aux_limited = [set(s) for s, ok, bal in zip(run.saturated, run.job_exact, run.balance_exact,
                                                 strict=True) if not (ok and bal)]
    if not run.balance_exact.all() or any(s & aux_names for s in aux_limited):
        joints = sorted({n for s in aux_limited for n in s & aux_names})
        out.append(f"aux arm joint limit ({', '.join(joints)})")
    if np.min(run.lift_margin_n) <= 0:
        out.append("lift-off")
    if np.min(run.slide_margin_n) <= 0:
        out.append("sliding friction")
    if np.min(run.turn_margin_n_m) <= 0:
        out.append("turning friction (|dLz/dt| > mu C/2 G)")
    if np.min(run.zmp_margin_m) <= 0:
        out.append("model ZMP leaves the support polygon")
    return out


@dataclass(frozen=True)
class BindingJoint:
    """A joint whose limit changed a cycle's command, and which of its limits binds.

    Attributes:
        arm: ``job`` or ``aux``.
        joint: its name.
        kind: ``position`` (the speed it can still brake from before the limit), ``velocity``
            or ``acceleration``: the bound the command comes nearest to.
        ratio: the command's share of that bound (1: at it).
    """

    arm: str
    joint: str
    kind: str
    ratio: float


@dataclass(frozen=True)
class FirstLimit:
    """The first cycle of a model-level run whose command a limit changed.

    Attributes:
        t_s: its time [s] from the trajectory's start.
        phase: the job trajectory's phase then.
        joints: the joints at a bound of their velocity box, job arm first.
    """

    t_s: float
    phase: str
    joints: tuple[BindingJoint, ...]

    def describe(self, shown: int = 2) -> str:
        """``t s phase: arm joint kind, ...`` (``shown`` joints, then how many more)."""
        named = [f"{j.arm} {j.joint} {j.kind}" for j in self.joints]
        more = f" +{len(named) - shown} more" if len(named) > shown else ""
        return (f"{self.t_s:.3f} s {self.phase}: "
                f"{', '.join(named[:shown]) or 'look-ahead (no joint at its bound)'}{more}")


def first_limit(run: ModelRun, trajectory: Any, rate_hz: float) -> FirstLimit | None:
    """The first cycle of ``run`` whose command a limit changed (None: none did), each joint
    of it at its box's bound named with the limit that binds: the largest of
    :func:`~humanoid_balance.core.joint_limits.bound_shares` for the box the controller built
    that cycle (its limits and margin, from the commanded positions half a step of the last
    velocity ahead, as :meth:`~humanoid_balance.core.rmc.RmcController.step` does)."""
    from humanoid_balance.core.joint_limits import bound_shares

    limited = ~(run.job_exact.astype(bool) & run.balance_exact.astype(bool))
    if not limited.any():
        return None
    k, dt = int(np.argmax(limited)), 1.0 / rate_hz
    qd_prev = run.velocity_rad_s[k - 1] if k else np.zeros(len(run.names))
    q = run.position_rad[k] + 0.5 * qd_prev * dt  # position_rad: commanded at the cycle's start
    shares = bound_shares(run.limits, q, qd_prev, run.velocity_rad_s[k], dt, run.position_margin)
    joints = []
    for name in run.saturated[k]:
        j = run.names.index(name)
        kind = max(shares, key=lambda kind: float(shares[kind][j]))
        joints.append(BindingJoint("job" if j < len(run.names) // 2 else "aux", name, kind,
                                   round(float(shares[kind][j]), 4)))
    t = float(run.times_s[k])
    return FirstLimit(t, trajectory.sample(t).phase, tuple(joints))
