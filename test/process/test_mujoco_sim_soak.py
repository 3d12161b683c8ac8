"""A short soak (``benchmarks/soak.py``): the demo graph in lock-step, the arm swinging, 12 s.

The 10-minute run is ``python benchmarks/soak.py`` (issue 12, item 3, its figures
in ``benchmarks/results/soak.json``); this one checks in CI that the soak holds
at all: no hold, no fault, the arm swinging, every node alive and exiting
cleanly, resident memory within 5 % from 4 s on (a growth over minutes is the
benchmark's to find).
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

SECONDS = 12.0
#: wall s before the first memory sample
WARM_UP_S = 4.0


@pytest.mark.slow
def test_short_soak_holds(tmp_path: Path) -> None:
    """12 s of the lock-step demo graph with the arm swinging: no hold, no fault, no growth."""
    result = soak(SECONDS, tmp_path, progress=False, warm_up_s=WARM_UP_S)
    print()
    print(result.table())
    assert not result.problems(), "\n".join(result.problems())
