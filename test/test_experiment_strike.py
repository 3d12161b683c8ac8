"""`humanoid-balance experiment strike` options: validated values, one-line errors."""

from __future__ import annotations

import pytest

from humanoid_balance.cli import main
from humanoid_balance.exceptions import ConfigurationError
from humanoid_balance.experiments.strike import strike_settings


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--speed", "fast", "--speed fast: expected a finite number > 0 [m/s], e.g. --speed 1.8"),
    ("--speed", "-1", "--speed -1: expected a finite number > 0 [m/s], e.g. --speed 1.8"),
    ("--job-arm", "middle", "--job-arm middle: expected right or left"),
    ("--selection", "Lx,Qz", "--selection Lx,Qz: expected comma-separated rows of "
                             "Px,Py,Pz,Lx,Ly,Lz without repeats, e.g. --selection Lx,Ly"),
    ("--selection", "Lx,Lx", "--selection Lx,Lx: expected comma-separated rows"),
])
def test_a_bad_option_is_one_line_naming_it(option: str, value: str, message: str, tmp_path: object,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A bad --speed, --job-arm or --selection exits 2 with one stderr line naming the fix."""
    status = main(["experiment", "strike", "--out", f"{tmp_path}/out", option, value])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert status == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"humanoid-balance experiment strike: {message}"), lines[0]


def test_settings_take_the_given_values_in_row_order() -> None:
    """--speed 1.5 --job-arm left --selection Lz,Lx gives 1.5 m/s, left, rows (Lx, Lz)."""
    settings = strike_settings(speed="1.5", job_arm="left", selection="Lz,Lx")
    assert (settings.speed_m_s, settings.job_arm, settings.selection) == (1.5, "left", ("Lx", "Lz"))


def test_settings_refuse_a_non_finite_rate() -> None:
    """--rate inf is refused with the option named."""
    with pytest.raises(ConfigurationError, match=r"^--rate inf: expected a finite number > 0"):
        strike_settings(rate_hz="inf")
