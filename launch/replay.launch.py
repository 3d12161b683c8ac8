"""Replay a recorded bag into the ZMP estimator (and rviz) on the bag's clock.

    ros2 launch humanoid_balance replay.launch.py bag:=/path/to/bag [rate:=1.0] [sensor_type:=ft]
        [player:=ros2] [delay:=1.0] [wait_timeout:=30.0] [robot_state_publisher:=true] [rviz:=false]
        [params_file:=]

The estimator comes from ``humanoid_balance.graph.replay_graph`` (on
``use_sim_time``). The bag player starts only once the estimator subscribes to
its inputs: ``humanoid-balance wait-for`` runs first and the player starts on
its successful exit, so that the first seconds of the bag are not lost; if the
estimator never subscribes, the launch says so and stops. ``player``: ``ros2``
(``ros2 bag play``) or ``humanoid_balance`` (``humanoid-balance replay``, for a
machine without rosbag2; it needs the ``rosbags`` Python package). Either makes
exactly one ``/clock``: the bag's own when it has one (a simulation's, or
``humanoid-balance record --topics /clock ...``), else one from the log times
(``ros2 bag play --clock``); see ``humanoid_balance.graph.bag_player_command``.
``params_file``: a team's parameter file for the estimator, over the package's.
Motor-commanding nodes are not started.
"""

from __future__ import annotations

import launch.logging
from launch import LaunchDescription
from launch.actions import (
    DeclareLaunchArgument,
    EmitEvent,
    ExecuteProcess,
    LogInfo,
    OpaqueFunction,
    RegisterEventHandler,
)
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.launch_context import LaunchContext
from launch_ros.substitutions import ExecutableInPackage

from humanoid_balance.graph import (
    PACKAGE,
    PLAYERS,
    bag_player_command,
    replay_graph,
    zmp_estimator_inputs,
)
from humanoid_balance.launch_graph import (
    argument,
    full_name,
    graph_arguments,
    graph_entities,
    graph_keywords,
    params_file_argument,
    robot_state_publisher,
    rviz,
    switch,
    switch_argument,
    with_params_file,
)

GRAPH_ARGUMENTS = ("sensor_type",)


def _player(context: LaunchContext) -> ExecuteProcess:
    """The bag player, with one /clock (the bag's own, or from the log times when it has none)."""
    player = argument(context, "player")
    command = bag_player_command(player, *(argument(context, name)
                                           for name in ("bag", "rate", "delay")))
    cmd = command if player == "ros2" else \
        [ExecutableInPackage("humanoid-balance", PACKAGE), *command]
    return ExecuteProcess(cmd=cmd, name="bag_player", output="screen")


def _entities(context: LaunchContext) -> list:
    keywords = graph_keywords(context, replay_graph, GRAPH_ARGUMENTS)
    nodes = with_params_file(context, replay_graph(**keywords))
    player = _player(context)  # a bag without metadata.yaml stops the launch before any node
    estimator = next(node for node in nodes if node.name == "zmp_estimator")
    topics = zmp_estimator_inputs(keywords["sensor_type"])
    timeout = argument(context, "wait_timeout")
    wait = ExecuteProcess(
        cmd=[ExecutableInPackage("humanoid-balance", PACKAGE), "wait-for", *topics,
             "--node", full_name(estimator), "--timeout", timeout, "--robot-dds"],
        name="wait_for_zmp_estimator", output="screen")

    def after_wait(event, context: LaunchContext) -> list:  # OnProcessExit's signature
        if event.returncode == 0:
            return [LogInfo(msg=f"{full_name(estimator)} subscribes: starting the bag player"),
                    player]
        launch.logging.get_logger(f"{PACKAGE}.replay").error(
            f"{full_name(estimator)} did not subscribe to {' '.join(topics)} within {timeout} s "
            "(its log above says why): the bag is not played; stopping")
        return [EmitEvent(event=Shutdown(reason="the ZMP estimator never subscribed"))]

    entities = [RegisterEventHandler(OnProcessExit(target_action=wait, on_exit=after_wait)),
                *graph_entities(nodes, activate=()), wait]
    if switch(context, "robot_state_publisher"):
        entities.append(robot_state_publisher("", use_sim_time=True))
    if switch(context, "rviz"):
        entities.append(rviz(use_sim_time=True))
    return entities


def generate_launch_description() -> LaunchDescription:
    """The estimator on the bag's clock, then the bag player once the estimator subscribes."""
    return LaunchDescription([
        DeclareLaunchArgument("bag", description="rosbag2 directory (MCAP or sqlite3)"),
        DeclareLaunchArgument("rate", default_value="1.0", description="playback speed factor"),
        DeclareLaunchArgument("player", default_value="ros2", choices=list(PLAYERS),
                              description="ros2 (ros2 bag play) | humanoid_balance "
                                          "(humanoid-balance replay, without rosbag2)"),
        DeclareLaunchArgument("delay", default_value="1.0",
                              description="s the player waits after it starts, for discovery"),
        DeclareLaunchArgument("wait_timeout", default_value="30.0",
                              description="s to wait for the estimator's subscriptions"),
        *graph_arguments(replay_graph, GRAPH_ARGUMENTS),
        params_file_argument(),
        switch_argument("robot_state_publisher", True),
        switch_argument("rviz", False),
        OpaqueFunction(function=_entities),
    ])
