"""Which kubeconfig a live command uses: `--kubeconfig`, else `$KUBECONFIG` (merged), else the stack's own output."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kaistack.declaration import limits
from kaistack.declaration.yaml_load import YamlInputError, read_text
from kaistack.kube.errors import KubeError
from kaistack.kube.kubeconfig_text import kubeconfig_files, merge_kubeconfigs, parse_kubeconfig


@dataclass(frozen=True)
class Kubeconfig:
    text: str
    origin: str  # shown to users: where the kubeconfig came from
    base_dir: Path


def resolve_kubeconfig(
    stack: str | None,
    explicit: Path | None,
    project_dir: Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    which: Callable[[str], str | None] = shutil.which,
) -> Kubeconfig:
    """`--kubeconfig`, else `$KUBECONFIG` (its files merged, as kubectl does), else the stack's `pulumi stack output
    kubeconfig`; without a stack (diagnose: any cluster), kubectl's default ~/.kube/config instead."""
    environ = os.environ if environ is None else environ
    if explicit is not None:
        return _kubeconfig_file(explicit, f"--kubeconfig {explicit}")
    merged = from_environment(environ)
    if merged is not None and (stack is not None or _names_a_context(merged.text)):
        return merged
    if stack is None:
        default = default_kubeconfig() if merged is None else None
        found = merged or (_kubeconfig_file(default, str(default)) if default is not None else None)
        if found is not None and _names_a_context(found.text):
            return found
        # As client-go's merged loader: a kubeconfig that is missing or empty falls back to the pod's service
        # account (client-go@kubernetes-1.35.0 tools/clientcmd/merged_client_builder.go:96-127).
        in_pod = in_cluster(environ)
        if in_pod is not None:
            return in_pod
        if found is not None:
            return found  # its own error (no context, not a mapping) says what is wrong with it
        raise KubeError("no kubeconfig: pass --kubeconfig FILE, set KUBECONFIG, or create ~/.kube/config")
    pulumi = which("pulumi")
    if pulumi:
        command = [pulumi, "stack", "output", "kubeconfig", "--show-secrets", "--stack", stack]
        try:
            done = subprocess.run(command, capture_output=True, text=True, cwd=project_dir, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise KubeError(f"`pulumi stack output kubeconfig` failed: {err}") from err
        if done.returncode != 0 or not done.stdout.strip():
            raise KubeError(f"`pulumi stack output kubeconfig --stack {stack}` failed: {done.stderr.strip()[:300]}")
        return Kubeconfig(done.stdout, f"pulumi stack output kubeconfig --stack {stack}", project_dir or Path.cwd())
    # No service-account fallback here: a stack names its cluster, and the pod's own would be checked against it.
    raise KubeError(
        "no kubeconfig: pass --kubeconfig FILE, set KUBECONFIG, or install the Pulumi CLI so "
        f"`pulumi stack output kubeconfig --show-secrets --stack {stack}` can provide it"
    )


def _names_a_context(text: str) -> bool:
    """Whether a kubeconfig holds anything to connect with: an empty file (or a merge of empty ones) does not."""
    try:
        config = parse_kubeconfig(text)
    except KubeError:
        return bool(text.strip())  # a broken one is reported as such, not passed over
    return bool(config.get("contexts")) or bool(config.get("current-context"))


def from_environment(environ: Mapping[str, str]) -> Kubeconfig | None:
    """$KUBECONFIG's existing files merged as kubectl merges them; None when it is unset. Set but naming no file is a
    KubeError: like kubectl, a set KUBECONFIG is the whole search, and falling back would read some other cluster."""
    variable = environ.get("KUBECONFIG", "")
    paths = list(dict.fromkeys(kubeconfig_files(variable)))
    if not paths:
        if variable.strip(os.pathsep):
            raise KubeError(f"$KUBECONFIG ({variable[:200]}) names no existing file")
        return None
    if len(paths) == 1:
        return _kubeconfig_file(paths[0], f"$KUBECONFIG {paths[0]}")
    text = merge_kubeconfigs([(path, read_kubeconfig(path)) for path in paths])
    return Kubeconfig(text, "$KUBECONFIG " + os.pathsep.join(str(p) for p in paths), _directory(paths[0]))


SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")


def in_cluster(environ: Mapping[str, str], account: Path | None = None) -> Kubeconfig | None:
    """Run in a pod with no kubeconfig: its service account, as client-go's InClusterConfig reads it
    (client-go@kubernetes-1.35.0 rest/config.go:543-566: KUBERNETES_SERVICE_HOST and _PORT, the mounted token and
    CA); None elsewhere. The token is read from its file on each use, so a rotated one is picked up."""
    account = SERVICE_ACCOUNT if account is None else account
    host, port = environ.get("KUBERNETES_SERVICE_HOST", ""), environ.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port or not (account / "token").is_file():
        return None
    server = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    cluster: dict[str, str] = {"server": server}
    if (account / "ca.crt").is_file():
        cluster["certificate-authority"] = str(account / "ca.crt")
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "in-cluster",
        "clusters": [{"name": "in-cluster", "cluster": cluster}],
        "users": [{"name": "service-account", "user": {"tokenFile": str(account / "token")}}],
        "contexts": [{"name": "in-cluster", "context": {"cluster": "in-cluster", "user": "service-account"}}],
    }
    return Kubeconfig(json.dumps(config), f"the pod's service account ({account})", account)


def default_kubeconfig() -> Path | None:
    """~/.kube/config when it exists; None too when there is no home directory to look in."""
    try:
        path = Path.home() / ".kube" / "config"
    except RuntimeError:
        return None
    return path if path.is_file() else None


def _kubeconfig_file(path: Path, origin: str) -> Kubeconfig:
    return Kubeconfig(read_kubeconfig(path), origin, _directory(path))


def _directory(path: Path) -> Path:
    """The directory a kubeconfig's relative paths are read from: its own, a symlink's included (client-go's
    filepath.Abs cleans the path without following links)."""
    return Path(os.path.abspath(path)).parent


def read_kubeconfig(path: Path) -> str:
    """The file through the one bounded reader (a device or a huge file is refused, not read whole)."""
    try:
        return read_text(path, max_bytes=limits.MAX_KUBECONFIG_BYTES, what="kubeconfig")
    except YamlInputError as err:
        raise KubeError(f"cannot read kubeconfig {err}") from err
