"""kai-fraction-container: a GPU share reaches the container that uses the GPU.

KAI@v0.17.0 pkg/binder/common/gpu_access.go:182-219 (GetFractionContainerRef): the container the
`gpu-fraction-container-name` annotation names, init containers searched first, else `spec.containers[0]`. The
admission webhook puts the share's NVIDIA_VISIBLE_DEVICES on that container alone
(pkg/admission/webhook/v1alpha2/gpusharing/gpu_sharing.go:50-75) and, with device access blocked, sets
NVIDIA_VISIBLE_DEVICES=void on every other container that asks for no GPU (deviceaccess/device_access.go:58-110).
Where meshes put their proxies: linkerd/linkerd2@version-2.19 charts/patch/templates/patch.json:135-140
(`containers/0` under proxy-await, the default, unless a native sidecar) and istio/istio@1.29.6
pkg/kube/inject/webhook.go:780-812 (reorderPod: first under holdApplicationUntilProxyStarts). The tenant admission
policy's CEL for the same rule is tested with the other admission rows (test_policy_admission.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from analyzer_pack import Pack, engine_config_env, recorded_pod
from policy_builders import container, deployment, pod, res
from pulumi.runtime.proto import analyzer_pb2

from kaistack.cli import main
from kaistack.guardrails.facts import StackFacts
from kaistack.guardrails.fraction_container import fraction_container, fraction_container_problems
from kaistack.guardrails.podspec import PodTemplate, Res
from kaistack.guardrails.rules import kai_fraction_container
from kaistack.guardrails.settings import Settings

VLLM = {"name": "server", "image": "vllm/vllm-openai:v0.11.0", "args": ["--model", "m"]}
LOGS = {"name": "logs", "image": "fluent/fluent-bit:4.0"}
LINKERD_PROXY = {"name": "linkerd-proxy", "image": "cr.l5d.io/linkerd/proxy:edge-25.8.1"}
SHARE = {"gpu-fraction": "0.5"}


def _template(annotations: dict[str, str], *containers: dict[str, Any], inits: tuple[Any, ...] = ()) -> PodTemplate:
    spec: dict[str, Any] = {"containers": list(containers)}
    if inits:
        spec["initContainers"] = list(inits)
    return PodTemplate("", {}, annotations, spec)


def _rule(props: dict[str, Any], kind: str = "Deployment") -> list[str]:
    return kai_fraction_container(res(kind, props), Settings(), StackFacts())


# --- which container KAI picks ---------------------------------------------------------------------


def test_without_the_annotation_the_first_container_gets_the_share() -> None:
    t = _template(SHARE, LOGS, VLLM)
    assert fraction_container(t.spec, t.annotations) == LOGS


def test_the_annotation_finds_an_init_container_before_a_container_of_the_same_name() -> None:
    init = {"name": "server", "image": "busybox"}
    t = _template({**SHARE, "gpu-fraction-container-name": "server"}, LOGS, VLLM, inits=(init,))
    assert fraction_container(t.spec, t.annotations) is init


def test_an_annotation_naming_no_container_picks_none() -> None:
    t = _template({**SHARE, "gpu-fraction-container-name": "ghost"}, LOGS)
    assert fraction_container(t.spec, t.annotations) is None


# --- vLLM in a container that does not get the share ----------------------------------------------


def test_vllm_behind_a_first_container_gets_no_gpu() -> None:
    [(problem, fix)] = fraction_container_problems(_template(SHARE, LOGS, VLLM))
    assert problem == (
        "spec: container server runs vLLM, but KAI gives the pod's GPU share to the pod's first container, logs, so "
        "server gets no GPU where KAI blocks device access (NVIDIA_VISIBLE_DEVICES=void), and with the block off a "
        "CUDA image's own NVIDIA_VISIBLE_DEVICES=all gives it every GPU of the node"
    )
    assert fix == "set metadata.annotations.gpu-fraction-container-name: server"


def test_vllm_first_keeps_the_share() -> None:
    assert fraction_container_problems(_template(SHARE, VLLM, LOGS)) == []


def test_vllm_named_by_the_annotation_keeps_the_share() -> None:
    t = _template({**SHARE, "gpu-fraction-container-name": "server"}, LOGS, VLLM)
    assert fraction_container_problems(t) == []


def test_an_annotation_naming_another_container_than_vllm_is_flagged() -> None:
    t = _template({"gpu-memory": "20000", "gpu-fraction-container-name": "logs"}, VLLM, LOGS)
    [(problem, _)] = fraction_container_problems(t)
    assert "KAI gives the pod's GPU share to the container gpu-fraction-container-name names, logs" in problem


def test_a_pod_without_a_share_is_not_judged() -> None:
    assert fraction_container_problems(_template({}, LOGS, VLLM)) == []


def test_a_name_the_pod_lacks_is_left_to_kais_own_refusal() -> None:
    """kai-gpu-sharing-annotations reports it (KAI's webhook refuses the pod); this rule says nothing more."""
    t = _template({**SHARE, "gpu-fraction-container-name": "ghost"}, LOGS, VLLM)
    assert fraction_container_problems(t) == []


# --- a mesh's proxy first ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("proxy", "fix"),
    [
        ("linkerd-proxy", 'config.alpha.linkerd.io/proxy-enable-native-sidecar: "true"'),
        ("istio-proxy", 'sidecar.istio.io/nativeSidecar: "true"'),
    ],
)
def test_a_proxy_injected_first_would_take_the_share(proxy: str, fix: str) -> None:
    [(problem, advice)] = fraction_container_problems(_template(SHARE, {"name": proxy}, LOGS))
    assert problem.startswith(f"spec: KAI gives the pod's GPU share to the pod's first container, {proxy}, a service")
    assert fix in advice
    assert advice.endswith("or set metadata.annotations.gpu-fraction-container-name to the container that uses the GPU")


def test_an_annotation_naming_a_proxy_is_flagged_wherever_the_proxy_is() -> None:
    t = _template({**SHARE, "gpu-fraction-container-name": "linkerd-proxy"}, LOGS, inits=(LINKERD_PROXY,))
    [(problem, _)] = fraction_container_problems(t)
    assert problem.startswith(
        "spec: KAI gives the pod's GPU share to the container gpu-fraction-container-name names, linkerd-proxy, a "
        "service mesh's proxy; the application's container gets no GPU where KAI blocks device access"
    )
    assert problem.endswith(
        "with the block off a CUDA image's own NVIDIA_VISIBLE_DEVICES=all gives it every GPU of the node"
    )


def test_the_fixes_name_annotations_every_supported_mesh_version_reads() -> None:
    """linkerd2@version-2.15 pkg/k8s/labels.go:269 to @version-2.20 inject.go:440 read the alpha key (beta appears in
    2.19); istio@1.29.6 pkg/kube/inject/inject.go:499-505 reads sidecar.istio.io/nativeSidecar."""
    [(_, linkerd)] = fraction_container_problems(_template(SHARE, LINKERD_PROXY, LOGS))
    [(_, istio)] = fraction_container_problems(_template(SHARE, {"name": "istio-proxy"}, LOGS))
    assert 'config.alpha.linkerd.io/proxy-enable-native-sidecar: "true"' in linkerd
    assert "config.linkerd.io/proxy-await: disabled" in linkerd
    assert 'sidecar.istio.io/nativeSidecar: "true"' in istio
    assert """proxy.istio.io/config: '{"holdApplicationUntilProxyStarts": false}'""" in istio


def test_a_proxy_first_and_vllm_second_are_two_problems() -> None:
    found = fraction_container_problems(_template(SHARE, LINKERD_PROXY, VLLM))
    assert [p.split(",")[0] for p, _ in found] == [
        "spec: KAI gives the pod's GPU share to the pod's first container",
        "spec: container server runs vLLM",
    ]


def test_a_proxy_that_is_a_native_sidecar_is_harmless() -> None:
    assert fraction_container_problems(_template(SHARE, LOGS, inits=(LINKERD_PROXY,))) == []


# --- the policy, lint and diagnose -------------------------------------------------------------------


def test_the_rule_names_the_deployments_template() -> None:
    props = deployment(annotations=SHARE, containers=[container(name="logs"), dict(VLLM)])
    [found] = _rule(props)
    assert found.startswith("spec.template.spec: container server runs vLLM")
    assert found.endswith("Fix: set spec.template.metadata.annotations.gpu-fraction-container-name: server")


def test_a_deployment_whose_vllm_gets_the_share_passes_through_engine_props() -> None:
    """Through engine props (proxies), the container KAI picks is still recognised as vLLM's own."""
    assert _rule(deployment(annotations=SHARE, containers=[dict(VLLM), container(name="logs")])) == []
    named = {**SHARE, "gpu-fraction-container-name": "server"}
    assert _rule(deployment(annotations=named, containers=[container(name="logs"), dict(VLLM)])) == []


def test_a_patch_is_not_judged_on_which_container_is_first() -> None:
    """A patch lists the containers it changes, in its own order; the patched Deployment's order is unknown."""
    token = "kubernetes:apps/v1:DeploymentPatch"
    template = {"metadata": {"annotations": SHARE}, "spec": {"containers": [LOGS, VLLM]}}
    patch = Res(
        token, "d", {"metadata": {"name": "d"}, "spec": {"template": template}}, f"urn:pulumi:dev::k::{token}::d"
    )
    assert kai_fraction_container(patch, Settings(), StackFacts()) == []


def test_the_platforms_namespaces_are_exempt() -> None:
    props = deployment(namespace="kube-system", annotations=SHARE, containers=[dict(LOGS), dict(VLLM)])
    assert _rule(props) == []


def test_kaistack_lint_reports_it_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = tmp_path / "serving.yaml"
    props = deployment(name="chat", namespace="serving", annotations=SHARE, containers=[dict(LOGS), dict(VLLM)])
    manifest.write_text(yaml.safe_dump(props))
    code = main(["lint", str(manifest), "--json"])
    [violation] = [
        v for v in json.loads(capsys.readouterr().out)["violations"] if v["policy"] == "kai-fraction-container"
    ]
    assert code == 1
    assert violation["name"] == "chat"
    assert "container server runs vLLM" in violation["message"]


def test_the_policy_pack_reports_it_over_the_analyzer_protocol() -> None:
    running = Pack({**os.environ, **engine_config_env("dev")})
    try:
        running.configure()
        props = pod(name="chat", namespace="serving", annotations=SHARE, containers=[dict(LINKERD_PROXY), dict(VLLM)])
        found = [d for d in running.analyze_all([recorded_pod(props, "chat")]) if d[0] == "kai-fraction-container"]
    finally:
        running.close()
    assert [level for _, level, _ in found] == [analyzer_pb2.MANDATORY, analyzer_pb2.MANDATORY]
    assert "linkerd-proxy, a service mesh's proxy" in found[0][2]
    assert "container server runs vLLM" in found[1][2]


def test_kaistack_diagnose_reports_a_running_pod_whose_share_went_to_its_proxy() -> None:
    from kaistack.ops.diagnose import find_mistakes

    props = pod(name="chat", namespace="serving", annotations=SHARE, containers=[dict(LINKERD_PROXY), dict(LOGS)])
    [found] = [m for m in find_mistakes({"Pod": [props]}) if m.code == "kai-fraction-container"]
    assert found.subject == "Pod serving/chat"
    assert "linkerd-proxy, a service mesh's proxy" in found.problem
    assert found.fix.startswith("inject the proxy as a native sidecar")


def test_kaistack_diagnose_reports_a_running_pod_whose_vllm_is_not_the_fraction_container() -> None:
    from kaistack.ops.diagnose import find_mistakes

    props = pod(name="chat", namespace="serving", annotations=SHARE, containers=[dict(LOGS), dict(VLLM)])
    [found] = [m for m in find_mistakes({"Pod": [props]}) if m.code == "kai-fraction-container"]
    assert found.problem.startswith("spec: container server runs vLLM, but KAI gives the pod's GPU share")
    assert found.fix == "set metadata.annotations.gpu-fraction-container-name: server"


@pytest.mark.parametrize(
    ("image", "is_vllm"),
    [
        ("vllm/vllm-openai:v0.11.0", True),
        ("registry.example.com/vllm/openai-server:1", True),
        ("registry.example.com:5000/llm/vllm:1", True),
        ("ghcr.io/vllm-project/semantic-router/extproc:latest", False),
        ("fluent/fluent-bit:4.0", False),
    ],
)
def test_vllm_is_told_by_its_image_name_or_organisation_not_a_prefix_of_one(image: str, is_vllm: bool) -> None:
    t = _template(SHARE, dict(LOGS), {"name": "second", "image": image})
    assert bool(fraction_container_problems(t)) is is_vllm


def test_tgi_behind_a_first_container_gets_no_gpu_either() -> None:
    tgi = {"name": "tgi", "image": "ghcr.io/huggingface/text-generation-inference:3.3.7"}
    [(problem, fix)] = fraction_container_problems(_template(SHARE, LOGS, tgi))
    assert problem.startswith("spec: container tgi runs TGI, but KAI gives the pod's GPU share to the pod's first")
    assert fix == "set metadata.annotations.gpu-fraction-container-name: tgi"


# --- a manifest that asks a mesh for a proxy it puts first ---------------------------------------------------------
# linkerd/linkerd2@version-2.19 charts/patch/templates/patch.json:135-140 (containers/0 under proxy-await, its
# default, unless a native sidecar); native-sidecar keys read by pkg/inject/inject.go (version-2.19:375-385, beta then
# alpha; version-2.20:430-445, unprefixed, beta, alpha; 2.15-2.18: alpha) with Go's strconv.ParseBool. Istio:
# istio/istio@1.29.6 pkg/kube/inject/webhook.go:780-812 (reorderPod).

LINKERD_INJECT = {"linkerd.io/inject": "enabled"}


def test_a_linkerd_injected_share_must_name_its_container() -> None:
    t = _template({**SHARE, **LINKERD_INJECT}, dict(VLLM))
    [(problem, fix)] = fraction_container_problems(t)
    assert problem.startswith(
        "metadata.annotations: linkerd.io/inject: enabled (Linkerd up to version-2.19) puts linkerd-proxy first, "
        "where KAI gives the pod's GPU share, and server gets no GPU"
    )
    assert fix == "set metadata.annotations.gpu-fraction-container-name: server (right with any mesh version)"


@pytest.mark.parametrize(
    "annotations",
    [
        {"gpu-fraction-container-name": "server"},
        {"config.linkerd.io/proxy-await": "disabled"},
        {"config.alpha.linkerd.io/proxy-enable-native-sidecar": "true"},
        {
            "config.alpha.linkerd.io/proxy-enable-native-sidecar": "T",
            "config.beta.linkerd.io/proxy-enable-native-sidecar": "1",
        },
        {"linkerd.io/inject": "disabled"},
    ],
    ids=["named", "await off", "native (alpha)", "native (alpha and beta, Go booleans)", "injection off"],
)
def test_what_keeps_linkerds_proxy_off_the_share(annotations: dict[str, str]) -> None:
    assert fraction_container_problems(_template({**SHARE, **LINKERD_INJECT, **annotations}, dict(VLLM))) == []


@pytest.mark.parametrize(
    "annotations",
    [
        {"config.beta.linkerd.io/proxy-enable-native-sidecar": "true"},  # 2.15-2.18 read alpha alone
        {"config.linkerd.io/proxy-enable-native-sidecar": "true"},  # read by 2.20 alone
        {"config.alpha.linkerd.io/proxy-enable-native-sidecar": "yes"},  # not a Go boolean: the default stays
        {
            "config.alpha.linkerd.io/proxy-enable-native-sidecar": "true",
            "config.beta.linkerd.io/proxy-enable-native-sidecar": "false",  # 2.19 and 2.20 read beta first
        },
    ],
    ids=["beta only", "unprefixed only", "alpha not a boolean", "beta says false"],
)
def test_a_native_sidecar_some_linkerd_versions_do_not_read_is_not_enough(annotations: dict[str, str]) -> None:
    [(problem, _)] = fraction_container_problems(_template({**SHARE, **LINKERD_INJECT, **annotations}, dict(VLLM)))
    assert "puts linkerd-proxy first" in problem


def test_istios_hold_setting_in_the_pods_proxy_config_must_name_its_container() -> None:
    hold = {"proxy.istio.io/config": '{"holdApplicationUntilProxyStarts": true}'}
    [(problem, _)] = fraction_container_problems(_template({**SHARE, **hold}, dict(VLLM)))
    assert problem.startswith(
        "metadata.annotations: proxy.istio.io/config's holdApplicationUntilProxyStarts: true puts istio-proxy first"
    )


@pytest.mark.parametrize(
    "annotations",
    [
        {"proxy.istio.io/config": "holdApplicationUntilProxyStarts: false"},
        {
            "proxy.istio.io/config": '{"holdApplicationUntilProxyStarts": true}',
            "sidecar.istio.io/nativeSidecar": "true",
        },
        {"proxy.istio.io/config": "{not yaml"},
        {
            "proxy.istio.io/config": '{"holdApplicationUntilProxyStarts": "true"}'
        },  # a string: Istio's protobuf JSON refuses it (and denies the pod)
    ],
    ids=["hold off", "native sidecar", "unreadable config", "hold as a string"],
)
def test_istio_settings_that_leave_the_application_first(annotations: dict[str, str]) -> None:
    assert fraction_container_problems(_template({**SHARE, **annotations}, dict(VLLM))) == []


def test_a_mesh_request_on_a_pod_without_a_share_is_not_judged() -> None:
    assert fraction_container_problems(_template(LINKERD_INJECT, dict(VLLM))) == []


def test_a_proxy_already_in_the_manifest_is_judged_as_it_stands_not_twice() -> None:
    found = fraction_container_problems(_template({**SHARE, **LINKERD_INJECT}, dict(VLLM), inits=(LINKERD_PROXY,)))
    assert found == []  # a native sidecar injected by hand: the share goes to server


@pytest.mark.parametrize(
    ("annotations", "labels", "host_network"),
    [
        ({"sidecar.istio.io/inject": "false"}, {}, False),
        ({}, {"sidecar.istio.io/inject": "false"}, False),
        ({"sidecar.istio.io/nativeSidecar": "True"}, {}, False),
        ({}, {}, True),
    ],
    ids=["istio annotation off", "istio label off", "istio native, any value but false", "host network"],
)
def test_pods_a_mesh_leaves_alone_or_makes_native_are_not_judged(
    annotations: dict[str, str], labels: dict[str, str], host_network: bool
) -> None:
    hold = {"proxy.istio.io/config": '{"holdApplicationUntilProxyStarts": true}'}
    spec: dict[str, Any] = {"containers": [dict(VLLM)], "hostNetwork": host_network}
    assert fraction_container_problems(PodTemplate("", labels, {**SHARE, **hold, **annotations}, spec)) == []


def test_istios_label_beats_its_annotation() -> None:
    """inject.go:222-226: with both, the label decides."""
    hold = {"proxy.istio.io/config": "hold_application_until_proxy_starts: true", "sidecar.istio.io/inject": "false"}
    t = PodTemplate("", {"sidecar.istio.io/inject": "true"}, {**SHARE, **hold}, {"containers": [dict(VLLM)]})
    [(problem, _)] = fraction_container_problems(t)
    assert "puts istio-proxy first" in problem


def test_the_fix_names_the_model_server_not_the_first_container() -> None:
    found = fraction_container_problems(_template({**SHARE, **LINKERD_INJECT}, dict(LOGS), dict(VLLM)))
    assert [fix for _, fix in found] == [
        "set metadata.annotations.gpu-fraction-container-name: server (right with any mesh version)"
    ]


def test_a_pod_read_back_from_a_cluster_is_judged_on_its_containers_alone() -> None:
    """A live pod's mesh has injected already (or skipped it): a request in its annotations says nothing more."""
    t = _template({**SHARE, **LINKERD_INJECT}, dict(VLLM))
    assert fraction_container_problems(t, admitted=True) == []


def test_kaistack_diagnose_does_not_read_a_running_pods_injection_request() -> None:
    from kaistack.ops.diagnose import find_mistakes

    props = pod(name="chat", namespace="serving", annotations={**SHARE, **LINKERD_INJECT}, containers=[dict(VLLM)])
    assert [m for m in find_mistakes({"Pod": [props]}) if m.code == "kai-fraction-container"] == []


@pytest.mark.parametrize(
    "containers",
    [[{"name": ["not", "a", "name"], "image": "x"}], [{"name": {"a": 1}, "image": "x"}]],
)
def test_hostile_container_names_do_not_crash(containers: list[dict[str, Any]]) -> None:
    [(problem, _)] = fraction_container_problems(_template({**SHARE, **LINKERD_INJECT}, *containers))
    assert "puts linkerd-proxy first" in problem


def test_a_deeply_nested_proxy_config_does_not_crash() -> None:
    hold = {"proxy.istio.io/config": "[" * 1200}
    assert fraction_container_problems(_template({**SHARE, **hold}, dict(VLLM))) == []


def test_lint_reports_a_linkerd_injected_share_on_a_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "chat.yaml"
    props = deployment(
        name="chat", namespace="serving", annotations={**SHARE, **LINKERD_INJECT}, containers=[dict(VLLM)]
    )
    manifest.write_text(yaml.safe_dump(props))
    code = main(["lint", str(manifest), "--json"])
    [violation] = [
        v for v in json.loads(capsys.readouterr().out)["violations"] if v["policy"] == "kai-fraction-container"
    ]
    assert code == 1
    assert violation["message"].startswith("spec.template.metadata.annotations: linkerd.io/inject: enabled")


def test_vllm_in_a_native_sidecar_needs_the_annotation_too() -> None:
    """A native sidecar (an init container with restartPolicy Always) runs for the pod's life; KAI gives it the
    share only when the annotation names it (GetFractionContainerRef searches init containers first)."""
    sidecar = {**VLLM, "restartPolicy": "Always"}
    [(problem, fix)] = fraction_container_problems(_template(SHARE, dict(LOGS), inits=(sidecar,)))
    assert problem.startswith("spec: container server runs vLLM, but KAI gives the pod's GPU share")
    assert fix == "set metadata.annotations.gpu-fraction-container-name: server"
    named = {**SHARE, "gpu-fraction-container-name": "server"}
    assert fraction_container_problems(_template(named, dict(LOGS), inits=(sidecar,))) == []


def test_an_init_container_that_runs_to_completion_is_not_a_server() -> None:
    init = {**VLLM, "name": "warmup"}
    assert fraction_container_problems(_template(SHARE, dict(LOGS), inits=(init,))) == []
