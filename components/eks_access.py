"""Who besides the cluster's creator may use an EKS cluster: `cluster.eks.adminPrincipals` as access entries."""

from __future__ import annotations

import hashlib

import pulumi_aws as aws
import pulumi_eks as eks

from kaistack.declaration.model import EksSettings


def admin_access_entries(settings: EksSettings) -> dict[str, eks.AccessEntryArgs]:
    """`cluster.eks.adminPrincipals` as cluster-wide AmazonEKSClusterAdminPolicy entries, keyed by a digest of the
    ARN so reordering the list replaces nothing. The creator has its entry from EKS already (pulumi-eks sets
    bootstrapClusterCreatorAdminPermissions) and must not be listed: EKS refuses a second entry for it."""
    entries = {}
    for arn in settings.admin_principals:
        partition = arn.split(":")[1]
        policy = f"arn:{partition}:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
        entries[f"admin-{hashlib.sha256(arn.encode()).hexdigest()[:10]}"] = eks.AccessEntryArgs(
            principal_arn=arn,
            access_policies={
                "admin": eks.AccessPolicyAssociationArgs(
                    policy_arn=policy, access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster")
                )
            },
        )
    return entries
