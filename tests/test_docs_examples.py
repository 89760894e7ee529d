"""The code in the README and the guides: every Python block is valid, the ones that need no
endpoint run, and the ones followed by their output print exactly that output.

Blocks that need an API key or a server (`gpt-4o-mini`, the SDK against `langgraph dev`,
PostgreSQL) are only compiled here: told by the code's names and strings, never by its
comments. So are blocks that train with `GRPOTrainer` (minutes a step of the 0.5B model on
a CPU): `examples/train_grpo.py`, which they follow, runs in tests/test_examples.py on a
tiny model and in the training benchmark on the real one. The Studio example runs in the
integration tests against a real server. A block that uses `model="local"` runs with the
small SmolLM2 model and short replies instead of the 491 MB default.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_NEEDS_ENDPOINT = ("gpt-4o-mini", "get_sync_client", "Postgres", "URL")
_TRAINS = ("GRPOTrainer",)


def _blocks() -> list[tuple[str, str, str | None]]:
    """(where, code, expected output or None) of every Python block."""
    found = []
    for page in PAGES:
        blocks = re.findall(r"```(\w+)\n(.*?)```", page.read_text(), re.S)
        for index, (lang, code) in enumerate(blocks):
            if lang != "python":
                continue
            following = blocks[index + 1] if index + 1 < len(blocks) else ("", "")
            output = following[1] if following[0] == "text" else None
            found.append((f"{page.relative_to(ROOT)}#{index}", code, output))
    return found


BLOCKS = _blocks()


def test_the_readme_and_the_embedding_guide_show_runnable_examples() -> None:
    readme = [code for where, code, _ in BLOCKS if where.startswith("README.md")]
    assert len(readme) == 2 and "refine(" in readme[0] and "refine_node(" in readme[1]
    assert all(len([line for line in code.splitlines() if line.strip()]) <= 12 for code in readme)
    embedding = [b for b in BLOCKS if b[0].startswith("docs/guides/embedding.md")]
    assert len([b for b in embedding if b[2] is not None]) == 2


def _needs_endpoint(tree: ast.Module, markers: tuple[str, ...] = _NEEDS_ENDPOINT) -> bool:
    """Whether the code names an endpoint in its identifiers or strings (comments don't count)."""
    words = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            words.add(node.id)
        elif isinstance(node, ast.Attribute):
            words.add(node.attr)
        elif isinstance(node, ast.alias):
            words.add(node.name)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            words.add(node.value)
    return any(marker in word for word in words for marker in markers)


_THE_READERS_OWN = {"prompts", "completions", "gold", "URL"}
"""Names a block uses for the reader's own data (their prompts, their database's URL)."""


@pytest.mark.parametrize(("where", "code", "output"), BLOCKS, ids=[b[0] for b in BLOCKS])
def test_every_block_imports_or_defines_the_names_it_uses(
    where: str, code: str, output: str | None, tmp_path: Path
) -> None:
    if code.lstrip().startswith("Command("):
        return  # the values a person answers with in Studio, not a program
    block = tmp_path / "block.py"
    block.write_text(code)
    found = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--select", "F821",
         "--output-format", "json", str(block)],
        capture_output=True, text=True,
    )  # fmt: skip
    undefined = {re.sub(r"Undefined name `(.*)`", r"\1", e["message"]) for e in _json(found.stdout)}
    assert undefined <= _THE_READERS_OWN, f"{where} uses names it never defines: {undefined}"


def _json(text: str) -> list[dict[str, str]]:
    import json

    return list(json.loads(text or "[]"))


def test_markers_are_read_from_code_not_comments() -> None:
    assert not _needs_endpoint(ast.parse('refine("t", model="local")  # or "gpt-4o-mini"'))
    assert _needs_endpoint(ast.parse('refine("t", model="gpt-4o-mini")'))
    assert _needs_endpoint(ast.parse("from langgraph_sdk import get_sync_client"))


@pytest.mark.parametrize(("where", "code", "output"), BLOCKS, ids=[b[0] for b in BLOCKS])
def test_code_block(where: str, code: str, output: str | None, tmp_path: Path) -> None:
    tree = ast.parse(code.replace("await ", ""))  # every block is valid Python (async too)
    trains = _needs_endpoint(tree, _TRAINS)
    if _needs_endpoint(tree) or trains or code.lstrip().startswith("Command("):
        return
    if 'model="local"' in code:
        pytest.importorskip("llama_cpp", reason='needs the local extra: pip install -e ".[local]"')
        code = code.replace('model="local"', 'model="local:smollm2", max_tokens=48')
    script = tmp_path / "example.py"
    script.write_text(code)
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    if output is not None:
        assert done.stdout.strip() == output.strip()
