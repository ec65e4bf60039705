"""kai-unread-constraints: what KAI does not read of a pod spec.

KAI@v0.17.0 pkg/scheduler/k8s_internal/plugins/plugins.go:26-37 creates the Kubernetes plugins its scheduler runs
(NodePorts, TaintToleration, NodeAffinity, InterPodAffinity, VolumeBinding); PodTopologySpread is not among them,
and the constraints appear in KAI only in its scheduling signature (pod_info/scheduling_constraints_signature.go:
58-90). Of their scores it takes InterPodAffinity's alone (k8s_internal/predicates/predicates.go:169-184), so a
preferred node affinity counts for nothing. Nothing under KAI's pkg/ reads a pod's preemptionPolicy (`git grep
-i preemptionPolicy v0.17.0 -- pkg` finds one test fixture). The default scheduler
reads all three, so a pod it schedules is left alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from policy_builders import deployment, pod, res

from kaistack.cli import main
from kaistack.guardrails.facts import StackFacts
from kaistack.guardrails.rules import kai_unread_constraints
from kaistack.guardrails.settings import Settings

SPREAD = [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule"}]


def _spread(props: dict[str, Any], constraints: Any = SPREAD) -> dict[str, Any]:
    spec = props["spec"]["template"]["spec"] if props["kind"] == "Deployment" else props["spec"]
    spec["topologySpreadConstraints"] = constraints
    return props


def test_a_kai_deployments_spread_constraints_are_flagged_where_they_are() -> None:
    [found] = kai_unread_constraints(res("Deployment", _spread(deployment())), Settings(), StackFacts())
    assert found.startswith("spec.template.spec.topologySpreadConstraints on a pod KAI schedules: KAI does not read")
    assert "pod anti-affinity on the same topologyKey" in found


def test_a_pod_the_default_scheduler_places_keeps_its_spread_constraints() -> None:
    props = _spread(pod(scheduler=None))
    assert kai_unread_constraints(res("Pod", props), Settings(), StackFacts()) == []


def test_an_empty_list_of_constraints_is_not_flagged() -> None:
    assert kai_unread_constraints(res("Pod", _spread(pod(), [])), Settings(), StackFacts()) == []


def test_the_platforms_own_namespaces_are_exempt() -> None:
    props = _spread(pod(namespace="kube-system"))
    assert kai_unread_constraints(res("Pod", props), Settings(), StackFacts()) == []


def test_a_custom_scheduler_name_is_the_one_checked() -> None:
    props = _spread(pod(scheduler="kai-scheduler-2"))
    assert kai_unread_constraints(res("Pod", props), Settings(scheduler_name="kai-scheduler-2"), StackFacts())


def test_a_preferred_node_affinity_is_flagged_and_a_required_one_is_not() -> None:
    props = pod()
    term = {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["H100"]}]}
    props["spec"]["affinity"] = {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "preference": term}],
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]},
    }}  # fmt: skip
    [found] = kai_unread_constraints(res("Pod", props), Settings(), StackFacts())
    assert found.startswith(
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution on a pod KAI schedules: KAI "
        "scores no node preference"
    )


def test_preemption_policy_never_is_flagged_and_preempt_lower_priority_is_not() -> None:
    never, default = pod(), pod()
    never["spec"]["preemptionPolicy"] = "Never"
    default["spec"]["preemptionPolicy"] = "PreemptLowerPriority"
    [found] = kai_unread_constraints(res("Pod", never), Settings(), StackFacts())
    assert found.startswith("spec.preemptionPolicy is Never on a pod KAI schedules: KAI does not read it")
    assert kai_unread_constraints(res("Pod", default), Settings(), StackFacts()) == []


def test_kaistack_lint_reports_it_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = tmp_path / "serving.yaml"
    manifest.write_text(yaml.safe_dump(_spread(deployment(name="vllm", namespace="serving"))))
    code = main(["lint", str(manifest), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert "kai-unread-constraints" in json.dumps(report)
    assert "spec.template.spec.topologySpreadConstraints" in json.dumps(report)


def test_kaistack_diagnose_reports_the_same_on_a_running_cluster() -> None:
    from kaistack.ops.diagnose import find_mistakes

    props = pod(name="infer", namespace="serving")
    term = {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["H100"]}]}
    props["spec"]["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": term},
    ]}}  # fmt: skip
    [found] = [m for m in find_mistakes({"Pod": [props]}) if m.code == "kai-unread-constraints"]
    assert found.subject == "Pod serving/infer"
    assert "KAI scores no node preference" in found.problem
    assert found.fix.startswith("where the node matters, require it")


# --- kai.scheduler/preemptibility: KAI@v0.17.0 pkg/apis/scheduling/v2alpha2/podgroup_types.go ParsePreemptibility
# takes "preemptible", "non-preemptible" and "" (the default); pkg/podgrouper/podgrouper/plugins/defaultgrouper/
# default_grouper.go calcPodGroupPreemptibilityWithDefaults logs any other value and reads on, owners before the pod.

PREEMPTIBILITY = "kai.scheduler/preemptibility"


@pytest.mark.parametrize("value", ["true", "Preemptible", "no"])
def test_a_preemptibility_label_kai_cannot_parse_is_flagged(value: str) -> None:
    [found] = kai_unread_constraints(res("Pod", pod(labels={PREEMPTIBILITY: value})), Settings(), StackFacts())
    assert found.startswith(f"metadata.labels {PREEMPTIBILITY}: {value!r}: KAI's pod-grouper takes only")
    assert found.endswith("Fix: set it to preemptible or non-preemptible (lower case), or remove it")


@pytest.mark.parametrize("value", ["preemptible", "non-preemptible", ""])
def test_the_values_kai_parses_are_not_flagged(value: str) -> None:
    assert kai_unread_constraints(res("Pod", pod(labels={PREEMPTIBILITY: value})), Settings(), StackFacts()) == []


def test_a_deployments_own_label_is_flagged_once_where_it_is() -> None:
    """The pod-grouper reads the top owner's label first: the Deployment's metadata, then the template's."""
    props = deployment(top_labels={PREEMPTIBILITY: "true"}, labels={PREEMPTIBILITY: "yes"})
    found = kai_unread_constraints(res("Deployment", props), Settings(), StackFacts())
    assert [f.split(":")[0] for f in found] == [
        f"metadata.labels {PREEMPTIBILITY}",
        f"spec.template.metadata.labels {PREEMPTIBILITY}",
    ]


def test_a_default_scheduled_deployments_label_is_not_kais_business() -> None:
    props = deployment(top_labels={PREEMPTIBILITY: "true"}, scheduler=None)
    assert kai_unread_constraints(res("Deployment", props), Settings(), StackFacts()) == []


def test_kaistack_diagnose_reports_a_running_pods_unparsed_preemptibility() -> None:
    from kaistack.ops.diagnose import find_mistakes

    props = pod(name="serve", namespace="serving", labels={PREEMPTIBILITY: "false"})
    [found] = [m for m in find_mistakes({"Pod": [props]}) if m.code == "kai-unread-constraints"]
    assert found.subject == "Pod serving/serve"
    assert "'false': KAI's pod-grouper takes only 'preemptible' or 'non-preemptible'" in found.problem
