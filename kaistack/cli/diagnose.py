"""`kaistack diagnose`: why pods are Pending on a running cluster, and the mistakes around KAI."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kaistack.cli.args import add_request_timeout
from kaistack.cli.output import print_json
from kaistack.cli.sim_progress import simulation_progress

# KAI's kinds by resource.group: beside Volcano (Queue, PodGroup) or Kueue (Topology), a bare `queues` is whichever
# group kubectl's discovery ranks first.
KAI_DUMP_KINDS = (
    "podgroups.scheduling.run.ai,bindrequests.scheduling.run.ai,queues.scheduling.run.ai,topologies.kai.scheduler,"
    "schedulingshards.kai.scheduler,configs.kai.scheduler"
)
DUMP_KINDS = f"nodes,pods,{KAI_DUMP_KINDS},priorityclasses,configmaps,pvc,pv,storageclasses,namespaces"

DEFAULT_TIMEOUT = 10.0  # seconds per API request

DESCRIPTION = f"""\
Reads nodes, pods, PodGroups, BindRequests, Queues, Topologies, SchedulingShards, KAI's Config (the label it reads
a pod's queue from), PriorityClasses,
PersistentVolumeClaims, PersistentVolumes, StorageClasses, Namespaces and the names of ConfigMaps (read-only, with
whatever the credentials may read) or a dump made by `kubectl get {DUMP_KINDS} -A -o yaml`, runs one KAI scheduling
cycle on what is really there, as the SchedulingShard sets KAI's scheduler up, and says for each Pending pod why KAI
leaves it Pending, in the words of `kaistack check`; a pod bound to a node but still Pending is reported with what
its kubelet waits on. It also lists the field's quiet mistakes with the object and the fix: GPU pods without
schedulerName kai-scheduler (not KAI's own reservation and scaling pods), queue labels naming no queue, Queue limits
left out (read as 0), PodGroups of one name in two namespaces, Deployments in a queue without GPU quota, vCluster
owner references (a vCluster with setOwner: true), reservation pods without a GPU runtime, vLLM or TGI memory
settings above the pod's share, vLLM servers whose utilizations fill the GPU they share, GPU shares that go to a
mesh's proxy or away from vLLM, priorityClassName labels
naming no PriorityClass, constraints KAI does not read. Finished pods are not judged.
"""

EPILOG = f"""\
examples:
  kaistack diagnose                                  $KUBECONFIG's current context
  kaistack diagnose --context prod --namespace ml    one namespace's pods (nodes and queues cluster-wide)
  kubectl get {DUMP_KINDS} -A -o yaml > dump.yaml
  kaistack diagnose --from-dump dump.yaml            the same from that dump
  kubectl get {DUMP_KINDS} -A -o json > dump.json
  kaistack diagnose --from-dump dump.json            JSON reads far faster on a large cluster
  kaistack diagnose --max-seconds 60                 a busy cluster: at most about a minute of simulation
  kaistack diagnose --from-dump dump.yaml --at 2026-11-25T18:00:00Z   the time the dump was taken
  kaistack diagnose --from-dump pods.yaml --queue-label-key team.example.com/queue   a dump without KAI's Config

On a terminal, stderr shows the scheduling cycle's progress (each action, and every 5 s where it is).

Credentials need `list` on Nodes, Pods and KAI's Queues; with --namespace, Pods of that namespace are enough,
though then what other namespaces' pods hold on nodes and in queues is missing (said in a note). Any other kind
they may not read is skipped and said.

A dump holds what kubectl wrote, ConfigMaps' data too, though only their names are read: before sharing one, make
it with the names-only form the README gives. Without --at, the dump file's modification time is taken (and said).

exit codes: 0 nothing pending and no mistakes, 1 pending pods (bound ones the kubelet has not started too) or
  mistakes, 2 unreadable dump, or one without Nodes or Pods, 3 cluster or credentials not usable (rejected, Nodes
  or Pods not readable, or no KAI Queue API)
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "diagnose",
        help="why pods are Pending on a live cluster, and the mistakes around KAI (read-only)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--from-dump", type=Path, metavar="FILE", help="a `kubectl get ... -o yaml` dump instead")
    source.add_argument(
        "--kubeconfig",
        type=Path,
        help="kubeconfig file (default: $KUBECONFIG's files merged as kubectl merges them, else ~/.kube/config)",
    )
    parser.add_argument("--context", help="kubeconfig context (default: current-context)")
    add_request_timeout(parser, None)
    parser.add_argument(
        "--namespace", "-n", help="report this namespace's pods (and cluster-wide mistakes); every namespace is read"
    )
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=None,
        metavar="S",
        help="stop the scheduling cycle after about S seconds; the diagnosis is then marked partial",
    )
    parser.add_argument(
        "--queue-label-key",
        metavar="KEY",
        help="the label KAI reads a pod's queue from (default: spec.global.queueLabelKey of KAI's Config kai-config, "
        "when read, else kai.scheduler/queue)",
    )
    parser.add_argument(
        "--at",
        metavar="TIME",
        help="when the objects were read, RFC 3339 (default: now, or the dump file's modification time); "
        "KAI counts a pod deleted more than 2 minutes before as StuckInReleasing",
    )
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print the diagnosis as JSON")
    form.add_argument("--markdown", action="store_true", help="print the diagnosis as Markdown")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kaistack.errors import InputError
    from kaistack.ops import diagnose as ops
    from kaistack.progress import Progress
    from placement.k8s_names import is_qualified_name

    if args.max_seconds is not None and not args.max_seconds > 0:
        raise InputError("--max-seconds: must be a positive number of seconds")
    if args.queue_label_key is not None and not is_qualified_name(args.queue_label_key):
        raise InputError(
            f"--queue-label-key: {args.queue_label_key!r} is not a label key ([prefix/]name, as kubectl label takes)"
        )
    at = read_time(args.at) if args.at is not None else None
    notes: list[str] = []
    if args.from_dump is not None:
        # A live cluster's options: taken silently with a dump, they would seem to choose what the dump holds.
        live = [flag for flag, value in (("--context", args.context), ("--timeout", args.timeout)) if value is not None]
        if live:
            raise InputError(
                f"{live[0]}: not allowed with --from-dump (it reads a live cluster; the dump is read as is)"
            )
        objects = read_dump(args.from_dump)
        refuse_incomplete_dump(args.from_dump, objects)
        if at is None:
            at, source = dump_time(args.from_dump), "the dump file's modification time"
            if at is None:
                at, source = datetime.now(UTC), "the current time: the dump file's modification time is unreadable"
            # Copying a file (scp, a ticket's attachment, a checkout) moves its time, and with it which deleted
            # pods KAI counts as stuck: the time taken is said.
            notes.append(
                f"the objects are taken as read at {at:%Y-%m-%dT%H:%M:%SZ} ({source}); --at gives the time kubectl "
                "wrote the dump, which decides which deleted pods KAI counts as StuckInReleasing"
            )
    else:
        objects, notes = read_live(args)
    diagnosis = ops.diagnose(
        objects,
        notes,
        args.max_seconds,
        simulation_progress(Progress.for_cli()),
        now=at,
        queue_label_key=args.queue_label_key,
    )
    if args.namespace is not None:
        diagnosis = only_namespace(diagnosis, args.namespace)
    if args.json:
        print_json(ops.to_json(diagnosis))
    elif args.markdown:
        sys.stdout.write(ops.to_markdown(diagnosis))
    else:
        print(ops.to_text(diagnosis))
    return 0 if diagnosis.ok else 1


def refuse_incomplete_dump(path: Path, objects: list[Any]) -> None:
    """A dump without Pods or Nodes diagnoses nothing, or every pod as having no node: live, the same is exit 3;
    here the dump is what is wrong (every cluster runs pods in kube-system and has nodes)."""
    from kaistack.declaration.yaml_load import YamlInputError
    from kaistack.ops.live_kinds import by_kind

    kinds = by_kind(objects)
    missing = [kind for kind in ("Node", "Pod") if not kinds.get(kind)]
    if missing:
        raise YamlInputError(
            f"{path}: no {' and no '.join(k + 's' for k in missing)} in the dump, so there is nothing to diagnose "
            f"(dump them with -A: `kubectl get {DUMP_KINDS.replace(',configmaps', '')} -A -o yaml`, and ConfigMaps' "
            "names alone, as the README shows)"
        )


def _kai_config(client: Any, notes: list[str]) -> list[dict[str, Any]]:
    """KAI's Config, for the queue label key it sets; one that cannot be read leaves KAI's default, said. Listed,
    not got by name, as every other kind is: credentials need `list` alone."""
    from kaistack.declaration import kai_api
    from kaistack.kube.client import KubeAPIError, KubeError
    from kaistack.kube.resources import KaiConfig

    name = kai_api.KAI_CONFIG_NAME
    try:
        return [c for c in client.list(KaiConfig) if (c.get("metadata") or {}).get("name") == name]
    except KubeAPIError as err:
        if err.status == 401:
            raise KubeError(f"the API server rejected the credentials (401) when reading KAI's Config {name}") from err
        if err.status not in (403, 404):
            raise
        notes.append(
            f"could not read KAI's Config {name} ({err.status}): queues are read from the pods' "
            f"{kai_api.QUEUE_LABEL} label (--queue-label-key names another)"
        )
        return []


def read_time(text: str) -> datetime:
    from kaistack.errors import InputError
    from kaistack.ops.live_pods import parse_time

    parsed = parse_time(text)
    if parsed is None:
        raise InputError(f"--at: must be an RFC 3339 time with a zone, like 2026-11-25T18:00:00Z, got {text!r}")
    return parsed


def dump_time(path: Path) -> datetime | None:
    """When kubectl wrote the dump, as far as the file knows (its modification time)."""
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except OSError:
        return None


def read_dump(path: Path) -> list[Any]:
    from kaistack.declaration import limits
    from kaistack.declaration.yaml_load import TOO_MANY_VALUES, YamlInputError, load_documents, load_json, read_text

    # A UTF-8 byte order mark (Windows PowerShell 7's `Out-File -Encoding utf8BOM`, Notepad) hides the JSON's first
    # character from the check below, and json refuses it; YAML skips it.
    text = read_text(path, max_bytes=limits.MAX_JSON_DUMP_BYTES, what="dump").removeprefix("\ufeff")
    if text.lstrip()[:1] in ("{", "["):
        # `kubectl get ... -o json`: the same objects, read ~50 times faster than YAML on a large cluster.
        data = load_json(text, str(path))
        objects = data if isinstance(data, list) else [data]
    else:
        size = len(text.encode("utf-8"))
        if size > limits.MAX_MANIFEST_FILE_BYTES:
            raise YamlInputError(
                f"{path}: a YAML dump of {size} bytes; kaistack reads YAML dumps up to "
                f"{limits.MAX_MANIFEST_FILE_BYTES} bytes and JSON ones (`kubectl get ... -o json`) up to "
                f"{limits.MAX_JSON_DUMP_BYTES}"
            )
        # kubectl writes a dump with go-yaml v2 (sigs.k8s.io/yaml JSONToYAML), quoting only what v2 would read as
        # another type: a plain `=` or `.1_` is text to it, and YAML 1.1 refuses or misreads them.
        documents, errors = load_documents(text, str(path), kubectl=True)
        if errors:
            hint = ""
            if errors[0].problem.endswith(TOO_MANY_VALUES):
                # A large cluster's YAML dump (managedFields and all) passes the YAML value limit long before
                # its JSON does, and JSON reads ~50 times faster.
                hint = f"; dump it with `kubectl get ... -o json` (up to {limits.MAX_JSON_VALUES:,} values)"
            raise YamlInputError(errors[0].message + hint)
        objects = [d.data for d in documents]
    if not any(_is_object(o) for o in objects):
        # What a failed `kubectl get ... > dump.yaml` leaves: diagnosing it would report a healthy cluster.
        if objects and all(isinstance(o, dict) and o.get("items") == [] for o in objects):
            raise YamlInputError(
                f"{path}: only empty lists: kubectl found nothing to dump (check its --context and -A / -n)"
            )
        raise YamlInputError(
            f"{path}: no Kubernetes objects in it (expected the output of `kubectl get ... -o yaml` or `-o json`: "
            "objects with a kind, or a List of them)"
        )
    return objects


def _is_object(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    items = value.get("items")
    if isinstance(items, list):
        return any(isinstance(i, dict) for i in items)
    return isinstance(value.get("kind"), str) and isinstance(value.get("metadata"), dict)


def read_live(args: argparse.Namespace) -> tuple[list[Any], list[str]]:
    """Every kind the credentials may read; a kind they may not is skipped and said."""
    from kaistack.kube.client import KubeAPIError, KubeClient, KubeError
    from kaistack.kube.kubeconfig import resolve_kubeconfig
    from kaistack.kube.resources import (
        BindRequest,
        ConfigMap,
        Namespace,
        Node,
        PersistentVolume,
        PersistentVolumeClaim,
        Pod,
        PodGroup,
        PriorityClass,
        Queue,
        SchedulingShard,
        StorageClass,
        Topology,
    )

    kubeconfig = resolve_kubeconfig(None, args.kubeconfig)
    objects: list[Any] = []
    notes: list[str] = []
    with KubeClient.from_kubeconfig(
        kubeconfig.text, context=args.context, base_dir=kubeconfig.base_dir, timeout=args.timeout or DEFAULT_TIMEOUT
    ) as client:
        kinds = (
            (Node, False),
            (Queue, False),
            (Topology, False),
            (SchedulingShard, False),
            (PriorityClass, False),
            (PersistentVolume, False),
            (StorageClass, False),
            (Namespace, False),
            (PodGroup, True),
            (PersistentVolumeClaim, True),
            (BindRequest, True),
            (Pod, True),
        )
        for kind, namespaced in kinds:
            name = kind.__name__
            try:
                items = (
                    _read_wide(lambda ns, k=kind: client.list(k, namespace=ns), name, args.namespace, notes)
                    if namespaced
                    else client.list(kind)
                )
            except KubeAPIError as err:
                plural = _plural(name)
                if err.status == 401:
                    # Rejected credentials read nothing: a diagnosis without any object would say "ok".
                    raise KubeError(f"the API server rejected the credentials (401) when listing {plural}") from err
                if err.status == 404 and kind is Queue:
                    raise KubeError(
                        "KAI is not installed here: the API server does not serve its Queues (scheduling.run.ai/v2), "
                        "so no pod of kai-scheduler can be placed"
                    ) from err
                if err.status in (403, 404) and kind in (Pod, Node, Queue):
                    # Without the Queues every KAI pod's reason would be "queue ... does not exist".
                    raise KubeError(
                        f"could not read {plural} ({err.status}): diagnose needs to list Nodes and Queues, and Pods "
                        "everywhere or in --namespace; give the credentials `list` on them"
                    ) from err
                if err.status in (403, 404):
                    notes.append(f"could not read {plural} ({err.status}); diagnosed without them")
                    continue
                raise
            # A typed list, as the API server answers: a kind read with nothing in it is known to be empty.
            objects.append({"kind": f"{name}List", "items": items})
        if not args.queue_label_key:
            objects += _kai_config(client, notes)
        try:  # KAI's ConfigMap predicate needs only which exist (placement.config_maps)
            found = _read_wide(lambda ns: client.names(ConfigMap, namespace=ns), "ConfigMap", args.namespace, notes)
        except KubeAPIError as err:
            if err.status not in (401, 403, 404):
                raise
            notes.append(f"could not read ConfigMaps ({err.status}); diagnosed without them")
        else:
            names = [{"metadata": {"namespace": ns, "name": n}} for ns, n in found]
            objects.append({"kind": "ConfigMapList", "items": names})
    context = f"context {args.context}" if args.context else "its current context"
    notes.insert(0, f"read from {kubeconfig.origin}, {context}")
    return objects, notes


def _plural(kind: str) -> str:
    """English plural of a kind: Nodes, PriorityClasses, Topologies."""
    if kind.endswith("y") and kind[-2:-1] not in "aeiou":
        return kind[:-1] + "ies"
    return kind + ("es" if kind.endswith("s") else "s")


def _read_wide(read: Any, what: str, namespace: str | None, notes: list[str]) -> list[Any]:
    """`read(None)`, every namespace's objects: with --namespace too, since other namespaces' pods take node and
    queue room the namespace's pending pods compete for (and need their ConfigMaps to be placed); only what the
    credentials may not read is narrowed to the namespace, `read(namespace)`, and said."""
    from kaistack.kube.client import KubeAPIError

    try:
        return list(read(None))
    except KubeAPIError as err:
        if namespace is None or err.status not in (403, 404):
            raise
        status = err.status
    items = list(read(namespace))
    notes.append(
        f"could not list {what}s in every namespace ({status}); read {namespace} only, so what other "
        "namespaces' pods hold on nodes and in queues is missing"
    )
    return items


def only_namespace(diagnosis: Any, namespace: str) -> Any:
    """The diagnosis of --namespace: its pending pods, and the mistakes in it or cluster-wide (queues, nodes)."""
    mistakes = tuple(m for m in diagnosis.mistakes if "/" not in m.subject or f" {namespace}/" in f" {m.subject}")
    pending = tuple(p for p in diagnosis.pending if p.pod.startswith(f"{namespace}/"))
    return dataclasses.replace(diagnosis, pending=pending, mistakes=mistakes)
