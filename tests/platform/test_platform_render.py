"""`kaistack render` and `kaistack.ops.render.render_stack`: what is listed, how, and that secrets stay hidden."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from platform_testlib import (
    BUILTIN,
    MAIN,
    PROJECT_DIR,
    QUEUE,
    RELEASE,
    base_raw,
    validate_builtin,
    validate_queue,
    validate_vcluster_values,
)

from kaistack.declaration.parse import ConfigError
from kaistack.ops.mocks import MOCK_KUBECONFIG
from kaistack.ops.render import RenderError, render_program, render_stack

SECRET_MARKERS = ("client-key-data", "client-certificate-data", "mock credential", "bW9jayBjcmVkZW50aWFs")


def kaistack(*args: str, cwd: Path = PROJECT_DIR) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kaistack", *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture(scope="module")
def dev_json() -> list[dict]:
    """`kaistack render --stack dev --json` from the project directory."""
    result = kaistack("render", "--stack", "dev", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def project_with(tmp_path: Path, stack: str, document: dict) -> Path:
    shutil.copy(MAIN, tmp_path / "__main__.py")
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    (tmp_path / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump(document))
    return tmp_path


def stack_document(raw: dict) -> dict:
    return {"config": {f"kaistack:{k}": v for k, v in raw.items()}}


def by_type(items: list[dict], type_: str) -> list[dict]:
    return [i for i in items if i["type"] == type_]


def test_json_items_have_exactly_type_name_parent_inputs(dev_json):
    """The documented shape: [{"type", "name", "parent", "inputs"}]."""
    assert dev_json
    assert all(set(item) == {"type", "name", "parent", "inputs"} for item in dev_json)


def test_parent_is_the_parents_urn_or_null_under_the_stack(dev_json):
    """Only the Platform sits directly under the stack; every other parent is a listed component's URN."""
    assert [i["name"] for i in dev_json if i["parent"] is None] == ["kaistack"]
    components = {(i["type"], i["name"]) for i in dev_json if i["type"].startswith("kaistack:index:")}
    for item in dev_json:
        if item["parent"] is not None:
            *_, qualified_type, name = item["parent"].split("::")
            assert (qualified_type.split("$")[-1], name) in components, item["parent"]


def test_dev_render_lists_the_kind_cluster_command(dev_json):
    """The kind command, with the kind config on stdin."""
    (command,) = [c for c in by_type(dev_json, "command:local:Command") if c["name"] != "kaistack-kai-ready"]
    assert command["name"] == "kaistack-cluster-create"
    assert "kind create cluster --name kaistack-dev" in command["inputs"]["create"]
    assert yaml.safe_load(command["inputs"]["stdin"])["kind"] == "Cluster"


def test_dev_render_lists_the_fake_gpu_operator_and_kai_with_gpu_sharing(dev_json):
    """Both releases with their pinned charts; KAI has gpuSharing true."""
    releases = {r["inputs"]["chart"]: r["inputs"] for r in by_type(dev_json, RELEASE)}
    assert releases["oci://ghcr.io/run-ai/fake-gpu-operator/fake-gpu-operator"]["version"] == "0.2.0"
    kai = releases["oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler"]
    assert kai["values"]["global"]["gpuSharing"] is True


def test_dev_render_lists_the_queue_tree_valid_for_the_crd(dev_json):
    """default -> test, default -> team-a, each valid against the Queue CRD."""
    queues = {q["inputs"]["metadata"]["name"]: q["inputs"] for q in by_type(dev_json, QUEUE)}
    assert {name: q["spec"].get("parentQueue") for name, q in queues.items()} == {
        "default": None,
        "test": "default",
        "team-a": "default",
    }
    for queue in queues.values():
        validate_queue({k: queue[k] for k in ("apiVersion", "kind", "metadata", "spec")})


def test_dev_render_lists_a_schema_valid_vcluster_with_set_owner_false(dev_json):
    """The tenant's vCluster release; its values validate against the chart schema."""
    (vcluster,) = [r for r in by_type(dev_json, RELEASE) if r["inputs"]["chart"] == "vcluster"]
    assert vcluster["inputs"]["values"]["experimental"]["syncSettings"]["setOwner"] is False
    validate_vcluster_values(vcluster["inputs"]["values"])


def test_dev_render_lists_the_sample_workloads_schema_valid(dev_json):
    """The 3 tenant pods and 2 vLLM deployments, valid Kubernetes 1.33 and 1.35 objects."""
    workloads = [i for i in dev_json if i["type"] in BUILTIN and i["inputs"]["kind"] in ("Pod", "Deployment")]
    assert sorted(w["inputs"]["metadata"]["name"] for w in workloads) == [
        "cpu-only-pod",
        "gpu-pod",
        "gpu-sharing",
        "vllm-test-02",
        "vllm-test-07",
    ]
    for item in (i for i in dev_json if i["type"] in BUILTIN):
        validate_builtin(
            {k: item["inputs"][k] for k in ("apiVersion", "kind", "metadata", "spec") if k in item["inputs"]}
        )


def test_dev_render_never_prints_a_kubeconfig(dev_json):
    """Provider kubeconfigs are "[secret]"; no credential text appears anywhere."""
    text = json.dumps(dev_json)
    assert not [m for m in SECRET_MARKERS if m in text]
    assert MOCK_KUBECONFIG not in text
    providers = by_type(dev_json, "pulumi:providers:kubernetes")
    assert [p["inputs"]["kubeconfig"] for p in providers] == ["[secret]", "[secret]"]


def test_plaintext_kubeconfig_in_config_is_refused_without_echoing_it(tmp_path):
    """An existing cluster's kubeconfig set without --secret is refused (config_secrets) and never printed."""
    raw = base_raw()
    token = "plaintext-token-4f1c"
    kubeconfig = f"apiVersion: v1\nkind: Config\nusers: [{{name: a, user: {{token: {token}}}}}]\n"
    raw["cluster"] = {
        "provider": "existing",
        "existing": {"kubeconfig": kubeconfig},
        "nodePools": [{"name": "g", "gpus": 1}],
    }
    project = project_with(tmp_path, "lab", stack_document(raw))
    result = kaistack("render", "--stack", "lab", "--json", "--project", str(project))
    assert result.returncode == 2, result.stderr
    assert "cluster.existing.kubeconfig: written in plain text" in result.stdout + result.stderr
    assert token not in result.stdout
    assert token not in result.stderr


def test_secure_config_values_are_masked_in_the_render(tmp_path):
    """A `secure:` ciphertext from `pulumi config set --secret` is replaced, never printed."""
    raw = base_raw()
    raw["cluster"] = {
        "provider": "existing",
        "existing": {"kubeconfig": {"secure": "v1:c2VjcmV0LWNpcGhlcnRleHQ="}},
        "nodePools": [{"name": "g", "gpus": 1}],
    }
    project = project_with(tmp_path, "lab", stack_document(raw))
    result = kaistack("render", "--stack", "lab", "--json", "--project", str(project))
    assert result.returncode == 0, result.stderr
    assert "c2VjcmV0LWNpcGhlcnRleHQ=" not in result.stdout
    (provider,) = [i for i in json.loads(result.stdout) if i["type"] == "pulumi:providers:kubernetes"]
    assert provider["inputs"]["kubeconfig"] == "[secret]"


def test_tree_output_names_every_resource(dev_json):
    """Without --json: a tree with every resource name and the total."""
    result = kaistack("render", "--stack", "dev")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("kaistack-dev (pulumi:pulumi:Stack)")
    for item in dev_json:
        assert f"{item['name']}  [{item['type']}]" in result.stdout
    assert result.stdout.rstrip().endswith(f"{len(dev_json)} resources")


def test_bad_config_exits_2_with_the_problem_and_no_traceback(tmp_path):
    """The ConfigError text on stderr, exit code 2; under --json the same text as a document on stdout."""
    raw = base_raw()
    raw["gpu"]["mode"] = "fakes"
    project = project_with(tmp_path, "bad", stack_document(raw))
    result = kaistack("render", "--stack", "bad", "--json", "--project", str(project))
    assert result.returncode == 2
    assert "kaistack:gpu.mode: Input should be 'fake', 'device-plugin', 'gpu-operator' or 'none', got 'fakes'" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr
    assert json.loads(result.stdout) == {"ok": False, "exitCode": 2, "error": result.stderr.strip()}


def test_unknown_stack_exits_2_listing_the_stacks():
    """A stack without a Pulumi.<stack>.yaml is a config error."""
    result = kaistack("render", "--stack", "nope")
    assert result.returncode == 2
    assert "no Pulumi.nope.yaml" in result.stderr
    assert "dev" in result.stderr


def test_help_shows_an_example_and_the_json_shape():
    """`kaistack render --help` documents usage, the JSON shape and exit codes."""
    result = kaistack("render", "--help")
    assert result.returncode == 0
    assert "kaistack render --stack dev --json" in result.stdout
    assert '{"type", "name", "parent", "inputs"}' in result.stdout
    assert "exit codes" in result.stdout


def test_program_run_error_surfaces_as_render_error():
    """render_program on invalid raw config: RenderError carrying the ConfigError text."""
    raw = base_raw()
    raw["queues"] = [{"name": "team", "parent": "nope"}]
    with pytest.raises(RenderError, match=r"kaistack:queues\[0\]\.parent: 'nope' is not a declared queue"):
        render_program(MAIN, "unit", raw)


def test_render_stack_raises_config_error_for_a_bad_stack_file(tmp_path):
    """The API validates first, so callers get the problem list."""
    raw = base_raw()
    raw["kai"] = {"version": "v0.20.1"}
    project = project_with(tmp_path, "bad", stack_document(raw))
    with pytest.raises(ConfigError, match=r"kaistack:kai\.version: v0\.20\.1 is retracted upstream"):
        render_stack(project, "bad")


def test_render_stack_can_run_repeatedly_in_one_process():
    """Each render gets its own loop and mocks: same resources twice, in a stable order."""
    first = render_stack(PROJECT_DIR, "dev")
    second = render_stack(PROJECT_DIR, "dev")
    assert [r.urn for r in first.resources] == [r.urn for r in second.resources]
    assert first.to_json() == second.to_json()
    assert first.outputs["kubeconfig"] == "[secret]"
