"""A stack file means the same to kaistack (PyYAML) as to `pulumi up` (go-yaml v3), or it is refused.

Pulumi reads stack files through pulumi/pulumi sdk/go/common/encoding/marshal.go, which imports gopkg.in/yaml.v3
(pulumi/pulumi@1b594989; gopkg.in/yaml.v2 until commit 5666684 of 2022, which an earlier reading of this project
took from an old copy). The readings below are go-yaml@v3.0.1 resolve.go (booleans and nulls from the map at :64-79,
only true/false spelled three ways; no base 60; ParseInt/ParseUint with base 0; yamlStyleFloat; timestamps by
allowedTimestampFormats at :294-326) and decode.go (an interface{} target takes the resolved value: a time.Time).
kubectl's go-yaml v2 readings stay in the second table (lint reads manifests that way).
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

import pytest

from kaistack.declaration.go_yaml import GoTimestamp, go_yaml_v2
from kaistack.declaration.parse import ConfigError
from kaistack.declaration.pulumi_yaml import go_yaml_v3, refuse_ambiguous_scalars
from kaistack.declaration.yaml_load import YamlInputError
from kaistack.stack.files import stack_settings

GO_YAML_V2 = [
    ("y", True),
    ("N", False),
    ("yes", True),
    ("off", False),
    ("~", None),
    ("1:30", "1:30"),  # base 60 "purposefully unsupported"
    ("010", 8),
    ("08", 8.0),  # not an octal integer, so yamlStyleFloat
    ("0o17", 15),
    ("0x1F", 31),
    ("0b101", 5),
    ("1_000", 1000),
    ("1e3", 1000.0),
    ("-.5", -0.5),
    ("1e400", "1e400"),  # ParseFloat's range error leaves a string
    ("18446744073709551615", 2**64 - 1),  # ParseUint
    ("2024-01-01", "2024-01-01"),
    ("v0.17.0", "v0.17.0"),
    ("500m", "500m"),
]


@pytest.mark.parametrize(("value", "expected"), GO_YAML_V2, ids=[v for v, _ in GO_YAML_V2])
def test_go_yaml_v2_reads_a_plain_scalar_as_kubectl_does(value: str, expected: Any) -> None:
    got = go_yaml_v2(value)
    assert type(got) is type(expected)
    assert got == expected


GO_YAML_V3 = [
    ("y", "y"),
    ("N", "N"),
    ("yes", "yes"),
    ("off", "off"),
    ("On", "On"),
    ("true", True),
    ("FALSE", False),
    ("~", None),
    ("1:30", "1:30"),
    ("010", 8),
    ("08", 8.0),
    ("0o17", 15),
    ("-0b101", -5),
    ("1_000", 1000),
    ("1e3", 1000.0),
    ("1e400", "1e400"),
    ("2024-01-01", GoTimestamp("2024-01-01")),
    ("2024-1-2", GoTimestamp("2024-1-2")),  # Go's layout "2006-1-2" takes one-digit fields
    ("2024-02-30", "2024-02-30"),  # time.Parse range-checks the day
    ("2024-01-01T10:00:00Z", GoTimestamp("2024-01-01T10:00:00Z")),
    ("2024-01-01 10:00:00.5", GoTimestamp("2024-01-01 10:00:00.5")),
    ("2024-01-01T10:00:00", "2024-01-01T10:00:00"),  # after T the layout requires a zone
    ("2024-01-01T10:00:00,5Z", GoTimestamp("2024-01-01T10:00:00,5Z")),  # Go 1.17+: a comma before the fraction
    ("2024-01-01T10:00:00+24:00", GoTimestamp("2024-01-01T10:00:00+24:00")),  # Go allows a 24-hour offset
    ("2024-01-01T10:00:00+25:00", "2024-01-01T10:00:00+25:00"),
    ("2024-01-01 10:00:00Z", "2024-01-01 10:00:00Z"),  # after a space it allows none
    ("v0.17.0", "v0.17.0"),
    ("500m", "500m"),
]


@pytest.mark.parametrize(("value", "expected"), GO_YAML_V3, ids=[v for v, _ in GO_YAML_V3])
def test_go_yaml_v3_reads_a_plain_scalar_as_pulumi_does(value: str, expected: Any) -> None:
    got = go_yaml_v3(value)
    assert type(got) is type(expected)
    assert got == expected


@pytest.mark.parametrize(
    ("value", "ours", "theirs"),
    [
        ("1:30", "90", "'1:30'"),
        ("yes", "True", "'yes'"),
        ("off", "False", "'off'"),
        ("1e3", "'1e3'", "1000.0"),
        ("2024-01-01", "the date 2024-01-01", "the timestamp 2024-01-01"),
    ],
)
def test_a_value_the_two_parsers_read_differently_is_refused_with_both_readings(
    value: str, ours: str, theirs: str
) -> None:
    with pytest.raises(YamlInputError, match="to kaistack's YAML parser") as raised:
        refuse_ambiguous_scalars(f"config:\n  kaistack:x:\n    count: {value}\n", "Pulumi.dev.yaml")
    message = str(raised.value)
    assert message.startswith(f"Pulumi.dev.yaml:3: {value} is {ours}")
    assert f"but {theirs}" in message
    assert f"quote it ('{value}')" in message


def test_a_value_both_read_alike_passes_and_a_quoted_one_is_never_ambiguous() -> None:
    refuse_ambiguous_scalars("a: 010\nb: y\nc: '1:30'\nd: 0x1F\ne: 8Gi\nf: 2\ng: 'yes'\nh: true\n", "f.yaml")


def test_y_is_text_to_both_since_pulumi_reads_with_go_yaml_v3() -> None:
    """Under go-yaml v2 `y` was a boolean to Pulumi and refused here; v3 and PyYAML both read the letter."""
    text = "config:\n  kaistack:workloads:\n    - name: w\n      args: [--flag, y]\n"
    refuse_ambiguous_scalars(text, "Pulumi.dev.yaml")


def test_a_stack_file_with_a_base_60_count_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"1:30 is 90 to kaistack's YAML parser .* but '1:30' to Pulumi's"):
        stack_settings("config:\n  kaistack:cluster:\n    nodePools: [{name: gpu, count: 1:30}]\n", "Pulumi.dev.yaml")


def test_the_date_pyyaml_reads_is_named_as_the_date_it_would_be() -> None:
    with pytest.raises(YamlInputError, match=re.escape(f"is the date {date(2024, 1, 1).isoformat()} to kaistack's")):
        refuse_ambiguous_scalars("config:\n  kaistack:workloads:\n    - image: 2024-01-01\n", "f.yaml")


def test_every_ambiguous_value_is_named_at_once_in_file_order() -> None:
    text = "config:\n  kaistack:x:\n    a: yes\n    b: 2026-01-01\n    c: 1:30\n"
    with pytest.raises(YamlInputError) as raised:
        refuse_ambiguous_scalars(text, "Pulumi.dev.yaml")
    lines = str(raised.value).splitlines()
    assert [line.split(" ", 1)[0] for line in lines] == [
        "Pulumi.dev.yaml:3:",
        "Pulumi.dev.yaml:4:",
        "Pulumi.dev.yaml:5:",
    ]


def test_merge_keys_are_read_alike_by_both_parsers() -> None:
    """`<<` merges in go-yaml v3 (resolve.go:77) as in PyYAML; it used to crash the check (no constructor)."""
    text = "config:\n  kaistack:q:\n    gpu: &unl {quota: -1, limit: -1}\n    cpu:\n      <<: *unl\n"
    refuse_ambiguous_scalars(text, "f.yaml")


def test_other_programs_namespaces_and_top_level_values_are_not_kaistacks_to_judge() -> None:
    """kaistack reads kaistack:* and aws:region; Pulumi decodes a top-level value as a string first (config.Value),
    keeping a scalar's text (go-yaml decode.go: a string target takes the raw value)."""
    text = "config:\n  myapp:releaseDate: 2024-01-01\n  myapp:deep: {flag: yes}\n  kaistack:note: 1:30\n"
    refuse_ambiguous_scalars(text, "f.yaml")


def test_text_go_cannot_read_as_a_float_is_text_to_both() -> None:
    for go_yaml in (go_yaml_v2, go_yaml_v3):
        assert go_yaml(".\u0661") == ".\u0661"  # an Arabic-Indic digit: Python's float takes it, Go's does not
        assert go_yaml(".5\u00a0") == ".5\u00a0"


def _raw(pool: dict[str, Any], queue: str | bool = "q") -> dict[str, Any]:
    return {
        "cluster": {"provider": "kind", "nodePools": [{"name": "gpu", "gpus": 2, **pool}]},
        "gpu": {"mode": "fake"},
        "queues": [{"name": queue}],
    }


def test_a_boolean_where_a_number_goes_is_refused_not_read_as_one() -> None:
    """A boolean reaching the model (`gpus: true`) is refused: pydantic's lax mode would take true for 1 GPU."""
    from kaistack.declaration.parse import parse_config

    with pytest.raises(ConfigError, match=r"nodePools\[0\]\.gpus: expected a number, got a boolean \(YAML reads"):
        parse_config(_raw({"gpus": True}))
    assert parse_config(_raw({"gpus": 2})).cluster.node_pools[0].gpus == 2


def test_a_boolean_among_a_mappings_numbers_is_refused_too() -> None:
    from kaistack.declaration.parse import parse_config

    mixed = {"migStrategy": "mixed", "mig": {"nvidia.com/mig-1g.10gb": True}}
    with pytest.raises(ConfigError, match=r"nodePools\[0\]\.mig: expected a number, got a boolean"):
        parse_config(_raw(mixed))


def test_a_boolean_where_a_name_goes_says_to_quote_the_word() -> None:
    from kaistack.declaration.parse import parse_config

    with pytest.raises(ConfigError, match=r"queues\[0\]\.name: expected a string, got false .* quote the word"):
        parse_config(_raw({}, queue=False))


def test_an_unquoted_off_among_allowed_words_says_to_quote_it() -> None:
    """A boolean false where a word goes (`sharing: off` unquoted reads so in PyYAML; the stack file check refuses it
    first, as go-yaml v3 reads the word): the refusal listing 'off' among the allowed values said "got False"."""
    from kaistack.declaration.parse import parse_config

    raw = {**_raw({}), "kai": {"sharing": False}}
    with pytest.raises(ConfigError, match=r"kai\.sharing: Input should be 'off', .*, got false \(YAML reads .* quote"):
        parse_config(raw)
    assert parse_config({**_raw({}), "kai": {"sharing": "off"}}).kai.sharing == "off"


def test_a_stack_file_with_two_ambiguous_values_is_one_error_with_two_problems() -> None:
    with pytest.raises(ConfigError, match=r"\(2 problems\)") as raised:
        stack_settings("config:\n  kaistack:cluster:\n    a: yes\n    b: no\n", "Pulumi.dev.yaml")
    assert [p.split(" ", 1)[0] for p in raised.value.problems] == ["Pulumi.dev.yaml:3:", "Pulumi.dev.yaml:4:"]


def test_a_value_a_merge_repeats_is_named_once_from_the_loaded_tree() -> None:
    """stack_settings hands the check the tree it loaded (merges resolved), not a second parse of the file: the
    anchored value is in both mappings there, and named once, where it is written."""
    text = "config:\n  kaistack:q:\n    gpu: &a {quota: 1:30}\n    cpu:\n      <<: *a\n"
    with pytest.raises(ConfigError) as raised:
        stack_settings(text, "Pulumi.dev.yaml")
    assert [p for p in raised.value.problems if "1:30" in p] == [
        "Pulumi.dev.yaml:3: 1:30 is 90 to kaistack's YAML parser (PyYAML, YAML 1.1) but '1:30' to Pulumi's "
        "(go-yaml v3): quote it ('1:30') for a string"
    ]
