"""A kubeconfig's text: parsed through the safe loader, several merged as kubectl merges them, one context selected
with its file paths made absolute (relative and `~` paths resolve against the kubeconfig's own directory)."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Hashable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kaistack.declaration.yaml_load import YamlInputError, load_one
from kaistack.kube.errors import KubeError

# kubeconfig keys that name files, per section (client-go's ResolvePaths resolves the same ones).
_CLUSTER_FILES = ("certificate-authority",)
_USER_FILES = ("client-certificate", "client-key", "tokenFile")
_MESSAGE_LIMIT = 300  # exec plugins can print a lot on stderr; the first lines say what went wrong


def proxy_url(cluster: Mapping[str, Any], context: str) -> str | None:
    """The cluster's `proxy-url` (http, https or socks5, as client-go allows), or None for the environment's."""
    proxy = cluster.get("proxy-url")
    if proxy in (None, ""):
        return None
    if not isinstance(proxy, str) or urlsplit(proxy).scheme not in ("http", "https", "socks5"):
        raise KubeError(f"kubeconfig context {context!r}: proxy-url must be an http://, https:// or socks5:// URL")
    return proxy


def parse_kubeconfig(text: str) -> Mapping[str, Any]:
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
        if not text.strip():  # client-go reads an empty file as an empty config (loader.go LoadFromFile)
            continue
        try:
            config = parse_kubeconfig(text)
        except KubeError as err:
            raise KubeError(f"{path}: {err}") from None
        merged["current-context"] = merged["current-context"] or config.get("current-context") or ""
        for section, (key, file_keys) in sections.items():
            entries = config.get(section) or []
            if not isinstance(entries, list):
                raise KubeError(f"{path}: kubeconfig {section} is not a list")
            for entry in entries:
                name = entry.get("name") if isinstance(entry, Mapping) else None
                # A name that cannot be a dict key (a list, a mapping) names nothing a context could select.
                if not isinstance(entry, Mapping) or not isinstance(name, Hashable) or name in seen[section]:
                    continue
                seen[section].add(name)
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


def select_context(config: Mapping[str, Any], context: str | None, base: Path) -> dict[str, Any]:
    """A kubeconfig holding only the chosen context, its cluster and its user, with file paths made absolute.

    Checking the names here gives messages that list what the kubeconfig has, and a malformed entry
    for some other cluster does not stop this one from working.
    """
    name = context or config.get("current-context")
    if not name:
        raise KubeError("kubeconfig has no current-context; pass one with --context or set it")
    ctx = _named(config, "contexts", "context", name)
    if not isinstance(ctx.get("cluster"), str) or not ctx["cluster"]:
        # Without this, a nameless cluster entry matched the missing name (None == None).
        raise KubeError(f"kubeconfig context {name!r} names no cluster")
    cluster = _named(config, "clusters", "cluster", ctx["cluster"])
    user = _named(config, "users", "user", ctx.get("user")) if ctx.get("user") else None
    if not str(cluster.get("server") or "").startswith(("https://", "http://")):
        raise KubeError(f"cluster {ctx.get('cluster')!r} has no https:// server in the kubeconfig")
    selected: dict[str, Any] = {
        "current-context": name,
        "contexts": [{"name": name, "context": ctx}],
        "clusters": [{"name": ctx["cluster"], "cluster": _with_files(cluster, _CLUSTER_FILES, base)}],
    }
    if user is not None:
        impersonating = sorted(k for k in IMPERSONATION_KEYS if user.get(k))
        if impersonating:
            raise KubeError(
                f"kubeconfig user {ctx['user']!r} impersonates ({', '.join(impersonating)}), which kaistack does not "
                "do: it would read as the user itself; use a context without impersonation"
            )
        # As kubectl does, an exec command with a path separator is relative to the kubeconfig, one without is
        # looked up on PATH.
        user = _with_files(_absolute_paths(user, (), base), _USER_FILES, base)
        if isinstance(user.get("exec"), Mapping):
            user["exec"] = _exec_with_info(user["exec"], selected["clusters"][0]["cluster"])
        selected["users"] = [{"name": ctx["user"], "user": user}]
    return selected


IMPERSONATION_KEYS = ("as", "as-uid", "as-groups", "as-user-extra")
EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1beta1", "client.authentication.k8s.io/v1")


def _exec_with_info(spec: Mapping[str, Any], cluster: Mapping[str, Any]) -> dict[str, Any]:
    """An exec plugin as client-go runs it (client-go@kubernetes-1.35.0 plugin/pkg/client/auth/exec/exec.go): v1 or
    v1beta1, and KUBERNETES_EXEC_INFO in its environment (with the cluster when provideClusterInfo); run by
    kaistack.kube.exec_plugin."""
    version = spec.get("apiVersion")
    if version not in EXEC_API_VERSIONS:
        raise KubeError(
            f"exec plugin apiVersion {version!r} is not supported; use one of {', '.join(EXEC_API_VERSIONS)}"
        )
    info: dict[str, Any] = {"apiVersion": version, "kind": "ExecCredential", "spec": {"interactive": False}}
    if spec.get("provideClusterInfo"):
        info["spec"]["cluster"] = _exec_cluster(cluster)
    given = spec.get("env") or []
    if not isinstance(given, list) or not all(isinstance(e, Mapping) for e in given):
        # kubectl cannot decode such a kubeconfig either (ExecEnvVar is a {name, value} object).
        raise KubeError("kubeconfig exec env must be a list of {name, value} entries")
    env = [e for e in given if e.get("name") != "KUBERNETES_EXEC_INFO"]
    env.append({"name": "KUBERNETES_EXEC_INFO", "value": json.dumps(info)})
    return {**spec, "env": env}


def _exec_cluster(cluster: Mapping[str, Any]) -> dict[str, Any]:
    """ExecCredential's spec.cluster (client.authentication.k8s.io Cluster): the CA as base64 data."""
    out: dict[str, Any] = {"server": cluster["server"]}
    data = cluster.get("certificate-authority-data")
    if not data and cluster.get("certificate-authority"):
        try:
            data = base64.b64encode(Path(cluster["certificate-authority"]).read_bytes()).decode()
        except OSError as err:
            raise KubeError(
                f"cannot read certificate-authority {cluster['certificate-authority']}: {err.strerror}"
            ) from err
    if data:
        out["certificate-authority-data"] = data
    for key in ("tls-server-name", "insecure-skip-tls-verify", "proxy-url", "disable-compression"):
        if cluster.get(key):
            out[key] = cluster[key]
    # The cluster's exec extension, for the plugin (client-go@kubernetes-1.35.0 tools/clientcmd/client_config.go:35-36).
    for extension in cluster.get("extensions") or []:
        if isinstance(extension, Mapping) and extension.get("name") == "client.authentication.k8s.io/exec":
            out["config"] = extension.get("extension")
    return out


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
        if key in resolved and resolved[key] in ("", None):
            # client-go reads an empty path as none set (client-go@kubernetes-1.35.0 transport/config.go:110-112);
            # left in, the client would read the working directory as the token.
            del resolved[key]
        elif resolved.get(key):
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


def clip(err: Exception) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 3] + "..."
