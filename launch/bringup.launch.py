"""Bring up humanoid_balance on the robot: ZMP estimator, arm balance, waist controller.

    ros2 launch humanoid_balance bringup.launch.py [use_sim_time:=false] [sensor_type:=ft]
        [activate:=true] [identification:=false]

DDS is left to the user's own settings (no loopback profile) so that rviz on an
operator's machine can join the graph. The motor-commanding lifecycle nodes are
configured, then activated when ``activate`` is true (otherwise they wait in
``inactive`` for ``ros2 lifecycle set <node> activate``).
"""

from __future__ import annotations

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, OpaqueFunction, RegisterEventHandler
from launch.conditions import IfCondition
from launch.events import matches_action
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import LifecycleNode, Node
from launch_ros.event_handlers import OnStateTransition
from launch_ros.events.lifecycle import ChangeState
from lifecycle_msgs.msg import Transition

PACKAGE = "humanoid_balance"


def _share(*parts: str) -> str:
    return os.path.join(get_package_share_directory(PACKAGE), *parts)


def _managed(node: LifecycleNode, activate: LaunchConfiguration) -> list:
    """Configure ``node`` at start, then activate it once inactive if ``activate``."""
    configure = EmitEvent(event=ChangeState(
        lifecycle_node_matcher=matches_action(node), transition_id=Transition.TRANSITION_CONFIGURE))
    activate_on_inactive = RegisterEventHandler(
        OnStateTransition(
            target_lifecycle_node=node, goal_state="inactive",
            entities=[EmitEvent(event=ChangeState(
                lifecycle_node_matcher=matches_action(node),
                transition_id=Transition.TRANSITION_ACTIVATE))],
        ),
        condition=IfCondition(activate),
    )
    return [node, activate_on_inactive, configure]


def _nodes(context, *args, **kwargs) -> list:  # the OpaqueFunction signature
    use_sim_time = LaunchConfiguration("use_sim_time")
    activate = LaunchConfiguration("activate")
    sim_time = {"use_sim_time": use_sim_time}
    urdf = _share("urdf", "humanoid.urdf")
    with open(urdf) as f:
        robot_description = f.read()
    zmp_config = _share("config", "zmp.yaml")
    sensor_type = LaunchConfiguration("sensor_type").perform(context)
    actions: list = [
        Node(package="robot_state_publisher", executable="robot_state_publisher",
             parameters=[{"robot_description": robot_description}, sim_time]),
        Node(package=PACKAGE, executable="zmp_estimator", name="zmp_estimator",
             parameters=[zmp_config, {"sensor_type": sensor_type}, sim_time], output="screen"),
    ]
    arm = LifecycleNode(package=PACKAGE, executable="arm_balance", name="arm_balance",
                        namespace="", parameters=[_share("config", "arm_balance.yaml"), sim_time],
                        output="screen")
    waist = LifecycleNode(package=PACKAGE, executable="waist_controller", name="waist_controller",
                          namespace="", parameters=[_share("config", "waist.yaml"), sim_time],
                          output="screen")
    actions += _managed(arm, activate)
    if LaunchConfiguration("waist").perform(context).lower() in ("true", "1"):
        actions += _managed(waist, activate)
    if LaunchConfiguration("identification").perform(context).lower() in ("true", "1"):
        ident = LifecycleNode(
            package=PACKAGE, executable="identification_executor",
            name="identification_executor", namespace="",
            parameters=[_share("config", "identification.yaml"), sim_time], output="screen")
        # configured only: the identification moves the arm when /identification/start is called
        actions += _managed(ident, LaunchConfiguration("activate_identification"))
    return actions


def generate_launch_description() -> LaunchDescription:
    """The robot bring-up."""
    return LaunchDescription([
        DeclareLaunchArgument("use_sim_time", default_value="false"),
        DeclareLaunchArgument("sensor_type", default_value="ft", description="ft | fsr"),
        DeclareLaunchArgument("activate", default_value="true",
                              description="activate the motor nodes after configuring them"),
        DeclareLaunchArgument("waist", default_value="true",
                              description="start the waist controller (needs its CAN bus)"),
        DeclareLaunchArgument("identification", default_value="false",
                              description="start the identification executor"),
        DeclareLaunchArgument("activate_identification", default_value="false"),
        OpaqueFunction(function=_nodes),
    ])
