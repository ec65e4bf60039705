"""A container's command line as its program sees it, when it runs a shell script (`sh -c "vllm serve ..."`).

Enough of POSIX sh's token recognition (XCU 2.2-2.3, 2.7.4) to read a server's options out of the scripts people
write in YAML: quotes; a backslash-newline joins lines (outside single quotes); a `#` that starts a word comments
out the rest of its line; here-document bodies are text, not commands; an unquoted newline ends a command, as do
`;`, `&&`, `||`, `|` and `&`. No expansion: `$(VAR)` (a Kubernetes reference) and `${VAR}` stay as written.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import Any

__all__ = ["SEPARATORS", "commands", "script_text", "tokens", "words"]

# Tokens that end a command. shlex keeps an operator written without blanks on its word (`0.5;`), which readers
# of a value cut off (model_servers._number).
SEPARATORS = frozenset({";", "&&", "||", "|", "&", "|&", ";;"})
_OPERATOR_BEFORE = ";&|()<>"
# `<<WORD`, `<<-WORD`, `<<'WORD'`, `<<"WORD"`; not bash's here-string `<<<`.
_HEREDOC = re.compile(r"(?<!<)<<(?!<)(-?)[ \t]*(?:'([^'\n]*)'|\"([^\"\n]*)\"|([^\s;&|<>()]+))")


def script_text(script: str) -> str:
    """The script with its comments, line continuations and here-document bodies taken out, and every unquoted
    newline that ends a command written as ` ; `, so that shlex's words are the shell's."""
    out: list[str] = []
    quote = ""
    pending: list[tuple[str, bool]] = []  # here-documents whose bodies start after this line: (delimiter, strip tabs)
    i, n = 0, len(script)
    while i < n:
        ch = script[i]
        if quote == "'":
            quote = "" if ch == "'" else quote
        elif ch == "\\" and i + 1 < n:
            if script[i + 1] == "\n":  # a line continuation, in double quotes too
                i += 2
                continue
            out.append(script[i : i + 2])
            i += 2
            continue
        elif quote == '"':
            quote = "" if ch == '"' else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or script[i - 1].isspace() or script[i - 1] in _OPERATOR_BEFORE):
            end = script.find("\n", i)
            i = n if end < 0 else end
            continue
        elif ch == "<" and (heredoc := _HEREDOC.match(script, i)):
            word = next(g for g in heredoc.groups()[1:] if g is not None)
            # Any quoting in the word (`\EOF`, `E"OF"`) is taken out of the delimiter (XCU 2.7.4).
            pending.append((re.sub(r"[\\'\"]", "", word), heredoc.group(1) == "-"))
            out.append(" ")
            i = heredoc.end()
            continue
        elif ch == "\n":
            out.append(" ; ")
            i = _skip_bodies(script, i + 1, pending)
            pending = []
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _skip_bodies(script: str, i: int, pending: list[tuple[str, bool]]) -> int:
    """Where the script goes on after the here-document bodies that start at `i`, each ended by its delimiter
    alone on a line (leading tabs removed for `<<-`); an unterminated one runs to the end."""
    for delimiter, strip_tabs in pending:
        while i < len(script):
            end = script.find("\n", i)
            line = script[i : len(script) if end < 0 else end]
            i = len(script) if end < 0 else end + 1
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                break
    return i


def tokens(strings: Sequence[Any]) -> list[str]:
    """Argv tokens: items holding whitespace split into words (a value written as one string), and the script a
    shell runs with `-c` split the way that shell would, its commands apart by a separator token (SEPARATORS)."""
    return [word for _, word in words(strings)]


def words(strings: Sequence[Any]) -> list[tuple[int, str]]:
    """tokens(), each word with the index of the item it comes from."""
    out: list[tuple[int, str]] = []
    for index, item in enumerate(strings):
        text = str(item)
        if not any(ch.isspace() for ch in text.strip()):
            out.append((index, text.strip()))
            continue
        script = _runs_script(strings, index)
        cleaned = script_text(text) if script else text
        try:
            split = shlex.split(cleaned, comments=False)
        except ValueError:  # an unbalanced quote: its words, as blanks part them
            split = cleaned.split()
        out += [(index, word) for word in split]
    return out


# A shell, then an option cluster holding c (`-c`, `-ec`, `-lc`): the next item is the script it runs.
_SHELLS = frozenset({"sh", "bash", "dash", "ash", "zsh", "ksh"})
_DASH_C = re.compile(r"-[A-Za-z]*c[A-Za-z]*")


def _runs_script(strings: Sequence[Any], index: int) -> bool:
    """Item `index` is the script of a `sh -c` just before it. Another item holding blanks (a chat template, a value
    with spaces) is one argument: its newlines end no command. Only the item before is looked at (scanning back
    for the nearest `sh -c` made 10,000 args with blanks take minutes, and gave the same answer)."""
    i = index - 1
    return i >= 1 and bool(
        _DASH_C.fullmatch(str(strings[i]).strip()) and str(strings[i - 1]).strip().rsplit("/", 1)[-1] in _SHELLS
    )


def commands(argv: Sequence[str]) -> list[tuple[int, int]]:
    """The (start, end) index ranges of argv's commands: parted by separator tokens, or by a word that ends in `;`
    (shlex keeps it on the word before)."""
    spans = []
    start = 0
    for i, token in enumerate(argv):
        if token in SEPARATORS:
            spans.append((start, i))
            start = i + 1
        elif token.endswith(";") and token != ";":
            spans.append((start, i + 1))
            start = i + 1
    spans.append((start, len(argv)))
    return [(a, b) for a, b in spans if b > a]
