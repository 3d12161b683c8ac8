"""The demo's scenario driver: the job arm's strike and the waist's lean, answered period by period.

Part of ``humanoid-balance demo`` (:mod:`humanoid_balance.apps.demo`): the driver runs in
the demo's own process, beside the node processes it drives.
"""

from __future__ import annotations

import math
from typing import Any

from humanoid_balance import cdr  # numpy only: the per-message stamp reads and writes

#: s of simulation the waist's move to its start pitch takes (a cosine ramp from t = 0)
WAIST_MOVE_S = 0.8
#: s of simulation the waist's last set point is repeated after the ramp, so that the drives
#: reach it before the controller's command timeout stops them (they stopped 0.1-0.15 deg short)
WAIST_HOLD_S = 0.6
#: s of simulation between two set points of the waist's ramp on /waist/command
WAIST_SETPOINT_PERIOD_S = 0.02


class StrikeDriver:
    """Answers each period ``t`` with the job arm's input for ``t + period``, stamped ``t``.

    With RMC the input is the strike's joint velocities (``arm_balance`` makes the
    command); without, positions and velocities for the simulation's servos. The
    stamp is the period answered, as ``arm_balance`` stamps its command with the
    joint state it answers, so the lock-step simulation (which waits, after
    publishing ``t``, for a message stamped ``>= t``) steps to ``t + period`` only
    once the input for ``t + period`` is out.

    The period ``t`` is answered when the simulation's ``/joint_states`` stamped ``t``
    comes (``answer_commands`` False, without RMC: every publish period; ``/clock`` may
    come less often, see ``mujoco_sim``'s ``clock_rate``), or, with RMC, once
    ``arm_balance``'s command for ``t`` is out (``answer_commands`` True). Answering
    the state's arrival, the input for ``t + period`` races ``arm_balance``'s cycle at
    ``t``: measured, a third of the cycles of a lock-step run saw the input one period
    early, a share that changed from run to run, and so did the CoP peak shift (by 0.4 to 0.9 mm between
    runs). Sent after the command for ``t``, the input can only be overtaken by the
    simulation's next state, which waits for it. Times of the strike count from
    the first period answered after :meth:`start` (0 in lock-step, where time
    waits for the nodes).

    Args:
        node: the demo's rclpy node (on simulation time).
        strike: the job arm's trajectory (:class:`humanoid_balance.core.strike_trajectory.StrikeTrajectory`).
        topic: the job input topic.
        positions: send positions too (no RMC).
        period_ns: the simulation's publish period [ns].
        answer_commands: answer ``arm_balance``'s commands instead of the clock ticks.
        waist_pitch_rad: the waist's start pitch [rad], None: no waist. The waist moves
            there on a cosine ramp over :data:`WAIST_MOVE_S` of simulation time, sent as
            a set point every :data:`WAIST_SETPOINT_PERIOD_S` on ``/waist/command``, the
            last one for :data:`WAIST_HOLD_S` more. (One
            trajectory would run on the waist controller's wall clock: at the lock-step's
            speed, which depends on the machine's load, the move took 0.2 to 0.5 s of
            simulation time, the robot swayed differently each time, still 10 mm of CoP
            at the strike's start, and the CoP peak shift varied from 17.9 to 22.7 mm
            between four lock-step runs, measured.)
    """

    def __init__(self, node: Any, strike: Any, *, topic: str, positions: bool,
                 period_ns: int, answer_commands: bool = False,
                 waist_pitch_rad: float | None = None) -> None:
        from rclpy.qos import QoSProfile
        from rosgraph_msgs.msg import Clock
        from sensor_msgs.msg import JointState
        from trajectory_msgs.msg import JointTrajectory

        self.waist_pitch_rad = waist_pitch_rad
        self.waist_publisher = None if waist_pitch_rad is None else \
            node.create_publisher(JointTrajectory, "/waist/command", QoSProfile(depth=10))
        self._waist_next_ns = 0
        self.strike = strike
        self.positions = positions
        self.period_ns = int(period_ns)
        qos = QoSProfile(depth=10)
        self.publisher = node.create_publisher(JointState, topic, qos)
        # raw: only the header stamps are read
        if answer_commands:
            node.create_subscription(Clock, "/clock", self._on_clock, qos)
            node.create_subscription(JointState, "/arm_balance/command", self._on_command, qos,
                                     raw=True)
        else:  # each period's state (free-running, /clock comes every 10 ms only)
            node.create_subscription(JointState, "/joint_states", self._on_state, qos, raw=True)
        self.answer_commands = answer_commands
        # written as CDR bytes, not an rclpy JointState built and converted each period (1 kHz
        # free-running): py-spy put a quarter of this process's Python samples there, though
        # by /proc the process went only from 34-35 to 33 % of a core (DDS's own threads)
        self._writer = cdr.JointStateWriter(strike.joint_names)
        self.started = False
        #: the latest /clock [ns]; the first period answered [ns] (None before it); the last one
        self.now_ns: int | None = None
        self.origin_ns: int | None = None
        self.last_answered_ns: int | None = None

    def start(self) -> None:
        """Answer the periods from now on."""
        self.started = True

    def elapsed_s(self) -> float:
        """Simulated seconds since the first period answered after :meth:`start`."""
        if self.origin_ns is None or self.now_ns is None:
            return 0.0
        return 1e-9 * (self.now_ns - self.origin_ns)

    def _on_clock(self, msg: Any) -> None:
        from humanoid_balance.nodes.common import stamp_ns

        self._tick(stamp_ns(msg.clock))

    def _on_state(self, data: bytes) -> None:
        self._tick(cdr.header_stamp_ns(data))

    def _tick(self, now_ns: int) -> None:
        """Simulation time is ``now_ns``: answer it (unless the commands are answered), the waist."""
        if self.now_ns is not None and now_ns < self.now_ns:
            return  # an older message overtaken by a newer one
        self.now_ns = now_ns
        if not self.answer_commands:
            self._answer(now_ns)
        if self.origin_ns is not None and self.waist_publisher is not None:
            self._waist_setpoint(now_ns - self.origin_ns)

    def _waist_setpoint(self, elapsed_ns: int) -> None:
        """The waist's ramp: its set point at ``elapsed_ns``, every set-point period until it ends."""
        from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

        assert self.waist_publisher is not None and self.waist_pitch_rad is not None
        if elapsed_ns < self._waist_next_ns:
            return
        period_ns = round(WAIST_SETPOINT_PERIOD_S * 1e9)
        self._waist_next_ns = (elapsed_ns // period_ns + 1) * period_ns
        move_ns = round(WAIST_MOVE_S * 1e9)
        if elapsed_ns > move_ns + round(WAIST_HOLD_S * 1e9):
            self.waist_publisher = None  # the controller holds the last point, then stops
            return
        share = min(1.0, elapsed_ns / move_ns)
        pitch = self.waist_pitch_rad * 0.5 * (1.0 - math.cos(math.pi * share))
        point = JointTrajectoryPoint(positions=[float(pitch), 0.0])  # time_from_start 0: now
        self.waist_publisher.publish(JointTrajectory(joint_names=["waist_pitch", "waist_roll"],
                                                     points=[point]))

    def _on_command(self, data: bytes) -> None:
        self._answer(cdr.header_stamp_ns(data))

    def _answer(self, period_ns: int) -> None:
        """Publish the input for ``period_ns + period``, stamped ``period_ns``.

        A repeated period is answered again (the same input): before time runs the
        simulation republishes its t = 0 state until every lock-step topic answered, and an
        answer sent before ``mujoco_sim`` matched this publisher is lost; skipping the repeat
        stalled the start for good (seen in the soak at load 10). Older periods are ignored.
        """
        if not self.started or (self.last_answered_ns is not None
                                and period_ns < self.last_answered_ns):
            return
        if self.origin_ns is None:
            self.origin_ns = period_ns
        self.last_answered_ns = period_ns
        sample = self.strike.sample(1e-9 * (period_ns + self.period_ns - self.origin_ns))
        self.publisher.publish(self._writer.write(
            period_ns, sample.position if self.positions else (), sample.velocity))
