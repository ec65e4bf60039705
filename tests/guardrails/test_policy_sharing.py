"""vcluster-set-owner-false, kai-gpu-sharing-annotations, gpu-memory-utilization-within-fraction."""

from __future__ import annotations

from typing import Any

import pytest
from policy_builders import FACTS, UNKNOWN, container, deployment, pod, release, res
from pulumi_policy.proxy import UnknownValueError

from kaistack.guardrails.facts import StackFacts
from kaistack.guardrails.helm_rules import vcluster_set_owner_false
from kaistack.guardrails.podspec import Res
from kaistack.guardrails.rules import gpu_memory_utilization_within_fraction, kai_gpu_sharing_annotations
from kaistack.guardrails.settings import Settings, settings

NO_FACTS = StackFacts()
GOOD_VCLUSTER = {
    "experimental": {"syncSettings": {"setOwner": False}},
    "controlPlane": {"advanced": {"virtualScheduler": {"enabled": False}}},
}

# --- vcluster-set-owner-false --------------------------------------------------------------------


def _vcluster(values: dict[str, Any], chart: str = "vcluster", kind: str = "Release") -> Res:
    return res(kind, release("team-a", chart, values), name="team-a-vcluster")


def test_vcluster_with_set_owner_false_passes() -> None:
    assert vcluster_set_owner_false(_vcluster(GOOD_VCLUSTER), Settings(), NO_FACTS) == []


def test_vcluster_without_set_owner_is_flagged_with_the_chart_default() -> None:
    found = vcluster_set_owner_false(_vcluster({}), Settings(), NO_FACTS)
    assert len(found) == 1
    assert "setOwner is unset (the chart default is true): set it to false" in found[0]


def test_vcluster_with_set_owner_true_is_flagged() -> None:
    values = {"experimental": {"syncSettings": {"setOwner": True}}}
    found = vcluster_set_owner_false(_vcluster(values), Settings(), NO_FACTS)
    assert found
    assert "setOwner is True" in found[0]


@pytest.mark.parametrize(
    "path",
    [
        {"controlPlane": {"advanced": {"virtualScheduler": {"enabled": True}}}},
        {"controlPlane": {"distro": {"k8s": {"scheduler": {"enabled": True}}}}},
        {"sync": {"toHost": {"pods": {"hybridScheduling": {"enabled": True}}}}},
    ],
)
def test_vcluster_with_a_virtual_scheduler_is_flagged(path: dict[str, Any]) -> None:
    values = {**GOOD_VCLUSTER, **path}
    found = vcluster_set_owner_false(_vcluster(values), Settings(), NO_FACTS)
    assert found
    assert "keep the virtual scheduler off" in found[0]


@pytest.mark.parametrize(
    "chart",
    [
        "vcluster",
        "loft/vcluster",
        "oci://ghcr.io/loft-sh/charts/vcluster",
        "https://charts.loft.sh/vcluster-0.36.1.tgz",
    ],
)
def test_vcluster_chart_is_recognised_in_every_spelling(chart: str) -> None:
    assert vcluster_set_owner_false(_vcluster({}, chart=chart), Settings(), NO_FACTS)


def test_helm_v4_chart_components_are_checked_too() -> None:
    assert vcluster_set_owner_false(_vcluster({}, kind="Chart"), Settings(), NO_FACTS)


def test_other_charts_are_not_vclusters() -> None:
    assert vcluster_set_owner_false(_vcluster({}, chart="kai-scheduler"), Settings(), NO_FACTS) == []


def test_vcluster_chart_names_are_configurable() -> None:
    s = settings({"vclusterCharts": ["my-vcluster"]})
    assert vcluster_set_owner_false(_vcluster({}, chart="my-vcluster"), s, NO_FACTS)


def test_unknown_vcluster_values_are_raised_for_the_sdk() -> None:
    values = {"experimental": {"syncSettings": {"setOwner": UNKNOWN}}}
    with pytest.raises(UnknownValueError) as err:
        vcluster_set_owner_false(_vcluster(values), Settings(), NO_FACTS)
    assert "setOwner" in err.value.message


# --- kai-gpu-sharing-annotations -----------------------------------------------------------------


SHARING_CASES = [
    ({"gpu-fraction": "0.5"}, False, []),
    ({"gpu-fraction": ".25"}, False, []),
    ({"gpu-memory": "2000"}, False, []),
    ({"gpu-fraction": "0.5", "gpu-fraction-num-devices": "2"}, False, []),
    ({"gpu-fraction": "1"}, False, ["must be a quoted decimal strictly between 0 and 1"]),
    ({"gpu-fraction": "0"}, False, ["strictly between 0 and 1"]),
    ({"gpu-fraction": "-0.5"}, False, ["strictly between 0 and 1"]),
    ({"gpu-fraction": "half"}, False, ["strictly between 0 and 1"]),
    ({"gpu-fraction": "500m"}, False, ["strictly between 0 and 1"]),
    ({"gpu-memory": "0"}, False, ["must be a quoted whole number of MiB"]),
    ({"gpu-memory": "2Gi"}, False, ["must be a quoted whole number of MiB"]),
    ({"gpu-memory": "1.5"}, False, ["whole number of MiB"]),
    ({"gpu-fraction": "0.2", "gpu-memory": "2000"}, False, ["sets both gpu-fraction and gpu-memory"]),
    ({"gpu-fraction": "0.5"}, True, ["has an nvidia.com/gpu limit and the pod asks for a gpu-fraction share"]),
    ({"gpu-memory": "2000"}, True, ["asks for a gpu-memory share"]),
    (
        {"gpu-fraction": "0.5", "gpu-fraction-num-devices": "0"},
        False,
        ["num-devices: '0' must be a quoted whole number, at least 1"],
    ),
    ({"gpu-fraction-num-devices": "2"}, False, ["applies only together with gpu-fraction or gpu-memory"]),
    ({}, True, []),
]


@pytest.mark.parametrize(("annotations", "gpu_limit", "expected"), SHARING_CASES)
def test_sharing_annotations(annotations: dict[str, str], gpu_limit: bool, expected: list[str]) -> None:
    props = pod(annotations=annotations, containers=[container(gpus=1 if gpu_limit else None)])
    found = kai_gpu_sharing_annotations(res("Pod", props), Settings(), NO_FACTS)
    assert len(found) == len(expected), found
    for message, fragment in zip(found, expected, strict=True):
        assert fragment in message


def test_sharing_annotation_given_as_a_number_is_flagged() -> None:
    """Unquoted YAML numbers are not strings; the API server refuses non-string annotations."""
    props = pod(containers=[container()])
    props["metadata"]["annotations"] = {"gpu-fraction": 0.5}
    found = kai_gpu_sharing_annotations(res("Pod", props), Settings(), NO_FACTS)
    assert found
    assert "0.5 must be a quoted decimal" in found[0]


def test_sharing_annotation_on_the_deployment_instead_of_the_pod_is_flagged() -> None:
    props = deployment(containers=[container()])
    props["metadata"]["annotations"] = {"gpu-fraction": "0.5"}
    found = kai_gpu_sharing_annotations(res("Deployment", props), Settings(), NO_FACTS)
    assert found
    assert "move it to spec.template.metadata.annotations" in found[0]


def _patch(annotations: dict[str, str]) -> Res:
    token = "kubernetes:apps/v1:DeploymentPatch"
    props = {"metadata": {"name": "d"}, "spec": {"template": {"metadata": {"annotations": annotations}, "spec": {}}}}
    return Res(type=token, name="d", props=props, urn=f"urn:pulumi:dev::kaistack::{token}::d")


def test_a_patch_setting_one_sharing_annotation_is_not_judged_on_what_it_leaves_out() -> None:
    """The share and the containers the settings go with are in the patched Deployment, not the patch."""
    patch = _patch({"gpu-fraction-num-devices": "2", "gpu-fraction-container-name": "main", "mps": "true"})
    assert kai_gpu_sharing_annotations(patch, Settings(), NO_FACTS) == []


def test_a_bad_sharing_value_in_a_patch_is_flagged() -> None:
    found = kai_gpu_sharing_annotations(_patch({"gpu-fraction": "7"}), Settings(), NO_FACTS)
    assert len(found) == 1
    assert "gpu-fraction: '7' must be a quoted decimal strictly between 0 and 1" in found[0]


def test_a_bad_sharing_value_on_a_patchs_template_metadata_alone_is_flagged() -> None:
    patch = _patch({"gpu-fraction": "7"})
    del patch.props["spec"]["template"]["spec"]  # the patch sets the annotation and nothing else
    found = kai_gpu_sharing_annotations(patch, Settings(), NO_FACTS)
    assert len(found) == 1
    assert "gpu-fraction: '7' must be a quoted decimal strictly between 0 and 1" in found[0]


def test_a_patch_naming_a_container_it_does_not_carry_is_not_judged_on_it() -> None:
    """The container the share names is the patched Deployment's; the patch carries only the one it changes."""
    patch = _patch({"gpu-fraction": "0.5", "gpu-fraction-container-name": "server"})
    patch.props["spec"]["template"]["spec"] = {"containers": [{"name": "sidecar"}]}
    assert kai_gpu_sharing_annotations(patch, Settings(), NO_FACTS) == []


def test_a_patch_running_vllm_is_not_judged_on_the_flag_it_leaves_out() -> None:
    patch = _patch({"gpu-fraction": "0.5"})
    vllm = {"name": "vllm", "image": "vllm/vllm-openai:latest", "args": ["--model", "m"]}
    patch.props["spec"]["template"]["spec"] = {"containers": [vllm]}
    assert gpu_memory_utilization_within_fraction(patch, Settings(), NO_FACTS) == []


def test_unknown_fraction_is_raised_for_the_sdk() -> None:
    props = pod(annotations={"gpu-fraction": UNKNOWN}, containers=[container()])
    with pytest.raises(UnknownValueError) as err:
        kai_gpu_sharing_annotations(res("Pod", props), Settings(), NO_FACTS)
    assert "gpu-fraction" in err.value.message


# --- gpu-memory-utilization-within-fraction ------------------------------------------------------


def _vllm_pod(annotations: dict[str, str], **c: Any) -> Res:
    props = deployment(
        annotations=annotations, containers=[container(name="vllm", image="vllm/vllm-openai:latest", **c)]
    )
    return res("Deployment", props)


def _check(r: Res, s: Settings | None = None, facts: StackFacts = NO_FACTS) -> list[str]:
    return gpu_memory_utilization_within_fraction(r, s or Settings(), facts)


def test_field_guide_vllm_at_its_fraction_in_a_shell_string_passes() -> None:
    """002's vllm-test-07: `sh -c "vllm serve ... --gpu-memory-utilization=0.7"` with gpu-fraction 0.7."""
    r = _vllm_pod(
        {"gpu-fraction": "0.7"},
        command=["/bin/sh", "-c"],
        args=["vllm serve Qwen/Qwen2.5-1.5B-Instruct --gpu-memory-utilization=0.7"],
    )
    assert _check(r) == []


def test_with_memory_isolation_the_utilization_is_of_the_share_and_not_judged() -> None:
    """kai.sharing 'isolated' (HAMi-core): "nvidia-smi inside the container will show only the allocated memory"
    (kai-scheduler/KAI-Scheduler@v0.17.0 docs/gpu-sharing/hami/README.md), so vLLM's 0.9 is 0.9 of the share;
    telling it to use 0.5 would halve what the pod may use."""
    r = _vllm_pod({"gpu-fraction": "0.5"}, command=["/bin/sh", "-c", "vllm serve m --gpu-memory-utilization=0.9"])
    assert _check(r, facts=StackFacts(memory_isolated=True)) == []
    assert _check(r)


def test_utilization_above_the_fraction_in_a_shell_string_is_flagged() -> None:
    r = _vllm_pod({"gpu-fraction": "0.5"}, command=["/bin/sh", "-c", "vllm serve m --gpu-memory-utilization=0.9"])
    found = _check(r)
    assert found == [
        "container vllm sets GPU memory utilization 0.9 (command), above the pod's share (gpu-fraction 0.5); KAI "
        "does not isolate GPU memory, so it would take memory promised to the GPU's other pods: use at most 0.5"
    ]


@pytest.mark.parametrize(
    "flag", ["--gpu_memory_utilization=0.9", "--gpu-memory-util=0.9", "--gpu_memory-utilization=0.9"]
)
def test_utilization_in_vllms_other_spellings_is_read(flag: str) -> None:
    """vllm-project/vllm vllm/utils/argparse_utils.py (FlexibleArgumentParser.parse_args turns `_` into `-` in
    option names) and argparse's allow_abbrev, which vLLM leaves on."""
    found = _check(_vllm_pod({"gpu-fraction": "0.5"}, args=["--model", "m", flag]))
    assert found
    assert "sets GPU memory utilization 0.9 (args)" in found[0]


def test_an_underscored_utilization_within_the_share_passes() -> None:
    assert _check(_vllm_pod({"gpu-fraction": "0.5"}, args=["--model", "m", "--gpu_memory_utilization=0.45"])) == []


def test_utilization_flag_with_a_separate_value_is_read() -> None:
    r = _vllm_pod({"gpu-fraction": "0.5"}, args=["--model", "m", "--gpu-memory-utilization", "0.8"])
    assert _check(r)


@pytest.mark.parametrize("variable", ["VLLM_GPU_MEMORY_UTILIZATION", "GPU_MEMORY_UTILIZATION"])
def test_utilization_from_the_environment_is_read(variable: str) -> None:
    r = _vllm_pod({"gpu-fraction": "0.3"}, args=["--model", "m"], env={variable: "0.6"})
    found = _check(r)
    assert found
    assert f"(env {variable})" in found[0]


def test_utilization_through_a_kubernetes_variable_reference_is_resolved() -> None:
    r = _vllm_pod({"gpu-fraction": "0.3"}, args=["--gpu-memory-utilization=$(UTIL)"], env={"UTIL": "0.6"})
    assert _check(r)


def test_a_variable_that_references_an_earlier_one_is_resolved_as_the_kubelet_builds_it() -> None:
    """kubelet makeEnvironmentVariables expands each value with the variables before it (review: a chain hid 0.95)."""
    env = {"BASE_UTIL": "0.95", "UTIL": "$(BASE_UTIL)"}
    found = _check(_vllm_pod({"gpu-fraction": "0.5"}, args=["--gpu-memory-utilization=$(UTIL)"], env=env))
    assert len(found) == 1
    assert "sets GPU memory utilization 0.95 (args)" in found[0]


def test_a_reference_to_a_later_variable_stays_unresolved_and_is_not_judged() -> None:
    env = {"UTIL": "$(BASE_UTIL)", "BASE_UTIL": "0.95"}
    assert _check(_vllm_pod({"gpu-fraction": "0.5"}, args=["--gpu-memory-utilization=$(UTIL)"], env=env)) == []


def test_an_escaped_reference_is_text_not_the_variables_value() -> None:
    env = {"UTIL": "0.95"}
    assert _check(_vllm_pod({"gpu-fraction": "0.5"}, args=["--gpu-memory-utilization=$$(UTIL)"], env=env)) == []


def test_a_vllm_native_sidecar_given_the_share_is_judged() -> None:
    """KAI looks for gpu-fraction-container-name among the init containers first (KAI@v0.17.0
    pkg/binder/common/gpu_access.go:194-204); a native sidecar (restartPolicy: Always) serves beside the app."""
    props = deployment(
        annotations={"gpu-fraction": "0.5", "gpu-fraction-container-name": "vllm"},
        containers=[container(name="app", image="myorg/rag-app:1")],
    )
    sidecar = container(name="vllm", image="vllm/vllm-openai:v0.8.5", args=["--gpu-memory-utilization=0.95"])
    props["spec"]["template"]["spec"]["initContainers"] = [{**sidecar, "restartPolicy": "Always"}]
    found = _check(res("Deployment", props))
    assert len(found) == 1
    assert "container vllm sets GPU memory utilization 0.95 (args), above the pod's share" in found[0]


def test_unresolvable_utilization_is_not_judged() -> None:
    r = _vllm_pod({"gpu-fraction": "0.3"}, args=["--gpu-memory-utilization=$(FROM_SECRET)"])
    assert _check(r) == []


def test_vllm_without_the_flag_uses_its_default_and_is_flagged() -> None:
    found = _check(_vllm_pod({"gpu-fraction": "0.5"}, args=["--model", "m"]))
    assert found
    assert "runs vLLM without --gpu-memory-utilization, so vLLM takes its default 0.9" in found[0]
    assert "add --gpu-memory-utilization=0.5 (or less)" in found[0]


def test_vllm_recognised_by_its_command_line() -> None:
    props = deployment(
        annotations={"gpu-fraction": "0.5"},
        containers=[container(image="python:3.12", command=["sh", "-c", "pip install vllm && vllm serve m"])],
    )
    assert _check(res("Deployment", props))


def test_vllm_without_the_flag_passes_when_its_share_covers_the_default() -> None:
    assert _check(_vllm_pod({"gpu-fraction": "0.95"}, args=["--model", "m"])) == []


def test_other_servers_without_a_setting_are_not_judged() -> None:
    props = deployment(annotations={"gpu-fraction": "0.5"}, containers=[container(image="nvcr.io/nvidia/tritonserver")])
    assert _check(res("Deployment", props)) == []


def test_gpu_memory_share_uses_the_largest_gpu_of_the_stack() -> None:
    """2000 MiB of an 11441 MiB GPU is 0.175 of it; vLLM at 0.5 would take 5720 MiB."""
    r = _vllm_pod({"gpu-memory": "2000"}, args=["--gpu-memory-utilization=0.5"])
    found = _check(r, facts=FACTS)
    assert found
    assert "gpu-memory 2000 MiB of a 11441 MiB GPU = 0.175" in found[0]
    assert _check(_vllm_pod({"gpu-memory": "2000"}, args=["--gpu-memory-utilization=0.17"]), facts=FACTS) == []


def test_gpu_memory_share_is_not_judged_without_a_gpu_size() -> None:
    assert _check(_vllm_pod({"gpu-memory": "2000"}, args=["--gpu-memory-utilization=0.5"])) == []


def test_node_gpu_memory_is_configurable() -> None:
    r = _vllm_pod({"gpu-memory": "40000"}, args=["--gpu-memory-utilization=0.6"])
    assert _check(r, settings({"nodeGpuMemoryMiB": 46068.0})) == []
    found = _check(r, settings({"nodeGpuMemoryMiB": 81920.0}))
    assert found
    assert "use at most 0.488" in found[0]


def test_whole_gpu_pods_are_not_judged() -> None:
    props = pod(containers=[container(gpus=1, image="vllm/vllm-openai", args=["--gpu-memory-utilization=0.95"])])
    assert _check(res("Pod", props)) == []


def test_unknown_arguments_are_raised_for_the_sdk() -> None:
    r = _vllm_pod({"gpu-fraction": "0.5"}, args=UNKNOWN)  # type: ignore[arg-type]
    with pytest.raises(UnknownValueError) as err:
        _check(r)
    assert "args" in err.value.message


@pytest.mark.parametrize(
    "key",
    [
        "nvidia.com/container.main.gpu-memory.request",
        "nvidia.com/container.main.gpu-memory.limit",
        "nvidia.com/container.main.gpu-compute.mode",
    ],
)
def test_nv_fractions_annotations_are_flagged_as_unread_by_every_supported_kai(key: str) -> None:
    """NvFractions exists only after v0.17.0 (upstream docs/gpu-sharing/nv-fraction/README.md @bf1bdd57)."""
    props = pod(annotations={key: "10Gi"}, containers=[container()])
    found = kai_gpu_sharing_annotations(res("Pod", props), Settings(), NO_FACTS)
    assert len(found) == 1
    assert f"metadata.annotations.{key} is an NvFractions annotation" in found[0]
    assert "KAI ignores it and the pod gets no GPU share" in found[0]


def test_an_annotation_that_only_resembles_nv_fractions_is_not_flagged() -> None:
    props = pod(annotations={"nvidia.com/container.main.gpus.devices": "0"}, containers=[container()])
    assert kai_gpu_sharing_annotations(res("Pod", props), Settings(), NO_FACTS) == []
