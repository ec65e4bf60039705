"""`kaistack verify`'s `memory-isolation` check and `kaistack kai-ready`: behaviour the other tests of both left
unpinned (found by mutation testing).

memory-isolation: which pods count (their phase, the declared pod count), which container is the fraction container
(KAI@v0.17.0 pkg/binder/common/gpu_access.go:182-215, GetFractionContainerRef: the annotation counts when present,
even empty, else the first container), which env entry and ConfigMap key is KAI's, and how many pods a failure names.
kai-ready: see the second half.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from test_kai_ready import PODS, PROBES, QUEUES, UNREACHABLE, VALIDATING, Clock, _ready, _registered
from test_workflow_verify_isolation import CONFIG_MAPS, INFER, ML_PODS, NOTEBOOK, UNCAPPED, _cap
from workflow_testlib import FakeKube, check_detail, failed_checks, serve, verify_json

from kaistack.cli import main

PRELOAD_MOUNT = {"name": "kai-resource-isolator-vgpu", "mountPath": "/etc/ld.so.preload", "subPath": "ld.so.preload"}
HELD = "held to their GPU memory"
NO_KAI_LIMIT = "notebook: container main has no CUDA_DEVICE_MEMORY_LIMIT from KAI's GPU-sharing ConfigMap"


def _more_infer_pods(fake_kube: Any, count: int) -> list[str]:
    """`count` more pods of the infer Deployment (same ReplicaSet), capped like the others; their names."""
    names = []
    for i in range(count):
        pod = copy.deepcopy(fake_kube.pod(ML_PODS, INFER[0]))
        pod["metadata"]["name"] = name = f"infer-7c9d8b6f4-extr{i}"
        pod["metadata"]["uid"] = f"00000000-0000-0000-0000-00000000000{i}"
        fake_kube.items(ML_PODS).append(pod)
        _cap(fake_kube, name)
        names.append(name)
    return names


def _notebook_main(fake_kube: Any) -> dict[str, Any]:
    return fake_kube.pod(ML_PODS, NOTEBOOK)["spec"]["containers"][0]


# --- how many uncapped pods a failure names --------------------------------------------------------------------


def test_a_failure_names_up_to_three_pods_and_counts_the_rest(project, isolated, capsys):
    names = [*INFER, *_more_infer_pods(isolated, 2)]
    for name in names:
        isolated.pod(ML_PODS, name)["spec"]["containers"][0]["env"] = []
    _, report = verify_json(project, isolated, capsys)
    detail = check_detail(report, "memory-isolation", "infer")
    named = [part.split(":", 1)[0] for part in detail.split("; ")]
    assert (len(named), len(set(named) & set(names))) == (3, 3)
    assert detail.endswith(" (and 1 more)" + UNCAPPED)


def test_three_uncapped_pods_are_all_named_with_no_count(project, isolated, capsys):
    names = [*INFER, *_more_infer_pods(isolated, 1)]
    for name in names:
        isolated.pod(ML_PODS, name)["spec"]["containers"][0]["env"] = []
    _, report = verify_json(project, isolated, capsys)
    detail = check_detail(report, "memory-isolation", "infer")
    assert "more)" not in detail
    assert sorted(part.split(":", 1)[0] for part in detail.split("; ")) == sorted(names)


# --- which pods count -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_finished_pod_holds_no_share_and_is_not_checked(project, isolated, capsys, phase):
    """A pod that ran to its end holds no GPU: its missing cap is no failure."""
    pod = isolated.pod(ML_PODS, INFER[1])
    pod["status"]["phase"] = phase
    pod["spec"]["containers"][0]["env"] = []
    _, report = verify_json(project, isolated, capsys)
    assert ("memory-isolation", "infer") not in failed_checks(report)
    assert check_detail(report, "memory-isolation", "infer").startswith(f"1 pod {HELD}")


def test_a_workload_with_no_pod_holding_a_share_has_no_memory_isolation_result(project, isolated, capsys):
    """workload-running says why nothing runs: memory-isolation has nothing to say ("0 pods held" would mislead)."""
    isolated.pod(ML_PODS, NOTEBOOK)["status"]["phase"] = "Succeeded"
    _, report = verify_json(project, isolated, capsys)
    assert [c["subject"] for c in report["checks"] if c["check"] == "memory-isolation"] == ["infer"]


def test_a_workload_declared_with_no_pods_is_not_checked(project, isolated, capsys):
    """replicas: 0 declares no pods: the Deployment's pods still listed (scaling down) are not its share holders."""
    stack = project / "Pulumi.dev.yaml"
    stack.write_text(stack.read_text().replace("replicas: 2", "replicas: 0", 1))
    for name in INFER:
        isolated.pod(ML_PODS, name)["spec"]["containers"][0]["env"] = []
    _, report = verify_json(project, isolated, capsys)
    assert [c["subject"] for c in report["checks"] if c["check"] == "memory-isolation"] == ["notebook"]


# --- the fraction container -------------------------------------------------------------------------------------


def _two_containers(fake_kube: Any, *, capped: int) -> dict[str, Any]:
    """The notebook pod with a second container `sidecar`; only container `capped` (0 or 1) has KAI's cap."""
    pod = fake_kube.pod(ML_PODS, NOTEBOOK)
    main = pod["spec"]["containers"][0]
    sidecar = {"name": "sidecar", "image": "busybox"}
    pod["spec"]["containers"].append(sidecar)
    if capped == 1:
        for key in ("env", "volumeMounts"):
            sidecar[key] = main.pop(key)
    return pod


def test_without_the_annotation_the_first_container_is_the_fraction_container(project, isolated, capsys):
    _two_containers(isolated, capped=0)
    _, report = verify_json(project, isolated, capsys)
    assert check_detail(report, "memory-isolation", "notebook").startswith(f"1 pod {HELD}")


def test_without_the_annotation_a_later_container_with_the_cap_does_not_count(project, isolated, capsys):
    _two_containers(isolated, capped=1)
    _, report = verify_json(project, isolated, capsys)
    assert check_detail(report, "memory-isolation", "notebook").startswith(
        "notebook: container main has no /etc/ld.so.preload mount"
    )


def test_the_annotation_can_name_a_regular_container_that_is_not_the_first(project, isolated, capsys):
    pod = _two_containers(isolated, capped=1)
    pod["metadata"]["annotations"]["gpu-fraction-container-name"] = "sidecar"
    _, report = verify_json(project, isolated, capsys)
    assert check_detail(report, "memory-isolation", "notebook").startswith(f"1 pod {HELD}")


def test_an_empty_fraction_container_annotation_names_no_container(project, isolated, capsys):
    """GetFractionContainerRef (gpu_access.go:189-190) falls back to the first container only when the annotation
    is absent (`found`); an empty name matches no container, and KAI's binder refuses the pod (:218)."""
    isolated.pod(ML_PODS, NOTEBOOK)["metadata"]["annotations"]["gpu-fraction-container-name"] = ""
    _, report = verify_json(project, isolated, capsys)
    assert check_detail(report, "memory-isolation", "notebook") == (
        "notebook: no container '' for its GPU share" + UNCAPPED
    )


# --- what counts as the isolator's library and KAI's limit ------------------------------------------------------


def test_the_isolators_other_mount_without_the_preload_is_no_library(project, isolated, capsys):
    """The isolator mounts its library directory and /etc/ld.so.preload; only the preload makes HAMi-core load."""
    mounts = _notebook_main(isolated)["volumeMounts"]
    mounts.remove(PRELOAD_MOUNT)
    assert mounts  # the library directory is still mounted
    _, report = verify_json(project, isolated, capsys)
    assert check_detail(report, "memory-isolation", "notebook").startswith(
        "notebook: container main has no /etc/ld.so.preload mount"
    )


def test_a_container_with_no_env_at_all_has_no_limit(project, isolated, capsys):
    del _notebook_main(isolated)["env"]
    _, report = verify_json(project, isolated, capsys)
    assert check_detail(report, "memory-isolation", "notebook").startswith(NO_KAI_LIMIT)


def test_other_env_entries_after_kais_do_not_hide_it(project, isolated, capsys):
    """Only entries named CUDA_DEVICE_MEMORY_LIMIT compete for the last word."""
    _notebook_main(isolated)["env"].append({"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"})
    _, report = verify_json(project, isolated, capsys)
    assert check_detail(report, "memory-isolation", "notebook").startswith(f"1 pod {HELD}")


def test_a_configmap_reference_to_another_key_is_not_kais_limit(project, isolated, capsys):
    """hamicore.go:34-66 references the key CUDA_DEVICE_MEMORY_LIMIT; another key is not what the binder writes."""
    ref = _notebook_main(isolated)["env"][0]["valueFrom"]["configMapKeyRef"]
    ref["key"] = "GPU_PORTION"
    _, report = verify_json(project, isolated, capsys)
    assert check_detail(report, "memory-isolation", "notebook").startswith(NO_KAI_LIMIT)


@pytest.mark.parametrize("name", [None, ""])
def test_a_configmap_reference_without_a_name_is_not_kais_limit(project, isolated, capsys, name):
    ref = _notebook_main(isolated)["env"][0]["valueFrom"]["configMapKeyRef"]
    if name is None:
        del ref["name"]
    else:
        ref["name"] = name
    _, report = verify_json(project, isolated, capsys)
    assert check_detail(report, "memory-isolation", "notebook").startswith(NO_KAI_LIMIT)


def test_a_configmap_with_no_data_holds_no_limit(project, isolated, capsys):
    """A ConfigMap with no entries at all has no `data` field in the API's answer."""
    del isolated.responses[f"{CONFIG_MAPS}/notebook-abc1234-shared-gpu-0"]["data"]
    _, report = verify_json(project, isolated, capsys)
    assert check_detail(report, "memory-isolation", "notebook").startswith(
        "notebook: ConfigMap notebook-abc1234-shared-gpu-0 holds no CUDA_DEVICE_MEMORY_LIMIT"
    )


def test_a_configmap_read_the_api_server_fails_is_the_verifys_error_not_a_note(project, isolated, capsys):
    """Only a 403 (RBAC) is a note; a server error stops verify (exit 3) with that error."""
    path = f"{CONFIG_MAPS}/notebook-abc1234-shared-gpu-0"
    isolated.bare[path] = 500
    code, report = verify_json(project, isolated, capsys)
    assert (code, report["exitCode"]) == (3, 3)
    assert path in report["error"]
    assert "500" in report["error"]


def test_a_tenant_workload_is_reported_under_its_tenant(project, isolated, capsys):
    """A tenant's pods run synced into its vCluster's host namespace; the result names the tenant too."""
    stack = project / "Pulumi.dev.yaml"
    stack.write_text(stack.read_text().replace("      gpu: 1\n", "      gpuFraction: 0.5\n", 1))
    _, report = verify_json(project, isolated, capsys)
    assert ("memory-isolation", "team-a/train") in failed_checks(report)
    assert check_detail(report, "memory-isolation", "team-a/train").startswith(
        "train-master-0-x-default-x-team-a: container pytorch has no /etc/ld.so.preload mount"
    )


# --- kai-ready ----------------------------------------------------------------------------------------------------
# The API server's answers that say admission was not reached: 429 (API Priority and Fairness sheds load), and the
# 5xx of a webhook that cannot be called or of a proxy in front of the API server.


@pytest.fixture
def api() -> Iterator[FakeKube]:
    state = FakeKube(_registered())
    state.posts = {path: [(201, None)] for path in PROBES}
    yield from serve(state, None)


def test_each_probe_is_named(api, tmp_path, capsys, monkeypatch):
    """A create without a name is refused (422) before validating admission runs, which kai-ready would take for an
    answer from KAI's webhooks."""
    Clock(monkeypatch)
    _ready(api, tmp_path, capsys)
    assert [bool(body["metadata"].get("name")) for _, _, body in api.posted] == [True, True, True]


def test_the_probe_podgroup_belongs_to_the_probe_queue(api, tmp_path, capsys, monkeypatch):
    Clock(monkeypatch)
    _ready(api, tmp_path, capsys)
    queue, group, _ = (body for _, _, body in api.posted)
    assert group["spec"]["queue"] == queue["metadata"]["name"]
    assert group["spec"]["minMember"] >= 1


def test_the_probe_pod_has_the_fields_validation_requires(api, tmp_path, capsys, monkeypatch):
    """The API server validates a Pod (a container, each named and with an image) before validating admission, and
    refuses it with 422, which kai-ready would take for an answer from KAI's webhooks."""
    Clock(monkeypatch)
    _ready(api, tmp_path, capsys)
    containers = api.posted[-1][2]["spec"]["containers"]
    assert containers
    assert all(c.get("name") and c.get("image") for c in containers)


def test_the_probe_pod_passes_the_restricted_pod_security_level(api, tmp_path, capsys, monkeypatch):
    """A namespace enforcing Pod Security `restricted` refuses anything less before KAI's webhooks see the pod
    (Pod Security Standards, restricted: runAsNonRoot, a RuntimeDefault or Localhost seccomp profile, no privilege
    escalation, all capabilities dropped)."""
    Clock(monkeypatch)
    _ready(api, tmp_path, capsys)
    pod = api.posted[-1][2]
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert pod["spec"]["securityContext"]["seccompProfile"]["type"] in ("RuntimeDefault", "Localhost")
    for container in pod["spec"]["containers"]:
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]


@pytest.mark.parametrize("status", [429, 502, 503, 504])
def test_a_probe_answered_with_a_not_yet_status_is_waited_for(api, tmp_path, capsys, monkeypatch, status):
    api.posts[PODS] = [(status, "not yet"), (201, None)]
    clock = Clock(monkeypatch)
    code, _, err = _ready(api, tmp_path, capsys)
    assert (code, clock.sleeps) == (0, [5.0])
    assert f"Pod: POST {PODS}: HTTP {status}" in err


def _another_configuration(api: FakeKube, *webhooks: dict[str, Any]) -> None:
    """Another product's ValidatingWebhookConfiguration, listed before KAI's."""
    configuration: dict[str, Any] = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "other"},
    }
    if webhooks:
        configuration["webhooks"] = list(webhooks)
    api.responses[VALIDATING]["items"].insert(0, configuration)


def _other_webhook(**fields: Any) -> dict[str, Any]:
    return {"name": "other.example.com", "admissionReviewVersions": ["v1"], "sideEffects": "None", **fields}


def test_a_webhook_configuration_without_webhooks_is_skipped(api, tmp_path, capsys, monkeypatch):
    """`webhooks` is optional in a webhook configuration (admissionregistration/v1): one without any serves nothing,
    and KAI's own still count."""
    _another_configuration(api)
    Clock(monkeypatch)
    code, report, _ = _ready(api, tmp_path, capsys)
    assert (code, report["ready"]) == (0, True)


def test_a_webhook_called_by_url_is_skipped(api, tmp_path, capsys, monkeypatch):
    """clientConfig names a Service or a URL: a URL webhook is not one of KAI's Services."""
    _another_configuration(api, _other_webhook(clientConfig={"url": "https://hooks.example.com/validate"}))
    Clock(monkeypatch)
    code, report, _ = _ready(api, tmp_path, capsys)
    assert (code, report["ready"]) == (0, True)


def test_a_webhook_in_kais_namespace_without_rules_is_skipped(api, tmp_path, capsys, monkeypatch):
    service = {"service": {"namespace": "kai-scheduler", "name": "other"}}
    _another_configuration(api, _other_webhook(clientConfig=service))
    Clock(monkeypatch)
    code, report, _ = _ready(api, tmp_path, capsys)
    assert (code, report["ready"]) == (0, True)


def test_a_webhook_in_kais_namespace_counts_only_for_the_group_and_resource_it_serves(
    api, tmp_path, capsys, monkeypatch
):
    """KAI's queue webhook serves `queues` of scheduling.run.ai: queues of another group, or another resource of
    KAI's group, are not it."""
    service = {"service": {"namespace": "kai-scheduler", "name": "other"}}
    rules = [("example.com", "queues"), ("scheduling.run.ai", "topologies")]
    api.responses[VALIDATING]["items"][0] = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "kai-queue-validation-v2"},
        "webhooks": [
            _other_webhook(
                clientConfig=service,
                rules=[{"apiGroups": [g], "apiVersions": ["*"], "operations": ["CREATE"], "resources": [r]}],
            )
            for g, r in rules
        ],
    }
    Clock(monkeypatch)
    code, report, _ = _ready(api, tmp_path, capsys, "--wait", "0")
    assert code == 3
    assert report["error"].endswith(": KAI's operator has not registered its queue webhook yet")


def test_webhook_configurations_the_api_server_fails_to_list_are_waited_for(api, tmp_path, capsys, monkeypatch):
    """Only a 403 leaves the probes to decide; a server error is the API server not answering yet."""
    api.flaky[VALIDATING] = [(500, {})]
    clock = Clock(monkeypatch)
    code, _, err = _ready(api, tmp_path, capsys)
    assert (code, clock.sleeps) == (0, [5.0])
    assert f"waiting for KAI's admission webhooks (0 s): GET {VALIDATING}" in err


def test_without_wait_it_gives_up_after_600_seconds(api, tmp_path, capsys, monkeypatch):
    """The documented default (`--help`: "default 600")."""
    api.posts[PODS] = [(503, "service unavailable")]
    clock = Clock(monkeypatch)
    code, report, _ = _ready(api, tmp_path, capsys)
    assert (code, sum(clock.sleeps)) == (3, 600.0)
    assert "did not answer within 600 s" in report["error"]


@pytest.mark.parametrize("wait", ["0", "3600"])
def test_a_wait_from_0_to_an_hour_is_accepted(api, tmp_path, capsys, monkeypatch, wait):
    Clock(monkeypatch)
    code, report, _ = _ready(api, tmp_path, capsys, "--wait", wait)
    assert (code, report["ready"]) == (0, True)


@pytest.mark.parametrize("wait", ["-1", "3601"])
def test_a_wait_below_0_or_above_an_hour_is_a_usage_error(tmp_path, capsys, wait):
    with pytest.raises(SystemExit) as caught:
        main(["kai-ready", "--kubeconfig", str(tmp_path / "kubeconfig"), "--wait", wait])
    assert caught.value.code == 2
    assert "argument --wait:" in capsys.readouterr().err


def test_a_wait_of_0_asks_once_and_does_not_sleep(api, tmp_path, capsys, monkeypatch):
    api.posts[PODS] = [(503, "service unavailable")]
    clock = Clock(monkeypatch)
    code, report, _ = _ready(api, tmp_path, capsys, "--wait", "0")
    assert (code, clock.sleeps) == (3, [])
    assert "did not answer within 0 s" in report["error"]


def test_each_api_request_may_take_10_seconds_by_default(api, tmp_path, capsys, monkeypatch):
    """The documented default (`--help`: "seconds per API request (default 10)")."""
    from kaistack.kube.client import KubeClient

    timeouts = []
    opened = KubeClient.from_kubeconfig

    def recording(*args: Any, **kwargs: Any) -> KubeClient:
        timeouts.append(kwargs["timeout"])
        return opened(*args, **kwargs)

    monkeypatch.setattr(KubeClient, "from_kubeconfig", recording)
    Clock(monkeypatch)
    assert _ready(api, tmp_path, capsys)[0] == 0
    assert timeouts == [10.0]


@pytest.mark.parametrize("timeout", ["0.5", "600"])
def test_a_request_timeout_above_0_up_to_600_seconds_is_accepted(api, tmp_path, capsys, monkeypatch, timeout):
    Clock(monkeypatch)
    assert _ready(api, tmp_path, capsys, "--timeout", timeout)[0] == 0


@pytest.mark.parametrize("timeout", ["0", "601"])
def test_a_request_timeout_of_0_or_above_600_seconds_is_a_usage_error(tmp_path, capsys, timeout):
    with pytest.raises(SystemExit) as caught:
        main(["kai-ready", "--kubeconfig", str(tmp_path / "kubeconfig"), "--timeout", timeout])
    assert caught.value.code == 2
    assert "argument --timeout:" in capsys.readouterr().err


def test_the_json_gives_the_seconds_waited_to_a_tenth(api, tmp_path, capsys, monkeypatch):
    api.posts[QUEUES] = [UNREACHABLE, (201, None)]
    clock = Clock(monkeypatch)
    clock.on_sleep = lambda: setattr(clock, "now", clock.now + 0.26)  # each round's requests take a while
    code, report, _ = _ready(api, tmp_path, capsys)
    assert (code, report["seconds"]) == (0, 5.3)


def test_the_json_names_the_api_server_it_asked(api, tmp_path, capsys, monkeypatch):
    Clock(monkeypatch)
    code, report, _ = _ready(api, tmp_path, capsys)
    assert (code, report["server"]) == (0, api.url)


def test_help_shows_examples_and_exit_codes_0_2_and_3(capsys):
    """As every team-workflow command's --help does (tests/workflows/test_workflow_cli_help.py)."""
    with pytest.raises(SystemExit, match="0"):
        main(["kai-ready", "--help"])
    out = capsys.readouterr().out
    assert "\nexamples:\n  kaistack kai-ready" in out
    codes = " ".join(out.split("exit codes:", 1)[1].split())
    assert codes.startswith("0 ")
    assert (", 2 " in codes, ", 3 " in codes) == (True, True)


def _kubeconfig(api: FakeKube, path: Any, *, current: str, user: dict[str, Any]) -> str:
    """Contexts `lab` (the fake API server) and `dead` (nothing listens there), `current` the current one."""
    clusters = {"lab": api.url, "dead": "http://127.0.0.1:9"}
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": current,
                "clusters": [{"name": n, "cluster": {"server": url}} for n, url in clusters.items()],
                "contexts": [{"name": n, "context": {"cluster": n, "user": "u"}} for n in clusters],
                "users": [{"name": "u", "user": user}],
            }
        )
    )
    return str(path)


def test_the_context_named_is_the_cluster_asked(api, tmp_path, capsys, monkeypatch):
    kubeconfig = _kubeconfig(api, tmp_path / "kubeconfig", current="dead", user={"token": api.token})
    Clock(monkeypatch)
    code = main(["kai-ready", "--kubeconfig", kubeconfig, "--context", "lab", "--wait", "0", "--json"])
    assert (code, json.loads(capsys.readouterr().out)["server"]) == (0, api.url)


def test_a_relative_token_file_is_read_beside_the_kubeconfig(api, tmp_path, capsys, monkeypatch):
    """As kubectl resolves a kubeconfig's relative paths (kaistack.kube.client), not from the working directory."""
    beside = tmp_path / "cluster"
    beside.mkdir()
    (beside / "token").write_text(str(api.token))
    kubeconfig = _kubeconfig(api, beside / "kubeconfig", current="lab", user={"tokenFile": "token"})
    monkeypatch.chdir(tmp_path)
    Clock(monkeypatch)
    assert main(["kai-ready", "--kubeconfig", kubeconfig, "--wait", "0"]) == 0


def test_the_wait_counts_from_its_start_not_from_the_clocks_zero(api, tmp_path, capsys, monkeypatch):
    """A monotonic clock starts anywhere (time.monotonic)."""
    api.posts[PODS] = [(503, "service unavailable")]
    clock = Clock(monkeypatch)
    clock.now = 1000.0
    code, report, _ = _ready(api, tmp_path, capsys, "--wait", "12")
    assert (code, clock.sleeps) == (3, [5.0, 5.0, 2.0])
    assert "did not answer within 12 s" in report["error"]


def test_an_api_server_that_does_not_answer_yet_is_waited_for(api, tmp_path, capsys, monkeypatch):
    """Right after the cluster comes up nothing may listen yet: that is a reason to wait, not a crash."""
    kubeconfig = _kubeconfig(api, tmp_path / "kubeconfig", current="dead", user={"token": api.token})
    clock = Clock(monkeypatch)
    code = main(["kai-ready", "--kubeconfig", kubeconfig, "--wait", "5", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert (code, clock.sleeps) == (3, [5.0])
    assert "127.0.0.1:9" in report["error"]


def test_without_json_it_prints_one_line_naming_the_server_and_the_wait(api, tmp_path, capsys, monkeypatch):
    Clock(monkeypatch)
    assert main(["kai-ready", "--kubeconfig", str(api.kubeconfig(tmp_path))]) == 0
    assert capsys.readouterr().out == f"KAI's admission webhooks answer at {api.url} (after 0 s)\n"
