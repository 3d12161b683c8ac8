"""What the URDF generators in tools/ share: number formatting, inertials, and the command line."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path


def num(x: float) -> str:
    """A number as URDF text: 12 significant digits, rounding noise below 1e-15 written as 0."""
    x = 0.0 if abs(x) < 1e-15 else float(x)
    return f"{x:.12g}"


def vec(xs: Iterable[float]) -> str:
    """Numbers separated by spaces (xyz, rpy, size)."""
    return " ".join(num(float(x)) for x in xs)


def box_inertia(mass: float, size: Sequence[float]) -> tuple[float, float, float]:
    """Principal inertias [kg m^2] about the centre of a uniform box of ``mass`` [kg] and ``size`` [m]."""
    x, y, z = size
    return (mass * (y * y + z * z) / 12, mass * (x * x + z * z) / 12, mass * (x * x + y * y) / 12)


def inertial(mass: float, com: Sequence[float], inertia: Sequence[float]) -> list[str]:
    """``<inertial>`` lines: mass [kg] at ``com`` [m], principal inertias along the link axes."""
    ixx, iyy, izz = inertia
    return [
        "    <inertial>",
        f'      <origin xyz="{vec(com)}" rpy="0 0 0"/>',
        f'      <mass value="{num(mass)}"/>',
        f'      <inertia ixx="{num(ixx)}" ixy="0" ixz="0" iyy="{num(iyy)}" iyz="0" izz="{num(izz)}"/>',
        "    </inertial>",
    ]


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
