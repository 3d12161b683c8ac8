"""Parameters of ``waist_controller`` (seed 003): the one place they are written.

Angles are in degrees here (the paper's unit), radians inside the node. The
dynamic ones apply between two servo periods (the servo thread takes them under
its lock); the gains of the inner loops, the geometry, the rates and the bus are
read at configure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from humanoid_balance.core.servo import WAIST_DRIVE_CURRENT_LIMIT_A, ServoGains
from humanoid_balance.params import Param, ParamSpec
from humanoid_balance.params.typed import typed_config

if TYPE_CHECKING:
    from humanoid_balance.waist.config import WaistServoConfig
    from humanoid_balance.waist.loop import ThreadTiming

__all__ = ["SPEC", "YAML_HEADER", "WaistControllerConfig", "config_from_values",
           "simulated_drives_problem"]

YAML_HEADER = """\
waist_controller: differential waist RMRC over CAN with the three-loop servo (seed 003)
(ROS 2 parameter file; angles in degrees here, radians inside the node)."""


def _motor_ids_problem(value: Any) -> str | None:
    from humanoid_balance.can.bus import validate_node_ids
    from humanoid_balance.exceptions import InvalidInputError

    try:
        validate_node_ids(tuple(value))
    except InvalidInputError as exc:
        return str(exc)
    return None


def _range_problem(name: str) -> Any:
    def check(value: Any) -> str | None:
        lo, hi = value
        if not lo < hi:
            return f"{name}: expected [min, max] with min < max, got {list(value)}"
        return None
    return check


def simulated_drives_problem(simulated_drives: bool, interface: str) -> str | None:
    """Why ``simulated_drives`` cannot be used with CAN ``interface``, or None."""
    if simulated_drives and interface != "virtual":
        return (f"simulated_drives needs can.interface 'virtual' (the drives share a python-can "
                f"virtual bus with the controller in this process), got {interface!r}: set "
                "simulated_drives false to use real drives")
    return None


def _cross_check(v: Mapping[str, Any]) -> str | None:
    if v["outer_rate"] > v["servo_rate"]:
        return (f"outer_rate {v['outer_rate']:g} Hz must not exceed servo_rate "
                f"{v['servo_rate']:g} Hz")
    if v["feedback_timeout"] < 2.0 / v["servo_rate"]:
        return (f"feedback_timeout {v['feedback_timeout']:g} s must be at least two servo periods "
                f"({2.0 / v['servo_rate']:g} s): feedback answers the previous period's frame")
    problem = simulated_drives_problem(bool(v["simulated_drives"]), str(v["can.interface"]))
    if problem:
        return problem
    for name in ("pitch_limits", "roll_limits"):
        if any(abs(x) >= 90.0 for x in v[name]):
            return f"{name} must stay inside (-90, 90) deg (J0 is singular at +-90 deg pitch)"
    return None


_POS: dict[str, Any] = {"minimum": 0.0, "exclusive_minimum": True}
_NON_NEG: dict[str, Any] = {"minimum": 0.0}

SPEC = ParamSpec("waist_controller", [
    Param("can.interface", "virtual", "python-can interface: socketcan on the robot; virtual = "
          "the simulated drives"),
    Param("can.channel", "waist", "can0 on the robot; the virtual channel shared with the "
          "simulation"),
    Param("can.bitrate", 320000, "bus bit rate (paper: SJA1000 at 320 kbit/s)", "bit/s",
          minimum=1.0),
    Param("motor_ids", [1, 2], "drive node ids of motor 1 and motor 2 of the differential",
          length=2, check=_motor_ids_problem),
    Param("gear_ratio_pitch", 100.0, "i1 (the paper gives no figure; chosen for the simulated "
          "drive)", **_POS),
    Param("gear_ratio_roll", 100.0, "i2", **_POS),
    Param("servo_rate", 500.0, "position/velocity loops (paper: 2 ms); bus load 48.3 %", "Hz",
          **_POS, maximum=2000.0),
    Param("outer_rate", 50.0, "RMRC outer loop on the inclinometer (paper: 20 ms)", "Hz", **_POS),
    Param("kp", 13.0, "position gain (paper)", "1/s", **_NON_NEG),
    Param("kv", 500.0, "velocity P (paper), in current units per rad/s", **_NON_NEG),
    Param("ki", 5.0, "velocity I (paper), in current units per rad", **_NON_NEG),
    Param("current_unit", 0.001, "current unit of kv, ki (assumed 1 mA, see core/servo.py)", "A",
          **_POS),
    Param("current_limit", WAIST_DRIVE_CURRENT_LIMIT_A, "current setpoint limit (at most the "
          "DBC's WaistCurrentCmd range)", "A", **_POS),
    Param("outer_gain", 2.0, "inclinometer feedback of the outer loop", "1/s", **_NON_NEG,
          maximum=100.0, dynamic=True),
    Param("droop_gain", 20.0, "integral of the encoders' error that removes the servo's static "
          "error under load (0 = none)", "1/s", **_NON_NEG, maximum=200.0),
    Param("pitch_limits", [-5.0, 45.0], "pitch range (paper)", "deg", length=2,
          check=_range_problem("pitch_limits")),
    Param("roll_limits", [-15.0, 15.0], "roll range (paper)", "deg", length=2,
          check=_range_problem("roll_limits")),
    Param("velocity_limit", 60.0, "joint speed limit of the shaped reference (URDF: 60 deg/s)",
          "deg/s", **_POS, maximum=1000.0, dynamic=True),
    Param("acceleration_limit", 30.0, "joint acceleration limit of the shaped reference "
          "(commands and clamps are blended within it; a controlled stop brakes at it)", "deg/s^2", **_POS,
          maximum=100000.0, dynamic=True),
    Param("limit_policy", "refuse", "commands beyond the joint range: refuse them, or clamp "
          "the path at the range's edge", choices=("refuse", "clamp"), dynamic=True),
    Param("command_timeout", 0.5, "after a command's last point, before a controlled stop", "s",
          **_POS, maximum=3600.0, dynamic=True),
    Param("feedback_timeout", 0.01, "drive silence that disables both drives", "s", **_POS),
    Param("inclinometer_timeout", 0.1, "older inclinometer samples: the encoders are used", "s",
          **_POS, maximum=3600.0, dynamic=True),
    Param("homing_tolerance", 2.0, "enable refuses when a fresh inclinometer sample and the "
          "encoders differ by more (the drives' incremental encoders count from power-on)",
          "deg", **_POS, maximum=45.0),
    Param("publish_rate", 100.0, "/joint_states and /waist/tracking_error", "Hz", **_POS),
    Param("diagnostics_rate", 10.0, "/waist/motor_states and /diagnostics", "Hz", **_POS),
    Param("spin_margin", 0.0003, "the servo thread busy-waits this long before each deadline",
          "s", **_NON_NEG, maximum=0.01),
    Param("gil_switch_interval", 5e-05, "sys.setswitchinterval while the servo runs (0 = "
          "Python's 5 ms)", "s", **_NON_NEG, maximum=0.1),
    Param("servo_priority", 50, "SCHED_FIFO priority of the servo thread (0 = normal "
          "scheduling; needs an rtprio limit or CAP_SYS_NICE, else a warning)", minimum=0.0,
          maximum=99.0),
    Param("executor_priority", 30, "SCHED_FIFO priority of the thread that runs the node's "
          "callbacks (/diagnostics, /waist/motor_states, commands, services), set at configure, "
          "below the servo's and arm_balance's 40 (0 = normal scheduling; needs an rtprio limit "
          "or CAP_SYS_NICE, else a warning; at 0 its 10 Hz /diagnostics came up to 5.4 periods "
          "apart at load 12-19)", minimum=0.0, maximum=99.0),
    Param("simulated_drives", False, "host simulated drives on the virtual channel "
          "(simulation; needs can.interface virtual)"),
    Param("urdf_path", "", "simulated_drives: the humanoid whose upper body they carry; empty: "
          "the package's"),
], cross_check=_cross_check)



@dataclass(frozen=True)
class WaistControllerConfig:
    """The ``waist_controller`` node's parameters, typed (SI units, radians).

    Attributes:
        servo: the controller's tunables (geometry, gains, rates, timeouts, limits, bit rate).
        thread: the servo thread's spin margin, GIL switch interval and publishing rate.
        can_interface: python-can interface (``socketcan``, ``virtual``).
        can_channel: its channel.
        diagnostics_rate_hz: ``/waist/motor_states`` and ``/diagnostics`` [Hz].
        servo_priority: SCHED_FIFO priority of the servo thread (0: normal scheduling).
        executor_priority: SCHED_FIFO priority of the callbacks' thread (0: normal scheduling).
        simulated_drives: host simulated drives on the virtual channel.
        urdf_path: the humanoid whose upper body they carry ("": the package's).
    """

    servo: WaistServoConfig
    thread: ThreadTiming
    can_interface: str
    can_channel: str
    diagnostics_rate_hz: float
    servo_priority: int
    executor_priority: int
    simulated_drives: bool
    urdf_path: str


def config_from_values(values: Mapping[str, Any]) -> WaistControllerConfig:
    """The typed configuration of a full set of parameter values (checked by :data:`SPEC`;
    degrees turned into radians once, by :func:`~humanoid_balance.params.typed.typed_config`).

    :class:`~humanoid_balance.core.servo.ServoGains` is built by hand: its fields are not
    named by the rule (``kp`` is ``kp`` [1/s]) and its ``velocity_limit_rad_s`` is the motor's
    speed bound, not the joints' ``velocity_limit``.

    Raises:
        ConfigurationError: values the spec or the controller refuse, with the reason.
    """
    from humanoid_balance.core.waist_kinematics import DifferentialWaist
    from humanoid_balance.waist.config import WaistServoConfig
    from humanoid_balance.waist.loop import ThreadTiming

    v = SPEC.coerce_all(values)
    waist = typed_config(DifferentialWaist, SPEC, v, keep_defaults=("height_m",))
    gains = ServoGains(kp=v["kp"], kv=v["kv"], ki=v["ki"], dt=1.0 / v["servo_rate"],
                       current_limit_a=v["current_limit"], current_unit_a=v["current_unit"])
    servo = typed_config(WaistServoConfig, SPEC, v, keep_defaults=("max_bus_load",), waist=waist,
                         gains=gains, outer_gain_per_s=v["outer_gain"],
                         droop_gain_per_s=v["droop_gain"], bitrate=v["can.bitrate"])
    thread = typed_config(ThreadTiming, SPEC, v, publish_every=max(
        1, round(servo.servo_rate_hz / v["publish_rate"])))
    return typed_config(WaistControllerConfig, SPEC, v, servo=servo, thread=thread,
                        can_interface=v["can.interface"], can_channel=v["can.channel"])
