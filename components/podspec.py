"""Kubernetes manifests for declared workloads, as plain camelCase dicts (no Pulumi).

The Workloads component hands these dicts to pulumi_kubernetes unchanged, so what the engine (and the
policy pack) receives is exactly what is built here. Every rule below is KAI's workload contract
(../shared/reference/kai.md §4) or a vCluster pass-through fact (vcluster-and-gpu.md §1.3).
"""

from __future__ import annotations

from typing import Any

from kaistack.declaration import kai_api, subgroups, tenant_gangs
from kaistack.declaration.kai_api import GPU_RESOURCE, GPU_TOLERATION, SCHEDULER_NAME
from kaistack.declaration.marks import TENANT_LABEL, WORKLOAD_LABEL
from kaistack.declaration.model import StackConfig, Workload

# Kubeflow's training operator only wires rendezvous env/ports into the container named "pytorch"
# (training-operator pkg/controller.v1/pytorch: DefaultContainerName).
PYTORCH_CONTAINER = "pytorch"
# pulumi/pulumi-kubernetes provider/pkg/metadata/annotations.go AnnotationWaitFor: `jsonpath=` or `condition=`.
WAIT_FOR = "pulumi.com/waitFor"
API_VERSIONS = {"Pod": "v1", "Deployment": "apps/v1", "Job": "batch/v1", "PyTorchJob": "kubeflow.org/v1"}


def _num(value: float) -> str:
    """A quantity string without a trailing '.0' (0.5 -> "0.5", 2.0 -> "2")."""
    return f"{value:g}"


def object_labels(config: StackConfig, work: Workload) -> dict[str, str]:
    """Labels for the top-level object and its pod template alike.

    KAI takes the queue from the top owner first, then the pod (kai.md §4); inside a vCluster the
    host only sees the pod (setOwner: false makes it a bare pod), so both carry every label.
    """
    labels = {WORKLOAD_LABEL: work.name, **work.labels, config.kai.queue_label_key: config.queue_of(work)}
    if work.tenant is not None:
        labels[TENANT_LABEL] = work.tenant
    if work.priority_class is not None:
        # KAI reads the class from this *label* on the top owner or pod before spec.priorityClassName
        # (kai.md §2), and labels survive vCluster sync unchanged (vcluster-and-gpu.md §1.3).
        labels[kai_api.PRIORITY_CLASS_LABEL] = work.priority_class
    if work.preemptible is not None:
        labels[kai_api.PREEMPTIBILITY_LABEL] = "preemptible" if work.preemptible else "non-preemptible"
    return labels


def pod_annotations(config: StackConfig, work: Workload) -> dict[str, str]:
    """GPU-sharing requests are pod annotations, not resources (kai.md §4).

    A bare Pod is its own top owner, so KAI's pod-grouper reads its topology constraint from here (on the
    host, and on the host copy vCluster syncs from a tenant).
    """
    annotations = dict(work.annotations)
    if work.kind == "Pod":
        annotations.update(subgroups.topology_annotations(config, work))
    if work.gpu_fraction is not None:
        annotations[kai_api.GPU_FRACTION] = _num(work.gpu_fraction)
    if work.gpu_memory_mi_b is not None:
        annotations[kai_api.GPU_MEMORY] = str(work.gpu_memory_mi_b)
    if work.gpu_devices is not None:
        annotations[kai_api.GPU_FRACTION_NUM_DEVICES] = str(work.gpu_devices)
    if tenant_gangs.is_tenant_gang(work):
        # The host-side PodGroup the pods join (kaistack.declaration.tenant_gangs).
        annotations.update(tenant_gangs.pod_annotations(work))
    return annotations


def resources(work: Workload) -> dict[str, dict[str, str]]:
    """Requests as declared; limits default to the requests.

    Tenant namespaces get a vCluster LimitRange whose default limit (1 CPU / 512Mi) is below some
    requests, which the API server rejects; writing limits out keeps host and tenant pods identical.
    Whole GPUs are an extended resource (requests must equal limits); shares request no
    nvidia.com/gpu at all, since KAI forbids a fraction next to a GPU limit (kai.md §4).
    """
    requests = {"cpu": str(work.cpu), "memory": str(work.memory)}
    limits = {"cpu": str(work.cpu_limit or work.cpu), "memory": str(work.memory_limit or work.memory)}
    if work.ephemeral_storage is not None:
        requests["ephemeral-storage"] = limits["ephemeral-storage"] = str(work.ephemeral_storage)
    if work.gpu is not None:
        requests[GPU_RESOURCE] = limits[GPU_RESOURCE] = str(work.gpu)
    return {"requests": requests, "limits": limits}


def container(work: Workload, name: str = "main") -> dict[str, Any]:
    spec: dict[str, Any] = {"name": name, "image": work.image}
    if work.command:
        spec["command"] = list(work.command)
    if work.args:
        spec["args"] = list(work.args)
    env: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in work.env.items()]
    env += [
        {"name": k, "valueFrom": {"secretKeyRef": {"name": ref.secret, "key": ref.key}}}
        for k, ref in work.secret_env.items()
    ]
    if env:
        spec["env"] = env
    if work.ports:
        spec["ports"] = [{"containerPort": p, "protocol": "TCP"} for p in work.ports]
    spec["resources"] = resources(work)
    return spec


def pod_spec(work: Workload, container_name: str = "main", restart_policy: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": SCHEDULER_NAME, "containers": [container(work, container_name)]}
    if restart_policy is not None:
        spec["restartPolicy"] = restart_policy
    if work.priority_class is not None:
        # Kept inside a vCluster because tenants sync host PriorityClasses (sync.fromHost.priorityClasses).
        spec["priorityClassName"] = work.priority_class
    if work.tolerates_gpu_taint:
        spec["tolerations"] = [dict(GPU_TOLERATION)]
    if work.node_selector:
        spec["nodeSelector"] = dict(work.node_selector)
    return spec


def pod_template(
    config: StackConfig,
    work: Workload,
    container_name: str = "main",
    restart_policy: str | None = None,
    role: str | None = None,
) -> dict[str, Any]:
    """A pod template; `role` is the PyTorchJob replica type (Master/Worker) it is for."""
    metadata: dict[str, Any] = {"labels": object_labels(config, work)}
    annotations = pod_annotations(config, work)
    if role is not None:
        metadata["labels"].update(tenant_gangs.role_labels(config, work, role))
    if role == "Worker":
        annotations.update(subgroups.segment_annotations(config, work))
    if annotations:
        metadata["annotations"] = annotations
    spec = pod_spec(work, container_name, restart_policy)
    runtime = gpu_runtime_class(config)
    if runtime and work.gpu:
        spec["runtimeClassName"] = runtime
    return {"metadata": metadata, "spec": spec}


def gpu_runtime_class(config: StackConfig) -> str | None:
    """The RuntimeClass whole-GPU pods need, or None where the runtime hands out GPUs by itself.

    With the device plugin alone (nvkind), `nvidia` is not containerd's default runtime and the plugin's
    default deviceListStrategy is `envvar`, which only the NVIDIA runtime reads (NVIDIA/k8s-device-plugin
    @v0.20.0 README "deviceListStrategy"; NVIDIA/nvkind stopped making nvidia the default in Feb 2025).
    KAI's admission only injects a runtime class into fractional pods (KAI@v0.17.0
    pkg/admission/webhook/v1alpha2/runtimeenforcement), so whole-GPU pods must name it themselves.
    GPU Operator >= v25.10 hands devices out by CDI (NVIDIA/gpu-operator v25.10.0 release notes: "CDI is
    now enabled by default"), and the EKS NVIDIA AMI makes nvidia the default runtime: nothing needed.
    """
    if config.gpu.mode == "device-plugin" and config.cluster.provider == "kind":
        return config.gpu.device_plugin.runtime_class_name
    return None


def manifest(config: StackConfig, work: Workload) -> dict[str, Any]:
    """The full object (apiVersion, kind, metadata, spec) for one declared workload."""
    metadata: dict[str, Any] = {"name": work.name, "namespace": work.namespace, "labels": object_labels(config, work)}
    if work.kind in ("Job", "PyTorchJob") and work.tenant is None:
        # KAI's pod-grouper reads the constraint from the top owner (a tenant gang's is in its PodGroup).
        top = subgroups.topology_annotations(config, work)
        if top:
            metadata["annotations"] = top
    if work.kind == "Job":
        # pulumi-kubernetes waits for a Job to complete, 10 minutes by default (provider/pkg/await/job.go
        # DefaultJobTimeoutMins), failing `pulumi up` on every training run longer than that, again on each
        # later run until it completes. A waitFor condition replaces that wait (await.go: the kind's awaiter runs
        # only without one) and, unlike skipAwait, leaves the wait on delete (metadata/overrides.go
        # allowsSkipAwaitWithDelete), so a replaced Job is gone before its successor takes the name. A Job's
        # progress is `kaistack verify`'s to report.
        metadata["annotations"] = {**metadata.get("annotations", {}), WAIT_FOR: "jsonpath={.metadata.uid}"}
    if work.kind == "Pod":
        template = pod_template(config, work)
        metadata["labels"] = template["metadata"]["labels"]
        if "annotations" in template["metadata"]:
            metadata["annotations"] = template["metadata"]["annotations"]
        spec = template["spec"]
    elif work.kind == "Deployment":
        spec = {
            "replicas": work.replicas,
            "selector": {"matchLabels": {WORKLOAD_LABEL: work.name}},
            "template": pod_template(config, work),
        }
    elif work.kind == "Job":
        # KAI >= v0.15 groups a Job into one PodGroup; parallelism = declared replicas (kai.md §5).
        spec = {
            "parallelism": work.replicas,
            "completions": work.completions or work.replicas,
            "template": pod_template(config, work, restart_policy="Never"),
        }
    else:
        spec = pytorch_spec(config, work)
    return {"apiVersion": API_VERSIONS[work.kind], "kind": work.kind, "metadata": metadata, "spec": spec}


def pytorch_spec(config: StackConfig, work: Workload) -> dict[str, Any]:
    """Kubeflow PyTorchJob (kubeflow.org/v1): a gang of Master + Workers.

    KAI's kubeflow grouper makes one PodGroup with minMember = runPolicy.schedulingPolicy.minAvailable
    (kai.md §5), so the gang size is written out, and subgroups `master` and `worker` (segments with
    `pytorch.segmentSize`: kaistack.declaration.subgroups). Inside a vCluster the host sees bare pods, so
    the gang is a PodGroup kaistack creates on the host (kaistack.declaration.tenant_gangs).
    """
    replicas: dict[str, Any] = {}
    for role, count in (("Master", work.pytorch.master), ("Worker", work.pytorch.workers)):
        if count:
            replicas[role] = {
                "replicas": count,
                "restartPolicy": "OnFailure",
                "template": pod_template(config, work, container_name=PYTORCH_CONTAINER, role=role),
            }
    min_available = work.pytorch.min_available or work.pod_count
    return {"runPolicy": {"schedulingPolicy": {"minAvailable": min_available}}, "pytorchReplicaSpecs": replicas}
