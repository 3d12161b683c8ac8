"""The seed-004 lunar arm in MuJoCo: gravity torque, friction, current noise, payload."""

from __future__ import annotations

import math
import re

import numpy as np
import pinocchio as pin
import pytest

from humanoid_balance.core.identification.procedure import identify
from humanoid_balance.core.identification.regressor import (
    GravityRegressor,
    lunar_arm_composite_parameters,
)
from humanoid_balance.core.identification.trajectory import MAX_SPEED_RAD_S, identification_plan
from humanoid_balance.exceptions import InvalidInputError
from humanoid_balance.resources import urdf_path
from humanoid_balance.sim.lunar_arm import (
    MOON_GRAVITY,
    PAYLOAD_OFFSET,
    PAYLOAD_RADIUS,
    TABLE6_NOISE_RATIO,
    LunarArmSim,
    lunar_arm_model,
    peak_gravity_torque,
    run_path,
    run_sweep,
)

Q = np.radians([10.0, 30.0, 20.0, 60.0, 40.0, 30.0])
QUIET = (0.0,) * 6


def _regressor(gravity: float = 9.81) -> GravityRegressor:
    return GravityRegressor(pin.buildModelFromUrdf(str(urdf_path("lunar_arm"))), gravity)


def _hold(sim: LunarArmSim, q: np.ndarray) -> None:
    sim.reset(dict(zip(sim.joint_names, q, strict=True)))
    sim.settle(1.0)


def test_static_torque_is_gravity() -> None:
    """Holding still without friction or noise, the measured torque is pinocchio's G(q)."""
    sim = LunarArmSim(torque_noise_ratio=QUIET)
    _hold(sim, Q)
    state = sim.joint_state()
    assert state.effort == pytest.approx(_regressor().gravity_torques(state.position), abs=1e-6)


def test_moon_gravity_scales_torque() -> None:
    """At Moon gravity (9.81 / 6) the static torque is the Moon's G(q)."""
    sim = LunarArmSim(gravity=9.81 / 6, torque_noise_ratio=QUIET)
    _hold(sim, Q)
    state = sim.joint_state()
    expected = _regressor(9.81 / 6).gravity_torques(state.position)
    assert state.effort == pytest.approx(expected, abs=1e-6)


def test_payload_adds_0_3_kg() -> None:
    """The payload option adds 0.3 kg to the model."""
    assert LunarArmSim(payload=0.3).total_mass - LunarArmSim().total_mass == pytest.approx(0.3)


def test_payload_static_torque_is_the_true_models() -> None:
    """With the 0.3 kg payload on the Moon, the static torque is lunar_arm_model's G(q)."""
    sim = LunarArmSim(gravity=MOON_GRAVITY, payload=0.3, torque_noise_ratio=QUIET)
    _hold(sim, Q)
    state = sim.joint_state()
    model = lunar_arm_model(MOON_GRAVITY, 0.3)
    expected = pin.computeGeneralizedGravity(model, model.createData(), state.position)
    assert state.effort == pytest.approx(expected, abs=1e-6)


def test_payload_is_the_same_sphere_in_mujoco_and_pinocchio() -> None:
    """The simulated payload body and the true model's link 6 gain the same mass, CoM and inertia."""
    sim = LunarArmSim(payload=0.3)
    body = sim.model.body("payload")
    assert (body.mass[0], body.pos.tolist()) == (0.3, list(PAYLOAD_OFFSET))
    sphere = 2.0 / 5.0 * 0.3 * PAYLOAD_RADIUS**2  # solid sphere about its centre
    assert body.inertia == pytest.approx([sphere] * 3, rel=1e-12)
    added = lunar_arm_model(payload=0.3).inertias[6].toDynamicParameters() \
        - lunar_arm_model().inertias[6].toDynamicParameters()
    assert added[:4] == pytest.approx([0.3, 0.0, 0.3 * PAYLOAD_OFFSET[1], 0.0], abs=1e-15)


def test_peak_gravity_torque_is_cached_and_copied() -> None:
    """A second call returns the same peak without recomputing; changing one copy leaves the cache."""
    urdf = urdf_path("lunar_arm")
    first = peak_gravity_torque(urdf, 9.81)
    first[:] = 0.0
    second = peak_gravity_torque(str(urdf), 9.81)
    assert np.all(second > 0.0)
    assert second == pytest.approx(LunarArmSim().noise_reference_torque, rel=0.0, abs=0.0)


def test_run_path_returns_positions_torques_and_direction() -> None:
    """run_path there and back: (N, 6) positions and torques, directions +1 then -1, along the path."""
    sim = LunarArmSim(torque_noise_ratio=QUIET)
    path = np.array([Q, Q + np.radians(1.0)])
    q, tau, direction = run_path(sim, path, np.radians(3.0), trim_s=0.05, settle_s=0.1)
    assert q.shape == tau.shape == (len(direction), 6)
    assert direction[0] == 1.0 and direction[-1] == -1.0
    assert np.all(np.diff(direction) <= 0.0)  # one way, then the other
    sag = np.radians(0.5)  # the stiff servo's error under gravity
    assert np.all((q >= Q - sag) & (q <= Q + np.radians(1.0) + sag))


def test_friction_adds_coulomb_and_viscous_torque() -> None:
    """Sweeping joint 2 at 3 deg/s adds 0.05 + 0.5 * v N m to its torque (within 2 mN m)."""
    sim = LunarArmSim(torque_noise_ratio=QUIET, coulomb_friction=0.05, viscous_friction=0.5)
    _hold(sim, Q)
    sim.set_targets(["joint2"], velocities=[MAX_SPEED_RAD_S])
    sim.step(2000)
    state = sim.joint_state()
    extra = state.effort[1] - _regressor().gravity_torques(state.position)[1]
    assert extra == pytest.approx(0.05 + 0.5 * MAX_SPEED_RAD_S, abs=2e-3)


def _mean_abs_noise(sim: LunarArmSim, samples: int = 20000) -> np.ndarray:
    _hold(sim, Q)
    noise = np.array([sim.joint_state().effort - sim.true_torque() for _ in range(samples)])
    return np.asarray(np.mean(np.abs(noise), axis=0))


def test_current_noise_has_table6_amplitude() -> None:
    """The mean |torque noise| of each joint is Table 6's ratio times its peak torque (5 %)."""
    sim = LunarArmSim(seed=3)
    peak = peak_gravity_torque(urdf_path("lunar_arm"), 9.81)
    assert sim.noise_reference_torque == pytest.approx(peak)
    expected = np.array(TABLE6_NOISE_RATIO) * peak
    assert _mean_abs_noise(sim) == pytest.approx(expected, rel=0.05)


def test_current_noise_is_the_sensors_whatever_the_load_and_gravity() -> None:
    """Payload and Moon gravity leave the noise in N m as measured unloaded at Earth (Table 6)."""
    earth = LunarArmSim(seed=3)
    moon_loaded = LunarArmSim(seed=3, gravity=MOON_GRAVITY, payload=0.3)
    assert moon_loaded.current_noise_std == pytest.approx(earth.current_noise_std)
    reference = (1.0, 2.0, 0.5, 0.5, 0.1, 0.1)
    custom = LunarArmSim(seed=4, noise_reference_torque=reference)
    expected = np.array(TABLE6_NOISE_RATIO) * np.array(reference)
    assert _mean_abs_noise(custom) == pytest.approx(expected, rel=0.05)


def test_measured_torque_is_k_e_times_current() -> None:
    """joint_state().effort equals k_e times the current model's noise-free current."""
    sim = LunarArmSim(torque_noise_ratio=QUIET, torque_constants=(0.2, 0.3, 0.1, 0.1, 0.05, 0.05))
    _hold(sim, Q)
    assert sim.torque_constants * sim.current() == pytest.approx(sim.joint_state().effort)


def test_negative_payload_is_refused() -> None:
    """A negative payload raises InvalidInputError."""
    with pytest.raises(InvalidInputError, match=re.escape("payload=-1.0 kg must be finite and >= 0")):
        LunarArmSim(payload=-1.0)


def test_noise_free_identification_error_is_the_neglected_dynamics() -> None:
    """Noise- and friction-free sweeps give eq. 8's values within 5e-5 N m
    (measured: 8e-6 N m at most).

    What is left is the dynamics eq. 3 neglects: the servo's acceleration at
    each pass's start and turn (trimmed to 0.5 s) and the inertial and
    Coriolis torques of a 3 deg/s sweep (about 1e-5 N m here); the
    friction pairing of eq. 5 cancels the velocity-odd part of them too.
    """
    sim = LunarArmSim(torque_noise_ratio=QUIET)
    half = math.radians(10.0)
    plan = identification_plan([Q] * 6, [(q - half, q + half) for q in Q])
    recordings = [run_sweep(sim, sweep, record_every=5) for sweep in plan]
    regressor = _regressor()
    comp = lunar_arm_composite_parameters()
    estimate = identify(recordings, regressor, comp)
    truth = comp.from_standard(regressor.standard_parameters())
    assert np.abs(estimate.values - truth).max() < 5e-5
