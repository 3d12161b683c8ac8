"""The measured state the arm loop commands from: joint positions, when each was measured,
and the base pose (free-floating mode), with the samples' plausibility checks."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from humanoid_balance.core import kernels
from humanoid_balance.core.freshness import CLOCK_BACK_TOLERANCE_S

__all__ = ["BASE_POSITION_LIMIT_M", "MEASURED_LIMIT_TOLERANCE_RAD", "MeasuredState"]

#: rad a measured joint may be beyond its position limits (encoders past a soft stop, a
#: simulation's joint limit); further, the sample is implausible and refused (issue 12)
MEASURED_LIMIT_TOLERANCE_RAD = 0.5
#: m: a measured base position further from the world origin is implausible and refused (at
#: 1e308 m the generalized Jacobian came out singular)
BASE_POSITION_LIMIT_M = 1e4


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

    def invalidate(self, now_s: float | None = None) -> None:
        """Forget when anything was measured: every joint (and the base pose) must come again.

        The positions stay (a joint never measured again keeps its last value, as the
        neutral one before any measurement), but nothing counts as fresh. With ``now_s`` [s]
        (the clock went back to it), what was received on the new clock, at ``now_s`` or
        before, stays: the joint state that came with the jump (a restarted simulation's
        first) is a measurement of the robot as it is now.
        """
        if now_s is None:
            old = np.ones(len(self.joint_times_s), dtype=bool)
        else:
            old = ~(self.joint_times_s <= now_s + CLOCK_BACK_TOLERANCE_S)  # NaN: old too
        self.joint_times_s[old] = np.nan
        self.joint_stamps_ns[old] = 0
        if now_s is None or not self.base_pose_time_s <= now_s + CLOCK_BACK_TOLERANCE_S:
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
