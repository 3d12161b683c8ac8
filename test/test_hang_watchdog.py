"""The suite's hang watchdog (test/conftest.py): a test stuck in C holding the GIL ends the session."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

TEST_DIR = Path(__file__).resolve().parent

# the main thread stuck in C with the GIL held, as in the DDS deadlock the watchdog is for:
# ctypes.PyDLL keeps the GIL during the call, and a default pthread mutex locked a second
# time by its owner blocks for ever (no signal ends the wait: the SIGALRM handler, as
# pytest-timeout's, never runs)
STUCK_LINE = "    libc.pthread_mutex_lock(mutex)  # stuck"
STUCK = f"""
import ctypes, signal, sys
sys.path.insert(0, {str(TEST_DIR)!r})
from conftest import hang_watchdog
libc = ctypes.PyDLL(None)
mutex = ctypes.create_string_buffer(64)  # zeroed: PTHREAD_MUTEX_INITIALIZER (glibc)
libc.pthread_mutex_lock(mutex)
signal.signal(signal.SIGALRM, lambda *a: sys.exit(3))
signal.alarm(1)
with hang_watchdog(2.0):
{STUCK_LINE}
"""


def test_a_test_stuck_in_c_ends_with_every_stack_and_status_1() -> None:
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", STUCK], capture_output=True, text=True,
                          timeout=120)
    took = time.monotonic() - start
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    line = STUCK.splitlines().index(STUCK_LINE) + 1
    assert "Timeout" in done.stderr and f"line {line}" in done.stderr, done.stderr
    assert took < 60.0


def test_the_watchdog_is_cancelled_after_the_block() -> None:
    quiet = STUCK.replace(STUCK_LINE, "    pass").replace("signal.alarm(1)", "") + \
        "import time; time.sleep(3.0); print('alive')"
    done = subprocess.run([sys.executable, "-c", quiet], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "alive", done.stderr
