"""Kubernetes resource quantities, parsed once into exact integers.

A quantity string ("500m", "1.5", "16Gi", "1e3") is parsed with `fractions.Fraction`, so no float rounding
ever enters the cluster model: CPU becomes integer millicores and memory integer bytes. Rounding follows
apimachinery's `Quantity.MilliValue()` / `Value()`, which round up (a "0.1m" CPU request is 1 millicore).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

__all__ = ["cpu_millis", "memory_bytes", "parse_quantity"]

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

# Same grammar as k8s.io/apimachinery/pkg/api/resource: <sign><digits>[.<digits>][<suffix>|<exponent>].
_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>\d+(?:\.\d*)?|\.\d+)"
    r"(?:(?P<exp>[eE][+-]?\d+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$"
)


def parse_quantity(value: object) -> Fraction:
    """Parse a Kubernetes quantity (string, int or float) into an exact, non-negative Fraction."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"invalid quantity {value!r}: expected a Kubernetes quantity such as '500m' or '16Gi'")
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"invalid quantity {value!r}: must be finite")
        text = repr(value)
    elif isinstance(value, str):
        text = value.strip()
    else:
        raise ValueError(f"invalid quantity {value!r}: expected a string or a number")
    match = _QUANTITY.match(text)
    if match is None:
        raise ValueError(f"invalid quantity {value!r}: expected a Kubernetes quantity such as '500m' or '16Gi'")
    number = Fraction(match["number"])
    if match["exp"]:
        number *= Fraction(10) ** int(match["exp"][1:])
    else:
        number *= _SUFFIXES[match["suffix"] or ""]
    if match["sign"] == "-" and number != 0:
        raise ValueError(f"invalid quantity {value!r}: must not be negative")
    return number


def cpu_millis(value: object) -> int:
    """CPU quantity in integer millicores ("500m" -> 500, "2" -> 2000), rounded up like MilliValue()."""
    return math.ceil(parse_quantity(value) * 1000)


def memory_bytes(value: object) -> int:
    """Memory quantity in integer bytes ("1G" -> 10**9, "1Gi" -> 2**30), rounded up like Value()."""
    return math.ceil(parse_quantity(value))
