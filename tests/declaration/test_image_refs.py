"""A workload's image is held to the grammar the kubelet parses it with: distribution/reference@v0.6.0 regexp.go
(`referencePat`) and reference.go (`NameTotalLengthMax` 255, ErrNameContainsUppercase). Cases from its
regexp_test.go / reference_test.go shapes, and the ones a review found passing (a newline split promote's lines)."""

from __future__ import annotations

import pytest

from kaistack.declaration.image_refs import image_problem
from kaistack.declaration.parse import ConfigError, parse_config

PULLABLE = [
    "busybox",
    "busybox:1.37.0",
    "nvcr.io/nvidia/pytorch:25.06-py3",
    "localhost:5000/team/infer:v1",
    "[::1]:5000/infer",
    "registry.Example.com/infer:1",  # a domain may hold upper case, a repository may not
    "a.b-c__d/e:TAG_with.Upper-1",
    "infer@sha256:" + "0123456789abcdef" * 4,
    "ghcr.io/acme/infer:1.4.2@sha256:" + "a" * 64,
]

REFUSED = {
    "": "an empty image",
    "Ubuntu:24.04": "repository names are lower case",
    "registry.example.com/Team/infer:1": "repository names are lower case",
    "infer:1.4.2\nx": "a space or a control character",
    "infer:1.4.2\x1b]0;owned\x07": "a space or a control character",
    "in fer": "a space or a control character",
    "infer:": "not [registry[:port]/]name[:tag][@digest]",
    "infer:-1": "not [registry[:port]/]name[:tag][@digest]",
    "infer:" + "t" * 129: "not [registry[:port]/]name[:tag][@digest]",
    "infer@sha256:abc": "not [registry[:port]/]name[:tag][@digest]",
    "team//infer": "not [registry[:port]/]name[:tag][@digest]",
    "-infer": "not [registry[:port]/]name[:tag][@digest]",
    "a" * 256: "longer than 255 characters",
}


@pytest.mark.parametrize("image", PULLABLE)
def test_a_reference_distribution_parses_is_accepted(image: str) -> None:
    assert image_problem(image) is None


@pytest.mark.parametrize("image", sorted(REFUSED))
def test_a_reference_the_kubelet_refuses_is_named_with_why(image: str) -> None:
    problem = image_problem(image)
    assert problem is not None
    assert REFUSED[image] in problem


def test_the_name_may_be_255_characters_long() -> None:
    assert image_problem("a" * 255 + ":v1") is None


def test_a_workload_with_an_unpullable_image_is_a_config_error_naming_the_key() -> None:
    raw = {
        "cluster": {"provider": "kind", "name": "u", "nodePools": [{"name": "g", "count": 1, "gpus": 1}]},
        "gpu": {"mode": "fake"},
        "queues": [{"name": "t"}],
        "workloads": [{"name": "w", "kind": "Job", "queue": "t", "image": "ghcr.io/acme/infer:1.4.2\nfake line"}],
    }
    with pytest.raises(
        ConfigError, match=r"kaistack:workloads\[0\]\.image: 'ghcr.io/acme/infer:1.4.2\\nfake line' is "
    ):
        parse_config(raw)
