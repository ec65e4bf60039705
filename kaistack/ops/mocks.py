"""Pulumi's mocks for kaistack: one recording mock engine for `kaistack render` and every component test.

No engine, CLI, plugin or cluster is involved: `pulumi.runtime.set_mocks` answers each registration
(pulumi.md §1-3). `MockSession` gives each program run (or test) a fresh event loop and clean runtime
settings; `RecordingMonitor` keeps what the engine would receive — type, name, parent URN, inputs
(camelCase, as in `MockResourceArgs.inputs`), dependencies and options. `PlatformMocks` echoes
inputs and adds only the provider-computed outputs the program reads (style.md #12).
"""

from __future__ import annotations

import asyncio
import base64
import json
import runpy
import sys
import threading
import uuid
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc
from pulumi.runtime.settings import SETTINGS, get_root_resource
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from kaistack.declaration.parse import NAMESPACE, SECRET_PLACEHOLDER

PROJECT = "kaistack"
SECRET_MASK = SECRET_PLACEHOLDER
UNKNOWN_MASK = "[unknown]"


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


def eks_kubeconfig(cluster_name: str) -> dict[str, Any]:
    """The shape pulumi-eks returns: an exec credential plugin (`aws eks get-token`). Without `--region`, as
    releases before pulumi/pulumi-eks#1498 wrote it, so the program's own region fix-up is exercised."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kubernetes", "cluster": {"server": "https://example.eks.amazonaws.com"}}],
        "contexts": [{"name": "aws", "context": {"cluster": "kubernetes", "user": "aws"}}],
        "current-context": "aws",
        "users": [
            {
                "name": "aws",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "aws",
                        "args": ["eks", "get-token", "--cluster-name", cluster_name, "--output", "json"],
                    }
                },
            }
        ],
    }


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
    protect: bool = False
    transforms: int = 0  # how many transforms the options declare (the mock monitor runs none)
    replace_on_changes: tuple[str, ...] = ()
    retain_on_delete: bool = False

    @property
    def masked_inputs(self) -> dict[str, Any]:
        return mask(self.inputs)

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "name": self.name, "parent": self.parent, "inputs": self.masked_inputs}


class RenderError(Exception):
    """The program stopped with a pulumi.RunError (e.g. invalid config); the message is for users.

    `does_not_fit`: it was the program's capacity gate (kai.capacityCheck: enforce) that stopped it, on a valid
    stack whose declared work would stay Pending: a finding (exit 1), not bad input (exit 2)."""

    def __init__(self, message: str, *, does_not_fit: bool = False) -> None:
        super().__init__(message)
        self.does_not_fit = does_not_fit


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
    """Echo inputs; add the computed outputs the program reads, in camelCase (style.md #12).

    `preview`: the preview of a first `pulumi up`, where what only an install gives (a release's status, the uids
    the API server assigns) is not known yet."""

    def __init__(self, preview: bool = False) -> None:
        self.preview = preview

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        state = dict(args.inputs)
        raw_metadata = state.get("metadata")
        metadata: Mapping[str, Any] = raw_metadata if isinstance(raw_metadata, Mapping) else {}
        if args.typ == "command:local:Command":
            # `kind get kubeconfig` output; secret like the real one (additional_secret_outputs).
            state.update(stdout=rpc.wrap_rpc_secret(MOCK_KUBECONFIG), stderr="")
        elif args.typ == "eks:index:Cluster":
            # pulumi-eks computes the kubeconfig (an object, secret): an exec credential plugin without
            # --region (pulumi-eks#1038), which the EKS component adds.
            state["kubeconfig"] = rpc.wrap_rpc_secret(eks_kubeconfig(str(state.get("name", args.name))))
        elif args.typ == "aws:iam/role:Role":
            # The EKS component hands the node role's ARN and name to the node groups.
            state.update(arn=f"arn:aws:iam::123456789012:role/{args.name}", name=args.name)
        elif args.typ == "aws:ec2/eip:Eip":
            # What AWS computes and the NAT gateway reads: without it the gateway rendered with no address.
            state.update(arn=f"arn:aws:mock::123456789012:{args.name}", allocationId=f"eipalloc-{args.name}")
        elif args.typ.startswith("aws:") and args.custom:
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
        elif args.typ == "kubernetes:helm.sh/v3:Release" and not self.preview:  # computed in a preview
            state["status"] = {
                "name": state.get("name", args.name),
                "namespace": state.get("namespace", "default"),
                "chart": state.get("chart", ""),
                "version": state.get("version", ""),
                "status": "deployed",
                "revision": 1,
            }
        if args.typ.startswith("kubernetes:") and isinstance(state.get("metadata"), Mapping) and not self.preview:
            # The API server gives every object a uid; a tenant provider's clusterIdentifier is made of them.
            uid = uuid.uuid5(uuid.NAMESPACE_URL, f"{args.typ}/{args.resource_id or args.name}")
            state["metadata"] = {**state["metadata"], "uid": str(uid)}
        resource_id = args.resource_id or (
            f"{metadata.get('namespace')}/{metadata.get('name')}" if metadata.get("namespace") else None
        )
        if self.preview and args.custom and not args.resource_id and args.typ != "command:local:Command":
            # The preview of a create answers an empty id (unknown to the program): pulumi-kubernetes Create returns
            # "" in preview (helm_release.go, provider.go); pulumi-command makes a random one even then.
            return "", state
        return resource_id or metadata.get("name") or f"{args.name}-id", state

    def call(self, args: pulumi_mocks.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        if args.token == "aws:eks/getAddonVersion:getAddonVersion":
            # AWS answers the add-on's default version for that Kubernetes version (a stand-in name here).
            addon, kubernetes = args.args.get("addonName"), args.args.get("kubernetesVersion")
            version = f"v0.0.0-{addon}-for-{kubernetes}"
            return {"addonName": addon, "kubernetesVersion": kubernetes, "version": version, "id": addon}, []
        return {}, []


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
            protect=bool(getattr(request, "protect", False)),
            transforms=len(getattr(request, "transforms", ())),
            replace_on_changes=tuple(getattr(request, "replaceOnChanges", ())),
            retain_on_delete=bool(getattr(request, "retainOnDelete", False)),
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

    def __init__(self, stack: str = "dev", project: str = PROJECT, *, preview: bool = False) -> None:
        self.stack = stack
        self.project = project
        self.preview = preview
        self.mocks = PlatformMocks(preview)
        self.monitor = RecordingMonitor(self.mocks)
        self.loop: asyncio.AbstractEventLoop | None = None

    def __enter__(self) -> MockSession:
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        # Without reset_options a second set_mocks keeps the previous run's root Stack.
        pulumi.runtime.reset_options()
        pulumi.runtime.set_mocks(
            self.mocks, project=self.project, stack=self.stack, preview=self.preview, monitor=self.monitor
        )
        return self

    def __exit__(self, *exc: object) -> None:
        pulumi.runtime.set_all_config({})
        pulumi.runtime.reset_options()
        assert self.loop is not None
        self.loop.close()
        asyncio.set_event_loop(None)

    def set_config(
        self, raw: Mapping[str, Any], other: Mapping[str, str] | None = None, secret: Collection[str] = ()
    ) -> None:
        """`kaistack:` keys (as structured values) plus `other` plain keys such as {"aws:region": ...}.

        `secret`: keys (prefix stripped) Pulumi lists as secret though their values arrive decrypted, as under
        `pulumi up`; keys holding the "[secret]" placeholder are secret anyway.
        """
        values, masked = pulumi_config(raw)
        pulumi.runtime.set_all_config({**values, **(other or {})}, [*masked, *(f"{NAMESPACE}:{k}" for k in secret)])

    def of_type(self, type_: str) -> list[RecordedResource]:
        return [r for r in self.monitor.records if r.type == type_]

    def named(self, type_: str, name: str) -> RecordedResource:
        """The one registration of `type_` called `name` (AssertionError naming both otherwise)."""
        matches = [r for r in self.of_type(type_) if r.name == name]
        assert len(matches) == 1, f"{type_} {name}: {len(matches)} registrations"
        return matches[0]

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
            from kaistack.capacity.gate import CapacityError

            # __main__.capacity_gate raises the RunError while handling the CapacityError.
            raise RenderError(str(err), does_not_fit=isinstance(err.__context__, CapacityError)) from None
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
