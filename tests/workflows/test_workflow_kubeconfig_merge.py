"""$KUBECONFIG with several files, merged as kubectl merges them (client-go@kubernetes-1.35.0
tools/clientcmd/loader.go:180-271), against the fake API server on loopback."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from workflow_testlib import FakeKube

from kaistack.kube import resources as k8s
from kaistack.kube.client import KubeClient, KubeError
from kaistack.kube.kubeconfig import resolve_kubeconfig

QUEUES = "/apis/scheduling.run.ai/v2/queues"


def _write(path: Path, *, current: str = "", contexts: dict[str, str] | None = None, **users: dict[str, Any]) -> Path:
    """A kubeconfig whose contexts map a name to a server; each context's user is named after it."""
    contexts = contexts or {}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "current-context": current,
                "clusters": [{"name": n, "cluster": {"server": s}} for n, s in contexts.items()],
                "contexts": [{"name": n, "context": {"cluster": n, "user": n}} for n in contexts],
                "users": [{"name": n, "user": u} for n, u in users.items()],
            }
        )
    )
    return path


def _queues_through(env: str, context: str | None = None) -> list[str]:
    kubeconfig = resolve_kubeconfig("dev", None, environ={"KUBECONFIG": env})
    with KubeClient.from_kubeconfig(kubeconfig.text, context=context, base_dir=kubeconfig.base_dir) as client:
        return [q["metadata"]["name"] for q in client.list(k8s.Queue)]


def test_a_stub_that_only_selects_a_context_finds_it_in_the_next_file(fake_kube: FakeKube, tmp_path):
    """An existing cluster's stack exports such a stub (components/cluster_existing.py), meant for
    KUBECONFIG=<stub>:~/.kube/config."""
    stub = _write(tmp_path / "stub", current="lab")
    real = _write(
        tmp_path / "config", current="laptop", contexts={"lab": fake_kube.url}, lab={"token": fake_kube.token}
    )
    assert _queues_through(f"{stub}{os.pathsep}{real}") == [q["metadata"]["name"] for q in fake_kube.items(QUEUES)]


def test_the_first_file_to_name_a_context_wins_it(fake_kube: FakeKube, tmp_path):
    first = _write(tmp_path / "a", current="lab", contexts={"lab": fake_kube.url}, lab={"token": fake_kube.token})
    second = _write(tmp_path / "b", current="other", contexts={"lab": "http://second.invalid"}, lab={"token": "x"})
    assert _queues_through(f"{first}{os.pathsep}{second}")


def test_the_first_non_empty_current_context_wins(fake_kube: FakeKube, tmp_path):
    first = _write(tmp_path / "a", contexts={"lab": "http://first.invalid"}, lab={"token": "x"})
    second = _write(tmp_path / "b", current="ok", contexts={"ok": fake_kube.url}, ok={"token": fake_kube.token})
    third = _write(tmp_path / "c", current="lab")
    assert _queues_through(os.pathsep.join(map(str, (first, second, third))))


def test_each_files_relative_paths_resolve_against_its_own_directory(fake_kube: FakeKube, tmp_path):
    (tmp_path / "team" / "token").parent.mkdir(parents=True)
    (tmp_path / "team" / "token").write_text(f"{fake_kube.token}\n")
    stub = _write(tmp_path / "stub", current="lab")
    real = _write(tmp_path / "team" / "config", contexts={"lab": fake_kube.url}, lab={"tokenFile": "token"})
    assert _queues_through(f"{stub}{os.pathsep}{real}")


def test_a_symlinked_kubeconfigs_relative_paths_resolve_beside_the_link(fake_kube: FakeKube, tmp_path):
    """client-go cleans the path with filepath.Abs, which follows no link."""
    target = _write(
        tmp_path / "store" / "config", current="lab", contexts={"lab": fake_kube.url}, lab={"tokenFile": "t"}
    )
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "t").write_text(fake_kube.token or "")
    link = tmp_path / "home" / "config"
    link.symlink_to(target)
    assert _queues_through(str(link))


def test_a_file_that_is_not_a_kubeconfig_is_named(fake_kube: FakeKube, tmp_path):
    good = _write(tmp_path / "a", current="lab", contexts={"lab": fake_kube.url}, lab={"token": fake_kube.token})
    bad = tmp_path / "b"
    bad.write_text("[unclosed")
    with pytest.raises(KubeError, match=f"{bad}: kubeconfig is not valid YAML"):
        _queues_through(f"{good}{os.pathsep}{bad}")


# --- in a pod: the service account, as client-go's InClusterConfig --------------------------------------------

POD_ENV = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}


def _account(tmp_path: Path) -> Path:
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text("t")
    (account / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    return account


def test_in_a_pod_without_a_kubeconfig_the_service_account_is_used(tmp_path, monkeypatch):
    from kaistack.kube import kubeconfig as module

    account = _account(tmp_path)
    monkeypatch.setattr(module, "SERVICE_ACCOUNT", account)
    monkeypatch.setattr(module, "default_kubeconfig", lambda: None)
    found = resolve_kubeconfig(None, None, environ=POD_ENV)
    config = json.loads(found.text)
    assert config["clusters"][0]["cluster"] == {
        "server": "https://10.96.0.1:443",
        "certificate-authority": str(account / "ca.crt"),
    }
    assert config["users"][0]["user"] == {"tokenFile": str(account / "token")}
    assert found.origin == f"the pod's service account ({account})"


def test_a_kubeconfig_wins_over_the_pods_service_account(fake_kube: FakeKube, tmp_path, monkeypatch):
    from kaistack.kube import kubeconfig as module

    monkeypatch.setattr(module, "SERVICE_ACCOUNT", _account(tmp_path))
    real = _write(tmp_path / "config", current="lab", contexts={"lab": fake_kube.url}, lab={"token": fake_kube.token})
    assert resolve_kubeconfig(None, None, environ={**POD_ENV, "KUBECONFIG": str(real)}).origin == f"$KUBECONFIG {real}"


def test_an_ipv6_service_host_is_bracketed(tmp_path):
    from kaistack.kube.kubeconfig import in_cluster

    found = in_cluster({"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}, _account(tmp_path))
    assert found is not None
    assert json.loads(found.text)["clusters"][0]["cluster"]["server"] == "https://[fd00::1]:443"


def test_outside_a_pod_there_is_no_service_account(tmp_path):
    from kaistack.kube.kubeconfig import in_cluster

    assert in_cluster({}, _account(tmp_path)) is None


def test_a_stack_is_never_verified_against_the_pods_own_cluster(tmp_path, monkeypatch):
    """verify --stack prod in a CI pod without Pulumi: the pod's cluster is not prod's."""
    from kaistack.kube import kubeconfig as module

    monkeypatch.setattr(module, "SERVICE_ACCOUNT", _account(tmp_path))
    with pytest.raises(KubeError, match="install the Pulumi CLI"):
        resolve_kubeconfig("prod", None, environ=POD_ENV, which=lambda _: None)


def test_an_empty_file_in_kubeconfig_is_an_empty_config(fake_kube: FakeKube, tmp_path):
    """client-go reads a zero-byte file as an empty config; installers `touch ~/.kube/config`."""
    empty = tmp_path / "empty"
    empty.write_text("")
    real = _write(tmp_path / "config", current="lab", contexts={"lab": fake_kube.url}, lab={"token": fake_kube.token})
    assert _queues_through(f"{empty}{os.pathsep}{real}")
    assert _queues_through(f"{real}{os.pathsep}{empty}")


@pytest.mark.parametrize("where", ["home", "KUBECONFIG"])
def test_in_a_pod_an_empty_kubeconfig_falls_back_to_the_service_account(where, tmp_path, monkeypatch):
    """client-go's merged loader falls back to in-cluster when the kubeconfig is missing or empty."""
    from kaistack.kube import kubeconfig as module

    account = _account(tmp_path)
    empty = tmp_path / "config"
    empty.write_text("")
    monkeypatch.setattr(module, "SERVICE_ACCOUNT", account)
    monkeypatch.setattr(module, "default_kubeconfig", lambda: empty)
    environ = {**POD_ENV, **({"KUBECONFIG": str(empty)} if where == "KUBECONFIG" else {})}
    assert resolve_kubeconfig(None, None, environ=environ).origin == f"the pod's service account ({account})"
