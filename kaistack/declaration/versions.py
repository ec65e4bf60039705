"""Every version kaistack deploys, pinned in one place with where the pin comes from.

`kaistack promote` copies the chart pins a stack overrides in config from one stack to the next;
these are the defaults when a stack says nothing.
"""

import re
from typing import Any

# KAI scheduler v0.17.0 (2026-08-03, commit f218c69b); the chart version is the git tag *with* the "v".
KAI_VERSION = "v0.17.0"
KAI_CHART = "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler"
KAI_LEGACY_CHART = "oci://ghcr.io/nvidia/kai-scheduler/kai-scheduler"
_KAI, _NVIDIA = KAI_CHART, KAI_LEGACY_CHART
# Every KAI release kaistack deploys, and the registry its chart was pushed to. The registry is
# decided per tag by that tag's .github/workflows/push-artifacts.yaml (DOCKER_REGISTRY); it is not
# monotonic: v0.12.18+ and v0.13.1+ went to ghcr.io/kai-scheduler while v0.12.17 and v0.13.0 went
# to ghcr.io/nvidia (kai-scheduler/KAI-Scheduler@<tag>:.github/workflows/push-artifacts.yaml; the
# whole table with commits and line numbers is tests/data/kai/chart-registry.yaml). v0.12.8 was
# never tagged. Later tags (v0.17.1+, v0.18.x) could not be read at source and are refused.
KAI_CHARTS: dict[str, str] = {
    "v0.12.0": _NVIDIA,
    "v0.12.1": _NVIDIA,
    "v0.12.2": _NVIDIA,
    "v0.12.3": _NVIDIA,
    "v0.12.4": _NVIDIA,
    "v0.12.5": _NVIDIA,
    "v0.12.6": _NVIDIA,
    "v0.12.7": _NVIDIA,
    "v0.12.9": _NVIDIA,
    "v0.12.10": _NVIDIA,
    "v0.12.11": _NVIDIA,
    "v0.12.12": _NVIDIA,
    "v0.12.13": _NVIDIA,
    "v0.12.14": _NVIDIA,
    "v0.12.15": _NVIDIA,
    "v0.12.16": _NVIDIA,
    "v0.12.17": _NVIDIA,
    "v0.12.18": _KAI,
    "v0.12.19": _KAI,
    "v0.12.20": _KAI,
    "v0.12.21": _KAI,
    "v0.12.22": _KAI,
    "v0.12.23": _KAI,
    "v0.13.0": _NVIDIA,
    "v0.13.1": _KAI,
    "v0.13.2": _KAI,
    "v0.13.3": _KAI,
    "v0.13.4": _KAI,
    "v0.14.0": _KAI,
    "v0.14.1": _KAI,
    "v0.14.2": _KAI,
    "v0.14.3": _KAI,
    "v0.14.4": _KAI,
    "v0.14.5": _KAI,
    "v0.14.6": _KAI,
    "v0.14.7": _KAI,
    "v0.15.0": _KAI,
    "v0.15.1": _KAI,
    "v0.15.2": _KAI,
    "v0.15.3": _KAI,
    "v0.16.0": _KAI,
    "v0.16.1": _KAI,
    "v0.16.2": _KAI,
    "v0.16.3": _KAI,
    "v0.16.4": _KAI,
    "v0.16.5": _KAI,
    "v0.16.6": _KAI,
    "v0.16.7": _KAI,
    "v0.16.8": _KAI,
    "v0.17.0": _KAI,
}
# The simulator's rule sets (placement.model.Placement.kai_version): v0.17.0, and "v0.18.0" = KAI main
# after v0.17.0 (d5bc503), which no deployable tag carries yet.
SIMULATOR_RULES = ("v0.17.0", "v0.18.0")


def simulator_rules(kai_version: str) -> str:
    """The rule set `kaistack check` simulates a stack's KAI release with: its own where the simulator has
    it, else the nearest it has (v0.17.0 for every earlier release; the report says so)."""
    return kai_version if kai_version in SIMULATOR_RULES else SIMULATOR_RULES[0]


def kai_tag(version: str) -> tuple[int, int, int]:
    """A KAI release tag ("v0.17.0") as numbers, for "this setting needs vX.Y.Z" comparisons."""
    match = re.fullmatch(r"v([0-9]+)\.([0-9]+)\.([0-9]+)", version)
    if match is None:
        raise ValueError(f"not a KAI release tag (like {KAI_VERSION!r}): {version!r}")
    major, minor, patch = (int(g) for g in match.groups())
    return major, minor, patch


def release_order(version: str) -> tuple[Any, ...] | None:
    """A release version ("v0.17.0", "0.37.0-rc.1", "v26.7.0") as a key in semver order, or None for anything
    else (an image tag, a digest), which is then not compared."""
    match = re.fullmatch(r"v?([0-9]{1,9})\.([0-9]{1,9})\.([0-9]{1,9})(?:-([0-9A-Za-z.-]{1,64}))?", version)
    if match is None:
        return None
    major, minor, patch, pre = match.groups()
    # semver.org 11: a pre-release sorts before its release; numeric identifiers before alphanumeric ones.
    pre_key = (1,) if pre is None else (0, *((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split(".")))
    return (int(major), int(minor), int(patch), pre_key)


# Revisions Helm keeps of each release kaistack installs, each a Secret in the release's namespace
# (`sh.helm.release.v1.<name>.v<N>`). pulumi-kubernetes leaves `maxHistory` unset as 0, unlimited
# (pulumi/pulumi-kubernetes provider/pkg/provider/helm_release.go: `client.MaxHistory = 0` unless set), which
# would let a tenant's vCluster release use up its namespace's count/secrets (tenant_sizing) after enough
# `pulumi up`s; 10 is the helm CLI's own default (`helm upgrade --history-max`).
HELM_MAX_HISTORY = 10


# Tags retracted upstream (commit "chore(release): retract versions v0.20.0 and v0.20.1 (#701)").
KAI_RETRACTED = frozenset({"v0.20.0", "v0.20.1"})

# vCluster 0.36.1 (2026-07-29); chart version is the tag without "v". Repo https://charts.loft.sh.
VCLUSTER_VERSION = "0.36.1"
# Every vCluster chart a tenant may ask for: the pinned stable release and the newest release line, read
# at source (loft-sh/vcluster@<tag>: chart/values.schema.json and chart/values.yaml, copied to
# tests/data/schemas/). 0.37 has no stable release yet; its newest tag is a release candidate. Between the
# two, pkg/controllers/resources/pods and pkg/util/translate (pod sync, setOwner) are unchanged and the
# chart templates only add kubeVirt CSI and file logging, which kaistack does not set.
VCLUSTER_VERSIONS: dict[str, str] = {
    "0.36.1": "stable, 2026-07-29, commit 0c3bb166",
    "0.37.0-rc.1": "pre-release of the 0.37 line, 2026-08-21, commit 1303b21f",
}
VCLUSTER_REPO = "https://charts.loft.sh"

# The virtual Kubernetes a tenant's vCluster runs, by minor: vCluster's own list of the API servers it
# supports (loft-sh/vcluster@v0.36.1:config/default_extra_values.go, K8SVersionMap; the same at
# v0.37.0-rc.1), each an image ghcr.io/loft-sh/kubernetes:<tag> that controlPlane.distro.k8s.version picks
# (chart/templates/_init-containers.tpl). Unset, the chart runs v1.36.0 on any host
# (chart/values.yaml, controlPlane.distro.k8s.image.tag), and a virtual API newer than the host accepts
# what the host cannot honour without a word: the pod syncer drops pod-level spec.resources on hosts
# below 1.34 (pkg/controllers/resources/pods/translate/translator.go), so KAI would see a pod without
# requests, and skips in-place resizes below 1.35 (pods/syncer.go). Upstream's compatibility matrix
# recommends only the host's own minor (hack/compat-matrix/matrix-template.tmpl).
VCLUSTER_KUBERNETES: dict[str, str] = {
    "1.30": "v1.30.2",
    "1.31": "v1.31.1",
    "1.32": "v1.32.1",
    "1.33": "v1.33.4",
    "1.34": "v1.34.0",
    "1.35": "v1.35.0",
    "1.36": "v1.36.0",
}


def kubernetes_minor(version: str) -> str | None:
    """'1.33', 'v1.35.0' or an image tagged so ('kindest/node:v1.35.0@sha256:...') -> '1.35'; else None."""
    match = re.search(r"(?:^|:)v?(\d{1,3})\.(\d{1,3})(?:\.\d{1,4})?(?:@|$)", version)
    return f"{int(match.group(1))}.{int(match.group(2))}" if match else None


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

# HAMi's kai-resource-isolator (memory isolation for KAI >= v0.17 with hamicore): 1.1.0-chart is what KAI's
# docs/gpu-sharing/hami/README.md names from commit 98fd1f72 (2026-08-04, by HAMi's maintainer, the day after
# v0.17.0); the v0.17.0 tag's copy still says 1.0.0-chart. Docker Hub's tag list cannot be read offline.
KAI_RESOURCE_ISOLATOR_CHART = "oci://docker.io/projecthami/kai-resource-isolator"
KAI_RESOURCE_ISOLATOR_VERSION = "1.1.0-chart"

# kind node image for Kubernetes 1.35: kind v0.31.0's default node image, digest and all
# (kubernetes-sigs/kind@v0.31.0:pkg/apis/config/defaults/image.go), so it is built for kind >= v0.31.0;
# the digest pins it against re-tags. 1.35 is the minor KAI v0.17.0's own kind setup defaults to
# (KAI-Scheduler@v0.17.0:hack/setup-e2e-cluster.sh, KIND_K8S_TAG v1.35.0) and the EKS default below.
# Kubernetes 1.33 (the previous pin, kind v0.29.0) left upstream support on 2026-06-28.
KIND_VERSION = "v0.31.0"
KIND_NODE_IMAGE = "kindest/node:v1.35.0@sha256:452d707d4862f52530247495d180205e029056831160e22870e37e3f6c1ac31f"

# EKS control-plane version for new clusters: 1.35 (on EKS 2026-01-28), in standard support until 2027-03-27.
# 1.33's standard support ended 2026-07-29 and 1.34's ends 2026-12-02; a cluster past it is billed extended
# support ($0.60/h instead of $0.10/h) and later upgraded by AWS (docs.aws.amazon.com/eks/latest/userguide/
# kubernetes-versions.html: 14 months standard, 12 extended; dates from endoflife.date/amazon-eks). KAI
# v0.17.0, vCluster 0.36.1 and GPU Operator v26.7.0 build against Kubernetes 1.35 and 1.36 client libraries
# (their go.mod at those tags).
EKS_KUBERNETES_VERSION = "1.35"
