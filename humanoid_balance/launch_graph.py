"""The node graph (:mod:`humanoid_balance.graph`) as ``launch`` entities: what the launch files start.

``launch/bringup.launch.py``, ``sim.launch.py`` and ``replay.launch.py`` declare
their arguments from the signature of :func:`~humanoid_balance.graph.robot_graph`
(or ``sim_graph``, ``replay_graph``) and turn the graph's nodes into launch_ros
``Node`` / ``LifecycleNode`` actions here, so that the launch files, the demo and
the process-level tests start the same executables with the same parameter
files, overrides and remappings.

Lifecycle nodes (:class:`LifecycleSequence`):

- each is configured once at start, in :data:`~humanoid_balance.graph.LIFECYCLE_ORDER`;
- a node is activated only after *its own* successful configure (the transition
  ``configuring -> inactive``), and only once every node before it in the order
  that is to be activated is active (the arms hold the momentum before the
  torso moves);
- the launch asks for each activation once: a failed activation (``activating ->
  inactive``, or an error) is logged once, as an error telling the operator what
  to do, and left to the operator; the nodes after it wait. When the operator
  activates it by hand (``ros2 lifecycle set``), the ones after it follow.

Parameters: each node gets the package's file (``config/*.yaml``, keyed
``/**/<node>``: any namespace), then the team's ``params_file`` (checked first,
:func:`~humanoid_balance.graph.apply_parameter_file`), then the graph's overrides.
Under ``namespace`` the nodes' topics, TF, ``/clock`` and rviz's displays move
into the namespace (:func:`~humanoid_balance.graph.namespace_remappings`).

DDS is left to the environment (no loopback profile): on a robot, rviz on an
operator's machine joins the graph. This module imports ``launch`` and
``launch_ros``: only launch files and the tests that load them import it.
"""

from __future__ import annotations

import inspect
import tempfile
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import launch.logging
from launch.actions import DeclareLaunchArgument, EmitEvent, OpaqueFunction, RegisterEventHandler
from launch.events import matches_action
from launch.launch_context import LaunchContext
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import LifecycleNode, Node
from launch_ros.event_handlers import OnStateTransition
from launch_ros.events.lifecycle import ChangeState, StateTransition
from lifecycle_msgs.msg import Transition

from humanoid_balance.exceptions import ConfigurationError
from humanoid_balance.graph import (
    LIFECYCLE_ORDER,
    PACKAGE,
    GraphNode,
    apply_parameter_file,
    external_remappings,
    namespace_prefix,
    rviz_config,
)
from humanoid_balance.resources import config_path, share_path

#: what each launch argument is for (``ros2 launch humanoid_balance X.launch.py --show-args``)
ARGUMENT_HELP: dict[str, str] = {
    "sensor_type": "ft (ankle F/T sensors) | fsr (four FSRs per sole)",
    "job_arm": "right | left: the arm that does the job (the other one balances with it)",
    "can_interface": "python-can interface of the waist drives: socketcan on the robot",
    "can_channel": "CAN channel of the waist drives (can0, can1, ...)",
    "urdf_path": "the humanoid's URDF; empty: the package's urdf/humanoid.urdf",
    "namespace": "namespace of every node; their topics, services, TF and /clock move into it "
                 "(/robot1/zmp, /robot1/tf, ...), rviz's displays too",
    "params_file": "your parameter file, applied over the package's config/*.yaml (key a node's "
                   "section /**/<node>: any namespace; empty: none)",
    "use_sim_time": "take time from /clock (a simulator or a bag)",
    "waist": "start the waist controller (it needs its CAN bus)",
    "identification": "start the identification executor (configured, not activated)",
    "real_time_factor": "simulation time per wall time; 0 = as fast as possible",
    "sensor_noise": "0 = noise-free sensors, 1 = nominal noise",
    "lock_step": "the simulation waits each control period for the arm balance's command",
    "rmc": "start the arm balance (resolved momentum control)",
    "activate": "activate the motor nodes (in order, once) after each configured successfully",
    "activate_identification": "activate the identification executor too (then "
                               "/identification/start moves the arm)",
    "robot_state_publisher": "start robot_state_publisher with the URDF (false if your robot "
                             "driver runs one)",
    "rviz": "start rviz2 with config/balance.rviz",
}

#: the launch logger of the lifecycle sequence
LOGGER_NAME = f"{PACKAGE}.lifecycle"

_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


def parse_bool(name: str, text: str) -> bool:
    """A launch argument's text as a bool (``true``/``false``, ``1``/``0``, any case)."""
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigurationError(f"launch argument {name}:={text!r}; use true or false")


def _default_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def graph_arguments(function: Callable[..., Any], names: Sequence[str]) -> list[DeclareLaunchArgument]:
    """Launch arguments for keyword parameters ``names`` of a graph function, defaults from it.

    The defaults are read from ``function``'s signature so that the launch file
    and the graph cannot disagree.
    """
    parameters = inspect.signature(function).parameters
    arguments = []
    for name in names:
        if name not in parameters:
            raise ConfigurationError(f"{function.__name__}() has no parameter {name!r}")
        choices = {"sensor_type": ["ft", "fsr"], "job_arm": ["right", "left"]}.get(name)
        arguments.append(DeclareLaunchArgument(
            name, default_value=_default_text(parameters[name].default),
            description=ARGUMENT_HELP.get(name, name), choices=choices))
    return arguments


def switch_argument(name: str, default: bool) -> DeclareLaunchArgument:
    """A true/false launch argument that is not a graph parameter (``activate``, ``rviz``, ...)."""
    return DeclareLaunchArgument(name, default_value=_default_text(default),
                                 description=ARGUMENT_HELP.get(name, name))


def argument(context: LaunchContext, name: str) -> str:
    """The value of launch argument ``name`` in ``context``."""
    return str(LaunchConfiguration(name).perform(context))


def switch(context: LaunchContext, name: str) -> bool:
    """A true/false launch argument's value."""
    return parse_bool(name, argument(context, name))


def graph_keywords(context: LaunchContext, function: Callable[..., Any],
                   names: Sequence[str]) -> dict[str, Any]:
    """The launch arguments ``names`` as keyword arguments of ``function``, typed like its defaults."""
    parameters = inspect.signature(function).parameters
    keywords: dict[str, Any] = {}
    for name in names:
        text = argument(context, name)
        default = parameters[name].default
        if isinstance(default, bool):
            keywords[name] = parse_bool(name, text)
        elif isinstance(default, float):
            try:
                keywords[name] = float(text)
            except ValueError:
                raise ConfigurationError(f"launch argument {name}:={text!r}; expected a number") \
                    from None
        else:
            keywords[name] = text
    return keywords


def full_name(node: GraphNode) -> str:
    """The node's fully qualified name (``/namespace/name``), as ``ros2 lifecycle`` takes it."""
    return node.full_name


def params_file_argument() -> DeclareLaunchArgument:
    """``params_file``: a team's parameter file over the package's (empty: none)."""
    return DeclareLaunchArgument("params_file", default_value="",
                                 description=ARGUMENT_HELP["params_file"])


def with_params_file(context: LaunchContext, nodes: Sequence[GraphNode]) -> list[GraphNode]:
    """``nodes`` with the ``params_file`` argument's file after their package file.

    The file is checked before any node starts (a broken one stops the launch with the
    reasons); a value the launch overrides is logged as a warning.
    """
    check = apply_parameter_file(nodes, argument(context, "params_file"))
    logger = launch.logging.get_logger(f"{PACKAGE}.params_file")
    for warning in check.warnings:
        logger.warning(warning)
    return check.nodes


def node_action(node: GraphNode, output: str = "screen") -> Node:
    """The graph node as a launch_ros action: ``LifecycleNode`` for a managed node, else ``Node``.

    Parameters are the node's parameter file in the installed package, then the
    team's (``params_file``), then the graph's overrides (later ones win).
    """
    action_type = LifecycleNode if node.spec.lifecycle else Node
    action: Node = action_type(
        package=PACKAGE, executable=node.spec.executable, name=node.name,
        namespace=namespace_prefix(node.namespace), output=output,
        parameters=[str(node.spec.parameter_path()), *node.parameter_files,
                    dict(node.parameters)],
        remappings=list(node.remappings))
    return action


def lifecycle_node_action(node: GraphNode, output: str = "screen") -> LifecycleNode:
    """:func:`node_action` of a lifecycle node."""
    action = node_action(node, output)
    if not isinstance(action, LifecycleNode):
        raise ConfigurationError(f"{node.name} is not a lifecycle node")
    return action


def robot_state_publisher(urdf_path: str, namespace: str = "", use_sim_time: bool = False) -> Node:
    """``robot_state_publisher`` with the humanoid's URDF (``urdf_path``; empty: the package's).

    In the robot's namespace: ``robot_description`` and its ``joint_states`` input are
    relative (``/robot1/robot_description``, ``/robot1/joint_states``, where the graph's
    nodes publish under that namespace) and TF and ``/clock`` are remapped into it as the
    nodes' are (:func:`~humanoid_balance.graph.external_remappings`).
    """
    path = urdf_path or str(share_path("urdf", "humanoid.urdf"))
    try:
        with open(path) as f:
            description = f.read()
    except OSError as error:
        raise ConfigurationError(f"urdf_path={path!r} cannot be read ({error}); give an existing "
                                 "URDF file") from None
    return Node(package="robot_state_publisher", executable="robot_state_publisher",
                namespace=namespace_prefix(namespace), output="screen",
                parameters=[{"robot_description": description, "use_sim_time": use_sim_time}],
                remappings=external_remappings(namespace))


def rviz(use_sim_time: bool, namespace: str = "") -> Node:
    """rviz2 with the package's ``config/balance.rviz``, for the robot in ``namespace``.

    With a namespace rviz gets a copy of the file whose displays read
    ``/<namespace>/...`` (:func:`~humanoid_balance.graph.rviz_config`, written to a
    temporary file as launch_ros writes its parameter files), and TF and ``/clock``
    remapped into the namespace.
    """
    path = str(config_path("balance.rviz"))
    if namespace_prefix(namespace):
        with tempfile.NamedTemporaryFile(
                "w", prefix=f"balance_{namespace_prefix(namespace).strip('/').replace('/', '_')}_",
                suffix=".rviz", delete=False) as file:
            file.write(rviz_config(namespace))
            path = file.name
    return Node(package="rviz2", executable="rviz2", arguments=["-d", path],
                parameters=[{"use_sim_time": use_sim_time}],
                remappings=external_remappings(namespace, joint_states=False))


class LifecycleSequence:
    """Configure the lifecycle nodes once, activate them in order, each at most once; see the module doc.

    Args:
        nodes: the lifecycle nodes with their launch actions, in
            :data:`~humanoid_balance.graph.LIFECYCLE_ORDER`.
        activate: names of the nodes the launch activates; the others are only configured.
        logger: where the sequence reports (default: launch's :data:`LOGGER_NAME`).
    """

    def __init__(self, nodes: Sequence[tuple[GraphNode, LifecycleNode]], activate: Iterable[str],
                 logger: Any = None) -> None:
        order = [node.name for node, _ in nodes]
        if order != [name for name in LIFECYCLE_ORDER if name in order]:
            raise ConfigurationError(f"lifecycle nodes {order} are not in LIFECYCLE_ORDER "
                                     f"{list(LIFECYCLE_ORDER)}")
        self.nodes = list(nodes)
        self.activate = set(activate)
        self._logger = logger
        self.configured: set[str] = set()
        self.active: set[str] = set()
        self.requested: set[str] = set()  # activation asked for: never asked twice

    @property
    def logger(self) -> Any:
        """Where the sequence reports: the given logger, else launch's (screen and launch log)."""
        if self._logger is None:
            self._logger = launch.logging.get_logger(LOGGER_NAME)
        return self._logger

    # --- launch entities ------------------------------------------------------------------

    def entities(self) -> list[Any]:
        """Event handlers, the node actions, then the configure requests (in the order)."""
        handlers: list[Any] = []
        for node, action in self.nodes:
            handlers += [
                self._handler(action, node, self.on_configured, "configuring", "inactive"),
                self._handler(action, node, self.on_configure_failed, "configuring", None),
                self._handler(action, node, self.on_active, "activating", "active"),
                self._handler(action, node, self.on_activation_failed, "activating", None),
            ]
        configure = [EmitEvent(event=ChangeState(
            lifecycle_node_matcher=matches_action(action),
            transition_id=Transition.TRANSITION_CONFIGURE)) for _, action in self.nodes]
        return [*handlers, *(action for _, action in self.nodes), *configure]

    @staticmethod
    def _handler(action: LifecycleNode, node: GraphNode,
                 callback: Callable[[GraphNode, str], list[Any]], start: str,
                 goal: str | None) -> RegisterEventHandler:
        """Run ``callback(node, goal_state)`` on ``action``'s transition ``start -> goal``.

        ``goal`` None: any goal but the transition's success state (a failure).
        """
        success = {"configuring": "inactive", "activating": "active"}[start]

        def matcher(event: Any) -> bool:
            return (isinstance(event, StateTransition) and event.action is action
                    and event.start_state == start
                    and (event.goal_state == goal if goal is not None
                         else event.goal_state != success))

        def handle(context: LaunchContext) -> list[Any]:
            return callback(node, str(context.locals.event.goal_state))

        return RegisterEventHandler(OnStateTransition(
            target_lifecycle_node=action, matcher=matcher,
            entities=[OpaqueFunction(function=handle)]))

    def _action(self, name: str) -> LifecycleNode:
        return next(action for node, action in self.nodes if node.name == name)

    def _activation(self, name: str) -> EmitEvent:
        return EmitEvent(event=ChangeState(lifecycle_node_matcher=matches_action(self._action(name)),
                                           transition_id=Transition.TRANSITION_ACTIVATE))

    # --- transitions ----------------------------------------------------------------------

    def due(self) -> list[str]:
        """Nodes to activate now: configured, not yet asked, every earlier one to activate active."""
        due = []
        for node, _ in self.nodes:
            name = node.name
            if name not in self.activate:
                continue
            if name not in self.requested and name in self.configured:
                due.append(name)
            if name not in self.active:
                break  # the nodes after it wait for it
        return due

    def _activate_due(self) -> list[Any]:
        events = []
        for name in self.due():
            self.requested.add(name)
            events.append(self._activation(name))
        return events

    def on_configured(self, node: GraphNode, goal: str = "inactive") -> list[Any]:
        """``configuring -> inactive``: the node may be activated (when its turn comes)."""
        self.configured.add(node.name)
        events = self._activate_due()
        if node.name not in self.activate:
            self.logger.info(f"{full_name(node)} configured, not activated: activate it when it "
                             f"may move (ros2 lifecycle set {full_name(node)} activate)")
        elif node.name not in self.requested:
            self.logger.info(f"{full_name(node)} configured; activated once the nodes before it "
                             "are active")
        return events

    def on_configure_failed(self, node: GraphNode, goal: str) -> list[Any]:
        """``configuring -> unconfigured`` (or an error): reported once; the nodes after it wait."""
        self.logger.error(
            f"{full_name(node)}: configure FAILED (its log above says why), now {goal}; it is "
            f"not activated{self._blocked(node.name)}. Fix the cause, then: "
            f"{_configure_then_activate(full_name(node))}")
        return []

    def on_active(self, node: GraphNode, goal: str = "active") -> list[Any]:
        """``activating -> active``: the next node in the order may be activated."""
        self.active.add(node.name)
        self.logger.info(f"{full_name(node)} active")
        return self._activate_due()

    def on_activation_failed(self, node: GraphNode, goal: str) -> list[Any]:
        """``activating -> inactive`` (or an error): reported once, left to the operator, no retry."""
        self.active.discard(node.name)
        if goal == "inactive":
            todo = f"ros2 lifecycle set {full_name(node)} activate"
        else:  # an exception in on_activate: error processing, then unconfigured (or finalized)
            todo = _configure_then_activate(full_name(node))
        self.logger.error(
            f"{full_name(node)}: activation FAILED (its log above says why), now {goal} with its "
            f"motors off; the launch does not retry{self._blocked(node.name)}. Fix the cause "
            f"(CAN bus up, drives powered, e-stop released), then: {todo}")
        return []

    def _blocked(self, name: str) -> str:
        """``; /x, /y wait for it ...`` for the nodes after ``name`` still to be activated."""
        names = [node.name for node, _ in self.nodes]
        later = [node for node, _ in self.nodes[names.index(name) + 1:]
                 if node.name in self.activate and node.name not in self.requested]
        if not later:
            return ""
        return (f"; {', '.join(full_name(n) for n in later)} wait for it and are activated "
                "once it is active")


def graph_entities(nodes: Sequence[GraphNode], activate: Iterable[str],
                   logger: Any = None) -> list[Any]:
    """Launch entities of a graph: its plain nodes, then its lifecycle nodes and their sequence.

    Args:
        nodes: the graph (``robot_graph(...)``, ``sim_graph(...)``, ...).
        activate: names of the lifecycle nodes the launch activates (others: configured only).
        logger: where the lifecycle sequence reports (tests pass theirs).
    """
    plain = [node_action(node) for node in nodes if not node.spec.lifecycle]
    managed = [node for name in LIFECYCLE_ORDER for node in nodes
               if node.spec.lifecycle and node.name == name]
    sequence = LifecycleSequence([(node, lifecycle_node_action(node)) for node in managed],
                                 activate, logger=logger)
    return [*plain, *sequence.entities()]


def _configure_then_activate(name: str) -> str:
    """The operator's command line: configure, and activate only once it is configured
    (``ros2 lifecycle set`` exits 0 after "Transitioning failed", so ``&&`` alone would not
    stop there)."""
    return (f"ros2 lifecycle set {name} configure && ros2 lifecycle get {name} | grep -q "
            f"'^inactive' && ros2 lifecycle set {name} activate")
