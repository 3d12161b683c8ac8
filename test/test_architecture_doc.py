"""docs/ARCHITECTURE.md matches the tree: every module and folder its layout names exists,
and every module of the package is named there (issue 34)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "ARCHITECTURE.md"


def _layout() -> list[tuple[str, str]]:
    """(folder, name) for every name ending in .py or / in the layout block, with the folder
    the block's indentation puts it in."""
    text = DOC.read_text()
    block = text.split("## Layout", 1)[1].split("```", 2)[1]
    names: list[tuple[str, str]] = []
    stack: list[tuple[int, str]] = []
    for line in block.splitlines():
        match = re.match(r"^( *)([A-Za-z_][\w.]*/?),?(\s|$)", line)
        if not match or line.startswith(" " * 20):  # a description's continuation
            folder = "/".join(n.rstrip("/") for _, n in stack)
            names += [(folder, extra) for extra in re.findall(r"(?<![\w*])([A-Za-z]\w*\.py)", line)]
            continue
        indent, name = len(match.group(1)), match.group(2)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        folder = "/".join(n.rstrip("/") for _, n in stack)
        names.append((folder, name))
        for extra in re.findall(r"(?<![\w*])([A-Za-z]\w*\.py)", line[match.end():]):
            names.append((folder, extra))
        if name.endswith("/"):
            stack.append((indent, name))
    return names


def test_every_path_of_the_layout_exists() -> None:
    missing = []
    for folder, name in _layout():
        if not (name.endswith(".py") or name.endswith("/")):
            continue
        path = ROOT / folder / name.rstrip("/")
        if not path.exists() and not (ROOT / "humanoid_balance" / name).exists() and not any(
                (ROOT / folder).rglob(name.rstrip("/"))):
            missing.append(f"{folder}/{name}")
    assert missing == []


def test_every_module_of_the_package_is_named() -> None:
    """Each module by its name (``run.py`` or ``run``, a whole word) in the layout block."""
    block = DOC.read_text().split("## Layout", 1)[1].split("```", 2)[1]
    unnamed = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "humanoid_balance").rglob("*.py"))
               if p.name not in ("__init__.py", "__main__.py")
               and not re.search(rf"(?<![\w/]){re.escape(p.stem)}(\.py)?\b", block)]
    assert unnamed == []
