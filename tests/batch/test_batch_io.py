"""Batch input parsing, ids, shards, and the resumable output file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from self_refine.batch.items import in_shard, item_id, parse_shard, read_items
from self_refine.batch.output import OutputFile
from self_refine.errors import ConfigError


def _write(path: Path, *lines: str) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def test_read_items_keeps_good_lines_and_reports_bad_ones_by_line(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "in.jsonl",
        '{"task": "one", "id": "a"}',
        "",
        '{"task": "two", "reference": {"answer": "2"}, "draft": "2"}',
        '{"task": "three",',
        "[1, 2]",
        '{"id": "x"}',
        '{"task": "   "}',
        '{"task": "four", "id": true}',
        '{"task": "five", "draft": 5}',
        '{"task": "six", "id": "a"}',
        '{"task": "seven", "id": 7}',
    )
    items, problems = read_items(path)
    assert [(i.task, i.line) for i in items] == [("one", 1), ("two", 3), ("seven", 11)]
    assert items[1].reference == {"answer": "2"} and items[1].draft == "2"
    assert items[2].id == "7"
    found = {p.line: p.message for p in problems}
    assert sorted(found) == [4, 5, 6, 7, 8, 9, 10]
    assert "not valid JSON" in found[4]
    assert "JSON object" in found[5]
    assert '"task"' in found[6] and '"task"' in found[7]
    assert '"id"' in found[8]
    assert '"draft"' in found[9]
    assert "repeats line 1" in found[10]
    assert str(problems[0]).startswith("line 4: ")


def test_default_id_is_a_stable_hash_of_the_content() -> None:
    one = item_id({"task": "t", "reference": {"answer": "1"}})
    assert one == item_id({"reference": {"answer": "1"}, "task": "t"})
    assert one != item_id({"task": "t", "reference": {"answer": "2"}})
    assert len(one) == 16


def test_identical_lines_are_one_item(tmp_path: Path) -> None:
    path = _write(tmp_path / "in.jsonl", '{"task": "t"}', '{"task": "t"}')
    items, problems = read_items(path)
    assert len(items) == 1
    assert problems[0].line == 2 and "repeats line 1" in problems[0].message


def test_missing_input_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="check the input path"):
        read_items(tmp_path / "nope.jsonl")


@pytest.mark.parametrize("text", ["0/4", "5/4", "a/b", "3", "1/0", ""])
def test_bad_shards_are_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="I/N"):
        parse_shard(text)


def test_shards_cover_every_id_exactly_once() -> None:
    ids = [f"item-{n}" for n in range(300)]
    owners = {i: [s for s in range(1, 5) if in_shard(i, (s, 4))] for i in ids}
    assert all(len(shards) == 1 for shards in owners.values())
    sizes = [sum(1 for shards in owners.values() if shards == [s]) for s in range(1, 5)]
    assert min(sizes) > 40  # every shard gets a share
    assert parse_shard("2/4") == (2, 4)


def _result(id: str, answer: str, **more: str) -> dict[str, str]:
    """A result line as `self-refine batch` writes it, cut to what these tests read."""
    return {"id": id, "answer": answer, "stop_reason": "verified", **more}


A = '{"id": "a", "answer": "1", "stop_reason": "verified"}'


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_output_file_resumes_with_the_ids_it_holds(tmp_path: Path) -> None:
    path = tmp_path / "out" / "results.jsonl"
    output = OutputFile.open(path, "key1")
    output.write(_result("a", "1", run_key="key1"))
    output.write(_result("b", "2", run_key="key1"))
    output.close()
    again = OutputFile.open(path, "key1")
    assert again.done_ids() == {"a", "b"}
    assert not again.repaired
    again.write(_result("c", "3", run_key="key1"))
    again.close()
    assert [r["id"] for r in _lines(path)] == ["a", "b", "c"]


def test_a_torn_last_line_is_cut_off_and_its_item_written_once(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(A + '\n{"id": "b", "ans')
    output = OutputFile.open(path)
    assert output.repaired
    assert output.done_ids() == {"a"}
    output.write(_result("b", "2"))
    output.close()
    assert [r["id"] for r in _lines(path)] == ["a", "b"]


def test_a_whole_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(A)
    output = OutputFile.open(path)
    output.write(_result("b", "2"))
    output.close()
    assert [r["id"] for r in _lines(path)] == ["a", "b"]


def test_a_broken_line_before_the_end_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(A + "\nnot json\n" + A.replace('"a"', '"b"') + "\n")
    with pytest.raises(ConfigError, match="line 2 of"):
        OutputFile.open(path)


def test_output_from_other_settings_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(_result("a", "1", run_key="old")) + "\n")
    with pytest.raises(ConfigError, match="other settings"):
        OutputFile.open(path, "new")


def test_two_writers_cannot_share_an_output_file(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    first = OutputFile.open(path)
    try:
        with pytest.raises(ConfigError, match="another running batch"):
            OutputFile.open(path)
    finally:
        first.close()
    OutputFile.open(path).close()  # free again once the first closed


def test_read_items_splits_on_newline_only_and_accepts_a_bom(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    lines = [
        json.dumps({"id": "a", "task": "one\u2028two\u2029three\x85four"}, ensure_ascii=False),
        json.dumps({"id": "b", "task": "second"}),
    ]
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(lines).encode("utf-8") + b"\r\n")
    items, problems = read_items(path)
    assert problems == []
    assert [(item.id, item.line) for item in items] == [("a", 1), ("b", 2)]
    assert items[0].task == "one\u2028two\u2029three\x85four"


def test_read_items_reports_non_utf8_and_deeply_nested_lines_only(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    nested = '{"task": "deep", "reference": ' + "[" * 100_000 + "]" * 100_000 + "}"
    path.write_bytes(
        b'{"id": "a", "task": "caf\xe9"}\n' + nested.encode() + b'\n{"id": "c", "task": "fine"}\n'
    )
    items, problems = read_items(path)
    assert [item.id for item in items] == ["c"]
    assert [problem.line for problem in problems] == [1, 2]
    assert "UTF-8" in problems[0].message
    assert "nested" in problems[1].message
