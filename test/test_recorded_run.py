"""Figures and page of a recorded run, from data built here (no simulation, no DDS)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from humanoid_balance.bag import BagError
from humanoid_balance.recorded_run import (
    RecordedRun,
    Series,
    comparison_metrics,
    peak_shift_mm,
    run_metrics,
)
from humanoid_balance.report_page import summary_table, write_page
from humanoid_balance.results import metric


def _points(t: np.ndarray, x: np.ndarray, y: np.ndarray) -> Series:
    return Series(t, np.column_stack([x, y]))


def test_peak_shift_is_measured_from_the_rest_mean() -> None:
    """The peak shift is the largest distance after the start from the mean of the 0.2 s before."""
    t = np.arange(0.0, 2.0, 0.001)
    x = np.where(t < 1.0, 0.010 + 0.001 * np.sign(np.sin(400 * t)), 0.010)  # rests at 10 mm
    x[t >= 1.5] += 0.030  # 30 mm forward after 1.5 s
    y = np.zeros_like(t)
    y[t >= 1.7] = -0.040  # and 40 mm to the right after 1.7 s: 50 mm from rest
    assert peak_shift_mm(_points(t, x, y), 1.0) == pytest.approx(50.0, abs=0.05)


def test_peak_shift_ignores_samples_after_end() -> None:
    """Samples after ``end`` do not count."""
    t = np.arange(0.0, 2.0, 0.01)
    x = np.where(t > 1.5, 0.1, 0.0)
    assert peak_shift_mm(_points(t, x, 0 * t), 1.0, end=1.4) == 0.0


def test_peak_shift_without_rest_samples_is_nan() -> None:
    """Without samples in the rest window the peak shift is not a number."""
    t = np.arange(1.0, 2.0, 0.01)
    assert np.isnan(peak_shift_mm(_points(t, 0 * t, 0 * t), 1.0))


def test_strike_start_is_the_first_moving_job_input() -> None:
    """The strike starts at the stamp of the first job input with a non-zero velocity."""
    t = np.arange(1, 1000) * 0.002
    speed = np.where(t > 0.801, 1.0, 0.0)
    run = RecordedRun("x", job=Series(t, speed[:, None]))
    assert run.strike_start() == pytest.approx(0.802, abs=1e-9)


def test_strike_start_needs_a_moving_job_input() -> None:
    """A recording whose job arm never moves has no strike start: the error says what to do."""
    t = np.arange(0.0, 1.0, 0.01)
    with pytest.raises(BagError, match="give the strike start explicitly"):
        RecordedRun("still", job=Series(t, np.zeros((t.size, 1)))).strike_start()


def test_run_metrics_leave_out_what_was_not_recorded() -> None:
    """A run without waist or momentum topics has no waist or momentum figures (no NaN)."""
    t = np.arange(0.0, 2.0, 0.01)
    run = RecordedRun("cop only", cop=_points(t, np.where(t > 1.0, 0.02, 0.0), 0 * t))
    metrics = run_metrics(run, start=1.0)
    assert metrics["cop_peak_shift_mm"]["value"] == pytest.approx(20.0)
    assert not {"waist_max_tracking_error_deg", "max_abs_Lx_Ly_commanded",
                "zmp_peak_shift_mm", "lock_step_misses"} & set(metrics)


def test_the_waist_figure_against_the_command_is_beside_the_controllers_own() -> None:
    """Issue 32: the waist's error against /waist/command (its points joined on their times)
    is reported beside the controller's own /waist/tracking_error (shaped reference less
    measurement), measured only while commands came."""
    t = np.arange(0.0, 2.0, 0.01)
    command = Series(np.array([0.5, 1.5]), np.radians([[0.0, 0.0], [1.0, 0.0]]))
    # the drives 0.02 deg behind the commanded ramp throughout
    ramp = np.clip((t - 0.5) / 1.0, 0.0, 1.0)
    drive = Series(t, np.radians(np.column_stack([ramp - 0.02, 0.0 * t])))
    run = RecordedRun("waist", waist_command=command, waist_drive=drive,
                      waist_tracking_error=Series(t, np.radians(np.full((t.size, 2), 0.001))))
    metrics = run_metrics(run, start=float("nan"))
    assert metrics["waist_max_command_error_deg"]["value"] == pytest.approx(0.02, abs=1e-4)
    assert metrics["waist_max_tracking_error_deg"]["value"] == pytest.approx(
        math.hypot(0.001, 0.001), abs=1e-4)


def test_comparison_ratio_has_the_issue_target() -> None:
    """The CoP ratio is with / without RMC, with target 0.25, lower better."""
    out = comparison_metrics({"cop_peak_shift_mm": metric(20.0, "mm")},
                             {"cop_peak_shift_mm": metric(100.0, "mm")})
    assert out["cop_peak_shift_ratio"] == {"value": 0.2, "unit": "", "target": 0.25,
                                           "better": "lower"}
    assert out["cop_peak_shift_mm_no_rmc"]["value"] == 100.0


def test_summary_table_marks_a_missed_target() -> None:
    """A row whose value misses its target is marked, with the verdict per run."""
    table = summary_table({"a": {"holds": metric(0, "", target=0, better="lower")},
                           "b": {"holds": metric(3, "", target=0, better="lower")}})
    assert "<tr class=\"fail\"><td>holds</td><td>0</td><td>3</td><td></td><td>&le; 0</td>" \
           "<td>yes / no</td></tr>" in table


def test_page_links_plots_relative_to_its_folder(tmp_path: Path) -> None:
    """index.html shows each plot and links each file by its path relative to the folder."""
    (tmp_path / "plot.png").write_bytes(b"")
    (tmp_path / "bag").mkdir()
    page = write_page(tmp_path, title="t", columns={"run": {"x": metric(1.0, "mm")}},
                      plots=[tmp_path / "plot.png"], links={"the bag": tmp_path / "bag"})
    text = page.read_text()
    assert "<img src='plot.png'" in text and "<a href='bag'>the bag</a>" in text


def test_faults_of_the_start_up_only_are_not_counted() -> None:
    """A fault last reported before the first job input is left out; one still reported after counts."""
    t = np.arange(0.0, 2.0, 0.01)
    run = RecordedRun("x", cop=_points(t, 0 * t, 0 * t), job=Series(t + 0.5, (t > 1.0)[:, None] * 1.0),
                      faults={"zmp: no data yet": 0.2, "waist: FAULT": 1.7})
    assert run.faults_from(run.scenario_start) == ["waist: FAULT"]
    assert run_metrics(run, start=1.0)["faults_seen"]["value"] == 1


def _bent_knees_run(model: Any) -> RecordedRun:
    """A run whose one joint state bends the left knee and ankle (the left sole tilts and moves)."""
    names = tuple(n for n in model.model.names[1:])
    q = np.zeros((1, len(names)))
    q[0, names.index("left_knee")] = 0.4
    q[0, names.index("left_ankle_pitch")] = -0.1
    return RecordedRun("x", joint_names=names, joints_q=Series(np.array([0.0]), q))


def test_sole_outlines_are_the_hulls_of_the_contact_frames_in_the_world() -> None:
    """Each foot's outline is the hull of its four FSR pads (config/zmp.yaml's contact frames)
    where the recorded joint state puts them, as the URDF's frames give them directly."""
    from humanoid_balance.core.model import RobotModel
    from humanoid_balance.core.support import convex_hull
    from humanoid_balance.recorded_run import sole_outlines
    from humanoid_balance.resources import urdf_path

    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    run = _bent_knees_run(model)
    q = model.configuration(dict(zip(run.joint_names, run.joints_q.values[0], strict=True)))
    outlines = sole_outlines(run, model, at=0.0)
    for side in ("left", "right"):
        pads = np.array([model.frame_transform(f"{side}_fsr_{i}", q)[:2, 3] for i in range(4)])
        np.testing.assert_allclose(outlines[side], convex_hull(pads), atol=1e-12)


def test_sole_outlines_take_another_foot_layout() -> None:
    """A layout with three contact frames per foot gives three-cornered outlines."""
    from humanoid_balance.core.foot_layout import FootLayout
    from humanoid_balance.core.model import RobotModel
    from humanoid_balance.recorded_run import sole_outlines
    from humanoid_balance.resources import urdf_path

    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    seed = FootLayout.seed()
    three = FootLayout(seed.sole_frames, {s: f[:3] for s, f in seed.contact_frames.items()},
                       seed.fsr_frames)
    outlines = sole_outlines(_bent_knees_run(model), model, at=0.0, layout=three)
    assert {side: len(o) for side, o in outlines.items()} == {"left": 3, "right": 3}
