"""OS-level thread names, so that ``/proc/<pid>/task/<tid>/comm`` tells the threads apart.

Python's ``threading.Thread(name=...)`` names the thread for Python only; the kernel
keeps the process name for every thread. :func:`name_os_thread` sets the kernel's
name of the calling thread (Linux ``prctl(PR_SET_NAME)``, at most 15 bytes), so
that a per-thread CPU split (``benchmarks/graph.py``) or ``top -H`` can attribute time.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

#: ``PR_SET_NAME`` from ``<linux/prctl.h>``
PR_SET_NAME = 15
#: the kernel keeps 15 bytes of a thread's name (16 with the terminating NUL)
MAX_NAME_BYTES = 15

_libc: ctypes.CDLL | None = None
_unavailable = not sys.platform.startswith("linux")


def _prctl() -> ctypes.CDLL | None:
    """The C library with ``prctl``, or None where there is none (cached)."""
    global _libc, _unavailable
    if _libc is None and not _unavailable:
        try:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            _libc.prctl  # noqa: B018 (raises AttributeError without prctl)
        except (OSError, AttributeError):
            _libc, _unavailable = None, True
    return _libc


def name_os_thread(name: str) -> bool:
    """Give the calling thread the OS name ``name`` (truncated to 15 bytes of UTF-8).

    A no-op where the platform has no ``prctl`` (not Linux) or refuses it.

    Args:
        name: the thread's name, e.g. ``"waist-servo"``.

    Returns:
        True when the kernel took the name, False when it was a no-op.
    """
    libc = _prctl()
    if libc is None:
        return False
    raw = name.encode("utf-8", errors="replace")[:MAX_NAME_BYTES]
    try:
        return int(libc.prctl(PR_SET_NAME, ctypes.c_char_p(raw), 0, 0, 0)) == 0
    except (OSError, ctypes.ArgumentError):
        return False
