"""End-to-end: ``humanoid-balance experiment waist`` (seed 003's tracking test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from humanoid_balance.cli import main


@pytest.mark.slow
def test_experiment_writes_metrics_within_target(tmp_path: Path) -> None:
    """The experiment refuses the -12 deg start and tracks the in-range path within 0.1 deg."""
    assert main(["experiment", "waist", "--out", str(tmp_path), "--no-plots"]) == 0
    metrics = json.loads((tmp_path / "waist_tracking.json").read_text())["metrics"]
    assert metrics["out_of_range_command_refused"]["value"] is True
    assert metrics["max_tracking_error_deg"]["value"] <= 0.05
    assert metrics["bus_load_pct"]["value"] <= 50.0
    assert metrics["stop_overshoot_deg"]["value"] <= 0.02
    assert metrics["edge_overshoot_deg"]["value"] <= 0.02
    assert metrics["stops_max_shaped_error_deg"]["value"] <= 0.05
    # issue 32: the figure is against the command; the shaped reference's beside it
    assert metrics["max_shaped_tracking_error_deg"]["value"] <= 0.05
    assert 0.0 < metrics["catch_up_s"]["value"] <= 0.3 and metrics["end_lag_s"]["value"] == 0.0
    # the stop-and-clamp command stops dead at its corners: no waist within the limits
    # follows that to 0.05 deg, and the figure says so rather than hiding it
    assert metrics["stops_max_command_error_deg"]["value"] > 0.5


@pytest.mark.slow
def test_the_readme_moving_start_path_is_followed_on_its_times(tmp_path: Path) -> None:
    """Issue 32's path (docs/paths/moving_start_10ms.csv: 10 ms points, the first segment
    moving while the waist stands still): caught up within 0.3 s, then within 0.05 deg of the
    command on its own times (before: 78.5 ms late for good, 0.194 deg); the plot and a
    random-draw table are written."""
    csv = Path(__file__).resolve().parents[2] / "docs" / "paths" / "moving_start_10ms.csv"
    assert main(["experiment", "waist", "--out", str(tmp_path), "--trajectory", str(csv),
                 "--random", "2"]) == 0
    metrics = json.loads((tmp_path / "waist_tracking.json").read_text())["metrics"]
    assert metrics["catch_up_s"]["value"] <= 0.3
    assert metrics["max_tracking_error_deg"]["value"] <= 0.05
    drawn = json.loads((tmp_path / "waist_random.json").read_text())["metrics"]
    assert drawn["random_draws"]["value"] == 2
    assert drawn["random_max_tracking_error_deg"]["value"] <= 0.05
    for name in ("waist_angles.png", "waist_tracking_error.png", "waist_random_worst.png"):
        assert (tmp_path / name).stat().st_size > 10_000


@pytest.mark.slow
def test_stops_and_a_clamped_edge_without_overshoot() -> None:
    """Issue 14: past a stop and past the clamped 45 deg edge <= 0.02 deg; shaped path within 0.05 deg.

    Measured (seed 3): 0.0021 deg at the stop, 0.0017 deg past the edge, 0.025 deg against
    the shaped reference; before the reference shaping 0.15 deg past the edge.
    """
    from humanoid_balance.experiments.waist import run_stops_and_clamp

    run = run_stops_and_clamp(channel="test_stops_and_clamp")
    assert run.clamped_message.startswith("clamped: point 0 pitch 50.000 deg")
    assert run.stop_overshoot_deg <= 0.02 and run.edge_overshoot_deg <= 0.02
    assert run.max_tracking_error_deg <= 0.05 and run.final_error_deg <= 0.02


@pytest.mark.slow
def test_another_trajectory_gears_and_clamp_within_target(tmp_path: Path) -> None:
    """--trajectory (corners, other angles), --gear-ratios 80,120, --limit-policy clamp: the
    servo within 0.1 deg of the shaped reference, and the command followed within its corners'
    rounding plus 0.05 deg."""
    path = tmp_path / "path.csv"
    path.write_text("t_s,pitch_deg,roll_deg\n0,10,2\n1.5,14,-3\n3,18,-3\n4,12,1\n")
    out = tmp_path / "out"
    assert main(["experiment", "waist", "--out", str(out), "--no-plots", "--trajectory",
                 str(path), "--gear-ratios", "80,120", "--limit-policy", "clamp"]) == 0
    doc = json.loads((out / "waist_tracking.json").read_text())
    assert "--gear-ratios 80,120 --limit-policy clamp" in doc["command"]
    # this path turns by 8.67 deg/s in pitch at 3 s: any motion within 30 deg/s^2 rounds that
    # corner, the centred blend by dv tau / 8 = 8.67 * (8.67 / 30) / 8 = 0.313 deg, so the
    # error against the command is that rounding plus the servo's; against the shaped
    # reference it is the servo's alone
    rounding = 8.0 / 3.0 + 6.0
    rounding = rounding * (rounding / 30.0) / 8.0
    assert doc["metrics"]["max_tracking_error_deg"]["value"] <= rounding + 0.05
    assert doc["metrics"]["max_shaped_tracking_error_deg"]["value"] <= 0.1
    # the paper's -12 deg start is clamped (not refused) under this policy
    assert doc["metrics"]["out_of_range_command_refused"]["value"] is False


@pytest.mark.parametrize(("args", "message"), [
    (["--gear-ratios", "100"], "--gear-ratios: expected two finite ratios > 0 as P,R (e.g. "
                               "100,100), got '100'"),
    (["--gear-ratios", "nan,100"], "--gear-ratios: expected two finite ratios > 0 as P,R (e.g. "
                                   "100,100), got 'nan,100'"),
    (["--limit-policy", "ignore"], "--limit-policy: expected refuse or clamp, got 'ignore'"),
])
def test_bad_options_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    args: list[str], message: str) -> None:
    """A bad --gear-ratios or --limit-policy: exit 2 and one line saying what is expected."""
    assert main(["experiment", "waist", "--out", str(tmp_path), "--no-plots", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"humanoid-balance experiment waist: {message}"]


@pytest.mark.parametrize(("content", "message"), [
    ("t_s,pitch_deg,roll_deg\n0,1,2\n", "expected a header line and at least two rows "
                                         "t_s,pitch_deg,roll_deg, got 1 rows"),
    ("t_s,pitch_deg,roll_deg\n0,1,2\n1,x,2\n", "line 3: expected three finite numbers "
                                                 "t_s,pitch_deg,roll_deg, got '1,x,2'"),
    ("t_s,pitch_deg,roll_deg\n0,1,2\n0,2,2\n", "times must start at 0 and increase strictly"),
])
def test_bad_trajectory_file_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            content: str, message: str) -> None:
    """A malformed --trajectory CSV: exit 2 and one line naming the file and the problem."""
    path = tmp_path / "bad.csv"
    path.write_text(content)
    assert main(["experiment", "waist", "--out", str(tmp_path), "--no-plots", "--trajectory",
                 str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(message) and str(path) in err[0], err


def test_trajectory_outside_the_range_refused_in_one_line(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A --trajectory beyond the joint range under refuse: exit 2, the controller's reason."""
    path = tmp_path / "far.csv"
    path.write_text("t_s,pitch_deg,roll_deg\n0,0,0\n1,60,0\n")
    assert main(["experiment", "waist", "--out", str(tmp_path), "--no-plots", "--trajectory",
                 str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "refused: point 1 pitch 60.000 deg is outside" in err[0], err
