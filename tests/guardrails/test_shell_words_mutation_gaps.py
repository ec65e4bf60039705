"""Gaps the mutation pass over kaistack/declaration/shell_words.py found: scripts sh reads one way that a slip in
the reader would read another (escapes, a comment right after a continuation, here-documents of several lines or
left open, a script's first and last characters, `<<WORD` written without blanks, an unbalanced quote)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

from test_shell_words import _read

from kaistack.declaration.shell_words import tokens


@contextmanager
def _within(seconds: float) -> Iterator[None]:
    """Fails, rather than hangs, where reading a script never ends."""

    def _expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"reading the script took over {seconds}s")

    previous = signal.signal(signal.SIGALRM, _expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_an_escaped_quote_outside_quotes_is_a_literal_character() -> None:
    """A backslash-escape is kept whole and read once: not dropped, not read twice (opening a quote), not eating
    the character after it."""
    assert tokens(["echo don\\'t stop"]) == ["echo", "don't", "stop"]


def test_a_continuation_ending_the_script_adds_no_word() -> None:
    """A block scalar (`|`) whose last line ends in a backslash: the backslash-newline at the very end is a
    continuation too, not a backslash escaping a blank."""
    assert tokens(["sh", "-c", "vllm serve M --gpu-memory-utilization 0.4 \\\n"])[2:] == [
        "vllm",
        "serve",
        "M",
        "--gpu-memory-utilization",
        "0.4",
    ]


def test_a_comment_line_right_after_a_continuation_is_still_a_comment() -> None:
    """A block scalar strips the indent, so a line commented out of a continued command starts with `#`: the
    characters after a backslash-newline are read as any others, not copied past the comment check."""
    assert _read("vllm serve M --gpu-memory-utilization 0.45 \\\n# --gpu-memory-utilization 0.8\n") == 0.45


def test_a_comment_that_starts_the_script_is_a_comment() -> None:
    """A `#` at the script's first character starts a word, whatever the script's last character is."""
    assert tokens(["sh", "-c", "# start the server\nvllm serve M"])[2:] == [";", "vllm", "serve", "M"]


def test_a_here_document_body_of_several_lines_runs_to_its_delimiter() -> None:
    """The body ends at the line that is the delimiter, not at the first line that is not."""
    script = (
        "vllm serve M --gpu-memory-utilization 0.4 &\n"
        "cat <<EOF >/tmp/README\nRun it as:\n  vllm serve M --gpu-memory-utilization 0.8\nEOF\nwait\n"
    )
    assert _read(script) == 0.4


def test_a_here_document_left_open_runs_to_the_end_of_the_script() -> None:
    """An unterminated body (sh warns and reads it to the end) ends the reading instead of looping at the end."""
    with _within(5):
        assert (
            _read("vllm serve M --gpu-memory-utilization 0.4 &\ncat <<EOF >/tmp/x\n--gpu-memory-utilization 0.8\n")
            == 0.4
        )


def test_a_here_document_closed_on_the_last_line_without_a_newline_ends_the_script() -> None:
    """A block scalar with `|-` drops the final newline: the delimiter line ends the script there, and the
    reading does not start over from the top."""
    with _within(5):
        assert (
            _read("vllm serve M --gpu-memory-utilization 0.4 &\ncat <<EOF >/tmp/x\n--gpu-memory-utilization 0.8\nEOF")
            == 0.4
        )


def test_a_here_document_written_without_blanks_keeps_the_words_apart() -> None:
    """`cat<<EOF>/tmp/cfg`: the operator taken out leaves a blank, so `cat` and the redirection stay two words."""
    assert tokens(["sh", "-c", "cat<<EOF>/tmp/cfg\nx\nEOF\n"])[2:4] == ["cat", ">/tmp/cfg"]


def test_a_script_with_an_unbalanced_quote_is_still_read_word_by_word() -> None:
    """shlex refuses an unbalanced quote; the reader falls back to the words as blanks part them rather than
    reading no words at all (and so no flag)."""
    assert _read("vllm serve M --gpu-memory-utilization 0.4 --served-model-name 'm") == 0.4
