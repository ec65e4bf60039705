"""KAI's ConfigMap predicate: a pod that needs a ConfigMap its namespace lacks is never placed.

KAI@v0.17.0 pkg/scheduler/k8s_internal/predicates/config_maps.go (which references count, the optional and
shared-GPU exceptions) and config_maps_test.go (the cases below, one row each); the pre-predicate runs before
any node is ordered (actions/common/allocate.go:157-165) and is victim-invariant
(plugins/predicates/predicates.go:53-57, actions/common/action_eligibility.go).
"""

from __future__ import annotations

from typing import Any

import pytest
from placement_testlib import queue, run, scenario

from placement.config_maps import missing, required_config_maps
from placement.scenario import ScenarioError
from placement.session import Session

SHARED = {"runai/shared-gpu-configmap": "shared-gpu-configmap"}


def _cm_volume(volume: str, config_map: str, optional: bool | None = None) -> dict[str, Any]:
    source: dict[str, Any] = {"name": config_map}
    if optional is not None:
        source["optional"] = optional
    return {"name": volume, "configMap": source}


def _mounting(*volumes: str) -> dict[str, Any]:
    return {"name": "c", "volumeMounts": [{"name": v, "mountPath": f"/{v}"} for v in volumes]}


def _env_ref(config_map: str, optional: bool | None = None) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": config_map, "key": "k"}
    if optional is not None:
        ref["optional"] = optional
    return {"name": "E", "valueFrom": {"configMapKeyRef": ref}}


# config_maps_test.go's cases: (name, pod spec, annotations, the ConfigMaps it needs).
CASES: list[tuple[str, dict[str, Any], dict[str, str], tuple[str, ...]]] = [
    ("empty spec", {}, {}, ()),
    ("configMap volume", {"containers": [_mounting("bla")], "volumes": [_cm_volume("bla", "bla")]}, {}, ("bla",)),
    ("unreferenced configMap volume", {"containers": [{"name": "c"}], "volumes": [_cm_volume("bla", "bla")]}, {}, ()),
    (
        "unreferenced configMap and referenced configmap",
        {
            "containers": [_mounting("bla-referenced")],
            "volumes": [_cm_volume("bla", "bla"), _cm_volume("bla-referenced", "bla-referenced")],
        },
        {},
        ("bla-referenced",),
    ),
    ("non-ConfigMap volume", {"containers": [_mounting("bla")], "volumes": [{"name": "bla", "emptyDir": {}}]}, {}, ()),
    ("env var", {"containers": [{"name": "c", "env": [_env_ref("bla")]}]}, {}, ("bla",)),
    ("env from", {"containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "bla"}}]}]}, {}, ("bla",)),
    (
        "non-referenced configmap volume, env var",
        {"containers": [{"name": "c", "env": [_env_ref("bla")]}], "volumes": [_cm_volume("bla", "bla")]},
        {},
        ("bla",),
    ),
    (
        "shared gpu configmaps",
        {
            "containers": [
                {
                    **_mounting("vol", "evar-vol"),
                    "env": [_env_ref("shared-gpu-configmap-0")],
                    "envFrom": [{"configMapRef": {"name": "shared-gpu-configmap-evar-0"}}],
                }
            ],
            "volumes": [
                _cm_volume("vol", "shared-gpu-configmap-0"),
                _cm_volume("evar-vol", "shared-gpu-configmap-evar-0"),
            ],
        },
        SHARED,
        (),
    ),
    (
        "env var referenced configmaps (not under the shared-GPU prefix)",
        {
            "containers": [
                {
                    **_mounting("cm-name-vol", "cm-name-evar-vol"),
                    "env": [_env_ref("cm-name")],
                    "envFrom": [{"configMapRef": {"name": "cm-name2"}}],
                }
            ],
            "volumes": [_cm_volume("cm-name-vol", "cm-name-0"), _cm_volume("cm-name-evar-vol", "cm-name-evar-0")],
        },
        SHARED,
        ("cm-name", "cm-name-0", "cm-name-evar-0", "cm-name2"),
    ),
    (
        "optional configmap volume",
        {"containers": [_mounting("v")], "volumes": [_cm_volume("v", "optional-cm", optional=True)]},
        {},
        (),
    ),
    (
        "required configmap volume (optional: false)",
        {"containers": [_mounting("v")], "volumes": [_cm_volume("v", "required-cm", optional=False)]},
        {},
        ("required-cm",),
    ),
    (
        "mixed optional and required volumes",
        {
            "containers": [_mounting("a", "b")],
            "volumes": [_cm_volume("a", "optional-cm", optional=True), _cm_volume("b", "required-cm", optional=False)],
        },
        {},
        ("required-cm",),
    ),
    (
        "projected configmap volume not mounted",
        {
            "containers": [{"name": "c"}],
            "volumes": [{"name": "p", "projected": {"sources": [{"configMap": {"name": "required-cm"}}]}}],
        },
        {},
        (),
    ),
]


@pytest.mark.parametrize(("spec", "annotations", "needed"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_pod_needs_the_configmaps_kai_counts(
    spec: dict[str, Any], annotations: dict[str, str], needed: tuple[str, ...]
) -> None:
    assert required_config_maps(spec, annotations) == needed


def test_a_mounted_projected_source_an_init_container_and_an_ephemeral_container_count_too() -> None:
    """getMountedVolumes and getConfigMapRefsFromContainers read init, regular and ephemeral containers."""
    spec = {
        "initContainers": [{"name": "i", "envFrom": [{"configMapRef": {"name": "init-cm"}}]}],
        "containers": [_mounting("p")],
        "ephemeralContainers": [{"name": "debug", "env": [_env_ref("debug-cm")]}],
        "volumes": [{"name": "p", "projected": {"sources": [{"configMap": {"name": "projected-cm"}}, {"secret": {}}]}}],
    }
    assert required_config_maps(spec, {}) == ("debug-cm", "init-cm", "projected-cm")


def test_optional_env_references_are_not_needed() -> None:
    spec = {"containers": [{"name": "c", "env": [_env_ref("a", optional=True)], "envFrom": []}]}
    spec["containers"][0]["envFrom"] = [{"configMapRef": {"name": "b", "optional": True}}]
    assert required_config_maps(spec, {}) == ()


def test_a_malformed_spec_names_nothing_instead_of_failing() -> None:
    spec = {"containers": "x", "volumes": [None, {"name": 3, "configMap": "y"}], "initContainers": [{"env": 5}]}
    assert required_config_maps(spec, {"runai/shared-gpu-configmap": 7}) == ()


def test_unhashable_volume_and_mount_names_name_nothing_instead_of_failing() -> None:
    spec = {
        "containers": [{"name": "c", "volumeMounts": [{"name": ["x"]}, {"name": {"a": 1}}]}],
        "volumes": [{"name": ["x"], "configMap": {"name": "cm"}}, {"name": {"a": 1}}],
    }
    assert required_config_maps(spec, {}) == ()


def test_an_init_containers_mount_makes_its_configmap_needed() -> None:
    spec = {"initContainers": [_mounting("v")], "containers": [{"name": "c"}], "volumes": [_cm_volume("v", "cm")]}
    assert required_config_maps(spec, {}) == ("cm",)


def test_missing_keeps_the_names_the_namespace_does_not_have() -> None:
    existing = frozenset({("team-a", "one"), ("team-b", "two")})
    assert missing("team-a", ("one", "two"), existing) == ("two",)


# --- in the simulator ---------------------------------------------------------------------------------


def _doc(jobs: list[dict[str, Any]], config_maps: dict[str, list[str]] | None, **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"nodes": [{"name": "n0", "gpus": 2}], "queues": [queue("q")], "jobs": jobs, **extra}
    if config_maps is not None:
        doc["configMaps"] = config_maps
    return doc


TRAIN = {"name": "train", "queue": "q", "gpu": 1, "namespace": "team-a", "configMaps": ["settings"]}


def test_a_pod_whose_configmap_is_missing_stays_pending_and_says_which() -> None:
    result = run(_doc([TRAIN], {"team-a": ["other"], "team-b": ["settings"]}))
    assert result.tasks["train-0"].status == "Pending"
    reason = result.reasons["train"]
    assert reason.code == "missing-config-maps"
    assert "ConfigMap settings, which does not exist in namespace team-a" in reason.message


def test_a_pod_whose_configmap_exists_is_placed() -> None:
    result = run(_doc([TRAIN], {"team-a": ["settings"]}))
    assert result.tasks["train-0"].node == "n0"


def test_configmaps_left_out_of_the_scenario_are_not_checked() -> None:
    result = run(_doc([TRAIN], None))
    assert result.tasks["train-0"].node == "n0"


def test_one_pod_of_a_gang_missing_a_configmap_keeps_the_whole_gang_pending() -> None:
    gang = {
        "name": "gang",
        "queue": "q",
        "gpu": 1,
        "minMember": 2,
        "namespace": "team-a",
        "tasks": [{}, {"configMaps": ["settings"]}],
    }
    result = run(_doc([gang], {}))
    assert [result.tasks[f"gang-{i}"].status for i in range(2)] == ["Pending", "Pending"]
    assert result.reasons["gang"].code == "missing-config-maps"


def test_the_evicting_actions_skip_a_job_that_misses_a_configmap() -> None:
    s = scenario(_doc([TRAIN, {"name": "ok", "queue": "q", "gpu": 1}], {}))
    ssn = Session(s.snapshot, s.placement)
    ssn.open()
    assert ssn.victim_invariant_failure(ssn.jobs["train"].tasks) is ssn.jobs["train"].tasks[0]
    assert ssn.victim_invariant_failure(ssn.jobs["ok"].tasks) is None


def test_a_job_refused_by_its_configmap_does_not_stand_for_the_jobs_alike_to_it() -> None:
    """With scheduling signatures, a job whose search fails makes the queue skip later jobs no easier than it
    (KAI@v0.17.0 preempt.go:77-90). A job refused by a victim-invariant pre-predicate is skipped before any search
    and is no such representative, so an alike job behind it still preempts."""
    jobs = [
        {"name": "low", "queue": "q", "priority": 10, "gpu": 1, "tasks": [{"state": "Running", "node": "n0"}]},
        {**TRAIN, "priority": 90},
        {"name": "alike", "queue": "q", "priority": 90, "gpu": 1, "namespace": "team-a"},
    ]
    doc = _doc(jobs, {}, actions=["allocate", "preempt"], placement={"useSchedulingSignatures": True}, rounds=2)
    doc["nodes"] = [{"name": "n0", "gpus": 1}]
    result = run(doc)
    assert {name: t.node for name, t in result.tasks.items()} == {"low-0": None, "train-0": None, "alike-0": "n0"}


def test_several_missing_configmaps_are_named_in_the_plural() -> None:
    result = run(_doc([{**TRAIN, "configMaps": ["a", "b"]}], {}))
    message = result.reasons["train"].message
    assert "ConfigMaps a, b, which do not exist in namespace team-a" in message
    assert message.endswith("(create them, or mark the references optional)")


def _consolidation(low_needs: list[str], high_needs: list[str]) -> dict[str, Any]:
    """Two nodes of 2 GPUs, one GPU busy on each; a 2-GPU job can only start if one running pod moves. Two
    rounds: the moved pod is evicted and re-created in the first, and all three run in the second."""
    nodes = [{"name": "n0", "gpus": 2}, {"name": "n1", "gpus": 2}]
    jobs = [
        {"name": "a", "queue": "q", "gpu": 1, "configMaps": low_needs, "tasks": [{"state": "Running", "node": "n0"}]},
        {"name": "b", "queue": "q", "gpu": 1, "configMaps": high_needs, "tasks": [{"state": "Running", "node": "n1"}]},
        {"name": "big", "queue": "q", "gpu": 2},
    ]
    return {
        "nodes": nodes,
        "queues": [queue("q")],
        "jobs": jobs,
        "configMaps": {"default": ["present"]},
        "actions": ["allocate", "consolidation"],
        "rounds": 2,
    }


def test_consolidation_moves_a_running_pod_whose_configmaps_exist() -> None:
    result = run(_consolidation(["present"], ["present"]))
    assert {name: t.node for name, t in result.tasks.items()} == {"a-0": "n0", "b-0": "n0", "big-0": "n1"}


def test_a_running_pod_whose_configmap_is_gone_cannot_be_moved_so_consolidation_fails() -> None:
    """A victim is re-placed through allocateTask, whose pre-predicate refuses it like any pod."""
    result = run(_consolidation(["gone"], ["gone"]))
    assert {name: t.node for name, t in result.tasks.items()} == {"a-0": "n0", "b-0": "n1", "big-0": None}


def test_consolidation_moves_the_pod_it_can_re_place_instead_of_the_one_it_would_have() -> None:
    """Unconstrained, b moves to n0 (above); with b's ConfigMap gone, a moves to n1 instead."""
    result = run(_consolidation(["present"], ["gone"]))
    assert {name: t.node for name, t in result.tasks.items()} == {"a-0": "n1", "b-0": "n1", "big-0": "n0"}


# --- the scenario keys --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config_maps", "job_key", "message"),
    [
        (["a"], ["x"], r"configMaps: must be a mapping of namespaces to ConfigMap names"),
        ({"ns": "a"}, ["x"], r"configMaps\.ns: must be a list, got str"),
        ({"ns": [3]}, ["x"], r"configMaps\.ns\[0\]: must be a non-empty string, got 3"),
        ({"ns": ["a"]}, "x", r"jobs\[0\]\.configMaps: must be a list, got str"),
        ({"ns": ["a"]}, [""], r"jobs\[0\]\.configMaps\[0\]: must be a non-empty string, got ''"),
    ],
)
def test_a_malformed_configmaps_key_names_the_key(config_maps: Any, job_key: Any, message: str) -> None:
    doc = _doc([{**TRAIN, "configMaps": job_key}], None)
    doc["configMaps"] = config_maps
    with pytest.raises(ScenarioError, match=message):
        scenario(doc)
