"""Helpers for tests/workflows: paths, and a fake Kubernetes API on loopback.

The fake API serves recorded-looking JSON responses (`fixtures/kube-healthy.json`, keyed by path)
from a `ThreadingHTTPServer` on 127.0.0.1, port 0, to the real client (lightkube underneath). It
implements the little of the API that `kaistack verify` relies on: `labelSelector` (`key`, `!key`,
`key=value`, `key!=value`, comma = and), `limit`/`continue` paging (with a server-side page size, as
an API server may return fewer items than asked), Bearer-token auth, and 401/403/404 Status bodies.
Each server shuts itself down after SERVER_LIFETIME_S even if a test forgets it. Fixtures using these
live in conftest.py.
"""

from __future__ import annotations

import copy
import json
import shutil
import ssl
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from kaistack.capacity.diff import Hazard
from kaistack.declaration.parse import parse_config
from kaistack.ops.update_hazards import update_hazards

FIXTURES = Path(__file__).parent / "fixtures"
# A Job of tenant alpha's queue in namespace ml, for the update-hazard tests.
TRAIN_JOB = {"name": "train", "kind": "Job", "queue": "a", "image": "t:1", "namespace": "ml"}
ROOT = Path(__file__).resolve().parents[2]
TEST_PACK = FIXTURES / "pack"
SERVER_LIFETIME_S = 30.0
TOKEN = "kaistack-test-token"


@dataclass
class FakeKube:
    """Responses by path (mutable per test), the requests seen, and the server's base URL.

    `page_size` caps every list page whatever `limit` asks; `forbidden` paths answer 403 as RBAC
    does for a user who may not read them.
    """

    responses: dict[str, Any]
    token: str | None = TOKEN
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    url: str = ""
    page_size: int | None = None
    forbidden: set[str] = field(default_factory=set)
    # Paths answered with this status and no body or Content-Type, as a load balancer's 502 is.
    bare: dict[str, int] = field(default_factory=dict)
    # Each request line's target: the path, or the whole URL when a client sends it through a proxy.
    targets: list[str] = field(default_factory=list)
    # Answers given before the real one, in turn: (status, headers) with a JSON Status, or status 0 for a connection
    # closed without an answer. A key "<path>?continue" applies to the pages after a list's first.
    flaky: dict[str, list[tuple[int, dict[str, str]]]] = field(default_factory=dict)
    # Seconds to wait before answering a path: a slow API server; `slow_posts` for creates alone (a hung webhook).
    slow: dict[str, float] = field(default_factory=dict)
    slow_posts: dict[str, float] = field(default_factory=dict)
    # POST answers by path, (status, body) in turn, the last one repeated: a body None answers with the posted
    # object (a create admitted); the posts seen as (path, query, object).
    posts: dict[str, list[tuple[int, Any]]] = field(default_factory=dict)
    posted: list[tuple[str, dict[str, str], Any]] = field(default_factory=list)

    def items(self, path: str) -> list[dict[str, Any]]:
        return self.responses[path]["items"]

    def pod(self, path: str, name: str) -> dict[str, Any]:
        """A pod in a list response, changed in place in every list that holds it (same object)."""
        return next(p for p in self.items(path) if p["metadata"]["name"] == name)

    def kubeconfig(self, tmp_path: Path, *, token: str | None = None) -> Path:
        file = tmp_path / "kubeconfig"
        file.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "kind-kaistack-dev",
                    "clusters": [{"name": "kind-kaistack-dev", "cluster": {"server": self.url}}],
                    "contexts": [
                        {"name": "kind-kaistack-dev", "context": {"cluster": "kind-kaistack-dev", "user": "admin"}}
                    ],
                    "users": [{"name": "admin", "user": {"token": token or self.token or ""}}],
                }
            )
        )
        return file


def healthy_responses() -> dict[str, Any]:
    """The healthy dev cluster, with pods shared by object identity between the per-namespace and all-pod lists."""
    responses = json.loads((FIXTURES / "kube-healthy.json").read_text())
    by_uid: dict[str, Any] = {}
    for path, body in responses.items():
        if path.endswith("/pods"):
            items = []
            for pod in body["items"]:
                uid = pod["metadata"]["uid"]
                items.append(by_uid.setdefault(uid, pod))
            body["items"] = items
    # The node list too (diagnose lists them; verify reads each by name).
    nodes = [body for path, body in responses.items() if path.startswith("/api/v1/nodes/")]
    responses["/api/v1/nodes"] = {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": nodes}
    return responses


# Where kaistack.ops.kai_ready's probes are dry-run created; the healthy cluster's KAI admits each.
PROBE_PATHS = (
    "/apis/scheduling.run.ai/v2/queues",
    "/apis/scheduling.run.ai/v2alpha2/namespaces/default/podgroups",
    "/api/v1/namespaces/default/pods",
)


def healthy_posts() -> dict[str, list[tuple[int, Any]]]:
    return {path: [(201, None)] for path in PROBE_PATHS}


@dataclass(frozen=True)
class Pki:
    """A throwaway CA with a server certificate for 127.0.0.1, one for NAMED_SERVER only (no IP), and a client
    certificate (openssl CLI)."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    named_cert: Path
    named_key: Path


NAMED_SERVER = "kube-api.kaistack.test"


def make_pki(d: Path) -> Pki | None:
    """Certificates in `d` made with the openssl CLI; None when openssl is not installed."""
    openssl = shutil.which("openssl")
    if openssl is None:
        return None

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], cwd=d, check=True, capture_output=True, timeout=60)

    run(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=kaistack-test-ca",
    )
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    (d / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    (d / "named.ext").write_text(f"subjectAltName=DNS:{NAMED_SERVER}\nextendedKeyUsage=serverAuth\n")
    for name, subject, ext in (
        ("server", "/CN=127.0.0.1", "san.ext"),
        ("client", "/O=system:masters/CN=admin", "client.ext"),
        ("named", f"/CN={NAMED_SERVER}", "named.ext"),
    ):
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject)
        run(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            f"{name}.crt",
            "-days",
            "2",
            "-extfile",
            ext,
        )
    return Pki(
        d / "ca.crt",
        d / "server.crt",
        d / "server.key",
        d / "client.crt",
        d / "client.key",
        d / "named.crt",
        d / "named.key",
    )


def serve(state: FakeKube, tls: ssl.SSLContext | None) -> Iterator[FakeKube]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    scheme = "https" if tls is not None else "http"
    state.url = f"{scheme}://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    watchdog = threading.Timer(SERVER_LIFETIME_S, server.shutdown)
    watchdog.daemon = True
    watchdog.start()
    try:
        yield state
    finally:
        watchdog.cancel()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _handler(state: FakeKube) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            params = dict(urllib.parse.parse_qsl(url.query))
            state.requests.append((url.path, params))
            state.targets.append(self.path)
            time.sleep(state.slow.get(url.path, 0.0))
            queue = state.flaky.get(url.path + ("?continue" if params.get("continue") else ""))
            if queue:
                status, headers = queue.pop(0)
                if status == 0:
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return None
                return self._send(status, _status(status, "Flaky", f"flaky answer {status}"), headers)
            if url.path in state.bare:
                self.send_response(state.bare[url.path])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            if state.token and self.headers.get("Authorization") != f"Bearer {state.token}":
                return self._send(401, _status(401, "Unauthorized", "Unauthorized"))
            if url.path in state.forbidden:
                message = f'User "viewer" cannot get path "{url.path}"'
                return self._send(403, _status(403, "Forbidden", f"forbidden: {message}"))
            body = state.responses.get(url.path)
            if body is None:
                return self._send(
                    404, _status(404, "NotFound", f'the server could not find the requested resource "{url.path}"')
                )
            if "items" in body:
                body = _list_page(body, params, state.page_size)
            return self._send(200, body)

        def do_POST(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            params = dict(urllib.parse.parse_qsl(url.query))
            sent = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
            state.posted.append((url.path, params, sent))
            time.sleep(state.slow_posts.get(url.path, 0.0))
            if state.token and self.headers.get("Authorization") != f"Bearer {state.token}":
                return self._send(401, _status(401, "Unauthorized", "Unauthorized"))
            if url.path in state.forbidden:
                message = f'User "viewer" cannot create path "{url.path}"'
                return self._send(403, _status(403, "Forbidden", f"forbidden: {message}"))
            answers = state.posts.get(url.path)
            if not answers:
                return self._send(404, _status(404, "NotFound", "the server could not find the requested resource"))
            status, body = answers.pop(0) if len(answers) > 1 else answers[0]
            if body is None:
                body = sent
            elif status >= 400:
                body = _status(status, "Refused", str(body))
            return self._send(status, body)

        def _send(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:  # keep pytest output clean
            pass

    return Handler


def _list_page(body: dict[str, Any], params: dict[str, str], page_size: int | None) -> dict[str, Any]:
    items = [i for i in body["items"] if _selected(i, params.get("labelSelector", ""))]
    start = int(params.get("continue") or 0)
    limit = min(filter(None, (int(params.get("limit") or 0), page_size or 0)), default=len(items))
    page = copy.deepcopy(body)
    page["items"] = items[start : start + limit]
    page.setdefault("metadata", {})["continue"] = str(start + limit) if start + limit < len(items) else ""
    return page


def _selected(item: dict[str, Any], selector: str) -> bool:
    labels = item.get("metadata", {}).get("labels") or {}
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, value = term.split("=", 1)
            if labels.get(key) != value.lstrip("="):
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def server_tls(pki: Pki) -> ssl.SSLContext:
    """HTTPS that requires a client certificate signed by the test CA."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(pki.ca))
    context.load_cert_chain(pki.server_cert, pki.server_key)
    context.verify_mode = ssl.CERT_REQUIRED
    return context


def passing_report(project_dir: Path, stack: str, progress: object) -> Any:
    """A validation that passes: policies and capacity (the documented validate_project seam of promote)."""
    from kaistack.ops.validate import CapacityVerdict, ValidationReport

    return ValidationReport(
        stack=stack,
        resource_counts={"kubernetes:core/v1:Pod": 3},
        pack="kaistack@0.1.0",
        policies={"kai-scheduler-name": "resource"},
        capacity=CapacityVerdict(True, "fits: 3/3 workloads placed"),
    )


def verify_json(project: Path, fake_kube: FakeKube, capsys: Any) -> tuple[int, dict[str, Any]]:
    """`kaistack verify --stack dev --json` against the fake API: the exit code and the parsed report."""
    from kaistack.cli import main

    kubeconfig = fake_kube.kubeconfig(project.parent)
    code = main(["verify", "--stack", "dev", "--project", str(project), "--kubeconfig", str(kubeconfig), "--json"])
    return code, json.loads(capsys.readouterr().out)


def failed_checks(report: dict[str, Any]) -> list[tuple[str, str]]:
    """(check, subject) of each failed check in a verify report, in report order."""
    return [(c["check"], c["subject"]) for c in report["checks"] if not c["ok"]]


def check_detail(report: dict[str, Any], check: str, subject: str) -> str:
    return next(c["detail"] for c in report["checks"] if c["check"] == check and c["subject"] == subject)


def two_tenant_kind_stack(*workloads: dict[str, Any]) -> dict[str, Any]:
    """A kind stack (cluster `unit`, one 4-GPU node, fake GPUs) with tenants alpha (queue a) and beta (queue b)."""
    return {
        "cluster": {"provider": "kind", "name": "unit", "nodePools": [{"name": "gpu", "count": 1, "gpus": 4}]},
        "gpu": {"mode": "fake"},
        "queues": [{"name": "a"}, {"name": "b"}],
        "tenants": [{"name": "alpha", "queues": ["a"]}, {"name": "beta", "queues": ["b"]}],
        "workloads": [copy.deepcopy(w) for w in workloads],
    }


def plugin_runs(tmp_path: Path) -> int:
    """How often a test exec plugin ran: each run appends a line to tmp_path/runs."""
    runs = tmp_path / "runs"
    return len(runs.read_text().splitlines()) if runs.exists() else 0


def one_user_kubeconfig(server: str, user: dict[str, Any], **cluster: Any) -> str:
    """A kubeconfig (JSON) with one cluster `c` at `server`, one user `u` and a current context `ctx` joining them."""
    return json.dumps(
        {
            "current-context": "ctx",
            "clusters": [{"name": "c", "cluster": {"server": server, **cluster}}],
            "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
            "users": [{"name": "u", "user": user}],
        }
    )


def hazards_of_change(base: dict[str, Any], change: Callable[[dict[str, Any]], Any]) -> list[Hazard]:
    """update_hazards between the stack `base` and a copy of it that `change` edits in place."""
    head = copy.deepcopy(base)
    change(head)
    return update_hazards(parse_config(base), parse_config(head))


def hazard_kinds(hazards: list[Hazard]) -> list[tuple[str, str]]:
    return [(h.kind, h.subject) for h in hazards]
