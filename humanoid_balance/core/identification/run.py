"""An identification run without ROS: its states, braking stops, input checks and clock rules.

:class:`IdentificationRun` is what the ``identification_executor`` node runs: the node
converts messages, services and lifecycle transitions into calls, and publishes what
they return. The tests run it in lock-step with a fake arm (``test/core/identification/
test_run.py``). Times are the node clock's, passed in: ``now_ns`` [ns] (integers: a float
of ~1.8e9 s resolves only 0.24 us, which shows in the velocity steps between commands)
or ``now_s`` [s].

* **A run** (:meth:`IdentificationRun.start`): from the newest joint state (fresh,
  plausible, at rest, within the limits, :meth:`~.inputs.JointStateInput.start_problem`;
  the straight move to the first sweep clear of collisions; ``output_path`` writable)
  the :class:`~.trajectory.PlanFollower` gives a command every :meth:`~IdentificationRun.step`
  (positions and velocities within the joint limits, every pass and approach at the
  acceleration limit); the joint states are recorded, and once the plan is over and the
  arm measured at rest (at most :data:`SETTLE_TIMEOUT_S` later) the stream is cut into
  sweeps, friction cancelled (eq. 5), the friction-free samples averaged in blocks of
  ``average``, the parameters estimated (eq. 10) and the results written (YAML: names,
  values, units, standard deviations, per-joint fit RMSE, timing figures and warnings).
* **Stops** are braking ramps (:class:`~.trajectory.BrakingRamp`): from the last command,
  not from a measurement (which may be old), the command decelerates at the acceleration
  limit to rest; no velocity step, no position jump. The ramp's time only grows
  (:class:`~.trajectory.RampTime`): a clock going back does not hold it. A cancel, a
  deactivation and a shutdown stop a run so; at cleanup, shutdown and exit the ramp is
  finished at once on the wall clock (:meth:`~IdentificationRun.brake_now`).
* **During a run**, the clock going back by more than
  :data:`~humanoid_balance.core.freshness.CLOCK_BACK_TOLERANCE_S` (a
  :class:`~humanoid_balance.core.freshness.ClockWatch` jump), stale joint states,
  non-finite values, a velocity or torque beyond the URDF's limits, a joint outside its
  limits or two links closer than ``clearance`` stop the run (failed); the plan is never
  sampled earlier than before (jitter within the tolerance).
* **Status** (:meth:`~IdentificationRun.status`, a
  :class:`~humanoid_balance.core.diagnostics.LoopStatus`): the level names the cause (a
  failed run ERROR while its cause lasts, WARN once it cleared; idle with unusable joint
  states WARN; a finished run whose samples or commands were late or irregular, or whose fit
  is ill-conditioned, WARN).
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from humanoid_balance.core.diagnostics import ERROR, OK, WARN, LoopStatus
from humanoid_balance.core.freshness import ClockWatch
from humanoid_balance.core.identification.arm import IdentificationArm
from humanoid_balance.core.identification.estimation import Estimate, fit_warnings
from humanoid_balance.core.identification.inputs import JointStateInput, Rejection, Sample
from humanoid_balance.core.identification.optimisation import joint_line
from humanoid_balance.core.identification.procedure import (
    TimingQuality,
    identify,
    results_document,
    segment_sweeps,
    timing_quality,
)
from humanoid_balance.core.identification.trajectory import (
    BrakingRamp,
    PlanFollower,
    PlanPoint,
    RampTime,
)
from humanoid_balance.exceptions import ConfigurationError, HumanoidBalanceError
from humanoid_balance.params.identification_executor import IdentificationExecutorConfig
from humanoid_balance.results import check_output, write_yaml

__all__ = ["ERROR", "OK", "SETTLE_TIMEOUT_S", "WARN", "Answer", "Command", "IdentificationRun",
           "RunState", "Step", "limited_command", "output_problem"]

#: s the arm may take after the plan's end to come to rest before the estimate
SETTLE_TIMEOUT_S = 2.0
#: the share of the sweep speed below which the arm counts as still (settled, not sweeping)
STILL_SHARE = 0.3


class RunState(Enum):
    """Where the run is (the ``state`` on ``/diagnostics``)."""

    IDLE = "idle"            # active, no run (none yet)
    INACTIVE = "inactive"    # deactivated
    RUNNING = "running"      # commanding the plan
    STOPPING = "stopping"    # a braking ramp, then the state in waiting
    DONE = "done"            # parameters estimated, published and written
    FAILED = "failed"        # stopped by a fault, or the estimation or the writing failed
    CANCELLED = "cancelled"  # stopped on request (cancel, deactivate, shutdown)


@dataclass(frozen=True)
class Command:
    """A command to send: positions [rad] and velocities [rad/s], stamped ``stamp_ns`` [ns]."""

    stamp_ns: int
    position: np.ndarray
    velocity: np.ndarray


@dataclass(frozen=True)
class Step:
    """What one :meth:`IdentificationRun.step` gives.

    Attributes:
        command: the command to send now (None: nothing).
        estimate: the run's result, once, when it was estimated (to publish).
        at_rest: a stop's braking ramp ended on this step.
    """

    command: Command | None = None
    estimate: Estimate | None = None
    at_rest: bool = False


@dataclass(frozen=True)
class Answer:
    """A request's answer: done or refused, and the message saying what or why."""

    success: bool
    message: str


def output_problem(path: str) -> str | None:
    """Why results cannot be written to ``path`` (None when they can); never raises."""
    target = Path(path)
    try:
        check_output(target, option="output_path")
    except ConfigurationError as exc:
        return str(exc)
    if target.is_dir():
        return f"output_path {path}: is a folder; give a file path"
    if target.exists() and not os.access(target, os.W_OK):
        return f"output_path {path}: the file is not writable; choose a writable output_path"
    return None


def limited_command(position: np.ndarray, velocity: np.ndarray, lower: np.ndarray,
                    upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions clipped into ``[lower, upper]`` [rad], and velocities [rad/s] with a clipped
    joint's outward velocity zeroed (a clipped position holds at the limit).

    Raises:
        HumanoidBalanceError: a position or velocity not finite (nothing to send).
    """
    position = np.asarray(position, float)
    velocity = np.array(velocity, dtype=float)
    velocity[((position > upper) & (velocity > 0.0)) | ((position < lower) & (velocity < 0.0))] = 0.0
    position = np.clip(position, lower, upper)
    if not (np.all(np.isfinite(position)) and np.all(np.isfinite(velocity))):
        raise HumanoidBalanceError(f"non-finite command {position.tolist()} "
                                   f"{velocity.tolist()} not sent")
    return position, velocity


class IdentificationRun:
    """The identification run's state machine, stops, input checks and clock rules.

    Args:
        arm: the arm and its checked plan.
        config: the settings (the dynamic ones may change between runs: :meth:`set_config`).
        logger: where the run's events are logged (``info``, ``warning``, ``error``: rclpy's
            node logger or a :class:`logging.Logger`).
        write: writes the results document to a path (raises ``OSError`` when it cannot).
        monotonic: the wall clock [s] :meth:`brake_now` finishes a ramp on.
        sleep: waits a number of seconds (:meth:`brake_now`, between its commands).
    """

    def __init__(self, arm: IdentificationArm, config: IdentificationExecutorConfig, *,
                 logger: Any = None,
                 write: Callable[[Path, Mapping[str, Any]], Any] = write_yaml,
                 monotonic: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Any] = time.sleep) -> None:
        self.arm = arm
        self.config = config
        self.logger = logger if logger is not None else logging.getLogger(__name__)
        self._write, self._monotonic, self._sleep = write, monotonic, sleep
        self.inputs = JointStateInput(arm, config)
        self.state = RunState.IDLE
        self.message = "configured"
        self.estimate: Estimate | None = None
        self.quality: TimingQuality | None = None
        #: what to suspect in the last run's results: its timing's and its fit's warnings
        self.warnings: tuple[str, ...] = ()
        #: where the plan was at the last command of the run (None before the first)
        self.point: PlanPoint | None = None
        self._follower: PlanFollower | None = None
        self._stream: list[Sample] = []
        self._command_times: list[float] = []
        self._t0_ns = 0  # the run's start [ns]
        #: the newest clock reading of the run [ns]: the plan is never sampled earlier
        self._plan_ns = 0
        self._clock = ClockWatch()
        self._sent: Command | None = None
        self._ramp: BrakingRamp | None = None
        self._ramp_time: RampTime | None = None
        self._ending: tuple[RunState, str] = (RunState.IDLE, "")
        self._cause_is_input = False

    @classmethod
    def configured(cls, config: IdentificationExecutorConfig, **kwargs: Any) -> IdentificationRun:
        """A run of the arm ``config`` describes (:class:`~.arm.IdentificationArm`), checked:
        ``output_path`` writable, then the model and the plan; ``kwargs`` as the constructor's.

        Raises:
            ConfigurationError: why not (the first problem found).
        """
        problem = output_problem(config.output_path)
        if problem is not None:
            raise ConfigurationError(problem)
        return cls(IdentificationArm(config, kwargs.get("logger")), config, **kwargs)

    # --- settings and lifecycle ------------------------------------------------------------

    def reset(self) -> None:
        """As configured: no joint state, no rejection, no command, idle."""
        self.inputs.reset()
        self._sent, self._ramp, self._ramp_time = None, None, None
        self.state, self.message = RunState.IDLE, "configured"

    def set_config(self, config: IdentificationExecutorConfig) -> None:
        """Use ``config``'s dynamic settings from now (between runs).

        Raises:
            HumanoidBalanceError: a run is going on (its settings hold until it ends).
        """
        if self.in_run:
            raise HumanoidBalanceError(f"settings cannot change during a run ({self.state.value})"
                                       ": cancel it first")
        self.config = config
        self.inputs.config = config

    @property
    def in_run(self) -> bool:
        """Whether a run is going on or braking."""
        return self.state in (RunState.RUNNING, RunState.STOPPING)

    def activate(self, send: Callable[[Command], Any]) -> None:
        """Ready for runs (a stop's ramp left from before is finished at once through ``send``)."""
        self.brake_now(send)
        self.state, self.message = RunState.IDLE, "active"

    def deactivate(self) -> bool:
        """Stop a run (its braking ramp goes on with :meth:`step`); True when at rest now."""
        self.cancel("deactivated during the run")
        if self.state is RunState.STOPPING:
            return False
        self.state, self.message = RunState.INACTIVE, "deactivated"
        return True

    def close(self, send: Callable[[Command], Any], message: str) -> bool:
        """Stop a run with ``message`` and finish its ramp at once; True when it was braking."""
        braking = self.in_run
        self.cancel(message)
        self.brake_now(send)
        return braking

    # --- inputs -------------------------------------------------------------------------------

    def joint_state(self, names: Sequence[str], position: Sequence[float],
                    velocity: Sequence[float], effort: Sequence[float], stamp_s: float,
                    now_s: float) -> Rejection | None:
        """Take a joint state (see :meth:`~.inputs.JointStateInput.read`); the rejection, if
        any. A run records the usable ones."""
        read = self.inputs.read(names, position, velocity, effort, stamp_s, now_s)
        if isinstance(read, Rejection):
            return read
        if read is not None and self.state is RunState.RUNNING and self.inputs.usable(read):
            self._stream.append(read)
        return None

    # --- requests -----------------------------------------------------------------------------

    def start(self, now_ns: int) -> Answer:
        """Start a run at ``now_ns`` [ns] from the newest joint state, or say why not."""
        refusal = self._start_refusal(now_ns * 1e-9)
        last = self.inputs.last
        if refusal is not None or last is None:
            return Answer(False, refusal or "refused to start: no joint state")
        arm = self.arm
        # within START_LIMIT_TOLERANCE_RAD of the limits (checked): the plan starts inside them
        start = np.clip(last.position, arm.lower, arm.upper)
        self._follower = PlanFollower(arm.plan, start, acceleration=arm.acceleration)
        self._stream, self._command_times = [], []
        self._sent, self._ramp, self._ramp_time, self.point = None, None, None, None
        self._t0_ns = self._plan_ns = now_ns
        self._clock.reset()
        self._clock.update(now_ns * 1e-9)
        self.estimate, self.quality, self.warnings = None, None, ()
        self.state, self.message = RunState.RUNNING, "started"
        message = f"started: {len(arm.plan)} sweeps, {self._follower.duration:.1f} s"
        self.logger.info(message)
        return Answer(True, message)

    def _start_refusal(self, now_s: float) -> str | None:
        if self.in_run:
            return f"a run is in progress ({self.state.value}): cancel it first"
        problem = self.inputs.start_problem(now_s, self.config.period_s)
        last = self.inputs.last
        sent = self._sent
        if problem is None and last is not None and sent is not None and (
                last.received <= sent.stamp_ns * 1e-9):
            # the newest joint state is from before the last command (a stop's ramp that just
            # ended): the plan would start where the arm was, not where it is (seen under load:
            # a 0.0015 deg step, or "the arm is moving" on a sample from mid-ramp)
            problem = ("no joint state since the last command (a stop just ended): start again "
                       "after the next joint state")
        if problem is None and last is not None:  # the path's first configuration is where the arm is
            first = self.arm.plan[0]
            problem = self.arm.path_problem(
                f"the move from here to {self.arm.joints[first.joint]}'s sweep",
                joint_line(last.position, first.start_configuration()))
        if problem is None:
            problem = output_problem(self.config.output_path)
        return None if problem is None else f"refused to start: {problem}"

    def cancel(self, message: str = "cancelled on request") -> bool:
        """Stop a running run with ``message`` (a braking ramp); False when none runs."""
        if self.state is not RunState.RUNNING:
            return False
        self.stop(RunState.CANCELLED, message, cause_is_input=False)
        return True

    def stop(self, state: RunState, message: str, *, cause_is_input: bool) -> None:
        """Leave the run: brake the command to rest, then ``state`` with ``message``.

        ``cause_is_input``: the cause is the joint states (the status is WARN, not ERROR,
        once they are usable again).
        """
        if self._sent is not None:
            self._ramp = BrakingRamp(self._sent.position, self._sent.velocity,
                                     self.config.acceleration_limit_rad_s2)
            # its time only grows (a period for a step back of the clock): a clock going back
            # does not hold the velocity
            self._ramp_time = RampTime(self._sent.stamp_ns, self._period_ns())
        else:
            self._ramp, self._ramp_time = None, None
        self._ending = (state, message)
        self._cause_is_input = cause_is_input
        self.state, self.message = RunState.STOPPING, message
        if state is RunState.CANCELLED:
            self.logger.info(f"run stopped: {message}")
        else:
            self.logger.error(f"run stopped: {message}")

    def internal_error(self, message: str) -> None:
        """An unexpected error (``message`` says which, where): a run stops (failed)."""
        try:
            if self.state is RunState.RUNNING:
                self.stop(RunState.FAILED, message, cause_is_input=False)
            elif self.state is RunState.STOPPING:
                self._ramp, self._ramp_time = None, None
                self.state, self.message = RunState.FAILED, message
        except Exception as second:  # braking from a broken command: hold what was sent last
            self._ramp, self._ramp_time = None, None
            self.state, self.message = RunState.FAILED, f"{message}; then {second}"

    # --- the command cycle ----------------------------------------------------------------------

    def _period_ns(self) -> int:
        """The command period [ns]."""
        return max(1, round(self.config.period_s * 1e9))

    def _command(self, position: np.ndarray, velocity: np.ndarray, now_ns: int) -> Command:
        """The command for ``now_ns`` [ns] (the time it was computed for), within the limits."""
        position, velocity = limited_command(position, velocity, self.arm.lower, self.arm.upper)
        command = Command(now_ns, position, velocity)
        self._sent = command
        if self.state is RunState.RUNNING:
            self._command_times.append(now_ns * 1e-9)
        return command

    def _ramp_step(self, now_ns: int) -> Step:
        """The braking ramp's command for ``now_ns``; at rest: the stop's state taken."""
        ramp, ramp_time = self._ramp, self._ramp_time
        command = None
        if ramp is not None and ramp_time is not None:
            elapsed = ramp_time.advance(now_ns)
            command = self._command(*ramp.at(elapsed), now_ns)
            if elapsed < ramp.duration:
                return Step(command)
        self.state, self.message = self._ending
        self._ramp, self._ramp_time = None, None
        return Step(command, at_rest=True)

    def step(self, now_ns: int) -> Step:
        """One command cycle at ``now_ns`` [ns]: the plan's command, a stop's, or none."""
        if self.state is RunState.STOPPING:
            return self._ramp_step(now_ns)
        follower, last = self._follower, self.inputs.last
        if self.state is not RunState.RUNNING or follower is None or last is None:
            return Step()
        jump = self._clock.update(now_ns * 1e-9)
        if jump is not None and jump.back:
            self.stop(RunState.FAILED, f"the node's clock went back {jump.by_s:.3f} s during the "
                      "run (simulation restarted, or use_sim_time changed?): start again",
                      cause_is_input=False)
            return self._ramp_step(now_ns)
        # the plan is never sampled earlier than before (the clock may go back within tolerance)
        self._plan_ns = plan_ns = max(self._plan_ns, now_ns)
        problem = self.inputs.problem(now_ns * 1e-9, plausible=False)
        cause_is_input = problem is not None
        if problem is None:
            problem = self.arm.clearance_problem(last.position)
        if problem is None:
            problem = self.inputs.plausibility_problem(last)
            cause_is_input = problem is not None
        if problem is not None:
            self.stop(RunState.FAILED, problem, cause_is_input=cause_is_input)
            return self._ramp_step(now_ns)
        point = follower.at((plan_ns - self._t0_ns) * 1e-9)
        self.point = point
        command = self._command(point.position, point.velocity, now_ns)
        if point.phase == "done" and self._arm_settled(plan_ns * 1e-9):
            return Step(command, estimate=self._finish())
        return Step(command)

    def _arm_settled(self, now_s: float) -> bool:
        """After the plan's end: the arm measured at rest, or ``SETTLE_TIMEOUT_S`` passed.

        The arm follows its targets with a lag: its last pass ends after the
        plan's, and those samples pair the last sweep.
        """
        follower, last = self._follower, self.inputs.last
        if follower is None or last is None:
            return False
        end = self._t0_ns * 1e-9 + follower.duration
        still = float(np.abs(last.velocity).max()) < STILL_SHARE * self.config.speed_rad_s
        return (last.stamp > end and still) or now_s - end > SETTLE_TIMEOUT_S

    def brake_now(self, send: Callable[[Command], Any]) -> None:
        """Finish a braking ramp at once, on the wall clock (cleanup, shutdown, exit).

        On from where the ramp is by the wall clock (the node's clock may have gone back:
        not used), stamped on from the last command sent, a command a period through
        ``send`` until at rest (or until ``send`` raises: nothing more can be sent).
        """
        if self.state is not RunState.STOPPING:
            return
        ramp, ramp_time, sent = self._ramp, self._ramp_time, self._sent
        if ramp is not None and ramp_time is not None and sent is not None:
            period_ns = self._period_ns()
            stamp_ns = sent.stamp_ns
            elapsed_ns, duration_ns = ramp_time.elapsed_ns, math.ceil(ramp.duration * 1e9)
            wall = self._monotonic()
            while elapsed_ns < duration_ns:  # the command at elapsed_ns went out already
                self._sleep(period_ns * 1e-9)
                now = self._monotonic()
                advance = max(int((now - wall) * 1e9), 1)
                wall = now
                elapsed_ns += advance
                stamp_ns += advance
                try:
                    send(self._command(*ramp.at(elapsed_ns * 1e-9), stamp_ns))
                except Exception:  # the context is going: nothing more can be sent
                    break
        self.state, self.message = self._ending
        self._ramp, self._ramp_time = None, None

    # --- the end of a run ---------------------------------------------------------------------

    def _finish(self) -> Estimate | None:
        """Estimate, write the results; the estimate (to publish), None when it failed."""
        config, stream = self.config, self._stream
        t = np.array([s.stamp for s in stream])
        # before the estimation: a run that fails it on a machine too loaded to feed or command
        # the arm regularly (sweeps broken apart, too few samples) is told so as well
        quality = self.quality = timing_quality(
            t, np.array([s.received for s in stream]), np.array(self._command_times),
            config.period_s)
        try:
            recordings = segment_sweeps(
                t, np.array([s.position for s in stream]), np.array([s.velocity for s in stream]),
                np.array([s.torque for s in stream]),
                moving_rad_s=STILL_SHARE * config.speed_rad_s, trim_s=config.trim_s)
            estimate = identify(recordings, self.arm.regressor, self.arm.pset,
                                method=config.method, average=config.average)
            if not np.all(np.isfinite(estimate.values)):
                raise HumanoidBalanceError("the estimate is not finite")
            self.estimate = estimate
            self.warnings = quality.warnings + fit_warnings(estimate, self.arm.joints)
        except Exception as exc:  # any failure of the estimation ends the run, not the node
            message = f"estimation failed: {exc}"
            if quality.warnings:
                message += "; " + "; ".join(quality.warnings)
            self._failed(message)
            return None
        self._write_results(estimate, len(recordings), quality)
        return estimate

    def _write_results(self, estimate: Estimate, sweeps: int, quality: TimingQuality) -> None:
        config = self.config
        path = Path(config.output_path)
        document = results_document(estimate, self.arm.joints, config.gravity_m_s2, sweeps,
                                    urdf=config.urdf_path)
        document["timing"] = {key: getattr(quality, key) for key in (
            "samples", "sample_interval_s", "sample_gap_share", "longest_sample_gap_s",
            "late_share", "command_gap_share", "longest_command_gap_s")}
        document["warnings"] = list(self.warnings)
        document["estimation"] = {"method": config.method, "average": config.average,
                                  "trim_s": config.trim_s}
        try:
            self._write(path, document)
        except OSError as exc:
            self._failed(f"parameters estimated and published on /identification/parameters, "
                         f"but not written to {path}: {exc.strerror or exc}; choose a writable "
                         "output_path")
            return
        self.state, self.message = RunState.DONE, f"parameters written to {path}"
        if self.warnings:
            self.message += "; " + "; ".join(self.warnings)
            self.logger.warning(self.message)
        else:
            self.logger.info(self.message)

    def _failed(self, message: str) -> None:
        self.state, self.message = RunState.FAILED, message
        self._cause_is_input = False
        self.logger.error(message)

    # --- status -------------------------------------------------------------------------------

    def status(self, now_s: float) -> LoopStatus:
        """The level, message and values of the run and its input at ``now_s`` [s]."""
        problem = self.inputs.problem(now_s)
        values: dict[str, Any] = {"state": self.state.value, "input": problem or "ok",
                                  "rejected_joint_states": self.inputs.rejected}
        if self.inputs.rejected:
            values["last_rejection"] = self.inputs.reject_reason
        point = self.point
        if point is not None and self.state is RunState.RUNNING:
            values.update({"joint": self.arm.joints[point.joint], "pass": point.phase,
                           "percent": round(point.percent, 1)})
        level, message = self._level(problem)
        return LoopStatus(level, message, values)

    def _level(self, problem: str | None) -> tuple[int, str]:
        """The diagnostics level and message: the run's state and the input's problem."""
        state, message = self.state, self.message
        if state is RunState.STOPPING:
            return (OK if self._ending[0] is RunState.CANCELLED else ERROR), f"stopping: {message}"
        if state is RunState.FAILED:
            if self._cause_is_input and problem is None:
                return WARN, f"run stopped: {message} (cleared: start a new run)"
            return ERROR, f"run stopped: {message}"
        if state is RunState.DONE and self.warnings:
            return WARN, message
        if problem is not None and state is not RunState.INACTIVE:
            return WARN, f"{message}; a start would be refused: {problem}"
        return OK, message
