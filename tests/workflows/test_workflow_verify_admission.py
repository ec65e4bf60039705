"""`kaistack verify`'s `kai-admission`: KAI's webhooks registered and answering, on day 2.

KAI@v0.17.0 registers a queue webhook (pkg/operator/operands/queue_controller/resources.go:196-221), a podgroup
webhook (pod_group_controller/resources.go:179-205) and the pod webhooks (admission/resources.go:228-310), all
`failurePolicy: Fail`, served from KAI's namespace. A configuration that is gone admits pods without KAI's mutations
(a GPU share's devices, its runtime class); one that cannot be called refuses every create it covers (the API server
answers 500, "failed calling webhook"). The same probes as `kai-ready` (kaistack.ops.kai_ready), once.
"""

from __future__ import annotations

import json

import pytest
from workflow_testlib import PROBE_PATHS, check_detail, failed_checks, verify_json

from kaistack.cli import main

VALIDATING = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
MUTATING = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
UNREACHABLE = (
    500,
    'Internal error occurred: failed calling webhook "validating-kai-admission.kai.scheduler": failed to call '
    'webhook: Post "https://admission.kai-scheduler.svc:443/validate?timeout=10s": dial tcp 10.96.0.31:443: connect: '
    "connection refused",
)


def test_registered_webhooks_that_answer_pass(project, fake_kube, capsys):
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 0
    assert check_detail(report, "kai-admission", "kai-scheduler") == (
        "registered; a dry-run Queue, PodGroup, Pod answered"
    )
    assert [params.get("dryRun") for path, params, _ in fake_kube.posted] == ["All", "All", "All"]


def test_a_deleted_mutating_webhook_fails_since_shares_would_go_unmutated(project, fake_kube, capsys):
    fake_kube.responses[MUTATING]["items"] = []
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert failed_checks(report) == [("kai-admission", "kai-scheduler")]
    detail = check_detail(report, "kai-admission", "kai-scheduler")
    assert detail.startswith("KAI's operator has not registered its mutating pod webhook (served from kai-scheduler)")
    assert fake_kube.posted == []  # no probe is sent to webhooks that are not there


def test_a_webhook_served_from_another_namespace_is_not_kais(project, fake_kube, capsys):
    for configuration in fake_kube.responses[VALIDATING]["items"]:
        configuration["webhooks"][0]["clientConfig"]["service"]["namespace"] = "elsewhere"
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert "its queue webhook, its podgroup webhook, its validating pod webhook" in check_detail(
        report, "kai-admission", "kai-scheduler"
    )


def test_a_webhook_that_cannot_be_called_fails_closed_and_says_why(project, fake_kube, capsys):
    fake_kube.posts[PROBE_PATHS[2]] = [UNREACHABLE]
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    detail = check_detail(report, "kai-admission", "kai-scheduler")
    assert detail.startswith("admission did not answer a dry-run create (a webhook that cannot be called is a 500")
    assert "Pod: " in detail
    assert "connection refused" in detail


def _may_not_create(fake_kube) -> None:
    """RBAC's refusal of a create (k8s.io/apiserver@v0.35.0 pkg/endpoints/handlers/responsewriters/errors.go:60-79);
    the same paths stay readable (verify lists the Queues at the probe's path)."""
    for path in PROBE_PATHS:
        refusal = f'forbidden: User "viewer" cannot create resource "{path.rsplit("/", 1)[-1]}" in API group ""'
        fake_kube.posts[path] = [(403, refusal)]


def test_credentials_that_may_not_create_the_probes_pass_on_registration_alone_and_say_so(project, fake_kube, capsys):
    _may_not_create(fake_kube)
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 0
    assert check_detail(report, "kai-admission", "kai-scheduler") == "registered"
    assert any(
        n.startswith("kai-admission: Queue: not asked, these credentials may not create one") for n in report["notes"]
    )


def test_credentials_that_may_neither_list_nor_create_leave_it_unchecked(project, fake_kube, capsys):
    _may_not_create(fake_kube)
    fake_kube.forbidden.update({VALIDATING, MUTATING})
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 0
    assert not [c for c in report["checks"] if c["check"] == "kai-admission"]
    assert (
        "kai-admission: not checked: these credentials may neither list webhook configurations nor create the probes"
        in report["notes"]
    )


def test_a_webhook_that_hangs_past_the_clients_timeout_fails_the_check_not_verify(project, fake_kube, capsys):
    """KAI's webhooks set no timeoutSeconds, so the API server waits 10 s; the client may give up first."""
    fake_kube.slow_posts[PROBE_PATHS[0]] = 1.0
    kubeconfig = fake_kube.kubeconfig(project.parent)
    args = ["verify", "--stack", "dev", "--project", str(project), "--kubeconfig", str(kubeconfig), "--json"]
    code = main([*args, "--timeout", "0.3"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert failed_checks(report) == [("kai-admission", "kai-scheduler")]
    assert "Queue: " in check_detail(report, "kai-admission", "kai-scheduler")


def test_credentials_that_may_list_only_one_kind_of_configuration_drop_registered(project, fake_kube, capsys):
    fake_kube.forbidden.add(MUTATING)
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 0
    assert check_detail(report, "kai-admission", "kai-scheduler") == "a dry-run Queue, PodGroup, Pod answered"
    assert (
        "kai-admission: could not list MutatingWebhookConfigurations (403): whether KAI's are registered is not known"
        in report["notes"]
    )


@pytest.mark.parametrize("status", [401, 405, 415])
def test_a_status_no_admission_step_gives_is_no_answer(project, fake_kube, capsys, status):
    """A read-only proxy's 405, rejected credentials, a redirect: the probe never reached admission, so it says
    nothing of KAI's webhooks (it passed as "answered", found by a review)."""
    for path in PROBE_PATHS:
        fake_kube.posts[path] = [(status, "not through admission")]
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    detail = check_detail(report, "kai-admission", "kai-scheduler")
    assert f"HTTP {status}" in detail
    assert "which no admission step gives" in detail


@pytest.mark.parametrize("status", [400, 409, 422])
def test_a_refusal_from_admission_or_after_it_is_an_answer(project, fake_kube, capsys, status):
    for path in PROBE_PATHS:
        fake_kube.posts[path] = [(status, 'admission webhook "x" denied the request')]
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 0
    assert check_detail(report, "kai-admission", "kai-scheduler").startswith("registered; a dry-run")
