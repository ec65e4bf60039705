"""Properties at every boundary, on generated inputs run through the real code in-process.

- valid declarations: render twice gives identical output, the stack file validates against the
  shipped JSON Schema (`kaistack schema`), and `check --json` prints strict JSON;
- manifests: `kaistack lint` never raises, whatever the objects, and its JSON is strict;
- scenarios: loading raises nothing but ScenarioError.
The short profile runs in CI (max_examples below); `benchmarks/fuzz.py` is the long, process-isolated run.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kaistack.cli import main
from kaistack.guardrails.facts import StackFacts
from kaistack.ops.lint import lint_paths
from kaistack.ops.render import render_program
from placement.scenario import ScenarioError, parse_scenario

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "schema" / "stack.schema.json").read_text())
QUICK = settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))


def strict_json(text: str) -> Any:
    def refuse(token: str) -> None:
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


names = st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True)


@st.composite
def declarations(draw: st.DrawFn) -> dict[str, Any]:
    """A small valid stack: fake GPUs on kind, a queue tree, host workloads that fit."""
    gpus = draw(st.integers(1, 4))
    pools = [{"name": "gpu", "count": draw(st.integers(1, 3)), "gpus": gpus, "cpu": "16", "memory": "64Gi"}]
    leaves = draw(st.lists(names, min_size=1, max_size=3, unique=True))
    queues = [{"name": "root"}, *({"name": leaf, "parent": "root"} for leaf in leaves if leaf != "root")]
    leaf_names = [q["name"] for q in queues[1:]] or ["root"]
    if leaf_names == ["root"]:
        queues = [{"name": "root"}]
    workloads = []
    for i in range(draw(st.integers(0, 3))):
        request = draw(st.sampled_from([{"gpu": 1}, {"gpuFraction": 0.5}, {"gpuMemoryMiB": 1000}, {}]))
        workloads.append(
            {"name": f"w{i}", "kind": draw(st.sampled_from(["Pod", "Deployment", "Job"])), "image": "busybox:1.37.0",
             "queue": draw(st.sampled_from(leaf_names)), "cpu": "100m", "memory": "64Mi", **request}
        )  # fmt: skip
    return {
        "cluster": {"provider": "kind", "name": "prop", "nodePools": pools},
        "gpu": {"mode": "fake"},
        "kai": {"capacityCheck": "off"},
        "queues": queues,
        "workloads": workloads,
    }


@QUICK
@given(raw=declarations())
def test_a_valid_declaration_renders_the_same_twice(raw: dict[str, Any]) -> None:
    first = render_program(ROOT / "__main__.py", "prop", raw)
    second = render_program(ROOT / "__main__.py", "prop", raw)
    assert [r.to_json() for r in first.resources] == [r.to_json() for r in second.resources]


@QUICK
@given(raw=declarations())
def test_a_valid_declaration_validates_against_the_shipped_schema(raw: dict[str, Any]) -> None:
    document = {"config": {f"kaistack:{k}": v for k, v in raw.items()}}
    jsonschema.validate(document, SCHEMA)


@QUICK
@given(raw=declarations())
def test_check_json_is_strict_json(raw: dict[str, Any]) -> None:
    import io
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
        # JSON, not safe_dump: PyYAML writes a queue named `y` plain, which Pulumi's go-yaml reads as
        # true and kaistack rightly refuses; this property is about the report, not that refusal.
        (project / "Pulumi.prop.yaml").write_text(json.dumps({"config": {f"kaistack:{k}": v for k, v in raw.items()}}))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["check", "--stack", "prop", "--project", str(project), "--json"])
    assert code in (0, 1)
    assert strict_json(out.getvalue())["stack"] == "prop"


def _collections(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    # Named, not a lambda: describing a lambda makes hypothesis parse this file, which CPython 3.11.7 can fail deep in
    # a draw ("AST constructor recursion depth mismatch").
    return st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20),
    _collections,
    max_leaves=20,
)
kinds = {"apiVersion": st.sampled_from(["v1", "apps/v1", "batch/v1"]), "kind": st.sampled_from(["Pod", "Job"])}
pod_like = st.fixed_dictionaries(kinds, optional={"metadata": json_values, "spec": json_values})


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(objects=st.lists(pod_like | json_values, max_size=4))
def test_lint_never_raises_and_its_json_is_strict(objects: list[Any]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.yaml"
        path.write_text(yaml.safe_dump_all(objects) if objects else "")
        result = lint_paths([str(path)], StackFacts())
    strict_json(json.dumps(result.as_json(), allow_nan=False))


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    document=json_values
    | st.fixed_dictionaries(
        {}, optional={"nodes": json_values, "queues": json_values, "jobs": json_values, "rounds": json_values}
    )
)
def test_scenario_loading_raises_only_scenario_error(document: Any) -> None:
    with contextlib.suppress(ScenarioError):
        parse_scenario(document, "gen.yaml")


named_objects = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(["Node", "Pod", "Queue", "PodGroup", "List"]),
        "metadata": st.fixed_dictionaries({"name": st.sampled_from(["a", "b", "c"])}, optional={"labels": json_values}),
    },
    optional={"spec": json_values, "status": json_values, "items": json_values},
)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(objects=st.lists(named_objects | json_values, max_size=6))
def test_diagnose_never_raises_on_a_hostile_dump_and_its_json_is_strict(objects: list[Any]) -> None:
    from kaistack.ops import diagnose

    report = diagnose.diagnose(objects)
    strict_json(json.dumps(diagnose.to_json(report), allow_nan=False))
