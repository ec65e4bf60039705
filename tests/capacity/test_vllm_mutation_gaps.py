"""What a mutation run of the vLLM readings found unpinned: the crowded-GPU note's wording and grouping
(kaistack/capacity/vllm_startup.py), and how a container's command line, environment and image say that it runs
vLLM or TGI and what it tells them to take (kaistack/declaration/model_servers.py). What it found in diagnose's
vllm-gpu-crowded is in tests/workflows/test_diagnose_vllm_gpu_crowded.py.

Upstream facts (see tests/guardrails/test_policy_vllm_reading.py): vLLM's argparse keeps the last of a repeated
option and reads only its own option names (an unambiguous prefix of at least `--gpu-memory-u`); `vllm serve` is the
server, `vllm bench serve` a benchmark client; TGI's `text-generation-server serve` is a shard run by hand, which
reads CUDA_MEMORY_FRACTION, and `text-generation-server download-weights` only fetches weights.
"""

from __future__ import annotations

from typing import Any

from test_check_vllm_startup import _workload

from kaistack.capacity import vllm_startup
from kaistack.capacity.vllm_startup import WHY, crowded_vllm_gpus
from kaistack.declaration.model_servers import (
    Utilization,
    launches_vllm,
    runs_tgi,
    runs_vllm,
    tgi_fractions,
    tgi_knob,
    utilizations,
    vllm_utilization,
)

VLLM_IMAGE = "vllm/vllm-openai:v0.11.0"
TGI_IMAGE = "ghcr.io/huggingface/text-generation-inference:3.3.7"
PYTHON_IMAGE = "python:3.12"


def _vllm_container(**fields: Any) -> dict[str, Any]:
    return {"name": "vllm", "image": VLLM_IMAGE, **fields}


def _half(pod: str, workload: str) -> tuple[str, str, float]:
    return (pod, workload, 0.5)


# --- the crowded-GPU note ---------------------------------------------------------------------------------------


def test_exactly_three_workloads_are_all_named_without_a_count_of_more() -> None:
    """Three is the most the note names: guards against "and 0 more" once the list reaches the limit."""
    servers = [(f"w{i}-0", f"w{i}", 0.4) for i in range(3)]
    [note] = crowded_vllm_gpus([("n/gpu0", servers)])
    assert note.startswith("w0, w1 and w2: KAI packs w0-0, w1-0 and w2-0 onto n/gpu0, whose vLLM servers")


def test_a_mix_on_several_gpus_is_told_on_the_first_and_the_others_are_counted() -> None:
    """Guards against naming the last GPU of the mix as the one shown and counting it again among "more"."""
    gpus = [("n/gpu0", [_half("a-0", "a"), _half("b-0", "b")]), ("n/gpu1", [_half("a-1", "a"), _half("b-1", "b")])]
    [note] = crowded_vllm_gpus(gpus)
    assert note.startswith("a and b: KAI packs a-0 and b-0 onto n/gpu0 (and the same mix onto 1 more: n/gpu1), ")


def test_the_same_workloads_listed_in_another_order_are_the_same_mix() -> None:
    """A GPU's servers come in whatever order the placement lists them: guards against a mix keyed by that order,
    which would give one note per order."""
    gpus = [("n/gpu0", [_half("a-0", "a"), _half("b-0", "b")]), ("n/gpu1", [_half("b-1", "b"), _half("a-1", "a")])]
    [note] = crowded_vllm_gpus(gpus)
    assert "(and the same mix onto 1 more: n/gpu1)" in note


def test_the_fix_follows_the_reason_as_a_sentence_of_its_own() -> None:
    """Guards against the fix's first letter being lost, doubled or taken from elsewhere when it is capitalised."""
    [note] = crowded_vllm_gpus([("n/gpu0", [_half("a-0", "a"), _half("b-0", "b")])])
    assert f"{WHY}. Lower the utilizations to sum to less than 1, leaving each server room" in note
    assert vllm_startup.FIX.startswith("lower the utilizations")


# --- which options are vLLM's flag --------------------------------------------------------------------------------


def test_the_end_of_options_marker_is_not_read_as_the_flag() -> None:
    """`sh -c 'exec vllm serve "$@"' --` passes the args through; `--` is a prefix of every option, and guards
    against reading any prefix (not only those from `--gpu-memory-u`) as the flag, here taking `--model` as its
    value."""
    c = _vllm_container(command=["sh", "-c", 'exec vllm serve "$@"', "--"], args=["--model", "m"])
    assert vllm_utilization(c) == Utilization(0.9, "vLLM's default")


def test_a_misspelt_flag_is_not_vllms_flag() -> None:
    """vLLM refuses `--gpu-memory-utilisation`; guards against reading every option that starts like the flag."""
    c = _vllm_container(args=["--model", "m", "--gpu-memory-utilisation=0.5"])
    assert vllm_utilization(c) == Utilization(0.9, "vLLM's default")


def test_a_token_not_starting_with_two_hyphens_is_not_an_option() -> None:
    """A flag pasted with a typographic dash is a positional argument to argparse: guards against reading the
    name of any token past its first two characters."""
    c = _vllm_container(args=["--model", "m", "\u2013-gpu-memory-utilization=0.5"])
    assert vllm_utilization(c) == Utilization(0.9, "vLLM's default")


def test_a_flag_left_without_its_value_at_the_end_is_skipped() -> None:
    """vLLM refuses a trailing `--gpu-memory-utilization`; guards against reading past the command line's end."""
    c = _vllm_container(args=["--model", "m", "--gpu-memory-utilization"])
    assert vllm_utilization(c) == Utilization(0.9, "vLLM's default")


def test_a_flag_first_in_args_is_told_as_set_in_args() -> None:
    """Guards against counting the first token of `args` as part of `command` when saying where it is set."""
    c = _vllm_container(command=["vllm", "serve", "m"], args=["--gpu-memory-utilization=0.8"])
    assert utilizations(c, ()) == [Utilization(0.8, "args")]


def test_a_shell_string_with_an_unbalanced_quote_is_still_read() -> None:
    """shlex refuses the apostrophe in the script's comment (sh runs it); guards against dropping the whole script
    rather than splitting it on whitespace."""
    c = _vllm_container(command=["sh", "-c", "exec vllm serve m --gpu-memory-utilization 0.3  # the team's budget"])
    assert vllm_utilization(c) == Utilization(0.3, "command line")


# --- which variables set it -------------------------------------------------------------------------------------


def test_another_variable_from_a_secret_leaves_vllms_default() -> None:
    """The Hugging Face token from a Secret says nothing of the utilization: guards against taking any variable set
    from elsewhere as the utilization's."""
    hf = _workload(image=VLLM_IMAGE, secretEnv={"HF_TOKEN": {"secret": "hf", "key": "token"}})
    assert vllm_startup.vllm_utilization(hf) == 0.9


def test_a_variable_declared_without_a_value_is_not_a_value_from_elsewhere() -> None:
    """`- name: VLLM_GPU_MEMORY_UTILIZATION` alone (no value, no valueFrom) comes from no ConfigMap or Secret:
    guards against reading it as set to something unknown."""
    c = _vllm_container(env=[{"name": "VLLM_GPU_MEMORY_UTILIZATION"}])
    assert vllm_utilization(c) == Utilization(0.9, "vLLM's default")


# --- which command lines run vLLM ----------------------------------------------------------------------------------


def test_a_command_ending_in_vllm_does_not_run_it() -> None:
    """`pip install vllm` names vLLM last: guards against looking past the end for `serve`."""
    assert not runs_vllm({"image": PYTHON_IMAGE, "command": ["pip", "install", "vllm"]})


def test_vllms_benchmark_client_is_not_the_server() -> None:
    """`vllm bench serve` starts a client that holds no GPU memory: guards against taking `vllm` followed by any
    word (or by anything but `serve`) as the server."""
    assert not launches_vllm({"image": PYTHON_IMAGE, "command": ["vllm", "bench", "serve", "--model", "m"]})


def test_vllm_serve_with_nothing_after_it_launches_vllm() -> None:
    """`vllm serve` alone serves vLLM's default model: guards against asking for a token after `serve`."""
    assert launches_vllm({"image": PYTHON_IMAGE, "command": ["vllm", "serve"]})


def test_vllm_run_by_its_path_launches_vllm() -> None:
    """Guards against matching the whole token, or its first path segment, instead of the program's name."""
    assert launches_vllm({"image": PYTHON_IMAGE, "command": ["/usr/local/bin/vllm", "serve", "m"]})


def test_a_vllm_command_in_an_image_of_another_name_runs_vllm() -> None:
    """vLLM installed in a plain Python image: guards against knowing vLLM by its image alone."""
    assert runs_vllm({"image": PYTHON_IMAGE, "command": ["vllm", "serve", "m"]})


# --- TGI ---------------------------------------------------------------------------------------------------------


def test_tgis_flag_left_without_its_value_at_the_end_is_skipped() -> None:
    """Guards against reading past the command line's end for the value of `--cuda-memory-fraction`."""
    assert tgi_fractions({"image": TGI_IMAGE, "args": ["--model-id", "m", "--cuda-memory-fraction"]}) == []


def test_tgis_variable_is_found_among_other_variables() -> None:
    """Guards against taking the container's last variable, whatever its name, as CUDA_MEMORY_FRACTION."""
    env = [{"name": "CUDA_MEMORY_FRACTION", "value": "0.4"}, {"name": "HF_HOME", "value": "/data"}]
    assert tgi_fractions({"image": TGI_IMAGE, "env": env}) == [Utilization(0.4, "env CUDA_MEMORY_FRACTION")]


def test_an_image_in_a_folder_named_for_tgi_is_not_tgi() -> None:
    """Only the image's own name says TGI: guards against matching the registry path above it."""
    assert not runs_tgi({"image": "registry.example.com/text-generation-inference/router:1.0"})


def test_a_shard_command_other_than_serve_is_not_tgi() -> None:
    """`text-generation-server download-weights` fetches weights and holds no GPU memory: guards against
    taking the program with any subcommand as a shard."""
    assert not runs_tgi({"image": PYTHON_IMAGE, "command": ["text-generation-server", "download-weights", "m"]})


def test_a_shard_run_by_its_path_is_set_by_the_variable() -> None:
    """A shard run by hand reads CUDA_MEMORY_FRACTION: guards against matching the whole token, or its first path
    segment, instead of the program's name."""
    shard = {"image": TGI_IMAGE, "command": ["/usr/local/bin/text-generation-server", "serve", "m"]}
    assert tgi_knob(shard) == "CUDA_MEMORY_FRACTION"
