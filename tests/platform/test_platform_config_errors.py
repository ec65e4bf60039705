"""Bad config never gets past the edge: one ConfigError naming the key path (and the allowed values).

Each model rule (kaistack/declaration/model/: field validators, model validators, StackConfig._consistent)
has a case here; the program turns the same error into a pulumi.RunError before registering anything.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pulumi
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from platform_testlib import base_raw, dev_raw, run_program

from kaistack.declaration.parse import ConfigError, parse_config
from kaistack.ops.render import RenderError


def _work(**fields: Any) -> dict[str, Any]:
    return {"name": "w", "kind": "Pod", "queue": "team", "image": "x", **fields}


def _tree(raw: dict, **changes: Any) -> None:
    raw["queues"] = [{"name": "org"}, {"name": "team", "parent": "org"}]
    raw.update(changes)


# (change to base_raw(), exact problem line expected in the error)
CASES: dict[str, tuple[Callable[[dict], Any], str]] = {
    "unknown-top-level-key": (
        lambda r: r.update(clusters={}),
        "kaistack:clusters: unknown key; allowed: cluster, gpu, kai, queues, tenants, workloads",
    ),
    "unknown-nested-key": (
        lambda r: r["cluster"].update(nodepools=[]),
        "kaistack:cluster.nodepools: unknown key; allowed: provider, name, nodePools, kind, existing, eks, "
        "trainingOperator",
    ),
    "bad-enum-gpu-mode": (
        lambda r: r["gpu"].update(mode="fakes"),
        "kaistack:gpu.mode: Input should be 'fake', 'device-plugin', 'gpu-operator' or 'none', got 'fakes'",
    ),
    "bad-enum-cluster-provider": (
        lambda r: r["cluster"].update(provider="minikube"),
        "kaistack:cluster.provider: Input should be 'kind', 'existing' or 'eks', got 'minikube'",
    ),
    "bad-enum-workload-kind": (
        lambda r: r.update(workloads=[_work(kind="StatefulSet")]),
        "kaistack:workloads[0].kind: Input should be 'Pod', 'Deployment', 'Job' or 'PyTorchJob', got 'StatefulSet'",
    ),
    "bad-enum-priority-class": (
        lambda r: r.update(workloads=[_work(priorityClass="urgent")]),
        "kaistack:workloads[0].priorityClass: Input should be 'train', 'build-preemptible', 'build' or 'inference', "
        "got 'urgent'",
    ),
    "bad-enum-pod-security-standard": (
        lambda r: r.update(tenants=[{"name": "a", "isolation": {"podSecurityStandard": "strict"}}]),
        "kaistack:tenants[0].isolation.podSecurityStandard: Input should be 'privileged', 'baseline' or "
        "'restricted', got 'strict'",
    ),
    "missing-cluster": (lambda r: r.pop("cluster"), "kaistack:cluster: required key is missing"),
    "not-a-mapping": (lambda r: r.update(cluster=[1, 2]), "kaistack:cluster: expected a mapping of keys, got [1, 2]"),
    "bad-name": (
        lambda r: r.update(queues=[{"name": "Team_A"}]),
        "kaistack:queues[0].name: String should match pattern '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', got 'Team_A'",
    ),
    "bad-quantity": (
        lambda r: r["cluster"]["nodePools"][0].update(cpu="four"),
        "kaistack:cluster.nodePools[0].cpu: invalid quantity 'four': expected a Kubernetes quantity",
    ),
    "quota-below-minus-one": (
        lambda r: r.update(queues=[{"name": "team", "resources": {"gpu": {"quota": -2}}}]),
        "kaistack:queues[0].resources.gpu.quota: must be -1 (unlimited) or >= 0, got -2",
    ),
    "negative-over-quota-weight": (
        lambda r: r.update(queues=[{"name": "team", "resources": {"cpu": {"overQuotaWeight": -1}}}]),
        "kaistack:queues[0].resources.cpu.overQuotaWeight: must be >= 0, got -1",
    ),
    "limit-below-quota": (
        lambda r: r.update(queues=[{"name": "team", "resources": {"gpu": {"quota": 4, "limit": 2}}}]),
        "kaistack:queues[0].resources.gpu: limit (2) is below quota (4); the limit must be >= quota",
    ),
    "existing-without-block": (
        lambda r: r["cluster"].update(provider="existing"),
        "kaistack:cluster: provider 'existing' needs an 'existing' block with 'kubeconfig' or 'context'",
    ),
    "existing-without-kubeconfig-or-context": (
        lambda r: r["cluster"].update(provider="existing", existing={}),
        "kaistack:cluster.existing: needs 'kubeconfig' (pulumi config set --secret --path "
        "kaistack:cluster.existing.kubeconfig ...) or 'context'",
    ),
    "eks-without-block": (
        lambda r: (r["cluster"].update(provider="eks"), r.update(gpu={"mode": "none"})),
        "kaistack:cluster: provider 'eks' needs an 'eks' block with at least 'region'",
    ),
    "duplicate-node-pools": (
        lambda r: r["cluster"]["nodePools"].append({"name": "gpu"}),
        "kaistack:cluster: node pool names must be unique; repeated: gpu",
    ),
    "bad-mig-profile": (
        lambda r: r["cluster"]["nodePools"][0].update(mig={"1g.10gb": 1}),
        "kaistack:cluster.nodePools[0].mig: MIG profile '1g.10gb' must look like 'nvidia.com/mig-1g.10gb'",
    ),
    "fake-gpus-on-a-pool-with-another-taint": (
        lambda r: r["cluster"]["nodePools"][0].update(taints=[{"key": "dedicated", "effect": "NoExecute"}]),
        "kaistack:cluster.nodePools[0].taints[0]: dedicated (NoExecute) on GPU pool 'gpu' keeps the fake GPU "
        "operator's device plugin off it",
    ),
    "fake-gpus-on-a-pool-with-a-no-execute-gpu-taint": (
        lambda r: r["cluster"]["nodePools"][0].update(taints=[{"key": "nvidia.com/gpu", "effect": "NoExecute"}]),
        "kaistack:cluster.nodePools[0].taints[0]: nvidia.com/gpu (NoExecute) on GPU pool 'gpu' keeps the fake GPU "
        "operator's device plugin off it (it tolerates only nvidia.com/gpu with NoSchedule)",
    ),
    "mig-profile-in-other-digits": (
        lambda r: r["cluster"]["nodePools"][0].update(mig={"nvidia.com/mig-\u0661g.\u0661\u0660gb": 1}),
        "kaistack:cluster.nodePools[0].mig: MIG profile 'nvidia.com/mig-\u0661g.\u0661\u0660gb' must look like",
    ),
    "kai-version-in-other-digits": (
        lambda r: r.update(kai={"version": "v\u0660.\u0661\u0667.\u0660"}),
        "kaistack:kai.version: must be a KAI release tag with the 'v' prefix, like 'v0.17.0'",
    ),
    "block-nvidia-visible-devices-before-v0-16": (
        lambda r: r.update(kai={"version": "v0.15.0", "blockNvidiaVisibleDevices": True}),
        "kaistack:kai: blockNvidiaVisibleDevices needs KAI >= v0.16.0 (global.blockNvidiaVisibleDevices)",
    ),
    "block-nvidia-visible-devices-with-renamed-time-slicing": (
        lambda r: r.update(
            gpu={"mode": "device-plugin", "devicePlugin": {"timeSlicing": {"replicas": 2, "renameByDefault": True}}},
            kai={"blockNvidiaVisibleDevices": True},
        ),
        "kaistack:kai.blockNvidiaVisibleDevices: KAI would set NVIDIA_VISIBLE_DEVICES=void in containers asking for "
        "nvidia.com/gpu.shared (gpu.devicePlugin.timeSlicing.renameByDefault)",
    ),
    "block-nvidia-visible-devices-with-a-workload-setting-it": (
        lambda r: r.update(
            kai={"blockNvidiaVisibleDevices": True},
            workloads=[
                {
                    "name": "w",
                    "kind": "Pod",
                    "image": "x",
                    "queue": "team",
                    "gpu": 1,
                    "env": {"NVIDIA_VISIBLE_DEVICES": "all"},
                }
            ],
        ),
        "kaistack:workloads[0].env.NVIDIA_VISIBLE_DEVICES: 'all' is refused by KAI's admission with "
        "kai.blockNvidiaVisibleDevices in a container that asks for GPUs (allowed: 'void', 'none')",
    ),
    "nvidia-visible-devices-set-where-tenants-block-it-by-default": (
        lambda r: r.update(
            tenants=[{"name": "t", "queues": ["team"]}],
            workloads=[
                {"name": "w", "kind": "Pod", "image": "x", "queue": "team", "env": {"NVIDIA_VISIBLE_DEVICES": "all"}}
            ],
        ),
        "kaistack:workloads[0].env.NVIDIA_VISIBLE_DEVICES: 'all' is overwritten with 'void' by KAI's admission with "
        "kai.blockNvidiaVisibleDevices in a container that asks for no GPU: remove it, or ask for a GPU (on by "
        "default where tenants exist; kai.blockNvidiaVisibleDevices: false turns it off",
    ),
    "kai-version-without-v": (
        lambda r: r.update(kai={"version": "0.17.0"}),
        "kaistack:kai.version: must be a KAI release tag with the 'v' prefix, like 'v0.17.0'",
    ),
    "retracted-kai-version": (
        lambda r: r.update(kai={"version": "v0.20.0"}),
        "kaistack:kai.version: v0.20.0 is retracted upstream; use 'v0.17.0'",
    ),
    "memory-isolation-on-old-kai": (
        lambda r: (r.update(kai={"version": "v0.16.0", "sharing": "isolated"}), r.update(gpu={"mode": "none"})),
        "kaistack:kai: sharing: isolated needs KAI >= v0.17.0 (binder hamicore plugin), got v0.16.0",
    ),
    # KAI@v0.12.23 deployments/kai-scheduler/templates/_helpers.tpl:133 (`| default "nvidia"`, and
    # Masterminds/sprig@v3.3.0 defaults.go:26-46, helm@v3.21.4's: an empty string is unset) against
    # KAI@v0.13.0 deployments/kai-scheduler/templates/kai-config.yaml:164 (`| quote`).
    "runtime-class-off-on-kai-v0-12": (
        lambda r: r.update(kai={"version": "v0.12.23", "runtimeClassName": None}),
        "kaistack:kai: runtimeClassName: null needs KAI >= v0.13.0; v0.12.23's chart replaces an empty "
        "admission.gpuPodRuntimeClassName with 'nvidia'",
    ),
    "queue-label-key-on-old-kai": (
        lambda r: r.update(kai={"version": "v0.15.0", "queueLabelKey": "x/q"}),
        "kaistack:kai: queueLabelKey 'x/q' needs KAI >= v0.16.0 (podgrouper.queueLabelKey); v0.15.0 only reads "
        "'kai.scheduler/queue'",
    ),
    "two-gpu-request-kinds": (
        lambda r: r.update(workloads=[_work(gpu=1, gpuFraction=0.5)]),
        "kaistack:workloads[0]: use one of gpu, gpuFraction, gpuMemoryMiB; got gpu and gpuFraction",
    ),
    "gpu-fraction-out-of-range": (
        lambda r: r.update(workloads=[_work(gpuFraction=1.5)]),
        "kaistack:workloads[0].gpuFraction: Input should be less than 1, got 1.5",
    ),
    # KAI@v0.17.0 pkg/scheduler/api/resource_info/gpu_resource_requirment.go:266-269: shares in hundredths.
    "gpu-fraction-kai-counts-as-no-gpu": (
        lambda r: r.update(workloads=[_work(gpuFraction=0.004)]),
        "kaistack:workloads[0]: gpuFraction 0.004 is under 0.005: KAI counts GPU shares in hundredths, so each pod "
        "would hold 0 GPUs of its queue's quota and limit; ask for at least 0.01",
    ),
    "gpu-devices-without-share": (
        lambda r: r.update(workloads=[_work(gpuDevices=2)]),
        "kaistack:workloads[0]: gpuDevices applies only to gpuFraction or gpuMemoryMiB requests",
    ),
    "pytorch-settings-on-a-pod": (
        lambda r: r.update(workloads=[_work(pytorch={"workers": 1})]),
        "kaistack:workloads[0]: 'pytorch' applies only to kind PyTorchJob, not Pod",
    ),
    "replicas-on-a-pod": (
        lambda r: r.update(workloads=[_work(replicas=2)]),
        "kaistack:workloads[0]: 'replicas' applies to Deployment and Job (parallelism), not Pod",
    ),
    # KAI@v0.17.0 pkg/apis/scheduling/v2alpha2/podgroup_types.go ParsePreemptibility: any other value is ignored.
    "preemptibility-label-kai-ignores": (
        lambda r: r.update(workloads=[_work(labels={"kai.scheduler/preemptibility": "true"})]),
        "kaistack:workloads[0]: labels.kai.scheduler/preemptibility: 'true' is not a value KAI reads (preemptible, "
        "non-preemptible), so the priority class would decide instead; use preemptible: true or false",
    ),
    "preemptibility-label-beside-preemptible": (
        lambda r: r.update(
            workloads=[_work(labels={"kai.scheduler/preemptibility": "preemptible"}, preemptible=False)]
        ),
        "kaistack:workloads[0]: labels.kai.scheduler/preemptibility 'preemptible' and preemptible: false disagree: "
        "keep preemptible",
    ),
    "completions-on-a-deployment": (
        lambda r: r.update(workloads=[_work(kind="Deployment", completions=3)]),
        "kaistack:workloads[0]: 'completions' applies only to kind Job, not Deployment",
    ),
    "duplicate-queues": (
        lambda r: r.update(queues=[{"name": "team"}, {"name": "team"}]),
        "kaistack:queues: names must be unique; repeated: team",
    ),
    "duplicate-tenants": (
        lambda r: r.update(
            queues=[{"name": "q"}],
            tenants=[
                {"name": "t", "queues": ["q"], "nodePort": 31000},
                {"name": "t", "queues": ["q"], "nodePort": 31001},
            ],
        ),
        "kaistack:tenants: names must be unique; repeated: t",
    ),
    "duplicate-workloads": (
        lambda r: r.update(workloads=[_work(), _work()]),
        "kaistack:workloads: names must be unique; repeated: w",
    ),
    "missing-parent-queue": (
        lambda r: r.update(queues=[{"name": "team", "parent": "org"}]),
        "kaistack:queues[0].parent: 'org' is not a declared queue; queues: default-parent-queue, default-queue, team",
    ),
    "queue-is-its-own-parent": (
        lambda r: r.update(queues=[{"name": "team", "parent": "team"}]),
        "kaistack:queues[0].parent: queue 'team' cannot be its own parent",
    ),
    "queue-parent-cycle": (
        lambda r: r.update(queues=[{"name": "a", "parent": "b"}, {"name": "b", "parent": "a"}]),
        "kaistack:queues: parent cycle a -> b -> a",
    ),
    "redeclared-kai-default-queue": (
        lambda r: r.update(queues=[{"name": "default-queue"}]),
        "kaistack:queues[0].name: 'default-queue' is KAI's default queue; set its resources under "
        "kai.defaultQueues instead",
    ),
    "tenant-queue-unknown": (
        lambda r: r.update(tenants=[{"name": "t", "queues": ["nope"]}]),
        "kaistack:tenants[0].queues: queue 'nope' is not declared in kaistack:queues",
    ),
    "tenant-queue-not-a-leaf": (
        lambda r: _tree(r, tenants=[{"name": "t", "queues": ["org"]}]),
        "kaistack:tenants[0].queues: 'org' has child queues; only leaf queues schedule",
    ),
    "workload-queue-unknown": (
        lambda r: r.update(workloads=[_work(queue="nope")]),
        "kaistack:workloads[0].queue: 'nope' is not a declared queue; leaf queues: default-queue, team",
    ),
    "workload-queue-not-a-leaf": (
        lambda r: _tree(r, workloads=[_work(queue="org")]),
        "kaistack:workloads[0].queue: 'org' has child queues; KAI only schedules leaf queues",
    ),
    "workload-tenant-unknown": (
        lambda r: r.update(workloads=[_work(tenant="nope")]),
        "kaistack:workloads[0].tenant: 'nope' is not a declared tenant; tenants: none declared",
    ),
    "tenant-without-queues": (
        lambda r: r.update(queues=[{"name": "q"}], tenants=[{"name": "t", "queues": []}]),
        "kaistack:tenants[0].queues: List should have at least 1 item after validation, not 0, got []",
    ),
    "tenant-queue-mismatch": (
        lambda r: r.update(
            queues=[{"name": "team"}, {"name": "other"}],
            tenants=[{"name": "t", "queues": ["team"]}],
            workloads=[_work(tenant="t", queue="other")],
        ),
        "kaistack:workloads[0].queue: 'other' is not one of tenant 't''s queues (team)",
    ),
    "gpu-sharing-off-with-fractions": (
        lambda r: r.update(kai={"sharing": "off"}, workloads=[_work(gpuFraction=0.5)]),
        "kaistack:workloads[0]: gpuFraction/gpuMemoryMiB need kaistack:kai.sharing 'fractions' or 'isolated'",
    ),
    "memory-isolation-without-real-gpus": (
        lambda r: r.update(kai={"sharing": "isolated"}),
        "kaistack:kai.sharing: 'isolated' needs real GPUs (gpu.mode device-plugin or gpu-operator), got 'fake'",
    ),
    # HAMi-core prefers a per-device limit to KAI's (Project-HAMi/HAMi-core src/multiprocess/
    # multiprocess_memory_limit.c, do_init_device_memory_limits); KAI replaces the plain one (KAI@v0.17.0
    # pkg/admission/webhook/v1alpha2/hamicore/hamicore.go:53-64, pkg/binder/common/env_vars.go:28-37).
    "memory-isolation-per-device-limit": (
        lambda r: r.update(
            gpu={"mode": "device-plugin"},
            kai={"sharing": "isolated"},
            workloads=[_work(gpuFraction=0.5, env={"CUDA_DEVICE_MEMORY_LIMIT_0": "80g"})],
        ),
        "kaistack:workloads[0].env.CUDA_DEVICE_MEMORY_LIMIT_0: lifts the GPU memory cap HAMi-core enforces with "
        "kai.sharing: isolated: remove it",
    ),
    "memory-isolation-redirect-from-a-secret": (
        lambda r: r.update(
            gpu={"mode": "device-plugin"},
            kai={"sharing": "isolated"},
            workloads=[_work(gpuMemoryMiB=2000, secretEnv={"CUDA_REDIRECT": {"secret": "s", "key": "k"}})],
        ),
        "kaistack:workloads[0].secretEnv.CUDA_REDIRECT: lifts the GPU memory cap",
    ),
    "memory-isolation-own-limit": (
        lambda r: r.update(
            gpu={"mode": "device-plugin"},
            kai={"sharing": "isolated"},
            workloads=[_work(gpuFraction=0.5, env={"CUDA_DEVICE_MEMORY_LIMIT": "1g"})],
        ),
        "kaistack:workloads[0].env.CUDA_DEVICE_MEMORY_LIMIT: KAI sets it from the GPU share with kai.sharing: "
        "isolated: remove it",
    ),
    # KAI@v0.17.0 pkg/binder/common/gpusharingconfigmap/config_map.go:113-168 names a share's ConfigMaps
    # `<prefix>-<7 characters>-shared-gpu-<n>[-evar]`; vCluster (loft-sh/vcluster@v0.36.1
    # pkg/util/translate/single_namespace.go:59-64) ends a tenant's synced ConfigMaps with `-x-<tenant>`.
    "tenant-named-like-kais-configmaps": (
        lambda r: r.update(tenants=[{"name": "lab-abcdefg-shared-gpu-0", "queues": ["team"]}]),
        "kaistack:tenants[0].name: 'lab-abcdefg-shared-gpu-0' holds 'shared-gpu', the word KAI's GPU sharing names "
        "a share's ConfigMaps with",
    ),
    "fake-gpus-without-gpu-pools": (
        lambda r: r["cluster"].update(nodePools=[{"name": "cpu"}]),
        "kaistack:gpu.mode: 'fake' needs at least one cluster.nodePools entry with gpus > 0",
    ),
    "fake-gpus-on-eks": (
        lambda r: r["cluster"].update(provider="eks", eks={"region": "us-west-2"}),
        "kaistack:gpu.mode: 'fake' is for kind/existing clusters; EKS pools have real GPUs",
    ),
    "time-slicing-in-the-wrong-mode": (
        lambda r: r["gpu"].update(devicePlugin={"timeSlicing": {"replicas": 2}}),
        "kaistack:gpu.devicePlugin.timeSlicing: applies only with gpu.mode 'device-plugin'",
    ),
    "time-slicing-one-replica": (
        lambda r: r.update(gpu={"mode": "device-plugin", "devicePlugin": {"timeSlicing": {"replicas": 1}}}),
        "kaistack:gpu.devicePlugin.timeSlicing.replicas: Input should be greater than or equal to 2, got 1",
    ),
    "kind-node-port-clash": (
        lambda r: r.update(
            queues=[{"name": "q"}],
            tenants=[{"name": n, "queues": ["q"], **({"nodePort": 31001} if n == "a" else {})} for n in "abc"],
        ),
        "kaistack:tenants: nodePort 31001 is used by more than one tenant (unset ones count up from 31000); "
        "set tenants[].nodePort explicitly",
    ),
    "kind-tenant-ports-past-the-node-port-range": (
        lambda r: r["cluster"].update(kind={"tenantPortBase": 32760, "tenantPorts": 10}),
        "kaistack:cluster.kind: tenantPortBase 32760 + tenantPorts 10 ends at 32769, past the "
        "Kubernetes NodePort range 30000-32767; lower tenantPortBase or tenantPorts",
    ),
    "kind-tenant-port-base-below-the-node-port-range": (
        lambda r: r["cluster"].update(kind={"tenantPortBase": 8443}),
        "kaistack:cluster.kind.tenantPortBase: Input should be greater than or equal to 30000, got 8443",
    ),
    "two-tenants-in-one-host-namespace": (
        lambda r: r.update(
            tenants=[
                {"name": "t1", "queues": ["team"], "nodePort": 31000},
                {"name": "t2", "queues": ["team"], "namespace": "vcluster-t1", "nodePort": 31001},
            ]
        ),
        "kaistack:tenants[1].namespace: 'vcluster-t1' is tenants[0]'s host namespace too; each tenant needs its own",
    ),
    "tenant-in-kais-namespace": (
        lambda r: r.update(tenants=[{"name": "t1", "queues": ["team"], "namespace": "kai-scheduler"}]),
        "kaistack:tenants[0].namespace: 'kai-scheduler' is kai.namespace namespace; give the tenant its own",
    ),
    "tenant-in-kube-system": (
        lambda r: r.update(tenants=[{"name": "t1", "queues": ["team"], "namespace": "kube-system"}]),
        "kaistack:tenants[0].namespace: 'kube-system' is the cluster's own namespace; give the tenant its own",
    ),
    "host-workload-in-kais-namespace": (
        lambda r: r.update(
            workloads=[{"name": "w", "kind": "Pod", "queue": "team", "image": "x", "namespace": "kai-scheduler"}]
        ),
        "kaistack:workloads[0].namespace: 'kai-scheduler' is kai.namespace namespace, which kaistack creates with "
        "that component; use another namespace",
    ),
    # components.gpu creates the GPU stack's namespace: AlreadyExists there, and deleted with the stack.
    "gpu-stack-in-kube-system": (
        lambda r: r["gpu"].update(namespace="kube-system"),
        "kaistack:gpu.namespace: 'kube-system' is the cluster's own namespace; kaistack creates the GPU stack's "
        "namespace and deletes it with the stack: name another (unset: by gpu.mode)",
    ),
    "host-workload-in-the-isolators-namespace": (
        lambda r: r.update(
            gpu={"mode": "device-plugin"},
            kai={"sharing": "isolated"},
            workloads=[
                {"name": "w", "kind": "Pod", "queue": "team", "image": "x", "namespace": "kai-resource-isolator"}
            ],
        ),
        "kaistack:workloads[0].namespace: 'kai-resource-isolator' is the memory isolator's (kai.sharing: isolated) "
        "namespace, which kaistack creates with that component; use another namespace",
    ),
    "tenant-in-the-training-operators-namespace": (
        lambda r: (
            r["cluster"].update(trainingOperator=True),
            r.update(tenants=[{"name": "t1", "queues": ["team"], "namespace": "kubeflow"}]),
        ),
        "kaistack:tenants[0].namespace: 'kubeflow' is the training operator's (cluster.trainingOperator) namespace; "
        "give the tenant its own",
    ),
    "tenant-gang-podgroup-names-collide": (
        lambda r: r.update(
            tenants=[{"name": "t1", "queues": ["team"]}],
            workloads=[
                {"name": "d", "kind": "PyTorchJob", "tenant": "t1", "queue": "team", "namespace": "b-c", "image": "x"},
                {"name": "c-d", "kind": "PyTorchJob", "tenant": "t1", "queue": "team", "namespace": "b", "image": "x"},
            ],
        ),
        "kaistack:workloads[1].name: its PodGroup 'kaistack-t1-b-c-d' is also workloads[0]'s (tenant, namespace "
        "and name are joined by dashes, and KAI finds a PodGroup by its name alone); rename one of them",
    ),
    "node-label-kubelet-refuses": (
        lambda r: r["cluster"]["nodePools"][0].update(labels={"node-role.kubernetes.io/gpu": "true"}),
        "kaistack:cluster.nodePools[0].labels.node-role.kubernetes.io/gpu: kubelet refuses to start with a "
        "kubernetes.io or k8s.io label it may not set itself (it may: beta.kubernetes.io/arch, "
        "beta.kubernetes.io/instance-type, beta.kubernetes.io/os, failure-domain.beta.kubernetes.io/region, "
        "failure-domain.beta.kubernetes.io/zone, kubernetes.io/arch, kubernetes.io/hostname, kubernetes.io/os, "
        "node.kubernetes.io/instance-type, topology.kubernetes.io/region, topology.kubernetes.io/zone, and "
        "*.kubelet.kubernetes.io, *.node.kubernetes.io); use your own prefix, or label the node after it joins",
    ),
    "two-tenants-gang-podgroup-names-collide": (
        lambda r: r.update(
            queues=[{"name": "team"}, {"name": "other"}],
            tenants=[{"name": "a", "queues": ["team"]}, {"name": "a-b", "queues": ["other"]}],
            workloads=[
                {"name": "c-d", "kind": "PyTorchJob", "tenant": "a", "queue": "team", "namespace": "b", "image": "x"},
                {"name": "d", "kind": "PyTorchJob", "tenant": "a-b", "queue": "other", "namespace": "c", "image": "x"},
            ],
        ),
        "kaistack:workloads[1].name: its PodGroup 'kaistack-a-b-c-d' is also workloads[0]'s (tenant, namespace "
        "and name are joined by dashes, and KAI finds a PodGroup by its name alone); rename one of them",
    ),
    "host-deployment-in-a-tenants-host-namespace": (
        lambda r: r.update(
            tenants=[{"name": "t1", "queues": ["team"]}],
            workloads=[{"name": "w", "kind": "Deployment", "image": "x", "queue": "team", "namespace": "vcluster-t1"}],
        ),
        "kaistack:workloads[0].namespace: 'vcluster-t1' is tenant t1's host namespace, where its admission policy "
        "refuses pods with owners",
    ),
    "host-pod-in-a-tenants-host-namespace-on-another-queue": (
        lambda r: r.update(
            queues=[{"name": "team"}, {"name": "other"}],
            tenants=[{"name": "t1", "queues": ["team"]}],
            workloads=[{"name": "p", "kind": "Pod", "image": "x", "queue": "other", "namespace": "vcluster-t1"}],
        ),
        "kaistack:workloads[0].queue: 'other' is not one of tenant t1's queues (team), and its admission policy "
        "refuses other queues in its host namespace vcluster-t1",
    ),
    "block-nvidia-visible-devices-in-a-cpu-workload": (
        lambda r: r.update(
            kai={"blockNvidiaVisibleDevices": True},
            workloads=[
                {"name": "w", "kind": "Pod", "image": "x", "queue": "team", "env": {"NVIDIA_VISIBLE_DEVICES": "0"}}
            ],
        ),
        "kaistack:workloads[0].env.NVIDIA_VISIBLE_DEVICES: '0' is overwritten with 'void' by KAI's admission",
    ),
    "a-secret-outside-the-existing-kubeconfig": (
        lambda r: r.update(workloads=[_work(env={"HF_TOKEN": "[secret]"})]),
        "kaistack:workloads[0].env.HF_TOKEN: only cluster.existing.kubeconfig may be a secret",
    ),
    "the-same-variable-in-env-and-secret-env": (
        lambda r: r.update(
            workloads=[_work(env={"TOKEN": "x"}, secretEnv={"TOKEN": {"secret": "hf", "key": "token"}})]
        ),
        "kaistack:workloads[0]: TOKEN set in both env and secretEnv: keep one",
    ),
    "nvidia-visible-devices-from-a-secret": (
        lambda r: r.update(workloads=[_work(secretEnv={"NVIDIA_VISIBLE_DEVICES": {"secret": "s", "key": "k"}})]),
        "kaistack:workloads[0]: secretEnv.NVIDIA_VISIBLE_DEVICES: set it in env, where kaistack can check it",
    ),
    "a-secret-name-that-is-not-a-dns-subdomain": (
        lambda r: r.update(workloads=[_work(secretEnv={"TOKEN": {"secret": "HF_Token", "key": "token"}})]),
        "kaistack:workloads[0].secretEnv.TOKEN.secret: String should match pattern",
    ),
    # Both become the nodes' nvidia.com/gpu.product label (EKS node groups; fake-gpu-operator's fake nodes).
    "a-gpu-product-that-is-no-label-value": (
        lambda r: r["cluster"]["nodePools"][0].update(gpuProduct="NVIDIA L4"),
        "kaistack:cluster.nodePools[0].gpuProduct: 'NVIDIA L4' is not a Kubernetes label value",
    ),
    # pydantic's union markers are `int`, `str`...: a key that starts so is still a key.
    "a-label-key-starting-like-a-type-name": (
        lambda r: r["cluster"]["nodePools"][0].update(labels={"interconnect": "a b"}),
        "kaistack:cluster.nodePools[0].labels.interconnect: 'a b' is not a Kubernetes label value",
    ),
    "a-fake-gpu-product-that-is-no-label-value": (
        lambda r: r["gpu"].update(fake={"gpuProduct": "Tesla K80"}),
        "kaistack:gpu.fake.gpuProduct: 'Tesla K80' is not a Kubernetes label value",
    ),
    "capacity-check-max-seconds-zero": (
        lambda r: r.update(kai={"capacityCheckMaxSeconds": 0}),
        "kaistack:kai.capacityCheckMaxSeconds: Input should be greater than 0, got 0",
    ),
    "capacity-check-max-seconds-over-a-day": (
        lambda r: r.update(kai={"capacityCheckMaxSeconds": 100_000}),
        "kaistack:kai.capacityCheckMaxSeconds: Input should be less than or equal to 86400, got 100000",
    ),
    "capacity-check-max-seconds-infinite": (
        lambda r: r.update(kai={"capacityCheckMaxSeconds": float("inf")}),
        "kaistack:kai.capacityCheckMaxSeconds: Input should be a finite number",
    ),
    "node-port-out-of-range": (
        lambda r: r.update(tenants=[{"name": "a", "nodePort": 80}]),
        "kaistack:tenants[0].nodePort: Input should be greater than or equal to 30000, got 80",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_model_rule_reports_its_key_path(case):
    """The problem line starts with the full key path and says what is allowed."""
    change, expected = CASES[case]
    raw = base_raw()
    change(raw)
    with pytest.raises(ConfigError, match=re.escape(expected)) as caught:
        parse_config(raw, source="Pulumi.unit.yaml")
    assert any(p.startswith(expected.split(":")[0] + ":") for p in caught.value.problems)
    assert str(caught.value).startswith("invalid kaistack config in Pulumi.unit.yaml")


@pytest.mark.parametrize(("sharing", "share"), [("fractions", {"gpuFraction": 0.5}), ("isolated", {"gpu": 1})])
def test_hami_cores_variables_are_the_users_business_without_a_capped_share(sharing, share):
    """Without isolation nothing reads them; a whole-GPU pod gets no HAMi-core library."""
    raw = base_raw()
    raw.update(
        gpu={"mode": "device-plugin"},
        kai={"sharing": sharing},
        workloads=[_work(env={"CUDA_DEVICE_MEMORY_LIMIT_0": "80g"}, **share)],
    )
    assert parse_config(raw).workloads[0].env == {"CUDA_DEVICE_MEMORY_LIMIT_0": "80g"}


def test_a_variable_named_like_a_service_link_is_no_per_device_limit():
    """HAMi-core reads CUDA_DEVICE_MEMORY_LIMIT_<device index> only (Project-HAMi/HAMi-core
    src/multiprocess/multiprocess_memory_limit.c, do_init_device_memory_limits)."""
    raw = base_raw()
    env = {"CUDA_DEVICE_MEMORY_LIMIT_SERVICE_HOST": "10.96.0.1"}
    raw.update(gpu={"mode": "device-plugin"}, kai={"sharing": "isolated"}, workloads=[_work(gpuFraction=0.5, env=env)])
    assert parse_config(raw).workloads[0].env == env


@pytest.mark.parametrize("value", ["preemptible", "non-preemptible", ""])
def test_a_preemptibility_label_kai_reads_is_kept(value):
    raw = base_raw()
    raw.update(workloads=[_work(labels={"kai.scheduler/preemptibility": value})])
    assert parse_config(raw).workloads[0].labels == {"kai.scheduler/preemptibility": value}


def test_a_tenant_may_hold_kais_word_when_gpus_are_not_shared():
    raw = base_raw()
    raw.update(kai={"sharing": "off"}, tenants=[{"name": "shared-gpu-lab", "queues": ["team"]}])
    assert parse_config(raw).tenants[0].name == "shared-gpu-lab"


def test_all_problems_are_reported_at_once():
    """Two independent mistakes give two problem lines in one error."""
    raw = base_raw()
    raw["gpu"]["mode"] = "fakes"
    raw["queues"] = [{"name": "team", "resources": {"gpu": {"quota": 4, "limit": 2}}}]
    with pytest.raises(ConfigError, match=r"\(2 problems\)") as caught:
        parse_config(raw)
    assert [p.split(":")[1].split(".")[0] for p in caught.value.problems] == ["gpu", "queues[0]"]


def test_program_stops_with_a_run_error_before_registering_anything(mocks):
    """__main__.py raises pulumi.RunError (shown without a traceback) and creates nothing."""
    raw = base_raw()
    raw["gpu"]["mode"] = "fakes"
    mocks.set_config(raw)
    with pytest.raises(RenderError, match=re.escape("kaistack:gpu.mode: Input should be 'fake'")):
        mocks.run(__import__("platform_testlib").MAIN)
    assert mocks.resources == []


def test_program_refuses_a_decrypted_secret_outside_the_existing_kubeconfig(mocks):
    """Under `pulumi up` a `secure:` value arrives decrypted and its top-level key is listed as secret
    (PULUMI_CONFIG_SECRET_KEYS); the value itself looks like any other, so the key is what is refused."""
    raw = base_raw()
    raw["workloads"] = [_work(env={"HF_TOKEN": "hf_not_a_placeholder"})]
    mocks.set_config(raw)
    values = {f"kaistack:{k}": json.dumps(v) for k, v in raw.items()}
    pulumi.runtime.set_all_config(values, ["kaistack:workloads"])
    with pytest.raises(RenderError, match=re.escape("kaistack:workloads: holds a secret value; only cluster.exist")):
        mocks.run(__import__("platform_testlib").MAIN)
    assert mocks.resources == []


def test_a_secret_key_that_is_not_json_is_refused_without_its_value(mocks):
    """`pulumi config set --secret kaistack:cluster < kubeconfig` (the --path left out) hands the program the
    decrypted text; Pulumi's ConfigTypeError quotes it (pulumi 3.272.0 config.py, ConfigTypeError), the refusal not."""
    kubeconfig = "users:\n- user:\n    token: s3cr3t-XYZ\n"
    pulumi.runtime.set_all_config({"kaistack:cluster": kubeconfig}, ["kaistack:cluster"])
    refusal = re.escape("kaistack:cluster: not valid JSON/YAML (a secret: its value is not shown)")
    with pytest.raises(RenderError, match=refusal) as err:
        mocks.run(__import__("platform_testlib").MAIN)
    assert "s3cr3t-XYZ" not in str(err.value)
    assert mocks.resources == []


def test_a_plain_key_that_is_not_json_is_quoted_in_the_refusal(mocks):
    pulumi.runtime.set_all_config({"kaistack:cluster": "provider: kind\n  name: [x"}, [])
    with pytest.raises(RenderError, match=r"kaistack:cluster: not valid JSON/YAML \(.*provider: kind"):
        mocks.run(__import__("platform_testlib").MAIN)


def test_program_raises_pulumi_run_error_with_the_config_error_text(mocks):
    """__main__.py turns ConfigError into pulumi.RunError, which Pulumi prints without a traceback."""
    import runpy

    from platform_testlib import MAIN

    mocks.set_config({"cluster": {"provider": "nope"}})

    @pulumi.runtime.test
    def program() -> None:
        runpy.run_path(str(MAIN), run_name="__main__")

    with pytest.raises(pulumi.RunError, match=r"kaistack:cluster\.provider: Input should be 'kind'"):
        program()


json_scalars = (
    st.none() | st.booleans() | st.integers(-5, 40000) | st.floats(-2, 3, allow_nan=False) | st.text(max_size=8)
)


def _json_collections(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    # A named function, not a lambda: describing a lambda makes hypothesis parse this file's source, which on
    # CPython 3.11.7 can fail deep in a draw ("AST constructor recursion depth mismatch", fixed in 3.11.8).
    return st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=4)


json_values = st.recursive(json_scalars, _json_collections, max_leaves=12)
# Real key names so the generator reaches deep validators, not only "unknown key".
KEYS = st.sampled_from(
    [
        "provider",
        "name",
        "nodePools",
        "gpus",
        "count",
        "mode",
        "version",
        "queues",
        "parent",
        "resources",
        "gpu",
        "quota",
        "limit",
        "kind",
        "tenant",
        "queue",
        "gpuFraction",
        "existing",
        "context",
        "image",
    ]
)


def _keyed_collections(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=5)


shaped = st.recursive(json_scalars, _keyed_collections, max_leaves=16)
config_shapes = st.fixed_dictionaries(
    {},
    optional={
        "cluster": shaped,
        "gpu": shaped,
        "kai": shaped,
        "queues": shaped,
        "tenants": shaped,
        "workloads": shaped,
        "extra": json_values,
    },
)


def _problems(raw: Any) -> list[str] | None:
    """None when the config parses; the problem lines when it raises ConfigError (anything else propagates)."""
    try:
        parse_config(raw)
    except ConfigError as err:
        return err.problems
    return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=config_shapes | json_values)
def test_arbitrary_config_shapes_only_ever_raise_config_error(raw):
    """Whatever the shape, parsing returns a StackConfig or raises ConfigError, nothing else."""
    problems = _problems(raw)
    assert problems is None or (problems and all(p.startswith("kaistack") for p in problems))


@settings(max_examples=60, deadline=None)
@given(overrides=st.dictionaries(st.sampled_from(["gpu", "kai", "queues", "tenants", "workloads"]), shaped, max_size=2))
def test_arbitrary_changes_to_the_dev_stack_only_ever_raise_config_error(overrides):
    """The dev stack with random sections swapped in: valid, or a ConfigError."""
    problems = _problems({**dev_raw(), **overrides})
    assert problems is None or problems


@pytest.mark.parametrize(
    "key",
    ["node.kubernetes.io/gpu-pool", "x.kubelet.kubernetes.io/y", "topology.kubernetes.io/zone", "acme.com/k8s.io"],
)
def test_node_labels_kubelet_may_set_itself_are_accepted(key):
    raw = base_raw()
    raw["cluster"]["nodePools"][0]["labels"] = {key: "a"}
    assert parse_config(raw).cluster.node_pools[0].labels == {key: "a"}


def test_an_existing_clusters_node_labels_are_only_read_so_any_is_accepted():
    raw = base_raw()
    raw["cluster"] = {**raw["cluster"], "provider": "existing", "existing": {"context": "lab"}}
    raw["cluster"]["nodePools"][0]["labels"] = {"node-role.kubernetes.io/gpu": ""}
    assert parse_config(raw).cluster.node_pools[0].labels == {"node-role.kubernetes.io/gpu": ""}


def test_dev_stack_is_valid():
    """The stack file in the repository parses."""
    assert parse_config(dev_raw()).cluster.provider == "kind"


def test_base_config_runs_end_to_end(mocks):
    """The config the error cases start from is valid and runs (so each case breaks one rule)."""
    run_program(mocks, base_raw())
    assert mocks.resources


def test_the_old_sharing_knobs_are_refused_naming_the_one_that_replaced_them() -> None:
    raw = base_raw()
    raw["kai"] = {"gpuSharing": True, "memoryIsolation": True}
    with pytest.raises(
        ConfigError, match=r"gpuSharing and memoryIsolation replaced by sharing: off \| fractions \| isolated"
    ):
        parse_config(raw, source="test")


def test_nv_fractions_sharing_is_refused_as_in_no_verified_kai_release() -> None:
    raw = base_raw()
    raw["kai"] = {"sharing": "NvFractions"}
    with pytest.raises(
        ConfigError, match=r"NvFractions \(global.gpuSharingMode\) is in no KAI release kaistack has checked"
    ):
        parse_config(raw, source="test")


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda w: w.update(labels={"bad key": "v"}),
            "kaistack:workloads[0].labels.'bad key': 'bad key' is not a Kubernetes label or annotation key",
        ),
        (
            lambda w: w.update(labels={"team": "x" * 64}),
            "kaistack:workloads[0].labels.team: String should have at most 63 characters",
        ),
        (
            lambda w: w.update(nodeSelector={"zone": "eu west"}),
            "kaistack:workloads[0].nodeSelector.zone: 'eu west' is not a Kubernetes label value",
        ),
        (
            lambda w: w.update(annotations={"a/b/c": "x"}),
            "kaistack:workloads[0].annotations.a/b/c: 'a/b/c' is not a Kubernetes label or annotation key",
        ),
        (
            lambda w: w.update(env={"A=B": "x"}),
            "kaistack:workloads[0].env.'A=B': 'A=B' is not an environment variable name",
        ),
    ],
    ids=["label-key", "label-value-length", "node-selector-value", "annotation-key", "env-name"],
)
def test_metadata_the_api_server_would_refuse_is_refused_before_anything_is_created(change, expected):
    """k8s.io/apimachinery/pkg/util/validation IsQualifiedName / IsValidLabelValue (placement.k8s_names); otherwise
    `pulumi up` fails on the workload after the cluster and its charts are up."""
    raw = base_raw()
    raw["workloads"] = [{"name": "w", "kind": "Pod", "queue": "team", "image": "x"}]
    change(raw["workloads"][0])
    with pytest.raises(ConfigError, match=re.escape(expected)):
        parse_config(raw)


def test_an_annotation_key_is_checked_lowercased_as_the_api_server_does():
    """k8s.io/apimachinery/pkg/api/validation ValidateAnnotations: IsQualifiedName(strings.ToLower(k)); label keys are
    checked as written."""
    raw = base_raw()
    raw["workloads"] = [
        {"name": "w", "kind": "Pod", "queue": "team", "image": "x", "annotations": {"Example.com/x": "1"}}
    ]
    assert parse_config(raw).workloads[0].annotations == {"Example.com/x": "1"}
    raw["workloads"][0]["labels"] = {"Example.com/x": "1"}
    with pytest.raises(ConfigError, match=r"labels\.Example\.com/x: 'Example\.com/x' is not a Kubernetes label"):
        parse_config(raw)


def test_block_nvidia_visible_devices_is_accepted_from_v0_16_0_on() -> None:
    """KAI@v0.16.0 deployments/kai-scheduler/templates/_helpers.tpl and values.yaml carry the key; v0.15.x's do not."""
    raw = base_raw()
    raw["kai"] = {"version": "v0.16.0", "blockNvidiaVisibleDevices": True}
    assert parse_config(raw).kai.block_nvidia_visible_devices is True


@pytest.mark.parametrize("value", [None, [1]])
def test_a_queue_quota_that_is_no_number_names_its_key(value: Any) -> None:
    """An empty `quota:` in YAML is null: a ConfigError naming the key, not a TypeError."""
    raw = base_raw()
    raw["queues"] = [{"name": "t", "resources": {"gpu": {"quota": value}}}]
    with pytest.raises(ConfigError, match=r"kaistack:queues\[0\]\.resources\.gpu\.quota: "):
        parse_config(raw)


def _restricted_tenant(with_workload: bool) -> dict[str, Any]:
    raw = dev_raw()
    raw["tenants"][0].setdefault("isolation", {})["podSecurityStandard"] = "restricted"
    if not with_workload:
        tenant = raw["tenants"][0]["name"]
        raw["workloads"] = [w for w in raw["workloads"] if w.get("tenant") != tenant]
    return raw


def test_a_restricted_tenant_with_workloads_kaistack_renders_is_refused():
    """vCluster labels each virtual namespace enforce=restricted and holds each synced pod to it
    (loft-sh/vcluster@v0.36.1 pkg/controllers/podsecurity/podsecurity.go, pods/validate_pod_security.go); kaistack
    renders no securityContext, so the virtual API server would refuse every pod of them."""
    raw = _restricted_tenant(with_workload=True)
    with pytest.raises(
        ConfigError, match=r"tenants\[0\]\.isolation\.podSecurityStandard: 'restricted' refuses every pod"
    ):
        parse_config(raw, source="Pulumi.unit.yaml")


def test_a_restricted_tenant_without_workloads_of_kaistacks_is_accepted():
    raw = _restricted_tenant(with_workload=False)
    config = parse_config(raw, source="Pulumi.unit.yaml")
    assert config.tenants[0].isolation.pod_security_standard == "restricted"
