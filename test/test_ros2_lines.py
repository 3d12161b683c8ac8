"""The ``ros2`` lines of README.md and docs/INTERFACES.md behave as written (issue 33).

``tools/check_ros2_lines.py`` runs every one of them with the real ros2cli (minutes: three
graphs, two launches). Here: every documented ``ros2`` text has an entry there (a check,
or the reason it cannot run here), the extraction finds code-block lines and inline spans,
and, where ros2cli is installed (a ROS install's ``ros2`` on PATH, or ros2cli importable
by this Python), a representative subset: the robot's waist without its CAN bus and the
identification executor, unconfigured: their services answer at once (no call waits on a
service that is absent), and ``ros2 lifecycle set`` exits as the README says.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent.parent / "tools"
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))

import check_ros2_lines as lines  # noqa: E402

HAS_ROS2CLI = shutil.which("ros2") is not None or importlib.util.find_spec("ros2cli") is not None
#: the subset: services of unconfigured nodes, a refused configure, a chain stopping on it
SUBSET = (
    'ros2 service call /waist/enable std_srvs/srv/SetBool "{data: true}"',
    "ros2 service call /waist/stop std_srvs/srv/Trigger",
    "ros2 service call /identification/start std_srvs/srv/Trigger",
    "ros2 lifecycle set /waist_controller configure",
    "ros2 lifecycle set /waist_controller configure && ros2 lifecycle get /waist_controller | "
    "grep -q '^inactive' && ros2 lifecycle set /waist_controller activate",
)


def test_every_documented_ros2_line_has_an_entry() -> None:
    """Each ros2 text of the two documents is checked or skipped with a reason; no entry is
    left over from a text the documents no longer hold."""
    documented = lines.documented_lines()
    missing, stale = lines.unchecked(documented)
    assert len(documented) >= 40, len(documented)
    assert missing == [], missing
    assert stale == [], stale
    for text, entry in lines.ENTRIES.items():
        assert entry.checks or entry.skip or entry.mention, text


def test_extract_reads_code_block_lines_and_inline_spans(tmp_path: Path) -> None:
    """A block line from its ``ros2`` on without its comment; spans over a line break, and
    ``$(ros2 ...)`` inside another command; other code is not taken."""
    doc = tmp_path / "doc.md"
    doc.write_text("text `ros2 lifecycle set\nNODE activate` and `rviz2 -d $(ros2 pkg prefix x)/a`\n"
                   "not `ros2bag` nor `echo ros2 x`\n```bash\nsource x\n"
                   "ros2 launch p a.launch.py x:=1   # the robot\n```\n")
    assert lines.extract(doc, tmp_path) == [
        lines.DocLine("doc.md", 1, "ros2 lifecycle set NODE activate"),
        lines.DocLine("doc.md", 2, "rviz2 -d $(ros2 pkg prefix x)/a"),
        lines.DocLine("doc.md", 6, "ros2 launch p a.launch.py x:=1", "the robot"),
    ]


def test_the_bringup_arguments_come_from_the_readme_table() -> None:
    """The ``--show-args`` check looks for the README table's bringup arguments."""
    names = lines.bringup_arguments()
    assert {"can_channel", "params_file", "namespace", "rviz"} <= set(names)
    assert "real_time_factor" not in names and "bag" not in names  # sim, replay only


@pytest.mark.ros
@pytest.mark.slow
@pytest.mark.skipif(not HAS_ROS2CLI, reason="ros2cli is not installed (no ros2 on PATH, no "
                    "importable ros2cli): tools/check_ros2_lines.py needs the real one")
@pytest.mark.skipif(Path("/sys/class/net/can0").exists(),
                    reason="this machine has can0: the waist's configure would not fail")
def test_unconfigured_services_answer_and_lifecycle_set_exits_as_written(tmp_path: Path) -> None:
    """Run with the real ros2cli against the waist (no CAN bus) and the identification
    executor: each service answers false with the state and what to do, a refused configure
    prints ``Transitioning failed`` and exits 0, the README's chain stops after it."""
    env = lines.ros2_environment(tmp_path)
    missing = {"lifecycle", "service"} - lines.ros2_commands(env)
    if missing:
        pytest.skip(f"ros2cli lacks {sorted(missing)}")
    checks = [c for c in lines.all_checks(("robot-no-can",)) if c.run in SUBSET]
    assert sorted({c.run for c in checks}) == sorted(SUBSET)
    results = lines.run_checks(checks, tmp_path, env)
    table = "\n".join(f"{lines.verdict(r)} {r.returncode} {r.seconds:.1f} s {r.check.run}: "
                      f"{r.note}\n{r.output[-800:]}" for r in results.values())
    assert all(lines.verdict(r) == "pass" for r in results.values()), table
