"""``can.bitrate`` reaches the bus: given to interfaces that take one, checked against the OS's
for SocketCAN (a fake ``/sys/class/net`` and a fake ``ip``), warned once where it cannot be."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import can
import pytest

from humanoid_balance.can.bus import (
    SocketcanLink,
    WaistCanBus,
    bitrate_from_ip,
    read_socketcan_link,
    set_bitrate_command,
    socketcan_problem,
)
from humanoid_balance.exceptions import CanBusError

_channels = itertools.count()
REAL_BUS = can.Bus


def fake_sysfs(root: Path, channel: str = "can0", *, up: bool = True,
               bitrate: int | None = None) -> Path:
    """``root`` as /sys/class/net with ``channel`` (flags; can_bittiming/bitrate if given)."""
    folder = root / channel
    folder.mkdir(parents=True)
    (folder / "flags").write_text("0x40081\n" if up else "0x80\n")  # IFF_UP is bit 0
    if bitrate is not None:
        (folder / "can_bittiming").mkdir()
        (folder / "can_bittiming" / "bitrate").write_text(f"{bitrate}\n")
    return root


def ip_json(kind: str = "can", bitrate: int | None = None) -> str:
    """What ``ip -details -json link show dev can0`` prints (the fields read here)."""
    info: dict[str, Any] = {"state": "ERROR-ACTIVE", "restart_ms": 0}
    if bitrate is not None:
        info["bittiming"] = {"bitrate": bitrate, "sample_point": "0.875", "tq": 125}
    return json.dumps([{"ifname": "can0", "flags": ["NOARP", "UP", "LOWER_UP"],
                        "linkinfo": {"info_kind": kind, "info_data": info}}])


def no_ip(channel: str) -> str | None:
    """An OS whose ``ip`` reports nothing."""
    return None


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """``can.Bus`` recording its keyword arguments and opening a virtual bus instead."""
    calls: list[dict[str, Any]] = []

    def bus(**kwargs: Any) -> can.BusABC:
        calls.append(kwargs)
        return REAL_BUS(interface="virtual", channel=f"test_bitrate_{next(_channels)}")

    monkeypatch.setattr(can, "Bus", bus)
    yield calls


def make_bus(interface: str, sysfs: Path, ip_link: Callable[[str], str | None] = no_ip,
             warnings: list[str] | None = None, bitrate: int = 320_000) -> WaistCanBus:
    return WaistCanBus(interface=interface, channel="can0", bitrate=bitrate, use_notifier=False,
                       sysfs_root=sysfs, ip_link=ip_link,
                       warn=(warnings.append if warnings is not None else None))


def test_the_bitrate_is_read_from_sysfs_with_the_up_flag(tmp_path: Path) -> None:
    """can_bittiming/bitrate and the flags of /sys/class/net/can0 are what the link reports."""
    link = read_socketcan_link("can0", sysfs_root=fake_sysfs(tmp_path, bitrate=500_000),
                               ip_link=no_ip)
    assert (link.exists, link.up, link.bitrate) == (True, True, 500_000)


def test_without_the_sysfs_file_the_bitrate_comes_from_ip(tmp_path: Path) -> None:
    """No can_bittiming in sysfs: ``ip -details -json link show``'s bittiming.bitrate."""
    link = read_socketcan_link("can0", sysfs_root=fake_sysfs(tmp_path, up=False),
                               ip_link=lambda channel: ip_json(bitrate=250_000))
    assert (link.up, link.bitrate, link.source) == (False, 250_000,
                                                    "ip -details link show can0")


def test_ip_text_output_gives_the_nominal_not_the_data_bitrate() -> None:
    """The text form (an ``ip`` without -json): ``bitrate N``, not CAN FD's ``dbitrate``."""
    text = ("3: can0: <NOARP,UP,LOWER_UP,ECHO> mtu 72 qdisc pfifo_fast state UP\n"
            "    can <FD> state ERROR-ACTIVE restart-ms 0\n"
            "      dbitrate 2000000 dsample-point 0.750\n"
            "      bitrate 320000 sample-point 0.875\n")
    assert bitrate_from_ip(text) == 320_000


def test_a_vcan_reports_no_bitrate() -> None:
    """A vcan's details name no bittiming: no bit rate (not 0, not an error)."""
    assert bitrate_from_ip(ip_json(kind="vcan")) is None


def test_a_different_bitrate_refuses_to_open_naming_the_command(
        tmp_path: Path, opened: list[dict[str, Any]]) -> None:
    """can0 at 500 kbit/s, can.bitrate 320000: CanBusError with the ip command; nothing opened."""
    with pytest.raises(CanBusError) as error:
        make_bus("socketcan", fake_sysfs(tmp_path, bitrate=500_000))
    assert str(error.value) == (
        "CAN interface can0 runs at 500000 bit/s but can.bitrate is 320000 bit/s: set the "
        "interface's with `sudo ip link set can0 down && sudo ip link set can0 up type can "
        "bitrate 320000` (or set can.bitrate to the drives' bit rate)")
    assert opened == []


def test_an_interface_that_is_down_is_refused_with_the_command(tmp_path: Path) -> None:
    """can0 down (at the right bit rate): refused, naming the command that brings it up."""
    link = read_socketcan_link("can0", sysfs_root=fake_sysfs(tmp_path, up=False, bitrate=320_000),
                               ip_link=no_ip)
    assert socketcan_problem(link, 320_000) == (
        "CAN interface can0 is down: bring it up with `" + set_bitrate_command("can0", 320_000)
        + "`")


def test_a_missing_interface_is_refused(tmp_path: Path) -> None:
    """No /sys/class/net/can0: refused, saying to connect the adapter or fix can.channel."""
    tmp_path.joinpath("eth0").mkdir()
    link = read_socketcan_link("can0", sysfs_root=tmp_path, ip_link=no_ip)
    problem = socketcan_problem(link, 320_000)
    assert link == SocketcanLink("can0", False, None, None)
    assert problem is not None and problem.startswith("no network interface 'can0': connect")


def test_the_same_bitrate_opens_socketcan_without_a_bitrate_argument(
        tmp_path: Path, opened: list[dict[str, Any]]) -> None:
    """can0 at 320 kbit/s: opened; python-can's socketcan is given no bitrate (it has none)."""
    warnings: list[str] = []
    with make_bus("socketcan", fake_sysfs(tmp_path, bitrate=320_000), warnings=warnings):
        pass
    assert (opened, warnings) == ([{"interface": "socketcan", "channel": "can0"}], [])


def test_an_unreported_bitrate_is_warned_once_and_the_bus_opens(
        tmp_path: Path, opened: list[dict[str, Any]]) -> None:
    """The OS reports no bit rate (a vcan): one warning, naming the command, even after a
    recover (the bus opened twice)."""
    warnings: list[str] = []
    bus = make_bus("socketcan", fake_sysfs(tmp_path), lambda channel: ip_json(kind="vcan"),
                   warnings)
    bus.recover()
    bus.close()
    assert len(opened) == 2 and len(warnings) == 1
    assert warnings[0].startswith("the OS reports no bit rate for CAN interface can0")
    assert set_bitrate_command("can0", 320_000) in warnings[0]


def test_interfaces_that_take_a_bitrate_are_given_it(
        tmp_path: Path, opened: list[dict[str, Any]]) -> None:
    """pcan and kvaser get bitrate=can.bitrate; no OS check, no warning."""
    warnings: list[str] = []
    for interface in ("pcan", "kvaser"):
        make_bus(interface, tmp_path, warnings=warnings, bitrate=250_000).close()
    assert [c.get("bitrate") for c in opened] == [250_000, 250_000] and warnings == []


def test_interfaces_without_a_bitrate_warn_once_and_get_none(
        tmp_path: Path, opened: list[dict[str, Any]]) -> None:
    """socketcand: no bitrate argument, one warning that can.bitrate is not applied."""
    warnings: list[str] = []
    make_bus("socketcand", tmp_path, warnings=warnings).close()
    assert "bitrate" not in opened[0]
    assert warnings == ["can.interface socketcand takes no bit rate (the socketcand server's "
                        "interface sets it): can.bitrate 320000 bit/s is not applied; make sure "
                        "the bus runs at it"]


def test_the_virtual_bus_has_no_bitrate_and_no_warning(
        tmp_path: Path, opened: list[dict[str, Any]]) -> None:
    """The simulation's virtual bus: no bitrate argument, nothing warned."""
    warnings: list[str] = []
    make_bus("virtual", tmp_path, warnings=warnings).close()
    assert ("bitrate" in opened[0], warnings) == (False, [])
