"""Fault-injection harness: a node as a process, attacked through its ROS interfaces (issue 12).

Reusable for every node: a test module starts its node with
``process_harness`` (``test/process``), wraps it in a :class:`Target`, and runs
each fault as a :class:`Case` of the session's :class:`Ledger`::

    with ledger.case(target, "joint_states", "NaN position while idle") as case:
        ...  # inject, then check with case.require(...)

Every case ends with the checks every fault must pass, whatever it was:

- the node keeps running: its process is alive and its parameter service
  answers (else the case is a **crash**);
- no command it sent during the case breaks :class:`CommandLimits`
  (non-finite, outside the position limits, faster than the velocity limit,
  a velocity step beyond the acceleration limit, a position step that the
  commanded velocities and the acceleration limit cannot explain), checked
  by a :class:`CommandChecker` on every command message (else **unsafe**);
- what the case itself requires (``case.require``: a refusal, a message and a
  ``/diagnostics`` level naming the cause, recovery): else **failed**.

Otherwise the case **held**. The ledger counts cases per node (tried, held,
unsafe, crashes, failed; generated ones apart) and writes them to
``test/faults/results/<node>.json`` (or ``$HB_FAULT_RESULTS``) at the end of
the session, and the terminal summary prints the table (``table.py`` prints
it again from the files, for the README).
"""

from __future__ import annotations

import json
import math
import os
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from process_harness import Probe, RunningNode, level_of

RESULTS_DIR = Path(os.environ.get("HB_FAULT_RESULTS", Path(__file__).with_name("results")))
OUTCOMES = ("held", "unsafe", "crash", "failed")
#: diagnostic_msgs/DiagnosticStatus levels as ints (rclpy's constants are bytes)
OK, WARN, ERROR = 0, 1, 2
#: s the node's parameter service may take to answer while the node is under attack
ANSWER_TIMEOUT_S = 5.0
#: s every fault module waits for a reaction the node gives within a diagnostics period or two
#: (10-50 Hz): a deadline for an event that must come (a passing case waits only until it
#: comes), not a measure of it. At 3 s one of 132 arm_balance cases missed its warning in a
#: suite run beside two busy loops (load 7-9)
REACTION_S = 10.0


# --- limits and the command checker ---------------------------------------------------------------


@dataclass(frozen=True)
class CommandLimits:
    """What a joint command may do, per joint (in the order of ``names``).

    Attributes:
        names: joint names.
        lower: lower position limits [rad].
        upper: upper position limits [rad].
        velocity: speed limits [rad/s].
        acceleration: acceleration limits [rad/s^2].
    """

    names: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray

    @classmethod
    def from_urdf(cls, path: Path | str, joints: Sequence[str],
                  acceleration: float | Sequence[float]) -> CommandLimits:
        """Position and velocity limits of ``joints`` from a URDF; acceleration given [rad/s^2].

        The URDF's ``<limit>`` has no acceleration: the node's own limit (a
        parameter, or a table like seed 000's) is passed in.
        """
        root = ET.parse(path).getroot()
        limits = {j.get("name"): j.find("limit") for j in root.iter("joint")}
        rows = []
        for name in joints:
            limit = limits[name]
            assert limit is not None, f"joint {name} has no <limit> in {path}"
            rows.append([float(limit.get(k, "nan")) for k in ("lower", "upper", "velocity")])
        table = np.array(rows)
        return cls(tuple(joints), table[:, 0], table[:, 1], table[:, 2],
                   np.broadcast_to(np.asarray(acceleration, float), (len(joints),)).copy())


#: rad: a command may sit this far outside a position limit (rounding)
POSITION_TOLERANCE = 1e-9
#: relative tolerance on velocity and acceleration limits (rounding of the stamps)
RATE_TOLERANCE = 1e-6


@dataclass
class CommandChecker:
    """Checks every command of a stream against :class:`CommandLimits`.

    Consecutive commands ``(t0, p0, v0)``, ``(t1, p1, v1)`` (stamps) must satisfy,
    per joint, with ``dt = t1 - t0``:

    - finite; ``lower <= p <= upper``; ``|v| <= velocity``;
    - ``|v1 - v0| <= acceleration * dt``: no velocity step (a hold that stops a
      moving joint in one period breaks this);
    - ``|p1 - p0 - (v0 + v1) dt / 2| <= acceleration * dt^2 / 4``: the position
      moves as the commanded velocities say (the largest difference any motion
      within the acceleration limit allows); a jump to an old measurement
      breaks this;
    - ``|p1 - p0| <= velocity * dt``.

    :meth:`new_segment` starts a stream anew (a new run starts from where the
    arm is measured, not from the last command). Commands naming other joints
    are a violation too.
    """

    limits: CommandLimits
    violations: list[str] = field(default_factory=list)
    commands: int = 0
    _previous: tuple[int, np.ndarray, np.ndarray] | None = None

    def new_segment(self) -> None:
        """The next command starts a new stream (no continuity check against the last one)."""
        self._previous = None

    def __call__(self, msg: Any) -> None:
        """Check one sensor_msgs/JointState command."""
        self.commands += 1
        lim = self.limits
        t = int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec)
        label = f"command {self.commands} (t={t * 1e-9:.3f})"
        if tuple(msg.name) != lim.names:
            self.violations.append(f"{label}: names {list(msg.name)}, expected {list(lim.names)}")
            return
        p, v = np.array(msg.position, float), np.array(msg.velocity, float)
        if p.shape != (len(lim.names),) or v.shape != p.shape:
            self.violations.append(f"{label}: {p.size} positions, {v.size} velocities")
            return
        if not (np.all(np.isfinite(p)) and np.all(np.isfinite(v))):
            self.violations.append(f"{label}: not finite: {p.tolist()} {v.tolist()}")
            return
        if np.any(p < lim.lower - POSITION_TOLERANCE) or np.any(p > lim.upper + POSITION_TOLERANCE):
            self.violations.append(f"{label}: outside the position limits: {p.tolist()}")
        if np.any(np.abs(v) > lim.velocity * (1 + RATE_TOLERANCE)):
            self.violations.append(f"{label}: beyond the velocity limits: {v.tolist()}")
        if self._previous is not None:
            t0, p0, v0 = self._previous
            dt = (t - t0) * 1e-9  # integer nanoseconds: exact
            if dt < 0.0:
                self.violations.append(f"{label}: stamp {-dt:.6f} s before the previous one")
            else:
                self._check_step(label, dt, p0, v0, p, v)
        self._previous = (t, p, v)

    def _check_step(self, label: str, dt: float, p0: np.ndarray, v0: np.ndarray, p: np.ndarray,
                    v: np.ndarray) -> None:
        lim = self.limits
        acceleration = lim.acceleration * (1 + RATE_TOLERANCE)
        dv = np.abs(v - v0)
        if np.any(dv > acceleration * dt + 1e-12):
            i = int(np.argmax(dv - acceleration * dt))
            self.violations.append(
                f"{label}: velocity step {dv[i]:.6g} rad/s of {lim.names[i]} in {dt:.4f} s "
                f"(limit {lim.acceleration[i] * dt:.6g})")
        drift = np.abs(p - p0 - 0.5 * (v0 + v) * dt)
        allowed = acceleration * dt * dt / 4.0 + 1e-9
        if np.any(drift > allowed):
            i = int(np.argmax(drift - allowed))
            self.violations.append(
                f"{label}: position step of {lim.names[i]} {math.degrees(p[i] - p0[i]):.4f} deg "
                f"in {dt:.4f} s, {math.degrees(drift[i]):.4f} deg off the commanded velocities")
        step = np.abs(p - p0)
        if np.any(step > lim.velocity * (1 + RATE_TOLERANCE) * dt + 1e-9):
            self.violations.append(f"{label}: position step {step.max():.6g} rad in {dt:.4f} s "
                                   "beyond the velocity limit")


# --- the node under test ------------------------------------------------------------------------------


@dataclass
class Target:
    """The node under attack: its process (replaced when a case restarts it) and the probe.

    Attributes:
        name: the node's name (the ledger's key).
        running: its process.
        probe: the test's rclpy node.
        checker: the command checker fed by the probe's subscription (None: no commands).
    """

    name: str
    running: RunningNode
    probe: Probe
    checker: CommandChecker | None = None

    def alive(self) -> bool:
        """The process runs."""
        return self.running.process.alive()

    def answers(self, timeout: float = ANSWER_TIMEOUT_S) -> bool:
        """Its parameter service answers within ``timeout`` s."""
        from rcl_interfaces.srv import GetParameters

        cli = self.probe.node.create_client(GetParameters, f"/{self.name}/get_parameters")
        try:
            if not self.probe.spin_until(cli.service_is_ready, timeout):
                return False
            future = cli.call_async(GetParameters.Request(names=["use_sim_time"]))
            return self.probe.spin_until(future.done, timeout)
        finally:
            self.probe.node.destroy_client(cli)

    def output(self) -> str:
        """What the process printed so far."""
        return self.running.process.output()

    def live_state(self, state: Callable[[], str], restart: Callable[[], None]) -> str:
        """The lifecycle node's ``state()``, after ``restart()`` when its process is dead, does
        not answer within 2 s, or is finalized (a rig's reset starts from here)."""
        if not self.alive() or not self.answers(2.0):
            restart()
        current = state()
        if current == "finalized":
            restart()
            current = state()
        return current


# --- cases and the ledger -------------------------------------------------------------------------------


@dataclass
class CaseRecord:
    """One fault case and how the node took it."""

    node: str
    group: str
    name: str
    generated: bool
    outcome: str
    detail: str = ""


class CaseRequirementError(AssertionError):
    """A case's own requirement did not hold."""


class Case:
    """One fault case of a :class:`Ledger`; a context manager (see the module docstring)."""

    def __init__(self, ledger: Ledger, target: Target, group: str, name: str,
                 generated: bool) -> None:
        self.ledger, self.target, self.group, self.name = ledger, target, group, name
        self.generated = generated
        self.notes: list[str] = []
        self._violations_at = 0

    def note(self, text: str) -> None:
        """Keep a figure of the case (in its record's detail, held or not)."""
        self.notes.append(text)

    def require(self, condition: bool, message: str | Callable[[], str]) -> None:
        """Fail the case (outcome ``failed``) unless ``condition``."""
        if not condition:
            raise CaseRequirementError(message() if callable(message) else message)

    def __enter__(self) -> Case:
        checker = self.target.checker
        self._violations_at = len(checker.violations) if checker is not None else 0
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        target = self.target
        alive = target.alive()
        crashed = not alive or not target.answers()
        checker = target.checker
        unsafe = checker.violations[self._violations_at:] if checker is not None else []
        if crashed:
            outcome = "crash"
            detail = (f"process {'alive but not answering' if alive else 'exited'}: "
                      f"{target.output()[-1500:]}")
        elif unsafe:
            outcome, detail = "unsafe", "; ".join(unsafe[:5])
        elif exc is not None:
            outcome, detail = "failed", f"{type(exc).__name__}: {exc}"
        else:
            outcome, detail = "held", ""
        detail = "; ".join([*self.notes, detail]) if self.notes else detail
        self.ledger.records.append(CaseRecord(target.name, self.group, self.name,
                                              self.generated, outcome, detail[:2000]))
        if exc is not None and outcome == "failed":
            return False  # the case's own assertion goes on up
        if outcome != "held":
            raise AssertionError(f"{target.name} / {self.group} / {self.name}: {outcome}: "
                                 f"{detail}") from exc
        return False


@dataclass
class Ledger:
    """Every case of the session, by node."""

    records: list[CaseRecord] = field(default_factory=list)
    #: the files :meth:`write` wrote last
    written: list[Path] = field(default_factory=list)

    def case(self, target: Target, group: str, name: str, generated: bool = False) -> Case:
        """A new case against ``target``."""
        return Case(self, target, group, name, generated)

    def counts(self) -> dict[str, dict[str, int]]:
        """Per node: tried, held, unsafe, crash, failed, generated."""
        table: dict[str, dict[str, int]] = {}
        for record in self.records:
            row = table.setdefault(record.node, {"tried": 0, **dict.fromkeys(OUTCOMES, 0),
                                                 "generated": 0})
            row["tried"] += 1
            row[record.outcome] += 1
            row["generated"] += int(record.generated)
        return table

    def write(self, directory: Path = RESULTS_DIR, selection: str = "") -> list[Path]:
        """One ``<node>.json`` per node: the counts, the groups and every case."""
        directory.mkdir(parents=True, exist_ok=True)
        written = []
        for node, counts in self.counts().items():
            records = [r for r in self.records if r.node == node]
            groups = Counter(r.group for r in records)
            path = directory / f"{node}.json"
            path.write_text(json.dumps({
                "node": node, **counts, "groups": dict(groups), "selection": selection,
                "written": time.strftime("%Y-%m-%d %H:%M:%S"),
                "cases": [asdict(r) for r in records]}, indent=1) + "\n")
            written.append(path)
        return written


def table(rows: dict[str, dict[str, int]]) -> str:
    """Per-node counts as a Markdown table (with a total row)."""
    lines = ["| node | cases tried | generated | held | unsafe | crashes | failed |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    total = Counter[str]()
    for node, row in sorted(rows.items()):
        lines.append(f"| `{node}` | {row['tried']} | {row['generated']} | {row['held']} | "
                     f"{row['unsafe']} | {row['crash']} | {row['failed']} |")
        total.update(row)
    if len(rows) > 1:
        lines.append(f"| all | {total['tried']} | {total['generated']} | {total['held']} | "
                     f"{total['unsafe']} | {total['crash']} | {total['failed']} |")
    return "\n".join(lines)


# --- diagnostics -----------------------------------------------------------------------------------------


class DiagnosticsWatch:
    """The newest ``/diagnostics`` statuses of one node (by the status name's prefix)."""

    def __init__(self, probe: Probe, prefix: str,
                 spin_until: Callable[[Callable[[], bool], float], bool] | None = None) -> None:
        from diagnostic_msgs.msg import DiagnosticArray

        self.prefix = prefix
        #: how waiting spins (a test that also feeds the node passes its own pump)
        self.spin_until = probe.spin_until if spin_until is None else spin_until
        self.history: list[tuple[float, int, str]] = []  # (monotonic time, level, message)
        self.values: dict[str, str] = {}
        self._sub = probe.node.create_subscription(DiagnosticArray, "/diagnostics",
                                                   self._on_diagnostics, 50)
        self._probe = probe

    def _on_diagnostics(self, msg: Any) -> None:
        for status in msg.status:
            if status.name.startswith(self.prefix):
                self.history.append((time.monotonic(), level_of(status), status.message))
                self.values = {kv.key: kv.value for kv in status.values}

    def clear(self) -> None:
        """Forget what came (the node restarted: its old statuses say nothing of the new one)."""
        self.history.clear()
        self.values = {}

    def mark(self) -> float:
        """The current time; statuses after it count for :meth:`wait_for`."""
        return time.monotonic()

    def wait_for(self, level: int, text: str, timeout: float, since: float | None = None
                 ) -> bool:
        """Spin until a status at ``level`` whose message holds ``text`` came (after ``since``)."""
        return self.wait_for_any([(level, text)], timeout, since)

    def wait_for_any(self, wanted: Sequence[tuple[int, str]], timeout: float,
                     since: float | None = None) -> bool:
        """:meth:`wait_for` of whichever of the (level, text) pairs comes first."""
        since = time.monotonic() if since is None else since

        def seen() -> bool:
            return any(t >= since and lv == level and text in m
                       for t, lv, m in self.history for level, text in wanted)

        return self.spin_until(seen, timeout)

    def held_for(self, level: int, text: str, seconds: float) -> list[tuple[int, str]]:
        """Statuses of the next ``seconds`` that are *not* at ``level`` with ``text``.

        Empty when every status of that time held (at least one must have come:
        else the one missing status is reported).
        """
        since = time.monotonic()
        self.spin_until(lambda: False, seconds)
        came = [(lv, m) for t, lv, m in self.history if t >= since]
        if not came:
            return [(-1, f"no status in {seconds} s")]
        return [(lv, m) for lv, m in came if not (lv == level and text in m)]

    def latest(self) -> tuple[int, str] | None:
        """The newest (level, message)."""
        return self.history[-1][1:] if self.history else None  # type: ignore[return-value]

    def close(self) -> None:
        """Drop the subscription."""
        self._probe.node.destroy_subscription(self._sub)
