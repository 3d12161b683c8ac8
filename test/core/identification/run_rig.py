"""An :class:`~humanoid_balance.core.identification.run.IdentificationRun` in lock-step with a
fake lunar arm, on a clock the test sets (no ROS, no DDS).

The arm follows the run's commands exactly (an ideal servo): each :meth:`RunRig.tick` advances
the clock a command period, feeds a joint state at the last command (its efforts the gravity
torques there) and runs one :meth:`~IdentificationRun.step`. Every command is kept in
:attr:`RunRig.sent`; the run's log lines in :attr:`RunRig.log`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from humanoid_balance.core.identification import LUNAR_JOINTS
from humanoid_balance.core.identification.arm import IdentificationArm
from humanoid_balance.core.identification.run import Command, IdentificationRun, Step
from humanoid_balance.params.identification_executor import (
    SPEC,
    IdentificationExecutorConfig,
    config_from_values,
)
from humanoid_balance.results import write_yaml

#: deg, where the arm starts (and the plan's static configuration)
STATIC_DEG = (0.0, 30.0, 20.0, 60.0, 40.0, 30.0)
#: the node's defaults: 100 Hz commands, 30 deg/s^2, 3 deg/s sweeps
PERIOD_S = 0.01
PERIOD_NS = 10_000_000
ACCELERATION = math.radians(30.0)
SPEED = math.radians(3.0)
#: commands a 3 deg/s stop takes at 30 deg/s^2 and 100 Hz (v / a = 0.1 s), plus one period
STOP_COMMANDS = round(SPEED / ACCELERATION / PERIOD_S) + 1
#: 2-degree sweeps, trim 0.2 s: a whole run of 24.8 s (2480 commands)
SHORT = {"sweep_half_range": 2.0, "trim": 0.2, "static_configuration": list(STATIC_DEG)}


def config(**overrides: Any) -> IdentificationExecutorConfig:
    """The node's defaults with 2-degree sweeps, and ``overrides`` (spec names and units)."""
    return config_from_values({**SPEC.defaults(), **SHORT, **overrides})


@functools.lru_cache(maxsize=8)
def _arm(key: tuple[tuple[str, Any], ...]) -> IdentificationArm:
    return IdentificationArm(config(**{k: list(v) if isinstance(v, tuple) else v
                                       for k, v in key}))


def arm_for(**overrides: Any) -> IdentificationArm:
    """The arm of :func:`config` (built once per set of overrides)."""
    return _arm(tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                             for k, v in overrides.items())))


class Log:
    """A logger that keeps its lines: ``(level, text)``."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def info(self, text: str) -> None:
        self.lines.append(("info", text))

    def warning(self, text: str) -> None:
        self.lines.append(("warning", text))

    def error(self, text: str) -> None:
        self.lines.append(("error", text))


class FakeWall:
    """A wall clock that moves only when slept on: ``monotonic`` and ``sleep`` for the run."""

    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class RunRig:
    """The run on a clock at 1000 s, the arm at rest at :data:`STATIC_DEG`.

    Args:
        output: where the results go (``output_path``).
        write: the run's results writer.
        overrides: parameters (spec names and units) over :func:`config`'s.
    """

    def __init__(self, output: Path, write: Callable[[Path, Mapping[str, Any]], Any] = write_yaml,
                 **overrides: Any) -> None:
        self.config = config(output_path=str(output), **overrides)
        self.arm = arm_for(**{k: v for k, v in overrides.items() if k in (
            "static_configuration", "sweep_half_range", "speed", "acceleration_limit",
            "clearance", "gravity")})
        self.log = Log()
        self.wall = FakeWall()
        self.run = IdentificationRun(self.arm, self.config, logger=self.log, write=write,
                                     monotonic=self.wall.monotonic, sleep=self.wall.sleep)
        self.now_ns = 1000 * 10**9
        self.sent: list[Command] = []
        self.steps: list[Step] = []
        self.q = np.radians(STATIC_DEG)
        self.qd = np.zeros(6)
        self.run.activate(self.send)

    @property
    def now_s(self) -> float:
        return self.now_ns * 1e-9

    def send(self, command: Command) -> None:
        """What the node publishes: kept."""
        self.sent.append(command)

    def message(self, q: Any = None, qd: Any = None) -> dict[str, Any]:
        """A joint state's fields at ``q``, ``qd`` (default: where the arm is), stamped now."""
        q = self.q if q is None else np.asarray(q, float)
        qd = self.qd if qd is None else np.asarray(qd, float)
        return {"names": list(LUNAR_JOINTS), "position": q.tolist(), "velocity": qd.tolist(),
                "effort": self.arm.regressor.gravity_torques(q).tolist(), "stamp_s": self.now_s}

    def joint_state(self, q: Any = None, qd: Any = None, *,
                    mutate: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
                    received_s: float | None = None) -> Any:
        """Feed a joint state (through ``mutate``, which may drop it: None); the rejection."""
        fields: dict[str, Any] | None = self.message(q, qd)
        if mutate is not None and fields is not None:
            fields = mutate(fields)
        if fields is None:
            return None
        return self.run.joint_state(fields["names"], fields["position"], fields["velocity"],
                                    fields["effort"], fields["stamp_s"],
                                    self.now_s if received_s is None else received_s)

    def set_time(self, ns: int) -> None:
        self.now_ns = ns

    def start(self) -> Any:
        return self.run.start(self.now_ns)

    def step(self) -> Step:
        """One command cycle now; its command kept."""
        step = self.run.step(self.now_ns)
        if step.command is not None:
            self.send(step.command)
        self.steps.append(step)
        return step

    def tick(self, dt_ns: int = PERIOD_NS, follow: bool = True,
             mutate: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
             feed: bool = True) -> Step:
        """Advance the clock, feed a joint state at the last command, run the command cycle."""
        self.set_time(self.now_ns + dt_ns)
        if follow and self.sent:
            self.q, self.qd = self.sent[-1].position, self.sent[-1].velocity
        if feed:
            self.joint_state(mutate=mutate)
        return self.step()

    def cruise(self) -> None:
        """Start a run and go on until a sweep pass moves at its full speed (3 deg/s)."""
        self.joint_state()
        answer = self.start()
        assert answer.success, answer.message
        for _ in range(3000):
            self.tick()
            point = self.run.point
            if point is not None and point.phase in ("forward", "backward") and (
                    np.abs(point.velocity).max() > 0.97 * SPEED):
                return
        raise AssertionError("no pass reached the sweep speed")

    def run_to_end(self, limit_s: float = 60.0,
                   mutate: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None
                   ) -> None:
        """Tick until the run is no longer running or stopping (at most ``limit_s`` of clock)."""
        for _ in range(round(limit_s / PERIOD_S)):
            if not self.run.in_run:
                return
            self.tick(mutate=mutate)
        raise AssertionError(f"the run still {self.run.state} after {limit_s} s")


def speeds_of(commands: Sequence[Command]) -> list[float]:
    """The largest joint speed of each command [rad/s]."""
    return [float(np.abs(c.velocity).max()) for c in commands]


def assert_braking(commands: Sequence[Command]) -> list[float]:
    """Velocities fall every command, within the limit over the stamps, to 0; the speeds.

    Between commands whose stamps went back (the clock did) one command period counts.
    """
    speeds = speeds_of(commands)
    dt = np.diff([c.stamp_ns for c in commands]) * 1e-9
    dt = np.where(dt > 0.0, dt, PERIOD_S)
    steps = -np.diff(speeds)
    assert np.all(steps >= 0.0) and np.all(steps <= ACCELERATION * dt * (1 + 1e-9)), speeds
    assert speeds[-1] == 0.0, speeds
    return speeds
