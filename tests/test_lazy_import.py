"""`import self_refine` and the program's module load no LangGraph or LangChain."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import self_refine

HEAVY = ("langgraph", "langchain_core", "langchain_openai", "openai", "pydantic")


def _modules_loaded_by(statement: str) -> list[str]:
    """Top-level packages among HEAVY that a fresh interpreter has loaded after `statement`."""
    code = (
        f"import json, sys\n{statement}\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return list(json.loads(out.stdout))


@pytest.mark.parametrize("statement", ["import self_refine", "import self_refine.cli"])
def test_importing_the_package_or_the_program_loads_nothing_heavy(statement: str) -> None:
    assert _modules_loaded_by(statement) == []


def test_the_help_text_prints_without_loading_langgraph() -> None:
    loaded = _modules_loaded_by(
        "import contextlib, io\nfrom self_refine.cli.main import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--help'])"
    )
    assert loaded == []


def test_every_public_name_resolves_and_is_listed() -> None:
    for name in self_refine.__all__:
        assert getattr(self_refine, name) is not None
    assert set(self_refine.__all__) <= set(dir(self_refine))
    assert self_refine.refine.__module__ == "self_refine.run"


def test_an_unknown_name_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        self_refine.nonexistent  # noqa: B018
