"""The launch files, loaded with ``launch``: nodes, parameters, remappings, lifecycle handlers, replay order.

Skipped where ``launch`` / ``launch_ros`` are not importable (they are not on
PyPI: a ROS install, or their sources on PYTHONPATH, see the README). Each
launch file is loaded, its arguments and OpaqueFunctions visited with a
LaunchContext, and the resulting actions compared with the graph
(``humanoid_balance.graph``) they must start; no process is started. The
lifecycle event handlers are fed StateTransition events as the nodes would
publish them. Parameters are merged as rclpy merges the files a process gets
(``humanoid_balance.params.files``, checked against rclpy in test_params_files.py).
"""

from __future__ import annotations

import itertools
import logging
import os
import subprocess
import sys
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

from humanoid_balance.exceptions import ConfigurationError  # noqa: E402
from humanoid_balance.graph import (  # noqa: E402
    LIFECYCLE_ORDER,
    ROBOT_NAMES,
    SIM_WAIST_JOINT_STATES,
    GraphNode,
    replay_graph,
    robot_graph,
    rviz_config,
    sim_graph,
)
from humanoid_balance.launch_graph import LOGGER_NAME, full_name  # noqa: E402
from humanoid_balance.params.files import (  # noqa: E402
    merged_parameters,
    package_parameters,
    read_parameter_file,
)

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


@pytest.fixture
def params_file_log() -> Iterator[_Records]:
    """What the launch logs about a params_file."""
    handler = _Records()
    logger = logging.getLogger("humanoid_balance.params_file")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def write_bag_metadata(path: Path, topics: dict[str, str]) -> Path:
    """A rosbag2 directory's metadata.yaml (only what the launch reads) with ``topics``."""
    path.mkdir(parents=True, exist_ok=True)
    entries = [{"topic_metadata": {"name": name, "type": kind, "serialization_format": "cdr",
                                   "offered_qos_profiles": ""}, "message_count": 10}
               for name, kind in topics.items()]
    (path / "metadata.yaml").write_text(yaml.safe_dump(
        {"rosbag2_bagfile_information": {"version": 5, "storage_identifier": "mcap",
                                         "topics_with_message_count": entries}}))
    return path


SENSOR_TOPICS = {"/joint_states": "sensor_msgs/msg/JointState",
                 "/left_foot/ft": "geometry_msgs/msg/WrenchStamped",
                 "/right_foot/ft": "geometry_msgs/msg/WrenchStamped"}


@pytest.fixture(scope="module")
def bags(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Bag directories (metadata only): ``with_clock`` holds /clock, ``without_clock`` not."""
    root = tmp_path_factory.mktemp("bags")
    return {
        "with_clock": str(write_bag_metadata(root / "sim_bag", {
            **SENSOR_TOPICS, "/clock": "rosgraph_msgs/msg/Clock"})),
        "without_clock": str(write_bag_metadata(root / "robot_bag", SENSOR_TOPICS)),
    }


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
    """What the process of ``action`` would get: its parameter files in order, the parameters
    (the files merged as rclpy merges them) and remappings."""
    command = [_text(part, context) for part in action.cmd]
    # launch_ros keys the overrides by the node's full name when it names the node, else /**
    key = action.node_name if action.is_node_name_fully_specified() else "/**"
    files = []
    remappings = []
    overrides: dict[str, Any] = {}
    for flag, value in itertools.pairwise(command):
        if flag == "--params-file":
            if Path(value).name.startswith("launch_params_"):  # launch_ros wrote the overrides dict
                content = yaml.load(Path(value).read_text(), Loader=_ParameterFileLoader)
                os.unlink(value)
                assert list(content) == [key], content
                overrides = _flatten(content[key]["ros__parameters"])
                files.append("<overrides>")
            else:
                files.append(value)
        elif flag == "-r" and not value.startswith(("__", "LocalVar")):
            source, target = value.split(":=")
            remappings.append((source, target))
    parameters = merged_parameters([read_parameter_file(f) for f in files if f != "<overrides>"],
                                   key if key != "/**" else "/any_node", overrides,
                                   overrides_key=key)
    parameters = {k: list(v) if isinstance(v, tuple) else v for k, v in parameters.items()}
    return {"executable": command[0], "files": files, "parameters": parameters,
            "remappings": remappings}


def _expected(node: GraphNode) -> dict[str, Any]:
    parameters = _flatten(package_parameters(node.name))
    for path in node.parameter_files:
        parameters.update(merged_parameters([read_parameter_file(path)], node.full_name))
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
    "replay": ("replay.launch.py", {"bag": "with_clock", "sensor_type": "fsr",
                                    "robot_state_publisher": "false"},
               replay_graph(sensor_type="fsr")),
}


def _load(case: str, bags: dict[str, str]) -> tuple[Loaded, list[GraphNode]]:
    """A case's launch file loaded (its ``bag`` argument a bag of the ``bags`` fixture)."""
    name, arguments, graph = CASES[case]
    arguments = {k: bags.get(v, v) if k == "bag" else v for k, v in arguments.items()}
    return Loaded(name, **arguments), graph


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_launch_file_starts_the_graph_nodes(case: str, bags: dict[str, str]) -> None:
    """The launch file starts exactly the graph's nodes, by name and namespace, as lifecycle nodes or not."""
    loaded, graph = _load(case, bags)
    nodes = loaded.nodes()
    assert sorted(nodes) == sorted(n.name for n in graph)
    for node in graph:
        action = nodes[node.name]
        assert action.node_name == full_name(node)
        assert isinstance(action, LifecycleNode) == node.spec.lifecycle, node.name


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_node_gets_its_parameter_file_then_the_graph_overrides(case: str,
                                                                    bags: dict[str, str]) -> None:
    """Each process gets the package's parameter file, then the graph's overrides, with their types."""
    loaded, graph = _load(case, bags)
    nodes = loaded.nodes()
    for node in graph:
        started = _started(nodes[node.name], loaded.context)
        assert started["files"] == [str(node.spec.parameter_path()), "<overrides>"], node.name
        assert started["parameters"] == _expected(node)["parameters"], node.name


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_node_gets_the_graph_remappings(case: str, bags: dict[str, str]) -> None:
    """Each process gets the graph's remappings, and no other."""
    loaded, graph = _load(case, bags)
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


def test_replay_starts_only_the_wait_for_the_estimator_with_it(bags: dict[str, str]) -> None:
    """At start the replay runs the estimator and ``wait-for`` its subscriptions, not the player."""
    loaded = Loaded("replay.launch.py", bag=bags["with_clock"], robot_state_publisher="false")
    commands = _commands(loaded, loaded.entities)
    assert len(commands) == 1
    assert commands[0][1:] == ["wait-for", "/joint_states", "/left_foot/ft", "/right_foot/ft",
                               "--node", "/zmp_estimator", "--timeout", "30.0", "--robot-dds"]


@pytest.mark.parametrize(("player", "bag", "command"), [
    ("ros2", "without_clock",
     ["ros2", "bag", "play", "BAG", "--clock", "--rate", "0.5", "--delay", "1.0"]),
    ("ros2", "with_clock", ["ros2", "bag", "play", "BAG", "--rate", "0.5", "--delay", "1.0"]),
    ("humanoid_balance", "with_clock",
     ["replay", "BAG", "--rate", "0.5", "--delay", "1.0", "--robot-dds"]),
    ("humanoid_balance", "without_clock",
     ["replay", "BAG", "--rate", "0.5", "--delay", "1.0", "--robot-dds"]),
])
def test_replay_starts_the_player_when_the_estimator_subscribed(
        player: str, bag: str, command: list[str], bags: dict[str, str]) -> None:
    """wait-for exiting 0 starts the bag player with one /clock: ``ros2 bag play --clock`` only
    for a bag without /clock (a bag's own /clock plays as recorded); ``humanoid-balance
    replay`` chooses by itself (``--clock auto``)."""
    loaded = Loaded("replay.launch.py", bag=bags[bag], rate="0.5", player=player,
                    robot_state_publisher="false")
    commands = _commands(loaded, _exited(loaded, 0))
    expected = [bags[bag] if part == "BAG" else part for part in command]
    assert len(commands) == 1 and commands[0][-len(expected):] == expected
    if player == "ros2":
        assert commands[0] == expected


@pytest.mark.parametrize("bag", ["/nonexistent/bag", "EMPTY"])
def test_replay_refuses_a_bag_it_cannot_read_before_starting_anything(
        bag: str, tmp_path: Path) -> None:
    """A missing bag directory, or one without metadata.yaml, stops the launch with the reason."""
    path = str(tmp_path) if bag == "EMPTY" else bag
    with pytest.raises(ConfigurationError) as info:
        Loaded("replay.launch.py", bag=path, robot_state_publisher="false")
    assert ("is not a directory" if bag != "EMPTY" else "metadata.yaml cannot be read") in \
        str(info.value)


def test_replay_stops_without_playing_when_the_estimator_never_subscribed(
        bags: dict[str, str]) -> None:
    """wait-for timing out shuts the launch down and plays nothing."""
    loaded = Loaded("replay.launch.py", bag=bags["with_clock"], robot_state_publisher="false")
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


# --- params_file ---------------------------------------------------------------------------------

TEAM_FILE = """\
/**/zmp_estimator:
  ros__parameters:
    contact_threshold: 35.0
    sensor_type: fsr
/robot1/arm_balance:
  ros__parameters:
    rate: 250.0
"""


@pytest.mark.parametrize("name", ["bringup.launch.py", "sim.launch.py", "replay.launch.py"])
def test_params_file_goes_to_each_node_after_the_package_file(name: str, tmp_path: Path,
                                                              bags: dict[str, str]) -> None:
    """params_file: each node gets the package's file, the team's, then the graph's overrides;
    the team's value of a parameter the graph does not set arrives."""
    team = tmp_path / "team.yaml"
    team.write_text(TEAM_FILE)
    arguments = {"params_file": str(team), "robot_state_publisher": "false"}
    if name == "replay.launch.py":
        arguments["bag"] = bags["with_clock"]
    loaded = Loaded(name, **arguments)
    started = {n: _started(action, loaded.context) for n, action in loaded.nodes().items()}
    for node_name, process in started.items():
        assert process["files"] == [str(next(n for n in _every_node() if n.name == node_name)
                                        .spec.parameter_path()), str(team), "<overrides>"]
    assert started["zmp_estimator"]["parameters"]["contact_threshold"] == 35.0


def _every_node() -> list[GraphNode]:
    """One node of every kind, for its package file."""
    return robot_graph(identification=True) + sim_graph()[:1]


def test_params_file_keyed_by_namespace_reaches_only_that_namespace(tmp_path: Path) -> None:
    """A /robot1/arm_balance section reaches arm_balance under namespace:=robot1, not without."""
    team = tmp_path / "team.yaml"
    team.write_text(TEAM_FILE)
    for namespace, rate in (("robot1", 250.0), ("", 500.0)):
        loaded = Loaded("bringup.launch.py", params_file=str(team), namespace=namespace,
                        robot_state_publisher="false")
        started = _started(loaded.nodes()["arm_balance"], loaded.context)
        assert started["parameters"]["rate"] == rate, namespace


def test_a_params_file_value_the_launch_overrides_is_a_warning(
        tmp_path: Path, params_file_log: _Records) -> None:
    """sensor_type in the file, sensor_type:=ft (default) on the launch: ft is used, and a
    warning names the file's value and the launch argument."""
    team = tmp_path / "team.yaml"
    team.write_text(TEAM_FILE)
    loaded = Loaded("bringup.launch.py", params_file=str(team), robot_state_publisher="false")
    assert _started(loaded.nodes()["zmp_estimator"], loaded.context)["parameters"][
        "sensor_type"] == "ft"
    warnings = [r.getMessage() for r in params_file_log.records if r.levelno == logging.WARNING]
    assert f"params_file {team} sets sensor_type: 'fsr' for /zmp_estimator; the launch argument " \
        "sensor_type sets it to 'ft', which is used" in warnings
    assert f"params_file {team}: /robot1/arm_balance apply to no node of this launch " \
        "(/zmp_estimator, /arm_balance, /waist_controller): not used" in warnings


@pytest.mark.parametrize(("content", "message"), [
    ("/**/waist_controller:\n  ros__parameters:\n    kp: 13\n",
     "/**/waist_controller: waist_controller: kp: 13 is read as int, the node declares float (it "
     "would refuse to start); write 13.0"),
    ("/**/waist_controller:\n  ros__parameters:\n    current_limt: 5.0\n",
     "/**/waist_controller: waist_controller has no parameter 'current_limt': the node would "
     "ignore it"),
    ("/**/zmp_estimator:\n  ros__parameters:\n    contact_threshold: -1.0\n",
     "/**/zmp_estimator: zmp_estimator: contact_threshold=-1.0: must be > 0 N"),
])
def test_a_params_file_that_would_not_work_stops_the_launch(content: str, message: str,
                                                            tmp_path: Path) -> None:
    """A float written as an integer, a misspelt name, a value out of range: the launch stops
    before any node starts, naming the section and the fix."""
    team = tmp_path / "team.yaml"
    team.write_text(content)
    with pytest.raises(ConfigurationError) as info:
        Loaded("bringup.launch.py", params_file=str(team), robot_state_publisher="false")
    assert str(info.value) == f"params_file {team} would not work:\n  {message}"


@pytest.mark.parametrize(("content", "start"), [
    (None, "parameter file {team!r} cannot be read"),
    ("zmp_estimator: [1, 2]\n", "{team}: zmp_estimator: expected a mapping with ros__parameters"),
    ("/**/zmp_estimatr:\n  ros__parameters:\n    gravity: 1.635\n",
     "params_file {team}: no section applies to a node of this launch"),
])
def test_a_params_file_that_is_no_parameter_file_stops_the_launch(content: str | None, start: str,
                                                                  tmp_path: Path) -> None:
    """A missing file, a YAML that is no parameter file, or one for no node of the launch."""
    team = tmp_path / "team.yaml"
    if content is not None:
        team.write_text(content)
    with pytest.raises(ConfigurationError) as info:
        Loaded("sim.launch.py", params_file=str(team), robot_state_publisher="false")
    assert str(info.value).startswith(start.format(team=str(team)))


# --- namespaces ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["bringup.launch.py", "sim.launch.py"])
def test_a_namespace_moves_every_topic_of_every_node_into_it(name: str) -> None:
    """namespace:=robot1: each node runs in /robot1, and each of the package's absolute names
    (topics, services, /clock, /tf) is remapped to /robot1/<name>; no remapping leaves it."""
    loaded = Loaded(name, namespace="robot1", robot_state_publisher="false")
    for node_name, action in loaded.nodes().items():
        assert action.node_name == f"/robot1/{node_name}"
        remappings = _started(action, loaded.context)["remappings"]
        assert all(target.startswith("/robot1/") for _, target in remappings), node_name
        assert set(ROBOT_NAMES) <= {source for source, _ in remappings}, node_name


def test_without_a_namespace_the_topics_stay_where_they_are() -> None:
    """No namespace: no node gets a remapping the graph does not need."""
    loaded = Loaded("sim.launch.py", robot_state_publisher="false")
    remapped = {n: _started(a, loaded.context)["remappings"] for n, a in loaded.nodes().items()}
    assert remapped == {"mujoco_sim": [], "zmp_estimator": [], "arm_balance": [],
                        "waist_controller": [("/joint_states", SIM_WAIST_JOINT_STATES)]}


@pytest.mark.parametrize("name", ["bringup.launch.py", "sim.launch.py"])
def test_robot_state_publisher_and_rviz_follow_the_namespace(name: str) -> None:
    """namespace:=robot1 rviz:=true: robot_state_publisher runs in /robot1 (robot_description
    /robot1/robot_description) reading /robot1/joint_states; it and rviz have TF and /clock
    under /robot1; rviz's file shows /robot1's topics."""
    loaded = Loaded(name, namespace="robot1", rviz="true")
    publisher = next(a for a in loaded.of_type(Node) if a.node_package == "robot_state_publisher")
    viewer = next(a for a in loaded.of_type(Node) if a.node_package == "rviz2")
    for action in (publisher, viewer):
        action._perform_substitutions(loaded.context)
    assert publisher.node_name.startswith("/robot1/")
    moved = {("/tf", "/robot1/tf"), ("/tf_static", "/robot1/tf_static"), ("/clock", "/robot1/clock")}
    assert set(_started(publisher, loaded.context)["remappings"]) == \
        moved | {("joint_states", "/robot1/joint_states")}
    assert set(_started(viewer, loaded.context)["remappings"]) == moved
    command = [_text(part, loaded.context) for part in viewer.cmd]
    config = Path(command[command.index("-d") + 1])
    try:
        assert config.read_text() == rviz_config("robot1")
    finally:
        config.unlink()
    topics = [line.split("Value:")[1].strip() for line in rviz_config("robot1").splitlines()
              if "Value: /" in line]
    assert "/robot1/robot_description" in topics and all(t.startswith("/robot1/") for t in topics)


def test_rviz_without_a_namespace_opens_the_package_file() -> None:
    """No namespace: rviz opens config/balance.rviz itself, with no remapping."""
    loaded = Loaded("sim.launch.py", rviz="true", robot_state_publisher="false")
    viewer = loaded.of_type(Node)[-1]
    viewer._perform_substitutions(loaded.context)
    command = [_text(part, loaded.context) for part in viewer.cmd]
    assert command[command.index("-d") + 1] == str(REPO / "config" / "balance.rviz")
    assert _started(viewer, loaded.context)["remappings"] == []


# --- what the launch files import ----------------------------------------------------------------

HEAVY = ("pinocchio", "mujoco", "numba")


@pytest.mark.parametrize("name", ["bringup.launch.py", "sim.launch.py", "replay.launch.py"])
def test_show_args_imports_no_physics(name: str) -> None:
    """``ros2 launch humanoid_balance NAME --show-args`` (importing the launch file and calling
    generate_launch_description(), in a fresh process) imports neither pinocchio, MuJoCo nor
    numba: listing the arguments should not load a physics engine."""
    script = f"""
import sys
try:
    from ros2launch.api import print_arguments_of_launch_file  # what --show-args runs
except ImportError:
    from launch.launch_description_sources import get_launch_description_from_python_launch_file
    def print_arguments_of_launch_file(*, launch_file_path):
        description = get_launch_description_from_python_launch_file(launch_file_path)
        print([a.name for a in description.get_launch_arguments()])
print_arguments_of_launch_file(launch_file_path={str(REPO / 'launch' / name)!r})
print('HEAVY', sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r}))
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120, cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "params_file" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "HEAVY []", result.stdout[-2000:]
