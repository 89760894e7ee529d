"""The README's embedding examples run and print what the README says they print."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _blocks(title: str) -> list[tuple[str, str]]:
    """The (language, code) fenced blocks of the README section with this `## ` title."""
    text = (ROOT / "README.md").read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    body = text[start : end if end != -1 else len(text)]
    return [(m.group(1), m.group(2)) for m in re.finditer(r"```(\w+)\n(.*?)```", body, re.S)]


_SECTION = _blocks("Embedding in your agent")
EXAMPLES = [
    (code, output)
    for (lang, code), (next_lang, output) in zip(_SECTION, _SECTION[1:], strict=False)
    if lang == "python" and next_lang == "text"
]


def test_the_embedding_section_has_both_examples() -> None:
    assert len(EXAMPLES) == 2
    chat_example = EXAMPLES[0][0]
    assert "refine_node(" in chat_example
    assert len([line for line in chat_example.splitlines() if line.strip()]) <= 10


@pytest.mark.parametrize(("code", "output"), EXAMPLES, ids=["refine_node", "graph_as_node"])
def test_example_prints_what_the_readme_shows(code: str, output: str, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(code)
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == output.strip()
