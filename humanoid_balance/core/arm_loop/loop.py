"""The arm-balance loop without ROS (the cycle; see :mod:`humanoid_balance.core.arm_loop`)."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from humanoid_balance.core import kernels
from humanoid_balance.core.arm_controller import ArmController
from humanoid_balance.core.arm_loop.config import (
    CLOCK_PROBLEM_S,
    MAX_LAG_S,
    MAX_STEPS,
    RESUME_FROM_MEASURED_RAD,
    SETTLE_S,
    SETTLED_RAD,
    ArmLoopConfig,
)
from humanoid_balance.core.arm_loop.job_input import JobInput, MeasuredMargin, job_problem
from humanoid_balance.core.arm_loop.measured import MeasuredState
from humanoid_balance.core.arm_loop.outputs import (
    Command,
    Hold,
    LoopState,
    LoopStatus,
)
from humanoid_balance.core.diagnostics import ERROR, OK, WARN
from humanoid_balance.core.freshness import CLOCK_BACK_TOLERANCE_S, ClockWatch, is_fresh
from humanoid_balance.core.rmc import RmcInput
from humanoid_balance.exceptions import HumanoidBalanceError

__all__ = ["ArmLoop"]


class ArmLoop:
    """One arm-balance cycle at a time; see the module docstring.

    Args:
        controller: the mode's controller (its job arm and selection already set).
        state: the measured state the node fills (its joints index the arm joints).
        config: the tunables.
    """

    def __init__(self, controller: ArmController, state: MeasuredState,
                 config: ArmLoopConfig | None = None) -> None:
        self.controller = controller
        self.config = config or ArmLoopConfig()
        self.state = LoopState.WAITING
        self.enabled = True
        #: key (joint_states, job_input, guard, controller, ...) -> what is wrong now
        self.problems: dict[str, str] = {}
        self._reported_s: dict[str, float] = {}  # input problem key -> when last reported [s]
        self.last_output: Any = None
        self.guard_scale = 1.0
        self.cycles = 0
        #: stamp-triggered gaps longer than :data:`MAX_STEPS` periods integrated in steps
        self.caught_up_gaps = 0
        self.holds = 0
        # the clock between cycles: a reading back by more than CLOCK_BACK_TOLERANCE_S is a jump
        self._clock = ClockWatch()
        self._arm_idx = state.index(controller.names)
        self._arm_q = (controller.names, state.q_index(controller.names))
        self._state = state
        # the last command sent (by name): where a hold starts and commanding resumes
        self._cmd_names: tuple[str, ...] = ()
        self._cmd_p = np.zeros(0)
        self._cmd_v = np.zeros(0)
        self._last_t: float | None = None  # the end [s] of the last cycle
        self._grid: tuple[float, int] = (0.0, 0)  # timer cycles end at grid[0] + k period
        self._switched_s = -math.inf
        self._job_order: tuple[tuple[str, ...], np.ndarray] | None = None
        self.step_s: list[float] = []
        self._clock_problem_until_s = -math.inf
        # inputs held when the clock went back: ignored until the node passes newer ones
        self._dropped: tuple[JobInput | None, MeasuredMargin | None] = (None, None)
        # since when the stored joint states were dropped (for the message), None: not dropped
        self._dropped_since: str | None = None
        # the next command starts from the measured positions at rest (after activation)
        self._from_measured = False
        # held and measured elsewhere: (the arm positions, since when [s]) while they stay put
        self._elsewhere: tuple[np.ndarray, float] | None = None
        #: the last command may be sent again for a period asked again (lock-step); False after
        #: the clock went back, until a command or hold step is made on the new clock
        self.repeatable = True

    @property
    def clock_jumps(self) -> int:
        """Times the clock went back by more than
        :data:`~humanoid_balance.core.freshness.CLOCK_BACK_TOLERANCE_S` between cycles."""
        return self._clock.jumps

    # --- between cycles -------------------------------------------------------------------------

    def set_config(self, config: ArmLoopConfig) -> None:
        """New timeouts, guard margins or rate (from the next cycle)."""
        self.config = config

    def set_job_arm(self, job_arm: str, now_s: float) -> None:
        """Make ``job_arm`` the job arm from the next cycle; job inputs received until ``now_s`` are
        dropped (they were meant for the other arm)."""
        if job_arm != self.controller.job_arm:
            self.controller.set_job_arm(job_arm)
            self._switched_s = now_s
            self._job_order = None

    def set_selection(self, selection: Sequence[str], secondary: Sequence[str] = ()) -> None:
        """New held and secondary momentum rows (from the next cycle)."""
        self.controller.set_selection(selection, secondary)

    def report_input(self, key: str, problem: str | None, now_s: float, linger_s: float) -> None:
        """Keep the problem of an input (its key in :attr:`problems`), or clear it once
        ``linger_s`` [s] passed since it was last reported: diagnostics published at their rate
        see an intermittent one (a bad message among good ones) too."""
        if problem is not None:
            self.problems[key] = problem
            self._reported_s[key] = now_s
        elif now_s - self._reported_s.get(key, -math.inf) >= linger_s:
            self.problems.pop(key, None)

    def set_enabled(self, enabled: bool) -> None:
        """Disabled: the job input counts as zero (the job arm stops; balance goes on)."""
        self.enabled = bool(enabled)

    def restart(self) -> None:
        """Activated again (after :meth:`stop`): the next cycle takes the nominal period, the job
        arm is enabled, and the stored joint states are dropped: the first command starts from
        positions measured after this call, at rest (the arm may have moved while the motors
        were off; the held command of before would be a position step)."""
        self._last_t = None
        self.enabled = True
        self._state.invalidate()
        self._dropped_since = "activation"
        self._from_measured = True

    def stop(self, reason: str) -> list[Hold]:
        """The whole deceleration to standstill at the nominal period (deactivate, shutdown).

        Empty when nothing is commanded (already held, or never commanded).
        """
        if self.state not in (LoopState.RUNNING, LoopState.STOPPING):
            return []
        self.state = LoopState.STOPPING
        holds: list[Hold] = []
        while not holds or not holds[-1].stopped:
            if self._last_t is not None:
                self._advance(1)
            hold = self._hold(reason, self.config.period_s)
            if hold is None:
                break
            holds.append(hold)
        return holds

    def _advance(self, steps: int) -> None:
        """The timer grid ``steps`` periods on (it ends :attr:`_last_t`)."""
        start, count = self._grid
        self._grid = (start, count + steps)
        self._last_t = start + (count + steps) * self.config.period_s

    def _steps(self, now_s: float, stamp_s: float | None) -> tuple[int, float]:
        """The cycle's controller steps and their period [s] (0 steps: skip the cycle).

        Stamp-triggered (``stamp_s``): the time since the last stamp, one step of at most
        :data:`MAX_STEPS` periods, or equal steps of at most that many for a gap up to
        :data:`MAX_LAG_S` (counted in :attr:`caught_up_gaps`); a longer gap is a clock jump:
        one nominal period. Timer: whole nominal periods
        on a grid, as many as passed since the last cycle, at most :data:`MAX_STEPS` (a late timer catches up
        over the next cycles; a tick less than half a period after the last is skipped),
        so that a command's stamp is the end of the periods it integrated and every step
        has the period the velocity limits assume. A clock going back by more than a
        period, or a lag beyond :data:`MAX_LAG_S`, starts the grid anew.
        """
        period = self.config.period_s
        last = self._last_t
        if stamp_s is not None:
            self._grid, self._last_t = (stamp_s, 0), stamp_s
            # stamps are whole nanoseconds: the gap rounded to them is the same float for the same
            # gap every cycle (a difference of two times since the epoch varies in its last bits,
            # and each new dt makes the limits' box recompute its constants)
            gap = 0.0 if last is None else round((stamp_s - last) * 1e9) * 1e-9
            if gap <= 0.0:
                return 1, period
            if gap > MAX_LAG_S:
                # the stamps leapt (a simulation's clock jumped): no time to make up, one period;
                # ten periods made the command resume 0.06 rad ahead of the arm after /clock
                # leapt 10 s (tools/chaos.py --lock-step)
                return 1, period
            chunk = MAX_STEPS * period
            if gap <= chunk:
                return 1, gap
            self.caught_up_gaps += 1
            steps = math.ceil(gap / chunk)
            return steps, gap / steps
        if last is None or not -period <= now_s - last <= MAX_LAG_S:
            # the first cycle, or the clock jumped (a restart): the grid starts now
            self._grid, self._last_t = (now_s, 0), now_s
            return 1, period
        steps = min(round((now_s - last) / period), MAX_STEPS)
        if steps <= 0:
            return 0, period
        self._advance(steps)
        return steps, period

    # --- the cycle --------------------------------------------------------------------------------

    def cycle(self, now_s: float, state: MeasuredState, job: JobInput | None,
              margin: MeasuredMargin | None, *, stamp_s: float | None = None) -> Command | Hold | None:
        """One cycle at ``now_s`` [s] (the clock the inputs were received on).

        Args:
            now_s: time now [s], on the clock of ``received_s`` and the joint times.
            state: the latest measurement.
            job: the latest job input, or None.
            margin: the latest measured stability margin, or None.
            stamp_s: the cycle's time for ``dt`` (a triggering joint state's stamp) [s];
                default ``now_s``.

        Returns:
            The command; a hold when the arm joint states are missing or stale or the
            controller failed; None when nothing was ever commanded and nothing can be, or
            when the cycle comes less than half a nominal period after the last (skipped).
        """
        job, margin = self._check_clock(now_s, state, job, margin)
        steps, dt = self._steps(now_s, stamp_s)
        if steps == 0:
            return None
        problem = self._state_problem(now_s, state)
        if problem is not None:
            self.problems["joint_states"] = problem
            return self._holds(problem, steps, dt)
        self.problems.pop("joint_states", None)
        self._dropped_since = None
        q = state.q.copy()
        if self.state is not LoopState.RUNNING:
            velocity = None
            if self._cmd_names and not self._from_measured and self.state is LoopState.HELD and (
                    self._held_elsewhere(q)):
                if not self._settled_elsewhere(q, now_s):
                    return self._holds("arms measured away from the held command and moving: "
                                       "holding until they settle", steps, dt)
                self._from_measured = True  # at rest, so no velocity step: where the robot is
            self._elsewhere = None
            if self._cmd_names and not (self._from_measured and self.state is not LoopState.STOPPING):
                q[self._arm_q_of(self.controller.names)] = self._by_name(self._cmd_p)
                velocity = self._by_name(self._cmd_v)
            else:
                # the first command, or activated: from the measured positions, at rest; a joint
                # measured past its limit (a simulation's soft limit, an encoder past a stop) is
                # commanded from the limit, never beyond it (tools/chaos.py: an elbow 0.6 mrad
                # past it, after a restart of arm_balance)
                self._clip_to_limits(q)
            self.controller.reset(q, velocity)
            self._from_measured = False
            self.state = LoopState.RUNNING
        inputs = self._job_input(now_s, job, margin, q)
        start = time.perf_counter()
        try:
            for _ in range(steps):
                out = self.controller.step(inputs, dt)
        except HumanoidBalanceError as exc:
            self.problems["controller"] = f"controller step failed: {exc}: holding"
            return self._holds(self.problems["controller"], steps, dt)
        except (ArithmeticError, ValueError) as exc:  # numpy's LinAlgError is a ValueError
            # a numerical failure must not end the node (no command at all): hold, named
            self.problems["controller"] = (f"controller step failed ({type(exc).__name__}: "
                                           f"{exc}): holding")
            return self._holds(self.problems["controller"], steps, dt)
        self.step_s.append(time.perf_counter() - start)
        self.problems.pop("controller", None)
        self.last_output = out
        self.cycles += 1
        self._cmd_names, self._cmd_p, self._cmd_v = out.names, out.position, out.velocity
        self.repeatable = True
        return Command(out.names, out.position, out.velocity, out.momentum,
                       self.controller.model_zmp(out), self.guard_scale, out, self._time_s())

    def _check_clock(self, now_s: float, state: MeasuredState, job: JobInput | None,
                     margin: MeasuredMargin | None,
                     ) -> tuple[JobInput | None, MeasuredMargin | None]:
        """Drop every stored input when the clock went back since the last cycle; the job input
        and margin the cycle may use (None: dropped)."""
        last = self._clock.last_s
        jump = self._clock.update(now_s)
        if jump is None and last is not None:  # (jitter back: the latest reading stays the mark)
            self._clock.last_s = max(now_s, last)
        if jump is not None:
            # moving: every measurement waits (the hold brakes from the commands); at rest (held
            # already, e.g. while a simulation was down), the joint state that came with the jump
            # stays: it is where the robot is, and a hold at the old positions would send the
            # restarted simulation's arm there (2.1 rad away, found by tools/chaos.py)
            at_rest = not self._cmd_names or not np.any(self._cmd_v)
            times = state.joint_times_s[self._arm_idx]
            if self._cmd_names and not at_rest and np.all(times <= now_s + CLOCK_BACK_TOLERANCE_S):
                # still braking (trigger joint_states: no arrivals, no hold steps while a
                # simulation was down), and the joint state that came with the jump says where
                # the arms are: the braking goes on from there, not from where they were
                # commanded (a restarted simulation's arm is elsewhere: tools/chaos.py, 0.85 rad)
                self._cmd_p = state.q[self._arm_q_of(self._cmd_names)].copy()
            state.invalidate(now_s if at_rest else None)
            # the held command is not repeated on the new clock: it is where the robot was
            # before the jump, and a restarted simulation's arm is elsewhere (tools/chaos.py: a
            # repeat 0.85 rad away); a hold step that brakes is still sent
            self.repeatable = False
            self._dropped = (job, margin)
            self._switched_s = -math.inf
            self._last_t = None
            self._dropped_since = f"the clock went back {jump.by_s:.3f} s"
            # held to rest before joint states come again (a simulation restarted puts the robot
            # back at its start), commanding resumes from the measured positions, as after
            # an activation; still braking, it continues the braking command
            self._from_measured = True
            self._clock_problem_until_s = now_s + CLOCK_PROBLEM_S
            self.problems["clock"] = (
                f"node clock went back {jump.by_s:.3f} s (a simulation restart, a looping bag, "
                "a time step): every input dropped, holding until joint states come again")
        elif now_s >= self._clock_problem_until_s:
            self.problems.pop("clock", None)
        dropped_job, dropped_margin = self._dropped
        if job is not None and job is dropped_job:
            job = None
        if margin is not None and margin is dropped_margin:
            margin = None
        return job, margin

    def _held_elsewhere(self, q: np.ndarray) -> bool:
        """Whether an arm joint of ``q`` is further than RESUME_FROM_MEASURED_RAD from the held
        command (which is at rest)."""
        measured = q[self._arm_q_of(self._cmd_names)]
        return bool(np.any(np.abs(measured - self._cmd_p) > RESUME_FROM_MEASURED_RAD))

    def _settled_elsewhere(self, q: np.ndarray, now_s: float) -> bool:
        """Whether the arm joints of ``q`` have stayed within :data:`SETTLED_RAD` of where they
        were first measured away from the held command for :data:`SETTLE_S` (else the mark
        starts anew from ``q``)."""
        arm = q[self._arm_q_of(self._cmd_names)]
        mark = self._elsewhere
        if mark is None or np.any(np.abs(arm - mark[0]) > SETTLED_RAD) or now_s < mark[1]:
            self._elsewhere = (arm.copy(), now_s)
            return False
        return now_s - mark[1] >= SETTLE_S

    def _clip_to_limits(self, q: np.ndarray) -> None:
        """The arm joints of ``q`` within their position limits, in place."""
        limits = self.controller.arm_limits
        index = self._arm_q_of(limits.names)
        q[index] = np.clip(q[index], limits.lower, limits.upper)

    def _arm_q_of(self, names: tuple[str, ...]) -> np.ndarray:
        """Indices in ``q`` of the arm joints ``names`` (cached for the current order)."""
        if names != self._arm_q[0]:
            self._arm_q = (names, self._state.q_index(names))
        return self._arm_q[1]

    def _by_name(self, values: np.ndarray) -> np.ndarray:
        """``values`` of the last command, in the controller's current joint order."""
        names = self.controller.names
        if names == self._cmd_names:
            return values.copy()
        index = {n: k for k, n in enumerate(self._cmd_names)}
        return values[[index[n] for n in names]]

    def _state_problem(self, now_s: float, state: MeasuredState) -> str | None:
        never, first, last = kernels.time_range(state.joint_times_s, self._arm_idx)
        timeout = self.config.joint_state_timeout_s
        if never == len(self._arm_idx) and self._dropped_since is not None:
            return f"no arm joint states received since {self._dropped_since}: holding"
        if never:
            missing = [state.joint_names[int(i)] for i in self._arm_idx
                       if math.isnan(state.joint_times_s[i])]
            return f"joint states lack arm joints {missing}: holding"
        oldest = now_s - first
        if oldest > timeout:
            return (f"arm joint states are {oldest:.3f} s old, older than "
                    f"joint_state_timeout={timeout} s: holding")
        ahead = last - now_s
        if ahead > CLOCK_BACK_TOLERANCE_S:  # a negative age never counts as fresh
            return (f"arm joint states received {ahead:.3f} s after the node clock's now (the "
                    "clock went back?): holding")
        if self.controller.needs_base_pose and not is_fresh(state.base_pose_time_s, now_s,
                                                            timeout):
            return (f"no base pose on {self.config.base_pose_source} within joint_state_timeout="
                    f"{timeout} s: holding")
        return None

    def state_problem(self, now_s: float, state: MeasuredState) -> str | None:
        """Why the arm joint states (and base pose) at ``now_s`` [s] are not fresh enough to
        command from (the cycle would hold), or None: e.g. before repeating the last
        command for a lock-step simulation asking for the same period again."""
        return self._state_problem(now_s, state)

    def _holds(self, reason: str, steps: int, dt: float) -> Hold | None:
        """``steps`` hold steps of ``dt`` [s]; the last (fresh when any was)."""
        hold, fresh = None, False
        for _ in range(steps):
            hold = self._hold(reason, dt)
            fresh = fresh or (hold is not None and hold.fresh)
        return None if hold is None else replace(hold, fresh=fresh)

    def _hold(self, reason: str, dt: float) -> Hold | None:
        """The next hold command: decelerate at the acceleration limits, then stand still."""
        if not self._cmd_names:
            positions = self.controller.commanded_positions
            if positions is None:
                return None
            self._cmd_names = self.controller.names
            self._cmd_p, self._cmd_v = positions, np.zeros(len(positions))
        was = self.state
        if was is LoopState.HELD and not np.any(self._cmd_v):
            return Hold(self._cmd_names, self._cmd_p, self._cmd_v, reason, False,
                        self._time_s())
        limits = self.controller.arm_limits
        index = {n: k for k, n in enumerate(limits.names)}
        accel = limits.acceleration[[index[n] for n in self._cmd_names]]
        v = self._cmd_v
        v_new = np.sign(v) * np.maximum(np.abs(v) - accel * dt, 0.0)
        self._cmd_p = self._cmd_p + 0.5 * (v + v_new) * dt  # trapezoid: as the joint decelerates
        self._cmd_v = v_new
        self.state = LoopState.STOPPING if np.any(v_new) else LoopState.HELD
        self.holds += 1
        self.repeatable = True
        return Hold(self._cmd_names, self._cmd_p.copy(), v_new.copy(), reason, True,
                    self._time_s())

    def _time_s(self) -> float:
        return math.nan if self._last_t is None else self._last_t

    def _job_input(self, now_s: float, job: JobInput | None, margin: MeasuredMargin | None,
                   q: np.ndarray) -> RmcInput:
        """The job input scaled by the guard; zero when disabled, stale, bad or from before a switch."""
        inputs = RmcInput(q)
        scale = self._guard(now_s, margin)
        if job is None or job.received_s <= self._switched_s:
            return inputs
        problem = job_problem(job, self.controller)
        if problem is not None:
            self.problems["job_input"] = problem
            return inputs
        if not is_fresh(job.received_s, now_s, self.config.job_input_timeout_s):
            if self.enabled:
                self.problems["job_input"] = (
                    f"job input older than job_input_timeout={self.config.job_input_timeout_s} s: "
                    "job arm stopping")
            return inputs
        self.problems.pop("job_input", None)
        if not self.enabled or scale <= 0.0:
            return inputs
        if job.twist is not None:
            inputs.job_twist = job.twist * scale
        elif job.joint_velocities is not None:
            inputs.job_joint_velocities = job.joint_velocities[self._job_index(job)] * scale
        return inputs

    def _job_index(self, job: JobInput) -> np.ndarray:
        if self._job_order is None or self._job_order[0] != job.joint_names:
            names = job.joint_names
            self._job_order = (names, np.array([names.index(n) for n in self.controller.job_names]))
        return self._job_order[1]

    def _guard(self, now_s: float, margin: MeasuredMargin | None) -> float:
        """Job-input scale from the measured and predicted stability margins (1: free)."""
        margins = []
        self.problems.pop("margin", None)
        if margin is not None and not is_fresh(margin.received_s, now_s,
                                               self.config.margin_timeout_s):
            self.problems["margin"] = (
                f"measured stability margin older than margin_timeout={self.config.margin_timeout_s}"
                " s: the guard uses the model's margin only")
        elif margin is not None and not math.isfinite(margin.value_m):
            self.problems["margin"] = (f"measured stability margin {margin.value_m}: not finite, "
                                       "ignored; the guard uses the model's margin only")
        elif margin is not None:
            margins.append(margin.value_m)
        if self.last_output is not None:
            predicted = self.controller.predicted_margin(self.last_output)
            if predicted is not None:
                margins.append(predicted)
        if not margins:
            self.guard_scale = 1.0
            self.problems.pop("guard", None)
            return 1.0
        least = min(margins)
        slow, hold = self.config.guard_slow_margin_m, self.config.guard_hold_margin_m
        self.guard_scale = min(max((least - hold) / (slow - hold), 0.0), 1.0)
        if self.guard_scale < 1.0:
            what = "holding the job arm" if self.guard_scale == 0.0 else \
                f"slowing the job arm to {100 * self.guard_scale:.0f} %"
            self.problems["guard"] = f"stability margin {1e3 * least:.1f} mm: {what}"
        else:
            self.problems.pop("guard", None)
        return self.guard_scale

    # --- diagnostics ----------------------------------------------------------------------------

    def status(self) -> LoopStatus:
        """Level, message and values for the diagnostics (the step times since the last call)."""
        values: dict[str, object] = {"commanding": self.state is LoopState.RUNNING,
                                     "state": self.state.value, "enabled": self.enabled,
                                     "cycles": self.cycles, "holds": self.holds,
                                     "clock_jumps": self.clock_jumps,
                                     "guard_scale": self.guard_scale}
        if self.step_s:
            steps = 1e6 * np.array(self.step_s)
            values.update(step_us_median=float(np.median(steps)), step_us_max=float(steps.max()))
            self.step_s.clear()
        level = OK
        message = "commanding" if self.state is LoopState.RUNNING else "waiting for joint states"
        if not self.enabled:
            message += ", the job arm disabled (/arm_balance/enable): it holds"
        if self.last_output is not None:
            report = self.controller.report(self.last_output)
            values.update(report.values)
            if report.warning is not None:
                level, message = WARN, report.warning
        if self.problems:
            level = ERROR if "joint_states" in self.problems or "controller" in self.problems \
                else WARN
            message = "; ".join(self.problems.values())
        for key, text in self.problems.items():
            values[f"problem_{key}"] = text
        return LoopStatus(level, message, values)
