"""The suite's hang watchdog (pyproject.toml): a test stuck in C holding the GIL ends the session.

pytest-timeout's handler is a Python signal handler: it never runs while the main thread
waits in C with the GIL held (a DDS deadlock did that once, and the suite hung until
the CI limit). pytest's ``faulthandler_timeout`` with ``faulthandler_exit_on_timeout``
dumps every thread's stack from a C thread and exits with status 1.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# ctypes.PyDLL keeps the GIL during the call, and a default pthread mutex locked a second
# time by its owner blocks for ever: no signal ends the wait
STUCK_LINE = "    libc.pthread_mutex_lock(mutex)  # stuck"
STUCK_TEST = f"""
import ctypes


def test_stuck_in_c_with_the_gil():
    libc = ctypes.PyDLL(None)
    mutex = ctypes.create_string_buffer(64)  # zeroed: PTHREAD_MUTEX_INITIALIZER (glibc)
    libc.pthread_mutex_lock(mutex)
{STUCK_LINE}
"""


def _pytest(tmp_path: Path, body: str,
            faulthandler_timeout: float) -> tuple[subprocess.CompletedProcess[str], float]:
    (tmp_path / "test_case.py").write_text(body)
    start = time.monotonic()
    # the project's pytest settings, the watchdog's delay shortened; pytest-timeout (300 s)
    # stays as configured and cannot act in time
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(REPO / "pyproject.toml"), "--rootdir",
         str(tmp_path), "-p", "no:cacheprovider", "-o",
         f"faulthandler_timeout={faulthandler_timeout}", str(tmp_path / "test_case.py")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path)
    return done, time.monotonic() - start


@pytest.mark.skipif(int(pytest.__version__.split(".")[0]) < 9,
                    reason=f"faulthandler_exit_on_timeout needs pytest >= 9, not "
                           f"{pytest.__version__} (a distribution's pytest under colcon test)")
def test_a_test_stuck_in_c_ends_the_session_with_every_stack_and_status_1(tmp_path: Path) -> None:
    done, took = _pytest(tmp_path, STUCK_TEST, 2.0)
    line = STUCK_TEST.splitlines().index(STUCK_LINE) + 1
    assert done.returncode == 1, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert "Timeout" in done.stderr and f"test_case.py\", line {line}" in done.stderr, done.stderr
    assert took < 60.0


def test_a_test_that_finishes_in_time_is_left_alone(tmp_path: Path) -> None:
    done, _ = _pytest(tmp_path, "import time\n\n\ndef test_sleeps():\n    time.sleep(3.0)\n", 10.0)
    assert done.returncode == 0 and "1 passed" in done.stdout, (done.stdout, done.stderr)
