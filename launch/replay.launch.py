"""Replay a recorded bag into the ZMP estimator (and rviz) on the bag's clock.

    ros2 launch humanoid_balance replay.launch.py bag:=/path/to/bag [rate:=1.0] [rviz:=true]

Plays the bag with ``ros2 bag play --clock`` and runs the estimators with
``use_sim_time``, exactly as ``humanoid-balance replay BAG`` does on a machine
without rosbag2. Motor-commanding nodes are not started.
"""

from __future__ import annotations

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, ExecuteProcess
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

PACKAGE = "humanoid_balance"


def generate_launch_description() -> LaunchDescription:
    """Bag player + ZMP estimator on simulation time."""
    share = get_package_share_directory(PACKAGE)
    with open(os.path.join(share, "urdf", "humanoid.urdf")) as f:
        robot_description = f.read()
    return LaunchDescription([
        DeclareLaunchArgument("bag", description="rosbag2 directory"),
        DeclareLaunchArgument("rate", default_value="1.0"),
        DeclareLaunchArgument("sensor_type", default_value="ft"),
        DeclareLaunchArgument("rviz", default_value="false"),
        ExecuteProcess(cmd=["ros2", "bag", "play", "--clock", "--rate",
                            LaunchConfiguration("rate"), LaunchConfiguration("bag")],
                       output="screen"),
        Node(package="robot_state_publisher", executable="robot_state_publisher",
             parameters=[{"robot_description": robot_description, "use_sim_time": True}]),
        Node(package=PACKAGE, executable="zmp_estimator", name="zmp_estimator", output="screen",
             parameters=[os.path.join(share, "config", "zmp.yaml"),
                         {"sensor_type": LaunchConfiguration("sensor_type"),
                          "use_sim_time": True}]),
        Node(package="rviz2", executable="rviz2", arguments=["-d", os.path.join(
            share, "config", "balance.rviz")], parameters=[{"use_sim_time": True}],
            condition=IfCondition(LaunchConfiguration("rviz"))),
    ])
