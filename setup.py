"""ament_python packaging for humanoid_balance (colcon on a robot, pip elsewhere)."""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = "humanoid_balance"


def _files(pattern: str) -> list[str]:
    return sorted(path for path in glob(pattern) if not path.endswith("~"))


setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*", "benchmarks"]),
    package_data={PACKAGE: ["py.typed", "can/*.dbc"]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", _files("launch/*.launch.py")),
        (f"share/{PACKAGE}/config",
         _files("config/*.yaml") + _files("config/*.xml") + _files("config/*.rviz")),
        (f"share/{PACKAGE}/urdf", _files("urdf/*.urdf")),
    ],
    # ROS packages (rclpy, messages) are not listed here: on a robot they come
    # from the ROS install (package.xml), elsewhere from requirements.txt.
    install_requires=["setuptools"],
    zip_safe=False,
    maintainer="humanoid_balance maintainers",
    maintainer_email="humanoid-balance@example.org",
    description="Humanoid arm balance (RMC), waist RMRC over CAN, ZMP estimation, gravity identification",
    license="Apache-2.0",
    python_requires=">=3.10",
    entry_points={
        "console_scripts": [
            "zmp_estimator = humanoid_balance.nodes.zmp_estimator:main",
            "arm_balance = humanoid_balance.nodes.arm_balance:main",
            "waist_controller = humanoid_balance.nodes.waist_controller:main",
            "identification_executor = humanoid_balance.nodes.identification_executor:main",
            "mujoco_sim = humanoid_balance.nodes.mujoco_sim:main",
            "humanoid-balance = humanoid_balance.cli:main",
        ],
    },
)
