"""`kaistack verify` against an API server (or a proxy before it) that answers badly: found by a review.

A continue token that never ends looped forever with memory growing, and a replayed page counted a pod twice (2/2
Running for one pod); JSON nested past msgspec's depth limit was an internal error (exit 70); a Queue whose spec is
not an object crashed; one 403 on a node threw away the NotReady nodes already found (in test_workflow_verify_health).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from workflow_testlib import failed_checks, verify_json

from kaistack.kube.client import KubeClient, KubeError
from kaistack.kube.pages import MAX_LIST_ITEMS, each_once

SERVER = SimpleNamespace(server="https://api.example:6443", _user="admin", _timeout=5.0)


def _item(uid: str, name: str, namespace: str = "ml") -> Any:
    return SimpleNamespace(metadata=SimpleNamespace(uid=uid, name=name, namespace=namespace))


def test_an_object_listed_twice_is_refused_not_counted_twice() -> None:
    """A continue token names where the last page ended: a page served again repeats its objects."""
    pages = [_item("u1", "infer-0"), _item("u2", "infer-1"), _item("u1", "infer-0")]
    with pytest.raises(KubeError, match=r"listed ml/infer-0 twice \(a list continue token that makes no progress"):
        list(each_once(SERVER.server, iter(pages)))


def test_two_objects_of_one_name_in_two_namespaces_are_two() -> None:
    pages = [_item("u1", "p", "a"), _item("u2", "p", "b")]
    assert len(list(each_once(SERVER.server, iter(pages)))) == 2


def test_a_list_that_never_ends_is_refused_past_the_limit() -> None:
    endless = (_item(f"u{i}", f"p{i}") for i in range(MAX_LIST_ITEMS + 2))
    with pytest.raises(KubeError, match=rf"listed more than {MAX_LIST_ITEMS:,} objects of a kind"):
        list(each_once(SERVER.server, endless))


def test_json_nested_past_the_parsers_limit_is_no_kubernetes_object() -> None:
    """msgspec raises RecursionError (not a MsgspecError) past its depth limit: it was exit 70."""
    refused = pytest.raises(KubeError, match="answered with something that is not a Kubernetes object: nested too deep")
    with refused, KubeClient._translated(SERVER):  # type: ignore[arg-type]
        raise RecursionError("maximum recursion depth exceeded while deserializing an object")


@pytest.mark.parametrize(
    ("spec", "drift"),
    [
        ([1], "spec is not an object"),
        ({"resources": [1]}, "resources is not an object"),
        ({"resources": {"gpu": "4"}}, "resources.gpu is not an object"),
    ],
    ids=["spec", "resources", "gpu"],
)
def test_a_queue_whose_spec_is_no_object_is_drift_not_a_crash(project, fake_kube, capsys, spec, drift) -> None:
    queues = fake_kube.responses["/apis/scheduling.run.ai/v2/queues"]["items"]
    queues[0]["spec"] = spec
    name = queues[0]["metadata"]["name"]
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert ("queue", name) in failed_checks(report)
    [detail] = [c["detail"] for c in report["checks"] if (c["check"], c["subject"]) == ("queue", name)]
    assert drift in detail
