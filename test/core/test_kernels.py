"""The arm-balance cycle's compiled kernels against numpy references, compiled and not.

Each kernel replaced a sequence of numpy calls (humanoid_balance/core/kernels.py): the
references here are those numpy expressions (or independent ones: ``np.cross``,
``np.linalg.pinv``), and every kernel gives the same as its plain-Python form (what runs
where numba is not installed). The last tests check that ``warm_up`` compiled every
specialization a controller's cycle uses: no cycle waits for the compiler.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from humanoid_balance import cdr
from humanoid_balance.core import kernels
from humanoid_balance.core.arm_loop import MeasuredState
from humanoid_balance.core.joint_limits import JointLimits, VelocityBoxer, velocity_box
from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.rmc import RmcController, RmcInput
from humanoid_balance.core.strike_trajectory import AUX_START_DEG, StrikeTrajectory, arm_pose
from humanoid_balance.core.support import SupportPolygon
from humanoid_balance.resources import urdf_path

RNG = np.random.default_rng(7)


def forms(kernel: Callable[..., Any]) -> list[Callable[..., Any]]:
    """The kernel as called, and its plain-Python form where it is compiled."""
    return [kernel, kernel.py_func] if kernels.COMPILED else [kernel]  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def model() -> RobotModel:
    return RobotModel(urdf_path("humanoid"), world_frame="W")


def test_numba_compiles_the_kernels_here() -> None:
    # the project installs numba (requirements.txt): CI runs the compiled kernels
    assert kernels.COMPILED


@pytest.mark.parametrize("ahead", [0.0, 0.5])
def test_velocity_box_equals_the_numpy_reference_to_the_bit(ahead: float) -> None:
    n = 14
    lower, upper = -RNG.uniform(0.5, 2.0, n), RNG.uniform(0.5, 2.0, n)
    limits = JointLimits(tuple(f"j{i}" for i in range(n)), lower, upper, RNG.uniform(1.0, 6.0, n),
                         RNG.uniform(5.0, 40.0, n))
    boxer = VelocityBoxer(limits, position_margin=0.02)
    conflicts = 0
    for _ in range(300):
        # inside, near and beyond the limits; speeds that the acceleration limit cannot stop
        q = RNG.uniform(lower - 0.1, upper + 0.1)
        qd_prev = RNG.uniform(-8.0, 8.0, n)
        dt = float(RNG.choice([0.001, 0.002, 0.01]))
        ref = velocity_box(limits, q + ahead * qd_prev * dt, qd_prev, dt, position_margin=0.02)
        conflicts += int(ref.acceleration_overridden.sum())
        got = boxer(q, qd_prev, dt, ahead=ahead)
        for a, b in zip(got, ref, strict=True):
            np.testing.assert_array_equal(a, b)
        for form in forms(kernels.velocity_box):
            lo, hi, conflict, any_conflict = form(q, qd_prev, dt, ahead, boxer._upper,
                                                  boxer._lower, limits.acceleration,
                                                  limits.velocity)
            np.testing.assert_array_equal(lo, ref.lower)
            np.testing.assert_array_equal(hi, ref.upper)
            np.testing.assert_array_equal(conflict, ref.acceleration_overridden)
            assert any_conflict == bool(ref.acceleration_overridden.any())
    assert conflicts > 0  # the yielding branch was exercised


def test_arm_momentum_shifts_the_angular_rows_by_r_cross_p(model: RobotModel) -> None:
    import pinocchio as pin

    ag = pin.computeCentroidalMap(model.model, model.data,
                                  model.configuration({"right_elbow": 0.7, "left_elbow": 0.4}))
    columns = np.array([3, 7, 11, 20, 21, 29])
    r = np.array([0.03, -0.2, 0.71])
    expected = ag[:, columns].copy()
    expected[3:6] += np.cross(r, ag[0:3, columns].T).T
    for form in forms(kernels.arm_momentum):
        np.testing.assert_allclose(form(ag, columns, r), expected, rtol=0, atol=1e-14)


def test_held_rows_solve_is_the_pseudo_inverse_solution() -> None:
    for _ in range(50):
        b = RNG.normal(size=(2, 7))
        target, v = RNG.normal(size=2), RNG.normal(size=7)
        expected = v + np.linalg.pinv(b) @ (target - b @ v)
        for form in forms(kernels.held_rows_solve_2):
            solved, x = form(b, target, v, 1e-10)
            assert solved
            np.testing.assert_allclose(x, expected, rtol=0, atol=1e-12)
            np.testing.assert_allclose(b @ x, target, rtol=0, atol=1e-12)
    rank_one = np.vstack([np.ones(7), 2.0 * np.ones(7)])
    for form in forms(kernels.held_rows_solve_2):
        assert not form(rank_one, np.ones(2), np.zeros(7), 1e-10)[0]  # left to eigh


def test_held_rows_aux_builds_eq6_from_the_momentum_matrix() -> None:
    a_ref = RNG.normal(size=(6, 14))
    rows, nj = np.array([3, 4]), 7
    qd_job, v = RNG.normal(size=nj), RNG.normal(size=7)
    b, t = a_ref[rows, nj:], -(a_ref[rows, :nj] @ qd_job)
    for form in forms(kernels.held_rows_aux_2):
        solved, qd_aux, b_out, t_out = form(a_ref, rows, nj, qd_job, v, 1e-10)
        assert solved
        np.testing.assert_array_equal(b_out, b)
        np.testing.assert_allclose(t_out, t, rtol=0, atol=1e-14)
        np.testing.assert_allclose(b @ qd_aux, t, rtol=0, atol=1e-12)  # eq. 6's rows held
        np.testing.assert_allclose(qd_aux, v + np.linalg.pinv(b) @ (t - b @ v), rtol=0, atol=1e-12)


@pytest.mark.parametrize("active", [True, False])
def test_posture_velocity_equals_the_numpy_expression(active: bool) -> None:
    for _ in range(100):
        target, q, previous = RNG.normal(size=7), RNG.normal(size=7), RNG.normal(0, 0.3, 7)
        gain, speed, step = 2.0, float(RNG.uniform(0.1, 3.0)), float(RNG.uniform(0.001, 0.5))
        v = gain * (target - q) if active else np.zeros(7)
        peak = float(np.abs(v).max())
        if peak > speed:
            v = v * (speed / peak)
        expected = previous + np.clip(v - previous, -step, step)
        for form in forms(kernels.posture_velocity):
            np.testing.assert_array_equal(form(target, q, gain, speed, previous, step, active),
                                          expected)


@pytest.mark.parametrize("same", [True, False])
def test_commit_equals_the_numpy_expressions(same: bool) -> None:
    a_ref, a_w = RNG.normal(size=(6, 14)), RNG.normal(size=(6, 14))
    qd_job, qd_aux = RNG.normal(size=7), RNG.normal(size=7)
    h_prev, q_cmd, qd_prev, dt = RNG.normal(size=6), RNG.normal(size=14), RNG.normal(size=14), 0.002
    qd = np.concatenate([qd_job, qd_aux])
    h = a_ref[:, :7] @ qd_job + a_ref[:, 7:] @ qd_aux
    h_w = h if same else a_w @ qd
    for form in forms(kernels.commit):
        out = form(a_ref, a_ref if same else a_w, same, qd_job, qd_aux, h_prev, dt, q_cmd, qd_prev)
        np.testing.assert_array_equal(out[0], qd)
        for got, expected in zip(out[1:6], (a_ref[:, :7] @ qd_job, a_ref[:, 7:] @ qd_aux, h, h_w,
                                            (h_w - h_prev) / dt), strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-13)
        np.testing.assert_array_equal(out[6], q_cmd + 0.5 * (qd_prev + qd) * dt)


def test_take_positions_refuses_whole_and_renews_only_new_stamps() -> None:
    n = 5
    lower, upper = -np.ones(n), np.ones(n)
    times, stamps, q = np.full(n, np.nan), np.zeros(n, dtype=np.int64), np.zeros(n + 2)
    index = np.arange(n)
    for form in forms(kernels.take_positions):
        times[:], stamps[:], q[:] = np.nan, 0, 0.0

        def take(p: np.ndarray, now: float, stamp: int, form: Any = form) -> int:
            return int(form(p, index, index, index + 2, lower, upper, now, stamp, times, stamps,
                            q))

        bad = np.array([0.1, np.nan, 0.0, 0.0, 0.0])
        assert take(bad, 1.0, 5) == kernels.NOT_FINITE == 1
        assert take(np.array([0.1, 0.0, 1.5, 0.0, 0.0]), 1.0, 5) == kernels.BEYOND_LIMITS
        assert np.isnan(times).all() and not q.any()  # nothing written
        # a read-only view of message bytes, as the joint-state reader gives
        sample = np.frombuffer(np.array([0.1, 0.2, 0.3, 0.4, 0.5]).tobytes())
        assert take(sample, 1.0, 5) == kernels.TAKEN
        np.testing.assert_array_equal(q[2:], sample)
        assert take(sample, 2.0, 5) == 0  # the same stamp again: not a fresh measurement
        np.testing.assert_array_equal(times, np.full(n, 1.0))
        assert take(sample, 3.0, 6) == 0 and (times == 3.0).all()
        assert take(sample, 4.0, 0) == 0 and (times == 4.0).all()  # unstamped: timed on arrival


def test_time_range_counts_the_never_measured() -> None:
    times = np.array([3.0, np.nan, 1.0, 7.0, np.nan])
    for form in forms(kernels.time_range):
        assert form(times, np.array([0, 2, 3])) == (0, 1.0, 7.0)
        assert form(times, np.array([1, 3])) == (1, 7.0, 7.0)


def _signatures() -> dict[str, int]:
    return {name: len(getattr(kernels, name).signatures) for name in dir(kernels)
            if hasattr(getattr(kernels, name), "signatures")}


@pytest.mark.skipif(not kernels.COMPILED, reason="numba is not installed")
def test_no_cycle_waits_for_the_compiler(model: RobotModel) -> None:
    """After a controller is built (``VelocityBoxer`` warms the kernels up), no cycle of the
    controllers or of the measured state compiles a new specialization."""
    trajectory = StrikeTrajectory(model)
    pose = {**dict(zip(trajectory.joint_names, trajectory.initial, strict=True)),
            **arm_pose("left", AUX_START_DEG)}
    q0 = model.configuration(pose)
    polygon = SupportPolygon.from_model(model).update_at(model, model.neutral())
    controllers = [RmcController(model, support_polygon=polygon),
                   RmcController(model, support_polygon=polygon, reference_point="com"),
                   RmcController(model, support_polygon=polygon, aux_posture=None)]
    names = list(model.joint_names)
    state = MeasuredState(names, model.q_index(names), model.neutral(),
                          model.position_limits(names))
    before = _signatures()
    assert all(before.values()), before  # warmed up
    for controller in controllers:
        controller.reset(q0)
        for k, t in enumerate(np.arange(0.0, trajectory.duration, 0.01)):
            # 3x the strike's twist: the limits bite (the limited solve's arrays too)
            inputs = RmcInput(q0, job_twist=3.0 * trajectory.hand_twist(float(t), q0)) if k % 2 \
                else RmcInput(q0, job_joint_velocities=trajectory.sample(float(t)).velocity)
            controller.step(inputs, 0.002)
    # the positions as the node reads them: a view of a serialized message (read-only, unaligned)
    data = cdr.joint_state_message(10, names, model.neutral()[model.q_index(names)].tolist())
    position = cdr.JointStateReader().read(data).position
    assert not position.flags.writeable and not position.flags.aligned
    assert state.update_joints(tuple(names), position, 1.0, 10) is None
    assert _signatures() == before


def test_without_numba_the_kernels_run_as_python_with_the_same_commands() -> None:
    """A robot without numba: the same module, interpreted (numba's import blocked)."""
    script = (
        "import sys; sys.modules['numba'] = None\n"
        "import numpy as np\n"
        "from humanoid_balance.core import kernels\n"
        "assert not kernels.COMPILED\n"
        "from humanoid_balance.core.model import RobotModel\n"
        "from humanoid_balance.core.rmc import RmcController, RmcInput\n"
        "from humanoid_balance.core.strike_trajectory import StrikeTrajectory\n"
        "from humanoid_balance.resources import urdf_path\n"
        "m = RobotModel(urdf_path('humanoid'), world_frame='W')\n"
        "tr = StrikeTrajectory(m); q0 = m.configuration(dict(zip(tr.joint_names, tr.initial)))\n"
        "c = RmcController(m); c.reset(q0)\n"
        "for t in np.arange(0.0, 0.2, 0.002):\n"
        "    out = c.step(RmcInput(q0, job_joint_velocities=tr.sample(float(t)).velocity), 0.002)\n"
        "print(repr(out.position.tolist()))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=env, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    trajectory = StrikeTrajectory(model := RobotModel(urdf_path("humanoid"), world_frame="W"))
    q0 = model.configuration(dict(zip(trajectory.joint_names, trajectory.initial, strict=True)))
    controller = RmcController(model)
    controller.reset(q0)
    for t in np.arange(0.0, 0.2, 0.002):
        out = controller.step(
            RmcInput(q0, job_joint_velocities=trajectory.sample(float(t)).velocity), 0.002)
    np.testing.assert_allclose(eval(result.stdout), out.position, rtol=0, atol=1e-12)
