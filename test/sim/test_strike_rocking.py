"""``tools/strike_rocking.py``: the strike's leftover ZMP shift is the base rocking, unseen by joints.

The README's "Why the strike's ratio stays at 0.15" quotes this tool; the test runs it as a
user does and checks what the README draws from it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.rmc import PAPER_SELECTION
from humanoid_balance.experiments.strike import run_sim
from humanoid_balance.resources import urdf_path
from humanoid_balance.sim.humanoid import DEFAULT_GAINS

TOOL = Path(__file__).resolve().parents[2] / "tools" / "strike_rocking.py"
sys.path.insert(0, str(TOOL.parent))

import strike_rocking  # noqa: E402  (the tool: tools/ is not a package)


def test_run_sim_calls_its_observer_after_every_physics_step() -> None:
    """One call per recorded step, each at the time the run records (simulation time)."""
    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    times: list[float] = []
    run = run_sim(model, speed=None, selection=PAPER_SELECTION, balance=True, rate_hz=500.0,
                  extra=0.0, observer=lambda sim: times.append(sim.time))
    assert np.array(times) == pytest.approx(run.times_s, abs=1e-12)


def test_in_the_wait_the_whole_body_swings_more_than_the_joints_carry() -> None:
    """The tool's summary: the whole-body Lx, Ly in the wait are over twice the joints', the base
    pitches by more than 0.3 mrad, and the peak is the experiment's (about 16 mm)."""
    done = subprocess.run([sys.executable, str(TOOL), "--until", "0.1"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if re.match(r"\s*0\.\d{3} to_ready", line)]
    assert len(rows) == 5, done.stdout
    peak = re.search(r"settled 0.5 s: peak ZMP shift (\S+) mm", done.stdout)
    assert peak is not None, done.stdout
    summary = re.search(r"largest \|joints' Lx, Ly\| (\S+) N m s, largest \|whole-body Lx, Ly\| "
                        r"(\S+) N m s; base pitch (\S+) to (\S+) mrad", done.stdout)
    assert summary is not None, done.stdout
    joints, whole, low, high = (float(v) for v in summary.groups())
    assert 10.0 < float(peak.group(1)) < 25.0
    assert whole > 2.0 * joints, done.stdout
    assert high - low > 0.3, done.stdout


def test_on_a_stiff_plant_the_same_controller_keeps_the_ratio_under_a_tenth() -> None:
    """``--plants``: the controller unchanged, a robot with stiff sole contacts (0.002 s) and
    legs' and waist's servos ten times as stiff takes the peak to under 0.10 of the run
    without RMC (the README: 6.51 / 104.56 mm), where the default robot's is about 0.15."""
    done = subprocess.run([sys.executable, str(TOOL), "--plants", "default", "stiff"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    ratios = dict(re.findall(r"^(default|stiff) .* (\d\.\d{4})$", done.stdout, re.MULTILINE))
    assert set(ratios) == {"default", "stiff"}, done.stdout
    assert 0.12 < float(ratios["default"]) < 0.18, done.stdout
    assert float(ratios["stiff"]) <= 0.10, done.stdout


def test_plant_options_scale_only_the_named_servos_and_set_the_contact() -> None:
    options = strike_rocking.plant_options("contact+waist")
    assert options["contact_timeconst"] == 0.002
    for (prefix, new), (_, old) in zip(options["gains"], DEFAULT_GAINS, strict=True):
        factor = 10.0 if prefix == "waist_" else 1.0
        assert (new.kp, new.kv, new.armature) == (old.kp * factor, old.kv * factor, old.armature)
