"""``benchmarks/cdr.py``: every reader and writer measured, the three implementations equal."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from cdr import (  # noqa: E402
    IMPLEMENTATIONS,
    POOL,
    Case,
    all_cases,
    check_equal,
    covered_api,
    run_rounds,
    typestore,
)


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    """The benchmark's cases, built once (rosbags' type store and the input pools)."""
    return all_cases(typestore())


def test_every_reader_and_writer_of_cdr_is_measured(cases: list[Case]) -> None:
    """Each callable of ``humanoid_balance.cdr.__all__`` has a case."""
    measured, unmeasured = covered_api(cases)
    assert unmeasured == set()
    assert {"JointStateReader", "read_wrench_stamped", "JointStateWriter",
            "JointStateCommandWriter", "PolygonStampedWriter", "with_stamp"} <= measured


def test_each_case_times_all_three_implementations(cases: list[Case]) -> None:
    """A reader and a writer for each implementation, and pools of distinct inputs."""
    keys = [c.key for c in cases]
    assert len(keys) == len(set(keys))
    for case in cases:
        assert set(case.calls) == set(IMPLEMENTATIONS), case.key
        assert len(case.inputs) == POOL, case.key


def _case_keys() -> list[str]:
    return [c.key for c in all_cases(typestore())]


@pytest.mark.parametrize("key", _case_keys())
def test_rclpy_and_rosbags_give_what_the_cdr_code_gives(cases: list[Case], key: str) -> None:
    """On every input of the pool: a reader's fields, a writer's message, equal."""
    case = next(c for c in cases if c.key == key)
    assert check_equal(case) == {"rclpy": "equal", "rosbags": "equal"}


def test_a_difference_is_reported_with_the_input_it_shows_on(cases: list[Case]) -> None:
    """A wrong implementation is caught (the comparison is not vacuous)."""
    case = next(c for c in cases if c.key == "read_wrench_stamped")

    def off_by_one_ns(data: bytes) -> Any:
        stamp, frame, values = case.calls["rclpy"](data)
        return stamp + 1, frame, values

    broken = Case(case.key, case.api, case.type_name, case.inputs,
                  dict(case.calls, rosbags=off_by_one_ns), case.canonical)
    verdict = check_equal(broken)
    assert verdict["rclpy"] == "equal"
    assert verdict["rosbags"].startswith("differs on input 0: ")


def test_rounds_interleave_every_case_and_implementation(cases: list[Case]) -> None:
    """7 calls in rounds of 3: each implementation of each case timed 7 times, in 3 rounds."""
    chosen = cases[:2]
    timer = run_rounds(chosen, calls=7, batch=3)
    assert len(timer) == 7
    for case in chosen:
        for impl in IMPLEMENTATIONS:
            rounds = case.times_ns[impl]
            assert [len(r) for r in rounds] == [3, 3, 1]
            assert all((r > 0).all() for r in rounds)
