"""`<<` merge keys are read as kubectl reads them, or refused where the readers of a manifest disagree.

kubectl and Pulumi decode YAML with go-yaml v2: go-yaml/yaml@v2.4.0 decode.go:661-664 (a merge sets its keys where
it stands in the mapping) and 786-811 ("Step backwards as earlier nodes take precedence": in a list of mappings the
first to set a key wins). go-yaml v3 lets a mapping's own keys win wherever they stand and reads only the last of
two `<<` keys (go-yaml/yaml@v3.0.1 decode.go:816-856, 959-996). PyYAML 6.0 lets the last mapping of a list win for
most keys, which let `<<: [{nvidia.com/gpu: 4}, {nvidia.com/gpu: 0}]` pass lint as a pod with no GPU.
Each behaviour is checked with libyaml's parser and with PyYAML's own (used where libyaml is missing).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kaistack.cli import main
from kaistack.declaration import yaml_load
from kaistack.declaration.yaml_load import YamlInputError, load_one


@pytest.fixture(params=["libyaml", "pure-python"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "pure-python":
        monkeypatch.setattr(yaml_load, "_Loader", yaml.SafeLoader)
    elif not hasattr(yaml, "CSafeLoader"):
        pytest.skip("libyaml is not installed")
    return str(request.param)


def test_in_a_list_of_merged_mappings_the_first_to_set_a_key_wins(parser: str) -> None:
    limits = load_one("limits:\n  <<: [{nvidia.com/gpu: 4}, {nvidia.com/gpu: 0, cpu: 2}]\n", "pod.yaml")["limits"]
    assert limits == {"nvidia.com/gpu": 4, "cpu": 2}


def test_aliased_mappings_merged_in_a_list_keep_the_first_ones_value(parser: str) -> None:
    text = "a: &a {kai.scheduler/queue: nosuch}\nb: &b {kai.scheduler/queue: team, app: x}\nlabels: {<<: [*a, *b]}\n"
    assert load_one(text, "pod.yaml")["labels"] == {"kai.scheduler/queue": "nosuch", "app": "x"}


def test_a_key_after_the_merge_overrides_the_merged_value(parser: str) -> None:
    text = "base: &base {schedulerName: default-scheduler, x: 1}\nspec:\n  <<: *base\n  schedulerName: kai-scheduler\n"
    assert load_one(text, "pod.yaml")["spec"] == {"schedulerName": "kai-scheduler", "x": 1}


def test_a_merged_mappings_own_merge_is_resolved_first(parser: str) -> None:
    text = "inner: &inner {gpu: 1}\nouter: &outer {<<: *inner, gpu: 2}\nspec: {<<: [*outer, {gpu: 3}]}\n"
    assert load_one(text, "pod.yaml")["spec"] == {"gpu": 2}


def test_a_key_set_before_a_merge_that_sets_it_too_is_refused_at_the_key(parser: str) -> None:
    text = "spec:\n  schedulerName: default-scheduler\n  <<: {schedulerName: kai-scheduler}\n"
    with pytest.raises(
        YamlInputError,
        match=r"pod\.yaml:2: YAML that its readers read differently \(document 1\): key 'schedulerName' is set "
        r"before a `<<` merge that sets it too .*put the key after the merge",
    ):
        load_one(text, "pod.yaml")


def test_a_key_before_a_merge_that_does_not_set_it_is_read(parser: str) -> None:
    text = "spec:\n  priority: 1\n  <<: {schedulerName: kai-scheduler}\n"
    assert load_one(text, "pod.yaml")["spec"] == {"priority": 1, "schedulerName": "kai-scheduler"}


def test_a_second_merge_key_in_one_mapping_is_refused(parser: str) -> None:
    text = "a: &a {x: 1}\nb: &b {y: 2}\nc:\n  <<: *a\n  <<: *b\n"
    with pytest.raises(YamlInputError, match=r"pod\.yaml:5: .*a second `<<` merge key in one mapping"):
        load_one(text, "pod.yaml")


def test_merging_something_other_than_a_mapping_is_not_valid_yaml(parser: str) -> None:
    with pytest.raises(YamlInputError, match=r"not valid YAML .*expected a mapping or list of mappings for merging"):
        load_one("spec:\n  <<: [{x: 1}, 2]\n", "pod.yaml")


def test_lint_judges_the_gpus_kubectl_would_send_not_the_last_merged_mapping(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pod = tmp_path / "pod.yaml"
    pod.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: hidden, namespace: ml}\nspec:\n  containers:\n"
        "  - name: m\n    image: cuda\n    resources:\n      limits:\n"
        "        <<: [{nvidia.com/gpu: 4}, {nvidia.com/gpu: 0}]\n"
    )
    assert main(["lint", str(pod)]) == 1
    assert "[kai-scheduler-name] spec.schedulerName is unset" in capsys.readouterr().out


def test_in_a_manifest_a_quoted_key_and_a_plain_one_are_one_key_for_the_merge_check(tmp_path: Path) -> None:
    """lint builds a manifest's plain scalars as kubectl does: `"schedulerName"` before a `<<` setting schedulerName
    is the ambiguity above, and two such keys are the same key twice."""
    pod = tmp_path / "pod.yaml"
    pod.write_text(
        'apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  "schedulerName": default-scheduler\n'
        "  <<: {schedulerName: kai-scheduler}\n  containers: []\n"
    )
    assert main(["lint", str(pod)]) == 2
    twice = tmp_path / "twice.yaml"
    twice.write_text(
        'apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  schedulerName: x\n  "schedulerName": y\n'
    )
    assert main(["lint", str(twice)]) == 2
