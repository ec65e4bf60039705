"""Stack files on disk: where a project is, which stacks it has, the `kaistack:` part of one stack file.

The load path also compares one other namespace's setting with the model (`aws:region`); it comes
from the same read of the file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kaistack.declaration import limits
from kaistack.declaration.config_secrets import mask_secure
from kaistack.declaration.parse import NAMESPACE, ConfigError
from kaistack.declaration.pulumi_yaml import refuse_ambiguous_scalars
from kaistack.declaration.yaml_load import YamlInputError, load_one_document, read_text

# Pulumi's stack names; never a path (`--stack ../x` must not read ../x.yaml).
_STACK_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}")


def stack_file(project_dir: Path, stack: str) -> Path:
    """`Pulumi.<stack>.yaml`; a stack name is a Pulumi stack name (letters, digits, '-', '_', '.'), never a path."""
    if not _STACK_NAME.fullmatch(stack):
        raise ConfigError(
            [f"stack {stack[:80]!r}: not a stack name (letters, digits, '-', '_' and '.', at most 100, no leading '.')"]
        )
    return project_dir / f"Pulumi.{stack}.yaml"


def read_stack_file(project_dir: Path, stack: str) -> Mapping[str, Any]:
    """The `config:` mapping of Pulumi.<stack>.yaml, every namespace, as written (secure values included).

    One read for a whole load: `kaistack_keys` and `plain_setting` take their parts from it.
    """
    path = stack_file(project_dir, stack)
    if not path.is_file():
        if path.is_symlink() or path.exists():
            what = "a symlink to nothing" if not path.exists() else "a directory" if path.is_dir() else "not a file"
            raise ConfigError([f"stack {stack!r}: {path.name} in {project_dir} is {what}; a stack file is a file"])
        known = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in project_dir.glob("Pulumi.*.yaml"))
        raise ConfigError(
            [f"stack {stack!r}: no {path.name} in {project_dir}; stacks here: {', '.join(known) or 'none'}"]
        )
    try:
        text = read_text(path, max_bytes=limits.MAX_STACK_FILE_BYTES, what="stack file")
    except YamlInputError as err:
        raise ConfigError([str(err)]) from None
    return stack_settings(text, path.name, project_name(project_dir))


def project_name(project_dir: Path) -> str:
    """The `name:` of the project's Pulumi.yaml, which Pulumi prefixes to a stack file's keys written without a
    namespace; kaistack's own when the file cannot say."""
    try:
        text = read_text(project_dir / "Pulumi.yaml", max_bytes=limits.MAX_STACK_FILE_BYTES, what="project file")
        document = load_one_document(text, "Pulumi.yaml")
    except (YamlInputError, OSError):
        return NAMESPACE
    name = document.data.get("name") if document is not None and isinstance(document.data, Mapping) else None
    return name if isinstance(name, str) and name else NAMESPACE


def stack_settings(text: str, source: str, project: str = NAMESPACE) -> Mapping[str, Any]:
    """The `config:` mapping of a stack file's text (read from disk, or from git at another commit), its keys as
    Pulumi reads them (namespaced)."""
    try:
        loaded = load_one_document(text, source)
        refuse_ambiguous_scalars(text, source, loaded.node if loaded is not None else None, project)
        document = loaded.data if loaded is not None else None
    except YamlInputError as err:
        raise ConfigError(str(err).splitlines()) from None  # one problem per line (every ambiguous value)
    config = (document.get("config") or {}) if isinstance(document, Mapping) else None if document else {}
    if not isinstance(config, Mapping):
        raise ConfigError([f"{source}: 'config' must be a mapping"])
    return namespaced(config, source, project)


def namespaced(config: Mapping[str, Any], source: str, project: str = NAMESPACE) -> dict[str, Any]:
    """`config:` keys as Pulumi reads them: one without a namespace is the project's, `kai` being `kaistack:kai`
    (pulumi/pulumi@1b594989 sdk/go/common/workspace/loaders.go stackConfigNamespacedWithProject). A key written
    both ways is refused: Pulumi puts both in one Go map, in map order, so which one `pulumi up` keeps varies."""
    out: dict[str, Any] = {}
    written: dict[str, str] = {}
    problems = []
    for key, value in config.items():
        text = str(key)
        full = text if ":" in text else f"{project}:{text}"
        if full in out:
            problems.append(
                f"{source}: config key {full} is written twice, as {written[full]!r} and as {text!r} (Pulumi reads a "
                f"key without a namespace as the project's, {project}:): it keeps one of them at random; keep one"
            )
        out[full] = value
        written[full] = text
    if problems:
        raise ConfigError(problems)
    return out


def kaistack_keys(config: Mapping[str, Any]) -> dict[str, Any]:
    """The `kaistack:` part of a stack file's `config:`, prefix stripped, secure values masked."""
    prefix = f"{NAMESPACE}:"
    return {k[len(prefix) :]: mask_secure(v) for k, v in config.items() if str(k).startswith(prefix)}


def plain_setting(config: Mapping[str, Any], key: str) -> str | None:
    """Another namespace's setting (`aws:region`) from a stack file's `config:`, when it is a plain string.

    None when it is absent, and when it is a secure value: offline there is nothing to compare it with.
    """
    value = config.get(key)
    return value if isinstance(value, str) else None


def read_stack_config(project_dir: Path, stack: str) -> dict[str, Any]:
    """The `kaistack:` part of Pulumi.<stack>.yaml, prefix stripped, secure values masked."""
    return kaistack_keys(read_stack_file(project_dir, stack))


def find_project_dir(start: Path | None = None) -> Path:
    """The nearest directory at or above `start` holding kaistack's Pulumi.yaml."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "Pulumi.yaml").is_file():
            return candidate
    raise ConfigError([f"no Pulumi.yaml in {here} or its parents; run from the kaistack project or pass --project"])
