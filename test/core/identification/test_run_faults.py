"""Faulty joint states fed to IdentificationRun in lock-step (no ROS): refusals, stops, recovery.

The input-validation cases of ``test/faults/test_identification_executor.py``, moved here from
the node process (where a representative few stay): every bad value, size, name and stamp, the
input stopping and pausing. Each case checks what the node reports (the start's answer, the
status's level and message, the ``input`` value) and, during a run, that the commands brake to
rest from the last one within the acceleration limit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from run_rig import PERIOD_NS, STATIC_DEG, STOP_COMMANDS, RunRig, assert_braking

from humanoid_balance.core.identification import LUNAR_JOINTS
from humanoid_balance.core.identification.run import ERROR, OK, WARN, RunState

Mutation = Callable[[dict[str, Any]], "dict[str, Any] | None"]

#: (field, value, what the refusal or the stop names): the fault suite's VALUE_CASES
VALUE_CASES = [
    *[("position", v, "not finite") for v in (math.nan, math.inf, -math.inf)],
    *[("position", v, "left their limits") for v in (1e308, -1e308, 3.5, -1.9e3)],
    *[("velocity", v, "not finite") for v in (math.nan, math.inf, -math.inf)],
    *[("velocity", v, "a velocity of") for v in (1e308, -1e308, 2.0, -1.5)],
    *[("effort", v, "no finite effort") for v in (math.nan, math.inf, -math.inf)],
    *[("effort", v, "a torque of") for v in (1e308, -1e308, 50.0, -11.0)],
]

#: deg, urdf/lunar_arm.urdf's joint limits (independently of the run; checked below)
LOWER_DEG = [-170.0, -100.0, -170.0, -120.0, -170.0, -90.0]
UPPER_DEG = [170.0, 100.0, 170.0, 120.0, 170.0, 90.0]


@pytest.fixture
def rig(tmp_path: Path) -> RunRig:
    """The run active, the arm at rest at STATIC_DEG (2-degree sweeps, timeout 0.5 s)."""
    return RunRig(tmp_path / "results.yaml")


def with_value(field: str, joint: int, value: float) -> Mutation:
    """A mutation setting one joint's ``field`` to ``value``."""
    def mutate(fields: dict[str, Any]) -> dict[str, Any]:
        values = list(fields[field])
        values[joint] = value
        return {**fields, field: values}
    return mutate


def idle_ticks(rig: RunRig, count: int, mutate: Mutation | None = None) -> None:
    """``count`` command periods with no run: a joint state each (through ``mutate``)."""
    for _ in range(count):
        rig.tick(follow=False, mutate=mutate)


def assert_recovers(rig: RunRig) -> None:
    """Good input again: the input ok, the status not WARN for it, a start accepted."""
    idle_ticks(rig, 2)
    status = rig.run.status(rig.now_s)
    assert status.values["input"] == "ok", status
    answer = rig.start()
    assert answer.success, answer.message
    assert rig.run.cancel()


def assert_refused_then_recovers(rig: RunRig, cause: str) -> None:
    """A start refused naming ``cause``, WARN naming it, nothing commanded; then recovery."""
    answer = rig.start()
    assert not answer.success and cause in answer.message, answer.message
    status = rig.run.status(rig.now_s)
    assert status.level == WARN and cause in status.message, status
    assert rig.sent == []
    assert_recovers(rig)


@pytest.mark.parametrize(("field", "value", "cause"), VALUE_CASES)
def test_bad_value_while_idle_refuses_start_and_recovers(rig: RunRig, field: str, value: float,
                                                         cause: str) -> None:
    """A bad value in one field while idle: start refused naming it, WARN, nothing commanded;
    good input again: ok, a start accepted."""
    joint = VALUE_CASES.index((field, value, cause)) % 6
    idle_ticks(rig, 3, with_value(field, joint, value))
    assert_refused_then_recovers(rig, cause)


@pytest.mark.parametrize(("field", "value", "cause"), VALUE_CASES)
def test_bad_value_during_a_run_brakes_reports_and_recovers(rig: RunRig, field: str,
                                                            value: float, cause: str) -> None:
    """A bad value mid-run: the run brakes to rest from the last command, ERROR names it while
    it lasts, WARN ("cleared") after; a start is accepted again."""
    rig.cruise()
    n = len(rig.sent)
    bad = with_value(field, 2, value)
    rig.tick(mutate=bad)
    assert rig.run.state is RunState.STOPPING and cause in rig.run.message, rig.run.message
    for _ in range(STOP_COMMANDS + 5):
        rig.tick(mutate=bad)
        status = rig.run.status(rig.now_s)
        assert status.level == ERROR and cause in status.message, status
    assert_braking(rig.sent[n - 1:])
    assert rig.run.state is RunState.FAILED
    rig.tick()
    status = rig.run.status(rig.now_s)
    assert status.level == WARN and status.message.endswith("(cleared: start a new run)"), status
    assert_recovers(rig)


def expected_refusal(rig: RunRig, position: list[float], velocity: list[float],
                     effort: list[float]) -> str | None:
    """What the run must name for these readings (None: they are fine), checked independently."""
    arrays = [np.array(a, float) for a in (position, velocity, effort)]
    lower, upper = np.radians(LOWER_DEG), np.radians(UPPER_DEG)
    if not (np.all(np.isfinite(arrays[0])) and np.all(np.isfinite(arrays[1]))):
        return "not finite"
    if not np.all(np.isfinite(arrays[2])):
        return "no finite effort"
    tolerance = math.radians(0.5)
    if np.any(arrays[0] < lower - tolerance) or np.any(arrays[0] > upper + tolerance):
        return "left their limits"
    if np.any(np.abs(arrays[1]) > 1.0):  # URDF velocity limits: 1 rad/s
        return "a velocity of"
    if np.any(np.abs(arrays[2]) > np.array([10.0, 10.0, 5.0, 5.0, 2.0, 2.0])):  # URDF efforts
        return "a torque of"
    # a start also needs every joint within its limits to encoder noise (0.05 deg), and the arm
    # at rest: slower than the acceleration limit times the command period (100 Hz)
    noise = math.radians(0.05)
    if np.any(arrays[0] < lower - noise) or np.any(arrays[0] > upper + noise):
        return "left their limits"
    if np.any(np.abs(arrays[1]) > math.radians(30.0) / 100.0):
        return "the arm is moving"
    return None


def test_the_independent_limits_are_the_urdf_s(rig: RunRig) -> None:
    """expected_refusal's limits are the lunar arm's URDF limits (what the run checks)."""
    assert np.degrees(rig.arm.lower).round(9).tolist() == LOWER_DEG
    assert np.degrees(rig.arm.upper).round(9).tolist() == UPPER_DEG
    assert rig.arm.velocity_limit.tolist() == [1.0] * 6
    assert rig.arm.effort_limit.tolist() == [10.0, 10.0, 5.0, 5.0, 2.0, 2.0]


finite_or_not = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-3.0, max_value=3.0),
    st.sampled_from([0.0, -0.0, 1e-308, 5e-324, 1.7976931348623157e308]))


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_generated_joint_states_while_idle(tmp_path_factory: Any, data: st.DataObject) -> None:
    """Generated joint states (any float in any field): start refused naming the fault, or it
    starts (or is refused for clearance) and a run's commands stay finite."""
    rig = RunRig(tmp_path_factory.mktemp("generated") / "results.yaml")
    arrays = [data.draw(st.lists(finite_or_not, min_size=6, max_size=6), label=f)
              for f in ("position", "velocity", "effort")]
    if data.draw(st.booleans(), label="near the static pose"):
        arrays[0] = [math.radians(s) + (p if abs(p) < 0.05 else 0.0)
                     for s, p in zip(STATIC_DEG, arrays[0], strict=True)]
    cause = expected_refusal(rig, *arrays)
    rig.joint_state(mutate=lambda f: {**f, "position": arrays[0], "velocity": arrays[1],
                                      "effort": arrays[2]})
    answer = rig.start()
    if cause is None:
        assert answer.success or "clearance" in answer.message, answer.message
        if answer.success:
            rig.tick(follow=False, feed=False)
            assert rig.sent and np.all(np.isfinite(rig.sent[-1].position))
    else:
        assert not answer.success and cause in answer.message, (cause, answer.message)


def drop(field: str, keep: int) -> Mutation:
    """A mutation keeping only ``keep`` values of ``field``."""
    return lambda fields: {**fields, field: list(fields[field])[:keep]}


def pad(field: str) -> Mutation:
    """A mutation adding a value to ``field``."""
    return lambda fields: {**fields, field: [*fields[field], 0.0]}


def rename(names: list[str]) -> Mutation:
    """A mutation naming the joints ``names`` (positions and others cut or padded to fit)."""
    def mutate(fields: dict[str, Any]) -> dict[str, Any]:
        n = len(names)
        cut = {f: (list(fields[f]) + [0.0] * n)[:n] for f in ("position", "velocity", "effort")}
        return {**fields, **cut, "names": names}
    return mutate


ARM = list(LUNAR_JOINTS)
STRUCTURE_CASES: list[tuple[str, Mutation, str]] = [
    ("5 positions", drop("position", 5), "6 names but 5 positions"),
    ("no positions", drop("position", 0), "6 names but 0 positions"),
    ("7 positions", pad("position"), "6 names but 7 positions"),
    ("3 velocities", drop("velocity", 3), "3 velocities"),
    ("no velocities", drop("velocity", 0), "not finite"),
    ("7 velocities", pad("velocity"), "7 velocities"),
    ("no efforts", drop("effort", 0), "no finite effort"),
    ("1 effort", drop("effort", 1), "1 efforts"),
    ("joint3 missing", rename([j for j in ARM if j != "joint3"]), "without ['joint3']"),
    ("joint1 twice", rename([*ARM, "joint1"]), "named twice"),
    ("no names", rename([]), "old"),
    ("other joints only", rename(["gripper", "wrist_camera"]), "old"),
    ("names in another case", rename([j.upper() for j in ARM]), "old"),
    ("names with a namespace", rename([f"arm/{j}" for j in ARM]), "old"),
]


@pytest.mark.parametrize(("label", "mutate", "cause"), STRUCTURE_CASES,
                         ids=[c[0] for c in STRUCTURE_CASES])
def test_wrong_sizes_and_names_refuse_start(rig: RunRig, label: str, mutate: Mutation,
                                             cause: str) -> None:
    """Wrong array sizes or names while idle: start refused naming why, WARN; good input: ok.
    Rejected ones are named at once; ignored ones (not the arm's) make the input stale."""
    idle_ticks(rig, 2)
    idle_ticks(rig, 60 if cause == "old" else 2, mutate)
    assert_refused_then_recovers(rig, cause)


def test_extra_joints_are_accepted(rig: RunRig) -> None:
    """Joint states naming the arm's joints among others (a whole robot's), in another order:
    a run starts and goes on."""
    def whole_robot(fields: dict[str, Any]) -> dict[str, Any]:
        return {**fields, "names": ["torso", *reversed(fields["names"]), "gripper"],
                **{f: [0.0, *reversed(fields[f]), 0.0] for f in ("position", "velocity",
                                                                   "effort")}}

    idle_ticks(rig, 2, whole_robot)
    assert rig.start().success
    for _ in range(50):
        rig.tick(mutate=whole_robot)
    assert rig.run.state is RunState.RUNNING


def shift_stamp(seconds: float) -> Mutation:
    """A mutation moving the stamp by ``seconds`` (not below 0)."""
    return lambda fields: {**fields, "stamp_s": max(fields["stamp_s"] + seconds, 0.0)}


@pytest.mark.parametrize(("label", "seconds", "cause"), [
    ("2 s in the future", 2.0, "ahead of the node clock"),
    ("1 h in the future", 3600.0, "ahead of the node clock"),
    ("3 s old", -3.0, "old"),
    ("1 day old", -86400.0, "old"),
])
def test_shifted_stamps_while_idle_refuse_start(rig: RunRig, label: str, seconds: float,
                                                cause: str) -> None:
    """Stamps far in the future or the past: start refused naming it, WARN; good stamps: ok."""
    rig.set_time(200_000 * 10**9)  # a day back is still a stamp, not 0 (unstamped)
    idle_ticks(rig, 2, shift_stamp(seconds))
    assert_refused_then_recovers(rig, cause)


def test_a_stamp_ahead_is_refused_naming_the_timeout(rig: RunRig) -> None:
    """A joint state stamped 0.6 s ahead (timeout 0.5 s): rejected, counted, the reason names
    the parameter and what to check."""
    rejection = rig.joint_state(mutate=shift_stamp(0.6))
    assert rejection is not None and rejection.count == 1
    assert rejection.reason == ("/joint_states stamped 0.600 s ahead of the node clock, beyond "
                                "joint_state_timeout=0.5 s: check that the clocks agree "
                                "(use_sim_time)")


def test_unstamped_joint_states_are_timed_on_arrival(rig: RunRig) -> None:
    """Joint states with a zero stamp are timed when they arrive: a run starts and goes on."""
    unstamped = shift_stamp(-math.inf)
    idle_ticks(rig, 2, unstamped)
    assert rig.start().success
    for _ in range(80):
        rig.tick(mutate=unstamped)
    assert rig.run.state is RunState.RUNNING


def test_one_stamp_going_back_is_dropped(rig: RunRig) -> None:
    """One joint state stamped 0.2 s before the newest mid-run: dropped and counted; the run
    goes on (the next one is the newest again)."""
    rig.cruise()
    rejection = rig.joint_state(mutate=shift_stamp(-0.2))
    assert rejection is not None and rejection.count == 1
    assert "stamps went back" in rejection.reason
    rig.tick()
    status = rig.run.status(rig.now_s)
    assert status.values["rejected_joint_states"] == 1
    assert "stamps went back" in status.values["last_rejection"]
    assert rig.run.state is RunState.RUNNING


def test_stamps_going_back_for_good_stop_the_run(rig: RunRig) -> None:
    """The arm's clock jumps 0.3 s back mid-run: every stamp is older than the newest, the run
    brakes, ERROR naming it."""
    rig.cruise()
    n = len(rig.sent)
    for _ in range(STOP_COMMANDS + 2):
        rig.tick(mutate=shift_stamp(-0.3))
    status = rig.run.status(rig.now_s)
    assert status.level == ERROR and "stamps went back" in status.message, status
    assert_braking(rig.sent[n - 1:])


def test_stamps_jumping_ahead_then_back_keep_the_run(rig: RunRig) -> None:
    """The arm's clock 0.3 s ahead (within the timeout), then back to the node's: the run goes
    on (stamps in step with the clock again are taken: the ones ahead were the odd ones)."""
    rig.cruise()
    for _ in range(20):
        rig.tick(mutate=shift_stamp(0.3))
    assert rig.run.state is RunState.RUNNING
    for _ in range(50):
        rig.tick()
    assert rig.run.state is RunState.RUNNING


def test_bug_future_stamps_go_stale_when_the_input_stops(rig: RunRig) -> None:
    """Issue 12: joint states stamped 0.4 s ahead (within the 0.5 s timeout), then none: the
    run stops 0.5 s after the last arrived (the stamps do not keep them fresh longer)."""
    rig.cruise()
    for _ in range(5):
        rig.tick(mutate=shift_stamp(0.4))
    last = rig.now_ns
    while rig.run.state is RunState.RUNNING:
        rig.tick(feed=False)
    assert 500_000_000 <= rig.now_ns - last <= 510_000_000  # the first period 0.5 s after it
    assert "s old (timeout 0.500 s)" in rig.run.message, rig.run.message


def test_bug_input_stopping_mid_run_brakes_from_the_last_command(rig: RunRig) -> None:
    """Issue 12: joint states stop mid-sweep: the run goes on until they are 0.5 s old, then
    the hold brakes from the last command (no jump back to the old measurement); ERROR while
    they are missing, WARN once back, and a start is accepted."""
    rig.cruise()
    while rig.run.state is RunState.RUNNING:
        rig.tick(feed=False)
    n = len(rig.sent)
    for _ in range(STOP_COMMANDS + 2):
        rig.tick(feed=False)
    assert_braking(rig.sent[n - 2:])
    status = rig.run.status(rig.now_s)
    assert status.level == ERROR and "old" in status.message, status
    rig.tick()
    status = rig.run.status(rig.now_s)
    assert status.level == WARN and "cleared" in status.message, status
    assert_recovers(rig)


def test_input_stopping_while_idle_warns_and_recovers(rig: RunRig) -> None:
    """No joint states while idle: WARN naming their age; start refused; back: OK."""
    idle_ticks(rig, 2)
    rig.set_time(rig.now_ns + 600_000_000)
    status = rig.run.status(rig.now_s)
    assert status.level == WARN and "old" in status.message, status
    assert "old" in rig.start().message
    idle_ticks(rig, 1)
    status = rig.run.status(rig.now_s)
    assert (status.level, status.values["input"]) == (OK, "ok")


def test_short_gaps_within_the_timeout_do_not_stop_a_run(rig: RunRig) -> None:
    """Joint states pausing 0.2 s (under the 0.5 s timeout) three times: the run goes on."""
    rig.cruise()
    for _ in range(3):
        for _ in range(20):
            rig.tick(feed=False)
        for _ in range(20):
            rig.tick()
    assert rig.run.state is RunState.RUNNING


def test_the_clock_going_back_after_a_joint_state_is_named_while_idle(rig: RunRig) -> None:
    """Idle, the clock 2 ms behind the newest joint state's arrival (beyond the 1 ms tolerance):
    the input is not used, naming the clock; within the tolerance it is."""
    idle_ticks(rig, 1)
    assert rig.run.status(rig.now_s - 0.0005).values["input"] == "ok"
    assert rig.run.status(rig.now_s - 0.002).values["input"] == (
        "the node's clock went back 0.002 s (simulation restarted?): waiting for new "
        "/joint_states")


def test_the_stop_commands_continue_the_run_s_time_base(rig: RunRig) -> None:
    """A stop's commands are stamped on the command cycle's clock, one period apart."""
    rig.cruise()
    rig.run.cancel()
    n = len(rig.sent)
    for _ in range(3):
        rig.tick()
    assert np.diff([c.stamp_ns for c in rig.sent[n - 1:]]).tolist() == [PERIOD_NS] * 3


def test_a_step_between_one_odd_stamp_and_the_next_state_keeps_the_run(rig: RunRig) -> None:
    """One joint state stamped 0.2 s back, then a command cycle before the next joint state: the
    newest kept state is still the newest, the run goes on (in the CI fault suite the cycle
    came first at times and the run stopped: "the newest /joint_states were rejected")."""
    rig.cruise()
    rig.set_time(rig.now_ns + PERIOD_NS)
    rejection = rig.joint_state(mutate=shift_stamp(-0.2))
    assert rejection is not None and "stamps went back" in rejection.reason
    rig.tick(feed=False)  # the cycle comes before the next joint state
    assert rig.run.state is RunState.RUNNING, rig.run.message
    rig.tick()
    assert rig.run.state is RunState.RUNNING, rig.run.message
