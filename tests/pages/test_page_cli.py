"""`--html` on the batch and report commands: where the page goes, and a clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from self_refine.cli import main

FIXTURES = Path(__file__).with_name("fixtures")


def test_batch_writes_the_page_and_says_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    items = tmp_path / "in.jsonl"
    items.write_text(json.dumps({"id": "a", "task": "Write a line about salt."}) + "\n")
    page = tmp_path / "pages" / "batch.html"
    code = main(
        [
            "batch", str(items), "-o", str(tmp_path / "out.jsonl"), "--model", "offline",
            "--db", str(tmp_path / "t.db"), "--html", str(page),
        ]
    )  # fmt: skip
    assert code == 0
    assert f"page written to {page}" in capsys.readouterr().err
    html = page.read_text()
    assert 'data-id="a"' in html and "Write a line about salt." in html


def test_report_html_to_a_directory_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["report", str(FIXTURES / "offline_batch.jsonl"), "--html", str(tmp_path)])
    assert code == 2
    assert "cannot write the page" in capsys.readouterr().err


def test_batch_refuses_an_unwritable_page_path_before_any_item_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = tmp_path / "in.jsonl"
    items.write_text(json.dumps({"id": "a", "task": "Write a line about salt."}) + "\n")
    output = tmp_path / "out.jsonl"
    code = main(
        [
            "batch", str(items), "-o", str(output), "--model", "offline",
            "--db", str(tmp_path / "t.db"), "--html", str(tmp_path),
        ]
    )  # fmt: skip
    assert code == 2
    assert "it is a folder; give a file path" in capsys.readouterr().err
    assert not output.exists()
