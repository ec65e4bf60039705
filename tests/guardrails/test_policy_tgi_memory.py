"""gpu-memory-utilization-within-fraction for Hugging Face TGI: `--cuda-memory-fraction` within the pod's share.

huggingface/text-generation-inference@v3.3.7: the launcher's `cuda_memory_fraction` is `#[clap(default_value = "1.0",
long, env)]` (launcher/src/main.rs:810-813; clap 4, which infers no long-name prefixes), passed to the shards as
CUDA_MEMORY_FRACTION; the shard caps its process at that fraction of the GPU (server/text_generation_server/utils/
dist.py:13,56) and sizes its KV cache from the free memory less (1 - 0.9 f) of the total
(utils/import_utils.py get_cuda_free_memory; models/globals.py:32 TGI_WIGGLE_ROOM 0.90). The image's entrypoint
execs text-generation-launcher with the container's args (tgi-entrypoint.sh).
"""

from __future__ import annotations

from typing import Any

from policy_builders import container, deployment, res

from kaistack.declaration.model_servers import Utilization, runs_tgi, tgi_fractions
from kaistack.guardrails.facts import StackFacts
from kaistack.guardrails.rules import gpu_memory_utilization_within_fraction
from kaistack.guardrails.settings import Settings

TGI_IMAGE = "ghcr.io/huggingface/text-generation-inference:3.3.7"
MODEL = ["--model-id", "Qwen/Qwen2.5-1.5B-Instruct"]


def _check(annotations: dict[str, str], **c: Any) -> list[str]:
    c.setdefault("image", TGI_IMAGE)
    props = deployment(annotations=annotations, containers=[container(name="tgi", **c)])
    return gpu_memory_utilization_within_fraction(res("Deployment", props), Settings(), StackFacts())


def test_tgi_without_the_flag_takes_the_whole_gpu_and_is_flagged() -> None:
    [found] = _check({"gpu-fraction": "0.5"}, args=MODEL)
    assert found == (
        "container tgi runs TGI without --cuda-memory-fraction, so TGI takes its default 1 of the GPU's memory, above "
        "the pod's share (gpu-fraction 0.5): add --cuda-memory-fraction=0.5 (or less)"
    )


def test_a_fraction_above_the_share_is_flagged_where_it_is_set() -> None:
    [found] = _check({"gpu-fraction": "0.3"}, args=[*MODEL, "--cuda-memory-fraction", "0.45"])
    assert found.startswith("container tgi sets TGI's CUDA memory fraction 0.45 (command line), above the pod's share")
    assert found.endswith("use at most 0.3")


def test_a_fraction_within_the_share_passes() -> None:
    assert _check({"gpu-fraction": "0.5"}, args=[*MODEL, "--cuda-memory-fraction=0.5"]) == []


def test_the_environment_variable_is_read_in_a_tgi_container() -> None:
    [found] = _check({"gpu-fraction": "0.25"}, args=MODEL, env={"CUDA_MEMORY_FRACTION": "0.9"})
    assert "TGI's CUDA memory fraction 0.9 (env CUDA_MEMORY_FRACTION)" in found


def test_the_environment_variable_means_nothing_outside_tgi() -> None:
    c = container(image="busybox:1.37.0", env={"CUDA_MEMORY_FRACTION": "0.9"})
    assert tgi_fractions(c) == []


def test_a_launcher_command_line_is_tgi_whatever_the_image() -> None:
    c = container(image="registry.example.com/llm/server:1", command=["/usr/local/bin/text-generation-launcher"])
    assert runs_tgi(c)
    assert not runs_tgi(container(image="registry.example.com/llm/server:1"))


def test_a_prefix_of_the_flag_is_not_read_since_clap_takes_none() -> None:
    """clap 4 rejects `--cuda-memory` (no infer_long_args), so TGI would not start: nothing to judge as a fraction;
    without the exact flag, the default 1.0 is what the rule sees."""
    [found] = _check({"gpu-fraction": "0.5"}, args=[*MODEL, "--cuda-memory", "0.4"])
    assert "runs TGI without --cuda-memory-fraction" in found


def test_gpu_memory_is_turned_into_a_share_of_the_stacks_gpu() -> None:
    props = deployment(annotations={"gpu-memory": "20000"}, containers=[container(name="tgi", image=TGI_IMAGE)])
    facts = StackFacts(gpu_memory_mib=(40000,))
    [found] = gpu_memory_utilization_within_fraction(res("Deployment", props), Settings(), facts)
    assert "(gpu-memory 20000 MiB of a 40000 MiB GPU = 0.5): add --cuda-memory-fraction=0.5" in found


def test_with_memory_isolation_tgi_sees_its_share_as_the_gpu() -> None:
    props = deployment(annotations={"gpu-fraction": "0.5"}, containers=[container(name="tgi", image=TGI_IMAGE)])
    facts = StackFacts(memory_isolated=True)
    assert gpu_memory_utilization_within_fraction(res("Deployment", props), Settings(), facts) == []


def test_the_flag_wins_over_the_environment_variable_as_clap_reads_them() -> None:
    found = _check(
        {"gpu-fraction": "0.5"}, args=[*MODEL, "--cuda-memory-fraction", "0.4"], env={"CUDA_MEMORY_FRACTION": "0.9"}
    )
    assert found == []


def test_a_flag_inside_a_shell_string_is_read() -> None:
    found = _check(
        {"gpu-fraction": "0.3"},
        command=["/bin/sh", "-c"],
        args=["text-generation-launcher --model-id m --cuda-memory-fraction=0.6"],
    )
    assert [f.split(",")[0] for f in found] == ["container tgi sets TGI's CUDA memory fraction 0.6 (command line)"]


def test_a_flag_whose_value_is_in_args_after_a_command_is_read() -> None:
    """The kubelet runs command then args as one argv."""
    c = container(image=TGI_IMAGE, command=["text-generation-launcher", "--cuda-memory-fraction"], args=["0.4"])
    assert [u.value for u in tgi_fractions(c)] == [0.4]


def test_a_fraction_from_a_configmap_is_set_but_unknown_so_not_judged() -> None:
    props = deployment(annotations={"gpu-fraction": "0.5"}, containers=[container(name="tgi", image=TGI_IMAGE)])
    props["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "CUDA_MEMORY_FRACTION", "valueFrom": {"configMapKeyRef": {"name": "tgi", "key": "fraction"}}}
    ]
    assert gpu_memory_utilization_within_fraction(res("Deployment", props), Settings(), StackFacts()) == []


def test_an_env_from_source_may_set_the_fraction_so_the_default_is_not_assumed() -> None:
    c = container(image=TGI_IMAGE)
    c["envFrom"] = [{"configMapRef": {"name": "tgi-settings"}}]
    assert tgi_fractions(c) == [Utilization(None, "envFrom")]


def test_a_secret_env_from_source_is_not_taken_to_set_the_fraction() -> None:
    """Most gated-model TGI pods read their Hugging Face token so: the default is still judged."""
    c = container(image=TGI_IMAGE)
    c["envFrom"] = [{"secretRef": {"name": "hf-token"}}]
    assert tgi_fractions(c) == []


def test_a_config_map_whose_prefix_cannot_make_the_name_is_not_taken_to_set_it() -> None:
    c = container(image=TGI_IMAGE)
    c["envFrom"] = [{"configMapRef": {"name": "hf"}, "prefix": "HF_"}]
    assert tgi_fractions(c) == []


def test_the_last_entry_of_the_variable_is_the_one_the_kubelet_sets() -> None:
    c = container(image=TGI_IMAGE)
    c["env"] = [
        {"name": "CUDA_MEMORY_FRACTION", "value": "0.9"},
        {"name": "CUDA_MEMORY_FRACTION", "valueFrom": {"configMapKeyRef": {"name": "tgi", "key": "f"}}},
    ]
    assert tgi_fractions(c) == [Utilization(None, "env CUDA_MEMORY_FRACTION (valueFrom)")]


def test_a_shard_run_by_hand_is_tgi_and_reads_the_variable() -> None:
    """server/pyproject.toml:66-67 (the text-generation-server script), cli.py:41 (serve), utils/dist.py:13."""
    c = container(image="registry.example.com/llm:1", command=["text-generation-server", "serve", "m"])
    assert runs_tgi(c)
    [found] = _check(
        {"gpu-fraction": "0.5"}, image="registry.example.com/llm:1", command=["text-generation-server", "serve", "m"]
    )
    assert "runs TGI without CUDA_MEMORY_FRACTION, so TGI takes its default 1" in found
    assert found.endswith("add CUDA_MEMORY_FRACTION=0.5 (or less)")
