"""One declarative parameter spec per node.

Each node's parameters are written once, as a :class:`ParamSpec` in
``humanoid_balance/params/<node>.py``: name, type (taken from the default),
default, unit, range or choices, whether it may change while the node runs,
and a description. Everything else comes from that one list:

* declaration on the node and validation at configure and at run time
  (:mod:`humanoid_balance.params.ros`, the only part that imports rclpy);
* the defaults in ``config/*.yaml`` and the parameter tables in
  ``docs/INTERFACES.md`` (``python -m humanoid_balance.params --write``
  rewrites them; ``test/test_params.py`` fails when they drift).

This module imports no rclpy: the docs tool, the tests and the core use it
without ROS.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from humanoid_balance.exceptions import ConfigurationError as ParameterError

__all__ = ["SPEC_NODES", "Param", "ParamSpec", "spec_for"]

#: Nodes with a spec module ``humanoid_balance.params.<name>`` exporting ``SPEC``.
SPEC_NODES = ("zmp_estimator", "arm_balance", "waist_controller", "identification_executor",
              "mujoco_sim")

#: why a lifecycle node refuses a read-only parameter once configured (after its name)
READ_AT_CONFIGURE = "is read at configure: deactivate, clean up and configure again to change it"

_KINDS = ("bool", "int", "float", "str", "bool[]", "int[]", "float[]", "str[]")

#: what every config/*.yaml says after its node's own header: the file holds the package's
#: defaults, which a team copies into its own file and passes as ``params_file:=`` (the launch
#: files apply that over these). ``/**/<node>`` takes the node in any namespace.
TEAM_FILE_NOTE = """\
The package's defaults for {node}. To change some, copy the lines you change (under
the same two keys) into a file of your own and pass it to the launch file:
  ros2 launch humanoid_balance bringup.launch.py params_file:=/path/to/team.yaml
It is applied over this file, which each node also gets. /**/{node} applies to
the node in any namespace; /robot1/{node} to the one in namespace robot1 only.
Floats need a decimal point (13.0, not 13). Every parameter, its unit and range:
docs/INTERFACES.md. (Maintainers: these values are the spec's,
humanoid_balance/params/{node}.py; test/test_params.py checks that they agree.)"""


def _kind_of(default: Any) -> str:
    """The ROS parameter type a default stands for."""
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, int):
        return "int"
    if isinstance(default, float):
        return "float"
    if isinstance(default, str):
        return "str"
    if isinstance(default, (list, tuple)):
        if not default:
            raise ValueError("an array parameter needs a non-empty default (ROS infers its type)")
        return _kind_of(default[0]) + "[]"
    raise ValueError(f"unsupported parameter default {default!r}")


@dataclass(frozen=True)
class Param:
    """One parameter of one node.

    ``minimum``/``maximum`` bound numbers (every element of a number array);
    ``exclusive_minimum`` makes the lower bound strict (``> 0``). ``choices``
    lists the allowed values of a string (or of each element of a string
    array). ``length`` fixes an array's size, ``min_length`` bounds it.
    ``finite=False`` lets a float take inf/NaN (no parameter of this package
    does so far). ``check`` adds a rule the fields cannot say; it returns the
    reason a value is refused, or None. ``dynamic`` parameters may change
    while the node is configured and apply between cycles; the others are
    read at configure and refused afterwards.
    """

    name: str
    default: Any
    description: str
    unit: str = ""
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    choices: tuple[Any, ...] | None = None
    length: int | None = None
    min_length: int = 0
    dynamic: bool = False
    finite: bool = True
    check: Callable[[Any], str | None] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        kind = _kind_of(self.default)
        if isinstance(self.default, list):
            object.__setattr__(self, "default", tuple(self.default))
        problem = self.validate(self.default)
        if problem:
            raise ValueError(f"spec default of {self.name} is invalid: {problem}")
        assert kind in _KINDS

    @property
    def kind(self) -> str:
        """``bool``, ``int``, ``float``, ``str`` or one of those with ``[]``."""
        return _kind_of(self.default)

    @property
    def is_array(self) -> bool:
        return self.kind.endswith("[]")

    def range_text(self) -> str:
        """The allowed values, as the docs and the descriptor show them."""
        parts = []
        if self.choices is not None:
            parts.append(" | ".join(str(c) for c in self.choices))
        if self.minimum is not None or self.maximum is not None:
            low = "" if self.minimum is None else (
                f"> {self.minimum:g}" if self.exclusive_minimum else f">= {self.minimum:g}")
            high = "" if self.maximum is None else f"<= {self.maximum:g}"
            parts.append(", ".join(p for p in (low, high) if p))
        if self.length is not None:
            parts.append(f"{self.length} values")
        elif self.min_length:
            parts.append(f"at least {self.min_length} values")
        return "; ".join(parts)

    def coerce(self, value: Any) -> Any:
        """``value`` as this parameter's Python type (int accepted for float), or raise
        :class:`ParameterError`."""
        kind = self.kind
        base = kind[:-2] if kind.endswith("[]") else kind
        if kind.endswith("[]"):
            if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
                raise ParameterError(f"{self.name}={value!r}: expected a list of {base}")
            return tuple(self._scalar(v, base) for v in value)
        return self._scalar(value, base)

    def _scalar(self, value: Any, base: str) -> Any:
        if hasattr(value, "item") and not isinstance(value, (str, bytes)):
            value = value.item()  # numpy scalars
        ok = {"bool": isinstance(value, bool),
              "int": isinstance(value, int) and not isinstance(value, bool),
              "float": isinstance(value, (int, float)) and not isinstance(value, bool),
              "str": isinstance(value, str)}[base]
        if not ok:
            raise ParameterError(f"{self.name}={value!r}: expected {base}")
        return float(value) if base == "float" else value

    def validate(self, value: Any) -> str | None:
        """Why ``value`` cannot be used for this parameter, or None when it can."""
        try:
            value = self.coerce(value)
        except ParameterError as exc:
            return str(exc)
        items = value if self.is_array else (value,)
        if self.is_array:
            if self.length is not None and len(items) != self.length:
                return f"{self.name}: expected {self.length} values, got {len(items)}"
            if len(items) < self.min_length:
                return f"{self.name}: expected at least {self.min_length} values, got {len(items)}"
        for item in items:
            shown = f"{self.name}={item!r}" if not self.is_array else f"{self.name} value {item!r}"
            if isinstance(item, float) and self.finite and not math.isfinite(item):
                return f"{shown}: must be finite"
            if isinstance(item, (int, float)) and not isinstance(item, bool):
                if self.minimum is not None and (
                        item < self.minimum or (self.exclusive_minimum and item == self.minimum)):
                    sign = ">" if self.exclusive_minimum else ">="
                    return f"{shown}: must be {sign} {self.minimum:g}{self._unit()}"
                if self.maximum is not None and item > self.maximum:
                    return f"{shown}: must be <= {self.maximum:g}{self._unit()}"
            if self.choices is not None and item not in self.choices:
                return f"{shown}: expected one of {list(self.choices)}"
        if self.check is not None:
            return self.check(value)
        return None

    def _unit(self) -> str:
        return f" {self.unit}" if self.unit else ""


class ParamSpec:
    """The parameters of one node, in declaration order.

    ``cross_check`` sees all values at once (after each one passed its own
    rules) and returns why the combination cannot be used, or None; for
    example a slow-down margin that must exceed the hold margin.
    """

    def __init__(self, node: str, params: Sequence[Param],
                 cross_check: Callable[[Mapping[str, Any]], str | None] | None = None,
                 lifecycle: bool = True) -> None:
        self.node = node
        #: a lifecycle node reads its fixed parameters at configure; a plain one at start-up
        self.lifecycle = lifecycle
        self.fixed_at = "at configure" if lifecycle else "at start-up"
        self.params = tuple(params)
        self.cross_check = cross_check
        self._by_name = {p.name: p for p in self.params}
        if len(self._by_name) != len(self.params):
            raise ValueError(f"{node}: a parameter is listed twice")
        problem = self.validate_all(self.defaults())
        if problem:
            raise ValueError(f"{node}: the spec's defaults are invalid: {problem}")

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.params)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> Param:
        return self._by_name[name]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    @property
    def dynamic(self) -> frozenset[str]:
        return frozenset(p.name for p in self.params if p.dynamic)

    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params}

    def validate(self, name: str, value: Any) -> str | None:
        """Why ``value`` cannot be used for ``name`` on its own, or None."""
        if name not in self._by_name:
            return f"{self.node} has no parameter {name!r}"
        return self._by_name[name].validate(value)

    def validate_all(self, values: Mapping[str, Any]) -> str | None:
        """Why a full set of values cannot be used together, or None."""
        for name, value in values.items():
            problem = self.validate(name, value)
            if problem:
                return problem
        if self.cross_check is not None:
            return self.cross_check({n: self._by_name[n].coerce(v) for n, v in values.items()})
        return None

    def coerce_all(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Validated, typed values; raise :class:`ParameterError` with the reason."""
        problem = self.validate_all(values)
        if problem:
            raise ParameterError(problem)
        return {n: self._by_name[n].coerce(v) for n, v in values.items()}

    def changes(self, current: Mapping[str, Any], updates: Mapping[str, Any], *,
                configured: bool, read_only_reason: str = READ_AT_CONFIGURE) -> str | None:
        """Why ``updates`` cannot be applied now, or None: each value valid, read-only
        parameters refused once configured (``read_only_reason`` after the name), and the
        merged set consistent."""
        for name, value in updates.items():
            problem = self.validate(name, value)
            if problem:
                return problem
            if configured and not self._by_name[name].dynamic:
                return f"{name} {read_only_reason}"
        return self.validate_all({**current, **updates})

    # --- files ----------------------------------------------------------------------------

    def yaml_tree(self) -> dict[str, Any]:
        """The defaults as the nested mapping of a ROS 2 parameter file."""
        tree: dict[str, Any] = {}
        for p in self.params:
            *groups, leaf = p.name.split(".")
            node = tree
            for g in groups:
                node = node.setdefault(g, {})
            node[leaf] = list(p.default) if p.is_array else p.default
        return tree

    def yaml_text(self, header: str = "") -> str:
        """``config/<file>.yaml``: the defaults with each parameter's unit, range and
        description as a comment."""
        lines = [f"# {line}".rstrip() for line in header.strip().splitlines()] if header else []
        lines += [f"# {line}".rstrip() for line in TEAM_FILE_NOTE.format(node=self.node).splitlines()]
        lines += [f"/**/{self.node}:", "  ros__parameters:"]
        written: set[tuple[str, ...]] = set()
        for p in self.params:
            *groups, leaf = p.name.split(".")
            for depth in range(len(groups)):
                key = tuple(groups[:depth + 1])
                if key not in written:
                    written.add(key)
                    lines.append("    " + "  " * depth + f"{groups[depth]}:")
            indent = "    " + "  " * len(groups)
            comment = p.description + (f" [{p.unit}]" if p.unit else "")
            range_text = p.range_text()
            if range_text:
                comment += f" ({range_text})"
            if not p.dynamic:
                comment += f"; read {self.fixed_at}"
            lines.append(f"{indent}{leaf}: {_yaml_value(p.default)}  # {comment}")
        return "\n".join(lines) + "\n"

    def markdown_table(self) -> str:
        """The parameter table of ``docs/INTERFACES.md``."""
        rows = ["| parameter | type | default | unit | allowed | changes | description |",
                "|---|---|---|---|---|---|---|"]
        for p in self.params:
            default = _yaml_value(p.default).replace("|", "\\|")
            allowed = p.range_text().replace("|", "\\|") or "any"
            rows.append(f"| `{p.name}` | {p.kind} | `{default}` | {p.unit or '-'} | {allowed} | "
                        f"{'at run time' if p.dynamic else self.fixed_at} | "
                        f"{p.description.replace('|', chr(92) + '|')} |")
        return "\n".join(rows) + "\n"


def _yaml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '""' if value == "" else _quote(value)
    if isinstance(value, float):
        text = repr(value)
        mantissa, _, exponent = text.partition("e")
        if exponent and "." not in mantissa:  # YAML 1.1 reads 5e-05 as a string, 5.0e-05 as a float
            text = f"{mantissa}.0e{exponent}"
        return text
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_yaml_value(v) for v in value) + "]"
    return str(value)


def _quote(text: str) -> str:
    # plain scalars YAML would read as something else get quotes
    special = {"true", "false", "yes", "no", "on", "off", "null", "~", "y", "n"}
    if text.lower() in special or any(c in text for c in ":#{}[],&*!|>'\"%@`") or \
            text != text.strip():
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    try:
        float(text)
    except ValueError:
        return text
    return '"' + text + '"'


def spec_for(node: str) -> ParamSpec:
    """The spec of one of :data:`SPEC_NODES`."""
    if node not in SPEC_NODES:
        raise ParameterError(f"no parameter spec for node {node!r}; known: {list(SPEC_NODES)}")
    return importlib.import_module(f"humanoid_balance.params.{node}").SPEC
