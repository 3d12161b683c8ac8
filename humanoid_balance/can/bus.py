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
  caller can tell missing feedback from fresh feedback;
* the bus runs at ``bitrate`` or is not opened: interfaces that take a bit rate
  (``pcan``, ``kvaser``, ``vector``, ``ixxat``, ``slcan``, ``gs_usb``, ...) are given
  it; a SocketCAN interface takes none from python-can (the OS sets it: ``sudo ip link
  set can0 up type can bitrate 320000``), so its bit rate is read from the OS
  (:func:`read_socketcan_link`) and a different one, an interface that is down or
  missing, is refused with the command that fixes it; where the OS reports none (a
  ``vcan``, not Linux) and for the interfaces without a bit rate of their own
  (``socketcand``, ``udp_multicast``, ``serial``) a warning says once that it is not
  checked; ``virtual`` (the simulation) has none.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import threading
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
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

#: where Linux lists the network interfaces (SocketCAN ones among them)
SYSFS_NET = Path("/sys/class/net")
#: python-can interfaces whose bus takes no bit rate: why (None: the simulation, no bit rate
#: at all). ``socketcan``'s is the OS's and is checked against it instead.
NO_BITRATE_ARGUMENT: dict[str, str | None] = {
    "virtual": None,
    "socketcan": "the OS sets it (ip link)",
    "socketcand": "the socketcand server's interface sets it",
    "udp_multicast": "a multicast bus has none",
    "serial": "the serial adapter sets it",
}
_IFF_UP = 0x1  # flags bit of an interface that is up (include/uapi/linux/if.h)
_TEXT_BITRATE = re.compile(r"\bbitrate (\d+)")  # `ip -details link show` text (not dbitrate)


@dataclass(frozen=True)
class SocketcanLink:
    """What the OS reports of a SocketCAN interface (None: not reported).

    Attributes:
        channel: the interface name (``can0``).
        exists: whether ``/sys/class/net/<channel>`` exists (None: no sysfs, not Linux).
        up: whether the interface is up (its ``flags``).
        bitrate: its bit rate, bit/s (0: none set).
        source: where the bit rate was read.
    """

    channel: str
    exists: bool | None
    up: bool | None
    bitrate: int | None
    source: str = ""


def set_bitrate_command(channel: str, bitrate: int) -> str:
    """The shell command that brings ``channel`` up at ``bitrate`` bit/s (SocketCAN)."""
    return (f"sudo ip link set {channel} down && sudo ip link set {channel} up type can "
            f"bitrate {bitrate}")


def ip_link_details(channel: str) -> str | None:
    """``ip -details -json link show dev CHANNEL`` (the text form where ``-json`` fails), or
    None where ``ip`` is missing or fails."""
    for json_flag in (["-json"], []):
        try:
            done = subprocess.run(["ip", "-details", *json_flag, "link", "show", "dev", channel],
                                  capture_output=True, text=True, timeout=2.0, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        if done.returncode == 0 and done.stdout.strip():
            return done.stdout
    return None


def bitrate_from_ip(output: str) -> int | None:
    """The bit rate in ``ip -details [-json] link show`` output, or None when it names none
    (a ``vcan``, a fixed-bit-rate device, a non-CAN interface)."""
    try:
        entries = json.loads(output)
    except ValueError:
        found = _TEXT_BITRATE.search(output)
        return int(found.group(1)) if found else None
    for entry in entries if isinstance(entries, list) else []:
        info = (entry.get("linkinfo") or {}).get("info_data") or {}
        bitrate = (info.get("bittiming") or {}).get("bitrate") if isinstance(info, dict) else None
        if isinstance(bitrate, int):
            return bitrate
    return None


def read_socketcan_link(channel: str, *, sysfs_root: Path = SYSFS_NET,
                        ip_link: Callable[[str], str | None] = ip_link_details) -> SocketcanLink:
    """Whether ``channel`` exists and is up (sysfs), and its bit rate.

    The bit rate is read from ``<sysfs_root>/<channel>/can_bittiming/bitrate`` where the
    driver provides that file, else from ``ip -details link show`` (the kernel gives it
    over netlink); None when neither reports one.
    """
    exists: bool | None = None
    up: bool | None = None
    if sysfs_root.is_dir():
        folder = sysfs_root / channel
        exists = folder.is_dir()
        try:
            up = bool(int((folder / "flags").read_text().strip(), 16) & _IFF_UP)
        except (OSError, ValueError):
            up = None
        if exists is False:
            return SocketcanLink(channel, False, None, None)
        path = folder / "can_bittiming" / "bitrate"
        try:
            return SocketcanLink(channel, exists, up, int(path.read_text().strip()), str(path))
        except (OSError, ValueError):
            pass
    output = ip_link(channel)
    bitrate = None if output is None else bitrate_from_ip(output)
    return SocketcanLink(channel, exists, up, bitrate,
                         "" if bitrate is None else f"ip -details link show {channel}")


def socketcan_problem(link: SocketcanLink, bitrate: int) -> str | None:
    """Why the waist bus must not open on ``link`` at ``bitrate`` bit/s (None: it may)."""
    fix = f"`{set_bitrate_command(link.channel, bitrate)}`"
    if link.exists is False:
        return (f"no network interface {link.channel!r}: connect the CAN adapter (or set "
                f"can.channel to the right one, `ip link show` lists them), then {fix}")
    if link.bitrate is not None and link.bitrate != bitrate:
        now = "no bit rate set" if link.bitrate == 0 else f"runs at {link.bitrate} bit/s"
        return (f"CAN interface {link.channel} {now} but can.bitrate is {bitrate} bit/s: set "
                f"the interface's with {fix} (or set can.bitrate to the drives' bit rate)")
    if link.up is False:
        return f"CAN interface {link.channel} is down: bring it up with {fix}"
    return None


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
        bitrate: bit/s (the paper's 320 kbit/s by default): given to interfaces that take
            one, checked against the OS's for ``socketcan`` (a different one is refused),
            none for ``virtual`` (see the module docstring).
        use_notifier: receive in a :class:`can.Notifier` thread (node); False = the
            caller calls :meth:`poll` (deterministic lock-step tests and experiments).
        counts_per_rev: encoder counts per motor turn.
        clock: time source for feedback stamps, s (monotonic by default; a simulation
            clock in lock-step runs).
        send_timeout_s: timeout of each send.
        bus_off_send_errors: failed sends in a row taken as bus-off.
        bus: an already-open python-can bus (tests); ``recover`` cannot re-open it.
        warn: where a warning goes (a bit rate that cannot be checked: once per bus);
            the ``humanoid_balance.can`` logger by default.
        sysfs_root: ``/sys/class/net`` (tests pass a folder of their own).
        ip_link: ``ip -details link show`` of a channel (tests pass a fake).

    Raises:
        CanBusError: the bus cannot be opened, or (socketcan) the interface is missing,
            down or at another bit rate (the message names the command that fixes it).
    """

    def __init__(self, *, interface: str = "virtual", channel: str = "waist",
                 bitrate: int = 320_000, use_notifier: bool = True,
                 counts_per_rev: int | None = None, clock: Callable[[], float] = time.monotonic,
                 send_timeout_s: float = 0.001, bus_off_send_errors: int = 3,
                 bus: can.BusABC | None = None, warn: Callable[[str], object] | None = None,
                 sysfs_root: Path = SYSFS_NET,
                 ip_link: Callable[[str], str | None] = ip_link_details) -> None:
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
        self._warn = warn or logging.getLogger("humanoid_balance.can").warning
        self._bitrate_warned = False
        self._sysfs_root = sysfs_root
        self._ip_link = ip_link
        # checked once, here: recover() re-opens the bus from the servo thread, which must not
        # read sysfs or run `ip` (a subprocess, up to 2 s) between two periods
        self._pass_bitrate = self._external_bus is None and self._check_bitrate()
        self._open()

    # --- life cycle ---------------------------------------------------------------------

    def _open(self) -> None:
        try:
            if self._external_bus is not None:
                self._bus = self._external_bus
            else:
                kwargs: dict[str, Any] = {"interface": self.interface, "channel": self.channel}
                if self._pass_bitrate:
                    kwargs["bitrate"] = self.bitrate
                self._bus = can.Bus(**kwargs)
        except (can.CanError, OSError, ValueError, ImportError) as exc:
            raise CanBusError(
                f"cannot open CAN interface {self.interface!r} channel {self.channel!r}: {exc}; "
                "check can.interface / can.channel and that the interface is up") from exc
        if self.use_notifier:
            self._notifier = can.Notifier(self._bus, [_Listener(self)], timeout=0.05)

    def _check_bitrate(self) -> bool:
        """Whether python-can takes ``bitrate`` for this interface; for ``socketcan`` the OS's
        checked (CanBusError when it differs, the interface is down or missing); a warning,
        once, where it cannot be checked."""
        if self.interface not in NO_BITRATE_ARGUMENT:
            return True
        if self.interface == "socketcan":
            link = read_socketcan_link(self.channel, sysfs_root=self._sysfs_root,
                                       ip_link=self._ip_link)
            problem = socketcan_problem(link, self.bitrate)
            if problem is not None:
                raise CanBusError(problem)
            if link.bitrate is None:
                self._warn_bitrate(
                    f"the OS reports no bit rate for CAN interface {self.channel} (a vcan has "
                    f"none): can.bitrate {self.bitrate} bit/s is not checked; on a CAN adapter "
                    f"set it with `{set_bitrate_command(self.channel, self.bitrate)}`")
            return False
        why = NO_BITRATE_ARGUMENT[self.interface]
        if why is not None:
            self._warn_bitrate(
                f"can.interface {self.interface} takes no bit rate ({why}): can.bitrate "
                f"{self.bitrate} bit/s is not applied; make sure the bus runs at it")
        return False

    def _warn_bitrate(self, text: str) -> None:
        if not self._bitrate_warned:
            self._bitrate_warned = True
            self._warn(text)

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
