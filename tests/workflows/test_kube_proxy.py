"""Which proxy carries the requests to an API server: kubectl's choice (kaistack.kube.proxy), table by table.

Go's rules (golang.org/x/net http/httpproxy/proxy.go, which client-go's http.ProxyFromEnvironment uses): the
scheme's own variable, upper case first, never ALL_PROXY; never localhost or loopback; NO_PROXY by name, suffix,
IP, CIDR and port.
"""

from __future__ import annotations

import json

import pytest

from kaistack.kube.proxy import proxy_and_variable

PROXY = "http://proxy.corp:3128"

CASES = {
    "https server, HTTPS_PROXY": ("https://api.corp:6443", {"HTTPS_PROXY": PROXY}, PROXY),
    "https server, lower-case https_proxy": ("https://api.corp:6443", {"https_proxy": PROXY}, PROXY),
    "upper case wins": ("https://api.corp", {"HTTPS_PROXY": PROXY, "https_proxy": "http://other:1"}, PROXY),
    "https server ignores HTTP_PROXY": ("https://api.corp", {"HTTP_PROXY": PROXY}, None),
    "http server, HTTP_PROXY": ("http://api.corp", {"HTTP_PROXY": PROXY}, PROXY),
    "ALL_PROXY is not read": ("https://api.corp", {"ALL_PROXY": PROXY, "all_proxy": PROXY}, None),
    "a kind cluster on 127.0.0.1": ("https://127.0.0.1:40591", {"HTTPS_PROXY": PROXY}, None),
    "localhost": ("https://localhost:6443", {"HTTPS_PROXY": PROXY}, None),
    "IPv6 loopback": ("https://[::1]:6443", {"HTTPS_PROXY": PROXY}, None),
    "NO_PROXY a domain and its subdomains": ("https://eks.corp", {"HTTPS_PROXY": PROXY, "NO_PROXY": "corp"}, None),
    "NO_PROXY .domain, subdomains only": ("https://corp", {"HTTPS_PROXY": PROXY, "NO_PROXY": ".corp"}, PROXY),
    "NO_PROXY *": ("https://api.corp", {"HTTPS_PROXY": PROXY, "NO_PROXY": "*"}, None),
    "NO_PROXY CIDR": ("https://10.1.2.3:443", {"HTTPS_PROXY": PROXY, "NO_PROXY": "x.org, 10.0.0.0/8"}, None),
    "NO_PROXY IP": ("https://10.1.2.3", {"HTTPS_PROXY": PROXY, "no_proxy": "10.1.2.3"}, None),
    "NO_PROXY other port": ("https://api.corp:6443", {"HTTPS_PROXY": PROXY, "NO_PROXY": "api.corp:443"}, PROXY),
    "NO_PROXY same port": ("https://api.corp:6443", {"HTTPS_PROXY": PROXY, "NO_PROXY": "api.corp:6443"}, None),
    "no scheme on the proxy": ("https://api.corp", {"HTTPS_PROXY": "proxy.corp:3128"}, PROXY),
    "nothing set": ("https://api.corp", {}, None),
    "NO_PROXY domain entries never match an IP host": (
        "https://10.1.2.3",
        {"HTTPS_PROXY": PROXY, "NO_PROXY": "2.3"},
        PROXY,
    ),
    "NO_PROXY port that is no number matches nothing": (
        "https://api.corp",
        {"HTTPS_PROXY": PROXY, "NO_PROXY": "api.corp:x"},
        PROXY,
    ),
    # str.isdigit() is true of these, int() refuses them: they crashed the client before it made one request.
    "NO_PROXY port in superscript or Arabic-Indic digits matches nothing": (
        "https://api.corp:6443",
        {"HTTPS_PROXY": PROXY, "NO_PROXY": "api.corp:\u00b2, [::2]:\u0662"},
        PROXY,
    ),
    "IPv4-mapped loopback": ("https://[::ffff:127.0.0.1]:6443", {"HTTPS_PROXY": PROXY}, None),
    # Go compares ports as text: the URL's own (url.Port()) with the entry's (net.SplitHostPort), golang.org/x/net
    # @v0.56.0 http/httpproxy/proxy.go:283-293 (canonicalAddr) and :351-373 (ipMatch, domainMatch).
    "NO_PROXY port with a leading zero is another port": (
        "https://api.corp:6443",
        {"HTTPS_PROXY": PROXY, "NO_PROXY": "api.corp:06443"},
        PROXY,
    ),
    "a server port with a leading zero matches the same text": (
        "https://api.corp:06443",
        {"HTTPS_PROXY": PROXY, "NO_PROXY": "api.corp:06443"},
        None,
    ),
    "a server port with a leading zero is not its number's entry": (
        "https://api.corp:06443",
        {"HTTPS_PROXY": PROXY, "NO_PROXY": "api.corp:6443"},
        PROXY,
    ),
    "NO_PROXY empty port matches every port": (
        "https://api.corp:6443",
        {"HTTPS_PROXY": PROXY, "NO_PROXY": "api.corp:"},
        None,
    ),
    "NO_PROXY entry without a host is ignored": (
        "https://api.corp:6443",
        {"HTTPS_PROXY": PROXY, "NO_PROXY": ":6443"},
        PROXY,
    ),
    "NO_PROXY the default port of the scheme": (
        "https://api.corp",
        {"HTTPS_PROXY": PROXY, "NO_PROXY": "api.corp:443"},
        None,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_kubectls_proxy_choice(case: str) -> None:
    server, environ, expected = CASES[case]
    found = proxy_and_variable(server, environ)
    assert (found[0] if found is not None else None) == expected


def test_a_loopback_api_server_is_reached_directly_whatever_the_environment_says(fake_kube, tmp_path, monkeypatch):
    """httpx's own rules sent a kind cluster's 127.0.0.1 through HTTPS_PROXY or ALL_PROXY, where kubectl goes direct."""
    from kaistack.kube import resources as k8s
    from kaistack.kube.client import KubeClient

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    with KubeClient.from_kubeconfig(fake_kube.kubeconfig(tmp_path).read_text()) as client:
        assert client.list(k8s.Queue)


def test_a_proxy_from_the_environment_of_another_scheme_names_its_variable(monkeypatch):
    """It was "certificate data is not valid base64" (an httpx ValueError caught for the kubeconfig's CA)."""
    from kaistack.kube.client import KubeClient, KubeError

    monkeypatch.setenv("HTTP_PROXY", "ftp://proxy.corp:21")
    kubeconfig = json.dumps(
        {
            "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": "http://api.kaistack.invalid"}}],
            "contexts": [{"name": "c", "context": {"cluster": "c"}}],
        }
    )
    with pytest.raises(KubeError, match=r"HTTP_PROXY is not an http://, https:// or socks5:// proxy URL"):
        KubeClient.from_kubeconfig(kubeconfig)
