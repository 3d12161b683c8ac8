"""humanoid_balance.threads: OS thread names."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from humanoid_balance.threads import MAX_NAME_BYTES, name_os_thread


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_the_kernel_shows_the_thread_name_truncated_to_15_bytes() -> None:
    """name_os_thread names the calling thread in /proc/<pid>/task/<tid>/comm, cut at 15 bytes."""
    seen: list[tuple[bool, str]] = []

    def run() -> None:
        taken = name_os_thread("waist-servo-with-a-long-name")
        comm = Path(f"/proc/self/task/{threading.get_native_id()}/comm").read_text().strip()
        seen.append((taken, comm))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen == [(True, "waist-servo-with-a-long-name"[:MAX_NAME_BYTES])]
