"""The paper's waist tracking test (seed 003) in simulation, over a virtual CAN bus.

What runs: the waist controller (:class:`~humanoid_balance.can.controller.WaistController`,
RMRC outer loop at 50 Hz on a noisy inclinometer, three-loop servo at 500 Hz) over
a python-can virtual bus, in lock-step with two simulated drives carrying a 25 kg
torso (:class:`~humanoid_balance.can.sim_drive.SimulatedWaist`: the paper's current
loop, DC motors, gear, encoder, gravity load). MuJoCo is not needed.

1. The paper's command, pitch ``-12 + t`` deg and roll ``-1 - 0.167 t`` deg, starts
   outside the pitch range -5..45 deg: the controller refuses it and says why.
2. The waist moves to the start of the in-range variant, pitch ``0 + t`` deg, roll
   ``-1 - 0.167 t`` deg, and tracks it for 6 s with 0.02 deg (1 sigma) inclinometer
   noise. The tracking error is the commanded path minus the true joint angles,
   counted after the first 0.5 s (target: max <= 0.1 deg, the paper's best).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
DURATION_S = 6.0
SETTLE_S = 0.5
#: the paper's best tracking error [deg] and the bus load limit [%]
TARGET_TRACKING_ERROR_DEG = 0.1
TARGET_BUS_LOAD_PCT = 50.0


@dataclass(frozen=True)
class TrackingRun:
    """Logged signals of the tracking run (times from the trajectory start).

    Attributes:
        t_s: (n,) time since the in-range path started [s].
        reference_deg: (n, 2) commanded pitch, roll [deg].
        actual_deg: (n, 2) simulated joint angles [deg].
        measured_deg: (n, 2) last inclinometer reading (noisy) [deg].
        motor_speed_rad_s: (n, 2) motor speeds [rad/s].
        motor_current_a: (n, 2) motor currents [A].
        refused: the paper's out-of-range command was refused.
        refusal_message: the controller's reason.
        bus_load_pct: the controller's planned bus load [%].
        measured_bus_load_pct: the load of the frames actually exchanged [%].
        final_state: the controller's state at the end.
    """

    t_s: FloatArray
    reference_deg: FloatArray
    actual_deg: FloatArray
    measured_deg: FloatArray
    motor_speed_rad_s: FloatArray
    motor_current_a: FloatArray
    refused: bool
    refusal_message: str
    bus_load_pct: float
    measured_bus_load_pct: float
    final_state: str


def paper_reference_deg(t: FloatArray, pitch0_deg: float) -> FloatArray:
    """The paper's test path: pitch ``pitch0 + t`` deg, roll ``-1 - 0.167 t`` deg; (N, 2)."""
    return np.column_stack([pitch0_deg + t, -1.0 - 0.167 * t])


class _Rig:
    """The controller and the simulated drives in lock-step; the inclinometer at the outer rate."""

    def __init__(self, ctl: Any, config: Any, sim: Any, noise_deg: float, seed: int) -> None:
        self.ctl = ctl
        self.config = config
        self.sim = sim
        self.noise_deg = noise_deg
        self.rng = np.random.default_rng(seed)
        self.dt = config.gains.dt
        self.outer_every = config.outer_every  # the inclinometer comes at the outer loop's rate
        self.cycle = 0
        self.last_reading = np.full(2, np.nan)

    def tick(self) -> None:
        """One servo period: a noisy inclinometer reading when due, the servo cycle, the physics."""
        if self.cycle % self.outer_every == 0:
            q = np.degrees(self.sim.joint_angles()) + self.noise_deg * self.rng.standard_normal(2)
            self.ctl.on_inclinometer(math.radians(q[0]), math.radians(q[1]), self.sim.time_s)
            self.last_reading = q
        self.ctl.servo_cycle(self.sim.time_s)
        self.sim.step(self.dt)
        self.cycle += 1


def _measured_bus_load_pct(bus: Any, config: Any, counted_before: dict[str, int],
                           cycles: int) -> float:
    """Bus load [%] of the setpoints sent (one per period) and the frames received in the run."""
    from humanoid_balance.core.bus_load import bus_load

    counters = bus.counters()
    feedback = counters.get("feedback", 0) - counted_before.get("feedback", 0)
    status = counters.get("status", 0) - counted_before.get("status", 0)
    frames = {f.name: f for f in bus.protocol.periodic_frames(config.servo_rate_hz)}
    return float(bus_load([
        frames["WaistCurrentCmd"]._replace(rate_hz=cycles / DURATION_S),
        frames["DriveFeedback1"]._replace(name="DriveFeedback", rate_hz=feedback / DURATION_S),
        frames["DriveStatus1"]._replace(name="DriveStatus", rate_hz=status / DURATION_S)],
        config.bitrate).percent)


def _track(rig: _Rig, bus: Any, refusal: Any) -> TrackingRun:
    """Start the in-range path and log it for ``DURATION_S`` (one row per servo period).

    ``refusal`` is the controller's answer to the paper's out-of-range command.
    """
    ctl, sim = rig.ctl, rig.sim
    times = np.linspace(0.0, DURATION_S, 61)
    counted_before = bus.counters()
    t0 = sim.time_s
    result = ctl.set_trajectory(times, np.radians(paper_reference_deg(times, 0.0)), t0)
    if not result.accepted:
        raise RuntimeError(f"the in-range path was refused: {result.message}")
    n = round(DURATION_S / rig.dt)
    log_t, ref, act, meas, speed, current = [], [], [], [], [], []
    for _ in range(n):
        rig.tick()
        t = sim.time_s - t0
        log_t.append(t)
        ref.append(paper_reference_deg(np.array([min(t, DURATION_S)]), 0.0)[0])
        act.append(np.degrees(sim.joint_angles()))
        meas.append(rig.last_reading.copy())
        speed.append(sim.motor_velocities())
        current.append(sim.motor_currents())
    return TrackingRun(
        t_s=np.array(log_t), reference_deg=np.array(ref), actual_deg=np.array(act),
        measured_deg=np.array(meas), motor_speed_rad_s=np.array(speed),
        motor_current_a=np.array(current), refused=not refusal.accepted,
        refusal_message=refusal.message, bus_load_pct=ctl.bus_load.percent,
        measured_bus_load_pct=_measured_bus_load_pct(bus, rig.config, counted_before, n),
        final_state=ctl.state.value)


def run_tracking(noise_deg: float = 0.02, seed: int = 3,
                 channel: str = "experiment_waist") -> TrackingRun:
    """The refusal of the paper's -12 deg start, then the in-range 6 s run.

    Args:
        noise_deg: inclinometer noise, 1 sigma [deg].
        seed: seed of the noise.
        channel: the python-can virtual bus channel (private to this run).
    """
    from humanoid_balance.can.bus import WaistCanBus
    from humanoid_balance.can.controller import WaistController, WaistControllerConfig
    from humanoid_balance.can.sim_drive import SimulatedWaist, TorsoLoad

    config = WaistControllerConfig()
    with SimulatedWaist(channel=channel, torso=TorsoLoad()) as sim, WaistCanBus(
            channel=channel, use_notifier=False, clock=lambda: sim.time_s) as bus:
        ctl = WaistController(config, bus)
        rig = _Rig(ctl, config, sim, noise_deg, seed)
        for _ in range(5):
            rig.tick()
        ctl.enable(sim.time_s)
        for _ in range(50):
            rig.tick()
        # 1. the paper's command as published: refused
        times = np.linspace(0.0, DURATION_S, 61)
        refusal = ctl.set_trajectory(times, np.radians(paper_reference_deg(times, -12.0)),
                                     sim.time_s)
        # 2. move to the start of the in-range path, settle
        start = np.radians(paper_reference_deg(np.zeros(1), 0.0))
        ctl.set_trajectory(np.array([1.0]), start, sim.time_s)
        for _ in range(int(1.5 / rig.dt)):
            rig.tick()
        # 3. the in-range path
        return _track(rig, bus, refusal)


@dataclass(frozen=True)
class TrackingErrors:
    """|reference - actual| over both joints after the first ``SETTLE_S``.

    Attributes:
        max_deg: largest error [deg].
        rms_deg: RMS error [deg].
    """

    max_deg: float
    rms_deg: float


def tracking_errors(run: TrackingRun) -> TrackingErrors:
    """Max and RMS of |reference - actual| over both joints after the first 0.5 s, deg."""
    mask = run.t_s >= SETTLE_S
    err = np.abs(run.reference_deg[mask] - run.actual_deg[mask])
    return TrackingErrors(float(err.max()), float(np.sqrt(np.mean(err ** 2))))


def waist_metrics(run: TrackingRun) -> dict[str, dict[str, Any]]:
    """The metrics of ``waist_tracking.json`` (names of shared RESULTS.md)."""
    from humanoid_balance.results import metric

    errors = tracking_errors(run)
    return {
        "max_tracking_error_deg": metric(errors.max_deg, "deg", target=TARGET_TRACKING_ERROR_DEG,
                                         better="lower"),
        "rms_tracking_error_deg": metric(errors.rms_deg, "deg", better="lower"),
        "bus_load_pct": metric(run.bus_load_pct, "%", target=TARGET_BUS_LOAD_PCT, better="lower"),
        "measured_bus_load_pct": metric(run.measured_bus_load_pct, "%",
                                        target=TARGET_BUS_LOAD_PCT, better="lower"),
        "out_of_range_command_refused": metric(run.refused, ""),
    }
