"""identification_executor's parameters -> IdentificationExecutorConfig -> IdentificationArm
(what configure does, without ROS)."""

from __future__ import annotations

import array
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from humanoid_balance.core.identification.arm import IdentificationArm
from humanoid_balance.core.identification.run import IdentificationRun
from humanoid_balance.exceptions import ConfigurationError
from humanoid_balance.params.identification_executor import SPEC, config_from_values


def test_config_is_in_si_units() -> None:
    """The defaults' degrees become radians once; the rest keeps its SI value."""
    config = config_from_values(SPEC.defaults())
    assert config.speed_rad_s == math.radians(3.0)
    assert config.acceleration_limit_rad_s2 == math.radians(30.0)
    assert config.sweep_half_range_rad == math.radians(30.0)
    assert config.static_configuration_rad == tuple(np.radians([0.0, 40.0, 20.0, 60.0, 40.0,
                                                                30.0]).tolist())
    assert (config.rate_hz, config.period_s, config.joint_state_timeout_s) == (100.0, 0.01, 0.5)
    assert config.command_values() == {"command_interface": "joint_state", "command_topic": "",
                                       "command_joints": ("",)}


def test_speed_above_3_deg_s_is_refused() -> None:
    """speed = 5 deg/s (the quasi-static bound is 3): refused naming it."""
    with pytest.raises(ConfigurationError, match=r"^speed=5.0: must be <= 3 deg/s$"):
        config_from_values({**SPEC.defaults(), "speed": 5.0})


@pytest.mark.parametrize(("override", "reason"), [
    ({"trim": -1.0}, "trim=-1.0: must be >= 0 s"),
    ({"joint_state_timeout": -0.5}, "joint_state_timeout=-0.5: must be >= 0.001 s"),
    ({"average": 0}, "average=0: must be >= 1"),
])
def test_negative_times_and_empty_blocks_are_refused(override: dict[str, Any],
                                                     reason: str) -> None:
    """trim: -1, joint_state_timeout: -0.5 or average: 0 (from a parameter file): refused."""
    with pytest.raises(ConfigurationError) as error:
        config_from_values({**SPEC.defaults(), **override})
    assert str(error.value) == reason


def test_average_and_trim_are_validated_by_the_spec() -> None:
    """The spec gives the reason for a bad average or trim, and None for good ones."""
    assert SPEC.validate("average", 0) == "average=0: must be >= 1"
    assert SPEC.validate("trim", -1.0) == "trim=-1.0: must be >= 0 s"
    assert (SPEC.validate("average", 10), SPEC.validate("trim", 0.5)) == (None, None)


@pytest.mark.parametrize(("name", "value", "reason"), [
    ("torque_constants", [float("nan")] * 6, "torque_constants value nan: must be finite"),
    ("static_configuration", [0.0, float("inf"), 0.0, 0.0, 0.0, 0.0],
     "static_configuration value inf: must be finite"),
    ("joint_state_timeout", 60.0, "joint_state_timeout=60.0: must be <= 5 s"),
    ("acceleration_limit", 1.0, "acceleration_limit=1.0: must be >= 10 deg/s^2"),
    ("rate", 1e6, "rate=1000000.0: must be <= 1000 Hz"),
    ("speed", 5.0, "speed=5.0: must be <= 3 deg/s"),
])
def test_non_finite_and_out_of_range_values_are_refused(name: str, value: object,
                                                        reason: str) -> None:
    """The spec refuses NaN torque constants (issue 12), infinite angles and out-of-range values."""
    assert SPEC.validate(name, value) == reason


def test_one_value_per_arm_joint() -> None:
    """torque_constants with fewer values than arm joints: refused naming the count."""
    assert SPEC.validate_all({**SPEC.defaults(), "torque_constants": [1.0] * 3}) == (
        "torque_constants has 3 values: expected 6, one per arm joint "
        "(['joint1', 'joint2', 'joint3', 'joint4', 'joint5', 'joint6'])")


def test_double_arrays_as_rclpy_gives_them_are_accepted() -> None:
    """A double array parameter arrives as array.array('d'): valid values are accepted."""
    assert SPEC.validate("torque_constants", array.array("d", [0.5] * 6)) is None
    config = config_from_values({**SPEC.defaults(), "torque_constants": array.array("d", [0.5] * 6)})
    assert config.torque_constants_n_m_a == (0.5,) * 6


def test_package_config_file_configures(repo_root: Path, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """config/identification.yaml holds only declared, valid parameters: the run is made."""
    params = yaml.safe_load((repo_root / "config" / "identification.yaml").read_text())
    values = params["/**/identification_executor"]["ros__parameters"]
    assert set(values) <= set(SPEC.names)
    monkeypatch.chdir(tmp_path)  # its relative output_path must be writable
    run = IdentificationRun.configured(config_from_values({**SPEC.defaults(), **values}))
    assert run.arm.joints == tuple(f"joint{i}" for i in range(1, 7)) and len(run.arm.plan) == 6


def test_an_unwritable_output_path_fails_configure_first(tmp_path: Path) -> None:
    """output_path under a file (and a missing URDF): the output_path is named (checked first)."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    config = config_from_values({**SPEC.defaults(), "output_path": str(blocker / "r.yaml"),
                                 "urdf_path": str(tmp_path / "missing.urdf")})
    with pytest.raises(ConfigurationError, match=r"^output_path .*choose a writable output_path"):
        IdentificationRun.configured(config)


def test_a_missing_urdf_is_named(tmp_path: Path) -> None:
    """urdf_path naming no file: refused naming it and what to give."""
    config = config_from_values({**SPEC.defaults(), "urdf_path": str(tmp_path / "missing.urdf")})
    with pytest.raises(ConfigurationError, match=r"urdf_path '.*missing.urdf' is not a file: give "
                                                 r"the arm's URDF"):
        IdentificationArm(config)


def test_arm_joints_must_be_the_urdf_chain() -> None:
    """arm_joints out of the URDF's chain order: refused naming both."""
    joints = [f"joint{i}" for i in (2, 1, 3, 4, 5, 6)]
    with pytest.raises(ConfigurationError, match=r"must be the URDF's chain \['joint1', 'joint2'"):
        IdentificationArm(config_from_values({**SPEC.defaults(), "arm_joints": joints}))


def test_optimised_configuration_keeps_clearance() -> None:
    """optimize_configuration: every sweep's start configuration keeps the 1 cm clearance."""
    arm = IdentificationArm(config_from_values({**SPEC.defaults(),
                                                "optimize_configuration": True}))
    distances = [arm.clearance.min_distance(s.start_configuration())[0] for s in arm.plan]
    assert min(distances) >= 0.01


def test_a_sweep_through_a_collision_is_refused_at_configure() -> None:
    """Every sweep of static [-44, 97, 66, 93, -1, 65] deg starts more than 2 cm clear (all
    that was checked before), but joint4's, from 63 deg to its 120 deg limit, ends with link3
    1.7 mm into link5: configure fails, naming the sweep, the pair and where."""
    config = config_from_values({**SPEC.defaults(),
                                 "static_configuration": [-44.0, 97.0, 66.0, 93.0, -1.0, 65.0]})
    with pytest.raises(ConfigurationError, match=(
            r"joint4's sweep passes -1\.7 mm between link3_0 / link5_0 at \[-44\.0, 97\.0, "
            r"66\.0, 120\.0, -1\.0, 65\.0\] deg, less than "
            r"clearance 10\.0 mm: choose another static_configuration or a smaller "
            r"sweep_half_range")):
        IdentificationArm(config)
