"""The waist's loop (humanoid_balance/waist/loop.py) in lock-step without DDS: a fake clock, the
simulated drives stepped by the loop; its requests (commands, the enable and stop sequences),
its report, its log, and the servo thread on the real clock."""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from humanoid_balance.can.protocol import FaultCode
from humanoid_balance.can.sim_drive import SimulatedWaist
from humanoid_balance.waist import ControllerState, CycleOutput, WaistLoop, WaistServoConfig
from humanoid_balance.waist.loop import ChannelLog, ThreadTiming, sample_time_s
from humanoid_balance.waist.report import Level, Status
from humanoid_balance.waist.requests import ENABLE_MIN_PERIODS, ENABLE_TIMEOUT_S, Request

DT = 0.002
_channels = itertools.count()


class FakeClock:
    """A clock the test moves (``tick_s``: and every reading moves it on by that much)."""

    def __init__(self, start_s: float = 100.0, tick_s: float = 0.0) -> None:
        self.t = start_s
        self.tick_s = tick_s

    def __call__(self) -> float:
        self.t += self.tick_s
        return self.t

    def advance(self, dt: float) -> None:
        self.t += dt


class RecordingLogger:
    """What the loop logs: (severity, text)."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def info(self, msg: str) -> None:
        self.lines.append(("info", msg))

    def warning(self, msg: str) -> None:
        self.lines.append(("warning", msg))

    def error(self, msg: str) -> None:
        self.lines.append(("error", msg))

    def texts(self, severity: str) -> list[str]:
        return [text for level, text in self.lines if level == severity]


@dataclass
class LoopRig:
    """A loop on its own virtual bus with lock-step simulated drives and a fake clock."""

    clock: FakeClock
    sim: SimulatedWaist
    loop: WaistLoop
    logger: RecordingLogger
    outputs: list[CycleOutput | None] = field(default_factory=list)

    def run(self, periods: int) -> None:
        for _ in range(periods):
            self.clock.advance(DT)
            self.outputs.append(self.loop.step())

    def run_until(self, done: Callable[[], bool], max_periods: int) -> int:
        for k in range(max_periods):
            if done():
                return k
            self.run(1)
        raise AssertionError("condition not reached")

    def answer(self, request: Request, max_periods: int = 2000) -> str:
        """Run periods until ``request`` answers; its answer."""
        self.run_until(request.done.is_set, max_periods)
        assert request.answer is not None
        return request.answer

    def close(self) -> None:
        self.loop.close()
        self.sim.close()


def _make(*, initial_deg: tuple[float, float] = (0.0, 0.0), enable: bool = True,
          run_time_config: Callable[[], WaistServoConfig | None] | None = None,
          **config: Any) -> LoopRig:
    channel = f"waist_loop_{next(_channels)}"
    clock, logger = FakeClock(), RecordingLogger()
    sim = SimulatedWaist(channel=channel, initial_joint_rad=(math.radians(initial_deg[0]),
                                                             math.radians(initial_deg[1])))
    loop = WaistLoop.open(WaistServoConfig(**config), interface="virtual", channel=channel,
                          drives=sim, clock=clock, logger=logger, run_time_config=run_time_config)
    rig = LoopRig(clock, sim, loop, logger)
    rig.run(3)
    if enable:
        assert rig.answer(loop.request_enable()) == ""
    return rig


@pytest.fixture
def rig() -> Iterator[LoopRig]:
    """An enabled loop holding the unloaded waist at zero."""
    r = _make()
    yield r
    r.close()


def _command(rig: LoopRig, time_s: float, pitch_deg: float, roll_deg: float = 0.0) -> Request:
    return rig.loop.submit_command(np.array([time_s]), np.radians([[pitch_deg, roll_deg]]))


def _motors(rig: LoopRig) -> dict[str, Status]:
    return {s.name: s for s in rig.loop.report().motors}


# --- the enable sequence ---------------------------------------------------------------------------


def test_enable_answers_once_both_drives_confirm() -> None:
    """From IDLE: answered "" only once both drives report enabled; the controller holds; an
    enable without an inclinometer sample warns that the encoders went unchecked."""
    r = _make(enable=False)
    try:
        request = r.loop.request_enable()
        r.run(1)
        assert r.loop.controller.state == ControllerState.HOLDING and not request.done.is_set()
        assert r.answer(request) == ""
        assert all(d.enabled for d in r.sim.drives)
        assert any(t.startswith("enabled without checking the encoders against the inclinometer")
                   for t in r.logger.texts("warning"))
    finally:
        r.close()


def test_enable_outside_the_range_is_answered_at_once() -> None:
    """A refusal that a retry cannot change (the pose outside the range) is the answer of the
    first attempt, the drives stay disabled."""
    r = _make(initial_deg=(-12.0, 0.0), enable=False)
    try:
        request = r.loop.request_enable()
        r.run(1)
        assert request.done.is_set()
        assert request.answer is not None and request.answer.startswith(
            "cannot enable: pitch is at -12.00 deg, range [-5.0, 45.0] deg")
        assert not any(d.enabled for d in r.sim.drives)
    finally:
        r.close()


def test_enable_without_feedback_gives_up_after_its_wait() -> None:
    """A silent drive: the enable is retried every period and answered with the reason after
    ENABLE_TIMEOUT_S and at least ENABLE_MIN_PERIODS periods."""
    r = _make(enable=False)
    try:
        r.sim.stop_answering(2)
        r.run(10)
        request = r.loop.request_enable()
        periods = r.run_until(request.done.is_set, 1000)
        assert request.answer is not None and request.answer.startswith(
            "cannot enable: no fresh feedback from both drives")
        assert periods >= max(ENABLE_MIN_PERIODS, ENABLE_TIMEOUT_S / DT)
        assert r.loop.controller.state == ControllerState.IDLE
    finally:
        r.close()


def test_enable_recovers_from_bus_off(rig: LoopRig) -> None:
    """After a bus-off, an enable (the request) clears the fault, re-opens the bus and
    re-enables."""
    rig.sim.inject_bus_off()
    rig.run_until(lambda: rig.loop.controller.state == ControllerState.FAULT, 100)
    assert rig.answer(rig.loop.request_enable()) == ""
    rig.run(2)
    assert all(d.enabled for d in rig.sim.drives)


def test_enable_refused_while_a_drive_fault_persists(rig: LoopRig) -> None:
    """A persistent drive fault: the enable answers the cause, FAULT stays on the report with it;
    once the cause is gone an enable succeeds."""
    rig.sim.inject_fault(1, FaultCode.OVERTEMPERATURE, persists=True)
    rig.run_until(lambda: rig.loop.controller.state == ControllerState.FAULT, 100)
    answer = rig.answer(rig.loop.request_enable())
    assert answer.startswith("the fault's cause is still there: drive 1 still reports a fault "
                             "(code 5)")
    status = rig.loop.report().controller
    assert status.level == Level.ERROR and status.message.startswith(
        "FAULT: drive 1 still reports a fault")
    assert not any(d.enabled for d in rig.sim.drives)
    rig.sim.remove_fault_cause(1)
    assert rig.answer(rig.loop.request_enable()) == ""
    rig.run(2)
    assert all(d.enabled for d in rig.sim.drives)


# --- the stop before a disable, the stop ------------------------------------------------------------


def test_stop_then_disable_waits_for_the_whole_controlled_stop() -> None:
    """At 12 deg/s or more with acceleration_limit 10 deg/s^2 (a stop of 1.2 s or more) the
    drives are disabled only once the waist rests, and then their brakes engage."""
    r = _make(acceleration_limit_rad_s2=math.radians(10.0))
    try:
        _command(r, 0.05, 40.0)
        r.run_until(lambda: math.degrees(abs(r.sim.joint_velocities()[0])) > 12.0, 3000)
        started = r.clock.t
        request = r.loop.request_stop_then_disable()
        while not request.done.is_set():
            assert all(d.enabled for d in r.sim.drives)
            r.run(1)
        assert request.answer == ""
        assert r.clock.t - started > 12.0 / 10.0 - 0.1
        assert np.degrees(np.max(np.abs(r.sim.joint_velocities()))) < 0.5
        r.run(5)  # the drives take the DISABLE on their next period, the brakes after 5 ms
        assert not any(d.enabled for d in r.sim.drives)
        assert all(d.brake_engaged(r.sim.time_s) for d in r.sim.drives)
    finally:
        r.close()


def test_a_stop_that_does_not_end_is_given_up_with_an_error() -> None:
    """A stop still running beyond its bound (the servo's periods stalled: the loop's clock moves,
    no period runs) is given up from the waiting thread: an error, the drives disabled."""
    r = _make()
    try:
        _command(r, 0.05, 40.0)
        r.run(200)
        r.clock.tick_s = 0.05  # every reading of the clock: 50 ms later
        r.loop.stop_then_disable()
        assert r.loop.controller.state == ControllerState.IDLE
        assert any(t.startswith("the controlled stop did not end within 2.50 s")
                   for t in r.logger.texts("error"))
        r.sim.handle_pending()
        assert not any(d.enabled for d in r.sim.drives)
    finally:
        r.close()


def test_command_just_before_the_stop_does_not_move_the_waist(rig: LoopRig) -> None:
    """A command taken just before a stop before a disable is planned after it and refused: the
    waist stays where it held."""
    q0 = rig.sim.joint_angles().copy()
    command = _command(rig, 0.1, 40.0, 14.0)
    stop = rig.loop.request_stop_then_disable()
    assert rig.answer(stop) == ""
    assert command.answer is not None and command.answer.startswith(
        "refused: the waist is stopping before its drives are disabled")
    assert rig.loop.command_problem == command.answer and rig.loop.commands_refused == 1
    rig.run(5)
    assert np.degrees(np.max(np.abs(rig.sim.joint_angles() - q0))) < 0.05
    assert not any(d.enabled for d in rig.sim.drives)


def test_stop_brings_a_motion_to_a_hold(rig: LoopRig) -> None:
    """A stop during a motion ends in HOLDING with the drives still enabled."""
    _command(rig, 3.0, 6.0)
    rig.run(150)
    assert rig.loop.stop() == ControllerState.STOPPING
    rig.run_until(lambda: rig.loop.controller.state == ControllerState.HOLDING, 1000)
    assert all(d.enabled for d in rig.sim.drives)


# --- commands, tunables, inputs -----------------------------------------------------------------


def test_a_command_moves_the_waist(rig: LoopRig) -> None:
    """A command to (3, -2) deg in 1 s brings the waist there within 0.01 deg."""
    _command(rig, 1.0, 3.0, -2.0)
    rig.run(1000)
    np.testing.assert_allclose(np.degrees(rig.sim.joint_angles()), [3.0, -2.0], atol=0.01)


def test_a_new_command_problem_is_logged_and_reported_at_once(rig: LoopRig) -> None:
    """Two different bad commands: both logged, the report names the second (WARN), then a good
    command makes it OK again."""
    rig.loop.submit_command(np.array([0.5]), np.array([[math.nan, 0.0]]))
    rig.run(1)
    _command(rig, 0.5, 60.0)
    rig.run(1)
    refused = [t for t in rig.logger.texts("warning") if t.startswith("/waist/command refused")]
    assert len(refused) == 2 and "NaN" in refused[0] and "pitch 60.000 deg" in refused[1]
    status = rig.loop.report().controller
    assert status.level == Level.WARN
    assert "last /waist/command refused: point 0 pitch 60.000 deg" in status.message
    assert status.values["commands_refused"] == 2
    _command(rig, 0.5, 1.0)
    rig.run(1)
    assert rig.loop.report().controller.level == Level.OK


def test_run_time_tunables_apply_between_two_periods() -> None:
    """New tunables from run_time_config are taken before the next period: the command timeout
    also moves the running command's deadline."""
    pending: list[WaistServoConfig] = []
    r = _make(run_time_config=lambda: pending.pop() if pending else None)
    try:
        _command(r, 0.5, 2.0)
        r.run(1)
        deadline = r.loop.controller.command_deadline_s
        pending.append(WaistServoConfig(command_timeout_s=2.5, velocity_limit_rad_s=1.0))
        r.run(1)
        config = r.loop.controller.config
        assert (config.command_timeout_s, config.velocity_limit_rad_s) == (2.5, 1.0)
        assert r.loop.controller.command_deadline_s == pytest.approx(deadline + 2.0, abs=1e-12)
    finally:
        r.close()


def test_inclinometer_samples_are_reported_with_their_age(rig: LoopRig) -> None:
    """A sample taken 0.05 s ago is used (inclinometer_timeout 0.1 s); 0.1 s later it is not."""
    rig.loop.on_inclinometer(0.0, 0.0, rig.loop.now() - 0.05)
    values = rig.loop.report().controller.values
    assert values["inclinometer_age_s"] == pytest.approx(0.05, abs=1e-9)
    assert values["inclinometer_used"] is True
    rig.run(50)
    assert rig.loop.report().controller.values["inclinometer_used"] is False


def test_a_sample_is_as_old_as_its_stamp_on_the_node_clock() -> None:
    """A sample stamped 1 s before the node clock's now is dated 1 s before the controller's
    now; one stamped ahead is dated now; an unstamped one (0) is dated now."""
    now_ns = 100 * 10**9
    assert sample_time_s(50.0, now_ns, now_ns - 10**9) == pytest.approx(49.0, abs=1e-12)
    assert sample_time_s(50.0, now_ns, now_ns + 500) == 50.0
    assert sample_time_s(50.0, now_ns, 0) == 50.0


def test_sim_faults_apply_between_periods_and_bad_ones_are_logged(rig: LoopRig) -> None:
    """``fault 1 5 persist`` faults drive 1 (the controller faults); ``fault 3`` and an unknown
    word are logged and ignored."""
    rig.loop.inject_sim_fault("fault 3")
    rig.loop.inject_sim_fault("explode 1")
    assert rig.logger.texts("warning")[-2:] == [
        "/waist/sim/fault 'fault 3' ignored: drive 3: expected 1 or 2",
        "/waist/sim/fault 'explode 1' ignored: unknown fault 'explode'"]
    rig.loop.inject_sim_fault("fault 1 5 persist")
    rig.run(3)
    assert rig.loop.controller.state == ControllerState.FAULT
    assert rig.sim.drives[0].fault_code == FaultCode.OVERTEMPERATURE
    assert rig.sim.drives[0].fault_persists


# --- the report ---------------------------------------------------------------------------------------


def test_bus_off_is_reported_as_an_error(rig: LoopRig) -> None:
    """A bus-off while enabled: the controller's status is ERROR "FAULT: CAN bus off"."""
    rig.sim.inject_bus_off()
    rig.run(5)
    status = rig.loop.report().controller
    assert (status.level, status.message) == (Level.ERROR, "FAULT: CAN bus off")


def test_a_silent_drive_is_stale_on_the_motor_report(rig: LoopRig) -> None:
    """A drive that stops answering: its motor status turns ERROR "no feedback for <age> s
    (stale)" with its last values kept and labelled, the answering drive stays OK, and the age
    grows while the silence lasts (issue 35)."""
    motors = _motors(rig)
    assert motors["waist motor 2"].level == Level.OK
    assert motors["waist motor 2"].values["feedback_stale"] is False
    rig.sim.stop_answering(2)
    rig.run(10)
    assert "drive 2 stopped answering" in rig.loop.report().controller.message
    ages = []
    for _ in range(2):
        rig.run(5)
        motors = _motors(rig)
        silent, answering = motors["waist motor 2"], motors["waist motor 1"]
        age_s = silent.values["feedback_age_s"]
        ages.append(age_s)
        assert silent.level == Level.ERROR and silent.message == f"no feedback for {age_s:.3g} s (stale)"
        assert age_s > rig.loop.controller.config.feedback_timeout_s
        assert silent.values["feedback_stale"] is True
        assert "position_rad" in silent.values and "enabled" in silent.values
        assert (answering.level, answering.message) == (Level.OK, "ok")
    assert ages[1] > ages[0]


def test_the_controllers_messages_are_logged_once_reported(rig: LoopRig) -> None:
    """The controller's messages (here a fault) go to the log at the next report."""
    rig.sim.stop_answering(1)
    rig.run(10)
    assert not any(t.startswith("FAULT:") for t in rig.logger.texts("warning"))
    rig.loop.report()
    assert any(t.startswith("FAULT: drive 1 stopped answering") for t in rig.logger.texts("warning"))


# --- the log, the requests' waits, the thread ----------------------------------------------------------


def test_the_same_line_is_throttled_per_channel_a_new_one_is_not() -> None:
    """The same text on a channel within 2 s is logged once; a new text at once."""
    clock, logger = FakeClock(), RecordingLogger()
    log = ChannelLog(logger, clock=clock)
    for text in ("a", "a", "b", "a"):
        log.warning("channel", text)
        clock.advance(0.1)
    log.warning("other", "a")
    clock.advance(2.0)
    log.warning("channel", "a")
    assert logger.texts("warning") == ["a", "b", "a", "a", "a"]


def test_info_then_warning_on_one_channel_through_an_rclpy_logger() -> None:
    """An info (a parameter change) then a warning on the same log: rclpy's per-call-site
    severity holds (it killed the node when one call site logged both)."""
    import rclpy.logging

    log = ChannelLog(rclpy.logging.get_logger("waist_loop_test"))
    log.info("parameters", "applied outer_gain=1.0")
    log.warning("controller", "no command for 0.500 s: controlled stop")
    log.info("parameters", "applied outer_gain=2.0")


def test_a_request_the_servo_does_not_take_is_given_up() -> None:
    """No servo period runs: a request waited for is answered that the servo thread did not take
    it, after REQUEST_TIMEOUT_S on the loop's clock."""
    r = _make(enable=False)
    try:
        r.clock.tick_s = 0.05
        assert r.loop.enable() == "the servo thread did not take the request within 2 s"
    finally:
        r.close()


def test_close_answers_the_requests_and_disables(rig: LoopRig) -> None:
    """Closing the loop answers a request still waiting and disables the drives."""
    request = _command(rig, 1.0, 5.0)
    rig.loop.close()
    assert request.answer == "the waist loop was closed"
    rig.sim.step(DT)
    assert not any(d.enabled for d in rig.sim.drives)


def test_reset_disables_and_forgets(rig: LoopRig) -> None:
    """reset: the drives disabled, a request waiting answered, the last command's problem and
    the last period forgotten."""
    _command(rig, 0.5, 60.0)
    rig.run(1)
    request = _command(rig, 1.0, 5.0)
    rig.loop.reset()
    assert request.answer == "the waist loop was reset"
    assert (rig.loop.controller.state, rig.loop.last, rig.loop.command_problem,
            rig.loop.commands_refused) == (ControllerState.IDLE, None, "", 0)
    rig.run(2)
    assert not any(d.enabled for d in rig.sim.drives)


def _thread_rig(publish: Callable[[CycleOutput, float], None]) -> tuple[SimulatedWaist, WaistLoop]:
    channel = f"waist_loop_{next(_channels)}"
    sim = SimulatedWaist(channel=channel)
    loop = WaistLoop.open(WaistServoConfig(), interface="virtual", channel=channel, drives=sim,
                          logger=RecordingLogger(), publish=publish,
                          timing=ThreadTiming(gil_switch_interval_s=0.0, publish_every=1))
    return sim, loop


def test_the_servo_thread_runs_periods_enables_and_publishes() -> None:
    """On the real clock: the thread runs periods (counted on the report), an enable waited for
    succeeds, every period's outputs are published with the controller's time."""
    published: list[float] = []
    sim, loop = _thread_rig(lambda out, now_s: published.append(now_s))
    try:
        loop.start()
        assert loop.enable() == ""
        deadline = time.monotonic() + 5.0
        while len(published) < 20 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert loop.report().controller.values["servo_periods"] >= 20
        assert all(b > a for a, b in itertools.pairwise(published))
        assert loop.thread is not None and loop.thread.name == "waist-servo"
    finally:
        loop.close()
        sim.close()
    assert loop.thread is None


def test_a_servo_thread_failure_disables_the_drives_and_is_reported() -> None:
    """An exception that ends the servo thread (here from its publishing) disables both drives
    at once and the report says so as an ERROR."""
    broken = threading.Event()

    def publish(out: CycleOutput, now_s: float) -> None:
        if broken.is_set():
            raise RuntimeError("publisher broke")

    sim, loop = _thread_rig(publish)
    try:
        loop.start()
        assert loop.enable() == ""
        broken.set()
        deadline = time.monotonic() + 5.0
        while not loop.failure and time.monotonic() < deadline:
            time.sleep(0.005)
        status = loop.report().controller
        assert (status.level, status.message) == (
            Level.ERROR, "the servo thread stopped: RuntimeError('publisher broke'); drives disabled")
        assert loop.controller.state == ControllerState.IDLE
        sim.handle_pending()  # the drives were stepped by the servo thread: take the frames now
        assert not any(d.enabled for d in sim.drives)
    finally:
        loop.close()
        sim.close()
