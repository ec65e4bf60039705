"""The host's admission policy for a tenant's other objects: the Services and PersistentVolumeClaims its vCluster
syncs into the tenant's host namespace.

Pure, like kaistack.guardrails.admission. No request is skipped: the StatefulSet controller's claim for the
vCluster's own data (template `data`: accessModes, storageClassName and a size, loft-sh/vcluster@v0.36.1
chart/templates/_persistence.tpl L15-26) names and selects no volume, and passes like any other.

What is refused (loft-sh/vcluster@v0.36.1, the same at v0.37.0-rc.1):
- a Service with `spec.externalIPs` (an update that keeps them as they were passes): vCluster copies a Service's
  spec to the host (pkg/controllers/resources/services/translate.go) and its later edits (services/syncer.go), and
  a Service's externalIPs capture every pod's and node's traffic to that address and port, cluster-wide
  (CVE-2020-8554); nothing else refuses them unless the API server runs the DenyServiceExternalIPs plugin;
- a claim created with `spec.volumeName` or `spec.selector`, or given a `volumeName` later by anyone but the
  host's volume binder: without synced PersistentVolumes vCluster copies both untranslated (pkg/controllers/
  resources/persistentvolumeclaims/translate.go), so the tenant's claim binds whichever unbound host volume
  it names or selects, another team's static volume included.

One policy over both kinds: the API server type-checks each expression against each kind it matches and records
the fields one lacks (a claim's externalIPs, a Service's volumeName) as warnings in the policy's
status.typeChecking, which change nothing (kubernetes/apiserver@v0.35.0 pkg/admission/plugin/policy/validating/
typechecking.go); `object` is dynamic at run time, and each rule first tests request.resource.resource.
"""

from __future__ import annotations

from typing import Any

from kaistack.guardrails.admission import namespace_binding, validating_policy
from kaistack.guardrails.admission_cel import IS_CREATE, IS_UPDATE, cel_list

# kube-controller-manager's PersistentVolume controller binds a claim by setting its volumeName, as its own
# service account with --use-service-account-credentials (kubernetes/kubernetes pkg/controller/volume/
# persistentvolume: the controller's name "persistent-volume-binder"); without, as the manager.
VOLUME_BINDERS = ("system:serviceaccount:kube-system:persistent-volume-binder", "system:kube-controller-manager")

_SERVICE = "request.resource.resource == 'services'"
_CLAIM = "request.resource.resource == 'persistentvolumeclaims'"
_NO_VOLUME_NAME = "(!has(object.spec.volumeName) || object.spec.volumeName == '')"


def object_validations(tenant: str) -> list[dict[str, str]]:
    rules = [
        (
            # An update that keeps a Service's external IPs as they were passes: one made before the policy can still
            # be synced, and its finalizers removed so it can be deleted.
            f"!({_SERVICE}) || !has(object.spec.externalIPs) || size(object.spec.externalIPs) == 0 || "
            f"({IS_UPDATE} && has(oldObject.spec.externalIPs) && "
            "oldObject.spec.externalIPs == object.spec.externalIPs)",
            f"tenant {tenant}: a Service may not set spec.externalIPs; they capture the traffic of every pod and node "
            "to that address (CVE-2020-8554)",
        ),
        (
            f"!({_CLAIM} && {IS_CREATE}) || ({_NO_VOLUME_NAME} && !has(object.spec.selector))",
            f"tenant {tenant}: a volume claim may not name (spec.volumeName) or select (spec.selector) a volume; it "
            "would bind the host's volume of that name or labels",
        ),
        (
            f"!({_CLAIM} && {IS_UPDATE}) || ({_NO_VOLUME_NAME} || "
            "(has(oldObject.spec.volumeName) && oldObject.spec.volumeName == object.spec.volumeName) || "
            f"request.userInfo.username in {cel_list(VOLUME_BINDERS)})",
            f"tenant {tenant}: only the host's volume binder sets a claim's spec.volumeName",
        ),
    ]
    return [{"expression": e, "message": m, "reason": "Forbidden"} for e, m in rules]


def objects_policy_name(tenant: str) -> str:
    return f"kaistack-tenant-{tenant}-objects"


def tenant_objects_policy(tenant: str) -> dict[str, Any]:
    return validating_policy(
        objects_policy_name(tenant), tenant, ["services", "persistentvolumeclaims"], object_validations(tenant)
    )


def tenant_objects_binding(tenant: str, host_namespace: str) -> dict[str, Any]:
    return namespace_binding(objects_policy_name(tenant), tenant, host_namespace)
