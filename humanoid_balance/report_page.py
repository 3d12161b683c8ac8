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
- :func:`write_page`: ``index.html``: the summary table, notes, the plots.

matplotlib is imported when a plot is drawn (Agg backend: no display needed).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from humanoid_balance.recorded_run import RecordedRun, Series, measured_momentum, sole_outlines
from humanoid_balance.results import save_figure

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


def plot_ground_paths(runs: Sequence[RecordedRun], starts: Sequence[float], model: Any,
                      path: Path, end: float = float("inf")) -> Path:
    """CoP and ZMP paths [mm] in the support polygon, every run on one figure.

    Left: the sole outlines at the feet's poses (from the first run's joint states
    at its strike start, :func:`humanoid_balance.recorded_run.sole_outlines`), their
    hull the support polygon, and the paths from 0.2 s before the strike's start
    to ``end``; right: a close-up around the rest point with each run's CoP peak
    shift as a circle.

    Args:
        runs: the runs, drawn in :data:`COLOURS` order.
        starts: each run's strike start [s].
        model: the humanoid's :class:`~humanoid_balance.core.model.RobotModel` (``world_frame="W"``).
        path: the PNG to write.
        end: the last simulation time drawn [s].
    """
    from humanoid_balance.core.zmp import support_polygon

    plt = _pyplot()
    fig, (whole, close) = plt.subplots(1, 2, figsize=(12, 5.6))
    with_joints = [(r, s) for r, s in zip(runs, starts, strict=True) if len(r.joints_q)]
    if with_joints:
        first, first_start = with_joints[0]
        soles = sole_outlines(first, model, first_start)
        hull = _closed(support_polygon(np.vstack(list(soles.values())))) * 1e3
        whole.fill(hull[:, 0], hull[:, 1], color="0.93", zorder=0)
        whole.plot(hull[:, 0], hull[:, 1], color="0.4", lw=1.2,
                   label="support polygon (hull of the soles)")
        for i, outline in enumerate(soles.values()):
            ring = _closed(outline) * 1e3
            whole.plot(ring[:, 0], ring[:, 1], color="0.55", lw=0.8, ls="--",
                       label="sole outlines" if i == 0 else None)
    for colour, run, start in zip(_colours(len(runs)), runs, starts, strict=True):
        for series, what, style in ((run.cop, "CoP (simulator)", "-"),
                                    (run.zmp, "ZMP (estimator)", ":")):
            part = series.between(start - 0.2, end)
            if not len(part):
                continue
            xy = part.values * 1e3
            for axes in (whole, close):
                axes.plot(xy[:, 0], xy[:, 1], style, color=colour, lw=1.0 if style == "-" else 1.4,
                          label=f"{what}, {run.label}")
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
    close.set_title("close-up: paths from the strike's start")
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
    Times are from each run's strike start.
    """
    plt = _pyplot()
    fig, axes = plt.subplots(3, 1, figsize=(10, 7.5), sharex=True)
    for colour, run, start in zip(_colours(len(runs)), runs, starts, strict=True):
        measured = measured_momentum(run, model).between(start - 0.3, end)
        commanded = run.momentum_commanded.between(start - 0.3, end)
        for row, axis_name in enumerate(("Lx", "Ly", "Lz")):
            ax = axes[row]
            if len(measured):
                ax.plot(measured.t - start, measured.values[:, 3 + row], color=colour, lw=1.0,
                        label=f"{run.label}: joint states")
            if len(commanded):
                ax.plot(commanded.t - start, commanded.values[:, 3 + row], ":", color=colour,
                        lw=1.4, label=f"{run.label}: arm_balance command")
            ax.set_ylabel(f"{axis_name} [N m s]")
    for ax in axes:
        ax.axhline(0.0, color="0.5", lw=0.6)
        ax.grid(alpha=0.3)
    axes[0].set_title("angular momentum about W (RMC holds Lx, Ly at zero; Lz is free)")
    axes[0].legend(fontsize=7, loc="upper left")
    axes[-1].set_xlabel("time from the strike's start [s]")
    return save_figure(fig, path, dpi=90)


def plot_waist(runs: Sequence[RecordedRun], path: Path, end: float = float("inf")) -> Path:
    """Waist pitch [deg]: commanded, the drives' encoders, the simulated joint; tracking error."""
    plt = _pyplot()
    fig, (pitch, error) = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    for colour, run in zip(_colours(len(runs)), runs, strict=True):
        command = run.waist_command
        if len(command):
            pitch.plot(command.t, np.rad2deg(command.values[:, 0]), "o--", color=colour, ms=4,
                       lw=0.8, alpha=0.6, label=f"{run.label}: command")
        drive = run.waist_drive.between(-np.inf, end)
        if len(drive):
            pitch.plot(drive.t, np.rad2deg(drive.values[:, 0]), color=colour, lw=1.2,
                       label=f"{run.label}: drives (encoders)")
        sim = run.joint("waist_pitch").between(-np.inf, end)
        if len(sim):
            pitch.plot(sim.t, np.rad2deg(sim.values[:, 0]), ":", color=colour, lw=1.4,
                       label=f"{run.label}: MuJoCo joint")
        err = run.waist_tracking_error.between(-np.inf, end)
        if len(err):
            error.plot(err.t, np.rad2deg(np.hypot(*err.values.T)), color=colour, lw=1.0,
                       label=run.label)
    pitch.set_ylabel("waist pitch [deg]")
    pitch.set_title("waist tracking (differential waist over simulated CAN drives)")
    pitch.legend(fontsize=7, loc="lower right")
    error.set_ylabel("|tracking error| [deg]")
    error.set_xlabel("simulation time [s]")
    error.legend(fontsize=7)
    for ax in (pitch, error):
        ax.grid(alpha=0.3)
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
               links: Mapping[str, Path] | None = None) -> Path:
    """Write ``out/index.html``: the summary tables, notes, the plots (linked by relative path).

    Args:
        out: the run folder (the plots and linked files are in it or below).
        title: the page's heading.
        columns: the per-run table: a column per label (``label -> metrics``; RESULTS.md entries).
        headline: figures shown first, in a table of their own (the runs compared).
        plots: PNG files to show, in order.
        notes: lines (plain text) shown under the table.
        command: the command that made the data.
        links: name -> file or folder (a bag, logs) linked at the bottom.
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
    for plot in plots:
        relative = Path(plot).resolve().relative_to(out.resolve())
        parts.append(f"<h2>{html.escape(relative.stem.replace('_', ' '))}</h2>"
                     f"<img src='{html.escape(relative.as_posix())}' alt='{relative.stem}'>")
    if links:
        items = []
        for name, target in links.items():
            relative = Path(target).resolve().relative_to(out.resolve())
            items.append(f"<li><a href='{html.escape(relative.as_posix())}'>{html.escape(name)}"
                         f"</a></li>")
        parts.append("<h2>files</h2><ul>" + "".join(items) + "</ul>")
    parts.append("</body></html>\n")
    page = out / "index.html"
    page.write_text("\n".join(parts))
    return page
