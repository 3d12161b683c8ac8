"""``/diagnostics`` regularity of the simulated graph, per node (issue 33).

Starts the nodes of ``graph.sim_graph()`` as ``sim.launch.py`` does (free-running, every
node on simulation time, each its console script with the package's parameter file, a
process of its own), configures and activates the lifecycle nodes in
``graph.LIFECYCLE_ORDER``, subscribes to ``/diagnostics`` and measures, over a window of
wall time, when each node sent each status name (the DDS source timestamp of its message,
the publisher's system clock; a listener starved of CPU would otherwise count its own
stalls)::

    python tools/diagnostics_gaps.py                 # 60 s window
    python tools/diagnostics_gaps.py --seconds 20 --json gaps.json

Per status: its count, its period (``1 / diagnostics_rate``, read through the node's
parameter service), the median time between statuses, the largest gap (the window's start
to the first status and the last to the window's end count as gaps too: a node silent at
either end fails) and that gap in periods; where the gap began, how long no other node sent
anything within it (a stall of the whole machine shows in every node), and this listener's
largest gap between arrivals. A status passes with a largest gap of at most
:data:`MAX_GAP_PERIODS` periods. The load (``/proc/loadavg``) is printed before and after.
Exit status 0 when every node passes, 1 otherwise.

:class:`SimGraph` (start, reach, bring up, stop) is also used by ``check_ros2_lines.py``
and ``test/process/test_diagnostics_gaps.py``.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if importlib.util.find_spec("humanoid_balance") is None:  # not installed: this checkout's
    sys.path.insert(0, str(REPO))

from humanoid_balance.graph import GraphNode, lifecycle_nodes, sim_graph  # noqa: E402
from humanoid_balance.processes import ExitReport, LifecycleClient, NodeProcess  # noqa: E402

#: the issue's bound: the largest gap between two statuses of a node, in its periods
MAX_GAP_PERIODS = 2.0
#: s a node may take to become reachable (its parameter service answers) on the loaded machine
READY_TIMEOUT_S = 60.0
#: s after which an unanswered readiness request is sent again
REQUEST_RETRY_S = 2.0
#: s of /diagnostics before the window, so that every publisher has matched the subscription
WARM_UP_S = 3.0


def load_average() -> str:
    """The 1, 5 and 15 minute load averages (``uptime``'s)."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


class SimGraph:
    """Nodes of a graph as processes, reached over DDS from an rclpy node of its own.

    Use as a context manager: entering starts every node, waits until each one's parameter
    service answers, and (``bring_up``) configures then activates the lifecycle nodes in
    order, as the launch files do; leaving stops them with SIGINT in reverse order.
    """

    def __init__(self, log_dir: Path, nodes: Sequence[GraphNode] | None = None, *,
                 bring_up: bool = True, name: str = "hb_graph_probe") -> None:
        self.log_dir = Path(log_dir)
        self.nodes = list(sim_graph() if nodes is None else nodes)
        self.bring_up = bring_up
        self._name = name
        self.processes: list[NodeProcess] = []
        self.exits: dict[str, ExitReport] = {}

    def __enter__(self) -> SimGraph:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.signals import SignalHandlerOptions

        self.context = Context()
        rclpy.init(context=self.context, signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node(self._name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        try:
            self.start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def start(self) -> None:
        """Start the processes, wait until each is reachable, bring up the lifecycle nodes."""
        for node in self.nodes:
            self.processes.append(NodeProcess(node, log_path=self.log_dir / f"{node.name}.log"))
        for process in self.processes:
            self.wait_reachable(process)
        if self.bring_up:
            self.start_lifecycle()

    def start_lifecycle(self) -> None:
        """Configure, then activate, each lifecycle node in ``graph.LIFECYCLE_ORDER``."""
        for managed in lifecycle_nodes(self.nodes):
            client = self.lifecycle(managed.full_name)
            try:
                client.bring_up(timeout=30.0)
            finally:
                client.destroy()

    def __exit__(self, *exc: object) -> None:
        import rclpy

        self.stop()
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)

    def stop(self) -> dict[str, ExitReport]:
        """SIGINT to each process (reverse start order); how each ended."""
        for process in reversed(self.processes):
            self.exits[process.name] = process.stop()
        return self.exits

    def lifecycle(self, target: str) -> LifecycleClient:
        """A lifecycle client of node ``target`` (``/name``), spun with this graph's executor."""
        return LifecycleClient(self.node, target, executor=self.executor)

    def spin(self, seconds: float) -> None:
        """Handle what comes for ``seconds``."""
        self.spin_until(lambda: False, seconds)

    def spin_until(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Spin until ``condition()`` holds (True) or ``timeout`` s pass (False)."""
        end = time.monotonic() + timeout
        while not condition():
            left = end - time.monotonic()
            if left <= 0:
                return condition()
            self.executor.spin_once(timeout_sec=min(0.02, left))
        return True

    def parameter(self, node: str, name: str, timeout: float = READY_TIMEOUT_S) -> Any:
        """``ros2 param get NODE NAME``: the value; asked again while unanswered."""
        from rcl_interfaces.srv import GetParameters
        from rclpy.parameter import parameter_value_to_python

        client: Any = self.node.create_client(GetParameters, f"{node}/get_parameters")
        try:
            end = time.monotonic() + timeout
            future: Any = None
            sent = 0.0
            while time.monotonic() < end:
                if future is not None and not future.done() and \
                        time.monotonic() - sent > REQUEST_RETRY_S:
                    client.remove_pending_request(future)  # sent before the server matched
                    future = None
                if future is None and client.service_is_ready():
                    future = client.call_async(GetParameters.Request(names=[name]))
                    sent = time.monotonic()
                if future is not None and future.done():
                    return parameter_value_to_python(future.result().values[0])
                self.executor.spin_once(timeout_sec=0.02)
        finally:
            self.node.destroy_client(client)
        raise TimeoutError(f"{node}/get_parameters did not answer within {timeout} s")

    def wait_reachable(self, process: NodeProcess) -> None:
        """Until the node's parameter service answers (its executor spins)."""
        if not process.alive():
            raise RuntimeError(f"{process.name} exited with {process.popen.returncode}:\n"
                               f"{process.output()[-3000:]}")
        self.parameter(process.node.full_name, "use_sim_time")


@dataclass(frozen=True)
class GapRow:
    """One status name over the window: the times its node sent it (DDS source timestamps)."""

    status: str
    node: str
    count: int
    period_s: float
    median_s: float
    max_gap_s: float
    gap_at_s: float  # where the largest gap begins, s into the window
    #: the longest time within that gap in which no other node sent a status: about the gap
    #: itself when the whole graph (or the machine) stalled together
    others_silent_s: float
    #: the largest gap between the statuses' arrivals at this listener (a listener starved
    #: of CPU sees gaps, then bursts, that the nodes did not send)
    arrival_gap_s: float = float("nan")
    #: the largest gap on the node's own clock (its statuses' header stamps: simulation time
    #: for a node with ``use_sim_time``), the edges being the first and last stamp any node on
    #: that clock sent in the window. A node rates its statuses on this clock: when the
    #: machine is too busy for the simulation to keep real time, the gaps above grow in wall
    #: time and this one does not
    own_clock_gap_s: float = float("nan")

    @property
    def gap_periods(self) -> float:
        """The largest gap in periods."""
        return self.max_gap_s / self.period_s

    @property
    def passed(self) -> bool:
        """The largest gap is at most :data:`MAX_GAP_PERIODS` periods."""
        return self.gap_periods <= MAX_GAP_PERIODS

    @property
    def own_clock_gap_periods(self) -> float:
        """The largest gap on the node's own clock, in periods."""
        return self.own_clock_gap_s / self.period_s


def node_of(status: str, nodes: Sequence[str]) -> str:
    """The node whose name begins the status name (``zmp_estimator: ZMP``), else the status."""
    matches = [n for n in nodes if status == n or status.startswith(n + ":")]
    return max(matches, key=len) if matches else status


def _largest_gap(times: Sequence[float], start: float, end: float) -> tuple[float, float]:
    """(start, end) of the largest gap of ``times`` within ``[start, end]``, the window's
    start to the first and the last to the window's end included."""
    inside = sorted(min(max(t, start), end) for t in times)
    return max(itertools.pairwise([start, *inside, end]), key=lambda pair: pair[1] - pair[0])


def gap_rows(sent: dict[str, list[float]], start: float, end: float,
             periods: dict[str, float]) -> list[GapRow]:
    """Rows of each status from the times (s) it was sent within ``[start, end]``.

    ``periods`` holds each node's period (s).
    """
    rows = []
    for status, times in sorted(sent.items()):
        inside = sorted(t for t in times if start <= t <= end)
        node = node_of(status, list(periods))
        between = [b - a for a, b in itertools.pairwise(inside)]
        a, b = _largest_gap(inside, start, end)
        others = [t for name, ts in sent.items() if node_of(name, list(periods)) != node
                  for t in ts if a < t < b]
        x, y = _largest_gap(others, a, b)
        rows.append(GapRow(status, node, len(inside), periods.get(node, float("nan")),
                           statistics.median(between) if between else float("nan"),
                           b - a, a - start, y - x))
    return rows


@dataclass
class Window:
    """What :func:`measure` recorded: per status name, when each status was sent (the
    publisher's system clock, s) and when it arrived here (system clock, s)."""

    start: float = 0.0
    end: float = 0.0
    sent: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    arrived: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    #: the statuses' header stamps (s, each node's own clock), in the order they came
    stamped: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def rows(self, periods: dict[str, float],
             sim_time: Sequence[str] = ()) -> list[GapRow]:
        """The rows, each with its largest arrival gap and its largest gap on its own clock
        (``sim_time``: the nodes on simulation time; the others stamp with system time)."""
        for node in periods:  # a node that sent nothing is a row too
            if not any(node_of(status, list(periods)) == node for status in self.sent):
                self.sent[node] = []
        names = list(periods)
        on_sim = {status for status in self.stamped if node_of(status, names) in sim_time}
        rows = []
        for row in gap_rows(self.sent, self.start, self.end, periods):
            arrived = [t for t in self.arrived.get(row.status, []) if self.start <= t <= self.end]
            first, last = _largest_gap(arrived, self.start, self.end)
            same_clock = [t for status, ts in self.stamped.items()
                          if (status in on_sim) == (row.status in on_sim) for t in ts]
            own_gap = float("nan")
            if same_clock:
                since, until = _largest_gap(self.stamped.get(row.status, []),
                                            min(same_clock), max(same_clock))
                own_gap = until - since
            rows.append(replace(row, arrival_gap_s=last - first, own_clock_gap_s=own_gap))
        return rows

    def relative(self) -> dict[str, dict[str, list[float]]]:
        """The times in s into the window, for a JSON file."""
        return {kind: {name: [round(t - self.start, 4) for t in ts]
                       for name, ts in times.items()}
                for kind, times in (("sent", self.sent), ("arrived", self.arrived))}


def measure(graph: SimGraph, seconds: float, window: Window | None = None) -> list[GapRow]:
    """Subscribe to ``/diagnostics``, warm up, then record ``seconds`` of statuses.

    The gaps are taken between the times the nodes sent their statuses (each message's DDS
    source timestamp, the publisher's system clock): what a listener on another machine
    would see but for the network; this process's own arrival times are kept beside them.
    """
    from diagnostic_msgs.msg import DiagnosticArray

    window = Window() if window is None else window
    started = False

    def on_diagnostics(msg: Any, info: Any) -> None:
        if not started:
            return
        now = time.time()
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        for status in msg.status:
            window.sent[status.name].append(info["source_timestamp"] * 1e-9)
            window.arrived[status.name].append(now)
            window.stamped[status.name].append(stamp)

    periods = {n.name: 1.0 / float(graph.parameter(n.full_name, "diagnostics_rate"))
               for n in graph.nodes}
    sim_time = [n.name for n in graph.nodes if graph.parameter(n.full_name, "use_sim_time")]
    subscription = graph.node.create_subscription(DiagnosticArray, "/diagnostics",
                                                  on_diagnostics, 1000)
    try:
        graph.spin(WARM_UP_S)
        started = True
        window.start = time.time()
        graph.spin(seconds)
        window.end = time.time()
        graph.spin(0.5)  # what was sent before the end and is still on its way
    finally:
        graph.node.destroy_subscription(subscription)
    return window.rows(periods, sim_time)


def table(rows: Sequence[GapRow]) -> str:
    """The rows as a Markdown table."""
    lines = ["| status | node | count | period s | median s | max gap s | max gap / period | "
             "pass | gap at s | others silent s | arrival gap s | own-clock gap / period |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.status} | {r.node} | {r.count} | {r.period_s:.3f} | {r.median_s:.4f} | "
                     f"{r.max_gap_s:.3f} | {r.gap_periods:.2f} | {'yes' if r.passed else 'NO'} | "
                     f"{r.gap_at_s:.1f} | {r.others_silent_s:.3f} | {r.arrival_gap_s:.3f} | "
                     f"{r.own_clock_gap_periods:.2f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the graph, print the table; 0 when every status passes."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="window, wall s")
    parser.add_argument("--logs", type=Path, default=None, help="node logs (default: a temp dir)")
    parser.add_argument("--json", type=Path, default=None, help="write the rows here too")
    args = parser.parse_args(argv)
    logs = args.logs or Path(tempfile.mkdtemp(prefix="diagnostics_gaps_"))
    load_before = load_average()
    window = Window()
    with SimGraph(logs) as graph:
        rows = measure(graph, args.seconds, window)
    load_after = load_average()
    print(f"sim graph, {args.seconds:.0f} s window; load average before {load_before}, after "
          f"{load_after}; node logs in {logs}")
    print(table(rows))
    exits = ", ".join(f"{name} {report.returncode} in {report.seconds:.2f} s"
                      for name, report in graph.exits.items())
    print(f"exits: {exits}")
    if args.json:
        args.json.write_text(json.dumps({
            "seconds": args.seconds, "load_before": load_before, "load_after": load_after,
            "rows": [{**asdict(r), "gap_periods": r.gap_periods, "passed": r.passed}
                     for r in rows], **window.relative()}))
    return 0 if rows and all(r.passed for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
