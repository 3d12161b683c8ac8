"""The arm-balance loop without ROS: stale inputs, balance guard, holds, run-time switches.

:class:`ArmLoop` is what the ``arm_balance`` node runs every cycle, and what the
tests run in lock-step with the MuJoCo humanoid (as the waist's
:class:`~humanoid_balance.waist.servo.WaistController`). One call,
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
  age, beyond :data:`~humanoid_balance.core.freshness.CLOCK_BACK_TOLERANCE_S`:
  :mod:`humanoid_balance.core.freshness`) counts as fresh;
* **the clock going back** (a simulation restart, a looping bag with
  ``use_sim_time``, a ROS time step) by more than the freshness tolerance
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
* **dt**: timer cycles integrate whole nominal periods on a
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
  meanwhile). Held at rest with an arm joint measured further than
  ``RESUME_FROM_MEASURED_RAD`` from the held command, it resumes from the measurement
  once that has settled (within ``SETTLED_RAD`` for ``SETTLE_S``: a robot that is
  elsewhere, e.g. a restarted simulation); while the measurement still moves (late joint
  states of servos catching up with the hold), nothing new is sent;
* **run-time switches** between cycles: the job arm (:meth:`ArmLoop.set_job_arm`;
  a job input received before the switch is dropped), the momentum selection
  (:meth:`ArmLoop.set_selection`) and the timeouts and guard margins
  (:meth:`ArmLoop.set_config`).

:class:`~humanoid_balance.core.arm_loop.runner.ArmLoopRunner` runs the loop on a node's
clock and inputs (nanoseconds, the lock-step trigger, activation and stop): the node
converts messages and publishes what it returns. The modules: ``config`` (the tunables),
``measured`` (the measured state), ``job_input`` (the job's request and the margin),
``outputs`` (command, hold, status), ``lock_step`` (stamps and triggers), ``loop``
(:class:`ArmLoop`), ``runner``.
"""

from __future__ import annotations

from humanoid_balance.core.arm_loop.config import (
    CLOCK_PROBLEM_S,
    MAX_LAG_S,
    MAX_STEPS,
    ArmLoopConfig,
)
from humanoid_balance.core.arm_loop.job_input import (
    JOB_TWIST_LIMITS,
    JOB_VELOCITY_LIMIT_FACTOR,
    JobInput,
    MeasuredMargin,
    job_problem,
)
from humanoid_balance.core.arm_loop.lock_step import joint_state_stamp_problem, triggers
from humanoid_balance.core.arm_loop.loop import ArmLoop
from humanoid_balance.core.arm_loop.measured import (
    BASE_POSITION_LIMIT_M,
    MEASURED_LIMIT_TOLERANCE_RAD,
    MeasuredState,
)
from humanoid_balance.core.arm_loop.outputs import (
    ERROR,
    OK,
    WARN,
    Command,
    Hold,
    LoopState,
    LoopStatus,
)
from humanoid_balance.core.arm_loop.runner import ArmLoopRunner, Publish

__all__ = [
    "BASE_POSITION_LIMIT_M",
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
    "ArmLoopRunner",
    "Command",
    "Hold",
    "JobInput",
    "LoopState",
    "LoopStatus",
    "MeasuredMargin",
    "MeasuredState",
    "Publish",
    "job_problem",
    "joint_state_stamp_problem",
    "triggers",
]
