"""Print the fault-injection table (Markdown) from ``test/faults/results/*.json``.

Usage: ``python test/faults/table.py [results folder]``, after a run of the
suite (``pytest test/faults``), for the README.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "process"))

from fault_harness import RESULTS_DIR, table


def main(argv: list[str]) -> int:
    """Print the table; 1 when there are no results."""
    folder = Path(argv[1]) if len(argv) > 1 else RESULTS_DIR
    rows = {}
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        rows[data["node"]] = {k: data[k] for k in (
            "tried", "generated", "held", "unsafe", "crash", "failed")}
    if not rows:
        print(f"no results in {folder}: run `pytest test/faults` first", file=sys.stderr)
        return 1
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
