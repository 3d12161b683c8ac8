"""The package is a correct ament_python package: metadata, entry points, installed files."""

from __future__ import annotations

import ast
import importlib
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = "humanoid_balance"


def _setup_call() -> ast.Call:
    tree = ast.parse((REPO / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "setup":
            return node
    raise AssertionError("setup.py has no setup() call")


def _console_scripts() -> dict[str, str]:
    call = _setup_call()
    for kw in call.keywords:
        if kw.arg == "entry_points":
            value = ast.literal_eval(kw.value)
            return dict(line.replace(" ", "").split("=") for line in value["console_scripts"])
    raise AssertionError("setup.py has no entry_points")


def _package_xml() -> ET.Element:
    return ET.parse(REPO / "package.xml").getroot()


def test_package_xml_is_format_3_ament_python() -> None:
    """package.xml: format 3, named humanoid_balance, build type ament_python."""
    root = _package_xml()
    assert root.get("format") == "3"
    assert root.findtext("name") == PACKAGE
    assert root.find("export/build_type").text == "ament_python"  # type: ignore[union-attr]


def test_every_ros_package_imported_is_an_exec_depend() -> None:
    """Every ROS package the code imports (messages, rclpy, ...) is an exec_depend in package.xml."""
    depends = {e.text for e in _package_xml().findall("exec_depend")}
    imported: set[str] = set()
    for path in (REPO / PACKAGE).rglob("*.py"):
        for match in re.finditer(r"^\s*(?:from|import) (\w+)(?:\.(msg|srv|action))?\b",
                                 path.read_text(), re.M):
            name, kind = match.groups()
            if kind or name in ("rclpy", "ament_index_python"):
                imported.add(name)
    missing = sorted(imported - depends)
    assert not missing, f"package.xml lacks exec_depend for {missing}"


#: each third-party module the package imports -> the rosdep key of package.xml that installs it
THIRD_PARTY_KEYS = {
    "numpy": "python3-numpy",
    "scipy": "python3-scipy",
    "numba": "python3-numba",
    "yaml": "python3-yaml",
    "can": "python3-can",
    "matplotlib": "python3-matplotlib",
    "pinocchio": "pinocchio",
    "coal": "coal",
    "cantools": "python3-cantools-pip",
    "rosbags": "python3-rosbags-pip",
    "mujoco": "python3-mujoco-pip",
    # rosbags' own dependencies (lz4, backports.zstd below Python 3.14), which mcap_crc.py
    # imports to undo a chunk's compression as rosbags does
    "lz4": "python3-rosbags-pip",
    "backports": "python3-rosbags-pip",
}
#: in the standard library from a later Python on (compression.zstd: 3.14)
LATER_STDLIB = {"compression"}


def _imported_top_level_modules() -> dict[str, str]:
    """Top-level name of every absolute import in the package (module level or not) -> a file."""
    found: dict[str, str] = {}
    for path in sorted((REPO / PACKAGE).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], str(path.relative_to(REPO)))
    return found


def test_every_third_party_module_imported_is_an_exec_depend() -> None:
    """Each module the package imports, outside the standard library and ROS, maps to a rosdep key
    that package.xml lists as an exec_depend."""
    depends = {e.text for e in _package_xml().findall("exec_depend")}
    unknown, undeclared = [], []
    for name, where in _imported_top_level_modules().items():
        if name in sys.stdlib_module_names or name in LATER_STDLIB or name == PACKAGE:
            continue
        if name in depends:  # a ROS package imported by its own name (rclpy, launch_ros, ...)
            continue
        key = THIRD_PARTY_KEYS.get(name)
        if key is None:
            unknown.append(f"{name} ({where})")
        elif key not in depends:
            undeclared.append(f"{name} -> {key}")
    assert not unknown, (f"imported modules {unknown} have no rosdep key here: add the key to "
                         "package.xml (and rosdep_keys.txt) and the module to THIRD_PARTY_KEYS")
    assert not undeclared, f"package.xml lacks exec_depend for {undeclared}"


def test_console_scripts_are_the_interfaces_executables() -> None:
    """setup.py installs the executables of INTERFACES.md, each pointing at a main() that exists."""
    scripts = _console_scripts()
    assert set(scripts) == {"zmp_estimator", "arm_balance", "waist_controller",
                            "identification_executor", "mujoco_sim", "humanoid-balance"}
    for name, target in scripts.items():
        module_name, function = target.split(":")
        if not (REPO / (module_name.replace(".", "/") + ".py")).exists():
            pytest.fail(f"console script {name}: module {module_name} does not exist")
        module = importlib.import_module(module_name)
        assert callable(getattr(module, function)), name


def test_data_files_install_the_ament_marker_launch_config_and_urdf() -> None:
    """data_files install resource/humanoid_balance, package.xml, launch/, config/ and urdf/."""
    text = (REPO / "setup.py").read_text()
    for needed in ("share/ament_index/resource_index/packages", "resource/{PACKAGE}",
                   "share/{PACKAGE}/launch", "share/{PACKAGE}/config", "share/{PACKAGE}/urdf"):
        assert needed in text, needed
    assert (REPO / "resource" / PACKAGE).is_file()
    assert (REPO / "setup.cfg").read_text().count(f"$base/lib/{PACKAGE}") == 2


def test_launch_files_define_generate_launch_description() -> None:
    """Each launch file parses and defines generate_launch_description()."""
    files = sorted((REPO / "launch").glob("*.launch.py"))
    assert {f.name for f in files} >= {"bringup.launch.py", "sim.launch.py", "replay.launch.py"}
    for path in files:
        tree = ast.parse(path.read_text())
        names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert "generate_launch_description" in names, path.name


def test_config_files_are_ros2_parameter_files() -> None:
    """Each config/*.yaml maps node names to ros__parameters."""
    import yaml

    for path in sorted((REPO / "config").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        assert isinstance(doc, dict) and doc, path.name
        for node, body in doc.items():
            assert "ros__parameters" in body, f"{path.name}: {node} has no ros__parameters"


def test_core_imports_no_ros_can_or_mujoco() -> None:
    """humanoid_balance/core imports neither rclpy, python-can nor MuJoCo (STYLE.md)."""
    offenders = []
    for path in (REPO / PACKAGE / "core").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                if name.split(".")[0] in ("rclpy", "can", "mujoco", "cantools"):
                    offenders.append(f"{path.relative_to(REPO)}: {name}")
    assert not offenders, offenders
