"""colcon builds the package as on a robot; the install tree runs a node; package.xml's keys are known.

The build runs ``colcon build --packages-select humanoid_balance`` (colcon-core,
colcon-ros and colcon-package-selection from requirements-test.txt) in a
scratch workspace whose ``src/humanoid_balance`` links to this checkout; the
tests then read the install tree it made and start ``zmp_estimator`` from it,
with the installed parameter file, as ``ros2 run`` would after ``source
install/setup.bash``. Skipped where colcon is not installed.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
PROCESS_TESTS = REPO / "test" / "process"
if str(PROCESS_TESTS) not in sys.path:  # the process tests' harness (as test/process/conftest.py)
    sys.path.insert(0, str(PROCESS_TESTS))

from process_harness import Probe, RunningNode, describe, exited_cleanly, wait_ready  # noqa: E402

from humanoid_balance import processes  # noqa: E402
from humanoid_balance.graph import NODES, GraphNode  # noqa: E402

PACKAGE = "humanoid_balance"
KEY_LIST = REPO / "rosdep_keys.txt"
#: s the build may take (about 5 s on a 2-core machine)
BUILD_TIMEOUT_S = 120.0

needs_colcon = pytest.mark.skipif(
    importlib.util.find_spec("colcon_core") is None
    or importlib.util.find_spec("colcon_ros") is None,
    reason="colcon-core and colcon-ros are not installed: pip install -r requirements-test.txt")


@pytest.fixture(scope="module")
def install_prefix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``install/humanoid_balance`` of a colcon build of this checkout in a scratch workspace."""
    workspace = tmp_path_factory.mktemp("colcon_ws")
    (workspace / "src").mkdir()
    (workspace / "src" / PACKAGE).symlink_to(REPO, target_is_directory=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("AMENT_PREFIX_PATH", "COLCON_PREFIX_PATH", "CMAKE_PREFIX_PATH")}
    env["COLCON_HOME"] = str(workspace / "colcon_home")  # no user defaults.yaml (symlink-install)
    command = [sys.executable, "-m", "colcon", "--log-base", str(workspace / "log"), "build",
               "--base-paths", str(workspace / "src"), "--build-base", str(workspace / "build"),
               "--install-base", str(workspace / "install"), "--packages-select", PACKAGE,
               "--event-handlers", "console_direct+"]
    done = subprocess.run(command, cwd=workspace, env=env, capture_output=True, text=True,
                          timeout=BUILD_TIMEOUT_S)
    assert done.returncode == 0, (f"colcon build failed ({done.returncode}):\n"
                                  f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    assert f"Finished <<< {PACKAGE}" in done.stdout + done.stderr, done.stdout[-2000:]
    return workspace / "install" / PACKAGE


def _installed_env(prefix: Path) -> dict[str, str]:
    """This process's environment with the package's colcon hooks applied, as ``source
    install/setup.bash`` does: each ``prepend-non-duplicate;NAME;PATH`` of the ``.dsv`` files
    that share/humanoid_balance/package.dsv names puts ``prefix/PATH`` first on ``NAME``."""
    env = dict(os.environ)
    package_dsv = prefix / "share" / PACKAGE / "package.dsv"
    hooks = [prefix / line.split(";", 1)[1] for line in package_dsv.read_text().splitlines()
             if line.startswith("source;") and line.endswith(".dsv")]
    applied = set()
    for hook in hooks:
        for line in hook.read_text().splitlines():
            kind, name, relative = line.split(";", 2)
            assert kind in ("prepend-non-duplicate", "prepend-non-duplicate-if-exists"), (hook, line)
            path = str(prefix / relative) if relative else str(prefix)
            if kind.endswith("-if-exists") and not Path(path).exists():
                continue
            rest = [p for p in env.get(name, "").split(os.pathsep) if p and p != path]
            env[name] = os.pathsep.join([path, *rest])
            applied.add(name)
    assert {"PYTHONPATH", "AMENT_PREFIX_PATH"} <= applied, (
        f"{package_dsv}'s hooks set {sorted(applied)}: the nodes would not find the package")
    return env


@needs_colcon
def test_every_node_of_the_graph_has_an_executable_in_lib(install_prefix: Path) -> None:
    """lib/humanoid_balance/ holds an executable for each graph.NODES entry, run by this Python."""
    lib = install_prefix / "lib" / PACKAGE
    missing = [spec.executable for spec in NODES.values()
               if not ((lib / spec.executable).is_file() and os.access(lib / spec.executable, os.X_OK))]
    assert not missing, f"{lib} lacks executables {missing}; it has {sorted(p.name for p in lib.iterdir())}"
    # colcon writes the interpreter that ran it: on a robot /usr/bin/python3, so the modules
    # must be where that interpreter finds them (README, "On a robot with ROS 2")
    shebangs = {(lib / spec.executable).read_text().splitlines()[0] for spec in NODES.values()}
    assert shebangs == {f"#!{sys.executable}"}, shebangs


@needs_colcon
def test_share_holds_package_xml_launch_config_and_urdf(install_prefix: Path) -> None:
    """share/humanoid_balance/ has package.xml and every launch, config and URDF file of the checkout."""
    share = install_prefix / "share" / PACKAGE
    assert (share / "package.xml").read_bytes() == (REPO / "package.xml").read_bytes()
    for folder, patterns in (("launch", ("*.launch.py",)), ("config", ("*.yaml", "*.xml", "*.rviz")),
                             ("urdf", ("*.urdf",))):
        source = {p.name for pattern in patterns for p in (REPO / folder).glob(pattern)}
        installed = {p.name for p in (share / folder).iterdir()} if (share / folder).is_dir() else set()
        assert source and installed == source, (folder, sorted(source ^ installed))


@needs_colcon
def test_the_ament_index_marks_the_package(install_prefix: Path) -> None:
    """share/ament_index/resource_index/packages/humanoid_balance exists: ros2 run and launch find it."""
    marker = install_prefix / "share" / "ament_index" / "resource_index" / "packages" / PACKAGE
    assert marker.is_file(), f"no ament index marker {marker}"


@needs_colcon
def test_the_installed_package_is_the_one_imported(install_prefix: Path, tmp_path: Path) -> None:
    """With the install tree sourced, Python imports humanoid_balance from it, not from the checkout."""
    done = subprocess.run(
        [sys.executable, "-c", "import humanoid_balance, humanoid_balance.resources as r; "
         "print(humanoid_balance.__file__); print(r.config_path('zmp.yaml'))"],
        env=_installed_env(install_prefix), capture_output=True, text=True, timeout=60,
        cwd=tmp_path)  # not the checkout: "" on sys.path would find its humanoid_balance first
    assert done.returncode == 0, done.stderr
    module, config = done.stdout.split()
    assert Path(module).is_relative_to(install_prefix), module
    assert Path(config) == install_prefix / "share" / PACKAGE / "config" / "zmp.yaml", config


@pytest.fixture
def probe() -> Iterator[Probe]:
    """The test's own rclpy node, in an rclpy context of its own."""
    made = Probe("colcon_build_probe")
    try:
        yield made
    finally:
        made.close()


@needs_colcon
@pytest.mark.ros
def test_zmp_estimator_from_the_install_tree_answers_over_dds(
        install_prefix: Path, probe: Probe, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """lib/humanoid_balance/zmp_estimator with the installed zmp.yaml answers its parameter service
    with the file's values, and exits cleanly on SIGINT."""
    from rcl_interfaces.srv import GetParameters
    from rclpy.parameter import parameter_value_to_python

    executables = install_prefix / "lib" / PACKAGE
    # NodeProcess starts the console script beside this Python; here the installed one
    monkeypatch.setattr(processes, "executable_path", lambda name: str(executables / name))
    parameter_file = install_prefix / "share" / PACKAGE / "config" / "zmp.yaml"
    node = GraphNode(NODES["zmp_estimator"])
    process = processes.NodeProcess(node, log_path=tmp_path / "zmp_estimator.log",
                                    env=_installed_env(install_prefix),
                                    parameter_file=parameter_file)
    running = RunningNode(process, time.monotonic())
    try:
        assert process.command[0] == str(executables / "zmp_estimator"), process.command
        wait_ready(probe, running)
        expected = yaml.safe_load(parameter_file.read_text())["/**/zmp_estimator"]["ros__parameters"]
        names = ["sensor_type", "contact_threshold", "balance_frame"]
        response = probe.call(GetParameters, "/zmp_estimator/get_parameters",
                              GetParameters.Request(names=names))
        got = {n: parameter_value_to_python(v) for n, v in zip(names, response.values, strict=True)}
        assert got == {n: expected[n] for n in names}, (got, process.output()[-2000:])
    finally:
        report = running.stop()
    assert exited_cleanly(report), describe(report)


def _package_xml_keys() -> set[str]:
    catkin_pkg_package = pytest.importorskip(
        "catkin_pkg.package", reason="catkin_pkg is not installed: pip install -r requirements-test.txt")
    package = catkin_pkg_package.parse_package(str(REPO / "package.xml"))
    package.evaluate_conditions({"ROS_VERSION": "2", "ROS_PYTHON_VERSION": "3"})
    groups = ("build_depends", "buildtool_depends", "build_export_depends", "buildtool_export_depends",
              "exec_depends", "test_depends", "doc_depends")
    return {dep.name for group in groups for dep in getattr(package, group)
            if getattr(dep, "evaluated_condition", True) is not False}


def _listed_keys() -> dict[str, str]:
    keys = {}
    for line in KEY_LIST.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, source = line.strip().partition(" ")
            keys[key] = source.strip()
    return keys


def test_every_package_xml_key_is_in_the_checked_key_list() -> None:
    """Each dependency key of package.xml (parsed by catkin_pkg) is in rosdep_keys.txt, and the
    list names no key package.xml does not use."""
    used = _package_xml_keys()
    listed = _listed_keys()
    unchecked = sorted(used - set(listed))
    assert not unchecked, (f"package.xml keys {unchecked} are not in {KEY_LIST.name}: check each "
                           "against rosdistro (see the file's header), then list it")
    stale = sorted(set(listed) - used)
    assert not stale, f"{KEY_LIST.name} lists {stale}, which package.xml does not use"
    assert all(listed.values()), [k for k, v in listed.items() if not v]  # each says its source
