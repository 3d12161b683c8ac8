"""Each node's parameters are written once, in its spec (humanoid_balance/params/).

These tests fail when a node declares a parameter the spec does not list,
when ``config/*.yaml`` or the tables in ``docs/INTERFACES.md`` drift from the
specs, or when a spec's own rules let a non-finite value through.
"""

from __future__ import annotations

import importlib
import inspect
import math

import pytest
import yaml

from humanoid_balance.graph import NODES
from humanoid_balance.params import SPEC_NODES, Param, ParamSpec, spec_for
from humanoid_balance.params.__main__ import expected_files
from humanoid_balance.params.files import node_key


def test_every_node_has_a_spec() -> None:
    assert set(SPEC_NODES) == set(NODES)


@pytest.mark.parametrize("node", SPEC_NODES)
def test_yaml_holds_the_spec_defaults(node: str, repo_root) -> None:
    spec = spec_for(node)
    path = repo_root / "config" / NODES[node].parameter_file
    tree = yaml.safe_load(path.read_text())[node_key(node)]["ros__parameters"]

    def flat(prefix: str, mapping: dict) -> dict:
        out = {}
        for key, value in mapping.items():
            name = f"{prefix}{key}"
            out.update(flat(name + ".", value) if isinstance(value, dict) else {name: value})
        return out

    values = flat("", tree)
    assert set(values) == set(spec.names), "config keys differ from the spec"
    for name, value in values.items():
        default = spec[name].default
        assert spec[name].coerce(value) == default, f"{name}: {value!r} in the YAML, {default!r} in the spec"


@pytest.mark.parametrize("node", SPEC_NODES)
def test_yaml_is_keyed_for_any_namespace_and_says_it_is_the_defaults_to_copy(node: str,
                                                                          repo_root) -> None:
    """config/<node>.yaml has one section, /**/<node> (any namespace), and its header says it
    holds the package's defaults, which a team copies and passes as params_file."""
    text = (repo_root / "config" / NODES[node].parameter_file).read_text()
    assert list(yaml.safe_load(text)) == [f"/**/{node}"]
    header = "\n".join(line for line in text.splitlines() if line.startswith("#"))
    assert f"The package's defaults for {node}." in header
    assert "params_file:=" in header
    assert "Generated" not in header and "edit the spec, not this file" not in header


def test_generated_files_are_current() -> None:
    stale = [str(p) for p, text in expected_files().items() if p.read_text() != text]
    assert not stale, f"run `python -m humanoid_balance.params --write`: {stale}"


def _node_class(node: str) -> type:
    from rclpy.node import Node

    module = importlib.import_module(f"humanoid_balance.nodes.{node}")
    classes = [c for _, c in inspect.getmembers(module, inspect.isclass)
               if issubclass(c, Node) and c.__module__ == module.__name__]
    assert len(classes) == 1, classes
    return classes[0]


@pytest.mark.parametrize("node", SPEC_NODES)
def test_node_declares_exactly_its_spec(node: str, rclpy_context) -> None:
    instance = _node_class(node)(context=rclpy_context)
    try:
        declared = set(instance._parameters) - {"use_sim_time", "start_type_description_service"}
        assert declared == set(spec_for(node).names)
    finally:
        instance.destroy_node()


@pytest.mark.parametrize("node", SPEC_NODES)
def test_no_float_parameter_takes_non_finite_values(node: str) -> None:
    for p in spec_for(node):
        if p.kind in ("float", "float[]") and p.finite:
            bad = float("nan")
            assert p.validate([bad] * max(1, len(p.default)) if p.is_array else bad)
            assert p.validate([math.inf] * max(1, len(p.default)) if p.is_array else -math.inf)


def test_spec_rules() -> None:
    spec = ParamSpec("n", [
        Param("rate", 500.0, "rate", "Hz", minimum=0.0, exclusive_minimum=True, dynamic=True),
        Param("mode", "a", "mode", choices=("a", "b")),
        Param("xs", [1.0, 2.0], "pair", "m", length=2),
    ], cross_check=lambda v: "rate too high for b" if v["mode"] == "b" and v["rate"] > 100 else None)
    assert spec.validate("rate", 0.0) == "rate=0.0: must be > 0 Hz"
    assert "finite" in spec.validate("rate", math.inf)
    assert spec.validate("rate", "fast") == "rate='fast': expected float"
    assert spec.validate("rate", 5) is None  # ints are accepted for floats
    assert "expected one of" in spec.validate("mode", "c")
    assert "expected 2 values" in spec.validate("xs", [1.0])
    assert spec.validate("nope", 1) == "n has no parameter 'nope'"
    assert "read at configure" in spec.changes(spec.defaults(), {"mode": "b"}, configured=True)
    assert spec.changes(spec.defaults(), {"rate": 50.0}, configured=True) is None
    assert spec.changes({**spec.defaults(), "mode": "b"}, {"rate": 200.0},
                        configured=True) == "rate too high for b"
    with pytest.raises(ValueError):
        Param("bad", 0.0, "a default outside its own range", minimum=1.0)


def test_arm_balance_posture_defaults_are_the_controllers() -> None:
    """arm_balance's aux posture defaults equal RmcController's (one figure, two files)."""
    import numpy as np

    from humanoid_balance.core import rmc

    spec = spec_for("arm_balance")
    np.testing.assert_allclose(np.deg2rad(spec["aux_posture"].default), rmc.AUX_READY_POSTURE,
                               atol=1e-12)
    assert (spec["aux_posture_gain"].default, spec["aux_posture_speed"].default,
            spec["aux_posture_acceleration"].default) == (
        rmc.POSTURE_GAIN, rmc.POSTURE_SPEED, rmc.POSTURE_ACCELERATION)


def test_mujoco_sim_clock_rate_is_refused_in_lock_step_and_above_the_sensor_rate() -> None:
    """clock_rate > 0 with lock_step, or above publish_rate, is refused with the reason."""
    from humanoid_balance.params.mujoco_sim import SPEC as SIM

    base = SIM.defaults()
    assert SIM.cross_check({**base, "clock_rate": 100.0}) is None
    assert "lock-step" in SIM.cross_check({**base, "clock_rate": 100.0, "lock_step": True})
    assert "exceeds publish_rate" in SIM.cross_check({**base, "clock_rate": 2000.0})


def test_mujoco_sim_command_latency_is_refused_in_lock_step_and_at_the_command_timeout() -> None:
    """command_latency > 0 with lock_step, or not below command_timeout, is refused with the reason."""
    from humanoid_balance.params.mujoco_sim import SPEC as SIM

    base = SIM.defaults()
    assert SIM.cross_check({**base, "command_latency": 0.01}) is None
    assert "lock-step" in SIM.cross_check({**base, "command_latency": 0.01, "lock_step": True})
    assert "not below command_timeout" in SIM.cross_check(
        {**base, "command_latency": 0.05, "command_timeout": 0.05})
