"""The config edge: raw `kaistack:` config (a stack file or Pulumi's config) -> a frozen StackConfig.

Every problem is reported with its full key path, the bad value and what is allowed, all at once,
before anything is created.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Collection, Mapping
from typing import Any, Literal, TypeVar, get_args, get_origin

from pydantic import BaseModel, ValidationError

from kaistack.declaration.config_secrets import NAMESPACE, SECRET_PLACEHOLDER, secret_problems, shown_key
from kaistack.declaration.model import StackConfig
from kaistack.declaration.model.base import Model
from kaistack.errors import ExitCode, InputError

__all__ = ["NAMESPACE", "SECRET_PLACEHOLDER", "TOP_LEVEL_KEYS", "ConfigError", "parse_config"]

TOP_LEVEL_KEYS = tuple(f.alias or n for n, f in StackConfig.model_fields.items())


class ConfigError(InputError):
    """Invalid stack configuration; `problems` holds one "key.path: message" line per problem."""

    def __init__(self, problems: list[str], source: str = "") -> None:
        self.problems = problems
        self.source = source
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = f" in {self.source}" if self.source else ""
        head = f"invalid kaistack config{where} ({len(self.problems)} problem{'s' * (len(self.problems) != 1)}):"
        return "\n".join([head, *(f"  {p}" for p in self.problems)])


class ClusterUnreadable(ConfigError):
    """The stack leaves something to the cluster (an `existing` stack's node pools) and the cluster cannot be read:
    the environment's problem (exit 3), though declaring the value would make the stack self-contained."""

    exit_code = ExitCode.ENVIRONMENT


def parse_config(
    raw: Mapping[str, Any], source: str = "", secret_keys: Collection[str] | None = None, *, compared: bool = False
) -> StackConfig:
    """Validate the `kaistack:` keys (without the prefix) into a StackConfig or raise ConfigError.

    `secret_keys`: the top-level keys the source holds as secret (config_secrets.secret_problems).
    `compared`: the stack is only simulated for comparison (`diff`'s base), never deployed, so the refusals of
    what a real cluster would do with its versions (StackConfig.DEPLOY_RULES) are skipped: a base written
    before a rule existed still compares.
    """
    if not isinstance(raw, Mapping):
        raise ConfigError([f"{NAMESPACE}: expected a mapping of keys, got {type(raw).__name__}"], source)
    unknown = [k for k in raw if k not in TOP_LEVEL_KEYS]
    problems = [f"{NAMESPACE}:{shown_key(k)}: unknown key; allowed: {', '.join(TOP_LEVEL_KEYS)}" for k in unknown]
    known = {k: v for k, v in raw.items() if k in TOP_LEVEL_KEYS}
    problems += secret_problems(known, secret_keys)
    try:
        config = StackConfig.model_validate(known, context={"compared": compared})
    except ValidationError as err:
        hidden = set(secret_keys or ())
        problems += [line for e in err.errors(include_url=False) for line in _describe(e, hidden)]
    else:
        if not problems:
            return config
    raise ConfigError(problems, source)


M = TypeVar("M", bound=Model)


def revalidated(model: M, where: str, source: str = "", **changes: Any) -> M:
    """`model.replace(**changes)`, its validation errors a ConfigError naming each key under `where` (the model's
    own key path, such as kaistack:cluster.nodePools[0]): for what kaistack adds to a declared model (facts from
    AWS, labels it derives), which the declaration's rules must hold for too."""
    try:
        return model.replace(**changes)
    except ValidationError as err:
        raise ConfigError(model_problems(err, where, type(model)), source) from None


def model_problems(err: ValidationError, where: str, model: type[BaseModel]) -> list[str]:
    """`model`'s validation errors as "<where>.<key>: message" lines, keys as declared (aliases)."""
    lines = []
    sep = ":" if where == NAMESPACE else "."  # kaistack:cluster..., kaistack:cluster.nodePools[0].labels
    for e in err.errors(include_url=False):
        loc = _aliases(model, tuple(e.get("loc", ())))
        key = _format_path(loc).removeprefix(NAMESPACE).lstrip(":")
        message = str(e.get("msg", "invalid")).removeprefix("Value error, ")
        if key:
            lines.append(f"{where}{sep}{key}: {message}")
        elif where == NAMESPACE:  # a cross-field rule's lines carry their own key paths
            lines += [f"{NAMESPACE}:{line}" for line in message.split("\n")]
        else:
            lines.append(f"{where}: {message}")
    return lines


# --- pydantic errors -> "kaistack:key.path: message" ------------------------------------------------


# Its value is a secret wherever it comes from (Pulumi decrypts it before the program sees it).
KUBECONFIG_LOC = ("cluster", "existing", "kubeconfig")
NOT_SHOWN = "the value is not shown: the key holds a secret"


def _describe(error: Mapping[str, Any], secret_keys: Collection[str] = ()) -> list[str]:
    loc = tuple(error.get("loc", ()))
    path = _format_path(loc)
    kind = error.get("type", "")
    value = error.get("input")
    if kind == "extra_forbidden":
        allowed = _allowed_keys(loc[:-1])
        hint = f"; allowed: {', '.join(allowed)}" if allowed else ""
        return [f"{path}: unknown key{hint}"]
    if kind == "missing":
        return [f"{path}: required key is missing"]
    message = str(error.get("msg", "invalid"))
    message = message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if kind == "value_error" and not loc:
        # Cross-field problems carry their own key paths, one per line; a line about a secret key may quote it.
        lines = message.split("\n")
        return [f"{NAMESPACE}:{_hide_secret_line(line, secret_keys)}" for line in lines]
    if (loc and loc[0] in secret_keys) or loc[: len(KUBECONFIG_LOC)] == KUBECONFIG_LOC:
        # Pulumi hands the program decrypted values, and this message reaches CI logs and PR comments. Pydantic's
        # own messages name only the rule; a validator's may quote the value.
        if kind in ("value_error", "assertion_error"):
            return [f"{path}: invalid value ({NOT_SHOWN})"]
        return [f"{path}: {message} ({NOT_SHOWN})"]
    if kind in ("string_type", "literal_error") and isinstance(value, bool):
        # `sharing: off` is the README's own spelling: YAML 1.1 (PyYAML, Pulumi's go-yaml v2) reads it as false.
        expected = "expected a string" if kind == "string_type" else message
        return [f"{path}: {expected}, got {str(value).lower()} (YAML reads an unquoted yes/no/on/off/true/false "
                "as a boolean: quote the word)"]  # fmt: skip
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return [f"{path}: expected a mapping of keys, got {_show(value)}"]
    if kind == "value_error" or kind.startswith("model_"):
        return [f"{path}: {message}"]
    return [f"{path}: {message}, got {_show(value)}"]


def _hide_secret_line(line: str, secret_keys: Collection[str]) -> str:
    key = line.split(":", 1)[0]
    top = key.split(".", 1)[0].split("[", 1)[0]
    return f"{key}: invalid value ({NOT_SHOWN})" if top in secret_keys and ":" in line else line


# What pydantic puts in an error's location that is no key: a union's branch (by type) and a mapping key's marker.
# Matched whole: a label key may start with "int" or "str" (`interconnect`).
_MARKERS = frozenset(
    {"int", "str", "float", "bool", "none", "[key]", "is-instance[Quantity]", "constrained-str", "constrained-int"}
)


def _format_path(loc: tuple[Any, ...]) -> str:
    text = NAMESPACE
    for i, part in enumerate(loc):
        if isinstance(part, int):
            text += f"[{part}]"
        elif part in _MARKERS or str(part).startswith(("literal[", "function-", "list[", "union[", "dict[")):
            continue  # pydantic's union-branch and mapping-key markers are not keys
        else:
            text += (":" if i == 0 else ".") + shown_key(part)
    return text


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _aliases(model: Any, loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """`loc` with each field name as the declaration spells it (`gpu_product` -> `gpuProduct`)."""
    out: list[Any] = []
    for part in loc:
        model = _unwrap(model)
        fields = model.model_fields if isinstance(model, type) and issubclass(model, BaseModel) else {}
        if isinstance(part, str) and part in fields:
            out.append(fields[part].alias or part)
            model = fields[part].annotation
        else:
            out.append(part)
    return tuple(out)


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    """Walk the model types along `loc` to list the keys allowed where an unknown key was found."""
    model: Any = StackConfig
    for part in loc:
        model = _unwrap(model)
        if isinstance(part, int) or part in ("literal", "dict"):
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return []
        field = next((f for n, f in model.model_fields.items() if part in (n, f.alias)), None)
        if field is None:
            return []
        model = field.annotation
    model = _unwrap(model)
    if isinstance(model, type) and issubclass(model, BaseModel):
        return [f.alias or n for n, f in model.model_fields.items()]
    return []


def _unwrap(annotation: Any) -> Any:
    """Optional[X] / list[X] / Annotated[X, ...] -> X (the first model type inside)."""
    for _ in range(5):
        origin = get_origin(annotation)
        if origin in (typing.Union, types.UnionType):
            candidates = [a for a in get_args(annotation) if a is not type(None)]
            models = [a for a in candidates if isinstance(a, type) and issubclass(a, BaseModel)]
            annotation = models[0] if models else candidates[0]
        elif origin in (list, typing.Annotated) or (origin is not None and origin is not Literal):
            args = get_args(annotation)
            if not args:
                return annotation
            annotation = args[-1] if origin is dict else args[0]
        else:
            return annotation
    return annotation
