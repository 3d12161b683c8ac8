"""The simulation runner without ROS: physics paced to the wall clock, commands, lock-step.

:class:`SimRunner` is what the ``mujoco_sim`` node runs in its physics thread, and what
the tests run without DDS. The node converts messages and publishes; the runner, given
a simulation (:class:`~humanoid_balance.sim.robot.MujocoRobotSim`), a
:class:`~humanoid_balance.params.mujoco_sim.MujocoSimConfig`, a :class:`SimHost` (what
the node does for it: publish a period, log, hand over changed parameters) and a
:class:`WallClock`, owns:

* **commands** (:meth:`SimRunner.command`, from any thread): one with no joint, no
  position and no velocity, an unknown joint, a NaN or mismatched lengths is refused
  with the reason (counted; the simulation runs on). Accepted ones are queued and act
  before the next step. A command stamped with the simulation's time acts as of its
  stamp (:func:`~humanoid_balance.sim.command_delay.command_age_s`): one that arrives
  late takes its position where its velocity has moved it since (its command timeout
  runs from its stamp); one stamped further back than ``command_timeout_s`` is refused
  (its joints hold). With ``command_latency_s`` > 0 a stamped command acts that long
  after its stamp (:class:`~humanoid_balance.sim.command_delay.CommandDelay`);
* **the command timeout** (:class:`~humanoid_balance.sim.command_timeout.CommandTimeout`):
  ``command_timeout_s`` of simulation time after the last command naming a joint, its
  commanded velocity decelerates to rest at ``hold_deceleration_rad_s2``;
* **publish periods** (:meth:`SimRunner.step`): every ``publish_every`` steps a
  :class:`Period` says which state is due out (and whether ``/clock``, an inclinometer
  sample, ``/tf`` are due with it);
* **lock-step** (``lock_step``; :mod:`humanoid_balance.sim.lock_step`): after each
  period is published the runner waits until every lock-step topic delivered an answer
  stamped ``>= t`` (:meth:`SimRunner.answer`), at most ``lock_step_timeout_s`` of wall
  time, then counts a miss per late topic; the answers of the period act from then on.
  Time starts only once every topic answered once: until then the t = 0 state is
  published again every :data:`STARTUP_REPUBLISH_S`;
* **pacing** (:meth:`SimRunner.run`): ``real_time_factor`` times the wall clock (0: as
  fast as it goes); free-running it catches up at most :data:`FREE_RUNNING_CATCH_UP_S`
  of lag, in lock-step at most :data:`LOCK_STEP_SLACK_S`;
* **stopping** (:meth:`SimRunner.stop`): the stop event wakes the pacing wait and the
  lock-step gate closes, so the thread ends within one step and one publish;
* **the report** (:meth:`SimRunner.status`): a
  :class:`~humanoid_balance.core.diagnostics.LoopStatus`, :data:`OK` or :data:`WARN`.
"""

from __future__ import annotations

import math
import threading
import time
from abc import ABC, abstractmethod
from typing import NamedTuple

import numpy as np

from humanoid_balance.core.diagnostics import OK, WARN, LoopStatus
from humanoid_balance.exceptions import HumanoidBalanceError
from humanoid_balance.params.mujoco_sim import MujocoSimConfig
from humanoid_balance.sim.command_delay import CommandDelay, command_age_s
from humanoid_balance.sim.command_timeout import CommandTimeout
from humanoid_balance.sim.lock_step import LockStepGate
from humanoid_balance.sim.robot import MujocoRobotSim

__all__ = ["FREE_RUNNING_CATCH_UP_S", "LOCK_STEP_SLACK_S", "OK", "STARTUP_REPUBLISH_S", "WARN",
           "Command", "Period", "SimHost", "SimRunner", "WallClock"]

#: wall s between republications of the t = 0 state while lock-step waits for its first answers
STARTUP_REPUBLISH_S = 0.1
#: wall s a lock-step simulation may run behind real_time_factor and still catch up; beyond
#: it the time spent waiting is given up (the simulation does not race to make it good). With
#: 2 ms it kept 0.86 of real time at real_time_factor 1 (sleep overshoot and waits were lost
#: every period), with 50 ms 0.98, the same as free-running (2-core machine, shared: noisy)
LOCK_STEP_SLACK_S = 0.05
#: wall s a free-running simulation may run behind real_time_factor and still catch up
FREE_RUNNING_CATCH_UP_S = 0.5
#: s ahead of the wall clock below which the pacing does not wait
PACE_MIN_WAIT_S = 0.0005
#: s :meth:`SimRunner.stop` waits for the physics thread (a step and a publish take ~1 ms)
JOIN_TIMEOUT_S = 1.0


class Command(NamedTuple):  # one per command: a NamedTuple builds at a quarter of the cost
    """A joint command: header stamp [ns] (0: unstamped), joint names, positions [rad] and/or
    velocities [rad/s] (None: not given)."""

    stamp_ns: int
    names: tuple[str, ...]
    position: np.ndarray | None
    velocity: np.ndarray | None


class Period(NamedTuple):  # one per publish (1 kHz): a NamedTuple, not a frozen dataclass
    """A publish period: the state at :attr:`stamp_ns` is due out.

    Attributes:
        stamp_ns: the simulation time [ns], rounded to the ns (1.9999999999 s is 2 s).
        step: the physics step's index since t = 0.
        clock: ``/clock`` is due (every ``clock_rate_hz``).
        inclinometer: an inclinometer sample is due (every ``inclinometer_rate_hz``).
        tf: ``/tf`` is due (every ``tf_rate_hz``; never when it is 0).
    """

    stamp_ns: int
    step: int
    clock: bool
    inclinometer: bool
    tf: bool


class SimHost(ABC):
    """What the runner's owner does for it (the node: messages, logging, parameters)."""

    @abstractmethod
    def publish_period(self, period: Period) -> bool:
        """Publish the simulation's state as of ``period``; False: stopping (the run ends)."""

    @abstractmethod
    def log(self, level: str, text: str, throttle_s: float = 0.0) -> None:
        """Log ``text`` at ``level`` (``info``, ``warning``, ``error``), at most every
        ``throttle_s`` [s] when > 0."""

    def take_config(self) -> MujocoSimConfig | None:
        """A config whose dynamic fields changed since the last call, or None (between steps)."""
        return None


class WallClock:
    """The wall clock the physics is paced against (:func:`time.perf_counter`)."""

    def now_s(self) -> float:
        """Seconds of a monotonic clock."""
        return time.perf_counter()

    def wait_s(self, seconds: float, stop: threading.Event) -> bool:
        """Wait ``seconds`` [s] or until ``stop`` is set; whether it is set."""
        return stop.wait(seconds)


class SimRunner:
    """The simulation's commands, command timeout, publish periods, lock-step and pacing.

    Args:
        sim: the simulation (:func:`~humanoid_balance.sim.models.simulation_for`).
        config: the parameters; only the dynamic fields change later (:meth:`reconfigure`).
        host: publishes, logs, hands over parameter changes.
        clock: the wall clock the physics is paced against.
    """

    def __init__(self, sim: MujocoRobotSim, config: MujocoSimConfig, host: SimHost,
                 clock: WallClock | None = None) -> None:
        self.sim = sim
        self.config = config
        self.host = host
        self.clock = clock or WallClock()
        rate = config.publish_rate_hz
        #: steps between two publish periods
        self.publish_every = max(1, round(1.0 / (rate * sim.timestep))) if rate > 0 else 1
        self.inclinometer_every = self._sample_every(config.inclinometer_rate_hz)
        self.clock_every = self._sample_every(config.clock_rate_hz)
        #: steps between two /tf messages (0: none)
        self.tf_every = self._sample_every(config.tf_rate_hz) if config.tf_rate_hz > 0 else 0
        self._stop = threading.Event()
        #: set when :meth:`run` ended (stopped, its duration done, or the simulation failed)
        self.finished = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        #: command names already checked -> the names the model does not have
        self._unknown_names: dict[tuple[str, ...], list[str]] = {}
        self.reset()

    def _sample_every(self, rate_hz: float) -> int:
        """Steps between two samples at ``rate_hz`` (0: every publish): every Nth publish.

        The inclinometer's rate is a tilt sensor's (the waist's outer loop runs at 50 Hz),
        so that a waist controller does not spend its time on 1 kHz of samples it cannot
        use; /tf's is what a display needs.
        """
        if rate_hz <= 0:
            return self.publish_every
        return self.publish_every * max(1, round(
            1.0 / (rate_hz * self.sim.timestep * self.publish_every)))

    def reset(self) -> None:
        """The simulation back at its initial joint positions (at rest), no command pending,
        held or counted, the lock-step gate new. Not while :meth:`run` runs."""
        config = self.config
        self.sim.reset(dict(config.initial_positions_rad) or None)
        #: the lock-step wait (None: free-running)
        self.gate = LockStepGate([t.topic for t in config.lock_step_topics]) \
            if config.lock_step else None
        self.timeout = CommandTimeout(self.sim.joint_names, timeout_s=config.command_timeout_s,
                                      deceleration_rad_s2=config.hold_deceleration_rad_s2)
        self._pending: list[Command] = []
        #: stamped commands held until stamp + command_latency (None: each acts as it comes)
        self._delay: CommandDelay[Command] | None = CommandDelay(
            config.command_latency_s, horizon_s=config.command_timeout_s) \
            if config.command_latency_s > 0 else None
        self._steps = 0
        self.commands_applied = 0
        self.commands_rejected = 0
        #: lock-step answers whose bytes hold no header stamp
        self.answers_unreadable = 0
        #: why the newest rejected command was rejected ("": none yet)
        self.last_rejection = ""
        #: the lock-step topics not answered yet while time waits to start
        self.waiting_for: list[str] = []
        #: the commands' delays [s of simulation time] since the last status (sum, count, max)
        self._delays = [0.0, 0, 0.0]
        # wall, sim time, lock-step misses, rejected commands at the last status
        self._report = (self.clock.now_s(), self.sim.time, 0, 0)

    def describe(self) -> str:
        """One line on what is simulated and how (the node logs it at start)."""
        c, sim = self.config, self.sim
        lock = "free-running" if self.gate is None else \
            f"lock-step on {list(self.gate.topics)} (timeout {c.lock_step_timeout_s:g} s)"
        return (f"simulating {c.model} ({len(sim.joint_names)} joints), gravity "
                f"{-sim.model.opt.gravity[2]:.3f} m/s^2, dt {sim.timestep} s, real-time factor "
                f"{c.real_time_factor or 'max'}, publishing every {self.publish_every} step(s) "
                f"(/clock every {self.clock_every}), {lock}, command timeout "
                f"{self.timeout.timeout_s:g} s")

    # --- inputs (any thread) ---------------------------------------------------------

    def command(self, stamp_ns: int, names: tuple[str, ...], position: np.ndarray | None,
                velocity: np.ndarray | None) -> str | None:
        """Queue a command to act before the next step; the reason it is refused, or None.

        A refusal is counted (:attr:`commands_rejected`, :attr:`last_rejection`); the
        caller logs it. The arrays are kept: pass copies.
        """
        problem = self._problem(names, position, velocity)
        if problem is not None:
            self.reject(problem)
            return problem
        with self._lock:
            self._pending.append(Command(stamp_ns, names, position, velocity))
        return None

    def _problem(self, names: tuple[str, ...], position: np.ndarray | None,
                 velocity: np.ndarray | None) -> str | None:
        if not names:
            return "a command names no joint"
        if position is None and velocity is None:
            return "a command has neither position nor velocity"
        unknown = self._unknown_names.get(names)
        if unknown is None:
            unknown = [n for n in names if n not in self.sim.joint_names]
            if len(self._unknown_names) < 64:  # a few publishers' name lists
                self._unknown_names[names] = unknown
        if unknown:
            return f"a command names joints the model does not have: {unknown}"
        for label, values in (("position", position), ("velocity", velocity)):
            if values is not None:
                if values.shape != (len(names),):
                    return f"a command has {values.size} {label} values for {len(names)} names"
                if not np.isfinite(values).all():
                    return f"a command has a non-finite {label}"
        return None

    def reject(self, problem: str) -> None:
        """Count a command refused because of ``problem`` (e.g. unreadable bytes)."""
        self.commands_rejected += 1
        self.last_rejection = problem

    def answers(self, topic: str) -> bool:
        """Whether a message on ``topic`` answers a lock-step period."""
        return self.gate is not None and topic in self.gate.topics

    def answer(self, topic: str, stamp_ns: int) -> bool:
        """A lock-step answer on ``topic`` stamped ``stamp_ns``; False when it is refused:
        stamped beyond the newest period published (it answers no period of this run)."""
        return self.gate is None or self.gate.deliver(topic, stamp_ns)

    def answer_unreadable(self) -> None:
        """Count a lock-step answer whose bytes hold no header stamp."""
        self.answers_unreadable += 1

    # --- the physics (one thread) ----------------------------------------------------

    def reconfigure(self, config: MujocoSimConfig) -> None:
        """Take the dynamic fields of ``config``; between two steps."""
        old, new = self.config, self.config.with_dynamic(config)
        self.config = new
        if new.inclinometer_rate_hz != old.inclinometer_rate_hz:
            self.inclinometer_every = self._sample_every(new.inclinometer_rate_hz)
        if (new.command_timeout_s, new.hold_deceleration_rad_s2) != (
                old.command_timeout_s, old.hold_deceleration_rad_s2):
            self.timeout.configure(timeout_s=new.command_timeout_s,
                                   deceleration_rad_s2=new.hold_deceleration_rad_s2)
            if self._delay is not None:
                self._delay.horizon_s = new.command_timeout_s

    def step(self) -> Period | None:
        """Apply the commands due, brake the timed-out joints, step the physics once; the
        period due out after this step, or None."""
        sim = self.sim
        self._apply_pending()
        self.timeout.step(sim, sim.time)
        sim.step()
        self._steps += 1
        return self._period() if self._steps % self.publish_every == 0 else None

    def _period(self) -> Period:
        """The period of the current state (lock-step: answers up to it count from now)."""
        sim = self.sim
        ns = round(sim.time * 1e9)
        step = round(sim.time / sim.timestep)
        if self.gate is not None:  # before the state goes out: its answers may come at once
            self.gate.publishing(ns)
        return Period(ns, step, step % self.clock_every == 0, step % self.inclinometer_every == 0,
                      self.tf_every > 0 and step % self.tf_every == 0)

    def _apply_pending(self) -> None:
        delay = self._delay
        if not self._pending and not delay:  # most steps (a racing append is taken the next step)
            return
        pending: list[Command] = []
        if self._pending:
            with self._lock:
                pending, self._pending = self._pending, []
        now = self.sim.time
        timeout_s = self.timeout.timeout_s
        if delay is not None:  # held until stamp + latency; applied as of that time
            now_ns = round(now * 1e9)
            for command in pending:
                delay.push(command.stamp_ns, now_ns, command)
            aged = list(delay.due_aged(now, timeout_s))
        else:  # each as of its stamp
            aged = [(command_age_s(c.stamp_ns, now, timeout_s), c) for c in pending]
        for age, command in aged:
            if age == math.inf:  # older than the command timeout: its joints hold
                self._reject_due(
                    f"a command stamped {command.stamp_ns * 1e-9:.3f} s is older than "
                    f"command_timeout={timeout_s:g} s at simulation time {now:.3f} s: not "
                    "applied (its joints hold); stamp commands with the simulation's time "
                    "(use_sim_time) or leave them unstamped")
                continue
            try:
                self.sim.set_targets(command.names, command.position, command.velocity,
                                     age_s=age)
                self.timeout.commanded(command.names, now - age)
                self.commands_applied += 1
                if age > 0.0:
                    delays = self._delays
                    delays[0] += age
                    delays[1] += 1
                    delays[2] = max(delays[2], age)
            except HumanoidBalanceError as exc:  # checked on receipt; belt and braces
                self._reject_due(str(exc))

    def _reject_due(self, problem: str) -> None:
        """:meth:`reject` for a command refused when due, logged (rate-limited)."""
        self.reject(problem)
        self.host.log("warning", problem, throttle_s=1.0)

    def _publish(self, period: Period) -> bool:
        """Publish ``period``; in lock-step wait for its answers and apply them. False: stop."""
        if not self.host.publish_period(period):
            return False
        gate = self.gate
        if gate is None:
            return True
        timeout_s = self.config.lock_step_timeout_s
        late = gate.wait(period.stamp_ns, timeout_s)
        if gate.closed:
            return False
        if late:
            self.host.log("warning", f"lock-step: no answer on {late} for t = "
                          f"{period.stamp_ns * 1e-9:.3f} s within lock_step_timeout="
                          f"{timeout_s:g} s: stepping on (misses: {sum(gate.misses.values())})",
                          throttle_s=1.0)
        self._apply_pending()  # the answers of this period act from now on
        return True

    def run(self) -> None:
        """Wait for the lock-step topics' first answers, then step, publish and pace until
        stopped, the host stops publishing, the duration is done or the simulation fails."""
        sim_t0 = self.sim.time
        try:
            if self._wait_for_start():
                self._simulate()
        except HumanoidBalanceError as exc:
            self.host.log("error", f"simulation stopped: {exc}")
        finally:
            self.finished.set()
        if self.config.duration_s > 0:
            self.host.log("info", f"ran {self.sim.time - sim_t0:.3f} s of simulation: done")

    def _wait_for_start(self) -> bool:
        """Lock-step: publish the t = 0 state until every lock-step topic answered once.

        Returns:
            False when the runner stopped meanwhile.
        """
        gate = self.gate
        if gate is None:
            return True
        logged = False
        while not self._stop.is_set():
            period = self._period()
            if not self.host.publish_period(period):
                return False
            late = gate.wait(period.stamp_ns, STARTUP_REPUBLISH_S, count_misses=False)
            if gate.closed:
                return False
            self.waiting_for = late
            if not late:
                self.host.log("info", f"lock-step: every topic answered; time runs from "
                                      f"t = {self.sim.time:.3f} s")
                return True
            if not logged:
                logged = True
                self.host.log("info", f"lock-step: waiting for a first message on {late} before "
                                      f"time runs (the t = {self.sim.time:.3f} s state and /clock "
                                      f"are republished every {STARTUP_REPUBLISH_S:g} s)")
        return False

    def _simulate(self) -> None:
        """Step, publish every ``publish_every`` steps (and wait in lock-step), pace to real time."""
        sim, clock, stop = self.sim, self.clock, self._stop
        wall0 = clock.now_s()
        sim_t0 = pace_t0 = sim.time  # pace_t0: when the factor in use took effect
        rtf_in_use = self.config.real_time_factor
        behind_limit = FREE_RUNNING_CATCH_UP_S if self.gate is None else LOCK_STEP_SLACK_S
        duration = self.config.duration_s
        while not stop.is_set():
            changed = self.host.take_config()
            if changed is not None:
                self.reconfigure(changed)
            period = self.step()
            if period is not None and not self._publish(period):
                return
            if duration > 0 and sim.time - sim_t0 >= duration:
                return
            rtf = self.config.real_time_factor
            if rtf != rtf_in_use:  # a new factor paces from here on
                rtf_in_use = rtf
                wall0, pace_t0 = clock.now_s(), sim.time
            if rtf > 0:
                ahead = (sim.time - pace_t0) / rtf - (clock.now_s() - wall0)
                if ahead > PACE_MIN_WAIT_S:
                    clock.wait_s(ahead, stop)  # woken by stop()
                elif ahead < -behind_limit:  # behind: do not try to catch up
                    wall0 = clock.now_s() - (sim.time - pace_t0) / rtf

    # --- the thread ------------------------------------------------------------------

    def start(self) -> None:
        """Run :meth:`run` in a thread of its own (a daemon: it never holds the process)."""
        self._thread = threading.Thread(target=self.run, name="mujoco_sim_physics", daemon=True)
        self._thread.start()

    @property
    def stopping(self) -> bool:
        """:meth:`stop` was called."""
        return self._stop.is_set()

    def stop(self, timeout_s: float = JOIN_TIMEOUT_S) -> bool:
        """Stop the run: the pacing wait and the lock-step wait return at once, no step starts.

        Joins the thread of :meth:`start` (at most ``timeout_s`` [s]; not from the thread
        itself). Returns whether no thread of the runner is still running.
        """
        self._stop.set()
        if self.gate is not None:
            self.gate.close()
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return thread is None
        thread.join(timeout_s)
        return not thread.is_alive()

    # --- the report ------------------------------------------------------------------

    def status(self) -> LoopStatus:
        """Speed, commands, holds and (lock-step) late answers since the last status."""
        wall, sim_time = self.clock.now_s(), self.sim.time
        last_wall, last_sim, last_misses, last_rejected = self._report
        timeout, gate = self.timeout, self.gate
        holding = timeout.holding
        total, count, largest = self._delays
        self._delays = [0.0, 0, 0.0]
        values: dict[str, object] = {
            "sim_time_s": sim_time,
            "real_time_factor": (sim_time - last_sim) / max(wall - last_wall, 1e-9),
            "commands_applied": self.commands_applied,
            "commands_rejected": self.commands_rejected,
            "answers_unreadable": self.answers_unreadable,
            "command_age_s": timeout.age_s(sim_time),
            "command_delay_ms_mean": 1e3 * total / count if count else 0.0,
            "command_delay_ms_max": 1e3 * largest,
            "holding": ",".join(holding) or "none",
            "holds": timeout.holds,
            "lock_step": gate is not None,
        }
        message = "finished" if self.finished.is_set() else "running"
        misses = 0
        problems = []
        if gate is not None:
            misses = sum(gate.misses.values())
            values.update(lock_step_periods=gate.periods, lock_step_misses=misses,
                          lock_step_answers_ahead=sum(gate.ahead.values()))
            for topic, n in gate.misses.items():
                values[f"misses {topic}"] = n
            if gate.periods == 0 and self.waiting_for:
                message = f"lock-step: waiting for a first message on {self.waiting_for}"
            if misses > last_misses:
                late = [t for t, n in gate.misses.items() if n]
                problems.append(f"lock-step: {misses - last_misses} late answer(s) since the last "
                                f"report on {late} (total {misses}): the simulation went on after "
                                f"lock_step_timeout={self.config.lock_step_timeout_s:g} s")
        if holding:
            problems.append(f"commands timed out: no command for more than {timeout.timeout_s:g} "
                            f"s on {list(holding)}: holding (decelerating at "
                            f"{timeout.deceleration_rad_s2:g} rad/s^2 to rest) until their "
                            "commands resume")
        rejected = self.commands_rejected
        if rejected > last_rejected:
            problems.append(f"{rejected - last_rejected} command(s) ignored since the last "
                            f"report, the newest because {self.last_rejection}")
        self._report = (wall, sim_time, misses, rejected)
        if problems:
            return LoopStatus(WARN, "; ".join(problems), values)
        return LoopStatus(OK, message, values)
