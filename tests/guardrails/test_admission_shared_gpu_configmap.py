"""A tenant may not name the ConfigMaps that give its GPU share its devices and memory limit.

KAI@v0.17.0 pkg/binder/common/gpusharingconfigmap/config_map.go:113-168: KAI's admission names a share's ConfigMaps
after the pod's `runai/shared-gpu-configmap` annotation, keeping one the pod already has, and otherwise writes
`<pod name, cut>-<7 random characters>-shared-gpu` (generateConfigMapNamePrefix; k8s.io/apimachinery util/rand
String); the binder fills whatever ConfigMap the annotation names when it binds the pod (config_map.go:57-108,
pkg/binder/common/gpu_access.go:63-144). vCluster copies a tenant's annotations to the host pod and syncs its
ConfigMaps as `<name>-x-<namespace>-x-<tenant>` (loft-sh/vcluster@v0.36.1 pkg/util/translate/single_namespace.go:60-64),
so a tenant choosing the annotation could make KAI read a ConfigMap it edits. The policy sees pods after KAI's
mutating webhook, so a pod with a share always carries the annotation by then.
"""

from __future__ import annotations

import copy

import pytest
from test_admission_memory_isolation import _kai_admitted, _lifted, _policy
from test_policy_admission import Case, cel_denials, direct_pod, synced_pod

KEY = "runai/shared-gpu-configmap"
SHARE = {"gpu-fraction": "0.5"}


def _named(denials: list[str]) -> bool:
    return any(f"the {KEY} annotation is KAI's" in d for d in denials)


@pytest.mark.parametrize("isolation", [False, True])
def test_kais_own_name_passes_in_every_sharing_mode(isolation):
    pod = synced_pod(annotations={**SHARE, KEY: "p-x-default-x-team-a-bx7q2zk-shared-gpu"})
    assert not _named(cel_denials(_policy(memory_isolation=isolation), Case(pod, True)))


@pytest.mark.parametrize(
    "chosen",
    ["lift", "mine-x-default-x-team", "p-x-default-x-team-a-shared-gpu", "p-bx7q2z-shared-gpu"],
)
@pytest.mark.parametrize("isolation", [False, True])
def test_a_name_kai_would_not_write_is_refused_on_create(chosen, isolation):
    pod = synced_pod(annotations={**SHARE, KEY: chosen})
    assert _named(cel_denials(_policy(memory_isolation=isolation), Case(pod, False)))


def test_the_name_cannot_change_once_the_pod_exists():
    """The binder reads it at bind time, after the pod was created with KAI's name."""
    old = synced_pod(annotations=SHARE)
    pod = copy.deepcopy(old)
    pod["metadata"]["annotations"][KEY] = "p-x-default-x-team-a-zzzzzzz-shared-gpu"
    assert _named(cel_denials(_policy(), Case(pod, False, operation="UPDATE", old=old)))
    assert not _named(cel_denials(_policy(), Case(copy.deepcopy(old), True, operation="UPDATE", old=old)))


def test_a_pod_without_a_share_is_not_its_business():
    assert not _named(cel_denials(_policy(), Case(synced_pod(annotations={KEY: "anything"}), True)))


def test_a_tenant_named_like_kais_configmaps_cannot_pass_its_own_envfrom():
    """A tenant `team-evar` syncs a ConfigMap `lift-x-default-x-team-evar`, which ends in -evar; with KAI's name
    the envFrom KAI adds is `<name>-<n>-evar`, which no synced ConfigMap can be."""
    pod = _kai_admitted(env_from=[{"configMapRef": {"name": "lift-x-default-x-team-evar"}}])
    pod["metadata"]["annotations"][KEY] = "lift"
    denials = cel_denials(_policy(), Case(pod, False))
    assert _named(denials)
    assert _lifted(denials)


@pytest.mark.parametrize("variable", ["CUDA_DEVICE_MEMORY_LIMIT_SERVICE_HOST", "CUDA_DEVICE_MEMORY_LIMIT_PORT_80_TCP"])
def test_the_service_links_vcluster_writes_are_no_per_device_limit(variable):
    """vCluster writes every Service's link variables into the pods it syncs (loft-sh/vcluster@v0.36.1
    pkg/controllers/resources/pods/translate/envvars.go): a Service `cuda-device-memory-limit` gives these. HAMi-core
    reads CUDA_DEVICE_MEMORY_LIMIT_<device index> only (multiprocess_memory_limit.c, do_init_device_memory_limits)."""
    pod = _kai_admitted(env=[{"name": variable, "value": "10.96.0.1"}])
    assert cel_denials(_policy(), Case(pod, True)) == []


def test_a_pod_named_by_the_api_server_after_admission_keeps_kais_empty_prefix():
    """generateName is filled after admission (k8s.io/apiserver@v0.35.0 pkg/endpoints/handlers/create.go:202-209,
    pkg/registry/generic/registry/store.go:485-486), so KAI names a pod without a name or owner `-<7>-shared-gpu`."""
    pod = direct_pod(annotations={**SHARE, KEY: "-bcdfghj-shared-gpu"})
    del pod["metadata"]["name"]
    pod["metadata"]["generateName"] = "trainer-"
    assert not _named(cel_denials(_policy(), Case(pod, True, user="kubernetes-admin")))
