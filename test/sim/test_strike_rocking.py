"""``tools/strike_rocking.py``: the strike's leftover ZMP shift is the base rocking, unseen by joints.

The README's "Why the strike's ratio stays at 0.15" quotes this tool; the test runs it as a
user does and checks what the README draws from it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import mujoco
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
    pitches by more than 0.3 mrad, and the peak is the experiment's (about 16 mm). By bodies
    (``--bodies``): the upper body (torso and the arms it carries) holds over four times the
    pelvis's and legs' momentum."""
    done = subprocess.run([sys.executable, str(TOOL), "--until", "0.1", "--bodies"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()
            if re.match(r"\s*0\.\d{3} to_ready", line)]
    assert len(rows) == 5 and all(len(row) == 12 for row in rows), done.stdout
    peak = re.search(r"settled 0.5 s: peak ZMP shift (\S+) mm", done.stdout)
    assert peak is not None, done.stdout
    summary = re.search(r"largest \|joints' Lx, Ly\| (\S+) N m s, largest \|whole-body Lx, Ly\| "
                        r"(\S+) N m s; base pitch (\S+) to (\S+) mrad", done.stdout)
    assert summary is not None, done.stdout
    joints, whole, low, high = (float(v) for v in summary.groups())
    assert 10.0 < float(peak.group(1)) < 25.0
    assert whole > 2.0 * joints, done.stdout
    assert high - low > 0.3, done.stdout
    bodies = re.search(r"by bodies: arms (\S+), torso (\S+), pelvis (\S+), legs (\S+) N m s",
                       done.stdout)
    assert bodies is not None, done.stdout
    arms, torso, pelvis, legs = (float(v) for v in bodies.groups())
    assert arms + torso > 4.0 * (pelvis + legs), done.stdout


def _bodies_about_w(sim: Any, w: np.ndarray) -> dict[str, np.ndarray]:
    """Independently of the tool's subtrees: each body's own momentum about W (its velocity at
    its centre of mass, ``mj_objectVelocity``), summed by the group its name says."""
    m, d = sim.model, sim.data
    out = {group: np.zeros(3) for group in strike_rocking.GROUP_NAMES}
    for body in range(1, m.nbody):
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, body)
        v = np.zeros(6)
        mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, body, v, 0)
        r = d.ximat[body].reshape(3, 3)
        inertia = r @ np.diag(m.body_inertia[body]) @ r.T
        angular = inertia @ v[:3] + m.body_mass[body] * np.cross(d.xipos[body] - w, v[3:])
        group = ("arms" if re.search(r"shoulder|arm|forearm|wrist|hand", name) else
                 "legs" if re.search(r"hip|thigh|shank|ankle|foot|sole|fsr", name) else
                 "pelvis" if name == "pelvis" else "torso")
        out[group] += angular
    return out


def test_the_bodies_momenta_are_each_bodys_own_summed() -> None:
    """The tool's split by subtrees equals every body's own momentum summed by group (every
    50th step of the strike), and the groups add up to MuJoCo's whole-body Lx, Ly."""
    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    observer = strike_rocking.Observer()
    checks: list[tuple[np.ndarray, np.ndarray]] = []

    def observe(sim: Any) -> None:
        observer(sim)
        if len(observer.rows) % 50 == 1:
            assert observer.w is not None
            bodies = _bodies_about_w(sim, observer.w)
            checks.append((observer.by_body[-1],
                           np.array([bodies[g][:2] for g in strike_rocking.GROUP_NAMES])))

    run_sim(model, speed=None, selection=PAPER_SELECTION, balance=True, rate_hz=500.0,
            extra=0.0, observer=observe)
    assert len(checks) > 20
    for split, independent in checks:
        assert split == pytest.approx(independent, abs=1e-9)
    whole = np.array(observer.rows)[:, 2:]
    assert np.array(observer.by_body).sum(axis=1) == pytest.approx(whole, abs=1e-12)
    assert max(np.abs(split[0]).max() for split, _ in checks) > 0.05  # the arms' share is there


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
