"""The launch files, loaded with ``launch``: nodes, parameters, remappings, lifecycle handlers, replay order.

Skipped where ``launch`` / ``launch_ros`` are not importable (they are not on
PyPI: a ROS install, or their sources on PYTHONPATH, see the README). Each
launch file is loaded, its arguments and OpaqueFunctions visited with a
LaunchContext, and the resulting actions compared with the graph
(``humanoid_balance.graph``) they must start; no process is started. The
lifecycle event handlers are fed StateTransition events as the nodes would
publish them.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml


def _why_not_importable() -> str | None:
    """Why ``launch`` / ``launch_ros`` cannot be used here (None: they can)."""
    try:
        import launch
        import launch_ros.actions  # noqa: F401
    except ImportError as error:
        return f"{error.name or error} is not importable (a ROS 2 install provides launch_ros)"
    if not hasattr(launch, "LaunchDescription"):  # the repository's launch/ folder, not ROS's
        return "launch is not installed (a ROS 2 install provides it)"
    return None


if _why_not_importable() is not None:
    pytest.skip(str(_why_not_importable()), allow_module_level=True)

import launch.logging  # noqa: E402
from launch import LaunchContext  # noqa: E402
from launch.actions import (  # noqa: E402
    DeclareLaunchArgument,
    EmitEvent,
    ExecuteProcess,
    OpaqueFunction,
    RegisterEventHandler,
)
from launch.events import Shutdown  # noqa: E402
from launch.events.process import ProcessExited  # noqa: E402
from launch.launch_description_sources import (  # noqa: E402
    get_launch_description_from_python_launch_file,
)
from launch_ros.actions import LifecycleNode, Node  # noqa: E402
from launch_ros.events.lifecycle import ChangeState, StateTransition  # noqa: E402
from lifecycle_msgs.msg import Transition, TransitionEvent  # noqa: E402

from humanoid_balance.graph import (  # noqa: E402
    LIFECYCLE_ORDER,
    SIM_WAIST_JOINT_STATES,
    GraphNode,
    replay_graph,
    robot_graph,
    sim_graph,
)
from humanoid_balance.launch_graph import LOGGER_NAME, full_name  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
ROBOT_ARGUMENTS = {"can_interface": "virtual", "can_channel": "can7", "sensor_type": "fsr",
                   "job_arm": "left", "urdf_path": str(REPO / "urdf" / "humanoid.urdf"),
                   "namespace": "robot1", "use_sim_time": "true", "identification": "true",
                   "robot_state_publisher": "false"}


@pytest.fixture(scope="module", autouse=True)
def _launch_log_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> None:
    """launch's log files go to a temporary folder, not ~/.ros/log."""
    if not launch.logging.launch_config.file_handlers:
        launch.logging.launch_config.log_dir = str(tmp_path_factory.mktemp("launch_log"))


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def errors(self) -> list[str]:
        return [r.getMessage() for r in self.records if r.levelno >= logging.ERROR]


@pytest.fixture
def lifecycle_log() -> Iterator[_Records]:
    """What the lifecycle sequence logs."""
    handler = _Records()
    logger = logging.getLogger(LOGGER_NAME)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def _expand(entity: Any, context: LaunchContext) -> list[Any]:
    """Visit arguments and OpaqueFunctions (what ``ros2 launch`` does first); keep the rest."""
    condition = getattr(entity, "condition", None)
    if condition is not None and not condition.evaluate(context):
        return []
    if isinstance(entity, (DeclareLaunchArgument, OpaqueFunction)):
        return [e for sub in (entity.visit(context) or []) for e in _expand(sub, context)]
    return [entity]


class Loaded:
    """A launch file's entities after its arguments and OpaqueFunctions were visited."""

    def __init__(self, name: str, **arguments: str) -> None:
        description = get_launch_description_from_python_launch_file(str(REPO / "launch" / name))
        self.context = LaunchContext()
        self.context.launch_configurations.update(arguments)
        self.entities = [e for entity in description.entities for e in _expand(entity, self.context)]

    def of_type(self, kind: type) -> list[Any]:
        return [e for e in self.entities if isinstance(e, kind)]

    def nodes(self) -> dict[str, Node]:
        """The launch_ros node actions by node name (without namespace)."""
        found = {}
        for action in self.of_type(Node):
            action._perform_substitutions(self.context)
            found[action.node_name.rsplit("/", 1)[-1]] = action
        return found

    def lifecycle(self, name: str) -> LifecycleNode:
        action = self.nodes()[name]
        assert isinstance(action, LifecycleNode), name
        return action

    def fire(self, name: str, start: str, goal: str) -> list[tuple[str, int]]:
        """Node ``name`` publishes the transition ``start -> goal``: the (node, transition) requests."""
        msg = TransitionEvent()
        msg.start_state.label = start
        msg.goal_state.label = goal
        event = StateTransition(action=self.lifecycle(name), msg=msg)
        requests = []
        for register in self.of_type(RegisterEventHandler):
            handler = register.event_handler
            if not handler.matches(event):
                continue
            for entity in handler.handle(event, self.context) or []:
                for emitted in _expand(entity, self.context):
                    requests += self._requests(emitted)
        return requests

    def _requests(self, entity: Any) -> list[tuple[str, int]]:
        if not (isinstance(entity, EmitEvent) and isinstance(entity.event, ChangeState)):
            return []
        return [(name, entity.event.transition_id) for name, action in self.nodes().items()
                if isinstance(action, LifecycleNode) and entity.event.lifecycle_node_matcher(action)]

    def configure_requests(self) -> list[tuple[str, int]]:
        """The lifecycle requests the launch emits at start, in order."""
        return [r for e in self.of_type(EmitEvent) for r in self._requests(e)]


def _text(part: Any, context: LaunchContext) -> str:
    out = []
    for substitution in part:
        try:
            out.append(substitution.perform(context))
        except Exception:  # a local (filled in at execute) or a package not installed here
            out.append(substitution.describe())
    return "".join(out)


def _flatten(parameters: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in parameters.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = list(value) if isinstance(value, (list, tuple)) else value
    return flat


class _ParameterFileLoader(yaml.SafeLoader):
    """YAML as rcl reads a parameter file: launch_ros dumps lists as ``!!python/tuple``."""


_ParameterFileLoader.add_constructor(
    "tag:yaml.org,2002:python/tuple",
    lambda loader, node: loader.construct_sequence(node))  # type: ignore[arg-type]


def _started(action: Node, context: LaunchContext) -> dict[str, Any]:
    """What the process of ``action`` would get: parameters (files merged in order) and remappings."""
    command = [_text(part, context) for part in action.cmd]
    parameters: dict[str, Any] = {}
    remappings = []
    for flag, value in itertools.pairwise(command):
        if flag == "--params-file":
            content = yaml.load(Path(value).read_text(), Loader=_ParameterFileLoader)
            if Path(value).name.startswith("launch_params_"):
                os.unlink(value)  # launch_ros wrote the overrides dict there
            for key in (action.node_name, action.node_name.rsplit("/", 1)[-1], "/**"):
                if key in content:
                    parameters.update(_flatten(content[key]["ros__parameters"]))
        elif flag == "-r" and not value.startswith(("__", "LocalVar")):
            source, target = value.split(":=")
            remappings.append((source, target))
    return {"executable": command[0], "parameters": parameters, "remappings": remappings}


def _expected(node: GraphNode) -> dict[str, Any]:
    content = yaml.safe_load(node.spec.parameter_path().read_text())
    parameters = _flatten(content[node.name]["ros__parameters"])
    parameters.update(_flatten(dict(node.parameters)))
    return {"parameters": parameters, "remappings": list(node.remappings)}


CASES = {
    "bringup default": ("bringup.launch.py", {"robot_state_publisher": "false"}, robot_graph()),
    "bringup arguments": ("bringup.launch.py", ROBOT_ARGUMENTS, robot_graph(
        can_interface="virtual", can_channel="can7", sensor_type="fsr", job_arm="left",
        urdf_path=ROBOT_ARGUMENTS["urdf_path"], namespace="robot1", use_sim_time=True,
        identification=True)),
    "bringup no waist": ("bringup.launch.py", {"waist": "false", "robot_state_publisher": "false"},
                         robot_graph(waist=False)),
    "sim default": ("sim.launch.py", {"robot_state_publisher": "false"}, sim_graph()),
    "sim arguments": ("sim.launch.py", {
        "sensor_type": "fsr", "job_arm": "left", "real_time_factor": "0.5", "sensor_noise": "0",
        "lock_step": "true", "rmc": "false", "namespace": "sim1", "robot_state_publisher": "false"},
        sim_graph(sensor_type="fsr", job_arm="left", real_time_factor=0.5, sensor_noise=0.0,
                  lock_step=True, rmc=False, namespace="sim1")),
    "replay": ("replay.launch.py", {"bag": "/data/bag", "sensor_type": "fsr",
                                    "robot_state_publisher": "false"},
               replay_graph(sensor_type="fsr")),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_launch_file_starts_the_graph_nodes(case: str) -> None:
    """The launch file starts exactly the graph's nodes, by name and namespace, as lifecycle nodes or not."""
    name, arguments, graph = CASES[case]
    nodes = Loaded(name, **arguments).nodes()
    assert sorted(nodes) == sorted(n.name for n in graph)
    for node in graph:
        action = nodes[node.name]
        assert action.node_name == full_name(node)
        assert isinstance(action, LifecycleNode) == node.spec.lifecycle, node.name


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_node_gets_its_parameter_file_then_the_graph_overrides(case: str) -> None:
    """Each process gets the package's parameter file, then the graph's overrides, with their types."""
    name, arguments, graph = CASES[case]
    loaded = Loaded(name, **arguments)
    nodes = loaded.nodes()
    for node in graph:
        assert _started(nodes[node.name], loaded.context)["parameters"] == \
            _expected(node)["parameters"], node.name


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_node_gets_the_graph_remappings(case: str) -> None:
    """Each process gets the graph's remappings, and no other."""
    name, arguments, graph = CASES[case]
    loaded = Loaded(name, **arguments)
    nodes = loaded.nodes()
    for node in graph:
        assert _started(nodes[node.name], loaded.context)["remappings"] == \
            _expected(node)["remappings"], node.name


def test_bringup_passes_the_can_bus_arguments_to_the_waist() -> None:
    """can_interface and can_channel reach the waist controller's can.interface and can.channel."""
    loaded = Loaded("bringup.launch.py", can_interface="pcan", can_channel="PCAN_USBBUS1",
                    robot_state_publisher="false")
    started = _started(loaded.nodes()["waist_controller"], loaded.context)
    assert (started["parameters"]["can.interface"], started["parameters"]["can.channel"]) == \
        ("pcan", "PCAN_USBBUS1")


def test_sim_runs_the_waist_on_simulated_drives_followed_by_mujoco() -> None:
    """In sim.launch.py the waist hosts simulated drives and mujoco_sim follows its joint states."""
    loaded = Loaded("sim.launch.py", robot_state_publisher="false")
    nodes = loaded.nodes()
    waist = _started(nodes["waist_controller"], loaded.context)
    sim = _started(nodes["mujoco_sim"], loaded.context)
    assert waist["parameters"]["simulated_drives"] is True
    assert waist["remappings"] == [("/joint_states", SIM_WAIST_JOINT_STATES)]
    assert SIM_WAIST_JOINT_STATES in sim["parameters"]["command_topics"]


@pytest.mark.parametrize("name", ["bringup.launch.py", "sim.launch.py"])
def test_lifecycle_nodes_are_configured_at_start_in_the_order(name: str) -> None:
    """The launch asks each lifecycle node to configure, once, in LIFECYCLE_ORDER; nothing else."""
    loaded = Loaded(name, identification="true", robot_state_publisher="false") \
        if name == "bringup.launch.py" else Loaded(name, robot_state_publisher="false")
    requests = loaded.configure_requests()
    managed = [n for n in LIFECYCLE_ORDER if n in loaded.nodes()]
    assert requests == [(n, Transition.TRANSITION_CONFIGURE) for n in managed]


def test_a_configured_first_node_is_activated() -> None:
    """configuring -> inactive of the first node in the order requests its activation."""
    loaded = Loaded("bringup.launch.py", robot_state_publisher="false")
    assert loaded.fire("arm_balance", "configuring", "inactive") == [
        ("arm_balance", Transition.TRANSITION_ACTIVATE)]


def test_the_waist_is_activated_only_once_the_arm_balance_is_active() -> None:
    """A configured waist waits for the arm balance; its activation follows the arm's."""
    loaded = Loaded("bringup.launch.py", robot_state_publisher="false")
    assert loaded.fire("waist_controller", "configuring", "inactive") == []
    loaded.fire("arm_balance", "configuring", "inactive")
    assert loaded.fire("arm_balance", "activating", "active") == [
        ("waist_controller", Transition.TRANSITION_ACTIVATE)]


def test_the_active_arm_does_not_activate_an_unconfigured_waist() -> None:
    """The waist is activated only after its own successful configure, never before."""
    loaded = Loaded("bringup.launch.py", robot_state_publisher="false")
    loaded.fire("arm_balance", "configuring", "inactive")
    assert loaded.fire("arm_balance", "activating", "active") == []
    assert loaded.fire("waist_controller", "configuring", "inactive") == [
        ("waist_controller", Transition.TRANSITION_ACTIVATE)]


def test_a_failed_activation_is_not_retried(lifecycle_log: _Records) -> None:
    """activating -> inactive (a failed activation) requests nothing: no ACTIVATE loop."""
    loaded = Loaded("bringup.launch.py", robot_state_publisher="false")
    loaded.fire("arm_balance", "configuring", "inactive")
    loaded.fire("waist_controller", "configuring", "inactive")
    loaded.fire("arm_balance", "activating", "active")
    assert loaded.fire("waist_controller", "activating", "inactive") == []


def test_a_failed_activation_is_logged_once_with_what_to_do(lifecycle_log: _Records) -> None:
    """One error line names the node and the command that activates it by hand."""
    loaded = Loaded("bringup.launch.py", robot_state_publisher="false")
    loaded.fire("arm_balance", "configuring", "inactive")
    loaded.fire("waist_controller", "configuring", "inactive")
    loaded.fire("arm_balance", "activating", "active")
    loaded.fire("waist_controller", "activating", "inactive")
    errors = lifecycle_log.errors()
    assert len(errors) == 1
    assert errors[0].startswith("/waist_controller: activation FAILED")
    assert errors[0].endswith("then: ros2 lifecycle set /waist_controller activate")


def test_a_reconfigured_node_is_not_activated_again() -> None:
    """After the operator's cleanup and configure, the launch does not ask to activate again."""
    loaded = Loaded("bringup.launch.py", waist="false", robot_state_publisher="false")
    loaded.fire("arm_balance", "configuring", "inactive")
    loaded.fire("arm_balance", "activating", "inactive")
    assert loaded.fire("arm_balance", "configuring", "inactive") == []


def test_the_waist_waits_while_the_arm_balance_failed_and_follows_a_manual_activation() -> None:
    """The waist is not activated while the arm balance failed; once activated by hand, it follows."""
    loaded = Loaded("bringup.launch.py", robot_state_publisher="false")
    loaded.fire("arm_balance", "configuring", "inactive")
    loaded.fire("waist_controller", "configuring", "inactive")
    assert loaded.fire("arm_balance", "activating", "inactive") == []
    assert loaded.fire("arm_balance", "activating", "active") == [
        ("waist_controller", Transition.TRANSITION_ACTIVATE)]


def test_a_failed_configure_is_logged_once_and_activates_nothing(lifecycle_log: _Records) -> None:
    """configuring -> unconfigured: one error line, no activation request."""
    loaded = Loaded("bringup.launch.py", waist="false", robot_state_publisher="false")
    assert loaded.fire("arm_balance", "configuring", "unconfigured") == []
    errors = lifecycle_log.errors()
    assert len(errors) == 1 and errors[0].startswith("/arm_balance: configure FAILED")


def test_activate_false_only_configures() -> None:
    """activate:=false: a configured node is left inactive for the operator."""
    loaded = Loaded("bringup.launch.py", activate="false", robot_state_publisher="false")
    assert loaded.fire("arm_balance", "configuring", "inactive") == []


def test_the_identification_is_configured_but_not_activated_by_default() -> None:
    """identification:=true starts the executor configured only: it moves the arm when activated."""
    loaded = Loaded("bringup.launch.py", identification="true", waist="false",
                    robot_state_publisher="false")
    loaded.fire("arm_balance", "configuring", "inactive")
    loaded.fire("arm_balance", "activating", "active")
    assert loaded.fire("identification_executor", "configuring", "inactive") == []


def test_namespaced_lifecycle_commands_name_the_full_node(lifecycle_log: _Records) -> None:
    """With a namespace, the operator's command names /namespace/node."""
    loaded = Loaded("bringup.launch.py", namespace="robot1", waist="false",
                    robot_state_publisher="false")
    loaded.fire("arm_balance", "configuring", "inactive")
    loaded.fire("arm_balance", "activating", "inactive")
    assert lifecycle_log.errors()[0].endswith("ros2 lifecycle set /robot1/arm_balance activate")


def _commands(loaded: Loaded, entities: list[Any]) -> list[list[str]]:
    return [[_text(part, loaded.context) for part in e.cmd]
            for e in entities if isinstance(e, ExecuteProcess) and not isinstance(e, Node)]


def _exited(loaded: Loaded, returncode: int) -> list[Any]:
    """Entities the launch adds when the wait-for process exits with ``returncode``."""
    wait = next(e for e in loaded.of_type(ExecuteProcess) if not isinstance(e, Node))
    event = ProcessExited(returncode=returncode, action=wait, name="wait", cmd=[], cwd=None,
                          env=None, pid=1)
    added: list[Any] = []
    for register in loaded.of_type(RegisterEventHandler):
        if register.event_handler.matches(event):
            added += register.event_handler.handle(event, loaded.context) or []
    return added


def test_replay_starts_only_the_wait_for_the_estimator_with_it() -> None:
    """At start the replay runs the estimator and ``wait-for`` its subscriptions, not the player."""
    loaded = Loaded("replay.launch.py", bag="/data/bag", robot_state_publisher="false")
    commands = _commands(loaded, loaded.entities)
    assert len(commands) == 1
    assert commands[0][1:] == ["wait-for", "/joint_states", "/left_foot/ft", "/right_foot/ft",
                               "--node", "/zmp_estimator", "--timeout", "30.0", "--robot-dds"]


@pytest.mark.parametrize(("player", "command"), [
    ("ros2", ["ros2", "bag", "play", "/data/bag", "--clock", "--rate", "0.5", "--delay", "1.0"]),
    ("humanoid_balance", ["replay", "/data/bag", "--rate", "0.5", "--delay", "1.0", "--robot-dds"]),
])
def test_replay_starts_the_player_when_the_estimator_subscribed(player: str,
                                                                command: list[str]) -> None:
    """wait-for exiting 0 starts the bag player (ros2 bag play, or humanoid-balance replay)."""
    loaded = Loaded("replay.launch.py", bag="/data/bag", rate="0.5", player=player,
                    robot_state_publisher="false")
    commands = _commands(loaded, _exited(loaded, 0))
    assert len(commands) == 1 and commands[0][-len(command):] == command


def test_replay_stops_without_playing_when_the_estimator_never_subscribed() -> None:
    """wait-for timing out shuts the launch down and plays nothing."""
    loaded = Loaded("replay.launch.py", bag="/data/bag", robot_state_publisher="false")
    added = _exited(loaded, 3)
    assert _commands(loaded, added) == []
    assert any(isinstance(e, EmitEvent) and isinstance(e.event, Shutdown) for e in added)


@pytest.mark.parametrize("name", ["bringup.launch.py", "sim.launch.py", "replay.launch.py"])
def test_launch_arguments_default_to_the_graph_defaults(name: str) -> None:
    """Each launch argument named like a graph parameter has the graph function's default."""
    import inspect

    function = {"bringup.launch.py": robot_graph, "sim.launch.py": sim_graph,
                "replay.launch.py": replay_graph}[name]
    description = get_launch_description_from_python_launch_file(str(REPO / "launch" / name))
    declared = {a.name: a.default_value for a in description.get_launch_arguments()}
    context = LaunchContext()
    for parameter in inspect.signature(function).parameters.values():
        if parameter.name in declared:
            default = parameter.default
            text = ("true" if default else "false") if isinstance(default, bool) else str(default)
            assert _text(declared[parameter.name], context) == text, parameter.name


def _readme_arguments() -> dict[str, tuple[str, set[str]]]:
    """The README robot section's argument table: name -> (default, launch files that take it)."""
    text = (REPO / "README.md").read_text()
    start = text.index("## On a robot with ROS 2")
    section = text[start:text.index("\n## ", start)]
    rows: dict[str, tuple[str, set[str]]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[0].startswith("`"):
            files = {f"{name}.launch.py" for name, mark in
                     zip(("bringup", "sim", "replay"), cells[2:5], strict=True) if mark}
            rows[cells[0].strip("`")] = (cells[1].strip("`"), files)
    return rows


def test_the_readme_lists_each_launch_argument_with_its_default() -> None:
    """The README's argument table has every launch argument, the files taking it and its default."""
    table = _readme_arguments()
    context = LaunchContext()
    listed: dict[str, tuple[str, set[str]]] = {}
    for name in ("bringup.launch.py", "sim.launch.py", "replay.launch.py"):
        description = get_launch_description_from_python_launch_file(str(REPO / "launch" / name))
        for argument in description.get_launch_arguments():
            default = argument.default_value
            text = "(required)" if default is None else (_text(default, context) or "empty")
            previous = listed.get(argument.name, (text, set()))
            assert previous[0] == text, argument.name  # one default in all the files
            listed[argument.name] = (text, previous[1] | {name})
    assert table == listed
