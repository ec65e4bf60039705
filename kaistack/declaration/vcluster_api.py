"""vCluster's names that kaistack reads on the host: the markers its syncer puts on the pods it syncs.

Source: loft-sh/vcluster@v0.36.1 pkg/util/translate (labels.go, translate.go) and the chart; see
../shared/reference/vcluster-and-gpu.md §1.3.
"""

from __future__ import annotations

MANAGED_BY_LABEL = "vcluster.loft.sh/managed-by"  # value: the vCluster release name
VIRTUAL_NAMESPACE_LABEL = "vcluster.loft.sh/namespace"  # the pod's namespace inside the vCluster
OBJECT_NAME_ANNOTATION = "vcluster.loft.sh/object-name"  # the pod's name inside the vCluster
OBJECT_NAMESPACE_ANNOTATION = "vcluster.loft.sh/object-namespace"
OBJECT_UID_ANNOTATION = "vcluster.loft.sh/object-uid"
OBJECT_KIND_ANNOTATION = "vcluster.loft.sh/object-kind"
KUBECONFIG_SECRET_PREFIX = "vc-"  # exportKubeConfig: Secret vc-<release> in the host namespace
