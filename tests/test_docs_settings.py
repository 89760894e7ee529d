"""The Python API guide's tables hold what the code has: every setting, every stop reason."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import self_refine.stopping as stopping
from self_refine.settings.fields import FIELD_NAMES

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guides" / "python-api.md"


def _table(heading: str) -> list[str]:
    """The first cells of the table under `heading` in the guide, one per row."""
    text = GUIDE.read_text()
    section = text.split(heading, 1)[1].split("\n###", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    return [row.split("|")[1] for row in rows[1:] if not row.startswith("|---")]


def _names(cells: list[str]) -> set[str]:
    return {name for cell in cells for name in re.findall(r"`(\w+)`", cell)}


def _reasons_in_code() -> set[str]:
    """Every stop reason a policy of `self_refine.stopping` can return."""
    tree = ast.parse(inspect.getsource(stopping))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "__call__":
            for returned in ast.walk(node):
                if not isinstance(returned, ast.Return):
                    continue
                value = returned.value
                # `return "reason" if ... else None`, or `return "reason"`
                value = value.body if isinstance(value, ast.IfExp) else value
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    found.add(value.value)
    return found


def test_the_options_table_lists_every_refine_context_field() -> None:
    listed = _names(_table("### Options"))
    assert sorted(set(FIELD_NAMES) - listed) == []
    assert sorted(listed - set(FIELD_NAMES)) == []


def test_the_stop_reasons_table_lists_every_reason_the_code_gives() -> None:
    in_code = _reasons_in_code()
    assert {"verified", "token_budget", "max_iterations"} <= in_code
    assert _names(_table("### Stop reasons")) == in_code


def test_the_token_budget_is_described_by_its_setting() -> None:
    text = GUIDE.read_text()
    budget = next(line for line in text.splitlines() if line.startswith("| `token_budget`"))
    assert "`max_tokens_total" in budget
