"""``humanoid-balance``: the user's command line.

Each sub-command lives in its own module under :mod:`humanoid_balance.apps`, with
``add_arguments(parser)`` and ``run(args) -> int``; this file only dispatches, and
imports a sub-command's module (and so its heavy dependencies) only when it runs.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from humanoid_balance.exceptions import HumanoidBalanceError

# sub-command -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("humanoid_balance.apps.demo", "run the simulated robot with every node"),
    "replay": ("humanoid_balance.apps.replay", "publish a rosbag2 directory with /clock"),
    "record": ("humanoid_balance.apps.record", "record topics to a rosbag2 directory"),
    "report": ("humanoid_balance.apps.report",
               "the page of a recorded run (bag or run folder), or result files as a table"),
    "identify": ("humanoid_balance.apps.identify", "estimate gravity parameters from a bag"),
    "predict": ("humanoid_balance.apps.predict",
                "gravity torques at another gravity from an identification result"),
    "wait-for": ("humanoid_balance.apps.wait_for", "wait until a node subscribes to topics"),
    "aux-posture": ("humanoid_balance.apps.aux_posture",
                    "search the aux arm's ready posture for a lower strike ZMP peak (MuJoCo)"),
}

# ``humanoid-balance experiment NAME``
EXPERIMENTS: dict[str, tuple[str, str]] = {
    "strike": ("humanoid_balance.apps.experiment_strike", "seed-000 fast strike, RMC on/off"),
    "free-floating": (
        "humanoid_balance.apps.experiment_free_floating", "seed-002 dual-arm space robot"),
    "waist": ("humanoid_balance.apps.experiment_waist", "seed-003 waist tracking over CAN"),
    "identification": (
        "humanoid_balance.apps.experiment_identification", "seed-004 Earth-to-Moon identification"),
}


def _add(subparsers: argparse._SubParsersAction, name: str, module: str, help_text: str) -> None:
    parser = subparsers.add_parser(name, help=help_text, description=help_text)
    parser.set_defaults(_module=module)
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        parser.set_defaults(_missing=f"sub-command {name!r} is not available in this build")
        return
    mod.add_arguments(parser)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every available sub-command."""
    parser = argparse.ArgumentParser(prog="humanoid-balance", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        _add(sub, name, module, help_text)
    exp = sub.add_parser("experiment", help="run one of the papers' experiments")
    exp_sub = exp.add_subparsers(dest="experiment", required=True, metavar="NAME")
    for name, (module, help_text) in EXPERIMENTS.items():
        _add(exp_sub, name, module, help_text)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``humanoid-balance`` console script."""
    args = build_parser().parse_args(argv)
    missing = getattr(args, "_missing", None)
    if missing:
        print(f"humanoid-balance: {missing}", file=sys.stderr)
        return 2
    module = importlib.import_module(args._module)
    name = args.command if args.command != "experiment" else f"experiment {args.experiment}"
    try:
        return int(module.run(args))
    except HumanoidBalanceError as exc:  # raised on purpose: the message says what to do
        print(f"humanoid-balance {name}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a file or folder the user named cannot be read or written
        where = f" {exc.filename}" if exc.filename else ""
        print(f"humanoid-balance {name}:{where}: {exc.strerror or exc}; check the path and its "
              "permissions", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"humanoid-balance {name}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
