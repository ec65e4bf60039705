"""Kubernetes' name syntax, as k8s.io/apimachinery/pkg/util/validation checks it (IsQualifiedName,
IsValidLabelValue): the names KAI's cache and Kubernetes' label selectors accept."""

from __future__ import annotations

import re

__all__ = ["is_label_value", "is_qualified_name"]

_NAME_PART = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def is_qualified_name(value: str) -> bool:
    """An optional DNS-1123 subdomain prefix (at most 253 characters) and "/", then a name part of at most 63
    characters: alphanumerics, '-', '_' or '.', starting and ending alphanumeric."""
    prefix, slash, part = value.rpartition("/")
    if value.count("/") > 1 or not part or len(part) > 63 or not _NAME_PART.fullmatch(part):
        return False
    return not slash or (0 < len(prefix) <= 253 and bool(_SUBDOMAIN.fullmatch(prefix)))


def is_label_value(value: str) -> bool:
    """Empty, or at most 63 characters like a name part."""
    return not value or (len(value) <= 63 and bool(_NAME_PART.fullmatch(value)))
