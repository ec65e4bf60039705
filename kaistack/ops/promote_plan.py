"""What `kaistack promote` plans, checks and reports: the pins, the plan, the check and the result (kaistack.ops.promote
computes them)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kaistack.declaration.config_secrets import SECRET_PLACEHOLDER

# `secure:` and its value as Pulumi writes it (one line, plain or quoted), in block or flow style.
_SECURE_VALUE = re.compile(
    r"""(?<![\w-])(["']?secure["']?[ \t]*:[ \t]+)"""  # the key, quoted or not
    r"""("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s,{}\[\]#]+)"""  # the value: double- or single-quoted, or plain
)
_MASKED = rf"\1{SECRET_PLACEHOLDER}"


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
        lines = difflib.unified_diff(
            self.original_bytes.decode("utf-8").splitlines(),
            self.new_text.splitlines(),
            fromfile=f"a/{name}",
            tofile=f"b/{name}",
            lineterm="",
        )
        # A `secure:` value near a pin is a context line: ciphertext is printed nowhere (config_secrets), and this
        # diff reaches the terminal, --json and the promote workflow's log.
        return "".join(_SECURE_VALUE.sub(_MASKED, line) + "\n" for line in lines)


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
