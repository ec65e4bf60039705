"""Resource quantities in pod templates, checked with the one quantity grammar (placement.quantity).

A manifest whose `resources.requests.cpu` is `1..5` is not a policy violation but invalid input:
the API server refuses it. `kaistack lint` reports it as an error (exit 2) naming the key path,
with the same message `kaistack simulate` and a stack file give for the same value. So is a fraction of
an extended resource (`nvidia.com/gpu: 0.5`): k8s v1.35 pkg/apis/core/validation/validation.go
ValidateResourceQuantityValue refuses it ("must be an integer"); a GPU share is an annotation.
"""

from __future__ import annotations

from collections.abc import Mapping

from kaistack.guardrails.podspec import Res, mapping, seq, workload
from placement.quantity import Quantity, QuantityError


def invalid_quantities(res: Res) -> list[str]:
    """One "<key path>: <problem>" per container resource value that is not a Kubernetes quantity."""
    wl = workload(res)
    if wl is None:
        return []
    problems: list[str] = []
    for template in wl.templates:
        for list_key in ("initContainers", "containers"):
            for i, container in enumerate(seq(template.spec.get(list_key))):
                resources = mapping(container.get("resources")) if isinstance(container, Mapping) else {}
                for block in ("requests", "limits"):
                    for name, value in mapping(resources.get(block)).items():
                        where = template.at(f"spec.{list_key}[{i}].resources.{block}.{name}")
                        try:
                            quantity = Quantity.parse(value)
                        except QuantityError as err:
                            problems.append(f"{where}: {err}")
                            continue
                        if is_extended(str(name)) and quantity.value.denominator != 1:
                            problems.append(
                                f"{where}: {value!r} is not a whole number; {name} is an extended resource, "
                                "which the API server counts in whole units only (must be an integer)"
                            )
    return problems


def is_extended(name: str) -> bool:
    """An extended resource (nvidia.com/gpu, nvidia.com/mig-1g.10gb): a domain-prefixed name outside
    kubernetes.io. k8s v1.35 pkg/apis/core/helper/helpers.go IsExtendedResourceName; the qualified-name
    check there is the name's own syntax, left to the API server."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")
