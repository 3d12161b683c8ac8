"""``humanoid-balance identify BAG``: gravity parameters from a recorded rosbag2 (seed 004).

The estimation (eq. 11 sweeps cut from ``/joint_states``, friction pairs of
eq. 5, eq. 10) is :func:`humanoid_balance.bag_identification.estimate_from_bag`,
the same as the ``identification_executor`` node's at the end of a run (same
``--average`` as the node's ``average``). Prints the table and, with ``--out``,
writes the same YAML as the node.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from humanoid_balance.bag_identification import TORQUE_SOURCES
from humanoid_balance.core.identification import (
    DEFAULT_AVERAGE,
    EARTH_GRAVITY,
    LUNAR_JOINTS,
    METHODS,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``identify``."""
    parser.add_argument("bag", type=Path, help="rosbag2 directory with /joint_states")
    parser.add_argument("--topic", default="/joint_states")
    parser.add_argument("--urdf", default="", help="arm URDF (default: the lunar arm)")
    parser.add_argument("--joints", nargs="+", default=list(LUNAR_JOINTS),
                        help="arm joints, in chain order")
    parser.add_argument("--speed", type=float, default=3.0,
                        help="sweep speed of the recording [deg/s] (sets the motion threshold)")
    parser.add_argument("--trim", type=float, default=0.5,
                        help="seconds dropped at the start of each pass")
    parser.add_argument("--gravity", type=float, default=EARTH_GRAVITY,
                        help="gravity of the recording [m/s^2]")
    parser.add_argument("--method", choices=METHODS, default="sequential",
                        help="sequential (eq. 10), global, or weighted by each joint's noise")
    parser.add_argument("--average", type=int, default=DEFAULT_AVERAGE,
                        help="friction-free samples averaged per block (1: none)")
    parser.add_argument("--torque-source", choices=TORQUE_SOURCES, default="effort",
                        help="current: the effort field holds motor current [A], tau = k_e I")
    parser.add_argument("--torque-constants", type=float, nargs="+", default=None,
                        help="k_e per joint [N m/A] (with --torque-source current)")
    parser.add_argument("--out", type=Path, default=None, help="write the results YAML here")


def run(args: argparse.Namespace) -> int:
    """Estimate and print (and with ``--out`` write) the gravity parameters."""
    from humanoid_balance.bag_identification import BagIdentificationSettings, estimate_from_bag
    from humanoid_balance.core.identification.estimation import fit_warnings
    from humanoid_balance.exceptions import HumanoidBalanceError
    from humanoid_balance.results import check_output

    try:
        if args.out is not None:
            check_output(args.out)  # before the estimation, not after it
        estimate, sweeps = estimate_from_bag(BagIdentificationSettings(
            bag=args.bag, topic=args.topic, urdf=args.urdf, joints=tuple(args.joints),
            speed=args.speed, trim=args.trim, gravity=args.gravity, method=args.method,
            average=args.average, torque_source=args.torque_source,
            torque_constants=args.torque_constants))
    except HumanoidBalanceError as exc:
        print(f"identify: {exc}", file=sys.stderr)
        return 2
    print(f"{sweeps} sweeps, {estimate.samples} friction-free samples")
    for name, value, unit, std in zip(estimate.names, estimate.values, estimate.units,
                                      estimate.std, strict=True):
        print(f"{name:<45} {value: .6g} {unit}  (std {std:.2g})")
    for joint, rmse in zip(args.joints, estimate.rmse_per_joint, strict=True):
        print(f"fit RMSE {joint}: {rmse:.4g} N m")
    warnings = fit_warnings(estimate, args.joints)
    for warning in warnings:
        print(f"identify: warning: {warning}", file=sys.stderr)
    if args.out is not None:
        from humanoid_balance.core.identification.procedure import results_document
        from humanoid_balance.results import write_yaml

        document = results_document(estimate, args.joints, args.gravity, sweeps, urdf=args.urdf)
        document["warnings"] = list(warnings)
        write_yaml(args.out, document)
        print(f"wrote {args.out}")
    return 0
