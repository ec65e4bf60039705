"""CEL for a tenant's admission policy: building blocks, and the rules about GPUs.

KAI v0.17.0's GPU request checks (kaistack.guardrails.gpu_requests, same table), and the ways a pod
reaches a GPU that KAI's webhooks do not see: resources under other names, the NVIDIA runtime's
variables, runtime classes and taints for default-scheduled pods, share annotations changed after
binding, ephemeral containers. kaistack.guardrails.admission assembles them into the policy.
"""

from __future__ import annotations

from collections.abc import Sequence

from kaistack.declaration import kai_api
from kaistack.guardrails import gpu_requests as kai
from kaistack.guardrails.fraction_container import MESH_PROXIES

OBJ = "object"
OLD = "oldObject"
ANN = "object.metadata.annotations"
LABELS = "object.metadata.labels"
IS_CREATE = "request.operation == 'CREATE'"
IS_UPDATE = "request.operation == 'UPDATE'"


def quote(text: str) -> str:
    """A CEL string literal (single-quoted; the names used here never contain quotes or backslashes)."""
    if "'" in text or "\\" in text:
        raise ValueError(f"cannot quote {text!r} for CEL")
    return f"'{text}'"


def cel_list(items: Sequence[str]) -> str:
    return "[" + ", ".join(quote(i) for i in items) + "]"


def has_key(map_path: str, key: str) -> str:
    """`key` is in the optional map at `map_path` (parenthesised: CEL's `!` binds tighter than `in`)."""
    return f"(has({map_path}) && {quote(key)} in {map_path})"


def value(map_path: str, key: str) -> str:
    return f"{map_path}[{quote(key)}]"


def unchanged(map_path: str, key: str) -> str:
    """On UPDATE, the key has the same value in oldObject as in object."""
    old = map_path.replace(OBJ, OLD, 1)
    return (
        f"({IS_UPDATE} && {has_key(old, key)} && {has_key(map_path, key)} && "
        f"{value(old, key)} == {value(map_path, key)})"
    )


def each_container(predicate: str) -> str:
    """`predicate` (on `c`) holds for every container and init container."""
    return (
        f"object.spec.containers.all(c, {predicate}) && "
        f"(!has(object.spec.initContainers) || object.spec.initContainers.all(c, {predicate}))"
    )


# What a default-scheduled pod may ask for: what every node has. A GPU under any other name (amd.com/gpu,
# nvidia.com/gpu.shared, a MIG slice) is a device KAI guards or cannot see.
PLAIN_RESOURCES = ("cpu", "memory", "ephemeral-storage")


def _plain_resources(block: str) -> str:
    return (
        f"(!has(c.resources.{block}) || c.resources.{block}.all(k, k in {cel_list(PLAIN_RESOURCES)} || "
        "k.startsWith('hugepages-')))"
    )


NO_GPU_RESOURCES = each_container(
    f"!has(c.resources) || ({_plain_resources('limits')} && {_plain_resources('requests')})"
)
# An NVIDIA_* variable that is not a Service link: vCluster writes every Service's variables into the
# containers it syncs (loft-sh/vcluster@v0.36.1 pods/translate/envvars.go), and a Service `nvidia-triton`
# gives NVIDIA_TRITON_SERVICE_HOST, NVIDIA_TRITON_PORT_8000_TCP, ... (`nvidia` alone: NVIDIA_SERVICE_HOST,
# NVIDIA_PORT), none of which the runtime reads.
_RUNTIME_VAR = (
    "(e.name.startsWith('NVIDIA_') && "
    "!e.name.matches('^NVIDIA(_[A-Z0-9_]+)?_(SERVICE_HOST|SERVICE_PORT|PORT)(_[A-Z0-9_]+)?$'))"
)
# A process reaches a node's GPUs without asking for one through the NVIDIA runtime: a runtime class, the
# variables it reads (from env or an envFrom source the policy cannot see), or a toleration that lets the
# pod onto tainted GPU nodes where nvidia is the default runtime (EKS's NVIDIA AMI).
NO_GPU_PATH = (
    "(!has(object.spec.runtimeClassName) || object.spec.runtimeClassName == '') && "
    "(!has(object.spec.tolerations) || object.spec.tolerations.all(t, has(t.key) && t.key != '' && "
    f"t.key != {quote(kai_api.GPU_RESOURCE)})) && "
    + each_container(f"(!has(c.env) || c.env.all(e, !{_RUNTIME_VAR})) && (!has(c.envFrom) || size(c.envFrom) == 0)")
)
RENAMED_GPU = kai_api.GPU_RESOURCE + "."  # the device plugin's renamed time slices: nvidia.com/gpu.shared
NO_RENAMED_GPU = each_container(
    "!has(c.resources) || ("
    f"(!has(c.resources.limits) || c.resources.limits.all(k, !k.startsWith({quote(RENAMED_GPU)}))) && "
    f"(!has(c.resources.requests) || c.resources.requests.all(k, !k.startsWith({quote(RENAMED_GPU)}))))"
)
# A privileged container gets every device node of its node, the GPUs included, whatever KAI gave its pod: with
# the tenant's podSecurityStandard privileged or unset, vCluster checks nothing of it (loft-sh/vcluster@v0.36.1
# pkg/controllers/resources/pods/syncer.go:196,340 run the check only for a set standard).
_NOT_PRIVILEGED = "!has(c.securityContext) || !has(c.securityContext.privileged) || !c.securityContext.privileged"
# Ephemeral containers cannot change or go once added: one the old pod already had passes (as for EPHEMERAL_VOID).
NOT_PRIVILEGED = (
    f"(!({IS_CREATE}) || ({each_container(_NOT_PRIVILEGED)})) && "
    "(!has(object.spec.ephemeralContainers) || object.spec.ephemeralContainers.all(c, "
    f"({IS_UPDATE} && has(oldObject.spec.ephemeralContainers) && "
    f"oldObject.spec.ephemeralContainers.exists(o, o.name == c.name)) || ({_NOT_PRIVILEGED})))"
)
NO_GPU_LIMIT = each_container(
    f"!has(c.resources) || !has(c.resources.limits) || !({quote(kai.GPU_RESOURCE)} in c.resources.limits)"
)
FRACTIONAL = f"({has_key(ANN, kai.FRACTION)} || {has_key(ANN, kai.MEMORY)})"
KAI_ANNOTATIONS = (kai.FRACTION, kai.MEMORY, kai.NUM_DEVICES, kai.MPS, kai_api.POD_GROUP_NAME)


def _uint_ok(key: str) -> str:
    # uint() is strconv.ParseUint(v, 10, 64) in cel-go, as in KAI; an overflow is an error, and an error denies.
    return f"({value(ANN, key)}.matches({quote(kai.UINT_SYNTAX)}) && uint({value(ANN, key)}) > 0u)"


def gpu_request_validations(sharing_enabled: bool) -> list[tuple[str, str]]:
    """KAI's ValidateGpuRequests (+ the gates around it) as (expression, message) pairs."""
    fraction = value(ANN, kai.FRACTION)
    rules = [
        (
            f"!{has_key(ANN, kai.FRACTION)} || ({fraction}.matches({quote(kai.FRACTION_SYNTAX)}) && "
            f"double({fraction}) > 0.0 && double({fraction}) < 1.0)",
            f"{kai.FRACTION} must be a decimal strictly between 0 and 1, like '0.5' (no unit, no spaces); "
            "use an nvidia.com/gpu limit for whole GPUs",
        ),
        (f"!{has_key(ANN, kai.MEMORY)} || {_uint_ok(kai.MEMORY)}", f"{kai.MEMORY} must be a whole number of MiB >= 1"),
        (
            f"!({has_key(ANN, kai.FRACTION)} && {has_key(ANN, kai.MEMORY)})",
            f"use {kai.FRACTION} or {kai.MEMORY}, not both",
        ),
        (
            f"!{FRACTIONAL} || ({NO_GPU_LIMIT})",
            f"a pod with {kai.FRACTION} or {kai.MEMORY} must not have an nvidia.com/gpu limit on any container "
            "or init container",
        ),
        (
            f"!{has_key(ANN, kai.NUM_DEVICES)} || ({FRACTIONAL} && {_uint_ok(kai.NUM_DEVICES)})",
            f"{kai.NUM_DEVICES} must be a whole number >= 1 and comes with {kai.FRACTION} or {kai.MEMORY}",
        ),
        (
            f"!({has_key(ANN, kai.MPS)} && {value(ANN, kai.MPS)} == 'true') || {FRACTIONAL}",
            f"{kai.MPS}: 'true' needs {kai.FRACTION} or {kai.MEMORY} (KAI allows MPS only with a GPU share; it starts "
            "no MPS server: the node runs one and the pod mounts its pipe directory)",
        ),
        (
            f"!{FRACTIONAL} || !{has_key(ANN, kai.CONTAINER_NAME)} || "
            f"object.spec.containers.exists(c, c.name == {value(ANN, kai.CONTAINER_NAME)}) || "
            f"(has(object.spec.initContainers) && "
            f"object.spec.initContainers.exists(c, c.name == {value(ANN, kai.CONTAINER_NAME)}))",
            f"{kai.CONTAINER_NAME} must name one of the pod's containers or init containers",
        ),
    ]
    if not sharing_enabled:
        rules.insert(
            0,
            (f"!{FRACTIONAL}", f"GPU sharing is off on this cluster: no {kai.FRACTION} or {kai.MEMORY} annotations"),
        )
    return rules


def _any_container(predicate: str) -> str:
    return (
        f"object.spec.containers.exists(c, {predicate}) || "
        f"(has(object.spec.initContainers) && object.spec.initContainers.exists(c, {predicate}))"
    )


def _in_block(predicate: str) -> str:
    """`predicate` (on `b`, a resource list) holds for a container's limits or requests."""
    return (
        f"has(c.resources) && ((has(c.resources.limits) && [c.resources.limits].exists(b, {predicate})) || "
        f"(has(c.resources.requests) && [c.resources.requests].exists(b, {predicate})))"
    )


def mixed_mig_validation() -> tuple[str, str]:
    """kaistack's rule beyond KAI's (gpu_requests.mixed_mig_problems), at CREATE: resources cannot change after,
    and the MIG annotations are frozen with the shares."""
    gpu = quote(kai.GPU_RESOURCE)
    mig = quote(kai_api.MIG_RESOURCE_PREFIX)
    whole = _any_container(_in_block(f"{gpu} in b && string(b[{gpu}]) != '0'"))
    migs = _any_container(_in_block(f"b.exists(k, k.startsWith({mig}))")) + (
        f" || (has({ANN}) && {ANN}.exists(k, k.startsWith({mig})))"
    )
    return (f"!({IS_CREATE}) || !(({whole}) && ({migs}))", kai.MIXED_MIG.replace("asks", "a pod that asks", 1))


OLD_ANN = "oldObject.metadata.annotations"
SHARE_KEYS = (kai.FRACTION, kai.MEMORY, kai.NUM_DEVICES)


def shares_kept(new: str, old: str) -> str:
    """Every share annotation of `new` (KAI reads legacy MIG requests from annotations named like the
    resource, pod_info.go:557-572) is in `old` with the same value."""
    share = f"(k in {cel_list(SHARE_KEYS)} || k.startsWith({quote(kai_api.MIG_RESOURCE_PREFIX)}))"
    return f"(!has({new}) || {new}.all(k, !{share} || (has({old}) && k in {old} && {old}[k] == {new}[k])))"


_VOID = f"(e.name == {quote(kai_api.NVIDIA_VISIBLE_DEVICES)} && has(e.value) && e.value in ['void', 'none'])"
# Ephemeral containers cannot change once added: one the old pod already had (say, from before this policy)
# passes, or every later update of the pod would be refused.
EPHEMERAL_VOID = (
    "!has(object.spec.ephemeralContainers) || object.spec.ephemeralContainers.all(c, "
    f"({IS_UPDATE} && has(oldObject.spec.ephemeralContainers) && "
    "oldObject.spec.ephemeralContainers.exists(o, o.name == c.name)) || "
    f"(has(c.env) && c.env.exists(e, {_VOID}) && c.env.all(e, !{_RUNTIME_VAR} || {_VOID}) && "
    "(!has(c.envFrom) || size(c.envFrom) == 0)))"
)

# The container KAI gives a created pod's GPU share to (kaistack.guardrails.fraction_container: the one the
# annotation names, else the first) is no mesh's proxy. Validating policies run after every mutating webhook, so
# this sees the proxy a mesh injected.
_FRACTION_NAME = (
    f"({has_key(ANN, kai_api.GPU_FRACTION_CONTAINER_NAME)} ? {value(ANN, kai_api.GPU_FRACTION_CONTAINER_NAME)} : "
    "object.spec.containers[0].name)"
)
FRACTION_CONTAINER_NOT_PROXY = (
    f"!({IS_CREATE}) || !({' || '.join(has_key(ANN, k) for k in kai_api.GPU_SHARING_ANNOTATIONS)}) || "
    f"size(object.spec.containers) == 0 || !({_FRACTION_NAME} in {cel_list(list(MESH_PROXIES))})"
)


def quota_unit_validation() -> tuple[str, str]:
    """kaistack's rule beyond KAI's (kaistack.guardrails.gpu_requests.quota_unit_problems): a valid fraction
    KAI would count as 0 GPUs. An unchanged annotation passes, so the syncer's updates of a running pod do."""
    fraction = value(ANN, kai.FRACTION)
    return (
        f"!{has_key(ANN, kai.FRACTION)} || !({fraction}.matches({quote(kai.FRACTION_SYNTAX)})) || "
        f"!(double({fraction}) > 0.0 && double({fraction}) < 1.0) || double({fraction}) * 100.0 >= 0.5 || "
        f"{unchanged(ANN, kai.FRACTION)}",
        f"{kai.FRACTION} under {kai.SMALLEST_FRACTION} counts as 0 GPUs of the queue's quota and limit (KAI keeps "
        "shares in hundredths of a GPU); ask for at least '0.01'",
    )


# KAI names a GPU share's ConfigMaps after the pod's runai/shared-gpu-configmap annotation, and keeps one the pod
# already has (KAI@v0.17.0 pkg/binder/common/gpusharingconfigmap/config_map.go:113-147): `<P>-<n>` holds the
# container's NVIDIA_VISIBLE_DEVICES and memory limit, `<P>-<n>-evar` is its envFrom (pkg/binder/common/
# env_vars.go:11-26, gpu_access.go:25-61; `-i<n>` for an init container). The binder takes over and fills whatever
# ConfigMap the annotation names at bind time (config_map.go:57-108, gpu_access.go:100-144), so a tenant that sets
# it to match one of its own ConfigMaps (which vCluster syncs both ways, as `<name>-x-<namespace>-x-<tenant>`) would
# choose the GPUs and memory cap its container starts with. KAI's own value is `<pod name, cut>-<7 random
# characters>-shared-gpu` (generateConfigMapNamePrefix, config_map.go:122-147). With that shape, fixed once set, a
# synced name (`-x-<tenant>` ends every one) can match only for a tenant named with `shared-gpu`, which the
# declaration refuses (kaistack.declaration.model.tenants.tenant_name_problems).
SHARED_GPU_CONFIGMAP = "runai/shared-gpu-configmap"
# The name part is empty for a pod without a name yet (generateName is filled after admission: k8s.io/apiserver
# v0.35.0 pkg/endpoints/handlers/create.go:202-209, pkg/registry/generic/registry/store.go:485-486).
SHARED_GPU_CONFIGMAP_SHAPE = "^([a-z0-9]([-a-z0-9.]*[a-z0-9])?)?-[a-z0-9]{7}-shared-gpu$"


def shared_gpu_configmap_kais() -> str:
    """A pod with a share carries KAI's shape of the annotation when created, and never another value after."""
    shaped = f"{value(ANN, SHARED_GPU_CONFIGMAP)}.matches({quote(SHARED_GPU_CONFIGMAP_SHAPE)})"
    created = f"({IS_CREATE} && (!{FRACTIONAL} || ({has_key(ANN, SHARED_GPU_CONFIGMAP)} && {shaped})))"
    kept = f"({IS_UPDATE} && (!{has_key(ANN, SHARED_GPU_CONFIGMAP)} || {unchanged(ANN, SHARED_GPU_CONFIGMAP)}))"
    return f"{created} || {kept}"


# HAMi-core, the library HAMi's isolator preloads, reads a per-device CUDA_DEVICE_MEMORY_LIMIT_<n> before KAI's
# CUDA_DEVICE_MEMORY_LIMIT (Project-HAMi/HAMi-core src/multiprocess/multiprocess_memory_limit.c,
# do_init_device_memory_limits: `_%d` of each device index) and loads its hooks from CUDA_REDIRECT when set
# (src/libvgpu.c, dlsym): a tenant setting either lifts its own cap. KAI writes its variable as a ConfigMap key
# reference and replaces any entry of that name in the fraction container (KAI@v0.17.0
# pkg/admission/webhook/v1alpha2/hamicore/hamicore.go:53-64, pkg/binder/common/env_vars.go:28-37), and its only
# envFrom is the `-evar` ConfigMap above. Any other envFrom could carry the variables unseen. A Service link
# (vCluster writes CUDA_DEVICE_MEMORY_LIMIT_SERVICE_HOST for a Service of that name) is no device index.
MEMORY_LIMIT_VAR = kai_api.HAMI_MEMORY_LIMIT
PER_DEVICE_LIMIT = f"^{MEMORY_LIMIT_VAR}_[0-9]+$"


def isolation_env_kept() -> str:
    """No variable that lifts HAMi-core's cap, and no envFrom but KAI's, in any container of a pod with a share."""
    kais_limit = (
        f"(has(e.valueFrom) && has(e.valueFrom.configMapKeyRef) && "
        f"e.valueFrom.configMapKeyRef.key == {quote(MEMORY_LIMIT_VAR)})"
    )
    env_ok = (
        f"(!has(c.env) || c.env.all(e, !e.name.matches({quote(PER_DEVICE_LIMIT)}) && "
        f"e.name != 'CUDA_REDIRECT' && (e.name != {quote(MEMORY_LIMIT_VAR)} || {kais_limit})))"
    )
    kais_env_from = (
        f"(has(f.configMapRef) && {has_key(ANN, SHARED_GPU_CONFIGMAP)} && "
        f"f.configMapRef.name.startsWith({value(ANN, SHARED_GPU_CONFIGMAP)} + '-') && "
        "f.configMapRef.name.matches('-shared-gpu-i?[0-9]+-evar$') && (!has(f.prefix) || f.prefix == ''))"
    )
    env_from_ok = f"(!has(c.envFrom) || c.envFrom.all(f, {kais_env_from}))"
    return f"!({IS_CREATE}) || !{FRACTIONAL} || ({each_container(f'{env_ok} && {env_from_ok}')})"
