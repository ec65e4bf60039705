"""What stack rules report and read: findings, the checker-unavailable signal, the stack's Queue objects."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kaistack.guardrails.podspec import QUEUE_TYPE, Res, dig, mapping


@dataclass(frozen=True)
class Finding:
    message: str
    subject: Res | None = None  # reported against this resource's URN


class CheckerUnavailable(Exception):
    """The capacity checker cannot run here; the policy reports itself not applicable, never a verdict."""


@dataclass(frozen=True)
class QueueDecl:
    res: Res
    name: str
    parent: str | None
    resources: Mapping[str, Any]


def queue_decls(resources: Sequence[Res]) -> list[QueueDecl]:
    out = []
    for res in resources:
        if res.type != QUEUE_TYPE:
            continue
        if not res.props.get("kind"):
            continue  # outputs not known yet: a preview under a provider whose config is unknown
        spec = mapping(res.props.get("spec"))
        name = dig(res.props, "metadata", "name") or res.name
        parent = spec.get("parentQueue") or None
        out.append(QueueDecl(res, str(name), str(parent) if parent else None, mapping(spec.get("resources"))))
    return out
