"""The plots and the HTML page of recorded strike runs (``humanoid-balance demo``'s folder).

Built from recorded data only (:class:`humanoid_balance.recorded_run.RecordedRun`
read from bags, and the metrics computed from them), never from a running
demo's objects, so that a later ``humanoid-balance report BAG_OR_DIR`` writes
the same page from the same bags.

- :func:`plot_ground_paths`: the CoP and ZMP paths inside the support polygon,
  every run on one figure (the whole polygon, and a close-up of the paths).
- :func:`plot_momentum`: the angular momentum Lx, Ly, Lz about ``W`` over time,
  from the recorded joint states (and the controller's own model where recorded).
- :func:`plot_waist`: the waist's commanded, driven (encoders) and simulated pitch,
  and its tracking error.
- :func:`plot_command_rates`: the command topics' rates and gaps (log times).
- :func:`plot_diagnostics`: every ``/diagnostics`` status's level over time, arm holds.
- :func:`plot_stability_margin`: the ZMP estimator's stability margin over time.
- :func:`write_page`: ``index.html``: the summary table, notes, the plots, the plots
  not drawn and why.
- :func:`write_report`: all of it for any recorded runs (``humanoid-balance report``).

A run without a strike (a robot's recording, no job input) is drawn over its
whole time, from its first stamp. matplotlib is imported when a plot is drawn
(Agg backend: no display needed).
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from humanoid_balance.bag import BagError
from humanoid_balance.recorded_run import (
    COMMAND_TOPICS,
    JOB_TOPICS,
    LEVEL_NAMES,
    RecordedRun,
    Series,
    comparison_metrics,
    measured_momentum,
    rate_metrics,
    run_metrics,
    sole_outlines,
)
from humanoid_balance.results import metric, save_figure

#: line colour of each run, in order (with RMC first, then the baseline)
COLOURS = ("tab:blue", "tab:red", "tab:green", "tab:purple")


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _colours(count: int) -> list[str]:
    return [COLOURS[i % len(COLOURS)] for i in range(count)]


def _closed(polygon: np.ndarray) -> np.ndarray:
    return np.vstack([polygon, polygon[:1]])


def _rest_point(points: Series, start: float) -> np.ndarray | None:
    before = points.between(start - 0.2, start - 1e-12)
    return before.values.mean(axis=0) if len(before) else None


def _origin(run: RecordedRun, start: float = float("nan")) -> float:
    """The time [s] a run's plots count from: its strike start, else 0 in a simulation
    (simulation time starts there), else its first stamp."""
    if np.isfinite(start):
        return start
    return 0.0 if run.simulated else run.first_stamp


def _support_outlines(run: RecordedRun, start: float, model: Any) -> dict[str, np.ndarray]:
    """The soles' outlines (from the joint states) or else the recorded /support_polygon."""
    if len(run.joints_q) and any(n in model.model.names for n in run.joint_names):
        at = start if np.isfinite(start) else float(run.joints_q.t[0])
        return sole_outlines(run, model, at)
    if len(run.support_polygon) >= 3:
        return {"recorded": run.support_polygon}
    return {}


def plot_ground_paths(runs: Sequence[RecordedRun], starts: Sequence[float], model: Any,
                      path: Path, end: float = float("inf")) -> Path:
    """CoP and ZMP paths [mm] in the support polygon, every run on one figure.

    Left: the sole outlines at the feet's poses (from the first run's joint states
    at its strike start, :func:`humanoid_balance.recorded_run.sole_outlines`), their
    hull the support polygon, and the paths from 0.2 s before the strike's start
    to ``end``; right: a close-up around the rest point with each run's CoP peak
    shift as a circle. A run without a strike (start nan) is drawn whole; without
    joint states the polygon is the last recorded ``/support_polygon``.

    Args:
        runs: the runs, drawn in :data:`COLOURS` order.
        starts: each run's strike start [s] (nan: no strike).
        model: the humanoid's :class:`~humanoid_balance.core.model.RobotModel` (``world_frame="W"``).
        path: the PNG to write.
        end: the last simulation time drawn [s].
    """
    from humanoid_balance.core.support import convex_hull

    plt = _pyplot()
    fig, (whole, close) = plt.subplots(1, 2, figsize=(12, 5.6))
    for run, start in zip(runs, starts, strict=True):
        soles = _support_outlines(run, start, model)
        if not soles:
            continue
        hull = _closed(convex_hull(np.vstack(list(soles.values())))) * 1e3
        whole.fill(hull[:, 0], hull[:, 1], color="0.93", zorder=0)
        recorded = "recorded" in soles
        whole.plot(hull[:, 0], hull[:, 1], color="0.4", lw=1.2,
                   label="support polygon (/support_polygon, last)" if recorded
                   else "support polygon (hull of the feet's contact points)")
        for i, outline in enumerate([] if recorded else list(soles.values())):
            ring = _closed(outline) * 1e3
            whole.plot(ring[:, 0], ring[:, 1], color="0.55", lw=0.8, ls="--",
                       label="each foot's contact outline" if i == 0 else None)
        break
    for colour, run, start in zip(_colours(len(runs)), runs, starts, strict=True):
        begin = start - 0.2 if np.isfinite(start) else -np.inf
        for series, what, style in ((run.cop, "CoP (simulator)", "-"),
                                    (run.zmp, "ZMP (estimator)", ":")):
            part = series.between(begin, end)
            if not len(part):
                continue
            xy = part.values * 1e3
            for axes in (whole, close):
                axes.plot(xy[:, 0], xy[:, 1], style, color=colour, lw=1.0 if style == "-" else 1.4,
                          label=f"{what}, {run.label}")
        if not np.isfinite(start):
            continue
        rest = _rest_point(run.cop, start)
        if rest is not None:
            cop = run.cop.between(start, end)
            if len(cop):
                radius = float(np.linalg.norm(cop.values - rest, axis=1).max()) * 1e3
                circle = plt.Circle(tuple(rest * 1e3), radius, fill=False, ls="--", color=colour,
                                    lw=0.8)
                close.add_patch(circle)
                close.annotate(f"CoP peak shift {radius:.1f} mm", xy=(rest[0] * 1e3,
                               rest[1] * 1e3 + radius), color=colour, fontsize=8,
                               ha="center", va="bottom")
            close.plot(*(rest * 1e3), "k+", ms=10)
    whole.set_title("CoP / ZMP path in the support polygon")
    close.set_title("close-up: paths from the strike's start" if all(np.isfinite(starts))
                    else "close-up: the paths")
    for axes in (whole, close):
        axes.set_xlabel("x (forward) [mm]")
        axes.set_ylabel("y (left) [mm]")
        axes.set_aspect("equal", adjustable="datalim")
        axes.grid(alpha=0.3)
    whole.legend(fontsize=7, loc="upper left")
    return save_figure(fig, path, dpi=90)


def plot_momentum(runs: Sequence[RecordedRun], starts: Sequence[float], model: Any, path: Path,
                  end: float = float("inf")) -> Path:
    """Angular momentum Lx, Ly, Lz [N m s] about ``W`` over time, every run on one figure.

    Solid: from the recorded joint states with the model
    (:func:`humanoid_balance.recorded_run.measured_momentum`); dotted: what the
    arm balance reported for its command (``/arm_balance/momentum``), where recorded.
    Times are from each run's strike start (a run without a strike, start nan: from
    its first stamp, or from 0 in a simulation).
    """
    plt = _pyplot()
    fig, axes = plt.subplots(3, 1, figsize=(10, 7.5), sharex=True)
    for colour, run, start in zip(_colours(len(runs)), runs, starts, strict=True):
        begin = start - 0.3 if np.isfinite(start) else -np.inf
        origin = _origin(run, start)
        measured = measured_momentum(run, model).between(begin, end)
        commanded = run.momentum_commanded.between(begin, end)
        for row, axis_name in enumerate(("Lx", "Ly", "Lz")):
            ax = axes[row]
            if len(measured):
                ax.plot(measured.t - origin, measured.values[:, 3 + row], color=colour, lw=1.0,
                        label=f"{run.label}: joint states")
            if len(commanded):
                ax.plot(commanded.t - origin, commanded.values[:, 3 + row], ":", color=colour,
                        lw=1.4, label=f"{run.label}: arm_balance command")
            ax.set_ylabel(f"{axis_name} [N m s]")
    for ax in axes:
        ax.axhline(0.0, color="0.5", lw=0.6)
        ax.grid(alpha=0.3)
    axes[0].set_title("angular momentum about W (RMC holds Lx, Ly at zero; Lz is free)")
    axes[0].legend(fontsize=7, loc="upper left")
    axes[-1].set_xlabel(_time_label(runs, starts))
    return save_figure(fig, path, dpi=90)


def _time_label(runs: Sequence[RecordedRun], starts: Sequence[float]) -> str:
    if all(np.isfinite(starts)):
        return "time from the strike's start [s]"
    if all(run.simulated for run in runs):
        return "simulation time [s]"
    return "time from the recording's first stamp [s]"


def plot_waist(runs: Sequence[RecordedRun], path: Path, end: float = float("inf")) -> Path:
    """Waist pitch [deg]: commanded, the drives' encoders, the joint states; tracking error.

    Times: simulation time, or on a robot from each run's first stamp.
    """
    plt = _pyplot()
    fig, (pitch, error) = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    for colour, run in zip(_colours(len(runs)), runs, strict=True):
        origin = _origin(run)
        command = run.waist_command
        if len(command):
            pitch.plot(command.t - origin, np.rad2deg(command.values[:, 0]), "o--", color=colour,
                       ms=4, lw=0.8, alpha=0.6, label=f"{run.label}: command")
        drive = run.waist_drive.between(-np.inf, end)
        if len(drive):
            pitch.plot(drive.t - origin, np.rad2deg(drive.values[:, 0]), color=colour, lw=1.2,
                       label=f"{run.label}: drives (encoders)")
        sim = run.joint("waist_pitch").between(-np.inf, end)
        if len(sim):
            pitch.plot(sim.t - origin, np.rad2deg(sim.values[:, 0]), ":", color=colour, lw=1.4,
                       label=f"{run.label}: {'MuJoCo joint' if run.simulated else '/joint_states'}")
        err = run.waist_tracking_error.between(-np.inf, end)
        if len(err):
            error.plot(err.t - origin, np.rad2deg(np.hypot(*err.values.T)), color=colour, lw=1.0,
                       label=run.label)
    pitch.set_ylabel("waist pitch [deg]")
    pitch.set_title("waist tracking (differential waist over simulated CAN drives)"
                    if all(run.simulated for run in runs)
                    else "waist tracking (differential waist over CAN)")
    pitch.legend(fontsize=7, loc="lower right")
    error.set_ylabel("|tracking error| [deg]")
    error.set_xlabel(_time_label(runs, [float("nan")] * len(runs)))
    if error.get_legend_handles_labels()[0]:
        error.legend(fontsize=7)
    for ax in (pitch, error):
        ax.grid(alpha=0.3)
    return save_figure(fig, path, dpi=90)


#: s of the bins the command rates are counted in
RATE_BIN_S = 0.2


def plot_command_rates(runs: Sequence[RecordedRun], path: Path) -> Path:
    """Each command topic's rate [Hz] (messages per :data:`RATE_BIN_S` bin) and gaps [ms].

    From the log times (when the recorder got each message), counted from each
    run's first command message.
    """
    plt = _pyplot()
    fig, (rate, gaps) = plt.subplots(2, 1, figsize=(10, 6.5), sharex=True)
    styles = ("-", "--", ":", "-.")
    for colour, run in zip(_colours(len(runs)), runs, strict=True):
        present = {t: v for t, v in sorted(run.command_times.items()) if v.size >= 2}
        if not present:
            continue
        origin = min(float(v.min()) for v in present.values())
        for k, (topic, times) in enumerate(present.items()):
            t = np.sort(times) - origin
            edges = np.arange(0.0, t[-1] + RATE_BIN_S, RATE_BIN_S)
            if edges.size < 2:
                edges = np.array([0.0, RATE_BIN_S])
            counts, _ = np.histogram(t, edges)
            label = f"{run.label}: {topic}" if len(runs) > 1 else topic
            style = styles[k % len(styles)]
            rate.step(edges, np.append(counts, counts[-1]) / RATE_BIN_S, where="post", ls=style,
                      color=colour, lw=1.0, label=label)
            gaps.plot(t[1:], np.diff(t) * 1e3, ls="none", color=colour, ms=2, alpha=0.5,
                      marker="ox^s"[k % 4], label=label)
    rate.set_ylabel(f"messages / s ({RATE_BIN_S:g} s bins)")
    rate.set_title("command rates (log times)")
    rate.legend(fontsize=7, loc="lower right")
    gaps.set_ylabel("gap to the previous message [ms]")
    gaps.set_yscale("log")
    gaps.set_xlabel("time from the first command [s]")
    for ax in (rate, gaps):
        ax.grid(alpha=0.3)
    return save_figure(fig, path, dpi=90)


#: colour of each diagnostic level
LEVEL_COLOURS = {0: "tab:green", 1: "tab:orange", 2: "tab:red", 3: "0.5"}
#: at most this many status names are drawn (those with the worst levels first)
MAX_STATUSES = 30


def plot_diagnostics(runs: Sequence[RecordedRun], path: Path) -> Path:
    """Every ``/diagnostics`` status's level over time (a row per status), and the arm's holds.

    One timeline per run; times as in :func:`plot_waist`.
    """
    plt = _pyplot()
    heights = [max(1.5, 0.22 * min(MAX_STATUSES, len({e.name for e in r.diagnostics})) + 0.8)
               for r in runs]
    fig, axes = plt.subplots(len(runs) + 1, 1, figsize=(10, sum(heights) + 2.2),
                             gridspec_kw={"height_ratios": [*heights, 1.6]}, squeeze=False)
    holds_ax = axes[-1, 0]
    for row, (colour, run) in enumerate(zip(_colours(len(runs)), runs, strict=True)):
        ax = axes[row, 0]
        origin = _origin(run)
        worst: dict[str, int] = {}
        for event in run.diagnostics:
            worst[event.name] = max(worst.get(event.name, 0), event.level)
        names = sorted(worst, key=lambda n: (-worst[n], n))[:MAX_STATUSES]
        index = {name: i for i, name in enumerate(names)}
        for level, level_colour in LEVEL_COLOURS.items():
            points = [(e.t - origin, index[e.name]) for e in run.diagnostics
                      if e.level == level and e.name in index]
            if points:
                xy = np.array(points)
                ax.scatter(xy[:, 0], xy[:, 1], s=14, marker="|", color=level_colour,
                           label=LEVEL_NAMES[level])
        ax.set_yticks(range(len(names)))
        ax.set_yticklabels(names, fontsize=6)
        ax.invert_yaxis()
        ax.set_title(f"{run.label}: /diagnostics levels" if run.diagnostics
                     else f"{run.label}: no /diagnostics", fontsize=9)
        if run.diagnostics:
            ax.legend(fontsize=7, loc="upper right")
        ax.grid(alpha=0.3, axis="x")
        if len(run.holds):
            holds_ax.step(run.holds.t - origin, run.holds.values[:, 0], where="post",
                          color=colour, label=run.label)
    holds_ax.set_ylabel("arm holds")
    holds_ax.set_xlabel(_time_label(runs, [float("nan")] * len(runs)))
    holds_ax.grid(alpha=0.3)
    if holds_ax.get_legend_handles_labels()[0]:
        holds_ax.legend(fontsize=7)
    else:
        holds_ax.set_title("no arm_balance holds count on /diagnostics", fontsize=9)
    return save_figure(fig, path, dpi=90)


def plot_stability_margin(runs: Sequence[RecordedRun], path: Path) -> Path:
    """The ZMP estimator's stability margin [mm] (positive inside the polygon) over time.

    The margin has no stamp: times are its log times, from each run's first margin message.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10, 3.5))
    for colour, run in zip(_colours(len(runs)), runs, strict=True):
        margin = run.stability_margin
        if len(margin):
            ax.plot(margin.t - margin.t[0], margin.values[:, 0] * 1e3, color=colour, lw=1.0,
                    label=run.label)
    ax.axhline(0.0, color="tab:red", lw=0.8)
    ax.set_ylabel("stability margin [mm]")
    ax.set_xlabel("time from the first margin message (log time) [s]")
    ax.set_title("ZMP stability margin (/zmp/stability_margin; below 0: outside the polygon)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return save_figure(fig, path, dpi=90)


def _format(value: Any) -> str:
    if isinstance(value, float):
        return "nan" if not np.isfinite(value) else f"{value:.6g}"
    return str(value)


def _meets(entry: Mapping[str, Any]) -> str:
    target, better, value = entry.get("target"), entry.get("better"), entry.get("value")
    if target is None or better is None or not isinstance(value, (int, float)):
        return ""
    if not np.isfinite(float(value)):
        return "no"
    ok = value <= target if better == "lower" else value >= target
    return "yes" if ok else "no"


def summary_table(columns: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> str:
    """An HTML table: a row per metric, a column per run (``label -> metrics``), target, met."""
    labels = list(columns)
    names: list[str] = []
    for metrics in columns.values():
        names.extend(n for n in metrics if n not in names)
    head = "".join(f"<th>{html.escape(label)}</th>" for label in labels)
    rows = [f"<tr><th>metric</th>{head}<th>unit</th><th>target</th><th>met</th></tr>"]
    for name in names:
        entries = [columns[label].get(name) for label in labels]
        first = next(e for e in entries if e is not None)
        cells = "".join(f"<td>{html.escape(_format(e['value']))}</td>" if e is not None
                        else "<td></td>" for e in entries)
        target = first.get("target")
        relation = "&le;" if first.get("better") == "lower" else "&ge;"
        target_text = "" if target is None else f"{relation} {target}"
        verdicts = [m for m in (_meets(e) for e in entries if e is not None) if m]
        met = verdicts[0] if len(set(verdicts)) == 1 else " / ".join(verdicts)
        cls = ' class="fail"' if "no" in verdicts else ""
        rows.append(f"<tr{cls}><td>{html.escape(name)}</td>{cells}"
                    f"<td>{html.escape(str(first.get('unit', '')))}</td><td>{target_text}</td>"
                    f"<td>{met}</td></tr>")
    return "<table>\n" + "\n".join(rows) + "\n</table>"


_STYLE = """
body { font-family: sans-serif; max-width: 1100px; margin: 2em auto; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: left; font-size: 0.9em; }
th { background: #eee; }
tr.fail td { background: #fde2e2; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0 1.5em; }
code { background: #f3f3f3; padding: 0 0.2em; }
"""


def write_page(out: Path, *, title: str, columns: Mapping[str, Mapping[str, Mapping[str, Any]]],
               plots: Sequence[Path], headline: Mapping[str, Mapping[str, Any]] | None = None,
               notes: Sequence[str] = (), command: str = "",
               links: Mapping[str, Path] | None = None,
               missing: Mapping[str, str] | None = None) -> Path:
    """Write ``out/index.html``: the summary tables, notes, the plots (linked by relative path).

    Args:
        out: the run folder (the plots and linked files are in it or below).
        title: the page's heading.
        columns: the per-run table: a column per label (``label -> metrics``; RESULTS.md entries).
        headline: figures shown first, in a table of their own (the runs compared).
        plots: PNG files to show, in order.
        notes: lines (plain text) shown under the table.
        command: the command that made the data.
        links: name -> file or folder (a bag, logs) linked at the bottom (a path relative
            to ``out``, which may lead out of it).
        missing: plot name -> why it is not drawn (the topics the recording lacks).
    """
    out = Path(out)
    parts = [f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}"
             f"</title><style>{_STYLE}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>"]
    created = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    meta = f"written {created}"
    if command:
        meta += f" &middot; <code>{html.escape(command)}</code>"
    parts.append(f"<p>{meta}</p>")
    if headline:
        parts.append(summary_table({"value": headline}))
    parts.append("<h2>runs</h2>")
    parts.append(summary_table(columns))
    if notes:
        parts.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
    if missing:
        parts.append("<h2>plots not drawn</h2><ul>" + "".join(
            f"<li><b>{html.escape(name)}</b>: {html.escape(why)}</li>"
            for name, why in missing.items()) + "</ul>")
    for plot in plots:
        relative = Path(os.path.relpath(Path(plot).resolve(), out.resolve()))
        parts.append(f"<h2>{html.escape(relative.stem.replace('_', ' '))}</h2>"
                     f"<img src='{html.escape(relative.as_posix())}' alt='{relative.stem}'>")
    if links:
        items = []
        for name, target in links.items():
            relative = Path(os.path.relpath(Path(target).resolve(), out.resolve()))
            items.append(f"<li><a href='{html.escape(relative.as_posix())}'>{html.escape(name)}"
                         f"</a></li>")
        parts.append("<h2>files</h2><ul>" + "".join(items) + "</ul>")
    parts.append("</body></html>\n")
    page = out / "index.html"
    page.write_text("\n".join(parts))
    return page


#: the plots of :func:`write_report`, by file stem, in page order
PLOT_NAMES = ("cop_zmp_paths", "momentum", "waist_tracking", "command_rates", "holds_and_faults",
              "stability_margin")


def _why_missing(runs: Sequence[RecordedRun], model: Any) -> dict[str, str]:
    """Plot stem -> why it cannot be drawn from these runs (the plots that can are not named)."""
    def none(has: Any) -> bool:
        return not any(has(run) for run in runs)

    def model_joints(run: RecordedRun) -> bool:
        return any(n in model.model.names for n in run.joint_names)

    out: dict[str, str] = {}
    if none(lambda r: len(r.cop) or len(r.zmp)):
        out["cop_zmp_paths"] = ("the recording has no /zmp (zmp_estimator) and no /sim/cop "
                                "(simulation)")
    if none(lambda r: (model_joints(r) and np.isfinite(r.joints_v.values).any())
            or len(r.momentum_commanded)):
        out["momentum"] = ("the recording has no /joint_states with the humanoid's joints and "
                           "their velocities, and no /arm_balance/momentum")
    if none(lambda r: len(r.waist_command) or len(r.waist_drive) or len(r.waist_tracking_error)
            or "waist_pitch" in r.joint_names):
        out["waist_tracking"] = ("the recording has no /waist/command, no waist joint states "
                                 "(/waist/joint_states, /joint_states) and no "
                                 "/waist/tracking_error")
    if none(lambda r: any(v.size >= 2 for v in r.command_times.values())):
        out["command_rates"] = (f"the recording has no command topic ({', '.join(COMMAND_TOPICS)}"
                                ", or one named .../command) with two messages or more")
    if none(lambda r: r.diagnostics):
        out["holds_and_faults"] = "the recording has no /diagnostics"
    if none(lambda r: len(r.stability_margin)):
        out["stability_margin"] = "the recording has no /zmp/stability_margin"
    return out


def _partial_notes(runs: Sequence[RecordedRun], model: Any, drawn: Sequence[str]) -> list[str]:
    """What a drawn plot lacks (a line each): ground truth, the polygon, a run's missing topics."""
    notes = []
    if "cop_zmp_paths" in drawn:
        for run in runs:
            if not len(run.cop):
                notes.append(f"{run.label}: no /sim/cop (the simulation's CoP, ground truth): "
                             "the ground plot shows the estimator's ZMP only")
            if not len(run.zmp):
                notes.append(f"{run.label}: no /zmp: the ground plot shows no estimated ZMP")
        if not any(len(r.support_polygon) >= 3 or any(n in model.model.names
                                                      for n in r.joint_names) for r in runs):
            notes.append("no /joint_states of the humanoid and no /support_polygon: the support "
                         "polygon is not drawn")
    if "momentum" in drawn:
        for run in runs:
            if not len(run.momentum_commanded):
                notes.append(f"{run.label}: no /arm_balance/momentum: the momentum plot shows "
                             "the joint states' momentum only")
    return notes


def write_report(runs: Sequence[RecordedRun], out: Path, model: Any, *, title: str,
                 command: str = "", links: Mapping[str, Path] | None = None,
                 notes: Sequence[str] = ()) -> Path:
    """The page of any recorded runs: table, plots, and which plots are missing and why.

    Each run is drawn from its strike start when it has one (a job input, as the
    demo's runs), else over its whole recording. With two runs of which only the
    first had resolved momentum control, the headline compares their peak shifts
    as the demo does.

    Args:
        runs: the runs (:func:`humanoid_balance.recorded_run.load_run`).
        out: the folder of the page and its PNG files (created).
        model: the humanoid's :class:`~humanoid_balance.core.model.RobotModel` (``world_frame="W"``).
        title: the page's heading.
        command: the command that made the page.
        links: name -> file or folder linked at the bottom (the bags).
        notes: lines shown under the table, before the report's own.

    Returns:
        ``out/index.html``.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    starts = []
    page_notes = list(notes)
    for run in runs:
        try:
            starts.append(run.strike_start())
        except BagError:  # no job input: a run without a strike
            starts.append(float("nan"))
            page_notes.append(f"{run.label}: no moving job input ({' or '.join(JOB_TOPICS)}): "
                              "no strike start, so no peak shifts; plotted over the whole "
                              "recording")
    columns = {}
    for run, start in zip(runs, starts, strict=True):
        figures = run_metrics(run, start)
        figures.update(rate_metrics(run))
        figures["messages_read"] = metric(sum(c for _, c in run.topics.values()), "")
        columns[run.label] = figures
    headline = None
    if len(runs) == 2 and runs[0].rmc and not runs[1].rmc:
        headline = comparison_metrics(columns[runs[0].label], columns[runs[1].label]) or None
    missing = _why_missing(runs, model)
    drawers = {
        "cop_zmp_paths": lambda p: plot_ground_paths(runs, starts, model, p),
        "momentum": lambda p: plot_momentum(runs, starts, model, p),
        "waist_tracking": lambda p: plot_waist(runs, p),
        "command_rates": lambda p: plot_command_rates(runs, p),
        "holds_and_faults": lambda p: plot_diagnostics(runs, p),
        "stability_margin": lambda p: plot_stability_margin(runs, p),
    }
    plots = [drawers[name](out / f"{name}.png") for name in PLOT_NAMES if name not in missing]
    page_notes += _partial_notes(runs, model, [p.stem for p in plots])
    for run in runs:
        for fault in run.faults_from(run.scenario_start)[:20]:
            page_notes.append(f"{run.label}: fault on /diagnostics: {fault}")
    return write_page(out, title=title, columns=columns, headline=headline, plots=plots,
                      notes=page_notes, command=command, links=links, missing=missing)
