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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kaistack.declaration.shell_words import commands, tokens, words


def mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def seq(value: Any) -> Sequence[Any]:
    return value if isinstance(value, Sequence) and not isinstance(value, str | bytes) else ()


FLAG = "--gpu-memory-utilization"
VLLM_DEFAULT_UTILIZATION = 0.9  # vLLM EngineArgs.gpu_memory_utilization default before v0.21.0
VLLM_NEW_DEFAULT_UTILIZATION = 0.92
VLLM_NEW_DEFAULT_SINCE = (0, 21)
CONFIG_FLAG = "--config"  # a YAML file of options (FlexibleArgumentParser)
# The server sizes its KV cache from these rather than from its utilization (CacheConfig.kv_cache_memory_bytes:
# "when not-None ignores gpu_memory_utilization"; num_gpu_blocks_override).
CACHE_SIZE_FLAGS = ("--kv-cache-memory-bytes", "--num-gpu-blocks-override")
# Variables that images and charts commonly hand to the flag.
UTILIZATION_ENV_VARS = ("VLLM_GPU_MEMORY_UTILIZATION", "GPU_MEMORY_UTILIZATION")
_OPERATOR = re.compile(r"[;&|<>()]")


@dataclass(frozen=True)
class Utilization:
    value: float | None  # None: set, but to something we cannot resolve ($(VAR) from a Secret, ${SHELL_VAR})
    where: str  # "args", "command" or "env VLLM_GPU_MEMORY_UTILIZATION"


# The shortest abbreviation read as the flag. argparse takes any unambiguous prefix; which shorter ones are
# unambiguous depends on the vLLM version's other options, so only this one is read.
_SHORTEST = "--gpu-memory-u"


def _is_flag(name: str) -> bool:
    """vLLM's FlexibleArgumentParser reads `_` as `-` in an option's name, and argparse (allow_abbrev, its
    default) takes an unambiguous prefix: vllm-project/vllm vllm/utils/argparse_utils.py, parse_args."""
    name = "--" + name[2:].replace("_", "-")
    return name.startswith(_SHORTEST) and FLAG.startswith(name)


def _flag_values(argv: list[str]) -> Iterator[tuple[int, str]]:
    """(index of the flag's token, its value) for each --gpu-memory-utilization in argv."""
    for i, token in enumerate(argv):
        if not token.startswith("--"):
            continue
        name, equals, value = token.partition("=")
        if not _is_flag(name):
            continue
        if equals:
            yield i, value
        elif i + 1 < len(argv):
            yield i, argv[i + 1]


def _has_option(argv: list[str], names: Sequence[str]) -> bool:
    """One of `names` (full option names; `_` read as `-`) is on the command line."""
    return any(token.partition("=")[0].replace("_", "-") in names for token in argv if token.startswith("--"))


# How much longer than its text an expansion may grow. Each variable may reference the ones before it twice, so a
# pod of a few kilobytes can expand to 2**n characters (`V1=$(V0)$(V0)`, `V2=$(V1)$(V1)`, ...), which the API
# server admits. An expansion is cut there and ends in UNREADABLE: what precedes a shell operator before the cut is
# kept, so a number that an operator ends (`0.95;...`) is still read, and text that is whole only past the cut reads
# as no number (as a value from a Secret does: `0.95` padded with thousands of spaces, which float() would take).
EXPANSION_GROWTH_MAX = 4096
UNREADABLE = "\x00"  # no number holds it, nor any text that references it


def expand(text: str, env: Mapping[str, str]) -> str:
    """`$(VAR)` references as the kubelet expands them (kubernetes/kubernetes
    third_party/forked/golang/expansion/expand.go, Expand): a known name gives its value, an unknown one stays
    `$(VAR)`, `$$` is one `$`, and any other `$` is kept. Cut, ending in UNREADABLE, where the text would grow by
    more than EXPANSION_GROWTH_MAX characters."""
    out: list[str] = []
    room = len(text) + EXPANSION_GROWTH_MAX
    i = 0
    while i < len(text):
        if text[i] != "$" or i + 1 == len(text):
            piece, i = text[i], i + 1
        elif text[i + 1] == "$":
            piece, i = "$", i + 2
        elif text[i + 1] == "(" and (close := text.find(")", i + 2)) != -1:
            name = text[i + 2 : close]
            piece, i = env.get(name, f"$({name})"), close + 1
        else:
            piece, i = text[i : i + 2], i + 2
        if len(piece) > room:
            # Only what precedes a shell operator can still be read (_number ends the word there): a cut value keeps
            # that much, so a chain of them stays short.
            kept = "".join(out) + piece[:room]
            operator = _OPERATOR.search(kept)
            return (kept[: operator.end()] if operator else "") + UNREADABLE
        room -= len(piece)
        out.append(piece)
    return "".join(out)


def _literal_env(container: Mapping[str, Any]) -> dict[str, str]:
    """The container's literal variables, each expanded with those before it, as the kubelet builds them
    (pkg/kubelet/kubelet_pods.go makeEnvironmentVariables): `UTIL=$(BASE)` after `BASE=0.95` is 0.95."""
    env: dict[str, str] = {}
    for item in seq(container.get("env")):
        item = mapping(item)
        if "name" in item and isinstance(item.get("value"), str | int | float):
            env[str(item["name"])] = expand(str(item["value"]), env)
    return env


def _number(text: str, env: Mapping[str, str] | None) -> float | None:
    """The number a command-line word (`env`: the variables it may reference) or a variable's expanded value
    (`env` None: expanded once already) stands for."""
    text = text.strip().strip("'\"")
    if env is not None:
        text = expand(text, env)
    # shlex keeps a shell operator on the word before it (`0.5;`, `0.5&&`); sh ends the word there.
    text = _OPERATOR.split(text, maxsplit=1)[0]
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
    """Every place the container sets vLLM's utilization: each flag on its server's command line (command and args
    read as one argv, as the kubelet runs them: a flag ending `command` takes its value from `args`; in a shell
    script, the command that launches vLLM), the variables `env_vars`, and a `--config` file vLLM reads its options
    from (FlexibleArgumentParser, vllm-project/vllm vllm/utils/argparse_utils.py), whose content is not known here."""
    env = _literal_env(container)
    items = [*seq(container.get("command")), *seq(container.get("args"))]
    from_item = words(items)
    argv = [word for _, word in from_item]
    start, end = _server_span(argv)
    in_command = len(seq(container.get("command")))
    # argparse keeps the last of a repeated option.
    found = [
        Utilization(_number(raw, env), "command" if from_item[start + i][0] < in_command else "args")
        for i, raw in list(_flag_values(argv[start:end]))[-1:]
    ]
    if not found and _has_option(argv[start:end], (CONFIG_FLAG,)):
        found.append(Utilization(None, f"{CONFIG_FLAG} file"))
    found += [Utilization(_number(env[name], None), f"env {name}") for name in env_vars if name in env]
    return found + _from_elsewhere(container, env_vars)


def _server_span(argv: list[str]) -> tuple[int, int]:
    """The part of argv that is vLLM's command line: in a script of several commands, the last that launches
    vLLM (the others, `pip install`, `echo`, a line commented out of a continued command, pass it nothing);
    otherwise all of it."""
    spans = commands(argv)
    launching = [(a, b) for a, b in spans if _vllm_command(argv[a:b])]
    return launching[-1] if launching else (0, len(argv))


def server_argv(container: Mapping[str, Any]) -> list[str]:
    """vLLM's own command line in the container (_server_span)."""
    argv = command_line(container)
    start, end = _server_span(argv)
    return argv[start:end]


def vllm_utilization(container: Mapping[str, Any]) -> Utilization | None:
    """What vLLM in this container takes of its GPU, as far as the container says: the last flag on the command
    line (argparse keeps the last), else a variable of UTILIZATION_ENV_VARS (the lowest where several are set),
    else vLLM's default where the container launches vLLM. Its value is None where the figure is not known here: set
    from a Secret or a shell variable, read from a `--config` file, or where the server sizes its cache by bytes
    or blocks (then it needs utilization x the GPU free to start but holds what the weights and that cache take).
    None: the container does not launch vLLM and sets no utilization."""
    every = utilizations(container, UTILIZATION_ENV_VARS)
    on_line = [u for u in every if not u.where.startswith("env")]  # the last flag, or a --config file
    variables = [u for u in every if u.where.startswith("env")]
    if on_line and on_line[0].where == f"{CONFIG_FLAG} file":
        return on_line[0]
    if on_line:
        found = Utilization(on_line[0].value, "command line")
    elif variables:
        unknown = [u for u in variables if u.value is None]
        found = unknown[0] if unknown else min(variables, key=lambda u: u.value or 0.0)
    elif launches_vllm(container):
        found = Utilization(default_utilization(str(container.get("image") or "")), "vLLM's default")
    else:
        return None
    if sizes_cache(container):
        return Utilization(None, "cache sized by bytes or blocks")
    if found.value is not None and not 0 < found.value <= 1:  # vLLM refuses it (gt=0, le=1): no server runs
        return Utilization(None, found.where)
    return found


def sizes_cache(container: Mapping[str, Any]) -> bool:
    """The command line sizes vLLM's KV cache by bytes or blocks rather than by the utilization."""
    return _has_option(server_argv(container), CACHE_SIZE_FLAGS)


def default_utilization(image: str, fallback: float = VLLM_DEFAULT_UTILIZATION) -> float:
    """vLLM's default utilization for an image: 0.92 from v0.21.0 (vllm-project/vllm PR #38284, which also counts
    CUDA graphs in the budget), `fallback` (0.9) before it or where the tag names no version. A `fallback` other
    than 0.9 (the policy pack's vllmDefaultUtilization, set) wins."""
    *path, last = image.lower().split("/")
    _, colon, tag = last.partition("@")[0].rpartition(":")
    # vLLM's own images (vllm/vllm-openai) are tagged v<version>; another's tag (nvcr.io/nvidia/vllm:25.09-py3,
    # python:3.11) says nothing of the vLLM inside.
    found = re.match(r"v(\d+)\.(\d+)", tag) if colon and path[-1:] == ["vllm"] else None
    if fallback != VLLM_DEFAULT_UTILIZATION or not found:
        return fallback
    if (int(found.group(1)), int(found.group(2))) >= VLLM_NEW_DEFAULT_SINCE:
        return VLLM_NEW_DEFAULT_UTILIZATION
    return fallback


def _vllm_image(container: Mapping[str, Any]) -> bool:
    image = str(container.get("image") or "").lower()
    *path, last = image.split("/")
    # An organisation named vllm counts, not one whose name starts so (ghcr.io/vllm-project/semantic-router/...).
    return "vllm" in last or "vllm" in path


def _vllm_command(argv: list[str]) -> bool:
    for i, token in enumerate(argv):
        base = token.rsplit("/", 1)[-1]
        if base == "vllm" and i + 1 < len(argv) and argv[i + 1] == "serve":
            return True
        if token.startswith("vllm.entrypoints"):
            return True
    return False


def runs_vllm(container: Mapping[str, Any]) -> bool:
    """vLLM images (vllm/vllm-openai, ...) or a `vllm serve` / `vllm.entrypoints` command line."""
    return _vllm_image(container) or _vllm_command(command_line(container))


def launches_vllm(container: Mapping[str, Any]) -> bool:
    """vLLM's server runs in it: a vLLM image left to its own entrypoint (no `command`), or a `vllm serve` /
    `vllm.entrypoints` command line. A vLLM image running a command of its own (`python app.py`) may build its
    engine with any utilization."""
    return (_vllm_image(container) and not seq(container.get("command"))) or _vllm_command(command_line(container))


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
        literal = isinstance(last.get("value", ""), str | int | float)
        fraction = _number(env.get(TGI_ENV, ""), None) if literal else None
        return [Utilization(fraction, f"env {TGI_ENV}")]
    for source in seq(container.get("envFrom")):
        prefix = str(mapping(source).get("prefix") or "")
        if mapping(source).get("configMapRef") is not None and TGI_ENV.startswith(prefix):
            return [Utilization(None, "envFrom")]
    return []
