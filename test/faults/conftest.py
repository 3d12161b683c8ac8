"""Fixtures of the fault-injection suite: the session's probe and ledger, the results table.

The suite reuses the process-level harness (``test/process/process_harness.py``:
starting nodes as processes, the probe node, lifecycle) and adds
``fault_harness.py`` beside this file (cases, ledger, command checks,
diagnostics). At the end of the session the ledger's counts are written to
``test/faults/results/<node>.json`` (``$HB_FAULT_RESULTS`` to write elsewhere)
and printed as a table in the terminal summary; ``python test/faults/table.py``
prints the same table from the files.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent / "process"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from fault_harness import Ledger, table  # noqa: E402
from process_harness import Probe  # noqa: E402

LEDGER = Ledger()


@pytest.fixture(scope="session")
def ledger() -> Ledger:
    """The session's ledger of fault cases."""
    return LEDGER


@pytest.fixture(scope="session")
def fault_probe() -> Iterator[Probe]:
    """The fault suite's own rclpy node (a context of its own), spun only by the tests."""
    made = Probe("fault_probe")
    try:
        yield made
    finally:
        made.close()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Write the ledger's tables where the cases ran: in each xdist worker (the fault files
    are grouped by file, ``--dist loadfile``, so one worker holds a node's cases) or in the
    one process without xdist."""
    if LEDGER.records:
        selection = " ".join(session.config.invocation_params.args)
        LEDGER.written = LEDGER.write(selection=selection)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The fault cases per node, as a table (without xdist; with it, ``python
    test/faults/table.py`` prints the files the workers wrote)."""
    if not LEDGER.records:
        return
    terminalreporter.write_line("fault-injection cases (issue 12):")
    terminalreporter.write_line(table(LEDGER.counts()))
    terminalreporter.write_line("written: " + ", ".join(str(p) for p in LEDGER.written))
