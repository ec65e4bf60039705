"""Resource quantities in pod templates, checked with the one quantity grammar (placement.quantity).

A manifest whose `resources.requests.cpu` is `1..5` is not a policy violation but invalid input:
the API server refuses it. `kaistack lint` reports it as an error (exit 2) naming the key path,
with the same message `kaistack simulate` and a stack file give for the same value.
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
                        try:
                            Quantity.parse(value)
                        except QuantityError as err:
                            where = template.at(f"spec.{list_key}[{i}].resources.{block}.{name}")
                            problems.append(f"{where}: {err}")
    return problems
