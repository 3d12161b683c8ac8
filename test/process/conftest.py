"""Fixtures of the process-level tests: the probe node, node processes, feeders.

The helpers live in ``process_harness.py`` beside this file (importable by the
tests of this folder: this conftest puts the folder on ``sys.path``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from process_harness import (  # noqa: E402
    Feeder,
    FeedSpec,
    Probe,
    RunningNode,
    exit_table,
    start_node,
    wait_ready,
)

from humanoid_balance.graph import GraphNode  # noqa: E402


@pytest.fixture(scope="session")
def session_probe() -> Iterator[Probe]:
    """The test session's own rclpy node (a context of its own); module fixtures use it."""
    made = Probe()
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def probe(session_probe: Probe) -> Iterator[Probe]:
    """The session's probe for one test: what the test subscribed or made is dropped after it."""
    yield session_probe
    session_probe.release()


@pytest.fixture
def launch(probe: Probe, tmp_path: Path) -> Iterator[Callable[..., RunningNode]]:
    """Start a graph node as a process and wait until it is reachable.

    ``launch(node, tag="")`` returns the :class:`RunningNode`; the test stops it
    with a signal and checks the exit report. Processes still running after
    the test are stopped with SIGINT (SIGKILL after 10 s, ``STOP_DEADLINE_S``),
    once the probe dropped what it made for the test.
    """
    started: list[RunningNode] = []

    def start(node: GraphNode, tag: str = "") -> RunningNode:
        running = start_node(node, tmp_path, tag)
        started.append(running)
        wait_ready(probe, running)
        return running

    yield start
    # the probe's readers and clients go before the nodes: a node's exit removes its
    # endpoints, and Fast DDS 3.2 can deadlock a participant that is unmatching them from a
    # reader of its own (eProsima/Fast-DDS#6502; docs/ARCHITECTURE.md, "Known DDS faults")
    probe.release()
    for running in reversed(started):
        running.stop()


@pytest.fixture
def feed(probe: Probe, tmp_path: Path) -> Iterator[Callable[[FeedSpec], Feeder]]:
    """Start a feeder process and wait until it publishes; stopped after the test."""
    feeders: list[Feeder] = []

    def start(spec: FeedSpec) -> Feeder:
        feeder = Feeder(spec, tmp_path / f"feeder-{len(feeders)}.log")
        feeders.append(feeder)
        feeder.wait_feeding(probe)
        return feeder

    yield start
    probe.release()  # before the feeders exit, as in ``launch``
    for feeder in feeders:
        feeder.stop()


#: node -> seconds from the signal to the exit, of every signal test of the session
EXIT_TIMES: dict[str, list[float]] = {}
#: node -> seconds from the start until the node was reachable
READY_TIMES: dict[str, list[float]] = {}


@pytest.fixture(scope="session")
def exit_times() -> dict[str, list[float]]:
    """Exit times the signal tests measured, printed at the end of the session."""
    return EXIT_TIMES


@pytest.fixture(scope="session")
def ready_times() -> dict[str, list[float]]:
    """Times to reachable the signal tests measured, printed at the end of the session."""
    return READY_TIMES


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The measured exit and ready times per node (noisy: a shared 2-core machine)."""
    for times, title in ((READY_TIMES, "process tests: start to reachable, s"),
                         (EXIT_TIMES, "process tests: signal to exit, s")):
        if times:
            terminalreporter.write_line(exit_table(times, title))
