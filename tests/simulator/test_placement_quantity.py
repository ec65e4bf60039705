"""Kubernetes quantities parse once into exact integers (millicores, bytes)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from placement.quantity import cpu_millis, memory_bytes, parse_quantity


@pytest.mark.parametrize(
    ("text", "millis"),
    [("500m", 500), ("1", 1000), ("1.5", 1500), ("2000", 2_000_000), (2, 2000), ("0.001", 1), ("1k", 1_000_000)],
)
def test_cpu_quantity_in_millicores(text: str | int, millis: int) -> None:
    assert cpu_millis(text) == millis


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("20G", 20 * 10**9),
        ("16Gi", 16 * 2**30),
        ("1Mi", 2**20),
        ("1e3", 1000),
        ("1.5Gi", 3 * 2**29),
        ("2000", 2000),
        ("1Ki", 1024),
    ],
)
def test_memory_quantity_in_bytes(text: str, size: int) -> None:
    assert memory_bytes(text) == size


def test_quantity_is_exact_not_float() -> None:
    assert parse_quantity("0.1") * 3 == Fraction(3, 10)


def test_cpu_millis_rounds_up_like_kubernetes() -> None:
    # Kubernetes rounds a sub-milli CPU request up to the next millicore (MilliValue rounds away from 0).
    assert cpu_millis("0.0001") == 1


# Digits other than ASCII 0-9 (Arabic-Indic, Devanagari, fullwidth): apimachinery's parseQuantityString
# scans bytes '0'..'9' only (k8s.io/apimachinery v0.35 pkg/api/resource/quantity.go), while Python's \d matches them.
@pytest.mark.parametrize("bad", ["", "abc", "1.2.3", "5Q", "--1", "1 G", "\u0661", "\u0968Gi", "\uff11", "1e\u0663"])
def test_malformed_quantity_names_the_value(bad: str) -> None:
    with pytest.raises(ValueError, match="quantity"):
        parse_quantity(bad)


def test_error_message_quotes_the_bad_text() -> None:
    with pytest.raises(ValueError, match="'12XB'"):
        memory_bytes("12XB")


def test_negative_quantity_is_refused_for_resources() -> None:
    with pytest.raises(ValueError, match="-1"):
        cpu_millis("-1")


# --- the grammar, checked against an independent reading with decimal.Decimal -------------------

from decimal import Decimal  # noqa: E402

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from placement.quantity import MAX_QUANTITY, Quantity, QuantityError  # noqa: E402

_SCALE = {
    "": 1, "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "k": 10**3, "M": 10**6, "G": 10**9,
    "T": 10**12, "P": 10**15, "E": 10**18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50,
    "Ei": 2**60,
}  # fmt: skip

_number = st.one_of(
    st.from_regex(r"\A[0-9]{1,6}\Z"),
    st.from_regex(r"\A[0-9]{1,6}\.[0-9]{0,4}\Z"),
    st.from_regex(r"\A\.[0-9]{1,4}\Z"),
)
_suffix = st.one_of(st.sampled_from(sorted(_SCALE)), st.from_regex(r"\A[eE][+-]?[0-9]{1,2}\Z"))


@given(sign=st.sampled_from(["", "+"]), number=_number, suffix=_suffix)
def test_grammar_strings_parse_to_their_exact_value(sign: str, number: str, suffix: str) -> None:
    text = f"{sign}{number}{suffix}"
    # "E" alone is the exa suffix; "E3" (or "e3") is an exponent.
    scale = Decimal(_SCALE[suffix]) if suffix in _SCALE else Decimal(10) ** int(suffix[1:])
    expected = Decimal(number) * scale
    if expected > MAX_QUANTITY:
        with pytest.raises(QuantityError, match="larger than Kubernetes allows"):
            Quantity.parse(text)
        return
    quantity = Quantity.parse(text)
    assert quantity.value == Fraction(expected)
    assert str(quantity) == text


@given(st.text(alphabet="0123456789.eE+-kmMGiKu xN", max_size=12))
def test_text_outside_the_grammar_is_refused_with_its_value(text: str) -> None:
    import re

    grammar = r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?"
    if re.fullmatch(grammar, text.strip()):
        return
    with pytest.raises(QuantityError, match="invalid quantity"):
        Quantity.parse(text)


@pytest.mark.parametrize("good", ["500u", "1e3", "+0.5", "5e-1", "2Ki", "1.5Gi"])
def test_kubernetes_forms_are_quantities(good: str) -> None:
    assert Quantity.parse(good).text == good


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("1..5", "expected a Kubernetes quantity"),
        ("1e309", "larger than Kubernetes allows"),
        ("1e999999999", "larger than Kubernetes allows"),
        ("1e-999999999", "exponent out of range"),
        ("NaN", "expected a Kubernetes quantity"),
        (float("nan"), "must be finite"),
        (float("inf"), "must be finite"),
        ("9" * 80, "longer than 64 characters"),
        (True, "expected a Kubernetes quantity"),
    ],
)
def test_values_kubernetes_refuses_are_refused_without_arithmetic(bad: object, why: str) -> None:
    with pytest.raises(QuantityError, match=why):
        Quantity.parse(bad)
