"""The policy pack's rules over plain Kubernetes manifests (`kaistack lint`).

Reads multi-document YAML (hand-written manifests, `helm template` output, `kubectl get -o yaml`
output, `List` objects with `items`), turns every object into the props shape the CrossGuard rules
read (a manifest *is* camelCase inputs; its apiVersion/kind become the Pulumi type token), and runs
the same rule functions (`kaistack.guardrails.rules`, `kaistack.guardrails.stack_rules`). Unreadable input is an error
naming the file and line, never a traceback, and never stops the other files from being checked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kaistack.declaration import limits, yaml_load
from kaistack.declaration.yaml_load import Document, DocumentError, load_documents
from kaistack.guardrails.facts import StackFacts
from kaistack.guardrails.pack_config import PackConfig
from kaistack.guardrails.podspec import Res, type_token
from kaistack.guardrails.quantities import invalid_quantities
from kaistack.guardrails.rules import RESOURCE_RULES
from kaistack.guardrails.settings import Settings
from kaistack.guardrails.stack_model import CheckerUnavailable
from kaistack.guardrails.stack_rules import STACK_RULES
from kaistack.ops.lint_shapes import pod_shape_problem, string_map_problem

# Needs the stack's node pools and its whole declared load, not a handful of manifests.
STACK_ONLY_POLICIES = ("kai-capacity",)
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Violation:
    policy: str
    file: str
    document: int
    kind: str
    name: str
    message: str

    def human(self) -> str:
        return f"{self.file}:{self.document} {self.kind}/{self.name} [{self.policy}] {self.message}"


@dataclass(frozen=True)
class LintError:
    file: str
    line: int | None
    message: str

    def human(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: error: {self.message}"


def _stored_version(value: object) -> bool:
    """A resourceVersion only a stored object has: a decimal uint64 other than 0."""
    return isinstance(value, str) and re.fullmatch(r"[0-9]{1,20}", value) is not None and 0 < int(value) < 2**64


@dataclass(frozen=True)
class ManifestObject:
    file: str
    document: int  # 1-based YAML document index in the file
    line: int  # 1-based line where the object starts
    obj: Mapping[str, Any]

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind"))

    @property
    def name(self) -> str:
        meta = self.obj.get("metadata") or {}
        return str(meta.get("name") or meta.get("generateName") or "?")

    @property
    def live(self) -> bool:
        """An object as the API server returns it: a uid, a resourceVersion and a status phase (a manifest to apply
        has none of them).

        All three are the author's to write, and a live pod is spared the nodeName and pod-group-name rules, so
        the resourceVersion must be one the API server refuses on create: the etcd3 store refuses a version that
        parses (strconv.ParseUint, base 10) to anything but 0, and clears the rest (kubernetes/kubernetes
        staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go, `Create`); uid and status it overwrites."""
        meta, status = self.obj.get("metadata"), self.obj.get("status")
        if not isinstance(meta, Mapping) or not isinstance(status, Mapping):
            return False
        return bool(meta.get("uid")) and _stored_version(meta.get("resourceVersion")) and bool(status.get("phase"))

    def res(self, index: int) -> Res:
        return Res(
            type=type_token(str(self.obj["apiVersion"]), self.kind),
            name=self.name,
            props=self.obj,
            urn=f"lint:{index}",
            live=self.live,
        )


@dataclass
class LintResult:
    violations: list[Violation] = field(default_factory=list)
    errors: list[LintError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    objects: int = 0
    files: int = 0

    @property
    def exit_code(self) -> int:
        return 2 if self.errors else 1 if self.violations else 0

    def as_json(self) -> dict[str, Any]:
        return {
            "violations": [v.__dict__ for v in self.violations],
            "errors": [e.__dict__ for e in self.errors],
        }


# --- reading -------------------------------------------------------------------------------------


def expand_paths(paths: Iterable[str]) -> list[str]:
    """Files as given; directories -> their *.yaml/*.yml/*.json files (recursively, sorted)."""
    out: list[str] = []
    for p in paths:
        path = Path(p)
        if p != "-" and path.is_dir():
            out += sorted(str(f) for f in path.rglob("*") if f.suffix in MANIFEST_SUFFIXES and f.is_file())
        else:
            out.append(p)
    return out


def read_text(path: str) -> str:
    """The file (or stdin for "-") through the one bounded reader: at most MAX_MANIFEST_FILE_BYTES, UTF-8."""
    return yaml_load.read_text(path, max_bytes=limits.MAX_MANIFEST_FILE_BYTES, what="manifest file")


def load_manifests(path: str, text: str) -> tuple[list[ManifestObject], list[LintError]]:
    """Every Kubernetes object in a YAML stream; a document that cannot be read is an error, the rest load."""
    return _manifests(path, *load_documents(text, path))


def _manifests(
    path: str, documents: list[Document], problems: list[DocumentError]
) -> tuple[list[ManifestObject], list[LintError]]:
    objects: list[ManifestObject] = []
    errors: list[LintError] = []
    for document in documents:
        objs, errs = _objects(path, document.index, document.line, document.node, document.data)
        objects += objs
        errors += errs
    errors += [LintError(path, p.line, p.problem) for p in problems]
    return objects, sorted(errors, key=lambda e: e.line or 0)


def _objects(
    path: str, document: int, line: int, node: yaml.Node, data: Any
) -> tuple[list[ManifestObject], list[LintError]]:
    # Node marks count from the document's own first line; `line` is the document's line in the file.
    base = line - node.start_mark.line
    if data is None:
        return [], []  # an empty document (a trailing `---`)
    problem = _not_an_object(data)
    # Any document with `items` is a list to kubectl, whatever its kind: it applies the items (kubernetes/apimachinery
    # @v0.35.2 pkg/apis/meta/v1/unstructured/helpers.go:433-446, the decoder's `items` detector; kubectl apply's
    # builder flattens lists). Reading only `*List` kinds so let a pod inside `kind: Bundle` past every rule.
    if problem is None and "items" in data:
        if data["items"] is None:
            return [], []  # `items: null` decodes as an empty list
        if not isinstance(data["items"], list):
            problem = f"{data['kind']} items is a {type(data['items']).__name__}; expected a list of objects"
            return [], [LintError(path, line, f"document {document} is not a Kubernetes object: {problem}")]
        objects, errors = [], []
        item_nodes = _items_nodes(node)
        for i, item in enumerate(data["items"]):
            item_line = base + item_nodes[i].start_mark.line if i < len(item_nodes) else line
            item_problem = _not_an_object(item) or _metadata_problem(item) or pod_shape_problem(item)
            if item_problem:
                errors.append(LintError(path, item_line, f"document {document} items[{i}]: {item_problem}"))
            else:
                objects.append(ManifestObject(path, document, item_line, item))
        return objects, errors
    problem = problem or _metadata_problem(data) or pod_shape_problem(data)
    if problem:
        return [], [LintError(path, line, f"document {document} is not a Kubernetes object: {problem}")]
    return [ManifestObject(path, document, line, data)], []


def _not_an_object(data: Any) -> str | None:
    if not isinstance(data, dict):
        return f"expected a mapping with apiVersion and kind, got {type(data).__name__}"
    missing = [k for k in ("apiVersion", "kind") if not isinstance(data.get(k), str) or not data.get(k)]
    if missing:
        return f"missing {' and '.join(missing)}"
    return None


def _metadata_problem(data: Mapping[str, Any]) -> str | None:
    """A metadata block kubectl would refuse to decode. The rules read a wrong shape as absent (`labels: oops` as
    no queue label), so linting it would report a wrong finding or none; it is an error in the file instead."""
    kind, meta = data["kind"], data.get("metadata")
    if meta is None:
        return f"{kind} has no metadata.name (is the metadata block indented under 'metadata:'?)"
    if not isinstance(meta, dict):
        return f"{kind} metadata is a {type(meta).__name__}; expected a mapping with name"
    for key in ("name", "generateName", "namespace"):
        if meta.get(key) is not None and not isinstance(meta[key], str):
            return f"{kind} metadata.{key} is a {type(meta[key]).__name__}; expected a string"
    if not (meta.get("name") or meta.get("generateName")):
        return f"{kind} has no metadata.name (is the metadata block indented under 'metadata:'?)"
    for key in ("labels", "annotations"):
        entries = meta.get(key)
        if entries is None:
            continue
        if not isinstance(entries, dict):
            return f"{kind} metadata.{key} is a {type(entries).__name__}; expected a mapping of strings to strings"
        problem = string_map_problem(entries)
        if problem is not None:
            return f"{kind} metadata.{key}{problem}"
    return None


def _items_nodes(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if getattr(key, "value", None) == "items" and isinstance(value, yaml.SequenceNode):
                return list(value.value)
    return []


# --- checking ------------------------------------------------------------------------------------


def lint_objects(
    objects: Sequence[ManifestObject],
    facts: StackFacts,
    settings: Settings | None = None,
    config: PackConfig | None = None,
) -> LintResult:
    """Every rule over the objects: with `settings` for all, or each policy's from a pack `config` (whose disabled
    policies do not run)."""
    s = settings or Settings()
    config = config or PackConfig()
    result = LintResult(objects=len(objects))
    resources = [o.res(i) for i, o in enumerate(objects)]
    by_urn = dict(zip((r.urn for r in resources), objects, strict=True))
    for obj, res in zip(objects, resources, strict=True):
        for problem in invalid_quantities(res):
            result.errors.append(LintError(obj.file, obj.line, f"{obj.kind}/{obj.name} {problem}"))
        for policy, rule in RESOURCE_RULES.items():
            if policy in config.disabled:
                continue
            for message in rule(res, config.of(policy, s), facts):
                result.violations.append(Violation(policy, obj.file, obj.document, obj.kind, obj.name, message))
    for policy, stack_rule in STACK_RULES.items():
        if policy in STACK_ONLY_POLICIES or policy in config.disabled:
            continue
        try:
            findings = stack_rule(resources, config.of(policy, s), facts)
        except CheckerUnavailable as err:
            result.notes.append(f"{policy}: not checked: {err}")
            continue
        for finding in findings:
            origin = by_urn.get(finding.subject.urn) if finding.subject else None
            result.violations.append(
                Violation(
                    policy,
                    origin.file if origin else "-",
                    origin.document if origin else 0,
                    origin.kind if origin else "-",
                    origin.name if origin else "-",
                    finding.message,
                )
            )
    return result


def lint_paths(
    paths: Iterable[str], facts: StackFacts, settings: Settings | None = None, config: PackConfig | None = None
) -> LintResult:
    paths = list(paths)
    files = expand_paths(paths)
    objects: list[ManifestObject] = []
    errors: list[LintError] = []
    for p in paths:
        if p != "-" and Path(p).is_dir() and not expand_paths([p]):
            # A directory that holds no manifest is a wrong path more often than a clean one: say so (exit 2).
            suffixes = ", ".join(sorted(MANIFEST_SUFFIXES))
            errors.append(LintError(p, None, f"a directory with no manifest files ({suffixes}) in it"))
    empty: list[str] = []
    for path in files:
        try:
            text = read_text(path)
        except yaml_load.YamlInputError as err:
            errors.append(LintError(path, None, str(err).removeprefix(f"{path}: ")))
            continue
        documents, problems = load_documents(text, path, kubectl=True)
        if not problems and all(document.data is None for document in documents):
            empty.append(path)  # nothing, comments, `null` (what yq prints for no match), `---` alone
            continue
        objs, errs = _manifests(path, documents, problems)
        objects += objs
        errors += errs
    if empty and len(empty) == len(files) and not errors:
        # As `kubectl apply -f` refuses it ("no objects passed to apply": over all its inputs together): piped in,
        # it is what a failed `kubectl get` or `helm template` leaves, which must not pass as a clean cluster.
        errors += [
            LintError(p, None, "holds no YAML document (empty, or only comments): nothing to check") for p in empty
        ]
    result = lint_objects(objects, facts, settings, config)
    result.errors = errors + result.errors
    result.files = len(files)
    return result
