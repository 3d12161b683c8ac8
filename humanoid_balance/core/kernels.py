"""The arm-balance cycle's arithmetic on a few joints, compiled by numba where it is installed.

Why not numpy: a control cycle works on vectors of 7-14 joints, where a numpy
call costs its overhead, not its arithmetic, and at 500 Hz in a process of its
own (between cycles the other processes run) the caches are cold: an empty
numpy addition took 6.6 us after a 1.8 ms sleep against 0.7 us back to back,
and ``arm_balance``'s cycle made about 80 such calls (counted in its code; the
times measured in-process, see README, issue 10). Each function here is one call
instead of 5-15: for the velocity box, 4.7 against 19.9 us cold (1.3 against
10.8 us back to back).

numba compiles each function on its first call (cached on disk, ``cache=True``):
:func:`warm_up` compiles them all, so that a controller's first cycle does not.
Without numba (``pip install numba``) the same functions run as plain Python,
with the same results, slower than the numpy they replaced (the velocity box: 37
against 10.8 us back to back): :data:`COMPILED` says which.

The functions take numpy arrays and return new ones (what a controller's output
keeps must not change in the next cycle); :func:`take_positions` alone updates the
arrays of a measured state in place. The arithmetic is written in the order
of the numpy expressions it replaced (no fused multiply-add: numba's default keeps
IEEE semantics): the velocity box is equal to the bit, sums of products differ
from BLAS's by rounding. Loops, not ``all()`` of a generator: what numba compiles
best.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np

F = TypeVar("F", bound=Callable[..., Any])

try:
    import numba as _numba
except ImportError:  # pragma: no cover - the project installs numba; a robot may not
    _numba = None  # type: ignore[assignment]

#: True when the kernels are compiled (numba installed); False: plain Python
COMPILED = _numba is not None


def compiled(function: F) -> F:
    """``function`` compiled in nopython mode where numba is installed, else as is (cached on
    disk: compile it once at start-up, as :func:`warm_up` does, not in a cycle)."""
    if _numba is None:  # pragma: no cover
        return function
    return cast(F, _numba.njit(cache=True)(function))


@compiled
def all_finite(x: np.ndarray) -> bool:
    """Every entry of the 1-D ``x`` is finite."""
    for i in range(x.shape[0]):  # noqa: SIM110 (a loop: see the module docstring)
        if not math.isfinite(x[i]):
            return False
    return True


@compiled
def velocity_box(q: np.ndarray, qd_prev: np.ndarray, dt: float, ahead: float,
                 upper: np.ndarray, lower: np.ndarray, acceleration: np.ndarray,
                 velocity: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """:func:`~humanoid_balance.core.joint_limits.velocity_box` at the positions
    ``q + ahead qd_prev dt``: ``(lower, upper, conflict, any conflict)``; ``upper``,
    ``lower`` are the position limits with the margin taken off [rad]."""
    n = q.shape[0]
    lo = np.empty(n)
    hi = np.empty(n)
    conflict = np.zeros(n, dtype=np.bool_)
    any_conflict = False
    for i in range(n):
        a = acceleration[i]
        half = 0.5 * a * dt
        half2 = half * half
        slack = a * dt * dt / 8.0
        step = a * dt
        position = q[i] + ahead * qd_prev[i] * dt if ahead != 0.0 else q[i]
        d_up = max(upper[i] - position - slack, 0.0)
        d_down = max(position - lower[i] - slack, 0.0)
        stop_up = min(math.sqrt(half2 + 2.0 * a * d_up) - half, velocity[i])
        stop_down = min(math.sqrt(half2 + 2.0 * a * d_down) - half, velocity[i])
        high = min(stop_up, qd_prev[i] + step)
        low = max(-stop_down, qd_prev[i] - step)
        if low > high:  # the nearest position-safe velocity
            low = high = min(max(qd_prev[i], -stop_down), stop_up)
            conflict[i] = True
            any_conflict = True
        lo[i] = low
        hi[i] = high
    return lo, hi, conflict, any_conflict


@compiled
def arm_momentum(ag: np.ndarray, columns: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``ag[:, columns]`` with the angular rows about the point ``G - r``: ``L += r x P``.

    ``ag``: a 6 x nv momentum matrix about ``G`` (linear rows first), as pinocchio's
    centroidal map.
    """
    out = np.empty((6, columns.shape[0]))
    rx, ry, rz = r[0], r[1], r[2]
    for j in range(columns.shape[0]):
        c = columns[j]
        px, py, pz = ag[0, c], ag[1, c], ag[2, c]
        out[0, j] = px
        out[1, j] = py
        out[2, j] = pz
        out[3, j] = ag[3, c] + (-rz * py + ry * pz)
        out[4, j] = ag[4, c] + (rz * px - rx * pz)
        out[5, j] = ag[5, c] + (-ry * px + rx * py)
    return out


@compiled
def posture_velocity(target: np.ndarray, q: np.ndarray, gain: float, speed: float,
                     previous: np.ndarray, step: float, active: bool) -> np.ndarray:
    """``v_p = k (q_p - q)`` scaled to at most ``speed`` (zero when not ``active``), changed
    from ``previous`` by at most ``step``; see ``RmcController``."""
    n = previous.shape[0]
    out = np.empty(n)
    scale = 1.0
    if active:
        peak = 0.0
        for i in range(n):
            peak = max(peak, abs(gain * (target[i] - q[i])))
        if peak > speed:
            scale = speed / peak
    for i in range(n):
        v = 0.0
        if active:
            v = gain * (target[i] - q[i])
            if scale != 1.0:
                v *= scale
        out[i] = previous[i] + min(max(v - previous[i], -step), step)
    return out


@compiled
def held_rows_solve_2(b: np.ndarray, target: np.ndarray, v: np.ndarray,
                      rcond: float) -> tuple[bool, np.ndarray]:
    """``v + B^+ (target - B v)`` for a 2-row ``B`` in closed form: ``(True, it)``; ``(False,
    undefined)`` when ``B B^T`` is near singular (take the eigen-decomposition's path).

    With ``v`` = 0 the minimum-norm least-squares solution (seed 000's eq. 6); else the
    velocity nearest ``v`` among those that meet the rows (``B^+ t + N v``).
    """
    n = b.shape[1]
    out = np.empty(n)
    g00 = 0.0
    g01 = 0.0
    g11 = 0.0
    t0 = target[0]
    t1 = target[1]
    for j in range(n):
        g00 += b[0, j] * b[0, j]
        g01 += b[0, j] * b[1, j]
        g11 += b[1, j] * b[1, j]
        t0 -= b[0, j] * v[j]
        t1 -= b[1, j] * v[j]
    det = g00 * g11 - g01 * g01
    if not det > (rcond * (g00 + g11)) ** 2 * 4.0:
        return False, out
    y0 = (g11 * t0 - g01 * t1) / det
    y1 = (g00 * t1 - g01 * t0) / det
    for j in range(n):
        out[j] = v[j] + (b[0, j] * y0 + b[1, j] * y1)
    return True, out


@compiled
def held_rows_aux_2(a_ref: np.ndarray, rows: np.ndarray, nj: int, qd_job: np.ndarray,
                    v: np.ndarray, rcond: float,
                    ) -> tuple[bool, np.ndarray, np.ndarray, np.ndarray]:
    """Seed 000's eq. 6 with the posture velocity ``v``, for two held ``rows``:
    ``(solved, qd_aux, B, t)`` with ``B = S A_aux``, ``t = -S A_job qd_job`` (``a_ref``'s
    columns: the job arm's ``nj`` first) and :func:`held_rows_solve_2`'s ``v + B^+ (t - B v)``."""
    na = a_ref.shape[1] - nj
    b = np.empty((2, na))
    target = np.empty(2)
    for k in range(2):
        r = rows[k]
        t = 0.0
        for j in range(nj):
            t += a_ref[r, j] * qd_job[j]
        target[k] = -t
        for j in range(na):
            b[k, j] = a_ref[r, nj + j]
    solved, qd_aux = held_rows_solve_2(b, target, v, rcond)
    return solved, qd_aux, b, target


@compiled
def inside(x: np.ndarray, lower: np.ndarray, upper: np.ndarray, offset: int) -> bool:
    """``lower[offset + i] <= x[i] <= upper[offset + i]`` for every ``i``."""
    for i in range(x.shape[0]):  # noqa: SIM110 (a loop: see the module docstring)
        if not lower[offset + i] <= x[i] <= upper[offset + i]:
            return False
    return True


@compiled
def commit(a_ref: np.ndarray, a_w: np.ndarray, same: bool, qd_job: np.ndarray,
           qd_aux: np.ndarray, h_prev_w: np.ndarray, dt: float, q_cmd: np.ndarray,
           qd_prev: np.ndarray,
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                      np.ndarray]:
    """A cycle's end: ``(qd, h_job, h_aux, h, h_w, rate, q_next)``.

    ``qd = [qd_job, qd_aux]``; each arm's momentum about the reference point
    (``a_ref``'s columns: the job arm's first) and their sum ``h``; ``h_w`` about ``W``
    (``a_w``; ``h`` itself when ``same``); its rate from ``h_prev_w`` over ``dt``; the
    positions' trapezoid ``q_next = q_cmd + (qd_prev + qd) dt / 2``.
    """
    nj = qd_job.shape[0]
    n = nj + qd_aux.shape[0]
    qd = np.empty(n)
    for j in range(nj):
        qd[j] = qd_job[j]
    for j in range(nj, n):
        qd[j] = qd_aux[j - nj]
    h_job = np.empty(6)
    h_aux = np.empty(6)
    h = np.empty(6)
    h_w = np.empty(6)
    rate = np.empty(6)
    for i in range(6):
        s_job = 0.0
        for j in range(nj):
            s_job += a_ref[i, j] * qd[j]
        s_aux = 0.0
        for j in range(nj, n):
            s_aux += a_ref[i, j] * qd[j]
        h_job[i] = s_job
        h_aux[i] = s_aux
        h[i] = s_job + s_aux
        if same:
            h_w[i] = h[i]
        else:
            s_w = 0.0
            for j in range(n):
                s_w += a_w[i, j] * qd[j]
            h_w[i] = s_w
        rate[i] = (h_w[i] - h_prev_w[i]) / dt
    q_next = np.empty(n)
    for j in range(n):
        q_next[j] = q_cmd[j] + 0.5 * (qd_prev[j] + qd[j]) * dt
    return qd, h_job, h_aux, h, h_w, rate, q_next


#: :func:`take_positions`'s answers: taken; a non-finite position; a joint beyond its limits
TAKEN, NOT_FINITE, BEYOND_LIMITS = 0, 1, 2


@compiled
def take_positions(position: np.ndarray, msg_index: np.ndarray, joint_index: np.ndarray,
                   q_index: np.ndarray, lower: np.ndarray, upper: np.ndarray, now_s: float,
                   stamp_ns: int, joint_times_s: np.ndarray, joint_stamps_ns: np.ndarray,
                   q: np.ndarray) -> int:
    """Take a joint-state sample into a measured state (``MeasuredState.update_joints``).

    ``position[msg_index[k]]`` is joint ``joint_index[k]``, at ``q[q_index[k]]``. Returns
    :data:`TAKEN`, :data:`NOT_FINITE` (a position of the message) or :data:`BEYOND_LIMITS` (a
    joint outside ``[lower, upper]``); nothing is written unless taken. A joint whose last
    sample had the same nonzero ``stamp_ns`` keeps its time.
    """
    for k in range(position.shape[0]):
        if not math.isfinite(position[k]):
            return NOT_FINITE
    for k in range(msg_index.shape[0]):
        value = position[msg_index[k]]
        j = joint_index[k]
        if value < lower[j] or value > upper[j]:
            return BEYOND_LIMITS
    for k in range(msg_index.shape[0]):
        j = joint_index[k]
        if stamp_ns == 0 or joint_stamps_ns[j] != stamp_ns:
            joint_times_s[j] = now_s
        joint_stamps_ns[j] = stamp_ns
        q[q_index[k]] = position[msg_index[k]]
    return TAKEN


@compiled
def time_range(times: np.ndarray, index: np.ndarray) -> tuple[int, float, float]:
    """``(how many are NaN, the smallest, the largest)`` of ``times[index]`` (NaN: never)."""
    never = 0
    low = math.inf
    high = -math.inf
    for k in range(index.shape[0]):
        t = times[index[k]]
        if math.isnan(t):
            never += 1
        else:
            low = min(low, t)
            high = max(high, t)
    return never, low, high


_WARM = False


def warm_up() -> None:
    """Compile every kernel now (or load it from numba's cache) for the argument types the
    controllers pass, so that no control cycle waits for the compiler; once per process (the
    constructors of what calls the kernels call it: later calls return at once)."""
    global _WARM
    if _WARM:
        return
    v = np.zeros(4)
    m6 = np.zeros((6, 4))
    rows = np.arange(2)
    # a serialized message's doubles are read-only (and unaligned: numba types them as
    # aligned, test_kernels checks that such a read compiles nothing new)
    readonly = np.frombuffer(v.tobytes())
    index = np.arange(4)
    for x in (v, v[::2], readonly):  # the layouts and read-only views callers pass
        all_finite(x)
        take_positions(x, index[:x.shape[0]], index[:x.shape[0]], index[:x.shape[0]], v - 1.0,
                       v + 1.0, 0.0, 1, v.copy(), np.zeros(4, dtype=np.int64), v.copy())
    time_range(v, index)
    velocity_box(v, v, 0.002, 0.5, v + 1.0, v - 1.0, v + 1.0, v + 1.0)
    arm_momentum(m6, np.arange(4), np.zeros(3))
    posture_velocity(v, v, 1.0, 1.0, v, 0.1, True)
    held_rows_solve_2(m6[:2], np.zeros(2), v, 1e-10)
    held_rows_aux_2(m6, rows, 2, v[:2], v[2:], 1e-10)
    inside(v, v, v, 0)
    commit(m6, m6, True, v[:2], v[2:], np.zeros(6), 0.002, v, v)
    _WARM = True
