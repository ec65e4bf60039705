"""Host ports: two pods binding the same host port never share a node (Kubernetes' NodePorts filter).

KAI@v0.17.0 runs the plugin as the PodFitsHostPorts predicate (pkg/scheduler/k8s_internal/predicates/
predicates.go:69-85) against the node's Kubernetes NodeInfo, which holds every pod KAI adds to the node
(node_info.go:419, 516). The port rules are k8s.io/kubernetes v1.35's: scheduler util GetHostPorts (containers
and restartable init containers, hostPort > 0) and framework HostPortInfo (sanitize: empty hostIP 0.0.0.0,
empty protocol TCP; CheckConflict: 0.0.0.0 meets every IP of the same protocol and port).
"""

from __future__ import annotations

from typing import Any

import pytest
from placement_testlib import queue, run, scenario

from placement.host_ports import conflict, pod_host_ports
from placement.model import Task
from placement.node_constraints import ConstraintError, parse_constraints
from placement.placing import fitting_node
from placement.scenario import ScenarioError
from placement.session import Session
from placement.signatures import job_signature
from placement.statement import Statement
from placement.tasks import TaskRequest

# --- CheckConflict ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("used", "wanted", "clash"),
    [
        (("0.0.0.0", "TCP", 80), ("0.0.0.0", "TCP", 80), True),
        (("0.0.0.0", "TCP", 80), ("0.0.0.0", "UDP", 80), False),
        (("0.0.0.0", "TCP", 80), ("0.0.0.0", "TCP", 81), False),
        (("10.0.0.1", "TCP", 80), ("0.0.0.0", "TCP", 80), True),  # 0.0.0.0 wanted: every IP is checked
        (("0.0.0.0", "TCP", 80), ("10.0.0.1", "TCP", 80), True),  # a specific IP: it and 0.0.0.0 are checked
        (("10.0.0.1", "TCP", 80), ("10.0.0.1", "TCP", 80), True),
        (("10.0.0.1", "TCP", 80), ("10.0.0.2", "TCP", 80), False),
        (("::", "TCP", 80), ("10.0.0.1", "TCP", 80), False),  # "::" is no wildcard to HostPortInfo
        (("::", "TCP", 80), ("::", "TCP", 80), True),
    ],
)
def test_check_conflict_follows_kubernetes_host_port_info(
    used: tuple[str, str, int], wanted: tuple[str, str, int], clash: bool
) -> None:
    assert (conflict([used], [wanted]) is not None) is clash


# --- which ports a pod spec binds ---------------------------------------------------------------------


def test_a_pod_binds_its_containers_host_ports_with_kubernetes_defaults() -> None:
    spec = {
        "containers": [
            {"name": "a", "ports": [{"containerPort": 8080}, {"containerPort": 80, "hostPort": 80}]},
            {"name": "b", "ports": [{"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"}]},
        ]
    }
    assert pod_host_ports(spec) == (("0.0.0.0", "TCP", 80), ("10.0.0.1", "UDP", 53))


def test_a_sidecar_binds_its_host_ports_and_an_init_container_that_completes_does_not() -> None:
    port = {"containerPort": 9000, "hostPort": 9000}
    spec = {
        "initContainers": [
            {"name": "setup", "ports": [{"containerPort": 1, "hostPort": 1}]},
            {"name": "proxy", "restartPolicy": "Always", "ports": [port]},
        ],
        "containers": [{"name": "main"}],
    }
    assert pod_host_ports(spec) == (("0.0.0.0", "TCP", 9000),)


def test_a_malformed_port_in_a_pod_spec_is_a_constraint_error_naming_it() -> None:
    spec = {"containers": [{"name": "a", "ports": [{"containerPort": 80, "hostPort": "80"}]}]}
    with pytest.raises(ConstraintError, match=r"containers\[0\]\.ports\[0\]\.hostPort: must be an integer"):
        parse_constraints(spec)


def _request(port: dict[str, Any]) -> TaskRequest:
    spec = {"containers": [{"name": "c", "ports": [{"containerPort": 80, **port}]}]}
    return TaskRequest(Task(constraints=parse_constraints(spec)))


def test_pods_that_differ_in_a_host_port_number_are_not_alike_to_kai() -> None:
    """scheduling_constraints_signature.go:92-97 hashes every container port's hostPort."""
    assert _request({"hostPort": 80}).signature_id != _request({"hostPort": 81}).signature_id


def test_pods_that_differ_only_in_a_host_ports_protocol_are_alike_to_kai_yet_placed_apart_by_it() -> None:
    """The signature hashes the number alone; the predicate reads the protocol (HostPortInfo)."""
    tcp, udp = _request({"hostPort": 80}), _request({"hostPort": 80, "protocol": "UDP"})
    assert tcp.signature_id == udp.signature_id
    assert tcp.constraint_id != udp.constraint_id


# --- in the simulator ---------------------------------------------------------------------------------


def _doc(nodes: int, jobs: list[dict[str, Any]], actions: list[str] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "nodes": [{"name": f"n{i}", "gpus": 8} for i in range(nodes)],
        "queues": [queue("q")],
        "jobs": jobs,
    }
    if actions is not None:
        doc["actions"] = actions
    return doc


WEB = {"queue": "q", "gpu": 1, "hostPorts": [{"hostPort": 8080}]}


def test_two_pods_binding_the_same_host_port_go_to_different_nodes_even_under_binpack() -> None:
    result = run(_doc(2, [{"name": "a", **WEB}, {"name": "b", **WEB}]))
    assert {result.tasks["a-0"].node, result.tasks["b-0"].node} == {"n0", "n1"}


def test_without_host_ports_binpack_puts_both_pods_on_one_node() -> None:
    result = run(_doc(2, [{"name": "a", "queue": "q", "gpu": 1}, {"name": "b", "queue": "q", "gpu": 1}]))
    assert result.tasks["a-0"].node == result.tasks["b-0"].node


def test_a_pod_whose_host_port_is_taken_on_the_only_node_stays_pending_and_says_which_port() -> None:
    result = run(_doc(1, [{"name": "a", **WEB}, {"name": "b", **WEB}]))
    assert result.tasks["b-0"].status == "Pending"
    reason = result.reasons["b"]
    assert (reason.code, reason.message) == (
        "host-ports",
        "host port TCP 8080 is taken on every node with room for it: n0 has a pod on TCP 8080",
    )


def test_a_gang_whose_pods_bind_the_same_host_port_needs_a_node_per_pod() -> None:
    result = run(_doc(1, [{"name": "g", **WEB, "tasks": 2, "minMember": 2}]))
    assert [t.status for name, t in sorted(result.tasks.items())] == ["Pending", "Pending"]


def test_different_protocols_on_the_same_port_share_a_node() -> None:
    udp = {**WEB, "hostPorts": [{"hostPort": 8080, "protocol": "UDP"}]}
    result = run(_doc(1, [{"name": "a", **WEB}, {"name": "b", **udp}]))
    assert result.tasks["b-0"].node == "n0"


# --- the scenario key ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ports", "message"),
    [
        ([{"port": 80}], r"jobs\[0\]\.hostPorts\[0\]: unknown key port; allowed: hostIP, hostPort, protocol"),
        ([{"hostPort": 0}], r"jobs\[0\]\.hostPorts\[0\]\.hostPort: must be an integer port 1\.\.65535, got 0"),
        ([{"hostPort": 70000}], r"hostPort: must be an integer port 1\.\.65535, got 70000"),
        ([{"hostPort": 80, "protocol": "HTTP"}], r"protocol: must be one of TCP, UDP, SCTP, got 'HTTP'"),
        ({"hostPort": 80}, r"jobs\[0\]\.hostPorts: must be a list"),
    ],
)
def test_a_malformed_host_ports_key_names_the_key_and_what_is_allowed(ports: Any, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        scenario(_doc(1, [{"name": "a", "queue": "q", "gpu": 1, "hostPorts": ports}]))


# --- an evicted pod keeps its ports for the rest of the session -----------------------------------------


def _preemption(holder_port: int) -> dict[str, Any]:
    """One node with GPUs to spare; a low-priority pod holds a host port, a high-priority one wants 80."""
    low = {
        "name": "low",
        "queue": "q",
        "priority": 10,
        "gpu": 1,
        "hostPorts": [{"hostPort": holder_port}],
        "tasks": [{"state": "Running", "node": "n0"}],
    }
    high = {"name": "high", "queue": "q", "priority": 90, "gpu": 1, "hostPorts": [{"hostPort": 80}]}
    return _doc(1, [low, high], actions=["allocate", "preempt"])


def test_preempting_the_pod_that_holds_the_port_does_not_free_it_within_the_session() -> None:
    """Evict makes the victim Releasing through node.UpdateTask, i.e. RemoveTask then AddTask
    (KAI@v0.17.0 statement.go:89-98, node_info.go:575-581): it is back in the node's Kubernetes NodeInfo with
    its ports, so the preemptor cannot be pipelined there and the scenario fails. Nothing is evicted."""
    result = run(_preemption(80))
    assert (result.tasks["low-0"].status, result.tasks["high-0"].status) == ("Running", "Pending")


def test_a_holder_of_another_port_leaves_the_preemptor_room_to_be_allocated() -> None:
    result = run(_preemption(81))
    assert (result.tasks["low-0"].status, result.tasks["high-0"].node) == ("Running", "n0")


def test_a_victim_evicted_in_a_simulation_is_kept_off_its_own_node_by_its_own_ports() -> None:
    """While the solver re-places a victim it is still in the node's NodeInfo as Releasing (node_info.go:575-581)
    with its ports, and NodePorts has no exception for the pod itself: it cannot go back where it was."""
    held = {"name": "low", "queue": "q", "gpu": 1, "hostPorts": [{"hostPort": 80}]}
    s = scenario(_doc(2, [{**held, "tasks": [{"state": "Running", "node": "n0"}]}]))
    ssn = Session(s.snapshot, s.placement)
    ssn.open()
    task = ssn.jobs["low"].tasks[0]
    Statement(ssn).evict(task)
    assert (task.status, ssn.nodes["n0"].port_conflict(task)) == ("Releasing", (("0.0.0.0", "TCP", 80),) * 2)
    assert not fitting_node(ssn, task, ssn.nodes["n0"], {})
    assert fitting_node(ssn, task, ssn.nodes["n1"], {})


def test_jobs_whose_pods_differ_only_in_a_host_ports_protocol_have_one_scheduling_signature() -> None:
    udp = {**WEB, "hostPorts": [{"hostPort": 8080, "protocol": "UDP"}]}
    other = {**WEB, "hostPorts": [{"hostPort": 8081}]}
    s = scenario(_doc(1, [{"name": "tcp", **WEB}, {"name": "udp", **udp}, {"name": "other", **other}]))
    ssn = Session(s.snapshot, s.placement)
    ssn.open()
    tcp, same, different = (job_signature(ssn.jobs[n], lambda _t, level: level or "") for n in ("tcp", "udp", "other"))
    assert (tcp == same, tcp == different) == (True, False)
