"""Every version kaistack deploys, pinned in one place with where the pin comes from.

`kaistack promote` copies the chart pins a stack overrides in config from one stack to the next;
these are the defaults when a stack says nothing.
"""

# KAI scheduler v0.17.0 (2026-08-03, commit f218c69b). OCI chart address moved between v0.13 and
# v0.14; the chart version is the git tag *with* the "v". Source: KAI README and
# .github/workflows/push-artifacts.yaml (see ../shared/reference/kai.md §1).
KAI_VERSION = "v0.17.0"
KAI_CHART = "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler"
KAI_LEGACY_CHART = "oci://ghcr.io/nvidia/kai-scheduler/kai-scheduler"  # <= v0.13.x
# Tags retracted upstream (commit "chore(release): retract versions v0.20.0 and v0.20.1 (#701)").
KAI_RETRACTED = frozenset({"v0.20.0", "v0.20.1"})

# vCluster 0.36.1 (2026-07-29); chart version is the tag without "v". Repo https://charts.loft.sh.
VCLUSTER_VERSION = "0.36.1"
VCLUSTER_REPO = "https://charts.loft.sh"

# run:ai fake-gpu-operator 0.2.0 (2026-07-01), the version KAI's own e2e setup pins
# (hack/setup-e2e-cluster.sh).
FAKE_GPU_OPERATOR_VERSION = "0.2.0"
FAKE_GPU_OPERATOR_CHART = "oci://ghcr.io/run-ai/fake-gpu-operator/fake-gpu-operator"

# NVIDIA device plugin 0.20.0 (2026-08-19); repo https://nvidia.github.io/k8s-device-plugin.
DEVICE_PLUGIN_VERSION = "0.20.0"
DEVICE_PLUGIN_REPO = "https://nvidia.github.io/k8s-device-plugin"

# NVIDIA GPU Operator v26.7.0 (2026-08-20); chart version carries the "v"; repo NGC.
GPU_OPERATOR_VERSION = "v26.7.0"
GPU_OPERATOR_REPO = "https://helm.ngc.nvidia.com/nvidia"

# HAMi's kai-resource-isolator (memory isolation for KAI >= v0.17 with hamicore), KAI
# docs/gpu-sharing/hami/README.md.
KAI_RESOURCE_ISOLATOR_CHART = "oci://docker.io/projecthami/kai-resource-isolator"
KAI_RESOURCE_ISOLATOR_VERSION = "1.1.0-chart"

# kind node image for Kubernetes 1.33, digest from the kind v0.29.0 release notes (the image
# kind publishes for that release; the digest pins it against re-tags).
KIND_NODE_IMAGE = "kindest/node:v1.33.1@sha256:050072256b9a903bd914c0b2866828150cb229cea0efe5892e2b644d5dd3b34f"

# EKS control-plane version for new clusters (a version EKS supports in standard support in 2026).
EKS_KUBERNETES_VERSION = "1.33"
