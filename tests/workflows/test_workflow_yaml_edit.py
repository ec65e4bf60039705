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
