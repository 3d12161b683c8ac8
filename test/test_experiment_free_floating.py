"""`humanoid-balance experiment free-floating`: the seed-002 figures against the issue's targets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from humanoid_balance.cli import main
from humanoid_balance.exceptions import ConfigurationError


@pytest.fixture(scope="module")
def experiment(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path, dict[str, Any]]:
    """Run the command once (paper's 10 s at 10 ms, singularity drive, plots) into a tmp dir."""
    out = tmp_path_factory.mktemp("free_floating")
    code = main(["experiment", "free-floating", "--out", str(out)])
    doc = json.loads((out / "free_floating.json").read_text())
    return code, out, doc["metrics"]


@pytest.mark.slow
def test_command_succeeds(experiment: tuple[int, Path, dict[str, Any]]) -> None:
    """The command exits 0 (it exits 1 when a target is missed)."""
    assert experiment[0] == 0


@pytest.mark.slow
def test_json_has_the_metric_names_of_results_md(
        experiment: tuple[int, Path, dict[str, Any]]) -> None:
    """free_floating.json holds hand_velocity_error_max, com_drift_max_m, singularity_detected."""
    assert {"hand_velocity_error_max", "com_drift_max_m", "singularity_detected"} <= set(
        experiment[2])


@pytest.mark.slow
def test_hand_velocity_is_tracked_within_1e_6(
        experiment: tuple[int, Path, dict[str, Any]]) -> None:
    """The hands' velocity over every step is the command [0.02, 0.03, 0, 0] m/s within 1e-6 m/s."""
    entry = experiment[2]["hand_velocity_error_max"]
    assert (entry["target"], entry["value"] < 1e-6) == (1e-6, True)


@pytest.mark.slow
def test_system_com_drift_is_below_1e_9(experiment: tuple[int, Path, dict[str, Any]]) -> None:
    """The system's centre of mass moves less than 1e-9 m over the 10 s."""
    entry = experiment[2]["com_drift_max_m"]
    assert (entry["target"], entry["value"] < 1e-9) == (1e-9, True)


@pytest.mark.slow
def test_momentum_stays_zero(experiment: tuple[int, Path, dict[str, Any]]) -> None:
    """Pinocchio's centroidal momentum of the RMRC velocity stays below 1e-12 all along."""
    assert experiment[2]["momentum_max_abs"]["value"] < 1e-12


@pytest.mark.slow
def test_base_drifts_while_the_hands_move(experiment: tuple[int, Path, dict[str, Any]]) -> None:
    """The base turns (> 1 deg) and its CoM moves (> 1 cm), as in the paper's Figs. 3-4."""
    metrics = experiment[2]
    assert (abs(metrics["base_attitude_change_deg_max_abs"]["value"]) > 1.0,
            metrics["base_com_drift_m_max"]["value"] > 0.01) == (True, True)


@pytest.mark.slow
def test_mujoco_base_attitude_agrees(experiment: tuple[int, Path, dict[str, Any]]) -> None:
    """MuJoCo, fed the same joint trajectory, turns the base as predicted within 0.02 deg."""
    assert experiment[2]["mujoco_base_attitude_diff_deg_max"]["value"] < 0.02


@pytest.mark.slow
def test_mujoco_base_position_agrees(experiment: tuple[int, Path, dict[str, Any]]) -> None:
    """MuJoCo, fed the same joint trajectory, moves the base CoM as predicted within 0.1 mm."""
    assert experiment[2]["mujoco_base_position_diff_m_max"]["value"] < 1e-4


@pytest.mark.slow
def test_singularity_is_detected_within_the_joint_limits(
        experiment: tuple[int, Path, dict[str, Any]]) -> None:
    """The drive into a dynamic singularity is stopped with sigma_min under the threshold."""
    metrics = experiment[2]
    assert (metrics["singularity_detected"]["value"],
            metrics["singularity_sigma_min"]["value"] < 1e-3,
            metrics["singularity_joint_limits_respected"]["value"]) == (True, True, True)


@pytest.mark.slow
def test_plots_are_written(experiment: tuple[int, Path, dict[str, Any]]) -> None:
    """The PNGs of the motion, base attitude (Fig. 3), base CoM (Fig. 4) and singularity exist."""
    out = experiment[1]
    names = ["fig2_motion.png", "fig3_base_attitude.png", "fig4_base_com.png", "checks.png",
             "singularity.png"]
    assert [(out / n).stat().st_size > 1000 for n in names] == [True] * len(names)


def test_bad_step_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--dt 0 is refused before any work: exit 2, one stderr line saying what is expected."""
    assert main(["experiment", "free-floating", "--out", str(tmp_path), "--dt", "0"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "humanoid-balance experiment free-floating: --dt 0.0 and --duration 10.0: "
        "expected 0 < dt <= duration, in s"]


def test_settings_refuse_a_step_longer_than_the_duration() -> None:
    """FreeFloatingSettings raises a ConfigurationError for dt > duration."""
    from humanoid_balance.experiments.free_floating import FreeFloatingSettings

    with pytest.raises(ConfigurationError, match=r"^dt_s=2.0 and duration_s=1.0: expected 0 < dt "
                                                 r"<= duration, in s$"):
        FreeFloatingSettings(dt_s=2.0, duration_s=1.0)


def test_threshold_defaults_are_the_gjm_defaults() -> None:
    """--min-singular-value and --max-condition-number default to gjm's DEFAULT_* thresholds."""
    from humanoid_balance.cli import build_parser
    from humanoid_balance.core.gjm import DEFAULT_MAX_CONDITION_NUMBER, DEFAULT_MIN_SINGULAR_VALUE

    args = build_parser().parse_args(["experiment", "free-floating"])
    assert (args.min_singular_value, args.max_condition_number) == (
        DEFAULT_MIN_SINGULAR_VALUE, DEFAULT_MAX_CONDITION_NUMBER)
