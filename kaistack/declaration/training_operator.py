"""The Kubeflow training operator kaistack installs where a PyTorchJob runs, and what it takes in a tenant.

Inside a tenant the operator's pod syncs to the host namespace, where the tenant's admission policy
admits only KAI-scheduled pods of the tenant's queues (guardrails/admission.py). Upstream's Deployment
names no scheduler and no queue, so as shipped its pod would be refused, the Deployment would never
become ready and `pulumi up` would wait for it to time out. kaistack has KAI schedule it, as a
CPU-only pod in the tenant's first queue (components/workloads.py applies `schedule_with_kai` to the
kustomization's objects).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from kaistack.declaration import kai_api

# The v1 API (kubeflow.org/v1 PyTorchJob), the stable release the Kubeflow install guide names
# (kubeflow.org/docs/components/training/installation: `kubectl apply --server-side -k
# "github.com/kubeflow/training-operator.git/manifests/overlays/standalone?ref=v1.8.1"`).
VERSION = "v1.8.1"
# kustomize.v2.Directory hands the string to kustomize's own loader, which splits repository from
# path at `//` and takes the ref from `?ref=` (kustomize api v0.21.1 internal/git/repospec.go;
# pulumi-kubernetes v4.32.0 provider/pkg/provider/kustomize/v2/directory.go passes it unchanged). A
# GitHub `/tree/<ref>/` page URL is not understood (pulumi/pulumi-kubernetes#3358). Needs `git` where
# the provider runs.
KUSTOMIZATION = f"https://github.com/kubeflow/training-operator//manifests/overlays/standalone?ref={VERSION}"
# kubeflow/training-operator@v1.8.1: manifests/base/deployment.yaml (Deployment `training-operator`, one
# replica, a container with no resources) and manifests/overlays/standalone/kustomization.yaml
# (`namespace: kubeflow`).
# The operator never recreates a running replica's pod when its template changes: it creates missing
# indexes and deletes out-of-range ones only (kubeflow/training-operator@v1.8.1
# pkg/controller.v1/common/pod.go:312-375). Updated in place, a PyTorchJob with a new image keeps running the
# old one, so kaistack replaces it, as pulumi-kubernetes replaces a Job whose template changes. A Pulumi
# replaceOnChanges path, `*` matching each replica type (pulumi/pulumi@v3.259.0
# sdk/go/common/resource/properties_path.go:310-340).
REPLACED_ON_CHANGES = "spec.pytorchReplicaSpecs.*.template"
DEPLOYMENT = "training-operator"
NAMESPACE = "kubeflow"
# What the operator adds to a tenant's host namespace, for its quota: one pod (requests and limits are the
# LimitRange defaults, filled in by tenant_sizing), its Service (manifests/base/service.yaml), whose
# Endpoints the host writes, and the webhook certificate Secret its pod mounts
# (overlays/standalone/kustomization.yaml secretGenerator), which vCluster syncs because a pod uses it.
OBJECTS: dict[str, Fraction] = {
    "count/pods": Fraction(1),
    "count/services": Fraction(1),
    "count/secrets": Fraction(1),
}


# What the operator adds to every Worker pod of a PyTorchJob that has a Master: an init container
# `init-pytorch` that waits for the master's DNS name (kubeflow/training-operator@v1.8.1
# pkg/controller.v1/pytorch/initcontainer.go, initContainerTemplate and setInitContainer). A pod asks for
# the larger of its containers' sum and any one init container (KAI@v0.17.0 pkg/scheduler/api/pod_info/
# pod_info.go, SetMaxResource(initPhasePeak); the same rule in Kubernetes' resource quota).
INIT_REQUESTS = {"cpu": Fraction(50, 1000), "memory": Fraction(10 * 2**20)}
INIT_LIMITS = {"cpu": Fraction(100, 1000), "memory": Fraction(20 * 2**20)}


def has_init_container(work_kind: str, masters: int, index: int) -> bool:
    """Pod `index` of a PyTorchJob (masters first, then workers) gets the operator's init container."""
    return work_kind == "PyTorchJob" and masters > 0 and index >= masters


def is_operator(kind: str, metadata: Mapping[str, Any] | None) -> bool:
    """The operator's own Deployment (not any other object of the kustomization)."""
    if kind != "Deployment" or not isinstance(metadata, Mapping):
        return False
    return metadata.get("name") == DEPLOYMENT and metadata.get("namespace") in (None, NAMESPACE)


def schedule_with_kai(props: Mapping[str, Any], queue_label_key: str, queue: str) -> dict[str, Any] | None:
    """The operator's Deployment with its pods scheduled by KAI in `queue`; None for any other object.

    `props` are the object's fields as Pulumi registers them (`kind`, `metadata`, `spec`). Nothing else of
    upstream's pod template changes.
    """
    # The engine's props may leave `kind` out: the transform is only given Deployments.
    if not is_operator(str(props.get("kind", "Deployment")), props.get("metadata")):
        return None
    spec = props.get("spec")
    template = spec.get("template") if isinstance(spec, Mapping) else None
    if not isinstance(template, Mapping):
        return None
    patched = copy.deepcopy(dict(props))
    template = patched["spec"]["template"]
    metadata = template.setdefault("metadata", {})
    metadata.setdefault("labels", {})[queue_label_key] = queue
    template.setdefault("spec", {})["schedulerName"] = kai_api.SCHEDULER_NAME
    return patched
