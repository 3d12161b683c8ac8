"""Fault injection: ``mujoco_sim`` as a process, attacked through its command topics and parameters.

The node runs the lunar arm (``model: lunar_arm``, four times real time,
``/joint_states`` at 250 Hz of simulation time: 1 kHz of wall time;
diagnostics at 10 Hz) with ``config/sim.yaml``. Each case sends a bad command
(non-finite, extreme, wrong sizes, unknown names, odd stamps, floods), stops
commands, or sets a bad parameter; then checks that the node runs and answers
(``fault_harness.Case``), that every ``/joint_states`` it published is finite,
that ``/diagnostics`` names the cause, and that a good command still moves the
arm (recovery).
"""

from __future__ import annotations

import math
import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from fault_harness import OK, REACTION_S, WARN, DiagnosticsWatch, Ledger, Target
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from process_harness import Probe, Recorder, RunningNode, all_finite, start_node, wait_ready

from humanoid_balance.core.identification import LUNAR_JOINTS
from humanoid_balance.graph import NODES, GraphNode

pytestmark = pytest.mark.ros

NODE = "mujoco_sim"
MOVED = LUNAR_JOINTS[0]
#: simulation time per wall time: the cases wait for the arm (1 rad/s, joint1's range 5.9 rad)
RTF = 4.0
#: [Hz] of simulation time: /joint_states at 1 kHz of wall time, as in real time at 1 kHz
PUBLISH_HZ = 250.0
#: [rad/s] joint1's velocity limit (the lunar arm's URDF): a move of d rad takes d s of simulation
VELOCITY_LIMIT = 1.0
GENERATED = settings(max_examples=12, deadline=None, derandomize=True, database=None,
                     suppress_health_check=list(HealthCheck))


def sim_node() -> GraphNode:
    """The lunar arm at four times real time, diagnostics at 10 Hz, no sensor noise."""
    return GraphNode(NODES[NODE], {"model": "lunar_arm", "diagnostics_rate": 10.0,
                                   "sensor_noise": 0.0, "command_timeout": 0.2,
                                   "real_time_factor": RTF, "publish_rate": PUBLISH_HZ})


class SimRig:
    """The node, the probe's command publisher, its /joint_states and /diagnostics."""

    def __init__(self, probe: Probe, tmp: Any) -> None:
        from sensor_msgs.msg import JointState

        self.probe, self.tmp = probe, tmp
        self.target = Target(NODE, self._launch(), probe)
        self.commands = probe.publisher(JointState, "/joint_commands", depth=100)
        self.joints: Recorder = probe.record(JointState, "/joint_states", keep=200, depth=10)
        self.diagnostics = DiagnosticsWatch(probe, NODE)
        probe.wait_for_subscribers(self.commands)
        assert probe.spin_until(lambda: self.joints.count > 0, REACTION_S), "no /joint_states"
        self.unfinite = 0
        self._checked = 0
        self._spanned = 0

    def _launch(self) -> RunningNode:
        running = start_node(sim_node(), self.tmp, f"{time.monotonic_ns()}")
        wait_ready(self.probe, running)
        return running

    def restart_killed(self) -> None:
        """kill -9, then start again."""
        os.kill(self.target.running.process.pid, signal.SIGKILL)
        self.target.running.process.popen.wait(timeout=5.0)
        self.target.running.stop()
        self.diagnostics.clear()
        self.target.running = self._launch()
        self.probe.wait_for_subscribers(self.commands)

    def send(self, **fields: Any) -> None:
        from sensor_msgs.msg import JointState

        self.commands.publish(JointState(**fields))

    def position(self, joint: str = MOVED) -> float:
        last = self.joints.last
        return float(last.position[list(last.name).index(joint)])

    def states_finite(self) -> bool:
        """Every /joint_states since the last call is finite."""
        fresh = list(self.joints.messages)[-min(len(self.joints.messages),
                                                self.joints.count - self._checked):]
        self._checked = self.joints.count
        return all(all_finite(m.position) and all_finite(m.velocity) and all_finite(m.effort)
                   for m in fresh)

    def extent(self, low: float, high: float, joint: str = MOVED) -> tuple[float, float]:
        """``(low, high)`` widened to every position of ``joint`` since the last call [rad]."""
        fresh = list(self.joints.messages)[-min(len(self.joints.messages),
                                                self.joints.count - self._spanned):]
        self._spanned = self.joints.count
        for m in fresh:
            q = float(m.position[list(m.name).index(joint)])
            low, high = min(low, q), max(high, q)
        return low, high

    def move_from_zero(self, velocity: float) -> None:
        """Bring :data:`MOVED` to 0 rad, then command ``velocity`` [rad/s] (nothing after)."""
        self.send(name=[MOVED], position=[0.0])
        self.probe.spin_until(lambda: abs(self.position()) < 0.01, REACTION_S)
        self.send(name=[MOVED], velocity=[velocity])

    def recovers(self) -> bool:
        """A good position command moves the joint there (0.05 rad).

        It waits the move's time at the velocity limit in real time (the simulation may not
        keep up with ``RTF`` on a loaded machine) and :data:`REACTION_S` more.
        """
        goal = 0.2 if self.position() < 0.1 else 0.0
        move_s = abs(goal - self.position()) / VELOCITY_LIMIT
        self.send(name=[MOVED], position=[goal])
        return self.probe.spin_until(lambda: abs(self.position() - goal) < 0.05,
                                     move_s + REACTION_S)

    def set_parameter(self, name: str, value: Any) -> Any:
        from rcl_interfaces.srv import SetParameters
        from rclpy.parameter import Parameter

        request = SetParameters.Request(parameters=[Parameter(name, value=value).to_parameter_msg()])
        return self.probe.call(SetParameters, f"/{NODE}/set_parameters", request).results[0]

    def close(self) -> None:
        """Drop the probe's entities, then stop the process (the order ``launch`` keeps)."""
        self.diagnostics.close()
        self.probe.release()
        self.target.running.stop()


@pytest.fixture(scope="module")
def rig(fault_probe: Probe, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimRig]:
    """One mujoco_sim process for the module's cases (restarted by the kill -9 case)."""
    made = SimRig(fault_probe, tmp_path_factory.mktemp("faults_mujoco_sim"))
    try:
        yield made
    finally:
        made.close()


def _rejected(rig: SimRig, ledger: Ledger, group: str, label: str, cause: str,
              **fields: Any) -> None:
    """A bad command is ignored: WARN naming ``cause``, finite states, recovery."""
    with ledger.case(rig.target, group, label) as case:
        since = rig.diagnostics.mark()
        rig.send(**fields)
        case.require(rig.diagnostics.wait_for(WARN, cause, REACTION_S, since),
                     lambda: f"no WARN naming {cause!r}: {rig.diagnostics.latest()}")
        case.require(rig.states_finite(), "a non-finite /joint_states was published")
        case.require(rig.recovers(), "a good command did not move the arm afterwards")


BAD_VALUES = [math.nan, math.inf, -math.inf]


@pytest.mark.parametrize("value", BAD_VALUES, ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("field", ["position", "velocity"])
@pytest.mark.parametrize("joint", [0, 5])
def test_non_finite_commands_are_ignored(rig: SimRig, ledger: Ledger, field: str, joint: int,
                                         value: float) -> None:
    """A non-finite position or velocity is ignored, named on /diagnostics, and the arm recovers."""
    values = [0.0] * len(LUNAR_JOINTS)
    values[joint] = value
    _rejected(rig, ledger, "command values", f"{field}[{joint}]={value}", "non-finite",
              name=list(LUNAR_JOINTS), **{field: values})


@pytest.mark.parametrize(("label", "fields", "cause"), [
    ("3 positions for 6 names", {"name": list(LUNAR_JOINTS), "position": [0.0] * 3}, "3 position values"),
    ("7 velocities for 6 names", {"name": list(LUNAR_JOINTS), "velocity": [0.0] * 7}, "7 velocity values"),
    ("no names", {"name": [], "position": [0.0]}, "names no joint"),
    ("neither position nor velocity", {"name": [MOVED]}, "neither position nor velocity"),
    ("unknown joint", {"name": ["elbow_of_another_robot"], "position": [0.1]}, "does not have"),
    ("a humanoid joint", {"name": ["waist_pitch"], "position": [0.1]}, "does not have"),
    ("known and unknown", {"name": [MOVED, "joint7"], "position": [0.1, 0.1]}, "does not have"),
    ("empty name", {"name": [""], "position": [0.1]}, "does not have"),
])
def test_malformed_commands_are_ignored(rig: SimRig, ledger: Ledger, label: str,
                                        fields: dict[str, Any], cause: str) -> None:
    """A command with wrong sizes or unknown names is ignored, named, and the arm recovers."""
    _rejected(rig, ledger, "command sizes and names", label, cause, **fields)


#: +-1e300 is clipped to the limit: the servo's target ramps there at the velocity limit (before
#: the fix it jumped, and the arm passed the soft limit by 0.06-0.1 rad)
EXTREME = [("position", 1e300), ("position", -1e300),
           *[(field, value) for field in ("position", "velocity") for value in (1e9, 50.0)
             if (field, value) != ("position", 1e9)],
           ("velocity", 1e300), ("velocity", -1e300)]


#: [rad] how far a joint may get past its limit (the servo's gravity sag; before the fix the
#: arm passed it by 0.06-0.1 rad)
PAST_LIMIT = 0.01
#: [s] of wall time a command is watched (a position step: once at its goal, when an overshoot comes)
AFTER_REACHING_S = 0.3


@pytest.mark.parametrize(("field", "value"), EXTREME)
def test_extreme_commands_stay_within_limits(rig: SimRig, ledger: Ledger, field: str,
                                             value: float) -> None:
    """An extreme finite command is clipped to the joint's limits: states stay finite and in range."""
    from humanoid_balance.core.model import RobotModel
    from humanoid_balance.resources import urdf_path
    from humanoid_balance.sim.lunar_arm import LunarArmSim

    lower, upper = RobotModel(urdf_path("lunar_arm")).position_limits(
        [LunarArmSim(timestep=0.001).joint_names[0]])
    low, high = float(lower[0]), float(upper[0])
    with ledger.case(rig.target, "extreme values", f"{field}={value:g}") as case:
        span = rig.extent(np.inf, -np.inf)  # every position from now on

        def watch(goal: float | None = None) -> bool:
            nonlocal span
            span = rig.extent(*span)
            return goal is not None and abs(rig.position() - goal) < 0.02

        rig.send(name=[MOVED], **{field: [value]})
        if field == "position":  # the whole move to the (clipped) goal, then a while there
            goal = float(np.clip(value, low, high))
            move_s = abs(goal - rig.position()) / VELOCITY_LIMIT
            case.require(rig.probe.spin_until(lambda: watch(goal), move_s + REACTION_S),
                         lambda: f"{MOVED} at {rig.position():.3f} rad, its goal {goal:.3f} rad")
        rig.probe.spin_until(watch, AFTER_REACHING_S)
        case.require(rig.states_finite(), "a non-finite /joint_states was published")
        case.require(low - PAST_LIMIT <= span[0] and span[1] <= high + PAST_LIMIT,
                     lambda: f"{MOVED} went over [{span[0]:.3f}, {span[1]:.3f}] rad, limits "
                             f"[{low:.3f}, {high:.3f}]")
        case.require(rig.recovers(), "a good command did not move the arm afterwards")


@given(values=st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64),
                       min_size=6, max_size=6),
       field=st.sampled_from(["position", "velocity"]))
@GENERATED
def test_generated_commands_keep_the_state_finite(rig: SimRig, ledger: Ledger, values: list[float],
                                                  field: str) -> None:
    """Any float vector as a command leaves the published state finite and the node answering."""
    with ledger.case(rig.target, "command values (generated)", f"{field}={values}", True) as case:
        rig.send(name=list(LUNAR_JOINTS), **{field: values})
        rig.probe.spin(0.1)
        case.require(rig.states_finite(), "a non-finite /joint_states was published")
    rig.send(name=list(LUNAR_JOINTS), velocity=[0.0] * 6)


@pytest.mark.parametrize("stamp", [(0, 0), (2_000_000_000, 0), (4_000_000, 999_999_999)],
                         ids=["zero", "far future", "ahead"])
def test_odd_stamps_do_not_matter(rig: SimRig, ledger: Ledger, stamp: tuple[int, int]) -> None:
    """Commands unstamped or stamped ahead of the simulation (another clock) act on receipt: the
    arm still follows."""
    from builtin_interfaces.msg import Time

    with ledger.case(rig.target, "stamps", f"sec={stamp[0]}") as case:
        goal = 0.25 if rig.position() < 0.1 else 0.0
        from std_msgs.msg import Header

        rig.send(header=Header(stamp=Time(sec=stamp[0], nanosec=stamp[1])), name=[MOVED],
                 position=[goal])
        case.require(rig.probe.spin_until(lambda: abs(rig.position() - goal) < 0.05, REACTION_S),
                     lambda: f"{MOVED} at {rig.position():.3f}, commanded {goal}")
        case.require(rig.states_finite(), "a non-finite /joint_states was published")


def test_a_command_stamped_further_back_than_the_timeout_is_refused(rig: SimRig,
                                                                    ledger: Ledger) -> None:
    """A command stamped 1 s on the simulation's clock, long past (command_timeout 0.2 s): not
    taken for a fresh one (it would end a hold and pull the goal back), refused with a WARN
    naming it; a good command moves the arm afterwards."""
    from builtin_interfaces.msg import Time
    from std_msgs.msg import Header

    rig.probe.spin(1.5)  # the simulation's time well past 1 s + command_timeout
    _rejected(rig, ledger, "stamps", "sec=1", "older than command_timeout",
              header=Header(stamp=Time(sec=1, nanosec=0)), name=[MOVED],
              position=[0.25 if rig.position() < 0.1 else 0.0])


def test_flood_of_commands(rig: SimRig, ledger: Ledger) -> None:
    """2000 commands as fast as they go: the node keeps publishing and answering; the last one acts."""
    with ledger.case(rig.target, "floods", "2000 commands at once") as case:
        count = rig.joints.count
        for k in range(2000):
            rig.send(name=[MOVED], position=[0.3 * (k % 2)])
        rig.send(name=[MOVED], position=[0.15])
        # joint states published after the flood, with the last command acted on (the joint
        # may stand near 0.15 already: the position alone could be a state from before)
        case.require(rig.probe.spin_until(
            lambda: rig.joints.count > count and abs(rig.position() - 0.15) < 0.05, REACTION_S),
            lambda: f"{MOVED} at {rig.position():.3f} after the flood, last command 0.15 "
                    f"({rig.joints.count - count} /joint_states since it began)")
        case.require(rig.states_finite(), "a non-finite /joint_states was published")


def test_commands_stopping_hold_the_joint(rig: SimRig, ledger: Ledger) -> None:
    """A velocity command that stops: the joint decelerates to rest, /diagnostics says it holds."""
    with ledger.case(rig.target, "inputs stopping", "velocity command then silence") as case:
        since = rig.diagnostics.mark()
        rig.move_from_zero(0.5)
        case.require(rig.diagnostics.wait_for(WARN, "commands timed out", REACTION_S, since),
                     lambda: f"no hold on /diagnostics: {rig.diagnostics.latest()}")
        rig.probe.spin(0.5)  # 1 s of simulation: at 5 rad/s^2 it stops within 0.1 s
        at_rest = rig.position()
        rig.probe.spin(0.5)
        case.require(abs(rig.position() - at_rest) < 0.01,
                     lambda: f"{MOVED} still moving: {at_rest:.3f} -> {rig.position():.3f} rad")
        case.require(rig.position() < 0.5 * 0.2 + 0.5 ** 2 / 2 / 5.0 + 0.05,
                     lambda: f"{MOVED} went to {rig.position():.3f} rad before it stopped")
        case.require(rig.recovers(), "a good command did not move the arm afterwards")
        since = rig.diagnostics.mark()
        rig.send(name=list(LUNAR_JOINTS), position=[0.0] * 6)
        rig.probe.spin(0.05)
        for _ in range(5):  # commands that keep coming end the hold
            rig.send(name=list(LUNAR_JOINTS), position=[0.0] * 6)
            rig.probe.spin(0.05)


def test_longer_command_timeout_keeps_the_joint_moving(rig: SimRig, ledger: Ledger) -> None:
    """command_timeout set to 30 s over DDS: a velocity command keeps acting after 1 s of silence."""
    with ledger.case(rig.target, "parameters (dynamic)", "command_timeout 30 s") as case:
        result = rig.set_parameter("command_timeout", 30.0)
        case.require(result.successful, lambda: f"refused: {result.reason}")
        rig.move_from_zero(0.3)
        rig.probe.spin(0.5)
        start = rig.position()
        rig.probe.spin(0.5)
        case.require(rig.position() - start > 0.05,
                     lambda: f"{MOVED} stopped: {start:.3f} -> {rig.position():.3f} rad")
        result = rig.set_parameter("command_timeout", 0.2)
        case.require(result.successful, lambda: f"refused: {result.reason}")
        rig.probe.spin(0.6)
        moved = rig.position()
        rig.probe.spin(0.5)
        case.require(abs(rig.position() - moved) < 0.01, "the joint kept moving after 0.2 s again")
        case.require(rig.recovers(), "a good command did not move the arm afterwards")


def test_hold_deceleration_sets_the_stopping_distance(rig: SimRig, ledger: Ledger) -> None:
    """hold_deceleration 0.5 rad/s^2 over DDS: a joint at 0.5 rad/s stops 0.25 rad after the
    timeout instead of 0.025 rad (5 rad/s^2)."""
    with ledger.case(rig.target, "parameters (dynamic)", "hold_deceleration 0.5 rad/s^2") as case:
        result = rig.set_parameter("hold_deceleration", 0.5)
        case.require(result.successful, lambda: f"refused: {result.reason}")
        rig.move_from_zero(0.5)
        rig.probe.spin(1.0)  # 4 s of simulation: timeout 0.2 s, then 1 s of braking
        at_rest = rig.position()
        rig.probe.spin(0.3)
        case.require(abs(rig.position() - at_rest) < 0.01,
                     lambda: f"{MOVED} still moving: {at_rest:.3f} -> {rig.position():.3f} rad")
        # 0.5 rad/s for the 0.2 s timeout, then v^2 / 2a = 0.25 rad (5 rad/s^2: 0.025 rad)
        case.require(0.5 * 0.2 + 0.25 - 0.05 < at_rest < 0.5 * 0.2 + 0.25 + 0.05,
                     lambda: f"{MOVED} stopped at {at_rest:.3f} rad, expected about 0.35")
        result = rig.set_parameter("hold_deceleration", 5.0)
        case.require(result.successful, lambda: f"refused: {result.reason}")
        case.require(rig.recovers(), "a good command did not move the arm afterwards")


def test_real_time_factor_slows_the_simulation(rig: SimRig, ledger: Ledger) -> None:
    """real_time_factor 0.1 over DDS: simulation time advances at most 0.1 s per wall s (+ slack)."""
    with ledger.case(rig.target, "parameters (dynamic)", "real_time_factor 0.1") as case:
        result = rig.set_parameter("real_time_factor", 0.1)
        case.require(result.successful, lambda: f"refused: {result.reason}")
        rig.probe.spin(0.3)

        def sim_time() -> float:
            stamp = rig.joints.last.header.stamp
            return stamp.sec + 1e-9 * stamp.nanosec

        t0, w0 = sim_time(), time.monotonic()
        rig.probe.spin(1.0)
        rate = (sim_time() - t0) / (time.monotonic() - w0)
        case.require(rate < 0.2, f"simulation ran at {rate:.2f} x real time with factor 0.1")
        result = rig.set_parameter("real_time_factor", RTF)
        case.require(result.successful, lambda: f"refused: {result.reason}")


INVALID = [
    ("real_time_factor", math.nan), ("real_time_factor", -1.0), ("real_time_factor", "fast"),
    ("command_timeout", 0.0), ("command_timeout", math.inf), ("command_timeout", -0.1),
    ("hold_deceleration", 0.0), ("hold_deceleration", math.nan),
    ("lock_step_timeout", 0.0), ("lock_step_timeout", -math.inf),
    ("inclinometer_rate", -1.0), ("inclinometer_rate", 5000.0),
]
READ_ONLY = [("model", "humanoid"), ("timestep", 0.002), ("gravity", 1.635),
             ("command_topics", ["/x"]), ("lock_step", True), ("publish_rate", 500.0)]


@pytest.mark.parametrize(("name", "value"), INVALID, ids=[f"{n}={v!r}" for n, v in INVALID])
def test_invalid_parameter_values_are_refused(rig: SimRig, ledger: Ledger, name: str,
                                              value: Any) -> None:
    """An invalid value of a dynamic parameter is refused with a reason naming the parameter."""
    with ledger.case(rig.target, "parameters (invalid)", f"{name}={value!r}") as case:
        result = rig.set_parameter(name, value)
        # a value of another type is refused by rclpy itself (the declared type), before the spec
        named = "Wrong parameter type" if isinstance(value, str) else name
        case.require(not result.successful and named in result.reason,
                     lambda: f"successful {result.successful}, reason {result.reason!r}")


@pytest.mark.parametrize(("name", "value"), READ_ONLY, ids=[n for n, _ in READ_ONLY])
def test_read_only_parameters_are_refused_at_run_time(rig: SimRig, ledger: Ledger, name: str,
                                                      value: Any) -> None:
    """A read-only parameter is refused while the node runs: restart it to change it."""
    with ledger.case(rig.target, "parameters (read-only)", name) as case:
        result = rig.set_parameter(name, value)
        case.require(not result.successful and "restart the node" in result.reason,
                     lambda: f"successful {result.successful}, reason {result.reason!r}")


def test_kill_and_restart(rig: SimRig, ledger: Ledger) -> None:
    """kill -9 while moving, then started again: it publishes, answers and follows commands."""
    with ledger.case(rig.target, "kill -9", "while a velocity command acts") as case:
        rig.send(name=[MOVED], velocity=[0.2])
        rig.probe.spin(0.2)
        rig.restart_killed()
        count = rig.joints.count
        case.require(rig.probe.spin_until(lambda: rig.joints.count > count + 10, REACTION_S),
                     "no /joint_states after the restart")
        case.require(rig.diagnostics.wait_for(OK, "running", REACTION_S, 0.0),
                     lambda: f"no OK status after the restart: {rig.diagnostics.latest()}")
        case.require(rig.recovers(), "a good command did not move the arm after the restart")
