"""KAI's own admission verdict on a pod's GPU request, restated as pure Python.

Source: kai-scheduler/KAI-Scheduler@v0.17.0
- pkg/binder/plugins/gpusharing/gpu-request/gpu_request_validator.go `ValidateGpuRequests` (the
  validating webhook, CREATE and UPDATE, pods with schedulerName kai-scheduler);
- pkg/admission/webhook/v1alpha2/gpusharing/gpu_sharing.go:40-48 (sharing off: any fraction/memory
  annotation is refused) and :59-62 with pkg/binder/common/gpu_access.go:182-219 (the mutating
  webhook refuses a `gpu-fraction-container-name` that names no container or initContainer).
The inputs KAI's unmodified validator was run on, with its verdicts, are in
tests/guardrails/data/kai-admission-v0.17.0.json (kai-admission-harness/ beside it rebuilds them); the
admission CEL (kaistack.guardrails.admission) and these functions are tested against it row by row.

KAI stops at the first problem; these functions report every problem, each naming the annotation,
the value and what is allowed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from kaistack.declaration import kai_api

FRACTION = kai_api.GPU_FRACTION
MEMORY = kai_api.GPU_MEMORY
NUM_DEVICES = kai_api.GPU_FRACTION_NUM_DEVICES
CONTAINER_NAME = kai_api.GPU_FRACTION_CONTAINER_NAME
MPS = kai_api.MPS
GPU_RESOURCE = kai_api.GPU_RESOURCE

# What passes both Go's strconv.ParseFloat and apimachinery's resource.ParseQuantity: an optional
# sign, a plain decimal, an optional e/E exponent (no unit suffix, no hex, no NaN/Inf, no spaces).
FRACTION_SYNTAX = r"^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][+-]?[0-9]+)?$"
# strconv.ParseUint(v, 10, 64): digits only (leading zeros allowed), at most 2^64 - 1.
UINT_SYNTAX = r"^[0-9]+$"
UINT64_MAX = 2**64 - 1

_FRACTION = re.compile(FRACTION_SYNTAX)
_UINT = re.compile(UINT_SYNTAX)


def fraction_ok(value: Any) -> bool:
    """0 < value < 1, written as KAI parses it; float() overflows to inf and underflows to 0, as Go's does."""
    # fullmatch: Python's `$` also matches before a final newline, which ParseFloat and RE2 refuse.
    return isinstance(value, str) and bool(_FRACTION.fullmatch(value)) and 0.0 < float(value) < 1.0


# kaistack's own rule, beyond KAI's webhooks (kai_api.SMALLEST_COUNTED_FRACTION): any number of pods KAI
# counts as 0 GPUs fit a queue with no GPUs, each able to use the whole GPU it lands on.
SMALLEST_FRACTION = kai_api.SMALLEST_COUNTED_FRACTION


def counted_fraction(value: Any) -> bool:
    """A valid fraction KAI counts as at least 0.01 GPU (Go's math.Round: half away from zero)."""
    return not fraction_ok(value) or not kai_api.counts_as_no_gpu(float(value))


def quota_unit_problems(annotations: Mapping[str, Any], where: str = "metadata.annotations") -> list[str]:
    """Why kaistack refuses a share KAI would admit but count as no GPU at all; [] when there is none."""
    fraction = annotations.get(FRACTION)
    if FRACTION not in annotations or counted_fraction(fraction):
        return []
    return [
        f"{where} {FRACTION}: {fraction!r} is under {SMALLEST_FRACTION}: KAI counts GPU shares in hundredths, "
        "so the pod would hold 0 GPUs of its queue's quota and limit; ask for at least '0.01'"
    ]


# kaistack's own rule, beyond KAI's webhooks: whole GPUs beside MIG devices. Any MIG resource (or legacy MIG
# annotation) makes the pod a MIG request (KAI@v0.17.0 pkg/scheduler/api/pod_info/pod_info.go:550-553), and once
# it is placed KAI charges its queue and node for the MIG devices alone (node_info/node_info.go:724-752,
# setAcceptedResources), while the kubelet hands the container the whole GPUs too: GPUs outside any queue.
MIXED_MIG = (
    f"asks for whole GPUs ({GPU_RESOURCE}) beside MIG devices: KAI charges such a pod's queue for the MIG devices "
    "alone once it is placed, while the kubelet gives it the whole GPUs too; ask for one kind"
)


def mixed_mig_problems(
    annotations: Mapping[str, Any],
    containers: Sequence[Mapping[str, Any]],
    init_containers: Sequence[Mapping[str, Any]],
    where: str = "spec",
) -> list[str]:
    """[MIXED_MIG, located] when a container asks for nvidia.com/gpu (not 0) and the pod for any MIG device."""
    whole = mig = False
    for c in (*containers, *init_containers):
        resources = c.get("resources") if isinstance(c, Mapping) else None
        for block in (resources.get("limits"), resources.get("requests")) if isinstance(resources, Mapping) else ():
            if not isinstance(block, Mapping):
                continue
            whole = whole or (GPU_RESOURCE in block and str(block[GPU_RESOURCE]).strip() not in ("0", "0m"))
            mig = mig or any(str(k).startswith(kai_api.MIG_RESOURCE_PREFIX) for k in block)
    mig = mig or any(str(k).startswith(kai_api.MIG_RESOURCE_PREFIX) for k in annotations)
    return [f"{where} {MIXED_MIG}"] if whole and mig else []


def positive_uint64(value: Any) -> bool:
    if not isinstance(value, str) or not _UINT.fullmatch(value):
        return False
    digits = value.lstrip("0")
    # More than 20 significant digits is above 2^64 (and int() of a huge string is slow or refused).
    return 0 < len(digits) <= 20 and int(digits) <= UINT64_MAX


def uint64_of(value: str) -> int:
    """The number a positive_uint64 string names. ParseUint takes any number of leading zeros; Python's
    int() refuses a string of more than 4,300 digits, so they go first."""
    return int(value.lstrip("0"))


def _names(containers: Sequence[Mapping[str, Any]]) -> set[str]:
    return {str(c.get("name")) for c in containers if c.get("name") is not None}


def gpu_limit_holders(containers: Sequence[Mapping[str, Any]]) -> list[str]:
    """Containers with any `nvidia.com/gpu` limit (KAI's getFirstGPULimit: `0` counts too)."""
    out = []
    for i, c in enumerate(containers):
        limits = c.get("resources", {}).get("limits") if isinstance(c.get("resources"), Mapping) else None
        if isinstance(limits, Mapping) and GPU_RESOURCE in limits:
            out.append(str(c.get("name", i)))
    return out


def gpu_request_problems(
    annotations: Mapping[str, Any],
    containers: Sequence[Mapping[str, Any]],
    init_containers: Sequence[Mapping[str, Any]] = (),
    *,
    sharing_enabled: bool = True,
    where: str = "metadata.annotations",
    partial: bool = False,
) -> list[str]:
    """Why KAI's webhooks would refuse this pod's GPU request; [] when they would admit it. `partial`: the
    fields of a patch only, so what needs the rest of the pod (the share a setting goes with, the
    container a name points at) is not judged."""
    fraction, memory, devices = annotations.get(FRACTION), annotations.get(MEMORY), annotations.get(NUM_DEVICES)
    has_fraction, has_memory = FRACTION in annotations, MEMORY in annotations
    fractional = has_fraction or has_memory
    limits = [f"container {n}" for n in gpu_limit_holders(containers)]
    limits += [f"init container {n}" for n in gpu_limit_holders(init_containers)]
    out = []
    if fractional and not sharing_enabled:
        out.append(
            f"{where} asks for a GPU share ({FRACTION if has_fraction else MEMORY}) but GPU sharing is off "
            "(kai.sharing: off): KAI refuses the pod; use an nvidia.com/gpu limit"
        )
    if not fractional and not partial and annotations.get(MPS) == "true":
        out.append(
            f"{where} {MPS}: 'true' needs {FRACTION} or {MEMORY}: KAI allows MPS only with a GPU share (it starts "
            "no MPS server: the node runs one and the pod mounts its pipe directory)"
        )
    if fractional and limits:
        share = FRACTION if has_fraction else MEMORY
        out += [
            f"{holder} has an nvidia.com/gpu limit and the pod asks for a {share} share; KAI refuses the "
            "combination: drop one"
            for holder in limits
        ]
    if has_fraction and has_memory:
        out.append(f"{where} sets both {FRACTION} and {MEMORY}; KAI refuses the pod: use one")
    if NUM_DEVICES in annotations and not fractional and not partial:
        out.append(f"{where} {NUM_DEVICES} applies only together with {FRACTION} or {MEMORY}")
    if has_memory and not positive_uint64(memory):
        out.append(f"{where} {MEMORY}: {memory!r} must be a quoted whole number of MiB, 1 to {UINT64_MAX}")
    if has_fraction and not fraction_ok(fraction):
        out.append(
            f"{where} {FRACTION}: {fraction!r} must be a quoted decimal strictly between 0 and 1, like '0.5' "
            "(no unit, no spaces; use an nvidia.com/gpu limit for whole GPUs)"
        )
    if NUM_DEVICES in annotations and not positive_uint64(devices):
        out.append(f"{where} {NUM_DEVICES}: {devices!r} must be a quoted whole number, at least 1")
    target = annotations.get(CONTAINER_NAME)
    names = _names(containers) | _names(init_containers)
    if fractional and target is not None and not partial and str(target) not in names:
        out.append(
            f"{where} {CONTAINER_NAME}: {target!r} names no container or init container of the pod; KAI's "
            "mutating webhook refuses it"
        )
    return out
