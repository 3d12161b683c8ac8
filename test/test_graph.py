"""The node graph description: executables, parameter files, arguments as a process receives them."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from humanoid_balance.exceptions import ConfigurationError
from humanoid_balance.graph import (
    LIFECYCLE_ORDER,
    LOCK_STEP_PHYSICS,
    NODES,
    ROBOT_NAMES,
    SIM_WAIST_JOINT_STATES,
    GraphNode,
    bag_player_command,
    lifecycle_nodes,
    namespace_prefix,
    robot_graph,
    ros_arguments,
    rviz_config,
    sim_graph,
)
from humanoid_balance.params.files import node_key

REPO = Path(__file__).resolve().parent.parent


def _console_scripts() -> set[str]:
    tree = ast.parse((REPO / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "entry_points":
            scripts = ast.literal_eval(node.value)["console_scripts"]
            return {line.split("=")[0].strip() for line in scripts}
    raise AssertionError("setup.py has no entry_points")


def _all_graphs() -> list[list[GraphNode]]:
    return [robot_graph(), robot_graph(identification=True, namespace="robot1"),
            sim_graph(), sim_graph(lock_step=True, rmc=False), sim_graph(waist=False)]


@pytest.mark.parametrize("name", sorted(NODES))
def test_every_node_has_a_console_script_and_a_parameter_file_section(name: str) -> None:
    """Each node's executable is a console script and its parameter file has its section."""
    spec = NODES[name]
    assert spec.executable in _console_scripts()
    content = yaml.safe_load(spec.parameter_path().read_text())
    assert "ros__parameters" in content[node_key(spec.name)]


def test_motor_commanding_nodes_are_lifecycle_nodes_in_the_order() -> None:
    """Every node that commands motors is a lifecycle node and has its place in LIFECYCLE_ORDER."""
    for spec in NODES.values():
        if spec.commands_motors:
            assert spec.lifecycle and spec.name in LIFECYCLE_ORDER, spec.name
    order = [n.name for n in lifecycle_nodes(robot_graph(identification=True))]
    assert order == ["arm_balance", "waist_controller", "identification_executor"]


def test_sim_graph_puts_the_waist_on_its_own_joint_state_topic() -> None:
    """In simulation the waist publishes on /waist/joint_states, which mujoco_sim follows."""
    nodes = {n.name: n for n in sim_graph()}
    waist = nodes["waist_controller"]
    assert waist.parameters["simulated_drives"] is True
    assert ("/joint_states", SIM_WAIST_JOINT_STATES) in waist.remappings
    assert SIM_WAIST_JOINT_STATES in nodes["mujoco_sim"].parameters["command_topics"]
    assert all(n.parameters["use_sim_time"] for n in nodes.values() if n.name != "mujoco_sim")


def test_lock_step_waits_for_the_arm_command_only_when_the_arm_balance_runs() -> None:
    """The arm command is a lock-step topic with RMC; without it only the extra topics are."""
    extra = "/demo/job:sensor_msgs/msg/JointState"
    with_rmc = sim_graph(lock_step=True, extra_lock_step_topics=[extra])[0].parameters
    assert with_rmc["lock_step_topics"] == [
        "/arm_balance/command:sensor_msgs/msg/JointState", extra]
    without = sim_graph(lock_step=True, rmc=False, extra_lock_step_topics=[extra])
    assert without[0].parameters["lock_step_topics"] == [extra]
    assert "arm_balance" not in [n.name for n in without]


def test_only_a_free_running_simulation_delays_the_commands_to_a_fixed_latency() -> None:
    """Free-running, mujoco_sim's commands act FREE_RUNNING_COMMAND_LATENCY_S after their stamps;
    in lock-step (each period's command acts from its stamp) the parameter stays at its 0."""
    from humanoid_balance.graph import FREE_RUNNING_COMMAND_LATENCY_S
    from humanoid_balance.params import spec_for

    free = sim_graph()[0].parameters
    assert free["command_latency"] == FREE_RUNNING_COMMAND_LATENCY_S > 0
    assert spec_for("mujoco_sim").cross_check({**spec_for("mujoco_sim").defaults(), **free}) is None
    assert "command_latency" not in sim_graph(lock_step=True)[0].parameters


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"sensor_type": "imu"}, "sensor_type='imu'; choose one of ['ft', 'fsr']"),
    ({"job_arm": "middle"}, "job_arm='middle'; choose one of ['right', 'left']"),
])
def test_invalid_choices_are_refused_with_the_choices(kwargs: dict[str, Any], message: str) -> None:
    """An unknown sensor type or arm is refused, naming the choices."""
    with pytest.raises(ConfigurationError) as info:
        robot_graph(**kwargs)
    assert str(info.value) == message


def test_ros_arguments_reach_a_node_with_their_types(rclpy_context: Any) -> None:
    """Every override of every graph, passed as --ros-args, arrives with its value and type."""
    from rclpy.node import Node

    for graph in _all_graphs():
        for graph_node in graph:
            args = ros_arguments(graph_node)
            node = Node("probe", context=rclpy_context, cli_args=args,
                        automatically_declare_parameters_from_overrides=True)
            try:
                assert node.get_name() == graph_node.name
                assert node.get_namespace() == "/" + graph_node.namespace.strip("/")
                for key, value in graph_node.parameters.items():
                    got = node.get_parameter(key).value
                    if isinstance(value, list):
                        assert list(got) == value, key
                    else:
                        assert got == value and type(got) is type(value), key
            finally:
                node.destroy_node()


def test_the_lock_step_physics_is_the_strike_experiments() -> None:
    """graph.LOCK_STEP_PHYSICS (written out, so that graph imports no pinocchio) equals
    experiments.strike.SIM_PHYSICS, the physics the demo's figures were measured on."""
    from humanoid_balance.experiments.strike import SIM_PHYSICS

    assert dict(LOCK_STEP_PHYSICS) == dict(SIM_PHYSICS)
    sim = sim_graph(lock_step=True)[0].parameters
    assert (sim["integrator"], sim["timestep"]) == ("rk4", 0.00025)


def test_importing_the_graph_imports_no_physics() -> None:
    """``import humanoid_balance.graph`` in a fresh process (as a launch file does, without
    launch) leaves pinocchio, MuJoCo and numba out of sys.modules; building every graph too."""
    script = """
import sys
import humanoid_balance.graph as g
g.robot_graph(identification=True, namespace="robot1"); g.sim_graph(lock_step=True)
g.replay_graph(); g.rviz_config("robot1")
print(sorted({m.split(".")[0] for m in sys.modules} & {"pinocchio", "mujoco", "numba"}))
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120, cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "[]", result.stdout


# --- namespaces ----------------------------------------------------------------------------------


#: an absolute ROS topic or service name (``/zmp``, ``/left_foot/ft``)
_ROS_NAME = re.compile(r"^/[A-Za-z_]\w*(/[A-Za-z_]\w*)*$")


def _node_modules() -> list[Path]:
    """The nodes' sources and the package modules they import (where the names they publish,
    subscribe and serve on may be written: a loop's or a message table's module)."""
    nodes = sorted((REPO / "humanoid_balance" / "nodes").glob("*.py"))
    modules = set(nodes)
    for path in nodes:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                    and node.module.startswith("humanoid_balance."):
                base = REPO / node.module.replace(".", "/")
                modules |= {p for p in (base.with_suffix(".py"), base / "__init__.py") if p.exists()}
    return sorted(modules)


def _node_source_names() -> set[str]:
    """Every absolute topic or service name in the nodes' sources and the modules they import:
    string literals other than docstrings, and f-strings with one placeholder (``{side}``)
    expanded to both sides."""
    names: set[str] = set()
    for path in _node_modules():
        tree = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                           ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and id(node) not in docstrings:
                names.add(node.value)
            elif isinstance(node, ast.JoinedStr) and sum(
                    not isinstance(v, ast.Constant) for v in node.values) == 1:
                text = "".join(v.value if isinstance(v, ast.Constant) else "{}"
                               for v in node.values)
                names |= {text.replace("{}", side) for side in ("left", "right")}
    return {n for n in names if _ROS_NAME.match(n)}


def test_every_absolute_name_of_the_nodes_moves_with_the_namespace() -> None:
    """ROBOT_NAMES holds every absolute topic and service name of the nodes' sources and every
    absolute default of the specs' topic parameters: none stays outside a namespace."""
    from humanoid_balance.command_interface import DEFAULT_TOPICS
    from humanoid_balance.params import SPEC_NODES, spec_for

    defaults = set(DEFAULT_TOPICS.values())
    for node in SPEC_NODES:
        for param in spec_for(node):
            if param.name.endswith(("topic", "topics")):
                values = param.default if param.is_array else (param.default,)
                defaults |= {v.split(":")[0] for v in values if v.startswith("/")}
    found = _node_source_names()
    assert len(found) > 30  # the scan finds the nodes' names at all
    assert sorted((found | defaults) - set(ROBOT_NAMES)) == []


def test_a_namespaced_graph_remaps_every_name_into_the_namespace() -> None:
    """namespace='robot1': every node gets every ROBOT_NAMES remapped to /robot1/<name>, and the
    graph's own remappings land in the namespace (the waist's joint states, ros2_control's)."""
    for graph in (robot_graph(namespace="robot1", ros2_control=True, identification=True),
                  sim_graph(namespace="robot1")):
        for node in graph:
            rules = dict(node.remappings)
            assert len(rules) == len(node.remappings), node.name  # one rule per name
            assert all(target.startswith("/robot1/") for target in rules.values()), node.name
            assert set(ROBOT_NAMES) <= set(rules), node.name
    waist = {n.name: n for n in sim_graph(namespace="robot1")}["waist_controller"]
    assert dict(waist.remappings)["/joint_states"] == "/robot1" + SIM_WAIST_JOINT_STATES
    zmp = robot_graph(namespace="robot1", ros2_control=True)[0]
    assert dict(zmp.remappings)["/left_foot/ft"] == "/robot1/left_foot_ft_broadcaster/wrench"


def test_a_topic_named_in_a_parameter_moves_with_the_namespace() -> None:
    """A lock-step topic the graph is given (the demo's job input) is remapped too."""
    sim = sim_graph(namespace="robot1", lock_step=True,
                    extra_lock_step_topics=["/demo/job:sensor_msgs/msg/JointState"])[0]
    assert ("/demo/job", "/robot1/demo/job") in sim.remappings


def test_without_a_namespace_the_graph_keeps_its_own_remappings_only() -> None:
    """No namespace: the remappings are the graph's own (none but the simulated waist's)."""
    assert [n.remappings for n in robot_graph()] == [(), (), ()]
    assert {n.name: n.remappings for n in sim_graph()}["waist_controller"] == (
        ("/joint_states", SIM_WAIST_JOINT_STATES),)


@pytest.mark.parametrize(("namespace", "prefix"), [
    ("", ""), ("robot1", "/robot1"), ("/robot1/", "/robot1"), ("team_a/robot1", "/team_a/robot1")])
def test_namespace_prefix(namespace: str, prefix: str) -> None:
    """A namespace in any of the spellings ros2 launch takes is one prefix."""
    assert namespace_prefix(namespace) == prefix


def test_an_invalid_namespace_is_refused_naming_the_token() -> None:
    """A namespace rcl would refuse at the node's start is refused when the graph is built."""
    with pytest.raises(ConfigurationError) as info:
        sim_graph(namespace="robot-1")
    assert str(info.value) == (
        "namespace='robot-1': 'robot-1' is not a ROS name token; use letters, digits and _ (not "
        "starting with a digit), tokens separated by /, e.g. robot1 or team_a/robot1")


def test_ros_arguments_pass_the_team_file_after_the_package_file(tmp_path: Path) -> None:
    """A node's team file (GraphNode.parameter_files) follows the package's, before the overrides."""
    from dataclasses import replace

    node = replace(robot_graph(namespace="robot1")[0], parameter_files=(str(tmp_path / "t.yaml"),))
    args = ros_arguments(node)
    files = [args[i + 1] for i, a in enumerate(args) if a == "--params-file"]
    assert files == [str(node.spec.parameter_path()), str(tmp_path / "t.yaml")]
    assert args.index("--params-file") < args.index("-p")
    assert args[3:5] == ["-r", "__ns:=/robot1"]


# --- rviz ----------------------------------------------------------------------------------------


def _display_topics(text: str) -> list[str]:
    def walk(tree: Any) -> list[str]:
        if isinstance(tree, dict):
            found = []
            for key, value in tree.items():
                if key in ("Topic", "Description Topic") and isinstance(value, dict):
                    found.append(value["Value"])
                else:
                    found += walk(value)
            return found
        if isinstance(tree, list):
            return [t for item in tree for t in walk(item)]
        return []

    return walk(yaml.safe_load(text))


def test_the_rviz_config_moves_every_display_into_the_namespace() -> None:
    """rviz_config('robot1'): each display reads /robot1/<its topic> (/robot1/robot_description
    included); everything else in the file is unchanged."""
    original = (REPO / "config" / "balance.rviz").read_text()
    moved = rviz_config("robot1")
    topics = _display_topics(original)
    assert "/robot_description" in topics and "/zmp/markers" in topics
    assert _display_topics(moved) == ["/robot1" + t for t in topics]
    unmoved = re.sub(r"Value: /robot1/", "Value: /", moved)
    assert yaml.safe_load(unmoved) == yaml.safe_load(original)
    assert rviz_config("") == original


def test_every_namespaced_rviz_topic_is_one_the_namespaced_graph_publishes() -> None:
    """Each display topic of rviz_config('robot1') is where a node of the namespaced sim graph
    (or robot_state_publisher in the namespace) publishes it."""
    remapped = {target for node in sim_graph(namespace="robot1") for _, target in node.remappings}
    for topic in _display_topics(rviz_config("robot1")):
        assert topic in remapped | {"/robot1/robot_description"}, topic


# --- the replay's player -------------------------------------------------------------------------


def _bag(path: Path, topics: list[str]) -> Path:
    path.mkdir()
    entries = [{"topic_metadata": {"name": t, "type": "std_msgs/msg/Empty",
                                   "serialization_format": "cdr"}, "message_count": 1}
               for t in topics]
    (path / "metadata.yaml").write_text(yaml.safe_dump({"rosbag2_bagfile_information": {
        "version": 5, "topics_with_message_count": entries}}))
    return path


def test_ros2_bag_play_makes_a_clock_only_for_a_bag_without_one(tmp_path: Path) -> None:
    """ros2 bag play gets --clock for a bag without /clock; a bag with /clock plays its own."""
    without = _bag(tmp_path / "robot", ["/left_foot/ft"])
    with_clock = _bag(tmp_path / "sim", ["/left_foot/ft", "/clock"])
    assert bag_player_command("ros2", without, "0.5", "1") == [
        "ros2", "bag", "play", str(without), "--clock", "--rate", "0.5", "--delay", "1.0"]
    assert bag_player_command("ros2", with_clock, 2, 0) == [
        "ros2", "bag", "play", str(with_clock), "--rate", "2.0", "--delay", "0.0"]
    assert bag_player_command("humanoid_balance", with_clock) == [
        "replay", str(with_clock), "--rate", "1.0", "--delay", "1.0", "--robot-dds"]


@pytest.mark.parametrize(("args", "message"), [
    (("vlc", "BAG"), "player='vlc'; choose one of ['ros2', 'humanoid_balance']"),
    (("ros2", "BAG", "fast"), "rate='fast'; expected a number"),
    (("ros2", "BAG", "0"), "rate='0'; expected a number >= 1e-09"),
    (("ros2", "BAG", "1", "-1"), "delay='-1'; expected a number >= 0"),
])
def test_bad_player_arguments_are_refused(args: tuple[str, ...], message: str,
                                          tmp_path: Path) -> None:
    """An unknown player, a rate that is no positive number, a negative delay: the reason."""
    bag = str(_bag(tmp_path / "bag", ["/clock"]))
    with pytest.raises(ConfigurationError) as info:
        bag_player_command(*(bag if a == "BAG" else a for a in args))
    assert str(info.value) == message

