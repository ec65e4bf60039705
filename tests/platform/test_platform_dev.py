"""The dev stack (kind + fake GPUs) run through __main__.py under recording mocks."""

from __future__ import annotations

import asyncio

import pulumi
import pytest
from platform_testlib import (
    COMMAND,
    K8S_VERSIONS,
    MAIN,
    PROVIDER,
    QUEUE,
    dev_raw,
    inputs,
    named,
    of_type,
    release,
    run_program,
)

from components.gpu import fake_gpu_values
from kaistack.declaration import versions
from kaistack.declaration.parse import parse_config


@pytest.fixture
def dev(mocks):
    """Recorded resources of the dev stack."""
    run_program(mocks, dev_raw())
    return mocks.resources


def test_kind_node_image_is_digest_pinned_at_the_minor_new_eks_clusters_run():
    """kind v0.31.0 publishes kindest/node:v1.35.0 at this digest as its default node image
    (kubernetes-sigs/kind@v0.31.0:pkg/apis/config/defaults/image.go); KAI v0.17.0's own kind setup
    defaults to v1.35.0 (KAI-Scheduler@v0.17.0:hack/setup-e2e-cluster.sh). A laptop and a new EKS
    cluster run the same minor, and it is one the objects are validated against."""
    image, _, digest = versions.KIND_NODE_IMAGE.partition("@")
    tag = image.removeprefix("kindest/node:v")
    assert digest == "sha256:452d707d4862f52530247495d180205e029056831160e22870e37e3f6c1ac31f"
    assert tag == "1.35.0"
    assert tag.rsplit(".", 1)[0] == versions.EKS_KUBERNETES_VERSION
    assert tag in K8S_VERSIONS


def test_kind_cluster_command_creates_idempotently_and_prints_kubeconfig(dev):
    """The create script skips an existing cluster and ends with `kind get kubeconfig`."""
    create = inputs(named(dev, "kaistack-cluster-create"))["create"]
    assert 'clusters="$(kind get clusters)"' in create
    assert "grep -qx kaistack-dev" in create
    assert "kind create cluster --name kaistack-dev --config -" in create
    assert create.rstrip().endswith("kind get kubeconfig --name kaistack-dev")


def test_kind_cluster_command_is_replaced_delete_first_when_the_kind_config_changes(dev):
    """kind cannot change a cluster: the kind config is the trigger (pulumi-command replaces only on `triggers`,
    pulumi/pulumi-command@v1.2.1 provider/pkg/provider/common/inputs.go), the delete script (which names the
    cluster) replaces it too, so a rename is no update starting a second cluster, and the old one goes first."""
    command = named(dev, "kaistack-cluster-create")
    assert inputs(command)["triggers"] == [inputs(command)["stdin"]]
    assert "delete" in command.replace_on_changes
    assert command.delete_before_replace is True
    assert inputs(command)["delete"] == "kind delete cluster --name kaistack-dev"


def test_kind_config_has_the_declared_workers_with_fake_gpu_labels(dev):
    """2 GPU workers labelled for the fake operator (run.ai pool + DaemonSet selectors) and 1 CPU worker.

    The fake operator's device plugin and status exporter select on the two labels
    (run-ai/fake-gpu-operator@v0.2.0 deploy/fake-gpu-operator/templates/device-plugin/daemonset.yml:17,
    templates/status-exporter/daemonset.yaml:30); kind gives a node's `labels` to kubelet
    (kubernetes-sigs/kind@v0.31.0 pkg/apis/config/v1alpha4/types.go:108)."""
    import yaml

    config = yaml.safe_load(inputs(named(dev, "kaistack-cluster-create"))["stdin"])
    workers = [n for n in config["nodes"] if n["role"] == "worker"]
    gpu = [w for w in workers if w["labels"].get("run.ai/simulated-gpu-node-pool") == "gpu"]
    assert len(gpu) == 2
    assert all(w["labels"]["nvidia.com/gpu.deploy.device-plugin"] == "true" for w in gpu)
    assert all(w["labels"]["nvidia.com/gpu.deploy.dcgm-exporter"] == "true" for w in gpu)
    assert [w["labels"] for w in workers if w not in gpu] == [{"kaistack.io/node-pool": "cpu"}]
    assert {n["image"] for n in config["nodes"]} == {versions.KIND_NODE_IMAGE}


def test_kind_config_maps_the_tenant_node_port_to_localhost(dev):
    """team-a's vCluster API NodePort 31000 is reachable on 127.0.0.1, in the range mapped once (31000-31009)
    (kubernetes-sigs/kind@v0.31.0 pkg/apis/config/v1alpha4/types.go:119, 286: extraPortMappings, listenAddress)."""
    import yaml

    config = yaml.safe_load(inputs(named(dev, "kaistack-cluster-create"))["stdin"])
    control_plane = config["nodes"][0]
    assert control_plane["role"] == "control-plane"
    assert control_plane["extraPortMappings"] == [
        {"containerPort": p, "hostPort": p, "listenAddress": "127.0.0.1", "protocol": "TCP"}
        for p in range(31000, 31010)
    ]


def test_adding_a_tenant_leaves_the_kind_cluster_inputs_identical():
    """The kind cluster (a local Command whose create/stdin change replaces it) does not see tenants."""
    from platform_testlib import PROJECT_DIR, dev_raw

    from kaistack.ops.render import render_program

    def cluster(raw):
        rendered = render_program(PROJECT_DIR / "__main__.py", "dev", raw)
        return {r.name: r.inputs for r in rendered.resources if r.type.startswith("command:local:")}

    before = dev_raw()
    after = dev_raw()
    after["tenants"] = [*after["tenants"], {"name": "team-b", "queues": ["team-a"]}]
    assert cluster(after) == cluster(before)
    assert cluster(before)


def test_host_provider_uses_the_kind_kubeconfig_as_a_secret(dev):
    """The Kubernetes provider's kubeconfig input is the command's stdout, marked secret."""
    provider = named(dev, "kaistack-cluster-provider")
    assert provider.type == PROVIDER
    assert inputs(provider)["kubeconfig"] == "[secret]"


def test_fake_gpu_operator_release_has_one_topology_pool_per_gpu_pool(dev):
    """Pinned OCI chart 0.2.0; pools from the declared GPU pools; KAI's reservation namespace.

    run-ai/fake-gpu-operator@v0.2.0: deploy/fake-gpu-operator/templates/topology-cm.yml:1-9 writes `topology` whole
    into ConfigMap topology (topologyConfigMap.enabled, values.yaml:144-145), whose nodePoolLabelKey
    (internal/common/topology/types.go:9, normalize.go:13-15) is the label the status updater takes for a fake-GPU
    node (internal/status-updater/controllers/node/controller.go:97, 167-169). environment.resourceReservationNamespace
    becomes RESOURCE_RESERVATION_NAMESPACE (templates/status-updater/deployment.yaml:37-38,
    templates/status-exporter/_helpers.tpl:43-44), the namespace whose pods count as GPU reservation pods
    (internal/status-updater/util/util.go:35-37, handlers/pod/shared_gpu_pod_handler.go:154-156).
    statusUpdater.disableNodeLabeling becomes DISABLE_NODE_LABELING (deployment.yaml:41-42; read at
    internal/status-updater/app.go:76), which skips labelNode/unlabelNode (handlers/node/handler.go:43-46, 64-67)."""
    fake = inputs(release(dev, "fake-gpu-operator"))
    assert fake["chart"] == versions.FAKE_GPU_OPERATOR_CHART
    assert fake["version"] == "0.2.0"
    assert fake["namespace"] == "gpu-operator"
    assert fake["values"] == {
        "topology": {
            "nodePools": {"gpu": {"gpuProduct": "Tesla-K80", "gpuCount": 2, "gpuMemory": 11441}},
            "nodePoolLabelKey": "run.ai/simulated-gpu-node-pool",
        },
        "environment": {"resourceReservationNamespace": "kai-resource-reservation"},
        "statusUpdater": {"disableNodeLabeling": True},
    }


def test_fake_gpu_operator_values_remove_the_charts_own_default_pool():
    """The chart declares a `default` pool (run-ai/fake-gpu-operator@v0.2.0
    deploy/fake-gpu-operator/values.yaml:201-205) and Helm merges maps, so only a null removes it
    (helm@v3.21.4 pkg/chartutil/coalesce.go:302-308)."""
    pools = fake_gpu_values(parse_config(dev_raw(), source="test"))["topology"]["nodePools"]
    assert pools["default"] is None
    assert set(pools) == {"gpu", "default"}


def test_fake_gpu_operator_values_keep_a_declared_pool_named_default():
    raw = dev_raw()
    gpu_pool = next(p for p in raw["cluster"]["nodePools"] if p.get("gpus"))
    gpu_pool["name"] = "default"
    pools = fake_gpu_values(parse_config(raw, source="test"))["topology"]["nodePools"]
    assert pools == {"default": {"gpuProduct": "Tesla-K80", "gpuCount": gpu_pool["gpus"], "gpuMemory": 11441}}


def test_a_null_chart_value_reaches_the_engine():
    """Pulumi's mocks drop nulls when they read inputs back, so the removal above is checked where the SDK
    serializes a resource's inputs for the engine: a nested None goes out as a protobuf null, which
    pulumi-kubernetes keeps for Helm (pulumi/pulumi-kubernetes@v4.32.0 provider/pkg/provider/helm_release.go:350-353,
    SkipNulls: false)."""
    from google.protobuf import struct_pb2
    from pulumi.runtime import rpc

    values = {"topology": {"nodePools": {"default": None}}}
    sent = asyncio.run(rpc.serialize_properties({"values": values}, {}))
    pools = sent["values"]["topology"]["nodePools"]
    assert "default" in pools
    assert pools.fields["default"].WhichOneof("kind") == "null_value"
    assert pools.fields["default"].null_value == struct_pb2.NULL_VALUE


def test_gpu_operator_namespace_is_privileged_for_pod_security(dev):
    """The fake operator's DaemonSets need privileged PSA in its namespace."""
    namespace = inputs(named(dev, "kaistack-gpu-namespace"))
    assert namespace["metadata"]["name"] == "gpu-operator"
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"


def test_kai_release_is_the_pinned_oci_chart_with_gpu_sharing(dev):
    """KAI v0.17.0 from the kai-scheduler registry, chart version with the 'v', gpuSharing on."""
    kai = inputs(release(dev, "kai-scheduler/kai-scheduler"))
    assert kai["chart"] == "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler"
    assert kai["version"] == "v0.17.0"
    assert kai["namespace"] == "kai-scheduler"
    assert kai["createNamespace"] is True
    assert kai["values"]["global"]["gpuSharing"] is True
    assert kai["values"]["admission"] == {"gpuFractionRuntimeClassName": "nvidia"}
    assert kai["values"]["scheduler"] == {"placementStrategy": "binpack"}
    assert kai["values"]["podgrouper"] == {"queueLabelKey": "kai.scheduler/queue"}
    assert "binder" not in kai["values"]


def test_kai_default_queues_come_from_the_model(dev):
    """The chart's own default queues get the model's (quota 0) blocks, written out in full.

    kai-scheduler/KAI-Scheduler@v0.17.0:deployments/kai-scheduler/templates/default-queue.yaml:4-48 reads every
    defaultQueue.* key kaistack sets (createDefaultQueue :4, parentName :8 and :35, childName :30, the
    parent/childResources blocks :13-25, :36-48), at install only (`.Release.IsInstall`) and with
    helm.sh/resource-policy: keep (:10, :32)."""
    default_queue = inputs(release(dev, "kai-scheduler/kai-scheduler"))["values"]["defaultQueue"]
    zero = {"quota": 0, "limit": -1, "overQuotaWeight": 1}
    assert default_queue == {
        "createDefaultQueue": True,
        "parentName": "default-parent-queue",
        "childName": "default-queue",
        "parentResources": {"gpu": zero, "cpu": zero, "memory": zero},
        "childResources": {"gpu": zero, "cpu": zero, "memory": zero},
    }


def test_kai_puts_gpu_reservation_pods_where_the_fake_gpu_operator_looks_for_them(dev):
    """kai-scheduler/KAI-Scheduler@v0.17.0: deployments/kai-scheduler/templates/_helpers.tpl:129-132 writes
    global.resourceReservation.namespace to Config spec.binder.resourceReservation.namespace; the operator passes it
    to the binder as --resource-reservation-namespace (pkg/operator/operands/binder/resources.go:212-213), which
    creates the GPU reservation pods there (cmd/binder/app/app.go:110-112); the chart creates that namespace
    (templates/services/resourcereservation-namespace.yaml:4-10). The fake GPU operator counts as reservation pods
    only those in its environment.resourceReservationNamespace (run-ai/fake-gpu-operator@v0.2.0:
    internal/status-updater/util/util.go:35-37), whose chart default is Run:ai's runai-reservation
    (deploy/fake-gpu-operator/values.yaml:4)."""
    kai = inputs(release(dev, "kai-scheduler/kai-scheduler"))["values"]["global"]
    fake = inputs(release(dev, "fake-gpu-operator"))["values"]["environment"]
    assert kai["resourceReservation"] == {"namespace": "kai-resource-reservation"}
    assert fake["resourceReservationNamespace"] == kai["resourceReservation"]["namespace"]


def test_kai_release_waits_for_the_fake_gpu_operator(dev):
    """KAI's operator must see run.ai/fake.gpu nodes when it starts (install order of KAI's e2e)."""
    assert release(dev, "fake-gpu-operator").urn in release(dev, "kai-scheduler/kai-scheduler").dependencies


def test_declared_queues_are_created_but_not_the_chart_defaults(dev):
    """default, test and team-a are Queue objects; KAI's default pair is left to the chart."""
    assert sorted(inputs(q)["metadata"]["name"] for q in of_type(dev, QUEUE)) == ["default", "team-a", "test"]


def test_queue_specs_write_every_resource_block_in_full(dev):
    """The test queue: parent, priority and all three blocks with quota, limit and weight."""
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    assert inputs(named(dev, "kaistack-queues-test"))["spec"] == {
        "parentQueue": "default",
        "priority": 100,
        "resources": {"gpu": unlimited, "cpu": unlimited, "memory": unlimited},
    }
    team = inputs(named(dev, "kaistack-queues-team-a"))["spec"]["resources"]["gpu"]
    assert team == {"quota": 2, "limit": 2, "overQuotaWeight": 1}


def test_child_queues_depend_on_their_parent_and_on_kais_webhooks_answering(dev):
    """Parents first (KAI drops orphans), and after `kaistack kai-ready`, which runs after the release that installs
    the Queue CRD: the queue webhook fails closed (KAI@v0.17.0 pkg/operator/operands/queue_controller/
    resources.go:196-221) and answers only some time after the release is ready."""
    parent = named(dev, "kaistack-queues-default")
    kai = release(dev, "kai-scheduler/kai-scheduler")
    ready = named(dev, "kaistack-kai-ready")
    for child in ("kaistack-queues-test", "kaistack-queues-team-a"):
        assert parent.urn in named(dev, child).dependencies
    assert all(ready.urn in q.dependencies for q in of_type(dev, QUEUE))
    assert kai.urn in ready.dependencies


def test_vcluster_release_keeps_kai_on_the_host(dev):
    """setOwner false, both virtual schedulers off, host priority classes synced.

    loft-sh/vcluster@v0.36.1: chart/templates/config-secret.yaml:17 hands all values to the syncer as config.yaml.
    setOwner: pkg/setup/config/config.go:200-202 leaves translate.Owner unset when false, so synced objects get no
    ownerReference (pkg/util/translate/translate.go:185-188). Schedulers: config/config.go:954-956 takes either
    switch as a virtual scheduler, with which pod sync waits for a virtual nodeName
    (pkg/controllers/resources/pods/syncer.go:245-249) and the syncer starts its own kube-scheduler
    (pkg/k8s/k8s.go:226). priorityClasses: without fromHost (or toHost) sync the pod translator clears
    spec.priorityClassName and spec.priority (pkg/controllers/resources/pods/translate/translator.go:235, 246-249);
    with it the host classes are synced in (pkg/controllers/resources/register.go:72)."""
    vcluster = inputs(named(dev, "kaistack-team-a-vcluster"))
    assert vcluster["chart"] == "vcluster"
    assert vcluster["version"] == versions.VCLUSTER_VERSION
    assert vcluster["repositoryOpts"] == {"repo": "https://charts.loft.sh"}
    assert vcluster["namespace"] == "vcluster-team-a"
    values = vcluster["values"]
    assert values["experimental"] == {"syncSettings": {"setOwner": False}}
    assert values["controlPlane"]["advanced"] == {"virtualScheduler": {"enabled": False}}
    assert values["controlPlane"]["distro"]["k8s"]["scheduler"] == {"enabled": False}
    assert values["sync"] == {"fromHost": {"priorityClasses": {"enabled": True}}}


def test_vcluster_is_exposed_on_its_node_port_for_the_pulumi_host(dev):
    """NodePort 31000, certificate SANs and exported kubeconfig server on 127.0.0.1.

    loft-sh/vcluster@v0.36.1: chart/templates/service.yaml:25 writes controlPlane.service.spec (type) into the
    Service and :31 httpsNodePort as the https port's nodePort; pkg/server/cert/cert.go:161 adds
    controlPlane.proxy.extraSANs to the API server certificate; pkg/setup/controllers.go:228-240 writes
    exportKubeConfig.server into the kubeconfig exported to Secret vc-<name> (:285-291, :325)."""
    values = inputs(named(dev, "kaistack-team-a-vcluster"))["values"]
    assert values["controlPlane"]["service"] == {"spec": {"type": "NodePort"}, "httpsNodePort": 31000}
    assert values["controlPlane"]["proxy"] == {"extraSANs": ["127.0.0.1", "localhost"]}
    assert values["exportKubeConfig"] == {"server": "https://127.0.0.1:31000"}


def test_vcluster_isolation_policies_allow_its_own_node_port(dev):
    """PSS baseline, quota + limit range + network policy; the quota leaves room for both NodePorts.

    loft-sh/vcluster@v0.36.1: a non-empty policies.podSecurityStandard registers the pod security controller
    (pkg/controllers/register.go:39-45), which labels every virtual namespace pod-security.kubernetes.io/enforce and
    warn with it (pkg/controllers/podsecurity/podsecurity.go:39-43). resourceQuota.enabled false: no chart quota
    (chart/templates/resourcequota.yaml:2); limitRange.enabled true renders the LimitRange (limitrange.yaml:1-2);
    networkPolicy.enabled renders networkpolicy.yaml (:1)."""
    policies = inputs(named(dev, "kaistack-team-a-vcluster"))["values"]["policies"]
    assert policies["podSecurityStandard"] == "baseline"
    assert policies["resourceQuota"] == {"enabled": False}  # kaistack's own object, not the chart's
    quota = inputs(named(dev, "kaistack-team-a-quota"))
    assert quota["metadata"]["namespace"] == "vcluster-team-a"
    assert quota["spec"]["hard"]["services.nodeports"] == "2"
    # There before the vCluster's pods, which count in it.
    assert named(dev, "kaistack-team-a-quota").urn in named(dev, "kaistack-team-a-vcluster").dependencies
    assert policies["limitRange"] == {"enabled": True}
    assert policies["networkPolicy"]["enabled"] is True


def test_tenant_provider_reads_the_vcluster_kubeconfig_secret(dev):
    """Secret vc-team-a is read (after the release) and feeds the tenant provider as a secret."""
    secret = named(dev, "kaistack-team-a-kubeconfig")
    assert secret.resource_id == "vcluster-team-a/vc-team-a"
    assert named(dev, "kaistack-team-a-vcluster").urn in secret.dependencies
    assert inputs(named(dev, "kaistack-team-a-provider"))["kubeconfig"] == "[secret]"


def test_tenant_workloads_use_the_tenant_provider_and_host_workloads_the_host_provider(dev):
    """Pods of team-a go through its vCluster; the vLLM deployments to the host cluster."""
    tenant = named(dev, "kaistack-team-a-provider").urn
    host = named(dev, "kaistack-cluster-provider").urn
    for name in ("cpu-only-pod", "gpu-pod", "gpu-sharing"):
        assert named(dev, f"kaistack-workloads-{name}").provider.startswith(tenant + "::")
    for name in ("vllm-test-07", "vllm-test-02"):
        assert named(dev, f"kaistack-workloads-{name}").provider.startswith(host + "::")


def test_gpu_pod_requests_one_whole_gpu_with_kai_scheduling(dev):
    """schedulerName, queue + tenant labels, nvidia.com/gpu limit, GPU toleration."""
    pod = inputs(named(dev, "kaistack-workloads-gpu-pod"))
    assert pod["metadata"]["labels"] == {
        "app": "gpu-pod",
        "kai.scheduler/queue": "team-a",
        "kaistack.io/tenant": "team-a",
    }
    spec = pod["spec"]
    assert spec["schedulerName"] == "kai-scheduler"
    assert spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_cpu_only_pod_is_the_field_guide_sample(dev):
    """ubuntu sleep infinity with 100m / 250M and no GPU resource or toleration."""
    pod = inputs(named(dev, "kaistack-workloads-cpu-only-pod"))
    container = pod["spec"]["containers"][0]
    assert container["args"] == ["sleep", "infinity"]
    assert container["resources"]["requests"] == {"cpu": "100m", "memory": "250M"}
    assert "tolerations" not in pod["spec"]


def test_gpu_sharing_pod_uses_the_fraction_annotation_and_no_gpu_limit(dev):
    """A 0.5 share is an annotation; KAI forbids nvidia.com/gpu next to it."""
    pod = inputs(named(dev, "kaistack-workloads-gpu-sharing"))
    assert pod["metadata"]["annotations"] == {"gpu-fraction": "0.5"}
    assert "nvidia.com/gpu" not in pod["spec"]["containers"][0]["resources"]["limits"]


def test_vllm_deployments_share_a_gpu_by_fraction_with_matching_utilization(dev):
    """0.7 and 0.2 fractions on the pod template, queue label on template and Deployment."""
    for name, fraction in (("vllm-test-07", "0.7"), ("vllm-test-02", "0.2")):
        deployment = inputs(named(dev, f"kaistack-workloads-{name}"))
        template = deployment["spec"]["template"]
        assert deployment["metadata"]["namespace"] == "ai-workloads"
        assert deployment["metadata"]["labels"]["kai.scheduler/queue"] == "test"
        assert template["metadata"]["labels"]["kai.scheduler/queue"] == "test"
        assert template["metadata"]["annotations"] == {"gpu-fraction": fraction}
        assert template["spec"]["schedulerName"] == "kai-scheduler"
        assert f"--gpu-memory-utilization={fraction}" in template["spec"]["containers"][0]["args"]


def test_host_workload_namespace_is_created_before_the_deployments(dev):
    """ai-workloads is a Namespace resource the Deployments depend on."""
    namespace = named(dev, "kaistack-workloads-ns-ai-workloads")
    assert inputs(namespace)["metadata"] == {"name": "ai-workloads"}
    assert namespace.urn in named(dev, "kaistack-workloads-vllm-test-07").dependencies


def test_workloads_wait_for_kais_webhooks_and_their_queues(dev):
    """Pods created before KAI's admission webhook answers would be refused (it fails closed,
    KAI@v0.17.0 pkg/operator/operands/admission/resources.go:228-268)."""
    ready = named(dev, "kaistack-kai-ready").urn
    queue = named(dev, "kaistack-queues-test").urn
    assert {ready, queue} <= set(named(dev, "kaistack-workloads-vllm-test-02").dependencies)


def test_platform_props_carry_the_summary_the_stack_policies_read(dev):
    """nodePools, kai and tenants as documented in docs/architecture.md."""
    props = inputs(named(dev, "kaistack"))
    assert [p["name"] for p in props["nodePools"]] == ["gpu", "cpu"]
    assert props["nodePools"][0]["gpus"] == 2
    assert props["kai"]["gpuSharing"] is True
    assert props["kai"]["defaultQueues"]["childName"] == "default-queue"
    assert props["tenants"] == [{"name": "team-a", "namespace": "vcluster-team-a", "queues": ["team-a"]}]


def test_command_hides_the_kubeconfig(dev):
    """logging none, stdout an additional secret output, no previous output in the environment."""
    command = named(dev, "kaistack-cluster-create")
    assert command.type == COMMAND
    assert inputs(command)["logging"] == "none"
    assert inputs(command)["addPreviousOutputInEnv"] is False
    assert command.additional_secret_outputs == ("stdout",)


@pulumi.runtime.test
def test_exported_kubeconfig_is_a_secret(mocks):
    """The stack output `kubeconfig` is a Pulumi secret (pulumi.md §4 is_secret pattern)."""
    import runpy

    mocks.set_config(dev_raw())
    program = runpy.run_path(str(MAIN), run_name="__main__")

    async def check() -> None:
        assert await program["platform"].kubeconfig.is_secret()
        assert await program["platform"].vclusters["team-a"].kubeconfig.is_secret()

    return pulumi.Output.from_input(check())


def test_stack_outputs_list_kai_queues_and_tenant_connect_commands(mocks):
    """Exports: kubeconfig (masked), KAI namespace/version, the queue tree, tenants."""
    run_program(mocks, dev_raw())
    outputs = mocks.stack_outputs()
    assert outputs["kubeconfig"] == "[secret]"
    assert (outputs["kaiNamespace"], outputs["kaiVersion"]) == ("kai-scheduler", "v0.17.0")
    tree = {q["name"]: q for q in outputs["queueTree"]}
    assert tree["default-queue"]["createdBy"] == "kai-chart"
    assert tree["default"]["children"] == ["test", "team-a"]
    assert tree["test"]["leaf"] is True
    assert outputs["tenants"][0]["connectCommand"] == "vcluster connect team-a -n vcluster-team-a"
    assert outputs["tenants"][0]["kubeconfigSecret"] == "vc-team-a"
    assert outputs["tenants"][0]["queues"] == ["team-a"]


def test_releases_that_own_cluster_scoped_objects_or_a_node_port_are_replaced_delete_first(dev):
    """A new namespace (or release name) replaces a Helm release (pulumi/pulumi-kubernetes
    provider/pkg/provider/helm_release.go forceNewFields ".name", ".namespace", DeleteBeforeReplace false): created
    beside the old one, KAI's and the GPU operator's would own the same PriorityClasses and CRDs, which Helm refuses,
    and a tenant's vCluster would ask for the NodePort the old one holds."""
    for name in ("kaistack-kai-release", "kaistack-gpu-release", "kaistack-team-a-vcluster"):
        assert named(dev, name).delete_before_replace is True, name


def test_gpu_release_is_replaced_when_its_chart_changes(dev):
    """gpu.mode fake -> gpu-operator keeps the release name `gpu-operator` but changes the chart; the two charts'
    `gpu-operator` Deployments select different labels (run-ai/fake-gpu-operator@v0.2.0
    deploy/fake-gpu-operator/templates/gpu-operator/deployment.yml, NVIDIA/gpu-operator@v26.7.0
    deployments/gpu-operator/templates/operator.yaml), which an upgrade cannot change."""
    assert named(dev, "kaistack-gpu-release").replace_on_changes == ("chart",)


def test_a_tenants_namespace_waits_for_the_hosts_admission_policy_and_binding(dev):
    """The API server checks only pods created after the binding exists (admitted pods are never re-checked), so
    nothing of the tenant, whose vCluster syncs its pods, may come before them."""
    namespace = named(dev, "kaistack-team-a-namespace")
    guards = [r for r in dev if r.type.startswith("kubernetes:admissionregistration.k8s.io/v1:")]
    assert {r.type.rsplit(":", 1)[1] for r in guards} == {
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    }
    assert {r.urn for r in guards} <= set(namespace.dependencies)


def test_the_kind_provider_is_identified_by_the_cluster_it_was_created_for(dev):
    """An update of the create script leaves the Command's stdout unknown in its preview (pulumi-go-provider marks
    outputs of an updated resource computed), and pulumi-kubernetes replaces a provider whose kubeconfig is computed
    unless an unchanged clusterIdentifier is set (provider.go DiffConfig): the preview would replace every object
    of the stack. The Command's id changes only when the cluster is created again."""
    provider = named(dev, "kaistack-cluster-provider")
    assert inputs(provider)["clusterIdentifier"] == "kind/kaistack-dev/kaistack-cluster-create-id"
