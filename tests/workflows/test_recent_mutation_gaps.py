"""What a mutation run over the recent changes found unpinned: a Deployment scaled to 0 that the controller has not
processed yet, and two old replicas left running (kaistack/ops/verify_health.py deployment_problems); the promote
diff of a stack file with no secure values or with several (kaistack/ops/promote_plan.py mask_secure_text). The
oversized gpu-memory note's gap is pinned in tests/capacity/test_check_oversized_gpu_memory.py."""

from __future__ import annotations

import copy

from test_promote_mutation_gaps import _plan
from test_workflow_verify_health import DEPLOYMENTS, _deployment, _infer
from workflow_testlib import check_detail, failed_checks, verify_json

from kaistack.ops.promote_plan import mask_secure_text

# --- a Deployment's rollout (kai-components, workload-rollout) --------------------------------------------------------


def test_a_deployment_of_zero_replicas_the_controller_has_not_processed_fails_on_its_generation(
    project, fake_kube, capsys
):
    """Created with replicas 0 while the controller is down or behind: no status, so no Available condition, and 0 of
    0 available. Guards against reading the absent condition (a crash) instead of reporting the unobserved spec."""
    extra = copy.deepcopy(_deployment(fake_kube, "binder"))
    extra["metadata"] |= {"name": "metrics-relay", "uid": "uid-metrics-relay"}
    extra["spec"]["replicas"] = 0
    extra["status"] = {}
    fake_kube.items(DEPLOYMENTS).append(extra)
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("kai-components", "kai-scheduler/metrics-relay")])
    assert check_detail(report, "kai-components", "kai-scheduler/metrics-relay") == (
        "status is for generation none of 1 (the Deployment controller has not processed the latest spec); "
        "see `kubectl -n kai-scheduler rollout status deployment/metrics-relay` and its new pods' logs"
    )


def test_two_old_replicas_still_running_are_counted_in_the_plural(project, fake_kube, capsys):
    """With a surge of two, two replicas of the old template can outlive the rollout: the count reads "replicas"."""
    _infer(fake_kube)["status"]["replicas"] = 4
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-rollout", "infer")])
    assert check_detail(report, "workload-rollout", "infer").startswith("2 old replicas still running; see `kubectl")


# --- the promote diff's masking -------------------------------------------------------------------------------------


def test_a_stack_file_without_secure_values_is_diffed_as_it_is(tmp_path):
    """Nothing to mask is no reason to withhold the diff: a file with no `secure` key is shown, not refused."""
    diff = _plan(tmp_path, "a:\n  version: v0.16.0\n", "a:\n  version: v0.17.0\n").diff()
    assert "-  version: v0.16.0\n+  version: v0.17.0\n" in diff


def test_every_secure_value_is_masked_when_several_sit_in_sibling_mappings():
    """The walk finds the later sibling's value first; masking must go in text order, or a value found after one
    further down the file is taken for one already masked and printed in clear."""
    text = "config:\n  a:\n    secure: v1:aaa\n  b:\n    secure: v1:bbb\n"
    assert mask_secure_text(text) == "config:\n  a:\n    secure: [secret]\n  b:\n    secure: [secret]\n"
