"""A team's parameter file (``params_file:=``) over the package's, checked before any node starts.

:func:`apply_parameter_file` reads the file as rcl reads it and checks each section a
node of the graph takes against the node's spec (:mod:`humanoid_balance.params`).
No rclpy here, nor pinocchio, MuJoCo or numba (as :mod:`humanoid_balance.graph`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from humanoid_balance.exceptions import ConfigurationError
from humanoid_balance.graph_nodes import GraphNode
from humanoid_balance.params import SPEC_NODES, spec_for
from humanoid_balance.params.files import (
    ParameterFile,
    merged_parameters,
    read_parameter_file,
    spec_problems,
    unmatched,
)

#: graph overrides set from a launch argument of the same meaning: parameter -> argument
ARGUMENT_OF_PARAMETER = {
    "sensor_type": "sensor_type", "job_arm": "job_arm", "urdf_path": "urdf_path",
    "use_sim_time": "use_sim_time", "can.interface": "can_interface",
    "can.channel": "can_channel", "command_interface": "command_interface",
    "real_time_factor": "real_time_factor", "sensor_noise": "sensor_noise",
    "lock_step": "lock_step",
}


@dataclass(frozen=True)
class ParameterFileCheck:
    """What :func:`apply_parameter_file` found: the nodes with the file, and warnings to log."""

    nodes: list[GraphNode]
    warnings: list[str]


def _package_file(node: GraphNode) -> ParameterFile:
    return read_parameter_file(node.spec.parameter_path())


def apply_parameter_file(nodes: Sequence[GraphNode], path: str | Path | None) -> ParameterFileCheck:
    """``nodes`` with a team's parameter file applied over the package's (``params_file:=``).

    Each node's process gets the package's file, then ``path``, then the graph's
    overrides. Before any node starts, the file is read as rcl reads it and each
    section a node takes is checked against the node's spec: a parameter the node
    does not declare (in a section that names it), a value of another ROS type
    (``13`` for a float: the node would refuse to start) or outside the spec's
    range is an error. A value the graph overrides (a launch argument such as
    ``sensor_type``, or what the graph needs, such as ``use_sim_time`` in
    simulation) is a warning: the graph's value is used.

    Args:
        nodes: a graph (:func:`robot_graph`, :func:`sim_graph`, :func:`replay_graph`).
        path: the team's file; empty or None: the nodes as they are.

    Raises:
        ConfigurationError: the file cannot be read, is no parameter file, holds no
            section for any node of the graph, or would not work (every problem listed).
    """
    if not path:
        return ParameterFileCheck(list(nodes), [])
    team = read_parameter_file(path)
    names = [node.full_name for node in nodes]
    if not any(team.matching(name) for name in names):
        raise ConfigurationError(
            f"params_file {path}: no section applies to a node of this launch ({', '.join(names)}); "
            f"its keys: {[s.key for s in team.sections]}. Key a node's section /**/<node> (any "
            "namespace) or /<namespace>/<node>, as config/*.yaml do")
    problems: list[str] = []
    others = unmatched([team], names)  # other nodes' sections (controllers, ...): fine, said once
    warnings = [f"params_file {path}: {', '.join(others)} apply to no node of this launch "
                f"({', '.join(names)}): not used"] if others else []
    for node in nodes:
        spec = spec_for(node.name) if node.name in SPEC_NODES else None
        if spec is not None:
            for section in team.matching(node.full_name):
                problems += [f"{section.key}: {p}" for p in spec_problems(
                    spec, section.parameters, named=section.names_node(node.name))]
        from_team = merged_parameters([team], node.full_name)
        # launch_ros passes the overrides under the node's full name, after the files
        result = merged_parameters([_package_file(node), team], node.full_name, node.parameters,
                                   overrides_key=node.full_name)
        for name, value in node.parameters.items():
            if name in from_team and from_team[name] != value:
                source = (f"the launch argument {ARGUMENT_OF_PARAMETER[name]}"
                          if name in ARGUMENT_OF_PARAMETER else "this launch's graph")
                warnings.append(f"params_file {path} sets {name}: {from_team[name]!r} for "
                                f"{node.full_name}; {source} sets it to {value!r}, which is used")
            if result.get(name) != value:
                problems.append(f"{node.full_name}: a later section of {path} would set {name} "
                                f"to {result.get(name)!r} over the launch's {value!r}; key it "
                                f"/**/{node.name} or /<namespace>/{node.name}")
    if problems:
        raise ConfigurationError(f"params_file {path} would not work:\n  " + "\n  ".join(problems))
    applied = [replace(node, parameter_files=(*node.parameter_files, str(path))) for node in nodes]
    return ParameterFileCheck(applied, warnings)

