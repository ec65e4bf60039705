"""Run the Pulumi program (`__main__.py`) in-process under Pulumi mocks and record every resource.

No engine, CLI, plugin or cluster is involved: `pulumi.runtime.set_mocks` answers each registration
(pulumi.md §1-3). What is recorded is what the engine would receive: each resource's type, name,
parent URN and inputs (camelCase, as in `MockResourceArgs.inputs`). Policy tests, `kaistack validate`
and the platform tests use the same machinery (`MockSession`).

Conventions: `parent` is the parent's URN, or None for resources directly under the stack (the root
`pulumi:pulumi:Stack` itself is not listed). Secret values are never returned in clear: they are
replaced by "[secret]" in inputs, JSON and outputs. Numbers arrive as floats from the mock monitor
(pulumi.md §2); integral ones are given back as ints, which is what Kubernetes receives.
"""

from __future__ import annotations

import asyncio
import base64
import json
import runpy
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc
from pulumi.runtime.settings import SETTINGS, get_root_resource
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from kaistack.declaration.parse import NAMESPACE, SECRET_PLACEHOLDER
from kaistack.stack.load import LoadOptions, ResolvedStack, load_stack

PROJECT = "kaistack"
SECRET_MASK = SECRET_PLACEHOLDER
UNKNOWN_MASK = "[unknown]"
MAIN = "__main__.py"


def _mock_kubeconfig(server: str, user: str) -> str:
    """A syntactically plausible kubeconfig with fake credentials (never a real one)."""
    fake = base64.b64encode(f"mock credential for {user}".encode()).decode()
    return (
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: {user}\n  cluster:\n    server: {server}\n    certificate-authority-data: {fake}\n"
        f"users:\n- name: {user}\n  user:\n    client-certificate-data: {fake}\n    client-key-data: {fake}\n"
        f"contexts:\n- name: {user}\n  context: {{cluster: {user}, user: {user}}}\ncurrent-context: {user}\n"
    )


MOCK_KUBECONFIG = _mock_kubeconfig("https://127.0.0.1:6443", "kind-mock")


@dataclass(frozen=True)
class RecordedResource:
    """One registration (or `.get` read) as the engine would receive it."""

    type: str
    name: str
    urn: str
    parent: str | None
    inputs: dict[str, Any]
    custom: bool
    provider: str | None
    resource_id: str | None = None
    dependencies: tuple[str, ...] = ()
    additional_secret_outputs: tuple[str, ...] = ()
    delete_before_replace: bool = False

    @property
    def masked_inputs(self) -> dict[str, Any]:
        return mask(self.inputs)

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "name": self.name, "parent": self.parent, "inputs": self.masked_inputs}


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


class RenderError(Exception):
    """The program stopped with a pulumi.RunError (e.g. invalid config); the message is for users."""


def mask(value: Any) -> Any:
    """Secrets -> "[secret]", unknowns -> "[unknown]", integral floats -> int, recursively."""
    if rpc.is_rpc_secret(value):
        return SECRET_MASK
    if isinstance(value, Mapping):
        return {k: mask(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if value == rpc.UNKNOWN:
        return UNKNOWN_MASK
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


class PlatformMocks(pulumi_mocks.Mocks):
    """Echo inputs; add the computed outputs the program reads, in camelCase (style.md #12)."""

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        state = dict(args.inputs)
        raw_metadata = state.get("metadata")
        metadata: Mapping[str, Any] = raw_metadata if isinstance(raw_metadata, Mapping) else {}
        if args.typ == "command:local:Command":
            # `kind get kubeconfig` output; secret like the real one (additional_secret_outputs).
            state.update(stdout=rpc.wrap_rpc_secret(MOCK_KUBECONFIG), stderr="")
        elif args.typ == "eks:index:Cluster":
            # pulumi-eks computes the kubeconfig (an object, secret); the EKS component reads it.
            kubeconfig = yaml.safe_load(_mock_kubeconfig("https://mock.eks.amazonaws.com", "eks-mock"))
            state["kubeconfig"] = rpc.wrap_rpc_secret(kubeconfig)
        elif args.typ.startswith("aws:") and args.custom:
            # Every AWS resource has an ARN; the EKS component passes the node role's to the cluster.
            state.setdefault("arn", f"arn:aws:mock::123456789012:{args.name}")
        elif args.typ == "kubernetes:core/v1:Secret" and args.resource_id:
            namespace, _, name = args.resource_id.rpartition("/")
            tenant = name.removeprefix("vc-")
            server = f"https://{tenant}.{namespace}.svc:8443"
            kubeconfig = base64.b64encode(_mock_kubeconfig(server, f"vcluster-{tenant}").encode()).decode()
            state = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": name, "namespace": namespace},
                "type": "Opaque",
                "data": rpc.wrap_rpc_secret({"config": kubeconfig}),
            }
        elif args.typ == "kubernetes:core/v1:Service" and args.resource_id:
            namespace, _, name = args.resource_id.rpartition("/")
            state = {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"type": "LoadBalancer", "ports": [{"name": "https", "port": 443, "targetPort": 8443}]},
                "status": {"loadBalancer": {"ingress": [{"hostname": f"{name}.{namespace}.elb.example.com"}]}},
            }
        elif args.typ == "kubernetes:helm.sh/v3:Release":
            state["status"] = {
                "name": state.get("name", args.name),
                "namespace": state.get("namespace", "default"),
                "chart": state.get("chart", ""),
                "version": state.get("version", ""),
                "status": "deployed",
                "revision": 1,
            }
        resource_id = args.resource_id or (
            f"{metadata.get('namespace')}/{metadata.get('name')}" if metadata.get("namespace") else None
        )
        return resource_id or metadata.get("name") or f"{args.name}-id", state

    def call(self, args: pulumi_mocks.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, None


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """MockMonitor that also keeps what `MockResourceArgs` leaves out: parent, dependencies, options."""

    def __init__(self, mocks: pulumi_mocks.Mocks) -> None:
        super().__init__(mocks)
        self.records: list[RecordedResource] = []
        self.stack_urn: str | None = None
        self._lock = threading.Lock()  # the SDK registers from executor threads

    def _record(self, request: Any, urn: str, properties: Any, custom: bool, resource_id: str | None) -> None:
        parent = request.parent or None
        record = RecordedResource(
            type=request.type,
            name=request.name,
            urn=urn,
            parent=None if parent == self.stack_urn else parent,
            inputs=rpc.deserialize_properties(properties),
            custom=custom,
            provider=request.provider or None,
            resource_id=resource_id,
            dependencies=tuple(request.dependencies),
            additional_secret_outputs=tuple(request.additionalSecretOutputs),
            delete_before_replace=bool(getattr(request, "deleteBeforeReplace", False)),
        )
        with self._lock:
            self.records.append(record)

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type == "pulumi:pulumi:Stack":
            self.stack_urn = response.urn
        else:
            self._record(request, response.urn, request.object, bool(request.custom), request.importId or None)
        return response

    def ReadResource(self, request: Any) -> Any:
        response = super().ReadResource(request)
        self._record(request, response.urn, request.properties, True, request.id)
        return response


def pulumi_config(raw: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
    """`kaistack:` keys as Pulumi passes them to programs: JSON strings (pulumi.md §4)."""
    values = {f"{NAMESPACE}:{k}": json.dumps(v) for k, v in raw.items()}
    secret = [k for k, v in values.items() if json.dumps(SECRET_PLACEHOLDER) in v]
    return values, secret


class MockSession:
    """A fresh event loop + mocks for one program run (pulumi.md §3); use as a context manager."""

    def __init__(self, stack: str = "dev", project: str = PROJECT) -> None:
        self.stack = stack
        self.project = project
        self.mocks = PlatformMocks()
        self.monitor = RecordingMonitor(self.mocks)
        self.loop: asyncio.AbstractEventLoop | None = None

    def __enter__(self) -> MockSession:
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        # Without reset_options a second set_mocks keeps the previous run's root Stack.
        pulumi.runtime.reset_options()
        pulumi.runtime.set_mocks(
            self.mocks, project=self.project, stack=self.stack, preview=False, monitor=self.monitor
        )
        return self

    def __exit__(self, *exc: object) -> None:
        pulumi.runtime.set_all_config({})
        pulumi.runtime.reset_options()
        assert self.loop is not None
        self.loop.close()
        asyncio.set_event_loop(None)

    def set_config(self, raw: Mapping[str, Any]) -> None:
        values, secret = pulumi_config(raw)
        pulumi.runtime.set_all_config(values, secret)

    def run(self, main: Path) -> dict[str, Any]:
        """Run the program to completion (all registrations and outputs); RunError -> RenderError."""
        namespace: dict[str, Any] = {}
        project_dir = str(main.parent)

        def program() -> None:
            namespace.update(runpy.run_path(str(main), run_name="__main__"))

        SETTINGS.rpc_manager.clear()
        SETTINGS.outputs.clear()
        sys.path.insert(0, project_dir)
        try:
            _sync_await(run_pulumi_func(program))
        except pulumi.RunError as err:
            raise RenderError(str(err)) from None
        finally:
            sys.path.remove(project_dir)
        return namespace

    @property
    def resources(self) -> list[RecordedResource]:
        return tree_order(self.monitor.records)

    def stack_outputs(self) -> dict[str, Any]:
        """Exported values, resolved; secret ones masked."""
        root = get_root_resource()
        exported = dict(getattr(root, "outputs", {}) or {})

        async def resolve(value: Any) -> Any:
            output = pulumi.Output.from_input(value)
            if await output.is_secret():
                return SECRET_MASK
            return mask(await output.future(with_unknowns=True))

        assert self.loop is not None
        values = self.loop.run_until_complete(asyncio.gather(*(resolve(v) for v in exported.values())))
        return dict(zip(exported, values, strict=True))


def tree_order(records: list[RecordedResource]) -> list[RecordedResource]:
    """Depth-first from the stack, siblings by name: a stable order whatever the registration order."""
    children: dict[str | None, list[RecordedResource]] = {}
    urns = {r.urn for r in records}
    for record in records:
        parent = record.parent if record.parent in urns else None
        children.setdefault(parent, []).append(record)

    def walk(parent: str | None) -> Iterator[RecordedResource]:
        for record in sorted(children.get(parent, []), key=lambda r: (r.name, r.type)):
            yield record
            yield from walk(record.urn)

    return list(walk(None))


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
