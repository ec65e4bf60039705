"""How gpu-memory-utilization-within-fraction reads a vLLM container, and what vLLM does with it.

- Options are read from the command line as the kubelet runs it (command, then args), argparse keeping the last of
  a repeated option; vLLM's FlexibleArgumentParser also reads options from a `--config` YAML file
  (vllm-project/vllm vllm/utils/argparse_utils.py), whose content is not known here.
- `--kv-cache-memory-bytes` / `--num-gpu-blocks-override` size the cache instead of the utilization
  (CacheConfig.kv_cache_memory_bytes: "when not-None ignores gpu_memory_utilization"), but vLLM still starts only
  when utilization x the GPU is free (vllm-project/vllm@35d5cda123ec vllm/v1/worker/gpu_worker.py init_device).
- The default utilization is 0.9, and 0.92 from v0.21.0 (vllm-project/vllm PR #38284; config/cache.py
  `Field(default=0.92, ...)` in later releases).
- Only a container that launches vLLM's server (the image's own entrypoint, `vllm serve`, `vllm.entrypoints`) is
  held to the default: a vLLM image running a program of its own may build its engine with any utilization.
"""

from __future__ import annotations

from typing import Any

import pytest
from policy_builders import container, deployment, res

from kaistack.declaration.model_servers import (
    EXPANSION_GROWTH_MAX,
    UNREADABLE,
    Utilization,
    default_utilization,
    expand,
    vllm_utilization,
)
from kaistack.guardrails.facts import StackFacts
from kaistack.guardrails.rules import gpu_memory_utilization_within_fraction
from kaistack.guardrails.settings import Settings

IMAGE = "vllm/vllm-openai:v0.11.0"


def _check(fraction: str = "0.5", settings: Settings | None = None, **c: Any) -> list[str]:
    c.setdefault("image", IMAGE)
    props = deployment(annotations={"gpu-fraction": fraction}, containers=[container(name="vllm", **c)])
    return gpu_memory_utilization_within_fraction(res("Deployment", props), settings or Settings(), StackFacts())


def test_a_flag_ending_the_command_takes_its_value_from_the_args() -> None:
    [found] = _check(command=["vllm", "serve", "m", "--gpu-memory-utilization"], args=["0.8"])
    assert found.startswith("container vllm sets GPU memory utilization 0.8 (command), above the pod's share")


def test_of_a_repeated_flag_only_the_last_is_judged() -> None:
    """argparse keeps the last: 0.9 then 0.45 runs at 0.45, within a share of 0.5."""
    assert _check(args=["--gpu-memory-utilization", "0.9", "--gpu-memory-utilization", "0.45"]) == []


def test_a_config_file_may_set_it_so_no_default_is_assumed() -> None:
    assert _check(args=["--config", "/etc/vllm/serve.yaml"]) == []


def test_a_config_file_does_not_hide_a_flag_on_the_command_line() -> None:
    [found] = _check(args=["--config=/etc/vllm/serve.yaml", "--gpu-memory-utilization=0.7"])
    assert "utilization 0.7 (args)" in found


def test_a_vllm_image_running_its_own_program_is_not_held_to_the_default() -> None:
    assert _check(command=["python", "app.py"]) == []


def test_vllm_started_by_module_in_a_vllm_image_is_held_to_the_default() -> None:
    [found] = _check(command=["python3", "-m", "vllm.entrypoints.openai.api_server"], args=["--model", "m"])
    assert "runs vLLM without --gpu-memory-utilization, so vLLM takes its default 0.9" in found


def test_from_v0_21_the_default_is_0_92() -> None:
    [found] = _check(fraction="0.91", image="vllm/vllm-openai:v0.21.0")
    assert "so vLLM takes its default 0.92 of the GPU's memory, above the pod's share (gpu-fraction 0.91)" in found


def test_a_cache_sized_by_bytes_still_needs_the_utilization_free_to_start() -> None:
    [found] = _check(args=["--kv-cache-memory-bytes", "8G", "--gpu-memory-utilization=0.8"])
    assert "so it still starts only when that much of the GPU is free (it sizes its cache by" in found
    assert "it would take memory promised" not in found


def test_a_cache_sized_by_blocks_without_the_flag_needs_the_default_free() -> None:
    [found] = _check(args=["--num_gpu_blocks_override=1000"])
    assert "so vLLM needs its default 0.9 of the GPU's memory free to start, above the pod's share" in found


SCRIPT = "vllm serve m \\\n  --gpu-memory-utilization 0.5\n# was: --gpu-memory-utilization 0.9\n"


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        (SCRIPT, 0.5),
        ("vllm serve m --gpu-memory-utilization 0.5;# --gpu-memory-utilization 0.9", 0.5),
        ("vllm serve m --revision r#1 --gpu-memory-utilization 0.4", 0.4),
        ("vllm serve m --served-model-name '# x' --gpu-memory-utilization 0.3", 0.3),
    ],
    ids=["commented-out-line", "after-an-operator", "inside-a-word", "inside-quotes"],
)
def test_a_shell_script_is_read_without_its_comments(script: str, expected: float) -> None:
    """sh drops a `#` that starts a word to the end of its line, and keeps one inside a word or quotes: a flag
    commented out is not the one vLLM runs with, and a `#` in a value does not hide the flags after it."""
    found = vllm_utilization(container(image=IMAGE, command=["sh", "-c"], args=[script]))
    assert found is not None
    assert found.value == expected


# --- one container's effective utilization (the capacity note and diagnose) -----------------------------------


@pytest.mark.parametrize(
    ("c", "expected"),
    [
        ({"image": IMAGE}, (0.9, "vLLM's default")),
        ({"image": "vllm/vllm-openai:v0.25.1"}, (0.92, "vLLM's default")),
        ({"image": IMAGE, "args": ["--gpu-memory-utilization", "0.3", "--gpu-memory-utilization=0.6"]}, (0.6, None)),
        (
            {"image": IMAGE, "args": ["--gpu-memory-utilization=0.7"], "env": {"GPU_MEMORY_UTILIZATION": "0.2"}},
            (0.7, None),
        ),
        ({"image": IMAGE, "env": {"VLLM_GPU_MEMORY_UTILIZATION": "0.4", "GPU_MEMORY_UTILIZATION": "0.3"}}, (0.3, None)),
        ({"image": IMAGE, "args": ["--config", "f.yaml"]}, (None, "--config file")),
        ({"image": IMAGE, "args": ["--gpu-memory-utilization=0.5", "--kv-cache-memory-bytes=8G"]}, (None, None)),
        ({"image": IMAGE, "command": ["python", "app.py"]}, "none"),
        ({"image": "busybox:1.37.0"}, "none"),
        ({"image": IMAGE, "args": ["--gpu-memory-utilization=90"]}, (None, "command line")),
        ({"image": IMAGE, "args": ["--gpu-memory-utilization=inf"]}, (None, "command line")),
        ({"image": IMAGE, "args": ["--gpu-memory-utilization=-0.5"]}, (None, "command line")),
    ],
    ids=[
        "default",
        "new-default",
        "last-flag",
        "flag-over-env",
        "lowest-env",
        "config",
        "sized",
        "own-program",
        "no",
        "percent",
        "infinite",
        "negative",
    ],
)
def test_the_utilization_one_container_gives_vllm(c: dict[str, Any], expected: Any) -> None:
    found = vllm_utilization(container(**c))
    if expected == "none":
        assert found is None
        return
    value, where = expected
    assert found is not None
    assert found.value == value
    if where is not None:
        assert found.where == where


@pytest.mark.parametrize(
    ("image", "fallback", "expected"),
    [
        ("vllm/vllm-openai:v0.21.0", 0.9, 0.92),
        ("vllm/vllm-openai:v0.20.2", 0.9, 0.9),
        ("docker.io/vllm/vllm-openai:v0.22.1", 0.9, 0.92),
        ("registry.example.com:5000/vllm:0.22", 0.9, 0.9),
        ("nvcr.io/nvidia/vllm:25.09-py3", 0.9, 0.9),
        ("python:3.11-slim", 0.9, 0.9),
        ("vllm/vllm-openai:latest", 0.9, 0.9),
        ("vllm/vllm-openai@sha256:" + "a" * 64, 0.9, 0.9),
        ("vllm/vllm-openai:v0.21.0", 0.8, 0.8),
    ],
    ids=["v0.21", "v0.20", "docker-hub", "another-registry", "nvidia", "python", "latest", "digest", "configured"],
)
def test_vllms_default_by_image_tag(image: str, fallback: float, expected: float) -> None:
    """Only vLLM's own images (organisation vllm) are tagged v<vLLM version>; another image's tag says nothing of
    the vLLM inside it."""
    assert default_utilization(image, fallback) == expected


@pytest.mark.parametrize(
    ("text", "expanded"),
    [
        ("$(A)", "1"),
        ("x$(A)y$(A)", "x1y1"),
        ("$(MISSING)", "$(MISSING)"),
        ("$$(A)", "$(A)"),
        ("$$$(A)", "$1"),
        ("$(A", "$(A"),
        ("$A", "$A"),
        ("cost$", "cost$"),
        ("$()", "$()"),
    ],
)
def test_variable_references_expand_as_the_kubelet_expands_them(text: str, expanded: str) -> None:
    """kubernetes/kubernetes third_party/forked/golang/expansion/expand.go: a known name gives its value, an
    unknown one stays as written, `$$` is an escaped `$`, an unclosed or bare `$` is kept."""
    assert expand(text, {"A": "1"}) == expanded


def _doubling_chain(count: int) -> list[dict[str, str]]:
    """`V0=0.5`, `V1=$(V0)$(V0)`, ...: each variable twice the one before, a few kilobytes of pod for 2**count."""
    return [{"name": "V0", "value": "0.5"}] + [
        {"name": f"V{i}", "value": f"$(V{i - 1})$(V{i - 1})"} for i in range(1, count)
    ]


def test_a_reference_chain_that_doubles_each_step_is_not_expanded_past_the_bound() -> None:
    """The API server admits such a pod (a tenant's, reaching the pack, lint and diagnose): 2**40 characters
    were built (MemoryError, or the OOM killer). A value past EXPANSION_GROWTH_MAX is no number kaistack reads."""
    env = [*_doubling_chain(40), {"name": "VLLM_GPU_MEMORY_UTILIZATION", "value": "$(V39)"}]
    container = {"name": "m", "image": "vllm/vllm-openai:v0.9.1", "env": env}
    assert vllm_utilization(container) == Utilization(None, "env VLLM_GPU_MEMORY_UTILIZATION")


def test_a_flag_referencing_a_runaway_variable_is_unknown_not_expanded() -> None:
    container = {
        "name": "m",
        "image": "vllm/vllm-openai:v0.9.1",
        "env": _doubling_chain(40),
        "args": ["--gpu-memory-utilization", "$(V39)"],
    }
    assert vllm_utilization(container) == Utilization(None, "command line")


def test_a_chain_within_the_bound_still_expands_as_the_kubelet_does() -> None:
    """Growth up to the bound gives the kubelet's text; one reference more, and the value is past it."""
    assert expand("$(V)", {"V": "9" * EXPANSION_GROWTH_MAX}) == "9" * EXPANSION_GROWTH_MAX
    assert expand("$(V)$(V)", {"V": "9" * EXPANSION_GROWTH_MAX}) == UNREADABLE


def test_a_number_a_shell_operator_ends_is_read_past_the_bound() -> None:
    """sh ends the word at the operator (_number), so what follows it, however long, does not matter."""
    container = {
        "name": "m",
        "image": "vllm/vllm-openai:v0.9.1",
        "env": [{"name": "U", "value": "0.95;" + "x" * (2 * EXPANSION_GROWTH_MAX)}],
        "args": ["--gpu-memory-utilization", "$(U)"],
    }
    assert vllm_utilization(container) == Utilization(0.95, "command line")


def test_a_number_whole_only_past_the_bound_is_not_read() -> None:
    """Documented: `0.95` padded with more spaces than the bound reads as unknown, as a value from a Secret does."""
    container = {
        "name": "m",
        "image": "vllm/vllm-openai:v0.9.1",
        "env": [{"name": "U", "value": "0.95" + " " * (2 * EXPANSION_GROWTH_MAX)}],
        "args": ["--gpu-memory-utilization", "$(U)"],
    }
    assert vllm_utilization(container) == Utilization(None, "command line")


def test_a_long_text_without_references_is_its_own_expansion() -> None:
    """The bound is on growth: a command word longer than it, with nothing to expand, stays as written."""
    text = "x" * (3 * EXPANSION_GROWTH_MAX)
    assert expand(text, {}) == text
