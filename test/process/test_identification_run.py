"""``identification_executor`` as a process: a run started, cancelled, started again and finished.

The executor runs as users run it (the robot graph's parameter file, here with 2-degree
sweeps and trim 0.2 s) on a clock this test publishes, with the fake arm of
``clocked_arm.py`` following its commands in lock-step: a loaded machine slows the run
down instead of leaving the arm behind. The run is driven through ``/identification/start``
and ``/identification/cancel`` as an operator drives it, while a ``BagRecorder`` records
``/joint_states``; the offline estimate of that bag (``humanoid-balance identify``) must
give what the node wrote and published.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from clocked_arm import NODE, STATIC_DEG, Rig, executor_rig
from process_harness import Recorder, statuses

from humanoid_balance.core.identification import LUNAR_JOINTS
from humanoid_balance.core.identification.estimation import ILL_CONDITIONED

pytestmark = pytest.mark.ros

#: the run's plan: 2-degree sweeps at 3 deg/s (24.8 s), 0.2 s trimmed from each pass
SWEEP_HALF_RANGE_DEG = 2.0
SPEED_DEG_S = 3.0
TRIM_S = 0.2
#: s of the test's clock the run may take: its plan 24.8 s, then the arm settles for up to 2 s
#: and the node estimates (the clock goes on at real time meanwhile; seconds on a loaded machine)
RUN_S = 60.0


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    """The executor (2-degree sweeps, the test's clock) configured and active."""
    with executor_rig(tmp_path, "identification_run_probe",
                      output_path=str(tmp_path / "results.yaml"),
                      sweep_half_range=SWEEP_HALF_RANGE_DEG, speed=SPEED_DEG_S, trim=TRIM_S,
                      joint_state_timeout=1.0, diagnostics_rate=10.0) as made:
        yield made


def progress(diagnostics: Recorder) -> list[dict[str, str]]:
    """The values of the executor's progress statuses recorded, oldest first."""
    return [{kv.key: kv.value for kv in s.values} for s in statuses(diagnostics, NODE)]


def newest(diagnostics: Recorder) -> tuple[str, str]:
    """The state and message of the newest progress status ("" when none came)."""
    for array in reversed(diagnostics.messages):
        for status in reversed(array.status):
            if status.name.startswith(NODE):
                values = {kv.key: kv.value for kv in status.values}
                return values.get("state", ""), status.message
    return "", ""


@pytest.mark.slow
def test_start_cancel_restart_and_bag_agree(rig: Rig, tmp_path: Path) -> None:
    """Start, progress, cancel (the arm holds), start again: results written = offline estimate
    of the bag = the latched parameters."""
    import yaml
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.qos import DurabilityPolicy, QoSProfile
    from std_msgs.msg import Float64MultiArray

    from humanoid_balance.bag import BagRecorder
    from humanoid_balance.bag_identification import BagIdentificationSettings, estimate_from_bag

    arm, output = rig.arm, tmp_path / "results.yaml"
    diagnostics = rig.probe.record(DiagnosticArray, "/diagnostics", keep=100_000)
    first = rig.trigger("start")
    assert first.success, first.message
    assert arm.pump(10.0, lambda: any(p.get("pass") == "forward" for p in progress(diagnostics)))
    assert rig.trigger("cancel").success
    assert arm.pump(5.0, lambda: newest(diagnostics)[0] == "cancelled"), newest(diagnostics)
    arm.pump(0.3)
    last, held = arm.commands[-1], arm.position.copy()
    arm.commands.clear()
    arm.pump(1.0)
    assert arm.commands == []  # the braking ramp is over: nothing more is commanded
    assert not any(last.velocity)  # the hold: where it is, at rest
    assert np.abs(arm.position - held).max() < math.radians(0.05)
    assert newest(diagnostics)[0] == "cancelled"

    recorder = BagRecorder(rig.probe.node, tmp_path / "bag",
                           {"/joint_states": "sensor_msgs/msg/JointState"})
    arm.pump(0.3)
    diagnostics.messages.clear()
    second = rig.trigger("start")
    assert second.success, second.message
    arm.pump(RUN_S, lambda: output.exists() or newest(diagnostics)[0] == "failed")
    arm.pump(2.0, lambda: newest(diagnostics)[0] in ("done", "failed"))
    recorder.close()
    state, message = newest(diagnostics)
    assert state == "done", f"{state}: {message}\n{rig.running.process.output()[-2000:]}"
    percents = [float(p["percent"]) for p in progress(diagnostics) if "percent" in p]
    assert max(percents) > 50.0

    doc = yaml.safe_load(output.read_text())
    values = np.array([p["value"] for p in doc["parameters"]])
    latched: list[Any] = []  # subscribed after the run: the transient-local message still comes
    sub = rig.probe.node.create_subscription(
        Float64MultiArray, "/identification/parameters", latched.append,
        QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    try:
        assert arm.pump(5.0, lambda: len(latched) > 0)
    finally:
        rig.probe.node.destroy_subscription(sub)
    assert np.array(latched[-1].data) == pytest.approx(values, rel=1e-12)

    settings = BagIdentificationSettings(
        bag=tmp_path / "bag", topic="/joint_states", urdf="", joints=LUNAR_JOINTS,
        speed=SPEED_DEG_S, trim=TRIM_S, gravity=9.81, method="sequential",
        torque_source="effort", torque_constants=None, average=10)
    offline, sweeps = estimate_from_bag(settings)
    assert (doc["sweeps"], sweeps) == (6, 6)
    assert offline.values.tolist() == pytest.approx(values.tolist(), rel=1e-9)
    # +-2 deg sweeps: each joint's block is conditioned under ILL_CONDITIONED, and not warned
    conditions = list(doc["condition_numbers"].values())
    assert conditions == pytest.approx(offline.condition_numbers.tolist(), rel=1e-9)
    assert max(conditions) < ILL_CONDITIONED, conditions
    assert not any("ill-conditioned" in w for w in doc["warnings"]), doc["warnings"]


@pytest.mark.slow
@pytest.mark.parametrize(("joint", "angle_deg", "reason"), [
    (0, 178.0, "left their limits"),  # joint1's limit is 170 deg
    (3, -115.0, "is below 10.0 mm"),  # joint4 at -115 deg: link3 and link5 closer than 1 cm
])
def test_leaving_limits_or_clearance_mid_run_stops_and_reports(
        rig: Rig, joint: int, angle_deg: float, reason: str) -> None:
    """A joint outside its limits, or links closer than clearance, during the run: the node
    fails naming why (an ERROR on /diagnostics), holds the arm where it is, at rest, and
    commands nothing more."""
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus

    arm = rig.arm
    diagnostics = rig.probe.record(DiagnosticArray, "/diagnostics", keep=100_000)
    started = rig.trigger("start")
    assert started.success, started.message
    assert arm.pump(10.0, lambda: any(p.get("pass") == "forward" for p in progress(diagnostics)))
    pushed = np.radians(STATIC_DEG)
    pushed[joint] = math.radians(angle_deg)
    arm.pushed_to = pushed  # the arm pushed there (a collision, a slipping joint)
    assert arm.pump(2.0, lambda: newest(diagnostics)[0] == "failed"), newest(diagnostics)
    assert reason in newest(diagnostics)[1]
    assert any(s.level == DiagnosticStatus.ERROR and reason in s.message
               for s in statuses(diagnostics, NODE))
    arm.pump(0.2)
    assert arm.commands and not any(arm.commands[-1].velocity)  # the hold: at rest
    arm.commands.clear()
    arm.pump(0.3)
    assert arm.commands == []  # and nothing more is commanded
