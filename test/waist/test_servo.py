"""Safety of the waist controller on the simulated drives (issue 5), in lock-step without DDS
(humanoid_balance/waist/servo.py with its states, reference and offsets)."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from humanoid_balance.can.bus import WaistCanBus
from humanoid_balance.can.protocol import FaultCode
from humanoid_balance.can.sim_drive import SimulatedWaist
from humanoid_balance.core.servo import ServoGains
from humanoid_balance.exceptions import (
    BusLoadError,
    CanBusError,
    ConfigurationError,
    InvalidInputError,
)
from humanoid_balance.waist import ControllerState, CycleOutput, WaistController, WaistServoConfig
from humanoid_balance.waist.load import TorsoLoad

DT = 0.002
_channels = itertools.count()


@dataclass
class Rig:
    """A controller and simulated drives in lock-step on one virtual channel."""

    sim: SimulatedWaist
    bus: WaistCanBus
    ctl: WaistController
    outputs: list[CycleOutput] = field(default_factory=list)
    sleep_s: float = 0.0

    @property
    def now(self) -> float:
        return self.sim.time_s

    def run(self, cycles: int) -> None:
        for _ in range(cycles):
            self.outputs.append(self.ctl.servo_cycle(self.sim.time_s))
            self.sim.step(DT)
            if self.sleep_s:
                time.sleep(self.sleep_s)

    def run_until(self, predicate: object, max_cycles: int) -> int:
        for k in range(max_cycles):
            if predicate():  # type: ignore[operator]
                return k
            self.run(1)
        raise AssertionError("condition not reached")


def _make_rig(*, torso: TorsoLoad | None = None, initial: tuple[float, float] = (0.0, 0.0),
              notifier: bool = False, **config: object) -> Rig:
    channel = f"waist_safety_{next(_channels)}"
    sim = SimulatedWaist(channel=channel, torso=torso, initial_joint_rad=initial)
    bus = WaistCanBus(channel=channel, use_notifier=notifier, clock=lambda: sim.time_s)
    ctl = WaistController(WaistServoConfig(**config), bus)  # type: ignore[arg-type]
    rig = Rig(sim, bus, ctl, sleep_s=0.001 if notifier else 0.0)
    rig.run(3)
    if notifier:
        rig.run_until(lambda: bus.feedback(1) is not None and bus.feedback(2) is not None, 500)
    ctl.enable(sim.time_s)
    rig.run(5)
    return rig


@pytest.fixture
def rig() -> Iterator[Rig]:
    """An enabled controller holding the unloaded waist at zero."""
    r = _make_rig()
    yield r
    r.bus.close()
    r.sim.close()


@pytest.fixture
def loaded_rig() -> Iterator[Rig]:
    """An enabled controller holding the torso at 20 deg pitch."""
    r = _make_rig(torso=TorsoLoad(), initial=(math.radians(20.0), 0.0))
    yield r
    r.bus.close()
    r.sim.close()


def _ramp(q0: tuple[float, float], q1: tuple[float, float], duration: float) -> tuple[np.ndarray, np.ndarray]:
    times = np.linspace(0.0, duration, 11)
    s = (times / duration)[:, None]
    return times, np.asarray(q0) + s * (np.asarray(q1) - np.asarray(q0))


# --- safety list ---------------------------------------------------------------------------


def test_command_timeout_stops_within_two_servo_periods(rig: Rig) -> None:
    """No command for command_timeout after the last one ended -> controlled stop within 2 periods."""
    times, pos = _ramp((0.0, 0.0), (math.radians(1.0), 0.0), 0.1)
    result = rig.ctl.set_trajectory(times, pos, rig.now)
    assert result.accepted
    # 1 deg in 0.1 s is beyond the acceleration limit: the reference catches up and brakes to
    # rest after the last point's 0.1 s
    deadline = rig.ctl.command_deadline_s
    assert deadline > rig.now + 0.1 + rig.ctl.config.command_timeout_s
    rig.run_until(lambda: rig.ctl.state != ControllerState.RUNNING, 1000)
    stopped_at = rig.outputs[-1].state, rig.now - DT  # time of the cycle that stopped
    assert stopped_at[0] in (ControllerState.STOPPING, ControllerState.HOLDING)
    assert deadline < stopped_at[1] <= deadline + 2 * DT


def test_controlled_stop_ends_holding_with_drives_enabled(rig: Rig) -> None:
    """After the timeout stop the drives stay enabled and the motors come to rest."""
    times, pos = _ramp((0.0, 0.0), (math.radians(2.0), 0.0), 0.2)
    assert rig.ctl.set_trajectory(times, pos, rig.now).accepted
    # until the shaped path's end plus the command timeout, then 0.2 s for the stop
    rig.run(round((rig.ctl.command_deadline_s - rig.now + 0.2) / DT))
    assert rig.ctl.state == ControllerState.HOLDING
    assert all(d.enabled for d in rig.sim.drives)
    assert np.max(np.abs(rig.sim.motor_velocities())) < 0.5


def _stop_while_moving(r: Rig, target_deg: tuple[float, float], stop_at_pitch_deg: float,
                       ) -> tuple[np.ndarray, np.ndarray, list[CycleOutput]]:
    """Command ``target_deg`` (as fast as the limits allow), stop once the shaped pitch passes
    ``stop_at_pitch_deg``; the stop's outputs until HOLDING (and 0.3 s on), and the reference
    position and velocity at the stop."""
    assert r.ctl.set_trajectory(np.array([0.05]), np.radians([target_deg]), r.now).accepted
    r.run_until(lambda: r.outputs[-1].shaped_reference_rad[0] >= math.radians(stop_at_pitch_deg),
                3000)
    q0, v0 = r.ctl.reference_at(r.now)
    r.ctl.stop()
    first = len(r.outputs)
    r.run_until(lambda: r.ctl.state == ControllerState.HOLDING, 3000)
    r.run(150)
    return q0, v0, r.outputs[first:]


def _print_stop(label: str, r: Rig, q0: np.ndarray, v0: np.ndarray,
                outs: list[CycleOutput]) -> None:
    """The stop's figures (``pytest -s``; the README's row)."""
    a = r.ctl.config.acceleration_limit_rad_s2
    braking = [o for o in outs if o.state == ControllerState.STOPPING]
    shaped_v = np.array([o.shaped_velocity_rad_s for o in braking])
    moving = shaped_v[np.linalg.norm(shaped_v, axis=1) > 1e-3]
    direction = np.degrees(np.max(np.abs(np.arctan2(moving[:, 0] * v0[1] - moving[:, 1] * v0[0],
                                                      moving @ v0))))
    pitch = np.array([o.joint_position_rad[0] for o in outs])
    print(f"\n{label}: stopped at {np.degrees(q0).round(2)} deg moving {np.degrees(v0).round(2)} "
          f"deg/s; braking {len(braking) * DT:.3f} s (|v|max / a {np.max(np.abs(v0)) / a:.3f} s), "
          f"largest {math.degrees(np.max(np.abs(np.diff(shaped_v, axis=0)))) / DT:.2f} deg/s^2 "
          f"(limit {math.degrees(a):.0f}), direction error {direction:.1e} deg; the waist "
          f"{math.degrees(np.max(pitch) - outs[-1].shaped_reference_rad[0]):.4f} deg past the "
          f"rest, largest pitch {math.degrees(np.max(pitch)):.2f} deg")


@pytest.mark.parametrize("loaded", [False, True], ids=["unloaded", "25 kg torso"])
def test_controlled_stop_brakes_within_the_acceleration_limit_keeping_the_direction(
        loaded: bool) -> None:
    """A stop at speed: the reference brakes both joints together at the acceleration limit
    (the path's direction kept), the waist rests where the reference does, within 0.02 deg
    (issue 14)."""
    r = _make_rig(torso=TorsoLoad(), initial=(math.radians(20.0), 0.0)) if loaded else _make_rig()
    try:
        a = r.ctl.config.acceleration_limit_rad_s2
        q0, v0, outs = _stop_while_moving(r, (44.0, 10.0) if loaded else (30.0, 10.0),
                                          30.0 if loaded else 12.0)
        _print_stop("25 kg torso" if loaded else "unloaded", r, q0, v0, outs)
        assert np.linalg.norm(v0) > math.radians(18.0)  # moving fast when stopped
        braking = [o for o in outs if o.state == ControllerState.STOPPING]
        shaped_v = np.array([o.shaped_velocity_rad_s for o in braking])
        # every period's velocity change within a dt (a rounding above it at most)
        assert np.max(np.abs(np.diff(shaped_v, axis=0))) <= a * DT * (1 + 1e-9)
        # the direction of the braking velocity is the direction at the stop
        moving = shaped_v[np.linalg.norm(shaped_v, axis=1) > 1e-3]
        cross = moving[:, 0] * v0[1] - moving[:, 1] * v0[0]
        assert np.max(np.abs(cross / (np.linalg.norm(moving, axis=1) * np.linalg.norm(v0)))) < 1e-9
        # it lasts |v0|max / a (within a period), and the path rests where it brakes to
        assert len(braking) * DT == pytest.approx(np.max(np.abs(v0)) / a, abs=2 * DT)
        end = q0 + v0 * (np.max(np.abs(v0)) / a) / 2
        np.testing.assert_allclose(outs[-1].shaped_reference_rad, end, atol=1e-9)
        # the waist follows without overshooting the rest position
        pitch = np.array([o.joint_position_rad[0] for o in outs])
        assert math.degrees(np.max(pitch) - end[0]) <= 0.02
        assert np.degrees(np.max(np.abs(r.sim.joint_velocities()))) < 0.1
        assert r.ctl.state == ControllerState.HOLDING
    finally:
        r.bus.close()
        r.sim.close()


def test_controlled_stop_at_a_high_acceleration_limit_stays_in_the_range() -> None:
    """acceleration_limit 300 deg/s^2, stopped at 25 deg pitch moving 57 deg/s toward the 45 deg
    edge: the reference brakes at 300 deg/s^2 and the waist rests 5.4 deg on, near the
    reference's rest. Before, the stop ramped the motors at stop_deceleration (28.6 deg/s^2 at the
    joint) into the edge, where the range clamp stopped the reference in one period: the pitch
    peaked at 48.3 deg, 3.3 deg past the limit (the audit's case)."""
    a = math.radians(300.0)
    r = _make_rig(acceleration_limit_rad_s2=a, initial=(math.radians(-4.0), 0.0))
    try:
        q0, v0, outs = _stop_while_moving(r, (44.0, 0.0), 25.0)
        _print_stop("acceleration_limit 300 deg/s^2", r, q0, v0, outs)
        assert math.degrees(v0[0]) > 55.0
        rest = q0[0] + v0[0] ** 2 / (2 * a)
        shaped = np.array([o.shaped_reference_rad[0] for o in outs])
        shaped_v = np.array([o.shaped_velocity_rad_s[0] for o in outs
                             if o.state == ControllerState.STOPPING])
        assert np.max(np.abs(np.diff(shaped_v))) <= a * DT * (1 + 1e-9)
        assert np.max(shaped) == pytest.approx(rest, abs=1e-9)
        measured = np.array([o.joint_position_rad[0] for o in outs])
        # at ten times the default limit the paper's servo gains lag more than issue 14's 0.02
        # deg (that bound is the default-limit test's above): measured 0.021 deg past the rest
        assert math.degrees(np.max(measured) - rest) <= 0.05
        assert math.degrees(np.max(measured)) < 45.0 - 10.0
        assert r.ctl.state == ControllerState.HOLDING
    finally:
        r.bus.close()
        r.sim.close()


def test_final_stop_refuses_commands_until_the_next_enable(rig: Rig) -> None:
    """After stop(final=True) (deactivate, /waist/enable false) a command is refused, even one
    planned before the disable; after disable and enable commands are taken again."""
    assert rig.ctl.set_trajectory(np.array([1.0]), np.radians([[5.0, 0.0]]), rig.now).accepted
    rig.run(100)
    rig.ctl.stop(final=True)
    result = rig.ctl.set_trajectory(np.array([0.1]), np.radians([[20.0, 5.0]]), rig.now)
    assert not result.accepted and "stopping before its drives are disabled" in result.message
    rig.run_until(lambda: rig.ctl.state == ControllerState.HOLDING, 1000)
    assert not rig.ctl.set_trajectory(np.array([0.1]), np.radians([[20.0, 5.0]]), rig.now).accepted
    rig.ctl.disable()
    rig.run(5)
    rig.ctl.enable(rig.now)
    rig.run(5)
    assert rig.ctl.set_trajectory(np.array([0.5]), np.radians([[2.0, 0.0]]), rig.now).accepted


def test_enable_whose_second_drive_send_fails_disables_both() -> None:
    """A send failure to drive 2 during enable: drive 1 (already enabled) is disabled again and
    the brakes hold the loaded torso (a drive left enabled, fed zero current by the idle polls,
    let it fall from 30 to 44.5 deg pitch in 0.3 s)."""
    channel = f"waist_safety_{next(_channels)}"
    sim = SimulatedWaist(channel=channel, torso=TorsoLoad(), initial_joint_rad=(math.radians(30.0), 0.0))
    bus = WaistCanBus(channel=channel, use_notifier=False, clock=lambda: sim.time_s)
    ctl = WaistController(WaistServoConfig(), bus)
    r = Rig(sim, bus, ctl)
    try:
        r.run(3)
        send = bus.send_control

        def failing(node: int, command: object) -> None:
            if node == 2:
                raise CanBusError("CAN send of 0x102 failed: Transmit buffer full")
            send(node, command)  # type: ignore[arg-type]

        bus.send_control = failing  # type: ignore[method-assign]
        with pytest.raises(CanBusError, match="Transmit buffer full"):
            ctl.enable(r.now)
        bus.send_control = send  # type: ignore[method-assign]
        q0 = sim.joint_angles().copy()
        r.run(150)
        assert ctl.state == ControllerState.IDLE
        assert not any(d.enabled for d in sim.drives)
        assert np.degrees(np.max(np.abs(sim.joint_angles() - q0))) < 0.05
    finally:
        bus.close()
        sim.close()


def test_a_drive_enabled_behind_the_controllers_back_is_disabled_again(rig: Rig) -> None:
    """Idle, a drive that reports enabled (another master, a lost DISABLE) more than
    REDISABLE_EVERY periods after the last DISABLE is sent DISABLE again, and the controller says
    so; a drive's feedback lagging a DISABLE just sent is no such drive (no message)."""
    from humanoid_balance.can.protocol import ControlCommand
    from humanoid_balance.waist.states import REDISABLE_EVERY

    rig.ctl.disable()
    rig.run(30)
    assert not any(d.enabled for d in rig.sim.drives)
    assert not any("report enabled" in m for m in rig.ctl.messages)  # the lag after a DISABLE
    rig.bus.send_control(1, ControlCommand.MODE_CURRENT)
    rig.bus.send_control(1, ControlCommand.ENABLE)
    enabled = []
    for _ in range(REDISABLE_EVERY + 3):
        rig.run(1)
        enabled.append(rig.sim.drives[0].enabled)
    assert enabled[0]  # the drive took the ENABLE
    assert not any(d.enabled for d in rig.sim.drives)
    assert any("report enabled while the controller is idle" in m for m in rig.ctl.messages)


@pytest.mark.parametrize(("pitch_deg", "enabled"), [(-12.0, False), (-5.1, True), (45.15, True),
                                                    (45.3, False)])
def test_enable_outside_the_range(pitch_deg: float, enabled: bool) -> None:
    """More than 0.2 deg outside the range, enable is refused with the joint, value and range (the
    hold would step the waist to the edge: from -12 deg, 64 deg/s and a saturated current); within
    it, the hold steps to the edge at most that far."""
    channel = f"waist_safety_{next(_channels)}"
    sim = SimulatedWaist(channel=channel, initial_joint_rad=(math.radians(pitch_deg), 0.0))
    bus = WaistCanBus(channel=channel, use_notifier=False, clock=lambda: sim.time_s)
    ctl = WaistController(WaistServoConfig(), bus)
    r = Rig(sim, bus, ctl)
    try:
        r.run(3)
        if not enabled:
            with pytest.raises(InvalidInputError, match=rf"pitch is at {pitch_deg:.2f} deg, range "
                                                        r"\[-5.0, 45.0\] deg"):
                ctl.enable(r.now)
            assert ctl.state == ControllerState.IDLE
            return
        ctl.enable(r.now)
        r.run(300)
        assert ctl.state == ControllerState.HOLDING
        assert -5.0 - 1e-3 <= math.degrees(sim.joint_angles()[0]) <= 45.0 + 1e-3
    finally:
        bus.close()
        sim.close()


def _unhomed_rig(standing_deg: tuple[float, float], counting_from_deg: tuple[float, float]) -> Rig:
    """The 25 kg torso standing at ``standing_deg``; the drives' encoders count from
    ``counting_from_deg`` (where they were powered on); polled, not enabled."""
    channel = f"waist_safety_{next(_channels)}"
    standing = (math.radians(standing_deg[0]), math.radians(standing_deg[1]))
    sim = SimulatedWaist(channel=channel, torso=TorsoLoad(), initial_joint_rad=standing,
                         encoder_zero_joint_rad=(math.radians(counting_from_deg[0]),
                                                 math.radians(counting_from_deg[1])))
    bus = WaistCanBus(channel=channel, use_notifier=False, clock=lambda: sim.time_s)
    rig = Rig(sim, bus, WaistController(WaistServoConfig(), bus))
    rig.run(3)
    return rig


@pytest.mark.parametrize(("inclinometer_deg", "enabled"), [
    ((20.0, 3.0), False),  # the drives were powered on at (20, 3) deg: the encoders say (0, 0)
    ((1.9, 0.0), True),  # within homing_tolerance (2 deg): a mounting error the outer loop takes
    ((2.1, 0.0), False),
    (None, True),  # no sample to check against: enabled, encoders_checked False
])
def test_enable_checks_the_encoders_against_the_inclinometer(
        inclinometer_deg: tuple[float, float] | None, enabled: bool) -> None:
    """Incremental encoders count from where the drives were powered on: with the torso at
    (20, 3) deg and the drives powered on there, the encoders put the waist at (0, 0) deg and
    every range limit guards the wrong angle. A fresh inclinometer sample more than
    homing_tolerance from the encoders refuses the enable, naming both; no sample enables
    unchecked (encoders_checked False)."""
    standing = (20.0, 3.0) if inclinometer_deg in (None, (20.0, 3.0)) else (0.0, 0.0)
    r = _unhomed_rig(standing, counting_from_deg=standing)
    try:
        if inclinometer_deg is not None:
            r.ctl.on_inclinometer(math.radians(inclinometer_deg[0]),
                                  math.radians(inclinometer_deg[1]), r.now)
        if not enabled:
            pitch, roll = inclinometer_deg  # type: ignore[misc]
            with pytest.raises(InvalidInputError, match=(
                    r"the encoders put the waist at \(-?0.00, -?0.00\) deg \(pitch, roll\), the "
                    rf"inclinometer at \({pitch:.2f}, {roll:.2f}\) deg: {max(pitch, roll):.2f} "
                    r"deg apart, more than homing_tolerance=2 deg")):
                r.ctl.enable(r.now)
            r.run(100)
            assert r.ctl.state == ControllerState.IDLE
            assert not any(d.enabled for d in r.sim.drives)
            return
        r.ctl.enable(r.now)
        r.run(100)
        assert r.ctl.state == ControllerState.HOLDING
        assert r.ctl.encoders_checked is (inclinometer_deg is not None)
    finally:
        r.bus.close()
        r.sim.close()


def test_a_sample_fresh_when_the_enable_was_asked_still_checks_a_later_attempt() -> None:
    """The node retries an enable while its executor takes no sample: passed the request's
    time, a disagreeing sample fresh then refuses an attempt 0.15 s later (judged at the
    attempt, it had gone stale and the waist enabled unchecked); a sample older than the
    timeout at the request decides nothing, as before."""
    r = _unhomed_rig((0.0, 0.0), (0.0, 0.0))
    try:
        r.ctl.on_inclinometer(math.radians(10.0), 0.0, r.now)
        asked = r.now
        r.run(round(0.15 / DT))  # the attempts' retries: 0.15 s > inclinometer_timeout 0.1 s
        with pytest.raises(InvalidInputError, match="more than homing_tolerance=2 deg"):
            r.ctl.enable(r.now, inclinometer_at_s=asked)
        assert r.ctl.state == ControllerState.IDLE
        r.ctl.enable(r.now, inclinometer_at_s=asked + 0.15)  # stale when asked
        r.run(50)
        assert r.ctl.state == ControllerState.HOLDING and r.ctl.encoders_checked is False
    finally:
        r.bus.close()
        r.sim.close()


def test_a_stale_inclinometer_sample_is_not_checked_against() -> None:
    """A disagreeing sample older than inclinometer_timeout decides nothing: the enable goes
    ahead unchecked (the controller uses the encoders alone then, as it does while running)."""
    r = _unhomed_rig((0.0, 0.0), (0.0, 0.0))
    try:
        r.ctl.on_inclinometer(math.radians(10.0), 0.0, r.now)
        r.run(round(0.15 / DT))  # 0.15 s > inclinometer_timeout 0.1 s
        r.ctl.enable(r.now)
        r.run(50)
        assert r.ctl.state == ControllerState.HOLDING and r.ctl.encoders_checked is False
    finally:
        r.bus.close()
        r.sim.close()


def test_homing_tolerance_must_be_positive() -> None:
    with pytest.raises(ConfigurationError, match="homing_tolerance_rad must be finite and > 0"):
        WaistServoConfig(homing_tolerance_rad=0.0)


def test_silent_drive_disables_both_motors(rig: Rig) -> None:
    """A drive that stops answering -> FAULT, both drives disabled, reason reported."""
    rig.sim.stop_answering(2)
    rig.run(10)
    assert rig.ctl.state == ControllerState.FAULT
    assert "drive 2 stopped answering" in rig.ctl.fault_reason
    assert not any(d.enabled for d in rig.sim.drives)


def test_bus_off_faults_and_drives_stop(rig: Rig) -> None:
    """Bus-off -> FAULT; no setpoint can be sent, so both drives' watchdogs stop them."""
    rig.sim.inject_bus_off()
    rig.run(20)
    assert rig.ctl.state == ControllerState.FAULT and rig.ctl.fault_reason == "CAN bus off"
    assert not any(d.enabled for d in rig.sim.drives)



def test_bus_off_between_check_and_send_named_as_bus_off(rig: Rig,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A bus-off that arrives after the safety check (on the receive thread) is still named."""
    send = rig.bus.send_currents

    def bus_off_then_send(*args: Any, **kwargs: Any) -> Any:
        rig.sim.inject_bus_off()
        rig.bus.poll()  # the error frame is received now, after the safety check
        return send(*args, **kwargs)

    monkeypatch.setattr(rig.bus, "send_currents", bus_off_then_send)
    rig.run(1)
    assert rig.ctl.state == ControllerState.FAULT and rig.ctl.fault_reason == "CAN bus off"

def test_bus_off_stays_until_reset(rig: Rig) -> None:
    """After bus-off the controller stays in FAULT and refuses enable until reset is requested."""
    rig.sim.inject_bus_off()
    rig.run(200)
    assert rig.ctl.state == ControllerState.FAULT
    with pytest.raises(CanBusError, match=r"cannot enable in FAULT \(CAN bus off\)"):
        rig.ctl.enable(rig.now)


def test_reset_after_bus_off_allows_enable(rig: Rig) -> None:
    """reset_fault re-opens the bus; the drives' faults clear and the waist can be enabled."""
    rig.sim.inject_bus_off()
    rig.run(20)
    rig.ctl.reset_fault(rig.now)
    rig.run(5)
    rig.ctl.enable(rig.now)
    rig.run(10)
    assert rig.ctl.state == ControllerState.HOLDING and all(d.enabled for d in rig.sim.drives)


def test_target_beyond_limit_refused(rig: Rig) -> None:
    """The paper's -12 deg pitch start is refused with the point, the value and the range."""
    times = np.array([0.0, 1.0])
    pos = np.radians([[-12.0, -1.0], [-11.0, -1.167]])
    result = rig.ctl.set_trajectory(times, pos, rig.now)
    assert result == (False, False,
                      "refused: point 0 pitch -12.000 deg is outside [-5.0, 45.0] deg "
                      "(2 values out of range); send targets inside the joint range "
                      "(or set limit_policy to clamp)")


def test_refused_target_leaves_the_waist_holding(rig: Rig) -> None:
    """After a refused trajectory the controller keeps holding; the waist does not move."""
    rig.ctl.set_trajectory(np.array([0.0, 1.0]), np.radians([[-12.0, 0.0], [-11.0, 0.0]]),
                           rig.now)
    rig.run(200)
    assert rig.ctl.state == ControllerState.HOLDING
    assert np.max(np.abs(np.degrees(rig.sim.joint_angles()))) < 0.01


def test_clamped_target_never_sent_beyond_limit() -> None:
    """With limit_policy=clamp, a 20 deg roll target stops at 15 deg; no reference beyond."""
    r = _make_rig(limit_policy="clamp")
    try:
        times, pos = _ramp((0.0, 0.0), (0.0, math.radians(20.0)), 0.5)
        result = r.ctl.set_trajectory(times, pos, r.now)
        assert result.clamped
        r.run(600)
        refs = np.degrees(np.array([o.reference_rad for o in r.outputs]))
        assert refs[:, 1].max() <= 15.0 + 1e-9
        assert math.degrees(r.sim.joint_angles()[1]) < 15.05
    finally:
        r.bus.close()
        r.sim.close()


def test_nan_trajectory_rejected(rig: Rig) -> None:
    """A trajectory with NaN is rejected and changes nothing."""
    result = rig.ctl.set_trajectory(np.array([0.0, 1.0]), np.array([[0.0, 0.0], [np.nan, 0.0]]),
                                    rig.now)
    assert result == (False, False, "refused: the trajectory holds NaN or infinite values")
    assert rig.ctl.state == ControllerState.HOLDING


def test_malformed_and_error_frames_counted_and_ignored(rig: Rig) -> None:
    """Garbage frames and an error frame are counted; the controller keeps running."""
    import can

    times, pos = _ramp((0.0, 0.0), (math.radians(1.0), 0.0), 0.5)
    rig.ctl.set_trajectory(times, pos, rig.now)
    rig.sim.send_raw(can.Message(arbitration_id=0x181, data=b"\x01", is_extended_id=False))
    rig.sim.send_raw(can.Message(arbitration_id=0x1ABCDEF, data=bytes(8), is_extended_id=True))
    rig.sim.send_raw(can.Message(arbitration_id=0x4, is_error_frame=True, data=bytes(8)))
    rig.run(50)
    counters = rig.bus.counters()
    assert (counters["rejected_wrong_length"], counters["rejected_foreign_id"],
            counters["error_frames"]) == (1, 1, 1)
    assert rig.ctl.state == ControllerState.RUNNING


def test_notifier_thread_exception_is_lost_feedback() -> None:
    """An exception in the Notifier receive thread -> FAULT as lost feedback, drives disabled."""
    r = _make_rig(notifier=True, feedback_timeout_s=0.2)
    try:
        def broken(msg: object) -> None:
            raise RuntimeError("listener crashed")

        r.bus.protocol.decode = broken  # type: ignore[method-assign,assignment]
        r.run_until(lambda: r.ctl.state == ControllerState.FAULT, 500)
        assert "feedback lost: receive thread failed" in r.ctl.fault_reason
        r.run(3)
        assert not any(d.enabled for d in r.sim.drives)
    finally:
        r.bus.close()
        r.sim.close()


def test_reactivate_starts_from_current_position_at_rest(rig: Rig) -> None:
    """Disable mid-motion, enable again: reference = measured position, zero rate, no old setpoint."""
    times, pos = _ramp((0.0, 0.0), (math.radians(3.0), math.radians(2.0)), 1.0)
    rig.ctl.set_trajectory(times, pos, rig.now)
    rig.run(200)
    rig.ctl.disable()
    rig.run(50)
    parked = rig.sim.joint_angles()
    rig.ctl.enable(rig.now)
    rig.run(300)
    assert rig.ctl.state == ControllerState.HOLDING
    assert np.max(np.abs(np.degrees(rig.sim.joint_angles() - parked))) < 0.01


def test_fault_under_load_holds_the_torso(loaded_rig: Rig) -> None:
    """A drive fault while carrying the torso at 20 deg: drives off, brakes hold (< 0.1 deg in 1 s)."""
    rig = loaded_rig
    rig.run(100)
    before = rig.sim.joint_angles()
    rig.sim.inject_fault(1, FaultCode.OVERCURRENT)
    rig.run(500)
    assert rig.ctl.state == ControllerState.FAULT
    assert "drive 1 reported a fault" in rig.ctl.fault_reason
    assert np.max(np.abs(np.degrees(rig.sim.joint_angles() - before))) < 0.1


def test_only_the_control_loop_feeds_the_watchdog(rig: Rig) -> None:
    """When the servo loop stalls, no setpoint is resent and both drives' watchdogs trip."""
    for _ in range(20):
        rig.sim.step(DT)  # the controller's loop does not run
    assert all(d.fault_code == FaultCode.WATCHDOG for d in rig.sim.drives)


def test_one_setpoint_frame_per_servo_period(rig: Rig) -> None:
    """Each servo period sends exactly one setpoint frame (nothing resent on its own)."""
    before = rig.sim.drives[0].frames_received
    rig.run(100)
    assert rig.sim.drives[0].frames_received - before == 100


def _current_steps_on_a_pitch_ramp(drop_probability: float) -> tuple[float, float, int]:
    """Std of the per-period change and peak of motor 1's commanded current on a 5 deg/s ramp.

    Drive 1 loses each incoming frame with ``drop_probability`` (then it neither takes the
    setpoint nor answers: the controller sees its previous sample again). Also returns the
    frames drive 1 lost.
    """
    r = _make_rig()
    try:
        r.sim.drop_frames(1, drop_probability)
        times = np.linspace(0.0, 2.0, 11)
        positions = np.column_stack([np.radians(5.0) * times, np.zeros_like(times)])
        assert r.ctl.set_trajectory(times, positions, r.now).accepted
        r.outputs.clear()
        r.run(1000)
        assert r.ctl.state == ControllerState.RUNNING
        # the steady part of the ramp: the shaped path accelerates (30 deg/s^2) until 0.29 s
        # and starts its final stop at 1.86 s
        current = np.array([o.currents_sent_a for o in r.outputs[250:900]])[:, 0]
        return (float(np.std(np.diff(current))), float(np.max(np.abs(current))),
                r.sim.drives[0].frames_dropped)
    finally:
        r.bus.close()
        r.sim.close()


def test_lost_feedback_frames_do_not_kick_the_current() -> None:
    """Drive 1 losing 20 % of its frames on a 5 deg/s pitch ramp: no current spikes.

    Measured on the steady part of the ramp (0.5 to 1.8 s: the shaped reference's planned
    acceleration at the start takes 0.29 A, no kick): without drops the per-period change
    of the commanded current has a std of 0.092 A (encoder quantisation) and a peak of
    0.077 A; with drops, before the fix (speed from the repeated sample over a fixed dt: 0,
    then twice the speed) 4.75 A std and the 8 A limit; after it (speed held over a
    repeated sample, the next divided by the time that passed, integrator not advanced)
    0.100 A std and 0.51 A peak (the position loop
    still sees the stale position for up to a few periods).
    """
    std_clean, peak_clean, dropped_clean = _current_steps_on_a_pitch_ramp(0.0)
    std_drops, peak_drops, dropped = _current_steps_on_a_pitch_ramp(0.2)
    assert dropped_clean == 0 and dropped > 100
    assert std_drops < 1.5 * std_clean
    assert peak_drops < 1.0 and peak_clean < 0.2


def test_current_limit_beyond_the_protocol_refused() -> None:
    """A 12 A current limit (the DBC's WaistCurrentCmd carries +-10 A) is refused when built."""
    with pytest.raises(ConfigurationError) as info:
        WaistController(WaistServoConfig(gains=ServoGains(current_limit_a=12.0)), bus=None)  # type: ignore[arg-type]
    assert str(info.value) == (
        "current_limit 12.0 A is outside the range [-10, 10] A of WaistCurrentCmd.Current1 in "
        "waist_drive.dbc: such setpoints cannot be sent; set current_limit to at most 10 A")


def test_current_limit_at_the_protocol_range_saturates_without_fault() -> None:
    """A 10 A limit (the DBC's end) is accepted; saturated setpoints are sent, no fault."""
    r = _make_rig(gains=ServoGains(current_limit_a=10.0, current_unit_a=0.0085))
    try:
        r.ctl.set_trajectory(np.array([0.05]), np.radians([[10.0, 0.0]]), r.now)
        r.run(20)
        assert r.ctl.state == ControllerState.RUNNING, r.ctl.fault_reason
        sent = np.array([o.currents_sent_a for o in r.outputs[-20:]])
        assert np.max(np.abs(sent)) == 10.0
    finally:
        r.bus.close()
        r.sim.close()


def test_bus_overload_refused_with_the_figure() -> None:
    """A 1 kHz servo rate loads 320 kbit/s beyond 50 % and the controller refuses it."""
    with pytest.raises(BusLoadError, match=r"CAN bus load 95\.9 % of 320000 bit/s"):
        WaistController(WaistServoConfig(gains=ServoGains(dt=0.001)), bus=None)  # type: ignore[arg-type]


def test_gear_ratios_beyond_the_encoder_count_refused() -> None:
    """Gear ratios whose motor angles over the joint range pass the drives' 24-bit position count
    (+-3217 rad at 16384 counts per turn, never unwrapped) are refused when the controller is
    built (5000: 5236 rad); 3000 (3142 rad) is taken."""
    from humanoid_balance.core.waist_kinematics import DifferentialWaist

    channel = f"waist_safety_{next(_channels)}"
    bus = WaistCanBus(channel=channel, use_notifier=False)
    try:
        with pytest.raises(ConfigurationError, match=r"5236 rad, beyond the \+-3217 rad"):
            WaistController(WaistServoConfig(
                waist=DifferentialWaist(gear_ratio_pitch=5000.0, gear_ratio_roll=5000.0)), bus)
        WaistController(WaistServoConfig(
            waist=DifferentialWaist(gear_ratio_pitch=3000.0, gear_ratio_roll=3000.0)), bus)
    finally:
        bus.close()


def test_swapped_motor_ids_send_each_current_to_its_drive() -> None:
    """With motor_ids (2, 1) each motor's setpoint goes to the drive its feedback comes from.

    The simulated differential has motor 1 on node 1, so to this controller its motors are
    swapped and its roll is the simulation's roll mirrored; a setpoint sent to the wrong drive
    would not bring the waist to the pose.
    """
    r = _make_rig(motor_ids=(2, 1))
    try:
        r.ctl.set_trajectory(np.array([0.5]), np.radians([[1.0, 0.5]]), r.now)
        r.run(400)
        assert r.ctl.state == ControllerState.RUNNING, r.ctl.fault_reason
        np.testing.assert_allclose(np.degrees(r.sim.joint_angles()), [1.0, -0.5], atol=0.01)
    finally:
        r.bus.close()
        r.sim.close()


# --- anti-windup and the issue-12 fixes ----------------------------------------------------------


def test_motors_held_back_do_not_wind_the_integrals_up(loaded_rig: Rig) -> None:
    """A 50 N m push holding the motors back for 0.6 s: after release no overshoot beyond 0.2 deg.

    Measured: 0.13 deg pitch and roll (the droop integral, within its 0.5 deg bound, had taken
    part of the push as a load); with the outer offset integrating the encoders' error
    unbounded and without freezing while held back, 0.79 deg pitch and 0.87 deg roll.
    """
    rig = loaded_rig
    rig.run(100)
    start = np.degrees(rig.sim.joint_angles())
    assert rig.ctl.set_trajectory(np.array([1.0]), np.radians([[start[0] + 3.0, -2.0]]),
                                  rig.now).accepted
    angles = []
    for k in range(3000):
        if k == 150:
            rig.sim.set_load_torque(np.array([-50.0, 50.0]))
        if k == 450:
            rig.sim.set_load_torque(np.zeros(2))
        rig.run(1)
        angles.append(np.degrees(rig.sim.joint_angles()))
    q = np.array(angles) - [start[0], 0.0]
    assert q[:, 0].max() - 3.0 < 0.2 and -2.0 - q[:, 1].min() < 0.2
    np.testing.assert_allclose(q[-1], [3.0, -2.0], atol=0.01)


def test_reset_refused_while_the_fault_persists(rig: Rig) -> None:
    """A drive fault whose cause persists: reset_fault names it and the controller stays in FAULT."""
    rig.sim.inject_fault(1, FaultCode.OVERTEMPERATURE, persists=True)
    rig.run(5)
    assert rig.ctl.state == ControllerState.FAULT
    cause = rig.ctl.reset_fault(rig.now)
    rig.run(5)  # the drives answer the clear request; the fault is still there
    cause = rig.ctl.reset_fault(rig.now)
    assert cause.startswith("drive 1 still reports a fault (code ")
    assert rig.ctl.state == ControllerState.FAULT and "after the reset request" in rig.ctl.fault_reason
    with pytest.raises(CanBusError, match="cannot enable in FAULT"):
        rig.ctl.enable(rig.now)


def test_reset_succeeds_once_the_cause_is_gone(rig: Rig) -> None:
    """Once the persistent cause is gone, a renewed reset clears the fault and enable works."""
    rig.sim.inject_fault(2, FaultCode.OVERTEMPERATURE, persists=True)
    rig.run(5)
    rig.ctl.reset_fault(rig.now)
    rig.run(5)
    assert rig.ctl.reset_fault(rig.now)
    rig.sim.remove_fault_cause(2)
    rig.ctl.reset_fault(rig.now, renew=True)
    rig.run(5)
    assert rig.ctl.reset_fault(rig.now) == "" and rig.ctl.state == ControllerState.IDLE
    rig.ctl.enable(rig.now)
    rig.run(10)
    assert rig.ctl.state == ControllerState.HOLDING and all(d.enabled for d in rig.sim.drives)


def test_points_already_past_are_dropped(rig: Rig) -> None:
    """A command that started 1 s ago: its point at 0.5 s (5 deg) is past and never approached."""
    times = np.array([0.5, 2.0])
    pos = np.radians([[5.0, 0.0], [1.0, 0.0]])
    assert rig.ctl.set_trajectory(times, pos, rig.now, start_s=rig.now - 1.0).accepted
    rig.outputs.clear()
    rig.run(1000)
    refs = np.degrees(np.array([o.reference_rad for o in rig.outputs]))
    assert refs[:, 0].max() < 1.01
    assert math.degrees(rig.sim.joint_angles()[0]) == pytest.approx(1.0, abs=0.01)


def test_enable_is_judged_on_feedback_after_the_first_setpoints(rig: Rig) -> None:
    """An enable 50 ms before the loop's next period (a starved loop) is not faulted by old answers.

    The first period after the enable reads the drives' answer to the last setpoint sent
    before it (not enabled), stamped 50 ms after the request: judged against the request's
    time ("feedback after enable + feedback_timeout must say enabled") that was a fault.
    """
    rig.ctl.disable()
    rig.run(5)
    rig.ctl.enable(rig.now - 0.05)
    rig.run(10)
    assert rig.ctl.state == ControllerState.HOLDING, rig.ctl.fault_reason

