"""The code passes the project's one linter (ruff) and the type checker (mypy)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _run(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=REPO, capture_output=True, text=True
    )


def test_ruff_clean() -> None:
    """ruff reports nothing on the package, tests, benchmarks, launch files, tools and setup.py."""
    if shutil.which("ruff") is None and _run("ruff", "--version").returncode != 0:
        pytest.fail("ruff is not installed: pip install -r requirements-test.txt")
    result = _run("ruff", "check", "humanoid_balance", "test", "benchmarks", "launch", "tools",
                  "setup.py")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_clean() -> None:
    """mypy finds no type error in the package."""
    result = _run("mypy", "--no-error-summary", "humanoid_balance")
    assert result.returncode == 0, result.stdout + result.stderr
