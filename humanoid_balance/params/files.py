"""ROS 2 parameter files as rcl and rclpy read them: sections, wildcard keys, merge order.

A parameter file maps node names to ``ros__parameters``. The package's own
files (``config/*.yaml``) key each node's section ``/**/<node>``
(:func:`node_key`): ``/**`` matches any namespace, so a node started under
``namespace:=robot1`` takes its defaults as one without. A team's file
(``params_file:=``) may key a section by the node's full name
(``/robot1/zmp_estimator``), its name alone (``zmp_estimator``: only the node
without a namespace), a wildcard (``/**/zmp_estimator``, ``/**``, ``/*/x``) or
nested namespaces (``robot1: zmp_estimator: ros__parameters:``).

Which sections a node takes and in which order, as rclpy does it
(``_populate_node_parameters_from_rcl_params``, Humble to Kilted): rcl reads the
files in command-line order into one list of sections, a key seen again
updating its first section in place; a node then applies, in that list's order,
every section whose key matches its full name (``/*`` one token, ``/**`` any
number). :func:`merged_parameters` computes that, so that a launch can say
before the node starts what it will get.

Scalars are typed as rcl types them (:class:`RclLoader`): ``13`` is an integer,
which a node declaring a float refuses at start-up (``13.0`` is a float), ``1e-5``
a float, ``yes``/``on`` booleans; quoted values are strings.

No rclpy here: launch files and tests use it without a ROS graph.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from humanoid_balance.exceptions import ConfigurationError
from humanoid_balance.params import ParamSpec

__all__ = ["BUILTIN_PARAMETERS", "ParameterFile", "RclLoader", "Section", "key_matches",
           "merged_parameters", "node_key", "package_parameters", "read_parameter_file",
           "spec_problems"]

#: parameters every rclpy node has (or takes) besides its own: never "unknown"
BUILTIN_PARAMETERS = ("use_sim_time", "start_type_description_service")
#: prefix of rclpy's QoS override parameters (``qos_overrides./topic.publisher.depth``)
QOS_OVERRIDES = "qos_overrides."
#: the key under a node's name that holds its parameters
PARAMETERS_KEY = "ros__parameters"

_TRUE = ("Y", "y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")
_FALSE = ("N", "n", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")
_TOKEN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class RclLoader(yaml.SafeLoader):
    """YAML with rcl's scalar types (``rcl_yaml_param_parser``): plain ``13`` int, ``13.0``
    and ``1e-5`` float, ``y``/``yes``/``on``/``true`` (any of rcl's spellings) bool, the
    rest and every quoted scalar str. Mapping keys stay the text written."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """Keys as written (``on:`` is the parameter ``on``, not True)."""
        if not isinstance(node, yaml.MappingNode):
            raise yaml.constructor.ConstructorError(
                None, None, f"expected a mapping, found {node.id}", node.start_mark)
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else \
                self.construct_object(key_node, deep=deep)
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping


RclLoader.yaml_implicit_resolvers = {}
RclLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile("^(?:" + "|".join(_TRUE + _FALSE) + ")$"), None)
RclLoader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^[-+]?[0-9]+$"), None)
RclLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^(?:[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
               r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"), None)
RclLoader.add_constructor("tag:yaml.org,2002:bool",
                          lambda loader, node: node.value in _TRUE)  # type: ignore[arg-type]
RclLoader.add_constructor("tag:yaml.org,2002:int",
                          lambda loader, node: int(node.value))  # type: ignore[arg-type]


def _float(loader: yaml.SafeLoader, node: yaml.Node) -> float:
    text = str(node.value).lower()
    if text.endswith("inf"):
        return -math.inf if text.startswith("-") else math.inf
    if text.endswith("nan"):
        return math.nan
    return float(text)


RclLoader.add_constructor("tag:yaml.org,2002:float", _float)  # type: ignore[arg-type]


def node_key(name: str) -> str:
    """The key of node ``name``'s section in the package's files: ``/**/name`` (any namespace)."""
    return f"/**/{name}"


def _normalized(key: str) -> str:
    return key if key.startswith("/") else "/" + key


def key_matches(key: str, fqn: str) -> bool:
    """Section ``key`` applies to the node whose full name is ``fqn`` (rclpy's rule:
    ``/*`` is one name token, ``/**`` any number of them)."""
    pattern = _normalized(key).replace("/*", r"(/\w+)")
    return re.fullmatch(pattern, fqn) is not None


def flatten(parameters: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested parameters as ROS names: ``{"can": {"channel": x}}`` -> ``{"can.channel": x}``."""
    flat: dict[str, Any] = {}
    for key, value in parameters.items():
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


@dataclass(frozen=True)
class Section:
    """One ``ros__parameters`` block: its node key and its parameters (flat ROS names)."""

    key: str
    parameters: Mapping[str, Any]

    def names_node(self, name: str) -> bool:
        """The key names node ``name`` itself (its last token), not only a wildcard."""
        return _normalized(self.key).rsplit("/", 1)[-1] == name


@dataclass(frozen=True)
class ParameterFile:
    """A parameter file's sections in file order."""

    path: str
    sections: tuple[Section, ...]

    def matching(self, fqn: str) -> list[Section]:
        """The sections node ``fqn`` takes, in order."""
        return [s for s in self.sections if key_matches(s.key, fqn)]


def _sections(tree: Mapping[Any, Any], path: str, prefix: str) -> Iterator[Section]:
    for key, body in tree.items():
        if not isinstance(key, str) or not key.strip("/"):
            raise ConfigurationError(f"{path}: {prefix + str(key)!r} is not a node name; a "
                                     "parameter file maps node names to ros__parameters")
        name = f"{prefix}/{key.strip('/')}" if prefix else key.rstrip("/")
        if not isinstance(body, Mapping):
            raise ConfigurationError(
                f"{path}: {name}: expected a mapping with {PARAMETERS_KEY}, found {body!r}; "
                f"write\n{name}:\n  {PARAMETERS_KEY}:\n    parameter: value")
        for child, value in body.items():
            if child == PARAMETERS_KEY:
                if not isinstance(value, Mapping):
                    raise ConfigurationError(f"{path}: {name}.{PARAMETERS_KEY} must map parameter "
                                             f"names to values, found {value!r}")
                yield Section(name, flatten(value))
            else:
                yield from _sections({child: value}, path, name)


def read_parameter_file(path: str | Path) -> ParameterFile:
    """A parameter file's sections, typed as rcl types them.

    Raises:
        ConfigurationError: the file cannot be read, is not YAML, or is not shaped as a
            ROS 2 parameter file (the message says where and how to write it).
    """
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise ConfigurationError(f"parameter file {str(path)!r} cannot be read "
                                 f"({error.strerror or error}); give an existing YAML file") from None
    try:
        tree = yaml.load(text, Loader=RclLoader)  # RclLoader is a SafeLoader
    except yaml.YAMLError as error:
        raise ConfigurationError(f"parameter file {path} is not valid YAML: {error}") from None
    if not isinstance(tree, Mapping) or not tree:
        raise ConfigurationError(f"parameter file {path} holds no node sections; write\n"
                                 f"/**/zmp_estimator:\n  {PARAMETERS_KEY}:\n    parameter: value")
    return ParameterFile(str(path), tuple(_sections(tree, str(path), "")))


def merged_parameters(files: Iterable[ParameterFile], fqn: str,
                      overrides: Mapping[str, Any] | None = None,
                      overrides_key: str = "/**") -> dict[str, Any]:
    """What node ``fqn`` gets from ``files`` given in that order (then ``overrides``, passed
    under ``overrides_key`` as launch_ros or ``-p`` pass them), as rclpy merges them."""
    keyed: dict[str, dict[str, Any]] = {}  # rcl: a key seen again updates its first section
    for file in files:
        for section in file.sections:
            keyed.setdefault(_normalized(section.key), {}).update(section.parameters)
    if overrides:
        keyed.setdefault(_normalized(overrides_key), {}).update(flatten(overrides))
    merged: dict[str, Any] = {}
    for key, parameters in keyed.items():
        if key_matches(key, fqn):
            merged.update(parameters)
    return merged


def _kind(value: Any) -> str | None:
    """The ROS type of a value as rcl read it: ``int``, ``float[]``, ...; None: not one."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, (list, tuple)) and value:
        kinds = {_kind(v) for v in value}
        kind = kinds.pop() if len(kinds) == 1 else None
        if kind is not None and not kind.endswith("[]"):
            return f"{kind}[]"
    return None


def spec_problems(spec: ParamSpec, parameters: Mapping[str, Any], *, named: bool) -> list[str]:
    """Why ``parameters`` (flat) would not work on the node of ``spec``, one line each.

    Args:
        named: the section names this node (``/**/zmp_estimator``): a name the node does not
            declare is a mistake there (the node ignores it). A section for every node
            (``/**``) may hold other nodes' parameters.
    """
    problems = []
    for name, value in parameters.items():
        if name in BUILTIN_PARAMETERS or name.startswith(QOS_OVERRIDES):
            continue
        if name not in spec:
            if named:
                close = [n for n in spec.names if n.split(".")[-1] == name.split(".")[-1]]
                hint = f" (did you mean {close[0]}?)" if close else ""
                problems.append(f"{spec.node} has no parameter {name!r}{hint}: the node would "
                                "ignore it")
            continue
        param = spec[name]
        kind = _kind(value)
        if kind != param.kind:
            fix = ""
            if param.kind in ("float", "float[]") and kind in ("int", "int[]"):
                fix = f"; write {_as_float_text(value)}"
            elif kind is None:
                fix = "; arrays must hold values of one type"
            problems.append(f"{spec.node}: {name}: {value!r} is read as {kind or 'no ROS type'}, "
                            f"the node declares {param.kind} (it would refuse to start){fix}")
            continue
        problem = param.validate(value)
        if problem:
            problems.append(f"{spec.node}: {problem}")
    return problems


def _as_float_text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(f"{float(v)!r}" for v in value) + "]"
    return repr(float(value))


def package_parameters(name: str, file: str | Path | None = None) -> dict[str, Any]:
    """Node ``name``'s section of its file in the package's ``config/`` (nested, as written).

    Args:
        name: a node of :data:`humanoid_balance.graph.NODES`.
        file: another file in the same layout (default: the node's installed file).

    Raises:
        ConfigurationError: the file has no ``/**/name`` section.
    """
    from humanoid_balance.graph import NODES  # graph imports this package

    path = Path(file) if file is not None else NODES[name].parameter_path()
    tree = yaml.safe_load(path.read_text())
    key = node_key(name)
    if not isinstance(tree, Mapping) or PARAMETERS_KEY not in (tree.get(key) or {}):
        raise ConfigurationError(f"{path} has no {key}: {PARAMETERS_KEY} section")
    return dict(tree[key][PARAMETERS_KEY])


def unmatched(files: Sequence[ParameterFile], fqns: Iterable[str]) -> list[str]:
    """Keys of sections no node of ``fqns`` takes (a misspelt node name or namespace)."""
    names = list(fqns)
    return [s.key for f in files for s in f.sections
            if not any(key_matches(s.key, fqn) for fqn in names)]
