"""`kaistack lint` (kaistack.ops.lint) and the pack's configuration (kaistack.guardrails.settings): behaviour a
mutation run of the two modules found unasserted.

The engine hands a policy its configuration after filling in each knob's schema `default` and validating the result
against `{"type": "object", "properties": <the policy's schema>}` (pulumi/pulumi@v3.259.0
pkg/resource/analyzer/config.go:263-290, 307-334), so a policy's schema is what keeps a wrong value from reaching
`settings()`, and its defaults are applied before the code's own.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from policy_builders import FACTS, container, deployment, engine, pod, queue, release, res

from kaistack.guardrails.facts import StackFacts, facts_from_stack
from kaistack.guardrails.podspec import Res
from kaistack.guardrails.rules import RESOURCE_RULES
from kaistack.guardrails.settings import POLICY_KNOBS, PROPERTIES, Settings, config_schema, settings
from kaistack.guardrails.stack_model import CheckerUnavailable
from kaistack.guardrails.stack_rules import STACK_RULES, stack_facts
from kaistack.ops.lint import lint_objects, lint_paths, load_manifests
from kaistack.ops.render import render_stack
from kaistack.stack.load import load_stack

ROOT = Path(__file__).resolve().parents[2]


def _sample(schema: dict[str, Any]) -> Any:
    """A value of the knob's schema type that no default equals."""
    kind = schema["type"]
    if kind == "array":
        return [{"name": "sample"}] if schema["items"]["type"] == "object" else ["sample"]
    return {"string": "sample", "boolean": not schema.get("default"), "integer": 4096.0, "number": 0.25}[kind]


def _settings_changed_by(knob: str) -> list[str]:
    configured, defaults = settings({knob: _sample(PROPERTIES[knob])}), Settings()
    return [f.name for f in dataclasses.fields(Settings) if getattr(configured, f.name) != getattr(defaults, f.name)]


def _engine_schema(policy: str) -> dict[str, Any]:
    return {"type": "object", "properties": config_schema(policy)}


# --- settings() ----------------------------------------------------------------------------------


@pytest.mark.parametrize("knob", sorted(PROPERTIES))
def test_every_knob_of_the_schema_sets_one_setting(knob: str) -> None:
    assert len(_settings_changed_by(knob)) == 1


@pytest.mark.parametrize("policy", sorted(POLICY_KNOBS))
def test_the_engines_schema_defaults_are_the_codes_defaults(policy: str) -> None:
    """The engine fills in every schema default (pulumi/pulumi@v3.259.0 pkg/resource/analyzer/config.go:276-290);
    the pack's behaviour must not depend on whether it did."""
    filled = {knob: schema["default"] for knob, schema in config_schema(policy).items() if "default" in schema}
    assert settings(filled) == settings({})


@pytest.mark.parametrize("knob", sorted(PROPERTIES))
def test_a_knob_with_a_default_in_code_advertises_it_in_its_schema(knob: str) -> None:
    [setting] = _settings_changed_by(knob)
    assert ("default" in PROPERTIES[knob]) == (getattr(Settings(), setting) is not None)


def test_a_boolean_where_a_number_belongs_is_refused() -> None:
    """JSON true is no number; Python's bool is an int, so without the check it would read as 1 MiB."""
    with pytest.raises(ValueError, match="policy config nodeGpuMemoryMiB: expected a number, got True"):
        settings({"nodeGpuMemoryMiB": True})


def test_a_time_limit_under_a_second_is_kept() -> None:
    assert settings({"maxSeconds": 0.5}).capacity_max_seconds == 0.5


def test_a_configured_tenant_namespace_is_kept() -> None:
    [tenant] = settings({"tenants": [{"name": "alpha", "namespace": "ml-alpha", "queues": ["q"]}]}).tenants or ()
    assert tenant.namespace == "ml-alpha"


# --- the schemas the engine validates against ----------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "config"),
    [
        ("kai-scheduler-name", {"exemptNamespaces": [1]}),
        ("kai-scheduler-name", {"requireInTenantNamespaces": "false"}),  # bool("false") is True
        ("kai-queue-label", {"queueLabelKey": 5}),
        ("kai-queue-label", {"queues": [{"name": "q"}]}),
        ("tenant-queue-binding", {"tenants": "alpha"}),
        ("tenant-queue-binding", {"tenants": ["alpha"]}),
        ("tenant-queue-binding", {"tenants": [{"queues": ["q"]}]}),  # read as a tenant named "None"
        ("tenant-queue-binding", {"tenants": [{"name": 1}]}),
        ("tenant-queue-binding", {"tenants": [{"name": "a", "namespace": 1}]}),
        ("tenant-queue-binding", {"tenants": [{"name": "a", "queues": "q"}]}),
        ("tenant-queue-binding", {"tenants": [{"name": "a", "queues": [1]}]}),
        ("gpu-memory-utilization-within-fraction", {"nodeGpuMemoryMiB": 0}),  # read as unset
        ("gpu-memory-utilization-within-fraction", {"nodeGpuMemoryMiB": 40960.5}),  # read as 40960
        ("gpu-memory-utilization-within-fraction", {"utilizationEnvVars": [True]}),
        ("kai-capacity", {"maxSeconds": 0}),
    ],
)
def test_the_engine_refuses_a_value_the_code_would_misread(policy: str, config: dict[str, Any]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(config, _engine_schema(policy))


@pytest.mark.parametrize(
    ("policy", "config"),
    [
        ("gpu-memory-utilization-within-fraction", {"nodeGpuMemoryMiB": 1}),
        ("tenant-queue-binding", {"tenants": [{"name": "alpha"}]}),
        ("tenant-queue-binding", {"tenants": [{"name": "alpha", "namespace": "ml-alpha", "queues": ["q"]}]}),
    ],
)
def test_the_engine_accepts_the_least_a_knob_may_be(policy: str, config: dict[str, Any]) -> None:
    jsonschema.validate(config, _engine_schema(policy))


# --- which knobs each policy reads ---------------------------------------------------------------


class _Recording(Settings):
    """Settings that note each field a rule reads."""

    def __getattribute__(self, name: str) -> Any:
        if name in {f.name for f in dataclasses.fields(Settings)}:
            object.__getattribute__(self, "reads").add(name)
        return object.__getattribute__(self, name)


def _recording() -> _Recording:
    s = _Recording(tenant_namespaces=frozenset({"vcluster-alpha"}), require_in_tenant_namespaces=True)
    object.__setattr__(s, "reads", set())
    return s


@pytest.fixture(scope="module")
def stack() -> tuple[list[Res], StackFacts]:
    """The dev stack as the engine hands it to the pack."""
    resources = [
        Res(r.type, r.name, engine(r.inputs), r.urn, r.parent, r.provider) for r in render_stack(ROOT, "dev").resources
    ]
    return resources, stack_facts(resources, facts_from_stack(load_stack(ROOT, "dev").config))


def _more() -> Iterator[Res]:
    """Workloads the dev stack lacks: a tenant's, one off KAI, a vLLM server with a GPU share, a Flux vCluster."""
    vllm = container(command=["vllm", "serve", "m"])
    yield res("Pod", pod(name="t", namespace="vcluster-alpha"))
    yield res("Pod", pod(name="f", namespace="vcluster-alpha", annotations={"gpu-fraction": "0.5"}, containers=[vllm]))
    yield res("Pod", pod(name="o", scheduler=None, queue=None))
    yield res("Pod", pod(name="c", namespace="vcluster-alpha", scheduler=None, queue=None, containers=[container()]))
    yield res("Deployment", deployment(annotations={"gpu-memory": "2000"}, containers=[vllm]))
    yield res("Queue", queue("outside-child", parent="outside"))
    yield res("Release", release("v", "vcluster", {}))


def _knobs_read(policy: str, stack: tuple[list[Res], StackFacts]) -> set[str]:
    s = _recording()
    for resources, facts in (stack, (list(_more()), FACTS)):
        if policy in RESOURCE_RULES:
            for r in resources:
                RESOURCE_RULES[policy](r, s, facts)
        else:
            with contextlib.suppress(CheckerUnavailable):  # kai-capacity: _more() declares no node pools
                STACK_RULES[policy](resources, s, facts)
    knob_of = {_settings_changed_by(knob)[0]: knob for knob in PROPERTIES}
    return {knob_of[name] for name in s.reads}


@pytest.mark.parametrize("policy", sorted(POLICY_KNOBS))
def test_a_policy_advertises_every_knob_its_rule_reads(policy: str, stack: tuple[list[Res], StackFacts]) -> None:
    """The engine refuses a knob the schema does not list (additionalProperties: false), so a knob a rule reads but
    does not advertise cannot be set for it: kai-scheduler-name read queueLabelKey (a pod labelled for a KAI queue
    must use KAI) and kai-capacity read schedulerName (it simulates only the pods KAI schedules), unlisted."""
    assert _knobs_read(policy, stack) <= set(config_schema(policy))


# --- kaistack lint: what is an object ------------------------------------------------------------

GPU_POD = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
    "spec: {containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]}\n"
)


def _messages(text: str) -> list[str]:
    objects, errors = load_manifests("f.yaml", text)
    assert objects == []
    return [e.message for e in errors]


@pytest.mark.parametrize(
    ("header", "missing"),
    [
        ("apiVersion: v1\n", "kind"),
        ("kind: Pod\napiVersion: ''\n", "apiVersion"),
        ("kind: Pod\napiVersion: 1\n", "apiVersion"),
        ("kind: 1\napiVersion: v1\n", "kind"),
    ],
    ids=["no kind", "empty apiVersion", "numeric apiVersion", "numeric kind"],
)
def test_a_document_without_a_string_apiversion_and_kind_is_an_error(header: str, missing: str) -> None:
    assert _messages(f"{header}metadata: {{name: p}}\n") == [
        f"document 1 is not a Kubernetes object: missing {missing}"
    ]


def test_a_metadata_block_without_name_or_generatename_is_an_error() -> None:
    assert _messages("apiVersion: v1\nkind: Pod\nmetadata: {namespace: team}\n") == [
        "document 1 is not a Kubernetes object: Pod has no metadata.name (is the metadata block indented under "
        "'metadata:'?)"
    ]


def test_a_generatename_that_is_no_string_is_an_error() -> None:
    assert _messages("apiVersion: v1\nkind: Pod\nmetadata: {generateName: [a]}\n") == [
        "document 1 is not a Kubernetes object: Pod metadata.generateName is a list; expected a string"
    ]


def test_an_object_named_only_by_generatename_is_checked_under_that_name() -> None:
    """`kubectl create` names it from metadata.generateName (apimachinery meta/v1 ObjectMeta.GenerateName)."""
    objects, errors = load_manifests("f.yaml", GPU_POD.replace("{name: p}", "{generateName: train-}"))
    assert errors == []
    found = lint_objects(objects, StackFacts()).violations
    assert found
    assert {v.name for v in found} == {"train-"}


def test_lint_leaves_kai_capacity_to_kaistack_check() -> None:
    """It needs the stack's node pools and its whole load (`kaistack lint --help`), not a handful of manifests: with
    the dev stack's facts (`--stack dev`) it is neither run nor noted as not checked."""
    objects, _ = load_manifests(
        "f.yaml", GPU_POD.replace("{name: p}", "{name: p, labels: {kai.scheduler/queue: test}}")
    )
    result = lint_objects(objects, facts_from_stack(load_stack(ROOT, "dev").config))
    assert "kai-capacity" not in {v.policy for v in result.violations}
    assert not [note for note in result.notes if "kai-capacity" in note]


# --- kaistack lint: lists ------------------------------------------------------------------------


def test_a_list_with_items_null_is_a_clean_namespace() -> None:
    """apimachinery@v0.36.3 pkg/apis/meta/v1/unstructured/helpers.go:433-446: `items: null` is a (empty) list."""
    assert load_manifests("f.yaml", "apiVersion: v1\nkind: PodList\nitems: null\n") == ([], [])


def test_a_list_kind_without_items_is_checked_as_an_object() -> None:
    """Without an items field kubectl decodes it as one object (helpers.go:441-451), not as a list."""
    assert _messages("apiVersion: v1\nkind: PodList\nspec: {}\n") == [
        "document 1 is not a Kubernetes object: PodList has no metadata.name (is the metadata block indented under "
        "'metadata:'?)"
    ]


def test_a_list_item_whose_pod_template_has_the_wrong_shape_is_an_error() -> None:
    text = (
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: w}\n"
        "  spec: {template: [1]}\n"
    )
    assert _messages(text) == ["document 1 items[0]: Deployment spec.template is a list; expected a mapping"]


@pytest.mark.parametrize(
    "text",
    [
        "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\n# pods\n\napiVersion: v1\nkind: List\nitems:\n- 42\n",
        "apiVersion: v1\nkind: List\nextra: [a, b]\nitems:\n- 42\n",
    ],
    ids=["a later document after comments", "after another top-level list"],
)
def test_a_bad_list_item_is_reported_at_its_own_line(text: str) -> None:
    lines = text.splitlines()
    _, errors = load_manifests("f.yaml", text)
    assert [e.line for e in errors] == [lines.index("- 42") + 1]


def test_a_document_with_an_items_list_is_checked_item_by_item_whatever_its_kind() -> None:
    """kubectl apply reads a document with an items field as a list (apimachinery@v0.36.3
    pkg/apis/meta/v1/unstructured/helpers.go:433-446, kubernetes/kubectl@v0.36.3 pkg/cmd/apply/apply.go:470-476
    Unstructured().Flatten()) and applies the items, whatever the document's kind."""
    items = "\n".join("  " + line for line in GPU_POD.splitlines())
    text = f"apiVersion: v1\nkind: Bundle\nmetadata: {{name: b}}\nitems:\n-{items[1:]}\n"
    objects, errors = load_manifests("f.yaml", text)
    assert errors == []
    assert [o.kind for o in objects] == ["Pod"]


# --- kaistack lint: objects read back from a cluster ---------------------------------------------

NODE_POD = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team, labels: {kai.scheduler/queue: q}}\n"
    "spec: {schedulerName: kai-scheduler, nodeName: n1, containers: [{name: c, image: x}]}\n"
)


def _bypass_findings(metadata: str, status: str | None) -> list[str]:
    """kai-no-bypass's messages on NODE_POD with `metadata` fields added (`uid: u1, ...`) and a status block."""
    text = NODE_POD.replace("namespace: team,", f"namespace: team, {metadata},")
    if status is not None:
        text += f"status: {status}\n"
    objects, errors = load_manifests("f.yaml", text)
    assert errors == []
    return [v.message for v in lint_objects(objects, StackFacts()).violations if v.policy == "kai-no-bypass"]


@pytest.mark.parametrize(
    ("metadata", "status"),
    [
        ("{resourceVersion: '7'}", "{phase: Running}"),
        ("{uid: u1}", "{phase: Running}"),
        ("{uid: u1, resourceVersion: '7'}", "{conditions: []}"),
        ("{uid: u1, resourceVersion: '7'}", None),
    ],
    ids=["no uid", "no resourceVersion", "no phase", "no status"],
)
def test_an_object_short_of_uid_resourceversion_or_phase_is_a_manifest_to_apply(
    metadata: str, status: str | None
) -> None:
    """Only what the API server returns has all three; a manifest's nodeName is the author's and is flagged."""
    [found] = _bypass_findings(metadata[1:-1], status)
    assert "spec.nodeName is 'n1'" in found


def test_the_same_pod_with_uid_resourceversion_and_phase_is_a_live_object() -> None:
    assert _bypass_findings("uid: u1, resourceVersion: '7'", "{phase: Running}") == []


@pytest.mark.parametrize("version", ["'0'", "'000'", "'abc'", "'-7'", "'18446744073709551616'", "7", "''"])
def test_a_resourceversion_the_api_server_would_take_on_create_does_not_make_a_pod_live(version: str) -> None:
    """The etcd3 store refuses on create only a resourceVersion that parses (ParseUint, base 10) to a number other
    than 0, and clears any other (kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go,
    `Create`); uid and status it overwrites. So a manifest dressed as a live pod with one of these would be created,
    its preset nodeName running it past KAI."""
    [found] = _bypass_findings(f"uid: u1, resourceVersion: {version}", "{phase: Running}")
    assert "spec.nodeName is 'n1'" in found


def test_the_largest_resourceversion_etcd_can_hold_is_a_live_pods() -> None:
    assert _bypass_findings("uid: u1, resourceVersion: '18446744073709551615'", "{phase: Running}") == []


# --- kaistack lint: paths ------------------------------------------------------------------------


def test_a_directory_named_like_a_manifest_is_searched_not_read(tmp_path: Path) -> None:
    (tmp_path / "more.yaml").mkdir()
    (tmp_path / "more.yaml" / "pod.yaml").write_text(GPU_POD)
    (tmp_path / "pod.yaml").write_text(GPU_POD.replace("name: p", "name: q"))
    result = lint_paths([str(tmp_path)], StackFacts())
    assert (result.files, result.objects, result.errors) == (2, 2, [])


def test_a_dash_is_stdin_even_beside_a_directory_named_dash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "-").mkdir()
    (tmp_path / "-" / "other.yaml").write_text(GPU_POD.replace("name: p", "name: other"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(GPU_POD.encode())))
    result = lint_paths(["-"], StackFacts())
    assert [(v.file, v.name) for v in result.violations] == [("-", "p")]


def test_empty_files_beside_an_input_that_is_already_an_error_are_not_reported(tmp_path: Path) -> None:
    (tmp_path / "empty-dir").mkdir()
    (tmp_path / "empty.yaml").write_text("# nothing yet\n")
    result = lint_paths([str(tmp_path / "empty-dir"), str(tmp_path / "empty.yaml")], StackFacts())
    assert [e.file for e in result.errors] == [str(tmp_path / "empty-dir")]
