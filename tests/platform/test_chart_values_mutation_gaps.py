"""Chart values, objects and options no other test pinned, found by a mutation run of components/kai.py,
components/gpu.py and components/queues.py: what KAI's, the GPU stack's and the queues' releases and objects
carry, what they wait for and belong to.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from platform_testlib import (
    PROJECT_DIR,
    SCHEMAS,
    base_raw,
    dev_raw,
    inputs,
    merged,
    named,
    of_type,
    release,
    run_program,
)

from components.gpu import release_args
from kaistack.declaration import kai_api, versions
from kaistack.declaration.parse import parse_config
from kaistack.ops.mocks import MockSession

README = PROJECT_DIR / "README.md"


def _gpu_pool(**changes: Any) -> dict[str, Any]:
    return {"name": "gpu", "count": 2, "gpus": 4, "cpu": "16", "memory": "64Gi", **changes}


def _kai_values(mocks, raw: dict[str, Any]) -> dict[str, Any]:
    run_program(mocks, raw)
    return inputs(release(mocks.resources, "kai-scheduler/kai-scheduler"))["values"]


# --- components ---------------------------------------------------------------------------------------------


def test_the_platforms_components_are_the_ones_the_readme_shows(mocks):
    """A component's type is part of every child's URN: another type is another resource to Pulumi, which would
    replace KAI's release, the GPU stack and every queue. README.md's tree names each with its type."""
    tree = re.findall(r"[├└]── (\S+)  \[(kaistack:index:\w+)\]", README.read_text())
    run_program(mocks, dev_raw())
    platform = named(mocks.resources, "kaistack")
    components = {(r.name, r.type) for r in mocks.resources if r.parent == platform.urn and not r.custom}
    assert components == set(tree[1:])
    assert tree[0] == ("kaistack", platform.type)


# --- KAI's release ------------------------------------------------------------------------------------------


def _valid_and_tolerates(toleration: dict[str, str], key: str, value: str, effect: str) -> bool:
    """Kubernetes' toleration fields and operators (k8s.io/api core/v1 types.go Toleration: key, operator, value,
    effect, tolerationSeconds; TolerationOperator Exists or Equal, empty meaning Equal) and its ToleratesTaint
    (core/v1 toleration.go)."""
    operator = toleration.get("operator", "")
    if set(toleration) - {"key", "operator", "value", "effect", "tolerationSeconds"}:
        return False
    if operator not in ("", "Equal", "Exists"):
        return False
    if toleration.get("key") != key or toleration.get("effect", effect) != effect:
        return False
    return operator == "Exists" or toleration.get("value", "") == value


def test_kai_tolerates_a_pool_taint_declared_without_a_value(mocks):
    """A taint without a value is registered with the empty value (the kind JoinConfiguration and EKS node group
    write none); KAI's pods must still tolerate it, or they never run where every worker is tainted.

    kai-scheduler/KAI-Scheduler@v0.17.0: deployments/kai-scheduler/templates/_helpers.tpl:86-89 writes
    global.tolerations to Config spec.global.tolerations, which the operator sets on every operand Deployment
    (pkg/operator/operands/common/common.go:168, DeploymentForKAIConfig); the chart also puts them on the operator
    itself (templates/services/operator.yaml:85-87) and its hook Jobs (hooks/pre/crd-upgrader.yaml:69-71,
    hooks/post/kai-config-deployer/job.yaml:45-47)."""
    raw = merged(base_raw(), gpu={"mode": "device-plugin"})
    raw["cluster"]["nodePools"] = [_gpu_pool(taints=[{"key": "dedicated", "effect": "NoExecute"}])]
    tolerations = _kai_values(mocks, raw)["global"]["tolerations"]
    assert [_valid_and_tolerates(t, "dedicated", "", "NoExecute") for t in tolerations] == [True]


def test_device_plugin_mode_without_a_runtime_class_gives_the_binder_none(mocks):
    """kai.runtimeClassName null turns the class off everywhere from KAI v0.16.0 (before it, the operator gives the
    reservation pods 'nvidia' whatever the chart says: KAI@v0.15.3 pkg/apis/kai/v1/binder/binder.go:259):
    binder.runtimeClassName unset is the chart's own behaviour (KAI@v0.17.0
    deployments/kai-scheduler/templates/_helpers.tpl:139-141 writes it only when set); a null there would reach
    the Config CR."""
    values = _kai_values(mocks, merged(base_raw(), gpu={"mode": "device-plugin"}, kai={"runtimeClassName": None}))
    assert "binder" not in values


def test_kai_v0_13_takes_a_null_runtime_class_as_the_empty_string_it_quotes(mocks):
    """The oldest chart that keeps an empty gpuPodRuntimeClassName (KAI@v0.13.0
    deployments/kai-scheduler/templates/kai-config.yaml:164, `| quote`), which admission reads as no injection
    (KAI@v0.13.0 cmd/admission/main.go:48-49); v0.12's `| default "nvidia"` is refused by the model."""
    values = _kai_values(mocks, merged(base_raw(), kai={"version": "v0.13.0", "runtimeClassName": None}))
    assert values["admission"] == {"gpuPodRuntimeClassName": ""}


def test_a_fractional_gpu_quota_reaches_kais_default_queues_unrounded(mocks):
    """The Queue CRD's gpu block is in GPUs, fractions allowed (kaistack.declaration.model.queues
    QueueResources); rounding 1.5 down would take half a GPU of quota from the queue."""
    kai = {"defaultQueues": {"childResources": {"gpu": {"quota": 1.5, "limit": 2.5, "overQuotaWeight": 0.5}}}}
    values = _kai_values(mocks, merged(base_raw(), kai=kai))
    assert values["defaultQueue"]["childResources"]["gpu"] == {"quota": 1.5, "limit": 2.5, "overQuotaWeight": 0.5}


def test_a_fractional_gpu_quota_reaches_a_declared_queue_unrounded(mocks):
    queue = {"name": "team", "resources": {"gpu": {"quota": 0.5, "limit": 1.5}}}
    run_program(mocks, merged(base_raw(), queues=[queue]))
    gpu = inputs(named(mocks.resources, "kaistack-queues-team"))["spec"]["resources"]["gpu"]
    assert (gpu["quota"], gpu["limit"]) == (0.5, 1.5)


def test_the_kai_release_waits_longer_than_the_providers_default(mocks):
    """pulumi/pulumi-kubernetes@v4.32.0 provider/pkg/provider/helm_release.go:63-64, 436-439: an unset timeout is
    300 s; KAI's release waits for its hook Jobs (crd-upgrader, kai-config-deployer) and every deployment."""
    run_program(mocks, base_raw())
    assert inputs(release(mocks.resources, "kai-scheduler/kai-scheduler"))["timeout"] > 300


# --- HAMi's isolator ----------------------------------------------------------------------------------------


def _isolator(mocks) -> dict[str, Any]:
    run_program(mocks, merged(base_raw(), gpu={"mode": "device-plugin"}, kai={"sharing": "isolated"}))
    return inputs(release(mocks.resources, "kai-resource-isolator"))


def test_the_isolator_is_installed_as_hamis_instructions_install_it(mocks):
    """KAI-Scheduler@v0.17.0 docs/gpu-sharing/hami/README.md:54-55: `helm install kai-resource-isolator ...
    --namespace kai-resource-isolator --create-namespace`; nothing else creates that namespace."""
    isolator = _isolator(mocks)
    assert (isolator["name"], isolator["namespace"]) == ("kai-resource-isolator", kai_api.ISOLATOR_NAMESPACE)
    assert isolator["createNamespace"] is True
    namespaces = [inputs(r)["metadata"]["name"] for r in of_type(mocks.resources, "kubernetes:core/v1:Namespace")]
    assert kai_api.ISOLATOR_NAMESPACE not in namespaces


def test_the_isolators_release_keeps_a_bounded_history(mocks):
    """pulumi/pulumi-kubernetes provider/pkg/provider/helm_release.go: an unset maxHistory keeps every revision."""
    assert _isolator(mocks)["maxHistory"] == versions.HELM_MAX_HISTORY


# --- the fake GPU operator ----------------------------------------------------------------------------------


def _fake_pools(mocks, *pools: dict[str, Any], fake: dict[str, Any] | None = None) -> dict[str, Any]:
    raw = merged(base_raw(), gpu={"mode": "fake", **({"fake": fake} if fake else {})})
    raw["cluster"]["nodePools"] = list(pools)
    run_program(mocks, raw)
    return inputs(release(mocks.resources, "fake-gpu-operator"))["values"]["topology"]["nodePools"]


def test_a_pools_own_gpu_product_and_memory_reach_its_fake_topology_pool(mocks):
    """run-ai/fake-gpu-operator@v0.2.0 deploy/fake-gpu-operator/values.yaml:195-206: each topology pool has its
    gpuProduct and gpuMemory; a pool that declares its own must not get gpu.fake's."""
    pools = _fake_pools(
        mocks,
        _gpu_pool(name="big", gpuProduct="NVIDIA-H100-80GB-HBM3", gpuMemoryMiB=81559),
        _gpu_pool(name="small"),
        fake={"gpuProduct": "Tesla-T4", "gpuMemoryMiB": 15360},
    )
    assert (pools["big"]["gpuProduct"], pools["big"]["gpuMemory"]) == ("NVIDIA-H100-80GB-HBM3", 81559)
    assert (pools["small"]["gpuProduct"], pools["small"]["gpuMemory"]) == ("Tesla-T4", 15360)


def test_a_cpu_pool_gets_no_fake_topology_pool(mocks):
    """Nodes of a pool missing from topology.nodePools get no fake GPUs."""
    pools = _fake_pools(mocks, _gpu_pool(), _gpu_pool(name="cpu", gpus=0))
    assert set(pools) == {"gpu"}


# --- the NVIDIA charts --------------------------------------------------------------------------------------


def _existing(gpu: dict[str, Any]) -> dict[str, Any]:
    raw = merged(base_raw(), gpu=gpu)
    raw["cluster"] = {"provider": "existing", "existing": {"context": "lab"}, "nodePools": [{"name": "gpu", "gpus": 1}]}
    return raw


def test_gpu_operator_on_an_existing_cluster_leaves_the_driver_off_when_asked(mocks):
    """gpuOperator.driver false: nodes whose driver is already installed keep it (NVIDIA/gpu-operator@v26.7.0
    deployments/gpu-operator/values.yaml driver.enabled)."""
    run_program(mocks, _existing({"mode": "gpu-operator", "gpuOperator": {"driver": False}}))
    assert inputs(release(mocks.resources, "gpu-operator"))["values"]["driver"] == {"enabled": False}


def test_a_gpu_taint_with_no_schedule_adds_no_toleration_the_chart_already_has(mocks):
    """NVIDIA/k8s-device-plugin@v0.20.0 deployments/helm/nvidia-device-plugin/values.yaml: the chart's own
    tolerations take nvidia.com/gpu with NoSchedule; kaistack adds only what they miss, so no values at all."""
    raw = merged(base_raw(), gpu={"mode": "device-plugin", "devicePlugin": {"gfd": False}})
    raw["cluster"]["nodePools"] = [_gpu_pool(taints=[{"key": "nvidia.com/gpu", "value": "true"}])]
    run_program(mocks, raw)
    assert "tolerations" not in inputs(release(mocks.resources, "nvidia-device-plugin"))["values"]


def test_a_taint_shared_by_two_pools_is_tolerated_once(mocks):
    raw = merged(base_raw(), gpu={"mode": "gpu-operator"})
    taint = {"key": "dedicated", "value": "ml", "effect": "NoExecute"}
    raw["cluster"]["nodePools"] = [_gpu_pool(name="a", taints=[taint]), _gpu_pool(name="b", taints=[taint])]
    run_program(mocks, raw)
    tolerations = inputs(release(mocks.resources, "gpu-operator"))["values"]["daemonsets"]["tolerations"]
    assert [t["key"] for t in tolerations].count("dedicated") == 1


def test_the_gpu_namespace_lets_privileged_pods_in_for_every_pod_security_mode(mocks):
    """Pod Security Admission reads pod-security.kubernetes.io/{enforce,audit,warn} (k8s.io/pod-security-admission
    api/constants.go); the GPU DaemonSets are privileged, so audit and warn must not flag them either."""
    run_program(mocks, merged(base_raw(), gpu={"mode": "device-plugin"}))
    labels = inputs(named(mocks.resources, "kaistack-gpu-namespace"))["metadata"]["labels"]
    modes = ("enforce", "audit", "warn")
    assert {mode: labels.get(f"pod-security.kubernetes.io/{mode}") for mode in modes} == dict.fromkeys(
        modes, "privileged"
    )


def test_mode_none_has_no_gpu_release():
    """Platform creates no GpuStack for it; asked anyway, the release arguments refuse rather than install nothing."""
    config = parse_config(_existing({"mode": "none"}))
    with pytest.raises(ValueError, match=r"gpu\.mode 'none' installs nothing"):
        release_args(config)


# --- the GPU stack's release --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["fake", "device-plugin", "gpu-operator"])
def test_the_gpu_release_waits_longer_than_the_providers_default(mocks, mode):
    """pulumi/pulumi-kubernetes@v4.32.0 provider/pkg/provider/helm_release.go:63-64, 436-439: an unset timeout is
    300 s; KAI must find the GPU DaemonSets running when it starts."""
    run_program(mocks, merged(base_raw(), gpu={"mode": mode}))
    assert inputs(named(mocks.resources, "kaistack-gpu-release"))["timeout"] > 300


def test_the_gpu_release_waits_for_its_privileged_namespace(mocks):
    """Installed before the namespace's pod-security labels exist, its privileged DaemonSets would be refused."""
    run_program(mocks, base_raw())
    gpu_release = named(mocks.resources, "kaistack-gpu-release")
    assert named(mocks.resources, "kaistack-gpu-namespace").urn in gpu_release.dependencies


# --- the queue tree output ----------------------------------------------------------------------------------


def test_the_queue_tree_output_describes_each_declared_queue(mocks):
    """The `queueTree` stack output: parent, children, leaf, priority and the blocks of every queue, and who
    creates it (the chart's default pair aside)."""
    org = {"name": "org", "priority": 120, "resources": {"gpu": {"quota": 4, "limit": 8, "overQuotaWeight": 2}}}
    team = {"name": "team", "parent": "org"}
    run_program(mocks, merged(base_raw(), queues=[org, team]))
    tree = {q["name"]: q for q in mocks.stack_outputs()["queueTree"]}
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    assert tree["org"] == {
        "name": "org",
        "parent": None,
        "children": ["team"],
        "leaf": False,
        "priority": 120,
        "resources": {"gpu": {"quota": 4, "limit": 8, "overQuotaWeight": 2}, "cpu": unlimited, "memory": unlimited},
        "createdBy": "kaistack",
    }
    assert (tree["team"]["parent"], tree["team"]["children"], tree["team"]["leaf"]) == ("org", [], True)


def test_the_fake_gpu_operator_is_released_as_kais_e2e_setup_releases_it(mocks):
    """KAI-Scheduler@v0.17.0 hack/setup-e2e-cluster.sh:113: `helm upgrade -i gpu-operator
    oci://ghcr.io/run-ai/fake-gpu-operator/fake-gpu-operator --namespace gpu-operator`."""
    run_program(mocks, base_raw())
    fake = inputs(release(mocks.resources, "fake-gpu-operator"))
    assert (fake["name"], fake["namespace"]) == ("gpu-operator", "gpu-operator")


def test_switching_between_the_fake_and_nvidia_operators_keeps_the_release_name():
    """The switch replaces the release because its chart changes (test_platform_dev), deleting first: under one name
    Helm never holds both charts' cluster-scoped objects at once."""
    names = []
    for mode in ("fake", "gpu-operator"):
        with MockSession(stack="dev") as session:
            run_program(session, merged(base_raw(), gpu={"mode": mode}))
            names.append(inputs(named(session.resources, "kaistack-gpu-release"))["name"])
    assert names[0] == names[1]


def test_the_device_plugin_release_is_named_after_its_chart(mocks):
    """An unnamed release would be auto-named with a random suffix; a renamed one is replaced."""
    run_program(mocks, merged(base_raw(), gpu={"mode": "device-plugin"}))
    plugin = inputs(release(mocks.resources, "nvidia-device-plugin"))
    assert plugin["name"] == plugin["chart"]


def test_device_plugin_pool_tolerations_keep_the_charts_own_first(mocks):
    """NVIDIA/k8s-device-plugin@v0.20.0 deployments/helm/nvidia-device-plugin/values.yaml:86-93: a `tolerations`
    value replaces the chart's list, so its two entries must come along."""
    raw = merged(base_raw(), gpu={"mode": "device-plugin"})
    raw["cluster"]["nodePools"] = [_gpu_pool(taints=[{"key": "dedicated", "value": "ml"}])]
    run_program(mocks, raw)
    chart = yaml.safe_load((SCHEMAS / "nvidia-device-plugin-values-0.20.0.yaml").read_text())["tolerations"]
    tolerations = inputs(release(mocks.resources, "nvidia-device-plugin"))["values"]["tolerations"]
    assert tolerations[: len(chart)] == chart


def test_the_time_slicing_file_has_a_version_the_device_plugin_reads(mocks):
    """NVIDIA/k8s-device-plugin@v0.20.0 api/config/v1/config.go:128-134: an empty version reads as v1, any other
    than v1 fails the plugin's start ("unknown version")."""
    raw = merged(base_raw(), gpu={"mode": "device-plugin", "devicePlugin": {"timeSlicing": {"replicas": 2}}})
    run_program(mocks, raw)
    config = inputs(release(mocks.resources, "nvidia-device-plugin"))["values"]["config"]
    document = yaml.safe_load(config["map"][config["default"]])
    assert document.get("version") in (None, "", "v1")


def test_the_nfd_workers_tolerations_are_kubernetes_tolerations(mocks):
    """Each has only Toleration's fields (k8s.io/api core/v1 types.go); an unknown one is dropped by the API
    server and the toleration widens to every effect."""
    raw = merged(base_raw(), gpu={"mode": "device-plugin", "devicePlugin": {"gfd": True}})
    raw["cluster"]["nodePools"] = [_gpu_pool(taints=[{"key": "nvidia.com/gpu", "value": "true"}])]
    run_program(mocks, raw)
    workers = inputs(release(mocks.resources, "nvidia-device-plugin"))["values"]["nfd"]["worker"]["tolerations"]
    fields = {"key", "operator", "value", "effect", "tolerationSeconds"}
    assert [set(t) - fields for t in workers] == [set()] * len(workers)
    assert all("effect" in t for t in workers)


def test_the_time_slicing_switches_reach_the_device_plugins_file(mocks):
    """NVIDIA/k8s-device-plugin@v0.20.0 api/config/v1/replicas.go:30-32: ReplicatedResources reads renameByDefault and
    failRequestsGreaterThanOne (a misspelt key is ignored, the switch left off)."""
    slicing = {"replicas": 2, "renameByDefault": True, "failRequestsGreaterThanOne": True}
    run_program(mocks, merged(base_raw(), gpu={"mode": "device-plugin", "devicePlugin": {"timeSlicing": slicing}}))
    config = inputs(release(mocks.resources, "nvidia-device-plugin"))["values"]["config"]
    sharing = yaml.safe_load(config["map"][config["default"]])["sharing"]["timeSlicing"]
    assert (sharing["renameByDefault"], sharing["failRequestsGreaterThanOne"]) == (True, True)
