"""`kaistack kai-ready`: the real client against a fake API server, until KAI's webhooks answer a dry-run create.

Upstream, KAI@v0.17.0: the operator registers a queue webhook (pkg/operator/operands/queue_controller/
resources.go:196-221), a podgroup webhook (pod_group_controller/resources.go:179-205) and the pod webhooks
(admission/resources.go:228-310), all `failurePolicy: Fail`, served from KAI's namespace. The API server answers a
create whose webhook cannot be called with a 500 ("failed calling webhook ... connection refused",
kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/errors), and `dryRun=All` runs
admission without writing the object.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
from workflow_testlib import FakeKube, serve

from kaistack.cli import kai_ready as cli
from kaistack.cli import main

ADMISSION = "/apis/admissionregistration.k8s.io/v1"
VALIDATING = f"{ADMISSION}/validatingwebhookconfigurations"
MUTATING = f"{ADMISSION}/mutatingwebhookconfigurations"
QUEUES = "/apis/scheduling.run.ai/v2/queues"
PODGROUPS = "/apis/scheduling.run.ai/v2alpha2/namespaces/default/podgroups"
PODS = "/api/v1/namespaces/default/pods"
PROBES = (QUEUES, PODGROUPS, PODS)
UNREACHABLE = (
    500,
    'Internal error occurred: failed calling webhook "queue-validation.kai.scheduler": failed to call webhook: '
    'Post "https://queue-controller.kai-scheduler.svc:443/validate-scheduling-run-ai-v2-queue?timeout=10s": dial '
    "tcp 10.96.0.12:443: connect: connection refused",
)


def _webhook(kind: str, name: str, group: str, resource: str, namespace: str) -> dict[str, Any]:
    """A webhook configuration as the API server returns it (the fields lightkube's model requires included)."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": [
            {
                "name": f"{name}.kai.scheduler",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Fail",
                "clientConfig": {"service": {"namespace": namespace, "name": "svc", "path": "/x"}},
                "rules": [
                    {"apiGroups": [group], "apiVersions": ["*"], "operations": ["CREATE"], "resources": [resource]}
                ],
            }
        ],
    }


def _registered(namespace: str = "kai-scheduler") -> dict[str, Any]:
    """KAI's four webhook configurations, as the operator registers them."""
    validating = "ValidatingWebhookConfiguration"
    return {
        VALIDATING: {
            "items": [
                _webhook(validating, "kai-queue-validation-v2", "scheduling.run.ai", "queues", namespace),
                _webhook(validating, "kai-podgroup-validation-v2alpha2", "scheduling.run.ai", "podgroups", namespace),
                _webhook(validating, "validating-kai-admission", "", "pods", namespace),
            ]
        },
        MUTATING: {
            "items": [_webhook("MutatingWebhookConfiguration", "mutating-kai-admission", "", "pods", namespace)]
        },
    }


@pytest.fixture
def api() -> Iterator[FakeKube]:
    state = FakeKube(_registered())
    state.posts = {path: [(201, None)] for path in PROBES}
    yield from serve(state, None)


class Clock:
    """Time that passes only when kai-ready sleeps; `on_sleep` changes the cluster between rounds."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, on_sleep: Any = None) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []
        self.on_sleep = on_sleep
        monkeypatch.setattr(cli, "_clock", lambda: self.now)
        monkeypatch.setattr(cli, "_sleep", self.sleep)

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        if self.on_sleep is not None:
            self.on_sleep()


def _ready(api: FakeKube, tmp_path: Any, capsys: Any, *args: str) -> tuple[int, dict[str, Any], str]:
    kubeconfig = api.kubeconfig(tmp_path)
    code = main(["kai-ready", "--kubeconfig", str(kubeconfig), "--json", *args])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_webhooks_that_answer_at_once_are_ready_without_a_wait(api, tmp_path, capsys, monkeypatch):
    clock = Clock(monkeypatch)
    code, report, _ = _ready(api, tmp_path, capsys)
    assert (code, report["ready"], report["seconds"], clock.sleeps) == (0, True, 0.0, [])


def test_each_probe_is_a_dry_run_create_of_an_object_kai_admits(api, tmp_path, capsys, monkeypatch):
    Clock(monkeypatch)
    _ready(api, tmp_path, capsys)
    assert [(path, query) for path, query, _ in api.posted] == [(p, {"dryRun": "All"}) for p in PROBES]
    queue, group, pod = (body for _, _, body in api.posted)
    assert queue["spec"]["resources"]["gpu"] == {"quota": 0, "limit": -1, "overQuotaWeight": 1}
    assert (group["kind"], group["metadata"]["namespace"]) == ("PodGroup", "default")
    assert pod["spec"]["schedulerName"] == "kai-scheduler"


def test_a_webhook_that_cannot_be_called_is_waited_for(api, tmp_path, capsys, monkeypatch):
    api.posts[QUEUES] = [UNREACHABLE, UNREACHABLE, (201, None)]
    clock = Clock(monkeypatch)
    code, report, err = _ready(api, tmp_path, capsys)
    assert (code, report["seconds"], clock.sleeps) == (0, 10.0, [5.0, 5.0])
    assert "waiting for KAI's admission webhooks (0 s): Queue: POST /apis/scheduling.run.ai/v2/queues: HTTP 500" in err
    assert "connection refused" in err


def test_webhooks_the_operator_has_not_registered_yet_are_waited_for(api, tmp_path, capsys, monkeypatch):
    """A probe passes trivially before the webhook exists: registration is waited for first."""
    registered = api.responses.copy()
    api.responses[VALIDATING] = {"items": []}
    clock = Clock(monkeypatch, on_sleep=lambda: api.responses.update(registered))
    code, _, err = _ready(api, tmp_path, capsys)
    assert (code, clock.sleeps) == (0, [5.0])
    waiting = "waiting for KAI's admission webhooks (0 s): KAI's operator has not registered its queue webhook yet; "
    assert waiting in err
    assert "its podgroup webhook" in err
    assert "its mutating pod webhook" not in err


def test_webhooks_served_from_another_namespace_are_not_kais(api, tmp_path, capsys, monkeypatch):
    api.responses.update(_registered(namespace="kube-system"))
    Clock(monkeypatch)
    code, report, _ = _ready(api, tmp_path, capsys, "--wait", "12")
    assert code == 3
    assert report["error"] == (
        "kaistack kai-ready: KAI's admission webhooks did not answer within 12 s: KAI's operator has not registered "
        "its queue webhook yet; KAI's operator has not registered its podgroup webhook yet; KAI's operator has not "
        "registered its mutating pod webhook yet; KAI's operator has not registered its validating pod webhook yet"
    )


def test_kais_namespace_is_the_one_named(api, tmp_path, capsys, monkeypatch):
    api.responses.update(_registered(namespace="kai"))
    Clock(monkeypatch)
    assert _ready(api, tmp_path, capsys, "--kai-namespace", "kai")[0] == 0
    assert _ready(api, tmp_path, capsys, "--wait", "1")[0] == 3


def test_webhooks_that_never_answer_fail_with_the_last_reason_after_the_wait(api, tmp_path, capsys, monkeypatch):
    api.posts[PODS] = [(503, "service unavailable")]
    clock = Clock(monkeypatch)
    code, report, _ = _ready(api, tmp_path, capsys, "--wait", "12")
    assert (code, report["exitCode"], clock.sleeps) == (3, 3, [5.0, 5.0, 2.0])
    assert report["error"] == (
        "kaistack kai-ready: KAI's admission webhooks did not answer within 12 s: Pod: POST "
        "/api/v1/namespaces/default/pods: HTTP 503: service unavailable"
    )


@pytest.mark.parametrize("status", [400, 409, 422])
def test_a_refusal_by_admission_means_it_answered(api, tmp_path, capsys, monkeypatch, status):
    """The real create says what is wrong with its own object; this waits only for admission to run."""
    api.posts[QUEUES] = [(status, "admission webhook denied the request")]
    Clock(monkeypatch)
    code, report, _ = _ready(api, tmp_path, capsys)
    assert (code, report["ready"]) == (0, True)


def test_a_crd_not_served_yet_is_waited_for(api, tmp_path, capsys, monkeypatch):
    del api.posts[PODGROUPS]  # 404: the PodGroup CRD is not served yet
    clock = Clock(monkeypatch, on_sleep=lambda: api.posts.update({PODGROUPS: [(201, None)]}))
    code, _, err = _ready(api, tmp_path, capsys)
    assert (code, clock.sleeps) == (0, [5.0])
    assert "PodGroup: POST /apis/scheduling.run.ai/v2alpha2/namespaces/default/podgroups: HTTP 404" in err


def test_credentials_that_may_not_list_webhooks_leave_the_probes_to_decide(api, tmp_path, capsys, monkeypatch):
    api.forbidden.update({VALIDATING, MUTATING})
    Clock(monkeypatch)
    code, report, _ = _ready(api, tmp_path, capsys)
    assert (code, report["ready"]) == (0, True)


def test_rejected_credentials_are_not_waited_on(api, tmp_path, capsys, monkeypatch):
    clock = Clock(monkeypatch)
    kubeconfig = api.kubeconfig(tmp_path, token="wrong")
    code = main(["kai-ready", "--kubeconfig", str(kubeconfig), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert (code, clock.sleeps) == (3, [])
    assert "401" in report["error"]


def test_the_kubeconfig_can_come_on_stdin(api, tmp_path, capsys, monkeypatch):
    """As the Pulumi program passes it: never in the command line or the environment."""
    Clock(monkeypatch)
    text = api.kubeconfig(tmp_path).read_text()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    assert main(["kai-ready", "--kubeconfig", "-"]) == 0
    assert capsys.readouterr().out.startswith(f"KAI's admission webhooks answer at {api.url} (after 0 s)")


def test_a_probe_these_credentials_may_not_create_is_said_not_asked(api, tmp_path, capsys, monkeypatch):
    """RBAC refuses before admission runs (k8s.io/apiserver@v0.35.0 pkg/endpoints/handlers/responsewriters/
    errors.go:60-79): the probe proved nothing, which is said; the real create will meet the same refusal."""
    refusal = 'pods is forbidden: User "ci" cannot create resource "pods" in API group "" in the namespace "default"'
    api.posts[PODS] = [(403, refusal)]
    Clock(monkeypatch)
    code, report, err = _ready(api, tmp_path, capsys)
    assert (code, report["ready"]) == (0, True)
    assert err == (f"Pod: not asked, these credentials may not create one (POST {PODS}: HTTP 403: {refusal})\n")


def test_a_webhooks_own_refusal_is_an_answer_not_a_note(api, tmp_path, capsys, monkeypatch):
    api.posts[PODS] = [(403, 'admission webhook "validation.kai.scheduler" denied the request: no queue')]
    Clock(monkeypatch)
    code, _, err = _ready(api, tmp_path, capsys)
    assert (code, err) == (0, "")


def test_an_answer_no_admission_step_gives_is_an_error_not_ready(api, tmp_path, capsys, monkeypatch):
    """A read-only proxy's 405 never reached admission: it was taken for KAI's webhooks answering (a review)."""
    api.posts[QUEUES] = [(405, "method not allowed")]
    Clock(monkeypatch)
    kubeconfig = api.kubeconfig(tmp_path)
    code = main(["kai-ready", "--kubeconfig", str(kubeconfig), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert (code, report["ok"], report["exitCode"]) == (3, False, 3)
    assert "HTTP 405" in report["error"]
