"""The node table of humanoid_balance: its executables, and a graph node as its process's arguments.

- :data:`NODES`: every executable of the package (:class:`NodeSpec`): its node
  name, console script, parameter file, whether it is a lifecycle node and
  whether it commands motors; :data:`LIFECYCLE_ORDER`, the order lifecycle nodes
  come up in.
- :class:`GraphNode`: a spec with the parameter overrides, remappings and
  namespace of one graph (the graphs themselves are built in
  :mod:`humanoid_balance.graph`).
- :func:`ros_arguments` / :func:`command_line`: a graph node as the
  ``--ros-args`` of its process, which is what ``ros2 run`` and ``ros2 launch``
  pass too.
- Namespaces: the nodes' topic and service names are absolute (``/zmp``); under
  a namespace every one of :data:`ROBOT_NAMES` is remapped to
  ``/<namespace><name>`` (:func:`namespace_remappings`), so that two robots on one
  domain share no topic. :func:`external_remappings` does the same for rviz and
  robot_state_publisher.

No rclpy here, nor pinocchio, MuJoCo or numba (as :mod:`humanoid_balance.graph`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from humanoid_balance.exceptions import ConfigurationError
from humanoid_balance.resources import config_path

PACKAGE = "humanoid_balance"


@dataclass(frozen=True)
class NodeSpec:
    """One executable of the package.

    Attributes:
        name: the node's name (``/name`` in the graph).
        executable: its console script (``ros2 run humanoid_balance <executable>``).
        parameter_file: its file in ``config/`` (``ros__parameters`` under ``/**/name``: the
            node's defaults in any namespace).
        lifecycle: a managed node: it commands nothing until configured and activated.
        commands_motors: it sends commands to the robot's motors.
        description: one line for tables and ``--help``.
    """

    name: str
    executable: str
    parameter_file: str
    lifecycle: bool
    commands_motors: bool
    description: str

    def parameter_path(self) -> Path:
        """The installed parameter file."""
        return config_path(self.parameter_file)


#: every executable of the package, by node name
NODES: dict[str, NodeSpec] = {spec.name: spec for spec in (
    NodeSpec("mujoco_sim", "mujoco_sim", "sim.yaml", lifecycle=False, commands_motors=False,
             description="MuJoCo simulation of the seed robots behind the robot's topics"),
    NodeSpec("zmp_estimator", "zmp_estimator", "zmp.yaml", lifecycle=False,
             commands_motors=False,
             description="ZMP / CoP from the foot F/T sensors or FSRs, support polygon, margin"),
    NodeSpec("arm_balance", "arm_balance", "arm_balance.yaml", lifecycle=True,
             commands_motors=True,
             description="resolved momentum control of the two arms (seeds 000, 002)"),
    NodeSpec("waist_controller", "waist_controller", "waist.yaml", lifecycle=True,
             commands_motors=True,
             description="differential waist over CAN: RMRC outer loop, three-loop servo (seed 003)"),
    NodeSpec("identification_executor", "identification_executor", "identification.yaml",
             lifecycle=True, commands_motors=True,
             description="gravity-parameter identification sweeps of an arm (seed 004)"),
)}

#: lifecycle nodes are configured, then activated, in this order (and deactivated in reverse):
#: the arm balance before the waist, so that the arms hold the momentum before the torso moves
LIFECYCLE_ORDER = ("arm_balance", "waist_controller", "identification_executor")

#: every absolute topic and service name the package's nodes use (their sources, their
#: parameters' default topics, and the topics the graphs remap to). Under a namespace each is
#: remapped to ``/<namespace><name>`` (:func:`namespace_remappings`): the nodes name them
#: absolute, and a remapping is how a launch moves them without touching the nodes.
#: test/test_graph.py checks that the nodes' sources use no other; ``/rosout`` and
#: ``/parameter_events`` stay shared, as in any ROS graph
ROBOT_NAMES: tuple[str, ...] = (
    # time and TF
    "/clock", "/tf", "/tf_static", "/diagnostics",
    # the robot's inputs
    "/joint_states", "/left_foot/ft", "/right_foot/ft", "/left_foot/fsr", "/right_foot/fsr",
    "/waist/inclinometer", "/base_pose",
    # zmp_estimator
    "/zmp", "/left_foot/zmp", "/right_foot/zmp", "/support_polygon", "/zmp/stability_margin",
    "/zmp/markers",
    # arm_balance
    "/arm_balance/command", "/arm_balance/momentum", "/arm_balance/model_zmp",
    "/arm_balance/job_twist", "/arm_balance/job_joint_velocities", "/arm_balance/enable",
    # waist_controller
    "/waist/joint_states", "/waist/tracking_error", "/waist/motor_states", "/waist/reference",
    "/waist/command", "/waist/enable", "/waist/stop", "/waist/sim/fault",
    # identification_executor
    "/identification/command", "/identification/parameters", "/identification/start",
    "/identification/cancel",
    # mujoco_sim
    "/joint_commands", "/sim/cop", "/sim/com", "/sim/base_pose", "/sim/fault",
    # ros2_control's controllers (command_interface, graph.ROS2_CONTROL_INPUTS)
    "/joint_trajectory_controller/joint_trajectory", "/forward_position_controller/commands",
    "/left_foot_ft_broadcaster/wrench", "/right_foot_ft_broadcaster/wrench",
    "/waist_imu_broadcaster/imu",
)
#: parameters whose values name topics (``lock_step_topics``: ``topic:package/msg/Type``):
#: their absolute names are remapped under a namespace too
TOPIC_PARAMETERS = ("command_topics", "lock_step_topics", "command_topic", "base_pose_topic")


@dataclass(frozen=True)
class GraphNode:
    """A node of one graph: its spec, parameter overrides, remappings, namespace.

    Its process gets the package's parameter file, then ``parameter_files`` (a team's,
    :func:`~humanoid_balance.graph.apply_parameter_file`), then ``parameters`` (later ones win).
    """

    spec: NodeSpec
    parameters: Mapping[str, Any] = field(default_factory=dict)
    remappings: tuple[tuple[str, str], ...] = ()
    namespace: str = ""
    parameter_files: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The node's name."""
        return self.spec.name

    @property
    def full_name(self) -> str:
        """``/namespace/name``, as ``ros2 lifecycle``, ``ros2 param`` and parameter files name it."""
        return f"{namespace_prefix(self.namespace)}/{self.name}"

    def with_parameters(self, **parameters: Any) -> GraphNode:
        """The same node with more parameter overrides (later ones win)."""
        return replace(self, parameters={**self.parameters, **parameters})


_NAMESPACE_TOKEN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def namespace_prefix(namespace: str) -> str:
    """``robot1`` (or ``/robot1/``) as ``/robot1``; empty for no namespace.

    Raises:
        ConfigurationError: not a ROS namespace (tokens of letters, digits and ``_``, not
            starting with a digit, separated by ``/``).
    """
    tokens = namespace.strip("/").split("/") if namespace.strip("/") else []
    bad = [t for t in tokens if not _NAMESPACE_TOKEN.match(t)]
    if bad:
        raise ConfigurationError(
            f"namespace={namespace!r}: {bad[0]!r} is not a ROS name token; use letters, digits and "
            "_ (not starting with a digit), tokens separated by /, e.g. robot1 or team_a/robot1")
    return "".join(f"/{t}" for t in tokens)


def _topic_values(parameters: Mapping[str, Any]) -> list[str]:
    """The absolute topic names in the graph's topic-naming overrides (:data:`TOPIC_PARAMETERS`)."""
    names = []
    for key in TOPIC_PARAMETERS:
        value = parameters.get(key)
        for item in (value if isinstance(value, (list, tuple)) else [value]):
            if isinstance(item, str) and item.startswith("/"):
                names.append(item.split(":", 1)[0])
    return names


def namespace_remappings(remappings: Sequence[tuple[str, str]], namespace: str,
                         parameters: Mapping[str, Any] | None = None) -> tuple[tuple[str, str], ...]:
    """A node's remappings under ``namespace``: each absolute target moved into it, then every
    other name of :data:`ROBOT_NAMES` (and the node's topic parameters) remapped to
    ``/<namespace><name>``. No namespace: ``remappings`` as they are.

    rcl applies the first rule that matches a name, so a graph's own remapping
    (``/joint_states`` -> ``/waist/joint_states``) becomes ``/joint_states`` ->
    ``/robot1/waist/joint_states``.
    """
    prefix = namespace_prefix(namespace)
    if not prefix:
        return tuple(remappings)
    moved = [(source, prefix + target if target.startswith("/") else target)
             for source, target in remappings]
    taken = {source for source, _ in moved}
    for name in (*ROBOT_NAMES, *_topic_values(parameters or {})):
        if name not in taken:
            taken.add(name)
            moved.append((name, prefix + name))
    return tuple(moved)



def external_remappings(namespace: str, joint_states: bool = True) -> list[tuple[str, str]]:
    """Remappings of a node outside the package (robot_state_publisher, rviz2) for the robot in
    ``namespace``: TF and ``/clock`` as the graph's nodes have them, and (``joint_states``) its
    relative ``joint_states`` input to where they publish."""
    prefix = namespace_prefix(namespace)
    moved = [(name, prefix + name) for name in ("/tf", "/tf_static", "/clock") if prefix]
    return [("joint_states", f"{prefix}/joint_states"), *moved] if joint_states else moved


def lifecycle_nodes(nodes: Sequence[GraphNode]) -> list[GraphNode]:
    """The lifecycle nodes of ``nodes`` in :data:`LIFECYCLE_ORDER`."""
    managed = {n.name: n for n in nodes if n.spec.lifecycle}
    return [managed[name] for name in LIFECYCLE_ORDER if name in managed]


def _parameter_value(value: Any) -> str:
    """A parameter value as ``--ros-args -p name:=value`` takes it (YAML)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_parameter_value(v) for v in value) + "]"
    return str(value)


def ros_arguments(node: GraphNode, parameter_file: Path | str | None = None) -> list[str]:
    """The ``--ros-args ...`` of ``node``'s process: name, namespace, the package's parameter
    file (or ``parameter_file``), the team's (:attr:`GraphNode.parameter_files`), overrides,
    remappings."""
    args = ["--ros-args", "-r", f"__node:={node.name}"]
    if namespace_prefix(node.namespace):  # rcl takes fully qualified ones only
        args += ["-r", f"__ns:={namespace_prefix(node.namespace)}"]
    for path in (parameter_file or node.spec.parameter_path(), *node.parameter_files):
        args += ["--params-file", str(path)]
    for key, value in node.parameters.items():
        args += ["-p", f"{key}:={_parameter_value(value)}"]
    for source, target in node.remappings:
        args += ["-r", f"{source}:={target}"]
    return args


def command_line(node: GraphNode, parameter_file: Path | str | None = None) -> list[str]:
    """The whole command that starts ``node`` (its console script and :func:`ros_arguments`)."""
    return [node.spec.executable, *ros_arguments(node, parameter_file)]

