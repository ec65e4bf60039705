"""Kubernetes resource quantities: one type, parsed once into exact numbers.

`Quantity.parse("500m")` keeps the text as written (what a manifest carries) and its exact value as a
`fractions.Fraction` in base units (cores, bytes, GPUs), so no float rounding ever enters the cluster
model. The grammar is apimachinery's (k8s.io/apimachinery/pkg/api/resource/quantity.go):
`<sign><digits>[.<digits>][<suffix>|<exponent>]` with the binary suffixes Ki..Ei, the decimal ones
n, u, m, k, M, G, T, P, E, and `e`/`E` exponents — so `500u`, `1e3`, `+0.5`, `5e-1`, `2Ki`, `1.5Gi` are
quantities and `1..5`, `NaN`, `1 G` are not. Values Kubernetes cannot hold are refused before any
arithmetic: a quantity above 2^63-1 base units (apimachinery keeps an int64), and exponents or
mantissas so long that computing them would hang (`1e999999999`).

Rounding follows apimachinery's `MilliValue()` / `Value()`, which round up: a "0.1m" CPU request is
1 millicore.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["MAX_QUANTITY", "Quantity", "QuantityError", "cpu_millis", "memory_bytes", "parse_quantity"]

# apimachinery stores a quantity's value as an int64 (with a scale); anything larger does not round-trip.
MAX_QUANTITY = 2**63 - 1
# Longest text accepted: far beyond any real quantity, short enough that parsing is instant.
MAX_TEXT = 64
# With at most MAX_TEXT digits, an exponent past this bound can only overflow (or underflow to
# nothing Kubernetes can express), so it is refused before computing 10**exponent.
MAX_EXPONENT = 100

_SUFFIXES: dict[str, Fraction] = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}

_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:(?P<exp>[eE][+-]?[0-9]+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?"
)
_EXAMPLES = "a Kubernetes quantity such as '500m', '2', '1.5Gi' or '1e3'"


class QuantityError(ValueError):
    """Not a quantity Kubernetes accepts; the message quotes the value and says what is allowed."""


@dataclass(frozen=True, slots=True)
class Quantity:
    """A non-negative Kubernetes quantity: `text` as written, `value` exact in base units."""

    text: str
    value: Fraction

    @classmethod
    def parse(cls, raw: object) -> Quantity:
        """A quantity from a string or a (finite) number; QuantityError names the value otherwise."""
        if isinstance(raw, Quantity):
            return raw
        text = _text(raw)
        if len(text) > MAX_TEXT:
            raise QuantityError(f"invalid quantity {_show(raw)}: longer than {MAX_TEXT} characters")
        match = _QUANTITY.fullmatch(text)
        if match is None:
            raise QuantityError(f"invalid quantity {_show(raw)}: expected {_EXAMPLES}")
        number = Fraction(match["number"])
        if match["exp"]:
            exponent = int(match["exp"][1:])
            if number and exponent > MAX_EXPONENT:
                raise QuantityError(f"invalid quantity {_show(raw)}: larger than Kubernetes allows (2^63-1)")
            if number and exponent < -MAX_EXPONENT:
                raise QuantityError(f"invalid quantity {_show(raw)}: exponent out of range (at least e-{MAX_EXPONENT})")
            if number:
                number *= Fraction(10) ** exponent
        else:
            number *= _SUFFIXES[match["suffix"] or ""]
        if match["sign"] == "-" and number != 0:
            raise QuantityError(f"invalid quantity {_show(raw)}: must not be negative")
        if number > MAX_QUANTITY:
            raise QuantityError(f"invalid quantity {_show(raw)}: larger than Kubernetes allows (2^63-1)")
        return cls(text, number)

    @property
    def millis(self) -> int:
        """In thousandths, rounded up (CPU millicores): MilliValue()."""
        return math.ceil(self.value * 1000)

    @property
    def units(self) -> int:
        """In whole base units, rounded up (bytes): Value()."""
        return math.ceil(self.value)

    def __str__(self) -> str:
        return self.text


def _text(raw: object) -> str:
    if isinstance(raw, bool) or raw is None:
        raise QuantityError(f"invalid quantity {raw!r}: expected {_EXAMPLES}")
    if isinstance(raw, int):
        return str(raw)
    if isinstance(raw, float):
        if not math.isfinite(raw):
            raise QuantityError(f"invalid quantity {raw!r}: must be finite")
        return repr(raw)
    if isinstance(raw, str):
        return raw.strip()
    raise QuantityError(f"invalid quantity {_show(raw)}: expected a string or a number, got {type(raw).__name__}")


def _show(raw: object) -> str:
    text = repr(raw)
    return text if len(text) <= 40 else text[:37] + "..."


def parse_quantity(value: object) -> Fraction:
    """The exact value of a Kubernetes quantity (string, int or float), in base units."""
    return Quantity.parse(value).value


def cpu_millis(value: object) -> int:
    """CPU quantity in integer millicores ("500m" -> 500, "2" -> 2000), rounded up like MilliValue()."""
    return Quantity.parse(value).millis


def memory_bytes(value: object) -> int:
    """Memory quantity in integer bytes ("1G" -> 10**9, "1Gi" -> 2**30), rounded up like Value()."""
    return Quantity.parse(value).units
