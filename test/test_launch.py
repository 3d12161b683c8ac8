"""What the launch files start exists: console scripts, parameter files, declared parameter names.

Always runs (no ``launch`` needed): the launch files build their nodes from
``humanoid_balance.graph`` (``robot_graph``, ``sim_graph``, ``replay_graph``),
so every graph they can build is checked here, against ``setup.py`` and
against the parameters each node class really declares (instantiated in
process). ``test_launch_files.py`` loads the launch files themselves.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path
from typing import Any

import pytest
import yaml

from humanoid_balance.cli import COMMANDS
from humanoid_balance.graph import (
    NODES,
    GraphNode,
    replay_graph,
    robot_graph,
    sim_graph,
    zmp_estimator_inputs,
)
from humanoid_balance.params.files import flatten, node_key, package_parameters

REPO = Path(__file__).resolve().parent.parent
LAUNCH_FILES = sorted((REPO / "launch").glob("*.launch.py"))


def _console_scripts() -> dict[str, str]:
    tree = ast.parse((REPO / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "entry_points":
            lines = ast.literal_eval(node.value)["console_scripts"]
            return {k.strip(): v.strip() for k, v in (line.split("=") for line in lines)}
    raise AssertionError("setup.py has no entry_points")


def _launch_graphs() -> dict[str, list[GraphNode]]:
    """Every graph the launch files build, with each argument off its default once."""
    return {
        "bringup default": robot_graph(),
        "bringup all": robot_graph(sensor_type="fsr", job_arm="left", can_interface="virtual",
                                   can_channel="can1", urdf_path="/robot/humanoid.urdf",
                                   namespace="robot1", use_sim_time=True, identification=True),
        "bringup no waist": robot_graph(waist=False),
        "sim default": sim_graph(),
        "sim all": sim_graph(sensor_type="fsr", job_arm="left", real_time_factor=0.5,
                             sensor_noise=0.0, lock_step=True, namespace="robot1"),
        "sim no rmc, no waist": sim_graph(rmc=False, waist=False),
        "replay ft": replay_graph(),
        "replay fsr": replay_graph(sensor_type="fsr"),
    }


def _node_class(name: str) -> type:
    """The rclpy node class behind node ``name``'s console script."""
    from rclpy.node import Node

    module = importlib.import_module(_console_scripts()[NODES[name].executable].split(":")[0])
    classes = [c for _, c in inspect.getmembers(module, inspect.isclass)
               if issubclass(c, Node) and c.__module__ == module.__name__]
    assert len(classes) == 1, f"{module.__name__}: node classes {classes}"
    return classes[0]


_DECLARED: dict[str, frozenset[str]] = {}


def _declared(name: str, context: Any) -> frozenset[str]:
    """The parameter names node ``name`` declares (built once in ``context``, then cached)."""
    if name not in _DECLARED:
        node = _node_class(name)(context=context)
        try:
            _DECLARED[name] = frozenset(node.list_parameters([], 0).names)
        finally:
            node.destroy_node()
    return _DECLARED[name]


def undeclared(names: list[str], declared: frozenset[str]) -> list[str]:
    """The names in ``names`` that are not in ``declared``."""
    return [n for n in names if n not in declared]


@pytest.mark.parametrize("graph", sorted(_launch_graphs()))
def test_every_executable_is_a_console_script(graph: str) -> None:
    """Each node of each launch graph starts a console script that setup.py installs."""
    scripts = _console_scripts()
    for node in _launch_graphs()[graph]:
        assert node.spec.executable in scripts, (graph, node.name)


@pytest.mark.parametrize("graph", sorted(_launch_graphs()))
def test_every_parameter_file_exists_with_the_node_section(graph: str) -> None:
    """Each node's parameter file exists in config/ and holds ``/**/<node name>: ros__parameters``."""
    for node in _launch_graphs()[graph]:
        path = REPO / "config" / node.spec.parameter_file
        content = yaml.safe_load(path.read_text())
        assert isinstance(content[node_key(node.name)]["ros__parameters"], dict), (graph, node.name)


@pytest.mark.parametrize("name", sorted(NODES))
def test_every_override_of_every_launch_graph_is_declared(name: str, rclpy_context: Any) -> None:
    """Each parameter a launch graph sets on a node is one the node declares."""
    overrides = sorted({key for graph in _launch_graphs().values() for node in graph
                        if node.name == name for key in node.parameters})
    assert undeclared(overrides, _declared(name, rclpy_context)) == []


@pytest.mark.parametrize("name", sorted(NODES))
def test_every_parameter_file_entry_is_declared(name: str, rclpy_context: Any) -> None:
    """Each parameter in a node's config/*.yaml section is declared by the node (no silent typo)."""
    names = sorted(flatten(package_parameters(name, REPO / "config" / NODES[name].parameter_file)))
    assert undeclared(names, _declared(name, rclpy_context)) == []


def test_a_misspelt_override_is_caught(rclpy_context: Any) -> None:
    """The declaration check reports a misspelt name (``can.chanel``) and passes the right one."""
    declared = _declared("waist_controller", rclpy_context)
    assert undeclared(["can.channel", "can.chanel"], declared) == ["can.chanel"]


def test_the_commands_the_replay_launch_runs_exist() -> None:
    """replay.launch.py's ``humanoid-balance wait-for`` and ``replay`` are CLI sub-commands."""
    assert "humanoid-balance" in _console_scripts()
    assert {"wait-for", "replay"} <= set(COMMANDS)


@pytest.mark.parametrize("sensor_type", ["ft", "fsr"])
def test_the_replay_waits_for_what_the_estimator_subscribes(sensor_type: str) -> None:
    """The topics the replay waits for are the estimator's inputs in that sensor mode."""
    assert zmp_estimator_inputs(sensor_type) == [
        "/joint_states", f"/left_foot/{sensor_type}", f"/right_foot/{sensor_type}"]


def test_rviz_config_and_urdf_the_launch_files_open_exist() -> None:
    """config/balance.rviz and urdf/humanoid.urdf, opened by the launch files, exist."""
    assert (REPO / "config" / "balance.rviz").is_file()
    assert (REPO / "urdf" / "humanoid.urdf").is_file()


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_files_build_no_node_nor_parameter_file_themselves(path: Path) -> None:
    """Nodes come from graph.py: a launch file creates no Node action and names no config/*.yaml."""
    tree = ast.parse(path.read_text())
    calls = {getattr(n.func, "id", getattr(n.func, "attr", "")) for n in ast.walk(tree)
             if isinstance(n, ast.Call)}
    assert not calls & {"Node", "LifecycleNode"}, path.name
    yaml_names = [n.value for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and isinstance(n.value, str)
                  and n.value.endswith(".yaml")]
    assert yaml_names == [], path.name


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_files_leave_dds_to_the_user(path: Path) -> None:
    """No launch file sets a DDS profile, RMW or domain: on a robot that is the user's choice."""
    text = path.read_text()
    for word in ("FASTDDS", "fastdds_loopback", "RMW_IMPLEMENTATION", "ROS_DOMAIN_ID",
                 "SetEnvironmentVariable"):
        assert word not in text, (path.name, word)
