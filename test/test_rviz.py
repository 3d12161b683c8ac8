"""config/balance.rviz shows only what the graph publishes, in frames TF has.

Each display's topic must be published by a node of the graph
(:data:`humanoid_balance.graph.NODES`, read from the node's source) with the
message type the display takes, and be listed under that node in
docs/INTERFACES.md; ``/robot_description`` comes from ``robot_state_publisher``,
which the launch files start beside the graph. Every frame rviz needs (the fixed
frame and each display's messages' frame_id) must be a link of the URDF (what
``robot_state_publisher`` puts on TF) or ``world`` (published to the robot by
``mujoco_sim`` in simulation, by the user's state estimator on a robot).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from humanoid_balance.graph import NODES
from humanoid_balance.resources import config_path, urdf_path

REPO = Path(__file__).resolve().parent.parent
#: rviz display class -> the message type it subscribes to
DISPLAY_TYPES = {
    "rviz_default_plugins/MarkerArray": "MarkerArray",
    "rviz_default_plugins/Marker": "Marker",
    "rviz_default_plugins/Polygon": "PolygonStamped",
    "rviz_default_plugins/PointStamped": "PointStamped",
    "rviz_default_plugins/Pose": "PoseStamped",
    "rviz_default_plugins/RobotModel": "String",
}
#: topics published beside the graph by the launch files (launch_graph.robot_state_publisher)
LAUNCHED_PUBLISHERS = {"/robot_description": ("robot_state_publisher", "String")}
SIDES = ("left", "right")
_PUBLISHER = re.compile(
    r"create_(?:lifecycle_)?publisher\(\s*(\w+),\s*(f?)\"([^\"]+)\"")


def _rviz() -> dict[str, Any]:
    with open(config_path("balance.rviz")) as stream:
        document: dict[str, Any] = yaml.safe_load(stream)
    return document


def _displays(displays: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every display, those in groups too."""
    for display in displays:
        yield display
        yield from _displays(display.get("Displays", []))


def _topic_displays() -> list[tuple[str, str, str]]:
    """(display name, class, topic) of every display that subscribes to a topic."""
    out = []
    for display in _displays(_rviz()["Visualization Manager"]["Displays"]):
        for key in ("Topic", "Description Topic"):
            if isinstance(display.get(key), dict) and display[key].get("Value"):
                out.append((display["Name"], display["Class"], display[key]["Value"]))
    return out


def node_publishers() -> dict[str, tuple[str, str]]:
    """topic -> (node, message type) of every publisher in the graph's nodes' sources."""
    out: dict[str, tuple[str, str]] = {}
    for name, spec in NODES.items():
        source = (REPO / "humanoid_balance" / "nodes" / f"{spec.executable}.py").read_text()
        for msgtype, is_f, topic in _PUBLISHER.findall(source):
            topics = [re.sub(r"\{\w+\}", side, topic) for side in SIDES] if is_f else [topic]
            for each in topics:
                out[each] = (name, msgtype)
    return out


def _interfaces_section(node: str) -> str:
    """The node's section of docs/INTERFACES.md (up to the next ``## `` heading)."""
    text = (REPO / "docs" / "INTERFACES.md").read_text()
    match = re.search(rf"^## {re.escape(node)}\n(.*?)(?=^## )", text, re.S | re.M)
    assert match, f"docs/INTERFACES.md has no section '## {node}'"
    return match.group(1)


def _urdf_links() -> set[str]:
    return {link.attrib["name"]
            for link in ElementTree.parse(urdf_path("humanoid")).getroot().iter("link")}


def _frame_of(topic: str) -> str:
    """The frame_id the graph's node stamps ``topic`` with (from its shipped parameters or source)."""
    node = node_publishers()[topic][0]
    if node == "zmp_estimator":
        with open(config_path(NODES[node].parameter_file)) as stream:
            parameters = yaml.safe_load(stream)[f"/**/{node}"]["ros__parameters"]
        return str(parameters["world_frame_id"])
    if topic == "/arm_balance/model_zmp":
        source = (REPO / "humanoid_balance" / "nodes" / "arm_balance.py").read_text()
        match = re.search(r"_zmp_writer = cdr\.PointStampedWriter\(\"(\w+)\"\)", source)
        assert match, "arm_balance's model-ZMP writer and its frame were not found"
        return match.group(1)
    raise AssertionError(f"no rule for the frame of {topic} ({node}): add one to the test")


_DISPLAYED = [(name, cls, topic) for name, cls, topic in _topic_displays()
              if topic not in LAUNCHED_PUBLISHERS]


def test_rviz_has_displays_with_topics() -> None:
    """The file's displays name the ZMP markers, the support polygon and the model ZMP."""
    assert {topic for _, _, topic in _topic_displays()} >= {
        "/zmp/markers", "/support_polygon", "/arm_balance/model_zmp", "/robot_description"}


@pytest.mark.parametrize(("display", "cls", "topic"), _DISPLAYED,
                         ids=[topic for _, _, topic in _DISPLAYED])
def test_display_topic_is_published_with_its_type(display: str, cls: str, topic: str) -> None:
    """A graph node publishes the display's topic, with the type the display takes."""
    publishers = node_publishers()
    assert topic in publishers, f"display {display!r}: no node of the graph publishes {topic}"
    assert publishers[topic][1] == DISPLAY_TYPES[cls], (display, publishers[topic])


@pytest.mark.parametrize(("display", "cls", "topic"), _DISPLAYED,
                         ids=[topic for _, _, topic in _DISPLAYED])
def test_display_topic_is_in_the_interfaces(display: str, cls: str, topic: str) -> None:
    """docs/INTERFACES.md lists the display's topic under the node that publishes it."""
    node = node_publishers()[topic][0]
    assert f"`{topic}`" in _interfaces_section(node), (display, node)


def test_robot_description_comes_from_the_launched_state_publisher() -> None:
    """/robot_description is robot_state_publisher's, which the launch files start, latched."""
    source = (REPO / "humanoid_balance" / "launch_graph.py").read_text()
    assert 'executable="robot_state_publisher"' in source
    model = next(d for d in _displays(_rviz()["Visualization Manager"]["Displays"])
                 if d["Class"] == "rviz_default_plugins/RobotModel")
    assert model["Description Topic"]["Value"] == "/robot_description"
    assert model["Description Topic"]["Durability Policy"] == "Transient Local"


def test_fixed_frame_is_world_or_a_urdf_link() -> None:
    """The fixed frame is ``world`` or a URDF link (on TF from robot_state_publisher)."""
    fixed = _rviz()["Visualization Manager"]["Global Options"]["Fixed Frame"]
    assert fixed in _urdf_links() | {"world"}, fixed


@pytest.mark.parametrize("topic", [t for _, _, t in _DISPLAYED])
def test_display_frame_is_world_or_a_urdf_link(topic: str) -> None:
    """The frame_id of each displayed topic's messages is ``world`` or a URDF link."""
    frame = _frame_of(topic)
    assert frame in _urdf_links() | {"world"}, f"{topic} is stamped in {frame!r}, not on TF"
