"""``apps/`` composes the library: short functions, and nothing imports from it.

The rules, precisely:

1. No function or method in ``humanoid_balance/apps/*.py`` (nested ones included) is
   over :data:`MAX_FUNCTION_LINES` lines, counted from its ``def`` line to its last
   line (docstring and comments included, decorators not).
2. No Python file of the repository outside ``humanoid_balance/apps/`` imports from
   ``humanoid_balance.apps``: not tests, benchmarks, tools or launch files, and no
   package module (``cli.py`` dispatches by module name, it does not import them).
   An import is ``import humanoid_balance.apps...``, ``from humanoid_balance.apps...
   import ...``, ``from humanoid_balance import apps`` or ``import_module`` /
   ``__import__`` of a literal ``"humanoid_balance.apps..."``, anywhere in the file
   (inside functions too). Tests of the command line itself run it as a user does:
   ``humanoid_balance.cli.main`` / ``build_parser`` or ``python -m humanoid_balance.cli``
   (``test_cli_errors.py``, ``test_demo.py``, ``test_launch_wait_for.py`` and the
   experiment tests do); naming a module in a string that is not imported (e.g.
   ``sys.modules["humanoid_balance.apps.report"]``) is not an import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
APPS = REPO / "humanoid_balance" / "apps"
MAX_FUNCTION_LINES = 80
APPS_PACKAGE = "humanoid_balance.apps"
#: folders whose Python files must not import from apps (besides the package outside apps/)
SCANNED = ("test", "benchmarks", "tools", "launch", "humanoid_balance")


def long_functions(source: str, limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, int]]:
    """(name, lines) of every function or method of ``source`` longer than ``limit`` lines."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert node.end_lineno is not None
            lines = node.end_lineno - node.lineno + 1
            if lines > limit:
                out.append((node.name, lines))
    return out


def _is_apps(module: str) -> bool:
    return module == APPS_PACKAGE or module.startswith(APPS_PACKAGE + ".")


def apps_imports(source: str) -> list[str]:
    """The imports from ``humanoid_balance.apps`` in ``source``, as ``module`` or ``module:name``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if _is_apps(alias.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if _is_apps(node.module):
                found += [f"{node.module}:{alias.name}" for alias in node.names]
            elif node.module == "humanoid_balance":
                found += [f"humanoid_balance:{a.name}" for a in node.names if a.name == "apps"]
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            arg = node.args[0]
            if (name in ("import_module", "__import__") and isinstance(arg, ast.Constant)
                    and isinstance(arg.value, str) and _is_apps(arg.value)):
                found.append(arg.value)
    return found


def _app_modules() -> list[str]:
    return sorted(p.name for p in APPS.glob("*.py"))


def _scanned_files() -> list[str]:
    files = {p for folder in SCANNED for p in (REPO / folder).rglob("*.py")}
    return sorted(str(p.relative_to(REPO)) for p in files
                  if APPS not in p.parents and "__pycache__" not in p.parts)


@pytest.mark.parametrize("module", _app_modules())
def test_no_function_in_apps_is_over_80_lines(module: str) -> None:
    """Every function of the app module is at most 80 lines long."""
    assert long_functions((APPS / module).read_text()) == []


def test_nothing_outside_apps_imports_from_apps() -> None:
    """No test, benchmark, tool, launch file or package module imports from humanoid_balance.apps."""
    offenders = {path: found for path in _scanned_files()
                 for found in [apps_imports((REPO / path).read_text())] if found}
    assert offenders == {}


@pytest.mark.parametrize(("source", "expected"), [
    ("from humanoid_balance.apps.report import rows", ["humanoid_balance.apps.report:rows"]),
    ("import humanoid_balance.apps.demo as d", ["humanoid_balance.apps.demo"]),
    ("from humanoid_balance import apps, cli", ["humanoid_balance:apps"]),
    ("def f():\n    from humanoid_balance.apps import identify", ["humanoid_balance.apps:identify"]),
    ("importlib.import_module('humanoid_balance.apps.waist')", ["humanoid_balance.apps.waist"]),
    ("from humanoid_balance.cli import main", []),
    ("from humanoid_balance.apps_extra import x", []),
    ("del sys.modules['humanoid_balance.apps.report']", []),
])
def test_import_detector_finds_every_form_of_import_and_nothing_else(
        source: str, expected: list[str]) -> None:
    """apps_imports reports each import form from apps (nested ones too) and no mere mention."""
    assert apps_imports(source) == expected


def test_length_counter_counts_from_def_to_last_line() -> None:
    """long_functions measures a 3-line function as 3 lines (decorator excluded)."""
    source = "@decorator\ndef f():\n    x = 1\n    return x\n"
    assert (long_functions(source, limit=2), long_functions(source, limit=3)) == ([("f", 3)], [])
