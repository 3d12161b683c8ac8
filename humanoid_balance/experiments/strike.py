"""The seed-000 fast strike with and without RMC: model-level and MuJoCo runs, sweeps, results.

Runs the strike of :mod:`humanoid_balance.core.strike_trajectory` (right arm,
hand at 1.8 m/s) through :class:`~humanoid_balance.core.rmc.RmcController`:

1. model level (no physics, :func:`run_model`): the momentum of job arm, aux
   arm and total about ``W``, the balance indicators of seed 000 section 3.2,
   with RMC (S = Lx, Ly) and without (aux arm still); RMC both with the
   controller's defaults (the aux arm stands at its ready posture,
   :data:`~humanoid_balance.core.rmc.AUX_READY_POSTURE`, where holding Lx, Ly adds
   little Lz) and in the paper's pure form (eq. 6 alone, aux arm from rest,
   ``paper_form=True``, i.e. ``posture_gain=0``);
2. physics level (:func:`run_sim`): the same commands to the MuJoCo humanoid
   (:class:`~humanoid_balance.sim.humanoid.HumanoidSim`, in-process, RK4 at 0.25 ms
   (:data:`SIM_PHYSICS`), sensors at 1 kHz, controller at ``rate_hz``), the ZMP
   measured from the simulated ankle F/T sensors (seed 001, eq. 3.24 per foot, both
   feet combined), foot slip and vertical forces; the ZMP shift split into its static
   part (CoM ground projection) and its dynamic part (ZMP minus CoM projection),
   :func:`zmp_shift`;
3. what helps when the turning margin runs out (in the pure form): Lz added to S
   (equal rows), Lz as a secondary objective in the null space of S = Lx, Ly (task
   priority), a slower strike;
4. the speed sweep 1.0..4.0 m/s at model level (plus a few MuJoCo runs),
   :func:`speed_sweep`: the highest balanced speed and which limit comes first.

:func:`run_strike_experiment` runs all of it and returns a :class:`StrikeResults`;
:func:`strike_metrics` turns that into the metrics of shared RESULTS.md.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from humanoid_balance.core.zmp import FootSample  # numpy only: cheap to import here
from humanoid_balance.exceptions import ConfigurationError

#: Seed 000's reported figures, shown beside ours.
PAPER_PEAK_DLZ_DT = 31.70  # N m
PAPER_FRICTION_TORQUE_LIMIT = 32.34  # N m (g = 9.8)
PAPER_MAX_BALANCED_SPEED = 3.2  # m/s
PAPER_FIRST_LIMIT = "job arm joint speed"
SIDES = ("left", "right")
CONTACT_THRESHOLD_N = 20.0
#: the selections compared: the paper's S = Lx, Ly; Lz added to S; Lz as a secondary row
LZ_SELECTION: tuple[str, ...] = ("Lx", "Ly", "Lz")
LZ_SECONDARY: tuple[str, ...] = ("Lz",)
#: slower strikes [m/s] whose peak |dLz/dt| is reported
SLOWER_SPEEDS_M_S = (1.6, 1.4, 1.2)
SWEEP_MIN_SPEED_M_S = 1.0
SWEEP_MAX_SPEED_M_S = 4.0
MOMENTUM_COMPONENTS = ("Px", "Py", "Pz", "Lx", "Ly", "Lz")
#: joint groups whose measured momentum the MuJoCo runs record (``arms``: both arms)
MOMENTUM_GROUPS = ("arms", "waist", "legs", "neck")
#: The MuJoCo runs' physics (:class:`~humanoid_balance.sim.humanoid.HumanoidSim` options):
#: fourth-order RK4 at 0.25 ms, where the ZMP peaks have converged (within 0.06 mm of RK4 at
#: half the step). At the simulation's default (``implicitfast``, first order, 1 ms) the peak
#: with RMC was 16.13 mm against 11.15 mm with RK4 at 0.125 ms (the aux posture then): the
#: integrator's error, not the robot (``tools/strike_rocking.py --convergence``, README).
SIM_PHYSICS: Mapping[str, Any] = {"integrator": "rk4", "timestep": 0.00025}
#: the sensors' period [s]: the MuJoCo runs read the FSRs, F/T sensors and soles at 1 kHz
SENSOR_PERIOD_S = 0.001
#: issue 14's bound on the strike's measured ZMP peak with RMC over the peak without (issue 4
#: asked for 0.25)
RATIO_TARGET = 0.10


#: The momentum rows (seed 000, eq. 5) the paper holds; the experiment's default selection.
PAPER_ROWS: tuple[str, ...] = ("Lx", "Ly")
JOB_ARMS = ("right", "left")


@dataclass(frozen=True)
class StrikeSettings:
    """What the strike experiment runs.

    Attributes:
        speed_m_s: hand speed at the target [m/s]; None: the paper's 1.8.
        rate_hz: controller rate [Hz].
        sweep_step_m_s: speed step of the sweep 1.0..4.0 m/s [m/s].
        sweep_sim_speeds_m_s: speeds also run in MuJoCo during the sweep [m/s].
        job_arm: the striking arm, ``right`` (the paper's) or ``left`` (mirrored).
        selection: momentum rows held at zero in the RMC runs (the paper's ``Lx, Ly``);
            the Lz variants compare the paper's rows with Lz added or secondary.
    """

    speed_m_s: float | None = None
    rate_hz: float = 500.0
    sweep_step_m_s: float = 0.1
    sweep_sim_speeds_m_s: tuple[float, ...] = (2.5, 3.2, 4.0)
    job_arm: str = "right"
    selection: tuple[str, ...] = PAPER_ROWS


def strike_settings(*, speed: str | float | None = None, rate_hz: str | float = 500.0,
                    sweep_step: str | float = 0.1,
                    sweep_sim_speeds: Sequence[str | float] = (2.5, 3.2, 4.0),
                    job_arm: str = "right", selection: str | Sequence[str] = PAPER_ROWS,
                    ) -> StrikeSettings:
    """Validated :class:`StrikeSettings` from user values (command-line strings or numbers).

    Args:
        speed: hand speed at the target [m/s] (> 0), or None for the paper's 1.8.
        rate_hz: controller rate [Hz] (> 0).
        sweep_step: speed step of the sweep [m/s] (> 0).
        sweep_sim_speeds: speeds [m/s] (> 0) also run in MuJoCo during the sweep.
        job_arm: ``right`` or ``left``.
        selection: held momentum rows, ``"Lx,Ly"`` or a sequence of names.

    Raises:
        ConfigurationError: a value out of range, in one line naming the option and the fix.
    """
    from humanoid_balance.core.rmc import MOMENTUM_ROWS

    def positive(option: str, value: str | float, example: str, unit: str) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number) or number <= 0:
            raise ConfigurationError(
                f"{option} {value}: expected a finite number > 0 {unit}, e.g. {option} {example}")
        return number

    if job_arm not in JOB_ARMS:
        raise ConfigurationError(f"--job-arm {job_arm}: expected right or left")
    rows = ([r.strip() for r in selection.split(",")] if isinstance(selection, str)
            else [str(r) for r in selection])
    if (not rows or any(r not in MOMENTUM_ROWS for r in rows) or len(set(rows)) != len(rows)):
        raise ConfigurationError(
            f"--selection {','.join(rows)}: expected comma-separated rows of "
            f"{','.join(MOMENTUM_ROWS)} without repeats, e.g. --selection Lx,Ly (the paper's)")
    return StrikeSettings(
        speed_m_s=None if speed is None else positive("--speed", speed, "1.8", "[m/s]"),
        rate_hz=positive("--rate", rate_hz, "500", "[Hz]"),
        sweep_step_m_s=positive("--sweep-step", sweep_step, "0.1", "[m/s]"),
        sweep_sim_speeds_m_s=tuple(positive("--sweep-sim-speeds", v, "2.5 3.2", "[m/s]")
                                   for v in sweep_sim_speeds),
        job_arm=job_arm,
        selection=tuple(r for r in MOMENTUM_ROWS if r in rows))


# --- model level ------------------------------------------------------------


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


@dataclass(frozen=True)
class _ModelCycle:
    """One cycle's record: the controller output and what is derived from it at that time."""

    time_s: float
    output: Any  # RmcOutput
    start_position_rad: np.ndarray
    step_s: float


def _model_run(cycles: list[_ModelCycle], *, speed_m_s: float, selection: Sequence[str],
               balance: bool, names: tuple[str, ...]) -> ModelRun:
    """Stack the cycles' records into a :class:`ModelRun`."""
    def stack(pick: Callable[[Any], Any]) -> np.ndarray:
        return np.array([pick(c.output) for c in cycles])

    return ModelRun(
        speed_m_s=speed_m_s, selection=tuple(selection), balance=balance,
        times_s=np.array([c.time_s for c in cycles]), names=names,
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
        twist_error=np.array([float(np.max(np.abs(c.output.twist_error))) for c in cycles]))


def _controller(model: Any, *, job_arm: str, selection: Sequence[str], secondary: Sequence[str],
                balance: bool, paper_form: bool, support_polygon: np.ndarray | None = None,
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


def _setup(model: Any, speed: float | None, controller: Any, start_time: float = 0.0,
           job_arm: str = "right") -> tuple[Any, dict[str, float]]:
    """The strike trajectory and the standing pose: job arm at its start, aux arm ready.

    The aux arm stands at the controller's posture (where its posture task has brought
    it before the strike, as after ``arm_balance``'s activation), or at rest
    (:data:`~humanoid_balance.core.strike_trajectory.AUX_START_DEG`) without RMC or
    without a posture task (the paper's pure form).
    """
    from humanoid_balance.core.strike_trajectory import AUX_START_DEG, StrikeTrajectory, arm_pose

    trajectory = StrikeTrajectory(model, arm=job_arm, target_speed=speed, start_time=start_time)
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
              aux_posture: Sequence[float] | None = None) -> ModelRun:
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
    """
    from humanoid_balance.core.rmc import RmcInput

    controller = _controller(model, job_arm=job_arm, selection=selection, secondary=secondary,
                             balance=balance, paper_form=paper_form, support_polygon=polygon,
                             aux_posture=aux_posture)
    trajectory, pose = _setup(model, speed, controller, job_arm=job_arm)
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
                      balance=balance, names=controller.names)


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


# --- physics level --------------------------------------------------------------


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
    polygon_m: np.ndarray  # (N, 2) support polygon (FSR pads) in the world
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


def _fsr_polygon_in_world(model: Any, sole_in_world: dict[str, np.ndarray]) -> np.ndarray:
    """Convex hull (N x 2, counter-clockwise) [m] of the eight FSR points at the soles' poses."""
    from scipy.spatial import ConvexHull

    q_neutral = model.neutral()
    fsr_in_sole = [np.linalg.inv(model.frame_transform(f"{s}_sole", q_neutral))
                   @ model.frame_transform(f"{s}_fsr_{i}", q_neutral) for s in SIDES for i in range(4)]
    pts = np.array([(sole_in_world[s] @ f)[:2, 3] for s, f in zip(
        [s for s in SIDES for _ in range(4)], fsr_in_sole, strict=True)])
    return np.asarray(pts[ConvexHull(pts).vertices])


@dataclass
class _SimRecorder:
    """Per physics step: what :class:`SimRun` holds, appended as the simulation runs."""

    sole0: dict[str, np.ndarray]
    times_s: list[float]
    zmp_m: list[Any]
    cop_truth_m: list[Any]
    com_xy_m: list[Any]
    min_fz_n: list[float]
    slip_m: list[float]
    yaw_rad: list[float]
    held_momentum: list[np.ndarray] = field(default_factory=list)
    phase: list[str] = field(default_factory=list)

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

    def run(self, *, speed_m_s: float, selection: Sequence[str], balance: bool,
            polygon_m: np.ndarray) -> SimRun:
        """The recorded series as a :class:`SimRun` (float arrays)."""
        return SimRun(
            speed_m_s=speed_m_s, selection=tuple(selection), balance=balance,
            times_s=np.array(self.times_s, dtype=float), zmp_m=np.array(self.zmp_m, dtype=float),
            cop_truth_m=np.array(self.cop_truth_m, dtype=float),
            com_xy_m=np.array(self.com_xy_m, dtype=float),
            min_fz_n=np.array(self.min_fz_n, dtype=float),
            slip_m=np.array(self.slip_m, dtype=float), yaw_rad=np.array(self.yaw_rad, dtype=float),
            polygon_m=polygon_m, held_momentum_by_group={
                g: np.array([h[i] for h in self.held_momentum], dtype=float).reshape(-1, 2)
                for i, g in enumerate(MOMENTUM_GROUPS)},
            phase=np.array(self.phase, dtype=object))


class _Transport:
    """Commands as ``arm_balance`` sends them, played back as ``mujoco_sim`` does (see :func:`run_sim`;
    its command timeout, which holds joints without a command for 0.2 s, is left out)."""

    def __init__(self, arrival: Callable[[float], float], latency_s: float) -> None:
        from humanoid_balance.params.mujoco_sim import SPEC
        from humanoid_balance.sim.command_delay import CommandDelay

        self.arrival = arrival
        #: how far a stamp may be ahead and still wait, how old a command may be and still act as
        #: of its stamp: ``mujoco_sim``'s ``command_timeout`` for both
        self.timeout_s = float(SPEC["command_timeout"].default)
        self.delay: Any = CommandDelay(latency_s, horizon_s=self.timeout_s)
        self._flight: list[tuple[float, int, Any]] = []  # a heap by arrival time
        self._count = itertools.count()

    def send(self, stamp_s: float, names: Sequence[str], position: np.ndarray,
             velocity: np.ndarray) -> None:
        """A command stamped ``stamp_s`` (the cycle's joint-state time), sent then."""
        command = (round(stamp_s * 1e9), tuple(names), position.copy(), velocity.copy())
        heapq.heappush(self._flight, (self.arrival(stamp_s), next(self._count), command))

    def apply(self, sim: Any) -> None:
        """Before a physics step: what has arrived is held until stamp + latency, then acts
        as of that time (``mujoco_sim``'s ``_apply_pending``)."""
        now = sim.time
        now_ns = round(now * 1e9)
        while self._flight and self._flight[0][0] <= now + 1e-12:
            command = heapq.heappop(self._flight)[2]
            self.delay.push(command[0], now_ns, command)
        for age, (_, names, position, velocity) in self.delay.due_aged(now, self.timeout_s):
            sim.set_targets(names, position, velocity, age_s=age)


def run_sim(model: Any, *, speed: float | None, selection: Sequence[str], balance: bool,
            rate_hz: float, extra: float = 0.4, settle: float = 0.5,
            secondary: Sequence[str] = (), job_arm: str = "right",
            paper_form: bool = False, transport: Callable[[float], float] | None = None,
            command_latency: float = 0.0, aux_posture: Sequence[float] | None = None,
            observer: Callable[[Any], None] | None = None,
            sim_options: Mapping[str, Any] | None = None) -> SimRun:
    """The strike in MuJoCo: the controller's commands to the servos, the sensors read at 1 kHz
    (:data:`SENSOR_PERIOD_S`), the physics :data:`SIM_PHYSICS`.

    Args:
        model: the humanoid (fixed base, ``world_frame="W"``).
        speed: hand speed at the target [m/s]; None: the paper's.
        selection: momentum rows held at zero.
        balance: False: the aux arm holds still (no RMC).
        rate_hz: controller rate [Hz].
        extra: time run after the trajectory's end [s].
        settle: time the robot stands before the strike [s].
        secondary: rows reduced best effort after ``selection``.
        job_arm: the striking arm, ``right`` or ``left``.
        paper_form: the paper's pure eq. 6 (no aux posture task, aux arm from rest)
            instead of the controller's defaults.
        transport: None: each cycle's command acts at once, from the cycle's start. Else
            the commands go as the process graph sends them: stamped with the cycle's
            joint-state time ``t``, the position one period on, reaching the simulation at
            ``transport(t)`` [s], held until stamp + ``command_latency`` and applied as of
            then, through the arms' acceleration-limited servos (``mujoco_sim``'s path).
        command_latency: the simulation's playback latency [s] with ``transport``.
        aux_posture: the aux arm's ready posture [rad] (right-arm signs, 7 angles), where it
            stands before the strike with RMC; None: the controller's default.
        observer: called with the simulation after every physics step of the strike, to
            read what :class:`SimRun` does not hold (``tools/strike_rocking.py``).
        sim_options: keyword arguments of :class:`~humanoid_balance.sim.humanoid.HumanoidSim`
            (``gains``, ``contact_timeconst``, ...): another plant than the default robot;
            over :data:`SIM_PHYSICS` (``integrator``, ``timestep``).
    """
    from humanoid_balance.core.rmc import RmcInput
    from humanoid_balance.core.zmp import humanoid_zmp_estimator
    from humanoid_balance.sim.humanoid import HumanoidSim

    controller = _controller(model, job_arm=job_arm, selection=selection, secondary=secondary,
                             balance=balance, paper_form=paper_form, aux_posture=aux_posture)
    trajectory, pose = _setup(model, speed, controller, job_arm=job_arm)
    sim = HumanoidSim(**{"arm_acceleration_limits": transport is not None, **SIM_PHYSICS,
                         **(sim_options or {})})
    sim.reset(pose)
    sim.settle(settle)
    link = None if transport is None else _Transport(transport, command_latency)
    q_model = model.neutral()
    sim_index = model.q_index(list(sim.joint_names))
    q_model[sim_index] = sim.joint_state().position
    q_model[model.q_index(list(pose))] = list(pose.values())
    controller.reset(q_model)
    estimator = humanoid_zmp_estimator(model, contact_threshold=CONTACT_THRESHOLD_N)
    sole0 = {s: sim.sole_transform(s) for s in SIDES}
    polygon = _fsr_polygon_in_world(model, sole0)
    dt = 1.0 / rate_hz
    substeps = max(1, round(dt / sim.timestep))
    per_reading = max(1, round(SENSOR_PERIOD_S / sim.timestep))  # physics steps per reading
    rec = _SimRecorder(sole0, [], [], [], [], [], [], [])
    group_v = _group_indices(model, sim.joint_names)
    w = model.frame_transform("W", q_model)[:3, 3]  # fixed base: W does not move
    steps = 0
    for k in range(round((trajectory.duration + extra) / dt)):
        ref = trajectory.sample(k * dt)
        state = sim.joint_state()
        q_model[sim_index] = state.position
        rec.held_momentum.append(_held_momentum_by_group(model, q_model, w, state.velocity,
                                                         group_v))
        out = controller.step(RmcInput(q_model, job_joint_velocities=ref.velocity), dt)
        if link is None:
            sim.set_targets(out.names, out.position - out.velocity * dt, out.velocity)
        else:
            link.send(sim.time, out.names, out.position, out.velocity)
        for _ in range(substeps):
            if link is not None:
                link.apply(sim)
            sim.step()
            steps += 1
            if steps % per_reading == 0:
                rec.record(sim, estimator, ref.phase)
            if observer is not None:
                observer(sim)
    return rec.run(speed_m_s=float(trajectory.target_speed), selection=selection, balance=balance,
                   polygon_m=polygon)


def _group_indices(model: Any, sim_joints: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per :data:`MOMENTUM_GROUPS`: (indices into the simulation's joints, model velocity indices)."""
    out = []
    for group in MOMENTUM_GROUPS:
        names = (model.group("left_arm") + model.group("right_arm") if group == "arms"
                 else model.group(group))
        out.append((np.array([list(sim_joints).index(n) for n in names]), model.v_index(names)))
    return out


def _held_momentum_by_group(model: Any, q: np.ndarray, w: np.ndarray, joint_velocity: np.ndarray,
                            groups: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """(groups, 2): Lx, Ly about ``W`` (at ``w`` [m]) [N m s] of each group's measured joint
    velocities."""
    a = model.momentum_matrix(q, w)[3:5]
    return np.array([a[:, v] @ joint_velocity[s] for s, v in groups])


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


# --- sweeps -------------------------------------------------------------------


@dataclass(frozen=True)
class SweepPoint:
    """One speed of the model-level sweep.

    Attributes:
        speed_m_s: hand speed at the target [m/s].
        failures: limits reached with S = Lx, Ly and the controller's defaults (aux arm
            ready; see :func:`failures`).
        failures_ignoring_turn: the same without the turning-friction limit.
        failures_lz_selected: limits reached with S = Lx, Ly, Lz (the paper's pure form,
            as the Lz-secondary run).
        failures_lz_secondary: limits reached with Lz secondary (aux limits that only
            cost the secondary row not counted; "held rows not held" when they are not).
        peak_dlz_dt_n_m: peak |dLz/dt| [N m] with S = Lx, Ly.
        peak_dlz_dt_lz_selected_n_m: the same with S = Lx, Ly, Lz.
        peak_dlz_dt_lz_secondary_n_m: the same with Lz secondary.
        job_limit_ratio: the job arm trajectory's worst peak / limit.
        min_model_zmp_margin_mm: least model-ZMP margin [mm] with S = Lx, Ly.
    """

    speed_m_s: float
    failures: tuple[str, ...]
    failures_ignoring_turn: tuple[str, ...]
    failures_lz_selected: tuple[str, ...]
    failures_lz_secondary: tuple[str, ...]
    peak_dlz_dt_n_m: float
    peak_dlz_dt_lz_selected_n_m: float
    peak_dlz_dt_lz_secondary_n_m: float
    job_limit_ratio: float
    min_model_zmp_margin_mm: float


def sweep_speeds(step_m_s: float) -> np.ndarray:
    """The sweep's speeds [m/s]: 1.0 to 4.0 by ``step_m_s``, rounded to mm/s."""
    return np.asarray(np.round(np.arange(SWEEP_MIN_SPEED_M_S, SWEEP_MAX_SPEED_M_S + 1e-9,
                                         float(step_m_s)), 3))


def sweep_point(model: Any, polygon: np.ndarray, speed_m_s: float, rate_hz: float,
                job_arm: str = "right") -> SweepPoint:
    """The three model-level runs (S = Lx, Ly; + Lz; Lz secondary) at one speed and their limits."""
    from humanoid_balance.core.rmc import PAPER_SELECTION
    from humanoid_balance.core.strike_trajectory import StrikeTrajectory

    ratios = StrikeTrajectory(model, arm=job_arm, target_speed=speed_m_s).limit_ratios()
    r = run_model(model, polygon, speed=speed_m_s, selection=PAPER_SELECTION, balance=True,
                  rate_hz=rate_hz, extra=0.1, job_arm=job_arm)
    r_lz = run_model(model, polygon, speed=speed_m_s, selection=LZ_SELECTION, balance=True,
                     rate_hz=rate_hz, extra=0.1, job_arm=job_arm, paper_form=True)
    r_lz2 = run_model(model, polygon, speed=speed_m_s, selection=PAPER_SELECTION, balance=True,
                      rate_hz=rate_hz, extra=0.1, secondary=LZ_SECONDARY,
                      job_arm=job_arm, paper_form=True)
    fails = failures(r, ratios)
    held = float(np.max(np.abs(r_lz2.selected_momentum))) < 1e-9
    return SweepPoint(
        speed_m_s=float(speed_m_s), failures=tuple(fails),
        failures_ignoring_turn=tuple(f for f in fails if not f.startswith("turning")),
        failures_lz_selected=tuple(failures(r_lz, ratios)),
        failures_lz_secondary=tuple(
            [f for f in failures(r_lz2, ratios) if not f.startswith("aux arm")]
            + ([] if held else ["held rows not held"])),
        peak_dlz_dt_n_m=float(np.max(r.turn_torque_n_m)),
        peak_dlz_dt_lz_selected_n_m=float(np.max(r_lz.turn_torque_n_m)),
        peak_dlz_dt_lz_secondary_n_m=float(np.max(r_lz2.turn_torque_n_m)),
        job_limit_ratio=ratios.worst[2],
        min_model_zmp_margin_mm=1e3 * float(np.min(r.zmp_margin_m)))


@dataclass(frozen=True)
class HighestBalancedSpeed:
    """The highest speed of the sweep below every speed with a limit reached, and that limit.

    Attributes:
        speed_m_s: highest balanced speed [m/s] (0.0: already the lowest speed fails).
        first_limit: the limits reached at the first failing speed, ``; ``-joined.
    """

    speed_m_s: float
    first_limit: str


def highest_balanced_speed(points: Sequence[SweepPoint],
                           limits: Callable[[SweepPoint], Sequence[str]]) -> HighestBalancedSpeed:
    """The speed below the first sweep point where ``limits(point)`` is not empty."""
    best, first = 0.0, f"none up to {SWEEP_MAX_SPEED_M_S} m/s"
    for point in points:
        reached = limits(point)
        if reached:
            first = "; ".join(reached)
            break
        best = point.speed_m_s
    return HighestBalancedSpeed(best, first)


@dataclass(frozen=True)
class SimSweepPoint:
    """One MuJoCo run of the sweep (S = Lx, Ly).

    Attributes:
        speed_m_s: hand speed at the target [m/s].
        shift: the measured ZMP shift.
        max_slip_m: largest horizontal sole displacement [m].
        min_foot_fz_n: least vertical force of either foot [N].
    """

    speed_m_s: float
    shift: ZmpShift
    max_slip_m: float
    min_foot_fz_n: float


def sim_sweep_point(model: Any, speed_m_s: float, rate_hz: float,
                    job_arm: str = "right") -> SimSweepPoint:
    """The strike at ``speed_m_s`` in MuJoCo with RMC (S = Lx, Ly)."""
    from humanoid_balance.core.rmc import PAPER_SELECTION

    s = run_sim(model, speed=speed_m_s, selection=PAPER_SELECTION, balance=True, rate_hz=rate_hz,
                extra=0.2, job_arm=job_arm)
    return SimSweepPoint(speed_m_s, zmp_shift(s), float(np.max(s.slip_m)), float(np.min(s.min_fz_n)))


# --- the whole experiment -------------------------------------------------------


@dataclass(frozen=True)
class StrikeRuns:
    """The strike at the experiment's speed, model level and MuJoCo, per controller variant.

    ``*_rmc``: the settings' selection (the paper's Lx, Ly) with the controller's
    defaults (aux arm at its ready posture); ``*_paper``: the same rows in the paper's
    pure form (eq. 6 alone, aux arm from rest); ``*_off``: no RMC; ``*_lz_selected``:
    S = Lx, Ly, Lz; ``*_lz_secondary``: S = Lx, Ly with Lz secondary (both in the pure
    form); ``twist_mode``: the settings' selection with the job arm driven by the hand
    twist.
    """

    model_rmc: ModelRun
    model_off: ModelRun
    model_lz_selected: ModelRun
    model_lz_secondary: ModelRun
    twist_mode: ModelRun
    sim_rmc: SimRun
    sim_off: SimRun
    sim_lz_selected: SimRun
    sim_lz_secondary: SimRun
    model_paper: ModelRun
    sim_paper: SimRun


@dataclass(frozen=True)
class StrikeResults:
    """Everything the strike experiment measured.

    Attributes:
        settings: what was run.
        runs: the runs at the experiment's speed.
        friction_torque_limit_n_m: ``mu C / 2 G`` of the controller [N m].
        slower_peak_dlz_dt_n_m: (speed [m/s], peak |dLz/dt| [N m]) of slower strikes, S = Lx, Ly.
        sweep: the model-level speed sweep.
        sim_sweep: the MuJoCo runs of the sweep.
        run_time_s: wall-clock time of the whole experiment [s] (machine dependent).
    """

    settings: StrikeSettings
    runs: StrikeRuns
    friction_torque_limit_n_m: float
    slower_peak_dlz_dt_n_m: tuple[tuple[float, float], ...]
    sweep: tuple[SweepPoint, ...]
    sim_sweep: tuple[SimSweepPoint, ...]
    run_time_s: float


def _strike_runs(model: Any, polygon: np.ndarray, settings: StrikeSettings) -> StrikeRuns:
    """Model-level and MuJoCo runs of every controller variant at the experiment's speed."""
    from humanoid_balance.core.rmc import PAPER_SELECTION

    common: dict[str, Any] = {"speed": settings.speed_m_s, "rate_hz": float(settings.rate_hz),
                              "job_arm": settings.job_arm}
    pure: dict[str, Any] = {**common, "paper_form": True}
    chosen, paper = settings.selection, PAPER_SELECTION
    return StrikeRuns(
        model_rmc=run_model(model, polygon, selection=chosen, balance=True, **common),
        model_off=run_model(model, polygon, selection=paper, balance=False, **common),
        model_lz_selected=run_model(model, polygon, selection=LZ_SELECTION, balance=True,
                                    **pure),
        model_lz_secondary=run_model(model, polygon, selection=paper, balance=True,
                                     secondary=LZ_SECONDARY, **pure),
        twist_mode=run_model(model, polygon, selection=chosen, balance=True, twist_mode=True,
                             **common),
        sim_rmc=run_sim(model, selection=chosen, balance=True, **common),
        sim_off=run_sim(model, selection=paper, balance=False, **common),
        sim_lz_selected=run_sim(model, selection=LZ_SELECTION, balance=True, **pure),
        sim_lz_secondary=run_sim(model, selection=paper, balance=True, secondary=LZ_SECONDARY,
                                 **pure),
        model_paper=run_model(model, polygon, selection=chosen, balance=True, **pure),
        sim_paper=run_sim(model, selection=chosen, balance=True, **pure))


def run_strike_experiment(settings: StrikeSettings) -> StrikeResults:
    """The whole strike experiment (a few minutes on one core)."""
    from humanoid_balance.core.model import RobotModel
    from humanoid_balance.core.rmc import PAPER_SELECTION, RmcController
    from humanoid_balance.core.support import SupportPolygon
    from humanoid_balance.resources import urdf_path

    started = time.perf_counter()
    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    # the nodes' polygon: the hull of the FSR pads (the only contacts in the simulation)
    polygon = SupportPolygon.from_model(model).update_at(model, model.neutral())
    rate, arm = float(settings.rate_hz), settings.job_arm
    runs = _strike_runs(model, polygon, settings)
    friction_limit = RmcController(model, selection=PAPER_SELECTION).friction_torque_limit
    slower = tuple(
        (v, float(np.max(run_model(model, polygon, speed=v, selection=PAPER_SELECTION,
                                   balance=True, rate_hz=rate, job_arm=arm).turn_torque_n_m)))
        for v in SLOWER_SPEEDS_M_S)
    sweep = tuple(sweep_point(model, polygon, float(v), rate, job_arm=arm)
                  for v in sweep_speeds(settings.sweep_step_m_s))
    sim_sweep = tuple(sim_sweep_point(model, float(v), rate, job_arm=arm)
                      for v in settings.sweep_sim_speeds_m_s)
    return StrikeResults(settings=settings, runs=runs, friction_torque_limit_n_m=friction_limit,
                         slower_peak_dlz_dt_n_m=slower, sweep=sweep, sim_sweep=sim_sweep,
                         run_time_s=time.perf_counter() - started)


def sweep_text(points: Sequence[SweepPoint]) -> str:
    """One line per sweep speed: peak |dLz/dt| per variant, job ratio, model-ZMP margin, limits."""
    return "\n".join(
        f"{p.speed_m_s:.2f} m/s  peak|dLz/dt| {p.peak_dlz_dt_n_m:.2f} "
        f"(Lz in S: {p.peak_dlz_dt_lz_selected_n_m:.2f}, "
        f"Lz secondary: {p.peak_dlz_dt_lz_secondary_n_m:.2f}) "
        f"job ratio {p.job_limit_ratio:.3f}  model-ZMP margin {p.min_model_zmp_margin_mm:.1f} mm  "
        f"limits: {'; '.join(p.failures) or 'none'}" for p in points) + "\n"
