"""Text from stacks, dumps and clusters, made inert in the Markdown kaistack writes for PR comments.

A PR comment renders Markdown and HTML. A value a PR author or a tenant controls (an unknown config key, a
node selector, a PodGroup's queue) could otherwise close a table or a fence, forge a "✅ passes" heading,
load an image, hide the rest of the comment in `<!--`, or @-mention people. Every such value goes through
one of these; text kaistack writes itself (headings, table rules) does not need to.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Format characters that change how the rest of a line reads, not what it says (bidi embeddings, overrides,
# isolates and marks, zero-width joiners and spaces, invisible tags: "Trojan Source"), and the line and paragraph
# separators; shown as their code, so a tenant's value cannot make a line read as something else.
INVISIBLE = re.compile(
    "[\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]"
)
# What starts or ends inline markup (emphasis, code, links and images, which need "["; strikethrough), a
# heading inside a list item, and GFM's table pipe.
_PUNCTUATION = re.compile(r"([\\`*_\[\]#|~])")
# GitHub links `@name` and `@org/team` where "@" follows no word character (not `user@host`); a zero-width
# space after it leaves the text readable and links nobody.
_AT = re.compile(r"@(?=[A-Za-z0-9])")  # a mention, or the middle of an e-mail address GFM would link
_WWW = re.compile(r"(?i)\b(www)\.")


def code_point(char: str) -> str:
    """`\u202e`, or `\U000e0041` past the Basic Multilingual Plane, as Python writes them."""
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _shown(text: str) -> str:
    return INVISIBLE.sub(lambda m: code_point(m.group()), text)


def one_line(text: str) -> str:
    """Text with every control character a space and invisible ones spelt out: what a terminal shows as it is."""
    return _shown(_CONTROL.sub(" ", str(text)))


def cell(text: object) -> str:
    """Prose for a table cell or a list item: one line, no HTML, no markup, no mention, no link."""
    escaped = _PUNCTUATION.sub(r"\\\1", one_line(str(text)))
    escaped = escaped.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    # GFM's autolinks (www., scheme://, e-mail addresses) need no markup: a zero-width space breaks each trigger,
    # as it does a mention.
    escaped = _WWW.sub(lambda m: m.group(1) + "\u200b.", escaped).replace("://", ":\u200b//")
    return _AT.sub("@\u200b", escaped)


def code(text: object) -> str:
    """An inline code span holding `text` as it is (one line), safe in a table cell."""
    value = one_line(str(text))
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") or not value.strip() else ""
    # GFM splits table cells on "|" before it sees code spans; the escaped pipe stays inside the span.
    return f"{ticks}{pad}{value.replace('|', chr(92) + '|')}{pad}{ticks}"


def fence(text: object) -> str:
    """A fenced block holding `text` verbatim (but for the format characters INVISIBLE shows by code): the fence is
    longer than any backtick run inside it."""
    value = _shown(str(text))
    longest = max((len(run) for run in re.findall(r"`{3,}", value)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}\n{value}\n{ticks}"
