"""One recorded run of the humanoid (simulated or real), read back from its bag, and its figures.

``humanoid-balance demo`` records each run (with and without resolved momentum
control) to a rosbag2 directory; everything it reports, plots and puts on its
page is computed from those recordings through this module, so that a bag
recorded elsewhere (``humanoid-balance record`` on the robot, a later
``humanoid-balance report BAG``) gives the same figures the same way.

- :func:`load_run`: the topics the figures need, from a bag, as arrays
  (:class:`RecordedRun`); stamps are the messages' header stamps (simulation
  time in a simulated run); topics without a header (the stability margin)
  and the command rates use the log time (when the recorder got the message).
- the figures, in :mod:`humanoid_balance.recorded_run_metrics` and re-exported here:
  :func:`peak_shift_mm` (the peak displacement of a ground point from where it
  rested before the strike), :func:`run_metrics` and :func:`comparison_metrics` (the
  figures of one run, and of a run with RMC against one without), :func:`rate_metrics`
  (how regularly each command topic came), :func:`sole_outlines` and
  :func:`measured_momentum`.

No rclpy at import time (message classes are imported when a bag is read).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from humanoid_balance.bag import BagError, bag_topics, deserialize, read_bag
from humanoid_balance.core.support import OUTSIDE_POLYGON
from humanoid_balance.recorded_run_metrics import (
    RATIO_TARGET,
    REST_WINDOW_S,
    comparison_metrics,
    measured_momentum,
    peak_shift_mm,
    rate_metrics,
    run_metrics,
    sole_outlines,
)
from humanoid_balance.recorded_series import Series

__all__ = [
    "BALANCE_FAULT", "COMMAND_TOPICS", "ERROR_LEVEL", "EXTRA_TOPICS", "JOB_TOPICS",
    "LEVEL_NAMES", "LOCK_STEP_MISS_KEYS", "RATIO_TARGET", "REST_WINDOW_S", "TOPICS",
    "WAIST_JOINTS", "DiagnosticEvent", "Progress", "RecordedRun", "Series", "comparison_metrics",
    "is_command_topic", "load_run", "measured_momentum", "peak_shift_mm", "rate_metrics",
    "run_metrics", "sole_outlines",
]

#: the job input topics a strike driver publishes on: with RMC (velocities to arm_balance),
#: without RMC (position + velocity straight to the robot's servos)
JOB_TOPICS = ("/arm_balance/job_joint_velocities", "/joint_commands")
#: the diagnostic key of mujoco_sim's lock-step misses (periods that went on without a command)
LOCK_STEP_MISS_KEYS = ("lock_step_misses",)
#: the topics the figures come from (topic -> message type): what a run must record for its
#: report; :func:`load_run` reads them where the bag has them
TOPICS = {
    "/sim/cop": "geometry_msgs/msg/PointStamped",
    "/zmp": "geometry_msgs/msg/PointStamped",
    "/joint_states": "sensor_msgs/msg/JointState",
    "/arm_balance/momentum": "geometry_msgs/msg/WrenchStamped",
    "/arm_balance/job_joint_velocities": "sensor_msgs/msg/JointState",
    "/joint_commands": "sensor_msgs/msg/JointState",
    "/waist/command": "trajectory_msgs/msg/JointTrajectory",
    "/waist/joint_states": "sensor_msgs/msg/JointState",
    "/waist/tracking_error": "geometry_msgs/msg/Vector3Stamped",
    "/diagnostics": "diagnostic_msgs/msg/DiagnosticArray",
}
#: read where a bag has them, beside :data:`TOPICS` (not needed for the demo's figures)
EXTRA_TOPICS = {
    "/zmp/stability_margin": "std_msgs/msg/Float64",
    "/support_polygon": "geometry_msgs/msg/PolygonStamped",
}
#: the command topics whose rates are reported (only their log times are read); any other
#: topic whose name ends in ``/command``, ``/commands`` or ``/joint_trajectory`` counts too
#: (ros2_control controllers' inputs)
COMMAND_TOPICS = ("/arm_balance/command", "/waist/command", "/identification/command",
                  "/joint_commands", "/arm_balance/job_joint_velocities", "/arm_balance/job_twist")
WAIST_JOINTS = ("waist_pitch", "waist_roll")
#: diagnostic levels by their value (``diagnostic_msgs/DiagnosticStatus``)
LEVEL_NAMES = {0: "OK", 1: "WARN", 2: "ERROR", 3: "STALE"}
ERROR_LEVEL = 2


def is_command_topic(topic: str) -> bool:
    """Whether ``topic`` carries commands (:data:`COMMAND_TOPICS`, or a controller's input name)."""
    return topic in COMMAND_TOPICS or topic.endswith(("/command", "/commands", "/joint_trajectory"))


#: zmp_estimator's ERROR when the measured ZMP leaves the support polygon: the robot is tipping
#: (a balance fault), not a node failing
BALANCE_FAULT = OUTSIDE_POLYGON


@dataclass(frozen=True)
class DiagnosticEvent:
    """One status of a ``/diagnostics`` message.

    Attributes:
        t: the message's stamp [s].
        name: the status's name (``node: what``).
        level: 0 OK, 1 WARN, 2 ERROR, 3 STALE.
        message: its text.
    """

    t: float
    name: str
    level: int
    message: str


@dataclass
class RecordedRun:
    """What a run's bag holds that the figures use (stamps in [s], positions in [m], angles in [rad]).

    Attributes:
        label: the run's name in tables and legends.
        cop: ``/sim/cop`` x, y (the simulator's centre of pressure, from contact forces).
        zmp: ``/zmp`` x, y (the ZMP the estimator computed from the foot sensors).
        joint_names: names of ``/joint_states`` (the message with the most joints: on a robot
            several drivers may publish parts of the body there).
        joints_q, joints_v: ``/joint_states`` positions [rad], velocities [rad/s] (nan where a
            message had no velocities).
        job: the job input (``/arm_balance/job_joint_velocities`` or ``/joint_commands``):
            per sample the largest |joint velocity| [rad/s].
        rmc: the run had resolved momentum control (arm_balance reported its momentum).
        momentum_commanded: ``/arm_balance/momentum`` [Px, Py, Pz (N s), Lx, Ly, Lz (N m s)].
        waist_drive: the waist drives' encoders, pitch, roll: ``/waist/joint_states``, or on a
            robot the waist controller's own ``/joint_states`` messages (waist joints only).
        waist_command: ``/waist/command`` pitch, roll: the trajectory points at their times.
        waist_tracking_error: ``/waist/tracking_error`` pitch, roll.
        arm_holds: the largest ``holds`` arm_balance reported on ``/diagnostics``.
        holds: arm_balance's ``holds`` count over time.
        lock_step_misses: the largest lock-step miss count mujoco_sim reported (None: not reported).
        faults: distinct ``name: message`` of the ERROR statuses on ``/diagnostics``, each
            with the last stamp [s] it came with (:meth:`faults_from`).
        diagnostics: every status of ``/diagnostics``, in time order.
        stability_margin: ``/zmp/stability_margin`` [m] (positive inside) at its log times.
        support_polygon: the last ``/support_polygon`` (K x 2, [m]; empty if not recorded).
        command_times: command topic -> log times [s] of its messages.
        topics: topic -> (type, message count) of the bag.
        simulated: the bag holds a simulation's ground truth (``/sim/...`` topics).
    """

    label: str
    cop: Series = field(default_factory=lambda: Series.empty(2))
    zmp: Series = field(default_factory=lambda: Series.empty(2))
    joint_names: tuple[str, ...] = ()
    joints_q: Series = field(default_factory=lambda: Series.empty(0))
    joints_v: Series = field(default_factory=lambda: Series.empty(0))
    job: Series = field(default_factory=lambda: Series.empty(1))
    rmc: bool = False
    momentum_commanded: Series = field(default_factory=lambda: Series.empty(6))
    waist_drive: Series = field(default_factory=lambda: Series.empty(2))
    waist_command: Series = field(default_factory=lambda: Series.empty(2))
    waist_tracking_error: Series = field(default_factory=lambda: Series.empty(2))
    arm_holds: int = 0
    holds: Series = field(default_factory=lambda: Series.empty(1))
    lock_step_misses: int | None = None
    faults: dict[str, float] = field(default_factory=dict)
    diagnostics: list[DiagnosticEvent] = field(default_factory=list)
    stability_margin: Series = field(default_factory=lambda: Series.empty(1))
    support_polygon: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    command_times: dict[str, np.ndarray] = field(default_factory=dict)
    topics: dict[str, tuple[str, int]] = field(default_factory=dict)
    simulated: bool = False

    def strike_start(self) -> float:
        """Simulation time [s] the strike started: the stamp of the first job input that moves the arm.

        (Within one control period of the trajectory's start, whichever time a
        driver stamps its input with.)

        Raises:
            BagError: the bag has no job input, or the job arm never moved.
        """
        moving = np.flatnonzero(self.job.values[:, 0] > 1e-9) if len(self.job) else np.zeros(0)
        if moving.size == 0:
            raise BagError(f"{self.label}: no job input ({' or '.join(JOB_TOPICS)}) with a "
                           "moving arm: give the strike start explicitly")
        return float(self.job.t[int(moving[0])])

    @property
    def scenario_start(self) -> float:
        """Simulation time [s] of the first job input: the graph was up (nan without job input)."""
        return float(self.job.t[0]) if len(self.job) else float("nan")

    def faults_from(self, start: float, balance: bool = False) -> list[str]:
        """The faults still reported after ``start`` [s] (not those of the start-up only).

        ``balance``: the balance faults instead (:data:`BALANCE_FAULT`: the estimator's ZMP
        left the support polygon, a state of the robot rather than a failure of a node);
        by default every other fault.
        """
        return [text for text, t in self.faults.items()
                if not t <= start and (BALANCE_FAULT in text) == balance]

    def joint(self, name: str) -> Series:
        """One joint of ``/joint_states``: position [rad]."""
        if name not in self.joint_names:
            return Series.empty(1)
        i = self.joint_names.index(name)
        return Series(self.joints_q.t, self.joints_q.values[:, i:i + 1])

    @property
    def end(self) -> float:
        """The last simulation time [s] with a CoP sample (nan without)."""
        return float(self.cop.t[-1]) if len(self.cop) else float("nan")

    @property
    def first_stamp(self) -> float:
        """The earliest header stamp [s] of the series read (nan when none has samples)."""
        firsts = [float(s.t[0]) for s in (self.cop, self.zmp, self.joints_q, self.job,
                                          self.momentum_commanded, self.waist_drive,
                                          self.waist_command, self.waist_tracking_error)
                  if len(s)]
        firsts += [self.diagnostics[0].t] if self.diagnostics else []
        return min(firsts) if firsts else float("nan")


def _stamp(msg: Any) -> float:
    return float(msg.header.stamp.sec) + 1e-9 * float(msg.header.stamp.nanosec)


def _level(value: bytes | int) -> int:
    """A diagnostic level as an int (the message field is bytes in some distributions)."""
    return value[0] if isinstance(value, (bytes, bytearray)) else int(value)


def _int_value(text: str) -> int | None:
    try:
        return int(float(text))
    except ValueError:
        return None


#: progress callback of :func:`load_run`: (messages read, messages to read)
Progress = Callable[[int, int], None]


class _JointStates:
    """``/joint_states`` rows grouped by their name list (a robot's drivers each publish a part)."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str, ...], tuple[list[float], list[np.ndarray], list[np.ndarray]]] = {}

    def add(self, msg: Any) -> None:
        names = tuple(msg.name)
        if len(msg.position) != len(names) or not names:
            return
        t, q, v = self.groups.setdefault(names, ([], [], []))
        t.append(_stamp(msg))
        q.append(np.asarray(msg.position, dtype=float))
        v.append(np.asarray(msg.velocity, dtype=float) if len(msg.velocity) == len(names)
                 else np.full(len(names), np.nan))

    def body(self) -> tuple[tuple[str, ...], Series, Series]:
        """The names with the most joints (most messages on a tie) and their positions, velocities."""
        if not self.groups:
            return (), Series.empty(0), Series.empty(0)
        names = max(self.groups, key=lambda n: (len(n), len(self.groups[n][0])))
        t_list, q, v = self.groups[names]
        t = np.array(t_list)
        order = np.argsort(t, kind="stable")
        return names, Series(t[order], np.array(q)[order]), Series(t[order], np.array(v)[order])

    def waist(self, body: tuple[str, ...]) -> list[tuple[float, ...]]:
        """Rows (t, pitch, roll) of the messages that hold both waist joints and are not the body."""
        rows: list[tuple[float, ...]] = []
        for names, (t, q, _) in self.groups.items():
            if names == body or not all(j in names for j in WAIST_JOINTS):
                continue
            index = [names.index(j) for j in WAIST_JOINTS]
            rows.extend((ti, *(qi[i] for i in index)) for ti, qi in zip(t, q, strict=True))
        return rows



class _RunReader:
    """The rows :func:`load_run` takes from a bag's messages, appended message by message."""

    def __init__(self, wanted: Sequence[str]) -> None:
        self.rows: dict[str, list[tuple[float, ...]]] = {t: [] for t in {**TOPICS, **EXTRA_TOPICS}}
        self.joint_states = _JointStates()
        self.command_times: dict[str, list[int]] = {t: [] for t in wanted if is_command_topic(t)}
        self.rmc = False
        self.holds = 0
        self.hold_rows: list[tuple[float, ...]] = []
        self.misses: int | None = None
        self.faults: dict[str, float] = {}
        self.events: list[DiagnosticEvent] = []
        self.polygon: list[tuple[float, float]] = []

    def add(self, raw: Any) -> None:
        """One message of the bag (its topic, log time and serialized data)."""
        topic = raw.topic
        if topic in self.command_times:
            self.command_times[topic].append(raw.log_time_ns)
        if topic not in self.rows:
            return  # a command topic whose log times are all that is read
        msg = deserialize(raw)
        rows = self.rows[topic]
        if topic in ("/sim/cop", "/zmp"):
            rows.append((_stamp(msg), msg.point.x, msg.point.y))
        elif topic == "/joint_states":
            self.joint_states.add(msg)
        elif topic == "/arm_balance/momentum":
            self.rmc = True
            f, m = msg.wrench.force, msg.wrench.torque
            rows.append((_stamp(msg), f.x, f.y, f.z, m.x, m.y, m.z))
        elif topic in JOB_TOPICS:
            self._job(topic, msg)
        elif topic == "/waist/command":
            self._waist_command(msg, raw.log_time_ns)
        elif topic == "/waist/joint_states":
            names = list(msg.name)
            if all(j in names for j in WAIST_JOINTS):
                rows.append((_stamp(msg), *(msg.position[names.index(j)] for j in WAIST_JOINTS)))
        elif topic == "/waist/tracking_error":
            rows.append((_stamp(msg), msg.vector.x, msg.vector.y))
        elif topic == "/zmp/stability_margin":
            rows.append((1e-9 * raw.log_time_ns, float(msg.data)))
        elif topic == "/support_polygon":
            self.polygon = [(p.x, p.y) for p in msg.polygon.points]
        elif topic == "/diagnostics":
            self._diagnostics(msg)

    def _job(self, topic: str, msg: Any) -> None:
        """A job input: the largest |joint velocity| [rad/s] (arm commands only)."""
        velocity = np.abs(np.asarray(msg.velocity, dtype=float))
        if topic == "/joint_commands" and not any(n.endswith("_shoulder_pitch") for n in msg.name):
            return  # not an arm's command
        self.rows["/arm_balance/job_joint_velocities"].append(
            (_stamp(msg), float(velocity.max()) if velocity.size else 0.0))

    def _waist_command(self, msg: Any, log_time_ns: int) -> None:
        """The trajectory's points at their times (from the log time for a stamp of 0: now)."""
        names = list(msg.joint_names)
        if not all(j in names for j in WAIST_JOINTS):
            return
        index = [names.index(j) for j in WAIST_JOINTS]
        start = 1e-9 * log_time_ns if _stamp(msg) == 0.0 else _stamp(msg)
        for point in msg.points:
            offset = point.time_from_start.sec + 1e-9 * point.time_from_start.nanosec
            self.rows["/waist/command"].append((start + offset, *(point.positions[i] for i in index)))

    def _diagnostics(self, msg: Any) -> None:
        """Every status; arm_balance's holds, mujoco_sim's lock-step misses, the faults."""
        t = _stamp(msg)
        for status in msg.status:
            values = {kv.key: kv.value for kv in status.values}
            level = _level(status.level)
            self.events.append(DiagnosticEvent(t, str(status.name), level, str(status.message)))
            if status.name.startswith("arm_balance") and "holds" in values:
                count = _int_value(values["holds"]) or 0
                self.holds = max(self.holds, count)
                self.hold_rows.append((t, float(count)))
            if status.name.startswith("mujoco_sim"):
                for key in LOCK_STEP_MISS_KEYS:
                    missed = _int_value(values.get(key, ""))
                    if missed is not None:
                        self.misses = max(self.misses or 0, missed)
            if level >= ERROR_LEVEL:
                text = f"{status.name}: {status.message}"
                self.faults[text] = max(self.faults.get(text, -np.inf), t)

    def fill(self, run: RecordedRun) -> None:
        """Put what was read into ``run``."""
        rows = self.rows
        run.rmc = self.rmc
        run.cop = Series.of(rows["/sim/cop"], 2)
        run.zmp = Series.of(rows["/zmp"], 2)
        run.momentum_commanded = Series.of(rows["/arm_balance/momentum"], 6)
        run.job = Series.of(rows["/arm_balance/job_joint_velocities"], 1)
        run.waist_command = Series.of(rows["/waist/command"], 2)
        run.joint_names, run.joints_q, run.joints_v = self.joint_states.body()
        run.waist_drive = Series.of(rows["/waist/joint_states"]
                                    or self.joint_states.waist(run.joint_names), 2)
        run.waist_tracking_error = Series.of(rows["/waist/tracking_error"], 2)
        run.stability_margin = Series.of(rows["/zmp/stability_margin"], 1)
        run.support_polygon = np.array(self.polygon, dtype=float).reshape(-1, 2)
        run.command_times = {t: 1e-9 * np.array(v, dtype=float)
                             for t, v in self.command_times.items()}
        run.arm_holds = self.holds
        run.holds = Series.of(self.hold_rows, 1)
        run.lock_step_misses = self.misses
        run.faults = self.faults
        run.diagnostics = sorted(self.events, key=lambda e: e.t)


def load_run(path: str | Path, label: str, *, topics: Iterable[str] | None = None,
             progress: Progress | None = None, progress_period_s: float = 1.0) -> RecordedRun:
    """Read one run from its bag.

    Args:
        path: the rosbag2 directory.
        label: the run's name in tables and legends.
        topics: read only these (default every topic of :data:`TOPICS`,
            :data:`EXTRA_TOPICS` and every command topic the bag has).
        progress: called with (messages read, messages to read) about every
            ``progress_period_s`` wall seconds, and once at the end.

    Raises:
        BagError: the bag cannot be read.
    """
    available = bag_topics(path)
    known = {**TOPICS, **EXTRA_TOPICS}
    if topics is None:
        wanted = [t for t in available if t in known or is_command_topic(t)]
    else:
        wanted = [t for t in topics if t in available]
    total = sum(available[t][1] for t in wanted)
    run = RecordedRun(label, topics=dict(available),
                      simulated=any(t.startswith("/sim/") for t in available))
    reader = _RunReader(wanted)
    read = 0
    next_report = time.monotonic() + progress_period_s
    for raw in read_bag(path, wanted):
        read += 1
        if progress is not None and time.monotonic() >= next_report:
            next_report += progress_period_s
            progress(read, total)
        reader.add(raw)
    if progress is not None:
        progress(read, total)
    reader.fill(run)
    return run
