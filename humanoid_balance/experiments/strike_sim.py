"""The seed-000 strike in MuJoCo: the controller's commands to the simulated humanoid's servos.

:func:`run_sim` sends the commands of :class:`~humanoid_balance.core.rmc.RmcController`
to :class:`~humanoid_balance.sim.humanoid.HumanoidSim` (in-process, :data:`SIM_PHYSICS`,
sensors at 1 kHz, controller at ``rate_hz``), at once or as the process graph sends them
(stamped, late, held, played back: :class:`_Transport`), and records a
:class:`~humanoid_balance.experiments.strike_recording.SimRun`.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from humanoid_balance.experiments.strike_model import strike_controller, strike_setup
from humanoid_balance.experiments.strike_recording import (
    MOMENTUM_GROUPS,
    SimRecorder,
    SimRun,
)

CONTACT_THRESHOLD_N = 20.0
#: The MuJoCo runs' physics (:class:`~humanoid_balance.sim.humanoid.HumanoidSim` options):
#: fourth-order RK4 at 0.25 ms, where the ZMP peaks have converged (within 0.06 mm of RK4 at
#: half the step). At the simulation's default (``implicitfast``, first order, 1 ms) the peak
#: with RMC was 16.13 mm against 11.15 mm with RK4 at 0.125 ms (the aux posture then): the
#: integrator's error, not the robot (``tools/strike_rocking.py --convergence``, README).
SIM_PHYSICS: Mapping[str, Any] = {"integrator": "rk4", "timestep": 0.00025}
#: the sensors' period [s]: the MuJoCo runs read the FSRs, F/T sensors and soles at 1 kHz
SENSOR_PERIOD_S = 0.001


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
            sim_options: Mapping[str, Any] | None = None,
            durations: Sequence[float] | None = None) -> SimRun:
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
        durations: the job trajectory's phases [s]; None: the seed's (``strike_setup``).
    """
    from humanoid_balance.core.rmc import RmcInput
    from humanoid_balance.core.zmp import humanoid_zmp_estimator

    controller = strike_controller(model, job_arm=job_arm, selection=selection,
                                   secondary=secondary, balance=balance, paper_form=paper_form,
                                   aux_posture=aux_posture)
    trajectory, pose = strike_setup(model, speed, controller, job_arm=job_arm,
                                    durations=durations)
    sim, q_model, sim_index = _standing_sim(model, pose, settle, transport is not None,
                                            sim_options)
    link = None if transport is None else _Transport(transport, command_latency)
    controller.reset(q_model)
    estimator = humanoid_zmp_estimator(model, contact_threshold=CONTACT_THRESHOLD_N)
    rec = SimRecorder.start(sim, model)
    dt = 1.0 / rate_hz
    substeps = max(1, round(dt / sim.timestep))
    per_reading = max(1, round(SENSOR_PERIOD_S / sim.timestep))  # physics steps per reading
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
    return rec.run(speed_m_s=float(trajectory.target_speed), selection=selection, balance=balance)


def _standing_sim(model: Any, pose: Mapping[str, float], settle: float, servo_limits: bool,
                  sim_options: Mapping[str, Any] | None) -> tuple[Any, np.ndarray, np.ndarray]:
    """The simulation standing at ``pose`` after ``settle`` [s] (physics :data:`SIM_PHYSICS`
    under ``sim_options``; ``servo_limits``: the arms' acceleration-limited servos), the
    model's configuration at its joint state with ``pose`` over it, and the simulation's
    joints' indices in that configuration."""
    from humanoid_balance.sim.humanoid import HumanoidSim

    sim = HumanoidSim(**{"arm_acceleration_limits": servo_limits, **SIM_PHYSICS,
                         **(sim_options or {})})
    sim.reset(pose)
    sim.settle(settle)
    q_model = model.neutral()
    sim_index = model.q_index(list(sim.joint_names))
    q_model[sim_index] = sim.joint_state().position
    q_model[model.q_index(list(pose))] = list(pose.values())
    return sim, q_model, sim_index


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

