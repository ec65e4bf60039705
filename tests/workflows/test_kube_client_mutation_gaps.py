"""The read-only client's credentials and connection, where mutation testing found behaviour no other test pinned:
which proxy kubectl would take (kaistack.kube.proxy), the tls-server-name transport (kaistack.kube.server_name), the
exec plugin's answer and transport (kaistack.kube.exec_plugin), and the kubeconfig's reading, merging and selection
(kaistack.kube.kubeconfig, kaistack.kube.kubeconfig_text).

Go's proxy rules are golang.org/x/net@v0.56.0 http/httpproxy/proxy.go (client-go's http.ProxyFromEnvironment).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from lightkube.config.models import NameValue, UserExec
from workflow_testlib import NAMED_SERVER, FakeKube, Pki, one_user_kubeconfig, plugin_runs

from kaistack.kube import kubeconfig as kubeconfig_module
from kaistack.kube import resources as k8s
from kaistack.kube.client import KubeAPIError, KubeClient, KubeError
from kaistack.kube.exec_plugin import Credential, ExecAuthTransport, ExecPlugin, load_client_certificate
from kaistack.kube.kubeconfig import in_cluster, resolve_kubeconfig
from kaistack.kube.kubeconfig_text import _MESSAGE_LIMIT, clip, parse_kubeconfig, proxy_url, select_context
from kaistack.kube.proxy import proxy_and_variable
from kaistack.kube.server_name import ServerNameTransport

PROXY = "http://proxy.corp:3128"

# --- which proxy: Go's http/httpproxy rules -----------------------------------------------------------------

# server, environment, whether the proxy is taken
PROXY_CASES = {
    # proxy.go:92 getEnvAny("HTTP_PROXY", "http_proxy"): the lower-case name counts for an http server too.
    "an http server takes lower-case http_proxy": ("http://api.corp", {"http_proxy": PROXY}, True),
    # proxy.go:101: an empty variable is passed over for the next name.
    "an empty HTTPS_PROXY gives way to https_proxy": (
        "https://api.corp",
        {"HTTPS_PROXY": "", "https_proxy": PROXY},
        True,
    ),
    # proxy.go:289-291 canonicalAddr: a URL without a port has its scheme's, which NO_PROXY ports are compared with.
    "NO_PROXY :443 exempts an https server named without a port": (
        "https://api.corp",
        {"HTTPS_PROXY": PROXY, "NO_PROXY": "api.corp:443"},
        False,
    ),
    "NO_PROXY :80 exempts an http server named without a port": (
        "http://api.corp",
        {"HTTP_PROXY": PROXY, "NO_PROXY": "api.corp:80"},
        False,
    ),
    "NO_PROXY :80 does not exempt an https server named without a port": (
        "https://api.corp",
        {"HTTPS_PROXY": PROXY, "NO_PROXY": "api.corp:80"},
        True,
    ),
    # proxy.go:261-268, 369: `.corp` and `*.corp` name subdomains (not corp itself); `corp` names both.
    "NO_PROXY .domain exempts its subdomains": ("https://api.corp", {"HTTPS_PROXY": PROXY, "NO_PROXY": ".corp"}, False),
    "NO_PROXY *.domain exempts its subdomains": (
        "https://api.corp",
        {"HTTPS_PROXY": PROXY, "NO_PROXY": "*.corp"},
        False,
    ),
    "NO_PROXY *.domain does not exempt the domain": (
        "https://corp",
        {"HTTPS_PROXY": PROXY, "NO_PROXY": "*.corp"},
        True,
    ),
    "NO_PROXY domain does not exempt a host merely ending in its letters": (
        "https://notcorp",
        {"HTTPS_PROXY": PROXY, "NO_PROXY": "corp"},
        True,
    ),
    # proxy.go:234-241, 351-353: [IPv6]:port entries.
    "NO_PROXY [IPv6]:port exempts that address and port": (
        "https://[fd00::1]:6443",
        {"HTTPS_PROXY": PROXY, "NO_PROXY": "[fd00::1]:6443"},
        False,
    ),
    "NO_PROXY [IPv6]:port does not exempt another port": (
        "https://[fd00::1]:6443",
        {"HTTPS_PROXY": PROXY, "NO_PROXY": "[fd00::1]:443"},
        True,
    ),
    "NO_PROXY IPv6:port without its [ is no entry": (
        "https://[::5]:6443",
        {"HTTPS_PROXY": PROXY, "NO_PROXY": "0::5]:6443"},
        True,
    ),
    "NO_PROXY IPv6 address exempts it on any port": (
        "https://[fd00::1]:6443",
        {"HTTPS_PROXY": PROXY, "NO_PROXY": "fd00::1"},
        False,
    ),
    "NO_PROXY 5-digit port": ("https://api.corp:10250", {"HTTPS_PROXY": PROXY, "NO_PROXY": "api.corp:10250"}, False),
    # proxy.go:370 compares the port's text: port 0 is no wildcard, nor is a longer spelling of the same number.
    "NO_PROXY port 0 is a port, not any port": (
        "https://api.corp",
        {"HTTPS_PROXY": PROXY, "NO_PROXY": "api.corp:0"},
        True,
    ),
    "NO_PROXY port with leading zeros is another port": (
        "https://api.corp:6443",
        {"HTTPS_PROXY": PROXY, "NO_PROXY": "api.corp:006443"},
        True,
    ),
    # proxy.go:228 net.ParseCIDR accepts host bits in a CIDR.
    "NO_PROXY CIDR with host bits": ("https://10.9.9.9", {"HTTPS_PROXY": PROXY, "NO_PROXY": "10.1.2.3/8"}, False),
    # proxy.go:216-218: an empty entry (a trailing comma) names nothing, not a host ending in a dot.
    "NO_PROXY trailing comma exempts nothing": (
        "https://api.corp.:6443",
        {"HTTPS_PROXY": PROXY, "NO_PROXY": "other.org,"},
        True,
    ),
    # proxy.go:184-185 net.IP.IsLoopback reads an IPv4-mapped address as IPv4: 10.x is no loopback.
    "IPv4-mapped address that is no loopback": ("https://[::ffff:10.1.2.3]:6443", {"HTTPS_PROXY": PROXY}, True),
    # proxy.go:174-204: a server URL without a host is no loopback and matches no NO_PROXY name.
    "a server without a host": ("https://:6443", {"HTTPS_PROXY": PROXY, "NO_PROXY": "corp"}, True),
}


@pytest.mark.parametrize("case", list(PROXY_CASES))
def test_the_environments_proxy_is_taken_as_go_takes_it(case: str) -> None:
    server, environ, proxied = PROXY_CASES[case]
    found = proxy_and_variable(server, environ)
    assert (found is not None and found[0] == PROXY) is proxied


def test_a_no_proxy_port_of_thousands_of_digits_matches_nothing() -> None:
    """int() refuses a string of more than 4300 digits; a hostile NO_PROXY is no crash, and no match."""
    environ = {"HTTPS_PROXY": PROXY, "NO_PROXY": "api.corp:" + "0" * 5000 + "443"}
    assert proxy_and_variable("https://api.corp", environ) == (PROXY, "HTTPS_PROXY")


# --- tls-server-name --------------------------------------------------------------------------------------------


def _one_cluster(**cluster: Any) -> str:
    return json.dumps(
        {
            "current-context": "ctx",
            "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9", **cluster}}],
            "contexts": [{"name": "ctx", "context": {"cluster": "c"}}],
        }
    )


@pytest.mark.parametrize(("value", "why"), [(0, "not int"), (False, "not bool"), ([], "not list")])
def test_a_tls_server_name_that_is_falsy_but_no_string_is_refused(value, why):
    """Only a missing or empty string is no name (kubectl's omitempty string): 0, false and [] are kubeconfig errors."""
    with pytest.raises(KubeError, match=rf"context 'ctx': the cluster's tls-server-name must be .*{why}"):
        KubeClient.from_kubeconfig(_one_cluster(**{"tls-server-name": value}))


class _Recording(httpx2.BaseTransport):
    def __init__(self) -> None:
        self.extensions: list[dict[str, Any]] = []
        self.closed = False

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        self.extensions.append(dict(request.extensions))
        return httpx2.Response(200)

    def close(self) -> None:
        self.closed = True


def test_the_server_name_rides_beside_the_requests_other_extensions():
    """httpx2 carries a request's timeouts in its extensions: the name is added to them, not put in their place."""
    inner = _Recording()
    timeout = {"connect": 1.0, "read": 1.0, "write": 1.0, "pool": 1.0}
    request = httpx2.Request("GET", "https://127.0.0.1:9/api", extensions={"timeout": timeout})
    ServerNameTransport(inner, NAMED_SERVER).handle_request(request)
    assert inner.extensions == [{"timeout": timeout, "sni_hostname": NAMED_SERVER}]


def test_closing_the_server_name_transport_closes_its_connections():
    inner = _Recording()
    ServerNameTransport(inner, NAMED_SERVER).close()
    assert inner.closed


# --- exec plugins ---------------------------------------------------------------------------------------------

V1 = "client.authentication.k8s.io/v1"


def _plugin(tmp_path: Path, answer: Any, *, exit_code: int = 0) -> Path:
    """A plugin printing `answer` as JSON and counting its runs in tmp_path/runs."""
    plugin = tmp_path / "get-credential.py"
    plugin.write_text(
        f"#!{sys.executable}\n"
        f"open({str(tmp_path / 'runs')!r}, 'a').write('run\\n')\n"
        f"print({json.dumps(json.dumps(answer))})\n"
        f"raise SystemExit({exit_code})\n"
    )
    plugin.chmod(0o755)
    return plugin


def test_the_plugins_key_is_never_readable_by_others_while_it_is_loaded(tmp_path):
    """ssl reads a certificate and key from files only: the key's file is the user's alone, and gone afterwards."""
    seen: dict[str, int] = {}
    names: list[Path] = []

    class Context:
        def load_cert_chain(self, cert: Path, key: Path) -> None:
            for path in (cert, key):
                seen[path.name] = stat.S_IMODE(path.stat().st_mode)
                names.append(path)

    plugin = ExecPlugin(UserExec(apiVersion=V1, command="get-credential"), "u")
    load_client_certificate(Context(), Credential(certificate="c", key="k"), plugin)  # type: ignore[arg-type]
    assert seen
    assert all(mode & 0o077 == 0 for mode in seen.values()), seen
    assert not any(path.exists() for path in names)


def _own_credentials(kind: str, fake_kube: FakeKube, pki: Pki, tmp_path: Path) -> dict[str, Any]:
    (tmp_path / "token").write_text(fake_kube.token or "")
    return {
        "token": {"token": fake_kube.token},
        "tokenFile": {"tokenFile": str(tmp_path / "token")},
        "username": {"username": "admin", "password": "s3cret"},
        "client-certificate": {"client-certificate": str(pki.client_cert), "client-key": str(pki.client_key)},
        "client-certificate-data": {
            "client-certificate-data": base64.b64encode(pki.client_cert.read_bytes()).decode(),
            "client-key-data": base64.b64encode(pki.client_key.read_bytes()).decode(),
        },
    }[kind]


@pytest.mark.parametrize("kind", ["token", "tokenFile", "username", "client-certificate", "client-certificate-data"])
def test_a_user_with_credentials_of_its_own_runs_no_plugin(kind, fake_kube, pki, tmp_path):
    """kubectl runs no plugin for a user with a token, a token file, basic auth or a client certificate
    (client-go@kubernetes-1.35.0 plugin/pkg/client/auth/exec/exec.go:320-322, transport/config.go:105-118). This
    plugin would fail; the fake API takes the token only, and answers the others 401 itself."""
    user = {**_own_credentials(kind, fake_kube, pki, tmp_path), "exec": {"apiVersion": V1, "command": "x"}}
    user["exec"]["command"] = str(_plugin(tmp_path, {}, exit_code=1))
    with KubeClient.from_kubeconfig(one_user_kubeconfig(fake_kube.url, user)) as client:
        if kind.startswith("token"):
            assert client.list(k8s.Queue)
        else:
            with pytest.raises(KubeAPIError, match="401"):
                client.list(k8s.Queue)
    assert plugin_runs(tmp_path) == 0


# --- the kubeconfig's text: selecting a context, merging files -------------------------------------------------


def test_a_proxy_url_that_is_no_string_is_refused_with_its_key():
    with pytest.raises(KubeError, match=r"context 'ctx': proxy-url must be an http://, https:// or socks5:// URL"):
        KubeClient.from_kubeconfig(_one_cluster(**{"proxy-url": 5}))


def _exec_info(cluster: dict[str, Any]) -> dict[str, Any]:
    """The KUBERNETES_EXEC_INFO a provideClusterInfo plugin of a user of `cluster` is given."""
    exec_spec = {"apiVersion": V1, "command": "get-token", "provideClusterInfo": True}
    config = json.loads(one_user_kubeconfig("https://api.corp", {"exec": exec_spec}))
    config["clusters"][0]["cluster"] = {"server": "https://api.corp", **cluster}
    user = select_context(config, None, Path("/"))["users"][0]["user"]
    return json.loads(next(e["value"] for e in user["exec"]["env"] if e["name"] == "KUBERNETES_EXEC_INFO"))


def test_the_plugin_gets_the_clusters_ca_file_as_data(tmp_path):
    """ExecCredential's spec.cluster carries the CA as certificate-authority-data (client.authentication.k8s.io
    Cluster), whether the kubeconfig names a file or holds the data."""
    ca = tmp_path / "ca.crt"
    ca.write_bytes(b"-----BEGIN CERTIFICATE-----\nfile\n")
    info = _exec_info({"certificate-authority": str(ca)})
    assert base64.b64decode(info["spec"]["cluster"]["certificate-authority-data"]) == ca.read_bytes()


def test_the_clusters_ca_data_wins_over_its_file_for_the_plugin(tmp_path):
    """client-go@kubernetes-1.35.0 tools/clientcmd/validation.go:249: "certificate-authority-data will override"."""
    ca = tmp_path / "ca.crt"
    ca.write_bytes(b"-----BEGIN CERTIFICATE-----\nfile\n")
    data = base64.b64encode(b"-----BEGIN CERTIFICATE-----\ndata\n").decode()
    info = _exec_info({"certificate-authority": str(ca), "certificate-authority-data": data})
    assert info["spec"]["cluster"]["certificate-authority-data"] == data


def test_a_cluster_extension_that_is_no_mapping_is_passed_over():
    extensions = ["junk", {"name": "client.authentication.k8s.io/exec", "extension": {"audience": "prod"}}]
    assert _exec_info({"extensions": extensions})["spec"]["cluster"]["config"] == {"audience": "prod"}


def test_only_the_exec_extension_is_the_plugins_config():
    """client-go@kubernetes-1.35.0 tools/clientcmd/client_config.go:35-36: the extension named
    client.authentication.k8s.io/exec, and no other."""
    extensions = [{"name": "example.com/other", "extension": {"audience": "other"}}]
    assert "config" not in _exec_info({"extensions": extensions})["spec"]["cluster"]


def _contexts(clusters: list[Any], cluster: str) -> dict[str, Any]:
    return {
        "current-context": "ctx",
        "clusters": clusters,
        "contexts": [{"name": "ctx", "context": {"cluster": cluster}}],
    }


def test_the_context_picks_its_own_cluster_among_several():
    clusters = [{"name": n, "cluster": {"server": f"https://{n}.corp"}} for n in ("a", "b")]
    selected = select_context(_contexts(clusters, "b"), None, Path("/"))
    assert selected["clusters"] == [{"name": "b", "cluster": {"server": "https://b.corp"}}]


def test_a_malformed_entry_for_another_cluster_does_not_stop_this_one():
    clusters = ["junk", 5, {"name": "b", "cluster": {"server": "https://b.corp"}}]
    assert select_context(_contexts(clusters, "b"), None, Path("/"))["clusters"][0]["name"] == "b"


def test_a_missing_cluster_is_named_with_the_clusters_there_are():
    clusters = [{"name": n, "cluster": {"server": f"https://{n}.corp"}} for n in ("a", "b")]
    with pytest.raises(KubeError, match=r"^kubeconfig has no cluster named 'c'; clusters: a, b$"):
        select_context(_contexts(clusters, "c"), None, Path("/"))


def test_a_kubeconfig_without_a_clusters_section_has_none():
    config = _contexts([], "c")
    del config["clusters"]
    with pytest.raises(KubeError, match=r"^kubeconfig has no cluster named 'c'; clusters: none$"):
        select_context(config, None, Path("/"))


def test_a_merged_file_may_leave_out_sections(fake_kube: FakeKube, tmp_path):
    """A stub that only selects a context (`current-context: lab`, nothing else) merges as an empty one: client-go's
    Config sections are optional lists (client-go@kubernetes-1.35.0 tools/clientcmd/api/v1/types.go)."""
    stub = tmp_path / "stub"
    stub.write_text("current-context: lab\n")
    real = tmp_path / "config"
    real.write_text(
        json.dumps(
            {
                "clusters": [{"name": "lab", "cluster": {"server": fake_kube.url}}],
                "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": "lab"}}],
                "users": [{"name": "lab", "user": {"token": fake_kube.token}}],
            }
        )
    )
    kubeconfig = resolve_kubeconfig("dev", None, environ={"KUBECONFIG": f"{stub}{os.pathsep}{real}"})
    with KubeClient.from_kubeconfig(kubeconfig.text, base_dir=kubeconfig.base_dir) as client:
        assert client.list(k8s.Queue)


def test_a_message_at_the_limit_is_kept_whole():
    at_limit = "x" * _MESSAGE_LIMIT
    assert clip(ValueError(at_limit)) == at_limit
    assert clip(ValueError(at_limit + "y")) == at_limit[:-3] + "..."


def _merged_client(fake_kube: FakeKube, tmp_path: Path, user: dict[str, Any], **extra: Any) -> KubeClient:
    """A client through KUBECONFIG=<stub in tmp_path/a>:<tmp_path/b/config>, the second file holding the cluster,
    context and `user`, and `extra` sections' entries before its own."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir(exist_ok=True)
    stub = tmp_path / "a" / "stub"
    stub.write_text(json.dumps({"current-context": "lab"}))
    sections = {
        "clusters": [{"name": "lab", "cluster": {"server": fake_kube.url}}],
        "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": "lab"}}],
        "users": [{"name": "lab", "user": user}],
    }
    real = tmp_path / "b" / "config"
    real.write_text(json.dumps({k: [*extra.get(k, []), *v] for k, v in sections.items()}))
    kubeconfig = resolve_kubeconfig("dev", None, environ={"KUBECONFIG": f"{stub}{os.pathsep}{real}"})
    return KubeClient.from_kubeconfig(kubeconfig.text, base_dir=kubeconfig.base_dir)


def test_a_merged_files_exec_command_resolves_against_its_own_directory(fake_kube: FakeKube, tmp_path):
    """kubectl resolves a command with a path separator against the kubeconfig that names it (client-go@kubernetes-
    1.35.0 tools/clientcmd/loader.go ResolveLocalPaths), not against the first file's directory."""
    (tmp_path / "b").mkdir()
    answer = {"apiVersion": V1, "kind": "ExecCredential", "status": {"token": fake_kube.token}}
    _plugin(tmp_path / "b", answer)
    user = {"exec": {"apiVersion": V1, "command": "./get-credential.py"}}
    with _merged_client(fake_kube, tmp_path, user) as client:
        assert client.list(k8s.Queue)
    assert plugin_runs(tmp_path / "b") == 1


def test_a_merged_files_empty_file_keys_stay_unset(fake_kube: FakeKube, tmp_path):
    """An empty client-certificate or client-key is no file (client-go@kubernetes-1.35.0 transport/config.go:115-117
    reads an empty one as none): it is not made a path to the kubeconfig's directory."""
    user = {"token": fake_kube.token, "client-certificate": "", "client-key": ""}
    with _merged_client(fake_kube, tmp_path, user) as client:
        assert client.list(k8s.Queue)


def test_an_empty_token_file_is_no_token_file(fake_kube: FakeKube, tmp_path):
    """client-go reads an empty tokenFile as none set (client-go@kubernetes-1.35.0 transport/config.go:110-112);
    the client read the working directory as the token file ("cannot read .: Is a directory")."""
    with _merged_client(fake_kube, tmp_path, {"token": fake_kube.token, "tokenFile": ""}) as client:
        assert client.list(k8s.Queue)


@pytest.mark.parametrize("env", [["junk"], [{"name": "A", "value": "1"}, 5], "A=1"])
def test_an_exec_env_that_is_no_list_of_entries_is_refused(env):
    """kubectl cannot decode it (ExecEnvVar is a {name, value} object); it was passed over in silence."""
    config = _contexts([{"name": "c", "cluster": {"server": "https://c.corp"}}], "c")
    config["contexts"][0]["context"]["user"] = "u"
    config["users"] = [{"name": "u", "user": {"exec": {"apiVersion": V1, "command": "get-token", "env": env}}}]
    with pytest.raises(KubeError, match=r"^kubeconfig exec env must be a list of \{name, value\} entries$"):
        select_context(config, None, Path("/"))


def test_a_merged_files_malformed_entries_are_passed_over(fake_kube: FakeKube, tmp_path):
    """As for one kubeconfig: an entry that is no mapping does not stop the context that is well formed."""
    other = {"name": "other", "cluster": {"server": "https://other.invalid"}}
    junk = {"clusters": ["junk", {"name": "nameless-block"}, other], "contexts": [5], "users": [None]}
    with _merged_client(fake_kube, tmp_path, {"token": fake_kube.token}, **junk) as client:
        assert client.list(k8s.Queue)


# --- exec plugins: what they answer, how they run ----------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ([], "printed no ExecCredential with a status"),
        ({"apiVersion": V1, "kind": "ExecCredential", "status": "token"}, "printed no ExecCredential with a status"),
        (
            {
                "apiVersion": V1,
                "kind": "ExecCredential",
                "status": {"token": "t", "clientCertificateData": 1, "clientKeyData": 1},
            },
            "answered a status whose credentials are not strings",
        ),
        (
            {"apiVersion": V1, "kind": "ExecCredential", "status": {"token": "t", "expirationTimestamp": ""}},
            "not an RFC 3339 time",
        ),
    ],
)
def test_a_malformed_answer_is_a_kubeconfig_users_problem(answer, why, tmp_path):
    with pytest.raises(KubeError, match=rf"^kubeconfig user 'u': exec plugin .*{why}"):
        ExecPlugin(UserExec(apiVersion=V1, command=str(_plugin(tmp_path, answer))), "u").run()


def _echo_plugin(tmp_path: Path, token_expression: str) -> Path:
    """A plugin answering with the token `token_expression` (Python, with os imported) evaluates to."""
    plugin = tmp_path / "echo.py"
    plugin.write_text(
        f"#!{sys.executable}\n"
        "import json, os\n"
        f"token = {token_expression}\n"
        f"print(json.dumps({{'apiVersion': {V1!r}, 'kind': 'ExecCredential', 'status': {{'token': token}}}}))\n"
    )
    plugin.chmod(0o755)
    return plugin


def test_the_plugin_inherits_the_environment(tmp_path, monkeypatch):
    """client-go@kubernetes-1.35.0 plugin/pkg/client/auth/exec/exec.go:448: the process's environment, then the
    kubeconfig's env (`aws eks get-token` reads AWS_PROFILE from the first, a cluster name from the second)."""
    monkeypatch.setenv("KAISTACK_TEST_PROFILE", "prod")
    plugin = _echo_plugin(tmp_path, "os.environ.get('KAISTACK_TEST_PROFILE', '') + os.environ.get('EXTRA', '')")
    env = [NameValue(name="EXTRA", value="-eu")]
    assert ExecPlugin(UserExec(apiVersion=V1, command=str(plugin), env=env), "u").run().token == "prod-eu"


def test_the_plugin_reads_no_terminal(tmp_path):
    """A plugin runs non-interactive (KUBERNETES_EXEC_INFO says so): client-go gives it no stdin (exec.go:461-463),
    so one that prompts reads end-of-file rather than waiting on the user's terminal or kaistack's own input."""
    plugin = _echo_plugin(tmp_path, "'devnull' if os.path.samestat(os.fstat(0), os.stat(os.devnull)) else 'stdin'")
    read, write = os.pipe()
    saved = os.dup(0)
    try:
        os.dup2(read, 0)
        credential = ExecPlugin(UserExec(apiVersion=V1, command=str(plugin)), "u").run()
    finally:
        os.dup2(saved, 0)
        for fd in (read, write, saved):
            os.close(fd)
    assert credential.token == "devnull"


def test_a_missing_plugin_without_an_install_hint_is_named_without_one():
    with pytest.raises(KubeError, match=r"cannot run kaistack-no-such-plugin: [^()]*$"):
        ExecPlugin(UserExec(apiVersion=V1, command="kaistack-no-such-plugin"), "u").run()


def test_closing_the_exec_transport_closes_its_connections():
    closed: list[str] = []

    class Carrier(httpx2.MockTransport):
        def close(self) -> None:
            closed.append("carrier")

    class Plugin(ExecPlugin):
        def run(self) -> Credential:
            return Credential(token="t")

    plugin = Plugin(UserExec(apiVersion=V1, command="x"), "u")
    transport = ExecAuthTransport(plugin, lambda _credential: Carrier(lambda _request: httpx2.Response(200)))
    transport.close()  # nothing sent yet: nothing to close
    transport.handle_request(httpx2.Request("GET", "https://api/x"))
    transport.close()
    assert closed == ["carrier"]


# --- which kubeconfig: service account, default file, pulumi --------------------------------------------------

POD_ENV = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}


def _account(tmp_path: Path, *, ca: bool = True) -> Path:
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text("t")
    if ca:
        (account / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    return account


def test_the_service_accounts_kubeconfig_selects_its_cluster_and_user(tmp_path):
    account = _account(tmp_path)
    found = in_cluster(POD_ENV, account)
    assert found is not None
    selected = select_context(parse_kubeconfig(found.text), None, found.base_dir)
    assert selected["clusters"][0]["cluster"]["server"] == "https://10.96.0.1:443"
    assert selected["users"][0]["user"] == {"tokenFile": str(account / "token")}


def test_a_service_account_without_a_ca_names_none(tmp_path):
    """client-go@kubernetes-1.35.0 rest/config.go:543-566 sets the CA file only when it can be read."""
    found = in_cluster(POD_ENV, _account(tmp_path, ca=False))
    assert found is not None
    assert "certificate-authority" not in json.loads(found.text)["clusters"][0]["cluster"]


@pytest.mark.parametrize("missing", ["KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"])
def test_without_the_service_host_or_port_there_is_no_service_account(missing, tmp_path):
    """rest/config.go:545-547: both variables, or ErrNotInCluster."""
    environ = {k: v for k, v in POD_ENV.items() if k != missing}
    assert in_cluster(environ, _account(tmp_path)) is None


def test_without_a_mounted_token_there_is_no_service_account(tmp_path):
    account = _account(tmp_path)
    (account / "token").unlink()
    assert in_cluster(POD_ENV, account) is None


def _in_a_pod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, default: Path | None = None) -> None:
    monkeypatch.setattr(kubeconfig_module, "SERVICE_ACCOUNT", _account(tmp_path))
    monkeypatch.setattr(kubeconfig_module, "default_kubeconfig", lambda: default)


@pytest.mark.parametrize(
    "config",
    [
        {"current-context": "lab"},
        {"contexts": [{"name": "lab", "context": {"cluster": "lab"}}]},
    ],
)
def test_in_a_pod_a_kubeconfig_naming_a_context_wins(config, tmp_path, monkeypatch):
    """Only a kubeconfig that is missing or empty falls back to the pod's service account (client-go@kubernetes-
    1.35.0 tools/clientcmd/merged_client_builder.go:96-127): a current-context, or contexts, is not empty."""
    _in_a_pod(tmp_path, monkeypatch)
    file = tmp_path / "config"
    file.write_text(json.dumps(config))
    assert resolve_kubeconfig(None, None, environ={**POD_ENV, "KUBECONFIG": str(file)}).origin == f"$KUBECONFIG {file}"


def test_in_a_pod_the_default_kubeconfig_naming_a_context_wins(tmp_path, monkeypatch):
    file = tmp_path / "config"
    file.write_text(json.dumps({"current-context": "lab"}))
    _in_a_pod(tmp_path, monkeypatch, default=file)
    assert resolve_kubeconfig(None, None, environ=POD_ENV).origin == str(file)


def test_a_kubeconfig_naming_no_context_outside_a_pod_is_returned_for_its_own_error(tmp_path):
    """Rather than "no kubeconfig": the file is there, and select_context says what it lacks."""
    file = tmp_path / "config"
    file.write_text(json.dumps({"users": []}))
    found = resolve_kubeconfig(None, None, environ={"KUBECONFIG": str(file)})
    assert found.origin == f"$KUBECONFIG {file}"
    with pytest.raises(KubeError, match="no current-context"):
        KubeClient.from_kubeconfig(found.text)


def test_the_environment_given_is_the_whole_environment(tmp_path, monkeypatch):
    """An explicit (empty) environ is not replaced by the process's."""
    monkeypatch.setenv("KUBECONFIG", "/nonexistent")
    with pytest.raises(KubeError, match=r"^no kubeconfig: pass --kubeconfig FILE"):
        resolve_kubeconfig(None, None, environ={}, which=lambda _: None)


def _pulumi(tmp_path: Path, script: str) -> Callable[[str], str | None]:
    """A `which` that finds a fake Pulumi CLI running `script`, and nothing else."""
    pulumi = tmp_path / "bin" / "pulumi"
    pulumi.parent.mkdir()
    pulumi.write_text("#!/bin/sh\n" + script)
    pulumi.chmod(0o755)
    return lambda name: str(pulumi) if name == "pulumi" else None


def test_pulumis_kubeconfig_is_read_in_the_project_and_resolves_against_it(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    which = _pulumi(tmp_path, 'echo "# $(pwd)"\n')
    found = resolve_kubeconfig("dev", None, project, environ={}, which=which)
    assert found.text.strip() == f"# {project}"
    assert found.base_dir == project


@pytest.mark.parametrize(
    ("script", "why"),
    [
        ('echo "apiVersion: v1"\necho "error: no stack named dev" >&2\nexit 1\n', "error: no stack named dev"),
        ("exit 0\n", "$"),
    ],
)
def test_a_pulumi_that_fails_or_prints_nothing_is_named(script, why, tmp_path):
    with pytest.raises(KubeError, match=rf"^`pulumi stack output kubeconfig --stack dev` failed: {why}"):
        resolve_kubeconfig("dev", None, tmp_path, environ={}, which=_pulumi(tmp_path, script))


def test_a_pulumi_that_cannot_run_is_named(tmp_path):
    with pytest.raises(KubeError, match=r"^`pulumi stack output kubeconfig` failed: .*Permission denied"):
        resolve_kubeconfig("dev", None, tmp_path, environ={}, which=lambda _: str(tmp_path))


# --- the kubeconfig's text: more that kubectl refuses or ignores -------------------------------------------------


@pytest.mark.parametrize("key", ["as-uid", "as-user-extra"])
def test_every_impersonation_key_is_refused(key):
    """client-go@kubernetes-1.35.0 tools/clientcmd/api/v1/types.go AuthInfo: as, as-uid, as-groups, as-user-extra."""
    config = json.loads(one_user_kubeconfig("https://api.corp", {"token": "t", key: "x"}))
    with pytest.raises(KubeError, match=rf"kubeconfig user 'u' impersonates \({key}\)"):
        select_context(config, None, Path("/"))


def test_an_empty_proxy_url_is_none():
    assert proxy_url({"proxy-url": ""}, "ctx") is None


def test_an_https_proxy_url_is_taken():
    """client-go@kubernetes-1.35.0 tools/clientcmd/validation.go: http, https and socks5 proxies."""
    assert proxy_url({"proxy-url": "https://proxy.corp:3129"}, "ctx") == "https://proxy.corp:3129"


def test_a_kubeconfig_that_is_no_mapping_is_refused():
    with pytest.raises(KubeError, match=r"^kubeconfig is not a mapping"):
        parse_kubeconfig("- a\n- b\n")


def test_a_cluster_entry_without_its_cluster_mapping_is_named():
    config = _contexts([{"name": "c", "cluster": "https://api.corp"}], "c")
    with pytest.raises(KubeError, match=r"^kubeconfig clusters entry 'c' has no 'cluster' mapping$"):
        select_context(config, None, Path("/"))


def test_the_plugin_is_told_it_runs_non_interactive_as_an_exec_credential():
    """client-go@kubernetes-1.35.0 plugin/pkg/client/auth/exec/exec.go:433-454: an ExecCredential of the configured
    version whose spec says interactive: false (kaistack never prompts)."""
    info = _exec_info({})
    assert (info["apiVersion"], info["kind"], info["spec"]["interactive"]) == (V1, "ExecCredential", False)


def test_the_plugin_gets_the_clusters_connection_settings():
    settings = {"tls-server-name": NAMED_SERVER, "insecure-skip-tls-verify": True, "proxy-url": PROXY}
    assert _exec_info(settings)["spec"]["cluster"] == {"server": "https://api.corp", **settings}


def test_the_plugin_gets_no_empty_or_false_cluster_settings():
    """ExecCredential's Cluster fields are omitempty: a false or empty one is left out, as is a CA the cluster lacks."""
    settings = {"tls-server-name": "", "insecure-skip-tls-verify": False, "proxy-url": "", "disable-compression": False}
    assert _exec_info(settings)["spec"]["cluster"] == {"server": "https://api.corp"}


def test_a_plugin_without_provide_cluster_info_gets_no_cluster():
    exec_spec = {"apiVersion": V1, "command": "get-token", "provideClusterInfo": False}
    config = json.loads(one_user_kubeconfig("https://api.corp", {"exec": exec_spec}))
    user = select_context(config, None, Path("/"))["users"][0]["user"]
    info = json.loads(next(e["value"] for e in user["exec"]["env"] if e["name"] == "KUBERNETES_EXEC_INFO"))
    assert "cluster" not in info["spec"]


def test_a_merged_files_section_that_is_no_list_is_named_with_its_file(tmp_path):
    stub = tmp_path / "stub"
    stub.write_text(json.dumps({"current-context": "lab", "contexts": 5}))
    (tmp_path / "other").write_text(json.dumps({"current-context": "lab"}))
    with pytest.raises(KubeError, match=rf"^{stub}: kubeconfig contexts is not a list$"):
        resolve_kubeconfig("dev", None, environ={"KUBECONFIG": f"{tmp_path / 'other'}{os.pathsep}{stub}"})


def test_a_merged_files_relative_ca_resolves_against_its_own_directory(fake_kube_tls, pki: Pki, tmp_path):
    (tmp_path / "b").mkdir()
    shutil.copy(pki.ca, tmp_path / "b" / "ca.crt")
    (tmp_path / "a").mkdir()
    stub = tmp_path / "a" / "stub"
    stub.write_text(json.dumps({"current-context": "lab"}))
    real = tmp_path / "b" / "config"
    user = {"client-certificate": str(pki.client_cert), "client-key": str(pki.client_key)}
    real.write_text(
        json.dumps(
            {
                "clusters": [
                    {"name": "lab", "cluster": {"server": fake_kube_tls.url, "certificate-authority": "ca.crt"}}
                ],
                "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": "lab"}}],
                "users": [{"name": "lab", "user": user}],
            }
        )
    )
    kubeconfig = resolve_kubeconfig("dev", None, environ={"KUBECONFIG": f"{stub}{os.pathsep}{real}"})
    with KubeClient.from_kubeconfig(kubeconfig.text, base_dir=kubeconfig.base_dir) as client:
        assert client.list(k8s.Queue)


def test_an_empty_current_context_names_none():
    """kubectl's empty current-context is none (a merged stub's `current-context: ""`)."""
    with pytest.raises(KubeError, match=r"^kubeconfig has no current-context"):
        select_context({"current-context": "", "contexts": []}, None, Path("/"))
