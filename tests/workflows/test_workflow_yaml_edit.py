"""kaistack.ops.yaml_edit: text-level YAML edits that leave every other byte alone, or refuse."""

from __future__ import annotations

import pytest
import yaml

from kaistack.ops.yaml_edit import YamlEditError, format_scalar, set_values

DOC = """\
# header comment
config:
  kaistack:kai:
    namespace: kai   # why
    version: v0.16.0 # pinned
  # between blocks
  kaistack:tenants:
    - name: a
      queues: [q1]
    - name: b
      vcluster: {syncNodes: true}
  secret:
    secure: v1:AAAA
"""


def test_replacing_a_scalar_keeps_its_trailing_comment():
    """Only the scalar's span changes; the comment on the same line stays."""
    out = set_values(DOC, [(("config", "kaistack:kai", "version"), "v0.17.0")])
    assert out == DOC.replace("version: v0.16.0 # pinned", "version: v0.17.0 # pinned")


def test_missing_keys_are_inserted_after_the_last_entry_at_its_indent():
    """A nested key missing in a block mapping becomes new lines inside that mapping."""
    out = set_values(DOC, [(("config", "kaistack:tenants", 0, "vcluster", "version"), "0.36.1")])
    assert "    - name: a\n      queues: [q1]\n      vcluster:\n        version: 0.36.1\n    - name: b" in out


def test_missing_key_in_flow_mapping_is_appended_inside_the_braces():
    """Flow mappings get `, key: value` before the closing brace."""
    out = set_values(DOC, [(("config", "kaistack:tenants", 1, "vcluster", "version"), "0.36.1")])
    assert "vcluster: {syncNodes: true, version: 0.36.1}" in out


def test_insertion_lands_before_comments_that_belong_to_the_next_block():
    """Trailing comments after a mapping stay with the block that follows them."""
    out = set_values(DOC, [(("config", "kaistack:kai", "queueLabelKey"), "acme/queue")])
    assert "    version: v0.16.0 # pinned\n    queueLabelKey: acme/queue\n  # between blocks\n" in out


def test_values_that_would_change_type_are_quoted():
    """'1.0' must stay a string, so it is written double-quoted."""
    out = set_values(DOC, [(("config", "kaistack:kai", "version"), "1.0")])
    assert yaml.safe_load(out)["config"]["kaistack:kai"]["version"] == "1.0"
    assert 'version: "1.0" # pinned' in out


def test_original_quote_style_is_kept():
    """A single-quoted value stays single-quoted."""
    assert format_scalar("it's", "'") == "'it''s'"


def test_list_items_are_never_created():
    """Creating list items would need the item's identity; refuse instead."""
    with pytest.raises(YamlEditError, match=r"has no item 5"):
        set_values(DOC, [(("config", "kaistack:tenants", 5, "name"), "c")])


def test_replacing_a_mapping_with_a_scalar_is_refused():
    """Only single-line scalars are replaced."""
    with pytest.raises(YamlEditError, match=r"config\.kaistack:kai is not a single-line value"):
        set_values(DOC, [(("config", "kaistack:kai"), "x")])


def test_every_other_value_survives():
    """After several edits the document equals the original with exactly those values set."""
    out = set_values(
        DOC,
        [
            (("config", "kaistack:kai", "version"), "v0.17.0"),
            (("config", "kaistack:tenants", 0, "vcluster", "version"), "0.36.1"),
        ],
    )
    data = yaml.safe_load(out)
    assert data["config"]["secret"] == {"secure": "v1:AAAA"}
    assert data["config"]["kaistack:tenants"][1] == {"name": "b", "vcluster": {"syncNodes": True}}
    assert out.startswith("# header comment\n")


# --- layouts the red-team pass found (each exited 70, or wrote what Pulumi reads differently) ------------


@pytest.mark.parametrize("value", ["y", "n", "on", "1e3", "0o17", "2024-1-2"])
def test_a_value_pulumi_would_read_as_another_type_is_quoted(value):
    """PyYAML reads these as strings (`on` as a boolean), go-yaml v3 (pulumi up) `1e3` and `0o17` as numbers and
    `2024-1-2` as a timestamp, go-yaml v2 `y` and `n` as booleans."""
    out = set_values(DOC, [(("config", "kaistack:tenants", 0, "name"), value)])
    assert f'- name: "{value}"' in out


def test_a_value_with_flow_indicators_is_quoted_inside_a_flow_mapping():
    out = set_values(DOC, [(("config", "kaistack:tenants", 1, "vcluster", "syncNodes"), "a}b,c")])
    assert 'vcluster: {syncNodes: "a}b,c"}' in out


def test_an_anchored_value_is_refused_rather_than_losing_its_anchor():
    doc = "config:\n  kaistack:kai:\n    version: &kv v0.16.0\n  other: *kv\n"
    with pytest.raises(YamlEditError, match=r"is anchored \(&\) or an alias"):
        set_values(doc, [(("config", "kaistack:kai", "version"), "v0.17.0")])


def test_a_mapping_that_merges_its_keys_is_refused():
    """An insert would follow the alias to the merged mapping, elsewhere in the file."""
    doc = "base: &k\n  namespace: kai\nconfig:\n  kaistack:kai:\n    <<: *k\n"
    with pytest.raises(YamlEditError, match=r"takes keys from a merge"):
        set_values(doc, [(("config", "kaistack:kai", "version"), "v0.17.0")])


def test_a_file_only_libyaml_reads_is_refused_by_line():
    doc = "config:\n  kaistack:kai:\n    version: v0.16.0\t# pinned\n"
    with pytest.raises(YamlEditError, match=r"cannot parse the file at line 3"):
        set_values(doc, [(("config", "kaistack:kai", "version"), "v0.17.0")])


@pytest.mark.parametrize("newline", ["\r", "\r\n"])
def test_an_inserted_key_uses_the_files_line_break(newline):
    doc = DOC.replace("\n", newline)
    out = set_values(doc, [(("config", "kaistack:kai", "queueLabelKey"), "acme/queue")])
    assert f"    version: v0.16.0 # pinned{newline}    queueLabelKey: acme/queue{newline}" in out
    assert out.replace(f"    queueLabelKey: acme/queue{newline}", "") == doc


def test_a_replaced_values_str_tag_stays():
    """`!!str v0.16.0` lost its tag: the same data, but not the bytes the user wrote (review)."""
    doc = DOC.replace("version: v0.16.0", "version: !!str v0.16.0")
    out = set_values(doc, [(("config", "kaistack:kai", "version"), "v0.17.0")])
    assert out == doc.replace("!!str v0.16.0", "!!str v0.17.0")


def test_a_tag_of_another_type_goes_with_the_value_it_typed():
    """A string cannot keep `!!int`: the new value is written untagged (a pin is a string)."""
    doc = DOC.replace("namespace: kai   # why", "namespace: !!int 5   # why")
    out = set_values(doc, [(("config", "kaistack:kai", "namespace"), "kai")])
    assert out == DOC


# --- many edits at once -------------------------------------------------------------------------------------


def test_replacements_and_an_insert_in_one_call_change_exactly_those_bytes():
    out = set_values(
        DOC,
        [
            (("config", "kaistack:tenants", 1, "vcluster", "syncNodes"), "no"),
            (("config", "kaistack:kai", "queueLabelKey"), "acme/queue"),
            (("config", "kaistack:kai", "version"), "v0.17.0"),
            (("config", "kaistack:kai", "namespace"), "kai-scheduler"),
        ],
    )
    assert out == (
        DOC.replace("namespace: kai   # why", "namespace: kai-scheduler   # why")
        .replace("version: v0.16.0 # pinned\n", "version: v0.17.0 # pinned\n    queueLabelKey: acme/queue\n")
        .replace("{syncNodes: true}", '{syncNodes: "no"}')
    )


def test_a_path_edited_twice_ends_with_its_last_value():
    path = ("config", "kaistack:kai", "version")
    assert set_values(DOC, [(path, "v0.17.0"), (path, "v0.18.0")]) == DOC.replace("v0.16.0", "v0.18.0")


def test_two_paths_that_reach_one_value_through_an_alias_are_refused():
    doc = "config:\n  base: &b {version: v1}\n  other: *b\n"
    with pytest.raises(YamlEditError, match="two edits reach the same value"):
        set_values(doc, [(("config", "base", "version"), "v2"), (("config", "other", "version"), "v3")])
    assert yaml.safe_load(doc)["config"]["other"] == {"version": "v1"}


def test_values_that_exist_are_all_found_in_one_parse(monkeypatch: pytest.MonkeyPatch):
    """A parse per edit made a promotion of 400 workloads take a minute (each parse reads the whole file)."""
    doc = "config:\n  kaistack:workloads:\n" + "".join(f"    - name: w{i}\n      image: a:{i}\n" for i in range(50))
    composed = []
    real_compose = yaml.compose
    monkeypatch.setattr(yaml, "compose", lambda text: composed.append(1) or real_compose(text))
    out = set_values(doc, [(("config", "kaistack:workloads", i, "image"), f"b:{i}") for i in range(50)])
    assert yaml.safe_load(out)["config"]["kaistack:workloads"][49] == {"name": "w49", "image": "b:49"}
    assert len(composed) == 1
