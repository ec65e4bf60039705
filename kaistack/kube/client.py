"""Read-only Kubernetes access for kaistack (and dry-run creates, which write nothing): a thin adapter over
`lightkube.Client`.

lightkube speaks the protocol: kubeconfig users (token, tokenFile, client certificates, username and
password, `exec` credential plugins such as `aws eks get-token`), TLS, and `continue` pagination.
This adapter adds what kaistack's callers rely on:

- kinds are the handles in `kaistack.kube.resources`; results are plain dicts with the API's camelCase
  keys, so checks read objects the way `kubectl get -o json` shows them;
- errors in kaistack's terms: `KubeError` is an environment problem (exit 3), and `KubeAPIError` keeps
  the HTTP status, so a caller can skip what it may not read (403) or what is not installed (404);
- relative and `~` file paths in the kubeconfig resolve against the kubeconfig's directory (lightkube
  leaves `tokenFile` relative to the working directory), and a context without a user is anonymous.

Messages name the server, the path, the context and the user, never a credential: a kubeconfig that is
not valid YAML is reported by line and column, without the line's text.

Proxies are kubectl's: the cluster's `proxy-url`, else `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY`. Exec plugins
get client.authentication.k8s.io v1 or v1beta1 and KUBERNETES_EXEC_INFO (kubeconfig_text). A read is retried where
client-go retries a GET: a 429, a 5xx with Retry-After, a dropped connection, an expired `continue` token.

A cluster's `tls-server-name` is sent in TLS's SNI and checked against the server's certificate
(kaistack.kube.server_name).

Exec plugins are run by kaistack.kube.exec_plugin (a token, a client certificate, or both).

Not supported: `auth-provider` (removed from kubectl too) and impersonation (`as`, `as-groups`: refused, not
ignored).
"""

from __future__ import annotations

import os
import ssl
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx2
import lightkube
import msgspec
from lightkube.config.client_adapter import verify_cluster
from lightkube.config.kubeconfig import SingleConfig
from lightkube.config.models import User, UserExec
from lightkube.core.client import LabelSelector
from lightkube.core.resource import GlobalResource, NamespacedResource, Resource

from kaistack.kube.errors import KubeAPIError, KubeError, KubeTimeout
from kaistack.kube.exec_plugin import (
    OWN_CREDENTIALS,
    Credential,
    ExecAuthTransport,
    ExecPlugin,
    load_client_certificate,
)
from kaistack.kube.kubeconfig_text import (
    clip,
    expand_home,
    kubeconfig_files,
    merge_kubeconfigs,
    parse_kubeconfig,
    proxy_url,
    select_context,
)
from kaistack.kube.pages import each_once
from kaistack.kube.proxy import proxy_and_variable
from kaistack.kube.server_name import ServerNameTransport, server_name

DEFAULT_TIMEOUT_S = 10.0
PAGE_SIZE = 500  # items per list request; lightkube asks for the next page while `continue` is set
NAMES_PAGE_SIZE = 50  # names(): objects whose data is dropped, read a few at a time
T = TypeVar("T")
Kind = type[Resource]  # a class from kaistack.kube.resources (any lightkube resource class works)

__all__ = ["KubeAPIError", "KubeClient", "KubeError", "expand_home", "kubeconfig_files", "merge_kubeconfigs"]

# client-go retries a GET up to 10 times on 429, on a 5xx that carries Retry-After, and on a connection reset or
# EOF (client-go@kubernetes-1.35.0 rest/with_retry.go:307-318, rest/request.go:1064-1078), waiting as Retry-After
# says (capped here); an expired `continue` token (410) makes its pager read the list again (tools/pager/pager.go).
MAX_ATTEMPTS = 10
MAX_RETRY_WAIT_S = 10.0
RESET_WAIT_S = 1.0


def _retry_after(response: httpx2.Response) -> float | None:
    """When the answer says the same GET may succeed later, after how many seconds."""
    status = response.status_code
    header = response.headers.get("Retry-After")
    try:
        wait = max(0.0, float(header)) if header is not None else None
    except ValueError:  # an HTTP date: wait a second, as for a 429 without the header
        wait = 1.0
    if status == 429:
        return 1.0 if wait is None else wait
    if status == 410:
        return 0.0
    return wait if status >= 500 else None


def _system_roots_from_environment(cluster: dict[str, Any], environ: Mapping[str, str]) -> None:
    """A cluster that names no CA is verified against the system's roots, which Go reads from SSL_CERT_FILE when it
    is set (crypto/x509 root_unix.go), as kubectl does: the client itself takes nothing from the environment
    (trust_env=False keeps httpx's own proxy rules out), so the file is named as the cluster's CA. SSL_CERT_DIR is
    not read."""
    if cluster.get("certificate-authority") or cluster.get("certificate-authority-data"):
        return
    if cluster.get("insecure-skip-tls-verify"):
        return
    bundle = environ.get("SSL_CERT_FILE", "")
    if bundle and Path(bundle).is_file():
        cluster["certificate-authority"] = bundle


class KubeClient:
    """Reads objects from one cluster. Build it with `from_kubeconfig`; close it (or use `with`) when done."""

    def __init__(
        self,
        client: lightkube.Client,
        *,
        user: str = "",
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self._client = client
        self._user = user
        self._timeout = timeout

    @classmethod
    def from_kubeconfig(
        cls, text: str, *, context: str | None = None, base_dir: Path | None = None, timeout: float = DEFAULT_TIMEOUT_S
    ) -> KubeClient:
        """A client for `context` (default: current-context). Raises KubeError naming what is missing or wrong."""
        selected = select_context(parse_kubeconfig(text), context, base_dir or Path.cwd())
        _system_roots_from_environment(selected["clusters"][0]["cluster"], os.environ)
        name = selected["current-context"]
        user = (selected.get("users") or [{"name": "", "user": {}}])[0]
        source = "proxy-url"  # where the proxy came from, for messages
        try:
            plugin = _exec_plugin(user)
            if selected.get("users"):  # kaistack runs the plugin (exec_plugin), not lightkube
                selected["users"] = [{**user, "user": {k: v for k, v in user["user"].items() if k != "exec"}}]
            config = lightkube.KubeConfig.from_dict(selected).get(name)
            if config is None:  # get() returns None only when no context is named; ours always is
                raise KubeError(f"kubeconfig has no context named {name!r}")
            if config.user is None:
                # lightkube requires a user; kubectl treats a context without one as anonymous.
                config = config._replace(user=User())
            # The proxy kubectl would take (kaistack.kube.proxy), chosen here: httpx's own environment rules proxy
            # loopback servers and read ALL_PROXY, which kubectl does not. trust_env=False keeps them out.
            cluster = selected["clusters"][0]["cluster"]
            proxy = proxy_url(cluster, name)
            if proxy is None and (found := proxy_and_variable(str(cluster["server"]), os.environ)) is not None:
                proxy, source = found
                if urlsplit(proxy).scheme not in ("http", "https", "socks5", "socks5h"):
                    raise KubeError(f"{source} is not an http://, https:// or socks5:// proxy URL")
            transport = _transport(config, proxy, server_name(cluster, name), plugin)
            client = lightkube.Client(
                config,
                timeout=httpx2.Timeout(timeout),
                trust_env=False,
                # httpx2 ignores a client's verify and proxy when it is handed a transport: the transport has them.
                proxy=proxy if transport is None else None,
                transport=transport,
            )
        except ssl.SSLError as err:
            raise KubeError(
                f"kubeconfig context {name!r}: the CA or client certificate cannot be loaded: {err}"
            ) from err
        except OSError as err:
            raise KubeError(f"kubeconfig context {name!r}: cannot read {err.filename}: {err.strerror}") from err
        except (lightkube.ConfigError, msgspec.MsgspecError) as err:
            raise KubeError(f"kubeconfig context {name!r}: {clip(err)}") from err
        except ValueError as err:  # certificate data that is not base64
            raise KubeError(f"kubeconfig context {name!r}: certificate data is not valid base64") from err
        except httpx2.InvalidURL as err:  # a port that is no number, an unclosed [IPv6 (the URL is not echoed)
            raise KubeError(
                f"kubeconfig context {name!r}: the cluster's server or proxy-url is not a valid URL"
            ) from err
        except ImportError as err:  # a socks5:// proxy without httpx2's optional socks support
            raise KubeError(f"kubeconfig context {name!r}: {source}: {clip(err)}") from err
        return cls(client, user=str(user["name"]), timeout=timeout)

    @property
    def server(self) -> str:
        """The API server's URL as messages and reports show it: a user:password@ part, a query and a fragment (where
        an ?access_token= rides) are left out."""
        parts = urlsplit(self._client.config.cluster.server.rstrip("/"))
        return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2], query="", fragment=""))

    def get(self, kind: Kind, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        """One object; namespaced kinds need `namespace`. Raises KubeAPIError (status 404) when it does not exist."""
        if issubclass(kind, NamespacedResource):
            if namespace is None:
                raise ValueError(f"{kind.__name__} is namespaced: pass namespace=")
            return self._read(lambda: _plain(self._client.get(kind, name, namespace=namespace)))
        cluster_scoped = _cluster_scoped(kind, namespace)
        return self._read(lambda: _plain(self._client.get(cluster_scoped, name)))

    def list(
        self, kind: Kind, *, namespace: str | None = None, labels: Mapping[str, str | None] | None = None
    ) -> list[dict[str, Any]]:
        """Every object of `kind`, all pages read.

        Namespaced kinds: those in `namespace`, or in every namespace when it is None. `labels` selects
        by label: `{key: value}` for key=value, `{key: None}` for objects that have the key.
        """
        selector: LabelSelector | None = dict(labels) if labels else None
        if issubclass(kind, NamespacedResource):
            scope = namespace or lightkube.ALL_NS
            return self._read(
                lambda: [
                    _plain(item)
                    for item in each_once(
                        self.server, self._client.list(kind, namespace=scope, chunk_size=PAGE_SIZE, labels=selector)
                    )
                ]
            )
        cluster_scoped = _cluster_scoped(kind, namespace)
        return self._read(
            lambda: [
                _plain(item)
                for item in each_once(
                    self.server, self._client.list(cluster_scoped, chunk_size=PAGE_SIZE, labels=selector)
                )
            ]
        )

    def admits(self, kind: Kind, body: Mapping[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
        """Create `body` with dryRun=All: it passes authorization and every admission step (webhooks included) and
        is written nowhere. Returns the object as admitted; raises KubeAPIError with the refusal. Not retried: the
        caller asks again, as the answer is what it waits on."""
        target = kind.from_dict(dict(body))  # type: ignore[attr-defined]
        with self._translated():
            return _plain(self._client.create(target, namespace=namespace, dry_run=True))

    def names(self, kind: Kind, *, namespace: str | None = None) -> tuple[tuple[str, str], ...]:
        """(namespace, name) of every object of a namespaced `kind`, all pages read, keeping nothing else: a
        cluster's ConfigMaps can hold hundreds of megabytes, so pages are small (one page is read whole)."""
        if not issubclass(kind, NamespacedResource):
            raise ValueError(f"{kind.__name__} is cluster-scoped: names() reads namespaced kinds")
        scope = namespace or lightkube.ALL_NS

        def read() -> tuple[tuple[str, str], ...]:
            found: list[tuple[str, str]] = []
            for item in each_once(self.server, self._client.list(kind, namespace=scope, chunk_size=NAMES_PAGE_SIZE)):
                meta = getattr(item, "metadata", None)
                if meta is not None and meta.name:
                    found.append((str(meta.namespace or ""), str(meta.name)))
            return tuple(found)

        return self._read(read)

    def _read(self, read: Callable[[], T]) -> T:
        """`read()` in kaistack's errors, started again from the beginning (a list's first page) where client-go
        would retry, up to MAX_ATTEMPTS reads in all."""
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                with self._translated():
                    return read()
            except KubeError as err:
                if err.retry_after is None or attempt == MAX_ATTEMPTS:
                    raise
                time.sleep(min(err.retry_after, MAX_RETRY_WAIT_S))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> KubeClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @contextmanager
    def _translated(self) -> Iterator[None]:
        """lightkube's and httpx2's exceptions as KubeError / KubeAPIError (lists fail while iterating too)."""
        try:
            yield
        except lightkube.ApiError as err:
            message = err.status.message or err.response.reason_phrase
            path, wait = err.request.url.path, _retry_after(err.response)
            raise KubeAPIError(err.response.status_code, path, message, wait, err.request.method) from err
        except httpx2.HTTPStatusError as err:  # an error answer without a JSON Status: a proxy or load balancer
            response = err.response
            raise KubeAPIError(
                response.status_code,
                err.request.url.path,
                response.reason_phrase,
                _retry_after(response),
                err.request.method,
            ) from err
        except httpx2.LocalProtocolError as err:
            # httpx2 refuses a header value holding a line break, and its message quotes the value: the token.
            raise KubeError(
                f"kubeconfig user {self._user!r}: its credentials hold a character an HTTP header cannot carry (a "
                "line break at the end of a token?)"
            ) from err
        except (httpx2.ReadError, httpx2.RemoteProtocolError) as err:  # reset or closed mid-answer: try again
            if _tls_alert(err):  # TLS 1.3 sends a refused client certificate's alert after the handshake
                raise KubeError(f"the API server at {self.server} ended the TLS session with an alert: {err}") from err
            problem = KubeError(f"the API server at {self.server} dropped the connection: {err or type(err).__name__}")
            problem.retry_after = RESET_WAIT_S
            raise problem from err
        except httpx2.ReadTimeout as err:  # connected, asked, and no answer in time: not "cannot reach"
            raise KubeTimeout(
                f"the API server at {self.server} did not answer within {self._timeout:g} s (--timeout)"
            ) from err
        except httpx2.HTTPError as err:  # connection refused, DNS, TLS verification, timeouts
            raise KubeError(f"cannot reach the API server at {self.server}: {err or type(err).__name__}") from err
        except lightkube.ConfigError as err:  # the tokenFile is gone
            raise KubeError(f"kubeconfig user {self._user!r}: {clip(err)}") from err
        except (msgspec.MsgspecError, RecursionError) as err:  # msgspec's depth limit is a RecursionError
            raise KubeError(
                f"the API server at {self.server} answered with something that is not a Kubernetes object: "
                f"{err if isinstance(err, msgspec.MsgspecError) else 'nested too deep'}"
            ) from err
        except OSError as err:  # httpx2 wraps socket errors: this is the tokenFile
            raise KubeError(f"kubeconfig user {self._user!r}: cannot read {err.filename}: {err.strerror}") from err
        except (KeyError, ValueError, TypeError) as err:
            status = err.__context__
            if isinstance(status, httpx2.HTTPStatusError):
                # lightkube reads the error answer's Content-Type without checking it is there (a load balancer's
                # 502, a redirect): the answer is what matters, not the KeyError.
                response = status.response
                raise KubeAPIError(
                    response.status_code, status.request.url.path, response.reason_phrase, _retry_after(response)
                ) from err
            raise


def _tls_alert(err: BaseException) -> bool:
    """Whether a read failed on the server's TLS alert (a certificate it wants or refuses), which a second try gets
    again: client-go retries a reset connection or an EOF only (rest/request.go:1064-1078)."""
    cause: BaseException | None = err
    while cause is not None:
        if isinstance(cause, ssl.SSLError):
            return not isinstance(cause, ssl.SSLEOFError | ssl.SSLZeroReturnError)
        cause = cause.__cause__ or cause.__context__
    return False


def _exec_plugin(user: Mapping[str, Any]) -> ExecPlugin | None:
    """The user's exec plugin, unless the user authenticates itself, in which case kubectl does not run it."""
    spec = user["user"].get("exec")
    if spec is None or any(user["user"].get(key) for key in OWN_CREDENTIALS):
        return None
    try:  # lightkube's own check of the spec, in its words ("... - at `$.exec.args`"), as before kaistack ran it
        checked = msgspec.convert(spec, UserExec)
    except msgspec.ValidationError as err:
        raise KubeError(f"kubeconfig user {user['name']!r}: {clip(err)} - at `$.exec`") from None
    return ExecPlugin(checked, str(user["name"]))


def _transport(
    config: SingleConfig, proxy: str | None, tls_name: str | None, plugin: ExecPlugin | None
) -> httpx2.BaseTransport | None:
    """kaistack's own transport where lightkube's cannot do it: a tls-server-name, an exec plugin (whose
    certificate goes into the TLS context). None: lightkube's."""
    if tls_name is None and plugin is None:
        return None

    def build(credential: Credential | None = None) -> httpx2.BaseTransport:
        verify = verify_cluster(config.cluster, config.user or User(), config.abs_file, trust_env=False)
        if plugin is not None and credential is not None and credential.certificate:
            load_client_certificate(verify, credential, plugin)
        inner = httpx2.HTTPTransport(verify=verify, proxy=proxy, trust_env=False)
        return inner if tls_name is None else ServerNameTransport(inner, tls_name)

    if plugin is None:
        return build()
    build().close()  # what the first request would find wrong with the proxy (no socksio) found here instead
    return ExecAuthTransport(plugin, build)


# --- results ----------------------------------------------------------------------------------------------


def _cluster_scoped(kind: Kind, namespace: str | None) -> type[GlobalResource]:
    """`kind` as lightkube's cluster-scoped type; a namespace for it is a caller's mistake, not a cluster's."""
    if not issubclass(kind, GlobalResource):
        raise ValueError(f"{kind.__name__} is neither namespaced nor cluster-scoped (a subresource?)")
    if namespace is not None:
        raise ValueError(f"{kind.__name__} is cluster-scoped: namespace= does not apply")
    return kind


def _plain(obj: Any) -> dict[str, Any]:
    """A typed model or generic resource as the API's JSON: camelCase keys, no null fields."""
    return dict(obj.to_dict())
