"""A small read-only Kubernetes REST client: kubeconfig -> urllib + ssl, JSON in, dicts out.

No kubernetes client library is a kaistack dependency, and `kaistack verify` needs only a handful
of GETs. Supported kubeconfig features: the current (or a named) context; cluster `server`
(https, or http for `kubectl proxy`), `certificate-authority-data` / `certificate-authority`,
`insecure-skip-tls-verify`; user `token` / `tokenFile`, `client-certificate(-data)` +
`client-key(-data)`, `username`/`password`, and `exec` credential plugins (e.g. `aws eks get-token`,
which pulumi-eks kubeconfigs use). Not supported: `auth-provider` (removed from kubectl),
`tls-server-name`, HTTP(S) proxies, merging several kubeconfig files.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

DEFAULT_TIMEOUT_S = 10.0
PAGE_SIZE = 500


class KubeError(Exception):
    """The cluster cannot be used: bad kubeconfig, unreachable API server, credentials rejected."""


class KubeAPIError(KubeError):
    """The API server answered with an error status."""

    def __init__(self, status: int, path: str, message: str) -> None:
        self.status = status
        self.path = path
        super().__init__(f"GET {path}: HTTP {status}: {message}")


@dataclass
class KubeClient:
    server: str
    context: ssl.SSLContext | None = None
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT_S

    # -- construction --------------------------------------------------------------------------------

    @classmethod
    def from_kubeconfig(
        cls, text: str, *, context: str | None = None, base_dir: Path | None = None, timeout: float = DEFAULT_TIMEOUT_S
    ) -> KubeClient:
        """Build a client from kubeconfig text. Raises KubeError naming what is missing or wrong."""
        try:
            config = yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise KubeError(f"kubeconfig is not valid YAML: {err}") from err
        if not isinstance(config, Mapping):
            raise KubeError("kubeconfig is not a mapping (expected apiVersion: v1, kind: Config)")
        base = base_dir or Path.cwd()
        name = context or config.get("current-context")
        if not name:
            raise KubeError("kubeconfig has no current-context; pass one with --context or set it")
        ctx = _named(config, "contexts", "context", name)
        cluster = _named(config, "clusters", "cluster", ctx.get("cluster"))
        user = _named(config, "users", "user", ctx.get("user")) if ctx.get("user") else {}
        server = str(cluster.get("server") or "").rstrip("/")
        if not server.startswith(("https://", "http://")):
            raise KubeError(f"cluster {ctx.get('cluster')!r} has no https:// server in the kubeconfig")

        headers = {"Accept": "application/json", "User-Agent": "kaistack-verify"}
        cert_pem: bytes | None = None
        key_pem: bytes | None = None
        if "exec" in user:
            status = _run_exec(user["exec"])
            if status.get("token"):
                headers["Authorization"] = f"Bearer {status['token']}"
            if status.get("clientCertificateData"):
                cert_pem = status["clientCertificateData"].encode()
                key_pem = str(status.get("clientKeyData", "")).encode()
        if user.get("token"):
            headers["Authorization"] = f"Bearer {user['token']}"
        elif user.get("tokenFile"):
            headers["Authorization"] = f"Bearer {_read(base, user['tokenFile']).decode().strip()}"
        elif user.get("username") and user.get("password"):
            basic = base64.b64encode(f"{user['username']}:{user['password']}".encode()).decode()
            headers["Authorization"] = f"Basic {basic}"
        cert_pem = _data_or_file(user, "client-certificate", base) or cert_pem
        key_pem = _data_or_file(user, "client-key", base) or key_pem

        ssl_context = None
        if server.startswith("https://"):
            ssl_context = ssl.create_default_context()
            ca = _data_or_file(cluster, "certificate-authority", base)
            if cluster.get("insecure-skip-tls-verify"):
                ssl_context.check_hostname = False
                ssl_context.verify_mode = ssl.CERT_NONE
            elif ca:
                ssl_context.load_verify_locations(cadata=ca.decode())
            if cert_pem:
                if not key_pem:
                    raise KubeError(f"user {ctx.get('user')!r} has a client certificate but no client key")
                _load_cert_chain(ssl_context, cert_pem, key_pem)
        return cls(server=server, context=ssl_context, headers=headers, timeout=timeout)

    # -- requests --------------------------------------------------------------------------------------

    def get(self, path: str, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        url = f"{self.server}{path}{query}"
        request = urllib.request.Request(url, headers=self.headers, method="GET")
        try:
            with self._open(request) as response:
                body = response.read()
        except urllib.error.HTTPError as err:
            raise KubeAPIError(err.code, path, _status_message(err)) from err
        except (urllib.error.URLError, OSError, ssl.SSLError) as err:
            reason = getattr(err, "reason", err)
            raise KubeError(f"cannot reach the API server at {self.server}: {reason}") from err
        try:
            return json.loads(body)
        except json.JSONDecodeError as err:
            raise KubeError(f"GET {path}: the API server answered with non-JSON ({body[:80]!r})") from err

    def list(self, path: str, label_selector: str | None = None) -> list[dict[str, Any]]:
        """All items of a list endpoint, following `metadata.continue` pages."""
        items: list[dict[str, Any]] = []
        params: dict[str, str] = {"limit": str(PAGE_SIZE)}
        if label_selector:
            params["labelSelector"] = label_selector
        while True:
            page = self.get(path, params)
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items
            params["continue"] = token

    def _open(self, request: urllib.request.Request) -> Any:
        # No proxies (HTTP(S)_PROXY are ignored): the API server is addressed directly.
        handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]
        if self.context is not None:
            handlers.append(urllib.request.HTTPSHandler(context=self.context))
        return urllib.request.build_opener(*handlers).open(request, timeout=self.timeout)


# --- kubeconfig helpers --------------------------------------------------------------------------------


def _named(config: Mapping[str, Any], section: str, key: str, name: Any) -> dict[str, Any]:
    for entry in config.get(section) or []:
        if isinstance(entry, Mapping) and entry.get("name") == name:
            value = entry.get(key)
            if not isinstance(value, Mapping):
                raise KubeError(f"kubeconfig {section} entry {name!r} has no {key!r} mapping")
            return dict(value)
    known = ", ".join(str(e.get("name")) for e in config.get(section) or [] if isinstance(e, Mapping)) or "none"
    raise KubeError(f"kubeconfig has no {key} named {name!r}; {section}: {known}")


def _read(base: Path, path: str) -> bytes:
    file = Path(os.path.expanduser(path))
    file = file if file.is_absolute() else base / file
    try:
        return file.read_bytes()
    except OSError as err:
        raise KubeError(f"kubeconfig refers to {file}, which cannot be read: {err.strerror}") from err


def _data_or_file(block: Mapping[str, Any], key: str, base: Path) -> bytes | None:
    data = block.get(f"{key}-data")
    if data:
        try:
            return base64.b64decode(data, validate=True)
        except ValueError as err:
            raise KubeError(f"kubeconfig {key}-data is not valid base64") from err
    path = block.get(key)
    return _read(base, path) if path else None


def _load_cert_chain(context: ssl.SSLContext, cert_pem: bytes, key_pem: bytes) -> None:
    """ssl loads client certs from files only: write them to a private temp dir, load, delete."""
    with tempfile.TemporaryDirectory(prefix="kaistack-kube-") as tmp:
        cert_file, key_file = Path(tmp) / "client.crt", Path(tmp) / "client.key"
        for file, data in ((cert_file, cert_pem), (key_file, key_pem)):
            fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
        try:
            context.load_cert_chain(cert_file, key_file)
        except ssl.SSLError as err:
            raise KubeError(f"kubeconfig client certificate/key cannot be loaded: {err}") from err


def _run_exec(spec: Mapping[str, Any]) -> dict[str, Any]:
    command = spec.get("command")
    if not command:
        raise KubeError("kubeconfig exec plugin has no command")
    env = {**os.environ, **{e["name"]: e["value"] for e in spec.get("env") or [] if "name" in e}}
    try:
        done = subprocess.run(
            [command, *(spec.get("args") or [])], capture_output=True, text=True, env=env, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise KubeError(f"kubeconfig exec plugin {command!r} failed to run: {err}") from err
    if done.returncode != 0:
        raise KubeError(f"kubeconfig exec plugin {command!r} exited {done.returncode}: {done.stderr.strip()[:300]}")
    try:
        status = json.loads(done.stdout).get("status") or {}
    except (json.JSONDecodeError, AttributeError) as err:
        raise KubeError(f"kubeconfig exec plugin {command!r} printed no ExecCredential JSON") from err
    return dict(status)


def _status_message(err: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(err.read() or b"{}")
    except (json.JSONDecodeError, OSError):
        return str(err.reason)
    return str(body.get("message") or err.reason) if isinstance(body, Mapping) else str(err.reason)
