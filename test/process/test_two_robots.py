"""Two simulated robots on one ROS domain: namespace:=robot1 and namespace:=robot2.

Each robot is ``graph.sim_graph(namespace=...)`` as ``sim.launch.py`` starts it (the
same command lines: every node a process of its own), with its own team parameter
file (``graph.apply_parameter_file``, the launch files' ``params_file``):

- robot1's is config/zmp.yaml copied whole with one value changed (its section
  keyed ``/**/zmp_estimator``, as the package ships it);
- robot2's holds that one value only, keyed ``/robot2/zmp_estimator``.

The changed parameter is read back through each estimator's parameter service
(rcl's parser took the wildcard and the namespaced key on the node's real
process), each robot's ZMP comes from its own simulation, and no node of one robot
has a publisher, subscription or service outside its namespace (``/rosout`` and
``/parameter_events`` are every node's). The simulations run at a quarter of real
time: eight processes share the machine.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from process_harness import OUTPUT_TIMEOUT_S, READY_TIMEOUT_S, REQUEST_RETRY_S, Probe, describe

from humanoid_balance.graph import GraphNode, apply_parameter_file, sim_graph
from humanoid_balance.processes import LifecycleError, NodeProcess

pytestmark = [pytest.mark.ros, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
ROBOTS = {"robot1": 25.0, "robot2": 35.0}  # namespace -> its contact_threshold [N]
#: names every node has outside its namespace (rclpy's logging and parameter events)
SHARED = ("/rosout", "/parameter_events")


def _team_files(tmp_path: Path) -> dict[str, Path]:
    """robot1: the package's zmp.yaml with contact_threshold changed; robot2: that value alone."""
    package = (REPO / "config" / "zmp.yaml").read_text()
    assert "    contact_threshold: 20.0  #" in package
    robot1 = tmp_path / "robot1.yaml"
    robot1.write_text(package.replace("    contact_threshold: 20.0  #",
                                      f"    contact_threshold: {ROBOTS['robot1']}  #"))
    robot2 = tmp_path / "robot2.yaml"
    robot2.write_text("/robot2/zmp_estimator:\n  ros__parameters:\n"
                      f"    contact_threshold: {ROBOTS['robot2']}\n")
    return {"robot1": robot1, "robot2": robot2}


def _get_parameter(probe: Probe, node: str, name: str, timeout: float) -> Any:
    """``ros2 param get NODE NAME`` (full name); waits until the node's service answers."""
    from rcl_interfaces.srv import GetParameters
    from rclpy.parameter import parameter_value_to_python

    client = probe.client(GetParameters, f"{node}/get_parameters")
    end = time.monotonic() + timeout
    future, sent = None, 0.0
    while time.monotonic() < end:
        if future is not None and not future.done() and time.monotonic() - sent > REQUEST_RETRY_S:
            client.remove_pending_request(future)  # sent before the server matched the client
            future = None
        if future is None and client.service_is_ready():
            future = client.call_async(GetParameters.Request(names=[name]))
            sent = time.monotonic()
        if future is not None and future.done():
            return parameter_value_to_python(future.result().values[0])
        probe.executor.spin_once(timeout_sec=0.02)
    raise AssertionError(f"{node}/get_parameters did not answer within {timeout} s")


@pytest.fixture
def two_robots(probe: Probe, tmp_path: Path) -> Iterator[dict[str, list[tuple[GraphNode,
                                                                             NodeProcess]]]]:
    """Both graphs started, every node reachable, the lifecycle nodes configured."""
    files = _team_files(tmp_path)
    robots: dict[str, list[tuple[GraphNode, NodeProcess]]] = {}
    try:
        for namespace, path in files.items():
            nodes = apply_parameter_file(sim_graph(namespace=namespace, real_time_factor=0.25),
                                         path).nodes
            robots[namespace] = [(node, NodeProcess(
                node, log_path=tmp_path / f"{namespace}-{node.name}.log")) for node in nodes]
        for started in robots.values():
            for node, process in started:
                assert process.alive(), describe(process.stop())
                _get_parameter(probe, node.full_name, "use_sim_time", READY_TIMEOUT_S)
        for started in robots.values():
            for node, process in started:
                if node.spec.lifecycle:
                    try:
                        # a deadline, not a measure: 10 s ran out in a fresh-clone CI run
                        assert probe.lifecycle(node.full_name).change(
                            "configure", READY_TIMEOUT_S), node.full_name
                    except LifecycleError as error:
                        raise AssertionError(f"{error}:\n{process.output()[-3000:]}") from error
        yield robots
    finally:
        for started in robots.values():
            for _, process in reversed(started):
                process.stop()


def test_two_namespaced_robots_share_a_domain_and_nothing_else(
        probe: Probe, two_robots: dict[str, list[tuple[GraphNode, NodeProcess]]]) -> None:
    """Each estimator reads its robot's contact_threshold from its own file, publishes its own
    robot's ZMP, and no node has an endpoint outside its namespace; each robot has one clock."""
    from geometry_msgs.msg import PointStamped

    for namespace, threshold in ROBOTS.items():
        # (a new client's request: discovery under load took over 10 s beside two busy loops)
        assert _get_parameter(probe, f"/{namespace}/zmp_estimator", "contact_threshold",
                              READY_TIMEOUT_S) == threshold, namespace
        # a parameter of the package's file, overridden by the graph: still the graph's
        assert _get_parameter(probe, f"/{namespace}/zmp_estimator", "use_sim_time",
                              READY_TIMEOUT_S) is True
    zmp = {namespace: probe.record(PointStamped, f"/{namespace}/zmp") for namespace in ROBOTS}
    unscoped = probe.record(PointStamped, "/zmp")
    assert probe.spin_until(lambda: all(r.count >= 5 for r in zmp.values()), 3 * OUTPUT_TIMEOUT_S), \
        {n: r.count for n, r in zmp.items()}
    assert unscoped.count == 0
    node = probe.node
    # every node's endpoints are discovered (the lifecycle nodes' once configured)
    expected = {(ns, n.name) for ns, started in two_robots.items() for n, _ in started}

    def discovered() -> bool:
        seen = {(info.node_namespace.strip("/"), info.node_name)
                for topic, _ in node.get_topic_names_and_types()
                for info in node.get_publishers_info_by_topic(topic)}
        return expected <= seen

    assert probe.spin_until(discovered, OUTPUT_TIMEOUT_S)
    outside = []
    for topic, _ in node.get_topic_names_and_types():
        for info in [*node.get_publishers_info_by_topic(topic),
                     *node.get_subscriptions_info_by_topic(topic)]:
            namespace = info.node_namespace
            if namespace.strip("/") in ROBOTS and topic not in SHARED and \
                    not topic.startswith(namespace + "/"):
                outside.append((f"{namespace}/{info.node_name}", topic))
    for namespace, started in two_robots.items():
        for graph_node, _ in started:
            for service, _ in node.get_service_names_and_types_by_node(graph_node.name,
                                                                       f"/{namespace}"):
                if not service.startswith(f"/{namespace}/"):
                    outside.append((graph_node.full_name, service))
    assert outside == []
    for namespace in ROBOTS:
        clocks = node.get_publishers_info_by_topic(f"/{namespace}/clock")
        assert [(i.node_namespace, i.node_name) for i in clocks] == [(f"/{namespace}",
                                                                      "mujoco_sim")]
    assert node.get_publishers_info_by_topic("/clock") == []
    for started in two_robots.values():
        for graph_node, process in started:
            report = process.stop()
            assert report.clean, (graph_node.full_name, describe(report))
