"""The node graph of humanoid_balance, described once.

The launch files (``launch/*.launch.py``), the demo (``humanoid-balance demo``),
the benchmarks and the process-level tests all build their nodes from here, so
that the executables, parameter files, remappings and lifecycle order they use
cannot drift apart.

- :data:`NODES`: every executable of the package (:class:`NodeSpec`): its node
  name, console script, parameter file, whether it is a lifecycle node and
  whether it commands motors.
- :func:`robot_graph`, :func:`sim_graph`, :func:`replay_graph`: the graphs the
  launch files start, as lists of :class:`GraphNode` (a spec with the
  parameter overrides and remappings of that graph).
- :func:`ros_arguments` / :func:`command_line`: a graph node as the
  ``--ros-args`` of its process, which is what ``ros2 run`` and ``ros2 launch``
  pass too.
- :func:`apply_parameter_file`: a team's parameter file (``params_file:=``) over
  the package's, checked before any node starts.
- Namespaces: the nodes' topic and service names are absolute (``/zmp``); under
  a namespace every one of :data:`ROBOT_NAMES` is remapped to
  ``/<namespace><name>`` (:func:`namespace_remappings`), so that two robots on one
  domain share no topic. :func:`rviz_config` and :func:`external_remappings` do
  the same for rviz and robot_state_publisher.
- :func:`bag_player_command`: the replay's bag player, with one ``/clock``.

No rclpy here, nor pinocchio, MuJoCo or numba (``test/test_graph.py`` checks it):
the module is imported by launch files, which run before any node exists, and
``ros2 launch ... --show-args`` should not load a physics engine.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from humanoid_balance.bag import CLOCK_TOPIC, metadata_topics
from humanoid_balance.command_interface import COMMAND_INTERFACES
from humanoid_balance.exceptions import ConfigurationError
from humanoid_balance.params import SPEC_NODES, spec_for
from humanoid_balance.params.files import (
    ParameterFile,
    merged_parameters,
    read_parameter_file,
    spec_problems,
    unmatched,
)
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

#: the waist controller's joint states in the simulation: mujoco_sim publishes every joint on
#: /joint_states, so the waist's own encoder reading goes here (and the MuJoCo waist follows it)
SIM_WAIST_JOINT_STATES = "/waist/joint_states"

#: s of drive silence before the waist controller faults, with its drives simulated in its own
#: process: waist.yaml's 10 ms is for real drives; the simulated ones went 11-13 ms without
#: feedback at start-up on a loaded 2-core machine (measured, load average 9)
SIMULATED_DRIVE_FEEDBACK_TIMEOUT_S = 0.1

#: remappings of the package's inputs to what ros2_control's broadcasters publish under the
#: controller names of ``config/ros2_control_example.yaml`` (each broadcaster publishes on
#: ``~/wrench``, ``~/imu``; joint_state_broadcaster on ``/joint_states`` already)
ROS2_CONTROL_INPUTS = (
    ("/left_foot/ft", "/left_foot_ft_broadcaster/wrench"),
    ("/right_foot/ft", "/right_foot_ft_broadcaster/wrench"),
    ("/waist/inclinometer", "/waist_imu_broadcaster/imu"),
)

#: Hz, in lock-step: the simulation's publish rate and the arm balance's rate. The simulation
#: waits for the arm command of every period it publishes and the arm balance runs at most
#: ``rate`` cycles per second, so the two must be equal
LOCK_STEP_RATE_HZ = 500.0
#: SCHED_FIFO priority of ``arm_balance``'s control cycle on the robot and in simulation,
#: below the waist servo thread's (``servo_priority`` 50), as ros2_control runs its loop
ARM_BALANCE_PRIORITY = 40
#: Hz, free-running: ``mujoco_sim``'s ``/clock`` (the sensors stay at its ``publish_rate``). The
#: nodes' simulation time then moves in 10 ms steps, well inside their input timeouts (>= 50 ms);
#: gazebo_ros publishes /clock at 10 Hz by default
FREE_RUNNING_CLOCK_RATE_HZ = 100.0
#: s, free-running: ``mujoco_sim``'s ``command_latency``, each stamped command acts this long after
#: its stamp. Commands reach the simulation 2 ms late at the median, 10-50 ms at worst on the
#: 2-core machine (one `graph.py` run: 21 ms on average, 45 ms at most, while the strike's CoP
#: peak with RMC rose to 1.08 of the peak without). In-process, the strike with its commands
#: stalled 45 ms of every 100 ms (``experiments.strike.run_sim(transport=...)``): ZMP peak
#: with RMC 66.10 mm played back after 10 ms, 11.46 mm after 50 ms, as on time
#: (test/sim/test_strike.py; README, "Free-running"). The arms' motion is feedforward: both
#: arms wait alike
FREE_RUNNING_COMMAND_LATENCY_S = 0.05
#: the lock-step simulation's physics (``mujoco_sim``'s ``integrator`` and ``timestep``): the
#: strike experiment's ``experiments.strike.SIM_PHYSICS``, RK4 at 0.25 ms, written out here
#: rather than imported: the strike module imports pinocchio (core.zmp -> core.model), which
#: every launch file's process would then load. test/test_graph.py checks the two are equal
LOCK_STEP_PHYSICS: Mapping[str, Any] = {"integrator": "rk4", "timestep": 0.00025}

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
    "/joint_commands", "/sim/cop", "/sim/com", "/sim/base_pose",
    # ros2_control's controllers (command_interface, ROS2_CONTROL_INPUTS)
    "/joint_trajectory_controller/joint_trajectory", "/forward_position_controller/commands",
    "/left_foot_ft_broadcaster/wrench", "/right_foot_ft_broadcaster/wrench",
    "/waist_imu_broadcaster/imu",
)
#: parameters whose values name topics (``lock_step_topics``: ``topic:package/msg/Type``):
#: their absolute names are remapped under a namespace too
TOPIC_PARAMETERS = ("command_topics", "lock_step_topics", "command_topic", "base_pose_topic")
#: graph overrides set from a launch argument of the same meaning: parameter -> argument
ARGUMENT_OF_PARAMETER = {
    "sensor_type": "sensor_type", "job_arm": "job_arm", "urdf_path": "urdf_path",
    "use_sim_time": "use_sim_time", "can.interface": "can_interface",
    "can.channel": "can_channel", "command_interface": "command_interface",
    "real_time_factor": "real_time_factor", "sensor_noise": "sensor_noise",
    "lock_step": "lock_step",
}


@dataclass(frozen=True)
class GraphNode:
    """A node of one graph: its spec, parameter overrides, remappings, namespace.

    Its process gets the package's parameter file, then ``parameter_files`` (a team's,
    :func:`apply_parameter_file`), then ``parameters`` (later ones win).
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


def _node(name: str, parameters: Mapping[str, Any] | None = None,
          remappings: Sequence[tuple[str, str]] = (), namespace: str = "") -> GraphNode:
    return GraphNode(NODES[name], dict(parameters or {}), tuple(remappings), namespace)


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


def _in_namespace(nodes: Sequence[GraphNode]) -> list[GraphNode]:
    return [replace(n, remappings=namespace_remappings(n.remappings, n.namespace, n.parameters))
            for n in nodes]


def external_remappings(namespace: str, joint_states: bool = True) -> list[tuple[str, str]]:
    """Remappings of a node outside the package (robot_state_publisher, rviz2) for the robot in
    ``namespace``: TF and ``/clock`` as the graph's nodes have them, and (``joint_states``) its
    relative ``joint_states`` input to where they publish."""
    prefix = namespace_prefix(namespace)
    moved = [(name, prefix + name) for name in ("/tf", "/tf_static", "/clock") if prefix]
    return [("joint_states", f"{prefix}/joint_states"), *moved] if joint_states else moved


def _check_choice(label: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise ConfigurationError(f"{label}={value!r}; choose one of {list(choices)}")


def robot_graph(
    *, sensor_type: str = "ft", job_arm: str = "right", can_interface: str = "socketcan",
    can_channel: str = "can0", urdf_path: str = "", namespace: str = "",
    use_sim_time: bool = False, waist: bool = True, identification: bool = False,
    command_interface: str = "joint_state", ros2_control: bool = False,
) -> list[GraphNode]:
    """The nodes that run on the robot (``bringup.launch.py``), in start order.

    Args:
        sensor_type: ``ft`` (ankle F/T sensors) or ``fsr`` (four FSRs per sole).
        job_arm: ``right`` or ``left``: the arm that does the job.
        can_interface: python-can interface of the waist drives (``socketcan`` on the robot).
        can_channel: its channel (``can0``).
        urdf_path: the humanoid's URDF; empty: the package's.
        namespace: namespace of every node; their topics and services move into it
            (:func:`namespace_remappings`).
        use_sim_time: the nodes take their time from ``/clock``.
        waist: start the waist controller (it needs its CAN bus).
        identification: start the identification executor.
        command_interface: how the motor nodes send commands: ``joint_state``,
            ``joint_trajectory`` (ros2_control's joint_trajectory_controller) or
            ``forward_position`` (forward_command_controller); see
            :mod:`humanoid_balance.command_interface`.
        ros2_control: the robot runs ros2_control: the inputs are read from the
            broadcasters of ``config/ros2_control_example.yaml``
            (:data:`ROS2_CONTROL_INPUTS`).
    """
    _check_choice("sensor_type", sensor_type, ("ft", "fsr"))
    _check_choice("job_arm", job_arm, ("right", "left"))
    _check_choice("command_interface", command_interface, COMMAND_INTERFACES)
    namespace_prefix(namespace)
    common: dict[str, Any] = {"use_sim_time": use_sim_time}
    urdf = {"urdf_path": urdf_path} if urdf_path else {}
    commands = {} if command_interface == "joint_state" else {"command_interface": command_interface}
    inputs = ROS2_CONTROL_INPUTS if ros2_control else ()
    nodes = [
        _node("zmp_estimator", {**common, **urdf, "sensor_type": sensor_type}, inputs,
              namespace=namespace),
        _node("arm_balance", {**common, **urdf, **commands, "job_arm": job_arm,
                              "executor_priority": ARM_BALANCE_PRIORITY}, inputs,
              namespace=namespace),
    ]
    if waist:
        nodes.append(_node("waist_controller", {
            **common, "can.interface": can_interface, "can.channel": can_channel}, inputs,
            namespace=namespace))
    if identification:
        nodes.append(_node("identification_executor", {**common, **commands}, inputs,
                           namespace=namespace))
    return _in_namespace(nodes)


def sim_graph(
    *, sensor_type: str = "ft", job_arm: str = "right", real_time_factor: float = 1.0,
    sensor_noise: float = 1.0, lock_step: bool = False, rmc: bool = True, waist: bool = True,
    extra_lock_step_topics: Sequence[str] = (), namespace: str = "",
) -> list[GraphNode]:
    """The simulated robot (``sim.launch.py``, the demo): ``mujoco_sim`` and the robot's nodes.

    Every node runs on simulation time. The arm balance runs one cycle per
    ``/joint_states`` message. The waist controller hosts simulated drives on a
    python-can ``virtual`` bus in its own process (``simulated_drives``); its
    joint states go to :data:`SIM_WAIST_JOINT_STATES`, which the MuJoCo waist
    joints follow.

    Args:
        lock_step: ``mujoco_sim`` waits, each control period, for the arm balance's
            command of that period (and for ``extra_lock_step_topics``), so that a
            run's result does not depend on the machine's load.
        rmc: start ``arm_balance``.
        waist: start ``waist_controller`` with its simulated drives.
        extra_lock_step_topics: more ``topic:package/msg/Type`` entries the
            simulation waits for (a driver's job input, for example).
        namespace: namespace of every node, ``/clock`` and the topics included: each
            simulated robot has its own clock.
    """
    namespace_prefix(namespace)
    robot = robot_graph(sensor_type=sensor_type, job_arm=job_arm, can_interface="virtual",
                        can_channel="waist_sim", use_sim_time=True, waist=waist)
    command_topics = ["/arm_balance/command", "/joint_commands"]
    lock_step_topics = list(extra_lock_step_topics)
    nodes: list[GraphNode] = []
    for node in robot:
        if node.name == "arm_balance":
            if not rmc:
                continue
            node = node.with_parameters(trigger="joint_states")
            if lock_step:
                node = node.with_parameters(rate=LOCK_STEP_RATE_HZ)
            lock_step_topics.insert(0, "/arm_balance/command:sensor_msgs/msg/JointState")
        elif node.name == "waist_controller":
            # no busy-wait before each servo deadline: it costs 15 % of a core for what the
            # simulated drives do not need (they are stepped by the servo thread itself)
            node = replace(node.with_parameters(
                simulated_drives=True, spin_margin=0.0,
                feedback_timeout=SIMULATED_DRIVE_FEEDBACK_TIMEOUT_S),
                           remappings=(("/joint_states", SIM_WAIST_JOINT_STATES),))
            if lock_step:
                # the drives and the inclinometer loop run on the wall clock while a lock-step
                # simulation's time runs at a load-dependent fraction of it: an outer loop
                # integrating the simulated inclinometer over wall time made two runs differ by
                # 2.4 mm of CoP; the encoder loops alone hold the waist the same in every run
                node = node.with_parameters(outer_gain=0.0)
            command_topics.append(SIM_WAIST_JOINT_STATES)
        nodes.append(node)
    sim_parameters: dict[str, Any] = {
        "model": "humanoid", "real_time_factor": float(real_time_factor),
        "sensor_noise": float(sensor_noise), "command_topics": command_topics,
        "lock_step": bool(lock_step),
    }
    if lock_step:
        sim_parameters["publish_rate"] = LOCK_STEP_RATE_HZ
        # the strike experiment's physics: RK4 at 0.25 ms, where the ZMP figures have
        # converged; free-running keeps implicitfast at 1 ms, a tenth of the CPU, for real
        # time on 2 cores
        sim_parameters.update(LOCK_STEP_PHYSICS)
    else:
        # every node on simulation time handles every /clock message: at 1 kHz that costs each
        # about 0.28 of a core on this rclpy (benchmarks/graph.py); the sensors stay at 1 kHz
        sim_parameters["clock_rate"] = FREE_RUNNING_CLOCK_RATE_HZ
        sim_parameters["command_latency"] = FREE_RUNNING_COMMAND_LATENCY_S
    if lock_step_topics:
        sim_parameters["lock_step_topics"] = lock_step_topics
    return _in_namespace([replace(node, namespace=namespace) for node in
                          (_node("mujoco_sim", sim_parameters), *nodes)])


def replay_graph(*, sensor_type: str = "ft") -> list[GraphNode]:  # no namespace: a bag's topics are its own
    """What ``replay.launch.py`` starts beside the bag player: the ZMP estimator on the bag's clock."""
    _check_choice("sensor_type", sensor_type, ("ft", "fsr"))
    return [_node("zmp_estimator", {"use_sim_time": True, "sensor_type": sensor_type})]


def zmp_estimator_inputs(sensor_type: str = "ft") -> list[str]:
    """The topics ``zmp_estimator`` subscribes to for its samples (a replay waits for them)."""
    _check_choice("sensor_type", sensor_type, ("ft", "fsr"))
    return ["/joint_states", f"/left_foot/{sensor_type}", f"/right_foot/{sensor_type}"]


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


# --- a team's parameter file -----------------------------------------------------------------


@dataclass(frozen=True)
class ParameterFileCheck:
    """What :func:`apply_parameter_file` found: the nodes with the file, and warnings to log."""

    nodes: list[GraphNode]
    warnings: list[str]


def _package_file(node: GraphNode) -> ParameterFile:
    return read_parameter_file(node.spec.parameter_path())


def apply_parameter_file(nodes: Sequence[GraphNode], path: str | Path | None) -> ParameterFileCheck:
    """``nodes`` with a team's parameter file applied over the package's (``params_file:=``).

    Each node's process gets the package's file, then ``path``, then the graph's
    overrides. Before any node starts, the file is read as rcl reads it and each
    section a node takes is checked against the node's spec: a parameter the node
    does not declare (in a section that names it), a value of another ROS type
    (``13`` for a float: the node would refuse to start) or outside the spec's
    range is an error. A value the graph overrides (a launch argument such as
    ``sensor_type``, or what the graph needs, such as ``use_sim_time`` in
    simulation) is a warning: the graph's value is used.

    Args:
        nodes: a graph (:func:`robot_graph`, :func:`sim_graph`, :func:`replay_graph`).
        path: the team's file; empty or None: the nodes as they are.

    Raises:
        ConfigurationError: the file cannot be read, is no parameter file, holds no
            section for any node of the graph, or would not work (every problem listed).
    """
    if not path:
        return ParameterFileCheck(list(nodes), [])
    team = read_parameter_file(path)
    names = [node.full_name for node in nodes]
    if not any(team.matching(name) for name in names):
        raise ConfigurationError(
            f"params_file {path}: no section applies to a node of this launch ({', '.join(names)}); "
            f"its keys: {[s.key for s in team.sections]}. Key a node's section /**/<node> (any "
            "namespace) or /<namespace>/<node>, as config/*.yaml do")
    problems: list[str] = []
    others = unmatched([team], names)  # other nodes' sections (controllers, ...): fine, said once
    warnings = [f"params_file {path}: {', '.join(others)} apply to no node of this launch "
                f"({', '.join(names)}): not used"] if others else []
    for node in nodes:
        spec = spec_for(node.name) if node.name in SPEC_NODES else None
        if spec is not None:
            for section in team.matching(node.full_name):
                problems += [f"{section.key}: {p}" for p in spec_problems(
                    spec, section.parameters, named=section.names_node(node.name))]
        from_team = merged_parameters([team], node.full_name)
        # launch_ros passes the overrides under the node's full name, after the files
        result = merged_parameters([_package_file(node), team], node.full_name, node.parameters,
                                   overrides_key=node.full_name)
        for name, value in node.parameters.items():
            if name in from_team and from_team[name] != value:
                source = (f"the launch argument {ARGUMENT_OF_PARAMETER[name]}"
                          if name in ARGUMENT_OF_PARAMETER else "this launch's graph")
                warnings.append(f"params_file {path} sets {name}: {from_team[name]!r} for "
                                f"{node.full_name}; {source} sets it to {value!r}, which is used")
            if result.get(name) != value:
                problems.append(f"{node.full_name}: a later section of {path} would set {name} "
                                f"to {result.get(name)!r} over the launch's {value!r}; key it "
                                f"/**/{node.name} or /<namespace>/{node.name}")
    if problems:
        raise ConfigurationError(f"params_file {path} would not work:\n  " + "\n  ".join(problems))
    applied = [replace(node, parameter_files=(*node.parameter_files, str(path))) for node in nodes]
    return ParameterFileCheck(applied, warnings)


# --- the replay's bag player -------------------------------------------------------------------

#: the bag players ``replay.launch.py`` can start
PLAYERS = ("ros2", "humanoid_balance")


def _number(name: str, text: str | float, minimum: float) -> str:
    try:
        value = float(text)
    except ValueError:
        raise ConfigurationError(f"{name}={text!r}; expected a number") from None
    if not value >= minimum:
        raise ConfigurationError(f"{name}={text!r}; expected a number >= {minimum:g}")
    return str(value)


def bag_player_command(player: str, bag: str | Path, rate: str | float = 1.0,
                       delay: str | float = 1.0) -> list[str]:
    """The bag player's command (after its executable) with exactly one ``/clock`` publisher.

    ``humanoid_balance``: ``humanoid-balance replay`` (its ``--clock auto`` plays the bag's
    own ``/clock`` when the bag has one, else makes one from the log times).

    ``ros2``: ``ros2 bag play``, with ``--clock`` only when the bag has no ``/clock``. A
    bag recorded with its ``/clock`` (a simulation, ``humanoid-balance record --topics
    /clock ...``) plays that one: it is the time the messages' stamps are in, where the
    player's ``--clock`` is made from the log times (when the recorder received each
    message) and would be a second clock publisher, in another time. Leaving the bag's
    ``/clock`` out instead needs ``--exclude-topics``, which Humble's ``ros2 bag play``
    does not have. Read from the bag's ``metadata.yaml``.

    Raises:
        ConfigurationError: an unknown player, a bad rate or delay, a bag without
            ``metadata.yaml``.
    """
    if player not in PLAYERS:
        raise ConfigurationError(f"player={player!r}; choose one of {list(PLAYERS)}")
    rate_text = _number("rate", rate, 1e-9)
    delay_text = _number("delay", delay, 0.0)
    topics = metadata_topics(bag)  # both players need it: say so before anything starts
    if player == "humanoid_balance":
        return ["replay", str(bag), "--rate", rate_text, "--delay", delay_text, "--robot-dds"]
    clock = [] if CLOCK_TOPIC in topics else ["--clock"]
    return ["ros2", "bag", "play", str(bag), *clock, "--rate", rate_text, "--delay", delay_text]


# --- rviz ------------------------------------------------------------------------------------------


def rviz_config(namespace: str = "", path: Path | str | None = None) -> str:
    """``config/balance.rviz`` (or ``path``) for a robot in ``namespace``: every display's
    absolute topic (``/zmp/markers``, ``/robot_description``, ...) moved to
    ``/<namespace><topic>``, as :func:`namespace_remappings` moves the nodes' topics and
    robot_state_publisher's ``robot_description`` is in its namespace. No namespace: the
    file's text as it is."""
    text = Path(path or config_path("balance.rviz")).read_text()
    prefix = namespace_prefix(namespace)
    if not prefix:
        return text
    document = yaml.safe_load(text)

    def move(tree: Any) -> None:
        if isinstance(tree, dict):
            for key, value in tree.items():
                if key in ("Topic", "Description Topic") and isinstance(value, dict) and \
                        str(value.get("Value", "")).startswith("/"):
                    value["Value"] = prefix + value["Value"]
                else:
                    move(value)
        elif isinstance(tree, list):
            for item in tree:
                move(item)

    move(document)
    return str(yaml.safe_dump(document, sort_keys=False, default_flow_style=False))
