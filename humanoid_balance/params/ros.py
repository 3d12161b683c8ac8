"""A :class:`~humanoid_balance.params.ParamSpec` on an rclpy node.

:class:`NodeParameters` declares every parameter of the spec with a
descriptor that carries its unit, range and description (what
``ros2 param describe`` shows), reads and validates them at configure, and
answers ``ros2 param set``: an invalid value is refused with its reason, a
read-only one once the node is configured, and an accepted dynamic change is
queued for the node to apply between cycles (:meth:`take_pending`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter

from humanoid_balance.params import READ_AT_CONFIGURE, Param, ParamSpec

__all__ = ["NodeParameters"]


def _descriptor(p: Param) -> ParameterDescriptor:
    text = p.description + (f" [{p.unit}]" if p.unit else "")
    if p.range_text():
        text += f" ({p.range_text()})"
    descriptor = ParameterDescriptor(description=text,
                                     additional_constraints=p.range_text(),
                                     read_only=False)
    # no floating_point_range/integer_range: rclpy would refuse out-of-range values itself
    # with a generic message before the spec's check could name the limit and the unit
    return descriptor


class NodeParameters:
    """The spec's parameters on ``node``.

    ``configured`` (a callable) says whether the node has read its parameters:
    from then on only dynamic ones may change. ``extra_check(name, value,
    values)`` may refuse a change for a reason that depends on the node's
    state (for example a row that does not apply in the configured mode).
    ``read_only_reason`` follows a read-only parameter's name in the refusal once
    configured (a node that is not a lifecycle node says how it is changed instead).
    """

    def __init__(self, node: Node, spec: ParamSpec, *,
                 configured: Callable[[], bool] = lambda: False,
                 extra_check: Callable[[str, Any, Mapping[str, Any]], str | None] | None = None,
                 read_only_reason: str = READ_AT_CONFIGURE) -> None:
        self.node = node
        self.spec = spec
        self._configured = configured
        self._extra_check = extra_check
        self._read_only_reason = read_only_reason
        self._lock = threading.Lock()
        self._pending: dict[str, Any] = {}
        self.values: dict[str, Any] = {}
        for p in spec:
            node.declare_parameter(p.name, list(p.default) if p.is_array else p.default,
                                   _descriptor(p))
        node.add_on_set_parameters_callback(self._on_set)

    def read(self) -> dict[str, Any]:
        """All values, validated together and typed (arrays as tuples); raise
        :class:`~humanoid_balance.exceptions.ConfigurationError` with the reason. Clears
        anything pending: the values read are the current ones."""
        raw = {p.name: self.node.get_parameter(p.name).value for p in self.spec}
        values = self.spec.coerce_all(raw)
        with self._lock:
            self._pending.clear()
            self.values = values
        return dict(values)

    def take_pending(self) -> dict[str, Any]:
        """Dynamic changes accepted since the last call (typed), for the node to apply
        between cycles; they are part of :attr:`values` from then on."""
        with self._lock:
            pending, self._pending = self._pending, {}
            self.values.update(pending)
        return pending

    def _on_set(self, params: Sequence[Parameter]) -> SetParametersResult:
        updates = {p.name: p.value for p in params if p.name in self.spec}
        if not updates:
            return SetParametersResult(successful=True)
        configured = self._configured()
        with self._lock:
            current = {**(self.values or self.spec.defaults()), **self._pending}
        if not configured:
            # before configure every change is allowed, but each value must be valid on its
            # own (the combination is checked when configure reads them)
            for name, value in updates.items():
                problem = self.spec.validate(name, value)
                if problem:
                    return SetParametersResult(successful=False, reason=problem)
            return SetParametersResult(successful=True)
        problem = self.spec.changes(current, updates, configured=True,
                                    read_only_reason=self._read_only_reason)
        if problem is None and self._extra_check is not None:
            merged = {**current, **{n: self.spec[n].coerce(v) for n, v in updates.items()}}
            for name, value in updates.items():
                problem = self._extra_check(name, self.spec[name].coerce(value), merged)
                if problem:
                    break
        if problem:
            return SetParametersResult(successful=False, reason=problem)
        with self._lock:
            self._pending.update({n: self.spec[n].coerce(v) for n, v in updates.items()})
        return SetParametersResult(successful=True)
