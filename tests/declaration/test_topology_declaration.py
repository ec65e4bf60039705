"""cluster.topology, workloads[].topology and pytorch segments: what a stack may say, and each refusal's words.

Upstream rules, at kai-scheduler/KAI-Scheduler@v0.17.0:
- pkg/apis/kai/v1alpha1/topology_types.go: levels MinItems 1, MaxItems 16, nodeLabel unique, pattern of a
  label key, kubernetes.io/hostname only as the last level;
- pkg/scheduler/plugins/topology/common.go `isNodePartOfTopology`: a node lacking a level label is not in
  the topology;
- pkg/scheduler/plugins/topology/job_filtering.go `calculateRelevantDomainLevels`: an error (the job is
  never placed) with neither level, a level not in the topology, or preferred above required;
- docs/topology/segments.md: segment-size "Must be greater than 1 and not greater than the replica count".
"""

from __future__ import annotations

from typing import Any

import pytest

from kaistack.declaration.model import StackConfig
from kaistack.declaration.parse import ConfigError, parse_config

ZONE, RACK, HOST = "topology.kubernetes.io/zone", "kaistack.io/rack", "kubernetes.io/hostname"


def _raw(*workloads: dict[str, Any], levels: list[str] | None = None, **cluster: Any) -> dict[str, Any]:
    pools = [
        {"name": "a", "gpus": 8, "labels": {ZONE: "z1", RACK: "r1"}},
        {"name": "b", "gpus": 8, "labels": {ZONE: "z1", RACK: "r2"}},
    ]
    raw: dict[str, Any] = {
        "cluster": {"provider": "kind", "nodePools": pools, "topology": {"levels": levels or [ZONE, RACK]}, **cluster},
        "gpu": {"mode": "fake"},
        "queues": [{"name": "q"}],
        "tenants": [{"name": "t", "queues": ["q"]}],
        "workloads": list(workloads),
        "kai": {"capacityCheck": "off"},
    }
    return raw


def _work(kind: str = "PyTorchJob", **fields: Any) -> dict[str, Any]:
    return {"name": "w", "kind": kind, "queue": "q", "image": "x", "gpu": 1, **fields}


def _parse(raw: dict[str, Any]) -> StackConfig:
    return parse_config(raw, source="test")


# --- cluster.topology ----------------------------------------------------------------------------------


def test_a_zone_and_rack_topology_parses_with_its_default_name() -> None:
    config = _parse(_raw())
    assert config.cluster.topology is not None
    assert (config.cluster.topology.name, config.cluster.topology.levels) == ("cluster-topology", [ZONE, RACK])


def test_more_than_sixteen_levels_are_refused() -> None:
    levels = [f"kaistack.io/l{i}" for i in range(17)]
    with pytest.raises(ConfigError, match=r"cluster\.topology\.levels: List should have at most 16 items"):
        _parse(_raw(levels=levels))


def test_a_repeated_level_is_refused_by_name() -> None:
    with pytest.raises(
        ConfigError, match=r"cluster\.topology\.levels: levels must be unique .*repeated: kaistack.io/rack"
    ):
        _parse(_raw(levels=[RACK, RACK]))


def test_hostname_above_the_last_level_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"kubernetes.io/hostname can only be the last \(lowest\) level"):
        _parse(_raw(levels=[HOST, RACK]))


def test_hostname_as_the_last_level_needs_no_pool_label() -> None:
    config = _parse(_raw(levels=[ZONE, RACK, HOST]))
    assert config.cluster.topology is not None


def test_a_level_that_is_not_a_label_key_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"cluster\.topology\.levels\[0\]: String should match pattern"):
        _parse(_raw(levels=["not a label"]))


def test_a_pool_without_a_level_label_is_refused_naming_pool_and_label() -> None:
    raw = _raw()
    del raw["cluster"]["nodePools"][1]["labels"][RACK]
    with pytest.raises(ConfigError, match=r"cluster\.nodePools\[1\]\.labels: pool 'b' has no 'kaistack.io/rack' label"):
        _parse(raw)


def test_a_level_label_value_that_is_no_label_value_is_refused() -> None:
    raw = _raw()
    raw["cluster"]["nodePools"][0]["labels"][RACK] = "rack 1"
    with pytest.raises(
        ConfigError, match=r"nodePools\[0\]\.labels\.kaistack.io/rack: 'rack 1' is not a Kubernetes label"
    ):
        _parse(raw)


def test_a_pool_may_not_set_the_hostname_label() -> None:
    raw = _raw()
    raw["cluster"]["nodePools"][0]["labels"][HOST] = "n1"
    with pytest.raises(ConfigError, match=r"nodePools\[0\]\.labels: kubernetes.io/hostname is set by the kubelet"):
        _parse(raw)


def test_topology_needs_kai_v0_17_or_later() -> None:
    raw = _raw()
    raw["kai"]["version"] = "v0.16.8"
    with pytest.raises(ConfigError, match=r"cluster\.topology: needs kai\.version v0\.17\.0 or later.*got v0\.16\.8"):
        _parse(raw)


# --- workloads[].topology -----------------------------------------------------------------------------------


def test_a_workload_constraint_without_a_cluster_topology_is_refused() -> None:
    raw = _raw(_work(topology={"required": RACK}))
    del raw["cluster"]["topology"]
    with pytest.raises(ConfigError, match=r"workloads\[0\]\.topology: the stack declares no cluster\.topology"):
        _parse(raw)


def test_a_constraint_with_neither_level_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"workloads\[0\]\.topology: needs 'required', 'preferred' or both"):
        _parse(_raw(_work(topology={})))


def test_a_level_outside_the_topology_is_refused_listing_the_levels() -> None:
    with pytest.raises(
        ConfigError,
        match=r"workloads\[0\]\.topology\.required: 'rack' is not a level of topology 'cluster-topology'; "
        r"levels: topology.kubernetes.io/zone, kaistack.io/rack",
    ):
        _parse(_raw(_work(topology={"required": "rack"})))


def test_preferred_above_required_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"topology\.preferred: 'topology.kubernetes.io/zone' is above required"):
        _parse(_raw(_work(topology={"required": RACK, "preferred": ZONE})))


def test_preferred_below_required_parses() -> None:
    config = _parse(_raw(_work(topology={"required": ZONE, "preferred": RACK})))
    assert config.workloads[0].topology is not None


def test_a_deployment_constraint_is_refused_as_it_would_hold_each_pod_alone() -> None:
    with pytest.raises(ConfigError, match=r"workloads\[0\]\.topology: a Deployment's pods are one PodGroup each"):
        _parse(_raw(_work("Deployment", replicas=2, topology={"required": RACK})))


def test_a_tenant_job_constraint_is_refused_as_its_pods_reach_the_host_bare() -> None:
    with pytest.raises(ConfigError, match=r"workloads\[0\]\.topology: a tenant's Job reaches the host as bare pods"):
        _parse(_raw(_work("Job", tenant="t", replicas=2, topology={"required": RACK})))


def test_a_tenant_pytorchjob_may_have_a_constraint() -> None:
    config = _parse(_raw(_work(tenant="t", topology={"required": RACK})))
    assert config.workloads[0].topology is not None


# --- pytorch.segmentSize / segmentTopology -------------------------------------------------------------------


def test_a_segment_size_of_one_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"pytorch\.segmentSize: Input should be greater than or equal to 2"):
        _parse(_raw(_work(pytorch={"workers": 4, "segmentSize": 1})))


def test_a_segment_larger_than_the_workers_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"workloads\[0\]\.pytorch: segmentSize 8 is more than the 4 workers"):
        _parse(_raw(_work(pytorch={"workers": 4, "segmentSize": 8})))


def test_a_segment_constraint_without_a_segment_size_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"workloads\[0\]\.pytorch: segmentTopology needs segmentSize"):
        _parse(_raw(_work(pytorch={"workers": 4, "segmentTopology": {"required": RACK}})))


def test_segments_of_a_tenant_pytorchjob_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"workloads\[0\]\.pytorch\.segmentSize: a tenant's PyTorchJob pods skip"):
        _parse(_raw(_work(tenant="t", pytorch={"workers": 4, "segmentSize": 2})))


def test_a_segment_level_above_the_jobs_required_level_is_refused() -> None:
    work = _work(
        topology={"required": RACK}, pytorch={"workers": 4, "segmentSize": 2, "segmentTopology": {"required": ZONE}}
    )
    with pytest.raises(ConfigError, match=r"segmentTopology\.required: 'topology.kubernetes.io/zone' is above"):
        _parse(_raw(work))


def test_a_segment_constraint_is_checked_against_the_topology_like_the_jobs() -> None:
    work = _work(pytorch={"workers": 4, "segmentSize": 2, "segmentTopology": {"preferred": "row"}})
    with pytest.raises(ConfigError, match=r"pytorch\.segmentTopology\.preferred: 'row' is not a level"):
        _parse(_raw(work))


def test_every_problem_is_reported_at_once() -> None:
    raw = _raw(_work(topology={"required": "rack"}), {**_work("Deployment", topology={"required": RACK}), "name": "d"})
    del raw["cluster"]["nodePools"][0]["labels"][ZONE]
    with pytest.raises(ConfigError, match=r"\(3 problems\)"):
        _parse(raw)


def test_a_segment_level_equal_to_the_jobs_required_level_is_accepted() -> None:
    """Segments in one rack of a job that must sit in one rack: the same level is not above it."""
    work = _work(
        topology={"required": RACK}, pytorch={"workers": 4, "segmentSize": 2, "segmentTopology": {"required": RACK}}
    )
    assert _parse(_raw(work)).workloads[0].pytorch is not None
