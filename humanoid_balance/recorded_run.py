"""One recorded run of the simulated humanoid, read back from its bag, and its figures.

``humanoid-balance demo`` records each run (with and without resolved momentum
control) to a rosbag2 directory; everything it reports, plots and puts on its
page is computed from those recordings through this module, so that a bag
recorded elsewhere (``humanoid-balance record`` on the robot, a later
``humanoid-balance report BAG``) gives the same figures the same way.

- :func:`load_run`: the topics the figures need, from a bag, as arrays
  (:class:`RecordedRun`); stamps are the messages' header stamps (simulation
  time in a simulated run), diagnostics use the log time.
- :func:`peak_shift_mm`: the peak displacement of a ground point (CoP, ZMP)
  from where it rested before the strike.
- :func:`run_metrics`, :func:`comparison_metrics`: the figures of one run, and
  of a run with RMC against one without (the ratio of the CoP peak shifts).

No rclpy at import time (message classes are imported when a bag is read).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from humanoid_balance.bag import BagError, bag_topics, deserialize, read_bag
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
WAIST_JOINTS = ("waist_pitch", "waist_roll")


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


@dataclass
class RecordedRun:
    """What a run's bag holds that the figures use (stamps in [s], positions in [m], angles in [rad]).

    Attributes:
        label: the run's name in tables and legends.
        cop: ``/sim/cop`` x, y (the simulator's centre of pressure, from contact forces).
        zmp: ``/zmp`` x, y (the ZMP the estimator computed from the foot sensors).
        joint_names: names of ``/joint_states``.
        joints_q, joints_v: ``/joint_states`` positions [rad], velocities [rad/s].
        job: the job input (``/arm_balance/job_joint_velocities`` or ``/joint_commands``):
            per sample the largest |joint velocity| [rad/s].
        rmc: the run had resolved momentum control (arm_balance reported its momentum).
        momentum_commanded: ``/arm_balance/momentum`` [Px, Py, Pz (N s), Lx, Ly, Lz (N m s)].
        waist_drive: ``/waist/joint_states`` pitch, roll: the waist drives' encoders.
        waist_command: ``/waist/command`` pitch, roll: the trajectory points at their times.
        waist_tracking_error: ``/waist/tracking_error`` pitch, roll.
        arm_holds: the largest ``holds`` arm_balance reported on ``/diagnostics``.
        lock_step_misses: the largest lock-step miss count mujoco_sim reported (None: not reported).
        faults: distinct ``name: message`` of the ERROR statuses on ``/diagnostics``, each
            with the last stamp [s] it came with (:meth:`faults_from`).
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
    lock_step_misses: int | None = None
    faults: dict[str, float] = field(default_factory=dict)

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

    def faults_from(self, start: float) -> list[str]:
        """The faults still reported after ``start`` [s] (not those of the start-up only)."""
        return [text for text, t in self.faults.items() if not t <= start]

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


def load_run(path: str | Path, label: str, *, topics: Iterable[str] | None = None) -> RecordedRun:
    """Read one run from its bag.

    Args:
        path: the rosbag2 directory.
        label: the run's name in tables and legends.
        topics: read only these (default every topic of :data:`TOPICS` the bag has).

    Raises:
        BagError: the bag cannot be read.
    """
    available = bag_topics(path)
    wanted = [t for t in (TOPICS if topics is None else topics) if t in available]
    run = RecordedRun(label)
    rows: dict[str, list[tuple[float, ...]]] = {t: [] for t in TOPICS}
    q_rows: list[np.ndarray] = []
    v_rows: list[np.ndarray] = []
    q_t: list[float] = []
    holds = 0
    misses: int | None = None
    faults: dict[str, float] = {}
    from diagnostic_msgs.msg import DiagnosticStatus

    error_level = _level(DiagnosticStatus.ERROR)
    for raw in read_bag(path, wanted):
        msg = deserialize(raw)
        topic = raw.topic
        if topic in ("/sim/cop", "/zmp"):
            rows[topic].append((_stamp(msg), msg.point.x, msg.point.y))
        elif topic == "/joint_states":
            if not run.joint_names:
                run.joint_names = tuple(msg.name)
            if tuple(msg.name) == run.joint_names and len(msg.velocity) == len(msg.name):
                q_t.append(_stamp(msg))
                q_rows.append(np.asarray(msg.position, dtype=float))
                v_rows.append(np.asarray(msg.velocity, dtype=float))
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
        elif topic == "/diagnostics":
            for status in msg.status:
                values = {kv.key: kv.value for kv in status.values}
                if status.name.startswith("arm_balance") and "holds" in values:
                    holds = max(holds, _int_value(values["holds"]) or 0)
                if status.name.startswith("mujoco_sim"):
                    for key in LOCK_STEP_MISS_KEYS:
                        count = _int_value(values.get(key, ""))
                        if count is not None:
                            misses = max(misses or 0, count)
                if _level(status.level) >= error_level:
                    text = f"{status.name}: {status.message}"
                    faults[text] = max(faults.get(text, -np.inf), _stamp(msg))
    run.cop = Series.of(rows["/sim/cop"], 2)
    run.zmp = Series.of(rows["/zmp"], 2)
    run.momentum_commanded = Series.of(rows["/arm_balance/momentum"], 6)
    run.job = Series.of(rows["/arm_balance/job_joint_velocities"], 1)
    run.waist_command = Series.of(rows["/waist/command"], 2)
    run.waist_drive = Series.of(rows["/waist/joint_states"], 2)
    run.waist_tracking_error = Series.of(rows["/waist/tracking_error"], 2)
    if q_rows:
        t = np.array(q_t)
        order = np.argsort(t, kind="stable")
        run.joints_q = Series(t[order], np.array(q_rows)[order])
        run.joints_v = Series(t[order], np.array(v_rows)[order])
    run.arm_holds = holds
    run.lock_step_misses = misses
    run.faults = faults
    return run


def sole_outlines(run: RecordedRun, model: Any, at: float,
                  sole_corners: Mapping[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Each sole's outline (K x 2, [m], in ``W``) at the feet's poses of the joint state at ``at``.

    Args:
        run: the recorded run (its ``/joint_states``).
        model: the humanoid's :class:`~humanoid_balance.core.model.RobotModel` (``world_frame="W"``).
        at: simulation time [s]: the last joint state up to it is used (the first if none).
        sole_corners: side -> (K, 2) corners in the sole frame [m]; default the ZMP
            estimator's ``{side}.sole_polygon`` of ``config/zmp.yaml``.

    Raises:
        BagError: the run has no joint states.
    """
    if not len(run.joints_q):
        raise BagError(f"{run.label}: no /joint_states recorded: the feet's poses are unknown")
    corners = sole_corners if sole_corners is not None else estimator_sole_corners()
    i = max(0, int(np.searchsorted(run.joints_q.t, at, side="right")) - 1)
    names = [n for n in run.joint_names if n in model.model.names]
    q = model.configuration(dict(zip(names, (float(run.joints_q.values[i, run.joint_names.index(n)])
                                             for n in names), strict=True)))
    out = {}
    for side, outline in corners.items():
        pose = model.frame_transform(f"{side}_sole", q)
        local = np.column_stack([outline, np.zeros(len(outline)), np.ones(len(outline))])
        out[side] = (pose @ local.T).T[:, :2]
    return out


def estimator_sole_corners() -> dict[str, np.ndarray]:
    """side -> (K, 2) sole corners [m] in the sole frame, as ``config/zmp.yaml`` gives the estimator."""
    import yaml

    from humanoid_balance.resources import config_path

    with open(config_path("zmp.yaml")) as stream:
        parameters = yaml.safe_load(stream)["zmp_estimator"]["ros__parameters"]
    return {side: np.asarray(parameters[side]["sole_polygon"], dtype=float).reshape(-1, 2)
            for side in ("left", "right")}


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


def measured_momentum(run: RecordedRun, model: Any) -> Series:
    """Momentum ``[P; L]`` about the balance frame ``W`` of the recorded joint states.

    Computed with the humanoid's model (fixed base, ``world_frame="W"``) from
    ``/joint_states`` positions and velocities: the momentum the joints really
    had, with or without a controller in the loop.

    Args:
        run: the recorded run.
        model: a :class:`humanoid_balance.core.model.RobotModel` of the humanoid.
    """
    if not len(run.joints_q):
        return Series.empty(6)
    names = [n for n in run.joint_names if n in model.model.names]
    columns = [run.joint_names.index(n) for n in names]
    q_index = model.q_index(names)
    v_index = model.v_index(names)
    q = model.neutral()
    v = np.zeros(model.nv)
    out = np.zeros((len(run.joints_q), 6))
    for i in range(len(run.joints_q)):
        q[q_index] = run.joints_q.values[i, columns]
        v[v_index] = run.joints_v.values[i, columns]
        out[i] = model.momentum(q, v, np.zeros(3))
    return Series(run.joints_q.t.copy(), out)


def _rounded(value: float, digits: int) -> float:
    return round(value, digits) if np.isfinite(value) else float("nan")


def run_metrics(run: RecordedRun, start: float | None = None,
                end: float = float("inf")) -> dict[str, dict[str, Any]]:
    """The figures of one run (RESULTS.md metrics), computed from its recording.

    Args:
        run: the recorded run.
        start: the strike's start [s] (default: from the job input, :meth:`RecordedRun.strike_start`).
        end: the last simulation time considered [s].
    """
    start = run.strike_start() if start is None else start
    momentum = run.momentum_commanded.between(start, end)
    lxy = float(np.abs(momentum.values[:, 3:5]).max()) if len(momentum) else float("nan")
    error = run.waist_tracking_error.between(-np.inf, end)
    waist_error_deg = float(np.rad2deg(np.hypot(*error.values.T).max())) if len(error) \
        else float("nan")
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
        "lock_step_misses": metric(float("nan") if run.lock_step_misses is None
                                   else run.lock_step_misses, "", target=0, better="lower"),
        "waist_max_tracking_error_deg": metric(_rounded(waist_error_deg, 4), "deg",
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
