"""Run the Pulumi program (`__main__.py`) in-process under Pulumi mocks and record every resource.

No engine, CLI, plugin or cluster is involved: `pulumi.runtime.set_mocks` answers each registration
(pulumi.md §1-3; kaistack.ops.mocks). What is recorded is what the engine would receive: each
resource's type, name, parent URN and inputs (camelCase, as in `MockResourceArgs.inputs`). Policy
tests, `kaistack validate` and the platform tests use the same machinery.

Conventions: `parent` is the parent's URN, or None for resources directly under the stack (the root
`pulumi:pulumi:Stack` itself is not listed). Secret values are never returned in clear: they are
replaced by "[secret]" in inputs, JSON and outputs. Numbers arrive as floats from the mock monitor
(pulumi.md §2); integral ones are given back as ints, which is what Kubernetes receives.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kaistack.ops.mocks import PROJECT, MockSession, RecordedResource, RenderError
from kaistack.stack.load import LoadOptions, ResolvedStack, load_stack

__all__ = ["MAIN", "RenderError", "Rendered", "render_loaded", "render_program", "render_stack", "render_tree"]

MAIN = "__main__.py"


@dataclass(frozen=True)
class Rendered:
    stack: str
    resources: list[RecordedResource]
    outputs: dict[str, Any] = field(default_factory=dict)

    def of_type(self, type_: str) -> list[RecordedResource]:
        return [r for r in self.resources if r.type == type_]

    def named(self, name: str) -> RecordedResource:
        matches = [r for r in self.resources if r.name == name]
        if len(matches) != 1:
            raise KeyError(f"{len(matches)} resources named {name!r}")
        return matches[0]

    def to_json(self) -> list[dict[str, Any]]:
        return [r.to_json() for r in self.resources]

    def tree(self) -> str:
        return render_tree(self)


def render_program(main: Path, stack: str, raw: Mapping[str, Any], project: str = PROJECT) -> Rendered:
    with MockSession(stack, project) as session:
        session.set_config(raw)
        session.run(main)
        return Rendered(stack=stack, resources=session.resources, outputs=session.stack_outputs())


def render_stack(project_dir: Path, stack: str, options: LoadOptions | None = None) -> Rendered:
    """Every resource `pulumi up --stack <stack>` would register; ConfigError for a bad stack file.

    The stack is loaded first (kaistack.stack.load) so callers get ConfigError, with every problem,
    rather than the program's RunError; the program then loads the same config itself, as under
    `pulumi up`, and answers the same (discovery included: nothing is cached between the two).
    """
    project_dir = Path(project_dir).resolve()
    return render_loaded(project_dir, load_stack(project_dir, stack, options))


def render_loaded(project_dir: Path, loaded: ResolvedStack) -> Rendered:
    """Render a stack already loaded through kaistack.stack.load (validate loads once for everything)."""
    return render_program(Path(project_dir).resolve() / MAIN, loaded.name, loaded.raw)


# --- human-readable tree --------------------------------------------------------------------------


def _detail(record: RecordedResource) -> str:
    inputs = record.masked_inputs
    raw_metadata = inputs.get("metadata")
    metadata: Mapping[str, Any] = raw_metadata if isinstance(raw_metadata, Mapping) else {}
    if record.type == "kubernetes:helm.sh/v3:Release":
        repo = (inputs.get("repositoryOpts") or {}).get("repo")
        chart = f"{repo}/{inputs.get('chart')}" if repo else inputs.get("chart")
        return f"{chart} {inputs.get('version', '')} -> ns {inputs.get('namespace', 'default')}"
    if record.resource_id and record.type.startswith("kubernetes:"):
        return f"read {record.resource_id}"
    if record.type == "command:local:Command":
        return "runs on the Pulumi host: " + str(inputs.get("create", "")).strip().splitlines()[-1]
    if metadata.get("name"):
        where = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
        return f"{inputs.get('kind', '')} {where}{metadata['name']}".strip()
    return ""


def render_tree(rendered: Rendered) -> str:
    by_parent: dict[str | None, list[RecordedResource]] = {}
    for record in rendered.resources:
        by_parent.setdefault(record.parent, []).append(record)
    lines = [f"{PROJECT}-{rendered.stack} (pulumi:pulumi:Stack)"]

    def walk(parent: str | None, prefix: str) -> None:
        kids = by_parent.get(parent, [])
        for i, record in enumerate(kids):
            last = i == len(kids) - 1
            detail = _detail(record)
            line = f"{prefix}{'└── ' if last else '├── '}{record.name}  [{record.type}]"
            lines.append(f"{line}  {detail}" if detail else line)
            walk(record.urn, prefix + ("    " if last else "│   "))

    walk(None, "")
    lines.append(f"{len(rendered.resources)} resources")
    return "\n".join(lines)
