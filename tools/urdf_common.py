"""What the URDF generators in tools/ share: the command line that writes or checks their file."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path


def write_or_check(build: Callable[[], str], out: Path, description: str,
                   argv: Sequence[str] | None = None) -> int:
    """Write ``build()`` to ``--out`` (default ``out``), or with ``--check`` exit 1 if it differs."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", type=Path, default=out)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is out of date")
    args = parser.parse_args(argv)
    text = build()
    if args.check:
        return 0 if args.out.exists() and args.out.read_text() == text else 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"wrote {args.out}")
    return 0
