"""The simulated robot: mujoco_sim on /clock and the robot's nodes on simulation time.

    ros2 launch humanoid_balance sim.launch.py [sensor_type:=ft] [job_arm:=right]
        [real_time_factor:=1.0] [sensor_noise:=1.0] [lock_step:=false] [rmc:=true]
        [waist:=true] [namespace:=] [activate:=true] [robot_state_publisher:=true] [rviz:=false]
        [params_file:=]

The nodes come from ``humanoid_balance.graph.sim_graph``, as in
``humanoid-balance demo``: ``mujoco_sim``, ``zmp_estimator``, ``arm_balance``
(one cycle per ``/joint_states``) and ``waist_controller``. The waist controller
runs against simulated CAN drives hosted in its own process on a python-can
``virtual`` bus (parameter ``simulated_drives``): a virtual bus cannot be shared
between processes, and a Linux ``vcan`` interface is not on every machine (nor
in CI). Its joint states go to ``/waist/joint_states``, which the MuJoCo waist
joints follow. ``arm_balance`` then ``waist_controller`` are configured and
activated as on the robot (``bringup.launch.py``). ``params_file`` and
``namespace`` as there; under a namespace each simulated robot has its own
``/clock`` (``/robot1/clock``), so two simulations share one domain.
"""

from __future__ import annotations

from launch import LaunchDescription
from launch.actions import OpaqueFunction
from launch.launch_context import LaunchContext

from humanoid_balance.graph import sim_graph
from humanoid_balance.launch_graph import (
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

GRAPH_ARGUMENTS = ("sensor_type", "job_arm", "real_time_factor", "sensor_noise", "lock_step",
                   "rmc", "waist", "namespace")


def _entities(context: LaunchContext) -> list:
    keywords = graph_keywords(context, sim_graph, GRAPH_ARGUMENTS)
    nodes = with_params_file(context, sim_graph(**keywords))
    activate = {"arm_balance", "waist_controller"} if switch(context, "activate") else set()
    entities = graph_entities(nodes, activate)
    if switch(context, "robot_state_publisher"):
        entities.append(robot_state_publisher("", keywords["namespace"], use_sim_time=True))
    if switch(context, "rviz"):
        entities.append(rviz(use_sim_time=True, namespace=keywords["namespace"]))
    return entities


def generate_launch_description() -> LaunchDescription:
    """Simulation and the robot's nodes on simulation time."""
    return LaunchDescription([
        *graph_arguments(sim_graph, GRAPH_ARGUMENTS),
        params_file_argument(),
        switch_argument("activate", True),
        switch_argument("robot_state_publisher", True),
        switch_argument("rviz", False),
        OpaqueFunction(function=_entities),
    ])
