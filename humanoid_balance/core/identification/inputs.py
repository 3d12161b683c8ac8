"""The arm's joint states for an identification run: read, rejected, and why they cannot be used.

:class:`JointStateInput` reads one joint-state message's fields (names and arrays, its
stamp, its arrival time) for the arm's joints and keeps the newest sample. A message
naming the arm's joints twice or only in part, with arrays of the wrong size, stamped
more than ``joint_state_timeout`` ahead of the clock
(:func:`~humanoid_balance.core.freshness.stamp_problem`), or stamped before the newest
sample, is rejected (a :class:`Rejection`, counted); one naming none of them is another
group's and ignored. The torque is the effort field, or ``k_e`` times the motor current
in it with ``torque_source: current`` (eq. 19).

The sample kept is judged when it is used (:meth:`JointStateInput.problem`): stale by
its stamp or by its arrival (a stamp in the future does not keep it fresh; received
"after now", beyond :data:`~humanoid_balance.core.freshness.CLOCK_BACK_TOLERANCE_S`,
means the clock went back), not finite, a joint outside its limits (beyond
:data:`LIMIT_TOLERANCE_RAD`), a velocity or torque beyond the URDF's limits (a sensor
fault). A start needs more (:meth:`JointStateInput.start_problem`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from humanoid_balance.core.freshness import is_fresh, stamp_problem
from humanoid_balance.core.identification.arm import IdentificationArm
from humanoid_balance.params.identification_executor import IdentificationExecutorConfig

__all__ = ["LIMIT_TOLERANCE_RAD", "START_LIMIT_TOLERANCE_RAD", "START_SAMPLE_AGE_S",
           "JointStateInput", "Rejection", "Sample"]

#: rad a measured joint may be past its limit during a run (tracking overshoot) before it stops
LIMIT_TOLERANCE_RAD = math.radians(0.5)
#: rad a joint may be measured past its limit at start: encoder noise only (a few counts of a
#: 14-bit encoder, 0.022 deg each); the plan starts from the position clipped into the limits
START_LIMIT_TOLERANCE_RAD = math.radians(0.05)
#: s, the oldest joint state a start may begin from (or joint_state_timeout if shorter): an arm
#: at rest then that accelerates at 30 deg/s^2 has moved at most a t^2 / 2 = 0.15 deg since
START_SAMPLE_AGE_S = 0.1


@dataclass(frozen=True)
class Sample:
    """One joint-state reading of the arm.

    Attributes:
        stamp: its header stamp on the node clock [s] (the receipt time when unstamped).
        received: when it arrived, node clock [s].
        position: joint positions [rad].
        velocity: joint velocities [rad/s].
        torque: joint torques [N m] (effort, or ``k_e`` times the current).
    """

    stamp: float
    received: float
    position: np.ndarray
    velocity: np.ndarray
    torque: np.ndarray


@dataclass(frozen=True)
class Rejection:
    """A joint state refused: why, and how many were refused so far."""

    reason: str
    count: int


class JointStateInput:
    """The newest joint state of the arm, the rejected ones counted.

    Args:
        arm: the arm (its joints and limits).
        config: the settings used (``torque_source``, ``torque_constants_n_m_a``,
            ``joint_state_timeout_s``); :attr:`config` may be replaced between runs.
    """

    def __init__(self, arm: IdentificationArm, config: IdentificationExecutorConfig) -> None:
        self.arm = arm
        self.config = config
        self.last: Sample | None = None
        #: joint states rejected since the last :meth:`reset`
        self.rejected = 0
        #: why the last one was
        self.reject_reason = ""
        #: whether the newest joint state was rejected (none accepted since)
        self.rejected_since_last = False
        #: joint states in a row stamped before the newest kept one
        self.back_in_a_row = 0

    def reset(self) -> None:
        """Forget the samples and the rejections."""
        self.last = None
        self.rejected, self.reject_reason, self.rejected_since_last = 0, "", False
        self.back_in_a_row = 0

    def _reject(self, reason: str, newest: bool = True) -> Rejection:
        """Count a rejection; ``newest``: the input is now unusable (until a sample is kept)."""
        self.rejected += 1
        self.reject_reason = reason
        self.rejected_since_last = self.rejected_since_last or newest
        return Rejection(reason, self.rejected)

    def read(self, names: Sequence[str], position: Sequence[float], velocity: Sequence[float],
             effort: Sequence[float], stamp_s: float, now_s: float) -> Sample | Rejection | None:
        """Take one joint state: the sample kept, the :class:`Rejection`, or None when it
        names none of the arm's joints (another group's).

        Args:
            names, position, velocity, effort: the message's fields (velocity and effort may
                be empty: not measured).
            stamp_s: its header stamp [s] (0: unstamped, timed on arrival).
            now_s: the clock now, when it arrived [s].
        """
        joints = self.arm.joints
        names = list(names)
        present = [j for j in joints if j in names]
        if not present:
            return None
        if len(present) < len(joints):
            missing = [j for j in joints if j not in names]
            return self._reject(f"names {present} of the arm without {missing}")
        if any(names.count(j) > 1 for j in joints):
            return self._reject(f"an arm joint named twice in {names}")
        n = len(names)
        if len(position) != n or len(velocity) not in (0, n) or len(effort) not in (0, n):
            return self._reject(f"{n} names but {len(position)} positions, {len(velocity)} "
                                f"velocities, {len(effort)} efforts")
        idx = [names.index(j) for j in joints]
        nan = np.full(len(idx), np.nan)
        q = np.array([position[i] for i in idx], float)
        qd = np.array([velocity[i] for i in idx], float) if len(velocity) else nan
        measured = np.array([effort[i] for i in idx], float) if len(effort) else nan
        with np.errstate(over="ignore", invalid="ignore"):
            tau = measured * np.asarray(self.config.torque_constants_n_m_a, float) if (
                self.config.torque_source == "current") else measured
        t = stamp_s if stamp_s > 0.0 else now_s
        ahead = stamp_problem(t, now_s, "/joint_states", ahead_s=self.config.joint_state_timeout_s,
                              ahead_name="joint_state_timeout")
        if ahead is not None:
            return self._reject(ahead)
        last = self.last
        if last is not None and t < last.stamp and now_s >= last.stamp:
            # one odd stamp leaves the newest kept sample the newest: the input stays usable
            # (a control step between it and the next joint state stopped a run, in CI); two in
            # a row are the stamps going back for good
            self.back_in_a_row += 1
            return self._reject(f"stamp {last.stamp - t:.3f} s older than the newest joint "
                                "state's (stamps went back)", newest=self.back_in_a_row >= 2)
        self.back_in_a_row = 0
        sample = Sample(t, now_s, q, qd, tau)
        self.last = sample
        self.rejected_since_last = False
        return sample

    def sample_problem(self, sample: Sample) -> str | None:
        """Why a reading cannot be used: not finite, outside the limits (None: it can)."""
        q, qd, tau = sample.position, sample.velocity, sample.torque
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
            return "/joint_states position or velocity missing or not finite"
        if not np.all(np.isfinite(tau)):
            return (f"/joint_states carry no finite effort for every arm joint "
                    f"({self.config.torque_source} is needed to measure torque)")
        out = np.flatnonzero((q < self.arm.lower - LIMIT_TOLERANCE_RAD)
                             | (q > self.arm.upper + LIMIT_TOLERANCE_RAD))
        if out.size:
            return f"joints {[self.arm.joints[i] for i in out]} left their limits"
        return None

    def plausibility_problem(self, sample: Sample) -> str | None:
        """Why a finite reading is implausible: beyond the URDF's velocity or effort limits."""
        qd, tau, joints = sample.velocity, sample.torque, self.arm.joints
        fast = np.flatnonzero(np.abs(qd) > self.arm.velocity_limit)
        if fast.size:
            i = int(fast[0])
            return (f"/joint_states give {joints[i]} a velocity of {qd[i]:.3g} rad/s, beyond "
                    f"its limit {self.arm.velocity_limit[i]:.3g} rad/s: a sensor fault?")
        strong = np.flatnonzero(np.abs(tau) > self.arm.effort_limit)
        if strong.size:
            i = int(strong[0])
            return (f"/joint_states give {joints[i]} a torque of {tau[i]:.3g} N m, beyond "
                    f"its limit {self.arm.effort_limit[i]:.3g} N m: a sensor fault "
                    "(or wrong torque_constants)?")
        return None

    def usable(self, sample: Sample) -> bool:
        """Whether a reading is finite, within the limits and plausible (a run records it)."""
        return self.sample_problem(sample) is None and self.plausibility_problem(sample) is None

    def problem(self, now_s: float, plausible: bool = True) -> str | None:
        """Why the joint states cannot be used at ``now_s`` [s] (None: they can).

        Stale, not finite, outside the limits; with ``plausible`` also beyond the
        velocity or effort limits.
        """
        last = self.last
        if last is None:
            rejected = (f"; the newest were rejected: {self.reject_reason}"
                        if self.rejected_since_last else "")
            return f"no /joint_states with the arm joints received{rejected}"
        timeout = self.config.joint_state_timeout_s
        if self.rejected_since_last:
            return f"the newest /joint_states were rejected: {self.reject_reason}"
        if not is_fresh(last.received, now_s, math.inf):  # received "after now"
            return (f"the node's clock went back {last.received - now_s:.3f} s (simulation "
                    "restarted?): waiting for new /joint_states")
        age = max(now_s - last.stamp, now_s - last.received)
        if age > timeout:
            return f"/joint_states are {age:.3f} s old (timeout {timeout:.3f} s)"
        problem = self.sample_problem(last)
        if problem is None and plausible:
            problem = self.plausibility_problem(last)
        return problem

    def start_problem(self, now_s: float, period_s: float) -> str | None:
        """Why a plan may not start from the newest joint state at ``now_s`` (None: it may).

        The plan starts from the measured position at zero velocity, so the reading must
        be usable (:meth:`problem`), recent (:data:`START_SAMPLE_AGE_S`, or
        ``joint_state_timeout`` if shorter), every joint within its limits (to encoder
        noise, :data:`START_LIMIT_TOLERANCE_RAD`) and the arm at rest: each joint slower
        than the velocity step the acceleration limit allows in one command period
        ``period_s`` [s] (``acceleration_limit / rate``, 0.3 deg/s by default), so the
        first command is no velocity step.
        """
        problem = self.problem(now_s)
        last = self.last
        if problem is not None or last is None:
            return problem
        bound = min(START_SAMPLE_AGE_S, self.config.joint_state_timeout_s)
        age = max(now_s - last.stamp, now_s - last.received)
        if age > bound:
            return (f"the newest /joint_states are {age:.3f} s old: a start needs one younger "
                    f"than {bound:.3f} s")
        arm, q = self.arm, last.position
        out = np.flatnonzero((q < arm.lower - START_LIMIT_TOLERANCE_RAD)
                             | (q > arm.upper + START_LIMIT_TOLERANCE_RAD))
        if out.size:
            i = int(out[0])
            return (f"joints {[arm.joints[k] for k in out]} left their limits: "
                    f"{arm.joints[i]} at {math.degrees(q[i]):.3f} deg, limits "
                    f"[{math.degrees(arm.lower[i]):.3f}, {math.degrees(arm.upper[i]):.3f}] deg "
                    "(a start needs every joint within its limits): move it back inside")
        rest = arm.acceleration * period_s
        moving = np.flatnonzero(np.abs(last.velocity) > rest)
        if moving.size:
            i = int(moving[0])
            return (f"the arm is moving: {arm.joints[i]} at "
                    f"{math.degrees(last.velocity[i]):.2f} deg/s (at rest below "
                    f"{math.degrees(rest):.2f} deg/s): wait until it stops")
        return None
