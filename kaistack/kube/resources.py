"""The Kubernetes kinds kaistack reads, as lightkube resource classes for `KubeClient.list` / `get`.

Core and apps kinds are lightkube's typed models. KAI's custom resources have no models, so they are
generic resources built from kai_api's names: that module is the one place the group, version, kind
and plural are spelled, and the Pulumi program creates the same CRDs from it.
"""

from __future__ import annotations

from lightkube.generic_resource import create_global_resource, create_namespaced_resource
from lightkube.resources.admissionregistration_v1 import MutatingWebhookConfiguration, ValidatingWebhookConfiguration
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import ConfigMap, Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod
from lightkube.resources.scheduling_v1 import PriorityClass
from lightkube.resources.storage_v1 import StorageClass

from kaistack.declaration.kai_api import BIND_REQUEST, KAI_CONFIG, POD_GROUP, QUEUE, SCHEDULING_SHARD, TOPOLOGY_CRD

Queue = create_global_resource(QUEUE.group, QUEUE.version, QUEUE.kind, QUEUE.plural)
PodGroup = create_namespaced_resource(POD_GROUP.group, POD_GROUP.version, POD_GROUP.kind, POD_GROUP.plural)
BindRequest = create_namespaced_resource(
    BIND_REQUEST.group, BIND_REQUEST.version, BIND_REQUEST.kind, BIND_REQUEST.plural
)
Topology = create_global_resource(TOPOLOGY_CRD.group, TOPOLOGY_CRD.version, TOPOLOGY_CRD.kind, TOPOLOGY_CRD.plural)
KaiConfig = create_global_resource(KAI_CONFIG.group, KAI_CONFIG.version, KAI_CONFIG.kind, KAI_CONFIG.plural)
SchedulingShard = create_global_resource(
    SCHEDULING_SHARD.group, SCHEDULING_SHARD.version, SCHEDULING_SHARD.kind, SCHEDULING_SHARD.plural
)

__all__ = [
    "BindRequest",
    "ConfigMap",
    "Deployment",
    "Job",
    "KaiConfig",
    "MutatingWebhookConfiguration",
    "Namespace",
    "Node",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Pod",
    "PodGroup",
    "PriorityClass",
    "Queue",
    "SchedulingShard",
    "StorageClass",
    "Topology",
    "ValidatingWebhookConfiguration",
]
