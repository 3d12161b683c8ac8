"""A node started by :class:`humanoid_balance.processes.NodeProcess` ends when the process that
started it is killed (the demo, a chaos run or a soak killed with SIGKILL left their graph
running): SIGTERM from the kernel, the node's clean stop."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from humanoid_balance.processes import with_parent_death_signal

pytestmark = pytest.mark.ros

PARENT = """
import sys, time
from pathlib import Path
from humanoid_balance.graph import NODES, GraphNode
from humanoid_balance.processes import NodeProcess
node = NodeProcess(GraphNode(NODES["zmp_estimator"]), log_path=Path(sys.argv[1]))
# up once it logs (its subscriptions made): no time assumed, 120 s at most
print(node.pid if node.wait_for_output("[zmp_estimator]", 120.0) else "not up", flush=True)
time.sleep(600)
"""


def _wait_for_exit(pid: int, timeout: float) -> bool:
    """Whether process ``pid`` (not a child of this one) ends within ``timeout`` s: a pidfd
    becomes readable when it does."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


@pytest.mark.skipif(not sys.platform.startswith("linux"),
                    reason="prctl(PR_SET_PDEATHSIG) and pidfd are Linux's")
def test_a_node_ends_cleanly_when_its_starter_is_killed(tmp_path: Path) -> None:
    """SIGKILL of the starting process: the node gets SIGTERM and exits without a traceback."""
    log = tmp_path / "zmp_estimator.log"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(log)], stdout=subprocess.PIPE,
                              text=True, env=dict(os.environ))
    try:
        assert parent.stdout is not None
        line = parent.stdout.readline().strip()
        assert line.isdigit(), f"{line}: {log.read_text() if log.exists() else 'no log'}"
        child = int(line)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
        assert _wait_for_exit(child, 60.0), f"{child} still runs after its starter died"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
    output = log.read_text()
    assert "Traceback" not in output, output[-3000:]


def test_the_prefix_names_the_starter_and_keeps_the_command() -> None:
    """On Linux the prefix is this interpreter, isolated (-S -E), given this process's pid; the
    node's command follows it unchanged (the wrapper exec's it: same pid)."""
    prefix = with_parent_death_signal()
    if not sys.platform.startswith("linux"):
        assert prefix == []
        return
    assert prefix[:4] == [sys.executable, "-S", "-E", "-c"]
    assert prefix[-1] == str(os.getpid())
    ran = subprocess.run([*prefix, sys.executable, "-c", "import os; print(os.getppid())"],
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert int(ran.stdout) == os.getpid()  # exec'd in place: its parent is this process
