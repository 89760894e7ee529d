"""`--api-key-file PATH`: the key read from a file, off the command line; unusable files refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from self_refine.cli.main import main
from tests.openai_server import OpenAIServer

TASK = "Write one sentence using the words: dog, frisbee, park."
KEY = "sk-file-key-0123456789abcdef"


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


def _run(server: OpenAIServer, tmp_path: Path, *key_args: str) -> list[str]:
    db = str(tmp_path / "c.sqlite")
    return [
        "run",
        TASK,
        "--model",
        "openai:m",
        "--base-url",
        server.base_url,
        "--db",
        db,
        *key_args,
    ]


def test_the_key_is_read_from_the_file(
    server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key_file = _key_file(tmp_path, f"  {KEY}\n\n", 0o600)  # blanks and a newline are fine
    # The strategy named: with none, the run would say which one it took (not a warning).
    args = ["--api-key-file", str(key_file), "--strategy", "refine"]
    assert main(_run(server, tmp_path, *args)) == 0
    assert {r.headers["authorization"] for r in server.chat_requests()} == {f"Bearer {KEY}"}
    assert capsys.readouterr().err == ""


def test_a_key_file_other_users_can_read_draws_a_warning(
    server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key_file = _key_file(tmp_path, KEY, 0o644)
    assert main(_run(server, tmp_path, "--api-key-file", str(key_file))) == 0
    err = capsys.readouterr().err
    assert f"{key_file} can be read by other users; chmod 600 {key_file}" in err
    assert KEY not in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "No such file or directory"),
        ("", "holds nothing: put the key alone on one line"),
        (f"{KEY}\nsecond line\n", "holds 2 lines: put the key alone on one line"),
        (b"\xff\xfe key", "is not UTF-8 text"),
        ("k" * 5000, "is over 4 KB, too long for a key"),
        ("dir", "is not a regular file"),
        ("/dev/urandom", "is not a regular file"),
    ],
)
def test_an_unusable_key_file_is_refused_before_any_call(
    content: str | bytes | None,
    message: str,
    server: OpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = str(tmp_path / "openai.key")
    if content == "dir":
        path = str(tmp_path)
    elif content == "/dev/urandom":
        path = content
    elif isinstance(content, bytes):
        Path(path).write_bytes(content)
    elif content is not None:
        Path(path).write_text(content)
    assert main(_run(server, tmp_path, "--api-key-file", path)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"self-refine: error: --api-key-file {path}")
    assert message in err and err.count("\n") == 1
    assert server.chat_requests() == []
    assert not (tmp_path / "c.sqlite").exists(), "no thread was started"


def test_key_flag_and_key_file_together_are_refused(
    server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(_run(server, tmp_path, "--api-key", KEY, "--api-key-file", "x"))
    assert exited.value.code == 2
    assert "not allowed with argument --api-key" in capsys.readouterr().err


def test_resume_takes_the_key_file_too(
    server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key_file = _key_file(tmp_path, KEY, 0o600)
    server.fail_next("500", times=1, role="refiner")
    first = _run(server, tmp_path, "--api-key-file", str(key_file), "--max-retries", "0")
    assert main([*first, "--thread-id", "t"]) == 1
    db = str(tmp_path / "c.sqlite")
    assert main(["resume", "t", "--db", db, "--api-key-file", str(key_file)]) == 0
    assert "Stopped:" in capsys.readouterr().out
    assert {r.headers["authorization"] for r in server.chat_requests()} == {f"Bearer {KEY}"}


def _key_file(folder: Path, text: str, mode: int) -> Path:
    """A key file holding `text`, with permission bits `mode`."""
    key_file = folder / "openai.key"
    key_file.write_text(text)
    key_file.chmod(mode)
    return key_file
