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


@pytest.mark.parametrize("bad", ["", "abc", "1.2.3", "5Q", "--1", "1 G"])
def test_malformed_quantity_names_the_value(bad: str) -> None:
    with pytest.raises(ValueError, match="quantity"):
        parse_quantity(bad)


def test_error_message_quotes_the_bad_text() -> None:
    with pytest.raises(ValueError, match="'12XB'"):
        memory_bytes("12XB")


def test_negative_quantity_is_refused_for_resources() -> None:
    with pytest.raises(ValueError, match="-1"):
        cpu_millis("-1")
