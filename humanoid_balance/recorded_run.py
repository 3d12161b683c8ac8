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
- :func:`peak_shift_mm`: the peak displacement of a ground point (CoP, ZMP)
  from where it rested before the strike.
- :func:`run_metrics`, :func:`comparison_metrics`: the figures of one run, and
  of a run with RMC against one without (the ratio of the CoP peak shifts).
- :func:`rate_metrics`: how regularly each command topic came.

No rclpy at import time (message classes are imported when a bag is read).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from humanoid_balance.bag import BagError, bag_topics, deserialize, read_bag
from humanoid_balance.core.support import OUTSIDE_POLYGON
from humanoid_balance.results import metric

#: s of rest before the strike whose mean position the peak shifts are measured from
REST_WINDOW_S = 0.2
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

@dataclass
class Series:
    """Samples of a quantity over time.

    Attributes:
        t: stamps [s] (n,).
        values: samples (n, k), in the quantity's unit.
    """

    t: np.ndarray
    values: np.ndarray

    @classmethod
    def empty(cls, width: int) -> Series:
        """A series without samples, ``width`` values each."""
        return cls(np.zeros(0), np.zeros((0, width)))

    @classmethod
    def of(cls, rows: list[tuple[float, ...]], width: int) -> Series:
        """A series from rows ``(t, v_1, ..., v_width)``, sorted by time."""
        if not rows:
            return cls.empty(width)
        arr = np.array(rows, dtype=float)
        arr = arr[np.argsort(arr[:, 0], kind="stable")]
        return cls(arr[:, 0], arr[:, 1:])

    def __len__(self) -> int:
        return int(self.t.size)

    def between(self, start: float, end: float) -> Series:
        """The samples with ``start <= t <= end``."""
        keep = (self.t >= start) & (self.t <= end)
        return Series(self.t[keep], self.values[keep])


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
    rows: dict[str, list[tuple[float, ...]]] = {t: [] for t in known}
    joint_states = _JointStates()
    command_times: dict[str, list[int]] = {t: [] for t in wanted if is_command_topic(t)}
    holds = 0
    hold_rows: list[tuple[float, ...]] = []
    misses: int | None = None
    faults: dict[str, float] = {}
    events: list[DiagnosticEvent] = []
    polygon: list[tuple[float, float]] = []
    read = 0
    next_report = time.monotonic() + progress_period_s
    for raw in read_bag(path, wanted):
        read += 1
        if progress is not None and time.monotonic() >= next_report:
            next_report += progress_period_s
            progress(read, total)
        topic = raw.topic
        if topic in command_times:
            command_times[topic].append(raw.log_time_ns)
        if topic not in known:
            continue  # a command topic whose log times are all that is read
        msg = deserialize(raw)
        if topic in ("/sim/cop", "/zmp"):
            rows[topic].append((_stamp(msg), msg.point.x, msg.point.y))
        elif topic == "/joint_states":
            joint_states.add(msg)
        elif topic == "/arm_balance/momentum":
            run.rmc = True
            f, m = msg.wrench.force, msg.wrench.torque
            rows[topic].append((_stamp(msg), f.x, f.y, f.z, m.x, m.y, m.z))
        elif topic in JOB_TOPICS:
            velocity = np.abs(np.asarray(msg.velocity, dtype=float))
            if topic == "/joint_commands" and not any(n.endswith("_shoulder_pitch")
                                                      for n in msg.name):
                continue  # not an arm's command
            rows["/arm_balance/job_joint_velocities"].append(
                (_stamp(msg), float(velocity.max()) if velocity.size else 0.0))
        elif topic == "/waist/command":
            names = list(msg.joint_names)
            if all(j in names for j in WAIST_JOINTS):
                index = [names.index(j) for j in WAIST_JOINTS]
                start = 1e-9 * raw.log_time_ns if _stamp(msg) == 0.0 else _stamp(msg)
                for point in msg.points:
                    offset = point.time_from_start.sec + 1e-9 * point.time_from_start.nanosec
                    rows[topic].append((start + offset, *(point.positions[i] for i in index)))
        elif topic == "/waist/joint_states":
            names = list(msg.name)
            if all(j in names for j in WAIST_JOINTS):
                rows[topic].append((_stamp(msg), *(msg.position[names.index(j)]
                                                   for j in WAIST_JOINTS)))
        elif topic == "/waist/tracking_error":
            rows[topic].append((_stamp(msg), msg.vector.x, msg.vector.y))
        elif topic == "/zmp/stability_margin":
            rows[topic].append((1e-9 * raw.log_time_ns, float(msg.data)))
        elif topic == "/support_polygon":
            polygon = [(p.x, p.y) for p in msg.polygon.points]
        elif topic == "/diagnostics":
            t = _stamp(msg)
            for status in msg.status:
                values = {kv.key: kv.value for kv in status.values}
                level = _level(status.level)
                events.append(DiagnosticEvent(t, str(status.name), level, str(status.message)))
                if status.name.startswith("arm_balance") and "holds" in values:
                    count = _int_value(values["holds"]) or 0
                    holds = max(holds, count)
                    hold_rows.append((t, float(count)))
                if status.name.startswith("mujoco_sim"):
                    for key in LOCK_STEP_MISS_KEYS:
                        missed = _int_value(values.get(key, ""))
                        if missed is not None:
                            misses = max(misses or 0, missed)
                if level >= ERROR_LEVEL:
                    text = f"{status.name}: {status.message}"
                    faults[text] = max(faults.get(text, -np.inf), t)
    if progress is not None:
        progress(read, total)
    run.cop = Series.of(rows["/sim/cop"], 2)
    run.zmp = Series.of(rows["/zmp"], 2)
    run.momentum_commanded = Series.of(rows["/arm_balance/momentum"], 6)
    run.job = Series.of(rows["/arm_balance/job_joint_velocities"], 1)
    run.waist_command = Series.of(rows["/waist/command"], 2)
    run.joint_names, run.joints_q, run.joints_v = joint_states.body()
    run.waist_drive = Series.of(rows["/waist/joint_states"]
                                or joint_states.waist(run.joint_names), 2)
    run.waist_tracking_error = Series.of(rows["/waist/tracking_error"], 2)
    run.stability_margin = Series.of(rows["/zmp/stability_margin"], 1)
    run.support_polygon = np.array(polygon, dtype=float).reshape(-1, 2)
    run.command_times = {t: 1e-9 * np.array(v, dtype=float) for t, v in command_times.items()}
    run.arm_holds = holds
    run.holds = Series.of(hold_rows, 1)
    run.lock_step_misses = misses
    run.faults = faults
    run.diagnostics = sorted(events, key=lambda e: e.t)
    return run


def sole_outlines(run: RecordedRun, model: Any, at: float,
                  sole_corners: Mapping[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Each foot's support outline (K x 2, [m], in ``W``) at the feet's poses of the joint state at ``at``.

    The outline is the hull of the foot's contact points, those the ZMP estimator
    builds its support polygon from (:class:`humanoid_balance.core.support.SupportPolygon`
    of ``config/zmp.yaml``'s ``{side}.contact_frames`` and ``{side}.sole_frame``), so
    the hull of the outlines is the estimator's polygon with both feet down.

    Args:
        run: the recorded run (its ``/joint_states``).
        model: the humanoid's :class:`~humanoid_balance.core.model.RobotModel` (``world_frame="W"``).
        at: simulation time [s]: the last joint state up to it is used (the first if none).
        sole_corners: side -> (K, 2) points in the sole frame ``{side}_sole`` [m] instead.

    Raises:
        BagError: the run has no joint states.
    """
    from humanoid_balance.core.support import convex_hull

    if not len(run.joints_q):
        raise BagError(f"{run.label}: no /joint_states recorded: the feet's poses are unknown")
    if sole_corners is None:
        points, sole_frames = estimator_contact_points(model)
    else:
        points = {side: np.asarray(c, dtype=float) for side, c in sole_corners.items()}
        sole_frames = {side: f"{side}_sole" for side in points}
    i = max(0, int(np.searchsorted(run.joints_q.t, at, side="right")) - 1)
    names = [n for n in run.joint_names if n in model.model.names]
    q = model.configuration(dict(zip(names, (float(run.joints_q.values[i, run.joint_names.index(n)])
                                             for n in names), strict=True)))
    out = {}
    for side, local_xy in points.items():
        pose = model.frame_transform(sole_frames[side], q)
        local = np.column_stack([local_xy, np.zeros(len(local_xy)), np.ones(len(local_xy))])
        out[side] = convex_hull((pose @ local.T).T[:, :2])
    return out


def estimator_contact_points(model: Any) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """The ZMP estimator's contact points per foot (N x 2, [m], sole frame) and sole frames.

    From ``config/zmp.yaml`` (``{side}.contact_frames``, ``{side}.sole_frame``) read in
    ``model`` by :meth:`humanoid_balance.core.support.SupportPolygon.from_model`; the
    seed humanoid's defaults where the file does not name them.
    """
    import yaml

    from humanoid_balance.core.support import SIDES, SupportPolygon
    from humanoid_balance.resources import config_path

    with open(config_path("zmp.yaml")) as stream:
        parameters = yaml.safe_load(stream)["/**/zmp_estimator"]["ros__parameters"]
    contact_frames = {side: list(parameters[side]["contact_frames"]) for side in SIDES
                      if "contact_frames" in parameters.get(side, {})}
    sole_frames = {side: str(parameters.get(side, {}).get("sole_frame", f"{side}_sole"))
                   for side in SIDES}
    polygon = SupportPolygon.from_model(model, contact_frames=contact_frames or None,
                                        sole_frames=sole_frames)
    return dict(polygon.points_in_sole), sole_frames


def peak_shift_mm(points: Series, start: float, end: float = float("inf")) -> float:
    """Peak distance [mm] of a ground point from its mean over the :data:`REST_WINDOW_S` before ``start``.

    .. math:: \\max_{start \\le t \\le end} \\lVert p(t) - \\bar p_{rest} \\rVert

    Args:
        points: x, y [m] over time [s].
        start: the strike's start [s]; ``end``: the last time considered [s].

    Returns:
        nan when there are no samples before or after ``start``.
    """
    if not len(points):
        return float("nan")
    before = points.between(start - REST_WINDOW_S, start - 1e-12)
    after = points.between(start, end)
    if not len(before) or not len(after):
        return float("nan")
    rest = before.values.mean(axis=0)
    return float(np.linalg.norm(after.values - rest, axis=1).max() * 1e3)


def measured_momentum(run: RecordedRun, model: Any, max_samples: int = 20000) -> Series:
    """Momentum ``[P; L]`` about the balance frame ``W`` of the recorded joint states.

    Computed with the humanoid's model (fixed base, ``world_frame="W"``) from
    ``/joint_states`` positions and velocities: the momentum the joints really
    had, with or without a controller in the loop. Samples without velocities
    are left out.

    Args:
        run: the recorded run.
        model: a :class:`humanoid_balance.core.model.RobotModel` of the humanoid.
        max_samples: at most this many samples, evenly taken (a long bag's plot
            needs no more).
    """
    if not len(run.joints_q):
        return Series.empty(6)
    names = [n for n in run.joint_names if n in model.model.names]
    if not names:
        return Series.empty(6)
    columns = [run.joint_names.index(n) for n in names]
    rows = np.flatnonzero(np.isfinite(run.joints_v.values[:, columns]).all(axis=1))
    if rows.size > max_samples:
        rows = rows[np.linspace(0, rows.size - 1, max_samples).round().astype(int)]
    q_index = model.q_index(names)
    v_index = model.v_index(names)
    q = model.neutral()
    v = np.zeros(model.nv)
    out = np.zeros((rows.size, 6))
    for k, i in enumerate(rows):
        q[q_index] = run.joints_q.values[i, columns]
        v[v_index] = run.joints_v.values[i, columns]
        out[k] = model.momentum(q, v, np.zeros(3))
    return Series(run.joints_q.t[rows].copy(), out)


def _rounded(value: float, digits: int) -> float:
    return round(value, digits) if np.isfinite(value) else float("nan")


def run_metrics(run: RecordedRun, start: float | None = None,
                end: float = float("inf")) -> dict[str, dict[str, Any]]:
    """The figures of one run (RESULTS.md metrics), computed from its recording.

    Args:
        run: the recorded run.
        start: the strike's start [s] (default: from the job input, :meth:`RecordedRun.strike_start`);
            nan for a run without a strike (no peak shifts; momentum over the whole run).
        end: the last simulation time considered [s].
    """
    start = run.strike_start() if start is None else start
    momentum = run.momentum_commanded.between(start if np.isfinite(start) else -np.inf, end)
    lxy = float(np.abs(momentum.values[:, 3:5]).max()) if len(momentum) else float("nan")
    # the controller's own /waist/tracking_error: its shaped reference less its measurement
    error = run.waist_tracking_error.between(-np.inf, end)
    waist_error_deg = float(np.rad2deg(np.hypot(*error.values.T).max())) if len(error) \
        else float("nan")
    # against what was asked (issue 32): the drives' angles less /waist/command's points
    # joined by straight segments on their times, while the commands came
    commanded = run.waist_command.between(-np.inf, end)
    drive = run.waist_drive.between(commanded.t[0], commanded.t[-1]) if len(commanded) \
        else Series.empty(2)
    command_error_deg = float(np.rad2deg(np.max(np.hypot(*(drive.values - np.column_stack(
        [np.interp(drive.t, commanded.t, commanded.values[:, k]) for k in range(2)])).T))))\
        if len(drive) else float("nan")
    waist_sim = run.joint("waist_pitch").between(-np.inf, end)
    metrics = {
        "cop_peak_shift_mm": metric(_rounded(peak_shift_mm(run.cop, start, end), 2), "mm",
                                    better="lower"),
        "zmp_peak_shift_mm": metric(_rounded(peak_shift_mm(run.zmp, start, end), 2), "mm",
                                    better="lower"),
        "max_abs_Lx_Ly_commanded": metric(lxy, "N m s", better="lower"),
        "arm_balance_holds": metric(run.arm_holds, "", target=0, better="lower"),
        "faults_seen": metric(len(run.faults_from(run.scenario_start)), "", target=0,
                              better="lower"),
        "balance_faults_seen": metric(len(run.faults_from(run.scenario_start, balance=True)), "",
                                      better="lower"),
        "lock_step_misses": metric(float("nan") if run.lock_step_misses is None
                                   else run.lock_step_misses, "", target=0, better="lower"),
        "waist_max_tracking_error_deg": metric(_rounded(waist_error_deg, 4), "deg",
                                               better="lower"),
        "waist_max_command_error_deg": metric(_rounded(command_error_deg, 4), "deg",
                                              better="lower"),
        "waist_pitch_final_deg_sim": metric(
            _rounded(float(np.rad2deg(waist_sim.values[-1, 0])), 3) if len(waist_sim)
            else float("nan"), "deg"),
    }
    # what the recording does not hold is left out (no NaN in the JSON)
    return {name: entry for name, entry in metrics.items()
            if not (isinstance(entry["value"], float) and not np.isfinite(entry["value"]))}


#: the target of the CoP peak-shift ratio, with RMC / without (issue 10)
RATIO_TARGET = 0.25


def comparison_metrics(with_rmc: Mapping[str, Mapping[str, Any]],
                       without_rmc: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The peak shifts without RMC and their ratios (with / without), from :func:`run_metrics` of each."""
    out: dict[str, dict[str, Any]] = {}
    for name in ("cop_peak_shift_mm", "zmp_peak_shift_mm"):
        if name not in with_rmc or name not in without_rmc:
            continue
        rmc = float(with_rmc[name]["value"])
        base = float(without_rmc[name]["value"])
        out[f"{name}_no_rmc"] = metric(base, "mm")
        label = name.replace("_peak_shift_mm", "")
        if base > 0:
            out[f"{label}_peak_shift_ratio"] = metric(
                round(rmc / base, 4), "", target=RATIO_TARGET if label == "cop" else None,
                better="lower")
    return out


def rate_metrics(run: RecordedRun) -> dict[str, dict[str, Any]]:
    """Each command topic's median rate [Hz] and longest gap [ms], from its log times.

    A topic with fewer than two messages has no rate and is left out.
    """
    out: dict[str, dict[str, Any]] = {}
    for topic, times in sorted(run.command_times.items()):
        if times.size < 2:
            continue
        gaps = np.diff(np.sort(times))
        median = float(np.median(gaps))
        out[f"{topic} rate"] = metric(round(1.0 / median, 2) if median > 0 else float("inf"),
                                      "Hz")
        out[f"{topic} longest gap"] = metric(round(float(gaps.max()) * 1e3, 2), "ms")
    return out
