"""User errors on the command line: one line naming what to do, exit status not 0, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from humanoid_balance.bag import BagError, read_bag
from humanoid_balance.processes import executable_path


def _cli(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([executable_path("humanoid-balance"), *args], capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ), check=False)


def _one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode not in (0, None), result
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def _write_damaged_bag(path: Path, count: int = 1000) -> None:
    """An MCAP bag of ``count`` wrenches with 400 bytes overwritten in the middle of its file."""
    from geometry_msgs.msg import WrenchStamped
    from rclpy.serialization import serialize_message
    from rosbags.rosbag2 import StoragePlugin, Writer

    from humanoid_balance.bag import typestore

    with Writer(path, version=8, storage_plugin=StoragePlugin.MCAP) as writer:
        connection = writer.add_connection("/left_foot/ft", "geometry_msgs/msg/WrenchStamped",
                                           typestore=typestore())
        for k in range(count):
            msg = WrenchStamped()
            msg.header.stamp.sec = k
            msg.wrench.force.z = float(k)
            writer.write(connection, k * 1_000_000, serialize_message(msg))
    data_file = next(path.glob("*.mcap"))
    data = bytearray(data_file.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 400] = b"\xab" * 400
    data_file.write_bytes(bytes(data))


def test_report_of_a_json_of_another_shape_is_one_line(tmp_path: Path) -> None:
    """`report` on a JSON that is not a result file names the file and the expected shape."""
    other = tmp_path / "other.json"
    other.write_text(json.dumps([1, 2, 3]))
    line = _one_line_error(_cli("report", str(other)))
    assert f"{other}: not a result file" in line


def test_identify_to_an_unwritable_folder_fails_before_reading_the_bag(tmp_path: Path) -> None:
    """`identify --out` into a folder that cannot be created fails first, naming --out."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    out = blocker / "results.yaml"  # a folder under a file cannot be created, even as root
    line = _one_line_error(_cli("identify", str(tmp_path / "no_bag_here"), "--out", str(out)))
    assert line.startswith(f"identify: --out {out}: cannot create {blocker}")
    assert "choose a writable --out" in line


def test_a_damaged_bag_raises_a_bag_error_after_its_readable_part(tmp_path: Path) -> None:
    """Reading a bag with a damaged chunk ends in a BagError that counts what was read."""
    _write_damaged_bag(tmp_path / "bag")
    seen = 0
    with pytest.raises(BagError, match=r"is damaged after \d+ readable messages") as info:
        for _ in read_bag(tmp_path / "bag"):
            seen += 1
    assert f"after {seen} readable messages" in str(info.value)


@pytest.mark.ros
def test_replay_of_a_damaged_bag_is_one_line(tmp_path: Path) -> None:
    """`replay` of a bag with a damaged chunk ends with one error line, no traceback."""
    _write_damaged_bag(tmp_path / "bag")
    result = _cli("replay", str(tmp_path / "bag"), "--rate", "1000", "--delay", "0",
                  "--domain-id", os.environ["ROS_DOMAIN_ID"])
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert [ln for ln in result.stderr.splitlines() if ln.strip()][-1].startswith(
        f"replay: bag {tmp_path / 'bag'} is damaged after")


def test_cli_turns_an_unexpected_os_error_into_one_line(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """An OSError from a sub-command (a path the user gave) is one line, exit status 2."""
    from humanoid_balance import cli

    missing = tmp_path / "missing.json"
    code = cli.main(["report", str(missing)])
    assert code != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(missing) in err[0]
    del sys.modules["humanoid_balance.apps.report"]  # re-imported fresh by the next test
