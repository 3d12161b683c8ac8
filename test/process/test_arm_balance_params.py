"""``arm_balance`` as a process: ``ros2 param set`` on every dynamic parameter changes what it does.

One process (the robot graph's ``arm_balance``, ``config/arm_balance.yaml``),
configured and activated through its services; a feeder publishes the 30 joints
at zero at 500 Hz; the test publishes the job (right shoulder pitch at
0.2 rad/s, the sign alternating between tests so the arm stays in range) and,
where needed, a measured stability margin. Each dynamic parameter is set over
DDS (SetParameters, what ``ros2 param set`` calls), its effect is waited for on
the command, the momentum or the diagnostics, and the default is set back.
Invalid values are refused with their reason; read-only ones once configured.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from process_harness import (
    JOB_JOINTS,
    OUTPUT_TIMEOUT_S,
    Feeder,
    FeedSpec,
    Probe,
    RunningNode,
    bring_up,
    standing_model,
    start_node,
    statuses,
    wait_ready,
)

from humanoid_balance.graph import robot_graph
from humanoid_balance.params.arm_balance import SPEC

pytestmark = [pytest.mark.ros, pytest.mark.slow]

SPEED = 0.2  # rad/s of the job's shoulder pitch
_SIGN = itertools.cycle((-1.0, 1.0))


@pytest.fixture(scope="module")
def arm(session_probe: Probe, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningNode]:
    """The robot graph's arm_balance, active, fed joint states at zero."""
    # posture task off: the feed below stays at zero whatever is commanded, so an aux arm moving
    # toward its ready posture would leave the held positions apart from the measured ones
    node = next(n for n in robot_graph() if n.name == "arm_balance").with_parameters(
        aux_posture_gain=0.0)
    folder = tmp_path_factory.mktemp("arm_balance_params")
    running = start_node(node, folder)
    names = standing_model().joint_names
    feeder = Feeder(FeedSpec(500.0).joint_state("/joint_states", names, position=[0.0] * len(names)),
                    folder / "feeder.log")
    try:
        wait_ready(session_probe, running)
        bring_up(session_probe, running)
        feeder.wait_feeding(session_probe)
        session_probe.release()
        yield running
    finally:
        feeder.stop()
        running.stop()


class Rig:
    """The probe's view of the node: the job publisher, recorders and parameter calls."""

    def __init__(self, probe: Probe) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        from geometry_msgs.msg import WrenchStamped
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64

        self.probe = probe
        self.commands = probe.record(JointState, "/arm_balance/command", keep=200)
        self.momentum = probe.record(WrenchStamped, "/arm_balance/momentum", keep=50)
        self.diagnostics = probe.record(DiagnosticArray, "/diagnostics", keep=20)
        self.pub_job = probe.publisher(JointState, "/arm_balance/job_joint_velocities")
        self.pub_margin = probe.publisher(Float64, "/zmp/stability_margin")
        self.speed = next(_SIGN) * SPEED
        self.margin: float | None = None

    def pump(self, condition: Callable[[], bool], timeout: float = OUTPUT_TIMEOUT_S) -> bool:
        """Publish the job (and margin) every 20 ms until ``condition()`` or the timeout."""
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64

        for _ in range(int(timeout / 0.02)):
            self.pub_job.publish(JointState(name=list(JOB_JOINTS), velocity=[self.speed] + [0.0] * 6))
            if self.margin is not None:
                self.pub_margin.publish(Float64(data=self.margin))
            if self.probe.spin_until(condition, 0.02):
                return True
        return condition()

    def settle(self, seconds: float = 0.3) -> None:
        """Pump for ``seconds`` and forget what came meanwhile."""
        self.pump(lambda: False, seconds)
        for recorder in (self.commands, self.momentum, self.diagnostics):
            recorder.messages.clear()

    def set(self, **values: Any) -> list[Any]:
        """SetParameters on the node; the results."""
        return self.probe.set_parameters("arm_balance", **values)

    def job_velocity(self) -> float:
        """The last command's right shoulder pitch velocity [rad/s]."""
        last = self.commands.last
        return float(dict(zip(last.name, last.velocity, strict=True))["right_shoulder_pitch"])

    def lz(self) -> float:
        """|Lz| of the last momentum [N m s]."""
        return abs(float(self.momentum.last.wrench.torque.z))

    def diag(self) -> dict[str, str]:
        """The latest arm_balance diagnostic values, with its message as ``message``."""
        found = list(statuses(self.diagnostics, "arm_balance"))
        if not found:
            return {}
        return {**{kv.key: kv.value for kv in found[-1].values}, "message": found[-1].message}


@pytest.fixture
def rig(probe: Probe, arm: RunningNode) -> Iterator[Rig]:
    """The rig, the job moving freely; every dynamic parameter set back to its default after."""
    made = Rig(probe)
    made.pump(lambda: made.commands.count > 20 and abs(made.job_velocity() - made.speed) < 1e-9)
    yield made
    made.margin = None
    defaults = {n: SPEC[n].default for n in sorted(SPEC.dynamic)}
    defaults["selection"] = list(defaults["selection"])
    assert all(r.successful for r in made.set(**defaults))


def _ok(results: list[Any]) -> bool:
    return all(r.successful for r in results)


def test_job_arm_left_commands_the_left_arm_first(rig: Rig) -> None:
    """job_arm=left: the commands list the left arm first and the right-arm job is refused."""
    assert _ok(rig.set(job_arm="left"))
    assert rig.pump(lambda: rig.commands.last.name[0] == "left_shoulder_pitch"
                    and "must name exactly" in rig.diag().get("message", ""))


def test_selection_with_lz_holds_lz(rig: Rig) -> None:
    """selection=[Lx, Ly, Lz]: |Lz| of the momentum goes from > 1e-3 to < 1e-6 N m s."""
    assert rig.pump(lambda: rig.momentum.count > 5 and rig.lz() > 1e-3)
    assert _ok(rig.set(selection=["Lx", "Ly", "Lz"]))
    assert rig.pump(lambda: rig.lz() < 1e-6), rig.lz()


def test_secondary_lz_reduces_lz(rig: Rig) -> None:
    """secondary='Lz': |Lz| falls under a tenth of what it is with Lx, Ly alone."""
    assert rig.pump(lambda: rig.momentum.count > 5 and rig.lz() > 1e-3)
    before = rig.lz()
    assert _ok(rig.set(secondary="Lz"))
    assert rig.pump(lambda: rig.lz() < 0.1 * before), (before, rig.lz())


def test_guard_slow_margin_slows_the_job_arm(rig: Rig) -> None:
    """guard_slow_margin=0.5 m (above the predicted margin): the job arm turns slower, guard < 1."""
    assert _ok(rig.set(guard_slow_margin=0.5))
    assert rig.pump(lambda: 0.0 < abs(rig.job_velocity()) < 0.5 * SPEED
                    and "slowing the job arm" in rig.diag().get("message", ""))


def test_guard_hold_margin_holds_the_job_arm(rig: Rig) -> None:
    """guard_hold_margin=0.45 m under slow 0.5 m: the job arm stops; diagnostics say it holds."""
    assert _ok(rig.set(guard_slow_margin=0.5, guard_hold_margin=0.45))
    assert rig.pump(lambda: rig.job_velocity() == 0.0
                    and "holding the job arm" in rig.diag().get("message", ""))


def test_joint_state_timeout_holds_the_arms(rig: Rig) -> None:
    """joint_state_timeout=0.1 ms (shorter than the feed's period): the arms hold, diagnostics say so."""
    assert _ok(rig.set(joint_state_timeout=0.0001))
    assert rig.pump(lambda: "older than joint_state_timeout=0.0001 s" in rig.diag().get(
        "message", "") and rig.job_velocity() == 0.0)


def test_job_input_timeout_stops_the_job_arm(rig: Rig) -> None:
    """job_input_timeout=5 ms (the job comes every 20 ms): the input goes stale, reported."""
    assert _ok(rig.set(job_input_timeout=0.005))
    assert rig.pump(lambda: "older than job_input_timeout=0.005 s" in rig.diag().get("message", ""))


def test_margin_timeout_drops_an_old_measured_margin(rig: Rig) -> None:
    """A measured margin of 0 m holds the job arm; margin_timeout=1 ms lets it move again."""
    rig.margin = 0.0
    assert rig.pump(lambda: rig.job_velocity() == 0.0)
    assert _ok(rig.set(margin_timeout=0.001))
    assert rig.pump(lambda: abs(rig.job_velocity() - rig.speed) < 1e-9)


INVALID = [
    ("job_arm", "middle", "job_arm='middle': expected one of ['right', 'left']"),
    ("selection", ["Lq"], "selection value 'Lq': expected one of"),
    ("selection", ["Lx", "Lx"], "selection=['Lx', 'Lx']: a row is repeated"),
    ("secondary", "Lx", "rows ['Lx'] would be both in selection and secondary"),
    ("secondary", "Lq", "secondary: rows ['Lq'] unknown"),
    ("guard_slow_margin", math.nan, "guard_slow_margin=nan: must be finite"),
    ("guard_hold_margin", math.nan, "guard_hold_margin=nan: must be finite"),
    ("guard_hold_margin", -math.inf, "guard_hold_margin=-inf: must be finite"),
    ("guard_hold_margin", 0.05, "guard_hold_margin=0.05 must be below guard_slow_margin=0.03"),
    ("joint_state_timeout", 0.0, "joint_state_timeout=0.0: must be > 0 s"),
    ("job_input_timeout", math.inf, "job_input_timeout=inf: must be finite"),
    ("margin_timeout", -1.0, "margin_timeout=-1.0: must be > 0 s"),
]


def test_every_invalid_value_is_refused_with_its_reason(rig: Rig) -> None:
    """Each invalid value of a dynamic parameter is refused with the reason the spec gives."""
    reasons = {(name, str(value)): rig.set(**{name: value})[0] for name, value, _ in INVALID}
    wrong = {k: (r.successful, r.reason) for (k, r), (_, _, text) in zip(
        reasons.items(), INVALID, strict=True) if r.successful or text not in r.reason}
    assert not wrong


def test_read_only_parameters_are_refused_once_configured(rig: Rig) -> None:
    """Every read-only parameter, even at its own default, is refused with 'read at configure'."""
    results = {p.name: rig.set(**{p.name: list(p.default) if p.is_array else p.default})[0]
               for p in SPEC if not p.dynamic}
    wrong = {n: r.reason for n, r in results.items() if r.successful or "read at configure" not in r.reason}
    assert not wrong


def test_job_arm_switched_while_inactive_resumes_without_a_step(rig: Rig) -> None:
    """Issue 12: deactivate, job_arm=left, activate: the first command is the left arm's order
    and starts at rest where the joints are measured (the feed's zeros), not where they were
    held: the arm may have moved while the motors were off, and a command from the held
    positions would then be a position step (the audit: 0.5 rad in one period)."""
    lifecycle = rig.probe.lifecycle("arm_balance")
    assert lifecycle.change("deactivate")
    assert rig.pump(lambda: rig.commands.count > 0 and not any(rig.commands.last.velocity), 2.0)
    rig.pump(lambda: False, 0.2)  # nothing more comes
    assert _ok(rig.set(job_arm="left"))
    rig.commands.messages.clear()
    assert lifecycle.change("activate")
    assert rig.pump(lambda: len(rig.commands.messages) > 0)
    first = rig.commands.messages[0]
    moved = {n: p for n, p in zip(first.name, first.position, strict=True) if p != 0.0}
    assert (first.name[0], moved) == ("left_shoulder_pitch", {})
    assert not any(first.velocity), dict(zip(first.name, first.velocity, strict=True))

