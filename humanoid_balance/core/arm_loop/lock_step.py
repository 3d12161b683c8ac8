"""Joint states against the node clock, and which of them start a lock-step cycle
(``trigger: joint_states``: one cycle per simulation period, stamped with it)."""

from __future__ import annotations

from humanoid_balance.core import freshness
from humanoid_balance.core.arm_loop.config import ArmLoopConfig

__all__ = ["joint_state_stamp_problem", "triggers"]


def joint_state_stamp_problem(stamp_ns: int, now_ns: int | None, config: ArmLoopConfig,
                              lock_step: bool = False) -> str | None:
    """Why a joint state stamped ``stamp_ns`` and received at ``now_ns`` [ns, node clock] is
    refused, or None.

    One stamped further than ``joint_state_timeout_s`` from the node clock, back (a
    measurement that old) or ahead (a wrong clock, or a bogus stamp that would trigger a
    lock-step cycle), is refused (issue 12; :func:`humanoid_balance.core.freshness.stamp_problem`);
    an unstamped one (0) is timed on arrival, and none is judged without a clock to compare
    with (``now_ns`` None: lock-step on the simulation's stamps while the node runs on another
    clock). With ``lock_step`` (``trigger: joint_states``) an unstamped one is refused: it
    cannot mark a period (every one would be "the same period again"); stamp 0 is a period
    there only as a simulation's t = 0 on the node clock (``now_ns`` within
    ``joint_state_timeout_s`` of 0: ``use_sim_time`` before time runs).
    """
    timeout_s = config.joint_state_timeout_s
    if stamp_ns == 0 and lock_step and (now_ns is None or abs(now_ns) * 1e-9 > timeout_s):
        return ("joint states unstamped (stamp 0): trigger joint_states needs each joint state "
                "stamped with its period; ignored (stamp them, or use trigger: timer)")
    if now_ns is None or stamp_ns == 0:
        return None
    # the offset, exact in ns, against a clock at 0 (seconds since 1970 lose the last 0.2 us)
    problem = freshness.stamp_problem(
        (stamp_ns - now_ns) * 1e-9, 0.0, "joint states", ahead_s=timeout_s,
        ahead_name="joint_state_timeout", behind_s=timeout_s, behind_name="joint_state_timeout")
    return None if problem is None else f"{problem}; ignored"


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
