"""tools/test_durations.py: seconds per file from a --durations report."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import test_durations  # noqa: E402

REPORT = """\
============================= slowest durations ==============================
71.39s call     test/test_lint.py::test_mypy_clean
33.05s setup    test/test_experiment_identification.py::test_command_succeeds_and_writes_its_files
8.58s setup    test/faults/test_arm_balance.py::test_bad_joint_positions[right_elbow=nan]
0.50s teardown test/test_lint.py::test_mypy_clean
2.00s call     test/faults/test_arm_balance.py::test_flood
(12 durations < 0.005s hidden.  Use -vv to show these durations.)
"""


def test_setup_call_and_teardown_are_summed_per_file() -> None:
    seconds = test_durations.file_seconds(REPORT)
    assert seconds == {"test/test_lint.py": 71.89,
                       "test/test_experiment_identification.py": 33.05,
                       "test/faults/test_arm_balance.py": 10.58}

