"""humanoid-balance report: the page of a recorded run (any bag), and result files as a table."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from humanoid_balance.cli import main
from humanoid_balance.results import metric, write_results

#: the humanoid's joints the robot's drivers publish on /joint_states (the waist controller
#: publishes the waist's own there, as on the robot)
BODY_JOINTS = tuple(
    [f"{side}_{j}" for side in ("left", "right") for j in (
        "hip_yaw", "hip_roll", "hip_pitch", "knee", "ankle_pitch", "ankle_roll")]
    + [f"{side}_{j}" for side in ("left", "right") for j in (
        "shoulder_pitch", "shoulder_roll", "shoulder_yaw", "elbow", "wrist_yaw", "wrist_roll",
        "wrist_pitch")]
    + ["neck_yaw", "neck_pitch"])
PNG = b"\x89PNG\r\n\x1a\n"
PLOTS = ("cop_zmp_paths", "momentum", "waist_tracking", "command_rates", "holds_and_faults",
         "stability_margin")
T0 = 1_700_000_000.0  # a robot's wall-clock stamps [s]


# --- bags built here: messages serialized by rclpy, written with rosbags --------------------


def _stamp(msg: Any, t: float) -> Any:
    msg.header.stamp.sec = int(t)
    msg.header.stamp.nanosec = int(np.rint((t - int(t)) * 1e9))
    return msg


def _write_bag(path: Path, messages: dict[str, tuple[str, list[tuple[float, Any]]]]) -> Path:
    """A MCAP bag: topic -> (type, [(log time [s], message)])."""
    from rclpy.serialization import serialize_message
    from rosbags.rosbag2 import StoragePlugin, Writer

    from humanoid_balance.bag import typestore

    entries = []
    with Writer(path, version=8, storage_plugin=StoragePlugin.MCAP) as writer:
        for topic, (msgtype, items) in messages.items():
            connection = writer.add_connection(topic, msgtype, typestore=typestore())
            entries += [(int(np.rint(t * 1e9)), connection, serialize_message(m)) for t, m in items]
        for log_ns, connection, data in sorted(entries, key=lambda e: e[0]):
            writer.write(connection, log_ns, data)
    return path


def _every(rate_hz: float, seconds: float, start: float) -> np.ndarray:
    return start + np.arange(int(np.rint(rate_hz * seconds))) / rate_hz


def _joint_state(t: float, names: Sequence[str], q: Sequence[float],
                 v: Sequence[float] | None = None) -> Any:
    from sensor_msgs.msg import JointState

    msg = _stamp(JointState(), t)
    msg.name, msg.position = list(names), [float(x) for x in q]
    msg.velocity = [] if v is None else [float(x) for x in v]
    return msg


def _point(t: float, x: float, y: float) -> Any:
    from geometry_msgs.msg import PointStamped

    msg = _stamp(PointStamped(), t)
    msg.header.frame_id = "world"
    msg.point.x, msg.point.y = x, y
    return msg


def _diagnostics(t: float, statuses: Sequence[tuple[str, int, str, dict[str, str]]]) -> Any:
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

    msg = _stamp(DiagnosticArray(), t)
    for name, level, text, values in statuses:
        status = DiagnosticStatus(name=name, message=text, level=bytes([level]))
        status.values = [KeyValue(key=k, value=v) for k, v in values.items()]
        msg.status.append(status)
    return msg


def _robot_topics(seconds: float = 2.0) -> dict[str, tuple[str, list[tuple[float, Any]]]]:
    """What `humanoid-balance record` writes on the robot: no simulation topic, wall stamps."""
    from geometry_msgs.msg import Vector3Stamped, WrenchStamped
    from std_msgs.msg import Float64
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    waist = ("waist_pitch", "waist_roll")
    # the waist controller's message comes first: the body must still be the drivers' joints
    waist_states = [(t, _joint_state(t, waist, [np.deg2rad(0.5) * (t - T0), 0.0], [0.0, 0.0]))
                    for t in _every(50, seconds, T0)]
    body = []
    for t in _every(100, seconds, T0 + 0.005):
        q = np.zeros(len(BODY_JOINTS))
        q[BODY_JOINTS.index("right_shoulder_pitch")] = -0.5 * (t - T0)
        v = np.zeros(len(BODY_JOINTS))
        v[BODY_JOINTS.index("right_shoulder_pitch")] = -0.5
        body.append((t, _joint_state(t, BODY_JOINTS, q, v)))
    zmp = [(t, _point(t, 0.01 * np.sin(t - T0), 0.005 * np.cos(t - T0)))
           for t in _every(100, seconds, T0)]
    margin = [(t, Float64(data=0.05 - 0.01 * (t - T0))) for t in _every(100, seconds, T0)]
    arm_command = [(t, _joint_state(t, ["left_elbow"], [0.1], [0.0]))
                   for t in _every(200, seconds, T0)]
    momentum = []
    for t in _every(200, seconds, T0):
        msg = _stamp(WrenchStamped(), t)
        msg.header.frame_id = "W"
        msg.wrench.torque.x, msg.wrench.torque.z = 0.001, 0.2 * (t - T0)
        momentum.append((t, msg))
    waist_command = []
    for t in _every(5, seconds, T0):
        msg = _stamp(JointTrajectory(), t)
        msg.joint_names = list(waist)
        msg.points = [JointTrajectoryPoint(positions=[np.deg2rad(0.5) * (t - T0), 0.0])]
        waist_command.append((t, msg))
    error = []
    for t in _every(50, seconds, T0):
        msg = _stamp(Vector3Stamped(), t)
        msg.vector.x = np.deg2rad(0.02)
        error.append((t, msg))
    diagnostics = []
    for k, t in enumerate(_every(2, seconds, T0 + 0.25)):
        statuses = [("arm_balance: control", 1 if k >= 2 else 0, "held" if k >= 2 else "ok",
                     {"holds": str(min(k, 2))}),
                    ("zmp_estimator: ZMP", 0, "ok", {})]
        if k == 3:
            statuses.append(("waist_controller: drives", 2, "drive 2 silent for 12 ms", {}))
        diagnostics.append((t, _diagnostics(t, statuses)))
    return {
        "/joint_states": ("sensor_msgs/msg/JointState", waist_states[:1] + body + waist_states[1:]),
        "/zmp": ("geometry_msgs/msg/PointStamped", zmp),
        "/zmp/stability_margin": ("std_msgs/msg/Float64", margin),
        "/diagnostics": ("diagnostic_msgs/msg/DiagnosticArray", diagnostics),
        "/arm_balance/command": ("sensor_msgs/msg/JointState", arm_command),
        "/arm_balance/momentum": ("geometry_msgs/msg/WrenchStamped", momentum),
        "/waist/command": ("trajectory_msgs/msg/JointTrajectory", waist_command),
        "/waist/tracking_error": ("geometry_msgs/msg/Vector3Stamped", error),
    }


def _strike_run(rmc: bool, shift_m: float) -> dict[str, tuple[str, list[tuple[float, Any]]]]:
    """A simulated strike as the demo records it: CoP rests, then shifts by ``shift_m`` after 1 s."""
    times = _every(500, 2.0, 0.002)
    cop = [(t, _point(t, 0.01 + (shift_m if t > 1.1 else 0.0), 0.0)) for t in times]
    zmp = [(t, _point(t, 0.01 + (shift_m if t > 1.12 else 0.0), 0.001)) for t in times]
    job_names = ["right_shoulder_pitch"]
    job = [(t, _joint_state(t, job_names, [0.0], [1.0 if t >= 1.0 else 0.0])) for t in times]
    joints = [(t, _joint_state(t, BODY_JOINTS, np.zeros(len(BODY_JOINTS)),
                               np.zeros(len(BODY_JOINTS)))) for t in times[::5]]
    topics: dict[str, tuple[str, list[tuple[float, Any]]]] = {
        "/sim/cop": ("geometry_msgs/msg/PointStamped", cop),
        "/zmp": ("geometry_msgs/msg/PointStamped", zmp),
        "/joint_states": ("sensor_msgs/msg/JointState", joints),
        ("/arm_balance/job_joint_velocities" if rmc else "/joint_commands"):
            ("sensor_msgs/msg/JointState", job),
    }
    if rmc:
        from geometry_msgs.msg import WrenchStamped

        topics["/arm_balance/momentum"] = ("geometry_msgs/msg/WrenchStamped",
                                           [(t, _stamp(WrenchStamped(), t)) for t in times])
    return topics


def _report(*args: str) -> tuple[int, str]:
    """`humanoid-balance report ARGS` in this process: exit status and standard output."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["report", *args])
    return code, out.getvalue()


@pytest.fixture(scope="module")
def robot_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`report` of a robot's bag (no simulation topic) into its default folder."""
    folder = tmp_path_factory.mktemp("robot")
    bag = _write_bag(folder / "run1", _robot_topics())
    code, stdout = _report(str(bag))
    out = folder / "run1_report"
    return {"code": code, "stdout": stdout, "out": out, "bag": bag,
            "page": (out / "index.html").read_text() if (out / "index.html").exists() else ""}


@pytest.fixture(scope="module")
def demo_folder_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`report` of a run folder as the demo writes it: bag (with RMC), bag_without_rmc."""
    folder = tmp_path_factory.mktemp("demo")
    _write_bag(folder / "bag", _strike_run(rmc=True, shift_m=0.005))
    _write_bag(folder / "bag_without_rmc", _strike_run(rmc=False, shift_m=0.040))
    code, stdout = _report(str(folder))
    out = folder / "report"
    return {"code": code, "stdout": stdout, "out": out,
            "page": (out / "index.html").read_text() if (out / "index.html").exists() else ""}


def _table_value(page: str, name: str) -> list[str]:
    """The cells of a metric's row in the page's tables."""
    row = re.search(rf"<tr[^>]*><td>{re.escape(name)}</td>(.*?)</tr>", page)
    assert row, name
    return re.findall(r"<td>(.*?)</td>", row.group(1))


# --- a robot's bag -----------------------------------------------------------------------


def test_robot_bag_page_shows_every_plot(robot_report: dict[str, Any]) -> None:
    """A robot's bag gives every plot: the page names each and each PNG is written."""
    assert robot_report["code"] == 0, robot_report["stdout"]
    for name in PLOTS:
        assert f"src='{name}.png'" in robot_report["page"], name
        assert (robot_report["out"] / f"{name}.png").read_bytes()[:8] == PNG, name
    assert "plots not drawn" not in robot_report["page"]


def test_robot_bag_page_says_what_the_ground_plot_lacks(robot_report: dict[str, Any]) -> None:
    """Without simulation topics the page says the ground plot has no CoP ground truth."""
    assert "run1: no /sim/cop (the simulation&#x27;s CoP, ground truth)" in robot_report["page"]


def test_robot_bag_page_counts_holds_and_faults(robot_report: dict[str, Any]) -> None:
    """The arm's holds and the ERROR status on /diagnostics are in the table and the notes."""
    page = robot_report["page"]
    assert _table_value(page, "arm_balance_holds")[0] == "2"
    assert _table_value(page, "faults_seen")[0] == "1"
    assert "run1: fault on /diagnostics: waist_controller: drives: drive 2 silent for 12 ms" in page


def test_robot_bag_page_gives_command_rates(robot_report: dict[str, Any]) -> None:
    """Each command topic's median rate is in the table (200 Hz arm, 5 Hz waist commands)."""
    page = robot_report["page"]
    assert float(_table_value(page, "/arm_balance/command rate")[0]) == pytest.approx(200.0)
    assert float(_table_value(page, "/waist/command rate")[0]) == pytest.approx(5.0)


def test_robot_bag_page_links_the_bag(robot_report: dict[str, Any]) -> None:
    """The page beside the bag links it by its relative path."""
    assert "<a href='../run1'>bag run1</a>" in robot_report["page"]


def test_report_prints_progress(robot_report: dict[str, Any]) -> None:
    """Reading a bag prints progress lines ending at 100 % of its messages."""
    lines = [ln for ln in robot_report["stdout"].splitlines() if ln.startswith("report: reading")]
    assert lines and lines[-1].endswith("100 % (1614 of 1614 messages)"), robot_report["stdout"]


def test_waist_controllers_joint_states_are_the_waist_drive(robot_report: dict[str, Any]) -> None:
    """On a robot the waist's own /joint_states are the drive; the drivers' message is the body."""
    from humanoid_balance.recorded_run import load_run

    run = load_run(robot_report["bag"], "run1")
    assert run.joint_names == BODY_JOINTS
    assert len(run.waist_drive) == 100 and len(run.joints_q) == 200


def test_bag_lacking_topics_says_which_plots_are_missing(tmp_path: Path) -> None:
    """A bag with /diagnostics only: the page lists each plot not drawn with the topics it lacks."""
    topics = _robot_topics(seconds=1.0)
    bag = _write_bag(tmp_path / "diag_only", {"/diagnostics": topics["/diagnostics"]})
    code, _ = _report(str(bag), "--out", str(tmp_path / "page"))
    page = (tmp_path / "page" / "index.html").read_text()
    assert code == 0
    assert "<b>cop_zmp_paths</b>: the recording has no /zmp (zmp_estimator) and no /sim/cop" in page
    assert "<b>waist_tracking</b>: the recording has no /waist/command" in page
    assert "<b>stability_margin</b>: the recording has no /zmp/stability_margin" in page
    drawn = sorted(p.name for p in (tmp_path / "page").glob("*.png"))
    assert drawn == ["holds_and_faults.png"]


# --- a run folder as the demo writes it --------------------------------------------------


def test_run_folder_page_compares_the_runs(demo_folder_report: dict[str, Any]) -> None:
    """The demo's folder: both runs, the CoP peak-shift ratio with / without RMC in the headline."""
    assert demo_folder_report["code"] == 0, demo_folder_report["stdout"]
    page = demo_folder_report["page"]
    assert "<th>with RMC</th><th>without RMC</th>" in page
    assert float(_table_value(page, "cop_peak_shift_ratio")[0]) == pytest.approx(5 / 40, abs=2e-3)


def test_run_folder_page_shows_the_demos_plots(demo_folder_report: dict[str, Any]) -> None:
    """The demo's plots are on the page, written in FOLDER/report, and the bags are linked."""
    page = demo_folder_report["page"]
    for name in ("cop_zmp_paths", "momentum", "command_rates"):
        assert (demo_folder_report["out"] / f"{name}.png").read_bytes()[:8] == PNG, name
        assert f"src='{name}.png'" in page
    assert "<a href='../bag'>bag with RMC</a>" in page


# --- user errors ---------------------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    from humanoid_balance.processes import executable_path

    return subprocess.run([executable_path("humanoid-balance"), *args], capture_output=True,
                          text=True, timeout=60, env=dict(os.environ), check=False)


@pytest.mark.parametrize("make", [lambda p: p.mkdir(), lambda p: p.write_text("not a bag")],
                         ids=["empty_folder", "text_file"])
def test_a_path_that_is_no_bag_is_one_line_exit_2(tmp_path: Path,
                                                 make: Callable[[Path], Any]) -> None:
    """A folder without a bag, or a file that is not JSON: one error line, exit status 2."""
    path = tmp_path / "something"
    make(path)
    result = _cli("report", str(path))
    assert result.returncode == 2
    assert result.stderr == (f"humanoid-balance report: {path}: not a bag (no metadata.yaml in "
                             "it), a run folder (no bag in it) or result JSON files; give a "
                             "rosbag2 directory, a folder of them (as `humanoid-balance demo "
                             "--out` writes) or result files\n")


# --- result files ----------------------------------------------------------------------------


def _markdown_rows(paths: list[Path], capsys: pytest.CaptureFixture[str]) -> list[tuple[str, ...]]:
    """The table rows `humanoid-balance report --markdown PATHS` prints (header and rule dropped)."""
    capsys.readouterr()
    assert main(["report", "--markdown", *map(str, paths)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    return [tuple(cell.strip() for cell in line.strip("|").split("|")) for line in lines[2:]]


def test_verdict_follows_better(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """lower: value <= target is met; higher: value >= target is met; no target: '-'."""
    path = write_results("unit", {
        "lower_met": metric(1.0, "ms", target=2.0, better="lower"),
        "lower_missed": metric(3.0, "ms", target=2.0, better="lower"),
        "higher_met": metric(3.0, "x", target=2.0, better="higher"),
        "no_target": metric(3.0, "x")}, command="test", directory=tmp_path)
    verdicts = {row[1]: row[4] for row in _markdown_rows([path], capsys)}
    assert verdicts == {"lower_met": "met", "lower_missed": "MISSED", "higher_met": "met",
                        "no_target": "-"}


def test_written_results_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """write_results writes the RESULTS.md shape and report reads it back."""
    path = write_results("unit", {"step_us_p99": metric(12.5, "us", target=20, better="lower")},
                         command="test", directory=tmp_path)
    doc = json.loads(path.read_text())
    assert set(doc) == {"name", "created", "git", "machine", "command", "metrics"}
    assert _markdown_rows([path], capsys) == [("unit", "step_us_p99", "12.5 us", "20 us", "met")]


def test_missing_path_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    """A path that does not exist makes the command fail with a one-line message, status 2."""
    assert main(["report", "/no/such/results"]) == 2
    assert capsys.readouterr().err == "humanoid-balance report: /no/such/results: no such file or folder\n"
