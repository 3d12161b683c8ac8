"""The differential waist over CAN without ROS: states, reference, servo and loop (seed 003).

One concept per module:

* :mod:`~humanoid_balance.waist.states`: the state machine (:class:`ControllerState`) and the
  rules that move it (why fault, why a fault stays, why an enable is refused);
* :mod:`~humanoid_balance.waist.reference`: the shaped joint reference (a command's path
  within the speed and acceleration limits, a hold, a controlled stop);
* :mod:`~humanoid_balance.waist.offsets`: the outer loop's inclinometer offset and the droop
  integral that shift the reference;
* :mod:`~humanoid_balance.waist.feedback`: the drives' feedback as a servo period reads it;
* :mod:`~humanoid_balance.waist.servo`: :class:`WaistController`, the 2 ms servo period over
  the :class:`~humanoid_balance.can.bus.MotorBus` (its tunables:
  :mod:`~humanoid_balance.waist.config`);
* :mod:`~humanoid_balance.waist.loop`: :class:`WaistLoop`, the real-time servo thread with
  its deadlines and the requests run between two periods (commands, the enable and stop
  sequences of :mod:`~humanoid_balance.waist.requests`), and the report the node publishes
  on ``/diagnostics`` (:mod:`~humanoid_balance.waist.report`);
* :mod:`~humanoid_balance.waist.load` (the torso the drives carry) and
  :mod:`~humanoid_balance.waist.sim_faults` (the simulated drives' test-only faults).

The safety rules (issue 5):

* trajectories are checked before use: non-finite values are rejected; a point outside the
  joint range is refused (``limit_policy="refuse"``, default) or clamped into it
  (``"clamp"``), with a message saying which point and by how much; the motor references
  are clamped into the joint range again every period, so no target beyond a limit is sent;
* the command stays live until ``max(receipt, end of its shaped path) + command_timeout``;
  after that the controller makes a controlled stop, detected in the first servo period
  after the deadline;
* a controlled stop (``stop``, the command timeout) is a reference too: the joints brake
  from where the reference is, as it moves, to rest within ``acceleration_limit_rad_s2``,
  together (the direction kept) and each resting before a range edge ahead
  (:mod:`humanoid_balance.core.braking`); the servo then holds where it ended. A stop before
  a disable (``final``) also refuses every command until the next enable;
* a drive that sends no feedback for ``feedback_timeout_s``, a drive fault bit, a bus-off,
  or a failure of the bus receive thread puts the controller in ``FAULT``: both drives are
  sent ``DISABLE`` (their holding brakes engage) and the reason is kept; only a reset (a
  request) leaves ``FAULT``, once the cause is gone;
* a current limit beyond what ``WaistCurrentCmd`` can carry (the DBC range) is refused when
  the controller is built, not met mid-motion;
* enabling starts from the measured motor positions with zero velocity; an old trajectory
  or setpoint is never resumed; a waist more than ``ENABLE_RANGE_TOLERANCE_RAD`` outside its
  range, or whose encoders disagree with a fresh inclinometer sample, is not enabled, and a
  send that fails during the enable disables both drives again; a drive that reports
  enabled while the controller is idle or faulted is sent ``DISABLE`` again;
* the integrals that shift the reference are bounded and frozen while a motor is held
  back; only the servo period sends setpoints, so a stalled loop stops feeding the drives'
  watchdogs and they stop on their own.
"""

from __future__ import annotations

from humanoid_balance.waist.config import WaistServoConfig
from humanoid_balance.waist.loop import LockStepDrives, WaistLoop
from humanoid_balance.waist.reference import TrajectoryResult, WaistTrajectory, clamp_path
from humanoid_balance.waist.servo import CycleOutput, WaistController
from humanoid_balance.waist.states import ENABLED_STATES, ControllerState

__all__ = ["ENABLED_STATES", "ControllerState", "CycleOutput", "LockStepDrives", "TrajectoryResult",
           "WaistController", "WaistLoop", "WaistServoConfig", "WaistTrajectory", "clamp_path"]
