"""The node graph description: executables, parameter files, arguments as a process receives them."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
import yaml

from humanoid_balance.exceptions import ConfigurationError
from humanoid_balance.graph import (
    LIFECYCLE_ORDER,
    NODES,
    SIM_WAIST_JOINT_STATES,
    GraphNode,
    lifecycle_nodes,
    robot_graph,
    ros_arguments,
    sim_graph,
)

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
    assert "ros__parameters" in content[spec.name]


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
