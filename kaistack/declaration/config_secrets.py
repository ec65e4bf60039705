"""Which `kaistack:` values may be secret, and the secrets a stack is refused for.

kaistack keeps one value secret end to end: `cluster.existing.kubeconfig` (components make it an
Output.secret). Pulumi hands a program its config decrypted and marks secrecy only per top-level key
(PULUMI_CONFIG_SECRET_KEYS), so:
- a `secure:` value anywhere else would reach resource inputs, the state and `pulumi preview --diff`
  (a PR comment) in the clear: refused, by its path offline and by its top-level key under Pulumi;
- a kubeconfig written into the stack file in plain text is refused too. It is committed with the file,
  and a kubeconfig is code: its exec plugin runs, and its token and certificate files are read and sent
  to its server, on the machine of whoever runs `kaistack check` or `validate` on the branch.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

NAMESPACE = "kaistack"
# Stand-in for `secure:` values when a stack file is read without Pulumi (render, check, lint): the
# ciphertext cannot be decrypted offline and must never be printed.
SECRET_PLACEHOLDER = "[secret]"
SECRET_PATH = ("cluster", "existing", "kubeconfig")
_ADVICE = (
    "only cluster.existing.kubeconfig may be a secret (Pulumi gives kaistack its config decrypted, and this "
    "value would be stored and shown in the clear); reference a Kubernetes Secret instead (workloads[].secretEnv)"
)
PLAINTEXT_KUBECONFIG = (
    f"{NAMESPACE}:cluster.existing.kubeconfig: written in plain text; set it as a Pulumi secret (pulumi config set "
    "--secret --path kaistack:cluster.existing.kubeconfig < kubeconfig) or use existing.context: a kubeconfig "
    "committed in a stack file can run commands and send local files wherever it points (exec plugins, token "
    "and certificate files) on every machine that checks the stack, so kaistack uses none"
)


def shown_key(part: object) -> str:
    """A key as a message shows it: as written when it is a plain name, else quoted (a newline, a backtick or
    an escape sequence in a stack file's key stays visible text in a terminal and in a PR comment)."""
    text = str(part)
    return text if re.fullmatch(r"[A-Za-z0-9_./-]+", text) else repr(text)


def secret_problems(raw: Mapping[str, Any], secret_keys: Collection[str] | None) -> list[str]:
    """Secrets kaistack refuses, one "key.path: message" line each.

    `secret_keys` are the top-level keys the source holds as secret: those with a `secure:` value in a stack
    file, or the ones Pulumi lists for a program. None when the source cannot tell (a policy pack's config):
    only the placeholders are checked then.
    """
    paths = _placeholders_outside_kubeconfig(raw)
    problems = [f"{_shown_path(path)}: {_ADVICE}" for path in paths]
    if secret_keys is None:
        return problems
    reported = {str(path[0]) for path in paths}
    has_kubeconfig = bool(_kubeconfig(raw))
    for key in secret_keys:
        if key in reported or (key == "cluster" and has_kubeconfig):
            continue
        problems.append(f"{NAMESPACE}:{shown_key(key)}: holds a secret value; {_ADVICE}")
    if has_kubeconfig and "cluster" not in secret_keys:
        problems.append(PLAINTEXT_KUBECONFIG)
    return problems


def secure_keys(config: Mapping[str, Any]) -> list[str]:
    """The `kaistack:` keys (prefix stripped) of a stack file's `config:` that hold a `secure:` value."""
    prefix = f"{NAMESPACE}:"
    return [str(k)[len(prefix) :] for k, v in config.items() if str(k).startswith(prefix) and _has_secure(v)]


def mask_secure(value: Any) -> Any:
    """A stack file value with each `secure:` ciphertext replaced by SECRET_PLACEHOLDER."""
    if isinstance(value, Mapping):
        if set(value) == {"secure"}:
            return SECRET_PLACEHOLDER
        return {k: mask_secure(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_secure(v) for v in value]
    return value


def _has_secure(value: Any) -> bool:
    if isinstance(value, Mapping):
        return set(value) == {"secure"} or any(_has_secure(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_secure(v) for v in value)
    return False


def _kubeconfig(raw: Mapping[str, Any]) -> Any:
    value: Any = raw
    for key in SECRET_PATH:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def _placeholders_outside_kubeconfig(value: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    if isinstance(value, Mapping):
        return [p for k, v in value.items() for p in _placeholders_outside_kubeconfig(v, (*path, str(k)))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _placeholders_outside_kubeconfig(v, (*path, i))]
    return [path] if value == SECRET_PLACEHOLDER and path != SECRET_PATH else []


def _shown_path(path: tuple[str | int, ...]) -> str:
    # User keys (an env name like "string_x") are not pydantic's union markers: not parse._format_path.
    keys = "".join(f"[{p}]" if isinstance(p, int) else f".{shown_key(p)}" for p in path[1:])
    return f"{NAMESPACE}:{shown_key(path[0])}{keys}"
