"""tools/diagnostics_gaps.py's arithmetic: gaps in wall time and on each node's own clock."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

from diagnostics_gaps import Window


def _window(rng: np.random.Generator, stall_at: float, stall_s: float) -> Window:
    """Two 10 Hz nodes on simulation time and a 1 Hz one on system time, 20 s of wall time
    in which the whole machine stalls for ``stall_s`` at ``stall_at``: the simulation (and
    with it simulation time) stops, the wall-clock gaps grow."""
    window = Window(start=1000.0, end=1020.0)
    for node, period, sim in (("a", 0.1, True), ("b", 0.1, True), ("sim", 1.0, False)):
        wall = 1000.0 + rng.uniform(0.0, period)
        while wall < 1020.0:
            sent = wall + (stall_s if wall >= stall_at else 0.0)
            if sent < 1020.0:
                stamp = (wall - 1000.0) if sim else sent  # simulation time stopped in the stall
                window.sent[f"{node}: status"].append(sent)
                window.arrived[f"{node}: status"].append(sent + 0.001)
                window.stamped[f"{node}: status"].append(stamp)
            wall += period
    return window


def test_a_stall_of_the_machine_is_a_wall_gap_and_not_one_on_simulation_time() -> None:
    """Seeded draws of stalls: the wall-clock gap of the 10 Hz nodes covers the stall, their
    gap on simulation time stays one period; the system-time node has the stall on its clock."""
    rng = np.random.default_rng(7)
    periods = {"a": 0.1, "b": 0.1, "sim": 1.0}
    for _ in range(20):
        stall_s = float(rng.uniform(0.15, 0.8))
        rows = {r.node: r for r in _window(rng, float(rng.uniform(1003, 1015)), stall_s)
                .rows(periods, sim_time=["a", "b"])}
        for node in ("a", "b"):
            assert rows[node].max_gap_s >= stall_s
            assert rows[node].own_clock_gap_periods <= 1.0 + 1e-6
        assert rows["sim"].own_clock_gap_s == pytest.approx(1.0 + stall_s)
        assert rows["sim"].own_clock_gap_s <= rows["sim"].max_gap_s + 1e-9


def test_a_node_silent_on_simulation_time_fails_on_its_own_clock() -> None:
    """A node that stops sending while the others go on has that gap on its own clock."""
    window = _window(np.random.default_rng(3), 2000.0, 0.0)
    status = "a: status"
    keep = [i for i, t in enumerate(window.stamped[status]) if not 5.0 < t < 9.0]
    for kind in (window.sent, window.arrived, window.stamped):
        kind[status] = [kind[status][i] for i in keep]
    rows = {r.node: r for r in window.rows({"a": 0.1, "b": 0.1, "sim": 1.0}, sim_time=["a", "b"])}
    assert 4.0 <= rows["a"].own_clock_gap_s <= 4.1 + 1e-6
    assert rows["b"].own_clock_gap_periods <= 1.0 + 1e-6
