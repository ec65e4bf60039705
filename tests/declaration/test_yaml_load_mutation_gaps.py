"""The one YAML/JSON loader's bounds and refusals, one each: the cases a mutation run of declaration/yaml_load.py
found no test for (a bound off by one or not enforced, a refusal that crashed or was dropped, an error that names
the wrong line, document or value, text that is valid refused). Each passes here and failed on its mutant."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from test_yaml_load import _laughs

from kaistack.declaration import limits, yaml_load
from kaistack.declaration.yaml_load import YamlInputError, load_documents, load_file, load_json, load_one, read_text

# --- reading the bytes ---------------------------------------------------------------------------------------


def test_a_file_of_exactly_the_limit_is_read(tmp_path: Path) -> None:
    """The limit is the largest file kaistack reads, not the first one it refuses."""
    path = tmp_path / "f.yaml"
    path.write_text("a: 123456\n")  # 10 bytes
    assert read_text(path, max_bytes=10) == "a: 123456\n"


def test_a_file_over_the_limit_read_without_naming_what_it_is_is_called_a_file(tmp_path: Path) -> None:
    """`Pulumi.yaml` and `PulumiPolicy.yaml` are read without a `what`: the message still says what was too big."""
    path = tmp_path / "Pulumi.yaml"
    path.write_text("name: project\n")
    with pytest.raises(YamlInputError, match=r"Pulumi\.yaml: file is 14 bytes; kaistack reads at most 10$"):
        load_file(path, max_bytes=10)


def test_stdin_longer_than_the_limit_is_refused_not_cut_short(monkeypatch: pytest.MonkeyPatch) -> None:
    """`kubectl get pods -o yaml | kaistack lint -`: a stream cut at the limit would be checked as a shorter file."""
    monkeypatch.setattr(sys, "stdin", SimpleNamespace(buffer=io.BytesIO(b"a: 12345678\n")))
    with pytest.raises(YamlInputError, match=r"^-: file is larger than 10 bytes; kaistack reads at most that$"):
        read_text("-", max_bytes=10)


# --- documents of a stream -----------------------------------------------------------------------------------


def test_documents_past_the_limit_are_refused_once_at_the_first_one_over(monkeypatch: pytest.MonkeyPatch) -> None:
    """The documents up to the limit are read; the rest is one error, not silently dropped nor one error each."""
    monkeypatch.setattr(limits, "MAX_DOCUMENTS", 2)
    documents, errors = load_documents("".join(f"---\nn: {i}\n" for i in range(4)), "many.yaml")
    assert [d.data for d in documents] == [{"n": 0}, {"n": 1}]
    assert [(e.index, e.line, e.problem) for e in errors] == [(3, 5, "document 3: more than 2 documents")]


def test_two_documents_where_one_is_expected_are_refused() -> None:
    """A stack file or scenario with a stray `---` would otherwise be read as its first half."""
    with pytest.raises(YamlInputError, match=r"^s\.yaml: 2 YAML documents; expected one$"):
        load_one("a: 1\n---\nb: 2\n", "s.yaml")


def test_a_single_document_input_with_two_broken_documents_reports_the_first() -> None:
    """kubeconfig errors give only the line (a token may be on it): it must be the first broken document's."""
    with pytest.raises(YamlInputError) as caught:
        load_one("a: [\n---\nb: {\n", "s.yaml")
    assert (caught.value.line, str(caught.value)) == (2, f"s.yaml:2: {caught.value.problem}")
    assert caught.value.problem.startswith("not valid YAML (document 1)")


def test_blank_lines_before_the_first_marker_are_not_a_document() -> None:
    """Errors name documents by number: the first one a user wrote is document 1."""
    documents, errors = load_documents("\n\n---\na: 1\n", "s.yaml")
    assert ([d.index for d in documents], errors) == ([1], [])


def test_each_document_s_line_is_where_it_starts_in_the_file() -> None:
    """lint points at a manifest by this line."""
    documents, _ = load_documents("a: 1\n---\nb: 2\n", "s.yaml")
    assert [d.line for d in documents] == [1, 3]


@pytest.mark.parametrize("text", ["a: 1\n...\n", "a: 1\n...\n\n# end\n\n"], ids=["on-line-2", "blank-lines-after"])
def test_a_document_end_marker_followed_by_nothing_ends_the_stream(text: str) -> None:
    assert load_one(text, "s.yaml") == {"a": 1}


# --- bounds on what is built ---------------------------------------------------------------------------------


def test_yaml_nested_one_level_past_the_limit_is_refused_at_its_line() -> None:
    """PyYAML's composer recurses once a level: the bound is what keeps deep input from crashing it."""
    text = "x: 1\ny: " + "[" * 100 + "]" * 100 + "\n"  # the mapping and 100 lists: 101 levels
    with pytest.raises(YamlInputError, match=r"^s\.yaml:2: document 1: nested deeper than 100 levels$"):
        load_one(text, "s.yaml")


@pytest.mark.parametrize(
    ("text", "nodes"),
    [(_laughs(2), 110), ("s: &s x\nl: [*s, *s, *s]\n", 3)],
    ids=["lists", "scalars"],
)
def test_aliases_that_expand_to_exactly_the_limit_are_read(
    text: str, nodes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each alias adds the nodes it stands for: a list's own node and its items; a scalar's one node."""
    monkeypatch.setattr(limits, "MAX_ALIAS_EXPANSION", nodes)
    assert load_one(text, "ok.yaml") is not None


@pytest.mark.parametrize(
    ("text", "nodes"),
    [(_laughs(2), 110), ("s: &s x\nl: [*s, *s, *s]\n", 3)],
    ids=["lists", "scalars"],
)
def test_aliases_that_expand_one_node_past_the_limit_are_refused(
    text: str, nodes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_ALIAS_EXPANSION", nodes - 1)
    with pytest.raises(YamlInputError, match=f"aliases expand to more than {nodes - 1} nodes"):
        load_one(text, "bomb.yaml")


def test_an_alias_counts_the_nodes_of_lists_nested_inside_its_anchor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wrapping a bomb's lists in one more list must not hide their items from the count."""
    monkeypatch.setattr(limits, "MAX_ALIAS_EXPANSION", 20)
    text = "a: &a [[x, x, x, x, x, x, x, x, x, x]]\nb: [*a, *a]\n"  # 12 nodes each
    with pytest.raises(YamlInputError, match=r"bomb\.yaml:2: document 1: aliases expand to more than 20 nodes"):
        load_one(text, "bomb.yaml")


# --- YAML refusals and their messages ------------------------------------------------------------------------


@pytest.mark.parametrize("value", [".nan", ".NaN", ".inf", "-.Inf", "+.INF"])
def test_a_yaml_nan_or_infinity_is_refused_at_its_line(value: str) -> None:
    """kaistack's numbers are finite, and JSON output cannot carry these."""
    with pytest.raises(YamlInputError, match=rf"^s\.yaml:2: document 1: \{value} is not a number kaistack accepts"):
        load_one(f"x: 1\ny: {value}\n", "s.yaml")


def test_a_nan_or_infinity_written_as_text_is_read_as_text() -> None:
    """Quoted or tagged `!!str`, `.nan` is a string, as YAML says: nothing non-finite is built."""
    assert load_one("a: '.nan'\nb: !!str .inf\n", "s.yaml") == {"a": ".nan", "b": ".inf"}


def test_a_cycle_is_refused_at_the_alias_s_line() -> None:
    with pytest.raises(YamlInputError, match=r"^s\.yaml:2: document 1: alias \*a refers to its own anchor"):
        load_one("x: 1\na: &a [1, *a]\n", "s.yaml")


def test_an_alias_to_no_anchor_is_invalid_yaml_not_a_crash() -> None:
    """The composer's own refusal: exit 2 naming the line, not an internal error."""
    with pytest.raises(
        YamlInputError, match=r"^s\.yaml:2: not valid YAML \(document 1\): found undefined alias( 'nope')?$"
    ):
        load_one("x: 1\na: *nope\n", "s.yaml")


def test_an_error_without_an_indentation_cause_gets_no_indentation_hint() -> None:
    with pytest.raises(YamlInputError) as caught:
        load_one("a: *nope\n", "s.yaml")
    assert "check the indentation" not in str(caught.value)


def test_a_control_character_is_refused_at_its_line_with_its_code() -> None:
    """The line counts the blank lines before it too (the reader reports a character offset, not a line)."""
    with pytest.raises(YamlInputError, match=r"^s\.yaml:3: not valid YAML \(document 1\): control character #x0007 is"):
        load_one("\na: 1\nb: \x07\n", "s.yaml")


def test_a_parse_error_says_what_was_being_parsed() -> None:
    with pytest.raises(
        YamlInputError, match=r"^s\.yaml:2: not valid YAML \(document 1\): while parsing a flow sequence"
    ):
        load_one("a: [1, 2\n", "s.yaml")


def test_a_tab_that_indents_is_named_as_the_cause() -> None:
    """libyaml says "found character that cannot start any token": the tab is nowhere in its words."""
    with pytest.raises(YamlInputError, match=r"cannot start any token \(tabs cannot indent YAML\)$"):
        load_one("a:\n\tb: 1\n", "s.yaml")


def test_a_key_indented_less_than_its_siblings_is_named_as_indentation_without_libyaml(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PyYAML's own parser (where libyaml is missing) says "expected <block end>"."""
    monkeypatch.setattr(yaml_load, "_Loader", yaml.SafeLoader)
    with pytest.raises(YamlInputError, match=r"^s\.yaml:3: .*expected <block end>.* \(check the indentation\)$"):
        load_one("a:\n  b: 1\n c: 2\n", "s.yaml")


# --- JSON ----------------------------------------------------------------------------------------------------


def test_json_nested_one_level_past_the_limit_is_refused() -> None:
    with pytest.raises(YamlInputError, match=r"^d\.json: nested deeper than 100 levels$"):
        load_json("[" * 101 + "]" * 101, "d.json")


def test_json_nested_exactly_to_the_limit_is_read() -> None:
    assert load_json("[" * 100 + "]" * 100, "d.json") is not None


def test_json_nested_past_what_the_parser_can_recurse_is_refused_not_a_crash() -> None:
    with pytest.raises(YamlInputError, match=r"^d\.json: nested deeper than 100 levels$"):
        load_json("[" * 100_000 + "]" * 100_000, "d.json")


def test_a_json_number_too_long_to_convert_is_invalid_json_not_a_crash() -> None:
    with pytest.raises(YamlInputError, match=r"^d\.json: not valid JSON: Exceeds the limit \(4300 digits\)"):
        load_json('{"n": ' + "1" * 5000 + "}", "d.json")


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_json_s_nan_and_infinity_constants_are_refused(constant: str) -> None:
    """Python's json reads them (they are not JSON); kaistack's JSON output could not write them back."""
    with pytest.raises(YamlInputError, match=rf"^d\.json: {constant} is not a number kaistack accepts"):
        load_json('{"a": [' + constant + "]}", "d.json")


@pytest.mark.parametrize("text", ["1e309", "[1e309]", '{"a": {"b": [-1e309]}}'], ids=["top", "item", "nested"])
def test_a_json_number_too_large_for_a_float_is_refused_wherever_it_is(text: str) -> None:
    """json reads `1e309` as infinity, not as an error."""
    with pytest.raises(YamlInputError, match=r"^d\.json: -?inf is not a number kaistack accepts"):
        load_json(text, "d.json")


def test_a_json_document_that_is_one_finite_number_is_read() -> None:
    assert load_json("0.5", "d.json") == 0.5


def test_json_one_value_past_the_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The list and its ten numbers are eleven values: one past a limit of ten."""
    monkeypatch.setattr(limits, "MAX_JSON_VALUES", 10)
    with pytest.raises(YamlInputError, match=r"^d\.json: more than 10 values"):
        load_json("[" + ",".join(["1"] * 10) + "]", "d.json")


def test_an_escaped_quote_does_not_make_a_string_s_commas_count_as_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_JSON_VALUES", 10)
    assert load_json('{"a": "\\"", "b": ",,,,,,,,,,,,"}', "d.json") == {"a": '"', "b": ",,,,,,,,,,,,"}


# --- lone surrogates -----------------------------------------------------------------------------------------


def test_a_json_document_that_is_one_string_with_a_lone_surrogate_is_named_as_the_document() -> None:
    with pytest.raises(YamlInputError, match=r"^d\.json: the document: \\ud800 holds a lone UTF-16 surrogate"):
        load_json('"\\ud800"', "d.json")


def test_a_long_value_with_a_lone_surrogate_is_shown_cut_to_80_characters() -> None:
    """The error stays one readable line however long the string is."""
    with pytest.raises(YamlInputError, match=r"^d\.json: a: x{80} holds a lone UTF-16 surrogate"):
        load_json('{"a": "' + "x" * 100 + '\\ud800"}', "d.json")


def test_a_number_key_beside_text_that_looks_like_a_surrogate_escape_is_read() -> None:
    """`'C:\\ud800'` in single quotes is a backslash and letters: the check for lone surrogates runs, and must
    pass over keys that are not strings."""
    assert load_one("1: a\nnote: 'C:\\ud800'\n", "s.yaml") == {1: "a", "note": "C:\\ud800"}


def test_a_lone_surrogate_in_a_later_document_is_refused_at_that_document_s_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without libyaml, PyYAML builds the string; the error names the document and the line it starts on."""
    monkeypatch.setattr(yaml_load, "_Loader", yaml.SafeLoader)
    with pytest.raises(YamlInputError, match=r"^s\.yaml:3: document 2: b: x\\ud800 holds a lone UTF-16 surrogate"):
        load_one('a: 1\n---\nb: "x\\ud800"\n', "s.yaml")
