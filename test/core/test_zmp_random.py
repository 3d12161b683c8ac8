"""ZmpEstimator.step, what the zmp_estimator node runs, against the total ground wrench at random.

Seeded draws (issue 32, item 4): random sensor mountings, sole poses (any
yaw, roll and pitch each up to 30 deg, at heights from -0.1 to 0.2 m) and
ground reactions (friction up to 0.6), turned into the wrench an F/T sensor
reads in its own frame (foot weight and a sensor offset included), or into
FSR forces. The reference is written here
from first principles, with none of ``core/zmp.py``: each wrench moved to the
world, the touching feet's forces and moments summed about the world origin,
and the point found on the estimator's ground plane about which the total
wrench has no horizontal moment. The plane is the one the estimator documents
(``core/zmp.py``, eq. 3.27 note): horizontal, at the feet's ZMP heights
weighted by their world-vertical ground forces. A foot whose normal force is
below the contact threshold has no ZMP and takes no part in the total.

Draw k uses ``np.random.default_rng([BASE_SEED, k])``: a failure names k.
"""

from __future__ import annotations

import math

import numpy as np

from humanoid_balance.core.zmp import FootGeometry, FootSample, ZmpEstimator

BASE_SEED = 32  # issue 32
#: every estimated ZMP, the total's and each foot's, agrees with the reference to this [m]
TOLERANCE_M = 1e-9
THRESHOLD_N = 20.0
SOLE = np.array([[0.11, 0.06], [-0.11, 0.06], [-0.11, -0.06], [0.11, -0.06]])
FOOT_Y = {"left": 0.2, "right": -0.2}
DRAWS_TWO_FEET = 4000
DRAWS_ONE_FOOT = 1500
DRAWS_FSR = 3000


def _rotation(rng: np.random.Generator, tilt: float) -> np.ndarray:
    """Any yaw, then roll and pitch each uniform in [-tilt, tilt] [rad]."""
    yaw, roll, pitch = rng.uniform(-math.pi, math.pi), *rng.uniform(-tilt, tilt, 2)
    cz, sz, cx, sx, cy, sy = (math.cos(yaw), math.sin(yaw), math.cos(roll), math.sin(roll),
                              math.cos(pitch), math.sin(pitch))
    rz = np.array([[cz, -sz, 0.0], [sz, cz, 0.0], [0.0, 0.0, 1.0]])
    rx = np.array([[1.0, 0.0, 0.0], [0.0, cx, -sx], [0.0, sx, cx]])
    ry = np.array([[cy, 0.0, sy], [0.0, 1.0, 0.0], [-sy, 0.0, cy]])
    return rz @ ry @ rx


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a x b`` over the last axis (np.cross costs tens of us a call: most of a draw's time)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return np.stack([a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
                     a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                     a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]], axis=-1)


def _transform(rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3], out[:3, 3] = rotation, translation
    return out


def _sole_pose(rng: np.random.Generator, side: str, level: bool = False) -> np.ndarray:
    """world <- sole: roll and pitch up to 30 deg each (or level), at a height in [-0.1, 0.2] m.

    Far steeper soles with friction can make the feet's world-vertical force vanish or turn
    negative: the estimator then has no ZMP on a plane (documented), and a ZMP metres away is
    exact only relative to its distance, not to 1e-9 m.
    """
    position = [rng.uniform(-0.3, 0.3), FOOT_Y[side] + rng.uniform(-0.1, 0.1), rng.uniform(-0.1, 0.2)]
    return _transform(_rotation(rng, 0.0 if level else math.radians(30.0)), np.array(position))


def _normal_force(rng: np.random.Generator) -> float:
    """A quarter of the feet below the contact threshold, the others up to 800 N [N]."""
    return rng.uniform(0.0, THRESHOLD_N) if rng.uniform() < 0.25 else rng.uniform(THRESHOLD_N, 800.0)


def _ft_foot(rng: np.random.Generator, side: str, gravity: float
             ) -> tuple[FootGeometry, FootSample, np.ndarray]:
    """A foot with its sensor anywhere above the sole, and what the sensor reads (offset added).

    The ground pushes ``f`` (friction up to 0.6) at a centre of pressure on the sole with a
    twist about the sole normal; the sensor reads that ground wrench plus the foot's weight
    below it (what the foot exerts on the leg, ``core/zmp.py``), plus the returned offset.
    """
    sensor_in_sole = _transform(_rotation(rng, 0.3), np.array(
        [rng.uniform(-0.03, 0.03), rng.uniform(-0.02, 0.02), rng.uniform(0.02, 0.12)]))
    mass, com_in_sensor = rng.uniform(0.0, 2.0), rng.normal(0.0, 0.03, 3)
    geometry = FootGeometry(sensor_in_sole, SOLE, mass_below_sensor=mass,
                            com_below_sensor_in_sensor=com_in_sensor)
    sole_in_world = _sole_pose(rng, side)
    normal = _normal_force(rng)
    friction = 0.6 * normal * math.sqrt(rng.uniform()) * np.array(
        [math.cos(angle := rng.uniform(0.0, 2.0 * math.pi)), math.sin(angle)])
    force_in_sole = np.array([*friction, normal])
    cop_in_sole = np.array([rng.uniform(-0.12, 0.12), rng.uniform(-0.07, 0.07), 0.0])
    twist = np.array([0.0, 0.0, rng.normal(0.0, 3.0)])  # about the sole normal [N m]
    torque_in_sole = _cross(cop_in_sole, force_in_sole) + twist
    rotation, origin = sensor_in_sole[:3, :3], sensor_in_sole[:3, 3]
    force = rotation.T @ force_in_sole
    torque = rotation.T @ (torque_in_sole - _cross(origin, force_in_sole))
    weight = ((sole_in_world @ sensor_in_sole)[:3, :3]).T @ [0.0, 0.0, -mass * gravity]
    offset = rng.normal(0.0, [3.0, 3.0, 3.0, 0.3, 0.3, 0.3])
    sample = FootSample(sole_in_world, force + weight + offset[:3],
                        torque + _cross(com_in_sensor, weight) + offset[3:])
    return geometry, sample, offset


def _plane_zmp(force: np.ndarray, torque: np.ndarray, height: float) -> np.ndarray:
    """The point p = (x, y, height) about which ``(force, torque about the origin)`` has no
    horizontal moment: ``torque - p x force`` has zero x and y components, i.e.
    ``T_x - (y F_z - h F_y) = 0`` and ``T_y - (h F_x - x F_z) = 0``."""
    return np.array([(height * force[0] - torque[1]) / force[2],
                     (torque[0] + height * force[1]) / force[2], height])


def _reference(feet: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]
               ) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """Per-foot ZMPs and the total ZMP from ground wrenches in the world.

    Args:
        feet: per touching foot, (world <- sole, ground force in the world [N], ground torque
            about the world origin [N m]).
    """
    zmps, total_force, total_torque, weighted_height = {}, np.zeros(3), np.zeros(3), 0.0
    for side, (sole_in_world, force, torque) in feet.items():
        # a foot's ZMP: the point of its sole plane where its own wrench has no in-plane moment,
        # found in the sole frame (plane z = 0) and taken back to the world
        rotation, origin = sole_in_world[:3, :3], sole_in_world[:3, 3]
        local = _plane_zmp(rotation.T @ force, rotation.T @ (torque - _cross(origin, force)), 0.0)
        zmps[side] = rotation @ local + origin
        total_force += force
        total_torque += torque
        weighted_height += force[2] * zmps[side][2]
    if not feet:
        return zmps, None
    return zmps, _plane_zmp(total_force, total_torque, weighted_height / total_force[2])


def _check(out_zmp: np.ndarray | None, out_feet: dict[str, np.ndarray | None],
           zmps: dict[str, np.ndarray], total: np.ndarray | None, draw: int) -> float:
    """Feet out of contact excluded, as the reference; the largest ZMP difference [m]."""
    for side, estimated in out_feet.items():
        assert (estimated is None) == (side not in zmps), (draw, side)
    if total is None:
        assert out_zmp is None, draw
        return 0.0
    assert out_zmp is not None, draw
    errors = [np.abs(out_zmp - total).max(), *(np.abs(out_feet[s] - zmps[s]).max() for s in zmps)]
    return float(max(errors))


def ft_draw_error(draw: int, sides: tuple[str, ...]) -> float:
    """One F/T draw: |estimate - reference| [m], the largest over the total and the feet."""
    rng = np.random.default_rng([BASE_SEED, draw])
    gravity = rng.uniform(0.0, 11.0)
    drawn = {side: _ft_foot(rng, side, gravity) for side in sides}
    estimator = ZmpEstimator({s: d[0] for s, d in drawn.items()}, contact_threshold=THRESHOLD_N,
                             gravity=gravity)
    for side, (_, _, offset) in drawn.items():
        estimator.offsets[side] = offset.copy()
    out = estimator.step({s: d[1] for s, d in drawn.items()})
    touching = {}
    for side, (geometry, sample, offset) in drawn.items():
        # the reading, less its offset, in the world (torque about the world origin)
        sensor_in_world = sample.sole_in_world @ geometry.sensor_in_sole
        rotation, origin = sensor_in_world[:3, :3], sensor_in_world[:3, 3]
        assert sample.force_in_sensor is not None and sample.torque_in_sensor is not None
        force = rotation @ (sample.force_in_sensor - offset[:3])
        torque = rotation @ (sample.torque_in_sensor - offset[3:]) + _cross(origin, force)
        # less the weight of the foot below the sensor, acting at its centre of mass
        weight = np.array([0.0, 0.0, -geometry.mass_below_sensor * gravity])
        com = rotation @ geometry.com_below_sensor_in_sensor + origin
        force, torque = force - weight, torque - _cross(com, weight)
        normal = float(sample.sole_in_world[:3, 2] @ force)  # along the sole's normal
        assert abs(out.normal_forces[side] - normal) <= 1e-9 * max(1.0, abs(normal)), (draw, side)
        assert out.contacts[side] == (normal >= THRESHOLD_N), (draw, side, normal)
        if normal >= THRESHOLD_N:
            touching[side] = (sample.sole_in_world, force, torque)
    zmps, total = _reference(touching)
    return _check(out.zmp_in_world, out.foot_zmps_in_world, zmps, total, draw)


def fsr_draw_error(draw: int) -> float:
    """One FSR draw (half of them on level soles at one height): |estimate - reference| [m].

    Each FSR pushes along its sole's normal at its point. On level soles at one height the
    total ZMP is also ``p = sum(p_j f_j) / sum(f_j)`` over the FSRs of the touching feet.
    """
    rng = np.random.default_rng([BASE_SEED, 1_000_000 + draw])
    level, height = rng.uniform() < 0.5, rng.uniform(-0.1, 0.2)
    feet, samples, touching, points, loads = {}, {}, {}, [], []
    for side in FOOT_Y:
        count = int(rng.integers(3, 9))
        positions = np.column_stack([rng.uniform(-0.11, 0.11, count), rng.uniform(-0.06, 0.06, count)])
        forces = rng.uniform(0.0, 1.0, count)
        forces *= _normal_force(rng) / forces.sum()
        pose = _sole_pose(rng, side, level)
        if level:
            pose[2, 3] = height
        feet[side] = FootGeometry(np.eye(4), SOLE, fsr_positions=positions)
        samples[side] = FootSample(pose, fsr_forces=forces)
        if forces.sum() >= THRESHOLD_N:
            world_points = positions @ pose[:3, :2].T + pose[:3, 3]  # R (x, y, 0) + t
            world_forces = np.outer(forces, pose[:3, 2])
            touching[side] = (pose, world_forces.sum(axis=0),
                              _cross(world_points, world_forces).sum(axis=0))
            points.append(world_points)
            loads.append(forces)
    out = ZmpEstimator(feet, sensor_type="fsr", contact_threshold=THRESHOLD_N).step(samples)
    zmps, total = _reference(touching)
    error = _check(out.zmp_in_world, out.foot_zmps_in_world, zmps, total, draw)
    if level and total is not None:
        weighted_mean = np.concatenate(loads) @ np.vstack(points) / np.concatenate(loads).sum()
        assert out.zmp_in_world is not None
        error = max(error, float(np.abs(out.zmp_in_world - weighted_mean).max()))
    return error


def _worst(errors: list[float]) -> tuple[float, int]:
    return max((e, k) for k, e in enumerate(errors))


def test_two_tilted_feet_at_random_give_the_zmp_of_the_total_ground_wrench() -> None:
    """4000 draws of two F/T feet: every ZMP (total and per foot) within 1e-9 m of the reference."""
    error, draw = _worst([ft_draw_error(k, ("left", "right")) for k in range(DRAWS_TWO_FEET)])
    assert error <= TOLERANCE_M, f"draw {draw} (seed [{BASE_SEED}, {draw}]): {error} m"


def test_one_tilted_foot_at_random_gives_the_zmp_of_its_wrench() -> None:
    """1500 draws of a single-foot estimator: its ZMP within 1e-9 m, none below the threshold."""
    error, draw = _worst([ft_draw_error(DRAWS_TWO_FEET + k, ("left",)) for k in range(DRAWS_ONE_FOOT)])
    assert error <= TOLERANCE_M, f"draw {DRAWS_TWO_FEET + draw}: {error} m"


def test_fsr_feet_at_random_give_the_zmp_of_their_forces() -> None:
    """3000 FSR draws: within 1e-9 m of the reference and, on level soles, of sum(p f) / sum(f)."""
    error, draw = _worst([fsr_draw_error(k) for k in range(DRAWS_FSR)])
    assert error <= TOLERANCE_M, f"FSR draw {draw} (seed [{BASE_SEED}, {1_000_000 + draw}]): {error} m"
