"""The package beside a ros2_control robot: config/ros2_control_example.yaml and the graph's
``ros2_control`` / ``command_interface`` options agree with each other, the URDF and the nodes."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from humanoid_balance.command_interface import COMMAND_INTERFACES, DEFAULT_TOPICS
from humanoid_balance.graph import ROS2_CONTROL_INPUTS, robot_graph
from humanoid_balance.params import spec_for

#: ros2_control's controller plugins this example may name (ros2_controllers, Humble to Kilted)
KNOWN_TYPES = {
    "joint_state_broadcaster/JointStateBroadcaster",
    "force_torque_sensor_broadcaster/ForceTorqueSensorBroadcaster",
    "imu_sensor_broadcaster/IMUSensorBroadcaster",
    "joint_trajectory_controller/JointTrajectoryController",
    "forward_command_controller/ForwardCommandController",
}


REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def example() -> dict:
    return yaml.safe_load((REPO / "config" / "ros2_control_example.yaml").read_text())


@pytest.fixture(scope="module")
def urdf() -> ET.Element:
    return ET.parse(REPO / "urdf" / "humanoid.urdf").getroot()


def test_controllers_are_real_ros2_control_types(example: dict) -> None:
    """Every controller of the example names a plugin of ros2_controllers."""
    controllers = {k: v for k, v in example["controller_manager"]["ros__parameters"].items()
                   if isinstance(v, dict)}
    assert controllers
    assert {v["type"] for v in controllers.values()} <= KNOWN_TYPES


def test_broadcasters_publish_what_the_graph_remaps(example: dict) -> None:
    """Each remapped input is the ~/wrench or ~/imu topic of a broadcaster in the example."""
    controllers = example["controller_manager"]["ros__parameters"]
    for _, source in ROS2_CONTROL_INPUTS:
        name, topic = source.strip("/").split("/")
        assert name in controllers, source
        expected = {"force_torque_sensor_broadcaster/ForceTorqueSensorBroadcaster": "wrench",
                    "imu_sensor_broadcaster/IMUSensorBroadcaster": "imu"}[controllers[name]["type"]]
        assert topic == expected


def test_frames_and_joints_exist_in_the_urdf(example: dict, urdf: ET.Element) -> None:
    """The broadcasters' frames are URDF links; the arm controllers' joints are URDF joints,
    the same in both controllers, and arm_balance's command_joints list them in that order."""
    links = {link.get("name") for link in urdf.iter("link")}
    joints = {j.get("name") for j in urdf.iter("joint") if j.get("type") != "fixed"}
    for name in ("left_foot_ft_broadcaster", "right_foot_ft_broadcaster", "waist_imu_broadcaster"):
        assert example[name]["ros__parameters"]["frame_id"] in links
    trajectory = example["joint_trajectory_controller"]["ros__parameters"]["joints"]
    forward = example["forward_position_controller"]["ros__parameters"]["joints"]
    assert trajectory == forward
    assert set(trajectory) <= joints and len(set(trajectory)) == len(trajectory)
    assert example["arm_balance"]["ros__parameters"]["command_joints"] == forward


def test_zmp_sensor_frames_match_the_broadcasters(example: dict) -> None:
    """The estimator's sensor frames are the frames the F/T broadcasters stamp."""
    spec = spec_for("zmp_estimator")
    for side in ("left", "right"):
        frame = example[f"{side}_foot_ft_broadcaster"]["ros__parameters"]["frame_id"]
        assert spec[f"{side}.sensor_frame"].default == frame


def test_node_overrides_are_declared_and_valid(example: dict) -> None:
    """Every override of this package's nodes in the example is a valid value of its spec."""
    for node in ("arm_balance",):
        spec = spec_for(node)
        values = example[node]["ros__parameters"]
        for name, value in values.items():
            assert spec.validate(name, value) is None, name


@pytest.mark.parametrize("interface", COMMAND_INTERFACES)
def test_graph_passes_the_command_interface(interface: str) -> None:
    """command_interface reaches both motor nodes (each declares it); ros2_control remaps their
    inputs."""
    for node in ("arm_balance", "identification_executor"):
        assert spec_for(node).validate("command_interface", interface) is None
    nodes = {n.name: n for n in robot_graph(command_interface=interface, ros2_control=True,
                                            identification=True)}
    for name in ("arm_balance", "identification_executor"):
        assert nodes[name].parameters.get("command_interface", "joint_state") == interface
    for node in nodes.values():
        assert set(node.remappings) == set(ROS2_CONTROL_INPUTS)
    assert DEFAULT_TOPICS["joint_trajectory"].startswith("/joint_trajectory_controller/")
    assert DEFAULT_TOPICS["forward_position"].startswith("/forward_position_controller/")


def test_graph_without_ros2_control_keeps_the_package_topics() -> None:
    """By default nothing is remapped and no command_interface is overridden."""
    for node in robot_graph(identification=True):
        assert node.remappings == ()
        assert "command_interface" not in node.parameters
