"""What `kaistack promote` plans, checks and reports: the pins, the plan, the check and the result (kaistack.ops.promote
computes them)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kaistack.declaration.config_secrets import SECRET_PLACEHOLDER

# YAML's line breaks (a CRLF is one); the masked span's lines keep them, so the diff's lines still pair up.
_BREAK = re.compile(r"(\r\n|[\r\n\x85\u2028\u2029])")


class PromotionError(Exception):
    """Promotion refused; the target file was not changed."""


class TargetChanged(PromotionError):
    """The target stack file changed between reading it and writing the promotion."""


@dataclass(frozen=True)
class Pin:
    """One value copied from source to target."""

    key: str  # as users write it: "kaistack:tenants[team-a].vcluster.version"
    path: tuple[str | int, ...]  # where it lives in the stack file document
    old: str  # the target's effective value before
    new: str
    added: bool  # the target file did not set the key (it ran the default)
    downgrade: bool = False  # both are release versions and `new` is the older
    restarts: str = ""  # what `pulumi up` stops to apply it (a running Job's image), or nothing

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "from": self.old,
            "to": self.new,
            "added": self.added,
            "downgrade": self.downgrade,
            "restarts": self.restarts or None,
        }


@dataclass(frozen=True)
class Skipped:
    key: str
    reason: str
    kept_newer: bool = False  # the target runs a newer release than the source's (not "already runs its pins")

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "reason": self.reason, "keptNewer": self.kept_newer}


@dataclass(frozen=True)
class PromotionPlan:
    project_dir: Path
    source: str
    target: str
    target_file: Path
    original_bytes: bytes
    digest: str
    new_text: str
    pins: tuple[Pin, ...]
    skipped: tuple[Skipped, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.pins)

    def diff(self) -> str:
        """A unified diff with "\n" line ends whatever the file's (CRLF, CR): the edit, not its line breaks."""
        name = self.target_file.name
        # A `secure:` value near a pin is a context line: ciphertext is printed nowhere (config_secrets), and this
        # diff reaches the terminal, --json and the promote workflow's log. Both sides are masked before diffing.
        old, new = mask_secure_text(self.original_bytes.decode("utf-8")), mask_secure_text(self.new_text)
        if old is None or new is None:
            return f"(the diff of {name} is not shown: it does not parse as YAML, and it may hold secure values)\n"
        lines = difflib.unified_diff(
            old.splitlines(), new.splitlines(), fromfile=f"a/{name}", tofile=f"b/{name}", lineterm=""
        )
        return "".join(line + "\n" for line in lines)


def mask_secure_text(text: str) -> str | None:
    """`text` with the value of every `secure` key, in any style (plain, quoted, a block scalar, continued over
    lines, behind an anchor or tag), replaced by SECRET_PLACEHOLDER on each of its lines; line breaks stay where
    they were. None when the text is not YAML (then where a value ends is unknown)."""
    if "secure" not in text:
        return text
    spans: list[tuple[int, int]] = []
    try:
        for root in yaml.compose_all(text, Loader=yaml.SafeLoader):
            spans += _secure_spans(root)
    except yaml.YAMLError:
        return None
    pieces, done = [], 0
    for start, end in sorted(spans):
        if start < done:  # inside a span already masked (a secure mapping holding a `secure` key, an alias)
            continue
        pieces += [text[done:start], _masked(text[start:end])]
        done = end
    return "".join([*pieces, text[done:]])


def _secure_spans(root: yaml.Node | None) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    seen: set[int] = set()
    stack = [root] if root is not None else []
    while stack:  # without recursion: the document's depth is the user's
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == "secure" and not _empty(value):
                    spans.append((value.start_mark.index, value.end_mark.index))
                stack += [key, value]
        elif isinstance(node, yaml.SequenceNode):
            stack += node.value
    return spans


def _empty(node: yaml.Node) -> bool:
    """An empty or null scalar (`secure:`, `''`, `~`, `null`): nothing to hide, and a placeholder would say a secret
    is set."""
    return isinstance(node, yaml.ScalarNode) and (node.value == "" or node.tag == "tag:yaml.org,2002:null")


def _masked(span: str) -> str:
    parts = _BREAK.split(span)  # text, break, text, break, ..., text
    for i in range(0, len(parts), 2):
        content = parts[i]
        if i == 0:
            parts[i] = SECRET_PLACEHOLDER
        elif content.strip(" \t"):
            parts[i] = content[: len(content) - len(content.lstrip(" \t"))] + SECRET_PLACEHOLDER
    return "".join(parts)


@dataclass
class CandidateCheck:
    """The would-be target validated: model parse, then policies and capacity."""

    ok: bool
    problems: list[str] = field(default_factory=list)
    report: Any = None  # kaistack.ops.validate.ValidationReport when the model parsed

    def as_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = {"ok": self.ok, "problems": self.problems}
        if self.report is not None:
            result["report"] = self.report.as_dict()
        return result


@dataclass
class PromotionResult:
    plan: PromotionPlan
    check: CandidateCheck | None
    written: bool
    refused: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.plan.source,
            "target": self.plan.target,
            "file": self.plan.target_file.name,
            "pins": [p.as_dict() for p in self.plan.pins],
            "skipped": [s.as_dict() for s in self.plan.skipped],
            "diff": self.plan.diff(),
            "validation": self.check.as_dict() if self.check else None,
            "written": self.written,
            "refused": self.refused,
        }
