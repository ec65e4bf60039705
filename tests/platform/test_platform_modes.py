"""Cluster providers, GPU modes, KAI versions/options and tenant exposures, through __main__.py."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
import yaml
from platform_testlib import COMMAND, PROVIDER, RELEASE, base_raw, inputs, merged, named, of_type, release, run_program
from pulumi.runtime.rpc import UNKNOWN

from components.tenant import _decode, with_server
from kaistack.declaration import versions
from kaistack.declaration.parse import ConfigError, parse_config
from kaistack.ops.mocks import MockSession, PlatformMocks, RecordingMonitor
from kaistack.ops.render import RenderError

ROOT = Path(__file__).resolve().parents[2]

EXISTING_KUBECONFIG = "apiVersion: v1\nkind: Config\nusers: [{name: admin, user: {token: s3cr3t-token}}]\n"


def existing(**cluster) -> dict:
    raw = base_raw()
    raw["cluster"] = {"provider": "existing", "nodePools": [{"name": "gpu", "gpus": 1}], **cluster}
    return raw


def gpu(mode: str, **settings) -> dict:
    return {"mode": mode, **settings}


def kind_values(mocks, raw: dict) -> dict:
    run_program(mocks, raw)
    return yaml.safe_load(inputs(named(mocks.resources, "kaistack-cluster-create"))["stdin"])


# --- clusters ---------------------------------------------------------------------------------------


def test_existing_cluster_with_kubeconfig_creates_no_cluster_and_keeps_it_secret(mocks):
    """No kind command (only `kaistack kai-ready`); the provider's kubeconfig comes from config and is a secret
    input."""
    run_program(mocks, existing(existing={"kubeconfig": EXISTING_KUBECONFIG}), secret=("cluster",))
    assert [c.name for c in of_type(mocks.resources, COMMAND)] == ["kaistack-kai-ready"]
    provider = named(mocks.resources, "kaistack-cluster-provider")
    assert inputs(provider)["kubeconfig"] == "[secret]"
    assert named(mocks.resources, "kaistack-cluster").type == "kaistack:index:ExistingCluster"


def test_existing_cluster_with_a_plaintext_kubeconfig_is_refused_before_any_resource(mocks):
    """Set without --secret it would sit in the stack file in the clear: refused under `pulumi up` too."""
    with pytest.raises(RenderError, match=r"cluster\.existing\.kubeconfig: written in plain text"):
        run_program(mocks, existing(existing={"kubeconfig": EXISTING_KUBECONFIG}))
    assert mocks.resources == []


def test_existing_cluster_with_context_uses_the_users_kubeconfig(mocks):
    """Provider(context=...) and no kubeconfig input; the export only selects that context."""
    program = run_program(mocks, existing(existing={"context": "lab-admin"}))
    assert inputs(named(mocks.resources, "kaistack-cluster-provider")) == {"context": "lab-admin"}
    exported = mocks.loop.run_until_complete(program["platform"].kubeconfig.future())
    assert yaml.safe_load(exported)["current-context"] == "lab-admin"
    assert mocks.stack_outputs()["kubeconfig"] == "[secret]"


def test_every_kubernetes_resource_uses_the_explicit_host_provider(mocks):
    """Nothing falls back to an ambient kubeconfig: all host objects name the cluster's provider."""
    run_program(mocks, merged(base_raw(), workloads=[{"name": "w", "kind": "Pod", "queue": "team", "image": "x"}]))
    host = named(mocks.resources, "kaistack-cluster-provider").urn
    kube = [r for r in mocks.resources if r.type.startswith("kubernetes:")]
    assert kube
    assert all(r.provider and r.provider.startswith(host + "::") for r in kube)


def test_kind_real_gpus_use_nvkind_with_device_mounts(mocks):
    """device-plugin on kind: nvkind creates the cluster; workers get /dev/null device mounts."""
    raw = base_raw()
    raw["cluster"]["nodePools"] = [{"name": "gpu", "count": 2, "gpus": 1, "gpuDevices": [0, 1]}]
    raw["gpu"] = gpu("device-plugin")
    config = kind_values(mocks, raw)
    workers = [n for n in config["nodes"] if n["role"] == "worker"]
    mounts = [w["extraMounts"] for w in workers]
    assert mounts == [
        [{"hostPath": "/dev/null", "containerPath": "/var/run/nvidia-container-devices/0"}],
        [{"hostPath": "/dev/null", "containerPath": "/var/run/nvidia-container-devices/1"}],
    ]
    assert all(w["labels"]["nvidia.com/gpu.present"] == "true" for w in workers)
    assert all("run.ai/simulated-gpu-node-pool" not in w["labels"] for w in workers)
    create = inputs(named(mocks.resources, "kaistack-cluster-create"))["create"]
    assert 'nvkind cluster create --name unit --config-template "$cfg"' in create


def test_kind_pool_taints_register_through_kubeadm(mocks):
    """Taints become a JoinConfiguration patch; KAI tolerates them in global.tolerations. kind applies a node's
    kubeadmConfigPatches to its own kubeadm config (kubernetes-sigs/kind@v0.31.0 pkg/apis/config/v1alpha4/types.go:131),
    and a patch without apiVersion matches by kind alone (pkg/internal/patch/resource.go:62-66)."""
    raw = base_raw()
    raw["cluster"]["nodePools"][0]["taints"] = [{"key": "nvidia.com/gpu", "value": "present"}]
    config = kind_values(mocks, raw)
    patch = yaml.safe_load(config["nodes"][1]["kubeadmConfigPatches"][0])
    assert patch == {
        "kind": "JoinConfiguration",
        "nodeRegistration": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule", "value": "present"}]},
    }
    kai = inputs(release(mocks.resources, "kai-scheduler/kai-scheduler"))["values"]
    assert kai["global"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "effect": "NoSchedule", "operator": "Equal", "value": "present"}
    ]


# --- GPU modes ---------------------------------------------------------------------------------------


def test_device_plugin_mode_installs_the_pinned_chart_with_gfd_and_runtime_class(mocks):
    """nvidia-device-plugin 0.20.0 from NVIDIA's repo in namespace nvidia.

    NVIDIA/k8s-device-plugin@v0.20.0:deployments/helm/nvidia-device-plugin/templates/daemonset-gfd.yml:16 renders
    the GFD DaemonSet only with gfd.enabled (values.yaml:110-111 default false; Chart.yaml:14 also gates the NFD
    subchart on it), and daemonset-device-plugin.yml:46-47 / daemonset-gfd.yml:46-47 write runtimeClassName into
    the plugin's and GFD's pod specs when set (values.yaml:101 default null)."""
    run_program(mocks, merged(base_raw(), gpu=gpu("device-plugin")))
    plugin = inputs(release(mocks.resources, "nvidia-device-plugin"))
    assert plugin["version"] == "0.20.0"
    assert plugin["repositoryOpts"] == {"repo": versions.DEVICE_PLUGIN_REPO}
    assert plugin["namespace"] == "nvidia"
    assert plugin["values"] == {
        "gfd": {"enabled": True},
        "runtimeClassName": "nvidia",
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}]}
                    ]
                }
            }
        },
    }


def test_on_kind_the_device_plugin_runs_only_where_kaistack_put_gpus(mocks):
    """NVIDIA/k8s-device-plugin@v0.20.0 values.yaml L64-85: the default affinity also takes NFD's
    pci-10de.present, which every kind node gets (they all read the host's PCI devices), so the plugin and
    GFD, both with runtimeClassName nvidia, would land on CPU workers nvkind gave no nvidia runtime. The
    affinity kaistack sets takes only nvidia.com/gpu.present, which its kind GPU workers carry."""
    run_program(mocks, merged(base_raw(), gpu=gpu("device-plugin")))
    values = inputs(release(mocks.resources, "nvidia-device-plugin"))["values"]
    [term] = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    [expression] = term["matchExpressions"]
    assert expression["key"] == "nvidia.com/gpu.present"
    kind_config = yaml.safe_load(inputs(named(mocks.resources, "kaistack-cluster-create"))["stdin"])
    gpu_workers = [n for n in kind_config["nodes"] if "extraMounts" in n]
    assert gpu_workers
    assert all(n["labels"]["nvidia.com/gpu.present"] == "true" for n in gpu_workers)


def test_on_an_existing_cluster_the_device_plugin_keeps_the_charts_affinity(mocks):
    """kaistack labels no node there, so nvidia.com/gpu.present may be missing: NFD's label must still count."""
    run_program(mocks, merged(existing(existing={"context": "lab"}), gpu=gpu("device-plugin")))
    assert "affinity" not in inputs(release(mocks.resources, "nvidia-device-plugin"))["values"]


def test_device_plugin_time_slicing_is_an_integrated_config_map(mocks):
    """config.map carries the time-slicing file and config.default selects it.

    NVIDIA/k8s-device-plugin@v0.20.0:deployments/helm/nvidia-device-plugin/templates/configmap.yml:1,10-12 writes
    each config.map entry into the `<fullname>-configs` ConfigMap (_helpers.tpl:237-245); daemonset-device-plugin.yml
    :81-82,117-118 pass config.default as DEFAULT_CONFIG to config-manager, which picks that file when the node has
    no nvidia.com/device-plugin.config label (cmd/config-manager/main.go:175-176, 359-366)."""
    raw = merged(base_raw(), gpu=gpu("device-plugin", devicePlugin={"timeSlicing": {"replicas": 4}}))
    run_program(mocks, raw)
    config = inputs(release(mocks.resources, "nvidia-device-plugin"))["values"]["config"]
    assert config["default"] == "time-slicing"
    sharing = yaml.safe_load(config["map"]["time-slicing"])["sharing"]["timeSlicing"]
    assert sharing["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4}]


def test_gpu_operator_on_kind_runs_in_nvkind_minimal_mode(mocks):
    """v26.7.0 from NGC; driver and toolkit off on kind whatever the defaults."""
    run_program(mocks, merged(base_raw(), gpu=gpu("gpu-operator")))
    operator = inputs(release(mocks.resources, "gpu-operator"))
    assert (operator["version"], operator["repositoryOpts"]) == ("v26.7.0", {"repo": versions.GPU_OPERATOR_REPO})
    assert operator["values"]["driver"] == {"enabled": False}
    assert operator["values"]["toolkit"] == {"enabled": False}
    assert operator["values"]["dcgmExporter"] == {"enabled": True}


def test_gpu_operator_operands_and_nfd_tolerate_the_gpu_pools_taints(mocks):
    """NVIDIA/gpu-operator@v26.7.0 deployments/gpu-operator/values.yaml L45-48 (daemonsets.tolerations: only
    nvidia.com/gpu) and L631-638 (node-feature-discovery.worker.tolerations): a pool tainted otherwise gets
    no operands. The chart defaults stay first."""
    raw = merged(base_raw(), gpu=gpu("gpu-operator"))
    raw["cluster"]["nodePools"][0]["taints"] = [{"key": "dedicated", "value": "ml", "effect": "NoExecute"}]
    run_program(mocks, raw)
    values = inputs(release(mocks.resources, "gpu-operator"))["values"]
    chart = yaml.safe_load((ROOT / "tests" / "data" / "schemas" / "gpu-operator-values-v26.7.0.yaml").read_text())
    pool = {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}
    assert values["daemonsets"]["tolerations"] == [*chart["daemonsets"]["tolerations"], pool]
    nfd = chart["node-feature-discovery"]["worker"]["tolerations"]
    assert values["node-feature-discovery"]["worker"]["tolerations"] == [*nfd, pool]


def test_a_no_execute_gpu_taint_is_tolerated_too(mocks):
    """The charts' own toleration of nvidia.com/gpu names the NoSchedule effect only."""
    raw = merged(base_raw(), gpu=gpu("device-plugin"))
    raw["cluster"]["nodePools"][0]["taints"] = [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoExecute"}]
    run_program(mocks, raw)
    values = inputs(release(mocks.resources, "nvidia-device-plugin"))["values"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"} in values["tolerations"]


def _tolerates(tolerations: list[dict[str, str]], key: str, value: str, effect: str) -> bool:
    """Kubernetes' Toleration.ToleratesTaint (k8s.io/api core/v1 toleration.go) for the fields used here."""
    return any(
        t.get("key") == key
        and t.get("effect", effect) == effect
        and (t.get("operator") == "Exists" or (t.get("operator", "Equal") == "Equal" and t.get("value") == value))
        for t in tolerations
    )


def test_device_plugin_gfd_node_feature_discovery_worker_tolerates_a_gpu_taint_of_any_value(mocks):
    """NVIDIA/k8s-device-plugin@v0.20.0 deployments/helm/nvidia-device-plugin/values.yaml L136-145: the NFD worker
    tolerates nvidia.com/gpu only with value "present", and it is the worker that turns GFD's features file
    (templates/daemonset-gfd.yml, output-dir) into the nvidia.com/gpu.* labels KAI reads. The chart's own two stay."""
    raw = merged(base_raw(), gpu=gpu("device-plugin", devicePlugin={"gfd": True}))
    raw["cluster"]["nodePools"][0]["taints"] = [{"key": "nvidia.com/gpu", "value": "true"}]
    run_program(mocks, raw)
    values = inputs(release(mocks.resources, "nvidia-device-plugin"))["values"]
    chart = yaml.safe_load(
        (ROOT / "tests" / "data" / "schemas" / "nvidia-device-plugin-values-0.20.0.yaml").read_text()
    )
    defaults = chart["nfd"]["worker"]["tolerations"]
    assert not _tolerates(defaults, "nvidia.com/gpu", "true", "NoSchedule")
    workers = values["nfd"]["worker"]["tolerations"]
    assert workers[: len(defaults)] == defaults
    assert _tolerates(workers, "nvidia.com/gpu", "true", "NoSchedule")


def test_device_plugin_nfd_worker_tolerates_a_pools_other_taints(mocks):
    raw = merged(base_raw(), gpu=gpu("device-plugin", devicePlugin={"gfd": True}))
    raw["cluster"]["nodePools"][0]["taints"] = [{"key": "dedicated", "value": "ml", "effect": "NoExecute"}]
    run_program(mocks, raw)
    workers = inputs(release(mocks.resources, "nvidia-device-plugin"))["values"]["nfd"]["worker"]["tolerations"]
    assert _tolerates(workers, "dedicated", "ml", "NoExecute")


@pytest.mark.parametrize(
    ("gfd", "taints"),
    [(True, []), (True, [{"key": "nvidia.com/gpu", "value": "present"}]), (False, [{"key": "nvidia.com/gpu"}])],
)
def test_device_plugin_keeps_the_nfd_workers_defaults_where_they_do(mocks, gfd, taints):
    """No GFD: no NFD subchart (Chart.yaml `condition: nfd.enabled,gfd.enabled`); or no taint they miss."""
    raw = merged(base_raw(), gpu=gpu("device-plugin", devicePlugin={"gfd": gfd}))
    raw["cluster"]["nodePools"][0]["taints"] = taints
    run_program(mocks, raw)
    assert "nfd" not in inputs(release(mocks.resources, "nvidia-device-plugin"))["values"]


def test_gpu_operator_keeps_its_default_tolerations_without_pool_taints(mocks):
    run_program(mocks, merged(base_raw(), gpu=gpu("gpu-operator")))
    values = inputs(release(mocks.resources, "gpu-operator"))["values"]
    assert "daemonsets" not in values
    assert "node-feature-discovery" not in values


def test_gpu_operator_on_an_existing_cluster_honours_the_toggles(mocks):
    """Driver on, toolkit and DCGM exporter off as configured; time-slicing via devicePlugin.config.

    NVIDIA/gpu-operator@v26.7.0:deployments/gpu-operator/templates/clusterpolicy.yaml:440-441 and 532-533 copy
    toolkit.enabled and dcgmExporter.enabled into the ClusterPolicy (rendered: clusterPolicy.deployCR, values.yaml
    :565-566); controllers/state_manager.go:1013-1014, 1021-1022 skip state-container-toolkit and
    state-dcgm-exporter when IsEnabled() is false, and an unset field reads as true
    (api/nvidia/v1/clusterpolicy_types.go:2230-2236, 2334-2340), so `false` must be written."""
    settings = {"toolkit": False, "dcgmExporter": False, "timeSlicing": {"replicas": 2}}
    run_program(mocks, merged(existing(existing={"context": "lab"}), gpu=gpu("gpu-operator", gpuOperator=settings)))
    values = inputs(release(mocks.resources, "gpu-operator"))["values"]
    assert values["driver"] == {"enabled": True}
    assert values["toolkit"] == {"enabled": False}
    assert values["dcgmExporter"] == {"enabled": False}
    assert values["devicePlugin"]["config"]["create"] is True
    assert values["devicePlugin"]["config"]["default"] == "time-slicing"


def test_gpu_mode_none_installs_no_gpu_stack(mocks):
    """Only KAI among the releases; KAI depends on no GPU release."""
    run_program(mocks, merged(existing(existing={"context": "lab"}), gpu=gpu("none")))
    assert [inputs(r)["name"] for r in of_type(mocks.resources, RELEASE)] == ["kai-scheduler"]
    assert not [r for r in mocks.resources if r.type == "kaistack:index:GpuStack"]


# --- KAI ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "chart", "runtime_key"),
    [
        # kai-scheduler/KAI-Scheduler@<tag>:.github/workflows/push-artifacts.yaml DOCKER_REGISTRY, per tag:
        ("v0.12.17", versions.KAI_LEGACY_CHART, "gpuPodRuntimeClassName"),  # ghcr.io/nvidia/kai-scheduler
        ("v0.12.18", versions.KAI_CHART, "gpuPodRuntimeClassName"),  # ghcr.io/kai-scheduler/kai-scheduler
        ("v0.13.0", versions.KAI_LEGACY_CHART, "gpuPodRuntimeClassName"),  # ghcr.io/nvidia/kai-scheduler
        ("v0.13.1", versions.KAI_CHART, "gpuPodRuntimeClassName"),  # ghcr.io/kai-scheduler/kai-scheduler
        ("v0.15.1", versions.KAI_CHART, "gpuPodRuntimeClassName"),
        ("v0.16.0", versions.KAI_CHART, "gpuFractionRuntimeClassName"),
    ],
)
def test_kai_chart_address_and_runtime_class_key_follow_the_version(mocks, version, chart, runtime_key):
    """The registry is each tag's own release workflow's; the runtime-class key was renamed in v0.16."""
    run_program(mocks, merged(base_raw(), kai={"version": version}))
    kai = inputs(release(mocks.resources, "kai-scheduler"))
    assert (kai["chart"], kai["version"]) == (chart, version)
    assert kai["values"]["admission"] == {runtime_key: "nvidia"}
    assert ("podgrouper" in kai["values"]) == (version >= "v0.16.0")


def test_kai_runtime_class_none_disables_the_injection(mocks):
    """runtimeClassName null -> "" (OpenShift with gpu-operator < v25.10).

    kai-scheduler/KAI-Scheduler@v0.17.0: deployments/kai-scheduler/templates/_helpers.tpl:254-255 quotes the key
    into Config spec.admission.gpuFractionRuntimeClassName whenever it is present, "" included; the operator
    defaults it to nvidia only when absent (pkg/apis/kai/v1/admission/admission.go:89-94) and passes it as
    --gpu-fraction-runtime-class-name (pkg/operator/operands/admission/resources.go:413-415); admission registers
    the runtimeenforcement plugin only for a non-empty name (cmd/admission/main.go:58-61,
    cmd/admission/app/options.go:36-39)."""
    run_program(mocks, merged(base_raw(), kai={"runtimeClassName": None}))
    values = inputs(release(mocks.resources, "kai-scheduler"))["values"]
    assert values["admission"] == {"gpuFractionRuntimeClassName": ""}
    assert "binder" not in values


@pytest.mark.parametrize("runtime_class", ["nvidia", "nvidia-cdi"])
def test_device_plugin_mode_gives_reservation_pods_the_runtime_class(mocks, runtime_class):
    """Since KAI v0.16.0 reservation pods get no runtime class unless binder.runtimeClassName is set
    (KAI@v0.17.0:deployments/kai-scheduler/templates/_helpers.tpl:139-141, no default in values.yaml);
    with the device plugin alone (nvkind) nvidia is not the default runtime, so it must be set."""
    run_program(mocks, merged(base_raw(), gpu=gpu("device-plugin"), kai={"runtimeClassName": runtime_class}))
    values = inputs(release(mocks.resources, "kai-scheduler"))["values"]
    assert values["binder"] == {"runtimeClassName": runtime_class}


def test_before_v0_16_a_runtime_class_not_named_nvidia_reaches_reservation_pods(mocks):
    """Before v0.16.0 the binder gave reservation pods `nvidia` by itself (KAI@v0.15.3:pkg/apis/kai/v1/binder/
    binder.go:259) and the chart already read binder.runtimeClassName (templates/_helpers.tpl:83-84): a class of
    another name reached only the admission plugin, and the reservation pod held a GPU without seeing it."""
    kai = {"version": "v0.15.3", "runtimeClassName": "nvidia-cdi"}
    run_program(mocks, merged(base_raw(), gpu=gpu("device-plugin"), kai=kai))
    values = inputs(release(mocks.resources, "kai-scheduler"))["values"]
    assert values["binder"] == {"runtimeClassName": "nvidia-cdi"}


def test_fake_gpus_need_no_runtime_class_for_reservation_pods(mocks):
    run_program(mocks, base_raw())
    assert "binder" not in inputs(release(mocks.resources, "kai-scheduler"))["values"]


def test_every_supported_kai_version_matches_its_release_workflow():
    """versions.KAI_CHARTS against the per-tag table read from each tag's push-artifacts.yaml."""
    table = yaml.safe_load((ROOT / "tests" / "data" / "kai" / "chart-registry.yaml").read_text())
    for tag, chart in versions.KAI_CHARTS.items():
        assert table[tag]["chart"] == chart, tag
    assert versions.KAI_VERSION in versions.KAI_CHARTS


@pytest.mark.parametrize("version", ["v0.17.1", "v0.18.0", "v0.12.8", "v0.11.0"])
def test_a_kai_version_not_checked_at_source_is_refused(version):
    from kaistack.declaration.model import KaiConfig

    with pytest.raises(ValueError, match=rf"{version} is not a KAI release kaistack has checked at source"):
        KaiConfig.model_validate({"version": version})


def test_kai_blocks_nvidia_visible_devices_when_asked(mocks):
    """KAI@v0.16.0+ global.blockNvidiaVisibleDevices -> Config spec.admission.blockNvidiaVisibleDevices
    (kai-scheduler/KAI-Scheduler@v0.17.0:deployments/kai-scheduler/templates/_helpers.tpl:247) ->
    --block-nvidia-visible-devices (@v0.17.0:pkg/operator/operands/admission/resources.go:405-407) -> the
    deviceaccess plugin (@v0.17.0:cmd/admission/main.go:54-56)."""
    run_program(mocks, merged(base_raw(), kai={"blockNvidiaVisibleDevices": True}))
    assert inputs(release(mocks.resources, "kai-scheduler"))["values"]["global"]["blockNvidiaVisibleDevices"] is True


def test_nvidia_visible_devices_are_not_blocked_by_default_without_tenants(mocks):
    """Without tenants it is opt-in: the plugin refuses running pods that set the variable on their next update."""
    run_program(mocks, base_raw())
    assert "blockNvidiaVisibleDevices" not in inputs(release(mocks.resources, "kai-scheduler"))["values"]["global"]


def _with_tenant(**kai):
    raw = merged(base_raw(), kai=kai) if kai else base_raw()
    raw["tenants"] = [{"name": "t", "queues": ["team"]}]
    return raw


def test_nvidia_visible_devices_are_blocked_by_default_where_tenants_exist(mocks):
    """A tenant's pod asking for no GPU, with a CUDA image (ENV NVIDIA_VISIBLE_DEVICES=all) or the variable set,
    would otherwise see every GPU of its node where the runtime reads it; KAI's binder relies on that very
    variable for shares (KAI@v0.17.0 pkg/binder/common/gpu_access.go)."""
    run_program(mocks, _with_tenant())
    assert inputs(release(mocks.resources, "kai-scheduler"))["values"]["global"]["blockNvidiaVisibleDevices"] is True


def test_a_stack_with_tenants_may_turn_the_block_off(mocks):
    run_program(mocks, _with_tenant(blockNvidiaVisibleDevices=False))
    assert "blockNvidiaVisibleDevices" not in inputs(release(mocks.resources, "kai-scheduler"))["values"]["global"]


def test_tenants_on_a_kai_without_the_plugin_are_not_blocked(mocks):
    run_program(mocks, _with_tenant(version="v0.15.0"))
    assert "blockNvidiaVisibleDevices" not in inputs(release(mocks.resources, "kai-scheduler"))["values"]["global"]


def test_kai_memory_isolation_enables_hamicore_and_installs_the_isolator(mocks):
    """binder.plugins.hamicore.enabled + HAMi's kai-resource-isolator after KAI.

    kai-scheduler/KAI-Scheduler@v0.17.0: deployments/kai-scheduler/templates/_helpers.tpl:154-157 copies
    binder.plugins whole into Config spec.binder.plugins; pkg/apis/kai/v1/binder/binder.go:151-165 lays
    `enabled: true` over hamicore's default (off, priority 50 after gpusharing's 100: :34-39, :201-204); the operator
    hands the binder the result as --plugins (pkg/operator/operands/binder/resources.go:237-242) and admission
    --hami-core-enabled (pkg/operator/operands/admission/resources.go:401-403, 424-433), which registers the hamicore
    admission plugin (cmd/admission/main.go:50-52)."""
    raw = merged(base_raw(), gpu=gpu("device-plugin"), kai={"sharing": "isolated"})
    run_program(mocks, raw)
    kai = release(mocks.resources, "kai-scheduler/kai-scheduler")
    assert inputs(kai)["values"]["binder"] == {"runtimeClassName": "nvidia", "plugins": {"hamicore": {"enabled": True}}}
    isolator = release(mocks.resources, "kai-resource-isolator")
    assert (inputs(isolator)["chart"], inputs(isolator)["version"]) == (
        versions.KAI_RESOURCE_ISOLATOR_CHART,
        versions.KAI_RESOURCE_ISOLATOR_VERSION,
    )
    assert kai.urn in isolator.dependencies


def test_with_memory_isolation_tenants_and_workloads_come_after_the_isolator(mocks):
    """HAMi's isolator injects its library into GPU-sharing pods at admission (KAI-Scheduler@v0.17.0
    docs/gpu-sharing/hami/README.md, Architecture step 3): a pod admitted before the webhook runs unisolated."""
    raw = merged(base_raw(), gpu=gpu("device-plugin"), kai={"sharing": "isolated"})
    raw["tenants"] = [{"name": "t", "queues": ["team"]}]
    raw["workloads"] = [{"name": "w", "kind": "Deployment", "queue": "team", "image": "i:1", "gpuFraction": 0.5}]
    run_program(mocks, raw)
    isolator = release(mocks.resources, "kai-resource-isolator")
    assert isolator.urn in named(mocks.resources, "kaistack-t-namespace").dependencies
    assert isolator.urn in named(mocks.resources, "kaistack-workloads-w").dependencies


def test_kai_gpu_sharing_off_placement_spread_and_no_default_queues(mocks):
    """The KAI switches reach the values unchanged."""
    kai = {"sharing": "off", "placementStrategy": "spread", "defaultQueues": {"create": False}}
    run_program(mocks, merged(base_raw(), kai=kai))
    values = inputs(release(mocks.resources, "kai-scheduler"))["values"]
    # kai-scheduler/KAI-Scheduler@v0.17.0:deployments/kai-scheduler/templates/_helpers.tpl:246 -> Config
    # spec.admission.gpuSharing -> --gpu-sharing-enabled only when true
    # (pkg/operator/operands/admission/resources.go:397-399) -> the gpusharing admission plugin refuses
    # gpu-fraction/gpu-memory pods when off (cmd/admission/main.go:47-48,
    # pkg/admission/webhook/v1alpha2/gpusharing/gpu_sharing.go:40-46).
    assert values["global"]["gpuSharing"] is False
    # @v0.17.0:deployments/kai-scheduler/templates/default-shard.yaml:22-26 -> SchedulingShard `default`
    # spec.placementStrategy.{gpu,cpu}; pkg/apis/kai/v1/schedulingshard_types.go:257-260 turns gpupack off and
    # gpuspread on for spread, :275-276 hands it to nodeplacement, :309-310 turns consolidation off.
    assert values["scheduler"] == {"placementStrategy": "spread"}
    # @v0.17.0:deployments/kai-scheduler/templates/default-queue.yaml:4: no default queues when false.
    assert values["defaultQueue"]["createDefaultQueue"] is False


def test_custom_queue_label_key_is_used_by_kai_and_by_workloads(mocks):
    """podgrouper.queueLabelKey and the workload labels agree.

    kai-scheduler/KAI-Scheduler@v0.17.0:deployments/kai-scheduler/templates/_helpers.tpl:108-110 writes it to Config
    spec.global.queueLabelKey; the operator passes it as --queue-label-key to the pod-grouper
    (pkg/operator/operands/pod_grouper/resources.go:72) and the scheduler (scheduler/resources_for_shard.go:363),
    which read a pod's queue from that label."""
    raw = merged(
        base_raw(),
        kai={"queueLabelKey": "example.com/queue"},
        workloads=[{"name": "w", "kind": "Pod", "queue": "team", "image": "x"}],
    )
    run_program(mocks, raw)
    values = inputs(release(mocks.resources, "kai-scheduler"))["values"]
    assert values["podgrouper"] == {"queueLabelKey": "example.com/queue"}
    labels = inputs(named(mocks.resources, "kaistack-workloads-w"))["metadata"]["labels"]
    assert labels["example.com/queue"] == "team"
    assert "kai.scheduler/queue" not in labels


def test_queue_optional_fields_reach_the_spec(mocks):
    """displayName, priority and the min-runtime durations are written when declared."""
    queue = {
        "name": "team",
        "displayName": "Team",
        "priority": 150,
        "preemptMinRuntime": "5m",
        "reclaimMinRuntime": "1h",
    }
    run_program(mocks, merged(base_raw(), queues=[queue]))
    spec = inputs(named(mocks.resources, "kaistack-queues-team"))["spec"]
    assert (spec["displayName"], spec["priority"]) == ("Team", 150)
    assert (spec["preemptMinRuntime"], spec["reclaimMinRuntime"]) == ("5m", "1h")


# --- tenants -----------------------------------------------------------------------------------------


def test_tenant_with_api_server_url_exports_that_server(mocks):
    """Given URL: exportKubeConfig.server and SAN, no NodePort service; the kind mapping is the fixed range."""
    tenant = {"name": "t1", "queues": ["team"], "apiServerUrl": "https://t1.example.com:443"}
    config = kind_values(mocks, merged(base_raw(), tenants=[tenant]))
    values = inputs(named(mocks.resources, "kaistack-t1-vcluster"))["values"]
    assert values["exportKubeConfig"] == {"server": "https://t1.example.com:443"}
    assert values["controlPlane"]["proxy"] == {"extraSANs": ["localhost", "t1.example.com"]}
    assert "service" not in values["controlPlane"]
    assert [m["hostPort"] for m in config["nodes"][0]["extraPortMappings"]] == list(range(31000, 31010))


def test_kind_tenant_port_base_moves_the_mapped_range_and_the_tenants_ports(mocks):
    """A second kind stack on the same host picks its own range: Docker binds each mapped port on the host."""
    raw = merged(base_raw(), tenants=[{"name": "t1", "queues": ["team"]}, {"name": "t2", "queues": ["team"]}])
    raw["cluster"]["kind"] = {"tenantPortBase": 30010, "tenantPorts": 4}
    config = kind_values(mocks, raw)
    assert [m["hostPort"] for m in config["nodes"][0]["extraPortMappings"]] == [30010, 30011, 30012, 30013]
    t2 = inputs(named(mocks.resources, "kaistack-t2-vcluster"))["values"]
    assert t2["controlPlane"]["service"]["httpsNodePort"] == 30011
    assert t2["exportKubeConfig"] == {"server": "https://127.0.0.1:30011"}


def _tenant_provider(raw):
    with MockSession(stack="dev") as session:
        run_program(session, raw)
        return inputs(named(session.resources, "kaistack-t1-provider"))


def test_tenant_provider_keeps_its_identity_when_the_tenants_api_address_changes():
    """pulumi-kubernetes replaces a provider whose kubeconfig server changes unless a clusterIdentifier is set and
    unchanged (pulumi/pulumi-kubernetes provider/pkg/provider/provider.go DiffConfig); a replaced provider
    re-creates every tenant object under its own name in the same vCluster, which fails with AlreadyExists."""
    tenant = {"name": "t1", "queues": ["team"]}
    before = _tenant_provider(merged(base_raw(), tenants=[tenant]))
    after = _tenant_provider(merged(base_raw(), tenants=[{**tenant, "apiServerUrl": "https://t1.example.com:443"}]))
    assert before["clusterIdentifier"] == after["clusterIdentifier"]
    namespace_uid = str(uuid.uuid5(uuid.NAMESPACE_URL, "kubernetes:core/v1:Namespace/kaistack-t1-namespace"))
    assert before["clusterIdentifier"] == f"vcluster/vcluster-t1/t1/{namespace_uid}"


def test_the_tenants_kubeconfig_is_read_only_once_its_namespace_exists(mocks):
    """The engine runs a `get` in previews too and fails on an object not yet there, unless the id is unknown
    (pulumi/pulumi pkg/resource/deploy/step.go ReadStep.Apply). The read's id waits for the vCluster release's status:
    unknown in the preview that installs or upgrades it (pulumi-kubernetes helm_release.go checkpointRelease), so
    that preview skips the read instead of failing."""
    raw = merged(base_raw(), tenants=[{"name": "t1", "queues": ["team"]}])
    run_program(mocks, raw)
    assert named(mocks.resources, "kaistack-t1-kubeconfig").resource_id == "vcluster-t1/vc-t1"
    with MockSession(stack="dev", preview=True) as first_preview:
        run_program(first_preview, raw)
        assert named(first_preview.resources, "kaistack-t1-kubeconfig").resource_id == UNKNOWN


class _RetryAfterFailedInstall(PlatformMocks):
    """The preview after a failed install: the release kept its id (pulumi-kubernetes sets it before Helm runs), its
    status is computed again, and vCluster never wrote the Secret."""

    def __init__(self) -> None:
        super().__init__(preview=True)

    def new_resource(self, args):
        resource_id, state = super().new_resource(args)
        return resource_id or f"{args.name}-id", state


def test_the_preview_after_a_failed_install_does_not_read_the_secret_vcluster_never_wrote():
    """Reading it would fail every later preview, and so the `pulumi up` that would fix the release."""
    session = MockSession(stack="dev", preview=True)
    session.mocks = _RetryAfterFailedInstall()
    session.monitor = RecordingMonitor(session.mocks)
    with session as retry:
        run_program(retry, merged(base_raw(), tenants=[{"name": "t1", "queues": ["team"]}]))
        assert named(retry.resources, "kaistack-t1-kubeconfig").resource_id == UNKNOWN


def test_a_kubeconfig_secret_without_its_config_key_is_an_error_not_the_ambient_kubeconfig():
    """pulumi-kubernetes reads an empty kubeconfig as "use the ambient one" ($KUBECONFIG, ~/.kube/config): the
    tenant's objects would go to whatever cluster the operator's current context names."""
    with pytest.raises(ValueError, match="has no `config` key"):
        _decode({"other": "eA=="})


def test_tenant_off_kind_without_url_is_a_load_balancer_read_back_for_the_provider(mocks):
    """LoadBalancer Service; the tenant provider's kubeconfig points at its address.

    loft-sh/vcluster@v0.36.1:chart/templates/service.yaml:25 writes controlPlane.service.spec into the vCluster
    Service's spec as is (chart default type ClusterIP)."""
    raw = merged(existing(existing={"context": "lab"}), tenants=[{"name": "t1", "queues": ["team"]}])
    program = run_program(mocks, raw)
    values = inputs(named(mocks.resources, "kaistack-t1-vcluster"))["values"]
    assert values["controlPlane"]["service"] == {"spec": {"type": "LoadBalancer"}}
    assert "exportKubeConfig" not in values
    assert named(mocks.resources, "kaistack-t1-service").resource_id == "vcluster-t1/t1"
    kubeconfig = mocks.loop.run_until_complete(program["platform"].vclusters["t1"].kubeconfig.future())
    assert (
        yaml.safe_load(kubeconfig)["clusters"][0]["cluster"]["server"] == "https://t1.vcluster-t1.elb.example.com:443"
    )


@pytest.mark.parametrize("version", sorted(versions.VCLUSTER_VERSIONS))
def test_the_charts_network_policy_lets_the_api_port_in_from_anywhere(version):
    """Off kind the Pulumi host reaches the vCluster API through its LoadBalancer, from outside the namespace.
    loft-sh/vcluster@v0.36.1 (and v0.37.0-rc.1):chart/templates/networkpolicy.yaml, the control plane's
    policy: an ingress rule with only `ports: [{port: 8443, protocol: TCP}]` and no `from`, i.e. any source."""
    template = (ROOT / f"tests/data/schemas/vcluster-networkpolicy-{version}.yaml").read_text()
    rule = re.search(
        r"# Allow external ingress to the vCluster API server\.\n(?:\s*#.*\n)*"
        r"\s*- ports:\n\s*- port: 8443\n\s*protocol: TCP\n\s*\n",
        template,
    )
    assert rule is not None


def test_tenant_with_network_policy_adds_no_rule_of_its_own(mocks):
    """The chart's rule above is enough: kaistack sets only `enabled`."""
    raw = merged(existing(existing={"context": "lab"}), tenants=[{"name": "t1", "queues": ["team"]}])
    run_program(mocks, raw)
    values = inputs(named(mocks.resources, "kaistack-t1-vcluster"))["values"]
    assert values["policies"]["networkPolicy"] == {"enabled": True}


def test_tenant_without_limit_range_but_with_the_quota_is_refused():
    """The quota charges limits.cpu; Kubernetes then refuses a container without a cpu limit (quota's pod
    evaluator: "must specify limits.cpu"), and the vCluster's own sets none (loft-sh/vcluster@v0.36.1
    chart/values.yaml controlPlane.statefulSet.resources: limits ephemeral-storage and memory only)."""
    tenant = {"name": "t1", "queues": ["team"], "isolation": {"limitRange": False}}
    with pytest.raises(ConfigError, match=r"tenants\[0\]\.isolation: .*limitRange: false needs resourceQuota"):
        parse_config(merged(base_raw(), tenants=[tenant]))


def test_tenant_options_sync_nodes_and_relax_isolation(mocks):
    """syncNodes -> sync.fromHost.nodes; disabled quota/limit range/netpol; no PSS.

    loft-sh/vcluster@v0.36.1: pkg/controllers/resources/nodes/register.go:20-24 syncs the host's real nodes only with
    sync.fromHost.nodes.enabled (else fake nodes), and chart/templates/clusterrole.yaml:27-31 grants the node reads.
    The policies' readers: chart/templates/resourcequota.yaml:1-2, limitrange.yaml:1-2 (an explicit "false" renders
    nothing even where the other is on; both default to "auto", chart/values.yaml:1150, 1180) and networkpolicy.yaml:1.
    """
    tenant = {
        "name": "t1",
        "namespace": "team-one",
        "queues": ["team"],
        "vcluster": {"syncNodes": True},
        "isolation": {
            "podSecurityStandard": None,
            "resourceQuota": {"enabled": False},
            "limitRange": False,
            "networkPolicy": False,
        },
    }
    run_program(mocks, merged(base_raw(), tenants=[tenant]))
    vcluster = inputs(named(mocks.resources, "kaistack-t1-vcluster"))
    assert vcluster["namespace"] == "team-one"
    assert vcluster["values"]["sync"]["fromHost"]["nodes"] == {"enabled": True}
    assert vcluster["values"]["policies"] == {
        "resourceQuota": {"enabled": False},
        "limitRange": {"enabled": False},
        "networkPolicy": {"enabled": False},
    }


def test_tenant_host_namespace_is_labelled_with_the_tenant(mocks):
    """Host-side admission can select a tenant's namespace by kaistack.io/tenant."""
    run_program(mocks, merged(base_raw(), tenants=[{"name": "t1", "queues": ["team"]}]))
    namespace = inputs(named(mocks.resources, "kaistack-t1-namespace"))
    assert namespace["metadata"] == {"name": "vcluster-t1", "labels": {"kaistack.io/tenant": "t1"}}
    assert named(mocks.resources, "kaistack-t1-provider").type == PROVIDER


# --- GPU pods get a working runtime on every real-GPU mode ------------------------------------------


def _pod_spec(mocks, name):
    obj = inputs(named(mocks.resources, name))
    return obj["spec"]["template"]["spec"] if "template" in obj["spec"] else obj["spec"]


def _gpu_workloads():
    return [
        {"name": "whole", "kind": "Deployment", "image": "x", "queue": "team", "gpu": 1},
        {"name": "half", "kind": "Deployment", "image": "x", "queue": "team", "gpuFraction": 0.5},
    ]


def test_kind_device_plugin_whole_gpu_pods_name_the_nvidia_runtime_class(mocks):
    """nvkind: nvidia is not the default runtime and the plugin's envvar strategy needs it; KAI injects the
    class into fractional pods only (KAI@v0.17.0 pkg/admission/webhook/v1alpha2/runtimeenforcement)."""
    run_program(mocks, merged(base_raw(), gpu=gpu("device-plugin"), workloads=_gpu_workloads()))
    assert _pod_spec(mocks, "kaistack-workloads-whole")["runtimeClassName"] == "nvidia"
    assert "runtimeClassName" not in _pod_spec(mocks, "kaistack-workloads-half")
    kai = inputs(release(mocks.resources, "kai-scheduler"))["values"]
    assert kai["admission"] == {"gpuFractionRuntimeClassName": "nvidia"}  # fractional pods: KAI injects it
    assert kai["binder"]["runtimeClassName"] == "nvidia"  # reservation pods


def test_kind_device_plugin_tenants_see_the_hosts_runtime_classes(mocks):
    """A tenant's whole-GPU pod names `nvidia`, which exists on the host only. The virtual API server runs
    the RuntimeClass admission plugin (on by default; loft-sh/vcluster@v0.36.1 pkg/k8s/k8s.go adds only
    NodeRestriction for private nodes), which refuses a pod naming a class it lacks ("pod rejected:
    RuntimeClass %q not found", kubernetes plugin/pkg/admission/runtimeclass/admission.go); vCluster syncs
    host RuntimeClasses only when asked (loft-sh/vcluster@v0.36.1 chart/values.yaml:244-246, enabled: false;
    pkg/controllers/resources/register.go:69; chart/templates/clusterrole.yaml:96-100 grants the read)."""
    tenant = {"name": "t1", "queues": ["team"]}
    work = [{"name": "w", "kind": "Deployment", "tenant": "t1", "queue": "team", "image": "x", "gpu": 1}]
    run_program(mocks, merged(base_raw(), gpu=gpu("device-plugin"), tenants=[tenant], workloads=work))
    assert _pod_spec(mocks, "kaistack-workloads-w")["runtimeClassName"] == "nvidia"
    values = inputs(named(mocks.resources, "kaistack-t1-vcluster"))["values"]
    assert values["sync"]["fromHost"]["runtimeClasses"] == {"enabled": True}


@pytest.mark.parametrize("mode", ["fake", "gpu-operator"])
def test_tenants_sync_no_runtime_classes_where_pods_name_none(mocks, mode):
    run_program(mocks, merged(base_raw(), gpu=gpu(mode), tenants=[{"name": "t1", "queues": ["team"]}]))
    values = inputs(named(mocks.resources, "kaistack-t1-vcluster"))["values"]
    assert "runtimeClasses" not in values["sync"]["fromHost"]


def test_gpu_operator_pods_rely_on_cdi_and_name_no_runtime_class(mocks):
    """GPU Operator >= v25.10 turns CDI on by default (NVIDIA/gpu-operator commit 67d2e125c, first in
    v25.10.0; the pin is v26.7.0): devices reach any pod without a runtime class."""
    run_program(mocks, merged(base_raw(), gpu=gpu("gpu-operator"), workloads=_gpu_workloads()))
    assert "runtimeClassName" not in _pod_spec(mocks, "kaistack-workloads-whole")
    assert "binder" not in inputs(release(mocks.resources, "kai-scheduler"))["values"]
    assert versions.GPU_OPERATOR_VERSION >= "v25.10.0"
    values = yaml.safe_load((ROOT / "tests" / "data" / "schemas" / "gpu-operator-values-v26.7.0.yaml").read_text())
    assert values["cdi"]["enabled"] is True


def test_a_load_balancer_tenants_kubeconfig_points_at_its_address():
    text = "apiVersion: v1\nclusters:\n- name: a\n  cluster: {server: https://localhost:8443}\nusers: [{name: u}]\n"
    document = yaml.safe_load(with_server(text, "https://lb.example.com:443"))
    assert document["clusters"][0]["cluster"]["server"] == "https://lb.example.com:443"
    assert document["users"] == [{"name": "u"}]


def test_a_malformed_tenant_kubeconfig_is_reported_by_line_without_its_text():
    text = "apiVersion: v1\nusers:\n- name: x\n  user:\n    client-key-data: KEYMATERIAL: oops\n"
    with pytest.raises(ValueError, match=r"not valid YAML at line \d+$") as caught:
        with_server(text, "https://lb:443")
    assert "KEYMATERIAL" not in str(caught.value)
