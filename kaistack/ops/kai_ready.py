"""Wait until KAI's admission webhooks answer, so that the first `pulumi up` can create Queues and GPU pods.

KAI's operator registers its webhooks after the Helm release is ready, and their servers start listening after
their pods report ready (kai-scheduler/KAI-Scheduler#1980, where KAI's own e2e retries). Both webhooks fail closed
(KAI@v0.17.0 pkg/operator/operands/queue_controller/resources.go:196-221, admission/resources.go:228-268), and
pulumi-kubernetes retries a create only on NotFound or NoMatch (pulumi/pulumi-kubernetes@v4.32.0
provider/pkg/await/await.go), so a Queue created in that window fails the `up` with "failed calling webhook ...
connection refused".

Ready means both of these hold in one round:
- the webhooks are registered: ValidatingWebhookConfigurations send `queues` and `podgroups` (scheduling.run.ai,
  queue_controller/resources.go:196-221, pod_group_controller/resources.go:179-205) and `pods`, and a
  MutatingWebhookConfiguration sends `pods`, to Services in KAI's namespace (a probe that passes before the
  operator registers them proves nothing);
- a dry-run create of a probe Queue, PodGroup and Pod (schedulerName kai-scheduler, in `default`, which KAI's pod
  webhooks do not skip: they skip kube-system and KAI's own namespace, admission/resources.go:165-203) is answered
  by admission. A webhook that cannot be reached is a 500 from the API server; any other refusal comes from an
  admission step that ran, which is all this waits for (the real create says what is wrong with its object).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kaistack.declaration import kai_api
from kaistack.errors import ExitCode, KaistackError
from kaistack.kube import resources as k8s
from kaistack.kube.client import Kind, KubeAPIError, KubeClient, KubeError

PROBE = "kaistack-admission-probe"
PROBE_NAMESPACE = "default"
INTERVAL_S = 5.0
# Statuses that say admission was not reached yet: a webhook unreachable (500, 502, 503, 504), the CRD not served
# yet (404), the API server shedding load (429).
NOT_YET = frozenset({404, 429, 500, 502, 503, 504})


class KaiNotReady(KaistackError):
    """KAI's webhooks did not answer in time: the cluster's problem (exit 3)."""

    exit_code = ExitCode.ENVIRONMENT


@dataclass(frozen=True)
class Probe:
    what: str
    kind: Kind
    body: Mapping[str, Any]
    namespace: str | None = None


def probes() -> tuple[Probe, ...]:
    """A root Queue (the queue webhook needs resources, KAI@v0.17.0 pkg/admission/webhook/queuehooks/
    queue_validator.go:41-49), a PodGroup and a Pod that KAI schedules, restricted enough for any Pod Security
    level."""
    queue = {
        "apiVersion": kai_api.QUEUE.api_version,
        "kind": kai_api.QUEUE.kind,
        "metadata": {"name": PROBE},
        "spec": {"resources": {r: {"quota": 0, "limit": -1, "overQuotaWeight": 1} for r in ("gpu", "cpu", "memory")}},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": PROBE, "namespace": PROBE_NAMESPACE},
        "spec": {
            "schedulerName": kai_api.SCHEDULER_NAME,
            "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [
                {
                    "name": "probe",
                    "image": "registry.k8s.io/pause:3.10",
                    "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                }
            ],
        },
    }
    group = {
        "apiVersion": kai_api.POD_GROUP.api_version,
        "kind": kai_api.POD_GROUP.kind,
        "metadata": {"name": PROBE, "namespace": PROBE_NAMESPACE},
        "spec": {"minMember": 1, "queue": PROBE},
    }
    return (
        Probe("Queue", k8s.Queue, queue),
        Probe("PodGroup", k8s.PodGroup, group, PROBE_NAMESPACE),
        Probe("Pod", k8s.Pod, pod, PROBE_NAMESPACE),
    )


def unregistered(client: KubeClient, kai_namespace: str, notes: list[str] | None = None) -> list[str]:
    """The webhooks KAI's operator has not registered yet (none when the credentials may not list them: the probes
    alone decide then, and `notes`, when given, says which kind could not be listed)."""
    wanted: list[tuple[str, Kind, str, str]] = [
        ("its queue webhook", k8s.ValidatingWebhookConfiguration, kai_api.QUEUE.group, "queues"),
        ("its podgroup webhook", k8s.ValidatingWebhookConfiguration, kai_api.POD_GROUP.group, "podgroups"),
        ("its mutating pod webhook", k8s.MutatingWebhookConfiguration, "", "pods"),
        ("its validating pod webhook", k8s.ValidatingWebhookConfiguration, "", "pods"),
    ]
    listed: dict[Kind, list[dict[str, Any]] | None] = {}
    missing = []
    for name, kind, group, resource in wanted:
        if kind not in listed:
            try:
                listed[kind] = client.list(kind)
            except KubeAPIError as err:
                if err.status != 403:
                    raise
                listed[kind] = None
                if notes is not None:
                    notes.append(f"could not list {kind.__name__}s (403): whether KAI's are registered is not known")
        configurations = listed[kind]
        if configurations is not None and not any(_serves(c, kai_namespace, group, resource) for c in configurations):
            missing.append(name)
    return missing


def _serves(configuration: Mapping[str, Any], namespace: str, group: str, resource: str) -> bool:
    for webhook in configuration.get("webhooks") or []:
        service = ((webhook or {}).get("clientConfig") or {}).get("service") or {}
        if service.get("namespace") != namespace:
            continue
        for rule in webhook.get("rules") or []:
            if group in (rule.get("apiGroups") or []) and resource in (rule.get("resources") or []):
                return True
    return False


# RBAC's refusal, before any admission step (k8s.io/apiserver@v0.35.0 pkg/endpoints/handlers/responsewriters/
# errors.go:60-79, forbiddenMessage); a webhook's own 403 says "admission webhook ... denied the request".
RBAC_REFUSAL = " cannot create resource "


# Refusals that come from admission or after it: a webhook's denial (400, or its own code: 403, 422), validation
# (422), an object of that name already stored (409). Any other status (401, a redirect, 405 from a read-only proxy,
# 413, 415) never reached admission, so it says nothing of KAI's webhooks.
ANSWERED = frozenset({400, 403, 409, 422})


def not_answered(client: KubeClient, probe: Probe, notes: list[str] | None = None) -> str | None:
    """Why admission did not answer the probe yet, or None when it did (or cannot be asked: said in `notes`).
    KubeAPIError for an answer no admission step gives (a proxy's 405, a redirect, rejected credentials)."""
    try:
        client.admits(probe.kind, probe.body, namespace=probe.namespace)
    except KubeAPIError as err:
        if err.status in NOT_YET:
            return str(err)
        if err.status == 403 and RBAC_REFUSAL in str(err):
            if notes is not None:
                notes.append(f"{probe.what}: not asked, these credentials may not create one ({err})")
            return None
        if err.status not in ANSWERED:
            raise
    return None


def wait_for_kai_admission(
    client: KubeClient,
    kai_namespace: str,
    *,
    timeout: float,
    say: Callable[[str], None] = lambda _: None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> float:
    """Block until KAI's webhooks answer; the seconds it took. Raises KaiNotReady with the last reason at `timeout`."""
    start = clock()
    while True:
        notes: list[str] = []
        try:
            reasons = [f"KAI's operator has not registered {w} yet" for w in unregistered(client, kai_namespace)]
            if not reasons:
                reasons = [f"{p.what}: {why}" for p in probes() if (why := not_answered(client, p, notes)) is not None]
        except KubeError as err:  # the API server itself is not answering (yet)
            if isinstance(err, KubeAPIError) and err.status in (401, 403):
                raise
            reasons = [str(err)]
        waited = clock() - start
        if not reasons:
            for note in notes:
                say(note)
            return waited
        if waited >= timeout:
            raise KaiNotReady(f"KAI's admission webhooks did not answer within {timeout:g} s: {'; '.join(reasons)}")
        say(f"waiting for KAI's admission webhooks ({waited:.0f} s): {'; '.join(reasons)}")
        sleep(min(INTERVAL_S, timeout - waited))
