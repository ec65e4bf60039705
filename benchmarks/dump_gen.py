"""A deterministic busy cluster as `kubectl get nodes,pods,podgroups,bindrequests,queues -A -o yaml` writes it.

For timing `kaistack diagnose --from-dump` at scale:

    .venv/bin/python benchmarks/dump_gen.py --nodes 2000 --pods 14000 > /tmp/dump-2000.yaml
    /usr/bin/time -f '%e s %M KB' .venv/bin/kaistack diagnose --from-dump /tmp/dump-2000.yaml --json > /dev/null

Nodes have 8 GPUs of 80 GiB. Queues are 10 departments of 10 projects with GPU quotas. About three quarters of
the pods run (whole GPUs, and gpu-fraction pods sharing GPUs through their `runai-gpu-group` label); the rest
are Pending, each in its own PodGroup. One pod in a hundred is being deleted, half of them long enough ago to
be StuckInReleasing at `--at`.

`--local-volumes N` adds a WaitForFirstConsumer class without a provisioner (local disks), N Available volumes of
it, one per node in turn (hostname node affinity), and a claim of that class for every Pending pod: the volume
binding check then looks for a matching volume on every node for each of them (kaistack/ops/live_volumes.py).
`--zonal` gives the volumes a zone's affinity instead (nodes are in 3 zones), so each admits a third of the nodes;
`--claim-sizes` makes every claim a different size, so no two share FindMatchingVolume's reading.
`--daemonsets K` runs K other-scheduler pods on every node, and `--preferred` gives one pending pod a preferred
anti-affinity term, so KAI's podaffinity scoring runs for every pod placed (placement/pod_affinity.py).
"""

from __future__ import annotations

import argparse
import random
import sys
from typing import Any

import yaml

GPUS = 8
AT = "2026-11-25T12:00:00Z"


def _queue(name: str, parent: str | None, quota: float) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "resources": {
            "gpu": {"quota": quota, "limit": -1, "overQuotaWeight": 1},
            "cpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
            "memory": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
        }
    }
    if parent:
        spec["parentQueue"] = parent
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def _node(i: int) -> dict[str, Any]:
    allocatable = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": str(GPUS)}
    labels = {"kubernetes.io/hostname": f"node-{i:05d}", "nvidia.com/gpu.memory": "81920"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{i:05d}", "labels": labels},
        "spec": {},
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def _pod(name: str, queue: str, group: str, gpu: float, node: str | None, gpu_group: str | None) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": "2", "memory": "8Gi"}}
    annotations = {"pod-group-name": group}
    labels = {"kai.scheduler/queue": queue}
    if gpu >= 1:
        resources["limits"] = {"nvidia.com/gpu": str(int(gpu))}
    elif gpu > 0:
        annotations["gpu-fraction"] = str(gpu)
        if gpu_group:
            labels["runai-gpu-group"] = gpu_group
    spec: dict[str, Any] = {
        "schedulerName": "kai-scheduler",
        "containers": [{"name": "main", "image": "trainer:1", "resources": resources}],
    }
    if node:
        spec["nodeName"] = node
    metadata = {"name": name, "namespace": "ml", "labels": labels, "annotations": annotations}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec,
            "status": {"phase": "Running" if node else "Pending"}}  # fmt: skip


def _pod_group(name: str, queue: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"queue": queue, "minMember": 1, "priorityClassName": "train"},
    }


def generate(nodes: int, pods: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    items: list[dict[str, Any]] = [_node(i) for i in range(nodes)]
    projects = []
    per_project = nodes * GPUS / 100
    for d in range(10):
        items.append(_queue(f"dept-{d}", None, per_project * 10))
        for p in range(10):
            projects.append(f"team-{d}-{p}")
            items.append(_queue(projects[-1], f"dept-{d}", per_project))
    free = [GPUS] * nodes
    shared: list[tuple[int, str, float]] = []  # (node, group, fraction left)
    for i in range(pods):
        queue = rng.choice(projects)
        group = f"job-{i:06d}"
        items.append(_pod_group(group, queue))
        fraction = rng.random() < 0.3
        gpu = rng.choice([0.25, 0.5]) if fraction else float(rng.choice([1, 1, 2, 4]))
        node_index, gpu_group = None, None
        if rng.random() < 0.75:
            if fraction:
                fits = [k for k, s in enumerate(shared) if s[2] >= gpu]
                if fits:
                    k = fits[0]
                    node_index, gpu_group, left = shared[k]
                    shared[k] = (node_index, gpu_group, left - gpu)
                else:
                    node_index = next((n for n in range(rng.randrange(nodes), nodes) if free[n] >= 1), None)
                    if node_index is not None:
                        free[node_index] -= 1
                        gpu_group = f"g-{i:06d}"
                        shared.append((node_index, gpu_group, 1 - gpu))
            else:
                node_index = next((n for n in range(rng.randrange(nodes), nodes) if free[n] >= gpu), None)
                if node_index is not None:
                    free[node_index] -= int(gpu)
        node = f"node-{node_index:05d}" if node_index is not None else None
        pod = _pod(f"{group}-0", queue, group, gpu, node, gpu_group)
        if node and i % 100 == 0:
            # Deleted 1 or 10 minutes before AT: Releasing, or StuckInReleasing.
            pod["metadata"]["deletionTimestamp"] = "2026-11-25T11:59:00Z" if i % 200 else "2026-11-25T11:50:00Z"
        items.append(pod)
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


def add_daemonsets(doc: dict[str, Any], nodes: int, per_node: int, preferred: bool) -> None:
    """`per_node` DaemonSet pods (another scheduler's, running, no GPU) on every node; `preferred`: the first
    pending KAI pod prefers to keep away from app=web, so KAI's podaffinity scoring runs for every pod."""
    items = doc["items"]
    for i in range(nodes):
        for k in range(per_node):
            spec = {"nodeName": f"node-{i:05d}", "containers": [{"name": "agent", "image": f"agent-{k}:1"}]}
            metadata = {"name": f"ds-{k}-{i:05d}", "namespace": "kube-system", "labels": {"app": f"ds-{k}"}}
            items.append({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec,
                          "status": {"phase": "Running"}})  # fmt: skip
    if preferred:
        pending = next(i for i in items if i["kind"] == "Pod" and "nodeName" not in i["spec"])
        term = {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "web"}}}
        anti = {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "podAffinityTerm": term}]}
        pending["spec"]["affinity"] = {"podAntiAffinity": anti}


LOCAL = "local-nvme"
ZONE = "topology.kubernetes.io/zone"
ZONES = 3


def add_local_volumes(doc: dict[str, Any], nodes: int, volumes: int, zonal: bool = False, sizes: bool = False) -> None:
    items = doc["items"]
    klass = {"provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"}
    items.append({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": LOCAL}, **klass})
    if zonal:
        for i, node in enumerate(i for i in items if i["kind"] == "Node"):
            node["metadata"]["labels"][ZONE] = f"z{i % ZONES}"
    for v in range(volumes):
        host = {"key": "kubernetes.io/hostname", "operator": "In", "values": [f"node-{v % nodes:05d}"]}
        if zonal:
            host = {"key": ZONE, "operator": "In", "values": [f"z{v % ZONES}"]}
        spec = {
            "storageClassName": LOCAL,
            "capacity": {"storage": f"{100 + v % 7 * 100}Gi"},
            "accessModes": ["ReadWriteOnce"],
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [host]}]}},
        }
        pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"local-{v:06d}"}, "spec": spec}
        items.append({**pv, "status": {"phase": "Available"}})
    for n, pod in enumerate([i for i in items if i["kind"] == "Pod" and "nodeName" not in i["spec"]]):
        claim = f"scratch-{pod['metadata']['name']}"
        pod["spec"]["volumes"] = [{"name": "scratch", "persistentVolumeClaim": {"claimName": claim}}]
        pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "scratch", "mountPath": "/scratch"}]
        spec = {
            "storageClassName": LOCAL,
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": f"{200 * 1024 + n}Mi" if sizes else "200Gi"}},
        }
        metadata = {"name": claim, "namespace": "ml"}
        items.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata, "spec": spec,
                      "status": {"phase": "Pending"}})  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--pods", type=int, default=14000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--local-volumes", type=int, default=0, metavar="N", help="local volumes and claims (above)")
    parser.add_argument("--zonal", action="store_true", help="volumes usable in a zone (of 3), not on one node")
    parser.add_argument("--claim-sizes", action="store_true", help="every claim a different size (no two alike)")
    parser.add_argument("--daemonsets", type=int, default=0, metavar="K", help="K DaemonSet pods on every node")
    parser.add_argument("--preferred", action="store_true", help="one pending pod with a preferred anti-affinity")
    args = parser.parse_args()
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    sys.stdout.write(
        f"# dump_gen.py --nodes {args.nodes} --pods {args.pods} --seed {args.seed} --local-volumes "
        f"{args.local_volumes}{' --zonal' if args.zonal else ''}{' --claim-sizes' if args.claim_sizes else ''}"
        f" --daemonsets {args.daemonsets}{' --preferred' if args.preferred else ''}; read it --at {AT}\n"
    )
    doc = generate(args.nodes, args.pods, args.seed)
    if args.local_volumes:
        add_local_volumes(doc, args.nodes, args.local_volumes, args.zonal, args.claim_sizes)
    if args.daemonsets or args.preferred:
        add_daemonsets(doc, args.nodes, args.daemonsets, args.preferred)
    yaml.dump(doc, sys.stdout, Dumper=dumper, sort_keys=False, width=10**6)
    return 0


if __name__ == "__main__":
    sys.exit(main())
