"""What a loop without ROS tells ``/diagnostics``: the levels and a status, written once.

A node turns a :class:`LoopStatus` into a ``diagnostic_msgs/DiagnosticStatus``
(:func:`humanoid_balance.nodes.common.diagnostic_status`); the levels here are that
message's values, so the loops need no ROS to say them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ERROR", "OK", "STALE", "WARN", "LoopStatus"]

#: diagnostic levels (diagnostic_msgs/DiagnosticStatus values)
OK, WARN, ERROR, STALE = 0, 1, 2, 3


@dataclass(frozen=True)
class LoopStatus:
    """What ``/diagnostics`` says of a loop: a level (:data:`OK` ... :data:`STALE`), a message,
    key values."""

    level: int
    message: str
    values: dict[str, Any] = field(default_factory=dict)
