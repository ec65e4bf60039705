"""Text a PR author or a tenant controls stays text in kaistack's PR comments (kaistack.markdown).

Each case is a way out seen in the red-team pass: a fence closed by the text, a table row ended by a
newline, a forged heading, HTML (an image from elsewhere, a comment hiding the rest), an @-mention.
"""

from __future__ import annotations

import re

import pytest

from kaistack.markdown import cell, code, fence

HOSTILE = "gpu\n\n### ✅ `dev`: passes validation\n@octocat <img src=https://evil.example/t.png> | x <!--"


def test_a_cell_is_one_line_without_html_or_mentions() -> None:
    text = cell(HOSTILE)
    assert "\n" not in text
    assert "<" not in text
    assert ">" not in text
    assert "@octocat" not in text
    assert "@\u200boctocat" in text
    assert "\\|" in text
    assert "\\#\\#\\# ✅ \\`dev\\`" in text


@pytest.mark.parametrize(("text", "span"), [("a", "`a`"), ("a`b", "``a`b``"), ("`a", "`` `a ``"), ("a|b", "`a\\|b`")])
def test_a_code_span_is_longer_than_any_backtick_run_inside(text: str, span: str) -> None:
    assert code(text) == span


def test_a_code_span_is_one_line() -> None:
    assert code("a\nb\x1b[2J") == "`a b [2J`"


def test_a_fence_outlasts_the_fences_inside_it() -> None:
    block = fence("x\n```\n### ✅ passes\n````")
    assert block.startswith("`````\n")
    assert block.endswith("\n`````")


def _outside_code(markdown: str) -> str:
    """The text GitHub renders as Markdown and HTML: code spans hold theirs as literal text."""
    return re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", markdown)


def _table_rows(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("|")]


def test_a_capacity_diff_row_stays_one_row() -> None:
    from kaistack.capacity.diff import CapacityDiff, WorkloadChange, to_markdown

    change = WorkloadChange("w", "newly-pending", "Running", "Pending", reason="no node", detail=HOSTILE)
    markdown = to_markdown(CapacityDiff("dev", "HEAD", (change,), (), True, False))
    assert len(_table_rows(markdown)) == 3  # header, rule, the one workload
    assert not any(line.startswith("###") for line in markdown.splitlines()[1:])
    assert "<img" not in _outside_code(markdown)
    assert "<!--" not in _outside_code(markdown)


def test_a_diagnosis_row_stays_one_row() -> None:
    from kaistack.ops.diagnose import Diagnosis, Mistake, PendingPod, to_markdown

    pending = PendingPod("ml/p", "ml/j", HOSTILE, HOSTILE)
    mistake = Mistake("K001", HOSTILE, HOSTILE, HOSTILE)
    markdown = to_markdown(Diagnosis((pending,), (mistake,)))
    assert len(_table_rows(markdown)) == 6
    assert not any(line.startswith("###") for line in markdown.splitlines()[1:])
    assert "<img" not in _outside_code(markdown)
    assert "@octocat" not in _outside_code(markdown)


def test_a_diagnosis_note_stays_one_list_item() -> None:
    """A note can quote a dump's text (a pod's node name)."""
    from kaistack.ops.diagnose import Diagnosis, to_markdown

    markdown = to_markdown(Diagnosis((), (), notes=(HOSTILE,)))
    assert [line for line in markdown.splitlines() if line.startswith("- ")] == [f"- {cell(HOSTILE)}"]
    assert not any(line.startswith("###") for line in markdown.splitlines()[1:])
    assert "<img" not in _outside_code(markdown)


def test_an_invalid_config_comment_keeps_the_error_inside_its_fence(capsys: pytest.CaptureFixture[str]) -> None:
    from kaistack.cli import main

    key = "kaistack:x\n```\n\n### ✅ `dev`: passes validation\n\n```"
    code_ = main(["validate", "--stack", "dev", "--markdown", "--project", str(_project_with_key(key))])
    out = capsys.readouterr().out
    assert code_ == 2
    lines = out.splitlines()
    opening = next(i for i, line in enumerate(lines) if line.startswith("```"))
    closing = next(i for i in range(len(lines) - 1, opening, -1) if lines[i] == lines[opening])
    assert len(lines[opening]) > 3  # longer than the fence the key carries
    assert [line for line in lines[:opening] + lines[closing + 1 :] if line.startswith("###")] == [
        "### ❌ `dev`: invalid config"
    ]
    assert all("passes validation" not in line for line in lines[:opening] + lines[closing + 1 :])


def _project_with_key(key: str) -> object:
    import json
    import tempfile
    from pathlib import Path

    root = Path(tempfile.mkdtemp())
    (root / "Pulumi.yaml").write_text("name: kaistack\nruntime: python\n")
    (root / "Pulumi.dev.yaml").write_text(json.dumps({"config": {key: 1}}))
    return root


def test_an_address_with_an_at_sign_keeps_its_characters_but_links_nothing() -> None:
    """GFM links an e-mail address; a zero-width space after the @ keeps it text (the reader sees the same)."""
    assert cell("pull from user@registry.example.com") == "pull from user@\u200bregistry.example.com"


BIDI = "zone\u202e=x\u2066y\u2069\u200b\u2028### forged\U000e0041"


@pytest.mark.parametrize("render", [cell, code, fence], ids=["cell", "code", "fence"])
def test_format_characters_that_reorder_or_hide_text_are_shown_by_their_code(render: object) -> None:
    """A right-to-left override makes the rest of a line display reversed (GitHub renders it), a zero-width space
    makes two names look alike, U+2028 breaks a line: a tenant's value shows them as code points instead."""
    text = render(BIDI)  # type: ignore[operator]
    assert not re.search("[\u200b\u2028\u202e\u2066\u2069\U000e0041]", text)
    for code_point in ("u202e", "u2066", "u2069", "u200b", "u2028", "U000e0041"):
        assert code_point in text


@pytest.mark.parametrize(
    "text",
    [
        "see www.evil.example/click-here=go",
        "(WWW.Evil.example)",
        "https://evil.example/x and ftp://evil.example",
        "http://evil.example/i.png",
        "mail a.b@evil.example or @octocat",
    ],
)
def test_github_renders_a_cell_with_no_link(text: str) -> None:
    """GFM's autolinks need no markup (www., scheme://, e-mail addresses): a label key a stack author wrote became a
    link in the PR comment. Rendered here with cmark-gfm, the library github.com renders comments with."""
    import cmarkgfm

    html = cmarkgfm.github_flavored_markdown_to_html(f"| a |\n|---|\n| {cell(text)} |\n")
    assert "<a " not in html
    assert "<img" not in html
    assert "<td>" in html  # still one table cell
