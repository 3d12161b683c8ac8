"""`humanoid-balance predict`: gravity torques at another gravity from an identification result.

The result files here hold the lunar arm's true composite parameters (as an
identification without noise would give them) in the format the node and
``identify --out`` write; the predictions are checked against pinocchio's
RNEA of the true model at the other gravity.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from humanoid_balance.cli import main

MARS = 3.71
MOON = 9.81 / 6.0
#: rad, a configuration within the lunar arm's limits
Q = (0.3, 0.6, -0.4, 1.0, 0.5, -0.7)


def _true_model(gravity: float):
    import pinocchio as pin

    from humanoid_balance.resources import urdf_path

    model = pin.buildModelFromUrdf(str(urdf_path("lunar_arm")))
    model.gravity.linear = np.array([0.0, 0.0, -gravity])
    return model


def _rnea_gravity(gravity: float, q: np.ndarray) -> np.ndarray:
    """G(q) [N m] of the true model at ``gravity`` by RNEA (zero velocity and acceleration)."""
    import pinocchio as pin

    model = _true_model(gravity)
    zero = np.zeros(model.nv)
    return np.asarray(pin.rnea(model, model.createData(), np.asarray(q, float), zero, zero))


@pytest.fixture(scope="module")
def params_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The true composite parameters at Earth gravity, written as an identification result."""
    from humanoid_balance.core.identification.estimation import Estimate
    from humanoid_balance.core.identification.procedure import results_document
    from humanoid_balance.core.identification.regressor import (
        GravityRegressor,
        identification_parameters,
    )
    from humanoid_balance.results import write_yaml

    regressor = GravityRegressor(_true_model(9.81), 9.81)
    pset = identification_parameters(regressor)
    values = pset.from_standard(regressor.standard_parameters())
    n = len(values)
    estimate = Estimate(tuple(pset.names), ("N m",) * n, values, np.zeros(n), np.zeros(6), 0)
    path = tmp_path_factory.mktemp("predict") / "params.yaml"
    write_yaml(path, results_document(estimate, [f"joint{i}" for i in range(1, 7)], 9.81, 6))
    return path


def _write_bag(path: Path, positions: np.ndarray, efforts: np.ndarray,
               velocities: np.ndarray | None = None, period_ns: int = 10_000_000) -> None:
    from rosbags.rosbag2 import Writer
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_HUMBLE)
    msg_type = store.types["sensor_msgs/msg/JointState"]
    header_type = store.types["std_msgs/msg/Header"]
    time_type = store.types["builtin_interfaces/msg/Time"]
    with Writer(path, version=8) as writer:
        conn = writer.add_connection("/joint_states", msg_type.__msgtype__, typestore=store)
        qd_all = np.zeros_like(positions) if velocities is None else velocities
        for k, (q, qd, tau) in enumerate(zip(positions, qd_all, efforts, strict=True)):
            stamp_ns = 1_000_000_000 + k * period_ns
            msg = msg_type(header=header_type(stamp=time_type(sec=stamp_ns // 10**9,
                                                              nanosec=stamp_ns % 10**9),
                                              frame_id=""),
                           name=[f"joint{i}" for i in range(1, 7)], position=np.asarray(q, float),
                           velocity=np.asarray(qd, float), effort=np.asarray(tau, float))
            writer.write(conn, stamp_ns, store.serialize_cdr(msg, msg_type.__msgtype__))


def test_joints_at_mars_match_rnea_of_the_true_model(params_file: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """--joints: the Mars torques of the identified parameters are RNEA's of the true model."""
    out = tmp_path / "tau.csv"
    code = main(["predict", str(params_file), "--gravity", str(MARS),
                 "--joints", ",".join(map(str, Q)), "--out", str(out)])
    predicted = np.loadtxt(out, delimiter=",", skiprows=1)[1:]
    assert code == 0
    np.testing.assert_allclose(predicted, _rnea_gravity(MARS, np.array(Q)), rtol=1e-7, atol=1e-12)


def test_degrees_are_converted(params_file: Path, tmp_path: Path) -> None:
    """--degrees: the same configuration in degrees gives the same Moon torques."""
    out_rad, out_deg = tmp_path / "rad.csv", tmp_path / "deg.csv"
    main(["predict", str(params_file), "--gravity", str(MOON), "--joints",
          ",".join(map(str, Q)), "--out", str(out_rad)])
    main(["predict", str(params_file), "--gravity", str(MOON), "--degrees", "--joints",
          ",".join(str(math.degrees(v)) for v in Q), "--out", str(out_deg)])
    np.testing.assert_allclose(np.loadtxt(out_deg, delimiter=",", skiprows=1),
                               np.loadtxt(out_rad, delimiter=",", skiprows=1), rtol=1e-12)


def test_bag_at_the_moon_matches_rnea_and_its_recorded_efforts(
        params_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--bag: torques along a recorded path are RNEA's; against efforts recorded there, RMSE 0."""
    rng = np.random.default_rng(0)
    q = np.array(Q) + rng.uniform(-0.3, 0.3, (50, 6))
    truth = np.array([_rnea_gravity(MOON, qk) for qk in q])
    _write_bag(tmp_path / "bag", q, truth)
    out = tmp_path / "tau.csv"
    code = main(["predict", str(params_file), "--gravity", str(MOON), "--bag",
                 str(tmp_path / "bag"), "--out", str(out)])
    printed = capsys.readouterr().out
    table = np.loadtxt(out, delimiter=",", skiprows=1)
    assert code == 0
    np.testing.assert_allclose(table[:, 1:], truth, rtol=1e-7, atol=1e-12)
    rmse = [float(v) for v in re.findall(r"RMSE vs recorded effort (\S+) N m \(50 samples\)",
                                         printed)]
    assert len(rmse) == 6 and max(rmse) < 1e-9, printed


@pytest.mark.parametrize(("extra", "message"), [
    (["--gravity", "nan", "--joints", "0,0,0,0,0,0"], "--gravity nan: expected a finite gravity"),
    (["--gravity", "-1", "--joints", "0,0,0,0,0,0"], "--gravity -1.0: expected a finite gravity"),
    (["--gravity", "3.71"], "give one of --bag BAG or --joints q1,..."),
    (["--gravity", "3.71", "--joints", "0,0,0"], "--joints '0,0,0': expected 6 finite angles"),
    (["--gravity", "3.71", "--joints", "0,0,0,0,0,x"], "--joints '0,0,0,0,0,x': expected 6"),
])
def test_bad_options_are_refused_in_one_line(params_file: Path, capsys: pytest.CaptureFixture[str],
                                             extra: list[str], message: str) -> None:
    """A bad gravity, no input, or a wrong configuration: exit 2 and one line naming it."""
    code = main(["predict", str(params_file), *extra])
    err = capsys.readouterr().err
    assert (code, err.count("\n")) == (2, 1), err
    assert err.startswith(f"humanoid-balance predict: {message}"), err


def test_a_file_that_is_no_result_is_refused(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A YAML without parameters: exit 2, one line saying what file is expected."""
    path = tmp_path / "other.yaml"
    path.write_text("a: 1\n")
    code = main(["predict", str(path), "--gravity", "3.71", "--joints", "0,0,0,0,0,0"])
    err = capsys.readouterr().err
    assert (code, err.count("\n")) == (2, 1)
    assert "not an identification result" in err


def test_parameters_of_another_arm_are_refused(params_file: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A result whose parameters are not the URDF's composite set: exit 2 naming --urdf."""
    import yaml

    doc = yaml.safe_load(params_file.read_text())
    doc["parameters"] = doc["parameters"][:-1]
    path = tmp_path / "short.yaml"
    path.write_text(yaml.safe_dump(doc))
    code = main(["predict", str(path), "--gravity", "3.71", "--joints", "0,0,0,0,0,0"])
    err = capsys.readouterr().err
    assert (code, err.count("\n")) == (2, 1)
    assert "give --urdf, the arm identified" in err


def test_identify_warns_of_an_ill_conditioned_fit_and_its_file_predicts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`identify --out` on sweeps of +-5 deg, joint 4's of +-0.5 deg: one warning on stderr and in
    the file, naming joint4; the other joints' numbers under ILL_CONDITIONED; `predict` reads it."""
    import yaml

    from humanoid_balance.core.identification.estimation import ILL_CONDITIONED
    from humanoid_balance.core.identification.regressor import GravityRegressor
    from humanoid_balance.core.identification.trajectory import PlanFollower, identification_plan

    static = np.radians([0.0, 30.0, 20.0, 60.0, 40.0, 30.0])
    halves = np.radians([5.0, 5.0, 5.0, 0.5, 5.0, 5.0])
    follower = PlanFollower(identification_plan([static] * 6, list(zip(static - halves,
                                                                        static + halves,
                                                                        strict=True))),
                            np.zeros(6))
    points = [follower.at(t) for t in np.arange(0.0, follower.duration, 0.005)]
    q = np.array([p.position for p in points])
    qd = np.array([p.velocity for p in points])
    regressor = GravityRegressor(_true_model(9.81), 9.81)
    tau = np.array([regressor.gravity_torques(qk) for qk in q]) + 0.05 * np.sign(qd)
    _write_bag(tmp_path / "bag", q, tau, qd, period_ns=5_000_000)
    out = tmp_path / "results.yaml"
    code = main(["identify", str(tmp_path / "bag"), "--trim", "0.1", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    warned = [line for line in err.splitlines() if "ill-conditioned" in line]
    assert len(warned) == 1 and "joint4's parameters" in warned[0], err
    doc = yaml.safe_load(out.read_text())
    assert doc["warnings"] == [warned[0].split("warning: ", 1)[1]]
    conditions = doc["condition_numbers"]
    assert conditions["joint4"] > ILL_CONDITIONED
    assert max(v for k, v in conditions.items() if k != "joint4") < ILL_CONDITIONED, conditions
    assert main(["predict", str(out), "--gravity", str(MOON), "--joints",
                 ",".join(map(str, Q))]) == 0
