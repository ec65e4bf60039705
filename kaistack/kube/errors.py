"""kaistack's Kubernetes errors: an unusable cluster is an environment problem (exit 3)."""

from __future__ import annotations

from kaistack.errors import EnvironmentProblem


class KubeError(EnvironmentProblem):
    """The cluster cannot be used: bad kubeconfig, unreachable API server, TLS, credentials, exec plugin.

    `retry_after`: seconds after which the same read may succeed (a dropped connection), else None."""

    retry_after: float | None = None


class KubeAPIError(KubeError):
    """The API server answered with an error status (`status`: 401, 403, 404, ...)."""

    def __init__(
        self, status: int, path: str, message: str, retry_after: float | None = None, method: str = "GET"
    ) -> None:
        self.status = status
        self.path = path
        self.retry_after = retry_after
        super().__init__(f"{method} {path}: HTTP {status}: {message}")


class KubeTimeout(KubeError):
    """Connected and asked, and no answer within the client's timeout (a webhook that hangs looks like this)."""
