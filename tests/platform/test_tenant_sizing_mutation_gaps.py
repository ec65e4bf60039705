"""Tenant quota behaviour no other test pinned, found by a mutation run of kaistack/declaration/tenant_sizing.py:
how a quota of a tebibyte or more is written, and that an explicit count which is not whole gets one complaint.
"""

from __future__ import annotations

from typing import Any

import pytest
from platform_testlib import base_raw, merged

from kaistack.declaration import tenant_sizing
from kaistack.declaration.parse import ConfigError, parse_config


def _tenant_stack(workloads: list[dict[str, Any]] | None = None, **tenant: Any) -> dict[str, Any]:
    return merged(base_raw(), tenants=[{"name": "t1", "queues": ["team"], **tenant}], workloads=workloads or [])


def _quota(raw: dict[str, Any]) -> dict[str, str]:
    config = parse_config(raw)
    tenant = config.tenants[0]
    return tenant_sizing.tenant_quota(config, tenant, tenant_sizing.exposure(config, tenant))


def test_a_quota_of_a_tebibyte_or_more_is_written_in_whole_gibibytes() -> None:
    """Two pods with 509Gi of scratch space each and the vCluster's own 6Gi requested (18Gi limited, the
    LimitRange's defaults, see test_tenant_sizing): the quota holds exactly 1024Gi and 1036Gi, no more."""
    work = {"name": "w", "kind": "Deployment", "tenant": "t1", "queue": "team", "image": "x", "replicas": 2,
            "ephemeralStorage": "509Gi"}  # fmt: skip
    quota = _quota(_tenant_stack([work]))
    assert (quota["requests.ephemeral-storage"], quota["limits.ephemeral-storage"]) == ("1024Gi", "1036Gi")


def test_an_explicit_count_that_is_not_whole_is_refused_once_for_that() -> None:
    """`count/pods: 1.5` is below the vCluster's own 2 pods too, but the one thing to fix is that Kubernetes
    counts pods in whole units: a second complaint comparing 1.5 with the need would only confuse."""
    raw = _tenant_stack(isolation={"resourceQuota": {"quota": {"count/pods": "1.5"}}})
    with pytest.raises(ConfigError) as err:
        parse_config(raw)
    message = str(err.value)
    assert "(1 problem)" in message
    assert "quota.count/pods: 1.5 must be a whole number" in message
    assert "less than the tenant needs" not in message
