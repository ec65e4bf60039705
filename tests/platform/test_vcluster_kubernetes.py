"""A tenant's virtual API server runs the host's Kubernetes minor, not the chart's newer default.

Facts, at loft-sh/vcluster@v0.36.1 (the same at v0.37.0-rc.1):
- chart/values.yaml: controlPlane.distro.k8s.version is empty and image.tag is v1.36.0, whatever the host runs;
- chart/templates/_init-containers.tpl: a set `version` replaces that tag (image ghcr.io/loft-sh/kubernetes);
- config/default_extra_values.go, K8SVersionMap: the tag vCluster ships for each minor, 1.30 to 1.36;
- pkg/controllers/resources/pods/translate/translator.go: pod-level spec.resources is dropped on hosts
  below 1.34, so a 1.36 virtual API on a 1.33 host turns such a pod into one KAI sees without requests.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from platform_testlib import (
    PROJECT_DIR,
    RELEASE,
    SCHEMAS,
    base_raw,
    inputs,
    of_type,
    run_program,
    validate_vcluster_values,
)
from pydantic import ValidationError

from components.tenant import vcluster_values
from kaistack.declaration import versions
from kaistack.declaration.model import StackConfig
from kaistack.stack.files import read_stack_config


def _with_tenant(raw: dict[str, Any], **vcluster: Any) -> dict[str, Any]:
    raw["tenants"] = [{"name": "t1", "queues": [raw["queues"][-1]["name"]], "vcluster": vcluster}]
    return raw


def _existing(raw: dict[str, Any]) -> dict[str, Any]:
    raw["cluster"] = {"provider": "existing", "existing": {"context": "lab"}, "nodePools": raw["cluster"]["nodePools"]}
    return raw


def _version(config: StackConfig) -> Any:
    return vcluster_values(config, config.tenants[0])["controlPlane"]["distro"]["k8s"].get("version")


@pytest.mark.parametrize("chart", sorted(versions.VCLUSTER_VERSIONS))
def test_a_kind_tenant_runs_the_minor_of_the_kind_node_image(mocks, chart: str) -> None:
    run_program(mocks, _with_tenant(base_raw(), version=chart))
    (release,) = [inputs(r) for r in of_type(mocks.resources, RELEASE) if inputs(r)["chart"] == "vcluster"]
    assert release["values"]["controlPlane"]["distro"]["k8s"] == {"version": "v1.35.0", "scheduler": {"enabled": False}}
    validate_vcluster_values(release["values"], chart)


def test_an_eks_tenant_runs_the_control_planes_minor() -> None:
    raw = _with_tenant(base_raw())
    raw["cluster"] = {"provider": "eks", "eks": {"region": "us-west-2", "version": "1.34"}, "nodePools": []}
    raw["gpu"] = {"mode": "none"}
    assert _version(StackConfig.model_validate(raw)) == "v1.34.0"


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_the_eks_stacks_tenants_keep_the_minor_they_were_first_deployed_with(stack: str) -> None:
    """staging and prod run EKS 1.34 (from 1.33) and tenants vCluster started at its default 1.36: following the
    host would step their API servers down, which Kubernetes does not support."""
    config = StackConfig.model_validate(read_stack_config(PROJECT_DIR, stack))
    assert config.host_kubernetes_minor() == "1.34"
    assert config.tenants
    assert {vcluster_values(config, t)["controlPlane"]["distro"]["k8s"]["version"] for t in config.tenants} == {
        "v1.36.0"
    }


def test_an_existing_clusters_tenant_keeps_the_charts_own_default() -> None:
    """kaistack cannot know an existing host's version before it connects: the chart decides (1.36)."""
    assert _version(StackConfig.model_validate(_with_tenant(_existing(base_raw())))) is None


def test_a_tenant_may_name_its_own_minor() -> None:
    config = StackConfig.model_validate(_with_tenant(_existing(base_raw()), kubernetes="1.34"))
    assert _version(config) == "v1.34.0"


def test_a_minor_vcluster_does_not_ship_is_refused_naming_the_supported_ones() -> None:
    with pytest.raises(
        ValidationError, match=r"'1.37' is not a Kubernetes minor vCluster runs; supported: 1.30, 1.31, .*, 1.36"
    ):
        StackConfig.model_validate(_with_tenant(base_raw(), kubernetes="1.37"))


def test_a_host_minor_vcluster_cannot_run_is_refused_at_the_tenants_key() -> None:
    raw = _with_tenant(base_raw())
    raw["cluster"]["kind"] = {"nodeImage": "kindest/node:v1.29.14"}
    with pytest.raises(
        ValidationError,
        match=r"tenants\[0\]\.vcluster\.kubernetes: the host runs Kubernetes 1\.29, which vCluster has no API server",
    ):
        StackConfig.model_validate(raw)
    raw["tenants"][0]["vcluster"] = {"kubernetes": "1.30"}
    assert _version(StackConfig.model_validate(raw)) == "v1.30.2"


def test_a_node_image_without_a_version_tag_leaves_the_charts_default() -> None:
    raw = _with_tenant(base_raw())
    raw["cluster"]["kind"] = {"nodeImage": "registry.local:5000/kind-node:custom"}
    assert _version(StackConfig.model_validate(raw)) is None


@pytest.mark.parametrize("chart", sorted(versions.VCLUSTER_VERSIONS))
def test_each_virtual_minor_names_its_own_tag_and_covers_the_charts_default(chart: str) -> None:
    values = yaml.safe_load((SCHEMAS / f"vcluster-values-{chart}.yaml").read_text())
    k8s = values["controlPlane"]["distro"]["k8s"]
    assert k8s["version"] == ""
    assert k8s["image"]["repository"] == "loft-sh/kubernetes"
    assert k8s["image"]["tag"] in versions.VCLUSTER_KUBERNETES.values()
    assert all(versions.kubernetes_minor(tag) == minor for minor, tag in versions.VCLUSTER_KUBERNETES.items())


@pytest.mark.parametrize(
    ("text", "minor"),
    [
        ("1.33", "1.33"),
        ("v1.35.0", "1.35"),
        ("kindest/node:v1.35.0@sha256:452d707d", "1.35"),
        ("registry.local:5000/node:v1.34.1", "1.34"),
        ("1.35+", None),
        ("kindest/node:latest", None),
    ],
)
def test_kubernetes_minor_reads_versions_and_image_tags(text: str, minor: str | None) -> None:
    assert versions.kubernetes_minor(text) == minor


@pytest.mark.parametrize("chart", sorted(versions.VCLUSTER_VERSIONS))
def test_the_syncer_may_resize_pods_whatever_minor_the_host_reports(mocks, chart: str) -> None:
    """The chart grants pods/resize only when `.Capabilities.KubeVersion.Minor|int` >= 35
    (loft-sh/vcluster@v0.36.1 chart/templates/role.yaml:43-47), and EKS reports its minor as "35+", which that
    reads as 0. kaistack grants the chart's own rule through rbac.role.extraRules, a key both charts have."""
    values = yaml.safe_load((SCHEMAS / f"vcluster-values-{chart}.yaml").read_text())
    assert values["rbac"]["role"]["extraRules"] == []
    run_program(mocks, _with_tenant(base_raw(), version=chart))
    (release,) = [inputs(r) for r in of_type(mocks.resources, RELEASE) if inputs(r)["chart"] == "vcluster"]
    assert release["values"]["rbac"] == {
        "role": {"extraRules": [{"apiGroups": [""], "resources": ["pods/resize"], "verbs": ["patch", "update"]}]}
    }
    validate_vcluster_values(release["values"], chart)


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_a_host_below_1_35_gets_no_resize_grant(stack: str) -> None:
    """Below 1.35 vCluster's syncer resizes nothing (pods/syncer.go:413-418) and the chart grants nothing; in-place
    resize itself is on from 1.33, so a grant there would let the syncer grow a placed pod's CPU and memory."""
    config = StackConfig.model_validate(read_stack_config(PROJECT_DIR, stack))
    assert config.host_kubernetes_minor() == "1.34"
    assert [t.name for t in config.tenants if "rbac" in vcluster_values(config, t)] == []


def test_an_existing_cluster_whose_minor_is_unknown_gets_the_resize_grant() -> None:
    config = StackConfig.model_validate(_with_tenant(_existing(base_raw())))
    assert vcluster_values(config, config.tenants[0])["rbac"]["role"]["extraRules"][0]["resources"] == ["pods/resize"]


def test_eks_1_33_is_refused_because_kai_never_starts_there() -> None:
    """EKS 1.33 enables the DRA beta API (EKS release notes for 1.33). KAI turns DRA on for any served
    resource.k8s.io version >= v1beta1 (kai-scheduler/KAI-Scheduler@v0.17.0
    pkg/common/feature_gates/feature_gates.go L18, L118-122) and then lists resource.k8s.io/v1 only
    (pkg/scheduler/cache/cluster_info/data_lister/kubernetes_lister.go L100-104): its cache never syncs."""
    raw = _with_tenant(base_raw())
    raw["cluster"] = {"provider": "eks", "eks": {"region": "us-west-2", "version": "1.33"}, "nodePools": []}
    raw["gpu"] = {"mode": "none"}
    with pytest.raises(ValueError, match=r"cluster\.eks\.version: '1\.33' serves the DRA API only at beta"):
        StackConfig.model_validate(raw)


@pytest.mark.parametrize("version", ["1.32", "1.34", "1.35"])
def test_eks_versions_without_the_beta_only_dra_api_are_accepted(version: str) -> None:
    raw = _with_tenant(base_raw())
    raw["cluster"] = {"provider": "eks", "eks": {"region": "us-west-2", "version": version}, "nodePools": []}
    raw["gpu"] = {"mode": "none"}
    assert StackConfig.model_validate(raw).host_kubernetes_minor() == version


def _eks_tenant_stack(zones: int, min_size: int) -> dict:
    raw = _with_tenant(base_raw())
    eks = {
        "region": "us-west-2",
        "availabilityZones": [f"us-west-2{z}" for z in "abc"[:zones]],
        "systemNodeGroup": {"minSize": min_size, "desiredSize": min_size, "maxSize": max(min_size, 3)},
    }
    raw["cluster"] = {"provider": "eks", "eks": eks, "nodePools": []}
    raw["gpu"] = {"mode": "none"}
    return raw


def test_fewer_system_nodes_than_zones_is_refused_where_tenants_keep_zonal_volumes() -> None:
    """The vCluster's claim binds a gp3 volume in its first node's zone (WaitForFirstConsumer); with 2 system
    nodes over 3 zones a node replacement can leave that zone without one."""
    with pytest.raises(ValueError, match=r"systemNodeGroup\.minSize: 2 is fewer than the 3 availability zones"):
        StackConfig.model_validate(_eks_tenant_stack(zones=3, min_size=2))


def test_one_system_node_per_zone_is_enough() -> None:
    assert StackConfig.model_validate(_eks_tenant_stack(zones=3, min_size=3)).tenants
