"""How much GPU memory a container tells its inference server to take.

KAI does not isolate GPU memory (kai.md §6.4; docs/gpu-sharing/README.md): a pod with
`gpu-fraction: 0.5` shares the physical GPU with others, and a vLLM inside it preallocates
`--gpu-memory-utilization` x the whole GPU's memory. The setting hides in three places: a flag in
`command`/`args` (also inside one shell string, `sh -c "vllm serve M --gpu-memory-utilization=0.7"`),
or an environment variable; `$(VAR)` references resolve against the container's literal env.

Hugging Face's TGI sizes its KV cache from the GPU's free memory less (1 - f x 0.9) of its total, where f is
`--cuda-memory-fraction` or CUDA_MEMORY_FRACTION (default 1.0), and caps its process at f x the GPU
(huggingface/text-generation-inference@v3.3.7 launcher/src/main.rs:810-813, clap 4 without inferred long names;
server/text_generation_server/utils/import_utils.py get_cuda_free_memory, utils/dist.py:13,56,
models/globals.py:32). So f, like vLLM's utilization, must stay within the pod's share. That bound is needed, not
enough: TGI takes (1 - 0.9 f) of the total from the memory still free when it starts, so beside neighbours that
already hold more than about 0.9 f of the GPU it finds no room for its cache and does not start; on a GPU shared
without isolation TGI must start first (kai.sharing: isolated shows it its share as the whole GPU).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


def mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def seq(value: Any) -> Sequence[Any]:
    return value if isinstance(value, Sequence) and not isinstance(value, str | bytes) else ()


FLAG = "--gpu-memory-utilization"
VLLM_DEFAULT_UTILIZATION = 0.9  # vLLM EngineArgs.gpu_memory_utilization default
# Variables that images and charts commonly hand to the flag.
UTILIZATION_ENV_VARS = ("VLLM_GPU_MEMORY_UTILIZATION", "GPU_MEMORY_UTILIZATION")
_VAR_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


@dataclass(frozen=True)
class Utilization:
    value: float | None  # None: set, but to something we cannot resolve ($(VAR) from a Secret, ${SHELL_VAR})
    where: str  # "args", "command" or "env VLLM_GPU_MEMORY_UTILIZATION"


def tokens(strings: Sequence[Any]) -> list[str]:
    """Argv tokens, with shell strings (those holding whitespace) split the way `sh -c` would."""
    out: list[str] = []
    for item in strings:
        text = str(item)
        if any(ch.isspace() for ch in text.strip()):
            try:
                out.extend(shlex.split(text, comments=False))
            except ValueError:  # unbalanced quotes: fall back to whitespace
                out.extend(text.split())
        else:
            out.append(text.strip())
    return out


# The shortest abbreviation read as the flag. argparse takes any unambiguous prefix; which shorter ones are
# unambiguous depends on the vLLM version's other options, so only this one is read.
_SHORTEST = "--gpu-memory-u"


def _is_flag(name: str) -> bool:
    """vLLM's FlexibleArgumentParser reads `_` as `-` in an option's name, and argparse (allow_abbrev, its
    default) takes an unambiguous prefix: vllm-project/vllm vllm/utils/argparse_utils.py, parse_args."""
    name = "--" + name[2:].replace("_", "-")
    return name.startswith(_SHORTEST) and FLAG.startswith(name)


def _flag_values(argv: list[str]) -> Iterator[str]:
    for i, token in enumerate(argv):
        if not token.startswith("--"):
            continue
        name, equals, value = token.partition("=")
        if not _is_flag(name):
            continue
        if equals:
            yield value
        elif i + 1 < len(argv):
            yield argv[i + 1]


def _literal_env(container: Mapping[str, Any]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in seq(container.get("env")):
        item = mapping(item)
        if "name" in item and isinstance(item.get("value"), str | int | float):
            env[str(item["name"])] = str(item["value"])
    return env


def _number(text: str, env: Mapping[str, str]) -> float | None:
    text = _VAR_REF.sub(lambda m: env.get(m.group(1), m.group(0)), text.strip().strip("'\""))
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value else None  # NaN


def _from_elsewhere(container: Mapping[str, Any], names: Sequence[str]) -> list[Utilization]:
    """`names` set from a ConfigMap or Secret (valueFrom): set, to a value that cannot be read here."""
    out = []
    for item in seq(container.get("env")):
        item = mapping(item)
        if item.get("name") in names and "value" not in item and item.get("valueFrom") is not None:
            out.append(Utilization(None, f"env {item['name']} (valueFrom)"))
    return out


def command_line(container: Mapping[str, Any]) -> list[str]:
    """The container's argv as the kubelet runs it: command, then args, shell strings split."""
    return tokens([*seq(container.get("command")), *seq(container.get("args"))])


def utilizations(container: Mapping[str, Any], env_vars: Sequence[str]) -> list[Utilization]:
    env = _literal_env(container)
    found: list[Utilization] = []
    for field in ("command", "args"):
        found += [Utilization(_number(raw, env), field) for raw in _flag_values(tokens(seq(container.get(field))))]
    found += [Utilization(_number(env[name], env), f"env {name}") for name in env_vars if name in env]
    return found + _from_elsewhere(container, env_vars)


def vllm_utilization(container: Mapping[str, Any]) -> Utilization | None:
    """The share of a GPU's memory the container tells vLLM to take: its flag or a variable of
    UTILIZATION_ENV_VARS (the lowest where several are set), else vLLM's default when it runs vLLM; its value is
    None when one is set to something not known here. None: the container neither runs vLLM nor sets one."""
    found = utilizations(container, UTILIZATION_ENV_VARS)
    if not found:
        return Utilization(VLLM_DEFAULT_UTILIZATION, "vLLM's default") if runs_vllm(container) else None
    if any(u.value is None for u in found):
        return next(u for u in found if u.value is None)
    return min(found, key=lambda u: u.value or 0.0)


def runs_vllm(container: Mapping[str, Any]) -> bool:
    """vLLM images (vllm/vllm-openai, ...) or a `vllm serve` / `vllm.entrypoints` command line."""
    image = str(container.get("image") or "").lower()
    *path, last = image.split("/")
    # An organisation named vllm counts, not one whose name starts so (ghcr.io/vllm-project/semantic-router/...).
    if "vllm" in last or "vllm" in path:
        return True
    argv = command_line(container)
    for i, token in enumerate(argv):
        base = token.rsplit("/", 1)[-1]
        if base == "vllm" and i + 1 < len(argv) and argv[i + 1] == "serve":
            return True
        if token.startswith("vllm.entrypoints"):
            return True
    return False


# --- Hugging Face TGI ------------------------------------------------------------------------------------

TGI_FLAG = "--cuda-memory-fraction"
TGI_ENV = "CUDA_MEMORY_FRACTION"
TGI_DEFAULT_FRACTION = 1.0  # launcher/src/main.rs: #[clap(default_value = "1.0", long, env)]


def runs_tgi(container: Mapping[str, Any]) -> bool:
    """TGI's images (ghcr.io/huggingface/text-generation-inference, whose entrypoint execs the launcher) or a
    `text-generation-launcher` command line."""
    image = str(container.get("image") or "").lower()
    if "text-generation-inference" in image.rsplit("/", 1)[-1]:
        return True
    argv = command_line(container)
    # The launcher, or a shard run by hand (`text-generation-server serve`, server/pyproject.toml:66-67, cli.py:41),
    # which reads CUDA_MEMORY_FRACTION itself (utils/dist.py:13).
    bases = [token.rsplit("/", 1)[-1] for token in argv]
    return "text-generation-launcher" in bases or any(
        b == "text-generation-server" and bases[i + 1 : i + 2] == ["serve"] for i, b in enumerate(bases)
    )


def tgi_knob(container: Mapping[str, Any]) -> str:
    """What sets TGI's fraction here: the launcher's flag, or the variable for a shard run by hand."""
    return TGI_ENV if "text-generation-server" in [t.rsplit("/", 1)[-1] for t in command_line(container)] else TGI_FLAG


def tgi_fractions(container: Mapping[str, Any]) -> list[Utilization]:
    """TGI's memory fraction as set on the command line (exact name: clap infers no prefixes) or, in a TGI
    container and only without the flag (clap takes the flag over its `env`), by CUDA_MEMORY_FRACTION; from a
    ConfigMap or Secret (valueFrom, envFrom) it is set to a value not known here."""
    env = _literal_env(container)
    found: list[Utilization] = []
    argv = command_line(container)
    for i, token in enumerate(argv):
        name, equals, value = token.partition("=")
        if name != TGI_FLAG:
            continue
        if equals:
            found.append(Utilization(_number(value, env), "command line"))
        elif i + 1 < len(argv):
            found.append(Utilization(_number(argv[i + 1], env), "command line"))
    if found or not runs_tgi(container):
        return found
    # The kubelet takes the last entry of a name; envFrom comes before env. A ConfigMap may carry TGI's settings;
    # a Secret (the Hugging Face token) is not taken to.
    last = next((mapping(e) for e in reversed(seq(container.get("env"))) if mapping(e).get("name") == TGI_ENV), None)
    if last is not None:
        if "value" not in last and last.get("valueFrom") is not None:
            return [Utilization(None, f"env {TGI_ENV} (valueFrom)")]
        return [Utilization(_number(str(last.get("value", "")), env), f"env {TGI_ENV}")]
    for source in seq(container.get("envFrom")):
        prefix = str(mapping(source).get("prefix") or "")
        if mapping(source).get("configMapRef") is not None and TGI_ENV.startswith(prefix):
            return [Utilization(None, "envFrom")]
    return []
