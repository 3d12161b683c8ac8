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


def test_first_limit_names_the_joint_and_the_bound_it_meets() -> None:
    """At 1.8 m/s no limit changes a command (None); at 2.6 m/s the first limited cycle is in
    the return and names the job wrist pitch at its acceleration limit: checked against the
    commands themselves (its velocity change in that cycle is its limit times dt, to 1e-6) and
    against what the sweep reports."""
    import numpy as np

    from humanoid_balance.core.joint_limits import arm_acceleration_limit
    from humanoid_balance.core.model import RobotModel
    from humanoid_balance.core.rmc import PAPER_SELECTION
    from humanoid_balance.core.strike_trajectory import StrikeTrajectory
    from humanoid_balance.experiments.strike_model import first_limit, run_model
    from humanoid_balance.resources import urdf_path

    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    rate = 500.0
    found = {}
    for speed in (1.8, 2.6):
        run = run_model(model, None, speed=speed, selection=PAPER_SELECTION, balance=True,
                        rate_hz=rate, extra=0.1)
        found[speed] = (run, first_limit(run, StrikeTrajectory(model, target_speed=speed), rate))
    assert found[1.8][1] is None
    run, limit = found[2.6]
    assert limit is not None and limit.phase == "return"
    k = int(np.argmax(~(run.job_exact & run.balance_exact)))
    assert limit.t_s == float(run.times_s[k])
    wrist = next(j for j in limit.joints if j.joint == "right_wrist_pitch")
    assert (wrist.arm, wrist.kind) == ("job", "acceleration")
    i = run.names.index("right_wrist_pitch")
    change = abs(run.velocity_rad_s[k, i] - run.velocity_rad_s[k - 1, i])
    assert change == pytest.approx(arm_acceleration_limit("right_wrist_pitch") / rate, rel=1e-6)
    assert all(j.arm == ("job" if run.names.index(j.joint) < 7 else "aux") for j in limit.joints)
    assert limit.describe().startswith(f"{limit.t_s:.3f} s return: job right_wrist_pitch "
                                       "acceleration")
