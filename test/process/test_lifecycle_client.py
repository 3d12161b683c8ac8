"""LifecycleClient against a real lifecycle node process: shutdown from every primary state;
the finalized node's service still answers, saying what to do."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from process_harness import ANSWER_LIMIT_S, Probe

from humanoid_balance.graph import robot_graph


@pytest.mark.parametrize("before", [(), ("configure",), ("configure", "activate")])
def test_shutdown_finalizes_from_every_primary_state(
        probe: Probe, launch: Callable[..., Any], before: tuple[str, ...]) -> None:
    """``change("shutdown")`` sends the shutdown transition of the node's state and finalizes it;
    /arm_balance/enable then answers false at once: start the process again."""
    from std_srvs.srv import SetBool

    node = {n.name: n for n in robot_graph(waist=False)}["arm_balance"]
    running = launch(node, tag="-".join(before) or "unconfigured")
    lifecycle = probe.lifecycle("arm_balance")
    for transition in before:
        assert lifecycle.change(transition)
    assert lifecycle.change("shutdown")
    assert lifecycle.state() == "finalized"
    response, seconds = probe.timed_call(SetBool, "/arm_balance/enable", SetBool.Request(data=True))
    assert (response.success, response.message) == (
        False, "arm_balance is finalized: it was shut down; start its process again")
    assert seconds < ANSWER_LIMIT_S
    assert running.stop().clean
