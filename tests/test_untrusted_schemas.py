"""A JSON schema that came with the data never reaches outside, never hangs, never crashes.

A dataset line's `reference["schema"]` and a `--response-format` file are data: their
references resolve inside the schema only (a file or URL `$ref` is refused up front and
never read), a schema that refers to itself in place is refused before it can recurse,
a pattern that backtracks catastrophically is matched with a time limit, a reply nested
too deeply is a finding about the reply, and any root a schema may have is asked for
as structured output. Exercised through the command line against an OpenAI-compatible
server on loopback, as a user runs it.
"""

from __future__ import annotations

import http.server
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from self_refine.cli.main import main
from self_refine.critics.verifiers.json_schema import JSON_SCHEMA
from self_refine.errors import ConfigError
from tests.openai_server import OpenAIServer

SECRET = "TOP-SECRET-TOKEN-123"


def _flags(server: OpenAIServer, *critics: str) -> list[str]:
    return [
        "--model", "stand-in", "--base-url", server.base_url, "--max-retries", "0",
        "--critics", ",".join(critics or ("llm",)),
    ]  # fmt: skip


def _seen_anywhere(text: str, server: OpenAIServer, folder: Path) -> list[str]:
    """Where `text` shows up: the server's requests, and every file in `folder` (databases too)."""
    found = [f"request {i}" for i, r in enumerate(server.requests) if text in json.dumps(r.body)]
    for path in folder.rglob("*"):
        if path.is_file() and text.encode() in path.read_bytes():
            found.append(str(path))
    return found


class _Counting(http.server.BaseHTTPRequestHandler):
    gets: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (the handler's API)
        type(self).gets.append(self.path)
        body = json.dumps({"enum": [SECRET]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def schema_host() -> Iterator[tuple[str, list[str]]]:
    """A web server on loopback that would hand out a schema, and the paths it was asked for."""
    _Counting.gets = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/schema.json", _Counting.gets
    finally:
        httpd.shutdown()
        httpd.server_close()


def _secret_file(folder: Path) -> Path:
    secret = folder / "secret" / "secret.json"
    secret.parent.mkdir()
    secret.write_text(json.dumps({"enum": [SECRET]}))
    return secret


def test_a_dataset_schema_that_names_a_file_is_refused_and_the_file_never_read(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = _secret_file(workdir).as_uri()
    schema = {"type": "object", "properties": {"a": {"$ref": ref}}}
    item = {"id": "x", "task": "Give an object with a.", "reference": {"schema": schema}}
    Path("in.jsonl").write_text(json.dumps(item) + "\n")
    with OpenAIServer() as server:
        args = ["batch", "in.jsonl", "-o", "out.jsonl", *_flags(server, "json_schema", "llm")]
        code = main([*args, "--db", "c.sqlite"])
    error = capsys.readouterr().err
    assert code == 2, error
    assert f"'{ref}', which points outside the schema" in error
    assert '"#/$defs/NAME"' in error  # what to do instead
    assert server.requests == []
    assert _seen_anywhere(SECRET, server, workdir) == [str(workdir / "secret/secret.json")]


def test_a_response_format_that_names_a_url_is_refused_before_any_request(
    workdir: Path, capsys: pytest.CaptureFixture[str], schema_host: tuple[str, list[str]]
) -> None:
    url, gets = schema_host
    Path("fmt.json").write_text(json.dumps({"type": "object", "properties": {"a": {"$ref": url}}}))
    with OpenAIServer() as server:
        code = main(["run", "Give an object with a.", *_flags(server), "--response-format",
                     "fmt.json", "--db", "c.sqlite", "--max-iterations", "0"])  # fmt: skip
    error = capsys.readouterr().err
    assert code == 2, error
    assert "--response-format file 'fmt.json'" in error and f"'{url}'" in error
    assert "points outside the schema" in error
    assert gets == [] and server.requests == []


def test_a_schema_file_reference_is_refused_by_the_verifier_itself(tmp_path: Path) -> None:
    ref = _secret_file(tmp_path).as_uri()
    with pytest.raises(ConfigError, match="points outside the schema"):
        JSON_SCHEMA("", '{"a": "guess"}', {"schema": {"properties": {"a": {"$ref": ref}}}})
    relative = {"properties": {"a": {"$ref": "secret/secret.json"}}}
    with pytest.raises(ConfigError, match="points outside the schema"):
        JSON_SCHEMA("", '{"a": "guess"}', {"schema": relative})


def test_references_inside_the_schema_resolve_embedded_resources_included() -> None:
    schema = {
        "$id": "https://example.com/root.json",
        "$defs": {
            "name": {"type": "string", "minLength": 2},
            "age": {"$id": "age.json", "type": "integer", "minimum": 0},
        },
        "properties": {"name": {"$ref": "#/$defs/name"}, "age": {"$ref": "age.json"}},
    }
    good = JSON_SCHEMA("", '{"name": "Tom", "age": 3}', {"schema": schema})
    bad = JSON_SCHEMA("", '{"name": "T", "age": -1}', {"schema": schema})
    assert good.done and not bad.done
    assert len(bad.feedback) == 2 and "At $.age" in bad.feedback[0]


def test_a_reference_to_nothing_in_the_schema_is_refused_up_front() -> None:
    with pytest.raises(ConfigError, match="points to nothing in the schema"):
        JSON_SCHEMA("", "{}", {"schema": {"properties": {"a": {"$ref": "#/$defs/missing"}}}})


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        {"anyOf": [{"type": "null"}, {"$ref": "#"}]},
        {
            "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
            "properties": {"x": {"$ref": "#/$defs/a"}},
        },
    ],
    ids=["itself", "through-anyOf", "two-defs"],
)
def test_a_schema_that_applies_itself_in_place_is_refused_before_it_can_recurse(
    schema: dict[str, Any], workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ConfigError, match="loops: .* validating would never end"):
        JSON_SCHEMA("", '{"x": "y"}', {"schema": schema})
    Path("fmt.json").write_text(json.dumps(schema))
    with OpenAIServer() as server:
        code = main(["run", "Give JSON.", *_flags(server), "--response-format", "fmt.json",
                     "--db", "c.sqlite"])  # fmt: skip
    error = capsys.readouterr().err
    assert code == 2 and "loops" in error and server.requests == [], error


def test_a_recursive_schema_that_goes_deeper_into_the_value_is_fine() -> None:
    tree = {
        "type": "object",
        "required": ["name"],
        "properties": {"name": {"type": "string"}, "children": {"items": {"$ref": "#"}}},
    }
    value = {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}
    assert JSON_SCHEMA("", json.dumps(value), {"schema": tree}).done
    broken = {"name": "a", "children": [{"children": []}]}
    found = JSON_SCHEMA("", json.dumps(broken), {"schema": tree})
    assert found.feedback == ["At $.children[0]: 'name' is a required property."]


def test_a_long_chain_of_references_is_refused() -> None:
    defs = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(40)}
    defs["d40"] = {"type": "string"}
    with pytest.raises(ConfigError, match="more than 32 references"):
        JSON_SCHEMA("", '"x"', {"schema": {"$defs": defs, "$ref": "#/$defs/d0"}})


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("schema", "value", "said"),
    [
        # the regex module's own checks answer this one at once, and rightly
        ({"properties": {"a": {"pattern": "^(a+)+$"}}}, {"a": "a" * 40 + "!"}, "At $.a: 'aaa"),
        (
            {"properties": {"a": {"pattern": "^(a|aa)+$"}}},
            {"a": "a" * 60 + "!"},
            "At $.a: 'aaa",
        ),
        ({"patternProperties": {"^(a|aa)+$": {"type": "integer"}}}, {"a" * 60 + "!": 1}, "At $: "),
        (
            {"patternProperties": {"^(a|a)+$": {}}, "additionalProperties": False},
            {"a" * 40 + "!": 1},
            "At $: ",
        ),
    ],
    ids=["nested-repeat", "pattern", "patternProperties", "additionalProperties"],
)
def test_a_pattern_that_backtracks_catastrophically_is_cut_off_in_time(
    schema: dict[str, Any], value: Any, said: str
) -> None:
    started = time.monotonic()
    found = JSON_SCHEMA("", json.dumps(value), {"schema": schema})
    assert not found.done and found.feedback[0].startswith(said), found.feedback
    if "+)+" not in json.dumps(schema):
        assert "could not be checked against the pattern" in found.feedback[0]
        assert "backtracks catastrophically" in found.feedback[0]
    assert time.monotonic() - started < 30  # the time limit is 1 s; a hang is minutes


def test_patterns_still_match_as_before() -> None:
    schema = {
        "properties": {"code": {"pattern": "^[A-Z]{3}-\\d+$"}},
        "patternProperties": {"^x-": {"type": "string"}},
        "additionalProperties": False,
    }
    good = {"code": "ABC-12", "x-note": "fine"}
    assert JSON_SCHEMA("", json.dumps(good), {"schema": schema}).done
    bad = {"code": "abc", "x-note": 3, "other": 1}
    feedback = JSON_SCHEMA("", json.dumps(bad), {"schema": schema}).feedback
    assert feedback == [
        "At $: 'other' matches none of the key patterns '^x-'.",
        "At $.code: 'abc' does not match '^[A-Z]{3}-\\\\d+$'.",
        "At $.x-note: 3 is not of type 'string'.",
    ]


def test_a_pattern_that_is_no_regular_expression_is_refused_up_front() -> None:
    with pytest.raises(ConfigError, match="'\\(unclosed' is not a 'regex'"):
        JSON_SCHEMA("", "{}", {"schema": {"properties": {"a": {"pattern": "(unclosed"}}}})


def _nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def test_a_reply_nested_too_deeply_is_a_finding_not_a_crash() -> None:
    for reply in (_nested(1_400), _nested(33), _nested(50_000)):
        found = JSON_SCHEMA("", reply, {"schema": {"type": "object"}})
        assert not found.done and found.score == 0.0
        assert "nested more than 32 levels deep" in found.feedback[0]
    assert JSON_SCHEMA("", _nested(32), {"schema": {"type": "array"}}).done


def _replier(reply: str) -> Any:
    def respond(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
        system = str(messages[0].get("content", ""))
        if system.startswith("Role: critic"):
            return json.dumps({"feedback": ["Return an object."], "score": 0.1, "done": False})
        return reply

    return respond


def test_a_run_whose_reply_is_nested_too_deeply_ends_normally(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = json.dumps({"schema": {"type": "object"}})
    with OpenAIServer(responder=_replier(_nested(1_400))) as server:
        args = ["run", "Give an object.", *_flags(server, "json_schema", "llm")]
        code = main([*args, "--reference", reference, "--db", "c.sqlite", "--max-iterations", "1"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "nested more than 32 levels deep" in captured.out


@pytest.mark.parametrize("levels", [1_400, 50_000])
def test_a_typed_run_whose_reply_is_nested_too_deeply_ends_normally(
    levels: int, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("fmt.json").write_text(json.dumps({"type": "object"}))
    with OpenAIServer(responder=_replier(_nested(levels))) as server:
        code = main(["run", "Give an object.", *_flags(server), "--response-format", "fmt.json",
                     "--db", "c.sqlite", "--max-iterations", "1"])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    # 100 KB is over the longest draft the run takes: rejected before any check
    said = "nested more than 32 levels deep" if levels < 10_000 else "rejected (too_long)"
    assert said in captured.out


def _echo_json(value: Any) -> Any:
    def respond(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
        system = str(messages[0].get("content", ""))
        if system.startswith("Role: critic"):
            return json.dumps({"feedback": [], "score": 1.0, "done": True})
        return json.dumps(value)

    return respond


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"type": "object"}, {"name": "Tom"}),
        ({"type": "array", "items": {"type": "integer"}}, [1, 2]),
        ({"type": "string"}, "Tom"),
        ({"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n"}, 7),
    ],
    ids=["object", "array", "string", "ref-root"],
)
def test_a_response_format_of_any_root_is_asked_for_and_accepted(
    schema: dict[str, Any], value: Any, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("fmt.json").write_text(json.dumps(schema))
    with OpenAIServer(responder=_echo_json(value)) as server:
        args = ["run", "Give JSON.", *_flags(server), "--response-format", "fmt.json"]
        code = main([*args, "--db", "c.sqlite", "--thread-id", "t", "--max-iterations", "1"])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        formats = [r.body.get("response_format", {}) for r in server.chat_requests("generator")]
        assert formats[0]["type"] == "json_schema"
        sent = formats[0]["json_schema"]["schema"]
        assert {k: v for k, v in sent.items() if k != "properties"} == schema
        assert main(["resume", "t", "--db", "c.sqlite", "--base-url", server.base_url]) == 0
    with sqlite3.connect("c.sqlite") as conn:
        assert conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0] > 0


def test_a_response_format_file_nested_too_deeply_is_refused_naming_the_file(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep: Any = {"type": "string"}
    Path("deep.json").write_text('{"not":' * 60_000 + "{}" + "}" * 60_000)
    Path("big.json").write_text(json.dumps({"enum": ["x" * 1000] * 10_000}))
    Path("wide.json").write_text(json.dumps({"enum": ["x" * 1000] * 200}))
    for _ in range(40):
        deep = {"items": deep}
    Path("forty.json").write_text(json.dumps(deep))
    said = {
        "deep.json": "is JSON nested too deeply",
        "big.json": "is over 1 MB",
        "wide.json": "holds over 100,000 characters of text",
        "forty.json": "is nested more than 32 levels deep",
    }
    for name, words in said.items():
        assert main(["run", "Give JSON.", "--model", "offline", "--response-format", name]) == 2
        error = capsys.readouterr().err
        assert f"--response-format file '{name}'" in error and words in error, error
        assert "reference" not in error and error.count("\n") == 1
