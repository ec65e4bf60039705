"""Workloads: a Pod, Deployment, Job or PyTorchJob, on the host or inside a tenant's vCluster."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from kaistack.declaration import kai_api, limits
from kaistack.declaration.image_refs import image_problem
from kaistack.declaration.model.base import (
    DNS_SUBDOMAIN,
    AnnotationMap,
    EnvName,
    KubeQuantity,
    LabelMap,
    Model,
    Name,
    Text,
)
from kaistack.declaration.model.topology import TopologyPlacement
from placement.quantity import Quantity

StringList = Annotated[list[Text], Field(max_length=limits.MAX_LIST_ITEMS)]


class SecretKey(Model):
    """A key of a Kubernetes Secret in the workload's namespace (inside the tenant's vCluster for tenants,
    which syncs the Secret a pod references to its host namespace). kaistack never holds the value."""

    secret: Annotated[str, Field(pattern=DNS_SUBDOMAIN, min_length=1, max_length=253)] = Field(
        description="Secret name"
    )
    key: Annotated[str, Field(pattern=r"^[-._a-zA-Z0-9]+$", min_length=1, max_length=253)] = Field(
        description="Key in the Secret's data"
    )


class PyTorchReplicas(Model):
    master: int = Field(default=1, ge=0, le=1, description="Master replicas (0 or 1)")
    workers: int = Field(default=1, ge=0, le=limits.MAX_REPLICAS, description="Worker replicas")
    min_available: int | None = Field(
        default=None, ge=1, le=limits.MAX_REPLICAS, description="Gang minimum (default: all replicas)"
    )
    # KAI's pod-grouper splits the workers into subgroups worker-0, worker-1, ... of this many pods
    # (by replica index), each placed as a unit; 2 or more, at most the workers (docs/topology/segments.md).
    segment_size: int | None = Field(
        default=None,
        ge=2,
        le=limits.MAX_REPLICAS,
        description="Workers per segment subgroup (kai.scheduler/segment-size); each segment is placed as a unit",
    )
    segment_topology: TopologyPlacement | None = Field(
        default=None, description="Where each segment's pods are kept together: levels of cluster.topology"
    )

    @model_validator(mode="after")
    def _segments(self) -> PyTorchReplicas:
        if self.segment_size is not None and self.segment_size > self.workers:
            raise ValueError(
                f"segmentSize {self.segment_size} is more than the {self.workers} workers; it must be 2..workers"
            )
        if self.segment_topology is not None and self.segment_size is None:
            raise ValueError("segmentTopology needs segmentSize (the workers per segment it applies to)")
        return self


class Workload(Model):
    """A Pod, Deployment, Job or PyTorchJob scheduled by KAI, on the host or inside a tenant's vCluster.

    GPU requests use the placement checker's scenario names: `gpu` (whole GPUs), `gpuFraction`,
    `gpuMemoryMiB`, with `gpuDevices` for multi-device fractions.
    """

    name: Name = Field(description="Object name (a DNS label)")
    kind: Literal["Pod", "Deployment", "Job", "PyTorchJob"] = Field(description="Kubernetes kind")
    namespace: Name = Field(default="default", description="Namespace (inside the tenant's vCluster for tenants)")
    tenant: Name | None = Field(default=None, description="The tenant whose vCluster runs it (none = host)")
    queue: Name | None = Field(default=None, description="Leaf queue (kai.scheduler/queue); none = default-queue")
    image: Text = Field(description="Container image")
    # `kaistack promote` copies the image of workloads marked promoted from stack to stack.
    promoted: bool = Field(default=False, description="kaistack promote copies this image to the next stack")
    command: StringList = Field(default_factory=list, description="Container command")
    args: StringList = Field(default_factory=list, description="Container args")
    env: Annotated[dict[EnvName, Text], Field(max_length=limits.MAX_LIST_ITEMS)] = Field(
        default_factory=dict, description="Environment variables"
    )
    secret_env: Annotated[dict[EnvName, SecretKey], Field(max_length=limits.MAX_LIST_ITEMS)] = Field(
        default_factory=dict, description="Environment variables read from Kubernetes Secrets (tokens, keys)"
    )
    ports: Annotated[list[Annotated[int, Field(gt=0, lt=65536)]], Field(max_length=limits.MAX_LIST_ITEMS)] = Field(
        default_factory=list, description="Container ports"
    )
    replicas: int = Field(
        default=1, ge=0, le=limits.MAX_REPLICAS, description="Deployment replicas / Job parallelism (pods)"
    )
    completions: int | None = Field(default=None, ge=1, le=limits.MAX_REPLICAS, description="Job completions")
    pytorch: PyTorchReplicas = Field(default=PyTorchReplicas(), description="PyTorchJob master/workers")
    gpu: int | None = Field(default=None, ge=1, le=limits.MAX_GPUS_PER_NODE, description="Whole GPUs per pod")
    gpu_fraction: float | None = Field(
        default=None, gt=0, lt=1, allow_inf_nan=False, description="Share of one GPU per pod (0 < f < 1)"
    )
    gpu_memory_mi_b: int | None = Field(
        default=None, gt=0, le=2**31, alias="gpuMemoryMiB", description="GPU memory per pod, in MiB"
    )
    gpu_devices: int | None = Field(
        default=None, ge=1, le=limits.MAX_GPUS_PER_NODE, description="GPUs the share is taken on (multi-device)"
    )
    cpu: KubeQuantity = Field(default=Quantity.parse("100m"), description="CPU request per pod, in cores ('500m')")
    memory: KubeQuantity = Field(default=Quantity.parse("128Mi"), description="Memory request per pod ('1Gi')")
    cpu_limit: KubeQuantity | None = Field(default=None, description="CPU limit per pod (default: the request)")
    memory_limit: KubeQuantity | None = Field(default=None, description="Memory limit per pod (default: the request)")
    # Scratch space in the container's writable layer (request = limit). Unset, a tenant's LimitRange
    # gives 3Gi/8Gi: too little for a model server that downloads its weights (vLLM: 13-15 GiB).
    ephemeral_storage: KubeQuantity | None = Field(
        default=None, description="Ephemeral storage per pod, request and limit ('20Gi'; model caches)"
    )
    priority_class: Literal["train", "build-preemptible", "build", "inference"] | None = Field(
        default=None, description="KAI priority class (default by kind: Deployment inference, else train)"
    )
    preemptible: bool | None = Field(default=None, description="Override preemptibility (priority < 100 preempts)")
    labels: LabelMap = Field(default_factory=dict, description="Extra labels")
    annotations: AnnotationMap = Field(default_factory=dict, description="Extra annotations")
    node_selector: LabelMap = Field(default_factory=dict, description="Node selector")
    tolerate_gpu_taint: bool = Field(default=True, description="Tolerate nvidia.com/gpu taints when using GPUs")
    topology: TopologyPlacement | None = Field(
        default=None, description="Keep the workload's pods together within levels of cluster.topology"
    )

    @field_validator("image")
    @classmethod
    def _pullable(cls, value: str) -> str:
        """What the kubelet would refuse (InvalidImageName) after `pulumi up` created everything else."""
        problem = image_problem(value)
        if problem is not None:
            raise ValueError(f"{value!r} is not an image the kubelet can pull: {problem}")
        return value

    @model_validator(mode="after")
    def _one_gpu_request(self) -> Workload:
        given = [
            k
            for k, v in (("gpu", self.gpu), ("gpuFraction", self.gpu_fraction), ("gpuMemoryMiB", self.gpu_memory_mi_b))
            if v is not None
        ]
        if len(given) > 1:
            raise ValueError(
                f"use one of gpu, gpuFraction, gpuMemoryMiB; got {' and '.join(given)} "
                "(KAI rejects fraction + memory and any share combined with whole GPUs)"
            )
        if self.gpu_fraction is not None and kai_api.counts_as_no_gpu(self.gpu_fraction):
            raise ValueError(
                f"gpuFraction {self.gpu_fraction} is under {kai_api.SMALLEST_COUNTED_FRACTION}: KAI counts GPU shares "
                "in hundredths, so each pod would hold 0 GPUs of its queue's quota and limit; ask for at least 0.01"
            )
        if self.gpu_devices is not None and not (self.gpu_fraction or self.gpu_memory_mi_b):
            raise ValueError("gpuDevices applies only to gpuFraction or gpuMemoryMiB requests")
        if self.kind != "PyTorchJob" and "pytorch" in self.model_fields_set:
            raise ValueError(f"'pytorch' applies only to kind PyTorchJob, not {self.kind}")
        both = sorted(set(self.env) & set(self.secret_env))
        if both:
            raise ValueError(f"{', '.join(both)} set in both env and secretEnv: keep one")
        if kai_api.NVIDIA_VISIBLE_DEVICES in self.secret_env:
            raise ValueError(
                f"secretEnv.{kai_api.NVIDIA_VISIBLE_DEVICES}: set it in env, where kaistack can check it against KAI"
            )
        if self.kind not in ("Deployment", "Job") and "replicas" in self.model_fields_set:
            raise ValueError(f"'replicas' applies to Deployment and Job (parallelism), not {self.kind}")
        if self.kind != "Job" and self.completions is not None:  # components/podspec.py writes it for Jobs only
            raise ValueError(f"'completions' applies only to kind Job, not {self.kind}")
        return self

    @model_validator(mode="before")
    @classmethod
    def _kai_labels_stand_for_their_fields(cls, data: object) -> object:
        """KAI's pod-grouper takes the class and the preemptibility from these labels before anything else
        (KAI@v0.17.0 default_grouper.go calcPodGroupPriorityClass, calcPodGroupPreemptibilityWithDefaults), while the
        capacity check, a tenant gang's PodGroup and the pod spec read the fields: a label given alone sets its
        field, so all of them agree with KAI."""
        if not isinstance(data, dict) or not isinstance(data.get("labels"), dict):
            return data
        labels, out = data["labels"], dict(data)
        klass = labels.get(kai_api.PRIORITY_CLASS_LABEL)
        klass = klass.strip() if isinstance(klass, str) else None
        # An explicit null is no value given (the field's default), as pydantic reads it.
        given = {k for k, v in data.items() if v is not None}
        if klass in kai_api.PRIORITY_CLASSES and not {"priorityClass", "priority_class"} & given:
            out.pop("priority_class", None)
            out["priorityClass"] = klass
        preemptibility = labels.get(kai_api.PREEMPTIBILITY_LABEL)
        preemptibility = preemptibility.strip() if isinstance(preemptibility, str) else None
        if preemptibility in ("preemptible", "non-preemptible") and "preemptible" not in given:
            out["preemptible"] = preemptibility == "preemptible"
        return out

    @model_validator(mode="after")
    def _kai_reads_the_priority_class_label(self) -> Workload:
        # KAI drops a class that names no PriorityClass and, with it, spec.priorityClassName
        # (calcPriorityClassWithDefaults); the capacity check knows kaistack's classes alone.
        key = kai_api.PRIORITY_CLASS_LABEL
        value = self.labels.get(key)
        if value is None:
            return self
        if value not in kai_api.PRIORITY_CLASSES:
            raise ValueError(
                f"labels.{key}: {value!r} is not one of kaistack's priority classes "
                f"({', '.join(kai_api.PRIORITY_CLASSES)}): KAI drops a class that does not exist, and the capacity "
                "check knows only these; use priorityClass"
            )
        if value != self.priority_class:
            raise ValueError(
                f"labels.{key} {value!r} and priorityClass {self.priority_class!r} disagree: keep priorityClass"
            )
        return self

    @model_validator(mode="after")
    def _kai_reads_the_preemptibility_label(self) -> Workload:
        # KAI's pod-grouper ignores any other value (ParsePreemptibility, podgroup_types.go at v0.17.0), and
        # components/podspec.py writes `preemptible` over the label.
        key = kai_api.PREEMPTIBILITY_LABEL
        value = self.labels.get(key)
        if value is not None and value not in kai_api.PREEMPTIBILITY_VALUES:
            raise ValueError(
                f"labels.{key}: {value!r} is not a value KAI reads (preemptible, non-preemptible), so the priority "
                "class would decide instead; use preemptible: true or false"
            )
        if value and self.preemptible is not None and self.preemptible != (value == "preemptible"):
            raise ValueError(
                f"labels.{key} {value!r} and preemptible: {str(self.preemptible).lower()} disagree: keep preemptible"
            )
        return self

    @model_validator(mode="after")
    def _requests_within_limits(self) -> Workload:
        # The API server refuses a container whose request is above its limit ("must be less than or equal to cpu
        # limit of ...", kubernetes/kubernetes pkg/apis/core/validation/validation.go ValidateResourceRequirements;
        # not mirrored here): found at `pulumi up`, after the platform is up.
        for key, request, limit in (("cpu", self.cpu, self.cpu_limit), ("memory", self.memory, self.memory_limit)):
            if limit is not None and request.value > limit.value:
                raise ValueError(
                    f"{key}Limit {limit} is below {key} {request}: Kubernetes refuses a container whose request is "
                    f"above its limit; raise {key}Limit or lower {key}"
                )
        return self

    @property
    def shares_gpu(self) -> bool:
        return self.gpu_fraction is not None or self.gpu_memory_mi_b is not None

    @property
    def uses_gpu(self) -> bool:
        return self.gpu is not None or self.shares_gpu

    @property
    def tolerates_gpu_taint(self) -> bool:
        """Its pods carry kai_api.GPU_TOLERATION: a GPU workload, unless `tolerateGpuTaint` is false."""
        return self.uses_gpu and self.tolerate_gpu_taint

    @property
    def default_priority_class(self) -> str:
        """The class KAI's pod-grouper assigns when none is set (kai.md §2, §5)."""
        return "inference" if self.kind == "Deployment" else "train"

    @property
    def pod_count(self) -> int:
        if self.kind == "Pod":
            return 1
        if self.kind == "PyTorchJob":
            return self.pytorch.master + self.pytorch.workers
        if self.kind == "Job" and self.completions is not None:
            # The Job controller never runs more pods than completions are left (batch/v1 JobSpec.parallelism:
            # "less than this number when ((.spec.completions - .status.successful) < .spec.parallelism)").
            return min(self.replicas, self.completions)
        return self.replicas


# --- tenant gangs: a tenant's PyTorchJob is grouped by a PodGroup kaistack makes (kaistack.declaration.tenant_gangs)

GANG_KINDS = ("PyTorchJob",)
MAX_GANG_NAME = 63


def is_tenant_gang(work: Workload) -> bool:
    return work.tenant is not None and work.kind in GANG_KINDS


def gang_name(work: Workload) -> str:
    """`kaistack-<tenant>-<namespace>-<name>`, cut to 63 characters with a hash when longer."""
    name = f"kaistack-{work.tenant}-{work.namespace}-{work.name}"
    if len(name) <= MAX_GANG_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:10]
    return f"{name[: MAX_GANG_NAME - 11].rstrip('-')}-{digest}"


def gang_name_problems(workloads: Sequence[Workload]) -> list[str]:
    """Tenant gangs' PodGroup names join parts that hold dashes, and KAI finds a PodGroup by its name alone,
    cluster-wide (KAI@v0.17.0 pkg/scheduler/cache/cluster_info/cluster_info.go:444,470), so two tenants' gangs
    must not share one either."""
    first: dict[str, int] = {}
    problems = []
    for i, work in enumerate(workloads):
        if not is_tenant_gang(work):
            continue
        name = gang_name(work)
        if name in first:
            problems.append(
                f"workloads[{i}].name: its PodGroup {name!r} is also workloads[{first[name]}]'s (tenant, namespace "
                "and name are joined by dashes, and KAI finds a PodGroup by its name alone); rename one of them"
            )
        first.setdefault(name, i)
    return problems


def isolation_env_problems(workloads: Sequence[Workload]) -> list[str]:
    """With kai.sharing: isolated, a share's variables HAMi-core reads for its cap
    (kaistack.guardrails.admission_cel.isolation_env_kept): KAI's admission replaces CUDA_DEVICE_MEMORY_LIMIT with
    the share's own, and the others would lift the cap (the tenant policy refuses such a pod, which then never
    reaches the host)."""
    problems = []
    for i, work in enumerate(workloads):
        if not work.shares_gpu:
            continue
        for field, names in (("env", work.env), ("secretEnv", work.secret_env)):
            for name in names:
                where = f"workloads[{i}].{field}.{name}"
                if name == kai_api.HAMI_MEMORY_LIMIT:
                    problems.append(f"{where}: KAI sets it from the GPU share with kai.sharing: isolated: remove it")
                elif re.fullmatch(rf"{kai_api.HAMI_MEMORY_LIMIT}_[0-9]+", name) or name == "CUDA_REDIRECT":
                    problems.append(
                        f"{where}: lifts the GPU memory cap HAMi-core enforces with kai.sharing: isolated: remove it"
                    )
    return problems
