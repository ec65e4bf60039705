"""Which container of a GPU-sharing pod gets its share, and when that is not the one that uses the GPU.

KAI gives a pod's GPU share (`gpu-fraction` or `gpu-memory`) to one container: the one the
`gpu-fraction-container-name` annotation names (init containers searched first), else the first regular
container (KAI@v0.17.0 pkg/binder/common/gpu_access.go:182-219, GetFractionContainerRef). Its admission webhook
writes the share's NVIDIA_VISIBLE_DEVICES into that container alone (pkg/admission/webhook/v1alpha2/gpusharing/
gpu_sharing.go:50-75) and, where device access is blocked, sets NVIDIA_VISIBLE_DEVICES=void in every other
container that asks for no GPU (deviceaccess/device_access.go:58-110; registered only with
--block-nvidia-visible-devices, cmd/admission/main.go:54-55, which kaistack turns on where tenants exist). So a second
container that runs the model server gets no GPU; with the block off, the pod still runs under KAI's GPU runtime
class (runtimeenforcement/runtime_enforcement.go:31-41), and a CUDA image's own `ENV NVIDIA_VISIBLE_DEVICES=all`
hands that container every GPU of the node, unshared and uncounted.

Two ways it goes wrong without anyone writing it down:
- a service mesh injects its proxy as the first container: Linkerd's proxy-await, on by default, puts
  linkerd-proxy at `containers/0` unless the proxy is a native sidecar (linkerd/linkerd2@version-2.19
  charts/patch/templates/patch.json:135-140; `proxy.nativeSidecar` defaults to false there and to true from
  version-2.20, charts/linkerd-control-plane/values.yaml), and Istio moves istio-proxy first under
  holdApplicationUntilProxyStarts when it is not a native sidecar (istio/istio@1.29.6 pkg/kube/inject/
  webhook.go:780-812, reorderPod);
- the model server (vLLM, TGI) is not the first container and no annotation names it.

A mesh injects at admission, so a manifest shows the proxy only when it was injected by hand (`linkerd inject
--manual`, `istioctl kube-inject`); the tenant admission policy and `kaistack diagnose` see the pod as created.
Naming the application's container fixes a pod the proxy reached before KAI's webhook. The API server calls
mutating webhook configurations in name order (k8s.io/apiserver pkg/admission/configuration/
mutating_webhook_manager.go sorts them ByName; its behaviour, not a documented guarantee), and KAI's
`mutating-kai-admission` (KAI@v0.17.0 pkg/apis/kai/v1/admission/admission.go:17) comes after Istio's
`istio-sidecar-injector` and Linkerd's `linkerd-proxy-injector-webhook-config`. Were KAI's configuration renamed to
sort first, the proxy would land after KAI's webhook, which then runs again (reinvocationPolicy IfNeeded) with the
share's ConfigMaps already named after the application's old container index: unproven on a cluster, so the fixes
name a native sidecar first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from kaistack.declaration import kai_api
from kaistack.declaration.model_servers import runs_tgi, runs_vllm
from kaistack.guardrails.podspec import PodTemplate, mapping, seq

# A mesh's proxy container name -> how to keep it out of the first place.
# Linkerd reads the alpha key from version-2.15 (linkerd2@version-2.15 pkg/k8s/labels.go:269, @version-2.18 :287) to
# version-2.20, where it comes after the beta and unprefixed keys (@version-2.20 pkg/inject/inject.go:430-445; beta
# from version-2.19); native sidecars need Kubernetes 1.29. Istio ORs the pod's proxy config with its Helm value
# global.proxy.holdApplicationUntilProxyStarts (istio@1.29.6 pkg/kube/inject/webhook.go:793-794), which no pod
# annotation turns off.
MESH_PROXIES: dict[str, str] = {
    "linkerd-proxy": 'inject the proxy as a native sidecar (config.alpha.linkerd.io/proxy-enable-native-sidecar: "true"'
    ", Kubernetes 1.29 or later; the default from Linkerd version-2.20) or last (config.linkerd.io/proxy-await: "
    "disabled)",
    "istio-proxy": 'inject the proxy as a native sidecar (sidecar.istio.io/nativeSidecar: "true") or last '
    "(proxy.istio.io/config: '{\"holdApplicationUntilProxyStarts\": false}', unless the mesh sets it in its Helm "
    "values)",
}
NO_GPU = (
    "gets no GPU where KAI blocks device access (NVIDIA_VISIBLE_DEVICES=void), and with the block off a CUDA image's "
    "own NVIDIA_VISIBLE_DEVICES=all gives it every GPU of the node"
)


def has_share(annotations: Mapping[str, Any]) -> bool:
    """KAI@v0.17.0 pkg/common/resources/gpu_sharing.go:21-25 (RequestsGPUFraction): either annotation, any value."""
    return any(key in annotations for key in kai_api.GPU_SHARING_ANNOTATIONS)


def fraction_container(spec: Mapping[str, Any], annotations: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The container KAI gives the GPU share to; None when the pod names one it lacks (KAI refuses it) or has no
    containers."""
    containers = [c for c in seq(spec.get("containers")) if isinstance(c, Mapping)]
    if kai_api.GPU_FRACTION_CONTAINER_NAME not in annotations:
        return containers[0] if containers else None
    name = annotations[kai_api.GPU_FRACTION_CONTAINER_NAME]
    inits = [c for c in seq(spec.get("initContainers")) if isinstance(c, Mapping)]
    return next((c for c in [*inits, *containers] if c.get("name") == name), None)


def fraction_container_problems(t: PodTemplate, admitted: bool = False) -> list[tuple[str, str]]:
    """(problem, fix) pairs for a GPU-sharing pod whose share does not reach the container that uses the GPU.
    `admitted`: a pod read back from a cluster, whose mesh (if any) has injected already: only what it holds counts."""
    if not has_share(t.annotations):
        return []
    chosen = fraction_container(t.spec, t.annotations)
    if chosen is None:
        return []  # a name the pod lacks: KAI's own webhook refuses it (kai-gpu-sharing-annotations)
    name = str(chosen.get("name", "?"))
    named = kai_api.GPU_FRACTION_CONTAINER_NAME in t.annotations
    how = f"the container {kai_api.GPU_FRACTION_CONTAINER_NAME} names" if named else "the pod's first container"
    out = []
    # Native sidecars (init containers with restartPolicy Always) run beside the containers for the pod's life.
    sidecars = [c for c in t.init_containers() if c.get("restartPolicy") == "Always"]
    servers = [(c, kind) for c in [*t.containers(), *sidecars] if (kind := _server(c)) is not None]
    if name in MESH_PROXIES:
        out.append(
            (
                f"{t.at('spec')}: KAI gives the pod's GPU share to {how}, {name}, a service mesh's proxy; the "
                f"application's container {NO_GPU}",
                f"{MESH_PROXIES[name]}, or set {t.at('metadata.annotations')}.{kai_api.GPU_FRACTION_CONTAINER_NAME} "
                "to the container that uses the GPU",
            )
        )
    elif not named and not admitted and (ahead := _injected_first(t)) is not None:
        proxy, why = ahead
        # The container to name: the model server's where one runs, else the one that is first today.
        target = str(servers[0][0].get("name", "?")) if servers else name
        out.append(
            (
                f"{t.at('metadata.annotations')}: {why} puts {proxy} first, where KAI gives the pod's GPU share, "
                f"and {target} {NO_GPU}",
                f"set {t.at('metadata.annotations')}.{kai_api.GPU_FRACTION_CONTAINER_NAME}: {target} (right with "
                "any mesh version)",
            )
        )
        servers = []  # the one fix above covers the server too
    for container, kind in servers:
        # Names are unique across a pod's containers and init containers (the API server refuses a repeat).
        if str(container.get("name", "?")) == name:
            continue
        server = str(container.get("name", "?"))
        out.append(
            (
                f"{t.at('spec')}: container {server} runs {kind}, but KAI gives the pod's GPU share to {how}, {name}, "
                f"so {server} {NO_GPU}",
                f"set {t.at('metadata.annotations')}.{kai_api.GPU_FRACTION_CONTAINER_NAME}: {server}",
            )
        )
    return out


def _server(container: Mapping[str, Any]) -> str | None:
    return "vLLM" if runs_vllm(container) else "TGI" if runs_tgi(container) else None


# Go's strconv.ParseBool, which Linkerd reads its native-sidecar annotations with (pkg/inject/inject.go).
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
LINKERD_NATIVE = tuple(
    f"{prefix}/proxy-enable-native-sidecar"
    for prefix in ("config.linkerd.io", "config.beta.linkerd.io", "config.alpha.linkerd.io")
)


def _injected_first(t: PodTemplate) -> tuple[str, str] | None:
    """(proxy, the annotation that asks for it) where the pod template asks a mesh for a proxy it puts first.

    Linkerd: `linkerd.io/inject: enabled` (or `ingress`) with proxy-await on and no native sidecar, its defaults up
    to version-2.19 (charts/patch/templates/patch.json:135-140; the native-sidecar keys: pkg/inject/inject.go at
    version-2.19:375-385 and version-2.20:430-445). Istio: holdApplicationUntilProxyStarts in the pod's
    `proxy.istio.io/config` without `sidecar.istio.io/nativeSidecar: "true"` (pkg/kube/inject/webhook.go:780-812).
    A namespace's or the mesh's own settings are not in the manifest; naming the container is right either way."""
    a = t.annotations
    names = [c.get("name") for c in [*t.containers(), *t.init_containers()]]
    if any(isinstance(n, str) and n in MESH_PROXIES for n in names):
        return None  # injected by hand already: judged as it stands
    if t.spec.get("hostNetwork") is True:
        return None  # neither mesh injects a host-network pod (istio@1.29.6 inject.go:207-209; linkerd report.go)
    if a.get("linkerd.io/inject") in ("enabled", "ingress") and a.get("config.linkerd.io/proxy-await") != "disabled":
        # Each version reads the first of its keys that is present (2.15-2.18: alpha; 2.19: beta, alpha; 2.20: all
        # three), keeping its default when the value does not parse: native everywhere only with alpha true and no
        # other key saying otherwise.
        native = str(a.get(LINKERD_NATIVE[2])) in _GO_TRUE and all(
            str(a[k]) in _GO_TRUE for k in LINKERD_NATIVE[:2] if k in a
        )
        if not native:
            return "linkerd-proxy", f"linkerd.io/inject: {a['linkerd.io/inject']} (Linkerd up to version-2.19)"
    # Istio: the pod's label, else its annotation, may turn injection off (inject.go:222-226, the label preferred);
    # its injection template takes any nativeSidecar value but "false" as native (injection-template.yaml:29).
    inject = t.labels.get("sidecar.istio.io/inject", a.get("sidecar.istio.io/inject"))
    config = a.get("proxy.istio.io/config")
    if inject == "false" or a.get("sidecar.istio.io/nativeSidecar", "false") != "false":
        return None
    if isinstance(config, str) and len(config) < 65536:
        try:  # YAML, read as protobuf JSON, which takes the proto name too (hold_application_until_proxy_starts)
            parsed = yaml.safe_load(config)
        except (yaml.YAMLError, RecursionError):
            parsed = None
        keys = ("holdApplicationUntilProxyStarts", "hold_application_until_proxy_starts")
        if isinstance(parsed, dict) and any(parsed.get(k) is True for k in keys):
            return "istio-proxy", "proxy.istio.io/config's holdApplicationUntilProxyStarts: true"
    return None


def pod_fraction_container(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """fraction_container of a Pod object."""
    meta = mapping(pod.get("metadata"))
    return fraction_container(mapping(pod.get("spec")), mapping(meta.get("annotations")))
