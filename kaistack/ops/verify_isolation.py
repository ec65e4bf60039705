"""`memory-isolation` (kaistack verify, `kai.sharing: isolated`): each GPU-sharing pod is held to its GPU memory.

Three pieces meet in every such pod, and each of them fails open, so a pod can run uncapped beside its GPU's other
tenants while everything reports healthy:

- KAI's admission (hamicore plugin) puts `CUDA_DEVICE_MEMORY_LIMIT` into the fraction container's env, read from the
  pod's GPU-sharing ConfigMap with `optional: true` (KAI@v0.17.0
  pkg/admission/webhook/v1alpha2/hamicore/hamicore.go:34-66). A pod admitted before the plugin was on lacks it.
- KAI's binder (hamicore PreBind) writes that key into the ConfigMap, and binds the pod anyway, writing nothing,
  when the node's `nvidia.com/gpu.memory` label is missing or not a whole number of MiB
  (pkg/binder/plugins/hamicore/hami_core.go:33-77). The variable is then unset and HAMi-core enforces no limit.
- HAMi's isolator webhook mounts libvgpu's `/etc/ld.so.preload` into the fraction container
  (Project-HAMi/KAI-resource-isolator cmd/webhook/main.go, buildJSONPatch); its failurePolicy is Ignore
  (chart/kai-resource-isolator/values.yaml, webhook.failurePolicy), so a pod created while the webhook is down,
  or one annotated `kai-resource-isolator.io/inject: "false"`, runs without the library.

Only pods that hold their share count (bound or running, not being deleted); a pod not bound yet is checked for
what admission gave it. The fraction container is the one KAI and the isolator pick (GetFractionContainerRef,
KAI@v0.17.0 pkg/binder/common/gpu_access.go:182-215): named by `gpu-fraction-container-name`, init containers
first, else the first container.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kaistack.declaration import kai_api
from kaistack.declaration.model import StackConfig
from kaistack.guardrails.fraction_container import pod_fraction_container
from kaistack.kube import resources as k8s
from kaistack.kube.client import KubeAPIError, KubeClient
from kaistack.ops.verify_common import CheckResult, WorkloadPods, holds_share, pod_annotations, pod_name, pods_phrase

CHECK = "memory-isolation"
MEMORY_LIMIT = kai_api.HAMI_MEMORY_LIMIT
PRELOAD = "/etc/ld.so.preload"
OPT_OUT = "kai-resource-isolator.io/inject"  # the isolator skips a pod whose value is "false", any case
SHOWN = 3


def check_memory_isolation(
    config: StackConfig, client: KubeClient, pods: WorkloadPods
) -> tuple[list[CheckResult], list[str]]:
    """One result per GPU-sharing workload of an isolated stack, and notes for what could not be read."""
    if not config.kai.memory_isolation:
        return [], []
    limits = _Limits(client)
    results = []
    for work in config.workloads:
        if not (work.shares_gpu and work.pod_count):
            continue
        held = [p for p in pods.of(work) if holds_share(p)]
        if not held:
            continue  # workload-running says why nothing runs
        problems = [f"{pod_name(p)}: {why}" for p in held if (why := _uncapped(p, limits)) is not None]
        subject = work.name if work.tenant is None else f"{work.tenant}/{work.name}"
        if problems:
            detail = "; ".join(problems[:SHOWN]) + (
                f" (and {len(problems) - SHOWN} more)" if len(problems) > SHOWN else ""
            )
            results.append(CheckResult(CHECK, subject, False, detail + ": the pod runs without its GPU memory cap"))
        else:
            capped = f"{pods_phrase(len(held))} held to their GPU memory ({MEMORY_LIMIT} and HAMi's {PRELOAD})"
            results.append(CheckResult(CHECK, subject, True, capped))
    return results, limits.notes


def _uncapped(pod: Mapping[str, Any], limits: _Limits) -> str | None:
    """Why the pod's fraction container is not held to its share of GPU memory, or None."""
    container = pod_fraction_container(pod)
    if container is None:
        return f"no container {pod_annotations(pod).get(kai_api.GPU_FRACTION_CONTAINER_NAME)!r} for its GPU share"
    label = f"container {container.get('name', '?')}"
    if str(pod_annotations(pod).get(OPT_OUT, "")).lower() == "false":
        return f'annotated {OPT_OUT}: "false", which HAMi\'s isolator skips'
    if not any(m.get("mountPath") == PRELOAD for m in container.get("volumeMounts") or []):
        return (
            f"{label} has no {PRELOAD} mount: HAMi's isolator did not inject its library (its webhook fails open; "
            "re-create the pod once kai-resource-isolator's webhook runs)"
        )
    source = _limit_source(container)
    if source is None:
        return (
            f"{label} has no {MEMORY_LIMIT} from KAI's GPU-sharing ConfigMap: the pod was admitted without KAI's "
            "hamicore plugin (re-create it)"
        )
    if not (pod.get("spec") or {}).get("nodeName"):
        return None  # the binder writes the limit when it binds the pod
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    found = limits.value(namespace, source)
    if found == "missing":
        return f"its GPU-sharing ConfigMap {source} is missing, so {MEMORY_LIMIT} is unset"
    if found == "empty":
        return (
            f"ConfigMap {source} holds no {MEMORY_LIMIT}: KAI's binder writes none when the node's "
            f"{kai_api.GPU_MEMORY_LABEL} label is missing or not a whole number of MiB"
        )
    return None


def _limit_source(container: Mapping[str, Any]) -> str | None:
    """The ConfigMap the container's CUDA_DEVICE_MEMORY_LIMIT comes from (the last entry wins, as in the kubelet)."""
    entries = [e for e in container.get("env") or [] if isinstance(e, Mapping) and e.get("name") == MEMORY_LIMIT]
    if not entries:
        return None
    ref = ((entries[-1].get("valueFrom") or {}).get("configMapKeyRef")) or {}
    if ref.get("key") != MEMORY_LIMIT or not ref.get("name"):
        return None
    return str(ref["name"])


class _Limits:
    """The GPU-sharing ConfigMaps' CUDA_DEVICE_MEMORY_LIMIT, read once each; notes for those not readable."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client
        self._seen: dict[tuple[str, str], str | None] = {}
        self.notes: list[str] = []

    def value(self, namespace: str, name: str) -> str | None:
        """ "set" or "empty" (the key has no value), "missing" (no such ConfigMap), None when it may not be read."""
        key = (namespace, name)
        if key not in self._seen:
            try:
                data = self._client.get(k8s.ConfigMap, name, namespace=namespace).get("data") or {}
                self._seen[key] = "set" if data.get(MEMORY_LIMIT) else "empty"
            except KubeAPIError as err:
                if err.status == 404:
                    self._seen[key] = "missing"
                elif err.status == 403:
                    self._seen[key] = None
                    self.notes.append(
                        f"{CHECK}: ConfigMap {namespace}/{name} not read: {err}; grant `get` on configmaps to check "
                        "that KAI's binder wrote the pod's memory limit"
                    )
                else:
                    raise
        return self._seen[key]
