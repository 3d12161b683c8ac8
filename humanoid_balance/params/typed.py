"""A node's typed config from its parameter values: the rule that names the fields, once.

A node's config (``params/<node>.py``) is a frozen dataclass whose fields are its
parameters in SI units: a field is named after its parameter with the parameter's unit
appended (``joint_state_timeout`` [s] -> ``joint_state_timeout_s``, ``gravity`` [m/s^2]
-> ``gravity_m_s2``, ``torque_constants`` [N m/A] -> ``torque_constants_n_m_a``), and a
parameter in degrees becomes a field in radians (``aux_posture`` [deg] ->
``aux_posture_rad``, ``speed`` [deg/s] -> ``speed_rad_s``), converted here once.
:func:`typed_config` fills those fields from the validated values; the node's
``config_from_values`` gives the fields it computes (parsed lists, frame layouts) and names
the ones that keep their dataclass defaults (no field is left at a default silently).

:class:`MotorNodeConfig` is what the config of every motor-commanding node has: its
command rate and its command output
(:func:`~humanoid_balance.command_interface.command_params`), its URDF, the age its joint
states may reach and its diagnostics rate.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from humanoid_balance.params import Param, ParamSpec

__all__ = ["MotorNodeConfig", "field_name", "typed_config"]

Config = TypeVar("Config")


def _si_unit(unit: str) -> str:
    """``unit`` with degrees as radians (the config's unit)."""
    return unit.replace("deg", "rad")


def field_name(param: Param) -> str:
    """The config field of ``param``: its name, then its unit in SI units in lower case
    with ``/`` and spaces as ``_`` and without ``^`` (``rad/s^2`` -> ``_rad_s2``)."""
    unit = _si_unit(param.unit)
    if not unit:
        return param.name
    return f"{param.name}_" + unit.lower().replace("/", "_").replace(" ", "_").replace("^", "")


def _in_si(param: Param, value: Any) -> Any:
    """``value`` of ``param`` in SI units: degrees (each element of an array) to radians."""
    if not param.unit.startswith("deg"):
        return value
    if param.is_array:
        return tuple(math.radians(v) for v in value)
    return math.radians(value)


def typed_config(config_type: type[Config], spec: ParamSpec, values: Mapping[str, Any], *,
                 keep_defaults: Collection[str] = (), **computed: Any) -> Config:
    """``config_type`` with each field that names a parameter of ``spec`` (:func:`field_name`)
    set from ``values`` (validated by :meth:`ParamSpec.coerce_all`) in SI units, the fields
    in ``keep_defaults`` at their dataclass defaults, and the other fields from ``computed``
    (which also wins over a parameter's field).

    Raises:
        TypeError: a field that no parameter and no ``computed`` value gives and that is not
            in ``keep_defaults`` (a field misnamed for its parameter's unit: even one with a
            default is not left at it silently), or a name in ``keep_defaults`` that is not a
            field with a default or that a parameter or ``computed`` gives.
    """
    fields = dataclasses.fields(config_type)  # type: ignore[arg-type]
    names = {f.name for f in fields}
    kwargs = {field_name(p): _in_si(p, values[p.name]) for p in spec if p.name in values}
    kwargs = {name: value for name, value in kwargs.items() if name in names}
    kwargs.update(computed)
    defaulted = {f.name for f in fields if f.default is not dataclasses.MISSING
                 or f.default_factory is not dataclasses.MISSING}
    wrong = sorted(name for name in keep_defaults if name not in defaulted or name in kwargs)
    if wrong:
        raise TypeError(f"{config_type.__name__}: keep_defaults names {wrong}, which are not "
                        "fields with a default or are given by a parameter or computed")
    missing = [f.name for f in fields if f.name not in kwargs and f.name not in keep_defaults]
    if missing:
        raise TypeError(f"{config_type.__name__}: no parameter of {spec.node} gives {missing} "
                        "(a field is the parameter's name with its unit), none is computed and "
                        "keep_defaults does not name it")
    return config_type(**kwargs)


@dataclass(frozen=True)
class MotorNodeConfig:
    """The part of a motor-commanding node's config that every such node has.

    Attributes:
        rate_hz: the command (control) rate [Hz].
        command_interface: how commands go out
            (:data:`~humanoid_balance.command_interface.COMMAND_INTERFACES`).
        command_topic: their topic ("": the interface's default).
        command_joints: the controller's joint order (``forward_position``).
        urdf_path: the robot's URDF ("": the package's own for the node).
        joint_state_timeout_s: the measured joint states older than this are stale [s].
        diagnostics_rate_hz: the node's ``/diagnostics`` rate [Hz].
    """

    rate_hz: float
    command_interface: str
    command_topic: str
    command_joints: tuple[str, ...]
    urdf_path: str
    joint_state_timeout_s: float
    diagnostics_rate_hz: float

    @property
    def period_s(self) -> float:
        """The command (control) period [s]."""
        return 1.0 / self.rate_hz

    def command_values(self) -> dict[str, Any]:
        """The command output's settings (``command_interface``, ``command_topic``,
        ``command_joints``), as :class:`~humanoid_balance.nodes.command_output.CommandOutput`
        takes them."""
        return {"command_interface": self.command_interface, "command_topic": self.command_topic,
                "command_joints": self.command_joints}
