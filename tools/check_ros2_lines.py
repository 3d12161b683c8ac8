"""Run every ``ros2 …`` line of README.md and docs/INTERFACES.md with the real ros2cli (issue 33).

Each ``ros2`` command of the two documents (a line of a code block, or an inline code span)
has an entry in :data:`ENTRIES`, keyed by its text as written (a code block's ``# comment``
left out): the checks that run it as written, against the graph the text describes, with
what the text says it does (exit status, what it prints, the state it leaves); or the reason
it is skipped here (it needs the robot's CAN bus, rosbag2, rviz2 or tf2_ros), or, for a
tool named in prose (``ros2 param set`` likewise prints ...), the checks of that claim.

The graphs, each started as processes of the package's console scripts:

- ``sim-unconfigured``: ``graph.sim_graph()`` as ``sim.launch.py`` starts it, before the
  lifecycle nodes are configured; then ``sim``: configured and activated in
  ``graph.LIFECYCLE_ORDER``, as the launch does. A check that needs a lifecycle node in
  another state first brings it there through its lifecycle services.
- ``robot-no-can``: the robot's ``waist_controller`` (``can0`` over SocketCAN, which this
  machine lacks: its configure fails, as with the drives' bus down) and
  ``identification_executor``, unconfigured.
- ``no-graph``: nothing running; the launch file and ``ros2 run`` lines start their own.

``ros2`` is the one on ``PATH`` (a ROS install), else ros2cli importable by this Python
(``PYTHONPATH``: ros2cli built from its sources beside the venv's rclpy), through a
two-line launcher script. ``ros2 launch``/``run``/``pkg`` lines need ros2launch, ros2run
and ros2pkg registered too (skipped otherwise, saying so), and the package in the ament
index: without it the checks make a scratch ament prefix of symlinks to this checkout.

Usage::

    python tools/check_ros2_lines.py [--phases sim,robot-no-can,no-graph] [--logs DIR]

It prints a table (doc line, command, graph, exit status, seconds, verdict, note) and exits
1 when a check fails or a documented ``ros2`` line has no entry.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from diagnostics_gaps import SimGraph  # noqa: E402

from humanoid_balance.graph import GraphNode, robot_graph, sim_graph  # noqa: E402
from humanoid_balance.processes import LifecycleError  # noqa: E402

DOCS = ("README.md", "docs/INTERFACES.md")
PHASES = ("sim-unconfigured", "sim", "robot-no-can", "no-graph")
UNCONFIGURED = "is unconfigured: configure and activate it"


@dataclass(frozen=True)
class DocLine:
    """A ``ros2`` command as a document writes it."""

    path: str
    line: int
    command: str  # whitespace collapsed, a code block's trailing comment left out
    comment: str = ""


def extract(path: Path, root: Path = REPO) -> list[DocLine]:
    """Every ``ros2`` command of a Markdown file: code-block lines and inline code spans.

    A code-block line counts from its ``ros2`` on (a log line naming a command to run);
    an inline span counts when it starts with ``ros2`` or runs it in ``$(...)``.
    """
    name = str(path.relative_to(root)) if path.is_absolute() else str(path)
    lines = path.read_text().splitlines()
    found: list[DocLine] = []
    prose: list[str] = []
    in_block = False
    for number, text in enumerate(lines, 1):
        if text.startswith("```"):
            in_block = not in_block
            prose.append("")
            continue
        prose.append("" if in_block else text)
        start = text.find("ros2 ")
        if in_block and start >= 0:
            command, _, comment = text[start:].partition("   #")
            found.append(DocLine(name, number, " ".join(command.split()),
                                 comment.strip(" #")))
    body = "\n".join(prose)
    for match in re.finditer(r"`([^`]+)`", body):
        span = " ".join(match.group(1).split())
        if re.search(r"(^|\$\()ros2( |$)", span):
            found.append(DocLine(name, body.count("\n", 0, match.start()) + 1, span))
    return sorted(found, key=lambda d: d.line)


@dataclass(frozen=True)
class Check:
    """Run ``run`` (bash; the doc's line itself unless it holds a placeholder) in ``phase``.

    Before it, lifecycle node ``setup[0]`` is brought to state ``setup[1]``; afterwards
    the exit status must be ``exit_code`` (None: any), every regex of ``output`` must be
    in what it printed (stdout and stderr), none of ``absent``, and node ``state[0]``
    must be in state ``state[1]``. ``ready`` (background commands: a launch, a node) names
    what must come up before Ctrl-C (SIGINT to its process group) ends it.
    """

    run: str
    phase: str
    says: str
    exit_code: int | None = 0
    output: tuple[str, ...] = ()
    absent: tuple[str, ...] = ("Traceback",)
    setup: tuple[str, str] | None = None
    state: tuple[str, str] | None = None
    #: s each ros2 call of the line may take (at load 11 on 2 cores: 2-20 s each)
    timeout_s: float = 90.0
    ready: str = ""
    needs: str = ""  # the ros2cli command this needs besides the base verbs
    #: (ROS package, what to append to ``run`` when the ament index lacks that package)
    without: tuple[str, str] | None = None


@dataclass(frozen=True)
class Entry:
    """What a documented ``ros2`` text is: checks to run, or why it is skipped."""

    checks: tuple[Check, ...] = ()
    skip: str = ""  # reason it cannot run here (it needs a robot, rosbag2, ...)
    mention: str = ""  # a tool named in prose: what its claim is, checked by ``checks``


def _srv_answer(success: bool, message: str) -> str:
    """The regex of ``ros2 service call``'s printed std_srvs response (its message begins
    with ``message``). ``waiting for service to become available...`` comes first whenever
    the call starts before discovery has seen the service; an absent one never answers."""
    return rf"^response:\n.*success={success}, message=['\"]{re.escape(message)}"


def bringup_arguments(readme: Path = REPO / "README.md") -> list[str]:
    """The arguments the README's launch-argument table marks for bringup."""
    names = []
    for line in readme.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[0].startswith("`") and cells[2] == "✓":
            names.append(cells[0].strip("`"))
    return names


ROBOT = "needs the robot: its CAN bus (can0) and the waist's drives"
ROSBAG2 = ("needs rosbag2 (`ros2 bag`), not installed here; player:=humanoid_balance is "
           "checked by test/process/test_replay_clock.py")
WAIST = "/waist_controller"
GET_INACTIVE = Check("ros2 lifecycle get /waist_controller", "sim", "prints the state: inactive",
                     output=(r"^inactive \[2\]",), setup=(WAIST, "inactive"))
SET_ACTIVATE = Check("ros2 lifecycle set /waist_controller activate", "sim",
                     "activates the inactive waist", output=("Transitioning successful",),
                     setup=(WAIST, "inactive"), state=(WAIST, "active"))
FAILED_CONFIGURE = Check(
    "ros2 lifecycle set /waist_controller configure", "robot-no-can",
    "a refused configure prints `Transitioning failed`, exit status 0",
    output=("Transitioning failed",), state=(WAIST, "unconfigured"))
SERVICES_ANSWER = tuple(
    Check(f"ros2 service call {service} {srv} {arg}".strip(), phase,
          f"answers at once, false: {node} {UNCONFIGURED}",
          output=(_srv_answer(False, f"{prefix}{node} {UNCONFIGURED}"),), timeout_s=60.0)
    for service, srv, arg, node, phase, prefix in (
        ("/waist/enable", "std_srvs/srv/SetBool", '"{data: true}"', "waist_controller",
         "robot-no-can", ""),
        ("/waist/enable", "std_srvs/srv/SetBool", '"{data: false}"', "waist_controller",
         "robot-no-can", ""),
        ("/waist/stop", "std_srvs/srv/Trigger", "", "waist_controller", "robot-no-can", ""),
        ("/identification/start", "std_srvs/srv/Trigger", "", "identification_executor",
         "robot-no-can", "refused to start: "),
        ("/arm_balance/enable", "std_srvs/srv/SetBool", '"{data: true}"', "arm_balance",
         "sim-unconfigured", "")))
SERVICES_ANSWER += (
    Check("ros2 service call /identification/cancel std_srvs/srv/Trigger", "robot-no-can",
          "answers at once, false: nothing to cancel",
          output=(_srv_answer(False, f"nothing to cancel: identification_executor {UNCONFIGURED}"),),
          timeout_s=60.0),
    Check('ros2 service call /waist/enable std_srvs/srv/SetBool "{data: true}"', "sim",
          "inactive: answers false, activate it first",
          output=(_srv_answer(False, "waist_controller is inactive: activate it"),),
          setup=(WAIST, "inactive"), timeout_s=60.0),
)

ENTRIES: dict[str, Entry] = {
    "ros2 launch humanoid_balance bringup.launch.py can_channel:=can0": Entry(skip=ROBOT),
    "ros2 launch humanoid_balance sim.launch.py": Entry((Check(
        "ros2 launch humanoid_balance sim.launch.py", "no-graph",
        "the simulated robot: nodes up, the motor nodes active, /zmp flowing; Ctrl-C ends all",
        output=tuple(rf"\[{node.name}-\d+\]: process has finished cleanly" for node in sim_graph()),
        ready="sim", timeout_s=120.0,
        needs="launch", without=("robot_state_publisher", " robot_state_publisher:=false")),)),
    "ros2 launch humanoid_balance replay.launch.py bag:=BAG": Entry(skip=ROSBAG2),
    "ros2 launch humanoid_balance bringup.launch.py --show-args": Entry((Check(
        "ros2 launch humanoid_balance bringup.launch.py --show-args", "no-graph",
        "lists the arguments: every one the README's table marks for bringup",
        output=tuple(f"'{name}':" for name in bringup_arguments()), needs="launch",
        timeout_s=60.0),)),
    "ros2 launch humanoid_balance bringup.launch.py ros2_control:=true "
    "command_interface:=joint_trajectory": Entry(skip=ROBOT + " and ros2_control"),
    "ros2 launch humanoid_balance bringup.launch.py params_file:=team.yaml": Entry(
        skip=ROBOT + "; params_file: test/process/test_two_robots.py, test/test_launch_files.py"),
    "ros2 lifecycle set /waist_controller activate": Entry((SET_ACTIVATE,)),
    "ros2 lifecycle get /waist_controller": Entry((
        GET_INACTIVE,
        Check("ros2 lifecycle get /waist_controller", "robot-no-can",
              "after a failed configure: still unconfigured", output=(r"^unconfigured \[1\]",)))),
    "ros2 lifecycle set /waist_controller configure": Entry((
        Check("ros2 lifecycle set /waist_controller configure", "sim",
              "configures the unconfigured waist", output=("Transitioning successful",),
              setup=(WAIST, "unconfigured"), state=(WAIST, "inactive")),
        FAILED_CONFIGURE)),
    "ros2 lifecycle set": Entry((FAILED_CONFIGURE,), mention="prints `Transitioning failed` when "
                                "the node refuses, yet exits with status 0"),
    "ros2 lifecycle set X configure && ros2 lifecycle set X activate": Entry((Check(
        "ros2 lifecycle set /waist_controller configure && "
        "ros2 lifecycle set /waist_controller activate", "robot-no-can",
        "does not stop after a failed configure; the activate is refused as an unknown transition",
        exit_code=1, output=("Transitioning failed", "Unknown transition requested")),)),
    "ros2 lifecycle set /waist_controller configure && ros2 lifecycle get /waist_controller | "
    "grep -q '^inactive' && ros2 lifecycle set /waist_controller activate": Entry((
        Check("ros2 lifecycle set /waist_controller configure && ros2 lifecycle get "
              "/waist_controller | grep -q '^inactive' && ros2 lifecycle set /waist_controller "
              "activate", "sim", "configures, sees inactive, activates",
              output=("Transitioning successful",), setup=(WAIST, "unconfigured"),
              state=(WAIST, "active")),
        Check("ros2 lifecycle set /waist_controller configure && ros2 lifecycle get "
              "/waist_controller | grep -q '^inactive' && ros2 lifecycle set /waist_controller "
              "activate", "robot-no-can", "stops after the failed configure (no activate)",
              exit_code=1, output=("Transitioning failed",),
              absent=("Transitioning successful", "Unknown transition", "Traceback"),
              state=(WAIST, "unconfigured")))),
    'ros2 service call /waist/enable std_srvs/srv/SetBool "{data: true}"': Entry((
        SERVICES_ANSWER[0],
        Check('ros2 service call /waist/enable std_srvs/srv/SetBool "{data: true}"', "sim",
              "active: (re-)enables the drives", output=(_srv_answer(True, ""),), timeout_s=60.0,
              setup=(WAIST, "active")))),
    "ros2 lifecycle set NODE activate": Entry((
        Check("ros2 lifecycle set /arm_balance activate", "sim",
              "activates an inactive node (NODE: /arm_balance)",
              output=("Transitioning successful",), setup=("/arm_balance", "inactive"),
              state=("/arm_balance", "active")),
        replace(SET_ACTIVATE, says="activates an inactive node (NODE: /waist_controller)"))),
    "rviz2 -d $(ros2 pkg prefix humanoid_balance)/share/humanoid_balance/config/balance.rviz":
        Entry((Check("test -f $(ros2 pkg prefix humanoid_balance)/share/humanoid_balance/config/"
                     "balance.rviz", "no-graph", "the rviz file is where the line says (rviz2 "
                     "itself needs a display: not run)", needs="pkg"),)),
    "ros2 run tf2_ros static_transform_publisher --frame-id world --child-frame-id pelvis":
        Entry(skip="tf2_ros (a ROS install) is not here; for a robot standing still"),
    "ros2 service call /zmp_estimator/zero_left_sensor std_srvs/srv/Trigger": Entry((Check(
        "ros2 service call /zmp_estimator/zero_left_sensor std_srvs/srv/Trigger", "sim",
        "the simulated robot stands: refused with the reason (lift the foot)",
        output=(_srv_answer(False, "refused: left foot carries ") + r"[0-9.]+ N beyond its own "
                r"weight .*lift the foot before zeroing its sensor",), timeout_s=60.0),)),
    "ros2 service call /zmp_estimator/zero_sensors std_srvs/srv/Trigger": Entry((Check(
        "ros2 service call /zmp_estimator/zero_sensors std_srvs/srv/Trigger", "sim",
        "the simulated robot stands: refused with the reason (a loaded foot)",
        output=(_srv_answer(False, "refused: ") + r"(left|right) foot carries [0-9.]+ N beyond "
                r"its own weight",), timeout_s=60.0),)),
    "ros2 service call /identification/start std_srvs/srv/Trigger": Entry(
        (SERVICES_ANSWER[3],), mention="the procedure itself needs the lunar arm (robot)"),
    "ros2 param set": Entry((
        Check("ros2 param set /arm_balance job_arm left && ros2 param set /arm_balance job_arm "
              "right", "sim", "job_arm changes at run time", output=("Set parameter successful",),
              absent=("failed", "Traceback"), setup=("/arm_balance", "active")),
        Check("ros2 param set /zmp_estimator sensor_type fsr", "sim",
              "prints `Setting parameter failed: <reason>` and exits 0 (zmp_estimator: read at "
              "start-up)", output=(r"Setting parameter failed: .*is read at start-up: restart "
                                   r"the node to change it",)),
        Check("ros2 param set /waist_controller diagnostics_rate 5.0", "sim",
              "configured: read at configure, with what to do",
              output=(r"Setting parameter failed: .*is read at configure: to change it, "
                      r"deactivate \(if active\), clean up, set it and configure again",),
              setup=(WAIST, "active"))),
        mention="changes at run time; refused with `Setting parameter failed: <reason>`, exit 0"),
    "ros2 run humanoid_balance NAME": Entry((Check(
        "ros2 run humanoid_balance zmp_estimator --ros-args -r __ns:=/ros2_run_check",
        "no-graph", "starts the node (NAME: zmp_estimator), taking --ros-args; Ctrl-C ends it",
        ready="/ros2_run_check/zmp_estimator", timeout_s=60.0, needs="run"),)),
    "ros2 service call": Entry(SERVICES_ANSWER, mention="the lifecycle nodes' services exist "
                               "from the start and answer at once in every state"),
    "ros2 lifecycle get": Entry((GET_INACTIVE,), mention="check the state between transitions"),
}
ENTRIES["ros2 launch ... --show-args"] = Entry(tuple(
    Check(f"ros2 launch humanoid_balance {name}.launch.py --show-args", "no-graph",
          f"{name}.launch.py lists its arguments (that it imports no pinocchio, MuJoCo or numba: "
          "test/test_launch_files.py::test_show_args_imports_no_physics)",
          output=(r"Arguments \(pass arguments as",), needs="launch", timeout_s=60.0)
    for name in ("sim", "replay")), mention="any launch file's arguments")
for _text in ("ros2 bag play", "ros2 bag record -a", "ros2 bag reindex", "ros2 bag",
              "ros2 bag play --clock"):
    ENTRIES[_text] = Entry(skip=ROSBAG2)
for _text in ("ros2", "ros2 launch", "ros2 run", "ros2 launch --show-args"):
    ENTRIES[_text] = Entry(mention="the tool named in prose (its lines are checked above)")


@dataclass
class Result:
    """How one check went."""

    check: Check
    returncode: int | None = None
    seconds: float = 0.0
    passed: bool = False
    note: str = ""
    output: str = field(default="", repr=False)
    skipped: bool = False


# --- the ros2 command ------------------------------------------------------------------------


def ros2_environment(scratch: Path) -> dict[str, str]:
    """The environment the documented lines run in: ``ros2`` on PATH, the package indexed."""
    env = dict(os.environ)
    if shutil.which("ros2") is None:
        bin_dir = scratch / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        launcher = bin_dir / "ros2"
        launcher.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'import sys; from ros2cli.cli "
                            "import main; sys.argv[0] = \"ros2\"; sys.exit(main())' \"$@\"\n")
        launcher.chmod(0o755)
        env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    try:
        from ament_index_python.packages import get_package_prefix

        get_package_prefix("humanoid_balance")
    except (ImportError, LookupError, OSError, ValueError):
        prefix = ament_prefix(scratch / "prefix")
        env["AMENT_PREFIX_PATH"] = os.pathsep.join(
            p for p in (str(prefix), env.get("AMENT_PREFIX_PATH", "")) if p)
    return env


def ament_prefix(prefix: Path) -> Path:
    """A scratch ament prefix of this checkout: real folders, files linked (as colcon's
    ``--symlink-install``; ros2launch does not follow linked folders)."""
    from humanoid_balance.graph import NODES
    from humanoid_balance.processes import executable_path

    index = prefix / "share" / "ament_index" / "resource_index" / "packages"
    index.mkdir(parents=True, exist_ok=True)
    (index / "humanoid_balance").touch()
    lib = prefix / "lib" / "humanoid_balance"
    lib.mkdir(parents=True, exist_ok=True)
    for name in [*NODES, "humanoid-balance"]:
        link = lib / name
        if not link.exists():
            link.symlink_to(executable_path(name))
    share = prefix / "share" / "humanoid_balance"
    for folder in ("launch", "config", "urdf"):
        for source in (REPO / folder).rglob("*"):
            target = share / folder / source.relative_to(REPO / folder)
            if source.is_dir() or target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(source)
    if not (share / "package.xml").exists():
        (share / "package.xml").symlink_to(REPO / "package.xml")
    return prefix


def has_package(env: dict[str, str], package: str) -> bool:
    """The ament index of ``env`` holds ``package``."""
    return any((Path(prefix) / "share/ament_index/resource_index/packages" / package).exists()
               for prefix in env.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if prefix)


def ros2_commands(env: dict[str, str]) -> set[str]:
    """The ros2cli commands installed (``launch``, ``run``, ``pkg``, ``lifecycle``, ...)."""
    result = subprocess.run(["ros2", "--help"], env=env, capture_output=True, text=True,
                            timeout=60, check=False)
    section = result.stdout.partition("Commands:")[2]
    return {line.split()[0] for line in section.splitlines() if line.startswith("  ") and
            line.split() and not line.strip().startswith("Call")}


# --- running the checks ----------------------------------------------------------------------

#: lifecycle transitions from a primary state to another
PATHS: dict[tuple[str, str], tuple[str, ...]] = {
    ("active", "inactive"): ("deactivate",), ("active", "unconfigured"): ("deactivate", "cleanup"),
    ("inactive", "unconfigured"): ("cleanup",), ("inactive", "active"): ("activate",),
    ("unconfigured", "inactive"): ("configure",),
    ("unconfigured", "active"): ("configure", "activate"),
}


def lifecycle_state(graph: SimGraph, node: str) -> str:
    """The node's lifecycle state label, through its get_state service."""
    client = graph.lifecycle(node)
    try:
        return client.state(timeout=15.0)
    finally:
        client.destroy()


def bring_to(graph: SimGraph, node: str, goal: str) -> None:
    """Bring lifecycle node ``node`` to state ``goal`` through its services."""
    client = graph.lifecycle(node)
    try:
        state = client.state(timeout=15.0)
        for transition in PATHS.get((state, goal), ()):
            if not client.change(transition, timeout=30.0):
                raise RuntimeError(f"{node}: {transition} refused on the way from {state} to {goal}")
    finally:
        client.destroy()


def _stop_group(process: subprocess.Popen[bytes], sig: int, timeout: float) -> bool:
    """Send ``sig`` to the process group (as Ctrl-C does); True when it exited in time."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)
    try:
        process.wait(timeout=timeout)
        return True
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10.0)
        return False


def _ready(graph: SimGraph, ready: str, timeout: float) -> str:
    """Wait until ``ready`` holds; '' or what did not come."""
    if ready.startswith("/"):  # a node: its parameter service answers
        try:
            graph.parameter(ready, "use_sim_time", timeout=timeout)
            return ""
        except TimeoutError as error:
            return str(error)
    from geometry_msgs.msg import PointStamped

    zmp: list[object] = []
    subscription = graph.node.create_subscription(PointStamped, "/zmp", zmp.append, 10)
    end = time.monotonic() + timeout
    try:
        for node in ("/arm_balance", "/waist_controller"):
            while True:
                try:
                    if lifecycle_state(graph, node) == "active":
                        break
                except LifecycleError:
                    pass  # not started yet
                if time.monotonic() > end:
                    return f"{node} not active within {timeout:.0f} s"
                graph.spin(0.5)
        if not graph.spin_until(lambda: bool(zmp), max(1.0, end - time.monotonic())):
            return "no /zmp"
        return ""
    finally:
        graph.node.destroy_subscription(subscription)


def run_command(check: Check, env: dict[str, str], log: Path,
                graph: SimGraph | None) -> tuple[int | None, float, str, str]:
    """Run the check's command: (exit status, seconds, output, problem)."""
    start = time.monotonic()
    with open(log, "wb") as out:
        process = subprocess.Popen(["bash", "-c", check.run], env=env, stdout=out,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
        problem = ""
        if check.ready:
            assert graph is not None
            try:
                problem = _ready(graph, check.ready, check.timeout_s)
            except Exception as error:
                problem = f"{type(error).__name__}: {error}"
            if process.poll() is None and not _stop_group(process, signal.SIGINT, 30.0):
                problem = problem or "still running 30 s after Ctrl-C: killed"
        else:
            limit = check.timeout_s * max(1, check.run.count("ros2 "))  # each call its own
            try:
                process.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                _stop_group(process, signal.SIGINT, 5.0)
                problem = f"still running after {limit:.0f} s: stopped"
    seconds = time.monotonic() - start
    return process.returncode, seconds, log.read_text(errors="replace"), problem


def run_check(check: Check, env: dict[str, str], log: Path, graph: SimGraph | None,
              commands: set[str]) -> Result:
    """Set up, run and judge one check."""
    if check.needs and check.needs not in commands:
        return Result(check, note=f"ros2 {check.needs} is not installed here", skipped=True)
    note = ""
    if check.without is not None and not has_package(env, check.without[0]):
        note = f"run with{check.without[1]}: {check.without[0]} is not installed here"
        check = replace(check, run=check.run + check.without[1])
    if check.setup is not None:
        assert graph is not None
        try:
            bring_to(graph, *check.setup)
        except (LifecycleError, RuntimeError) as error:
            return Result(check, note=f"setup {check.setup}: {error}")
    returncode, seconds, output, problem = run_command(check, env, log, graph)
    problems = [problem] if problem else []
    if check.exit_code is not None and returncode != check.exit_code:
        problems.append(f"exit status {returncode}, not {check.exit_code}")
    problems += [f"no {pattern!r}" for pattern in check.output
                 if not re.search(pattern, output, re.MULTILINE)]
    problems += [f"printed {pattern!r}" for pattern in check.absent if pattern in output]
    if check.state is not None and graph is not None:
        state = lifecycle_state(graph, check.state[0])
        if state != check.state[1]:
            problems.append(f"{check.state[0]} {state}, not {check.state[1]}")
    return Result(check, returncode, seconds, not problems, "; ".join([note, *problems]).strip("; "),
                  output)


def phase_nodes(phase: str) -> list[GraphNode] | None:
    """The nodes a phase runs (None: the phase cannot run on this machine)."""
    if phase in ("sim-unconfigured", "sim"):
        return sim_graph()
    if phase == "robot-no-can":
        if Path("/sys/class/net/can0").exists():
            return None  # its configure would not fail here
        wanted = ("waist_controller", "identification_executor")
        return [n for n in robot_graph(identification=True) if n.name in wanted]
    return []


def run_checks(checks: Sequence[Check], logs: Path, env: dict[str, str],
               progress: Callable[[Result], None] = lambda r: None) -> dict[Check, Result]:
    """Run ``checks`` phase by phase, each phase's graph started once; the results."""
    commands = ros2_commands(env)
    results: dict[Check, Result] = {}
    groups = [("sim", ("sim-unconfigured", "sim")), ("robot-no-can", ("robot-no-can",)),
              ("no-graph", ("no-graph",))]
    try:
        for graph_name, phases in groups:
            todo = [c for c in checks if c.phase in phases]
            if not todo:
                continue
            nodes = phase_nodes(phases[0])
            if nodes is None:
                for check in todo:
                    results[check] = Result(check, note="can0 exists here", skipped=True)
                continue
            with SimGraph(logs / graph_name, nodes, bring_up=False, name="ros2_lines") as graph:
                for phase in phases:
                    if phase == "sim":
                        graph.start_lifecycle()
                    for check in (c for c in todo if c.phase == phase):
                        log = logs / f"{len(results):02d}-{phase}.log"
                        results[check] = result = run_check(check, env, log, graph, commands)
                        progress(result)
    finally:
        subprocess.run(["ros2", "daemon", "stop"], env=env, capture_output=True, timeout=60,
                       check=False)
    return results


# --- the table -------------------------------------------------------------------------------


def verdict(result: Result) -> str:
    """pass, FAIL or skip."""
    if result.skipped:
        return "skip"
    return "pass" if result.passed else "FAIL"


def rows(lines: Sequence[DocLine], results: dict[Check, Result]) -> list[list[str]]:
    """Table rows: one per documented text and check (or skip, or missing entry)."""
    by_text: dict[str, list[DocLine]] = {}
    for doc in lines:
        by_text.setdefault(doc.command, []).append(doc)
    table = []
    for text, docs in by_text.items():
        where = ", ".join(f"{d.path}:{d.line}" for d in docs)
        entry = ENTRIES.get(text)
        if entry is None:
            table.append([where, text, "-", "-", "-", "FAIL", "no entry in ENTRIES: not checked"])
            continue
        if not entry.checks:
            table.append([where, text, "-", "-", "-", "skip" if entry.skip else "mention",
                          entry.skip or entry.mention])
            continue
        for check in entry.checks:
            result = results.get(check)
            if result is None:
                table.append([where, text, check.phase, "-", "-", "not run", check.says])
                continue
            note = check.says + (f" (run as `{check.run}`)" if check.run != text else "")
            if result.note:
                note += f"; {result.note}"
            table.append([where, text, check.phase, str(result.returncode),
                          f"{result.seconds:.1f}", verdict(result), note])
    return table


def markdown(table: Sequence[Sequence[str]]) -> str:
    """Rows as a Markdown table."""
    head = ["doc", "line", "graph", "exit", "s", "verdict", "what the doc says / note"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in table:
        cells = [row[0], f"`{row[1]}`", *row[2:]]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out)


def documented_lines() -> list[DocLine]:
    """Every ``ros2`` line of :data:`DOCS`."""
    return [line for doc in DOCS for line in extract(REPO / doc)]


def unchecked(lines: Sequence[DocLine]) -> tuple[list[str], list[str]]:
    """(documented texts without an entry, entries no document has)."""
    texts = {d.command for d in lines}
    return sorted(texts - set(ENTRIES)), sorted(set(ENTRIES) - texts)


def all_checks(phases: Sequence[str] = PHASES) -> list[Check]:
    """Every check of :data:`ENTRIES` in the given phases, each once, in entry order."""
    seen: dict[Check, None] = {}
    for entry in ENTRIES.values():
        for check in entry.checks:
            if check.phase in phases:
                seen.setdefault(check)
    return list(seen)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the checks; print the table; 0 when nothing failed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--phases", default=",".join(PHASES),
                        help=f"comma-separated, of {', '.join(PHASES)}")
    parser.add_argument("--logs", type=Path, default=None, help="logs (default: a temp dir)")
    args = parser.parse_args(argv)
    logs = args.logs or Path(tempfile.mkdtemp(prefix="ros2_lines_"))
    logs.mkdir(parents=True, exist_ok=True)
    lines = documented_lines()
    missing, stale = unchecked(lines)
    env = ros2_environment(logs)
    checks = all_checks(tuple(args.phases.split(",")))

    def progress(result: Result) -> None:
        print(f"{verdict(result):4} {result.seconds:5.1f} s  {result.check.run}"
              f"{'  -- ' + result.note if result.note else ''}", flush=True)

    results = run_checks(checks, logs, env, progress)
    print(markdown(rows(lines, results)))
    for text in stale:
        print(f"FAIL: ENTRIES has {text!r}, which no document holds")
    failed = [r for r in results.values() if verdict(r) == "FAIL"]
    print(f"{len(lines)} documented ros2 texts ({len({d.command for d in lines})} distinct); "
          f"{len(results)} checks: {sum(verdict(r) == 'pass' for r in results.values())} pass, "
          f"{len(failed)} fail, {sum(verdict(r) == 'skip' for r in results.values())} skipped; "
          f"{len(missing)} without an entry; logs in {logs}")
    return 1 if failed or missing or stale else 0


if __name__ == "__main__":
    sys.exit(main())
