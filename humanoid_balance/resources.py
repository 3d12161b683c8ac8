"""Find the package's installed files (URDF, config, launch) wherever it runs.

Order: the ament index (a colcon install on a robot); then the source checkout
when the package is imported from one (an editable install or a test run: the
checkout is the truth there, a copy installed earlier may be stale); then
``<sys.prefix>/share`` (where a plain ``pip install`` puts ``data_files``).
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from humanoid_balance.exceptions import ConfigurationError

PACKAGE = "humanoid_balance"


def _candidate_share_dirs() -> list[Path]:
    candidates: list[Path] = []
    try:
        from ament_index_python.packages import (  # type: ignore[import-not-found]
            PackageNotFoundError,
            get_package_share_directory,
        )

        # OSError: AMENT_PREFIX_PATH is not set (no ROS install sourced)
        with contextlib.suppress(PackageNotFoundError, ValueError, LookupError, OSError):
            candidates.append(Path(get_package_share_directory(PACKAGE)))
    except ImportError:
        pass
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "package.xml").is_file():
        candidates.append(checkout)
    candidates.append(Path(sys.prefix) / "share" / PACKAGE)
    return candidates


def share_path(*parts: str) -> Path:
    """Path of an installed package file, e.g. ``share_path("urdf", "humanoid.urdf")``.

    Raises:
        ConfigurationError: no install location has the file.
    """
    tried = []
    for root in _candidate_share_dirs():
        path = root.joinpath(*parts)
        if path.exists():
            return path
        tried.append(str(path))
    raise ConfigurationError(
        f"package file {'/'.join(parts)!r} not found; looked in {tried}. "
        "Reinstall the package (colcon build, or pip install .)"
    )


def urdf_path(name: str) -> Path:
    """Path of one of the package's URDF models: ``humanoid``, ``lunar_arm``, ``space_robot``."""
    return share_path("urdf", f"{name}.urdf")


def config_path(name: str) -> Path:
    """Path of a file in the package's ``config/`` folder."""
    return share_path("config", name)
