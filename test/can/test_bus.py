"""Tests of WaistCanBus against a second python-can virtual bus."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator

import can
import pytest

from humanoid_balance.can.bus import WaistCanBus
from humanoid_balance.can.protocol import ControlCommand, ControlFrame, WaistProtocol
from humanoid_balance.exceptions import CanBusError, CanBusOffError

PROTOCOL = WaistProtocol()
_channels = itertools.count()


@pytest.fixture
def pair() -> Iterator[tuple[WaistCanBus, can.BusABC]]:
    """A polled WaistCanBus and a raw virtual bus on a fresh channel."""
    channel = f"test_bus_{next(_channels)}"
    peer = can.Bus(interface="virtual", channel=channel)
    with WaistCanBus(channel=channel, use_notifier=False, clock=lambda: 42.0) as bus:
        yield bus, peer
    peer.shutdown()


def _wait(predicate: object, timeout: float = 2.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.001)
    return False


def test_feedback_is_stored_with_its_stamp(pair: tuple[WaistCanBus, can.BusABC]) -> None:
    """A feedback frame from the peer is decoded and stamped with the bus clock."""
    bus, peer = pair
    peer.send(PROTOCOL.encode_feedback(1, 100, 0.5, enabled=True, fault=False, watchdog=False,
                                       brake=False))
    bus.poll()
    sample = bus.feedback(1)
    assert sample is not None
    assert (sample.feedback.position_counts, sample.stamp_s) == (100, 42.0)


def test_commands_reach_the_peer(pair: tuple[WaistCanBus, can.BusABC]) -> None:
    """send_control puts a decodable DriveControl frame on the bus."""
    bus, peer = pair
    bus.send_control(2, ControlCommand.DISABLE)
    msg = peer.recv(timeout=1.0)
    assert msg is not None
    assert PROTOCOL.decode(msg) == ControlFrame(2, ControlCommand.DISABLE)


def test_malformed_frames_are_counted_and_ignored(pair: tuple[WaistCanBus, can.BusABC]) -> None:
    """A short feedback, an unknown id and an error frame are counted; no feedback is stored."""
    bus, peer = pair
    peer.send(can.Message(arbitration_id=0x181, data=bytes(3), is_extended_id=False))
    peer.send(can.Message(arbitration_id=0x555, data=bytes(8), is_extended_id=False))
    peer.send(can.Message(arbitration_id=0x4, is_error_frame=True, data=bytes(8)))
    bus.poll()
    counters = bus.counters()
    assert (counters["rejected_wrong_length"], counters["rejected_unknown_id"],
            counters["error_frames"]) == (1, 1, 1)
    assert bus.feedback(1) is None and not bus.bus_off


def test_bus_off_error_frame_latches_and_blocks_sending(
        pair: tuple[WaistCanBus, can.BusABC]) -> None:
    """A bus-off error frame latches bus_off; sending then raises CanBusOffError "CAN bus off"."""
    bus, peer = pair
    peer.send(can.Message(arbitration_id=0x40, is_error_frame=True, data=bytes(8)))
    bus.poll()
    assert bus.bus_off
    with pytest.raises(CanBusOffError, match=r"^CAN bus off$"):
        bus.send_currents((0.0, 0.0))
    with pytest.raises(CanBusOffError, match=r"^CAN bus off$"):
        bus.send_control(1, ControlCommand.DISABLE)
    assert peer.recv(timeout=0.05) is None  # nothing was sent


def test_failed_sends_in_a_row_become_bus_off(pair: tuple[WaistCanBus, can.BusABC],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed sends raise CanBusError with the cause; the one that latches bus-off, CanBusOffError."""
    bus, _ = pair

    def failing_send(msg: can.Message, timeout: float | None = None) -> None:
        raise can.CanOperationError("transmit buffer full")

    assert bus._bus is not None
    monkeypatch.setattr(bus._bus, "send", failing_send)
    for _ in range(bus.bus_off_send_errors - 1):
        with pytest.raises(CanBusError, match=r"CAN send of 0x200 failed: transmit buffer full") as info:
            bus.send_currents((0.0, 0.0))
        assert not isinstance(info.value, CanBusOffError) and not bus.bus_off
    with pytest.raises(CanBusOffError, match=r"^CAN bus off$"):
        bus.send_currents((0.0, 0.0))
    assert bus.bus_off and bus.counters()["send_errors"] == bus.bus_off_send_errors


def test_recover_clears_bus_off(pair: tuple[WaistCanBus, can.BusABC]) -> None:
    """recover() re-opens the bus and clears the latched bus-off."""
    bus, peer = pair
    peer.send(can.Message(arbitration_id=0x40, is_error_frame=True, data=bytes(8)))
    bus.poll()
    bus.recover()
    assert not bus.bus_off


def test_notifier_exception_is_latched_as_receive_failure() -> None:
    """An exception inside the Notifier thread is latched as a receive failure."""
    channel = f"test_bus_{next(_channels)}"
    peer = can.Bus(interface="virtual", channel=channel)
    with WaistCanBus(channel=channel, use_notifier=True) as bus:

        def broken(msg: can.Message) -> None:
            raise RuntimeError("decoder crashed")

        bus._on_frame = broken  # type: ignore[method-assign]
        peer.send(PROTOCOL.encode_feedback(1, 0, 0.0, enabled=True, fault=False,
                                           watchdog=False, brake=False))
        assert _wait(lambda: bus.receive_failure is not None)
        assert "decoder crashed" in str(bus.receive_failure)
    peer.shutdown()


def test_notifier_receives_feedback() -> None:
    """In Notifier mode feedback arrives without poll()."""
    channel = f"test_bus_{next(_channels)}"
    peer = can.Bus(interface="virtual", channel=channel)
    with WaistCanBus(channel=channel, use_notifier=True) as bus:
        peer.send(PROTOCOL.encode_feedback(2, 7, 0.0, enabled=False, fault=False,
                                           watchdog=False, brake=True))
        assert _wait(lambda: bus.feedback(2) is not None)
    peer.shutdown()


def test_unknown_interface_raises_can_bus_error() -> None:
    """Opening an interface python-can does not know raises CanBusError with a hint."""
    with pytest.raises(CanBusError, match="cannot open CAN interface 'nosuchcan'"):
        WaistCanBus(interface="nosuchcan", channel="x")
