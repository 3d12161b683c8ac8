"""humanoid_balance.params.typed: a config's fields from a spec's values (issue 34)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from humanoid_balance.params import Param, ParamSpec
from humanoid_balance.params.typed import MotorNodeConfig, field_name, typed_config

SPEC = ParamSpec("tiny", [
    Param("rows", ["a"], "a list", min_length=1),
    Param("timeout", 0.5, "a time", "s"),
    Param("posture", [90.0, -45.0], "angles", "deg"),
    Param("speed", 3.0, "a speed", "deg/s"),
    Param("gain", 2.0, "a gain", "1/s"),
])


@dataclass(frozen=True)
class Tiny:
    rows: tuple[str, ...]
    timeout_s: float
    posture_rad: tuple[float, ...]
    speed_rad_s: float
    gain_1_s: float


def test_field_names_carry_the_si_unit() -> None:
    """A field is the parameter's name and its unit in SI, degrees named as radians."""
    units = ["", "s", "m/s^2", "N m/A", "Hz", "deg", "deg/s^2", "1/s"]
    names = [field_name(Param("x", 1.0, "", unit)) for unit in units]
    assert names == ["x", "x_s", "x_m_s2", "x_n_m_a", "x_hz", "x_rad", "x_rad_s2", "x_1_s"]


def test_degrees_are_converted_once() -> None:
    """Scalars and arrays in degrees come out in radians, as math.radians gives them."""
    config = typed_config(Tiny, SPEC, SPEC.coerce_all(SPEC.defaults()))
    assert config == Tiny(rows=("a",), timeout_s=0.5,
                          posture_rad=(math.radians(90.0), math.radians(-45.0)),
                          speed_rad_s=math.radians(3.0), gain_1_s=2.0)


def test_a_computed_value_wins_over_the_parameter() -> None:
    """A field given by the node (a parsed list) is not the parameter's raw value."""
    config = typed_config(Tiny, SPEC, SPEC.coerce_all(SPEC.defaults()), rows=("b", "c"))
    assert config.rows == ("b", "c")


def test_a_field_no_parameter_gives_is_refused() -> None:
    """A field named against its parameter's unit fails loudly, naming it."""

    @dataclass(frozen=True)
    class Misnamed:
        timeout: float

    with pytest.raises(TypeError, match=r"Misnamed: no parameter of tiny gives \['timeout'\]"):
        typed_config(Misnamed, SPEC, SPEC.coerce_all(SPEC.defaults()))


def test_motor_node_config_period_and_command_values() -> None:
    """The period is 1 / rate; the command settings come out as CommandOutput takes them."""
    config = MotorNodeConfig(rate_hz=250.0, command_interface="forward_position",
                             command_topic="/c", command_joints=("j1", "j2"), urdf_path="",
                             joint_state_timeout_s=0.05, diagnostics_rate_hz=10.0)
    assert config.period_s == 1.0 / 250.0
    assert config.command_values() == {"command_interface": "forward_position",
                                       "command_topic": "/c", "command_joints": ("j1", "j2")}


@dataclass(frozen=True)
class TinyWithDefault:
    timeout_s: float
    speed_rad_s: float
    limit_m: float = 1.5


def test_a_defaulted_field_no_parameter_gives_is_refused() -> None:
    """A field with a default is not left at it silently: keep_defaults must name it."""
    with pytest.raises(TypeError, match=r"TinyWithDefault: no parameter of tiny gives \['limit_m'\]"):
        typed_config(TinyWithDefault, SPEC, SPEC.coerce_all(SPEC.defaults()))
    config = typed_config(TinyWithDefault, SPEC, SPEC.coerce_all(SPEC.defaults()),
                          keep_defaults=("limit_m",))
    assert config == TinyWithDefault(timeout_s=0.5, speed_rad_s=math.radians(3.0), limit_m=1.5)


def test_keep_defaults_naming_a_given_field_is_refused() -> None:
    """keep_defaults naming a field a parameter fills (or no defaulted field) is a mistake."""
    with pytest.raises(TypeError, match=r"keep_defaults names \['nothing', 'timeout_s'\]"):
        typed_config(TinyWithDefault, SPEC, SPEC.coerce_all(SPEC.defaults()),
                     keep_defaults=("limit_m", "timeout_s", "nothing"))
