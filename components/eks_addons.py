"""EKS add-ons kaistack installs besides pulumi-eks's own: the Pod Identity agent and the EBS CSI driver (vCluster
keeps each tenant's datastore on a gp3 volume), and the AWS-managed policy ARNs of the region's partition."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks


def managed_policy_arn(partition: str, policy: str) -> str:
    """An AWS-managed policy's ARN in `partition` (`arn:aws-cn:` in China): pulumi-eks builds its own the same way
    (nodejs/eks/cluster/cluster.ts at v4.3.0)."""
    return f"arn:{partition}:iam::aws:policy/{policy}"


def assumed_by(service: str, actions: str | list[str]) -> str:
    """A role's trust policy: `service` may assume it."""
    statement = {"Effect": "Allow", "Principal": {"Service": service}, "Action": actions}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


def storage_addons(
    name: str,
    cluster_name: str,
    partition: str,
    kubernetes_version: str,
    cluster: eks.Cluster,
    tags: Mapping[str, str],
    nodes: Sequence[pulumi.Resource],
    parent: pulumi.Resource,
) -> list[pulumi.Resource]:
    """EKS Pod Identity agent + EBS CSI driver add-ons, the driver's controller with its own IAM role.

    Pod Identity rather than the node role: only the CSI controller's service account gets the EBS
    permissions, not every pod on every node. Each add-on is pinned to AWS's default version for the cluster's
    Kubernetes version, so an EKS upgrade moves them too (EKS keeps an unpinned add-on at the version it was created
    with; pulumi-eks moves its own add-ons the same way).
    Ref: https://docs.aws.amazon.com/eks/latest/userguide/ebs-csi.html
    """
    after = pulumi.ResourceOptions(parent=parent, depends_on=[cluster, *nodes])
    agent = aws.eks.Addon(
        f"{name}-pod-identity",
        cluster_name=cluster_name,
        addon_name="eks-pod-identity-agent",
        addon_version=default_version("eks-pod-identity-agent", kubernetes_version),
        tags=dict(tags),
        opts=after,
    )
    role = aws.iam.Role(
        f"{name}-ebs-csi",
        assume_role_policy=assumed_by("pods.eks.amazonaws.com", ["sts:AssumeRole", "sts:TagSession"]),
        tags=dict(tags),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    policy = aws.iam.RolePolicyAttachment(
        f"{name}-ebs-csi",
        role=role.name,
        policy_arn=managed_policy_arn(partition, "service-role/AmazonEBSCSIDriverPolicy"),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    driver = aws.eks.Addon(
        f"{name}-ebs-csi",
        cluster_name=cluster_name,
        addon_name="aws-ebs-csi-driver",
        addon_version=default_version("aws-ebs-csi-driver", kubernetes_version),
        pod_identity_associations=[
            aws.eks.AddonPodIdentityAssociationArgs(role_arn=role.arn, service_account="ebs-csi-controller-sa")
        ],
        tags=dict(tags),
        opts=pulumi.ResourceOptions.merge(after, pulumi.ResourceOptions(depends_on=[agent, policy])),
    )
    return [agent, driver]


def default_version(addon: str, kubernetes_version: str) -> pulumi.Output[str]:
    """AWS's default version of `addon` for that Kubernetes version (EKS DescribeAddonVersions)."""
    return aws.eks.get_addon_version_output(addon_name=addon, kubernetes_version=kubernetes_version).version
