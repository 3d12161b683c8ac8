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

No rclpy here: the module is imported by launch files, which run before any
node exists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from humanoid_balance.command_interface import COMMAND_INTERFACES
from humanoid_balance.exceptions import ConfigurationError
from humanoid_balance.experiments.strike import SIM_PHYSICS
from humanoid_balance.resources import config_path

PACKAGE = "humanoid_balance"


@dataclass(frozen=True)
class NodeSpec:
    """One executable of the package.

    Attributes:
        name: the node's name (``/name`` in the graph).
        executable: its console script (``ros2 run humanoid_balance <executable>``).
        parameter_file: its file in ``config/`` (``ros__parameters`` under ``name``).
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


@dataclass(frozen=True)
class GraphNode:
    """A node of one graph: its spec, parameter overrides, remappings, namespace."""

    spec: NodeSpec
    parameters: Mapping[str, Any] = field(default_factory=dict)
    remappings: tuple[tuple[str, str], ...] = ()
    namespace: str = ""

    @property
    def name(self) -> str:
        """The node's name."""
        return self.spec.name

    def with_parameters(self, **parameters: Any) -> GraphNode:
        """The same node with more parameter overrides (later ones win)."""
        return replace(self, parameters={**self.parameters, **parameters})


def _node(name: str, parameters: Mapping[str, Any] | None = None,
          remappings: Sequence[tuple[str, str]] = (), namespace: str = "") -> GraphNode:
    return GraphNode(NODES[name], dict(parameters or {}), tuple(remappings), namespace)


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
        namespace: namespace of every node.
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
    return nodes


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
    """
    robot = robot_graph(sensor_type=sensor_type, job_arm=job_arm, can_interface="virtual",
                        can_channel="waist_sim", use_sim_time=True, waist=waist,
                        namespace=namespace)
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
        sim_parameters.update(SIM_PHYSICS)
    else:
        # every node on simulation time handles every /clock message: at 1 kHz that costs each
        # about 0.28 of a core on this rclpy (benchmarks/graph.py); the sensors stay at 1 kHz
        sim_parameters["clock_rate"] = FREE_RUNNING_CLOCK_RATE_HZ
        sim_parameters["command_latency"] = FREE_RUNNING_COMMAND_LATENCY_S
    if lock_step_topics:
        sim_parameters["lock_step_topics"] = lock_step_topics
    return [_node("mujoco_sim", sim_parameters, namespace=namespace), *nodes]


def replay_graph(*, sensor_type: str = "ft") -> list[GraphNode]:
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
    """The ``--ros-args ...`` of ``node``'s process: name, parameter file, overrides, remappings."""
    args = ["--ros-args", "-r", f"__node:={node.name}"]
    if node.namespace:
        args += ["-r", f"__ns:=/{node.namespace.strip('/')}"]  # rcl takes fully qualified ones only
    args += ["--params-file", str(parameter_file or node.spec.parameter_path())]
    for key, value in node.parameters.items():
        args += ["-p", f"{key}:={_parameter_value(value)}"]
    for source, target in node.remappings:
        args += ["-r", f"{source}:={target}"]
    return args


def command_line(node: GraphNode, parameter_file: Path | str | None = None) -> list[str]:
    """The whole command that starts ``node`` (its console script and :func:`ros_arguments`)."""
    return [node.spec.executable, *ros_arguments(node, parameter_file)]
