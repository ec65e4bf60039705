"""KAI's API names, in one place: the scheduler, labels, annotations, resources, CRDs and priority classes.

Every other module imports these; none spells them itself. Sources (kai-scheduler/KAI-Scheduler@v0.17.0):
pkg/common/constants/constants.go, pkg/podgrouper/podgrouper/plugins/constants/constants.go,
pkg/common/resources/gpu_sharing.go, the CRDs in deployments/kai-scheduler/crds/, and the chart's
templates/priorityclasses/ (see ../shared/reference/kai.md §2-§5). Names that differ by KAI version
come from the version table (kaistack.declaration.versions).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

# -- the scheduler and its namespaces ------------------------------------------------------------
SCHEDULER_NAME = "kai-scheduler"  # pod spec.schedulerName; other pods are ignored by the pod-grouper
DEFAULT_NAMESPACE = "kai-scheduler"  # DefaultKAINamespace
RELEASE_NAME = "kai-scheduler"  # the Helm release and chart name
RESERVATION_NAMESPACE = "kai-resource-reservation"  # global.resourceReservation.namespace (GPU reservation pods)
ISOLATOR_NAMESPACE = "kai-resource-isolator"  # where kaistack installs HAMi's isolator (kai.sharing: isolated)
# KAI@v0.17.0 pkg/scheduler/conf/global_config.go:25 and pkg/common/constants/constants.go:9: the `app` label
# value KAI recognises a GPU reservation pod by (pod_info.IsResourceReservationTask).
RESERVATION_APP_LABEL = "kai-resource-reservation"
# KAI@v0.17.0 pkg/scheduler/conf/global_config.go:26 and deployments/kai-scheduler/values.yaml:247: the `app`
# label of the node-scale-adjuster's scaling pods (pod_info.IsScaleAdjustTask), and the namespace it makes them in.
SCALING_POD_APP_LABEL = "scaling-pod"
SCALING_POD_NAMESPACE = "kai-scale-adjust"

# -- labels (on the top owner and/or the pod) ----------------------------------------------------
QUEUE_LABEL = "kai.scheduler/queue"  # default of podgrouper.queueLabelKey
LEGACY_QUEUE_LABEL = "runai/queue"  # read before v0.6.0 only (docs/migrationguides/v0.6.0)
PRIORITY_CLASS_LABEL = "priorityClassName"  # beats spec.priorityClassName (calcPodGroupPriorityClass)
PREEMPTIBILITY_LABEL = "kai.scheduler/preemptibility"  # preemptible | non-preemptible
# The label's values KAI's pod-grouper reads (v2alpha2 ParsePreemptibility); "" is the default (by priority class).
PREEMPTIBILITY_VALUES = ("preemptible", "non-preemptible", "")
NODE_POOL_LABEL = "kai.scheduler/node-pool"  # scheduling shard partition
SUBGROUP_LABEL = "kai.scheduler/subgroup-name"  # which PodGroup subgroup a pod belongs to
GPU_GROUP_LABEL = "runai-gpu-group"  # set on fractional pods: the shared GPU they were bound to
# The GPU memory cap KAI gives HAMi-core in a shared pod's fraction container (pkg/binder/common/constants.go:8).
HAMI_MEMORY_LIMIT = "CUDA_DEVICE_MEMORY_LIMIT"

# -- annotations (on the pod) ---------------------------------------------------------------------
GPU_FRACTION = "gpu-fraction"  # 0 < f < 1 (strconv.ParseFloat, and a valid quantity)
# KAI keeps a share in hundredths of a GPU (KAI@v0.17.0 pkg/scheduler/api/resource_info/
# gpu_resource_requirment.go:266-269, getExtendedResourceGpus: math.Round(portion * 100) / 100), so a
# fraction under this holds 0 GPUs of its queue's quota and limit; kaistack refuses it.
SMALLEST_COUNTED_FRACTION = 0.005


def counts_as_no_gpu(fraction: float) -> bool:
    """math.Round(fraction * 100) == 0 for a share in (0, 1), as Go rounds (half away from zero)."""
    return fraction * 100 < 0.5


GPU_MEMORY = "gpu-memory"  # positive integer MiB
GPU_FRACTION_NUM_DEVICES = "gpu-fraction-num-devices"  # positive integer, with a fraction or memory
GPU_FRACTION_CONTAINER_NAME = "gpu-fraction-container-name"  # the container that gets the share
MPS = "mps"  # "true": MPS, only with a fraction or memory
# NvFractions' per-container annotations (nvidia.com/container.<container>.gpu-memory.request|limit,
# .gpu-compute.mode): KAI main after v0.17.0 (upstream docs/gpu-sharing/nv-fraction/README.md @bf1bdd57),
# in no tag kaistack can read; v0.17.0 reads none of them.
NV_FRACTIONS_ANNOTATION = r"^nvidia\.com/container\.[^.]+\.(gpu-memory\.(request|limit)|gpu-compute\.mode)$"
POD_GROUP_NAME = "pod-group-name"  # the PodGroup a pod belongs to (set by the pod-grouper, or by hand)
SKIP_PODGROUPER = "kai.scheduler/skip-podgrouper"  # "true": the pod-grouper leaves the pod alone
BATCH_MIN_MEMBER = "kai.scheduler/batch-min-member"  # Job/JobSet minMember (v0.15+)
PREEMPTION_DELAY = "kai.scheduler/preemption-delay"  # v0.17
STALENESS_GRACE_PERIOD = "kai.scheduler/staleness-grace-period"
TOPOLOGY = "kai.scheduler/topology"
TOPOLOGY_REQUIRED_PLACEMENT = "kai.scheduler/topology-required-placement"
TOPOLOGY_PREFERRED_PLACEMENT = "kai.scheduler/topology-preferred-placement"
# On a PyTorchJob's Worker template: split the workers into subgroups of this many pods, each with the
# segment constraint (pkg/podgrouper/podgrouper/plugins/kubeflow/pytorch/pytorch_grouper.go).
SEGMENT_SIZE = "kai.scheduler/segment-size"
SEGMENT_TOPOLOGY_REQUIRED_PLACEMENT = "kai.scheduler/segment-topology-required-placement"
SEGMENT_TOPOLOGY_PREFERRED_PLACEMENT = "kai.scheduler/segment-topology-preferred-placement"
GPU_SHARING_ANNOTATIONS = (GPU_FRACTION, GPU_MEMORY)

# -- resources ------------------------------------------------------------------------------------
GPU_RESOURCE = "nvidia.com/gpu"  # whole GPUs (an extended resource)
# The toleration kaistack gives GPU workloads' pods, for the taint GPU node pools conventionally carry (EKS
# pools always: kaistack.stack.eks); NVIDIA's own DaemonSets tolerate it the same way.
GPU_TOLERATION = {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}
AMD_GPU_RESOURCE = "amd.com/gpu"  # KAI counts it as GPUs too (resource_requirment.go:17-18, 53-60)
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"  # nvidia.com/mig-<G>g.<M>gb

# -- node labels KAI reads (written by GPU feature discovery, the fake GPU operator, or kaistack) ---
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"  # MiB per GPU; KAI floors it to a multiple of 100
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"  # the device plugin's default node affinity
# The variable KAI's deviceaccess admission plugin (global.blockNvidiaVisibleDevices) sets to void.
NVIDIA_VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
MIG_STRATEGY_LABEL = "nvidia.com/mig.strategy"  # single | mixed


def mig_strategy(labels: Mapping[str, object]) -> str:
    """A MIG node's strategy as KAI reads its label: single or mixed, and anything else (missing, empty, another
    word) none (KAI@v0.17.0 pkg/scheduler/api/node_info/node_info.go:698-710, GetMigStrategy)."""
    value = labels.get(MIG_STRATEGY_LABEL)
    return value if value in ("single", "mixed") else "none"


FAKE_GPU_LABEL = "run.ai/fake.gpu"  # fake-gpu-operator nodes: KAI's binder runs --fake-gpu-nodes
HOSTNAME_LABEL = "kubernetes.io/hostname"  # the kubelet's, one value per node; a Topology's lowest level only


# -- custom resources -----------------------------------------------------------------------------
class Crd(NamedTuple):
    group: str
    version: str
    kind: str
    plural: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def pulumi_type(self) -> str:
        """The type token pulumi-kubernetes gives such an object (`kubernetes:<group>/<version>:<Kind>`)."""
        return f"kubernetes:{self.group}/{self.version}:{self.kind}"


QUEUE = Crd("scheduling.run.ai", "v2", "Queue", "queues")  # cluster-scoped
POD_GROUP = Crd("scheduling.run.ai", "v2alpha2", "PodGroup", "podgroups")
BIND_REQUEST = Crd("scheduling.run.ai", "v1alpha2", "BindRequest", "bindrequests")
TOPOLOGY_CRD = Crd("kai.scheduler", "v1alpha1", "Topology", "topologies")  # cluster-scoped
CONFIG = Crd("kai.scheduler", "v1", "Config", "configs")
SCHEDULING_SHARD = Crd("kai.scheduler", "v1", "SchedulingShard", "schedulingshards")
# KAI's operator input (KAI@v0.17.0 deployments/kai-scheduler/crds/kai.scheduler_configs.yaml, cluster-scoped; the
# chart names it kai-config, templates/_helpers.tpl:45-49): spec.global.queueLabelKey is the label the scheduler,
# pod-grouper and admission read a pod's queue from (pkg/operator/operands/scheduler/resources_for_shard.go:363,
# pod_grouper/resources.go:72).
KAI_CONFIG = Crd("kai.scheduler", "v1", "Config", "configs")
KAI_CONFIG_NAME = "kai-config"

# -- priority classes the chart installs (templates/priorityclasses/) ------------------------------
PRIORITY_CLASSES: dict[str, int] = {"train": 50, "build-preemptible": 75, "build": 100, "inference": 125}
# priority >= 100 is non-preemptible unless kai.scheduler/preemptibility says otherwise
# (nonPreemptiblePriorityThreshold, pkg/common/podgroup/preemptible.go).
NON_PREEMPTIBLE_THRESHOLD = 100

# KAI tells its utility pods by their `app` label (KAI@v0.17.0 pkg/scheduler/api/pod_info/utility_pods.go, defaults
# pkg/scheduler/conf/global_config.go:25-26): a resource-reservation pod's node is charged no GPUs for it
# (node_info/node_info.go:470-473).
APP_LABEL = "app"  # pkg/common/constants/constants.go:9
UTILITY_POD_APPS = ("kai-resource-reservation", "scaling-pod")
