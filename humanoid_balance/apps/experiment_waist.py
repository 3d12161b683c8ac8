"""``humanoid-balance experiment waist``: the paper's waist tracking test (seed 003) in simulation.

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

Writes ``OUT/waist_tracking.json`` (metrics of ../shared/RESULTS.md) and the plots
``waist_angles.png`` (paper Figs. 9-10: pitch and roll, reference and actual),
``waist_motor_speeds.png`` (Figs. 7-8: the two motor speeds), ``waist_tracking_error.png``
and ``waist_motor_currents.png``.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from humanoid_balance.results import save_figure

FloatArray = NDArray[np.float64]
DURATION_S = 6.0
SETTLE_S = 0.5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the waist experiment."""
    parser.add_argument("--out", type=Path, default=Path("results/waist"),
                        help="output folder (default results/waist)")
    parser.add_argument("--noise-deg", type=float, default=0.02,
                        help="inclinometer noise, 1 sigma, deg (default the paper's 0.02)")
    parser.add_argument("--seed", type=int, default=3, help="noise seed")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")


@dataclass
class TrackingRun:
    """Logged signals of the tracking run (times from the trajectory start)."""

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


def run_tracking(noise_deg: float = 0.02, seed: int = 3, channel: str = "experiment_waist") -> TrackingRun:
    """The refusal of the paper's -12 deg start, then the in-range 6 s run."""
    from humanoid_balance.can.bus import WaistCanBus
    from humanoid_balance.can.controller import WaistController, WaistControllerConfig
    from humanoid_balance.can.sim_drive import SimulatedWaist, TorsoLoad
    from humanoid_balance.core.bus_load import bus_load

    rng = np.random.default_rng(seed)
    config = WaistControllerConfig()
    dt = config.gains.dt
    outer_every = config.outer_every  # the inclinometer comes at the outer loop's rate
    with SimulatedWaist(channel=channel, torso=TorsoLoad()) as sim, WaistCanBus(
            channel=channel, use_notifier=False, clock=lambda: sim.time_s) as bus:
        ctl = WaistController(config, bus)
        cycle = 0
        last_reading = np.full(2, np.nan)

        def tick() -> None:
            nonlocal cycle, last_reading
            if cycle % outer_every == 0:
                q = np.degrees(sim.joint_angles()) + noise_deg * rng.standard_normal(2)
                ctl.on_inclinometer(math.radians(q[0]), math.radians(q[1]), sim.time_s)
                last_reading = q
            ctl.servo_cycle(sim.time_s)
            sim.step(dt)
            cycle += 1

        for _ in range(5):
            tick()
        ctl.enable(sim.time_s)
        for _ in range(50):
            tick()
        # 1. the paper's command as published: refused
        times = np.linspace(0.0, DURATION_S, 61)
        refusal = ctl.set_trajectory(times, np.radians(paper_reference_deg(times, -12.0)),
                                     sim.time_s)
        # 2. move to the start of the in-range path, settle
        start = np.radians(paper_reference_deg(np.zeros(1), 0.0))
        ctl.set_trajectory(np.array([1.0]), start, sim.time_s)
        for _ in range(int(1.5 / dt)):
            tick()
        # 3. the in-range path
        counted_before = bus.counters()
        t0 = sim.time_s
        result = ctl.set_trajectory(times, np.radians(paper_reference_deg(times, 0.0)), t0)
        if not result.accepted:
            raise RuntimeError(f"the in-range path was refused: {result.message}")
        n = round(DURATION_S / dt)
        log_t, ref, act, meas, speed, current = [], [], [], [], [], []
        for _ in range(n):
            tick()
            t = sim.time_s - t0
            log_t.append(t)
            ref.append(paper_reference_deg(np.array([min(t, DURATION_S)]), 0.0)[0])
            act.append(np.degrees(sim.joint_angles()))
            meas.append(last_reading.copy())
            speed.append(sim.motor_velocities())
            current.append(sim.motor_currents())
        counters = bus.counters()
        feedback = counters.get("feedback", 0) - counted_before.get("feedback", 0)
        status = counters.get("status", 0) - counted_before.get("status", 0)
        # measured traffic: the setpoints sent (one per period) and the frames received,
        # with the protocol's frame lengths
        frames = {f.name: f for f in bus.protocol.periodic_frames(config.servo_rate_hz)}
        measured = bus_load([
            frames["WaistCurrentCmd"]._replace(rate_hz=n / DURATION_S),
            frames["DriveFeedback1"]._replace(name="DriveFeedback", rate_hz=feedback / DURATION_S),
            frames["DriveStatus1"]._replace(name="DriveStatus", rate_hz=status / DURATION_S)],
            config.bitrate)
        return TrackingRun(np.array(log_t), np.array(ref), np.array(act), np.array(meas),
                           np.array(speed), np.array(current), not refusal.accepted, refusal.message,
                           ctl.bus_load.percent, measured.percent, ctl.state.value)


def tracking_errors(run: TrackingRun) -> tuple[float, float]:
    """Max and RMS of |reference - actual| over both joints after the first 0.5 s, deg."""
    mask = run.t_s >= SETTLE_S
    err = np.abs(run.reference_deg[mask] - run.actual_deg[mask])
    return float(err.max()), float(np.sqrt(np.mean(err ** 2)))


def plot(run: TrackingRun, out: Path) -> list[Path]:
    """The paper-like figures (Figs. 7-10) as PNG files."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    fig, axes = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    for k, name in enumerate(("pitch", "roll")):
        axes[k].plot(run.t_s, run.reference_deg[:, k], "k--", label="reference")
        axes[k].plot(run.t_s, run.actual_deg[:, k], label="actual (simulated joint)")
        axes[k].plot(run.t_s, run.measured_deg[:, k], ".", ms=2, alpha=0.4,
                     label="inclinometer (noisy)")
        axes[k].set_ylabel(f"{name} / deg")
        axes[k].legend(loc="best", fontsize=8)
    axes[1].set_xlabel("t / s")
    fig.suptitle("Waist angles (cf. paper Figs. 9-10)")
    paths.append(save_figure(fig, out / "waist_angles.png", dpi=120))

    fig, ax = plt.subplots(figsize=(7, 4))
    rpm = run.motor_speed_rad_s * 60.0 / (2.0 * math.pi)
    ax.plot(run.t_s, rpm[:, 0], label="motor 1")
    ax.plot(run.t_s, rpm[:, 1], label="motor 2")
    ax.set_xlabel("t / s")
    ax.set_ylabel("motor speed / rpm")
    ax.set_title("Motor speeds (cf. paper Figs. 7-8)")
    ax.legend()
    paths.append(save_figure(fig, out / "waist_motor_speeds.png", dpi=120))

    fig, ax = plt.subplots(figsize=(7, 4))
    err = run.reference_deg - run.actual_deg
    ax.plot(run.t_s, err[:, 0], label="pitch")
    ax.plot(run.t_s, err[:, 1], label="roll")
    ax.axhline(0.1, color="r", ls=":", label="0.1 deg (paper's best)")
    ax.axhline(-0.1, color="r", ls=":")
    ax.axvline(SETTLE_S, color="grey", ls="--")
    ax.set_xlabel("t / s")
    ax.set_ylabel("reference - actual / deg")
    ax.set_title("Tracking error")
    ax.legend()
    paths.append(save_figure(fig, out / "waist_tracking_error.png", dpi=120))

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(run.t_s, run.motor_current_a[:, 0], label="motor 1")
    ax.plot(run.t_s, run.motor_current_a[:, 1], label="motor 2")
    ax.set_xlabel("t / s")
    ax.set_ylabel("current / A")
    ax.set_title("Motor currents (torso gravity load)")
    ax.legend()
    paths.append(save_figure(fig, out / "waist_motor_currents.png", dpi=120))
    return paths


def run(args: argparse.Namespace) -> int:
    """Run the experiment; 0 when it ran (the figures say how it went)."""
    from humanoid_balance.results import metric, write_results

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    result = run_tracking(noise_deg=args.noise_deg, seed=args.seed)
    print(f"paper command (pitch -12 + t deg): {result.refusal_message}")
    max_err, rms_err = tracking_errors(result)
    metrics = {
        "max_tracking_error_deg": metric(max_err, "deg", target=0.1, better="lower"),
        "rms_tracking_error_deg": metric(rms_err, "deg", better="lower"),
        "bus_load_pct": metric(result.bus_load_pct, "%", target=50.0, better="lower"),
        "measured_bus_load_pct": metric(result.measured_bus_load_pct, "%", target=50.0,
                                        better="lower"),
        "out_of_range_command_refused": metric(result.refused, ""),
    }
    write_results("waist_tracking", metrics,
                  command=f"humanoid-balance experiment waist --out {out}", directory=out)
    if not args.no_plots:
        for path in plot(result, out):
            print(f"wrote {path}")
    return 0
