"""The test files that take longest, from a ``pytest --durations=0`` report (issue 34).

    bash tools/bootstrap.sh test --durations=0 | tee /tmp/suite.txt
    python tools/test_durations.py /tmp/suite.txt [--top 30]

Prints each file's seconds (setup, call and teardown of its tests summed), longest first:
where the suite's time goes. (Handing the longest files to the workers first was tried and
undone: it ran the heaviest process tests side by side, and two fresh-clone runs failed for
load, 9 min 46 s and 11 min 33 s against 9 min 58 s in collection order.)
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

LINE = re.compile(r"\s*(?P<seconds>[\d.]+)s (?:call|setup|teardown)\s+(?P<file>[^:\s]+)::")


def file_seconds(report: str) -> Counter[str]:
    """Seconds per test file in a ``--durations`` report."""
    seconds: Counter[str] = Counter()
    for line in report.splitlines():
        match = LINE.match(line)
        if match:
            seconds[match["file"]] += float(match["seconds"])
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="pytest output with --durations=0")
    parser.add_argument("--top", type=int, default=30, help="files listed")
    args = parser.parse_args()
    seconds = file_seconds(args.report.read_text())
    if not seconds:
        raise SystemExit(f"{args.report}: no durations (run pytest with --durations=0)")
    print(f"{sum(seconds.values()):.0f} s in {len(seconds)} files")
    for name, value in seconds.most_common(args.top):
        print(f"{value:8.1f}  {name}")


if __name__ == "__main__":
    main()
