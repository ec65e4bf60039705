"""The staging and prod stacks rendered whole (`kaistack render`), EC2 answered by moto.

Reuses the platform tests' schema helpers (tests/platform/platform_testlib.py): strict Kubernetes
1.33 validation, KAI's Queue CRD, vCluster's values schema, the pinned charts' value keys.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pulumi
import pytest
import yaml
from eks_testlib import AWS_ENV, MOTO, PROJECT_DIR, stack

from components.kai import KaiScheduler
from kaistack import cli
from kaistack.declaration import versions
from kaistack.declaration.parse import ConfigError
from kaistack.ops.mocks import MockSession
from kaistack.ops.render import Rendered, render_stack
from kaistack.stack.eks import resolve_node_pools
from kaistack.stack.files import read_stack_config

STACKS = ("staging", "prod")
NOT_BUILTIN = (
    "kubernetes:helm.sh/v3:Release",
    "kubernetes:scheduling.run.ai/v2:Queue",
    "kubernetes:kubeflow.org/v1:PyTorchJob",
)


def _platform_testlib() -> ModuleType:
    """tests/platform has no __init__.py (a package named `platform` would shadow the stdlib)."""
    if "platform_testlib" not in sys.modules:
        path = PROJECT_DIR / "tests" / "platform" / "platform_testlib.py"
        spec = importlib.util.spec_from_file_location("platform_testlib", path)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["platform_testlib"] = module
        spec.loader.exec_module(module)
    return sys.modules["platform_testlib"]


lib = _platform_testlib()
CHART_VALUES = {
    "gpu-operator": (
        f"gpu-operator-values-{versions.GPU_OPERATOR_VERSION}.yaml",
        frozenset({"devicePlugin.config.data"}),
    ),
    "nvidia-device-plugin": (f"nvidia-device-plugin-values-{versions.DEVICE_PLUGIN_VERSION}.yaml", frozenset()),
    "kai-scheduler": (f"kai-scheduler-values-{versions.KAI_VERSION}.yaml", frozenset()),
}


@pytest.fixture(scope="module")
def rendered() -> Iterator[dict[str, Rendered]]:
    """Both stacks, rendered once for the module with discovery online against moto."""
    saved = {k: os.environ.get(k) for k in (*AWS_ENV, "AWS_EC2_METADATA_DISABLED")}
    for key in AWS_ENV:
        os.environ.pop(key, None)
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_EC2_METADATA_DISABLED="true")
    MOTO.start(reset=False)
    try:
        yield {name: render_stack(PROJECT_DIR, name) for name in STACKS}
    finally:
        MOTO.stop(remove_data=False)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _kubernetes_objects(result: Rendered) -> list[dict[str, Any]]:
    """Every Kubernetes object the program creates (reads such as Secret.get are not created)."""
    objects = []
    for r in result.resources:
        if r.type.startswith("kubernetes:") and r.type not in NOT_BUILTIN and r.resource_id is None:
            objects.append(lib.inputs(r))
    return objects


@pytest.mark.parametrize("name", STACKS)
def test_every_kubernetes_object_is_valid_for_kubernetes_1_33_in_strict_mode(rendered: Any, name: str) -> None:
    objects = _kubernetes_objects(rendered[name])
    kinds = {o["kind"] for o in objects}
    assert {"Namespace", "Deployment", "Job", "StorageClass"} <= kinds, kinds
    for obj in objects:
        lib.validate_builtin(obj)


@pytest.mark.parametrize("name", STACKS)
def test_every_queue_is_valid_for_kais_queue_crd(rendered: Any, name: str) -> None:
    queues = [lib.kube_object(r) for r in rendered[name].of_type("kubernetes:scheduling.run.ai/v2:Queue")]
    # KAI's own default queues come from the chart (defaultQueue.*), not as Queue resources.
    assert len(queues) == len(stack(name).queues)
    for queue in queues:
        lib.validate_queue(queue)


@pytest.mark.parametrize("name", STACKS)
def test_vcluster_releases_validate_against_the_chart_schema(rendered: Any, name: str) -> None:
    releases = [lib.inputs(r) for r in rendered[name].of_type(lib.RELEASE) if r.inputs["chart"] == "vcluster"]
    assert len(releases) == 2
    for release in releases:
        lib.validate_vcluster_values(release["values"])


@pytest.mark.parametrize("name", STACKS)
def test_chart_values_are_keys_of_the_pinned_charts(rendered: Any, name: str) -> None:
    checked = set()
    for release in (lib.inputs(r) for r in rendered[name].of_type(lib.RELEASE)):
        chart = next((c for c in CHART_VALUES if release["chart"].endswith(c)), None)
        if chart is None:
            continue
        filename, maps = CHART_VALUES[chart]
        assert lib.unknown_value_keys(release["values"], lib.chart_values(filename), maps) == [], chart
        checked.add(chart)
    assert checked == {"gpu-operator", "kai-scheduler"}


@pytest.mark.parametrize("name", STACKS)
def test_gpu_operator_leaves_driver_and_toolkit_to_the_nvidia_ami(rendered: Any, name: str) -> None:
    (operator,) = [lib.inputs(r) for r in rendered[name].of_type(lib.RELEASE) if r.inputs["chart"] == "gpu-operator"]
    assert operator["values"]["driver"] == {"enabled": False}
    assert operator["values"]["toolkit"] == {"enabled": False}


def test_gpu_operator_driver_stays_off_on_eks_even_when_left_at_its_default() -> None:
    """The stack files say driver/toolkit false; a stack that does not must not get the operator's driver."""
    from components.gpu import gpu_operator_values

    config = stack("prod")
    default_gpu = config.gpu.replace(gpu_operator=config.gpu.gpu_operator.replace(driver=True, toolkit=True))
    values = gpu_operator_values(config.replace(gpu=default_gpu))
    assert (values["driver"], values["toolkit"]) == ({"enabled": False}, {"enabled": False})


@pytest.mark.parametrize("name", STACKS)
def test_kai_tolerates_the_gpu_taint(rendered: Any, name: str) -> None:
    (kai,) = [lib.inputs(r) for r in rendered[name].of_type(lib.RELEASE) if "kai-scheduler" in r.inputs["chart"]]
    assert {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"} in kai["values"][
        "global"
    ]["tolerations"]


@pytest.mark.parametrize("name", STACKS)
def test_platform_summary_carries_the_discovered_pool_facts(rendered: Any, name: str) -> None:
    """What the policy pack's stack policies read: AWS's GPU facts, the GPU labels and taint."""
    (platform,) = rendered[name].of_type("kaistack:index:Platform")
    (pool,) = lib.inputs(platform)["nodePools"]
    declared = stack(name).cluster.node_pools[0]
    assert (pool["gpus"], pool["gpuMemoryMiB"], pool["gpuProduct"]) == (
        declared.gpus,
        declared.gpu_memory_mi_b,
        declared.gpu_product,
    )
    assert pool["labels"]["nvidia.com/gpu.memory"] == str(declared.gpu_memory_mi_b)
    assert pool["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]


@pytest.mark.parametrize("name", STACKS)
def test_every_kubernetes_resource_uses_the_eks_provider(rendered: Any, name: str) -> None:
    """Nothing reaches an ambient kubeconfig: host objects go through the EksCluster's provider."""
    result = rendered[name]
    (host,) = [r for r in result.of_type("pulumi:providers:kubernetes") if "EksCluster" in (r.parent or "")]
    tenant_providers = {r.urn for r in result.of_type("pulumi:providers:kubernetes")}
    for r in result.resources:
        if r.type.startswith("kubernetes:") and r.custom:
            assert r.provider is not None, r.urn
            assert r.provider.rsplit("::", 1)[0] in tenant_providers | {host.urn}, r.urn


@pytest.mark.parametrize("name", STACKS)
def test_no_secret_in_the_json(rendered: Any, name: str) -> None:
    text = json.dumps(rendered[name].to_json())
    assert "client-key-data" not in text
    assert "mock credential" not in text


# --- the KAI release's protection -------------------------------------------------------------------


@pytest.mark.parametrize(("name", "protected"), [("prod", True), ("staging", False)])
@pulumi.runtime.test
def test_kai_release_is_protected_with_the_cluster(
    mocks: MockSession, no_aws: None, name: str, protected: bool
) -> None:
    kai = KaiScheduler("kai", resolve_node_pools(stack(name)))

    def check(_: Any) -> None:
        assert mocks.named("kubernetes:helm.sh/v3:Release", "kai-release").protect is protected

    return kai.release.urn.apply(check)


@pytest.mark.parametrize(("name", "protected"), [("prod", True), ("staging", False)])
def test_tenant_namespaces_and_vclusters_are_protected_with_the_cluster(
    rendered: dict[str, Rendered], name: str, protected: bool
) -> None:
    """A tenant's vCluster keeps its datastore in a volume claim in its namespace (loft-sh/vcluster@v0.36.1
    chart/values.yaml persistence.volumeClaim); removing the tenant from the stack file would delete it."""
    tenants = [t["name"] for t in read_stack_config(PROJECT_DIR, name)["tenants"]]
    assert tenants
    for tenant in tenants:
        for suffix in ("namespace", "vcluster"):
            resource = rendered[name].named(f"kaistack-{tenant}-{suffix}")
            assert resource.protect is protected, resource.name


# --- the CLI ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", STACKS)
def test_render_json_works_offline(no_aws: None, capsys: pytest.CaptureFixture[str], name: str) -> None:
    """No credentials: the declared facts are used, and the JSON lists the EKS node groups."""
    assert cli.main(["render", "--stack", name, "--json", "--project", str(PROJECT_DIR)]) == 0
    resources = json.loads(capsys.readouterr().out)
    groups = [r for r in resources if r["type"] == "eks:index:ManagedNodeGroup"]
    assert len(groups) == 2
    gpu = next(g for g in groups if g["inputs"]["amiType"] == "AL2023_x86_64_NVIDIA")
    assert gpu["inputs"]["labels"]["nvidia.com/gpu.memory"] == str(stack(name).cluster.node_pools[0].gpu_memory_mi_b)


def _project_with(tmp_path: Path, name: str, edit: Any) -> Path:
    document = yaml.safe_load((PROJECT_DIR / f"Pulumi.{name}.yaml").read_text())
    edit(document["config"])
    (tmp_path / "Pulumi.yaml").write_text((PROJECT_DIR / "Pulumi.yaml").read_text())
    (tmp_path / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(document))
    return tmp_path


def test_render_of_a_contradicting_stack_exits_2_naming_both_values(
    ec2: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def four_l4s(config: dict[str, Any]) -> None:
        config["kaistack:cluster"]["nodePools"][0]["gpus"] = 4

    project = _project_with(tmp_path, "staging", four_l4s)
    assert cli.main(["render", "--stack", "staging", "--project", str(project)]) == 2
    assert "kaistack:cluster.nodePools[0].gpus: declared 4 but AWS says g6.xlarge has 1 GPU" in capsys.readouterr().err


def test_render_without_credentials_names_the_undeclared_key(no_aws: None, tmp_path: Path) -> None:
    def forget_memory(config: dict[str, Any]) -> None:
        del config["kaistack:cluster"]["nodePools"][0]["gpuMemoryMiB"]

    project = _project_with(tmp_path, "prod", forget_memory)
    with pytest.raises(ConfigError, match=r"kaistack:cluster\.nodePools\[0\]\.gpuMemoryMiB: not declared"):
        render_stack(project, "prod")


@pytest.mark.parametrize("name", STACKS)
def test_check_exits_0(no_aws: None, capsys: pytest.CaptureFixture[str], name: str) -> None:
    """The declared workloads fit the declared (= AWS's) capacity."""
    assert cli.main(["check", "--stack", name, "--project", str(PROJECT_DIR)]) == 0, capsys.readouterr().out


def test_the_device_plugin_waits_for_the_nvidia_runtime_class(no_aws: None, tmp_path: Path) -> None:
    """Its pods name runtimeClassName nvidia (the DevicePluginSettings default), which the API server refuses
    until the RuntimeClass exists."""

    def device_plugin(config: dict[str, Any]) -> None:
        config["kaistack:gpu"] = {"mode": "device-plugin"}

    project = _project_with(tmp_path, "staging", device_plugin)
    (project / "__main__.py").symlink_to(PROJECT_DIR / "__main__.py")
    result = render_stack(project, "staging")
    [runtime] = result.of_type("kubernetes:node.k8s.io/v1:RuntimeClass")
    [plugin] = [
        r for r in result.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"] == "nvidia-device-plugin"
    ]
    assert runtime.urn in plugin.dependencies
