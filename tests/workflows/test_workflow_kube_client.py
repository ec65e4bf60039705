"""kaistack.kube.client (lightkube underneath) against the fake API server on loopback (see workflow_testlib)."""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from workflow_testlib import FakeKube, Pki

from kaistack.errors import EnvironmentProblem, ExitCode
from kaistack.kube import resources as k8s
from kaistack.kube.client import KubeAPIError, KubeClient, KubeError

ML_PODS = "/api/v1/namespaces/ml/pods"
QUEUES = "/apis/scheduling.run.ai/v2/queues"
ML_POD_GROUPS = "/apis/scheduling.run.ai/v2alpha2/namespaces/ml/podgroups"


def _kubeconfig(server: str, user: dict[str, Any] | None = None, **cluster: Any) -> str:
    context: dict[str, Any] = {"cluster": "c"} | ({"user": "u"} if user is not None else {})
    return json.dumps(
        {
            "current-context": "ctx",
            "clusters": [{"name": "c", "cluster": {"server": server, **cluster}}],
            "contexts": [{"name": "ctx", "context": context}],
            "users": [{"name": "u", "user": user}] if user is not None else [],
        }
    )


def _client(fake_kube: FakeKube, tmp_path: Path) -> KubeClient:
    return KubeClient.from_kubeconfig(fake_kube.kubeconfig(tmp_path).read_text())


def _names(items: list[dict[str, Any]]) -> list[str]:
    return [i["metadata"]["name"] for i in items]


def _plugin(tmp_path: Path, script: str) -> Path:
    plugin = tmp_path / "get-token"
    plugin.write_text("#!/bin/sh\n" + script)
    plugin.chmod(0o755)
    return plugin


def _answering(status: dict[str, Any]) -> str:
    """A plugin's script printing a v1beta1 ExecCredential with `status`."""
    credential = {"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", "status": status}
    return f"echo '{json.dumps(credential)}'\n"


def _exec_user(command: str) -> dict[str, Any]:
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": command}}


def test_lists_follow_continue_tokens(fake_kube, tmp_path):
    """A server answering two items per page: the list is read to the end through metadata.continue."""
    fake_kube.page_size = 2
    with _client(fake_kube, tmp_path) as client:
        pods = client.list(k8s.Pod, namespace="ml")
    expected = _names(fake_kube.items(ML_PODS))
    assert len(expected) > 2
    assert _names(pods) == expected
    pages = [params for path, params in fake_kube.requests if path == ML_PODS]
    assert len(pages) == math.ceil(len(expected) / 2)
    assert [bool(p.get("continue")) for p in pages] == [False] + [True] * (len(pages) - 1)


def test_forbidden_is_a_kube_api_error_with_status_403(fake_kube, tmp_path):
    """A namespace viewer listing all pods: KubeAPIError with status 403, so callers can skip what they may not read."""
    fake_kube.forbidden.add("/api/v1/pods")
    with _client(fake_kube, tmp_path) as client, pytest.raises(KubeAPIError) as raised:
        client.list(k8s.Pod)
    assert (raised.value.status, raised.value.path) == (403, "/api/v1/pods")
    assert str(raised.value).startswith("GET /api/v1/pods: HTTP 403: forbidden")
    assert raised.value.exit_code == ExitCode.ENVIRONMENT


def test_missing_object_is_a_kube_api_error_with_status_404(fake_kube, tmp_path):
    with _client(fake_kube, tmp_path) as client, pytest.raises(KubeAPIError) as raised:
        client.get(k8s.Node, "no-such-node")
    assert (raised.value.status, raised.value.path) == (404, "/api/v1/nodes/no-such-node")


def test_typed_results_are_plain_camel_case_dicts(fake_kube, tmp_path):
    """Typed models go back to the API's JSON shape, so checks read `spec.schedulerName` as kubectl shows it."""
    with _client(fake_kube, tmp_path) as client:
        node = client.get(k8s.Node, "kaistack-dev-worker")
        pods = client.list(k8s.Pod, namespace="ml")
    assert type(node) is dict
    assert node["metadata"]["labels"] == fake_kube.responses["/api/v1/nodes/kaistack-dev-worker"]["metadata"]["labels"]
    assert {p["spec"]["schedulerName"] for p in pods} == {"kai-scheduler"}


def test_kai_custom_resources_use_the_kai_api_names(fake_kube, tmp_path):
    """Queue is cluster-scoped at scheduling.run.ai/v2; PodGroup is namespaced at v2alpha2."""
    group = {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup", "metadata": {"name": "pg-infer"}}
    fake_kube.responses[ML_POD_GROUPS] = {"kind": "PodGroupList", "metadata": {}, "items": [group]}
    with _client(fake_kube, tmp_path) as client:
        queues = client.list(k8s.Queue)
        groups = client.list(k8s.PodGroup, namespace="ml")
    assert queues == fake_kube.items(QUEUES)
    assert groups == [group]


def test_label_selector_across_all_namespaces(fake_kube, tmp_path):
    """No namespace: every namespace (/api/v1/pods); {key: None} selects pods that have the label."""
    with _client(fake_kube, tmp_path) as client:
        grouped = client.list(k8s.Pod, labels={"runai-gpu-group": None})
        infer = client.list(k8s.Pod, namespace="ml", labels={"app": "infer"})
    assert ("/api/v1/pods", {"limit": "500", "labelSelector": "runai-gpu-group"}) in fake_kube.requests
    assert grouped
    assert all("runai-gpu-group" in p["metadata"]["labels"] for p in grouped)
    assert _names(infer) == [n for n in _names(fake_kube.items(ML_PODS)) if n.startswith("infer-")]


def test_namespace_for_a_cluster_scoped_kind_is_a_programming_error(fake_kube, tmp_path):
    with _client(fake_kube, tmp_path) as client, pytest.raises(ValueError, match="cluster-scoped"):
        client.list(k8s.Queue, namespace="ml")


def test_names_reads_every_page_and_keeps_namespace_and_name_only(fake_kube, tmp_path):
    """ConfigMaps (diagnose reads which exist): every page, (namespace, name) pairs, nothing else kept."""
    items = [
        {"metadata": {"namespace": ns, "name": name}, "data": {"big": "x" * 1000}}
        for ns, name in (("ml", "kube-root-ca.crt"), ("ml", "settings"), ("web", "kube-root-ca.crt"))
    ]
    fake_kube.responses["/api/v1/configmaps"] = {"kind": "ConfigMapList", "metadata": {}, "items": items}
    fake_kube.page_size = 2
    with _client(fake_kube, tmp_path) as client:
        names = client.names(k8s.ConfigMap)
    assert names == (("ml", "kube-root-ca.crt"), ("ml", "settings"), ("web", "kube-root-ca.crt"))
    assert [p.get("continue") is not None for path, p in fake_kube.requests if path == "/api/v1/configmaps"] == [
        False,
        True,
    ]


def test_names_of_a_cluster_scoped_kind_is_a_programming_error(fake_kube, tmp_path):
    with _client(fake_kube, tmp_path) as client, pytest.raises(ValueError, match="cluster-scoped"):
        client.names(k8s.Queue)


def test_errors_are_environment_problems():
    """kaistack's exit-code table: the cluster, credentials and tools are the environment (exit 3)."""
    assert issubclass(KubeAPIError, KubeError)
    assert issubclass(KubeError, EnvironmentProblem)
    assert KubeError("x").exit_code == ExitCode.ENVIRONMENT == 3


def test_named_context_is_used(fake_kube, tmp_path):
    """--context picks a context other than current-context."""
    config = json.loads(fake_kube.kubeconfig(tmp_path).read_text())
    config["clusters"].append({"name": "dead", "cluster": {"server": "http://127.0.0.1:9"}})
    config["contexts"].append({"name": "dead", "context": {"cluster": "dead", "user": "admin"}})
    config["current-context"] = "dead"
    with KubeClient.from_kubeconfig(json.dumps(config), context="kind-kaistack-dev") as client:
        assert client.server == fake_kube.url
        assert client.list(k8s.Queue)


def test_relative_files_resolve_against_the_kubeconfig_directory(fake_kube_tls, pki: Pki, tmp_path, monkeypatch):
    """CA, client certificate and key named relative to the kubeconfig, read from another working directory."""
    certs = tmp_path / "kube" / "certs"
    certs.mkdir(parents=True)
    for file in (pki.ca, pki.client_cert, pki.client_key):
        shutil.copy(file, certs / file.name)
    user = {"client-certificate": "certs/client.crt", "client-key": "certs/client.key"}
    text = _kubeconfig(fake_kube_tls.url, user, **{"certificate-authority": "certs/ca.crt"})
    monkeypatch.chdir(tmp_path)
    with KubeClient.from_kubeconfig(text, base_dir=tmp_path / "kube") as client:
        assert _names(client.list(k8s.Queue)) == _names(fake_kube_tls.items(QUEUES))


def test_relative_token_file_resolves_against_the_kubeconfig_directory(fake_kube, tmp_path, monkeypatch):
    (tmp_path / "token").write_text(f"{fake_kube.token}\n")
    monkeypatch.chdir(Path("/"))
    with KubeClient.from_kubeconfig(_kubeconfig(fake_kube.url, {"tokenFile": "token"}), base_dir=tmp_path) as client:
        assert client.list(k8s.Queue)


def test_missing_certificate_file_names_the_file(fake_kube, tmp_path):
    text = _kubeconfig(fake_kube.url, {"token": "t"}, **{"certificate-authority": "missing-ca.crt"})
    with pytest.raises(KubeError, match=r"certificate-authority refers to .*missing-ca\.crt, which cannot be read"):
        KubeClient.from_kubeconfig(text, base_dir=tmp_path)


def test_failing_exec_plugin_is_a_kube_error_without_its_output(fake_kube, tmp_path):
    """An exec plugin that exits non-zero: KubeError naming it and its exit code. Neither what it printed on stdout
    nor on stderr is shown: a plugin may print what it was given (a client secret in its args or env), and the
    message reaches --json documents and, through discovery, Pulumi's output and PR comments."""
    plugin = _plugin(tmp_path, 'echo \'{"status": {"token": "s3cret"}}\'\necho "credentials expired" >&2\nexit 1\n')
    with (
        KubeClient.from_kubeconfig(_kubeconfig(fake_kube.url, _exec_user(str(plugin)))) as client,
        pytest.raises(KubeError) as raised,
    ):
        client.list(k8s.Queue)
    assert not isinstance(raised.value, KubeAPIError)
    assert "exited 1 (its output is not shown" in str(raised.value)
    assert "credentials expired" not in str(raised.value)
    assert "s3cret" not in str(raised.value)


def test_exec_plugin_without_a_token_is_explained(fake_kube, tmp_path):
    plugin = _plugin(tmp_path, _answering({"expirationTimestamp": None}))
    with (
        KubeClient.from_kubeconfig(_kubeconfig(fake_kube.url, _exec_user(str(plugin)))) as client,
        pytest.raises(KubeError, match=r"printed no ExecCredential with status\.token or a client certificate and key"),
    ):
        client.list(k8s.Queue)


def test_exec_plugin_that_is_not_installed(fake_kube, tmp_path):
    """`aws` missing from PATH: the error says which command could not run."""
    text = _kubeconfig(fake_kube.url, _exec_user("kaistack-no-such-plugin"))
    with KubeClient.from_kubeconfig(text) as client, pytest.raises(KubeError, match="cannot run kaistack-no-such-"):
        client.list(k8s.Queue)


def test_exec_plugin_path_is_relative_to_the_kubeconfig(fake_kube, tmp_path, monkeypatch):
    """A command with a slash resolves against the kubeconfig's directory, as kubectl does."""
    _plugin(tmp_path, _answering({"token": fake_kube.token}))
    monkeypatch.chdir(Path("/"))
    text = _kubeconfig(fake_kube.url, _exec_user("./get-token"))
    with KubeClient.from_kubeconfig(text, base_dir=tmp_path) as client:
        assert client.list(k8s.Queue)


def test_invalid_yaml_kubeconfig_does_not_echo_the_line(tmp_path):
    """PyYAML quotes the offending line; the message gives its position only, since it may hold a token."""
    text = "users:\n- name: admin\n  user:\n    token: s3cret: [\n"
    with pytest.raises(KubeError, match=r"kubeconfig is not valid YAML at line \d+") as raised:
        KubeClient.from_kubeconfig(text)
    assert "s3cret" not in str(raised.value)


def test_kubeconfig_alias_bomb_is_refused_by_the_safe_loader():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 5)}]\n" for i in range(12)
    )
    with pytest.raises(KubeError, match="kubeconfig is not valid YAML"):
        KubeClient.from_kubeconfig(bomb)


def test_server_without_scheme_is_refused():
    with pytest.raises(KubeError, match="has no https:// server"):
        KubeClient.from_kubeconfig(_kubeconfig("127.0.0.1:6443"))


def test_a_password_in_the_server_url_is_never_shown():
    """Reports and errors name the server (verify's header, "cannot reach the API server at ..."); basic-auth
    credentials written into its URL stay out of them."""
    with KubeClient.from_kubeconfig(_kubeconfig("https://admin:hunter2@127.0.0.1:9/base", user={})) as client:
        assert client.server == "https://127.0.0.1:9/base"
        with pytest.raises(KubeError) as caught:
            client.list(k8s.Queue)
    assert "hunter2" not in str(caught.value)
    assert "https://127.0.0.1:9/base" in str(caught.value)


def test_a_section_that_is_not_a_list_is_named() -> None:
    config = json.loads(_kubeconfig("https://127.0.0.1:9", user={}))
    config["contexts"] = 5
    with pytest.raises(KubeError, match="kubeconfig contexts is not a list"):
        KubeClient.from_kubeconfig(json.dumps(config))


def test_a_home_directory_of_no_user_is_a_kubeconfig_problem() -> None:
    kubeconfig = _kubeconfig("https://127.0.0.1:9", user={"tokenFile": "~no-such-user-kaistack/token"})
    with pytest.raises(KubeError, match="cannot expand its ~"):
        KubeClient.from_kubeconfig(kubeconfig)


def test_a_kubeconfig_variable_entry_naming_no_users_home_is_passed_over_like_a_missing_file(tmp_path) -> None:
    """kubectl skips $KUBECONFIG entries that name nothing; `~user` of no user was an internal error."""
    from kaistack.kube.kubeconfig import resolve_kubeconfig

    real = tmp_path / "config"
    real.write_text(_kubeconfig("https://127.0.0.1:9", user={}))
    variable = f"~no-such-user-kaistack/config{os.pathsep}{real}"
    found = resolve_kubeconfig("dev", None, environ={"KUBECONFIG": variable}, which=lambda _: None)
    assert found.text == real.read_text()


def test_without_a_stack_the_default_kubeconfig_is_kubectls(tmp_path, monkeypatch) -> None:
    """diagnose looks at any cluster: after $KUBECONFIG, ~/.kube/config, never `pulumi stack output` of no stack."""
    from kaistack.kube.kubeconfig import resolve_kubeconfig

    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(KubeError, match=r"^no kubeconfig: pass --kubeconfig FILE, set KUBECONFIG, or create ~/\.kube"):
        resolve_kubeconfig(None, None, environ={}, which=lambda _: "/usr/bin/pulumi")
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text(_kubeconfig("https://127.0.0.1:9", user={}))
    assert resolve_kubeconfig(None, None, environ={}).origin == str(tmp_path / ".kube" / "config")


@pytest.mark.parametrize("stack", [None, "dev"])
def test_a_kubeconfig_variable_naming_no_file_is_the_whole_search(stack, tmp_path, monkeypatch) -> None:
    """kubectl reads only what a set KUBECONFIG names: falling back to ~/.kube/config or the stack's output would
    diagnose or verify some other cluster without a word."""
    from kaistack.kube.kubeconfig import resolve_kubeconfig

    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text(_kubeconfig("https://127.0.0.1:9", user={}))
    with pytest.raises(KubeError, match=r"\$KUBECONFIG \(/nonexistent\) names no existing file"):
        resolve_kubeconfig(stack, None, environ={"KUBECONFIG": "/nonexistent"}, which=lambda _: "/usr/bin/pulumi")


def test_no_home_directory_means_no_default_kubeconfig(monkeypatch) -> None:
    from kaistack.kube import kubeconfig as module

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(module.Path, "home", staticmethod(no_home))
    assert module.default_kubeconfig() is None
    with pytest.raises(KubeError, match=r"^no kubeconfig"):
        module.resolve_kubeconfig(None, None, environ={})


# --- proxies, odd answers, credentials that cannot be sent ------------------------------------------------

UNRESOLVABLE = "http://kube-api.kaistack.invalid"  # .invalid never resolves (RFC 6761): only a proxy reaches it


def test_the_clusters_proxy_url_carries_the_requests(fake_kube, tmp_path):
    """kubectl sends through the cluster's proxy-url (client-go@kubernetes-1.35.0 tools/clientcmd/
    client_config.go:198-203); the fake server answers a proxied request as it answers its own."""
    text = _kubeconfig(UNRESOLVABLE, {"token": fake_kube.token}, **{"proxy-url": fake_kube.url})
    with KubeClient.from_kubeconfig(text) as client:
        assert _names(client.list(k8s.Queue)) == _names(fake_kube.items(QUEUES))
    assert fake_kube.targets[0].startswith(f"{UNRESOLVABLE}{QUEUES}")


def test_the_environments_http_proxy_carries_the_requests(fake_kube, tmp_path, monkeypatch):
    """client-go's default transport takes HTTP(S)_PROXY from the environment (transport/cache.go:129-132)."""
    monkeypatch.setenv("HTTP_PROXY", fake_kube.url)
    with KubeClient.from_kubeconfig(_kubeconfig(UNRESOLVABLE, {"token": fake_kube.token})) as client:
        assert _names(client.list(k8s.Queue)) == _names(fake_kube.items(QUEUES))
    assert fake_kube.targets[0].startswith(f"{UNRESOLVABLE}{QUEUES}")


def test_a_proxy_url_of_another_scheme_names_the_key(fake_kube):
    text = _kubeconfig(fake_kube.url, {"token": "t"}, **{"proxy-url": "ftp://proxy.example:21"})
    with pytest.raises(KubeError, match=r"proxy-url must be an http://, https:// or socks5:// URL"):
        KubeClient.from_kubeconfig(text)


def test_an_error_answer_without_a_content_type_is_a_kube_api_error(fake_kube, tmp_path):
    """A load balancer's bare 502: lightkube reads its missing Content-Type header and raises KeyError."""
    fake_kube.bare["/api/v1/pods"] = 502
    with _client(fake_kube, tmp_path) as client, pytest.raises(KubeAPIError, match="HTTP 502") as raised:
        client.list(k8s.Pod)
    assert raised.value.status == 502


def test_a_bare_error_answer_is_not_blamed_on_a_working_exec_plugin(fake_kube, tmp_path):
    plugin = _plugin(tmp_path, _answering({"token": fake_kube.token}))
    fake_kube.bare["/api/v1/pods"] = 502
    with (
        KubeClient.from_kubeconfig(_kubeconfig(fake_kube.url, _exec_user(str(plugin)))) as client,
        pytest.raises(KubeAPIError, match="HTTP 502"),
    ):
        client.list(k8s.Pod)


@pytest.mark.parametrize("token", ["s3cret-token\n", "s3cret-token\r", "Bearer\ns3cret-token"])
def test_a_token_an_http_header_cannot_carry_is_never_quoted(fake_kube, tmp_path, token):
    """httpx2's LocalProtocolError quotes the header value: the token would reach stderr and --json."""
    with (
        KubeClient.from_kubeconfig(_kubeconfig(fake_kube.url, {"token": token})) as client,
        pytest.raises(KubeError, match="credentials hold a character an HTTP header cannot carry") as raised,
    ):
        client.list(k8s.Pod)
    assert "s3cret" not in str(raised.value)


# --- reads retried where client-go retries a GET -----------------------------------------------------------


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    from kaistack.kube import client

    monkeypatch.setattr(client, "RESET_WAIT_S", 0.0)


def _paths(fake_kube: FakeKube, path: str) -> int:
    return sum(1 for p, _ in fake_kube.requests if p == path)


def test_a_429_is_retried_after_its_retry_after(fake_kube, tmp_path):
    """API Priority and Fairness answers 429 with Retry-After (client-go@kubernetes-1.35.0 rest/with_retry.go)."""
    fake_kube.flaky[QUEUES] = [(429, {"Retry-After": "0"})]
    with _client(fake_kube, tmp_path) as client:
        assert _names(client.list(k8s.Queue)) == _names(fake_kube.items(QUEUES))
    assert _paths(fake_kube, QUEUES) == 2


def test_a_5xx_with_retry_after_is_retried_and_one_without_is_not(fake_kube, tmp_path):
    fake_kube.flaky[QUEUES] = [(503, {"Retry-After": "0"})]
    with _client(fake_kube, tmp_path) as client:
        assert client.list(k8s.Queue)
    fake_kube.flaky[ML_PODS] = [(500, {})]
    with _client(fake_kube, tmp_path) as client, pytest.raises(KubeAPIError, match="HTTP 500"):
        client.list(k8s.Pod, namespace="ml")
    assert _paths(fake_kube, ML_PODS) == 1


def test_a_dropped_connection_is_retried(fake_kube, tmp_path, quick_retries):
    fake_kube.flaky[QUEUES] = [(0, {})]
    with _client(fake_kube, tmp_path) as client:
        assert _names(client.list(k8s.Queue)) == _names(fake_kube.items(QUEUES))


def test_an_expired_continue_token_reads_the_list_again(fake_kube, tmp_path):
    """A list that spans an etcd compaction: 410 on a later page (client-go's pager reads it again)."""
    fake_kube.page_size = 2
    fake_kube.flaky[ML_PODS + "?continue"] = [(410, {})]
    with _client(fake_kube, tmp_path) as client:
        assert _names(client.list(k8s.Pod, namespace="ml")) == _names(fake_kube.items(ML_PODS))


def test_a_forbidden_read_is_not_retried(fake_kube, tmp_path):
    fake_kube.flaky[QUEUES] = [(403, {"Retry-After": "0"})]
    with _client(fake_kube, tmp_path) as client, pytest.raises(KubeAPIError, match="HTTP 403"):
        client.list(k8s.Queue)
    assert _paths(fake_kube, QUEUES) == 1


def test_retries_stop_after_the_last_attempt(fake_kube, tmp_path, monkeypatch):
    from kaistack.kube import client as module

    monkeypatch.setattr(module, "MAX_ATTEMPTS", 3)
    fake_kube.flaky[QUEUES] = [(429, {"Retry-After": "0"})] * 5
    with _client(fake_kube, tmp_path) as client, pytest.raises(KubeAPIError, match="HTTP 429"):
        client.list(k8s.Queue)
    assert _paths(fake_kube, QUEUES) == 3


# --- exec plugins and impersonation as kubectl takes them ----------------------------------------------------


def test_a_v1_exec_plugin_gets_kubernetes_exec_info_with_the_cluster(fake_kube, tmp_path):
    """client-go@kubernetes-1.35.0 plugin/pkg/client/auth/exec/exec.go: v1 is accepted, and KUBERNETES_EXEC_INFO
    always set, with spec.cluster when provideClusterInfo (a plugin such as STACKIT's reads it, or fails)."""
    plugin = tmp_path / "get-token.py"
    plugin.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
        "assert info['apiVersion'] == 'client.authentication.k8s.io/v1', info\n"
        f"assert info['spec']['cluster']['server'] == {fake_kube.url!r}, info\n"
        "print(json.dumps({'apiVersion': info['apiVersion'], 'kind': 'ExecCredential',\n"
        f"                  'status': {{'token': {fake_kube.token!r}}}}}))\n"
    )
    plugin.chmod(0o755)
    user = {
        "exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin), "provideClusterInfo": True}
    }
    with KubeClient.from_kubeconfig(_kubeconfig(fake_kube.url, user)) as client:
        assert _names(client.list(k8s.Queue)) == _names(fake_kube.items(QUEUES))


def test_an_exec_plugin_of_a_removed_api_version_is_named(fake_kube):
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1alpha1", "command": "get-token"}}
    with pytest.raises(
        KubeError, match=r"exec plugin apiVersion 'client.authentication.k8s.io/v1alpha1' is not supported"
    ):
        KubeClient.from_kubeconfig(_kubeconfig(fake_kube.url, user))


def test_an_impersonating_user_is_refused_rather_than_read_as_itself(fake_kube):
    """kubectl sends Impersonate-User / -Group (client-go tools/clientcmd/client_config.go); kaistack does not, and
    would read, and report, as a different identity."""
    user = {"token": "t", "as": "viewer@corp", "as-groups": ["viewers"]}
    with pytest.raises(KubeError, match=r"kubeconfig user 'u' impersonates \(as, as-groups\)"):
        KubeClient.from_kubeconfig(_kubeconfig(fake_kube.url, user))


def test_a_cluster_without_a_ca_is_verified_against_ssl_cert_file(fake_kube_tls, pki: Pki, monkeypatch):
    """Go's system roots read SSL_CERT_FILE (crypto/x509 root_unix.go), so kubectl trusts a corporate bundle there;
    the client takes nothing else from the environment (proxies are chosen by kaistack.kube.proxy)."""
    user = {"client-certificate": str(pki.client_cert), "client-key": str(pki.client_key)}
    text = _kubeconfig(fake_kube_tls.url, user)
    with pytest.raises(KubeError, match="CERTIFICATE_VERIFY_FAILED"), KubeClient.from_kubeconfig(text) as client:
        client.list(k8s.Queue)
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.ca))
    with KubeClient.from_kubeconfig(text) as client:
        assert _names(client.list(k8s.Queue)) == _names(fake_kube_tls.items(QUEUES))


def test_an_exec_plugin_gets_the_clusters_exec_extension_as_config():
    """client-go's ExecCredential spec.cluster.config is the cluster's client.authentication.k8s.io/exec extension."""
    from kaistack.kube.kubeconfig_text import select_context

    cluster = {
        "server": "https://api.corp",
        "disable-compression": True,
        "extensions": [{"name": "client.authentication.k8s.io/exec", "extension": {"audience": "prod"}}],
    }
    exec_spec = {"apiVersion": "client.authentication.k8s.io/v1", "command": "get-token", "provideClusterInfo": True}
    config = json.loads(_kubeconfig("https://api.corp", {"exec": exec_spec}))
    config["clusters"][0]["cluster"] = cluster
    user = select_context(config, None, Path("/"))["users"][0]["user"]
    info = json.loads(next(e["value"] for e in user["exec"]["env"] if e["name"] == "KUBERNETES_EXEC_INFO"))
    assert info["spec"]["cluster"] == {
        "server": "https://api.corp",
        "disable-compression": True,
        "config": {"audience": "prod"},
    }
