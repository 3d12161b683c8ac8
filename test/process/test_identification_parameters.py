"""``identification_executor``'s parameters over DDS, as ``ros2 param set`` sets them (issue 11).

The executor runs as a process (its parameter file, 0.5-degree sweeps) on a
clock this test publishes, fed by a fake arm in this process: joint states
that follow its commands, with the gravity torques of the lunar arm plus a
small seeded noise as effort (``clocked_arm.py``). Every
dynamic parameter is set through ``/identification_executor/set_parameters``
and changes what the node does next; the read-only ones, invalid values and
any change during a run are refused with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from clocked_arm import Rig, executor_rig

pytestmark = pytest.mark.ros


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    """The executor (0.5-degree sweeps, trim 0.1 s, the test's clock) configured and active."""
    folder = tmp_path_factory.mktemp("identification_parameters")
    with executor_rig(folder, "identification_parameters_probe",
                      output_path=str(folder / "first.yaml"), sweep_half_range=0.5, trim=0.1,
                      joint_state_timeout=1.0, diagnostics_rate=10.0) as made:
        yield made


def test_estimation_parameters_apply_to_the_next_run(rig: Rig) -> None:
    """method, average, trim and output_path set between runs: the next estimate uses them."""
    first = rig.run(rig.folder / "first.yaml")
    second_path = rig.folder / "second.yaml"
    results = rig.set(method="global", average=5, trim=0.05, output_path=str(second_path))
    assert [r.successful for r in results] == [True] * 4, [r.reason for r in results]
    second = rig.run(second_path)
    assert first["estimation"] == {"method": "sequential", "average": 10, "trim_s": 0.1}
    assert second["estimation"] == {"method": "global", "average": 5, "trim_s": 0.05}
    first_values = [p["value"] for p in first["parameters"]]
    second_values = [p["value"] for p in second["parameters"]]
    assert first_values != second_values


def test_torque_source_and_constants_apply_to_the_next_joint_state(rig: Rig) -> None:
    """torque_constants 100 N m/A with torque_source current: the efforts read as 100x the
    torque, beyond the URDF's limits, so start is refused naming them; effort again: accepted."""
    assert rig.set(torque_constants=[100.0] * 6)[0].successful
    accepted = rig.trigger("start")
    rig.trigger("cancel")
    rig.arm.pump(0.5)
    assert rig.set(torque_source="current")[0].successful
    rig.arm.pump(0.2)
    refused = rig.trigger("start")
    assert rig.set(torque_source="effort", torque_constants=[1.0] * 6)[0].successful
    rig.arm.pump(0.2)
    again = rig.trigger("start")
    rig.trigger("cancel")
    rig.arm.pump(0.5)
    assert (accepted.success, refused.success, again.success) == (True, False, True), (
        refused.message)
    assert "beyond its limit" in refused.message and "torque_constants" in refused.message


def test_joint_state_timeout_applies_to_the_next_joint_state(rig: Rig) -> None:
    """Start accepted with joint_state_timeout 1 s; with 0.01 s and the arm paused, refused.

    (A start needs a joint state younger than 0.1 s whatever the timeout: the 0.4 s old ones
    this case started from before are refused with either; the service call alone takes tens
    of ms of the clock, so the arm keeps publishing for the accepted start.)
    """
    outcomes = []
    for timeout, paused in ((1.0, False), (0.01, True)):
        assert rig.set(joint_state_timeout=timeout)[0].successful
        rig.arm.pump(0.2)
        rig.arm.paused = paused
        rig.arm.pump(0.03)
        outcomes.append(rig.trigger("start"))
        rig.arm.paused = False
        rig.trigger("cancel")
        rig.arm.pump(0.5)
    rig.set(joint_state_timeout=1.0)
    assert [o.success for o in outcomes] == [True, False], [o.message for o in outcomes]
    assert "old (timeout 0.010 s)" in outcomes[1].message


def test_rates_are_refused_while_active_and_apply_at_activation(rig: Rig) -> None:
    """rate and diagnostics_rate: refused while active (naming activation); set while inactive,
    the next activation commands at 50 Hz (simulation time) and publishes diagnostics at 5 Hz
    (the steady clock: 0.2 s of wall time apart, whatever the simulation's speed)."""
    import time

    from diagnostic_msgs.msg import DiagnosticArray

    refused = rig.set(rate=50.0, diagnostics_rate=5.0)
    rig.transition("deactivate")
    accepted = rig.set(rate=50.0, diagnostics_rate=5.0)
    rig.transition("activate")
    arrivals: list[float] = []  # wall times of the executor's statuses

    def on_diagnostics(msg: Any) -> None:
        if any(status.name.startswith("identification_executor") for status in msg.status):
            arrivals.append(time.monotonic())

    rig.probe.subscribe(DiagnosticArray, "/diagnostics", on_diagnostics)
    rig.arm.commands.clear()
    assert rig.trigger("start").success
    window = (time.monotonic(), float("inf"))
    rig.arm.pump(2.0)
    window = (window[0], time.monotonic())
    rig.trigger("cancel")
    rig.arm.pump(0.5)
    stamps = [c.header.stamp.sec + c.header.stamp.nanosec * 1e-9 for c in rig.arm.commands]
    shown = list(arrivals)
    rig.transition("deactivate")
    rig.set(rate=100.0, diagnostics_rate=10.0)
    rig.transition("activate")
    assert not refused[0].successful and "activation" in refused[0].reason
    assert all(r.successful for r in accepted), [r.reason for r in accepted]
    assert float(np.median(np.diff(stamps))) == pytest.approx(0.02, abs=0.004)
    inside = [t for t in shown if window[0] <= t < window[1]]
    assert float(np.median(np.diff(inside))) == pytest.approx(0.2, abs=0.01)


@pytest.mark.parametrize(("name", "value"), [
    ("speed", 2.0), ("gravity", 1.62), ("urdf_path", "other.urdf"), ("clearance", 0.02),
    ("sweep_half_range", 1.0), ("acceleration_limit", 60.0), ("optimize_configuration", True),
    ("static_configuration", [0.0, 30.0, 20.0, 60.0, 40.0, 30.0]), ("arm_joints", ["a", "b"]),
])
def test_read_only_parameters_are_refused_once_configured(rig: Rig, name: str,
                                                          value: Any) -> None:
    """A parameter the plan is built from, set while configured: refused naming configure (and
    deactivate only for an active node: an inactive one has no such transition)."""
    result = rig.set(**{name: value})[0]
    assert (result.successful, result.reason) == (
        False, f"{name} is read at configure: to change it, deactivate (if active), clean up, "
               "set it and configure again")


@pytest.mark.parametrize(("name", "value", "reason"), [
    ("torque_constants", [math.nan] * 6, "torque_constants value nan: must be finite"),
    ("torque_constants", [1.0, 1.0, 1.0], "torque_constants has 3 values: expected 6, one per arm "
                                          "joint (['joint1', 'joint2', 'joint3', 'joint4', "
                                          "'joint5', 'joint6'])"),
    ("torque_constants", [0.0] * 6, "torque_constants value 0.0: must be > 0 N m/A"),
    ("joint_state_timeout", math.inf, "joint_state_timeout=inf: must be finite"),
    ("joint_state_timeout", 10.0, "joint_state_timeout=10.0: must be <= 5 s"),
    ("trim", -0.1, "trim=-0.1: must be >= 0 s"),
    ("average", 0, "average=0: must be >= 1"),
    ("method", "magic", "method='magic': expected one of ['sequential', 'global', 'weighted']"),
    ("torque_source", "voltage", "torque_source='voltage': expected one of ['effort', 'current']"),
    ("output_path", " ", "output_path=' ': expected a file path"),
])
def test_invalid_values_are_refused_with_the_reason(rig: Rig, name: str, value: Any,
                                                    reason: str) -> None:
    """An invalid value of a dynamic parameter: refused with the spec's reason."""
    result = rig.set(**{name: value})[0]
    assert (result.successful, result.reason) == (False, reason)


def test_an_unwritable_output_path_is_refused(rig: Rig) -> None:
    """output_path under a file: refused naming the path and what to do."""
    blocker = rig.folder / "a_file"
    blocker.write_text("x")
    result = rig.set(output_path=str(blocker / "results.yaml"))[0]
    assert not result.successful and result.reason.endswith("choose a writable output_path")


def test_changes_during_a_run_are_refused(rig: Rig) -> None:
    """During a run every change, even a valid dynamic one, is refused naming the run."""
    assert rig.trigger("start").success
    rig.arm.pump(0.3)
    results = [rig.set(**{name: value})[0] for name, value in (
        ("trim", 0.2), ("method", "weighted"), ("torque_source", "current"))]
    rig.trigger("cancel")
    rig.arm.pump(0.5)
    assert [(r.successful, r.reason) for r in results] == [
        (False, "parameters cannot change during a run: cancel first")] * 3
