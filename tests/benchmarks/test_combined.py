"""The README's figure drawn from several budget runs (`benchmarks/quality/combined.py`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.quality import combined


def _document(model: str, feedback: str, sets: dict[str, float]) -> dict[str, Any]:
    def budget(m: int, value: float) -> dict[str, Any]:
        return {"multiple": m, "accuracy": {"value": value, "low": value / 2, "high": 1.0}}

    results = {
        name: {
            "first": {"items": 4, "accuracy": {"value": value, "low": 0.0, "high": 1.0}},
            "strategies": {
                "sample": {"budgets": [budget(1, value), budget(2, min(1.0, value + 0.25))]},
                "refine": {"budgets": [budget(1, value), budget(2, value)]},
            },
        }
        for name, value in sets.items()
    }
    return {
        "model": {"name": model},
        "feedback": feedback,
        "part": "report",
        "budgets": [1, 2],
        "results": results,
    }


def test_panels_put_each_sets_runs_by_feedback_together() -> None:
    found = combined.panels(
        [
            _document("m", "task", {"code": 0.5}),
            _document("m", "task", {"constrained": 0.25}),
            _document("m", "key", {"code": 0.75}),
        ]
    )
    assert sorted(found) == ["code", "constrained"]
    assert sorted(found["code"]) == ["key", "task"]
    assert found["code"]["key"]["result"]["first"]["accuracy"]["value"] == 0.75
    assert list(found["constrained"]) == ["task"]


def test_runs_of_two_models_or_one_set_twice_are_refused() -> None:
    with pytest.raises(ValueError, match="different models"):
        combined.panels([_document("a", "task", {"code": 0.5}), _document("b", "key", {})])
    with pytest.raises(ValueError, match="two runs of code under --feedback task"):
        combined.panels(
            [_document("m", "task", {"code": 0.5}), _document("m", "task", {"code": 0.25})]
        )


def test_the_command_writes_the_figure(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    paths = []
    for index, document in enumerate(
        [_document("m", "task", {"code": 0.5}), _document("m", "key", {"code": 0.75})]
    ):
        path = tmp_path / f"run{index}.json"
        path.write_text(json.dumps(document))
        paths.append(str(path))
    out = tmp_path / "figure.png"
    assert combined.main([*paths, "--out", str(out)]) == 0
    assert out.read_bytes().startswith(b"\x89PNG")


def test_the_command_says_why_it_refuses(tmp_path: Path) -> None:
    paths = []
    for index, model in enumerate(["a", "b"]):
        path = tmp_path / f"run{index}.json"
        path.write_text(json.dumps(_document(model, "task", {"code": 0.5})))
        paths.append(str(path))
    with pytest.raises(SystemExit, match="combined: runs of different models"):
        combined.main([*paths, "--out", str(tmp_path / "x.png")])


def test_each_panel_says_which_line_is_which_run() -> None:
    both = ["task", "critic", "key"]
    said = combined.picked_by("constrained", both)
    assert said.startswith("picked by the task's checks;\nthe critic alone, dash-dot;\n")
    assert said.endswith("answer key (upper bound), dashed")
    assert combined.picked_by("constrained", ["critic"]) == "picked by the critic alone"
    assert combined.picked_by("code", ["key"]) == "picked by answer key (upper bound), dashed"
    assert [combined.drawn_apart(f, both) for f in both] == [False, True, True]
