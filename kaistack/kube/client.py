"""Read-only Kubernetes access for kaistack: a thin adapter over `lightkube.Client`.

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

Proxies are kubectl's: the cluster's `proxy-url`, else `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY`.

Not supported (lightkube 1.0): `auth-provider` (removed from kubectl too), `tls-server-name`, impersonation
(`as`, `as-groups`), and exec plugins declared as `client.authentication.k8s.io/v1` or answering with a
client certificate instead of a token (`aws eks get-token` answers v1beta1 with a token).
"""

from __future__ import annotations

import json
import os
import re
import ssl
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2
import lightkube
import msgspec
from lightkube.config.models import User
from lightkube.core.client import LabelSelector
from lightkube.core.resource import GlobalResource, NamespacedResource, Resource

from kaistack.declaration.yaml_load import YamlInputError, load_one
from kaistack.errors import EnvironmentProblem

DEFAULT_TIMEOUT_S = 10.0
PAGE_SIZE = 500  # items per list request; lightkube asks for the next page while `continue` is set
NAMES_PAGE_SIZE = 50  # names(): objects whose data is dropped, read a few at a time
Kind = type[Resource]  # a class from kaistack.kube.resources (any lightkube resource class works)
_MESSAGE_LIMIT = 300  # exec plugins can print a lot on stderr; the first lines say what went wrong

# kubeconfig keys that name files, per section (client-go's ResolvePaths resolves the same ones).
_CLUSTER_FILES = ("certificate-authority",)
_USER_FILES = ("client-certificate", "client-key", "tokenFile")


# lightkube/config/client_adapter.py: ConfigError(f"Exec {command[0]} returned {proc.returncode}: {stderr}").
EXEC_FAILED = re.compile(r"Exec (?P<command>.*?) returned (?P<code>-?\d+): ", re.DOTALL)


class KubeError(EnvironmentProblem):
    """The cluster cannot be used: bad kubeconfig, unreachable API server, TLS, credentials, exec plugin."""


class KubeAPIError(KubeError):
    """The API server answered with an error status (`status`: 401, 403, 404, ...)."""

    def __init__(self, status: int, path: str, message: str) -> None:
        self.status = status
        self.path = path
        super().__init__(f"GET {path}: HTTP {status}: {message}")


class KubeClient:
    """Reads objects from one cluster. Build it with `from_kubeconfig`; close it (or use `with`) when done."""

    def __init__(self, client: lightkube.Client, *, user: str = "", exec_command: str | None = None) -> None:
        self._client = client
        self._user = user
        self._exec_command = exec_command

    @classmethod
    def from_kubeconfig(
        cls, text: str, *, context: str | None = None, base_dir: Path | None = None, timeout: float = DEFAULT_TIMEOUT_S
    ) -> KubeClient:
        """A client for `context` (default: current-context). Raises KubeError naming what is missing or wrong."""
        selected = _select(_parse(text), context, base_dir or Path.cwd())
        name = selected["current-context"]
        user = (selected.get("users") or [{"name": "", "user": {}}])[0]
        exec_spec = user["user"].get("exec")
        try:
            config = lightkube.KubeConfig.from_dict(selected).get(name)
            if config is None:  # get() returns None only when no context is named; ours always is
                raise KubeError(f"kubeconfig has no context named {name!r}")
            if config.user is None:
                # lightkube requires a user; kubectl treats a context without one as anonymous.
                config = config._replace(user=User())
            # Proxies as kubectl takes them: the cluster's proxy-url, else HTTPS_PROXY / HTTP_PROXY / NO_PROXY
            # (client-go@kubernetes-1.35.0 tools/clientcmd/client_config.go:198-203, transport/cache.go:129-132).
            proxy = _proxy_url(selected["clusters"][0]["cluster"], name)
            client = lightkube.Client(config, timeout=httpx2.Timeout(timeout), trust_env=True, proxy=proxy)
        except ssl.SSLError as err:
            raise KubeError(
                f"kubeconfig context {name!r}: the CA or client certificate cannot be loaded: {err}"
            ) from err
        except OSError as err:
            raise KubeError(f"kubeconfig context {name!r}: cannot read {err.filename}: {err.strerror}") from err
        except (lightkube.ConfigError, msgspec.MsgspecError) as err:
            raise KubeError(f"kubeconfig context {name!r}: {_clip(err)}") from err
        except ValueError as err:  # certificate data that is not base64
            raise KubeError(f"kubeconfig context {name!r}: certificate data is not valid base64") from err
        except httpx2.InvalidURL as err:  # a port that is no number, an unclosed [IPv6 (the URL is not echoed)
            raise KubeError(
                f"kubeconfig context {name!r}: the cluster's server or proxy-url is not a valid URL"
            ) from err
        except ImportError as err:  # a socks5:// proxy without httpx2's optional socks support
            raise KubeError(f"kubeconfig context {name!r}: proxy-url: {_clip(err)}") from err
        return cls(
            client,
            user=str(user["name"]),
            exec_command=str(exec_spec.get("command")) if isinstance(exec_spec, Mapping) else None,
        )

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
            with self._translated():
                return _plain(self._client.get(kind, name, namespace=namespace))
        cluster_scoped = _cluster_scoped(kind, namespace)
        with self._translated():
            return _plain(self._client.get(cluster_scoped, name))

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
            with self._translated():
                return [
                    _plain(item)
                    for item in self._client.list(kind, namespace=scope, chunk_size=PAGE_SIZE, labels=selector)
                ]
        cluster_scoped = _cluster_scoped(kind, namespace)
        with self._translated():
            return [_plain(item) for item in self._client.list(cluster_scoped, chunk_size=PAGE_SIZE, labels=selector)]

    def names(self, kind: Kind, *, namespace: str | None = None) -> tuple[tuple[str, str], ...]:
        """(namespace, name) of every object of a namespaced `kind`, all pages read, keeping nothing else: a
        cluster's ConfigMaps can hold hundreds of megabytes, so pages are small (one page is read whole)."""
        if not issubclass(kind, NamespacedResource):
            raise ValueError(f"{kind.__name__} is cluster-scoped: names() reads namespaced kinds")
        scope = namespace or lightkube.ALL_NS
        found: list[tuple[str, str]] = []
        with self._translated():
            for item in self._client.list(kind, namespace=scope, chunk_size=NAMES_PAGE_SIZE):
                meta = getattr(item, "metadata", None)
                if meta is not None and meta.name:
                    found.append((str(meta.namespace or ""), str(meta.name)))
        return tuple(found)

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
            raise KubeAPIError(err.response.status_code, err.request.url.path, message) from err
        except httpx2.HTTPStatusError as err:  # an error answer without a JSON Status: a proxy or load balancer
            raise KubeAPIError(err.response.status_code, err.request.url.path, err.response.reason_phrase) from err
        except httpx2.LocalProtocolError as err:
            # httpx2 refuses a header value holding a line break, and its message quotes the value: the token.
            raise KubeError(
                f"kubeconfig user {self._user!r}: its credentials hold a character an HTTP header cannot carry (a "
                "line break at the end of a token?)"
            ) from err
        except httpx2.HTTPError as err:  # connection refused, DNS, TLS verification, timeouts
            raise KubeError(f"cannot reach the API server at {self.server}: {err or type(err).__name__}") from err
        except lightkube.ConfigError as err:  # the exec plugin exited non-zero, the tokenFile is gone
            failed = EXEC_FAILED.match(str(err))
            if failed is None:
                raise KubeError(f"kubeconfig user {self._user!r}: {_clip(err)}") from err
            # lightkube's message carries the plugin's stderr, which can hold what it was given (a client secret in
            # its args or env); this message reaches --json documents and, through discovery, Pulumi's output.
            raise KubeError(
                f"kubeconfig user {self._user!r}: exec plugin {failed['command']!r} exited {failed['code']} (its "
                "output is not shown, as it may hold credentials: run the plugin by hand to see why)"
            ) from err
        except msgspec.MsgspecError as err:
            raise KubeError(
                f"the API server at {self.server} answered with something that is not a Kubernetes object: {err}"
            ) from err
        except OSError as err:  # httpx2 wraps socket errors: this is the exec plugin or the tokenFile
            doing = "cannot run" if self._exec_command is not None else "cannot read"
            file = err.filename or self._exec_command
            raise KubeError(f"kubeconfig user {self._user!r}: {doing} {file}: {err.strerror}") from err
        except (KeyError, ValueError, TypeError) as err:
            status = err.__context__
            if isinstance(status, httpx2.HTTPStatusError):
                # lightkube reads the error answer's Content-Type without checking it is there (a load balancer's
                # 502, a redirect): the answer is what matters, not the KeyError.
                response = status.response
                raise KubeAPIError(response.status_code, status.request.url.path, response.reason_phrase) from err
            if self._exec_command is None:
                raise
            # lightkube reads `status.token` from the plugin's output without checking it.
            raise KubeError(
                f"kubeconfig user {self._user!r}: exec plugin {self._exec_command!r} printed no ExecCredential "
                "with status.token (client certificates from exec plugins are not supported)"
            ) from err


# --- kubeconfig -------------------------------------------------------------------------------------------


def _proxy_url(cluster: Mapping[str, Any], context: str) -> str | None:
    """The cluster's `proxy-url` (http, https or socks5, as client-go allows), or None for the environment's."""
    proxy = cluster.get("proxy-url")
    if proxy in (None, ""):
        return None
    if not isinstance(proxy, str) or urlsplit(proxy).scheme not in ("http", "https", "socks5"):
        raise KubeError(f"kubeconfig context {context!r}: proxy-url must be an http://, https:// or socks5:// URL")
    return proxy


def _parse(text: str) -> Mapping[str, Any]:
    try:
        # The one safe loader (depth, aliases and size bounded, one document).
        config = load_one(text, "kubeconfig")
    except YamlInputError as err:
        # The parser's message may quote the offending line, which may hold a token: give the line only.
        where = f" at line {err.line}" if err.line is not None else ""
        raise KubeError(f"kubeconfig is not valid YAML{where}") from None
    if not isinstance(config, Mapping):
        raise KubeError("kubeconfig is not a mapping (expected apiVersion: v1, kind: Config)")
    return config


def merge_kubeconfigs(files: Sequence[tuple[Path, str]]) -> str:
    """Several kubeconfigs as kubectl merges $KUBECONFIG's files (client-go@kubernetes-1.35.0
    tools/clientcmd/loader.go:180-271): the first file to name a cluster, user or context wins it whole, the first
    non-empty current-context wins, and each file's relative paths resolve against its own directory."""
    merged: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "current-context": ""}
    sections = {"clusters": ("cluster", _CLUSTER_FILES), "users": ("user", _USER_FILES), "contexts": ("context", ())}
    seen: dict[str, set[Any]] = {section: set() for section in sections}
    for path, text in files:
        try:
            config = _parse(text)
        except KubeError as err:
            raise KubeError(f"{path}: {err}") from None
        merged["current-context"] = merged["current-context"] or config.get("current-context") or ""
        for section, (key, file_keys) in sections.items():
            entries = config.get(section) or []
            if not isinstance(entries, list):
                raise KubeError(f"{path}: kubeconfig {section} is not a list")
            for entry in entries:
                if not isinstance(entry, Mapping) or entry.get("name") in seen[section]:
                    continue
                seen[section].add(entry.get("name"))
                block = entry.get(key)
                if isinstance(block, Mapping):
                    entry = {**entry, key: _absolute_paths(block, file_keys, Path(os.path.abspath(path)).parent)}
                merged.setdefault(section, []).append(dict(entry))
    return json.dumps(merged)


def _absolute_paths(block: Mapping[str, Any], keys: tuple[str, ...], base: Path) -> dict[str, Any]:
    resolved = {k: (str(_absolute(base, str(v))) if k in keys and v else v) for k, v in block.items()}
    exec_spec = resolved.get("exec")
    if isinstance(exec_spec, Mapping) and os.sep in str(exec_spec.get("command") or ""):
        resolved["exec"] = {**exec_spec, "command": str(_absolute(base, str(exec_spec["command"])))}
    return resolved


def _select(config: Mapping[str, Any], context: str | None, base: Path) -> dict[str, Any]:
    """A kubeconfig holding only the chosen context, its cluster and its user, with file paths made absolute.

    Checking the names here gives messages that list what the kubeconfig has, and a malformed entry
    for some other cluster does not stop this one from working.
    """
    name = context or config.get("current-context")
    if not name:
        raise KubeError("kubeconfig has no current-context; pass one with --context or set it")
    ctx = _named(config, "contexts", "context", name)
    cluster = _named(config, "clusters", "cluster", ctx.get("cluster"))
    user = _named(config, "users", "user", ctx.get("user")) if ctx.get("user") else None
    if not str(cluster.get("server") or "").startswith(("https://", "http://")):
        raise KubeError(f"cluster {ctx.get('cluster')!r} has no https:// server in the kubeconfig")
    selected: dict[str, Any] = {
        "current-context": name,
        "contexts": [{"name": name, "context": ctx}],
        "clusters": [{"name": ctx["cluster"], "cluster": _with_files(cluster, _CLUSTER_FILES, base)}],
    }
    if user is not None:
        # As kubectl does, an exec command with a path separator is relative to the kubeconfig, one without is
        # looked up on PATH.
        user = _with_files(_absolute_paths(user, (), base), _USER_FILES, base)
        selected["users"] = [{"name": ctx["user"], "user": user}]
    return selected


def _named(config: Mapping[str, Any], section: str, key: str, name: Any) -> dict[str, Any]:
    entries = config.get(section) or []
    if not isinstance(entries, list):
        raise KubeError(f"kubeconfig {section} is not a list")
    for entry in entries:
        if isinstance(entry, Mapping) and entry.get("name") == name:
            value = entry.get(key)
            if not isinstance(value, Mapping):
                raise KubeError(f"kubeconfig {section} entry {name!r} has no {key!r} mapping")
            return dict(value)
    known = ", ".join(str(e.get("name")) for e in entries if isinstance(e, Mapping)) or "none"
    raise KubeError(f"kubeconfig has no {key} named {name!r}; {section}: {known}")


def _with_files(block: Mapping[str, Any], keys: tuple[str, ...], base: Path) -> dict[str, Any]:
    resolved = dict(block)
    for key in keys:
        if resolved.get(key):
            file = _absolute(base, str(resolved[key]))
            if not file.is_file():
                raise KubeError(f"kubeconfig {key} refers to {file}, which cannot be read")
            resolved[key] = str(file)
    return resolved


def _absolute(base: Path, path: str) -> Path:
    file = expand_home(path)
    return file if file.is_absolute() else base / file


def expand_home(path: str) -> Path:
    """`~` and `~user` expanded; a user that does not exist is a kubeconfig problem, not a crash (RuntimeError)."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        raise KubeError(f"{path[:80]!r}: cannot expand its ~ (no such user's home directory)") from None


def kubeconfig_files(variable: str) -> Iterator[Path]:
    """The files $KUBECONFIG lists that exist, in order; an entry naming nothing is passed over, as kubectl does (a
    `~user` of no user included)."""
    for part in variable.split(os.pathsep):
        if not part:
            continue
        try:
            path = expand_home(part)
        except KubeError:
            continue
        if path.is_file():
            yield path


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


def _clip(err: Exception) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 3] + "..."
