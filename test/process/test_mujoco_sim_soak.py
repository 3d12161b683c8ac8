"""A short soak (``benchmarks/soak.py``): the demo graph in lock-step, the arm swinging, 30 s.

The 10-minute run is ``python benchmarks/soak.py`` (issue 12, item 3); this one
checks in CI that the soak holds at all: no hold, no fault, every node alive
and exiting cleanly, resident memory within 5 % after a 10 s warm-up.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from soak import soak  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.slow]

SECONDS = 30.0


@pytest.mark.slow
def test_short_soak_holds(tmp_path: Path) -> None:
    """30 s of the lock-step demo graph with the arm swinging: no hold, no fault, no growth."""
    result = soak(SECONDS, tmp_path, progress=False)
    print()
    print(result.table())
    assert not result.problems(), "\n".join(result.problems())
