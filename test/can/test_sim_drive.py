"""Tests of the simulated waist drives on a virtual bus (lock-step)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import numpy as np
import pytest

from humanoid_balance.can.bus import WaistCanBus
from humanoid_balance.can.protocol import ControlCommand, FaultCode
from humanoid_balance.can.sim_drive import MotorParameters, SimulatedWaist, TorsoLoad

_channels = itertools.count()
DT = 0.002


@pytest.fixture
def rig() -> Iterator[tuple[SimulatedWaist, WaistCanBus]]:
    """A simulated waist (no load) and a polled bus on the simulation clock."""
    channel = f"test_sim_{next(_channels)}"
    with SimulatedWaist(channel=channel, torso=None) as sim, WaistCanBus(
            channel=channel, use_notifier=False, clock=lambda: sim.time_s) as bus:
        yield sim, bus


def _enable(sim: SimulatedWaist, bus: WaistCanBus) -> None:
    for node in (1, 2):
        bus.send_control(node, ControlCommand.ENABLE)
    sim.step(DT)


def test_current_loop_time_constant() -> None:
    """A current step settles like the paper's loop: pole (1 + 20) / 11 ms, DC gain 20/21."""
    channel = f"test_sim_{next(_channels)}"
    motor = MotorParameters(torque_constant_nm_a=1e-6)  # no back-EMF: the loop alone
    with SimulatedWaist(channel=channel, torso=None, motor=motor, substep_s=1e-5) as sim, \
            WaistCanBus(channel=channel, use_notifier=False) as bus:
        _enable(sim, bus)
        bus.send_currents((1.0, 1.0))
        tau = 0.011 / 21.0
        sim.step(tau)
        assert sim.motor_currents()[0] == pytest.approx(20 / 21 * (1 - math.exp(-1)), rel=1e-3)


def test_equal_currents_pitch_only(rig: tuple[SimulatedWaist, WaistCanBus]) -> None:
    """Equal currents on both motors move the pitch joint and not the roll joint."""
    sim, bus = rig
    _enable(sim, bus)
    for _ in range(50):
        bus.send_currents((0.5, 0.5))
        sim.step(DT)
    q = sim.joint_angles()
    assert abs(q[0]) > 1e-3 and abs(q[1]) < 1e-12


def test_feedback_is_quantised_to_encoder_counts(rig: tuple[SimulatedWaist, WaistCanBus]) -> None:
    """The feedback angle is the true angle floored to one encoder count."""
    sim, bus = rig
    _enable(sim, bus)
    for _ in range(30):
        bus.send_currents((0.3, -0.2))
        sim.step(DT)
    bus.send_currents((0.0, 0.0))
    sim.handle_pending()
    bus.poll()
    sample = bus.feedback(1)
    assert sample is not None
    count = 2 * math.pi / 16384
    assert 0.0 <= sim.motor_angles()[0] - sample.feedback.position_rad < count


def test_disabled_drive_ignores_setpoints(rig: tuple[SimulatedWaist, WaistCanBus]) -> None:
    """A disabled drive answers but does not take the current setpoint."""
    sim, bus = rig
    bus.send_currents((2.0, 2.0))
    sim.step(DT)
    bus.poll()
    assert np.all(sim.motor_currents() == 0.0) and bus.feedback(1) is not None


def test_watchdog_trips_without_setpoints(rig: tuple[SimulatedWaist, WaistCanBus]) -> None:
    """An enabled drive without setpoints for > 20 ms faults with WATCHDOG and brakes."""
    sim, bus = rig
    _enable(sim, bus)
    for _ in range(15):
        sim.step(DT)
    drive = sim.drives[0]
    assert drive.fault_code == FaultCode.WATCHDOG and drive.brake_engaged(sim.time_s)


def test_enable_never_resumes_an_old_setpoint(rig: tuple[SimulatedWaist, WaistCanBus]) -> None:
    """After disable and enable the drive's setpoint is zero, not the last one received."""
    sim, bus = rig
    _enable(sim, bus)
    bus.send_currents((3.0, 3.0))
    sim.step(DT)
    bus.send_control(1, ControlCommand.DISABLE)
    bus.send_control(1, ControlCommand.ENABLE)
    sim.step(DT)
    assert sim.drives[0].setpoint == 0.0


def test_stop_answering(rig: tuple[SimulatedWaist, WaistCanBus]) -> None:
    """A drive told to stop answering sends no more feedback."""
    sim, bus = rig
    sim.stop_answering(2)
    bus.send_currents((0.0, 0.0))
    sim.step(DT)
    bus.poll()
    assert bus.feedback(2) is None and bus.feedback(1) is not None


def test_dropped_frames_are_counted(rig: tuple[SimulatedWaist, WaistCanBus]) -> None:
    """With drop probability 1 every incoming frame is lost."""
    sim, bus = rig
    sim.drop_frames(1, 1.0)
    for _ in range(5):
        bus.send_currents((0.0, 0.0))
        sim.step(DT)
    assert sim.drives[0].frames_dropped == 5


def test_brake_holds_the_torso_after_a_fault() -> None:
    """With the torso at 20 deg pitch and both drives off, the brakes hold it (< 0.05 deg in 1 s)."""
    channel = f"test_sim_{next(_channels)}"
    with SimulatedWaist(channel=channel, torso=TorsoLoad(),
                        initial_joint_rad=(math.radians(20.0), 0.0)) as sim:
        start = sim.joint_angles()
        for _ in range(500):
            sim.step(DT)
        assert np.max(np.abs(np.degrees(sim.joint_angles() - start))) < 0.05


def test_without_brake_the_torso_drops() -> None:
    """Control case: with no brake torque the same faulted waist falls (> 5 deg in 1 s)."""
    channel = f"test_sim_{next(_channels)}"
    with SimulatedWaist(channel=channel, torso=TorsoLoad(),
                        motor=MotorParameters(brake_torque_nm=0.0),
                        initial_joint_rad=(math.radians(20.0), 0.0)) as sim:
        for _ in range(500):
            sim.step(DT)
        assert math.degrees(sim.joint_angles()[0]) > 25.0


def test_joint_angles_follow_the_differential(rig: tuple[SimulatedWaist, WaistCanBus]) -> None:
    """The simulation's joint angles are eq. 3 of its motor angles (i1 = i2 = 100)."""
    sim, bus = rig
    _enable(sim, bus)
    for _ in range(20):
        bus.send_currents((0.4, -0.1))
        sim.step(DT)
    theta1, theta2 = sim.motor_angles()
    expected = [-(theta1 + theta2) / 200.0, (theta2 - theta1) / 200.0]
    assert abs(theta1) > 1e-3 and abs(theta2) > 1e-3  # the motors moved
    np.testing.assert_allclose(sim.joint_angles(), expected, atol=1e-15)


def test_velocity_mode_reaches_the_setpoint(rig: tuple[SimulatedWaist, WaistCanBus]) -> None:
    """In velocity mode a drive brings its motor to the commanded speed (within 5 %)."""
    import can

    from humanoid_balance.can.protocol import WaistProtocol

    sim, bus = rig
    protocol = WaistProtocol()
    for node in (1, 2):
        bus.send_control(node, ControlCommand.MODE_VELOCITY)
        bus.send_control(node, ControlCommand.ENABLE)
    sim.step(DT)
    with can.Bus(interface="virtual", channel=bus.channel) as raw:
        for _ in range(250):
            raw.send(protocol.encode_velocities((5.0, 5.0)))
            sim.step(DT)
    np.testing.assert_allclose(sim.motor_velocities(), [5.0, 5.0], rtol=0.05)
