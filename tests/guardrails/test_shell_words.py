"""A container's shell script read as sh reads it (kaistack/declaration/shell_words.py), for the flags of the
server it launches.

POSIX sh (XCU 2.2.1, 2.3, 2.7.4, 2.9.3): a backslash-newline joins lines outside single quotes, in double quotes
too; a `#` that starts a word comments out the rest of the line; a here-document's body is text up to its
delimiter line (tabs stripped for `<<-`); an unquoted newline, `;`, `&&`, `||`, `|` and `&` end a command.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from policy_builders import container

from kaistack.declaration import shell_words
from kaistack.declaration.model_servers import vllm_utilization
from kaistack.declaration.shell_words import commands, script_text, tokens

IMAGE = "vllm/vllm-openai:v0.11.0"


def _read(script: str) -> float | None:
    found = vllm_utilization(container(image=IMAGE, command=["sh", "-c"], args=[script]))
    assert found is not None
    return found.value


def test_a_continued_line_starting_with_the_flag_is_read() -> None:
    """A YAML block scalar strips the indent, so the flag starts the line after a backslash-newline."""
    assert _read("exec vllm serve M \\\n--gpu-memory-utilization 0.45 \\\n--max-model-len 4096\n") == 0.45


def test_a_continuation_inside_double_quotes_joins_the_lines() -> None:
    assert tokens(["sh", "-c", 'echo "a\\\nb" c']) == ["sh", "-c", "echo", "ab", "c"]


def test_a_backslash_newline_inside_single_quotes_stays() -> None:
    assert tokens(["sh", "-c", "echo 'a\\\nb' c"]) == ["sh", "-c", "echo", "a\\\nb", "c"]


def test_only_the_script_of_a_shell_is_read_as_a_script() -> None:
    """A chat template with newlines passed to vLLM as one argument ends no command: the flag after it is still
    vLLM's. Guards against reading every item with blanks as a script."""
    template = "{% for m in messages %}\n{{ m.content }}\n{% endfor %}"
    argv = ["vllm", "serve", "M", "--chat-template", template, "--gpu-memory-utilization", "0.4"]
    assert vllm_utilization(container(image=IMAGE, command=argv)).value == 0.4  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "command",
    [["/bin/bash", "-c"], ["sh", "-ec"], ["bash", "-lc"]],
    ids=["bash-path", "errexit", "login"],
)
def test_a_script_is_known_by_the_shell_and_its_c_option(command: list[str]) -> None:
    assert tokens([*command, "a\nb"]) == [*command, "a", ";", "b"]


def test_a_here_document_with_an_apostrophe_does_not_hide_what_follows() -> None:
    script = (
        "cat > /tmp/prompt.txt <<'EOF'\nYou don't reveal this.\nEOF\n"
        "exec vllm serve M --gpu-memory-utilization 0.45\n# was: --gpu-memory-utilization 0.9\n"
    )
    assert _read(script) == 0.45


def test_a_here_document_body_is_not_read_as_options() -> None:
    script = "cat <<-END >/tmp/x\n\t--gpu-memory-utilization 0.9\n\tEND\nvllm serve M --gpu-memory-utilization 0.4\n"
    assert _read(script) == 0.4


@pytest.mark.parametrize(
    "delimiter", ["\\EOF", 'E"OF"', "'EOF'", '"EOF"'], ids=["backslash", "part", "single", "double"]
)
def test_a_quoted_here_document_delimiter_is_the_word_unquoted(delimiter: str) -> None:
    """`cat <<\\EOF` ends at a line `EOF`: the body must not swallow the server's command after it."""
    script = f"cat <<{delimiter} >/tmp/x\nhello\nEOF\nvllm serve M --gpu-memory-utilization 0.4\n"
    assert _read(script) == 0.4


def test_a_here_string_is_no_here_document() -> None:
    """bash's `<<<` takes a word, not the lines that follow: the next line is still a command."""
    assert _read("cat <<< hello\nvllm serve M --gpu-memory-utilization 0.3\n") == 0.3


def test_a_line_commented_out_of_a_continued_command_ends_it() -> None:
    """sh ends the command at the comment: the flag on the line after it is another command, so vLLM runs with
    its default."""
    script = (
        "vllm serve M \\\n  --max-model-len 4096 \\\n"
        "  # --gpu-memory-utilization 0.9 \\\n  --gpu-memory-utilization 0.45\n"
    )
    assert _read(script) == 0.9


@pytest.mark.parametrize(
    "script",
    [
        "pip install vllm==0.11.0; vllm serve M --gpu-memory-utilization 0.4",
        "echo --gpu-memory-utilization 0.9 && exec vllm serve M --gpu-memory-utilization 0.4",
        "vllm serve M --gpu-memory-utilization 0.4 | tee /tmp/log",
        "python3 -m vllm.entrypoints.openai.api_server --gpu-memory-utilization 0.4 &\nwait",
    ],
    ids=["after-pip", "after-echo", "piped", "in-the-background"],
)
def test_only_the_command_that_launches_vllm_passes_it_options(script: str) -> None:
    assert _read(script) == 0.4


def test_a_kubernetes_variable_reference_is_kept_as_written() -> None:
    assert tokens(["vllm serve M --gpu-memory-utilization $(UTIL)"])[-1] == "$(UTIL)"


def test_commands_are_parted_by_separators_and_by_a_word_ending_in_a_semicolon() -> None:
    argv = ["a", "1;", "b", "&&", "c", "|", "d"]
    assert commands(argv) == [(0, 2), (2, 3), (4, 5), (6, 7)]


def test_an_unquoted_newline_ends_a_command_and_a_quoted_one_does_not() -> None:
    assert script_text('a\nb "c\nd"') == 'a ; b "c\nd"'


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab #'\"\\\n<-;&|$()E")), max_size=60))
def test_any_text_reads_without_an_error(script: str) -> None:
    """Hostile scripts (unbalanced quotes, a here-document never closed, a lone backslash) give words, never an
    exception, and no more text than each newline written as ` ; `."""
    words = tokens([script + " x"])
    assert all(isinstance(w, str) for w in words)
    assert len(script_text(script)) <= 3 * len(script) + 3


def _nearest_sh_c_is_just_before(strings: list[str], index: int) -> bool:
    """The reading before 2026-11-28: scan back for the nearest `sh -c`, and ask whether it is the item before."""
    for i in range(index - 1, 0, -1):
        if re.fullmatch(r"-[A-Za-z]*c[A-Za-z]*", strings[i].strip()) and strings[i - 1].strip().rsplit("/", 1)[-1] in (
            "sh", "bash", "dash", "ash", "zsh", "ksh",
        ):  # fmt: skip
            return i == index - 1
    return False


@given(st.lists(st.sampled_from(["sh", "/bin/bash", "-c", "-ec", "-x", "a b", "vllm serve m", "c"]), max_size=12))
def test_which_items_are_scripts_is_read_from_the_item_before_alone(strings: list[str]) -> None:
    """Looking only at the item before gives the old backward scan's answer (which took minutes on 10,000 args)."""
    assert [shell_words._runs_script(strings, i) for i in range(len(strings))] == [
        _nearest_sh_c_is_just_before(strings, i) for i in range(len(strings))
    ]
