"""Parameters of ``zmp_estimator`` (seed 001): the one place they are written.

The foot geometry comes from the URDF alone: the parameters name frames, never
coordinates (the FSR points and the support polygon's contact points are the
URDF's ``{side}_fsr_{i}`` frames, :mod:`humanoid_balance.core.support`). The
dynamic ones apply between two samples (the node takes them before the next
sample it handles); the model, the frames, the sensor type and the
subscriptions are read at start-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from humanoid_balance.core.foot_layout import FootLayout
from humanoid_balance.params import Param, ParamSpec
from humanoid_balance.params.typed import typed_config

__all__ = ["SPEC", "YAML_HEADER", "ZmpEstimatorConfig", "config_from_values"]

YAML_HEADER = """\
zmp_estimator for the seed humanoid (ROS 2 parameter file).
Both modes from one file: sensor_type ft uses the ankle F/T sensors, fsr the four
force-sensitive resistors under each sole (the URDF frames {side}.fsr_frames).
The support polygon is the hull of the contact frames of the feet in contact."""

SIDES = ("left", "right")
_POS: dict[str, Any] = {"minimum": 0.0, "exclusive_minimum": True}
_NON_NEG: dict[str, Any] = {"minimum": 0.0}


def _cross_check(v: Mapping[str, Any]) -> str | None:
    if not v["contact_hysteresis"] < v["contact_threshold"]:
        return (f"contact_hysteresis {v['contact_hysteresis']:g} N must be below contact_threshold "
                f"{v['contact_threshold']:g} N (a foot in contact leaves it below their difference)")
    if not v["margin_error"] < v["margin_warn"]:
        return (f"margin_error {v['margin_error']:g} m must be below margin_warn "
                f"{v['margin_warn']:g} m (red below the first, yellow below the second)")
    return None


def _side_params(side: str) -> list[Param]:
    pads = [f"{side}_fsr_{i}" for i in range(4)]
    return [
        Param(f"{side}.sensor_frame", f"{side}_foot_ft", "URDF frame of the foot's F/T sensor"),
        Param(f"{side}.sole_frame", f"{side}_sole", "URDF frame of the sole (origin on its surface, z up)"),
        Param(f"{side}.foot_link", f"{side}_foot",
              "URDF link below the sensor (its weight is compensated)"),
        Param(f"{side}.fsr_frames", pads,
              f"URDF frames of the FSRs on the sole, in the order of /{side}_foot/fsr", min_length=1),
        Param(f"{side}.contact_frames", pads,
              "URDF frames where the foot touches the ground (the seed humanoid: its FSR pads); "
              "the support polygon is the hull of those of the feet in contact", min_length=1),
    ]


SPEC = ParamSpec("zmp_estimator", [
    Param("sensor_type", "ft", "ft: the ankle F/T sensors; fsr: the FSR arrays", choices=("ft", "fsr")),
    Param("contact_threshold", 20.0, "normal force for a foot to be in contact", "N", **_POS,
          dynamic=True),
    Param("contact_hysteresis", 5.0, "force below the threshold before a foot leaves contact", "N",
          **_NON_NEG, dynamic=True),
    Param("gravity", 9.81, "gravity, for the foot-weight compensation (Moon 1.635, Mars 3.71)",
          "m/s^2", **_NON_NEG),
    Param("urdf_path", "", "the robot's URDF; empty: the package's urdf/humanoid.urdf"),
    Param("balance_frame", "W", "URDF frame taken as the world (ground, midway between the soles)"),
    Param("world_frame_id", "world", "frame_id of the outputs"),
    Param("publish_rate", 0.0, "rate of /zmp and the margin; 0: every joined sample", "Hz",
          **_NON_NEG, dynamic=True),
    Param("marker_rate", 20.0, "rate of /zmp/markers; 0: none", "Hz", **_NON_NEG, dynamic=True),
    Param("diagnostics_rate", 1.0, "rate of /diagnostics", "Hz", **_POS, maximum=100.0, dynamic=True),
    Param("sync_tolerance", 0.001, "largest stamp difference of the two feet's F/T samples joined",
          "s", **_NON_NEG, maximum=1.0, dynamic=True),
    Param("joint_state_wait", 0.005, "time a sample waits for the joint state of its stamp", "s",
          **_NON_NEG, maximum=1.0),
    Param("joint_state_timeout", 0.1, "with an older joint state no ZMP is built", "s", **_POS,
          dynamic=True),
    Param("sensor_timeout", 0.1,
          "foot samples older than this (or sensors silent this long) give no ZMP; STALE", "s",
          **_POS, dynamic=True),
    Param("future_tolerance", 0.05,
          "F/T samples and joint states stamped further ahead of the node's clock are refused "
          "(use_sim_time: plus sensor_timeout, as /clock may be late)", "s", **_NON_NEG,
          dynamic=True),
    Param("zero_window", 0.1, "span of the samples ~/zero_sensors averages", "s", **_POS),
    Param("zero_max_load", 10.0, "load a foot may carry beyond its own weight when zeroed", "N",
          **_NON_NEG, dynamic=True),
    Param("margin_warn", 0.03, "markers turn yellow below this stability margin", "m",
          minimum=-1.0, maximum=1.0, dynamic=True),
    Param("margin_error", 0.01, "markers turn red below this stability margin", "m",
          minimum=-1.0, maximum=1.0, dynamic=True),
    Param("best_effort_sensors", False, "subscribe to the sensors best-effort"),
    Param("sensor_queue_depth", 100,
          "messages each sensor subscription keeps for the executor (100: 0.1 s at 1 kHz, the "
          "freshest only; a replay wants every one: replay.launch.py gives 10000)",
          minimum=1, maximum=100000),
    *_side_params("left"),
    *_side_params("right"),
], cross_check=_cross_check, lifecycle=False)


@dataclass(frozen=True)
class ZmpEstimatorConfig:
    """``zmp_estimator``'s parameters, typed, in SI units (see :data:`SPEC` for each; a field is
    named after its parameter with its unit: :func:`~humanoid_balance.params.typed.typed_config`).

    Attributes:
        sensor_type: ``ft`` or ``fsr`` (:mod:`humanoid_balance.core.foot_sensors`).
        feet: the soles', contact and FSR frames (``{side}.sole_frame``,
            ``{side}.contact_frames``, ``{side}.fsr_frames``).
        sensor_frames: side -> the F/T sensor's URDF frame (``{side}.sensor_frame``).
        foot_links: side -> the link below the sensor (``{side}.foot_link``).
        publish_rate_hz: 0: every joined sample; marker_rate_hz: 0: no markers.
    """

    sensor_type: str
    contact_threshold_n: float
    contact_hysteresis_n: float
    gravity_m_s2: float
    urdf_path: str
    balance_frame: str
    world_frame_id: str
    publish_rate_hz: float
    marker_rate_hz: float
    diagnostics_rate_hz: float
    sync_tolerance_s: float
    joint_state_wait_s: float
    joint_state_timeout_s: float
    sensor_timeout_s: float
    future_tolerance_s: float
    zero_window_s: float
    zero_max_load_n: float
    margin_warn_m: float
    margin_error_m: float
    best_effort_sensors: bool
    sensor_queue_depth: int
    feet: FootLayout
    sensor_frames: dict[str, str] = field(default_factory=dict)
    foot_links: dict[str, str] = field(default_factory=dict)


def config_from_values(values: Mapping[str, Any]) -> ZmpEstimatorConfig:
    """The typed config of parameter values (the spec's defaults for those not given).

    Raises:
        ConfigurationError: a value the spec refuses, with the reason.
    """
    v = SPEC.coerce_all({**SPEC.defaults(), **values})
    return typed_config(ZmpEstimatorConfig, SPEC, v, feet=FootLayout.from_zmp_values(v),
                        sensor_frames={s: v[f"{s}.sensor_frame"] for s in SIDES},
                        foot_links={s: v[f"{s}.foot_link"] for s in SIDES})
