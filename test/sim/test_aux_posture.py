"""The aux arm's ready-posture search: its box, its trials in MuJoCo, its command."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from humanoid_balance.cli import build_parser
from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.rmc import AUX_READY_POSTURE, PAPER_SELECTION
from humanoid_balance.exceptions import ConfigurationError
from humanoid_balance.experiments import strike_sim
from humanoid_balance.experiments.aux_posture import (
    MIN_TRIALS,
    PENALTY_MM_PER_UNIT,
    arm_clearance_m,
    controller_checks,
    search,
    search_box,
    segment_distance,
    trial,
)
from humanoid_balance.experiments.strike import run_model, run_sim, zmp_shift
from humanoid_balance.resources import urdf_path


@pytest.fixture(scope="module")
def model() -> RobotModel:
    return RobotModel(urdf_path("humanoid"), world_frame="W")


def test_the_box_is_the_aux_arms_limits_mirrored_less_the_margin(model: RobotModel) -> None:
    """Right-arm signs: the left arm's mirrored joints' limits flip; the right arm's do not."""
    lo, hi = search_box(model, "right", margin_deg=10.0)  # the aux arm is the left one
    lower, upper = np.rad2deg(model.position_limits(["left_shoulder_roll", "left_elbow"]))
    assert lo[1] == pytest.approx(-upper[0] + 10.0) and hi[1] == pytest.approx(-lower[0] - 10.0)
    assert lo[3] == pytest.approx(lower[1] + 10.0) and hi[3] == pytest.approx(upper[1] - 10.0)
    lo_r, hi_r = search_box(model, "left", margin_deg=10.0)  # the right arm: as it is
    lower_r, upper_r = np.rad2deg(model.position_limits(["right_shoulder_roll"]))
    assert lo_r[1] == pytest.approx(lower_r[0] + 10.0) and hi_r[1] == pytest.approx(upper_r[0] - 10.0)
    with pytest.raises(ConfigurationError, match="margin"):
        search_box(model, "right", margin_deg=200.0)


def test_the_package_posture_lies_inside_the_box(model: RobotModel) -> None:
    lo, hi = search_box(model)
    posture = np.rad2deg(AUX_READY_POSTURE)
    assert np.all(lo <= posture) and np.all(posture <= hi), (lo, posture, hi)


def test_segment_distance_is_the_sampled_least_distance() -> None:
    """Against a fine sampling of both segments, on random segments and on the special cases
    (parallel, crossing, a point)."""
    rng = np.random.default_rng(7)
    s = np.linspace(0.0, 1.0, 401)[:, None]
    cases = [tuple(rng.normal(size=(4, 3))) for _ in range(40)]
    cases += [(np.zeros(3), np.array([1.0, 0, 0]), np.array([0, 1.0, 0]), np.array([1.0, 1, 0])),
              (np.zeros(3), np.array([1.0, 0, 0]), np.array([0.5, -1, 0]), np.array([0.5, 1, 0])),
              (np.zeros(3), np.zeros(3), np.array([0, 2.0, 0]), np.array([1.0, 2, 0]))]
    for p0, p1, q0, q1 in cases:
        a, b = p0 + s * (p1 - p0), q0 + s * (q1 - q0)
        sampled = np.min(np.linalg.norm(a[:, None] - b[None], axis=2))
        exact = segment_distance(p0, p1, q0, q1)
        assert exact <= sampled + 1e-12 and sampled - exact < 5e-3 * (1 + sampled), (exact, sampled)


def test_segment_distance_is_coals_capsule_distance() -> None:
    """An independent computation: coal's distance between zero-radius capsules on the
    segments (built along each segment's own z axis)."""
    import coal

    def capsule(p0: np.ndarray, p1: np.ndarray) -> tuple[object, object]:
        axis = p1 - p0
        z = axis / np.linalg.norm(axis)
        x = np.cross([1.0, 0.0, 0.0] if abs(z[0]) < 0.9 else [0.0, 1.0, 0.0], z)
        x /= np.linalg.norm(x)
        rotation = np.column_stack([x, np.cross(z, x), z])
        return (coal.Capsule(0.0, float(np.linalg.norm(axis))),
                coal.Transform3s(rotation, (p0 + p1) / 2.0))

    rng = np.random.default_rng(11)
    for p0, p1, q0, q1 in (rng.normal(size=(4, 3)) * 0.2 for _ in range(200)):
        (a, ta), (b, tb) = capsule(p0, p1), capsule(q0, q1)
        expected = coal.distance(a, ta, b, tb, coal.DistanceRequest(), coal.DistanceResult())
        assert segment_distance(p0, p1, q0, q1) == pytest.approx(expected, abs=1e-12)


def test_the_arm_clearance_is_the_arms_least_distance(model: RobotModel) -> None:
    """Standing, the arms' centre lines are about the shoulders' distance apart; in the strike
    the hands come closer (the job hand crosses in front of the chest)."""
    run = run_model(model, None, speed=None, selection=PAPER_SELECTION, balance=True, rate_hz=500.0)
    q = model.configuration(dict(zip(run.names, run.position_rad[0], strict=True)))
    shoulders = np.linalg.norm(model.frame_transform("left_shoulder_pitch", q)[:3, 3]
                               - model.frame_transform("right_shoulder_pitch", q)[:3, 3])
    clearance = arm_clearance_m(model, run)
    assert 0.02 < clearance < shoulders, (clearance, shoulders)


#: the ready posture the package had before the search (hand-picked, commit d7f540d) [deg]
HAND_PICKED_DEG = (-36.0, 7.0, 63.0, 89.0, -49.0, 58.0, 11.0)


def test_the_package_posture_holds_the_rows_and_keeps_the_arms_apart(model: RobotModel) -> None:
    """The default keeps the held rows exact in the strikes driven by joint velocities and by
    the hand twist, at the paper's speed and at 2.5 m/s, with the arms no closer than from
    the hand-picked posture before it."""
    clearance, inexact = controller_checks(model, np.rad2deg(AUX_READY_POSTURE), speeds=(None, 2.5))
    before, inexact_before = controller_checks(model, HAND_PICKED_DEG, speeds=(None, 2.5))
    assert inexact == 0 and inexact_before == 0, (inexact, inexact_before)
    assert clearance >= before, (clearance, before)


def test_a_trial_is_the_strike_experiments_run_with_that_posture(model: RobotModel) -> None:
    """``trial`` at the package's posture gives the strike experiment's default run, bit for bit."""
    default = run_sim(model, speed=None, selection=PAPER_SELECTION, balance=True, rate_hz=500.0)
    t = trial(model, np.rad2deg(AUX_READY_POSTURE))
    assert t.peak_mm == zmp_shift(default).total_m * 1e3
    assert max(t.phase_peaks_mm.values()) == pytest.approx(t.peak_mm)
    other = trial(model, np.rad2deg(AUX_READY_POSTURE) + np.array([0, 0, 0, -20.0, 0, 0, 0]))
    assert other.peak_mm != t.peak_mm  # the posture reaches the simulation


@pytest.mark.slow
def test_a_short_search_keeps_its_best_and_prices_the_feet(model: RobotModel,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The first trial is the start; the best costs no more; cost = peak + penalties beyond the
    start's slip and yaw; the ratio is over the strike without RMC. The search's bookkeeping
    is what is checked: its strikes run on MuJoCo's default physics (1 ms), a third of the
    experiment's cost."""
    monkeypatch.setattr(strike_sim, "SIM_PHYSICS", {"integrator": "implicitfast", "timestep": 0.001})
    start = [round(float(v), 3) for v in np.rad2deg(AUX_READY_POSTURE)]
    seen: list[int] = []
    result = search(model, start, speeds=(None, 2.5), max_trials=MIN_TRIALS,
                    progress=lambda n, t, b: seen.append(n))
    assert seen == list(range(1, len(result.trials) + 1)) and len(seen) >= MIN_TRIALS
    assert result.start.posture_deg == pytest.approx(start) and result.start is result.trials[0]
    assert result.best.cost <= result.start.cost and result.start.cost == result.start.peak_mm
    for t in result.trials:
        lost = max(0.0, result.start.clearance_mm - t.clearance_mm) + t.inexact_cycles
        if t.inexact_cycles and t is not result.start:  # not run in MuJoCo
            assert np.isnan(t.peak_mm)
            assert t.cost >= result.start.peak_mm + PENALTY_MM_PER_UNIT * lost - 1e-9
            continue
        over = (max(0.0, t.slip_mm - result.start.slip_mm)
                + max(0.0, t.yaw_mrad - result.start.yaw_mrad)
                + max(0.0, t.other_peaks_mm[0] - result.start.other_peaks_mm[0]) + lost)
        assert t.cost >= t.peak_mm + PENALTY_MM_PER_UNIT * over - 1e-9
    assert 0 < result.ratio(result.start) < 0.25 and 0 < result.other_ratios(result.start)[0] < 0.25


def test_a_bad_start_is_refused_before_any_strike(model: RobotModel) -> None:
    with pytest.raises(ConfigurationError, match="outside the search box"):
        search(model, [0.0, 60.0, 0.0, 30.0, 0.0, 0.0, 0.0])  # shoulder roll past the limit
    with pytest.raises(ConfigurationError, match="7 finite"):
        search(model, [0.0] * 6)
    with pytest.raises(ConfigurationError, match="max_trials"):
        search(model, np.rad2deg(AUX_READY_POSTURE), max_trials=3)


@pytest.mark.parametrize("args, message", [
    (["--start", "1,2,3"], "7 finite angles"),
    (["--start", "a,b"], "7 comma-separated"),
    (["--trials", "2"], "at least 8"),
    (["--speeds", "paper,-1"], "hand speeds > 0"),
])
def test_a_bad_option_is_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "humanoid_balance.cli", "aux-posture",
                           "--out", str(tmp_path / "o"), *args],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.slow
def test_the_command_writes_its_files(tmp_path: Path) -> None:
    out = tmp_path / "ap"
    proc = subprocess.run([sys.executable, "-m", "humanoid_balance.cli", "aux-posture",
                           "--out", str(out), "--trials", "8", "--speeds", "paper"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("trial ") >= 8  # a progress line per strike
    document = json.loads((out / "aux_posture.json").read_text())
    metrics = document["metrics"]
    again = build_parser().parse_args(shlex.split(document["command"])[1:])  # it reproduces the run
    assert (again.out, again.trials, again.speeds) == (out, 8, "paper") and again.start is not None
    assert metrics["best_zmp_peak_mm"]["value"] <= metrics["start_zmp_peak_mm"]["value"]
    rows = (out / "trials.csv").read_text().splitlines()
    assert rows[0].startswith("trial,shoulder_pitch") and len(rows) - 1 == metrics["trials"]["value"]
    assert (out / "aux_posture.png").stat().st_size > 10_000
