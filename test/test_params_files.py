"""Parameter files as rclpy reads them (``humanoid_balance.params.files``) and a team's file
applied over the package's (``graph.apply_parameter_file``, the launch files' ``params_file``).

The merge order and the scalar types are checked against rclpy itself: a node built in
this process with the same ``--params-file`` / ``-p`` arguments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from humanoid_balance.exceptions import ConfigurationError
from humanoid_balance.graph import apply_parameter_file, robot_graph, sim_graph
from humanoid_balance.params.files import (
    key_matches,
    merged_parameters,
    node_key,
    package_parameters,
    read_parameter_file,
)


@pytest.mark.parametrize(("key", "fqn", "matches"), [
    ("/**/zmp_estimator", "/zmp_estimator", True),
    ("/**/zmp_estimator", "/robot1/zmp_estimator", True),
    ("/**/zmp_estimator", "/team_a/robot1/zmp_estimator", True),
    ("/**/zmp_estimator", "/robot1/arm_balance", False),
    ("zmp_estimator", "/zmp_estimator", True),
    ("zmp_estimator", "/robot1/zmp_estimator", False),
    ("/*/zmp_estimator", "/robot1/zmp_estimator", True),
    ("/*/zmp_estimator", "/zmp_estimator", False),
    ("/**", "/robot1/zmp_estimator", True),
    ("/robot1/zmp_estimator", "/robot2/zmp_estimator", False),
    ("robot1/zmp_estimator", "/robot1/zmp_estimator", True),
])
def test_key_matches_as_rclpy(key: str, fqn: str, matches: bool) -> None:
    """A section key applies to a node's full name by rclpy's rule (/* one token, /** any)."""
    assert key_matches(key, fqn) is matches


#: file layouts whose merge is compared with rclpy's: (files, overrides) per case
LAYOUTS: dict[str, tuple[list[str], dict[str, Any]]] = {
    "package then team, wildcard keys": ([
        "/**/probe:\n  ros__parameters:\n    a: 1.0\n    b: 2.0\n",
        "/**/probe:\n  ros__parameters:\n    a: 10.0\n"], {}),
    "team keyed by the full name, then overrides": ([
        "/**/probe:\n  ros__parameters:\n    a: 1.0\n    b: 2.0\n",
        "/robot1/probe:\n  ros__parameters:\n    a: 10.0\n    b: 20.0\n"], {"b": 7.0}),
    "nested namespace keys and /**": ([
        "/**/probe:\n  ros__parameters:\n    a: 1.0\n",
        "robot1:\n  probe:\n    ros__parameters:\n      a: 3.0\n/**:\n  ros__parameters:\n"
        "    a: 4.0\n    c: x\n"], {}),
    "a later wildcard section over a specific one": ([
        "/robot1/probe:\n  ros__parameters:\n    a: 1.0\n/**:\n  ros__parameters:\n    a: 2.0\n",
        "/robot1/probe:\n  ros__parameters:\n    a: 5.0\n"], {"a": 9.0}),
    "another robot's section": ([
        "/robot2/probe:\n  ros__parameters:\n    a: 1.0\n/*/probe:\n  ros__parameters:\n"
        "    d: [1, 2]\n"], {}),
}


def _rclpy_parameters(context: Any, paths: list[Path], overrides: dict[str, Any]) -> dict[str, Any]:
    """What rclpy gives node /robot1/probe started with these files and ``-p`` overrides."""
    from rclpy.node import Node

    args = ["--ros-args"]
    for path in paths:
        args += ["--params-file", str(path)]
    for name, value in overrides.items():
        args += ["-p", f"{name}:={value!r}"]
    node = Node("probe", namespace="/robot1", context=context, cli_args=args,
                automatically_declare_parameters_from_overrides=True)
    try:
        names = node.list_parameters([], 0).names  # depth 0: every level
        return {name: node.get_parameter(name).value for name in names
                if name not in ("use_sim_time", "start_type_description_service")}
    finally:
        node.destroy_node()


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_merged_parameters_are_what_rclpy_gives(layout: str, tmp_path: Path,
                                                rclpy_context: Any) -> None:
    """merged_parameters (files in order, -p overrides under /**) equals what an rclpy node in
    /robot1 receives from the same arguments, value and type."""
    texts, overrides = LAYOUTS[layout]
    paths = []
    for k, text in enumerate(texts):
        paths.append(tmp_path / f"{k}.yaml")
        paths[-1].write_text(text)
    expected = _rclpy_parameters(rclpy_context, paths, overrides)
    merged = merged_parameters([read_parameter_file(p) for p in paths], "/robot1/probe", overrides)
    assert {k: list(v) if isinstance(v, tuple) else v for k, v in merged.items()} == \
        {k: list(v) if isinstance(v, (list, tuple)) or hasattr(v, "tolist") else v
         for k, v in expected.items()}
    assert {k: type(v) for k, v in merged.items() if not isinstance(v, list)} == \
        {k: type(v) for k, v in expected.items() if not isinstance(v, (list, tuple))}


def test_scalars_are_typed_as_rcl_types_them(tmp_path: Path, rclpy_context: Any) -> None:
    """13 int, 13.0 and 1e-5 float, y/on/yes bool, quoted "13" str, as rclpy receives them."""
    path = tmp_path / "types.yaml"
    path.write_text('/**/probe:\n  ros__parameters:\n    i: 13\n    f: 13.0\n    e: 1e-5\n'
                    '    y: y\n    o: "on"\n    s: "13"\n    n: off\n    inf: -.inf\n')
    read = read_parameter_file(path).sections[0].parameters
    expected = _rclpy_parameters(rclpy_context, [path], {})
    assert read == expected
    assert {k: type(v).__name__ for k, v in read.items()} == {
        "i": "int", "f": "float", "e": "float", "y": "bool", "o": "str", "s": "str", "n": "bool",
        "inf": "float"}


def test_package_parameters_reads_the_any_namespace_section() -> None:
    """package_parameters(node) is the /**/node section of the node's config file, nested."""
    assert package_parameters("waist_controller")["can"]["interface"] == "virtual"
    assert node_key("zmp_estimator") == "/**/zmp_estimator"


def test_package_parameters_names_a_file_without_the_section(tmp_path: Path) -> None:
    """A file keyed the old way (node name only) is refused, naming the key it needs."""
    old = tmp_path / "zmp.yaml"
    old.write_text("zmp_estimator:\n  ros__parameters:\n    gravity: 1.635\n")
    with pytest.raises(ConfigurationError) as info:
        package_parameters("zmp_estimator", old)
    assert str(info.value) == f"{old} has no /**/zmp_estimator: ros__parameters section"


# --- a team's file over the package's ------------------------------------------------------------


def test_a_team_file_is_given_to_every_node_after_the_package_file(tmp_path: Path) -> None:
    """apply_parameter_file: each node's parameter_files gains the team file; nothing to warn."""
    team = tmp_path / "team.yaml"
    team.write_text("/**/zmp_estimator:\n  ros__parameters:\n    contact_threshold: 35.0\n")
    check = apply_parameter_file(sim_graph(namespace="robot1"), team)
    assert [n.parameter_files for n in check.nodes] == [(str(team),)] * 4
    assert check.warnings == []
    assert apply_parameter_file(sim_graph(), "").nodes == sim_graph()


def test_a_copied_package_file_with_one_change_works_on_the_robot(tmp_path: Path) -> None:
    """The README's workflow: config/waist.yaml copied whole, kp changed: accepted; its
    can.interface (virtual) under bringup's can_interface:=socketcan is a warning, and
    socketcan is used."""
    text = (Path(__file__).resolve().parent.parent / "config" / "waist.yaml").read_text()
    team = tmp_path / "waist.yaml"
    team.write_text(text.replace("    kp: 13.0", "    kp: 11.0"))
    check = apply_parameter_file(robot_graph(), team)
    assert check.warnings == [
        f"params_file {team} sets can.interface: 'virtual' for /waist_controller; the launch "
        "argument can_interface sets it to 'socketcan', which is used",
        f"params_file {team} sets can.channel: 'waist' for /waist_controller; the launch argument "
        "can_channel sets it to 'can0', which is used"]
    waist = check.nodes[2]
    files = [read_parameter_file(waist.spec.parameter_path()),
             *(read_parameter_file(p) for p in waist.parameter_files)]
    got = merged_parameters(files, waist.full_name, waist.parameters, overrides_key=waist.full_name)
    assert (got["kp"], got["can.interface"]) == (11.0, "socketcan")


def test_every_problem_of_a_team_file_is_listed(tmp_path: Path) -> None:
    """All the file's problems in one error, each with its section."""
    team = tmp_path / "team.yaml"
    team.write_text("/**/waist_controller:\n  ros__parameters:\n    kp: 13\n    kv: [1.0]\n"
                    "/**:\n  ros__parameters:\n    gravity: 1\n    not_a_parameter: 1\n")
    with pytest.raises(ConfigurationError) as info:
        apply_parameter_file(robot_graph(waist=True), team)
    assert str(info.value) == (
        f"params_file {team} would not work:\n"
        "  /**: zmp_estimator: gravity: 1 is read as int, the node declares float (it would refuse "
        "to start); write 1.0\n"
        "  /**: arm_balance: gravity: 1 is read as int, the node declares float (it would refuse "
        "to start); write 1.0\n"
        "  /**/waist_controller: waist_controller: kp: 13 is read as int, the node declares float "
        "(it would refuse to start); write 13.0\n"
        "  /**/waist_controller: waist_controller: kv: [1.0] is read as float[], the node declares "
        "float (it would refuse to start)")


def test_a_section_that_would_override_the_launch_is_refused(tmp_path: Path) -> None:
    """A section after the node's own that sets a value the launch overrides would win over the
    launch (rclpy applies matching sections in file order): refused, saying how to key it."""
    team = tmp_path / "team.yaml"
    team.write_text("/zmp_estimator:\n  ros__parameters:\n    contact_threshold: 30.0\n"
                    "/**:\n  ros__parameters:\n    use_sim_time: false\n")
    with pytest.raises(ConfigurationError) as info:
        apply_parameter_file(sim_graph(rmc=False, waist=False), team)
    assert "/zmp_estimator: a later section of" in str(info.value)
    assert "would set use_sim_time to False over the launch's True" in str(info.value)


def test_the_ros2_control_example_passes_as_a_params_file() -> None:
    """config/ros2_control_example.yaml (controllers' sections and arm_balance's) as params_file:
    its arm_balance section is taken, the controllers' sections are named once as not used."""
    path = Path(__file__).resolve().parent.parent / "config" / "ros2_control_example.yaml"
    check = apply_parameter_file(robot_graph(ros2_control=True, command_interface="joint_trajectory"),
                                 path)
    assert check.warnings == [
        f"params_file {path}: controller_manager, left_foot_ft_broadcaster, "
        "right_foot_ft_broadcaster, waist_imu_broadcaster, joint_trajectory_controller, "
        "forward_position_controller apply to no node of this launch (/zmp_estimator, "
        "/arm_balance, /waist_controller): not used"]
    arm = check.nodes[1]
    assert merged_parameters([read_parameter_file(path)], arm.full_name)["command_joints"]
