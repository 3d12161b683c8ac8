"""Bring up humanoid_balance on the robot: ZMP estimator, arm balance, waist controller.

    ros2 launch humanoid_balance bringup.launch.py [can_interface:=socketcan] [can_channel:=can0]
        [sensor_type:=ft] [job_arm:=right] [urdf_path:=] [namespace:=] [use_sim_time:=false]
        [activate:=true] [waist:=true] [identification:=false] [activate_identification:=false]
        [robot_state_publisher:=true] [rviz:=false] [params_file:=]
        [command_interface:=joint_state|joint_trajectory|forward_position] [ros2_control:=false]

The nodes, their parameter files, overrides and lifecycle order come from
``humanoid_balance.graph.robot_graph`` (``--show-args`` lists the arguments with
the graph's defaults). The motor-commanding lifecycle nodes are configured at
start; each is activated (when ``activate``) once it configured successfully and
the nodes before it in ``graph.LIFECYCLE_ORDER`` are active. A failed activation
is logged once, as an error saying what to do, and left to the operator: fix the
cause, then ``ros2 lifecycle set /waist_controller activate``. No retry.

``params_file``: a team's parameter file, given to each node after the
package's ``config/*.yaml`` (checked before any node starts). ``namespace``
moves every node, topic, service, TF and rviz display into it (two robots on
one domain share nothing).

Beside a ros2_control robot (``config/ros2_control_example.yaml``),
``ros2_control:=true`` reads the inputs from its broadcasters and
``command_interface`` picks the arm controller the commands go to.

DDS is left to the user's own settings (no loopback profile) so that rviz on an
operator's machine can join the graph.
"""

from __future__ import annotations

from launch import LaunchDescription
from launch.actions import OpaqueFunction
from launch.launch_context import LaunchContext

from humanoid_balance.graph import robot_graph
from humanoid_balance.launch_graph import (
    argument,
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

GRAPH_ARGUMENTS = ("can_interface", "can_channel", "sensor_type", "job_arm", "urdf_path",
                   "namespace", "use_sim_time", "waist", "identification", "command_interface",
                   "ros2_control")


def _entities(context: LaunchContext) -> list:
    keywords = graph_keywords(context, robot_graph, GRAPH_ARGUMENTS)
    nodes = with_params_file(context, robot_graph(**keywords))
    activate = {"arm_balance", "waist_controller"} if switch(context, "activate") else set()
    if switch(context, "activate_identification"):
        activate.add("identification_executor")
    entities = graph_entities(nodes, activate)
    if switch(context, "robot_state_publisher"):
        entities.append(robot_state_publisher(argument(context, "urdf_path"),
                                              keywords["namespace"], keywords["use_sim_time"]))
    if switch(context, "rviz"):
        entities.append(rviz(keywords["use_sim_time"], keywords["namespace"]))
    return entities


def generate_launch_description() -> LaunchDescription:
    """The robot bring-up."""
    return LaunchDescription([
        *graph_arguments(robot_graph, GRAPH_ARGUMENTS),
        params_file_argument(),
        switch_argument("activate", True),
        switch_argument("activate_identification", False),
        switch_argument("robot_state_publisher", True),
        switch_argument("rviz", False),
        OpaqueFunction(function=_entities),
    ])
