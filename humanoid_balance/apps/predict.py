"""``humanoid-balance predict PARAMS.yaml --gravity G (--bag BAG | --joints q1,...)``.

The gravity torques at another gravity (the Moon's, Mars') from an
identification result (the YAML the ``identification_executor`` node or
``humanoid-balance identify --out`` writes), which is what the identification
is for: at one configuration (``--joints``, radians, or degrees with
``--degrees``) it prints each joint's torque; along a recorded run (``--bag``,
the arm's ``/joint_states``) it prints each joint's peak and, where the bag
carries efforts recorded at that gravity, the RMSE against them; ``--out``
writes the torques as CSV. The model is
:class:`~humanoid_balance.identified_model.IdentifiedModel`.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from humanoid_balance.exceptions import InvalidInputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``predict``."""
    parser.add_argument("params", type=Path, help="identification result (YAML)")
    parser.add_argument("--gravity", type=float, required=True,
                        help="gravity to predict at [m/s^2] (Moon 1.635, Mars 3.71)")
    parser.add_argument("--joints", default=None, metavar="q1,...",
                        help="one configuration, one angle per arm joint [rad]")
    parser.add_argument("--degrees", action="store_true", help="--joints in degrees")
    parser.add_argument("--bag", type=Path, default=None,
                        help="rosbag2 directory: the torques along its joint states")
    parser.add_argument("--topic", default="/joint_states", help="joint states in --bag")
    parser.add_argument("--urdf", default=None,
                        help="the arm's URDF (default: the one named in PARAMS.yaml)")
    parser.add_argument("--out", type=Path, default=None, help="write the torques as CSV")


def _configuration(text: str, joints: tuple[str, ...], degrees: bool) -> np.ndarray:
    """``q1,...`` as angles [rad]; a one-line error otherwise."""
    try:
        q = np.array([float(v) for v in text.split(",")])
    except ValueError:
        q = np.array([])
    if q.shape != (len(joints),) or not np.all(np.isfinite(q)):
        raise InvalidInputError(f"--joints {text!r}: expected {len(joints)} finite angles "
                                f"q1,...,q{len(joints)} ({', '.join(joints)}) in "
                                f"{'deg' if degrees else 'rad'}")
    return np.radians(q) if degrees else q


def _write_csv(path: Path, joints: tuple[str, ...], time_s: np.ndarray,
               torques: np.ndarray) -> None:
    header = "time_s," + ",".join(f"{j}_n_m" for j in joints)
    np.savetxt(path, np.column_stack([time_s, torques]), delimiter=",", header=header,
               comments="", fmt="%.9g")


def _print_bag(model_joints: tuple[str, ...], torques: np.ndarray, effort: np.ndarray) -> None:
    """Each joint's peak |torque| and, where efforts were recorded, the RMSE against them."""
    measured = np.all(np.isfinite(effort), axis=1)
    for j, joint in enumerate(model_joints):
        line = f"{joint}: peak {np.abs(torques[:, j]).max():.6g} N m"
        if measured.any():
            rmse = math.sqrt(float(np.mean((torques[measured, j] - effort[measured, j]) ** 2)))
            line += f", RMSE vs recorded effort {rmse:.4g} N m ({int(measured.sum())} samples)"
        print(line)


def run(args: argparse.Namespace) -> int:
    """Predict and print (and with ``--out`` write) the gravity torques."""
    from humanoid_balance.bag_identification import read_joint_stream
    from humanoid_balance.identified_model import IdentifiedModel, check_gravity
    from humanoid_balance.results import check_output

    gravity = check_gravity(args.gravity)
    if (args.joints is None) == (args.bag is None):
        raise InvalidInputError("give one of --bag BAG or --joints q1,...")
    if args.out is not None:
        check_output(args.out)
    model = IdentifiedModel.from_file(args.params, args.urdf)
    scale = f"identified at {model.gravity:g} m/s^2, predicted at {gravity:g} m/s^2"
    if args.joints is not None:
        q = _configuration(args.joints, model.joints, args.degrees)
        torques = model.gravity_torques(q[None, :], gravity)
        print(f"gravity torques [N m] ({scale}):")
        for joint, tau in zip(model.joints, torques[0], strict=True):
            print(f"{joint}: {tau:.6g}")
        time_s = np.zeros(1)
    else:
        stream = read_joint_stream(args.bag, args.topic, model.joints, positions_only=True)
        if len(stream.time_s) == 0:
            raise InvalidInputError(f"{args.bag}: no {args.topic} message with the positions of "
                                    f"{list(model.joints)}")
        torques = model.gravity_torques(stream.position_rad, gravity)
        print(f"{len(torques)} joint states; gravity torques ({scale}):")
        _print_bag(model.joints, torques, stream.effort)
        time_s = stream.time_s
    if args.out is not None:
        _write_csv(args.out, model.joints, time_s, torques)
        print(f"wrote {args.out}")
    return 0
