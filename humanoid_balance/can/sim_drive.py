"""Simulated waist drives on a python-can ``virtual`` bus (seed 003).

Two DC motors drive the pitch and roll joints through the differential of
eqs. (1)-(4) (``q = J_qw theta``). Each drive speaks the protocol of
``waist_drive.dbc`` (:mod:`humanoid_balance.can.protocol`) and models:

* the current loop of the paper: proportional gain ``k_ia = 20`` around an
  armature with electrical time constant ``tau_e = 11 ms`` (closed-loop pole at
  ``(1 + 20) / 11 ms``, about 300 Hz), back-EMF included, discretised exactly
  per sub-step; the current is limited to ``current_limit_a``;
* motor + gear + load dynamics: rotor inertia and viscous friction per motor,
  the load's joint inertia and joint torque (gravity of the torso or a torque
  injected from a physics simulation) reflected through ``J_qw``:
  ``(J_r I + J_qw^T M_q J_qw) thetadd = k_t i - b thetad + J_qw^T tau_q``;
* an incremental encoder (``counts_per_rev`` counts per motor turn);
* a watchdog: an enabled drive that receives no setpoint frame for
  ``watchdog_timeout_s`` faults (``FaultCode.WATCHDOG``);
* the hold behaviour: whenever a drive is not enabled (disabled, faulted, watchdog)
  its output stage is off and a spring-applied holding brake engages after
  ``brake_delay_s``; the brake holds the shaft up to ``brake_torque_nm`` and slips
  with that torque beyond. The waist therefore holds the torso when a drive faults
  instead of dropping it (``brake_torque_nm = 0`` shows the limp drop);
* fault injection: drop incoming frames with a probability, stop answering,
  report a fault, put an error frame (bus-off) on the bus.

The simulation is stepped by a clock (:meth:`SimulatedWaist.step`), so it runs in
lock-step with a controller in tests and experiments, or in real time from its own
thread (:meth:`SimulatedWaist.start_realtime`) next to the waist node, e.g. in the
demo, where :meth:`SimulatedWaist.joint_angles` drives the MuJoCo joints
``waist_pitch`` and ``waist_roll`` and :meth:`SimulatedWaist.set_load_torque`
takes the torso's gravity torque from the simulation.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field

import can
import numpy as np
from numpy.typing import NDArray

from humanoid_balance.can.protocol import (
    CAN_ERR_BUSOFF,
    COUNTS_PER_REV,
    ControlCommand,
    ControlFrame,
    DriveState,
    FaultCode,
    SetpointCommand,
    WaistProtocol,
    rad_to_counts,
)
from humanoid_balance.core.servo import WAIST_DRIVE_CURRENT_LIMIT_A
from humanoid_balance.core.waist_kinematics import DifferentialWaist
from humanoid_balance.exceptions import ConfigurationError, InvalidInputError
from humanoid_balance.threads import name_os_thread
from humanoid_balance.waist.load import TorsoLoad

FloatArray = NDArray[np.float64]
#: the real-time thread's name, Python's and the OS's (``/proc/<pid>/task/<tid>/comm``)
SIMULATED_DRIVES_THREAD_NAME = "simulated-waist"
#: the setpoint frame kind each drive mode takes
_MODE_KIND = {ControlCommand.MODE_CURRENT: "current", ControlCommand.MODE_VELOCITY: "velocity",
              ControlCommand.MODE_POSITION: "position"}


@dataclass(frozen=True)
class MotorParameters:
    """One waist motor and its drive (SI units).

    Attributes:
        torque_constant_nm_a: ``k_t`` (= back-EMF constant in V s/rad).
        resistance_ohm: armature resistance.
        electrical_time_constant_s: ``L / R`` (paper: 11 ms).
        current_loop_gain: drive current-loop proportional gain (paper: 20).
        current_limit_a: drive current limit
            (:data:`~humanoid_balance.core.servo.WAIST_DRIVE_CURRENT_LIMIT_A`).
        rotor_inertia_kg_m2: rotor + gear input inertia.
        viscous_friction_nm_s: at the motor shaft.
        counts_per_rev: encoder counts per motor turn.
        watchdog_timeout_s: setpoint silence that trips the watchdog.
        brake_torque_nm: holding brake capacity at the motor shaft.
        brake_delay_s: time from disable/fault to brake engaged.
        status_period_s: period of the DriveStatus frame.
    """

    torque_constant_nm_a: float = 0.05
    resistance_ohm: float = 1.0
    electrical_time_constant_s: float = 0.011
    current_loop_gain: float = 20.0
    current_limit_a: float = WAIST_DRIVE_CURRENT_LIMIT_A
    rotor_inertia_kg_m2: float = 5e-5
    viscous_friction_nm_s: float = 1e-5
    counts_per_rev: int = COUNTS_PER_REV
    watchdog_timeout_s: float = 0.02
    brake_torque_nm: float = 0.6
    brake_delay_s: float = 0.005
    status_period_s: float = 0.1

    def __post_init__(self) -> None:
        for name in ("torque_constant_nm_a", "resistance_ohm", "electrical_time_constant_s",
                     "current_loop_gain", "current_limit_a", "rotor_inertia_kg_m2",
                     "watchdog_timeout_s", "status_period_s"):
            value = getattr(self, name)
            if not math.isfinite(value) or value <= 0.0:
                raise ConfigurationError(f"motor {name} must be finite and > 0, got {value}")
        for name in ("viscous_friction_nm_s", "brake_torque_nm", "brake_delay_s"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0.0:
                raise ConfigurationError(f"motor {name} must be finite and >= 0, got {value}")


@dataclass
class SimulatedDrive:
    """The protocol side and fault state of one simulated drive (node id 1 or 2)."""

    node_id: int
    params: MotorParameters
    enabled: bool = False
    fault_code: FaultCode = FaultCode.NONE
    mode: ControlCommand = ControlCommand.MODE_CURRENT
    setpoint: float = 0.0
    last_setpoint_s: float = -math.inf
    disabled_since_s: float = 0.0
    answering: bool = True
    #: the fault's cause persists (a CLEAR_FAULT leaves the fault set until the cause is gone)
    fault_persists: bool = False
    drop_probability: float = 0.0
    frames_received: int = 0
    frames_dropped: int = 0
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))

    @property
    def faulted(self) -> bool:
        """Whether the drive is in a fault state."""
        return self.fault_code != FaultCode.NONE

    @property
    def state(self) -> DriveState:
        """The drive state reported in DriveStatus."""
        if self.faulted:
            return DriveState.FAULT
        return DriveState.ENABLED if self.enabled else DriveState.DISABLED

    def brake_engaged(self, now_s: float) -> bool:
        """Whether the holding brake holds the shaft now."""
        return (not self.enabled) and now_s - self.disabled_since_s >= self.params.brake_delay_s

    def _disable(self, now_s: float) -> None:
        if self.enabled:
            self.disabled_since_s = now_s
        self.enabled = False
        self.setpoint = 0.0

    def fault(self, code: FaultCode, now_s: float) -> None:
        """Enter the fault state: output off, brake engages after its delay."""
        self._disable(now_s)
        self.fault_code = code

    def on_control(self, command: ControlCommand, now_s: float) -> None:
        """Apply a DriveControl command."""
        if command == ControlCommand.DISABLE:
            self._disable(now_s)
        elif command == ControlCommand.ENABLE:
            if not self.faulted and not self.enabled:
                self.enabled = True
                self.setpoint = 0.0  # never resume a latched setpoint
                self.last_setpoint_s = now_s
        elif command == ControlCommand.CLEAR_FAULT:
            if not self.enabled and not self.fault_persists:
                self.fault_code = FaultCode.NONE
        elif not self.enabled:
            self.mode = command  # mode changes only while disabled

    def on_setpoint(self, command: SetpointCommand, now_s: float) -> None:
        """Apply a setpoint frame: only an enabled drive in the matching mode takes it."""
        if self.enabled and command.kind == _MODE_KIND[self.mode]:
            self.setpoint = command.values[self.node_id - 1]
            self.last_setpoint_s = now_s

    def check_watchdog(self, now_s: float) -> None:
        """Fault when enabled and no setpoint came for the watchdog time."""
        if self.enabled and now_s - self.last_setpoint_s > self.params.watchdog_timeout_s:
            self.fault(FaultCode.WATCHDOG, now_s)

    def current_reference(self, theta: float, omega: float) -> float:
        """The current-loop reference, A (0 when not enabled)."""
        if not self.enabled:
            return 0.0
        if self.mode == ControlCommand.MODE_CURRENT:
            i_ref = self.setpoint
        elif self.mode == ControlCommand.MODE_VELOCITY:
            i_ref = 0.5 * (self.setpoint - omega)
        else:
            i_ref = 0.5 * (13.0 * (self.setpoint - theta) - omega)
        lim = self.params.current_limit_a
        return min(max(i_ref, -lim), lim)


class SimulatedWaist:
    """Two simulated drives, the differential and the torso, on one virtual CAN bus.

    Args:
        channel: python-can virtual channel shared with the controller.
        waist: the differential's geometry (gear ratios).
        motor: motor and drive parameters (both motors alike).
        torso: the carried load; None = no built-in load (inertia ``load_inertia_kg_m2``,
            torque only from :meth:`set_load_torque`).
        load_inertia_kg_m2: joint inertia ``[pitch, roll]`` when ``torso`` is None.
        initial_joint_rad: starting ``[pitch, roll]``.
        encoder_zero_joint_rad: the ``[pitch, roll]`` the encoders count from (q = 0: homed;
            ``initial_joint_rad``: incremental encoders powered on where the waist stands).
        substep_s: physics sub-step.
        bus: an already-open python-can bus to use instead of opening ``channel``.
    """

    def __init__(self, *, channel: str = "waist", waist: DifferentialWaist | None = None,
                 motor: MotorParameters | None = None, torso: TorsoLoad | None = None,
                 load_inertia_kg_m2: tuple[float, float] = (2.6, 2.3),
                 initial_joint_rad: tuple[float, float] = (0.0, 0.0),
                 encoder_zero_joint_rad: tuple[float, float] = (0.0, 0.0),
                 substep_s: float = 2.5e-4, bus: can.BusABC | None = None) -> None:
        if not math.isfinite(substep_s) or not 0.0 < substep_s <= 1e-3:
            raise ConfigurationError(f"substep_s must be in (0, 1 ms], got {substep_s}")
        self.waist = waist if waist is not None else DifferentialWaist()
        self.params = motor if motor is not None else MotorParameters()
        self.torso = torso
        inertia = torso.inertia_kg_m2 if torso is not None else load_inertia_kg_m2
        j_qw = self.waist.j_qw
        self._mass = (self.params.rotor_inertia_kg_m2 * np.eye(2)
                      + j_qw.T @ np.diag(np.asarray(inertia, dtype=float)) @ j_qw)
        #: the same two matrices as floats, for the sub-steps
        self._mass_inv = tuple(tuple(float(v) for v in row) for row in np.linalg.inv(self._mass))
        self._j_qw = tuple(tuple(float(v) for v in row) for row in j_qw)
        self.protocol = WaistProtocol(self.params.counts_per_rev)
        #: the virtual channel (when this object opened the bus)
        self.channel = channel
        self.bus = bus if bus is not None else can.Bus(interface="virtual", channel=channel)
        self._own_bus = bus is None
        self.drives = (SimulatedDrive(1, self.params), SimulatedDrive(2, self.params))
        self.substep_s = substep_s
        self.time_s = 0.0
        self.theta = self.waist.motor_from_joint(np.asarray(initial_joint_rad, dtype=float))
        #: shaft angles [rad] at which the drives' position counts are 0
        self._theta_zero = tuple(float(v) for v in self.waist.motor_from_joint(
            np.asarray(encoder_zero_joint_rad, dtype=float)))
        self.omega = np.zeros(2)
        self.current = np.zeros(2)
        self.external_joint_torque = np.zeros(2)
        self._next_status_s = 0.0
        self._status_dirty = True
        self._lock = threading.RLock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    # --- public API ---------------------------------------------------------------

    def motor_angles(self) -> FloatArray:
        """True motor shaft angles ``[theta1, theta2]``, rad."""
        with self._lock:
            return self.theta.copy()

    def motor_velocities(self) -> FloatArray:
        """Motor speeds ``[w1, w2]``, rad/s."""
        with self._lock:
            return self.omega.copy()

    def motor_currents(self) -> FloatArray:
        """Motor currents, A."""
        with self._lock:
            return self.current.copy()

    def joint_angles(self) -> FloatArray:
        """``[waist_pitch, waist_roll]``, rad (for the MuJoCo joints of the same names)."""
        with self._lock:
            return self.waist.joint_from_motor(self.theta)

    def joint_velocities(self) -> FloatArray:
        """Joint rates ``[pitch, roll]``, rad/s."""
        with self._lock:
            return self.waist.j_qw @ self.omega

    def set_load_torque(self, joint_torque_nm: FloatArray) -> None:
        """External joint torque ``[pitch, roll]`` (e.g. the torso's gravity from MuJoCo), N m.

        Added to the built-in torso's gravity when a torso is configured.
        """
        torque = np.asarray(joint_torque_nm, dtype=float)
        if torque.shape != (2,) or not np.all(np.isfinite(torque)):
            raise InvalidInputError(f"joint torque must be 2 finite values, got {torque!r}")
        with self._lock:
            self.external_joint_torque = torque

    def inject_fault(self, node_id: int, code: FaultCode = FaultCode.INTERNAL, *,
                     persists: bool = False) -> None:
        """Make drive ``node_id`` report a fault (output off, brake).

        Args:
            node_id: the drive.
            code: the fault code it reports.
            persists: the cause stays (an overheated motor): CLEAR_FAULT does not clear it
                until :meth:`remove_fault_cause`.
        """
        with self._lock:
            drive = self.drives[node_id - 1]
            drive.fault(code, self.time_s)
            drive.fault_persists = persists
            self._status_dirty = True

    def remove_fault_cause(self, node_id: int) -> None:
        """The cause of a persistent fault is gone: the next CLEAR_FAULT clears it."""
        with self._lock:
            self.drives[node_id - 1].fault_persists = False

    def stop_answering(self, node_id: int, stop: bool = True) -> None:
        """Drive ``node_id`` stops (or resumes) sending anything."""
        with self._lock:
            self.drives[node_id - 1].answering = not stop

    def drop_frames(self, node_id: int, probability: float) -> None:
        """Drive ``node_id`` loses each incoming frame with ``probability``."""
        if not 0.0 <= probability <= 1.0:
            raise ConfigurationError(f"probability must be in [0, 1], got {probability}")
        with self._lock:
            self.drives[node_id - 1].drop_probability = probability

    def inject_bus_off(self) -> None:
        """Put a bus-off error frame on the bus (as SocketCAN reports a controller bus-off)."""
        self._send(can.Message(arbitration_id=CAN_ERR_BUSOFF, is_error_frame=True,
                               is_extended_id=False, dlc=8, data=bytes(8)))

    def send_raw(self, msg: can.Message) -> None:
        """Send any frame on the bus (malformed-frame tests)."""
        self._send(msg)

    # --- stepping -------------------------------------------------------------------

    def handle_pending(self) -> None:
        """Receive and answer every frame waiting on the bus."""
        while True:
            msg = self.bus.recv(timeout=0.0)
            if msg is None:
                return
            self._handle(msg)

    def step(self, dt: float) -> None:
        """Answer pending frames, then advance the physics by ``dt`` seconds."""
        if not math.isfinite(dt) or dt <= 0.0:
            raise InvalidInputError(f"dt must be finite and > 0, got {dt}")
        self.handle_pending()
        with self._lock:
            n = max(1, math.ceil(dt / self.substep_s - 1e-9))
            h = dt / n
            self._integrate(h, n)
            for drive in self.drives:
                was = drive.fault_code
                drive.check_watchdog(self.time_s)
                if drive.fault_code != was:
                    self._status_dirty = True
            status_due = self.time_s >= self._next_status_s or self._status_dirty
        if status_due:
            self._send_status()

    def start_realtime(self, period_s: float = 0.001) -> None:
        """Step in real time from a daemon thread until :meth:`stop_realtime`."""
        if self._thread is not None:
            return
        self._stop.clear()

        def _run() -> None:
            name_os_thread(SIMULATED_DRIVES_THREAD_NAME)
            last = time.monotonic()
            deadline = last
            while not self._stop.is_set():
                deadline += period_s
                delay = deadline - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                now = time.monotonic()
                # a starved thread slows the simulation down instead of jumping ahead
                # (a jump would process the queued setpoints at a stale time)
                self.step(min(max(now - last, 1e-6), 2.0 * period_s))
                last = now

        self._thread = threading.Thread(target=_run, name=SIMULATED_DRIVES_THREAD_NAME,
                                        daemon=True)
        self._thread.start()

    def stop_realtime(self) -> None:
        """Stop the real-time thread."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=2.0)
            self._thread = None

    def close(self) -> None:
        """Stop stepping and close the bus (if this object opened it)."""
        self.stop_realtime()
        if self._own_bus:
            self.bus.shutdown()

    def __enter__(self) -> SimulatedWaist:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- internals --------------------------------------------------------------------

    def _send(self, msg: can.Message) -> None:
        # a real drive cannot report a failed send either (try/except: contextlib.suppress costs a
        # microsecond a frame)
        try:  # noqa: SIM105
            self.bus.send(msg, timeout=0.01)
        except can.CanError:
            pass

    def _handle(self, msg: can.Message) -> None:
        decoded = self.protocol.decode(msg)
        with self._lock:
            now = self.time_s
            if isinstance(decoded, ControlFrame):
                drive = self.drives[decoded.motor_id - 1]
                if self._lost(drive):
                    return
                before = (drive.enabled, drive.fault_code)
                drive.on_control(decoded.command, now)
                if (drive.enabled, drive.fault_code) != before:
                    self._status_dirty = True
                if drive.enabled and not before[0]:
                    self.current[drive.node_id - 1] = 0.0
            elif isinstance(decoded, SetpointCommand):
                answers = []
                for drive in self.drives:
                    if self._lost(drive):
                        continue
                    drive.on_setpoint(decoded, now)
                    if drive.answering:
                        answers.append(self._feedback(drive))
            else:
                return  # feedback of the other drive, foreign or broken frames: ignored
        if isinstance(decoded, SetpointCommand):
            for answer in answers:
                self._send(answer)

    def _lost(self, drive: SimulatedDrive) -> bool:
        drive.frames_received += 1
        if drive.drop_probability > 0.0 and drive.rng.random() < drive.drop_probability:
            drive.frames_dropped += 1
            return True
        return False

    def _feedback(self, drive: SimulatedDrive) -> can.Message:
        k = drive.node_id - 1
        counts = rad_to_counts(float(self.theta[k]) - self._theta_zero[k], self.params.counts_per_rev)
        return self.protocol.encode_feedback(
            drive.node_id, counts, float(self.current[k]), enabled=drive.enabled,
            fault=drive.faulted, watchdog=drive.fault_code == FaultCode.WATCHDOG,
            brake=drive.brake_engaged(self.time_s))

    def _send_status(self) -> None:
        with self._lock:
            self._status_dirty = False
            self._next_status_s = self.time_s + self.params.status_period_s
            msgs = [self.protocol.encode_status(d.node_id, float(self.omega[d.node_id - 1]),
                                                int(d.fault_code), d.state)
                    for d in self.drives if d.answering]
        for msg in msgs:
            self._send(msg)

    def _integrate(self, h: float, steps: int) -> None:
        """``steps`` sub-steps of ``h`` s (``time_s`` advances with them).

        Plain floats: numpy on 2-vectors costs more in call overhead than in arithmetic.
        """
        p = self.params
        k = p.current_loop_gain
        decay = math.exp(-(1.0 + k) * h / p.electrical_time_constant_s)
        lim = p.current_limit_a
        back_emf = p.torque_constant_nm_a / p.resistance_ohm
        kt, b = p.torque_constant_nm_a, p.viscous_friction_nm_s
        (j00, j01), (j10, j11) = self._j_qw
        (m00, m01), (m10, m11) = self._mass_inv
        torso = self.torso
        drives = self.drives
        enabled0, enabled1 = drives[0].enabled, drives[1].enabled
        t0, t1 = float(self.theta[0]), float(self.theta[1])
        w0, w1 = float(self.omega[0]), float(self.omega[1])
        c0, c1 = float(self.current[0]), float(self.current[1])
        external0, external1 = (float(self.external_joint_torque[0]),
                                float(self.external_joint_torque[1]))
        one_plus_k, neg_lim = 1.0 + k, -lim
        now = self.time_s

        def current(drive: SimulatedDrive, c: float, t: float, w: float) -> float:
            """One motor's current loop after a sub-step, limited (min(max(i, -lim), lim) as
            branches: a builtin call costs more than the arithmetic)."""
            i_ref = drive.current_reference(t, w)
            i_inf = (k * i_ref - back_emf * w) / one_plus_k
            c = i_inf + (c - i_inf) * decay
            return neg_lim if c < neg_lim else (lim if c > lim else c)

        for _ in range(steps):
            # the current loops (motor 1, motor 2); off when the drive is not enabled
            c0 = current(drives[0], c0, t0, w0) if enabled0 else 0.0
            c1 = current(drives[1], c1, t1, w1) if enabled1 else 0.0
            tq0, tq1 = external0, external1
            if torso is not None:
                g0, g1 = torso.gravity_torque_at(j00 * t0 + j01 * t1, j10 * t0 + j11 * t1)
                tq0 += g0
                tq1 += g1
            tau0 = kt * c0 - b * w0 + (j00 * tq0 + j10 * tq1)
            tau1 = kt * c1 - b * w1 + (j01 * tq0 + j11 * tq1)
            braked = ([i for i in (0, 1) if drives[i].brake_engaged(now)]
                      if not (enabled0 and enabled1) else [])
            if braked:
                self.omega = np.array((w0, w1))  # _accelerations reads the speeds
                acc = self._accelerations(np.array([tau0, tau1]), braked, p.brake_torque_nm, h)
                w0, w1 = w0 + float(acc[0]) * h, w1 + float(acc[1]) * h
                if 0 in braked and abs(w0) < 1e-9:
                    w0 = 0.0
                if 1 in braked and abs(w1) < 1e-9:
                    w1 = 0.0
            else:
                w0, w1 = w0 + (m00 * tau0 + m01 * tau1) * h, w1 + (m10 * tau0 + m11 * tau1) * h
            t0, t1 = t0 + w0 * h, t1 + w1 * h
            now += h
        self.time_s = now
        self.current = np.array((c0, c1))
        self.omega = np.array((w0, w1))
        self.theta = np.array((t0, t1))

    def _accelerations(self, tau: FloatArray, braked: list[int], capacity: float,
                       h: float) -> FloatArray:
        """Accelerations with the braked shafts held when the brakes can hold them."""
        mass = self._mass
        if not braked:
            return np.linalg.solve(mass, tau)
        locked = list(braked)
        extra = np.zeros(2)
        for _ in range(3):
            free = [i for i in range(2) if i not in locked]
            acc = np.zeros(2)
            # a locked shaft first stops: its acceleration takes it to rest this sub-step
            for i in locked:
                acc[i] = -self.omega[i] / h
            if free:
                mff = mass[np.ix_(free, free)]
                rhs = (tau + extra)[free] - mass[np.ix_(free, locked)] @ acc[locked]
                acc[free] = np.linalg.solve(mff, rhs)
            needed = mass @ acc - tau - extra  # brake torque that holds the locked shafts
            slipping = [i for i in locked if abs(needed[i]) > capacity]
            if not slipping:
                return acc
            for i in slipping:
                locked.remove(i)
                extra[i] = math.copysign(capacity, needed[i])
        return np.linalg.solve(mass, tau + extra)
