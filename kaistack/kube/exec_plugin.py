"""A kubeconfig user's `exec` credential plugin, run as client-go runs it (client-go@kubernetes-1.35.0
plugin/pkg/client/auth/exec/exec.go), by kaistack rather than lightkube, whose 1.0 reads a token only.

The plugin answers with an ExecCredential whose status holds a bearer token, a client certificate and key (PEM), or
both (exec.go:486-494; Teleport's `tsh kube credentials` and Pinniped answer with a certificate). A token goes in
each request's Authorization header (client-go keeps one a request already has, exec.go:362-372; kaistack's requests
never carry one, since a user with credentials of its own runs no plugin); a certificate is presented in the
TLS handshake, so the plugin runs before the first connection, and a new certificate means new connections
(exec.go:521-531 closes the old ones). The answer is kept until its expirationTimestamp; a 401 runs the plugin again
once and repeats the read (lightkube's rule; client-go refreshes for the next request). When the user also sets a
token, a password or a client certificate, kubectl does not run the plugin at all (exec.go:320-322), and neither
does kaistack.

Neither what the plugin prints nor the credential it answers with ever reaches a message: a plugin may print what
it was given (a client secret in its args or env), and messages reach --json documents and Pulumi's output.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx2
from lightkube.config.models import UserExec

from kaistack.kube.errors import KubeError

__all__ = ["Credential", "ExecAuthTransport", "ExecPlugin", "load_client_certificate"]

# Users that authenticate themselves: kubectl runs no exec plugin for them (exec.go:320-322).
OWN_CREDENTIALS = ("token", "tokenFile", "username", "client-certificate", "client-certificate-data")


@dataclass(frozen=True)
class Credential:
    """What the plugin answered: a token, a PEM certificate and key, or both; when it stops being valid."""

    token: str = ""
    certificate: str = ""
    key: str = ""
    expires: datetime | None = None

    def expired(self, now: datetime) -> bool:
        return self.expires is not None and now >= self.expires


class ExecPlugin:
    """Runs one user's plugin (the spec as kaistack.kube.kubeconfig_text prepared it: absolute command, env holding
    KUBERNETES_EXEC_INFO; checked by lightkube's model, as lightkube would) and reads its answer."""

    def __init__(self, spec: UserExec, user: str) -> None:
        self.command = spec.command
        self._args = list(spec.args or [])
        self._env = {e.name: e.value for e in spec.env or []}
        self._version = spec.apiVersion
        self._hint = (spec.installHint or "").strip()
        self._user = user

    def run(self) -> Credential:
        try:
            done = subprocess.run(
                [self.command, *self._args],
                env={**os.environ, **self._env},
                stdin=subprocess.DEVNULL,
                capture_output=True,
                check=False,
            )
        except OSError as err:
            hint = f" ({' '.join(self._hint.split())[:300]})" if self._hint else ""
            raise self.problem(f"cannot run {self.command}: {err.strerror}{hint}") from err
        if done.returncode != 0:
            raise self.problem(
                f"exec plugin {self.command!r} exited {done.returncode} (its output is not shown, as it may hold "
                "credentials: run the plugin by hand to see why)"
            )
        return self._credential(done.stdout)

    def _credential(self, stdout: bytes) -> Credential:
        try:
            answer = json.loads(stdout)
        except (ValueError, UnicodeDecodeError):
            raise self.problem(f"exec plugin {self.command!r} printed something that is not JSON") from None
        status = answer.get("status") if isinstance(answer, dict) else None
        if not isinstance(status, dict):
            raise self.problem(f"exec plugin {self.command!r} printed no ExecCredential with a status")
        version, kind = answer.get("apiVersion"), answer.get("kind")
        if version != self._version:  # client-go decodes with the configured version's decoder (exec.go:477-484)
            raise self.problem(
                f"exec plugin {self.command!r} is configured for {self._version} and answered {repr(version)[:80]}"
            )
        if kind != "ExecCredential":
            raise self.problem(f"exec plugin {self.command!r} answered a {repr(kind)[:80]}, not an ExecCredential")
        token, certificate, key = (status.get(k) or "" for k in ("token", "clientCertificateData", "clientKeyData"))
        if not all(isinstance(v, str) for v in (token, certificate, key)):
            raise self.problem(f"exec plugin {self.command!r} answered a status whose credentials are not strings")
        if not (token or certificate or key):
            raise self.problem(
                f"exec plugin {self.command!r} printed no ExecCredential with status.token or a client certificate "
                "and key"
            )
        if bool(certificate) != bool(key):
            raise self.problem(f"exec plugin {self.command!r} answered a client certificate or key, not both")
        return Credential(token, certificate, key, self._expiry(status.get("expirationTimestamp")))

    def _expiry(self, value: object) -> datetime | None:
        if value is None:
            return None
        try:
            moment = datetime.fromisoformat(str(value))
        except ValueError:
            moment = None
        if moment is None or moment.tzinfo is None:  # RFC 3339 names the offset; metav1.Time parses RFC 3339 only
            raise self.problem(
                f"exec plugin {self.command!r} answered an expirationTimestamp that is not an RFC 3339 time"
            )
        return moment

    def problem(self, text: str) -> KubeError:
        return KubeError(f"kubeconfig user {self._user!r}: {text}")


def load_client_certificate(context: ssl.SSLContext, credential: Credential, plugin: ExecPlugin) -> None:
    """The plugin's certificate and key into `context` (ssl reads them from files only: written private, read, gone)."""
    with tempfile.TemporaryDirectory(prefix="kaistack-exec-") as scratch:
        cert, key = Path(scratch) / "client.crt", Path(scratch) / "client.key"
        for path, text in ((cert, credential.certificate), (key, credential.key)):
            path.touch(mode=0o600)
            path.write_text(text)
        try:
            context.load_cert_chain(cert, key)
        except ssl.SSLError as err:
            raise plugin.problem(
                f"exec plugin {plugin.command!r} answered a client certificate and key that cannot be loaded "
                f"({err.reason or 'not PEM'})"
            ) from err


class ExecAuthTransport(httpx2.BaseTransport):
    """Credentials from an exec plugin on every request. `build(credential)` makes the transport that carries the
    requests, presenting the credential's certificate when it has one; it is built again when the certificate
    changes."""

    def __init__(
        self,
        plugin: ExecPlugin,
        build: Callable[[Credential], httpx2.BaseTransport],
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._plugin = plugin
        self._build = build
        self._now = now
        self._lock = threading.Lock()
        self._credential: Credential | None = None
        self._inner: httpx2.BaseTransport | None = None

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        credential, fresh = self._current()
        response = self._send(request, credential)
        if response.status_code == 401 and not fresh:
            response.close()
            credential, _ = self._current(stale=credential)
            response = self._send(request, credential)
        return response

    def close(self) -> None:
        with self._lock:
            if self._inner is not None:
                self._inner.close()

    def _send(self, request: httpx2.Request, credential: Credential) -> httpx2.Response:
        if credential.token:
            request.headers["Authorization"] = f"Bearer {credential.token}"
        return self._carrier(credential).handle_request(request)

    def _current(self, stale: Credential | None = None) -> tuple[Credential, bool]:
        """The credential to use, and whether the plugin ran for it just now. `stale`: one the server refused."""
        with self._lock:
            kept = self._credential
            if kept is not None and kept is not stale and not kept.expired(self._now()):
                return kept, False
            credential = self._plugin.run()
            if kept is not None and (kept.certificate, kept.key) != (credential.certificate, credential.key):
                if self._inner is not None:
                    self._inner.close()
                self._inner = None
            self._credential = credential
            return credential, True

    def _carrier(self, credential: Credential) -> httpx2.BaseTransport:
        with self._lock:
            if self._inner is None:
                self._inner = self._build(credential)
            return self._inner
