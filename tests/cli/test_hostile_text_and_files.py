"""Text from a model, a server or a file never acts on the terminal; bad report files are refused.

A model's draft and feedback at the human critic's prompt, an error quoting a
server or the input, and stop reasons in `report` are printed with their
control characters shown as escapes. `report` on a file that is not a batch
output (binary, or with fields of the wrong type) says so in one line.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from self_refine.cli.main import main
from self_refine.cli.terminal import ask_critique
from tests.openai_server import OpenAIServer

HOSTILE = "\x1b]0;owned\x07\x1b[2J\x9b31m"
RAW = "\x1b\x07\x9b"


def _clean(text: str) -> None:
    assert not any(char in text for char in RAW), repr(text)


def test_the_human_critic_prompt_shows_model_text_as_escapes() -> None:
    question = {
        "iteration": 1,
        "draft": f"{HOSTILE}a draft\nsecond line",
        "attempts": [{"iteration": 0, "critique": {"feedback": [f"fix {HOSTILE}this"]}}],
        "error": f"bad {HOSTILE}answer",
    }
    out = io.StringIO()
    assert ask_critique(question, io.StringIO("\n\ny\n"), out) is not None
    shown = out.getvalue()
    _clean(shown)
    assert "    \\x1b]0;owned\\x07\\x1b[2J\\x9b31ma draft\n    second line" in shown
    assert "fix \\x1b]0;owned" in shown and "bad \\x1b]0;owned" in shown


def test_an_error_quoting_a_server_shows_its_escapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with OpenAIServer() as server:
        server.fail_next("500_escapes", times=1, role="generator")
        model = ["--model", "openai:m", "--base-url", server.base_url, "--max-retries", "0"]
        strategy = ["--strategy", "refine"]  # named: the run says nothing of its strategy
        code = main(["run", "a task", *model, *strategy, "--db", str(tmp_path / "c.db")])
    err = capsys.readouterr().err
    assert code == 1
    _clean(err)
    assert "\\x1b]0;owned\\x07\\x1b[2J\\x9b31moverloaded" in err and err.count("\n") == 1


def _attempt(**fields: Any) -> dict[str, Any]:
    return {"iteration": 0, "draft": "d", "critique": {"score": 1.0, "feedback": []}, **fields}


def _record(**fields: Any) -> str:
    record = {"id": "a", "answer": "42", "stop_reason": "verified", "iterations": 1, **fields}
    return json.dumps(record) + "\n"


def test_report_shows_stop_reasons_as_escapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "res.jsonl"
    results.write_text(_record(stop_reason=f"{HOSTILE}edited in Studio"))
    assert main(["report", str(results), "--no-plot"]) == 0
    out = capsys.readouterr().out
    _clean(out)
    assert "stop reasons: \\x1b]0;owned\\x07\\x1b[2J\\x9b31medited in Studio 1" in out


def test_report_on_a_binary_file_says_it_is_not_a_batch_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "res.jsonl"
    results.write_bytes(
        _record().encode() + b"\x89PNG\r\n\x1a\n\x00\xff\xfe\n" + _record().encode()
    )
    assert main(["report", str(results), "--no-plot"]) == 2
    err = capsys.readouterr().err
    assert f"line 2 of '{results}' is not UTF-8 text: this is not a batch output file" in err
    assert err.count("\n") == 1


def test_report_ignores_a_last_line_torn_inside_a_character(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "res.jsonl"
    results.write_bytes(_record().encode() + '{"id": "b", "answer": "é'.encode()[:-1])
    assert main(["report", str(results), "--no-plot"]) == 0
    assert "items: 1" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"correct_first": "yes", "correct_final": True}, "correct_first should be true, false"),
        ({"score": "high"}, "score should be a number or null, not str"),
        ({"usage": "lots"}, "usage should be an object of token counts, not str"),
        ({"usage": {"total_tokens": "9"}}, "usage should be an object of token counts"),
        ({"iterations": [1]}, "iterations should be a number or null, not list"),
        ({"score_at": [0.5, "x"]}, "score_at should be a list of numbers or null"),
        ({"correct_at": "TF"}, "correct_at should be a list of true, false or null"),
        ({"stop_reason": 7}, "stop_reason should be text, not int"),
        ({"attempts": [{"draft": 1}]}, "attempts should be a list of attempts"),
        ({"attempts": [_attempt(rejected="echo")]}, "attempts should be a list of attempts"),
        ({"attempts": [_attempt(rejected=[{"reason": 3}])]}, "attempts should be a list"),
        ({"id": None}, "id should be a string or a number, not NoneType"),
    ],
)
def test_report_names_a_field_of_the_wrong_type(
    fields: dict[str, Any], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "res.jsonl"
    results.write_text(_record() + _record(**{"id": "b", **fields}))
    for argv in (["--no-plot"], ["--no-plot", "--html", str(tmp_path / "r.html")]):
        assert main(["report", str(results), *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"self-refine: error: line 2 of '{results}': {named}"), err
        assert "give the -o file of `self-refine batch`" in err and err.count("\n") == 1


def test_a_page_shows_rejected_replies_of_any_shape_from_a_thread(tmp_path: Path) -> None:
    from self_refine.pages.render import write_thread_page
    from self_refine.pages.thread import thread_view

    odd = [_attempt(rejected="echo"), _attempt(iteration=1, rejected=[{"reason": "empty"}, "x"])]
    page = tmp_path / "t.html"
    write_thread_page(thread_view({"task": "t", "attempts": odd}, title="t"), page)
    assert "rejected: empty" in page.read_text()


BIDI = "The answer is \u202e24\u202c."
"""Displays as "The answer is 42." where the vote and the answer check read 24."""


@pytest.mark.usefixtures("workdir")
def test_direction_characters_in_task_draft_and_answer_are_shown_as_escapes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    task = "What is 4 \u2066times\u2069 6?\u200b Think\u2028twice."
    args = ["run", task, "--draft", BIDI, "--profile", "math", "--thread-id", "bidi"]
    code = main([*args, "--max-iterations", "0"])
    run_out, run_err = capsys.readouterr()
    assert code == 0, run_err
    page = tmp_path / "bidi.html"
    assert main(["show", "bidi", "--html", str(page)]) == 0
    show_out = capsys.readouterr().out
    html = page.read_text(encoding="utf-8")
    for shown in (run_out, show_out, html):
        assert not any(char in shown for char in "\u202e\u202c\u2066\u2069\u200b\u2028"), shown
        assert "\\u202e24\\u202c" in shown
    assert "\\u2066times\\u2069 6?\\u200b Think\\u2028twice" in show_out + html


def test_every_invisible_format_character_is_shown_as_an_escape() -> None:
    import sys
    import unicodedata

    from self_refine.redact import terminal_safe

    hidden = [
        chr(code)
        for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) in ("Cf", "Zl", "Zp")
    ]
    assert {"\u202e", "\u2066", "\u200b", "\u2028", "\ufeff"} <= set(hidden)
    for char in hidden:
        code = ord(char)
        escape = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
        assert terminal_safe(char) == (escape if code < 0x10000 else f"\\U{code:08x}")
