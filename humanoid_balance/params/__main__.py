"""``python -m humanoid_balance.params [--write | --check]``.

Writes (or checks) every node's ``config/*.yaml`` and its parameter table in
``docs/INTERFACES.md`` from the node's spec. The table sits between
``<!-- params:NODE -->`` and ``<!-- /params:NODE -->``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from humanoid_balance.graph import NODES
from humanoid_balance.params import SPEC_NODES, spec_for

ROOT = Path(__file__).resolve().parents[2]


def expected_files(root: Path = ROOT, nodes: tuple[str, ...] = SPEC_NODES) -> dict[Path, str]:
    """Every generated file's path and its expected full text (of ``nodes``)."""
    docs_path = root / "docs" / "INTERFACES.md"
    docs = docs_path.read_text()
    out: dict[Path, str] = {}
    for node in nodes:
        spec = spec_for(node)
        module = sys.modules[f"humanoid_balance.params.{node}"]
        header = getattr(module, "YAML_HEADER", "")
        out[root / "config" / NODES[node].parameter_file] = spec.yaml_text(header)
        docs = replace_table(docs, node, spec.markdown_table())
    out[docs_path] = docs
    return out


def replace_table(docs: str, node: str, table: str) -> str:
    """``docs`` with the table between the node's markers replaced."""
    begin, end = f"<!-- params:{node} -->", f"<!-- /params:{node} -->"
    if begin not in docs or end not in docs:
        raise SystemExit(f"docs/INTERFACES.md has no {begin} ... {end} markers")
    head, rest = docs.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{table}{end}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m humanoid_balance.params",
                                     description=__doc__.splitlines()[2])
    parser.add_argument("--write", action="store_true", help="rewrite the files")
    parser.add_argument("--node", action="append", choices=SPEC_NODES,
                        help="only this node's YAML and table (repeatable; default: all)")
    args = parser.parse_args(argv)
    stale = []
    for path, text in expected_files(nodes=tuple(args.node or SPEC_NODES)).items():
        if path.exists() and path.read_text() == text:
            continue
        if args.write:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
        else:
            stale.append(str(path.relative_to(ROOT)))
    if stale:
        print("out of date with the parameter specs (run python -m humanoid_balance.params "
              "--write): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
