"""The waist drives' bus: python-can underneath, the DBC protocol on top.

:class:`MotorBus` is the boundary the waist controller talks to (passed in, so a
test or a simulator can stand in); :class:`WaistCanBus` implements it on any
python-can interface (``socketcan`` on the robot, ``virtual`` in simulation).

What it guarantees:

* a context manager; every blocking call has a timeout;
* received frames are decoded by :class:`~humanoid_balance.can.protocol.WaistProtocol`;
  malformed, unknown, foreign-id and error frames are counted and ignored;
* a bus-off (a SocketCAN error frame with ``CAN_ERR_BUSOFF``, or
  ``bus_off_send_errors`` failed sends in a row) is latched until :meth:`recover`;
  every send while it is latched raises
  :class:`~humanoid_balance.exceptions.CanBusOffError` (``"CAN bus off"``);
* an exception inside the receive thread (python-can's :class:`can.Notifier`) is
  latched as ``receive_failure``: the controller must treat it as lost feedback,
  never keep using the last (stale) sample;
* every feedback sample carries its receive time from the injected clock, so the
  caller can tell missing feedback from fresh feedback.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import can

from humanoid_balance.can.protocol import (
    NODE_IDS,
    ControlCommand,
    DriveFeedback,
    DriveStatus,
    Rejected,
    WaistProtocol,
)
from humanoid_balance.exceptions import CanBusError, CanBusOffError, InvalidInputError


@dataclass(frozen=True)
class FeedbackSample:
    """A drive feedback and the clock time it was received, s."""

    feedback: DriveFeedback
    stamp_s: float


class MotorBus(ABC):
    """What the waist controller needs from the drives' bus."""

    @abstractmethod
    def send_currents(self, currents_a: tuple[float, float]) -> None:
        """Send both current setpoints (by node id 1, 2), A."""

    @abstractmethod
    def send_control(self, node_id: int, command: ControlCommand) -> None:
        """Send a DriveControl command to one drive."""

    @abstractmethod
    def poll(self) -> None:
        """Process received frames now (no-op when a receive thread does it)."""

    @abstractmethod
    def feedback(self, node_id: int) -> FeedbackSample | None:
        """The latest feedback of drive ``node_id``, or None if none came yet."""

    @abstractmethod
    def status(self, node_id: int) -> DriveStatus | None:
        """The latest status frame of drive ``node_id``."""

    @property
    @abstractmethod
    def bus_off(self) -> bool:
        """Whether the bus went off (latched until :meth:`recover`)."""

    @property
    @abstractmethod
    def receive_failure(self) -> str | None:
        """Why the receive path failed (latched until :meth:`recover`), or None."""

    @abstractmethod
    def recover(self) -> None:
        """Re-open the bus and clear the latched bus-off and receive failure."""

    @abstractmethod
    def counters(self) -> dict[str, int]:
        """Frame counters (received, feedback, rejected reasons, error frames, send errors)."""

    @abstractmethod
    def close(self) -> None:
        """Release the bus."""


class _Listener(can.Listener):
    def __init__(self, owner: WaistCanBus) -> None:
        self._owner = owner

    def on_message_received(self, msg: can.Message) -> None:
        self._owner._on_frame(msg)

    def on_error(self, exc: Exception) -> None:
        self._owner._on_receive_error(exc)

    def stop(self) -> None:
        pass


class WaistCanBus(MotorBus):
    """The drives' bus on python-can.

    Args:
        interface: python-can interface (``socketcan``, ``virtual``, ...).
        channel: interface channel (``can0``, or a virtual channel name).
        bitrate: bit/s (the paper's 320 kbit/s by default); ignored by ``virtual``.
        use_notifier: receive in a :class:`can.Notifier` thread (node); False = the
            caller calls :meth:`poll` (deterministic lock-step tests and experiments).
        counts_per_rev: encoder counts per motor turn.
        clock: time source for feedback stamps, s (monotonic by default; a simulation
            clock in lock-step runs).
        send_timeout_s: timeout of each send.
        bus_off_send_errors: failed sends in a row taken as bus-off.
        bus: an already-open python-can bus (tests); ``recover`` cannot re-open it.
    """

    def __init__(self, *, interface: str = "virtual", channel: str = "waist",
                 bitrate: int = 320_000, use_notifier: bool = True,
                 counts_per_rev: int | None = None, clock: Callable[[], float] = time.monotonic,
                 send_timeout_s: float = 0.001, bus_off_send_errors: int = 3,
                 bus: can.BusABC | None = None) -> None:
        self.interface = interface
        self.channel = channel
        self.bitrate = bitrate
        self.use_notifier = use_notifier
        self.protocol = (WaistProtocol() if counts_per_rev is None
                         else WaistProtocol(counts_per_rev))
        self.clock = clock
        self.send_timeout_s = send_timeout_s
        self.bus_off_send_errors = bus_off_send_errors
        self._lock = threading.Lock()
        self._feedback: dict[int, FeedbackSample] = {}
        self._status: dict[int, DriveStatus] = {}
        self._counters: Counter[str] = Counter()
        self._bus_off = False
        self._receive_failure: str | None = None
        self._send_errors_in_row = 0
        self._external_bus = bus
        self._bus: can.BusABC | None = None
        self._notifier: can.Notifier | None = None
        self._open()

    # --- life cycle ---------------------------------------------------------------------

    def _open(self) -> None:
        try:
            if self._external_bus is not None:
                self._bus = self._external_bus
            else:
                kwargs: dict[str, Any] = {"interface": self.interface, "channel": self.channel}
                if self.interface != "virtual":
                    kwargs["bitrate"] = self.bitrate
                self._bus = can.Bus(**kwargs)
        except (can.CanError, OSError, ValueError, ImportError) as exc:
            raise CanBusError(
                f"cannot open CAN interface {self.interface!r} channel {self.channel!r}: {exc}; "
                "check can.interface / can.channel and that the interface is up") from exc
        if self.use_notifier:
            self._notifier = can.Notifier(self._bus, [_Listener(self)], timeout=0.05)

    def close(self) -> None:
        """Stop the receive thread and shut the bus down (if this object opened it)."""
        if self._notifier is not None:
            self._notifier.stop(timeout=1.0)
            self._notifier = None
        if self._bus is not None and self._external_bus is None:
            self._bus.shutdown()
        self._bus = None

    def __enter__(self) -> WaistCanBus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def recover(self) -> None:
        """Close and re-open the bus, forget old feedback, clear the latched failures."""
        self.close()
        with self._lock:
            self._feedback.clear()
            self._status.clear()
            self._bus_off = False
            self._receive_failure = None
            self._send_errors_in_row = 0
        self._open()

    # --- MotorBus ------------------------------------------------------------------------

    @property
    def bus_off(self) -> bool:
        """Whether the bus went off (latched)."""
        return self._bus_off

    @property
    def receive_failure(self) -> str | None:
        """Latched receive failure, or None; also set when the Notifier thread died."""
        notifier = self._notifier
        if (self._receive_failure is None and notifier is not None
                and notifier.exception is not None):
            self._receive_failure = f"receive thread failed: {notifier.exception!r}"
        return self._receive_failure

    def send_currents(self, currents_a: tuple[float, float]) -> None:
        """Send ``WaistCurrentCmd``; refuses non-finite or out-of-range values (nothing sent).

        Raises:
            InvalidInputError: a value the DBC signal cannot carry.
            CanBusOffError: the bus-off latch is set (before or by this send).
            CanBusError: the send failed.
        """
        self._send(self.protocol.encode_currents(currents_a))

    def send_control(self, node_id: int, command: ControlCommand) -> None:
        """Send ``DriveControl<n>``."""
        self._send(self.protocol.encode_control(node_id, command))

    def poll(self) -> None:
        """Drain the receive queue (only without a Notifier)."""
        if self.use_notifier or self._bus is None:
            return
        while True:
            try:
                msg = self._bus.recv(timeout=0.0)
            except Exception as exc:
                self._on_receive_error(exc)
                return
            if msg is None:
                return
            self._on_frame(msg)

    def feedback(self, node_id: int) -> FeedbackSample | None:
        """Latest feedback of drive ``node_id`` with its receive time."""
        with self._lock:
            return self._feedback.get(node_id)

    def status(self, node_id: int) -> DriveStatus | None:
        """Latest DriveStatus of drive ``node_id``."""
        with self._lock:
            return self._status.get(node_id)

    def counters(self) -> dict[str, int]:
        """Copy of the frame counters."""
        with self._lock:
            return dict(self._counters)

    # --- internals -------------------------------------------------------------------------

    def _send(self, msg: can.Message) -> None:
        if self._bus is None:
            raise CanBusError("the CAN bus is closed: configure the node again")
        if self._bus_off:
            raise CanBusOffError()
        try:
            self._bus.send(msg, timeout=self.send_timeout_s)
        except (can.CanError, OSError) as exc:
            with self._lock:
                self._counters["send_errors"] += 1
                self._send_errors_in_row += 1
                if self._send_errors_in_row >= self.bus_off_send_errors:
                    self._bus_off = True
            if self._bus_off:  # this failure, or an error frame meanwhile, latched bus-off
                raise CanBusOffError() from exc
            raise CanBusError(f"CAN send of 0x{msg.arbitration_id:03x} failed: {exc}") from exc
        self._send_errors_in_row = 0

    def _on_frame(self, msg: can.Message) -> None:
        now = self.clock()
        decoded = self.protocol.decode(msg)
        with self._lock:
            self._counters["received"] += 1
            if isinstance(decoded, DriveFeedback):  # the frame of every servo period first
                if decoded.motor_id in NODE_IDS:
                    self._feedback[decoded.motor_id] = FeedbackSample(decoded, now)
                    self._counters["feedback"] += 1
            elif isinstance(decoded, Rejected):
                self._counters[f"rejected_{decoded.reason}"] += 1
                if decoded.reason == "error_frame":
                    self._counters["error_frames"] += 1
                if decoded.bus_off:
                    self._bus_off = True
            elif isinstance(decoded, DriveStatus):
                self._status[decoded.motor_id] = decoded
                self._counters["status"] += 1
            else:
                self._counters["commands_seen"] += 1  # another master on the bus

    def _on_receive_error(self, exc: Exception) -> None:
        with self._lock:
            self._counters["receive_errors"] += 1
            if self._receive_failure is None:
                self._receive_failure = f"receive thread failed: {exc!r}"


def validate_node_ids(motor_ids: tuple[int, ...]) -> tuple[int, int]:
    """``motor_ids`` as (node of motor 1, node of motor 2), a permutation of (1, 2)."""
    ids = tuple(int(m) for m in motor_ids)
    if len(ids) != 2 or sorted(ids) != list(NODE_IDS):
        raise InvalidInputError(
            f"motor_ids must be the two drive node ids {list(NODE_IDS)} in motor order "
            f"(w1, w2), got {list(ids)}")
    return ids[0], ids[1]
