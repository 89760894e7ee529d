"""`import self_refine` and the program's module load no LangGraph or LangChain; the top level.

The top level holds the names a user needs first; the names it held before and gave up
still import from it for one release, with a warning naming their module.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import warnings

import pytest

import self_refine

HEAVY = ("langgraph", "langchain_core", "langchain_openai", "openai", "pydantic", "ray")


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


def test_every_public_name_resolves_without_a_warning_and_is_listed() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        namespace: dict[str, object] = {}
        exec("from self_refine import *", namespace)
    assert sorted(n for n in namespace if not n.startswith("__")) == sorted(self_refine.__all__)
    assert set(self_refine.__all__) <= set(dir(self_refine))
    assert self_refine.refine.__module__ == "self_refine.run"
    context = importlib.import_module("self_refine.settings.fields")
    assert namespace["RefineContext"] is context.RefineContext


def test_the_top_level_holds_the_names_a_user_needs_first() -> None:
    first = {"create_self_refine_graph", "refine", "arefine", "refine_batch", "arefine_batch"}
    first |= {"RefineContext", "Roles", "refine_node", "RefineState", "ConfigError"}
    assert first <= set(self_refine.__all__)
    assert 15 <= len(self_refine.__all__) <= 20


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("LLMCritic", "self_refine.critics"),
        ("MaxIterations", "self_refine.stopping"),
        ("GRAPH_NAME", "self_refine.graphs"),
        ("OfflineModel", "self_refine.models.offline"),
    ],
)
def test_a_name_that_left_the_top_level_still_imports_with_a_warning_naming_its_module(
    name: str, module: str
) -> None:
    namespace: dict[str, object] = {}
    with pytest.warns(DeprecationWarning, match=rf"from {module} import {name}`") as caught:
        exec(f"from self_refine import {name}", namespace)
    assert namespace[name] is getattr(importlib.import_module(module), name)
    assert caught[0].filename == "<string>"  # the warning points at the importing line
    assert name not in self_refine.__all__
    assert name not in dir(self_refine)


def test_an_unknown_name_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        self_refine.nonexistent  # noqa: B018
