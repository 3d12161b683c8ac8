"""The code passes the project's one linter (ruff) and the type checker (mypy).

Their findings depend on their versions (a new minor adds checks) and mypy's on numpy's type
hints: each test runs with the versions requirements*.txt allow, which CI installs, and is
skipped elsewhere (on a robot, ``colcon test`` with the distribution's packages), saying why.
"""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _run(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=REPO, capture_output=True, text=True
    )


def _require_tested(*distributions: str) -> None:
    """Skip unless each distribution is installed at a version requirements*.txt allows here."""
    from packaging.requirements import Requirement

    ranges: dict[str, list[Requirement]] = {}
    for name in ("requirements.txt", "requirements-test.txt"):
        for line in (REPO / name).read_text().splitlines():
            line = line.split(" #")[0].strip()
            if line and not line.startswith(("#", "-")):
                requirement = Requirement(line)
                if requirement.marker is None or requirement.marker.evaluate():
                    ranges.setdefault(requirement.name.lower(), []).append(requirement)
    for distribution in distributions:
        try:
            installed = version(distribution)
        except PackageNotFoundError:
            pytest.skip(f"{distribution} is not installed: pip install -r requirements-test.txt")
        for requirement in ranges.get(distribution.lower(), []):
            if not requirement.specifier.contains(installed, prereleases=True):
                pytest.skip(f"{distribution} {installed} is not the tested {requirement} "
                            "(requirements*.txt): its findings would differ from CI's")


def test_ruff_clean() -> None:
    """ruff reports nothing on the package, tests, benchmarks, launch files, tools and setup.py."""
    _require_tested("ruff")
    result = _run("ruff", "check", "humanoid_balance", "test", "benchmarks", "launch", "tools",
                  "setup.py")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_clean() -> None:
    """mypy finds no type error in the package."""
    _require_tested("mypy", "numpy")
    result = _run("mypy", "--no-error-summary", "humanoid_balance")
    assert result.returncode == 0, result.stdout + result.stderr
