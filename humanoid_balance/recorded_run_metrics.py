"""The figures of a recorded run (:class:`~humanoid_balance.recorded_run.RecordedRun`), computed from it.

- :func:`peak_shift_mm`: the peak displacement of a ground point (CoP, ZMP)
  from where it rested before the strike.
- :func:`run_metrics`, :func:`comparison_metrics`: the figures of one run, and
  of a run with RMC against one without (the ratio of the CoP peak shifts).
- :func:`rate_metrics`: how regularly each command topic came.
- :func:`sole_outlines`, :func:`measured_momentum`: the feet's outlines and the
  joints' momentum, from the recorded joint states and the humanoid's model.

:mod:`humanoid_balance.recorded_run` re-exports these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from humanoid_balance.bag import BagError
from humanoid_balance.recorded_series import Series
from humanoid_balance.results import metric

if TYPE_CHECKING:
    from humanoid_balance.core.foot_layout import FootLayout
    from humanoid_balance.recorded_run import RecordedRun

#: s of rest before the strike whose mean position the peak shifts are measured from
REST_WINDOW_S = 0.2


def sole_outlines(run: RecordedRun, model: Any, at: float,
                  layout: FootLayout | None = None) -> dict[str, np.ndarray]:
    """Each foot's support outline (K x 2, [m], in ``W``) at the feet's poses of the joint state at ``at``.

    The outline is the hull of the foot's contact points, those the ZMP estimator
    builds its support polygon from (the foot layout of ``config/zmp.yaml``:
    :meth:`~humanoid_balance.core.foot_layout.FootLayout.from_zmp_yaml`), so the hull
    of the outlines is the estimator's polygon with both feet down.

    Args:
        run: the recorded run (its ``/joint_states``).
        model: the humanoid's :class:`~humanoid_balance.core.model.RobotModel` (``world_frame="W"``).
        at: simulation time [s]: the last joint state up to it is used (the first if none).
        layout: another foot layout (a team's) instead of the package's.

    Raises:
        BagError: the run has no joint states.
    """
    from humanoid_balance.core.foot_layout import FootLayout
    from humanoid_balance.core.support import convex_hull

    if not len(run.joints_q):
        raise BagError(f"{run.label}: no /joint_states recorded: the feet's poses are unknown")
    layout = FootLayout.from_zmp_yaml() if layout is None else layout
    points = layout.contact_points_in_sole(model)
    i = max(0, int(np.searchsorted(run.joints_q.t, at, side="right")) - 1)
    names = [n for n in run.joint_names if n in model.model.names]
    q = model.configuration(dict(zip(names, (float(run.joints_q.values[i, run.joint_names.index(n)])
                                             for n in names), strict=True)))
    soles = layout.soles_in_world(model, q)
    out = {}
    for side, local_xy in points.items():
        local = np.column_stack([local_xy, np.zeros(len(local_xy)), np.ones(len(local_xy))])
        out[side] = convex_hull((soles[side] @ local.T).T[:, :2])
    return out


def peak_shift_mm(points: Series, start: float, end: float = float("inf")) -> float:
    """Peak distance [mm] of a ground point from its mean over the :data:`REST_WINDOW_S` before ``start``.

    .. math:: \\max_{start \\le t \\le end} \\lVert p(t) - \\bar p_{rest} \\rVert

    Args:
        points: x, y [m] over time [s].
        start: the strike's start [s]; ``end``: the last time considered [s].

    Returns:
        nan when there are no samples before or after ``start``.
    """
    if not len(points):
        return float("nan")
    before = points.between(start - REST_WINDOW_S, start - 1e-12)
    after = points.between(start, end)
    if not len(before) or not len(after):
        return float("nan")
    rest = before.values.mean(axis=0)
    return float(np.linalg.norm(after.values - rest, axis=1).max() * 1e3)


def measured_momentum(run: RecordedRun, model: Any, max_samples: int = 20000) -> Series:
    """Momentum ``[P; L]`` about the balance frame ``W`` of the recorded joint states.

    Computed with the humanoid's model (fixed base, ``world_frame="W"``) from
    ``/joint_states`` positions and velocities: the momentum the joints really
    had, with or without a controller in the loop. Samples without velocities
    are left out.

    Args:
        run: the recorded run.
        model: a :class:`humanoid_balance.core.model.RobotModel` of the humanoid.
        max_samples: at most this many samples, evenly taken (a long bag's plot
            needs no more).
    """
    if not len(run.joints_q):
        return Series.empty(6)
    names = [n for n in run.joint_names if n in model.model.names]
    if not names:
        return Series.empty(6)
    columns = [run.joint_names.index(n) for n in names]
    rows = np.flatnonzero(np.isfinite(run.joints_v.values[:, columns]).all(axis=1))
    if rows.size > max_samples:
        rows = rows[np.linspace(0, rows.size - 1, max_samples).round().astype(int)]
    q_index = model.q_index(names)
    v_index = model.v_index(names)
    q = model.neutral()
    v = np.zeros(model.nv)
    out = np.zeros((rows.size, 6))
    for k, i in enumerate(rows):
        q[q_index] = run.joints_q.values[i, columns]
        v[v_index] = run.joints_v.values[i, columns]
        out[k] = model.momentum(q, v, np.zeros(3))
    return Series(run.joints_q.t[rows].copy(), out)


def _rounded(value: float, digits: int) -> float:
    return round(value, digits) if np.isfinite(value) else float("nan")


def run_metrics(run: RecordedRun, start: float | None = None,
                end: float = float("inf")) -> dict[str, dict[str, Any]]:
    """The figures of one run (RESULTS.md metrics), computed from its recording.

    Args:
        run: the recorded run.
        start: the strike's start [s] (default: from the job input, :meth:`RecordedRun.strike_start`);
            nan for a run without a strike (no peak shifts; momentum over the whole run).
        end: the last simulation time considered [s].
    """
    start = run.strike_start() if start is None else start
    momentum = run.momentum_commanded.between(start if np.isfinite(start) else -np.inf, end)
    lxy = float(np.abs(momentum.values[:, 3:5]).max()) if len(momentum) else float("nan")
    # the controller's own /waist/tracking_error: its shaped reference less its measurement
    error = run.waist_tracking_error.between(-np.inf, end)
    waist_error_deg = float(np.rad2deg(np.hypot(*error.values.T).max())) if len(error) \
        else float("nan")
    # against what was asked (issue 32): the drives' angles less /waist/command's points
    # joined by straight segments on their times, while the commands came
    commanded = run.waist_command.between(-np.inf, end)
    drive = run.waist_drive.between(commanded.t[0], commanded.t[-1]) if len(commanded) \
        else Series.empty(2)
    command_error_deg = float(np.rad2deg(np.max(np.hypot(*(drive.values - np.column_stack(
        [np.interp(drive.t, commanded.t, commanded.values[:, k]) for k in range(2)])).T))))\
        if len(drive) else float("nan")
    waist_sim = run.joint("waist_pitch").between(-np.inf, end)
    metrics = {
        "cop_peak_shift_mm": metric(_rounded(peak_shift_mm(run.cop, start, end), 2), "mm",
                                    better="lower"),
        "zmp_peak_shift_mm": metric(_rounded(peak_shift_mm(run.zmp, start, end), 2), "mm",
                                    better="lower"),
        "max_abs_Lx_Ly_commanded": metric(lxy, "N m s", better="lower"),
        "arm_balance_holds": metric(run.arm_holds, "", target=0, better="lower"),
        "faults_seen": metric(len(run.faults_from(run.scenario_start)), "", target=0,
                              better="lower"),
        "balance_faults_seen": metric(len(run.faults_from(run.scenario_start, balance=True)), "",
                                      better="lower"),
        "lock_step_misses": metric(float("nan") if run.lock_step_misses is None
                                   else run.lock_step_misses, "", target=0, better="lower"),
        "waist_max_tracking_error_deg": metric(_rounded(waist_error_deg, 4), "deg",
                                               better="lower"),
        "waist_max_command_error_deg": metric(_rounded(command_error_deg, 4), "deg",
                                              better="lower"),
        "waist_pitch_final_deg_sim": metric(
            _rounded(float(np.rad2deg(waist_sim.values[-1, 0])), 3) if len(waist_sim)
            else float("nan"), "deg"),
    }
    # what the recording does not hold is left out (no NaN in the JSON)
    return {name: entry for name, entry in metrics.items()
            if not (isinstance(entry["value"], float) and not np.isfinite(entry["value"]))}


#: the target of the CoP peak-shift ratio, with RMC / without (issue 10)
RATIO_TARGET = 0.25


def comparison_metrics(with_rmc: Mapping[str, Mapping[str, Any]],
                       without_rmc: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The peak shifts without RMC and their ratios (with / without), from :func:`run_metrics` of each."""
    out: dict[str, dict[str, Any]] = {}
    for name in ("cop_peak_shift_mm", "zmp_peak_shift_mm"):
        if name not in with_rmc or name not in without_rmc:
            continue
        rmc = float(with_rmc[name]["value"])
        base = float(without_rmc[name]["value"])
        out[f"{name}_no_rmc"] = metric(base, "mm")
        label = name.replace("_peak_shift_mm", "")
        if base > 0:
            out[f"{label}_peak_shift_ratio"] = metric(
                round(rmc / base, 4), "", target=RATIO_TARGET if label == "cop" else None,
                better="lower")
    return out


def rate_metrics(run: RecordedRun) -> dict[str, dict[str, Any]]:
    """Each command topic's median rate [Hz] and longest gap [ms], from its log times.

    A topic with fewer than two messages has no rate and is left out.
    """
    out: dict[str, dict[str, Any]] = {}
    for topic, times in sorted(run.command_times.items()):
        if times.size < 2:
            continue
        gaps = np.diff(np.sort(times))
        median = float(np.median(gaps))
        out[f"{topic} rate"] = metric(round(1.0 / median, 2) if median > 0 else float("inf"),
                                      "Hz")
        out[f"{topic} longest gap"] = metric(round(float(gaps.max()) * 1e3, 2), "ms")
    return out
