"""`kaistack lint`: the pack's rules on the field guides' manifests and on kubectl/helm output."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kaistack.cli import main
from kaistack.guardrails.facts import StackFacts
from kaistack.ops.lint import lint_paths, load_manifests

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "tests" / "data" / "manifests"
GUIDES = sorted(str(p) for p in MANIFESTS.glob("*.yaml"))


def _lint(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["lint", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _json(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    code, out, _ = _lint(*args, "--json", capsys=capsys)
    return code, json.loads(out)


def _file(name: str) -> str:
    return str(MANIFESTS / name)


# --- verdicts on the field guides ----------------------------------------------------------------


def test_vllm_deployment_at_its_fraction_passes(capsys: pytest.CaptureFixture[str]) -> None:
    """002's vllm-test-07: gpu-fraction 0.7 and `vllm serve ... --gpu-memory-utilization=0.7`."""
    code, out, _ = _lint(_file("002-vllm-test-07.yaml"), capsys=capsys)
    assert code == 0
    assert out == "no violations in 1 object (1 file)\n"


def test_gpu_pod_without_queue_label_is_flagged_by_kai_queue_label(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _json(_file("001-gpu-pod.yaml"), capsys=capsys)
    assert code == 1
    assert [(v["policy"], v["kind"], v["name"], v["document"]) for v in report["violations"]] == [
        ("kai-queue-label", "Pod", "gpu-pod", 1)
    ]
    assert report["errors"] == []


def test_legacy_runai_queue_examples_get_the_hint(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _json(_file("003-legacy-runai-queue-pods.yaml"), capsys=capsys)
    assert code == 1
    assert [(v["name"], v["document"]) for v in report["violations"]] == [
        ("train-pod", 1),
        ("build-pod", 2),
        ("gpu-sharing", 3),
    ]
    assert all("use kai.scheduler/queue instead" in v["message"] for v in report["violations"])


def test_gpu_memory_and_gpu_fraction_together_are_flagged(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _json(_file("004-gpu-pod-both-annotations.yaml"), capsys=capsys)
    assert code == 1
    assert [v["policy"] for v in report["violations"]] == ["kai-gpu-sharing-annotations"]
    assert "sets both gpu-fraction and gpu-memory" in report["violations"][0]["message"]


@pytest.mark.parametrize("name", ["004-queues.yaml", "004-gpu-pod-memory.yaml", "001-vcluster-helmrelease.yaml"])
def test_well_formed_guide_manifests_pass(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _json(_file(name), capsys=capsys)
    assert (code, report) == (0, {"violations": [], "errors": []})


def test_cpu_pod_scheduled_by_kai_needs_a_queue_too(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _json(_file("001-cpu-only-pod.yaml"), capsys=capsys)
    assert code == 1
    assert [v["policy"] for v in report["violations"]] == ["kai-queue-label"]


def test_all_guides_together_report_violations_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    """The broken files are errors (exit 2) and every other file is still checked."""
    code, report = _json(*GUIDES, capsys=capsys)
    assert code == 2
    assert sorted({(Path(v["file"]).name, v["policy"]) for v in report["violations"]}) == [
        ("001-cpu-only-pod.yaml", "kai-queue-label"),
        ("001-gpu-pod.yaml", "kai-queue-label"),
        ("003-legacy-runai-queue-pods.yaml", "kai-queue-label"),
        ("004-gpu-pod-both-annotations.yaml", "kai-gpu-sharing-annotations"),
    ]
    assert [(Path(e["file"]).name, e["line"]) for e in report["errors"]] == [
        # Flattened by the lost indentation, each Queue's resources hold `quota` three times.
        ("002-queues-broken-indentation.yaml", 12),
        ("002-queues-broken-indentation.yaml", 32),
        ("002-vllm-test-02-broken-indentation.yaml", 24),
    ]


# --- unreadable input ----------------------------------------------------------------------------


def test_invalid_yaml_is_an_error_with_file_and_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    broken = _file("002-vllm-test-02-broken-indentation.yaml")
    code, out, err = _lint(broken, _file("001-gpu-pod.yaml"), capsys=capsys)
    assert code == 2
    assert err.startswith(
        f"{broken}:24: error: not valid YAML (document 1): mapping values are not allowed here (check the indentation)"
    )
    assert "Traceback" not in err
    assert "001-gpu-pod.yaml:1 Pod/gpu-pod [kai-queue-label]" in out


def test_document_that_is_not_a_kubernetes_object_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A queue like 002's, whose metadata block lost its indentation (002's own also repeat keys so flattened)."""
    queue = tmp_path / "queue.yaml"
    queue.write_text("apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata:\nname: default\nspec: {}\n")
    code, report = _json(str(queue), capsys=capsys)
    assert code == 2
    assert report["errors"][0]["message"] == (
        "document 1 is not a Kubernetes object: Queue has no metadata.name (is the metadata block indented "
        "under 'metadata:'?)"
    )


def test_missing_file_is_an_error_and_the_rest_is_checked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, report = _json(str(tmp_path / "nope.yaml"), _file("001-gpu-pod.yaml"), capsys=capsys)
    assert code == 2
    missing = {
        "file": str(tmp_path / "nope.yaml"),
        "line": None,
        "message": "cannot read file: No such file or directory",
    }
    assert report["errors"] == [missing]
    assert len(report["violations"]) == 1


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("- a\n- b\n", "expected a mapping with apiVersion and kind, got list"),
        ("kind: Pod\nmetadata: {name: x}\n", "missing apiVersion"),
        ("just text\n", "got str"),
    ],
)
def test_documents_that_are_not_objects_are_errors(text: str, fragment: str) -> None:
    objects, errors = load_manifests("f.yaml", text)
    assert objects == []
    assert len(errors) == 1
    assert fragment in errors[0].message


def test_documents_before_a_syntax_error_are_still_checked() -> None:
    text = "apiVersion: v1\nkind: Pod\nmetadata: {name: ok}\n---\nkind: [\n"
    objects, errors = load_manifests("f.yaml", text)
    assert [o.name for o in objects] == ["ok"]
    assert errors[0].line is not None
    assert "not valid YAML (document 2)" in errors[0].message


# --- other shapes of input -----------------------------------------------------------------------


def _kubectl_list() -> str:
    """What `kubectl get pods -o yaml` prints: one List with items."""
    pods = [yaml.safe_load(Path(_file(name)).read_text()) for name in ("001-gpu-pod.yaml", "004-gpu-pod-memory.yaml")]
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": pods, "metadata": {"resourceVersion": ""}})


def test_kubectl_list_output_is_checked_item_by_item(tmp_path: Path) -> None:
    path = tmp_path / "pods.yaml"
    path.write_text(_kubectl_list())
    result = lint_paths([str(path)], StackFacts())
    assert result.objects == 2
    assert [(v.name, v.document, v.policy) for v in result.violations] == [("gpu-pod", 1, "kai-queue-label")]


def test_list_items_that_are_not_objects_are_errors_with_their_line(tmp_path: Path) -> None:
    path = tmp_path / "list.yaml"
    path.write_text("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: a}\n- 42\n")
    result = lint_paths([str(path)], StackFacts())
    assert [(e.line, e.message) for e in result.errors] == [
        (7, "document 1 items[1]: expected a mapping with apiVersion and kind, got int")
    ]


def test_list_item_whose_metadata_is_a_string_is_an_error_and_the_other_files_are_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "list.yaml"
    broken.write_text("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: oops\n")
    code, report = _json(str(broken), _file("001-gpu-pod.yaml"), capsys=capsys)
    assert code == 2
    assert report["errors"] == [
        {
            "file": str(broken),
            "line": 4,
            "message": "document 1 items[0]: Pod metadata is a str; expected a mapping with name",
        }
    ]
    assert [v["name"] for v in report["violations"]] == ["gpu-pod"]


_WRONG_METADATA = [
    ("metadata: [a]", "Pod metadata is a list; expected a mapping with name"),
    ("metadata: {name: [a, b]}", "Pod metadata.name is a list; expected a string"),
    ("metadata: {name: {a: 1}}", "Pod metadata.name is a dict; expected a string"),
    ("metadata: {name: p, namespace: 3}", "Pod metadata.namespace is a int; expected a string"),
    ("metadata: {name: p, labels: oops}", "Pod metadata.labels is a str; expected a mapping of strings to strings"),
    (
        "metadata: {name: p, annotations: [x]}",
        "Pod metadata.annotations is a list; expected a mapping of strings to strings",
    ),
    (
        "metadata: {name: p, labels: {team: yes}}",
        'Pod metadata.labels.team: bool True; expected a string (quote it: "1", "true")',
    ),
]


@pytest.mark.parametrize(("metadata", "fragment"), _WRONG_METADATA)
def test_metadata_of_the_wrong_shape_is_an_error_not_read_as_absent(metadata: str, fragment: str) -> None:
    objects, errors = load_manifests("f.yaml", f"apiVersion: v1\nkind: Pod\n{metadata}\n")
    assert objects == []
    assert [e.message for e in errors] == [f"document 1 is not a Kubernetes object: {fragment}"]


@pytest.mark.parametrize(("metadata", "fragment"), _WRONG_METADATA)
def test_list_items_with_metadata_of_the_wrong_shape_are_errors(metadata: str, fragment: str) -> None:
    text = f"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  {metadata}\n- 42\n"
    objects, errors = load_manifests("f.yaml", text)
    assert objects == []
    assert errors[0].message == f"document 1 items[0]: {fragment}"


def test_a_null_label_or_annotation_value_is_read_as_empty_as_the_api_server_decodes_it() -> None:
    """Helm writes `checksum/config:` with nothing after it for an empty value; kubectl accepts it as ""."""
    text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: {checksum/config: }\n  labels: {a: }\n"
    objects, errors = load_manifests("f.yaml", text)
    assert errors == []
    assert objects[0].obj["metadata"]["annotations"] == {"checksum/config": ""}
    assert objects[0].obj["metadata"]["labels"] == {"a": ""}


def test_list_whose_items_is_not_a_list_is_an_error() -> None:
    objects, errors = load_manifests("f.yaml", "apiVersion: v1\nkind: PodList\nitems: oops\n")
    assert objects == []
    assert [e.message for e in errors] == [
        "document 1 is not a Kubernetes object: PodList items is a str; expected a list of objects"
    ]


def test_helm_template_stream_with_empty_documents_is_read(tmp_path: Path) -> None:
    stream = "---\n# Source: chart/templates/a.yaml\n" + Path(_file("002-vllm-test-07.yaml")).read_text() + "---\n---\n"
    path = tmp_path / "rendered.yaml"
    path.write_text(stream)
    result = lint_paths([str(path)], StackFacts())
    assert (result.objects, result.violations, result.errors) == (1, [], [])


def test_directories_are_searched_for_manifests() -> None:
    result = lint_paths([str(MANIFESTS)], StackFacts())
    assert result.files == len(GUIDES)


def test_stdin_is_read_with_a_dash(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    stdin = io.TextIOWrapper(io.BytesIO(Path(_file("001-gpu-pod.yaml")).read_bytes()))  # bytes under it, as a real one
    monkeypatch.setattr(sys, "stdin", stdin)
    code, out, _ = _lint("-", capsys=capsys)
    assert code == 1
    assert out.startswith("-:1 Pod/gpu-pod [kai-queue-label] ")


@pytest.mark.parametrize(
    "piped", ["", "# kubectl printed nothing\n", "---\n---\n", "null\n", "--- # nothing\n", "---\nnull\n---\n"]
)
def test_empty_stdin_is_an_error_not_a_clean_cluster(
    piped: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`false | kaistack lint -`: what a failed `kubectl get` leaves must not pass (kubectl apply refuses it too)."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(piped.encode())))
    code, _, err = _lint("-", capsys=capsys)
    assert code == 2
    assert "-: error: holds no YAML document (empty, or only comments)" in err


def test_a_placeholder_file_beside_manifests_is_no_error(tmp_path: Path) -> None:
    """kubectl apply refuses only when no input at all holds an object; a comments-only file in a directory is fine."""
    (tmp_path / "pod.yaml").write_text(Path(_file("001-gpu-pod.yaml")).read_text())
    (tmp_path / "empty.yaml").write_text("# placeholder, filled by CI\n")
    result = lint_paths([str(tmp_path)], StackFacts())
    assert (result.objects, result.errors) == (1, [])


def test_an_empty_list_is_a_clean_namespace(tmp_path: Path) -> None:
    path = tmp_path / "pods.yaml"
    path.write_text("apiVersion: v1\nkind: List\nitems: []\n")
    result = lint_paths([str(path)], StackFacts())
    assert (result.objects, result.violations, result.errors) == (0, [], [])


# --- against a stack -----------------------------------------------------------------------------


def test_with_a_stack_a_leaf_queue_passes(capsys: pytest.CaptureFixture[str]) -> None:
    """dev declares default -> (test, team-a): `test` is a leaf there."""
    code, report = _json(_file("004-gpu-pod-memory.yaml"), "--stack", "dev", "--project", str(ROOT), capsys=capsys)
    assert (code, report) == (0, {"violations": [], "errors": []})


def test_with_a_stack_a_parent_queue_is_flagged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    variant = tmp_path / "pod.yaml"
    text = Path(_file("004-gpu-pod-memory.yaml")).read_text()
    variant.write_text(text.replace("kai.scheduler/queue: test", "kai.scheduler/queue: default"))
    code, report = _json(str(variant), "--stack", "dev", "--project", str(ROOT), capsys=capsys)
    assert code == 1
    assert [v["policy"] for v in report["violations"]] == ["kai-queue-label"]
    assert "default is not a declared leaf queue" in report["violations"][0]["message"]


def test_with_a_stack_host_pods_of_a_tenant_namespace_are_bound_to_its_queues(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kubectl get pods -n vcluster-team-a -o yaml` on the host: synced pods must use team-a's queues."""
    synced = tmp_path / "synced.yaml"
    text = Path(_file("004-gpu-pod-memory.yaml")).read_text()
    synced.write_text(text.replace("namespace: gpu-workload", "namespace: vcluster-team-a"))
    code, report = _json(str(synced), "--stack", "dev", "--project", str(ROOT), capsys=capsys)
    assert code == 1
    assert [v["policy"] for v in report["violations"]] == ["tenant-queue-binding"]
    assert "tenant team-a (host namespace vcluster-team-a) uses queue test" in report["violations"][0]["message"]


def test_unknown_stack_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _lint(_file("001-gpu-pod.yaml"), "--stack", "nope", "--project", str(ROOT), capsys=capsys)
    assert code == 2
    assert "stack 'nope': no Pulumi.nope.yaml" in err


# --- the command line ----------------------------------------------------------------------------


def test_help_shows_an_example() -> None:
    exe = shutil.which("kaistack", path=str(Path(sys.executable).parent))
    assert exe is not None
    help_text = subprocess.run([exe, "lint", "--help"], capture_output=True, text=True, check=True).stdout
    assert "kaistack lint deploy/*.yaml" in help_text
    assert "exit codes: 0 clean, 1 violations, 2 unreadable input" in help_text


def test_human_output_is_one_line_per_violation_and_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _lint(_file("003-legacy-runai-queue-pods.yaml"), _file("002-vllm-test-07.yaml"), capsys=capsys)
    lines = out.splitlines()
    assert code == 1
    assert len(lines) == 4
    assert lines[0].startswith(f"{_file('003-legacy-runai-queue-pods.yaml')}:1 Pod/train-pod [kai-queue-label] ")
    assert lines[-1] == "3 violations in 3 of 4 objects (2 files)"


def test_flux_vcluster_release_without_set_owner_false_is_flagged(tmp_path: Path) -> None:
    release = yaml.safe_load(Path(_file("001-vcluster-helmrelease.yaml")).read_text())
    del release["spec"]["values"]["experimental"]
    path = tmp_path / "vcluster.yaml"
    path.write_text(yaml.safe_dump(release))
    result = lint_paths([str(path)], StackFacts())
    assert [(v.policy, v.kind, v.name) for v in result.violations] == [
        ("vcluster-set-owner-false", "HelmRelease", "my-vcluster")
    ]


def test_flux_vcluster_release_from_a_chart_ref_is_checked(tmp_path: Path) -> None:
    """Flux helm-controller v2 `spec.chartRef` (an OCIRepository or HelmChart source) instead of spec.chart."""
    release = yaml.safe_load(Path(_file("001-vcluster-helmrelease.yaml")).read_text())
    del release["spec"]["chart"]
    release["spec"]["chartRef"] = {"kind": "OCIRepository", "name": "vcluster"}
    del release["spec"]["values"]["experimental"]
    path = tmp_path / "vcluster.yaml"
    path.write_text(yaml.safe_dump(release))
    found = lint_paths([str(path)], StackFacts()).violations
    assert [(v.policy, v.name) for v in found] == [("vcluster-set-owner-false", "my-vcluster")]
    assert "setOwner is unset" in found[0].message


def _release_with_values_from(set_owner: bool | None) -> dict[str, object]:
    release = yaml.safe_load(Path(_file("001-vcluster-helmrelease.yaml")).read_text())
    del release["spec"]["values"]["experimental"]
    if set_owner is not None:
        release["spec"]["values"]["experimental"] = {"syncSettings": {"setOwner": set_owner}}
    release["spec"]["valuesFrom"] = [{"kind": "ConfigMap", "name": "vcluster-kai-values"}]
    return release


def test_a_flux_release_with_values_from_is_told_to_set_set_owner_inline(tmp_path: Path) -> None:
    """Flux merges spec.valuesFrom in order, then spec.values over them (fluxcd.io/flux/components/helm/
    helmreleases, "Values overrides"): a ConfigMap kaistack cannot read may set it, but only inline it is sure."""
    path = tmp_path / "vcluster.yaml"
    path.write_text(yaml.safe_dump(_release_with_values_from(None)))
    [found] = lint_paths([str(path)], StackFacts()).violations
    assert found.message.startswith(
        "values experimental.syncSettings.setOwner is not set here, and the rest of the values come from "
        "spec.valuesFrom (ConfigMap/vcluster-kai-values), which kaistack cannot read: set it to false in spec.values"
    )


def test_a_flux_release_setting_set_owner_false_inline_passes_whatever_its_values_from_say(tmp_path: Path) -> None:
    path = tmp_path / "vcluster.yaml"
    path.write_text(yaml.safe_dump(_release_with_values_from(False)))
    assert lint_paths([str(path)], StackFacts()).violations == []


# --- objects read back from a cluster --------------------------------------------------------------------

LIVE_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "gpu-pod-x-default-x-team-a",
        "namespace": "vcluster-team-a",
        "uid": "6f1c2b9e-1111-2222-3333-444455556666",
        "resourceVersion": "4242",
        "labels": {
            "kai.scheduler/queue": "team-a",
            "vcluster.loft.sh/managed-by": "team-a",
            "vcluster.loft.sh/namespace": "default",
        },
        # Written by KAI's pod-grouper after the pod was created.
        "annotations": {
            "pod-group-name": "pg-gpu-pod-x-default-x-team-a-6f1c2b9e",
            "vcluster.loft.sh/object-name": "p",
        },
    },
    "spec": {
        "schedulerName": "kai-scheduler",
        "nodeName": "kaistack-dev-worker",  # written by the scheduler's binding
        "containers": [{"name": "main", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
    },
    "status": {"phase": "Running"},
}


def _bypass(obj: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    path = tmp_path / "pods.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [obj]}))
    _, report = _json(str(path), "--stack", "dev", "--project", str(ROOT), capsys=capsys)
    return [v["message"] for v in report["violations"] if v["policy"] == "kai-no-bypass"]


def test_a_running_pod_from_kubectl_is_not_blamed_for_what_the_cluster_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kubectl get pods -o yaml | kaistack lint -` (lint --help): nodeName and pod-group-name are the
    scheduler's and the pod-grouper's work, not the author's; the host's admission judged the creation."""
    assert _bypass(LIVE_POD, tmp_path, capsys) == []


def test_the_same_pod_as_a_manifest_to_apply_is_flagged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = {**LIVE_POD, "metadata": {k: v for k, v in LIVE_POD["metadata"].items() if k != "uid"}}
    del manifest["status"]
    problems = _bypass(manifest, tmp_path, capsys)
    assert len(problems) == 2
    assert any("spec.nodeName is 'kaistack-dev-worker'" in p for p in problems)
    assert any("pod-group-name" in p for p in problems)


def test_a_running_pod_with_a_system_priority_is_still_flagged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pod = {**LIVE_POD, "spec": {**LIVE_POD["spec"], "priorityClassName": "system-node-critical"}}
    problems = _bypass(pod, tmp_path, capsys)
    assert len(problems) == 1
    assert "system-node-critical" in problems[0]


# A pod template of the wrong shape: the rules would read it as absent (no containers, so no GPU pod), and lint
# passed the file (exit 0); kubectl's strict decoding refuses it.
_WRONG_TEMPLATES = [
    (
        "apps/v1",
        "Deployment",
        "spec: {template: {spec: {containers: {name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}}}}",
        "Deployment spec.template.spec.containers is a dict; expected a list",
    ),
    ("apps/v1", "Deployment", "spec: {template: [1]}", "Deployment spec.template is a list; expected a mapping"),
    (
        "apps/v1",
        "Deployment",
        "spec: {template: {spec: {containers: [{name: c, image: x, resources: [1]}]}}}",
        "Deployment spec.template.spec.containers[0].resources is a list; expected a mapping",
    ),
    (
        "batch/v1",
        "Job",
        "spec: {template: {metadata: {labels: 'kai.scheduler/queue=q'}, spec: {containers: [{name: c, image: x}]}}}",
        "Job spec.template.metadata.labels is a str; expected a mapping",
    ),
    (
        "batch/v1",
        "Job",
        "spec: {template: {metadata: {labels: {team: 1}}, spec: {containers: [{name: c, image: x}]}}}",
        'Job spec.template.metadata.labels.team: int 1; expected a string (quote it: "1", "true")',
    ),
    ("v1", "Pod", "spec: [1]", "Pod spec is a list; expected a mapping"),
    ("v1", "Pod", "spec: {initContainers: [x]}", "Pod spec.initContainers[0] is a str; expected a mapping"),
    (
        "kubeflow.org/v1",
        "PyTorchJob",
        "spec: {pytorchReplicaSpecs: {Worker: [1]}}",
        "PyTorchJob spec.pytorchReplicaSpecs.Worker is a list; expected a mapping",
    ),
    (
        "batch/v1",
        "CronJob",
        "spec: {jobTemplate: {spec: {template: {spec: {containers: [{name: c, resources: {limits: 1}}]}}}}}",
        "CronJob spec.jobTemplate.spec.template.spec.containers[0].resources.limits is a int; expected a mapping",
    ),
]


@pytest.mark.parametrize(("api", "kind", "spec", "fragment"), _WRONG_TEMPLATES)
def test_a_pod_template_of_the_wrong_shape_is_an_error_not_read_as_absent(
    api: str, kind: str, spec: str, fragment: str
) -> None:
    objects, errors = load_manifests("f.yaml", f"apiVersion: {api}\nkind: {kind}\nmetadata: {{name: w}}\n{spec}\n")
    assert objects == []
    assert [e.message for e in errors] == [f"document 1 is not a Kubernetes object: {fragment}"]


def test_a_pod_template_of_the_wrong_shape_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "d.yaml"
    api, kind, spec, _ = _WRONG_TEMPLATES[0]
    path.write_text(f"apiVersion: {api}\nkind: {kind}\nmetadata: {{name: w}}\n{spec}\n")
    code, _, err = _lint(str(path), capsys=capsys)
    assert code == 2
    assert "spec.template.spec.containers is a dict" in err


@pytest.mark.parametrize("where", ["metadata", "spec.template.metadata"])
def test_label_values_and_keys_kubectl_sends_as_strings_are_read_as_strings(where: str) -> None:
    """go-yaml v2 keeps `2024-01-01` a string (go-yaml/yaml@v2.4.0 decode.go:473-479) and sigs.k8s.io/yaml writes
    int and bool keys as text (kubernetes-sigs/yaml@v1.6.0 yaml.go:219-220): kubectl accepts both; PyYAML built a
    date and an int."""
    labels = "{released: 2024-01-01, 1: a, kai.scheduler/queue: team-a}"
    meta = f"{{name: d, labels: {labels}}}" if where == "metadata" else "{name: d}"
    template = f"{{metadata: {{labels: {labels}}}, " if where != "metadata" else "{"
    text = (
        f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {meta}\n"
        f"spec: {{template: {template}spec: {{containers: [{{name: c, image: x}}]}}}}}}\n"
    )
    objects, errors = load_manifests("f.yaml", text)
    assert errors == []
    [obj] = objects
    read = obj.obj["metadata"]["labels"] if where == "metadata" else obj.obj["spec"]["template"]["metadata"]["labels"]
    assert read == {"released": "2024-01-01", "1": "a", "kai.scheduler/queue": "team-a"}


@pytest.mark.parametrize(
    ("labels", "fragment"),
    [
        ("{team: 1}", 'labels.team: int 1; expected a string (quote it: "1", "true")'),
        ("{~: a}", "labels: the key None is a NoneType; expected a string"),
        ("{1: a, '1': b}", "labels.1: the key is there twice (once as 1)"),
    ],
)
def test_label_entries_kubectl_cannot_send_are_errors(labels: str, fragment: str) -> None:
    text = f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p, labels: {labels}}}\n"
    _, errors = load_manifests("f.yaml", text)
    assert [e.message for e in errors] == [f"document 1 is not a Kubernetes object: Pod metadata.{fragment}"]
