"""The node graph of humanoid_balance, described once.

The launch files (``launch/*.launch.py``), the demo (``humanoid-balance demo``),
the benchmarks and the process-level tests all build their nodes from here, so
that the executables, parameter files, remappings and lifecycle order they use
cannot drift apart.

- :data:`NODES`: every executable of the package (:class:`NodeSpec`): its node
  name, console script, parameter file, whether it is a lifecycle node and
  whether it commands motors (:mod:`humanoid_balance.graph_nodes`, with
  :class:`GraphNode`, the namespace remappings and the processes' arguments).
- :func:`robot_graph`, :func:`sim_graph`, :func:`replay_graph`: the graphs the
  launch files start, as lists of :class:`GraphNode` (a spec with the
  parameter overrides and remappings of that graph).
- :func:`ros_arguments` / :func:`command_line`: a graph node as the
  ``--ros-args`` of its process, which is what ``ros2 run`` and ``ros2 launch``
  pass too.
- :func:`apply_parameter_file`: a team's parameter file (``params_file:=``) over
  the package's, checked before any node starts
  (:mod:`humanoid_balance.graph_params_file`).
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

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from humanoid_balance.bag import CLOCK_TOPIC, metadata_topics
from humanoid_balance.command_interface import COMMAND_INTERFACES
from humanoid_balance.exceptions import ConfigurationError
from humanoid_balance.graph_nodes import (
    LIFECYCLE_ORDER,
    NODES,
    PACKAGE,
    ROBOT_NAMES,
    TOPIC_PARAMETERS,
    GraphNode,
    NodeSpec,
    command_line,
    external_remappings,
    lifecycle_nodes,
    namespace_prefix,
    namespace_remappings,
    ros_arguments,
)
from humanoid_balance.graph_params_file import (
    ARGUMENT_OF_PARAMETER,
    ParameterFileCheck,
    apply_parameter_file,
)
from humanoid_balance.resources import config_path

__all__ = [
    "ARGUMENT_OF_PARAMETER", "ARM_BALANCE_PRIORITY", "FREE_RUNNING_CLOCK_RATE_HZ",
    "FREE_RUNNING_COMMAND_LATENCY_S", "LIFECYCLE_ORDER", "LOCK_STEP_PHYSICS", "LOCK_STEP_RATE_HZ",
    "NODES", "PACKAGE", "PLAYERS", "ROBOT_NAMES", "ROS2_CONTROL_INPUTS",
    "SIMULATED_DRIVE_FEEDBACK_TIMEOUT_S", "SIM_WAIST_JOINT_STATES", "TOPIC_PARAMETERS",
    "GraphNode", "NodeSpec", "ParameterFileCheck", "apply_parameter_file", "bag_player_command",
    "command_line", "external_remappings", "lifecycle_nodes", "namespace_prefix",
    "namespace_remappings", "replay_graph", "robot_graph", "ros_arguments", "rviz_config",
    "sim_graph", "zmp_estimator_inputs",
]

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


def _node(name: str, parameters: Mapping[str, Any] | None = None,
          remappings: Sequence[tuple[str, str]] = (), namespace: str = "") -> GraphNode:
    return GraphNode(NODES[name], dict(parameters or {}), tuple(remappings), namespace)


def _in_namespace(nodes: Sequence[GraphNode]) -> list[GraphNode]:
    return [replace(n, remappings=namespace_remappings(n.remappings, n.namespace, n.parameters))
            for n in nodes]


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


#: ``sensor_queue_depth`` of the replay's estimator: a player does not wait for its readers, and
#: a 100-deep queue lost samples whenever the estimator was kept off the CPU for longer than
#: 100 periods (the replay test on a loaded CI machine: 1121 of 1200 ZMPs); 10 s at 1 kHz
REPLAY_SENSOR_QUEUE_DEPTH = 10000


def replay_graph(*, sensor_type: str = "ft") -> list[GraphNode]:  # no namespace: a bag's topics are its own
    """What ``replay.launch.py`` starts beside the bag player: the ZMP estimator on the bag's
    clock, every sample kept for it (:data:`REPLAY_SENSOR_QUEUE_DEPTH`)."""
    _check_choice("sensor_type", sensor_type, ("ft", "fsr"))
    return [_node("zmp_estimator", {"use_sim_time": True, "sensor_type": sensor_type,
                                    "sensor_queue_depth": REPLAY_SENSOR_QUEUE_DEPTH})]


def zmp_estimator_inputs(sensor_type: str = "ft") -> list[str]:
    """The topics ``zmp_estimator`` subscribes to for its samples (a replay waits for them)."""
    _check_choice("sensor_type", sensor_type, ("ft", "fsr"))
    return ["/joint_states", f"/left_foot/{sensor_type}", f"/right_foot/{sensor_type}"]


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
