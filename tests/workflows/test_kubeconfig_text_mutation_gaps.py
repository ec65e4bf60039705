"""The kubeconfig's text (kaistack.kube.kubeconfig_text), where a mutation run of kubeconfig_text.py found behaviour
no other test pinned: the bounds on a message and on a path it quotes; $KUBECONFIG's files merged (an empty one, an
invalid one, the first to name an entry winning it); the cluster a refusal names, the clusters it lists and the order
impersonation keys are named in; the exec plugin's own environment (and one that is a number) and its CA that cannot
be read; socks5 proxies.

Each test is one behaviour that tests/workflows/test_kube_client_mutation_gaps.py and
tests/workflows/test_workflow_kube_client.py check only in part or not at all.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, NoReturn

import pytest
from workflow_testlib import one_user_kubeconfig

from kaistack.kube.client import KubeError
from kaistack.kube.kubeconfig_text import clip, expand_home, merge_kubeconfigs, proxy_url, select_context

V1 = "client.authentication.k8s.io/v1"


def _plugin_kubeconfig(**cluster: Any) -> dict[str, Any]:
    """A kubeconfig whose user `u` runs a provideClusterInfo exec plugin against cluster `c` (`cluster` settings)."""
    exec_spec = {"apiVersion": V1, "command": "get-token", "provideClusterInfo": True}
    config: dict[str, Any] = json.loads(one_user_kubeconfig("https://api.corp", {"exec": exec_spec}, **cluster))
    return config


def test_a_message_is_bounded_at_300_characters() -> None:
    """An exec plugin can print a lot on stderr: 300 characters are kept whole, one more is clipped to 300."""
    assert clip(ValueError("x" * 300)) == "x" * 300
    clipped = clip(ValueError("x" * 301))
    assert (len(clipped), clipped[-3:]) == (300, "...")


def test_an_unreadable_ca_for_the_plugin_is_named_not_left_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A CA file that exists but cannot be read is the kubeconfig's problem: passed over, the plugin would be told of
    a cluster without its CA and kaistack would not say why it fails."""
    ca = tmp_path / "ca.crt"
    ca.write_bytes(b"-----BEGIN CERTIFICATE-----\nfile\n")

    def unreadable(self: Path) -> NoReturn:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", unreadable)
    config = _plugin_kubeconfig(**{"certificate-authority": str(ca)})
    with pytest.raises(KubeError, match=rf"^cannot read certificate-authority {ca}: Permission denied$"):
        select_context(config, None, Path("/"))


def test_an_empty_file_among_several_merges_as_an_empty_config(tmp_path: Path) -> None:
    """client-go reads an empty file in $KUBECONFIG as an empty config (loader.go LoadFromFile), not as a kubeconfig
    that is no mapping: a blank stub must not stop the next file from being read."""
    real = json.loads(one_user_kubeconfig("https://api.corp", {"token": "t"}))
    merged = json.loads(merge_kubeconfigs([(tmp_path / "empty", " \n"), (tmp_path / "config", json.dumps(real))]))
    assert (merged["current-context"], [c["name"] for c in merged["clusters"]]) == ("ctx", ["c"])


def test_impersonation_keys_are_named_in_sorted_order() -> None:
    """The refusal names the keys sorted (as-groups before as-uid), whatever order kaistack checks them in, so the
    message is the same for the same kubeconfig."""
    config = json.loads(one_user_kubeconfig("https://api.corp", {"token": "t", "as-uid": "1", "as-groups": ["g"]}))
    with pytest.raises(KubeError, match=r"^kubeconfig user 'u' impersonates \(as-groups, as-uid\), "):
        select_context(config, None, Path("/"))


def test_the_plugins_own_env_is_kept_and_its_exec_info_replaced() -> None:
    """client-go passes the kubeconfig's exec env to the plugin and sets KUBERNETES_EXEC_INFO itself: the user's
    other variables stay, in order, and a KUBERNETES_EXEC_INFO of the user's own is replaced, not passed on."""
    config = _plugin_kubeconfig()
    env = [{"name": "AWS_PROFILE", "value": "lab"}, {"name": "KUBERNETES_EXEC_INFO", "value": "forged"}]
    config["users"][0]["user"]["exec"]["env"] = env
    given = select_context(config, None, Path("/"))["users"][0]["user"]["exec"]["env"]
    assert [e["name"] for e in given] == ["AWS_PROFILE", "KUBERNETES_EXEC_INFO"]
    assert given[0]["value"] == "lab"
    assert json.loads(given[1]["value"])["kind"] == "ExecCredential"


def test_an_exec_env_that_is_a_number_is_refused_not_a_crash() -> None:
    """`env: 5` cannot be iterated: it is the kubeconfig's problem, named as such, not a TypeError from kaistack."""
    config = _plugin_kubeconfig()
    config["users"][0]["user"]["exec"]["env"] = 5
    with pytest.raises(KubeError, match=r"^kubeconfig exec env must be a list of \{name, value\} entries$"):
        select_context(config, None, Path("/"))


def test_a_socks5_proxy_url_is_taken() -> None:
    """client-go@kubernetes-1.35.0 tools/clientcmd/validation.go allows socks5 proxies as well as http and https."""
    assert proxy_url({"proxy-url": "socks5://proxy.corp:1080"}, "ctx") == "socks5://proxy.corp:1080"


def test_the_first_file_to_name_a_cluster_wins_it_alone(tmp_path: Path) -> None:
    """kubectl's merge keeps the first file's entry of a name and drops the later ones (loader.go:180-271): a second
    `c` is not carried along, where it would be listed twice in a message naming the clusters there are."""
    first = one_user_kubeconfig("https://first.corp", {"token": "t"})
    second = one_user_kubeconfig("https://second.corp", {"token": "t"})
    merged = json.loads(merge_kubeconfigs([(tmp_path / "a", first), (tmp_path / "b", second)]))
    assert [(c["name"], c["cluster"]["server"]) for c in merged["clusters"]] == [("c", "https://first.corp")]
    assert (len(merged["users"]), len(merged["contexts"])) == (1, 1)


def test_an_invalid_file_among_several_is_named_with_its_path(tmp_path: Path) -> None:
    """A file of $KUBECONFIG that is not YAML stops the merge, named by its path: passed over, kaistack would read a
    cluster other than the one the user meant, with no word of why."""
    good = one_user_kubeconfig("https://api.corp", {"token": "t"})
    bad = tmp_path / "bad"
    with pytest.raises(KubeError, match=rf"^{bad}: kubeconfig is not valid YAML at line \d+$"):
        merge_kubeconfigs([(tmp_path / "good", good), (bad, "clusters: [\n")])


def test_a_server_without_a_scheme_names_its_cluster() -> None:
    """The refusal names the context's cluster, so the user knows which entry of the kubeconfig to fix."""
    config = json.loads(one_user_kubeconfig("api.corp:6443", {"token": "t"}))
    with pytest.raises(KubeError, match=r"^cluster 'c' has no https:// server in the kubeconfig$"):
        select_context(config, None, Path("/"))


def test_a_path_of_no_users_home_is_quoted_to_80_characters() -> None:
    """The path is the kubeconfig's own text: the message quotes its first 80 characters and no more."""
    path = "~no-such-user-kaistack/" + "a" * 100
    with pytest.raises(KubeError, match=rf"^'{re.escape(path[:80])}': cannot expand its ~ \(no such user's home "):
        expand_home(path)


def test_a_missing_cluster_lists_only_the_entries_that_are_mappings() -> None:
    """A malformed entry among the clusters is left out of the names listed, not a crash while listing them."""
    config = json.loads(one_user_kubeconfig("https://api.corp", {"token": "t"}))
    config["clusters"] = ["junk", {"name": "a", "cluster": {"server": "https://a.corp"}}]
    with pytest.raises(KubeError, match=r"^kubeconfig has no cluster named 'c'; clusters: a$"):
        select_context(config, None, Path("/"))


def test_a_context_naming_no_cluster_is_refused_not_matched_to_a_nameless_cluster() -> None:
    """`context: {}` beside a cluster entry without a name: None matched None, then a KeyError (exit 70)."""
    config = {
        "current-context": "ctx",
        "contexts": [{"name": "ctx", "context": {}}],
        "clusters": [{"cluster": {"server": "https://x"}}],
    }
    with pytest.raises(KubeError, match="kubeconfig context 'ctx' names no cluster"):
        select_context(config, None, Path("/"))


def test_an_entry_whose_name_is_a_list_is_passed_over_when_files_merge(tmp_path: Path) -> None:
    """A name no dict can key (a list) crashed the merge with TypeError; it names nothing a context selects."""
    bad = {
        "clusters": [
            {"name": [1], "cluster": {"server": "https://x"}},
            {"name": "c", "cluster": {"server": "https://y"}},
        ]
    }
    merged = merge_kubeconfigs([(tmp_path / "a", json.dumps(bad))])
    assert [c["name"] for c in json.loads(merged)["clusters"]] == ["c"]
