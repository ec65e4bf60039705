"""Kubernetes objects for the volume-binding tests: nodes, a queue, pods with claims, claims, volumes, classes."""

from __future__ import annotations

from typing import Any


def node(name: str, zone: str, gpus: str = "8") -> dict[str, Any]:
    allocatable = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": gpus}
    labels = {"topology.kubernetes.io/zone": zone, "kubernetes.io/hostname": name}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {"allocatable": allocatable},
    }


def queue() -> dict[str, Any]:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    resources = {"gpu": unlimited, "cpu": unlimited, "memory": unlimited}
    return {"kind": "Queue", "metadata": {"name": "q"}, "spec": {"resources": resources}}


def pod(name: str, *claims: str) -> dict[str, Any]:
    container = {"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    volumes = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    metadata = {"name": name, "namespace": "ml", "uid": f"uid-{name}", "labels": {"kai.scheduler/queue": "q"}}
    spec = {"schedulerName": "kai-scheduler", "containers": [container], "volumes": volumes}
    return {"kind": "Pod", "metadata": metadata, "spec": spec, "status": {"phase": "Pending"}}


def claim(name: str, klass: str = "standard", volume: str | None = None, **extra: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "ml", "uid": f"uid-{name}", **extra}
    spec: dict[str, Any] = {
        "storageClassName": klass,
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "10Gi"}},
    }
    status = {"phase": "Pending"}
    if volume is not None:
        spec["volumeName"] = volume
        metadata.setdefault("annotations", {})["pv.kubernetes.io/bind-completed"] = "yes"
        status = {"phase": "Bound"}
    return {"kind": "PersistentVolumeClaim", "metadata": metadata, "spec": spec, "status": status}


def volume(name: str, klass: str, hostname: str | None, phase: str = "Available", size: str = "20Gi") -> dict[str, Any]:
    spec: dict[str, Any] = {"storageClassName": klass, "capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"]}
    if hostname is not None:
        expression = {"key": "kubernetes.io/hostname", "operator": "In", "values": [hostname]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [expression]}]}}
    return {"kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec, "status": {"phase": phase}}


def storage_class(name: str, mode: str, provisioner: str = "ebs.csi.aws.com", **extra: Any) -> dict[str, Any]:
    return {
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
        **extra,
    }
