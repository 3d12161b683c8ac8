"""``humanoid-balance demo``: the simulated humanoid as the robot runs it, every node its own process.

Starts the simulated robot from the graph description
(:func:`humanoid_balance.graph.sim_graph`): ``mujoco_sim``, ``zmp_estimator``,
``arm_balance`` and ``waist_controller`` (with its simulated CAN drives), each
as its own process (:class:`humanoid_balance.processes.NodeProcess`, logs in
``<out>/logs/``), on loopback-only DDS with a private domain, and drives the
lifecycle nodes through configure and activate by their services. This
process hosts only the scenario driver, an observer for the progress line and
the bag recorder.

The scenario (seed 000): the waist leans 1 deg forward through
``/waist/command``; then the right (job) arm strikes at the paper's hand speed
(1.8 m/s) while ``arm_balance`` (resolved momentum control) moves the left arm
to hold the angular momentum Lx, Ly at zero. The driver answers each ``/clock``
tick ``t`` (with RMC in lock-step: the arm balance's command for ``t``) with the
job arm's input for ``t + period``, stamped ``t``.
By default the simulation runs in lock-step: each period waits for the arm
balance's command and the driver's input of that period, so a run's result
does not depend on the machine's load (``--free-running`` runs it against the
wall clock instead). The strike is run twice: with RMC, and without (no
``arm_balance``: the driver sends the job arm's positions and velocities
straight to the simulated servos on ``/joint_commands``).

Writes ``<out>/demo.json`` (RESULTS.md format), the bags (``<out>/bag``,
``<out>/bag_without_rmc``: rosbag2, MCAP), PNG plots and ``<out>/index.html``,
all computed from the bags (:mod:`humanoid_balance.recorded_run`,
:mod:`humanoid_balance.report_page`).
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from humanoid_balance import cdr  # numpy only: the per-message stamp reads and writes
from humanoid_balance.exceptions import HumanoidBalanceError
from humanoid_balance.graph import GraphNode, lifecycle_nodes, sim_graph
from humanoid_balance.ros_env import use_loopback_dds

#: what the demo records (topic -> type): the simulation's sensors and truth, the nodes'
#: outputs, the driver's inputs; a bag replays through ``humanoid-balance replay``
RECORDED_TOPICS = {
    "/clock": "rosgraph_msgs/msg/Clock",
    "/joint_states": "sensor_msgs/msg/JointState",
    "/left_foot/ft": "geometry_msgs/msg/WrenchStamped",
    "/right_foot/ft": "geometry_msgs/msg/WrenchStamped",
    "/left_foot/fsr": "std_msgs/msg/Float64MultiArray",
    "/right_foot/fsr": "std_msgs/msg/Float64MultiArray",
    "/waist/inclinometer": "sensor_msgs/msg/Imu",
    "/sim/cop": "geometry_msgs/msg/PointStamped",
    "/sim/com": "geometry_msgs/msg/PointStamped",
    "/zmp": "geometry_msgs/msg/PointStamped",
    "/zmp/stability_margin": "std_msgs/msg/Float64",
    "/support_polygon": "geometry_msgs/msg/PolygonStamped",
    "/arm_balance/command": "sensor_msgs/msg/JointState",
    "/arm_balance/momentum": "geometry_msgs/msg/WrenchStamped",
    "/arm_balance/job_joint_velocities": "sensor_msgs/msg/JointState",
    "/joint_commands": "sensor_msgs/msg/JointState",
    "/diagnostics": "diagnostic_msgs/msg/DiagnosticArray",
    "/waist/command": "trajectory_msgs/msg/JointTrajectory",
    "/waist/joint_states": "sensor_msgs/msg/JointState",
    "/waist/tracking_error": "geometry_msgs/msg/Vector3Stamped",
}
#: the driver's job input topic with RMC (to arm_balance) and without (to the simulated servos)
JOB_TOPIC_RMC = "/arm_balance/job_joint_velocities"
JOB_TOPIC_DIRECT = "/joint_commands"
JOINT_STATE_TYPE = "sensor_msgs/msg/JointState"
#: s of wall time between two progress lines
PROGRESS_PERIOD_S = 0.5
#: s of wall time the simulation may stand still before the run is given up
STALL_TIMEOUT_S = 30.0
#: s of wall time for the nodes to start and come up (discovery, imports, configure)
STARTUP_TIMEOUT_S = 90.0
#: s a node may take to exit after SIGINT before it is killed. A node should take at most
#: EXIT_EXPECTED_S (issue 10; the process tests check it); on a machine loaded far beyond its
#: cores, exits took 2.1-2.3 s (measured): they are waited for, and reported as slow
STOP_TIMEOUT_S = 10.0
EXIT_EXPECTED_S = 2.0
#: s of simulation the waist's move to its start pitch takes (a cosine ramp from t = 0)
WAIST_MOVE_S = 0.8
#: s of simulation the waist's last set point is repeated after the ramp, so that the drives
#: reach it before the controller's command timeout stops them (they stopped 0.1-0.15 deg short)
WAIST_HOLD_S = 0.6
#: s of simulation between two set points of the waist's ramp on /waist/command
WAIST_SETPOINT_PERIOD_S = 0.02


#: set by SIGINT and SIGTERM: the run in progress stops its nodes and the demo ends
INTERRUPTED = threading.Event()



class DemoError(HumanoidBalanceError):
    """A run of the demo could not be completed (a node died, did not come up, time stood still)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the demo."""
    parser.add_argument("--duration", type=float, default=4.0,
                        help="simulated seconds of each run (default 4.0; the strike takes 1.4 s)")
    parser.add_argument("--strike-start", type=float, default=2.0,
                        help="simulated time at which the strike starts, s (default 2.0: the "
                             "robot has settled from its start and the waist's lean; a sway "
                             "left at the start adds to the CoP peak shift)")
    parser.add_argument("--strike-speed", type=float, default=None,
                        help="hand speed at the target, m/s (default: the paper's 1.8)")
    parser.add_argument("--out", type=Path, default=Path("results/demo"),
                        help="output folder (default results/demo)")
    parser.add_argument("--no-baseline", action="store_true",
                        help="run the strike with RMC only (no second run without it)")
    parser.add_argument("--free-running", action="store_true",
                        help="run the simulation against the wall clock at --real-time-factor "
                             "instead of in lock-step with the nodes' commands")
    parser.add_argument("--real-time-factor", type=float, default=None,
                        help="simulation speed relative to wall time: with --free-running the "
                             "speed it keeps (default 1); in lock-step the most it may reach "
                             "(default 0: as fast as the nodes answer)")
    parser.add_argument("--sensor-noise", type=float, default=1.0,
                        help="sensor noise scale: 0 noise-free, 1 nominal (default)")
    parser.add_argument("--no-waist", action="store_true",
                        help="do not run the waist controller and its simulated CAN drives")
    parser.add_argument("--waist-pitch", type=float, default=1.0,
                        help="waist pitch the waist controller moves to at the start, deg "
                             "(default 1)")
    parser.add_argument("--record", choices=("full", "report"), default=None,
                        help="what the bags hold: full (every sensor and output: replayable with "
                             "`humanoid-balance replay`; the default in lock-step) or report (only "
                             "the topics the figures come from; the default with --free-running, "
                             "where each recorded message costs this process CPU the simulation "
                             "would miss)")
    parser.add_argument("--domain-id", type=int, default=None,
                        help="ROS_DOMAIN_ID (default: from the environment, else private)")


# --- options ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RunSpec:
    """One run of the strike: with or without resolved momentum control."""

    key: str
    label: str
    rmc: bool

    @property
    def bag_name(self) -> str:
        """The bag's folder in the output folder."""
        return "bag" if self.rmc else "bag_without_rmc"

    @property
    def job_topic(self) -> str:
        """Where the driver sends the job arm's input."""
        return JOB_TOPIC_RMC if self.rmc else JOB_TOPIC_DIRECT


RUNS = (RunSpec("rmc", "with RMC", True), RunSpec("no_rmc", "without RMC", False))


def _user_error(text: str) -> int:
    print(f"humanoid-balance demo: {text}", file=sys.stderr)
    return 2


def _check_options(args: argparse.Namespace, strike_length_s: float) -> str | None:
    """The first problem with the options, as one line; None when they are usable."""
    for name in ("duration", "strike_start", "sensor_noise"):
        value = getattr(args, name)
        if not value >= 0 or value != value or value == float("inf"):
            return f"--{name.replace('_', '-')}={value}: must be a finite number >= 0"
    if args.real_time_factor is not None and not 0 <= args.real_time_factor < float("inf"):
        return f"--real-time-factor={args.real_time_factor}: must be >= 0"
    if args.free_running and args.real_time_factor == 0:
        return "--real-time-factor=0 runs as fast as possible: it needs lock-step (drop " \
               "--free-running)"
    if args.strike_start < 0.3:
        return f"--strike-start={args.strike_start}: at least 0.3 s of rest must come first " \
               "(the peak shifts are measured from the 0.2 s before it)"
    needed = args.strike_start + strike_length_s
    if args.duration < needed:
        return (f"--duration={args.duration} s ends before the strike does: it takes "
                f"{strike_length_s:.1f} s from --strike-start={args.strike_start} s; give at "
                f"least {needed:.1f} s")
    if args.domain_id is not None and not 0 <= args.domain_id <= 101:
        return f"--domain-id={args.domain_id}: must be in 0..101"
    return None


def _prepare_output(out: Path, runs: Sequence[RunSpec]) -> str | None:
    """Create the output folder and clear this demo's old bags and logs; a problem as one line."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".humanoid_balance_demo_write_test"
        probe.write_text("")
        probe.unlink()
    except OSError as error:
        return f"--out {out}: cannot write there ({error.strerror or error}): choose another folder"
    for spec in runs:
        bag = out / spec.bag_name
        if bag.exists():
            if not (bag / "metadata.yaml").exists() and any(bag.iterdir()):
                return f"--out {out}: {bag} exists and is not a bag: move it, or choose another folder"
            try:
                shutil.rmtree(bag)  # the demo's own output: a new run replaces the old
            except OSError as error:
                return f"--out {out}: cannot replace {bag} ({error.strerror or error})"
    try:
        if (out / "logs").exists():
            shutil.rmtree(out / "logs")
    except OSError as error:
        return f"--out {out}: cannot replace {out / 'logs'} ({error.strerror or error})"
    return None


# --- the scenario driver -----------------------------------------------------------------


class StrikeDriver:
    """Answers each period ``t`` with the job arm's input for ``t + period``, stamped ``t``.

    With RMC the input is the strike's joint velocities (``arm_balance`` makes the
    command); without, positions and velocities for the simulation's servos. The
    stamp is the period answered, as ``arm_balance`` stamps its command with the
    joint state it answers, so the lock-step simulation (which waits, after
    publishing ``t``, for a message stamped ``>= t``) steps to ``t + period`` only
    once the input for ``t + period`` is out.

    The period ``t`` is answered when the simulation's ``/joint_states`` stamped ``t``
    comes (``answer_commands`` False, without RMC: every publish period; ``/clock`` may
    come less often, see ``mujoco_sim``'s ``clock_rate``), or, with RMC, once
    ``arm_balance``'s command for ``t`` is out (``answer_commands`` True). Answering
    the state's arrival, the input for ``t + period`` races ``arm_balance``'s cycle at
    ``t``: measured, a third of the cycles of a lock-step run saw the input one period
    early, a share that changed from run to run, and so did the CoP peak shift (by 0.4 to 0.9 mm between
    runs). Sent after the command for ``t``, the input can only be overtaken by the
    simulation's next state, which waits for it. Times of the strike count from
    the first period answered after :meth:`start` (0 in lock-step, where time
    waits for the nodes).

    Args:
        node: the demo's rclpy node (on simulation time).
        strike: the job arm's trajectory (:class:`humanoid_balance.core.strike_trajectory.StrikeTrajectory`).
        topic: the job input topic.
        positions: send positions too (no RMC).
        period_ns: the simulation's publish period [ns].
        answer_commands: answer ``arm_balance``'s commands instead of the clock ticks.
        waist_pitch_rad: the waist's start pitch [rad], None: no waist. The waist moves
            there on a cosine ramp over :data:`WAIST_MOVE_S` of simulation time, sent as
            a set point every :data:`WAIST_SETPOINT_PERIOD_S` on ``/waist/command``, the
            last one for :data:`WAIST_HOLD_S` more. (One
            trajectory would run on the waist controller's wall clock: at the lock-step's
            speed, which depends on the machine's load, the move took 0.2 to 0.5 s of
            simulation time, the robot swayed differently each time, still 10 mm of CoP
            at the strike's start, and the CoP peak shift varied from 17.9 to 22.7 mm
            between four lock-step runs, measured.)
    """

    def __init__(self, node: Any, strike: Any, *, topic: str, positions: bool,
                 period_ns: int, answer_commands: bool = False,
                 waist_pitch_rad: float | None = None) -> None:
        from rclpy.qos import QoSProfile
        from rosgraph_msgs.msg import Clock
        from sensor_msgs.msg import JointState
        from trajectory_msgs.msg import JointTrajectory

        self.waist_pitch_rad = waist_pitch_rad
        self.waist_publisher = None if waist_pitch_rad is None else \
            node.create_publisher(JointTrajectory, "/waist/command", QoSProfile(depth=10))
        self._waist_next_ns = 0
        self.strike = strike
        self.positions = positions
        self.period_ns = int(period_ns)
        qos = QoSProfile(depth=10)
        self.publisher = node.create_publisher(JointState, topic, qos)
        # raw: only the header stamps are read
        if answer_commands:
            node.create_subscription(Clock, "/clock", self._on_clock, qos)
            node.create_subscription(JointState, "/arm_balance/command", self._on_command, qos,
                                     raw=True)
        else:  # each period's state (free-running, /clock comes every 10 ms only)
            node.create_subscription(JointState, "/joint_states", self._on_state, qos, raw=True)
        self.answer_commands = answer_commands
        # written as CDR bytes, not an rclpy JointState built and converted each period (1 kHz
        # free-running): py-spy put a quarter of this process's Python samples there, though
        # by /proc the process went only from 34-35 to 33 % of a core (DDS's own threads)
        self._writer = cdr.JointStateWriter(strike.joint_names)
        self.started = False
        #: the latest /clock [ns]; the first period answered [ns] (None before it); the last one
        self.now_ns: int | None = None
        self.origin_ns: int | None = None
        self.last_answered_ns: int | None = None

    def start(self) -> None:
        """Answer the periods from now on."""
        self.started = True

    def elapsed_s(self) -> float:
        """Simulated seconds since the first period answered after :meth:`start`."""
        if self.origin_ns is None or self.now_ns is None:
            return 0.0
        return 1e-9 * (self.now_ns - self.origin_ns)

    def _on_clock(self, msg: Any) -> None:
        from humanoid_balance.nodes.common import stamp_ns

        self._tick(stamp_ns(msg.clock))

    def _on_state(self, data: bytes) -> None:
        self._tick(cdr.header_stamp_ns(data))

    def _tick(self, now_ns: int) -> None:
        """Simulation time is ``now_ns``: answer it (unless the commands are answered), the waist."""
        if self.now_ns is not None and now_ns < self.now_ns:
            return  # an older message overtaken by a newer one
        self.now_ns = now_ns
        if not self.answer_commands:
            self._answer(now_ns)
        if self.origin_ns is not None and self.waist_publisher is not None:
            self._waist_setpoint(now_ns - self.origin_ns)

    def _waist_setpoint(self, elapsed_ns: int) -> None:
        """The waist's ramp: its set point at ``elapsed_ns``, every set-point period until it ends."""
        from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

        assert self.waist_publisher is not None and self.waist_pitch_rad is not None
        if elapsed_ns < self._waist_next_ns:
            return
        period_ns = round(WAIST_SETPOINT_PERIOD_S * 1e9)
        self._waist_next_ns = (elapsed_ns // period_ns + 1) * period_ns
        move_ns = round(WAIST_MOVE_S * 1e9)
        if elapsed_ns > move_ns + round(WAIST_HOLD_S * 1e9):
            self.waist_publisher = None  # the controller holds the last point, then stops
            return
        share = min(1.0, elapsed_ns / move_ns)
        pitch = self.waist_pitch_rad * 0.5 * (1.0 - math.cos(math.pi * share))
        point = JointTrajectoryPoint(positions=[float(pitch), 0.0])  # time_from_start 0: now
        self.waist_publisher.publish(JointTrajectory(joint_names=["waist_pitch", "waist_roll"],
                                                     points=[point]))

    def _on_command(self, data: bytes) -> None:
        self._answer(cdr.header_stamp_ns(data))

    def _answer(self, period_ns: int) -> None:
        """Publish the input for ``period_ns + period``, stamped ``period_ns``.

        A repeated period is answered again (the same input): before time runs the
        simulation republishes its t = 0 state until every lock-step topic answered, and an
        answer sent before ``mujoco_sim`` matched this publisher is lost; skipping the repeat
        stalled the start for good (seen in the soak at load 10). Older periods are ignored.
        """
        if not self.started or (self.last_answered_ns is not None
                                and period_ns < self.last_answered_ns):
            return
        if self.origin_ns is None:
            self.origin_ns = period_ns
        self.last_answered_ns = period_ns
        sample = self.strike.sample(1e-9 * (period_ns + self.period_ns - self.origin_ns))
        self.publisher.publish(self._writer.write(
            period_ns, sample.position if self.positions else (), sample.velocity))


# --- one run ---------------------------------------------------------------------------


@dataclass
class RunOutcome:
    """How one run went (what the bag does not hold)."""

    spec: RunSpec
    bag: Path
    simulated_s: float = 0.0
    wall_s: float = float("nan")
    exits: dict[str, Any] = field(default_factory=dict)  # node -> processes.ExitReport
    error: str | None = None

    @property
    def real_time_factor(self) -> float:
        """Simulated seconds per wall second of the run (from the strike driver's start)."""
        return self.simulated_s / self.wall_s if self.wall_s > 0 else float("nan")

    def exit_line(self) -> str:
        """Each node's exit status and time from its signal, as one line."""
        return ", ".join(f"{name} {report.returncode} in {report.seconds:.2f} s"
                         for name, report in self.exits.items())

    def slow_exits(self) -> list[str]:
        """The nodes that exited cleanly but took longer than :data:`EXIT_EXPECTED_S`."""
        return [f"{name} took {report.seconds:.2f} s" for name, report in self.exits.items()
                if report.clean and report.seconds > EXIT_EXPECTED_S]

    def unclean(self) -> list[str]:
        """The nodes that did not exit cleanly, with how they ended."""
        out = []
        for name, report in self.exits.items():
            if not report.clean:
                how = "killed after the SIGINT timeout" if report.killed else \
                    f"exit status {report.returncode}"
                if report.traceback:
                    how += ", printed a traceback"
                out.append(f"{name}: {how}")
        return out


def _subscribes(node: Any, name: str, topic: str) -> bool:
    """``node`` has discovered a subscription of the node ``name`` to ``topic``."""
    return any(info.node_name == name for info in node.get_subscriptions_info_by_topic(topic))


def _sim_period_ns(node: GraphNode) -> int:
    """The simulation's publish period [ns], from its parameter file and the graph's overrides."""
    import yaml

    with open(node.spec.parameter_path()) as stream:
        values = dict(yaml.safe_load(stream)[f"/**/{node.name}"]["ros__parameters"])
    values.update(node.parameters)
    timestep = float(values.get("timestep", 0.001))
    rate = float(values.get("publish_rate", 1000.0))
    every = max(1, round(1.0 / (rate * timestep))) if rate > 0 else 1
    return round(every * timestep * 1e9)


def _graph(args: argparse.Namespace, spec: RunSpec) -> list[GraphNode]:
    from humanoid_balance.core.strike_trajectory import AUX_START_DEG, RIGHT_INITIAL_DEG, arm_pose
    from humanoid_balance.params.arm_balance import SPEC as ARM_SPEC

    rtf = args.real_time_factor
    if rtf is None:
        rtf = 1.0 if args.free_running else 0.0
    nodes = sim_graph(
        real_time_factor=rtf, sensor_noise=args.sensor_noise, lock_step=not args.free_running,
        rmc=spec.rmc, waist=not args.no_waist,
        extra_lock_step_topics=[f"{spec.job_topic}:{JOINT_STATE_TYPE}"])
    # with RMC the aux arm starts at arm_balance's ready posture (the posture task holds it there;
    # from elsewhere it could not reach it with Lx, Ly held); without RMC at the seed's start pose
    aux = ARM_SPEC["aux_posture"].default if spec.rmc else AUX_START_DEG
    initial = {**arm_pose("right", RIGHT_INITIAL_DEG), **arm_pose("left", aux)}
    out = []
    for node in nodes:
        if node.name == "mujoco_sim":  # the strike's initial arm poses
            node = node.with_parameters(initial_joint_names=list(initial),
                                        initial_joint_positions=list(initial.values()))
        out.append(node)
    return out


class _Run:
    """One run: the node processes, the demo's node (driver, recorder), lifecycle, progress."""

    def __init__(self, args: argparse.Namespace, spec: RunSpec, strike: Any) -> None:
        self.args = args
        self.spec = spec
        self.strike = strike
        self.graph = _graph(args, spec)
        self.outcome = RunOutcome(spec, args.out / spec.bag_name)
        self.processes: list[Any] = []

    def _check_alive(self) -> None:
        if INTERRUPTED.is_set():
            raise DemoError("interrupted (SIGINT or SIGTERM)")
        for process in self.processes:
            if not process.alive():
                tail = "\n    ".join(process.output().strip().splitlines()[-8:])
                raise DemoError(f"{process.name} exited early (status {process.popen.returncode}); "
                                f"end of {process.log_path}:\n    {tail}")

    def _wait(self, executor: Any, what: str, done: Any, timeout: float) -> None:
        end = time.monotonic() + timeout
        while not done():
            if time.monotonic() > end:
                raise DemoError(f"{what}: not within {timeout:.0f} s (logs in "
                                f"{self.args.out / 'logs'})")
            self._check_alive()
            executor.spin_once(timeout_sec=0.05)

    def execute(self) -> RunOutcome:
        """Start the graph, bring it up, run the strike, stop every node; never raises DemoError."""
        import rclpy
        from rclpy.signals import SignalHandlerOptions

        from humanoid_balance.processes import NodeProcess

        logs = self.args.out / "logs" / self.spec.key
        # SIGINT and SIGTERM set INTERRUPTED (see run()): the nodes are then stopped in order
        rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
        try:
            for node in self.graph:
                self.processes.append(NodeProcess(node, log_path=logs / f"{node.name}.log"))
            self._run()
        except DemoError as error:
            self.outcome.error = str(error)
        except KeyboardInterrupt:
            self.outcome.error = "interrupted"
        finally:
            self._stop_all()
            rclpy.try_shutdown()
        return self.outcome

    def _run(self) -> None:
        import rclpy
        from rclpy.parameter import Parameter

        from humanoid_balance.nodes.common import make_executor

        args, spec = self.args, self.spec
        node = rclpy.create_node("humanoid_balance_demo",
                                 parameter_overrides=[Parameter("use_sim_time", value=True)])
        self._nodes = [node]
        driver = StrikeDriver(node, self.strike, topic=spec.job_topic, positions=not spec.rmc,
                              period_ns=_sim_period_ns(self.graph[0]),
                              # with RMC the commands' rate (500 Hz), free-running too: a
                              # 1 kHz input costs its publisher, arm_balance and the bag CPU
                              # that the simulation then misses (README, issue 10's table)
                              answer_commands=spec.rmc,
                              waist_pitch_rad=None if args.no_waist
                              else math.radians(args.waist_pitch))
        self._executor = make_executor(events=True)
        self._executor.add_node(node)
        self._bring_up()
        self._start_recording(node, driver)
        print(f"demo ({spec.label}): {len(self.graph)} node processes up; "
              f"{args.duration:.1f} s simulated, strike at t = {args.strike_start:.2f} s, "
              f"{'free-running' if args.free_running else 'lock-step'}", flush=True)
        driver.start()
        wall0 = time.perf_counter()
        self._follow(driver)
        self.outcome.wall_s = time.perf_counter() - wall0
        self.outcome.simulated_s = driver.elapsed_s()

    def _bring_up(self) -> None:
        """Configure, then activate, each lifecycle node in the graph's order, by its services."""
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        from humanoid_balance.processes import LifecycleClient, LifecycleError

        helper = rclpy.create_node("humanoid_balance_demo_lifecycle")
        self._nodes.append(helper)
        helper_executor = SingleThreadedExecutor()
        self._lifecycle = []
        for managed in lifecycle_nodes(self.graph):
            client = LifecycleClient(helper, managed.name, executor=helper_executor)
            self._lifecycle.append(client)
            try:
                client.bring_up(timeout=STARTUP_TIMEOUT_S)
            except LifecycleError as error:
                self._check_alive()
                raise DemoError(str(error)) from error
            print(f"demo ({self.spec.label}): {managed.name} configured and active", flush=True)

    def _start_recording(self, node: Any, driver: StrikeDriver) -> None:
        """Open the bag; wait until the graph is connected: data flows, inputs have their takers."""
        from humanoid_balance.bag import BagRecorder
        from humanoid_balance.recorded_run import TOPICS

        args, spec, executor = self.args, self.spec, self._executor
        full = args.record == "full" or (args.record is None and not args.free_running)
        self.recorder = BagRecorder(node, self.outcome.bag, RECORDED_TOPICS if full else TOPICS)
        counts = self.recorder.counts
        waist = driver.waist_publisher
        ready = ["/joint_states"] + ([] if waist is None else ["/waist/joint_states"])
        self._wait(executor, f"first messages on {ready}", lambda: all(counts[t] for t in ready),
                   STARTUP_TIMEOUT_S)
        # the estimator listens to the foot sensors before time runs
        self._wait(executor, "zmp_estimator on the foot sensors",
                   lambda: _subscribes(node, "zmp_estimator", "/left_foot/ft"), STARTUP_TIMEOUT_S)
        # who takes the job input: arm_balance (and the lock-step wait) or the simulated servos
        takers = 2 if spec.rmc and not args.free_running else 1
        self._wait(executor, f"the subscribers of {spec.job_topic}",
                   lambda: driver.publisher.get_subscription_count() >= takers, STARTUP_TIMEOUT_S)
        if waist is not None:
            self._wait(executor, "the waist controller on /waist/command",
                       lambda: waist.get_subscription_count() >= 1, STARTUP_TIMEOUT_S)

    def _follow(self, driver: StrikeDriver) -> None:
        """Spin until the run's simulated seconds are done; a progress line every half second."""
        duration, label = self.args.duration, self.spec.label
        last_line = time.perf_counter()
        last_sim = last_sim_line = 0.0
        last_progress = time.monotonic()
        while driver.elapsed_s() < duration:
            self._executor.spin_once(timeout_sec=0.02)
            now = time.perf_counter()
            simulated = driver.elapsed_s()
            if simulated > last_sim:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > STALL_TIMEOUT_S:
                raise DemoError(f"simulation time stood still at {simulated:.3f} s for "
                                f"{STALL_TIMEOUT_S:.0f} s (logs in {self.args.out / 'logs'})")
            if INTERRUPTED.is_set():
                self._check_alive()
            if now - last_line >= PROGRESS_PERIOD_S:
                rate = (simulated - last_sim_line) / (now - last_line)
                print(f"demo ({label}): sim {simulated:5.2f} of {duration:.2f} s, "
                      f"real-time factor {rate:.2f}", flush=True)
                last_line, last_sim_line = now, simulated
                self._check_alive()
            last_sim = simulated

    def _stop_all(self) -> None:
        """Stop the simulation, bring the lifecycle nodes down, SIGINT the rest; close the bag."""
        sim = next((p for p in self.processes if p.name == "mujoco_sim"), None)
        if sim is not None:
            self.outcome.exits[sim.name] = sim.stop(timeout=STOP_TIMEOUT_S)
        executor = getattr(self, "_executor", None)
        recorder = getattr(self, "recorder", None)
        if recorder is not None:  # the run ends here: what the nodes do as they stop is not in it
            if executor is not None:
                for _ in range(20):  # deliver what is still queued
                    executor.spin_once(timeout_sec=0.01)
            recorder.close()
        for client in reversed(getattr(self, "_lifecycle", [])):
            process = next(p for p in self.processes if p.name == client.target)
            if process.alive():
                try:
                    client.change("deactivate", timeout=5.0)
                except Exception as error:  # reported; the process is stopped anyway
                    print(f"demo: {client.target}: deactivate: {error}", flush=True)
        for process in self.processes:
            if process.name not in self.outcome.exits:
                self.outcome.exits[process.name] = process.stop(timeout=STOP_TIMEOUT_S)
        if executor is not None:
            executor.shutdown()
        for node in getattr(self, "_nodes", []):
            node.destroy_node()


# --- the whole demo --------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """Run the demo; 0 when every run completed, every node exited cleanly and none reported a fault."""
    from humanoid_balance.core.strike_trajectory import PAPER_DURATIONS

    problem = _check_options(args, sum(PAPER_DURATIONS))
    runs = RUNS[:1] if args.no_baseline else RUNS
    if problem is None:
        problem = _prepare_output(args.out, runs)
    if problem is not None:
        return _user_error(problem)
    domain = args.domain_id
    if domain is None:
        domain = int(os.environ.get("ROS_DOMAIN_ID", 1 + os.getpid() % 100))
    use_loopback_dds(domain)

    from humanoid_balance.core.model import RobotModel
    from humanoid_balance.core.strike_trajectory import StrikeTrajectory
    from humanoid_balance.resources import urdf_path

    model = RobotModel(urdf_path("humanoid"), world_frame="W")
    try:
        strike = StrikeTrajectory(model, arm="right", target_speed=args.strike_speed,
                                  start_time=args.strike_start)
    except HumanoidBalanceError as error:
        return _user_error(str(error))
    print(f"demo: ROS_DOMAIN_ID={domain} (loopback DDS), output in {args.out}", flush=True)
    outcomes = []
    previous = _catch_signals()
    try:
        for spec in runs:
            outcome = _Run(args, spec, strike).execute()
            outcomes.append(outcome)
            print(f"demo ({spec.label}): nodes stopped (exit status, s after the signal): "
                  f"{outcome.exit_line()}", flush=True)
            if outcome.error is not None:
                print(f"demo ({spec.label}): FAILED: {outcome.error}", flush=True)
                break
            print(f"demo ({spec.label}): {outcome.simulated_s:.2f} s simulated in "
                  f"{outcome.wall_s:.1f} s (real-time factor {outcome.real_time_factor:.2f})",
                  flush=True)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return _report(args, model, strike, outcomes)


def _catch_signals() -> dict[int, Any]:
    """SIGINT and SIGTERM set :data:`INTERRUPTED` (a second one interrupts at once); the old handlers.

    The run loop checks the flag and stops the nodes in order. (A KeyboardInterrupt
    raised inside a subscription callback would be lost in rclpy's executor.)
    """
    def handler(signum: int, frame: Any) -> None:
        if INTERRUPTED.is_set():
            raise KeyboardInterrupt
        INTERRUPTED.set()

    INTERRUPTED.clear()
    return {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}


def _report(args: argparse.Namespace, model: Any, strike: Any, outcomes: list[RunOutcome]) -> int:
    """demo.json, the plots and index.html from the bags; the exit status."""
    from humanoid_balance.recorded_run import load_run
    from humanoid_balance.report_page import (
        plot_ground_paths,
        plot_momentum,
        plot_waist,
        write_page,
    )
    from humanoid_balance.results import write_results

    completed = [o for o in outcomes if o.error is None]
    runs = [load_run(o.bag, o.spec.label) for o in completed]
    starts = [run.strike_start() for run in runs]
    columns = {o.spec.label: _run_metrics(args, o, run, start)
               for o, run, start in zip(completed, runs, starts, strict=True)}
    summary, headline = _summary(args, list(columns.values()))
    command = "humanoid-balance demo " + " ".join(sys.argv[2:] if sys.argv[1:2] == ["demo"]
                                                  else sys.argv[1:])
    print("demo summary:")
    write_results("demo", summary, command=command.strip(), directory=args.out)
    plots = []
    if runs:
        end = max(s - args.strike_start + args.duration for s in starts)
        plots = [plot_ground_paths(runs, starts, model, args.out / "cop_zmp_paths.png", end),
                 plot_momentum(runs, starts, model, args.out / "momentum.png", end)]
        if not args.no_waist:
            plots.append(plot_waist(runs, args.out / "waist_tracking.png", end))
    notes, warnings, problems = _notes(args, strike, outcomes, runs)
    for line in warnings + problems:
        print(f"demo {line}")
    links = {f"bag {o.spec.label}": o.bag for o in completed}
    links["node logs"] = args.out / "logs"
    page = write_page(args.out, title="humanoid_balance demo: the seed-000 strike",
                      columns=columns, headline=headline, plots=plots,
                      notes=notes + warnings + problems,
                      command=command.strip(), links=links)
    print(f"demo: page {page}")
    if completed:
        print(f"demo: replay a run with `humanoid-balance replay {completed[0].bag} --exclude /zmp` "
              "and a zmp_estimator on use_sim_time")
    return 1 if problems else 0


def _run_metrics(args: argparse.Namespace, outcome: RunOutcome, run: Any,
                 start: float) -> dict[str, dict[str, Any]]:
    """One run's figures: from its bag, and how its processes ran and ended."""
    from humanoid_balance.recorded_run import run_metrics
    from humanoid_balance.results import metric

    end = start - args.strike_start + args.duration  # the run's last simulated second
    metrics = run_metrics(run, start, end)
    metrics["real_time_factor"] = metric(round(outcome.real_time_factor, 3), "x")
    metrics["simulated_s"] = metric(round(outcome.simulated_s, 3), "s")
    metrics["nodes_not_exiting_cleanly"] = metric(len(outcome.unclean()), "", target=0,
                                                  better="lower")
    metrics["max_node_exit_s"] = metric(round(max(r.seconds for r in outcome.exits.values()), 3),
                                        "s", target=EXIT_EXPECTED_S, better="lower")
    return metrics


def _summary(args: argparse.Namespace, columns: list[dict[str, dict[str, Any]]],
             ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """demo.json's metrics (the run with RMC, the comparison, the baseline's checks); the headline."""
    from humanoid_balance.recorded_run import comparison_metrics
    from humanoid_balance.results import metric

    summary: dict[str, dict[str, Any]] = dict(columns[0]) if columns else {}
    headline: dict[str, dict[str, Any]] = {}
    if len(columns) == 2:
        compared = {**summary, **comparison_metrics(*columns)}
        headline = {name: compared[name] for name in (
            "cop_peak_shift_mm", "cop_peak_shift_mm_no_rmc", "cop_peak_shift_ratio",
            "zmp_peak_shift_mm", "zmp_peak_shift_mm_no_rmc", "zmp_peak_shift_ratio")
            if name in compared}
        summary.update(headline)
        for name in ("real_time_factor", "arm_balance_holds", "faults_seen", "balance_faults_seen",
                     "lock_step_misses",
                     "nodes_not_exiting_cleanly", "max_node_exit_s",
                     "waist_max_tracking_error_deg"):
            if name in columns[1]:
                summary[f"{name}_no_rmc"] = columns[1][name]
    summary["mode"] = metric("free-running" if args.free_running else "lock-step")
    return summary, headline


def _notes(args: argparse.Namespace, strike: Any, outcomes: list[RunOutcome],
           runs: list[Any]) -> tuple[list[str], list[str], list[str]]:
    """The page's notes; warnings and problems (``(run label): what``; a problem fails the demo)."""
    notes = [f"{args.duration:.2f} s simulated per run, strike at {args.strike_start:.2f} s "
             f"(hand {strike.target_speed:.2f} m/s at the target); "
             f"{'free-running' if args.free_running else 'lock-step'} simulation, every node "
             "its own process"]
    warnings: list[str] = []
    problems: list[str] = []
    for outcome in outcomes:
        label = outcome.spec.label
        notes.append(f"{label}: nodes stopped (exit status, s after SIGINT): "
                     f"{outcome.exit_line()}")
        if outcome.error is not None:
            problems.append(f"({label}): FAILED: {outcome.error}")
        problems += [f"({label}): node did not exit cleanly: {line}"
                     for line in outcome.unclean()]
        warnings += [f"({label}): slow exit after SIGINT (expected <= {EXIT_EXPECTED_S:g} s): "
                     f"{line}" for line in outcome.slow_exits()]
    rmc_of = {o.spec.label: o.spec.rmc for o in outcomes}
    for run in runs:
        problems += [f"({run.label}): fault: {fault}"
                     for fault in run.faults_from(run.scenario_start)[:10]]
        balance = run.faults_from(run.scenario_start, balance=True)[:10]
        if rmc_of.get(run.label, True):  # with RMC the ZMP must stay inside the polygon
            problems += [f"({run.label}): balance fault: {fault}" for fault in balance]
        else:  # the baseline: without RMC the strike takes the ZMP to the pads' edge
            notes += [f"({run.label}): balance fault, as expected without RMC: {fault}"
                      for fault in balance]
    return notes, warnings, problems
