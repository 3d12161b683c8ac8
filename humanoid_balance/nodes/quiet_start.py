"""SIGINT or SIGTERM while a node's process is still starting ends it at once, with status 0.

A console script imports its node module first (numpy, rclpy, MuJoCo: about
a second, more on a loaded machine). A signal in that time raised
``KeyboardInterrupt`` inside some import and printed a traceback (status
-2), though nothing had started that needed stopping. :func:`exit_quietly_while_starting`,
called before those imports when the module is the running program, makes
both signals end the process with status 0 instead; ``run_node`` replaces the
handlers before ``rclpy.init`` (:class:`humanoid_balance.nodes.common.StopSignals`),
so from then on the signals stop the node in order.

Only the standard library here: this runs before the heavy imports.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path
from types import FrameType

__all__ = ["exit_quietly_if_starting_one_of", "exit_quietly_while_starting", "is_program",
           "no_rendering_in"]


def is_program(module_name: str, script: str) -> bool:
    """Module ``module_name`` is what this process runs: ``python -m`` it, or its console script.

    Args:
        module_name: the module's ``__name__`` as it is imported.
        script: the console script's name (``mujoco_sim``).
    """
    if module_name == "__main__":
        return True
    main_file = getattr(sys.modules.get("__main__"), "__file__", None) or ""
    return Path(main_file).name in (script, f"{script}.exe", f"{script}.py")


def _exit_now(signum: int, frame: FrameType | None) -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # exiting: a closed stream has nothing to flush
            stream.flush()
    os._exit(0)


def exit_quietly_while_starting(module_name: str, script: str) -> bool:
    """When the program is ``script``, SIGINT and SIGTERM exit at once with status 0 from now on.

    Nothing is installed when the module is merely imported (a test, a benchmark) or
    outside the main thread. Returns whether the handlers were installed.
    """
    if not is_program(module_name, script):
        return False
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, _exit_now)
    except ValueError:  # not the main thread
        return False
    return True


def exit_quietly_if_starting_one_of(scripts: tuple[str, ...]) -> bool:
    """:func:`exit_quietly_while_starting` for whichever of ``scripts`` this process runs.

    Called from ``humanoid_balance/nodes/__init__.py``: the first package module a node's
    console script imports after the (light) top-level package, so the handlers are in place
    before numpy, rclpy or MuJoCo start loading.
    """
    return any(exit_quietly_while_starting("", script) for script in scripts
               if is_program("", script))


def no_rendering_in(script: str) -> bool:
    """When the program is ``script`` (a simulation that never renders), MuJoCo without OpenGL.

    Importing ``mujoco`` loads its GLFW context unless ``MUJOCO_GL`` says ``disable``, and
    the ``glfw`` package then checks its library's version in a child Python process
    (about 50 ms). A signal during start-up ended the node while that child still wrote
    its answer: the child's ``BrokenPipeError`` traceback landed in the node's output (seen
    once in 16 stops of ``mujoco_sim``, in the fresh-clone CI). ``MUJOCO_GL`` set by the
    user is kept. Returns whether the program is ``script``.
    """
    if not is_program("", script):
        return False
    os.environ.setdefault("MUJOCO_GL", "disable")
    return True
