"""The arm-balance loop without ROS: stale inputs, balance guard, holds, run-time switches.

:class:`ArmLoop` is what the ``arm_balance`` node runs every cycle, and what the
tests run in lock-step with the MuJoCo humanoid (as the waist's
:class:`~humanoid_balance.can.controller.WaistController`). One call,
:meth:`ArmLoop.cycle` ``(now, measured state, job input, margin)``, returns the
:class:`Command` of the cycle, a :class:`Hold`, or None (nothing known to hold
yet). It owns:

* **stale inputs**: arm joint states missing or older than
  ``joint_state_timeout_s`` (and, when the controller needs one, a base pose):
  nothing is computed from them, the arms hold; a job input older than
  ``job_input_timeout_s``, in the wrong frame, non-finite or naming other joints
  counts as zero (the controller then brings the job arm to a stop within its
  acceleration limits while balance goes on). A joint state repeating the stamp of
  the last one is not a new measurement: it does not refresh the joint's time, so
  stamps that stop advancing go stale. No input received "after now" (a negative
  age, beyond :data:`CLOCK_BACK_TOLERANCE_S`) counts as fresh;
* **the clock going back** (a simulation restart, a looping bag with
  ``use_sim_time``, a ROS time step) by more than :data:`CLOCK_BACK_TOLERANCE_S`
  between two cycles: every stored input is dropped (joint states and base pose must
  come again, the job input and measured margin of that cycle are ignored, the job-arm
  switch time is reset), the arms hold, and the ``clock`` problem says so for
  :data:`CLOCK_PROBLEM_S` (counted in ``clock_jumps``); once held to rest, commanding
  resumes from the joint positions measured after the jump;
* **activation** (:meth:`ArmLoop.restart`): the stored joint states are dropped and the
  first command starts from joint positions measured after it, at rest (the arm may
  have moved while the motors were off);
* **the balance guard**: the smaller of the measured stability margin (when
  fresh) and the margin the controller predicts (its model ZMP, last cycle)
  scales the job input,

  .. math::

      s = \\operatorname{clip}\\left(\\frac{m - m_{hold}}{m_{slow} - m_{hold}}, 0, 1\\right)

  so the job arm slows from ``guard_slow_margin_m`` and stops at ``guard_hold_margin_m``;
* **dt** (:meth:`ArmLoop._steps`): timer cycles integrate whole nominal periods on a
  grid, as many as passed since the last cycle (at most :data:`MAX_STEPS`, the rest
  caught up over the next cycles; a tick less than half a period after the last is
  skipped), and the command is for the grid's
  time (:attr:`Command.time_s`, its stamp): every step has the period the velocity
  limits assume and a command moves as far as its stamp says (issue 12: a jittery
  timer stepped beyond the acceleration limits). A stamp-triggered cycle integrates the
  time since the last stamp, in steps of at most :data:`MAX_STEPS` periods up to
  :data:`MAX_LAG_S` (one step of :data:`MAX_STEPS` periods beyond): the commands'
  consumer went on with the last command's velocity meanwhile, so a command that left
  part of a gap out would put the arms behind that path and pull the servos back
  (measured free-running on a loaded machine: gaps up to 0.3 s, the job arm 0.8 rad
  behind its reference);
* **holds**: a hold starts from the last commanded positions and velocities and
  decelerates every joint at its acceleration limit (``v' = v - sign(v) min(|v|,
  a dt)``, ``p' = p + (v + v') dt / 2``) until all stand still; a command never steps a
  velocity to zero. Commanding resumes from the held positions and the current
  hold velocities, matched **by joint name** (the job arm may have changed
  meanwhile);
* **run-time switches** between cycles: the job arm (:meth:`ArmLoop.set_job_arm`;
  a job input received before the switch is dropped), the momentum selection
  (:meth:`ArmLoop.set_selection`) and the timeouts and guard margins
  (:meth:`ArmLoop.set_config`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

import numpy as np

from humanoid_balance.core import kernels
from humanoid_balance.core.arm_controller import ArmController, GroundArmController
from humanoid_balance.core.free_floating import FreeFloatingArmController
from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.rmc import ARMS, RmcInput
from humanoid_balance.core.support import SupportPolygon
from humanoid_balance.exceptions import ConfigurationError, HumanoidBalanceError
from humanoid_balance.resources import urdf_path as package_urdf_path

__all__ = [
    "BASE_POSITION_LIMIT_M",
    "CLOCK_BACK_TOLERANCE_S",
    "CLOCK_PROBLEM_S",
    "ERROR",
    "JOB_TWIST_LIMITS",
    "JOB_VELOCITY_LIMIT_FACTOR",
    "MAX_LAG_S",
    "MAX_STEPS",
    "MEASURED_LIMIT_TOLERANCE_RAD",
    "OK",
    "WARN",
    "ArmLoop",
    "ArmLoopConfig",
    "Command",
    "Hold",
    "JobInput",
    "LoopState",
    "LoopStatus",
    "MeasuredMargin",
    "MeasuredState",
    "stamp_problem",
    "triggers",
]

#: diagnostic levels (diagnostic_msgs/DiagnosticStatus values)
OK, WARN, ERROR = 0, 1, 2
#: rad a measured joint may be beyond its position limits (encoders past a soft stop, a
#: simulation's joint limit); further, the sample is implausible and refused (issue 12)
MEASURED_LIMIT_TOLERANCE_RAD = 0.5
#: m/s, rad/s: a job twist faster than these (hand speeds no arm reaches) is refused; the
#: controller scales any plausible one to the joint limits
JOB_TWIST_LIMITS = (10.0, 100.0)
#: a job joint velocity above this many times the joint's speed limit is refused
JOB_VELOCITY_LIMIT_FACTOR = 10.0
#: m: a measured base position further from the world origin is implausible and refused (at
#: 1e308 m the generalized Jacobian came out singular)
BASE_POSITION_LIMIT_M = 1e4
#: a cycle integrates at most this many nominal periods (a longer gap is caught up over the
#: next cycles, its commands stamped on the grid, behind the clock meanwhile)
MAX_STEPS = 10
#: s the timer grid may lag the clock before it starts anew (a clock jump)
MAX_LAG_S = 1.0
#: s the clock may go back between two cycles, or an input be received "after now", without
#: counting as a clock jump: a node reads one monotonic (or simulation) clock for its inputs
#: and cycles, so anything beyond this is a jump, not jitter
CLOCK_BACK_TOLERANCE_S = 1e-3
#: s (on the new clock) the ``clock`` problem stays after the clock went back: long enough for
#: the diagnostics to carry it
CLOCK_PROBLEM_S = 1.0


class LoopState(Enum):
    """Where the loop is."""

    WAITING = "waiting"    # never commanded: nothing to hold
    RUNNING = "running"    # commanding from the controller
    STOPPING = "stopping"  # a hold, still decelerating
    HELD = "held"          # a hold, standing still


@dataclass(frozen=True)
class ArmLoopConfig:
    """Tunables of :class:`ArmLoop` (SI units).

    Attributes:
        rate_hz: nominal cycle rate [Hz] (> 0).
        joint_state_timeout_s: arm joint states (and base pose) older than this hold the arms [s].
        job_input_timeout_s: a job input older than this counts as zero [s].
        margin_timeout_s: a measured margin older than this is not used by the guard [s].
        guard_slow_margin_m: stability margin [m] where the job arm starts to slow.
        guard_hold_margin_m: stability margin [m] where it stops (below ``guard_slow_margin_m``).
        base_pose_source: where the base pose comes from, for messages.

    Raises:
        ConfigurationError: a value not finite, a rate or timeout not > 0, or
            ``guard_hold_margin_m >= guard_slow_margin_m``.
    """

    rate_hz: float = 500.0
    joint_state_timeout_s: float = 0.05
    job_input_timeout_s: float = 0.1
    margin_timeout_s: float = 0.1
    guard_slow_margin_m: float = 0.03
    guard_hold_margin_m: float = 0.01
    base_pose_source: str = "the base pose topic"

    def __post_init__(self) -> None:
        for name in ("rate_hz", "joint_state_timeout_s", "job_input_timeout_s", "margin_timeout_s",
                     "guard_slow_margin_m", "guard_hold_margin_m"):
            value = getattr(self, name)
            if not math.isfinite(value):
                raise ConfigurationError(f"ArmLoopConfig.{name}={value} must be finite")
            if name.endswith(("_hz", "_s")) and value <= 0:
                raise ConfigurationError(f"ArmLoopConfig.{name}={value} must be > 0")
        if self.guard_hold_margin_m >= self.guard_slow_margin_m:
            raise ConfigurationError(
                f"guard_hold_margin={self.guard_hold_margin_m} must be below "
                f"guard_slow_margin={self.guard_slow_margin_m}")

    @property
    def period_s(self) -> float:
        """Nominal period [s]."""
        return 1.0 / self.rate_hz


class MeasuredState:
    """The latest measured configuration and when each joint was last measured.

    Args:
        joint_names: the model's joints (``RobotModel.joint_names``).
        q_index: index of each joint in ``q`` (``RobotModel.q_index(joint_names)``).
        q: the configuration before any measurement (``RobotModel.neutral()``):
            joints never measured stay there.
        limits: lower and upper position limits [rad] of ``joint_names``
            (``RobotModel.position_limits``), or None: a sample putting a joint further
            than :data:`MEASURED_LIMIT_TOLERANCE_RAD` beyond them is refused.
    """

    def __init__(self, joint_names: Sequence[str], q_index: np.ndarray, q: np.ndarray,
                 limits: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        kernels.warm_up()  # update_joints and the loop's freshness check call kernels
        self.joint_names = tuple(joint_names)
        n = len(self.joint_names)
        lower, upper = (np.full(n, -np.inf), np.full(n, np.inf)) if limits is None else limits
        self._lower = np.asarray(lower, dtype=float) - MEASURED_LIMIT_TOLERANCE_RAD
        self._upper = np.asarray(upper, dtype=float) + MEASURED_LIMIT_TOLERANCE_RAD
        self.q = np.array(q, dtype=float)
        #: time [s] each joint was last measured; NaN: never
        self.joint_times_s = np.full(len(self.joint_names), np.nan)
        #: header stamp [ns] of each joint's last sample; 0: none or unstamped
        self.joint_stamps_ns = np.zeros(len(self.joint_names), dtype=np.int64)
        #: time [s] of the last base pose; NaN: never
        self.base_pose_time_s = math.nan
        self._q_of_joint = np.asarray(q_index, dtype=int)
        self._index = {n: i for i, n in enumerate(self.joint_names)}
        self._cache: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def index(self, names: Sequence[str]) -> np.ndarray:
        """Indices of ``names`` among :attr:`joint_names`."""
        return np.array([self._index[n] for n in names], dtype=int)

    def q_index(self, names: Sequence[str]) -> np.ndarray:
        """Indices of the joints ``names`` in :attr:`q`."""
        return self._q_of_joint[self.index(names)]

    def invalidate(self) -> None:
        """Forget when anything was measured: every joint (and the base pose) must come again.

        The positions stay (a joint never measured again keeps its last value, as the
        neutral one before any measurement), but nothing counts as fresh.
        """
        self.joint_times_s[:] = np.nan
        self.joint_stamps_ns[:] = 0
        self.base_pose_time_s = math.nan

    def update_joints(self, names: tuple[str, ...], position: np.ndarray, now_s: float,
                      stamp_ns: int = 0) -> str | None:
        """Take a joint-state sample received at ``now_s`` [s], stamped ``stamp_ns`` [ns];
        why it was refused, or None.

        Unknown joint names are skipped; a sample with a non-finite position, a joint
        beyond its limits by more than :data:`MEASURED_LIMIT_TOLERANCE_RAD`, or a size
        that does not match its names is refused whole. A joint whose previous sample
        carried the same nonzero stamp keeps its time: the same measurement again is not a
        fresh one (a driver whose stamps stopped advancing goes stale after
        ``joint_state_timeout``); unstamped samples (0) are timed on arrival.
        """
        if position.shape != (len(names),):
            return f"joint states have {position.size} positions for {len(names)} names: ignored"
        cached = self._cache.get(names)
        if cached is None:
            known = [k for k, n in enumerate(names) if n in self._index]
            joints = np.array([self._index[names[k]] for k in known], dtype=int)
            cached = (np.array(known, dtype=int), joints, self._q_of_joint[joints])
            if len(self._cache) < 64:
                self._cache[names] = cached
        msg_idx, joint_idx, q_idx = cached
        # one compiled call: the checks and the update (a joint state comes at up to 1 kHz)
        taken = kernels.take_positions(position, msg_idx, joint_idx, q_idx, self._lower,
                                       self._upper, now_s, stamp_ns, self.joint_times_s,
                                       self.joint_stamps_ns, self.q)
        if taken == kernels.NOT_FINITE:
            bad = [n for n, v in zip(names, position, strict=True) if not math.isfinite(v)]
            return f"joint states have non-finite positions for {bad}: ignored"
        if taken == kernels.BEYOND_LIMITS:
            values = position[msg_idx]
            beyond = (values < self._lower[joint_idx]) | (values > self._upper[joint_idx])
            far = {self.joint_names[int(j)]: float(v) for j, v in
                   zip(joint_idx[beyond], values[beyond], strict=True)}
            return (f"joint states put {far} beyond their limits by more than "
                    f"{MEASURED_LIMIT_TOLERANCE_RAD} rad: ignored")
        return None

    def update_base_pose(self, pose: np.ndarray, now_s: float) -> str | None:
        """Take a base pose ``[x, y, z, qx, qy, qz, qw]`` (world) received at ``now_s``.

        Returns:
            Why it was refused (not finite, quaternion not unit, a position beyond
            :data:`BASE_POSITION_LIMIT_M`), or None.
        """
        pose = np.asarray(pose, dtype=float)
        norm = float(np.linalg.norm(pose[3:]))
        if pose.shape != (7,) or not np.all(np.isfinite(pose)) or abs(norm - 1.0) > 1e-3:
            return (f"base pose {np.round(pose, 4).tolist()} is not finite or its quaternion is not "
                    "unit: ignored")
        if np.any(np.abs(pose[:3]) > BASE_POSITION_LIMIT_M):
            return (f"base pose position {pose[:3].tolist()} is beyond {BASE_POSITION_LIMIT_M:g} m "
                    "of the world origin: implausible, ignored")
        self.q[0:7] = pose
        self.q[3:7] /= norm
        self.base_pose_time_s = now_s
        return None


def stamp_problem(stamp_ns: int, now_ns: int | None, config: ArmLoopConfig,
                  lock_step: bool = False) -> str | None:
    """Why a joint state stamped ``stamp_ns`` and received at ``now_ns`` [ns, node clock] is
    refused, or None.

    One stamped further than ``joint_state_timeout_s`` from the node clock, back (a
    measurement that old) or ahead (a wrong clock, or a bogus stamp that would trigger a
    lock-step cycle), is refused (issue 12); an unstamped one (0) is timed on arrival, and
    none is judged without a clock to compare with (``now_ns`` None: lock-step on the
    simulation's stamps while the node runs on another clock). With ``lock_step``
    (``trigger: joint_states``) an unstamped one is refused: it cannot mark a period (every
    one would be "the same period again"); stamp 0 is a period there only as a simulation's
    t = 0 on the node clock (``now_ns`` within ``joint_state_timeout_s`` of 0: ``use_sim_time``
    before time runs).
    """
    timeout_s = config.joint_state_timeout_s
    if stamp_ns == 0 and lock_step and (now_ns is None or abs(now_ns) * 1e-9 > timeout_s):
        return ("joint states unstamped (stamp 0): trigger joint_states needs each joint state "
                "stamped with its period; ignored (stamp them, or use trigger: timer)")
    if now_ns is None or stamp_ns == 0 or abs(stamp_ns - now_ns) * 1e-9 <= timeout_s:
        return None
    offset_s = (stamp_ns - now_ns) * 1e-9
    return (f"joint states stamped {abs(offset_s):.3f} s {'ahead of' if offset_s > 0 else 'behind'} "
            f"the node clock, beyond joint_state_timeout={timeout_s} s: ignored")


def triggers(stamp_ns: int, last_ns: int | None, now_ns: int | None, config: ArmLoopConfig) -> bool:
    """Whether a joint state stamped ``stamp_ns`` starts a lock-step cycle (``trigger:
    joint_states``) after the one stamped ``last_ns`` (None: none yet).

    A stamp at least 0.9 nominal periods on does. A stamp going back is a restart of the
    simulation when the node clock (``now_ns``) went back too, or when there is no clock to
    compare with (``now_ns`` None: the stamps are the only time); else it is a reordered
    old sample and triggers nothing (it would stamp a command back in time).
    """
    if last_ns is None or stamp_ns - last_ns >= 0.9e9 * config.period_s:
        return True
    return stamp_ns < last_ns and (now_ns is None or
                                   now_ns < last_ns - 1e9 * config.joint_state_timeout_s)


@dataclass(frozen=True)
class JobInput:
    """The job's latest request, as received (checked by the loop every cycle).

    Attributes:
        received_s: when it was received [s].
        twist: hand twist ``[v; w]`` [m/s, rad/s], or None.
        frame: the twist's frame (the controller's ``twist_frame`` is expected).
        joint_names: names of ``joint_velocities``.
        joint_velocities: job arm joint velocities [rad/s] (when ``twist`` is None), or None.
    """

    received_s: float
    twist: np.ndarray | None = None
    frame: str = ""
    joint_names: tuple[str, ...] = ()
    joint_velocities: np.ndarray | None = None


@dataclass(frozen=True)
class MeasuredMargin:
    """A measured stability margin [m] (positive inside the support polygon) and when it came [s]."""

    value_m: float
    received_s: float


@dataclass(frozen=True)
class Command:
    """A cycle's command from the controller.

    Attributes:
        names: joint names (job arm, then the other arm).
        position: commanded positions [rad] at the end of the cycle.
        velocity: commanded velocities [rad/s].
        momentum: ``[P; L]`` [N s, N m s] in the controller's momentum frame.
        model_zmp: model ZMP ``[x, y]`` [m] in ``W``, or None (no ground, lift-off).
        guard_scale: the job input's scale by the balance guard (1: free).
        output: the controller's own output of the cycle.
        time_s: the time [s] the command is for (its stamp), on the cycle's clock.
    """

    names: tuple[str, ...]
    position: np.ndarray
    velocity: np.ndarray
    momentum: np.ndarray
    model_zmp: np.ndarray | None
    guard_scale: float
    output: Any
    time_s: float = math.nan


@dataclass(frozen=True)
class Hold:
    """A hold command: decelerating at the acceleration limits, then standing still.

    Attributes:
        names: joint names.
        position: commanded positions [rad].
        velocity: commanded velocities [rad/s] (zero once stopped).
        reason: why the arms hold.
        fresh: the command differs from the previous one (else there is nothing new to send).
        time_s: the time [s] the command is for (its stamp), on the cycle's clock.
    """

    names: tuple[str, ...]
    position: np.ndarray
    velocity: np.ndarray
    reason: str
    fresh: bool
    time_s: float = math.nan

    @property
    def stopped(self) -> bool:
        """Every velocity is zero."""
        return not bool(np.any(self.velocity))


@dataclass
class LoopStatus:
    """The loop as diagnostics: a level (:data:`OK`, :data:`WARN`, :data:`ERROR`), a message, values."""

    level: int
    message: str
    values: dict[str, object] = field(default_factory=dict)


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
        #: times the clock went back by more than :data:`CLOCK_BACK_TOLERANCE_S` between cycles
        self.clock_jumps = 0
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
        self._now_s: float | None = None  # the clock [s] at the last cycle
        self._clock_problem_until_s = -math.inf
        # inputs held when the clock went back: ignored until the node passes newer ones
        self._dropped: tuple[JobInput | None, MeasuredMargin | None] = (None, None)
        # since when the stored joint states were dropped (for the message), None: not dropped
        self._dropped_since: str | None = None
        # the next command starts from the measured positions at rest (after activation)
        self._from_measured = False

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
        :data:`MAX_LAG_S` (counted in :attr:`caught_up_gaps`). Timer: whole nominal periods
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
            chunk = MAX_STEPS * period
            if gap <= chunk or gap > MAX_LAG_S:
                return 1, min(gap, chunk)
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
            if self._from_measured and self.state is not LoopState.STOPPING:
                pass  # activated: from the measured positions, at rest
            elif self._cmd_names:
                q[self._arm_q_of(self.controller.names)] = self._by_name(self._cmd_p)
                velocity = self._by_name(self._cmd_v)
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
        return Command(out.names, out.position, out.velocity, out.momentum,
                       self.controller.model_zmp(out), self.guard_scale, out, self._time_s())

    def _check_clock(self, now_s: float, state: MeasuredState, job: JobInput | None,
                     margin: MeasuredMargin | None,
                     ) -> tuple[JobInput | None, MeasuredMargin | None]:
        """Drop every stored input when the clock went back since the last cycle; the job input
        and margin the cycle may use (None: dropped)."""
        last, self._now_s = self._now_s, now_s if self._now_s is None else max(now_s, self._now_s)
        if last is not None and now_s < last - CLOCK_BACK_TOLERANCE_S:
            self.clock_jumps += 1
            state.invalidate()
            self._dropped = (job, margin)
            self._switched_s = -math.inf
            self._last_t = None
            self._now_s = now_s
            self._dropped_since = f"the clock went back {last - now_s:.3f} s"
            # held to rest before joint states come again (a simulation restarted puts the robot
            # back at its start), commanding resumes from the measured positions, as after
            # an activation; still braking, it continues the braking command
            self._from_measured = True
            self._clock_problem_until_s = now_s + CLOCK_PROBLEM_S
            self.problems["clock"] = (
                f"node clock went back {last - now_s:.3f} s (a simulation restart, a looping bag, "
                "a time step): every input dropped, holding until joint states come again")
        elif now_s >= self._clock_problem_until_s:
            self.problems.pop("clock", None)
        dropped_job, dropped_margin = self._dropped
        if job is not None and job is dropped_job:
            job = None
        if margin is not None and margin is dropped_margin:
            margin = None
        return job, margin

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
        if self.controller.needs_base_pose and not (
                -CLOCK_BACK_TOLERANCE_S <= now_s - state.base_pose_time_s <= timeout):
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
        problem = self._job_problem(job)
        if problem is not None:
            self.problems["job_input"] = problem
            return inputs
        if not -CLOCK_BACK_TOLERANCE_S <= now_s - job.received_s <= self.config.job_input_timeout_s:
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

    def _job_problem(self, job: JobInput) -> str | None:
        if job.twist is not None:
            expected = self.controller.twist_frame
            if job.frame != expected:
                return (f"job twist in frame {job.frame!r}, expected {expected!r}: ignored, job arm "
                        "stopping")
            if job.twist.shape != (6,) or not np.all(np.isfinite(job.twist)):
                return "job twist has non-finite values: ignored, job arm stopping"
            speeds = (float(np.linalg.norm(job.twist[:3])), float(np.linalg.norm(job.twist[3:])))
            if speeds[0] > JOB_TWIST_LIMITS[0] or speeds[1] > JOB_TWIST_LIMITS[1]:
                return (f"job twist of {speeds[0]:.3g} m/s, {speeds[1]:.3g} rad/s is beyond any hand "
                        f"speed ({JOB_TWIST_LIMITS[0]:g} m/s, {JOB_TWIST_LIMITS[1]:g} rad/s): "
                        "ignored, job arm stopping")
            return None
        velocity = job.joint_velocities
        expected_names = self.controller.job_names
        if velocity is None or set(job.joint_names) != set(expected_names) or \
                velocity.shape != (len(job.joint_names),):
            return (f"job joint velocities must name exactly {list(expected_names)} with one "
                    f"velocity each; got {list(job.joint_names)}: ignored, job arm stopping")
        if not np.all(np.isfinite(velocity)):
            return "job joint velocities have non-finite values: ignored, job arm stopping"
        limits = self.controller.arm_limits
        speed = dict(zip(limits.names, limits.velocity, strict=True))
        bound = np.array([JOB_VELOCITY_LIMIT_FACTOR * speed[n] for n in job.joint_names])
        if np.any(np.abs(velocity) > bound):
            return (f"job joint velocities above {JOB_VELOCITY_LIMIT_FACTOR:g} times the joints' "
                    "speed limits: ignored, job arm stopping")
        return None

    def _job_index(self, job: JobInput) -> np.ndarray:
        if self._job_order is None or self._job_order[0] != job.joint_names:
            names = job.joint_names
            self._job_order = (names, np.array([names.index(n) for n in self.controller.job_names]))
        return self._job_order[1]

    def _guard(self, now_s: float, margin: MeasuredMargin | None) -> float:
        """Job-input scale from the measured and predicted stability margins (1: free)."""
        margins = []
        self.problems.pop("margin", None)
        if margin is not None and not (
                -CLOCK_BACK_TOLERANCE_S <= now_s - margin.received_s <= self.config.margin_timeout_s):
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


# --- from arm_balance's parameters (humanoid_balance.params.arm_balance) ---------------------------


def _rows(text: str) -> tuple[str, ...]:
    return tuple(r.strip() for r in text.split(",") if r.strip())


def ground_controller(v: Mapping[str, Any]) -> tuple[RobotModel, ArmController]:
    """``mode: ground``: RMC on the fixed-base humanoid, margins against the contact pads."""
    model = RobotModel(v["urdf_path"] or str(package_urdf_path("humanoid")), world_frame="W",
                       gravity=v["gravity"])
    polygon = SupportPolygon.from_model(model).update_at(model, model.neutral())
    return model, GroundArmController(
        model, job_arm=v["job_arm"], selection=v["selection"], secondary=_rows(v["secondary"]),
        reference_point=v["reference_point"], friction_coefficient=v["friction_coefficient"],
        foot_distance=v["foot_distance"], damping_threshold=v["damping_threshold"],
        max_damping=v["max_damping"], position_margin=v["position_margin"],
        support_polygon=polygon, aux_posture=tuple(np.deg2rad(v["aux_posture"])),
        posture_gain=v["aux_posture_gain"], posture_speed=v["aux_posture_speed"],
        posture_acceleration=v["aux_posture_acceleration"])


def free_floating_controller(v: Mapping[str, Any]) -> tuple[RobotModel, ArmController]:
    """``mode: free_floating``: the generalized Jacobian on the floating robot (seed 002)."""
    model = RobotModel(v["urdf_path"] or str(package_urdf_path("space_robot")),
                       floating_base=True, gravity=v["gravity"])
    arms = {arm: model.group(group) for arm, group in ARMS.items()}
    accel = {arm: [v["free_floating_acceleration_limit"]] * len(j) for arm, j in arms.items()}
    return model, FreeFloatingArmController(
        model, arms, {arm: f"{arm}_hand" for arm in ARMS}, job_arm=v["job_arm"],
        rows=v["free_floating_rows"], acceleration_limits=accel,
        position_margin=v["position_margin"])


#: ``mode`` -> the builder of its model and controller
CONTROLLERS = {"ground": ground_controller, "free_floating": free_floating_controller}


def controller_from_parameters(v: Mapping[str, Any]) -> tuple[RobotModel, ArmController]:
    """The model and the controller of ``v["mode"]`` from ``arm_balance``'s parameter values.

    Raises:
        ConfigurationError, ModelError: a value the controller refuses, a model that cannot load.
    """
    return CONTROLLERS[v["mode"]](v)


def loop_config(v: Mapping[str, Any]) -> ArmLoopConfig:
    """The loop's tunables from the parameter values."""
    return ArmLoopConfig(
        rate_hz=v["rate"], joint_state_timeout_s=v["joint_state_timeout"],
        job_input_timeout_s=v["job_input_timeout"], margin_timeout_s=v["margin_timeout"],
        guard_slow_margin_m=v["guard_slow_margin"], guard_hold_margin_m=v["guard_hold_margin"],
        base_pose_source=v["base_pose_topic"])
