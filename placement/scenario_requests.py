"""A scenario's request keys (a job's defaults, a task's overrides): what a pod asks and where it may go.

Shared by `placement.scenario` for jobs and tasks; every value is validated with its key path.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from placement.host_ports import HostPort, HostPortError, read_host_ports
from placement.model import NO_CONSTRAINTS
from placement.node_constraints import ConstraintError, parse_constraints
from placement.quantity import cpu_millis, memory_bytes
from placement.scenario_groups import labels
from placement.scenario_reader import (
    MAX_CONFIG_MAPS_PER_POD,
    MAX_GPU_MEMORY_MIB,
    MAX_GPUS_PER_NODE,
    MAX_TERMS_PER_POD,
    Reader,
)

__all__ = ["REQUEST_KEYS", "check_combination", "checked", "read_request"]

REQUEST_KEYS = {"gpu", "gpuFraction", "gpuMemoryMiB", "gpuDevices", "mig", "cpu", "memory", "scalarResources"}
# Pod spec keys, read as a pod spec's (placement.node_constraints); a task's key replaces its job's.
_CONSTRAINT_FIELDS = {
    "nodeSelector": ("node_selector",),
    "affinity": (
        "required_terms",
        "pod_affinity",
        "pod_anti_affinity",
        "preferred_affinity",
        "preferred_anti_affinity",
    ),
    "tolerations": ("tolerations",),
}
_AFFINITY_KINDS = {"nodeAffinity", "podAffinity", "podAntiAffinity"}
REQUEST_KEYS |= set(_CONSTRAINT_FIELDS) | {"namespace", "podLabels", "hostPorts", "configMaps"}

_T = TypeVar("_T")


def read_request(r: Reader, doc: Mapping[str, Any], base: dict[str, Any], path: str) -> dict[str, Any]:
    """Request keys of a job (defaults) or a task (overrides), validated one by one."""
    out = dict(base)
    if "gpu" in doc:
        out["gpu"] = r.integer(doc["gpu"], f"{path}.gpu", minimum=0, maximum=MAX_GPUS_PER_NODE)
    if "gpuFraction" in doc:
        value = doc["gpuFraction"]
        fraction = None if value is None else r.number(value, f"{path}.gpuFraction")
        if fraction is not None and not 0 < fraction < 1:
            raise r.fail(f"{path}.gpuFraction", f"must be > 0 and < 1, got {value}")
        out["gpu_fraction"] = fraction
    if "gpuMemoryMiB" in doc:
        value = doc["gpuMemoryMiB"]
        out["gpu_memory_mib"] = (
            None if value is None else r.integer(value, f"{path}.gpuMemoryMiB", minimum=1, maximum=MAX_GPU_MEMORY_MIB)
        )
    if "gpuDevices" in doc:
        out["gpu_devices"] = r.integer(doc["gpuDevices"], f"{path}.gpuDevices", minimum=1, maximum=MAX_GPUS_PER_NODE)
    if "mig" in doc:
        out["mig"] = r.mig(doc["mig"], f"{path}.mig")
    if "cpu" in doc:
        out["cpu_millis"] = r.quantity(doc["cpu"], f"{path}.cpu", cpu_millis)
    if "memory" in doc:
        out["memory_bytes"] = r.quantity(doc["memory"], f"{path}.memory", memory_bytes)
    if "scalarResources" in doc:
        out["scalar"] = r.scalar(doc["scalarResources"], f"{path}.scalarResources")
    present = {key: doc[key] for key in _CONSTRAINT_FIELDS if key in doc}
    if present:
        affinity = present.get("affinity")
        if isinstance(affinity, Mapping) and set(affinity) - _AFFINITY_KINDS:
            raise r.fail(f"{path}.affinity", f"must hold only {', '.join(sorted(_AFFINITY_KINDS))}")
        _check_terms(r, affinity, f"{path}.affinity")
        parsed = checked(r, path, lambda: parse_constraints(present))
        fields = {f: getattr(parsed, f) for key, names in _CONSTRAINT_FIELDS.items() if key in present for f in names}
        merged = dataclasses.replace(out.get("constraints", NO_CONSTRAINTS), **fields)
        out["constraints"] = merged
    if "hostPorts" in doc:
        ports = checked(r, path, lambda: _host_ports(doc["hostPorts"]))
        out["constraints"] = dataclasses.replace(out.get("constraints", NO_CONSTRAINTS), host_ports=ports)
    if "namespace" in doc:
        out["namespace"] = r.string(doc["namespace"], f"{path}.namespace")
    if "podLabels" in doc:
        out["pod_labels"] = tuple(sorted(labels(r, doc["podLabels"], f"{path}.podLabels").items()))
    if "configMaps" in doc:
        out["config_maps"] = tuple(
            sorted(set(r.names(doc["configMaps"], f"{path}.configMaps", MAX_CONFIG_MAPS_PER_POD)))
        )
    return out


def _check_terms(r: Reader, affinity: Any, path: str) -> None:
    """What a scenario's inter-pod terms may hold beyond what the shared parser reads (it also reads live pods,
    which the API server has validated): at most MAX_TERMS_PER_POD terms; selectors LabelSelectorAsSelector
    builds (KAI's PreFilter refuses the pod on one it cannot: k8s v1.35.4 interpodaffinity/filtering.go:283-285);
    and no matchLabelKeys / mismatchLabelKeys, which the API server folds into labelSelector when it creates the
    pod (`key In [the pod's value]`, `NotIn` for mismatch): the scheduler sees only the result, so a scenario
    writes the selector."""
    count = 0
    for kind in ("podAffinity", "podAntiAffinity"):
        block = affinity.get(kind) if isinstance(affinity, Mapping) else None
        if not isinstance(block, Mapping):
            continue
        for when in (
            "requiredDuringSchedulingIgnoredDuringExecution",
            "preferredDuringSchedulingIgnoredDuringExecution",
        ):
            terms = block.get(when)
            for i, term in enumerate(terms if isinstance(terms, list) else ()):
                count += 1
                if count > MAX_TERMS_PER_POD:
                    raise r.fail(f"{path}.{kind}", f"more than {MAX_TERMS_PER_POD} inter-pod terms in one pod")
                inner = term.get("podAffinityTerm", term) if isinstance(term, Mapping) else None
                if not isinstance(inner, Mapping):
                    continue
                where = f"{path}.{kind}.{when}[{i}]"
                for key in ("matchLabelKeys", "mismatchLabelKeys"):
                    if inner.get(key):
                        raise r.fail(
                            f"{where}.{key}",
                            "the API server folds it into labelSelector when it creates the pod, and the scheduler "
                            "reads only the result: write it there (matchLabelKeys [k]: a matchExpressions entry "
                            "{key: k, operator: In, values: [the pod's k]}; mismatchLabelKeys: NotIn)",
                        )
                for selector in ("labelSelector", "namespaceSelector"):
                    _check_selector(r, inner.get(selector), f"{where}.{selector}")


def _check_selector(r: Reader, raw: Any, path: str) -> None:
    """labels.NewRequirement's refusals of an expression the parser would otherwise read as matching nothing."""
    expressions = raw.get("matchExpressions") if isinstance(raw, Mapping) else None
    for i, expression in enumerate(expressions if isinstance(expressions, list) else ()):
        if not isinstance(expression, Mapping):
            continue
        op, values = expression.get("operator"), expression.get("values")
        if op in ("In", "NotIn") and not values:
            raise r.fail(f"{path}.matchExpressions[{i}].values", f"operator {op} needs at least one value")
        if op in ("Exists", "DoesNotExist") and values:
            raise r.fail(f"{path}.matchExpressions[{i}].values", f"operator {op} takes no values")


def _host_ports(raw: Any) -> tuple[HostPort, ...]:
    try:
        return read_host_ports(raw, "hostPorts")
    except HostPortError as err:
        raise ConstraintError(str(err)) from None


def checked(r: Reader, path: str, parse: Callable[[], _T]) -> _T:
    """Run a placement.node_constraints parser; its error becomes a ScenarioError at the key it names."""
    try:
        return parse()
    except ConstraintError as err:
        where, _, message = str(err).partition(": ")
        raise r.fail(f"{path}.{where}", message) from err


def check_combination(r: Reader, request: dict[str, Any], path: str) -> None:
    """One GPU request kind per task. The admission webhook refuses a fraction or GPU memory beside whole GPUs, and
    GPU memory beside a fraction (KAI@v0.17.0 gpu_request_validator.go:32-38); whole GPUs or a fraction beside MIG
    devices it allows, but the format keeps them apart (kaistack diagnose reads such pods from a cluster)."""
    kinds = [
        key
        for key, present in (
            ("gpu", request.get("gpu", 0) > 0),
            ("gpuFraction", request.get("gpu_fraction") is not None),
            ("gpuMemoryMiB", request.get("gpu_memory_mib") is not None),
            ("mig", any(request.get("mig", {}).values())),
        )
        if present
    ]
    if len(kinds) > 1:
        raise r.fail(path, f"at most one GPU request kind per task, got {' and '.join(kinds)}")
