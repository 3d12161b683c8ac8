"""The ZMP estimator's loop without ROS: input checks, joins, joint states, drops and status.

:class:`ZmpLoop` is what the ``zmp_estimator`` node runs on every message, and what
the tests run in lock-step without DDS. The node reads a message and hands it over
(:meth:`ZmpLoop.on_joint_state`, :meth:`ZmpLoop.on_foot`); each call returns the
estimates (:class:`ZmpResult`) that became ready, to publish. It owns:

* **the feet's sensors**, one implementation picked once from ``sensor_type``
  (:mod:`humanoid_balance.core.foot_sensors`): how a reading is checked, joined with
  the other foot's and zeroed;
* **the joins** (:mod:`humanoid_balance.core.sync`): F/T wrenches by stamp (within
  ``sync_tolerance``), FSR arrays, which have no header, in arrival order, stamped with
  the later arrival;
* **the joint state of a sample's stamp**: each joined sample waits until a joint state
  stamped at or after it has arrived (at most ``joint_state_wait`` of data time) and uses
  the newest stamped at or before it, so the output depends on the stamps only, not on
  the arrival order (a replayed bag gives the live ZMPs). A message may carry some
  joints only: it updates those on top of the latest values of the others;
* **stale and future inputs**: a reading or joint state stamped more than
  ``future_tolerance`` ahead of the clock is refused
  (:func:`humanoid_balance.core.freshness.stamp_problem`). With simulation time the clock
  is ``/clock``, a topic like the samples: held back behind a lost datagram (a reliable
  stream delivers in order) it reads earlier than the samples of its period, so it may be
  late by ``sensor_timeout`` (the bound on the samples' own lateness) before a stamp counts
  as ahead; clocks that disagree (``use_sim_time`` on one side only) differ by far more.
  A joined sample older than
  ``sensor_timeout``, or without a joint state within ``joint_state_timeout`` of it,
  gives no ZMP. With simulation time (``use_sim_time``) the age is counted from the
  newest joined sample, not from ``/clock``, which a loaded executor may take before
  the queued samples. Stamps going back (a bag played again, a simulator reset) drop
  the waiting samples and the contact states;
* **drops**: every refused input counted (``counts``), logged (through the ``log`` sink,
  which the node throttles) and named in :meth:`ZmpLoop.status` for as long as it lasts;
* **publishing rate**: at most one estimate per ``1 / publish_rate`` of stamps;
* **zeroing** the F/T sensors from the mean of the last ``zero_window`` of readings.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from humanoid_balance.core.diagnostics import ERROR, OK, STALE, WARN, LoopStatus
from humanoid_balance.core.foot_sensors import (
    FootSensors,
    FsrReading,
    SampleRefusedError,
    WrenchReading,
    make_foot_sensors,
)
from humanoid_balance.core.freshness import stamp_problem
from humanoid_balance.core.model import RobotModel
from humanoid_balance.core.support import OUTSIDE_POLYGON
from humanoid_balance.core.sync import ArrivalPairer, SampleSet, StampedBuffer
from humanoid_balance.core.zmp import (
    FootGeometry,
    ZmpEstimator,
    ZmpOutput,
    foot_geometry_from_model,
    frame_in_sensor_resolver,
)
from humanoid_balance.exceptions import InvalidInputError, UnknownFrameError
from humanoid_balance.params.zmp_estimator import ZmpEstimatorConfig

__all__ = ["DROPS", "ERROR", "OK", "STALE", "WARN", "LoopClock", "ManualClock", "ZeroResult",
           "ZmpLoop", "ZmpResult", "feet_from_model", "model_from_config"]

#: the counters of dropped input (``counts``), each a reason a sample gave no ZMP
DROPS = ("dropped_nonfinite", "dropped_shape", "dropped_invalid", "dropped_frame", "dropped_stale",
         "dropped_future", "dropped_joint_states", "dropped_unreadable")
#: joint states kept to find the one of a sample's stamp
JOINT_STATE_HISTORY = 200
#: readings kept per foot for zeroing (2 s at 1 kHz)
RECENT_READINGS = 2000


class LoopClock(Protocol):
    """The node's clock, as the loop reads it."""

    def now_ns(self) -> int:
        """Time now [ns]."""

    def sim_time(self) -> bool:
        """True while the clock is simulation time (``/clock``)."""


class ManualClock:
    """A clock set by hand (tests, replays without ROS): ``now_ns`` [ns], ``sim`` time or not."""

    def __init__(self, now_ns: int = 0, sim: bool = False) -> None:
        self.t_ns = now_ns
        self.sim = sim

    def now_ns(self) -> int:
        return self.t_ns

    def sim_time(self) -> bool:
        return self.sim

    def advance(self, dt_ns: int) -> None:
        """Move the clock ``dt_ns`` [ns] on."""
        self.t_ns += dt_ns


@dataclass(frozen=True)
class ZmpResult:
    """An estimate to publish.

    Attributes:
        stamp_ns: the joined sample's stamp [ns] (the outputs' stamp).
        output: the estimate (``zmp_in_world``, ``polygon`` and ``margin`` set).
        q: the configuration of the joint state used (for the CoM marker).
    """

    stamp_ns: int
    output: ZmpOutput
    q: np.ndarray


@dataclass(frozen=True)
class ZeroResult:
    """The answer to a zeroing request; ``refused``: a foot was loaded (the offsets kept)."""

    success: bool
    message: str
    refused: bool = False


def model_from_config(config: ZmpEstimatorConfig) -> RobotModel:
    """The robot of ``urdf_path`` (empty: the package's humanoid) with ``balance_frame`` as
    the world and the config's gravity."""
    from humanoid_balance.resources import urdf_path as package_urdf_path

    path = config.urdf_path or str(package_urdf_path("humanoid"))
    model = RobotModel(path, world_frame=config.balance_frame)
    model.gravity = config.gravity_m_s2
    return model


def feet_from_model(model: RobotModel, config: ZmpEstimatorConfig) -> dict[str, FootGeometry]:
    """Each foot's geometry from the URDF frames the config names.

    Raises:
        UnknownFrameError: a frame is not in the model.
        ConfigurationError: a contact or FSR frame is off its sole.
    """
    layout = config.feet
    feet = {}
    for side in layout.sides:
        for frame in (config.sensor_frames[side], layout.sole_frames[side], config.foot_links[side]):
            if not model.model.existFrame(frame):
                raise UnknownFrameError(frame, model.name)
        feet[side] = foot_geometry_from_model(
            model, sensor_frame=config.sensor_frames[side], sole_frame=layout.sole_frames[side],
            foot_link=config.foot_links[side], contact_frames=layout.contact_frames[side],
            fsr_frames=layout.fsr_frames[side])
    return feet


class ZmpLoop:
    """The estimator's loop (see the module).

    Args:
        config: the parameters (the dynamic ones may change, :meth:`set_config`).
        clock: the node's clock (arrivals, future stamps, ages).
        model: the robot; default :func:`model_from_config`.
        log: ``log(level, text)`` for every drop and warning (:data:`WARN`, :data:`ERROR`);
            the node throttles it.

    Raises:
        ConfigurationError: a value or frame the estimator cannot use.
        UnknownFrameError: a frame is not in the model.
    """

    def __init__(self, config: ZmpEstimatorConfig, clock: LoopClock, *,
                 model: RobotModel | None = None,
                 log: Callable[[int, str], None] | None = None) -> None:
        self.model = model if model is not None else model_from_config(config)
        self.clock = clock
        self._log = log or (lambda level, text: None)
        self.sides = config.feet.sides
        feet = feet_from_model(self.model, config)
        self.sensors: FootSensors = make_foot_sensors(
            config.sensor_type, feet, config.gravity_m_s2, sensor_frames=config.sensor_frames,
            frame_in_sensor=frame_in_sensor_resolver(self.model, config.sensor_frames))
        self.estimator = ZmpEstimator(feet, sensors=self.sensors,
                                      contact_threshold=config.contact_threshold_n,
                                      hysteresis=config.contact_hysteresis_n)
        self.joiner = self.sensors.make_joiner(_ns(config.sync_tolerance_s),
                                               _ns(config.sensor_timeout_s))
        self.joint_states: StampedBuffer[np.ndarray] = StampedBuffer(JOINT_STATE_HISTORY)
        self.joint_state_wait_ns = _ns(config.joint_state_wait_s)
        self.zero_window_ns = _ns(config.zero_window_s)
        self._model_joints = set(self.model.joint_names)
        self._sole_ids = [self.model.frame_id(config.feet.sole_frames[s]) for s in self.sides]
        self.counts = dict.fromkeys(("samples", "published", *DROPS, "no_contact"), 0)
        #: the newest estimate (also one without a ZMP), or None
        self.last_output: ZmpOutput | None = None
        self._last_arrival_ns: dict[str, int | None] = {s: None for s in self.sides}
        # what was dropped since the last status, and why (the newest reason, its level)
        self._period = {"dropped": 0, "published": 0, "unpaired": 0}
        self._drop_reason: tuple[int, str] | None = None
        self.reset()
        self.set_config(config)

    def reset(self) -> None:
        """Forget the inputs: waiting samples, joint states, readings, contact states (the
        counters, offsets and arrival times are kept)."""
        self.q = self.model.neutral()
        self.joiner.reset()
        self.joint_states = StampedBuffer(JOINT_STATE_HISTORY)
        self.estimator.reset()
        self._pending: deque[SampleSet] = deque()
        self._newest_set_ns = 0
        self._joint_columns: tuple[tuple[str, ...], np.ndarray, np.ndarray] | None = None
        self._sole_cache: tuple[bytes, dict[str, np.ndarray]] | None = None
        self._recent: dict[str, deque[tuple[int, np.ndarray]]] = {
            s: deque(maxlen=RECENT_READINGS) for s in self.sides}
        self._last_published_ns: int | None = None

    def set_config(self, config: ZmpEstimatorConfig) -> None:
        """Take the dynamic parameters (the others are read at construction only).

        Raises:
            ConfigurationError: a contact threshold the detectors refuse.
        """
        self.config = config
        self.estimator.set_contact_threshold(config.contact_threshold_n, config.contact_hysteresis_n)
        rate = config.publish_rate_hz
        self.publish_period_ns = int(1e9 / rate) if rate > 0 else 0
        self.joiner.set_limits(tolerance_ns=_ns(config.sync_tolerance_s),
                               max_age_ns=_ns(config.sensor_timeout_s))
        self.joint_state_timeout_ns = _ns(config.joint_state_timeout_s)
        self.sensor_timeout_ns = _ns(config.sensor_timeout_s)

    def ahead(self) -> tuple[float, str]:
        """How far [s] ahead of the clock a stamp may be (see the module), and the parameters
        that make it, for the refusals' words: ``future_tolerance``, plus ``sensor_timeout``
        with simulation time. Read once per message (the clock's mode may change at run time)."""
        config = self.config
        if self.clock.sim_time():
            return (config.future_tolerance_s + config.sensor_timeout_s,
                    "future_tolerance + sensor_timeout (use_sim_time: /clock may be late)")
        return config.future_tolerance_s, "future_tolerance"

    # --- inputs ----------------------------------------------------------------------

    def drop(self, counter: str, reason: str, level: int = WARN) -> None:
        """Count a dropped input (``counts[counter]``), log the reason, keep it for the status."""
        self.counts[counter] += 1
        self._period["dropped"] += 1
        self._drop_reason = (level, reason)
        self._log(level, reason)

    def foot_unreadable(self, side: str, reason: str) -> None:
        """A foot message neither reader could read: it arrived, and is dropped."""
        self._last_arrival_ns[side] = self.clock.now_ns()
        self.drop("dropped_unreadable", f"{side} foot: {reason}: dropped")

    def on_joint_state(self, stamp_ns: int, names: tuple[str, ...],
                       positions: np.ndarray) -> list[ZmpResult]:
        """A joint state (names, positions [rad or m]); the estimates it lets through."""
        if len(positions) != len(names):
            self.drop("dropped_joint_states",
                      f"joint_states has {len(names)} names but {len(positions)} positions: ignored")
            return []
        ahead_s, ahead_name = self.ahead()
        problem = stamp_problem(1e-9 * stamp_ns, 1e-9 * self.clock.now_ns(), "joint_states",
                                ahead_s=ahead_s, ahead_name=ahead_name)
        if problem is not None:
            self.drop("dropped_future", f"{problem}: ignored")
            return []
        if self._joint_columns is None or self._joint_columns[0] != names:
            known = [i for i, n in enumerate(names) if n in self._model_joints]
            self._joint_columns = (names, np.array(known, dtype=int),
                                   self.model.q_index([names[i] for i in known]))
        _, columns, q_index = self._joint_columns
        position = positions[columns]
        if not np.all(np.isfinite(position)):
            self.drop("dropped_joint_states", "joint_states with a non-finite position: ignored")
            return []
        # a message may carry some joints only (several drivers publish /joint_states)
        self.q[q_index] = position
        self.joint_states.push(stamp_ns, self.q.copy())
        return self._process_pending()

    def on_foot(self, side: str, reading: WrenchReading | FsrReading) -> list[ZmpResult]:
        """A foot's reading, received now; the estimates it completes."""
        now = self.clock.now_ns()
        self._last_arrival_ns[side] = now
        try:
            stamp, payload = self.sensors.parse(side, reading, now, *self.ahead())
        except SampleRefusedError as refused:
            reason = refused.reason
            if refused.count_in_reason:
                reason += f" ({self.counts[refused.counter] + 1} so far)"
            self.drop(refused.counter, reason, refused.level)
            return []
        self._recent[side].append((stamp, payload))
        joiner = self.joiner
        unpaired, resyncs = joiner.dropped, joiner.resyncs
        joined = joiner.push(side, stamp, payload)
        self._period["unpaired"] += joiner.dropped - unpaired
        if joiner.resyncs != resyncs:
            self._log(WARN, f"FSR arrays: the feet were joined {ArrivalPairer.RESYNC_JOINS} times "
                      "in a row with one foot's arrays left waiting (the other's lost): those "
                      "dropped, the feet joined period with period again")
        return self._on_joined(joined) if joined is not None else []

    # --- estimate --------------------------------------------------------------------

    def _on_joined(self, joined: SampleSet) -> list[ZmpResult]:
        if joined.stamp_ns < self._newest_set_ns:  # time went back (replay again, sim reset)
            self.counts["samples"] += len(self._pending)
            for _ in range(len(self._pending)):
                self.drop("dropped_stale", "stamps went back: the waiting samples were dropped")
            self._pending.clear()
            self.estimator.reset()  # contact states of another time
        self._newest_set_ns = joined.stamp_ns
        self._pending.append(joined)
        return self._process_pending()

    def _process_pending(self) -> list[ZmpResult]:
        out = []
        while self._pending:
            joined = self._pending[0]
            waited_enough = self._newest_set_ns - joined.stamp_ns >= self.joint_state_wait_ns
            if not (self.joint_states.covers(joined.stamp_ns) or waited_enough):
                break
            self._pending.popleft()
            result = self._estimate(joined)
            if result is not None:
                out.append(result)
        return out

    def _estimate(self, joined: SampleSet) -> ZmpResult | None:
        self.counts["samples"] += 1
        stamp = joined.stamp_ns
        found = self.joint_states.at_or_before(stamp)
        if found is None or stamp - found[0] > self.joint_state_timeout_ns:
            self.drop("dropped_stale", "no joint state within joint_state_timeout "
                      f"({1e-9 * self.joint_state_timeout_ns:.3f} s) of the foot samples: no ZMP")
            return None
        # with simulation time the age is counted in data time, from the newest joined
        # sample, so a replay gives the live ZMPs (see the module)
        reference = self._newest_set_ns if self.clock.sim_time() else self.clock.now_ns()
        if reference - stamp > self.sensor_timeout_ns:
            self.drop("dropped_stale", f"foot samples {1e-9 * (reference - stamp):.3f} s old "
                      f"(sensor_timeout {1e-9 * self.sensor_timeout_ns:.3f} s): no ZMP built from them")
            return None
        soles = self._soles(found[1])
        samples = {side: self.sensors.foot_sample(soles[side], joined.samples[side][1])
                   for side in self.sides}
        try:
            out = self.estimator.step(samples)
        except InvalidInputError as error:  # overflowing values, a non-finite sole pose
            self.drop("dropped_invalid", f"{error}: no ZMP")
            return None
        self.last_output = out
        if out.zmp_in_world is None:
            self.counts["no_contact"] += 1
            return None
        self._period["published"] += 1  # a ZMP came out (published now or thinned by publish_rate)
        last = self._last_published_ns
        if last is not None and self.publish_period_ns and 0 <= stamp - last < self.publish_period_ns:
            return None
        self._last_published_ns = stamp
        self.counts["published"] += 1
        return ZmpResult(stamp, out, found[1])

    def _soles(self, q: np.ndarray) -> dict[str, np.ndarray]:
        key = q.tobytes()
        if self._sole_cache is None or self._sole_cache[0] != key:
            poses = self.model.frame_transforms(self._sole_ids, q)
            self._sole_cache = (key, dict(zip(self.sides, poses, strict=True)))
        return self._sole_cache[1]

    # --- status, zeroing -------------------------------------------------------------------

    def status(self) -> LoopStatus:
        """The status now, from what happened since the last call (from any thread: the
        period's counters are swapped for fresh ones first, each in one assignment, so a drop
        counted meanwhile goes to the next period instead of being reset unreported)."""
        period, self._period = self._period, {"dropped": 0, "published": 0, "unpaired": 0}
        drop_reason, self._drop_reason = self._drop_reason, None
        level, message = self._level(period, drop_reason)
        values: dict[str, Any] = dict(self.counts)
        values["dropped_unpaired"] = self.joiner.dropped
        values["fsr_resyncs"] = self.joiner.resyncs
        out = self.last_output
        if out is not None:
            for side in self.sides:
                values[f"{side}_contact"] = out.contacts[side]
                values[f"{side}_normal_force_N"] = out.normal_forces[side]
            if out.margin is not None:
                values["margin_m"] = out.margin
        return LoopStatus(level, message, values)

    def _level(self, period: dict[str, int], drop_reason: tuple[int, str] | None) -> tuple[int, str]:
        now = self.clock.now_ns()
        silent = []
        for side in self.sides:
            arrival = self._last_arrival_ns[side]
            if arrival is None:
                silent.append(f"no {side} foot sensor data yet")
            elif now - arrival > self.sensor_timeout_ns:
                silent.append(f"{side} foot sensor silent for {1e-9 * (now - arrival):.3f} s")
        if silent:
            return STALE, (f"{'; '.join(silent)} (timeout {1e-9 * self.sensor_timeout_ns:.3f} s): "
                           "no ZMP")
        dropped, produced = period["dropped"], period["published"]
        if dropped == 0 and produced == 0 and period["unpaired"] > 0:
            return ERROR, "no ZMP: " + self.sensors.unpaired_reason(
                period["unpaired"], self.config.sync_tolerance_s, self.config.sensor_timeout_s)
        if dropped and drop_reason is not None:
            level, reason = drop_reason
            if produced == 0:
                return max(level, ERROR), f"no ZMP: {dropped} samples dropped: {reason}"
            return max(level, WARN), f"{dropped} samples dropped ({produced} ZMPs): {reason}"
        out = self.last_output
        if out is None:
            return WARN, "no ZMP yet (waiting for joint states)"
        if out.zmp_in_world is None or out.margin is None:
            return WARN, "no foot in contact: no ZMP"
        touching = [s for s in self.sides if out.contacts[s]]
        support = "double support" if len(touching) == 2 else f"single support on the {touching[0]} foot"
        if out.margin < 0:
            return ERROR, f"{support}, ZMP {1000 * -out.margin:.1f} mm {OUTSIDE_POLYGON}"
        return OK, f"{support}, margin {1000 * out.margin:.1f} mm"

    def zero(self, sides: Sequence[str]) -> ZeroResult:
        """Zero the sensors of ``sides`` from the mean of their last ``zero_window`` of
        readings, keeping each foot's own weight; all or nothing."""
        problem = self.sensors.zero_problem()
        if problem is not None:
            return ZeroResult(False, problem)
        q_entry = self.joint_states.newest()
        if q_entry is None:
            return ZeroResult(False, "no joint state yet: the feet's orientation is unknown")
        soles = self._soles(q_entry[1])
        means = {}
        for side in sides:
            recent = self._recent[side]
            if not recent:
                return ZeroResult(False, f"no {side} foot sensor data yet")
            newest = recent[-1][0]
            means[side] = np.mean([w for t, w in recent if newest - t <= self.zero_window_ns], axis=0)
        offsets = self.estimator.offsets
        previous = {s: offsets[s].copy() for s in sides}
        try:
            for side in sides:
                self.estimator.zero(side, means[side][:3], means[side][3:], soles[side],
                                    max_load=self.config.zero_max_load_n)
        except InvalidInputError as error:
            offsets.update(previous)  # all or nothing
            return ZeroResult(False, f"refused: {error}", refused=True)
        return ZeroResult(True, "zeroed " + ", ".join(
            f"{s} (force offset {np.round(offsets[s][:3], 2).tolist()} N)" for s in sides))


def _ns(seconds: float) -> int:
    """[s] -> [ns], as the node always converted its parameters."""
    return int(seconds * 1e9)
