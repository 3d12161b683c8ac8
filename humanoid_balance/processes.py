"""Start the package's nodes as processes, drive their lifecycle, stop them: as a user does.

``ros2 run`` and ``ros2 launch`` start each node as a process of its own; so do
the demo, the benchmarks and the process-level tests, through this module and
the graph description (:mod:`humanoid_balance.graph`).

- :class:`NodeProcess`: one node's console script as a subprocess, its output
  to a log file; :meth:`NodeProcess.stop` sends SIGINT (or SIGTERM) and reports
  the exit status, the time it took and whether a traceback was printed.
- :class:`LifecycleClient`: configure, activate, deactivate a lifecycle node
  through its ``change_state`` / ``get_state`` services, from an rclpy node of
  the caller's.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, ClassVar

from humanoid_balance.exceptions import ConfigurationError, HumanoidBalanceError
from humanoid_balance.graph import GraphNode, command_line


def executable_path(name: str) -> str:
    """Path of the package's console script ``name``: beside this Python first, then on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise ConfigurationError(
            f"console script {name!r} not found beside {sys.executable} nor on PATH; install the "
            "package (bash tools/bootstrap.sh setup, or colcon build and source install/setup.bash)")
    return found


@dataclass(frozen=True)
class ExitReport:
    """How a node process ended.

    Attributes:
        returncode: its exit status (negative: killed by that signal).
        seconds: from the signal to the exit, s.
        output: what it printed (stdout and stderr together).
        killed: it did not exit in time and was killed with SIGKILL.
    """

    returncode: int
    seconds: float
    output: str
    killed: bool

    @property
    def traceback(self) -> bool:
        """It printed a Python traceback."""
        return "Traceback (most recent call last)" in self.output

    @property
    def clean(self) -> bool:
        """Exit status 0, not killed, no traceback."""
        return self.returncode == 0 and not self.killed and not self.traceback


#: run as ``python -S -E -c WRAPPER <parent pid> <command...>``: asks the kernel to send SIGTERM
#: when the process that started it ends (``prctl(PR_SET_PDEATHSIG)``, kept across ``execvp``),
#: exits at once if that parent is already gone, then becomes the command (same pid). A
#: ``preexec_fn`` would do it between fork and exec in a parent with DDS threads, where
#: Python code may deadlock (the subprocess documentation's warning)
_PARENT_DEATH_WRAPPER = (
    "import ctypes, os, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, 15, 0, 0, 0)\n"  # PR_SET_PDEATHSIG, SIGTERM
    "os.getppid() == int(sys.argv[1]) or sys.exit(0)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n")


def with_parent_death_signal() -> list[str]:
    """The command prefix that ends a node with SIGTERM when the process that started it dies
    (killed, crashed): a chaos run, a soak or the demo killed with SIGKILL otherwise left
    its graph running. SIGTERM is a node's clean stop (the arm brakes, the waist disables).
    Empty where the platform has no ``prctl`` (not Linux)."""
    if not sys.platform.startswith("linux"):
        return []
    return [sys.executable, "-S", "-E", "-c", _PARENT_DEATH_WRAPPER, str(os.getpid())]


class NodeProcess:
    """One node of a graph as a process (``ros2 run`` does the same), output to ``log_path``.

    The node gets SIGTERM when the process that started it dies
    (:func:`with_parent_death_signal`). Use as a context manager, or call :meth:`stop`.
    """

    def __init__(self, node: GraphNode, *, log_path: Path | str,
                 env: Mapping[str, str] | None = None, parameter_file: Path | str | None = None,
                 extra_arguments: Sequence[str] = ()) -> None:
        self.node = node
        self.log_path = Path(log_path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        cmd = command_line(node, parameter_file)
        self.command = [executable_path(cmd[0]), *cmd[1:], *extra_arguments]
        self._log: IO[str] = open(self.log_path, "w")  # noqa: SIM115 (closed in stop)
        environment = dict(os.environ if env is None else env)
        environment.setdefault("PYTHONUNBUFFERED", "1")
        self.popen = subprocess.Popen(
            [*with_parent_death_signal(), *self.command], stdout=self._log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=environment)
        self.report: ExitReport | None = None

    @property
    def name(self) -> str:
        """The node's name."""
        return self.node.name

    @property
    def pid(self) -> int:
        """Its process id."""
        return self.popen.pid

    def alive(self) -> bool:
        """It is still running."""
        return self.popen.poll() is None

    def output(self) -> str:
        """What it printed so far (all of it once stopped)."""
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def wait_for_output(self, text: str, timeout: float) -> bool:
        """Wait until the process printed ``text``; False on timeout or exit."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if text in self.output():
                return True
            if not self.alive():
                return text in self.output()
            time.sleep(0.05)
        return False

    def stop(self, sig: int = signal.SIGINT, timeout: float = 2.0) -> ExitReport:
        """Send ``sig``, wait ``timeout`` s for the exit, SIGKILL after that; how it ended."""
        if self.report is not None:
            return self.report
        start = time.monotonic()
        killed = False
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                killed = True
                self.popen.kill()
                self.popen.wait(timeout=5.0)
        seconds = time.monotonic() - start
        self._log.close()
        self.report = ExitReport(self.popen.returncode, seconds,
                                 self.log_path.read_text(errors="replace"), killed)
        return self.report

    def __enter__(self) -> NodeProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class LifecycleError(HumanoidBalanceError):
    """A lifecycle transition was refused, failed, or its service did not answer."""


class LifecycleClient:
    """Drive a lifecycle node by its services, from the caller's rclpy ``node``.

    The caller spins nothing itself meanwhile: each call spins ``node`` until the
    answer comes or ``timeout`` s pass, with ``executor`` (default: rclpy's global
    executor, which serves the default context only: a node of a context of its
    own needs an executor of that context).
    """

    TRANSITIONS: ClassVar[dict[str, int]] = {"configure": 1, "cleanup": 2, "activate": 3, "deactivate": 4,
                   "shutdown": 5}  # lifecycle_msgs/msg/Transition ids
    #: the shutdown transition's id from each primary state (lifecycle_msgs/msg/Transition)
    SHUTDOWN_FROM: ClassVar[dict[str, int]] = {"unconfigured": 5, "inactive": 6, "active": 7}

    def __init__(self, node: Any, target: str, executor: Any = None) -> None:
        from lifecycle_msgs.srv import ChangeState, GetState

        self.node = node
        self.executor = executor
        self.target = target.lstrip("/")
        self._change = node.create_client(ChangeState, f"/{self.target}/change_state")
        self._get = node.create_client(GetState, f"/{self.target}/get_state")

    #: s one request waits for its answer before the node's state is asked (see :meth:`change`)
    ATTEMPT_S: ClassVar[float] = 3.0
    #: the primary state each transition leads to when it succeeds
    GOALS: ClassVar[dict[str, str]] = {"configure": "inactive", "cleanup": "unconfigured",
                                       "activate": "active", "deactivate": "inactive",
                                       "shutdown": "finalized"}
    PRIMARY: ClassVar[tuple[str, ...]] = ("unconfigured", "inactive", "active", "finalized")

    def _call(self, client: Any, request: Any, end: float) -> Any:
        """One request; its answer, or None when none came within :data:`ATTEMPT_S`.

        Waits for the service until the monotonic time ``end`` (then raises).
        """
        import rclpy

        start = time.monotonic()
        while not client.service_is_ready():
            if time.monotonic() > end:
                raise LifecycleError(f"/{self.target}: {client.srv_name} not available after "
                                     f"{time.monotonic() - start:.1f} s: is the node running?")
            rclpy.spin_once(self.node, executor=self.executor, timeout_sec=0.05)
        answer_by = min(end, time.monotonic() + self.ATTEMPT_S)
        future = client.call_async(request)
        while not future.done():
            if time.monotonic() > answer_by:
                client.remove_pending_request(future)
                return None
            rclpy.spin_once(self.node, executor=self.executor, timeout_sec=0.05)
        return future.result()

    def destroy(self) -> None:
        """Destroy its service clients (the caller's node lives on)."""
        self.node.destroy_client(self._change)
        self.node.destroy_client(self._get)

    def state(self, timeout: float = 5.0) -> str:
        """The node's current state label (``unconfigured``, ``inactive``, ``active``, ...).

        Asking is harmless, so a request whose answer does not come within
        :data:`ATTEMPT_S` is sent again until ``timeout``.
        """
        from lifecycle_msgs.srv import GetState

        end = time.monotonic() + timeout
        while True:
            answer = self._call(self._get, GetState.Request(), end)
            if answer is not None:
                return str(answer.current_state.label)
            if time.monotonic() >= end:
                raise LifecycleError(f"/{self.target}: no answer from {self._get.srv_name} "
                                     f"within {timeout:.1f} s")

    def _settled_state(self, end: float) -> str:
        """The node's state once it is in a primary state (a transition may still be running)."""
        while True:
            label = self.state(max(0.1, end - time.monotonic()))
            if label in self.PRIMARY or time.monotonic() >= end:
                return label
            time.sleep(0.05)

    def change(self, transition: str, timeout: float = 10.0) -> bool:
        """Request ``transition`` (``configure``, ``activate``, ...); True when it succeeded.

        A service's answer can be lost: a server restarted under the same name
        (a node started again) may answer before its reply writer has matched
        this client, and the client then waits forever (seen: 90 s). So when
        no answer comes within :data:`ATTEMPT_S`, the node's state is asked
        (harmless): the goal state means the transition happened; otherwise,
        once the node is in a primary state, the request is sent again.
        """
        from lifecycle_msgs.srv import ChangeState

        if transition not in self.TRANSITIONS:
            raise LifecycleError(f"transition={transition!r}; one of {sorted(self.TRANSITIONS)}")
        end = time.monotonic() + timeout
        request = ChangeState.Request()
        request.transition.id = self.TRANSITIONS[transition]
        if transition == "shutdown":  # its id depends on the state it leaves
            request.transition.id = self.SHUTDOWN_FROM.get(self._settled_state(end),
                                                           request.transition.id)
        while True:
            answer = self._call(self._change, request, end)
            if answer is not None:
                return bool(answer.success)
            label = self._settled_state(end)
            if label == self.GOALS[transition]:
                return True
            if time.monotonic() >= end:
                raise LifecycleError(f"/{self.target}: no answer from {self._change.srv_name} "
                                     f"within {timeout:.1f} s (state now {label})")

    def bring_up(self, timeout: float = 10.0) -> None:
        """Configure, then activate (only after a successful configure); raise on a failure."""
        for transition in ("configure", "activate"):
            if not self.change(transition, timeout):
                raise LifecycleError(f"/{self.target}: {transition} failed (state now "
                                     f"{self.state(timeout)}); its log says why")


#: exit status of ``humanoid-balance wait-for`` when the subscriptions did not appear in time
WAIT_TIMEOUT_STATUS = 3


def _split_name(full_name: str) -> tuple[str, str]:
    """``/ns/name`` as (namespace, name): ``("/ns", "name")``; ``name`` alone is in ``/``."""
    path = "/" + full_name.strip("/")
    namespace, _, name = path.rpartition("/")
    return namespace or "/", name


def missing_subscriptions(node: Any, topics: Sequence[str], subscriber: str = "") -> list[str]:
    """The topics that ``subscriber`` (``/ns/name``; empty: anyone) does not subscribe to yet.

    Args:
        node: an rclpy node of the caller's, used to read the ROS graph.
        topics: absolute topic names.
        subscriber: fully qualified node name, or empty for any subscriber.
    """
    if not subscriber:
        return [t for t in topics if node.count_subscribers(t) == 0]
    namespace, name = _split_name(subscriber)
    missing = []
    for topic in topics:
        infos = node.get_subscriptions_info_by_topic(topic)
        if not any(i.node_name == name and i.node_namespace == namespace for i in infos):
            missing.append(topic)
    return missing
