"""The DDS fuzz of every raw subscription of every node, short and seeded (issue 35, item 1).

``tools/fuzz_graph.py`` runs in full (60 s a topic, a process per topic) by hand; here every
topic gets 2 s of mutants at its rate, one process per node, /diagnostics at 10 Hz. One test:
it starts the nodes itself, so it is marked ``slow`` (and ``ros``) and no other test repeats
it. Measured on the 2-core machine: 76 s at a load average of 12; 2 min at 15, where the
nodes start and publish several times slower.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent.parent / "tools"
sys.path.insert(0, str(TOOLS))

import fuzz_graph  # noqa: E402

#: s of mutants per topic
SECONDS = 2.0
#: warning and error lines a second a node may print while fuzzed: each of its log keys is
#: throttled to one a second, and a node has a few (unreadable input, a dropped sample, a hold)
MOST_LOG_LINES_PER_S = 8.0


@pytest.mark.slow
@pytest.mark.ros
@pytest.mark.timeout(320)
def test_every_raw_subscription_survives_mutants_over_dds(tmp_path: Path) -> None:
    """2 s of seeded mutants on every raw subscription at its rate: no node crashes, what a
    node's read path accepts is what rclpy reads from the same bytes, and each node counted
    the refusals on /diagnostics, at most the unreadable payloads sent."""
    out = tmp_path / "fuzz_graph.json"
    result = subprocess.run(
        [sys.executable, str(TOOLS / "fuzz_graph.py"), "--seconds", str(SECONDS), "--seed", "3",
         "--share-process", "--settle", "0.5", "--warm-up", "0.3", "--diagnostics-rate", "10",
         "--json", str(out), "--log-dir", str(tmp_path), "--inputs-dir", str(tmp_path / "inputs")],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    rows = json.loads(out.read_text())["rows"]
    topics = {(t.target, t.topic): t for t in fuzz_graph.fuzz_topics()}
    assert [(r["node"], r["topic"]) for r in rows] == list(topics)
    for row in rows:
        fuzz, name = topics[(row["node"], row["topic"])], f"{row['node']} {row['topic']}"
        offline = row["offline"]["counts"]
        assert row["crashes"] == 0 and row["accepted_but_different"] == 0, name
        assert offline["reader_crash"] == offline["refused_undocumented"] == 0, name
        # made at a tenth of the rate at least (a bounded type's long payloads refused by DDS
        # count): at a load of 15 this process and the nodes get a fraction of a core each
        assert row["sent"] + row["dds_refused"] >= 0.1 * fuzz.rate_hz * SECONDS, name
        assert row["accepted"] > 0 and row["refused"] > 0, name
        assert row["accepted"] + row["refused"] == row["sent"], name
        counted = row["node_refused"]
        assert counted is not None and counted > 0, name  # on /diagnostics
        if fuzz.checks_counted:  # mujoco_sim: its checks' refusals of readable commands too
            assert row["received"] is not None and counted <= row["received"] <= row["sent"], name
        else:
            assert counted <= row["refused"], name
        assert row["log_lines_per_s"] <= MOST_LOG_LINES_PER_S, name
