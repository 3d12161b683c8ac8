"""IdentificationRun in lock-step with a fake arm, on a clock the test sets: starts, stops,
clock steps, braking ramps, the end of a run (no ROS)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from run_rig import (
    ACCELERATION,
    PERIOD_NS,
    PERIOD_S,
    STATIC_DEG,
    STOP_COMMANDS,
    RunRig,
    assert_braking,
)

from humanoid_balance.core.identification.run import (
    ERROR,
    OK,
    WARN,
    Answer,
    RunState,
    limited_command,
    output_problem,
)
from humanoid_balance.exceptions import HumanoidBalanceError


@pytest.fixture
def rig(tmp_path: Path) -> RunRig:
    """The run active on a clock at 1000 s, the arm at rest at STATIC_DEG (2-degree sweeps)."""
    return RunRig(tmp_path / "results.yaml")


# --- the clock -------------------------------------------------------------------------------


def test_clock_back_20_s_mid_pass_brakes_to_rest_in_v_over_a(rig: RunRig) -> None:
    """The clock 20 s back mid-pass: the run fails naming it, the commands brake to 0 in v/a."""
    rig.cruise()
    n = len(rig.sent)
    rig.set_time(rig.now_ns - 20 * 10**9)
    rig.step()
    for _ in range(30):
        rig.set_time(rig.now_ns + PERIOD_NS)
        rig.step()
    speeds = assert_braking(rig.sent[n - 1:])
    # at rest (to the rounding of 0.1 s / 0.01 s) after v / a, exactly 0 a period later
    assert speeds[STOP_COMMANDS - 1] < 1e-12 and speeds[STOP_COMMANDS:] == [0.0] * (
        len(speeds) - STOP_COMMANDS), [math.degrees(s) for s in speeds]
    assert (rig.run.state, rig.run.message) == (
        RunState.FAILED, "the node's clock went back 20.000 s during the run (simulation "
        "restarted, or use_sim_time changed?): start again")


def test_brake_now_after_the_clock_went_back_ends_in_v_over_a(rig: RunRig) -> None:
    """Clock 3 s back mid-pass, then deactivate and finish the ramp at once (cleanup): it brakes
    from the run's last command on the wall clock, in v/a, stamps on from the last command."""
    rig.cruise()
    rig.set_time(rig.now_ns - 3 * 10**9)
    rig.step()
    n = len(rig.sent)
    assert rig.run.deactivate() is False  # the ramp goes on
    began = rig.wall.now
    rig.run.brake_now(rig.send)
    took = rig.wall.now - began
    assert took <= 0.1 + PERIOD_S + 1e-9, f"the ramp took {took:.3f} s (v / a = 0.1 s)"
    assert_braking(rig.sent[n - 2:])  # from the run's last command on
    stamps = [c.stamp_ns for c in rig.sent[n - 1:]]
    assert np.all(np.diff(stamps) > 0), stamps
    assert rig.run.state is RunState.FAILED


def test_small_clock_step_back_stops_the_run_without_a_position_jump(rig: RunRig) -> None:
    """The clock 0.4 s back (less than joint_state_timeout): the run stops; no step back."""
    rig.cruise()
    n = len(rig.sent)
    rig.set_time(rig.now_ns - int(0.4e9))
    rig.joint_state()
    rig.step()
    first, second = rig.sent[n - 1], rig.sent[n]
    # the fault checker's bound: the position moves as the velocities say, within the limit
    moved = second.position - first.position - 0.5 * (first.velocity + second.velocity) * PERIOD_S
    assert np.abs(moved).max() <= ACCELERATION * PERIOD_S**2 / 4, np.degrees(moved)
    assert rig.run.state is RunState.STOPPING
    assert rig.run.message.startswith("the node's clock went back 0.400 s during the run")


def test_clock_jitter_within_a_millisecond_keeps_the_run(rig: RunRig) -> None:
    """The clock 0.5 ms back: the run goes on, the plan is not sampled earlier."""
    rig.cruise()
    before = rig.sent[-1]
    rig.set_time(rig.now_ns - 500_000)
    rig.step()
    after = rig.sent[-1]
    assert rig.run.state is RunState.RUNNING
    assert np.array_equal(after.position, before.position) or np.all(
        (after.position - before.position) * np.sign(after.velocity) >= 0.0)


# --- starts ----------------------------------------------------------------------------------


def test_start_refused_without_joint_states(rig: RunRig) -> None:
    """No joint state at all: start refused saying so; nothing commanded."""
    answer = rig.start()
    assert (answer.success, answer.message) == (
        False, "refused to start: no /joint_states with the arm joints received")
    rig.tick()
    assert rig.sent == []


def test_start_refused_without_efforts(rig: RunRig) -> None:
    """Joint states without effort: start refused saying so; nothing commanded."""
    def no_effort(fields: dict[str, Any]) -> dict[str, Any]:
        return {**fields, "effort": []}

    rig.joint_state(mutate=no_effort)
    answer = rig.start()
    assert not answer.success and "no finite effort" in answer.message, answer.message
    rig.step()
    assert rig.sent == []


def test_start_refused_from_an_old_joint_state(rig: RunRig) -> None:
    """A joint state 0.4 s old (timeout 0.5 s): start refused, naming its age; nothing sent."""
    rig.joint_state()
    rig.set_time(rig.now_ns + int(0.4e9))
    answer = rig.start()
    assert (answer.success, answer.message) == (
        False, "refused to start: the newest /joint_states are 0.400 s old: a start needs one "
               "younger than 0.100 s")
    rig.step()
    assert rig.sent == []


def test_start_refused_while_the_arm_moves(rig: RunRig) -> None:
    """joint1 measured at 20 deg/s: start refused naming the joint and its speed."""
    qd = np.zeros(6)
    qd[0] = math.radians(20.0)
    rig.joint_state(qd=qd)
    assert (rig.start().success, rig.start().message) == (
        False, "refused to start: the arm is moving: joint1 at 20.00 deg/s (at rest below "
               "0.30 deg/s): wait until it stops")


def test_start_accepted_at_rest_with_a_fresh_joint_state(rig: RunRig) -> None:
    """The arm at rest (0.2 deg/s, below a * period), a 20 ms old joint state: start accepted."""
    qd = np.zeros(6)
    qd[2] = math.radians(0.2)
    rig.joint_state(qd=qd)
    rig.set_time(rig.now_ns + 20_000_000)
    answer = rig.start()
    assert answer.success, answer.message
    assert answer.message == "started: 6 sweeps, 24.8 s"
    assert rig.run.state is RunState.RUNNING


def test_start_refused_a_little_beyond_a_limit(rig: RunRig) -> None:
    """joint6 measured 0.45 deg past its upper limit (90 deg): start refused naming it."""
    q = np.radians(STATIC_DEG)
    q[5] = math.radians(90.45)
    rig.joint_state(q=q)
    answer = rig.start()
    assert (answer.success, answer.message) == (
        False, "refused to start: joints ['joint6'] left their limits: joint6 at 90.450 deg, "
               "limits [-90.000, 90.000] deg (a start needs every joint within its limits): "
               "move it back inside")


def test_start_within_encoder_noise_of_a_limit_begins_inside(rig: RunRig) -> None:
    """joint6 0.03 deg past its limit (encoder noise): the first command is at the limit, at rest."""
    rig.q = np.radians(STATIC_DEG)
    rig.q[5] = math.radians(90.03)
    rig.joint_state()
    assert rig.start().success
    rig.tick(follow=False)
    first = rig.sent[0]
    # from rest at the limit: one period at 30 deg/s^2 moves it 0.0015 deg, at 0.3 deg/s
    assert 90.0 - 0.002 < math.degrees(first.position[5]) <= 90.0
    assert abs(first.velocity[5]) <= ACCELERATION * PERIOD_S * (1 + 1e-9)


def test_start_refused_when_the_move_to_the_first_sweep_passes_a_collision(rig: RunRig) -> None:
    """The arm at [-24, 0, 104, 82, -56, 14] deg (31 mm clear) would pass link5 through the
    base on the straight move to the first sweep's start (joint6's: the sweeps run from the
    last joint back): start is refused, saying so, and no run starts."""
    rig.q = np.radians([-24.0, 0.0, 104.0, 82.0, -56.0, 14.0])
    rig.joint_state()
    answer = rig.start()
    assert not answer.success
    assert answer.message.startswith(
        "refused to start: the move from here to joint6's sweep passes "), answer.message
    assert "between base_link_0 / link5_0" in answer.message, answer.message
    assert rig.run.state is RunState.IDLE


def test_start_refused_with_an_unwritable_output_path(tmp_path: Path) -> None:
    """output_path's folder replaced by a file after configure: start refused naming it."""
    folder = tmp_path / "out"
    folder.mkdir()
    rig = RunRig(folder / "results.yaml")
    folder.rmdir()
    folder.write_text("now a file")
    rig.joint_state()
    answer = rig.start()
    assert not answer.success and answer.message.startswith(
        f"refused to start: output_path {folder / 'results.yaml'}: "), answer.message


def test_start_twice_is_refused_and_the_run_goes_on(rig: RunRig) -> None:
    """A second start during a run is refused naming the run; the run goes on."""
    rig.cruise()
    assert rig.start() == Answer(False, "a run is in progress (running): cancel it first")
    rig.tick()
    assert rig.run.state is RunState.RUNNING


def test_output_path_under_a_file_is_named(tmp_path: Path) -> None:
    """output_problem() names an output_path whose folder is a file, and what to do."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    problem = output_problem(str(blocker / "results.yaml"))
    assert problem is not None and problem.startswith(f"output_path {blocker / 'results.yaml'}: "
                                                      "cannot create") and problem.endswith(
        "choose a writable output_path")
    assert output_problem(str(tmp_path)) == f"output_path {tmp_path}: is a folder; give a file path"
    assert output_problem(str(tmp_path / "results.yaml")) is None


def test_a_clipped_command_has_no_velocity_further_out() -> None:
    """A position past a limit is clipped with its outward velocity zeroed (inward kept)."""
    lower, upper = np.full(6, -1.0), np.full(6, 1.0)
    position = np.zeros(6)
    position[5], position[0] = 1.01, -1.01
    velocity = np.array([-0.05, 0.0, 0.0, 0.0, 0.0, 0.05])
    clipped, limited = limited_command(position, velocity, lower, upper)
    assert (clipped[[0, 5]].tolist(), limited.tolist()) == ([-1.0, 1.0], [0.0] * 6)
    assert limited_command(position, -velocity, lower, upper)[1].tolist() == (-velocity).tolist()


def test_a_non_finite_command_is_not_sent() -> None:
    """A NaN velocity: limited_command raises naming the command (the run stops instead)."""
    with pytest.raises(HumanoidBalanceError, match=r"non-finite command .* not sent"):
        limited_command(np.zeros(2), np.array([0.0, math.nan]), np.full(2, -1.0), np.ones(2))


# --- stops -----------------------------------------------------------------------------------


def test_cancel_brakes_to_rest_then_cancelled(rig: RunRig) -> None:
    """Cancel mid-pass: stopping (OK), the commands brake to rest in v/a, then cancelled and
    nothing more; a second cancel is refused."""
    rig.cruise()
    n = len(rig.sent)
    assert rig.run.cancel() is True
    assert rig.run.cancel() is False
    status = rig.run.status(rig.now_s)
    assert (status.level, status.message) == (OK, "stopping: cancelled on request")
    for _ in range(STOP_COMMANDS + 5):
        rig.tick()
    assert_braking(rig.sent[n - 1:])
    assert rig.run.state is RunState.CANCELLED
    assert [s.at_rest for s in rig.steps[-6:]] == [True, False, False, False, False, False]
    assert rig.steps[-1].command is None
    assert ("info", "run stopped: cancelled on request") in rig.log.lines


def test_deactivate_during_a_run_brakes_then_stays_cancelled(rig: RunRig) -> None:
    """Deactivate mid-pass: the ramp goes on to rest (at_rest once); cancelled."""
    rig.cruise()
    assert rig.run.deactivate() is False
    assert rig.run.state is RunState.STOPPING
    rest = [rig.tick().at_rest for _ in range(STOP_COMMANDS + 1)]
    assert rest.count(True) == 1
    assert (rig.run.state, rig.run.message) == (RunState.CANCELLED, "deactivated during the run")


def test_deactivate_while_idle_is_inactive(rig: RunRig) -> None:
    """Deactivate with no run: inactive at once; a start after activating again is accepted."""
    assert rig.run.deactivate() is True
    assert (rig.run.state, rig.run.message) == (RunState.INACTIVE, "deactivated")
    rig.run.activate(rig.send)
    rig.joint_state()
    assert rig.start().success


def test_close_during_a_run_brakes_at_once(rig: RunRig) -> None:
    """Close (shutdown, exit) mid-pass: the ramp goes out at once to rest; cancelled."""
    rig.cruise()
    n = len(rig.sent)
    assert rig.run.close(rig.send, "node stopped during the run") is True
    assert_braking(rig.sent[n - 1:])
    assert (rig.run.state, rig.run.message) == (RunState.CANCELLED, "node stopped during the run")
    assert rig.run.close(rig.send, "again") is False


def test_brake_now_stops_when_sending_fails(rig: RunRig) -> None:
    """A send that raises (the context going) ends the ramp there: the stop's state is taken."""
    rig.cruise()
    rig.run.cancel()

    def broken(command: Any) -> None:
        raise RuntimeError("context is invalid")

    rig.run.brake_now(broken)
    assert rig.run.state is RunState.CANCELLED


def test_an_internal_error_mid_run_stops_it_by_a_ramp(rig: RunRig) -> None:
    """An unexpected error during a run: failed with the message, braking from the last command."""
    rig.cruise()
    n = len(rig.sent)
    rig.run.internal_error("internal error in _on_timer: KeyError: 'x'")
    for _ in range(STOP_COMMANDS + 1):
        rig.tick()
    assert_braking(rig.sent[n - 1:])
    status = rig.run.status(rig.now_s)
    assert (status.level, status.message) == (
        ERROR, "run stopped: internal error in _on_timer: KeyError: 'x'")


def test_leaving_the_clearance_mid_run_fails_not_cleared_by_the_input(rig: RunRig) -> None:
    """The arm measured with link3 and link5 closer than 1 cm mid-run: failed naming the
    clearance, ERROR (not an input fault: it stays ERROR with usable joint states)."""
    rig.cruise()
    pushed = np.radians(STATIC_DEG)
    pushed[3] = math.radians(-115.0)

    def push(fields: dict[str, Any]) -> dict[str, Any]:
        return {**fields, "position": pushed.tolist(), "velocity": [0.0] * 6}

    rig.tick(mutate=push)
    assert rig.run.state is RunState.STOPPING
    assert "is below 10.0 mm" in rig.run.message, rig.run.message
    rig.run_to_end(mutate=push)
    status = rig.run.status(rig.now_s)
    assert status.level == ERROR and "is below 10.0 mm" in status.message


# --- the end of a run ------------------------------------------------------------------------


def test_a_whole_run_estimates_writes_and_gives_the_estimate_once(rig: RunRig,
                                                                  tmp_path: Path) -> None:
    """A run on an ideal arm: done, the results written (as estimated), the estimate given once
    (to publish), the arm's gravity torques predicted."""
    rig.cruise()
    rig.run_to_end()
    assert rig.run.state is RunState.DONE, rig.run.message
    assert rig.run.message.startswith(f"parameters written to {tmp_path / 'results.yaml'}")
    estimates = [s.estimate for s in rig.steps if s.estimate is not None]
    assert len(estimates) == 1
    document = yaml.safe_load((tmp_path / "results.yaml").read_text())
    assert [p["value"] for p in document["parameters"]] == estimates[0].values.tolist()
    assert document["sweeps"] == 6 and document["estimation"] == {
        "method": "sequential", "average": 10, "trim_s": 0.2}
    # noise-free gravity torques: the parameters themselves (eq. 8's composites of the URDF's),
    # to the bias of averaging blocks of 10 samples of a nonlinear torque (1.5e-6 measured;
    # 4e-7 without averaging)
    truth = rig.arm.pset.from_standard(rig.arm.regressor.standard_parameters())
    assert estimates[0].values == pytest.approx(truth, rel=1e-5)


def test_an_unwritable_output_at_the_end_fails_the_run_but_gives_the_estimate(
        tmp_path: Path) -> None:
    """The writer fails at the end of a run: failed naming the path and the cause (ERROR), the
    estimate still given (published)."""
    def unwritable(path: Path, document: Any) -> None:
        raise PermissionError(13, "Permission denied")

    rig = RunRig(tmp_path / "r.yaml", write=unwritable)
    rig.cruise()
    rig.run_to_end()
    assert any(s.estimate is not None for s in rig.steps)
    status = rig.run.status(rig.now_s)
    assert (status.level, status.message) == (
        ERROR, "run stopped: parameters estimated and published on /identification/parameters, "
               f"but not written to {tmp_path / 'r.yaml'}: Permission denied; choose a writable "
               "output_path")


def test_failed_estimation_names_late_joint_states_too(tmp_path: Path) -> None:
    """A run whose joint states all came 80 ms late (a start needs one within 0.1 s) and an arm
    that never moved: the error says both."""
    rig = RunRig(tmp_path / "r.yaml", sweep_half_range=0.5)

    def late(fields: dict[str, Any]) -> dict[str, Any]:
        return {**fields, "stamp_s": fields["stamp_s"] - 0.08}

    rig.joint_state(mutate=late)
    assert rig.start().success

    for _ in range(2000):
        rig.tick(follow=False, mutate=late)
        if not rig.run.in_run:
            break
    assert rig.run.state is RunState.FAILED
    assert rig.run.message.startswith("estimation failed: "), rig.run.message
    assert "/joint_states came late: 100.0 % arrived more than 50 ms after their stamp" \
        in rig.run.message, rig.run.message
    assert not any(s.estimate is not None for s in rig.steps)


def test_status_while_running_names_the_joint_pass_and_percent(rig: RunRig) -> None:
    """Running: OK, the joint swept, its pass and the share of the plan done."""
    rig.cruise()
    status = rig.run.status(rig.now_s)
    assert status.level == OK and status.message == "started"
    assert status.values["state"] == "running" and status.values["input"] == "ok"
    assert status.values["joint"] == "joint6" and status.values["pass"] in ("forward", "backward")
    assert 0.0 < status.values["percent"] < 10.0
    assert status.values["rejected_joint_states"] == 0 and "last_rejection" not in status.values


def test_idle_without_joint_states_warns_that_a_start_would_be_refused(rig: RunRig) -> None:
    """Idle with no joint state: WARN, saying a start would be refused and why."""
    status = rig.run.status(rig.now_s)
    assert (status.level, status.message) == (
        WARN, "active; a start would be refused: no /joint_states with the arm joints received")


def test_reset_forgets_joint_states_rejections_and_commands(rig: RunRig) -> None:
    """reset (configure again): idle, no joint state, no rejection counted."""
    rig.joint_state(mutate=lambda f: {**f, "names": f["names"][:5], "position": f["position"][:5]})
    rig.cruise()
    rig.run.cancel()
    rig.run.reset()
    assert (rig.run.state, rig.run.message) == (RunState.IDLE, "configured")
    assert rig.run.status(rig.now_s).values["rejected_joint_states"] == 0
    assert rig.start().message == "refused to start: no /joint_states with the arm joints received"


def test_dynamic_settings_apply_between_runs_not_during_one(rig: RunRig, tmp_path: Path) -> None:
    """set_config between runs: the next joint state is read with it (torque_source current:
    effort times k_e); during a run it is refused."""
    from run_rig import config

    current = config(output_path=str(tmp_path / "r.yaml"), torque_source="current",
                     torque_constants=[100.0] * 6)
    rig.run.set_config(current)
    rig.joint_state()  # the efforts are the gravity torques: times 100, beyond the limits
    assert "a torque of" in rig.start().message
    rig.run.set_config(rig.config)
    rig.cruise()
    with pytest.raises(HumanoidBalanceError, match=r"^settings cannot change during a run "
                                                   r"\(running\): cancel it first$"):
        rig.run.set_config(current)


def test_start_right_after_a_stop_waits_for_a_joint_state_after_its_last_command(
        rig: RunRig) -> None:
    """A start between a stop's last ramp command and the next joint state is refused (its
    newest joint state is from mid-ramp: the fault suite's service flood saw a 0.0015 deg
    step from it under load); the next joint state lets it start from where the arm is."""
    rig.cruise()
    assert rig.run.cancel()
    while rig.run.in_run:
        rig.tick()
    rig.set_time(rig.now_ns + PERIOD_NS)  # no joint state since the ramp's last command
    answer = rig.start()
    assert not answer.success
    assert answer.message == ("refused to start: no joint state since the last command (a stop "
                              "just ended): start again after the next joint state")
    rig.q, rig.qd = rig.sent[-1].position, rig.sent[-1].velocity
    rig.joint_state()
    assert rig.start().success
