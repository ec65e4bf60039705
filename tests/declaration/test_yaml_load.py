"""The one YAML loader's guards: aliases may not multiply a document, while a large plain one is read."""

from __future__ import annotations

import pytest
import yaml

from kaistack.declaration import limits, yaml_load
from kaistack.declaration.yaml_load import YamlInputError, load_documents, load_json, load_one


def _laughs(levels: int) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_aliases_that_multiply_a_document_are_refused_at_their_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_ALIAS_EXPANSION", 1_000)
    with pytest.raises(YamlInputError, match=r"bomb\.yaml:3: document 1: aliases expand to more than 1000 nodes"):
        load_one(_laughs(3), "bomb.yaml")


def test_a_few_aliases_under_the_limit_are_expanded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_ALIAS_EXPANSION", 1_000)
    data = load_one(_laughs(2), "ok.yaml")
    assert data["a1"] == [["x"] * 10] * 10


def test_a_plain_document_larger_than_the_alias_limit_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    # A `kubectl get -A -o yaml` of a big cluster is one List of millions of nodes and no alias at all.
    monkeypatch.setattr(limits, "MAX_ALIAS_EXPANSION", 1_000)
    text = "items:\n" + "".join(f"- {{name: pod-{i}, labels: {{a: b}}}}\n" for i in range(2_000))
    assert len(load_one(text, "list.yaml")["items"]) == 2_000


def test_an_alias_to_its_own_open_anchor_is_a_cycle() -> None:
    with pytest.raises(YamlInputError, match=r"alias \*a refers to its own anchor \(a cycle\)"):
        load_one("a: &a [1, *a]\n", "cycle.yaml")


def test_a_key_twice_in_one_mapping_is_refused_at_its_first_repeat() -> None:
    """PyYAML (and Pulumi's go-yaml v2, decode.go:686 refusing only in strict mode) let the last win silently;
    kubectl's strict field validation refuses. A repeat is a mistake (mis-indentation, mostly): refused."""
    text = "metadata:\n  name: a\n  name: b\nspec:\n  x: 1\n  x: 2\n"
    with pytest.raises(
        YamlInputError,
        match=r"^f\.yaml:3: document 1: key 'name' appears twice in one mapping \(check the indentation\)$",
    ):
        load_one(text, "f.yaml")


def test_the_same_key_in_two_mappings_and_a_merge_override_are_not_duplicates() -> None:
    text = "base: &b {name: a, gpus: 1}\nnode: {<<: *b, gpus: 2}\nother: {name: a}\n"
    assert load_one(text, "f.yaml")["node"] == {"name": "a", "gpus": 2}


def test_a_number_key_and_a_quoted_one_are_different_keys() -> None:
    assert load_one("1: int\n'1': str\n", "f.yaml") == {1: "int", "1": "str"}


def test_a_duplicate_inside_an_aliased_mapping_is_found() -> None:
    with pytest.raises(YamlInputError, match="key 'k' appears twice"):
        load_one("a: &x {k: 1, k: 2}\nb: *x\n", "f.yaml")


@pytest.mark.parametrize("keys", [("1", "0x1"), ("on", "true"), ("1", "true")])
def test_keys_written_differently_that_build_the_same_key_are_a_repeat(keys: tuple[str, str]) -> None:
    """The dict PyYAML builds would keep only the last: the same silent loss as a key written twice."""
    with pytest.raises(YamlInputError, match=f"key '{keys[1]}' appears twice in one mapping"):
        load_one(f"m:\n  {keys[0]}: a\n  {keys[1]}: b\n", "f.yaml")


# --- values: the byte limits alone let a file of `{}`s build tens of millions of objects ---------------------


def test_yaml_with_more_values_than_the_limit_is_refused_at_the_line_that_passes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(limits, "MAX_YAML_VALUES", 10)
    text = "note:\n" + "".join("- {}\n" for _ in range(20))  # the mapping, its key, the list, then one a line
    with pytest.raises(YamlInputError, match=r"junk\.yaml:9: document 1: more than 10 values in the input"):
        load_one(text, "junk.yaml")


def test_yaml_values_are_counted_over_every_document_of_a_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_YAML_VALUES", 14)
    text = "".join(f"---\nkind: Pod\nmetadata: {{name: p{i}}}\n" for i in range(3))  # 7 values each, keys too
    documents, errors = load_documents(text, "pods.yaml")
    assert [d.data["metadata"]["name"] for d in documents] == ["p0", "p1"]
    assert [e.problem for e in errors] == ["document 3: more than 14 values in the input"]


def test_yaml_at_the_limit_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_YAML_VALUES", 23)
    assert len(load_one("note:\n" + "".join("- {}\n" for _ in range(20)), "ok.yaml")["note"]) == 20


def test_json_with_more_values_than_the_limit_is_refused_before_it_is_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_JSON_VALUES", 10)
    with pytest.raises(YamlInputError, match=r"big\.json: more than 10 values \(numbers, strings, objects, lists\)"):
        load_json('{"note": [' + ",".join(["{}"] * 10) + "]}", "big.json")


def test_commas_and_brackets_inside_json_strings_are_not_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_JSON_VALUES", 10)
    text = '{"name": "a,b,c,d,e,f,g,h,i,j,k,[{", "quote": "x\\",y,z", "n": [1, 2]}'
    assert load_json(text, "ok.json")["quote"] == 'x",y,z'


# --- lone surrogates -----------------------------------------------------------------------------


@pytest.mark.parametrize("escape", ["\\ud800", "\\udc80", "\\uDBFF"])
def test_a_lone_surrogate_in_a_json_string_is_refused_naming_its_key_path(escape: str) -> None:
    """json decodes it; printed later it crashed the table (UnicodeEncodeError) or wrote a raw byte."""
    text = '{"nodes": [{"name": "n' + escape + '"}]}'
    with pytest.raises(YamlInputError, match=r"^s\.json: nodes\[0\]\.name: n\\u.* holds a lone UTF-16 surrogate"):
        load_json(text, "s.json")


def test_a_lone_surrogate_in_a_json_key_is_refused() -> None:
    with pytest.raises(YamlInputError, match=r"^s\.json: jobs\[1\]\.x\\udc80: the key holds a lone UTF-16 surrogate"):
        load_json('{"jobs": [{}, {"x\\udc80": 1}]}', "s.json")


def test_a_surrogate_pair_in_json_is_one_character_and_read() -> None:
    assert load_json('{"note": "\\ud83d\\ude00"}', "s.json") == {"note": "\U0001f600"}


@pytest.mark.parametrize("loader", ["libyaml", "pure-python"])
@pytest.mark.parametrize("escape", ["\\ud800", "\\U0000dc80"])
def test_a_surrogate_escape_in_yaml_is_refused_with_or_without_libyaml(
    loader: str, escape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """libyaml refuses the escape; PyYAML's own scanner (used where libyaml is missing) builds the string."""
    refusal = "holds a lone UTF-16 surrogate"
    if loader == "pure-python":
        monkeypatch.setattr(yaml_load, "_Loader", yaml.SafeLoader)
    elif hasattr(yaml, "CSafeLoader"):
        refusal = "found invalid Unicode character escape code"
    else:
        pytest.skip("libyaml is not installed")
    with pytest.raises(YamlInputError, match=refusal):
        load_one(f'kaistack:cluster:\n  name: "x{escape}"\n', "Pulumi.dev.yaml")


def test_escaped_quotes_after_an_unclosed_one_are_counted_in_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """A single pattern for strings with escapes backtracks quadratically here (48 KB took 6.7 s, 15 MB days):
    escapes are taken out first, then strings."""
    monkeypatch.setattr(limits, "MAX_JSON_VALUES", 1_000)
    with pytest.raises(YamlInputError, match="more than 1,000 values"):
        load_json('"' + '\\",' * 100_000, "evil.json")


def test_an_escaped_backslash_before_a_closing_quote_ends_the_string(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_JSON_VALUES", 10)
    assert load_json('{"a": "x\\\\", "b": ",,,,,,,,,,,,", "c": [1, 2]}', "ok.json") == {
        "a": "x\\",
        "b": ",,,,,,,,,,,,",
        "c": [1, 2],
    }


def test_a_number_too_long_to_read_is_refused_at_its_own_line() -> None:
    """Python refuses int() of more than 4300 digits; the message pointed at the document's first line."""
    text = "config:\n  a: 1\n  b:\n    - x\n    - " + "9" * 5000 + "\n"
    with pytest.raises(YamlInputError, match=r"^f\.yaml:5: document 1: cannot read a value: a number longer than 4300"):
        load_one(text, "f.yaml")


def test_a_number_too_long_to_read_under_an_alias_is_found_once() -> None:
    text = "a: &n [" + "9" * 5000 + "]\nb: *n\n"
    with pytest.raises(YamlInputError, match=r"^f\.yaml:1: document 1: cannot read a value"):
        load_one(text, "f.yaml")


@pytest.mark.parametrize("end", ["...\n", "...\r\n", "... # end\n", "...\n...\n# trailing comment\n"])
def test_a_document_end_marker_at_the_end_of_the_stream_is_read_as_nothing(end: str) -> None:
    """`...` may close any document, the last one too (go-yaml/yaml@v2.4.0 parserc.go:205-213 skips extra ends)."""
    assert load_one(f"config:\n  kaistack:a: 1\n{end}", "stack") == {"config": {"kaistack:a": 1}}


def test_content_after_a_document_end_without_a_new_start_is_refused_not_dropped() -> None:
    """After `...` only `---` may start a document: go-yaml says "did not find expected <document start>"
    (go-yaml/yaml@v2.4.0 parserc.go:240-248), and PyYAML refuses it too; a loader that dropped it would read less
    than the file says."""
    documents, errors = load_documents("a: 1\n...\nhidden: 2\n---\nc: 3\n", "manifests")
    assert [d.data for d in documents] == [{"a": 1}, {"c": 3}]
    assert [(e.index, e.line) for e in errors] == [(2, 2)]
    with pytest.raises(YamlInputError, match="manifests:2: not valid YAML"):
        load_one("a: 1\n...\nhidden: 2\n", "manifests")
    with pytest.raises(yaml.YAMLError):  # PyYAML's own verdict on the same text
        list(yaml.safe_load_all("a: 1\n...\nhidden: 2\n"))


def test_a_stream_that_starts_with_a_document_end_is_refused_as_the_parsers_refuse_it() -> None:
    with pytest.raises(YamlInputError, match="not valid YAML"):
        load_one("...\n", "stack")
    with pytest.raises(yaml.YAMLError):
        list(yaml.safe_load_all("...\n"))


def test_a_header_of_comments_before_the_first_marker_is_no_document() -> None:
    """A licence or generator note above the first `---` is no document to PyYAML: the documents after it are
    numbered from 1 (lint said "document 2" of a file's first object) and it does not count against the limit."""
    docs, errors = load_documents("# Copyright header\n# generated\n---\na: 1\n---\nb: 2\n", "s.yaml")
    assert errors == []
    assert [(d.index, d.line, d.data) for d in docs] == [(1, 4, {"a": 1}), (2, 6, {"b": 2})]


def test_standard_input_closed_is_an_input_error_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    """`kaistack lint - <&-`: Python starts with sys.stdin None; reading "-" was an AttributeError (exit 70)."""
    monkeypatch.setattr("sys.stdin", None)
    with pytest.raises(YamlInputError, match="cannot read standard input: it is closed"):
        yaml_load.read_text("-", max_bytes=1024)
