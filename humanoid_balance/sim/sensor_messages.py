"""What ``mujoco_sim`` publishes each period, as serialized messages (CDR bytes, no rclpy).

The 1 kHz messages are written with :mod:`humanoid_balance.cdr`: no rclpy message is built
in the physics thread. The humanoid's sensors are read in one call
(:meth:`~humanoid_balance.sim.humanoid.HumanoidSim.read_sensors`: one noise draw, the
readings of reading them one by one at about four fifths of the cost); other robots have
joints and ground truth only. The readings, noise draws included, are the same whichever
topics are heard: who listens does not change the simulation.

Test-only faults (:class:`SensorFaults`, ``/sim/fault``, for the chaos run of issue 35) change
what is written, never the simulation: the clock leaping (every stamp written, ``/clock``
included, moves by an offset, and the node takes it off the stamps of the commands it
receives), the F/T topics stopping, and one foot's F/T sensor returning zeros.
"""

from __future__ import annotations

import math
from collections.abc import Container, Iterator
from dataclasses import dataclass

import numpy as np

from humanoid_balance import cdr
from humanoid_balance.sim.humanoid import SIDES, HumanoidSim
from humanoid_balance.sim.robot import MujocoRobotSim
from humanoid_balance.sim.runner import Period

__all__ = ["ALWAYS", "SIM_FAULT_TOPIC", "SensorFaults", "SensorMessages"]

#: test-only (std_msgs/String): ``clock_jump S`` (the published time leaps S seconds; negative
#: goes back), ``clock_zero`` (the published time restarts at 0, as a restarted simulation's),
#: ``ft_stop`` (no F/T messages), ``ft_zero SIDE`` (that foot's F/T reads zeros),
#: ``ft_resume`` (the F/T sensors as they are)
SIM_FAULT_TOPIC = "/sim/fault"


@dataclass
class SensorFaults:
    """The test-only faults in force (see :data:`SIM_FAULT_TOPIC`).

    Attributes:
        clock_offset_ns: added to every stamp written [ns].
        ft_stopped: no F/T message is written.
        ft_zero: the sides whose F/T sensor reads zeros.
    """

    clock_offset_ns: int = 0
    ft_stopped: bool = False
    ft_zero: frozenset[str] = frozenset()

    def apply(self, text: str, now_ns: int) -> str:
        """Put the fault ``text`` in force at simulation time ``now_ns`` [ns]; what it did.

        Raises:
            ValueError: an unknown fault or bad arguments.
        """
        words = text.split()
        kind, args = (words[0], words[1:]) if words else ("", [])
        if kind == "clock_jump" and len(args) == 1 and _finite(args[0]):
            self.clock_offset_ns += round(float(args[0]) * 1e9)
        elif kind == "clock_zero" and not args:
            self.clock_offset_ns = -now_ns
        elif kind == "ft_stop" and not args:
            self.ft_stopped = True
        elif kind == "ft_zero" and len(args) == 1 and args[0] in SIDES:
            self.ft_zero = self.ft_zero | {args[0]}
        elif kind == "ft_resume" and not args:
            self.ft_stopped, self.ft_zero = False, frozenset()
        else:
            raise ValueError(f"unknown fault {text!r}: expected clock_jump S, clock_zero, "
                             f"ft_stop, ft_zero {'|'.join(SIDES)} or ft_resume")
        return (f"test fault {text!r}: clock offset {self.clock_offset_ns * 1e-9:+.3f} s, F/T "
                f"{'stopped' if self.ft_stopped else 'on'}, zeros {sorted(self.ft_zero)}")

#: the topics written every period, heard or not
ALWAYS = ("/clock", "/joint_states")


def _finite(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


class SensorMessages:
    """The serialized messages of one period: ``(topic, CDR bytes)`` per topic.

    Args:
        sim: the simulation (a :class:`~humanoid_balance.sim.humanoid.HumanoidSim` has the
            foot sensors, the inclinometer and the centre of pressure).
    """

    def __init__(self, sim: MujocoRobotSim) -> None:
        self.sim = sim
        self.humanoid = sim if isinstance(sim, HumanoidSim) else None
        sides = SIDES if self.humanoid is not None else ()
        #: the topics written, in the order of :meth:`write`
        self.topics: tuple[str, ...] = (
            *ALWAYS, "/sim/com", *(("/sim/base_pose",) if sim.floating_base else ()),
            *(f"/{s}_foot/{kind}" for s in sides for kind in ("ft", "fsr")),
            *(("/waist/inclinometer", "/sim/cop") if sides else ()))
        # the IMU gives its orientation only: -1 covariances
        not_provided = (-1.0,) + (0.0,) * 8
        self._joints = cdr.JointStateWriter(sim.joint_names)
        self._point = cdr.PointStampedWriter("world")
        self._base = cdr.pose_stamped_writer("world")
        #: per side: index, F/T topic, FSR topic, F/T writer
        self._feet = [(i, f"/{s}_foot/ft", f"/{s}_foot/fsr",
                       cdr.wrench_stamped_writer(f"{s}_foot_ft")) for i, s in enumerate(SIDES)]
        self._imu = cdr.imu_writer("waist_plate", angular_velocity_covariance=not_provided,
                                   linear_acceleration_covariance=not_provided)
        self.faults = SensorFaults()
        #: the simulation time of the last period written [ns] (before the clock offset)
        self.last_stamp_ns = 0

    def write(self, period: Period, heard: Container[str]) -> Iterator[tuple[str, bytes]]:
        """The messages of ``period``: :data:`ALWAYS` (``/clock`` when the period has it), and
        the other topics in ``heard`` (those the period has)."""
        sim, faults = self.sim, self.faults
        self.last_stamp_ns = period.stamp_ns
        ns = period.stamp_ns + faults.clock_offset_ns
        if period.clock:
            yield "/clock", cdr.clock_message(ns)
        readings = None if self.humanoid is None else \
            self.humanoid.read_sensors(inclinometer=period.inclinometer)
        js = sim.joint_state() if readings is None else readings.joints
        yield "/joint_states", self._joints.write(ns, js.position, js.velocity, js.effort)
        if "/sim/com" in heard:
            x, y, z = (sim.com() if readings is None else readings.com).tolist()
            yield "/sim/com", self._point.write(ns, x, y, z)
        if sim.floating_base and "/sim/base_pose" in heard:
            position, quaternion = sim.base_pose() if readings is None else \
                (readings.base_position, readings.base_orientation_xyzw)
            yield "/sim/base_pose", self._base.write(ns, (*position, *quaternion))
        if readings is None:
            return
        for i, ft, fsr, writer in self._feet:
            if ft in heard and not faults.ft_stopped:
                zero = faults.ft_zero and SIDES[i] in faults.ft_zero
                yield ft, writer.write(ns, np.zeros(6) if zero else readings.wrench[i])
            if fsr in heard:
                yield fsr, cdr.float64_multi_array_message(readings.fsr[i])
        if readings.inclinometer_xyzw is not None and "/waist/inclinometer" in heard:
            yield "/waist/inclinometer", self._imu.write(ns, readings.inclinometer_xyzw)
        if readings.cop is not None and "/sim/cop" in heard:
            x, y, z = readings.cop.tolist()
            yield "/sim/cop", self._point.write(ns, x, y, z)
