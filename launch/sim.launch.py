"""The simulated robot: mujoco_sim publishing /clock, and the bring-up on simulation time.

    ros2 launch humanoid_balance sim.launch.py [sensor_type:=ft] [real_time_factor:=1.0]
        [rviz:=true]

The waist's CAN drives are simulated on a python-can ``virtual`` bus, which
lives inside one process: separate processes cannot share it, so this launch
file holds the waist joints in the simulation and does not start the waist
controller. ``humanoid-balance demo`` runs the simulation and every node,
the waist controller on a shared virtual bus included, in one process.
"""

from __future__ import annotations

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

PACKAGE = "humanoid_balance"


def generate_launch_description() -> LaunchDescription:
    """Simulation + bring-up with use_sim_time."""
    share = get_package_share_directory(PACKAGE)
    return LaunchDescription([
        DeclareLaunchArgument("sensor_type", default_value="ft", description="ft | fsr"),
        DeclareLaunchArgument("real_time_factor", default_value="1.0"),
        DeclareLaunchArgument("sensor_noise", default_value="1.0"),
        DeclareLaunchArgument("rviz", default_value="false"),
        Node(package=PACKAGE, executable="mujoco_sim", name="mujoco_sim", output="screen",
             parameters=[os.path.join(share, "config", "sim.yaml"), {
                 "real_time_factor": LaunchConfiguration("real_time_factor"),
                 "sensor_noise": LaunchConfiguration("sensor_noise"),
             }]),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(os.path.join(share, "launch", "bringup.launch.py")),
            launch_arguments={"use_sim_time": "true", "waist": "false",
                              "sensor_type": LaunchConfiguration("sensor_type")}.items(),
        ),
        Node(package="rviz2", executable="rviz2", arguments=["-d", os.path.join(
            share, "config", "balance.rviz")], parameters=[{"use_sim_time": True}],
            condition=IfCondition(LaunchConfiguration("rviz"))),
    ])
