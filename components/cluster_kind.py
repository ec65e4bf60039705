"""A local kind cluster created by `pulumi up` through the kind (or nvkind) CLI on the Pulumi host.

The kind config is generated from the declared node pools; the command prints the cluster's
kubeconfig, which becomes a Pulumi secret and feeds an explicit Kubernetes provider.
Prerequisites on the Pulumi host: Docker and `kind`; for real GPUs also `nvkind`, `kubectl` and the NVIDIA
container toolkit set up as nvkind's README says (nvidia as Docker's default runtime,
accept-nvidia-visible-devices-as-volume-mounts); the README's "Real GPUs on kind" section.
"""

from __future__ import annotations

import shlex
from typing import Any

import pulumi
import pulumi_command.local as local
import pulumi_kubernetes as k8s
import yaml

from kaistack.declaration.kai_api import GPU_PRESENT_LABEL
from kaistack.declaration.marks import NODE_POOL_LABEL as POOL_LABEL
from kaistack.declaration.model import NodePool, StackConfig

# run:ai fake-gpu-operator opts nodes in by this label (topology.nodePoolLabelKey); the value names
# the pool in topology.nodePools (vcluster-and-gpu.md §5).
FAKE_POOL_LABEL = "run.ai/simulated-gpu-node-pool"
# KAI's own kind setup pre-labels fake-GPU nodes and installs the operator with
# statusUpdater.disableNodeLabeling: true (KAI hack/generate-kind-config.sh); the device plugin and
# status exporter DaemonSets select on these two labels, so both are required.
FAKE_GPU_NODE_LABELS = {
    "nvidia.com/gpu.deploy.device-plugin": "true",
    "nvidia.com/gpu.deploy.dcgm-exporter": "true",
}
# Lets the NVIDIA device plugin's default node affinity match without NFD (vcluster-and-gpu.md §2).
REAL_GPU_NODE_LABELS = {GPU_PRESENT_LABEL: "true"}
REAL_GPU_MODES = ("device-plugin", "gpu-operator")
# NFD reads the host's PCI devices on every kind node, so the GPU Operator takes CPU workers for GPU nodes too
# (NVIDIA/gpu-operator@v26.7.0 controllers/state_manager.go:170-174, nodelabeling_controller.go:237-243) and
# schedules its operands there, with runtimeClassName nvidia, which nvkind sets up only on GPU workers. The
# operator's own opt-out keeps them off (state_manager.go:372-379, 455-460, updateGPUStateLabels).
OPERANDS_OFF = {"nvidia.com/gpu.deploy.operands": "false"}


def _worker(config: StackConfig, pool: NodePool, index: int) -> dict[str, Any]:
    labels = {POOL_LABEL: pool.name, **pool.labels}
    node: dict[str, Any] = {"role": "worker", "image": config.cluster.kind.node_image}
    if pool.gpu_count and config.gpu.mode == "fake":
        labels.update({FAKE_POOL_LABEL: pool.name, **FAKE_GPU_NODE_LABELS})
    elif pool.gpu_count and config.gpu.mode in REAL_GPU_MODES:
        labels.update(REAL_GPU_NODE_LABELS)
        # nvkind hands GPUs to a kind node by mounting /dev/null at this path; the NVIDIA runtime on
        # the host reads it as NVIDIA_VISIBLE_DEVICES (nvkind pkg/nvkind/default-config-template.yaml).
        node["extraMounts"] = [
            {"hostPath": "/dev/null", "containerPath": f"/var/run/nvidia-container-devices/{device}"}
            for device in _devices(pool, index)
        ]
    elif config.gpu.mode == "gpu-operator":
        labels.update(OPERANDS_OFF)
    node["labels"] = labels
    if pool.taints:
        # kind has no taint field; kubeadm's JoinConfiguration registers the node with them.
        taints = [
            {"key": t.key, "effect": t.effect, **({"value": t.value} if t.value is not None else {})}
            for t in pool.taints
        ]
        patch = {"kind": "JoinConfiguration", "nodeRegistration": {"taints": taints}}
        node["kubeadmConfigPatches"] = [yaml.safe_dump(patch, sort_keys=False)]
    return node


def _devices(pool: NodePool, index: int) -> list[str]:
    """Host GPUs for worker `index` of a pool: "all", or a per-worker slice of the listed indices.

    A list as long as count x gpus is split so workers do not share a device (nvkind
    examples/explicit-gpus-per-worker.yaml); any other list is given to every worker.
    """
    if pool.gpu_devices == "all":
        return ["all"]
    devices = [str(d) for d in pool.gpu_devices]
    per_node = pool.gpu_count
    if pool.count > 1 and per_node and len(devices) == pool.count * per_node:
        return devices[index * per_node : (index + 1) * per_node]
    return devices


def kind_config(config: StackConfig) -> dict[str, Any]:
    """The kind cluster config (kind.x-k8s.io/v1alpha4) for the declared node pools.

    Nothing in it depends on the tenants: each tenant's vCluster API is a NodePort (kube-proxy answers
    on every node) in a range mapped once on the control plane, so the Pulumi host reaches
    https://127.0.0.1:<port>, and adding, removing or renaming a tenant never replaces the cluster.
    """
    control_plane: dict[str, Any] = {"role": "control-plane", "image": config.cluster.kind.node_image}
    first = config.cluster.kind.tenant_port_base
    control_plane["extraPortMappings"] = [
        {"containerPort": p, "hostPort": p, "listenAddress": "127.0.0.1", "protocol": "TCP"}
        for p in range(first, first + config.cluster.kind.tenant_ports)
    ]
    workers = [_worker(config, pool, i) for pool in config.cluster.node_pools for i in range(pool.count)]
    return {"kind": "Cluster", "apiVersion": "kind.x-k8s.io/v1alpha4", "nodes": [control_plane, *workers]}


def kind_config_yaml(config: StackConfig) -> str:
    return yaml.safe_dump(kind_config(config), sort_keys=False)


def uses_nvkind(config: StackConfig) -> bool:
    return config.gpu.mode in REAL_GPU_MODES and any(p.gpu_count for p in config.cluster.node_pools)


def create_script(config: StackConfig) -> str:
    """Idempotent create (pulumi-command re-runs `create` on any input change; pulumi.md §7).

    The config arrives on stdin. Progress goes to stderr so stdout is exactly the kubeconfig. With
    real GPUs, nvkind creates the cluster from the same (template-free) config and then installs the
    container toolkit and RuntimeClass `nvidia` in each GPU node (vcluster-and-gpu.md §4).
    """
    name = shlex.quote(config.cluster.name)
    if not uses_nvkind(config):
        return (
            "set -eu\n"
            # A failing `kind get clusters` stops the script rather than reading as "no cluster".
            'clusters="$(kind get clusters)"\n'
            f"if ! printf '%s\\n' \"$clusters\" | grep -qx {name}; then\n"
            f"  kind create cluster --name {name} --config - --wait 5m >&2\n"
            "fi\n"
            f"kind get kubeconfig --name {name}\n"
        )
    # nvkind creates the kind cluster first and then sets up each GPU node (toolkit, RuntimeClass `nvidia`
    # through kubectl), leaving the cluster behind when that fails (NVIDIA/nvkind cmd/nvkind/cluster_create.go,
    # pkg/nvkind/cluster.go). A half-built cluster is deleted, so the next run starts clean, and an existing
    # one is used only if it has the RuntimeClass the GPU pods name.
    context = shlex.quote(f"kind-{config.cluster.name}")
    return (
        "set -eu\n"
        "for tool in kind nvkind kubectl; do\n"
        '  command -v "$tool" >/dev/null || { echo "kaistack: $tool is not installed; nvkind needs kind, nvkind and '
        'kubectl (NVIDIA/nvkind README, Prerequisites)" >&2; exit 1; }\n'
        "done\n"
        # A failing `kind get clusters` stops the script: read as "no cluster", nvkind's failure would then
        # delete the existing one.
        'clusters="$(kind get clusters)"\n'
        f"if ! printf '%s\\n' \"$clusters\" | grep -qx {name}; then\n"
        '  cfg="$(mktemp)"; trap \'rm -f "$cfg"\' EXIT; cat >"$cfg"\n'
        f'  if ! nvkind cluster create --name {name} --config-template "$cfg" >&2; then\n'
        f'    echo "kaistack: nvkind failed; deleting the half-built cluster {name} so the next run starts clean" >&2\n'
        f"    kind delete cluster --name {name} >&2 || true\n"
        "    exit 1\n"
        "  fi\n"
        f"elif ! kubectl --context {context} get runtimeclass nvidia >/dev/null 2>&1; then\n"
        f'  echo "kaistack: kind cluster {name} exists but has no RuntimeClass nvidia: nvkind did not set it up '
        f'(or it is another cluster of that name); delete it (kind delete cluster --name {name}) and run again" >&2\n'
        "  exit 1\n"
        "fi\n"
        f"kind get kubeconfig --name {name}\n"
    )


def delete_script(config: StackConfig) -> str:
    return f"kind delete cluster --name {shlex.quote(config.cluster.name)}"


class KindCluster(pulumi.ComponentResource):
    """kind cluster + the Kubernetes provider every other component deploys with."""

    command: local.Command
    kubeconfig: pulumi.Output[str]
    provider: k8s.Provider

    def __init__(self, name: str, config: StackConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("kaistack:index:KindCluster", name, None, opts)
        child_opts = pulumi.ResourceOptions(parent=self)
        config_yaml = kind_config_yaml(config)
        self.command = local.Command(
            f"{name}-create",
            create=create_script(config),
            delete=delete_script(config),
            stdin=config_yaml,
            # kind cannot change a running cluster: a new config replaces it (delete first, since
            # the cluster name is fixed); the script text alone never forces a replacement
            # (pulumi/pulumi-command@v1.2.1 provider/pkg/provider/common/inputs.go: only `triggers` replaces).
            triggers=[config_yaml],
            # stdout is the admin kubeconfig: never logged, never kept in clear in the state, and not
            # re-injected into the next run's environment.
            logging=local.Logging.NONE,
            add_previous_output_in_env=False,
            opts=child_opts.merge(
                pulumi.ResourceOptions(
                    additional_secret_outputs=["stdout"],
                    delete_before_replace=True,
                    # The delete script names the cluster: a new name replaces it too. As an update, the new
                    # create would start a second cluster beside the old one (its host ports still bound), and
                    # the old would never be deleted. (Not a trigger: a new trigger replaces running clusters.)
                    replace_on_changes=["delete"],
                )
            ),
        )
        self.kubeconfig = pulumi.Output.secret(self.command.stdout)
        self.provider = k8s.Provider(
            f"{name}-provider",
            kubeconfig=self.kubeconfig,
            # The Command's id changes only when the cluster is created again: an update of the create script leaves
            # stdout unknown in its preview, which without an unchanged identifier replaces the provider (DiffConfig).
            cluster_identifier=self.command.id.apply(lambda command_id: f"kind/{config.cluster.name}/{command_id}"),
            # A kind cluster deleted outside Pulumi (`kind delete cluster`) must not wedge the stack.
            delete_unreachable=True,
            opts=child_opts,
        )
        self.register_outputs(
            {
                "clusterName": config.cluster.name,
                "nodes": 1 + sum(p.count for p in config.cluster.node_pools),
                "kubeconfig": self.kubeconfig,
            }
        )
