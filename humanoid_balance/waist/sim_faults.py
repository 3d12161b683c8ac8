"""Test-only faults of the simulated drives, as one line of text (``/waist/sim/fault``).

The ``waist_controller`` node hosting simulated drives takes these on a ``std_msgs/String``
topic (a real bus has no such topic); its loop applies them between two servo periods
(:meth:`humanoid_balance.waist.loop.WaistLoop.inject_sim_fault`). The words:

* ``fault N [CODE] [persist]``: drive ``N`` (1 or 2) reports fault ``CODE``
  (:class:`~humanoid_balance.can.protocol.FaultCode`, default INTERNAL); ``persist``: the
  cause stays until ``remove_cause N``;
* ``remove_cause N``: the persistent cause of drive ``N``'s fault is gone;
* ``silent N`` / ``answer N``: drive ``N`` stops / resumes answering;
* ``drop N P``: drive ``N`` loses each incoming frame with probability ``P`` (0..1);
* ``bus_off``: a bus-off error frame; ``error_frame``: an error frame;
* ``frame ID HEXDATA``: any frame (``ID`` in hex; extended above 0x7FF).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from humanoid_balance.can.protocol import FaultCode

if TYPE_CHECKING:
    from humanoid_balance.can.sim_drive import SimulatedWaist

__all__ = ["SIM_FAULT_TOPIC", "sim_fault_action"]

#: the topic a node hosting simulated drives takes these faults on (std_msgs/String)
SIM_FAULT_TOPIC = "/waist/sim/fault"


def sim_fault_action(drives: SimulatedWaist, words: Sequence[str]) -> Callable[[], None]:
    """The simulated-drive fault that ``words`` name (see the module docstring).

    Raises:
        ValueError: an unknown fault or bad arguments.
        IndexError: an argument missing.
    """
    import can

    kind, args = words[0], list(words[1:])

    def node() -> int:
        value = int(args[0])
        if value not in (1, 2):
            raise ValueError(f"drive {value}: expected 1 or 2")
        return value

    if kind == "fault":
        code = FaultCode(int(args[1])) if len(args) > 1 else FaultCode.INTERNAL
        n, persists = node(), "persist" in args[2:]
        return lambda: drives.inject_fault(n, code, persists=persists)
    if kind == "remove_cause":
        n = node()
        return lambda: drives.remove_fault_cause(n)
    if kind in ("silent", "answer"):
        n = node()
        return lambda: drives.stop_answering(n, kind == "silent")
    if kind == "drop":
        n, p = node(), float(args[1])
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"probability {p}: expected 0..1")
        return lambda: drives.drop_frames(n, p)
    if kind == "bus_off":
        return drives.inject_bus_off
    if kind == "frame":
        ident, data = int(args[0], 16), bytes.fromhex(args[1] if len(args) > 1 else "")
        message = can.Message(arbitration_id=ident, data=data, is_extended_id=ident > 0x7FF)
        return lambda: drives.send_raw(message)
    if kind == "error_frame":
        message = can.Message(arbitration_id=0x4, is_error_frame=True, data=bytes(8))
        return lambda: drives.send_raw(message)
    raise ValueError(f"unknown fault {kind!r}")
