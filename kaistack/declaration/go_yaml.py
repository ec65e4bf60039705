"""What go-yaml v2 makes of an untagged plain scalar: how kubectl (sigs.k8s.io/yaml, go-yaml v2 underneath) and
`pulumi up` (pulumi/pulumi sdk/go/common/encoding/marshal.go) read a value PyYAML reads by YAML 1.1.

`go_yaml_v2` is go-yaml v2.4.0's `resolve` (resolve.go:86-200) for an untagged plain scalar decoded into
interface{}, with Go's strconv.ParseInt / ParseUint (base 0) and ParseFloat: no base 60 (`1:30` is text), `y`/`n`
are booleans, `1e3` and `0o17` numbers, and a timestamp stays its text (decode.go:474-480).
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["go_yaml_v2"]

# resolve.go:36-48: the values looked up in a map (booleans, nulls; .inf/.nan are refused before this).
_GO_MAP: dict[str, Any] = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), None),
}
_GO_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")  # yamlStyleFloat, resolve.go:84
_GO_BASES = {"0x": (16, "0123456789abcdefABCDEF"), "0o": (8, "01234567"), "0b": (2, "01")}


def go_yaml_v2(value: str) -> Any:
    """What go-yaml v2 makes of an untagged plain scalar decoded into interface{}."""
    if value in _GO_MAP:
        return _GO_MAP[value]
    first = value[0]
    if first == ".":
        # ParseFloat reads ASCII only (Python's float would take other digits and strip other spaces).
        return _go_float(value, value) if value.isascii() and not value[-1:].isspace() else value
    if not (first in "+-" or "0" <= first <= "9"):
        return value  # hint 0, or 'M' (y/n/t/f/o/~) not in the map: a string
    # 'D' / 'S': a timestamp stays its text (decode.go:474-480); then ParseInt, ParseUint, a float, 0b.
    plain = value.replace("_", "")
    number = _go_int(plain)
    if number is not None:
        return number
    if _GO_FLOAT.fullmatch(plain):
        return _go_float(plain, value)
    return value


def _go_int(text: str) -> int | None:
    """strconv.ParseInt(text, 0, 64), else ParseUint(text, 0, 64) (which takes no sign)."""
    sign, body = (text[0], text[1:]) if text[:1] in ("+", "-") else ("", text)
    base, digits = 10, "0123456789"
    prefix = body[:2].lower()
    if prefix in _GO_BASES:
        base, digits = _GO_BASES[prefix]
        body = body[2:]
    elif body.startswith("0") and len(body) > 1:
        base, digits = 8, "01234567"
        body = body[1:]
    if not body or any(c not in digits for c in body):
        return None
    number = int(body, base) * (-1 if sign == "-" else 1)
    if -(2**63) <= number < 2**63:
        return number
    if not sign and number < 2**64:
        return number
    return None


def _go_float(text: str, original: str) -> float | str:
    """strconv.ParseFloat: out of range (an infinity) is an error, and the scalar stays a string."""
    try:
        number = float(text)
    except ValueError:
        return original
    return number if math.isfinite(number) else original
