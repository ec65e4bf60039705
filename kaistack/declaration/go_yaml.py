"""What go-yaml makes of an untagged plain scalar: how kubectl and Helm (sigs.k8s.io/yaml, go-yaml v2 underneath)
and `pulumi up` (go-yaml v3) read a value PyYAML reads by YAML 1.1.

`go_yaml_v2` is go-yaml v2.4.0's `resolve` (resolve.go:86-200) for an untagged plain scalar decoded into
interface{}, with Go's strconv.ParseInt / ParseUint (base 0) and ParseFloat: no base 60 (`1:30` is text), `y`/`n`
are booleans, `1e3` and `0o17` numbers, and a timestamp stays its text (decode.go:474-480).

`go_yaml_v3` is go-yaml v3.0.1's (resolve.go:64-79, 184-288), which Pulumi reads stack files with
(pulumi/pulumi@1b594989 sdk/go/common/encoding/marshal.go imports gopkg.in/yaml.v3; workspace/loaders.go
LoadProjectStackBytes): only true/false are booleans (`y`, `yes`, `on` are text), and a timestamp is a time.Time
(decode.go scalar: an interface{} target takes the resolved value), which Pulumi's config hands the program as
Go's time.String() (sdk/go/common/resource/config/object.go unmarshalObject).
"""

from __future__ import annotations

import calendar
import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["GoTimestamp", "go_yaml_v2", "go_yaml_v3"]

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
    # 'D' / 'S': a timestamp stays its text (decode.go:474-480) before the numbers are tried.
    return _go_resolved(value, timestamps=False)


def _go_resolved(value: str, *, timestamps: bool) -> Any:
    """resolve's hints past the map, shared by v2 and v3: '.' a float, 'D'/'S' a timestamp (v3: `timestamps`),
    then ParseInt, ParseUint, a float, 0b/0o; anything else is text."""
    first = value[0]
    if first == ".":
        # ParseFloat reads ASCII only (Python's float would take other digits and strip other spaces).
        return _go_float(value, value) if value.isascii() and not value[-1:].isspace() else value
    if not (first in "+-" or "0" <= first <= "9"):
        return value  # hint 0, or 'M' (y/n/t/f/o/~) not in the map: a string
    if timestamps and _go_timestamp(value):
        return GoTimestamp(value)
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


# resolve.go@v3.0.1:64-79: only these spellings are booleans and nulls (.inf/.nan are refused before this).
_GO_V3_MAP: dict[str, Any] = {
    **dict.fromkeys(("true", "True", "TRUE"), True),
    **dict.fromkeys(("false", "False", "FALSE"), False),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), None),
}


@dataclass(frozen=True)
class GoTimestamp:
    """A plain scalar go-yaml v3 reads as a time.Time (its text as written)."""

    text: str

    def __repr__(self) -> str:
        return f"the timestamp {self.text}"


def go_yaml_v3(value: str) -> Any:
    """What go-yaml v3 makes of an untagged plain scalar decoded into interface{} (`y`, `yes`, `on`, `off` are text)."""
    if value in _GO_V3_MAP:
        return _GO_V3_MAP[value]
    return _go_resolved(value, timestamps=True)


# resolve.go@v3.0.1:294-326 allowedTimestampFormats, read by Go's time.Parse: "2006-1-2T15:4:5.999999999Z07:00" (and
# with "t"), "2006-1-2 15:4:5.999999999", "2006-1-2". Month, day, hour, minute and second take one or two digits;
# a fraction may follow the seconds even where the layout has none, after a '.' or (Go 1.17 on) a ','; each field is
# range-checked, a zone's hour up to 24 and its minute up to 60 (Go's "as some people do write offsets of 24 hours").
_GO_TIMESTAMP = re.compile(
    r"(\d{4})-(\d{1,2})-(\d{1,2})"
    r"(?:(?P<sep>[Tt ])(\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,]\d+)?(?P<zone>Z|[+-](?P<zh>\d{2}):(?P<zm>\d{2}))?)?"
)


def _go_timestamp(value: str) -> bool:
    found = _GO_TIMESTAMP.fullmatch(value) if value.isascii() else None
    if found is None:
        return False
    year, month, day = (int(found.group(i)) for i in (1, 2, 3))
    if not 1 <= month <= 12 or not 1 <= day <= calendar.monthrange(year, month)[1]:
        return False
    if found.group("sep") is None:
        return True
    if (found.group("sep") == " ") == (found.group("zone") is not None):
        return False  # a zone only after T/t (and there, required); none after a space
    hour, minute, second = (int(found.group(i)) for i in (5, 6, 7))
    if found.group("zh") is not None and (int(found.group("zh")) > 24 or int(found.group("zm")) > 60):
        return False
    return hour < 24 and minute < 60 and second < 60
