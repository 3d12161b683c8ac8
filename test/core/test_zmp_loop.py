"""ZmpLoop (core/zmp_loop.py), the zmp_estimator's logic without ROS, in lock-step on a manual clock.

The wrenches are built by hand: a ground force ``fz`` at a chosen point of the sole (so the
true ZMP is that point), moved to the sensor frame, plus the weight of the foot below the
sensor (mass and centre of mass read from the URDF's inertial tags).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from humanoid_balance.core.foot_sensors import FsrReading, WrenchReading
from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.support import convex_hull, signed_distance
from humanoid_balance.core.zmp import foot_geometry_from_model
from humanoid_balance.core.zmp_loop import ERROR, OK, STALE, WARN, ManualClock, ZmpLoop, ZmpResult
from humanoid_balance.exceptions import ConfigurationError
from humanoid_balance.params.zmp_estimator import config_from_values
from humanoid_balance.resources import urdf_path

SIDES = ("left", "right")
SOLE = np.array([[0.11, 0.06], [-0.11, 0.06], [-0.11, -0.06], [0.11, -0.06]])
#: the FSR pads, where the feet touch the ground: the support polygon's points (core/support.py)
PADS = np.array([[0.09, 0.05], [0.09, -0.05], [-0.09, 0.05], [-0.09, -0.05]])
G = 9.81
MS = 1_000_000
T0 = 1_000 * 10**9  # the clock's start [ns]
MODEL = RobotModel(urdf_path("humanoid"), world_frame="W")
NAMES = tuple(MODEL.joint_names)
Q0 = MODEL.neutral()
SOLES = {s: MODEL.frame_transform(f"{s}_sole", Q0) for s in SIDES}
GEOMETRY = {s: foot_geometry_from_model(MODEL, sensor_frame=f"{s}_foot_ft", sole_frame=f"{s}_sole",
                                        foot_link=f"{s}_foot", sole_corners=SOLE) for s in SIDES}


def sensor_wrench(side: str, zmp_in_sole: tuple[float, float], fz: float) -> np.ndarray:
    """What the ankle sensor reads (sensor frame) for ground force fz at a sole point, foot at rest."""
    geometry = GEOMETRY[side]
    rotation = geometry.sensor_in_sole[:3, :3]
    sensor_origin = geometry.sensor_in_sole[:3, 3]
    point = np.array([zmp_in_sole[0], zmp_in_sole[1], 0.0])
    force_sole = np.array([0.0, 0.0, fz])
    torque_sole = np.cross(point - sensor_origin, force_sole)  # about the sensor origin
    weight = rotation.T @ (SOLES[side][:3, :3].T @ np.array([0.0, 0.0, -geometry.mass_below_sensor * G]))
    return np.concatenate([rotation.T @ force_sole + weight,
                           rotation.T @ torque_sole + np.cross(geometry.com_below_sensor_in_sensor, weight)])


def world_point(side: str, xy: tuple[float, float]) -> np.ndarray:
    """A sole point in the world (W) frame."""
    return (SOLES[side] @ np.array([xy[0], xy[1], 0.0, 1.0]))[:3]


class Rig:
    """A loop on a manual clock, fed joint states and foot readings in lock-step."""

    def __init__(self, **overrides: Any) -> None:
        self.clock = ManualClock(T0)
        self.logs: list[tuple[int, str]] = []
        self.loop = ZmpLoop(config_from_values(overrides), self.clock, model=MODEL,
                            log=lambda level, text: self.logs.append((level, text)))
        self.frames = {s: f"{s}_foot_ft" for s in SIDES}
        self.results: list[ZmpResult] = []
        self.stamp_shift_ns = 0

    def feed(self, wrenches: dict[str, np.ndarray], samples: int = 1, period_ns: int = 4 * MS,
             silent: tuple[str, ...] = ()) -> list[ZmpResult]:
        """``samples`` samples ``period_ns`` apart: the joint state, then each foot's reading."""
        out: list[ZmpResult] = []
        for _ in range(samples):
            self.clock.advance(period_ns)
            stamp = self.clock.t_ns + self.stamp_shift_ns
            out += self.loop.on_joint_state(stamp, NAMES, np.zeros(len(NAMES)))
            for side, value in wrenches.items():
                if side in silent:
                    continue
                reading = WrenchReading(stamp, self.frames[side], tuple(value)) if value.shape == (6,) \
                    else FsrReading(value)
                out += self.loop.on_foot(side, reading)
        self.results += out
        return out


def _loaded(fz: float = 270.0, point: tuple[float, float] = (0.0, 0.0)) -> dict[str, np.ndarray]:
    return {s: sensor_wrench(s, point, fz) for s in SIDES}


def test_double_support_zmp_is_the_force_weighted_mean_of_the_feet() -> None:
    """Both feet loaded at known points: the ZMP is their force-weighted mean, feet ZMPs the points."""
    rig = Rig()
    left, right = (0.03, -0.01), (-0.02, 0.015)
    out = rig.feed({"left": sensor_wrench("left", left, 300.0),
                    "right": sensor_wrench("right", right, 200.0)}, 5)
    assert len(out) == 5 and [r.stamp_ns for r in out] == [T0 + k * 4 * MS for k in range(1, 6)]
    expected = (300.0 * world_point("left", left) + 200.0 * world_point("right", right)) / 500.0
    last = out[-1].output
    np.testing.assert_allclose(last.zmp_in_world[:2], expected[:2], atol=1e-9)
    np.testing.assert_allclose(last.foot_zmps_in_world["left"][:2], world_point("left", left)[:2], atol=1e-9)
    np.testing.assert_allclose(last.foot_zmps_in_world["right"][:2], world_point("right", right)[:2],
                               atol=1e-9)
    assert rig.loop.counts["published"] == 5 and rig.loop.counts["samples"] == 5


def test_double_support_polygon_and_margin() -> None:
    """The polygon is the hull of both feet's pads and the margin is the ZMP's distance to its edge."""
    rig = Rig()
    out = rig.feed({"left": sensor_wrench("left", (0.0, 0.0), 250.0),
                    "right": sensor_wrench("right", (0.05, 0.0), 250.0)}, 3)[-1].output
    corners = np.vstack([(SOLES[s] @ np.c_[PADS, np.zeros(4), np.ones(4)].T).T[:, :2] for s in SIDES])
    hull = convex_hull(corners)
    assert sorted(map(tuple, np.round(out.polygon, 9))) == sorted(map(tuple, np.round(hull, 9)))
    zmp = out.zmp_in_world[:2]
    # the hull of two feet's 0.18 x 0.10 pads 0.4 m apart: the nearest edge is the front or the back one
    assert out.margin == pytest.approx(min(0.09 - zmp[0], zmp[0] + 0.09), abs=1e-9)
    assert out.margin == pytest.approx(signed_distance(zmp, hull), abs=1e-12)


def test_one_foot_unloaded_gives_the_other_feet_zmp_and_polygon() -> None:
    """Left foot lifted: ZMP = right foot's ZMP, polygon = right pads, margin to their hull's edge."""
    rig = Rig()
    point = (0.04, 0.02)
    out = rig.feed({"left": sensor_wrench("left", (0.0, 0.0), 0.0),
                    "right": sensor_wrench("right", point, 540.0)}, 3)[-1].output
    np.testing.assert_allclose(out.zmp_in_world[:2], world_point("right", point)[:2], atol=1e-9)
    right_corners = (SOLES["right"] @ np.c_[PADS, np.zeros(4), np.ones(4)].T).T[:, :2]
    assert sorted(map(tuple, np.round(out.polygon, 9))) == sorted(map(tuple, np.round(right_corners, 9)))
    assert out.margin == pytest.approx(min(0.09 - point[0], 0.05 - point[1]), abs=1e-9)
    assert out.foot_zmps_in_world["left"] is None and out.contacts == {"left": False, "right": True}


def test_no_foot_in_contact_gives_no_zmp_and_says_so() -> None:
    """Robot lifted (only the feet's weight on the sensors): no estimate, status WARN saying so."""
    rig = Rig()
    assert rig.feed(_loaded(0.0), 10) == []
    assert rig.loop.counts["no_contact"] == 10
    status = rig.loop.status()
    assert (status.level, status.message) == (WARN, "no foot in contact: no ZMP")


def test_nan_wrench_is_dropped_and_counted() -> None:
    """A NaN in a wrench: that sample gives no ZMP, the drop is counted and named, good ones go on."""
    rig = Rig()
    good = _loaded()
    bad = {**good, "left": good["left"].copy()}
    bad["left"][4] = float("nan")
    assert len(rig.feed(good, 5)) == 5
    assert rig.feed(bad, 5) == []
    assert len(rig.feed(good, 5)) == 5
    assert rig.loop.counts["dropped_nonfinite"] == 5
    status = rig.loop.status()
    assert status.values["dropped_nonfinite"] == 5
    assert status.level == WARN and "left foot: non-finite wrench dropped (5 so far)" in status.message
    assert all(np.isfinite(r.output.zmp_in_world).all() for r in rig.results)


def test_infinite_fsr_force_is_dropped() -> None:
    """FSR mode: an infinite force drops the array; good FSR samples give the FSR-weighted ZMP."""
    rig = Rig(sensor_type="fsr")
    fsr = np.array([100.0, 50.0, 50.0, 70.0])
    assert len(rig.feed({"left": fsr, "right": fsr}, 5)) == 5
    rig.feed({"left": np.array([100.0, np.inf, 50.0, 70.0]), "right": fsr}, 3)
    assert rig.loop.counts["dropped_nonfinite"] == 3
    local = fsr @ PADS / fsr.sum()
    expected = (world_point("left", tuple(local)) + world_point("right", tuple(local))) / 2
    np.testing.assert_allclose(rig.results[-1].output.zmp_in_world[:2], expected[:2], atol=1e-9)


def test_fsr_array_of_the_wrong_size_is_dropped() -> None:
    """Three forces for four FSRs: dropped_shape, saying what was expected."""
    rig = Rig(sensor_type="fsr")
    rig.feed({"left": np.ones(3), "right": np.ones(4)})
    assert rig.loop.counts["dropped_shape"] == 1
    assert rig.logs[-1] == (WARN, "left foot: 3 FSR forces, expected 4: dropped")


def test_silent_sensor_goes_stale_and_no_zmp_is_built() -> None:
    """The right sensor stops: after sensor_timeout the status is STALE, and no ZMP is built."""
    rig = Rig(sensor_timeout=0.1)
    assert len(rig.feed(_loaded(), 10)) == 10
    assert rig.feed(_loaded(), 60, silent=("right",)) == []  # 0.24 s of left-only samples
    status = rig.loop.status()
    assert status.level == STALE
    assert status.message == "right foot sensor silent for 0.240 s (timeout 0.100 s): no ZMP"


def test_no_data_yet_is_stale() -> None:
    """Before any reading: STALE, naming both feet."""
    status = Rig().loop.status()
    assert status.level == STALE and "no left foot sensor data yet; no right foot" in status.message


def test_wrench_in_unknown_frame_is_an_error_naming_the_frame() -> None:
    """A wrench stamped in a frame the robot does not have: dropped, ERROR naming the frame."""
    rig = Rig()
    rig.frames["left"] = "left_foot_ft_typo"
    assert rig.feed(_loaded(), 10) == []
    assert rig.loop.counts["dropped_frame"] == 10
    status = rig.loop.status()
    assert status.level == ERROR and "'left_foot_ft_typo'" in status.message


def test_wrench_in_a_frame_of_the_foot_is_moved_to_the_sensor() -> None:
    """A wrench given in the sole frame (rigidly on the foot) gives the same ZMP as in the sensor frame."""
    rig = Rig()
    point = (0.03, 0.01)
    in_sensor = sensor_wrench("left", point, 300.0)
    sole_from_sensor = GEOMETRY["left"].sensor_in_sole
    rotation, origin = sole_from_sensor[:3, :3], sole_from_sensor[:3, 3]
    force = rotation @ in_sensor[:3]
    torque = rotation @ in_sensor[3:] + np.cross(origin, force)
    rig.frames["left"] = "left_sole"
    out = rig.feed({"left": np.concatenate([force, torque]),
                    "right": sensor_wrench("right", point, 300.0)}, 3)[-1].output
    np.testing.assert_allclose(out.foot_zmps_in_world["left"][:2], world_point("left", point)[:2],
                               atol=1e-9)


def test_wrench_in_a_frame_of_another_link_is_refused() -> None:
    """A wrench in a frame not attached to that foot (the other foot's sensor) is refused by name."""
    rig = Rig()
    rig.frames["left"] = "right_foot_ft"
    assert rig.feed(_loaded(), 5) == []
    status = rig.loop.status()
    assert status.level == ERROR and "'right_foot_ft'" in status.message
    assert "publish it in 'left_foot_ft'" in status.message


def test_wrench_stamped_ahead_of_the_clock_is_refused() -> None:
    """Stamps 0.3 s ahead: refused at future_tolerance 0.05 s (dropped_future, the freshness
    rule's words); 20 ms ahead: accepted."""
    rig = Rig()
    rig.stamp_shift_ns = 300 * MS
    assert rig.feed(_loaded(), 3) == []
    assert rig.loop.counts["dropped_future"] == 9  # both feet's wrenches and the joint states
    assert "left foot: wrench stamped 0.300 s ahead of the node clock, beyond " \
        "future_tolerance=0.05 s" in " ".join(t for _, t in rig.logs)
    assert "joint_states stamped 0.300 s ahead" in rig.logs[0][1]
    rig.stamp_shift_ns = 20 * MS
    assert len(rig.feed(_loaded(), 3)) == 3


def _feed_behind_a_stalled_clock(rig: Rig, samples: int, period_ns: int = 4 * MS) -> int:
    """Samples stamped on, period after period, while the clock stands still (``/clock``
    held back); how many estimates came out."""
    start = rig.clock.t_ns
    out = 0
    for k in range(1, samples + 1):
        stamp = start + k * period_ns
        out += len(rig.loop.on_joint_state(stamp, NAMES, np.zeros(len(NAMES))))
        for side, value in _loaded().items():
            out += len(rig.loop.on_foot(side, WrenchReading(stamp, rig.frames[side], tuple(value))))
    return out


@pytest.mark.parametrize("sim", [True, False])
def test_a_late_sim_clock_does_not_refuse_the_samples_of_its_period(sim: bool) -> None:
    """/clock held back 80 ms (a lost datagram on its topic: tools/soak_strikes.py found 142
    wrenches refused in an hour): under simulation time nothing is refused; on a steady clock
    the rule is unchanged (refused from 50 ms on)."""
    rig = Rig()
    rig.clock.sim = sim
    rig.feed(_loaded(), 5)
    assert _feed_behind_a_stalled_clock(rig, 20) == (20 if sim else 12)
    assert rig.loop.counts["dropped_future"] == (0 if sim else 3 * 8)


def test_under_sim_time_the_clock_may_be_late_by_sensor_timeout_only() -> None:
    """A /clock stalled longer than sensor_timeout (0.1 s) + future_tolerance (0.05 s): the
    stamps beyond are refused, in words that name both; stamps 0.3 s ahead from the start too."""
    rig = Rig()
    rig.clock.sim = True
    rig.feed(_loaded(), 5)
    assert _feed_behind_a_stalled_clock(rig, 50) == 37  # 4 .. 148 ms ahead accepted
    assert rig.loop.counts["dropped_future"] == 3 * 13
    assert ("ahead of the node clock, beyond future_tolerance + sensor_timeout (use_sim_time: "
            "/clock may be late)=0.15 s") in rig.logs[-1][1]
    ahead = Rig()
    ahead.clock.sim = True
    ahead.stamp_shift_ns = 300 * MS
    assert ahead.feed(_loaded(), 3) == []
    assert ahead.loop.counts["dropped_future"] == 9


def test_samples_older_than_sensor_timeout_give_no_zmp() -> None:
    """Stamps 1 s behind the clock: 'foot samples 1.000 s old', no ZMP; on simulation time the
    age counts from the newest joined sample, so the same stamps give ZMPs (a replay)."""
    rig = Rig()
    rig.stamp_shift_ns = -10**9
    assert rig.feed(_loaded(), 3) == []
    assert rig.loop.counts["dropped_stale"] == 3
    assert rig.logs[-1][1].startswith("foot samples 1.000 s old (sensor_timeout 0.100 s)")
    rig.clock.sim = True
    assert len(rig.feed(_loaded(), 3)) == 3


def test_a_sample_waits_for_the_joint_state_of_its_stamp() -> None:
    """Feet before the joint state of their stamp: no estimate until it comes, then the same one
    as in the other order (the output depends on the stamps, not on the arrival order)."""
    first, second = Rig(), Rig()
    wrenches = _loaded(300.0, (0.02, 0.01))
    expected = first.feed(wrenches)[0]
    second.clock.advance(4 * MS)
    stamp = second.clock.t_ns
    for side in SIDES:
        assert second.loop.on_foot(side, WrenchReading(stamp, f"{side}_foot_ft", tuple(wrenches[side]))) == []
    out = second.loop.on_joint_state(stamp, NAMES, np.zeros(len(NAMES)))
    assert len(out) == 1 and out[0].stamp_ns == expected.stamp_ns
    assert np.array_equal(out[0].output.zmp_in_world, expected.output.zmp_in_world)


def test_joint_state_too_old_gives_no_zmp() -> None:
    """A joint state older than joint_state_timeout: 'no joint state within', no ZMP."""
    rig = Rig()
    rig.loop.on_joint_state(T0, NAMES, np.zeros(len(NAMES)))
    rig.clock.advance(500 * MS)
    stamp = rig.clock.t_ns
    out = []
    for side, wrench in _loaded().items():  # waits joint_state_wait of data time, then goes on
        out += rig.loop.on_foot(side, WrenchReading(stamp, f"{side}_foot_ft", tuple(wrench)))
    rig.clock.advance(10 * MS)
    for side, wrench in _loaded().items():
        out += rig.loop.on_foot(side, WrenchReading(rig.clock.t_ns, f"{side}_foot_ft", tuple(wrench)))
    assert out == [] and rig.loop.counts["dropped_stale"] == 1
    assert rig.logs[-1][1].startswith("no joint state within joint_state_timeout (0.100 s)")


def test_feet_stamps_that_do_not_pair_are_an_error() -> None:
    """F/T stamps 5 ms apart (sync_tolerance 1 ms): no ZMP; once the waiting samples overflow
    (50 per foot), ERROR 'did not pair'."""
    rig = Rig()
    for k in range(1, 61):
        stamp = T0 + k * 10 * MS
        rig.clock.t_ns = stamp
        rig.loop.on_joint_state(stamp, NAMES, np.zeros(len(NAMES)))
        rig.loop.on_foot("left", WrenchReading(stamp, "left_foot_ft", tuple(_loaded()["left"])))
        rig.loop.on_foot("right", WrenchReading(stamp + 5 * MS, "right_foot_ft",
                                                tuple(_loaded()["right"])))
    status = rig.loop.status()
    assert status.level == ERROR and "foot samples did not pair" in status.message
    assert "sync_tolerance 0.0010 s" in status.message and status.values["dropped_unpaired"] > 0


def test_foot_exactly_at_threshold_is_in_contact() -> None:
    """A foot with exactly the contact threshold of normal force counts as in contact."""
    rig = Rig(contact_threshold=25.0)
    out = rig.feed({"left": sensor_wrench("left", (0.01, 0.0), 25.0),
                    "right": sensor_wrench("right", (0.0, 0.0), 400.0)})[-1].output
    np.testing.assert_allclose(out.foot_zmps_in_world["left"][:2], world_point("left", (0.01, 0.0))[:2],
                               atol=1e-9)


def test_contact_threshold_changes_between_samples() -> None:
    """set_config with a higher threshold: the next sample's 25 N foot is out of contact."""
    rig = Rig(contact_threshold=20.0)
    wrenches = {"left": sensor_wrench("left", (0.0, 0.0), 25.0),
                "right": sensor_wrench("right", (0.0, 0.0), 400.0)}
    assert rig.feed(wrenches)[-1].output.contacts["left"]
    rig.loop.set_config(config_from_values({"contact_threshold": 40.0, "contact_hysteresis": 5.0}))
    assert not rig.feed(wrenches)[-1].output.contacts["left"]


def test_publish_rate_thins_the_estimates() -> None:
    """publish_rate 100 Hz with samples every 4 ms: every third estimate is returned; all counted."""
    rig = Rig(publish_rate=100.0)
    out = rig.feed(_loaded(), 12)
    assert [r.stamp_ns - T0 for r in out] == [4 * MS, 16 * MS, 28 * MS, 40 * MS]
    status = rig.loop.status()
    assert status.level == OK and rig.loop.counts["published"] == 4


def test_stamps_going_back_restart_the_estimate() -> None:
    """Stamps jump 60 s back (a bag played again, a simulator reset): estimates come again from there."""
    rig = Rig(future_tolerance=100.0)  # the first stamps are 60 s ahead of the clock
    rig.stamp_shift_ns = 60 * 10**9
    assert len(rig.feed(_loaded(300.0), 10)) == 10
    rig.stamp_shift_ns = 0
    out = rig.feed(_loaded(300.0), 20)
    assert len(out) == 20 and out[-1].stamp_ns < rig.results[9].stamp_ns


def test_partial_joint_states_update_only_their_joints() -> None:
    """A joint state with the waist joints only keeps the legs of the last full message."""
    rig = Rig()
    full = np.zeros(len(NAMES))
    full[NAMES.index("left_knee")] = 0.3
    rig.clock.t_ns = 11 * 10**9
    rig.loop.on_joint_state(10 * 10**9, NAMES, full)
    rig.loop.on_joint_state(11 * 10**9, ("waist_pitch", "waist_roll"), np.array([0.1, -0.05]))
    out = []
    for side, wrench in _loaded().items():
        out += rig.loop.on_foot(side, WrenchReading(11 * 10**9, f"{side}_foot_ft", tuple(wrench)))
    q = out[0].q
    assert q[MODEL.q_index(["left_knee"])][0] == 0.3
    assert list(q[MODEL.q_index(["waist_pitch", "waist_roll"])]) == [0.1, -0.05]


def test_bad_joint_states_are_dropped() -> None:
    """Names and positions of different lengths, or a NaN position: dropped_joint_states."""
    rig = Rig()
    rig.loop.on_joint_state(T0, NAMES, np.zeros(3))
    bad = np.zeros(len(NAMES))
    bad[0] = np.nan
    rig.loop.on_joint_state(T0, NAMES, bad)
    assert rig.loop.counts["dropped_joint_states"] == 2
    assert rig.logs[-1][1] == "joint_states with a non-finite position: ignored"


def test_unreadable_foot_message_counts_and_arrives() -> None:
    """foot_unreadable: dropped_unreadable, and the foot is not silent."""
    rig = Rig()
    for side in SIDES:
        rig.loop.foot_unreadable(side, "cut short")
    assert rig.loop.counts["dropped_unreadable"] == 2
    status = rig.loop.status()  # the feet spoke (not STALE): an error naming the newest drop
    assert (status.level, status.message) == (ERROR, "no ZMP: 2 samples dropped: right foot: cut "
                                              "short: dropped")


def test_zero_refuses_when_a_foot_is_loaded() -> None:
    """Zeroing with the robot standing: refused, the reason names the loaded foot; offsets kept."""
    rig = Rig()
    rig.feed(_loaded(), 30)
    result = rig.loop.zero(SIDES)
    assert not result.success and result.refused
    assert "left foot carries" in result.message and "lift the foot" in result.message
    assert np.all(rig.loop.estimator.offsets["left"] == 0.0)


def test_zero_removes_offsets_and_keeps_the_foot_weight() -> None:
    """Feet lifted with sensor offsets: zeroing removes the offsets; the loaded ZMP is then exact."""
    rig = Rig()
    offsets = {"left": np.array([3.0, -2.0, 6.0, 0.4, -0.3, 0.1]),
               "right": np.array([-1.0, 4.0, -5.0, -0.2, 0.5, 0.05])}
    rig.feed({s: sensor_wrench(s, (0.0, 0.0), 0.0) + offsets[s] for s in SIDES}, 40)
    result = rig.loop.zero(SIDES)
    assert result.success and result.message.startswith("zeroed left (force offset [3.0, -2.0, 6.0] N)")
    for side in SIDES:
        np.testing.assert_allclose(rig.loop.estimator.offsets[side], offsets[side], atol=1e-9)
    point = (0.05, -0.02)
    out = rig.feed({s: sensor_wrench(s, point, 270.0) + offsets[s] for s in SIDES}, 3)[-1].output
    np.testing.assert_allclose(out.foot_zmps_in_world["left"][:2], world_point("left", point)[:2], atol=1e-9)


def test_zero_needs_joint_states_and_data_and_refuses_fsr() -> None:
    """Zeroing without a joint state or readings says what is missing; FSRs are not zeroed."""
    rig = Rig()
    assert rig.loop.zero(SIDES).message == "no joint state yet: the feet's orientation is unknown"
    rig.loop.on_joint_state(T0, NAMES, np.zeros(len(NAMES)))
    assert rig.loop.zero(("right",)).message == "no right foot sensor data yet"
    result = Rig(sensor_type="fsr").loop.zero(SIDES)
    assert (result.success, result.message) == (
        False, "zeroing is for F/T sensors; this node runs in fsr mode")


def test_lost_fsr_arrays_resynchronise_with_a_warning() -> None:
    """60 right FSR arrays lost: after RESYNC_JOINS joins the left's waiting ones are dropped, once,
    with a warning; the estimates go on."""
    rig = Rig(sensor_type="fsr")
    fsr = np.array([100.0, 50.0, 50.0, 70.0])
    rig.feed({"left": fsr, "right": fsr}, 5, period_ns=MS)
    rig.feed({"left": fsr, "right": fsr}, 60, period_ns=MS, silent=("right",))
    rig.feed({"left": fsr, "right": fsr}, 100, period_ns=MS)
    assert rig.loop.status().values["fsr_resyncs"] == 1
    assert any("joined 50 times in a row" in text for _, text in rig.logs)


def test_unknown_sensor_type_is_refused() -> None:
    """sensor_type other than ft/fsr: a ConfigurationError naming the choices."""
    with pytest.raises(ConfigurationError, match="sensor_type"):
        config_from_values({"sensor_type": "fts"})


def test_reset_forgets_the_inputs() -> None:
    """After reset a sample needs a joint state again (it waits), the counters stay."""
    rig = Rig()
    rig.feed(_loaded(), 2)
    rig.loop.reset()
    rig.clock.advance(4 * MS)
    stamp = rig.clock.t_ns
    for side, wrench in _loaded().items():
        assert rig.loop.on_foot(side, WrenchReading(stamp, f"{side}_foot_ft", tuple(wrench))) == []
    assert rig.loop.counts["published"] == 2
