"""The documentation site builds with no warnings; generated pages cover every command and name."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built by `mkdocs build --strict` (every warning is an error)."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return out


def test_every_guide_page_is_built(site: Path) -> None:
    guides = sorted(p.stem for p in (ROOT / "docs" / "guides").glob("*.md"))
    assert guides, "no guide pages"
    for name in guides:
        assert (site / "guides" / name / "index.html").is_file(), name


def test_cli_reference_lists_every_command_with_its_options(site: Path) -> None:
    from self_refine.cli.parser import build_parser

    page = (site / "reference" / "cli" / "index.html").read_text()
    parser = build_parser()
    commands = next(a for a in parser._actions if a.choices and isinstance(a.choices, dict))
    for name, command in commands.choices.items():
        assert f"self-refine {name}" in page, name
        for action in command._actions:
            for flag in action.option_strings:
                assert flag in page, f"{name} {flag}"


def test_api_reference_lists_the_top_level_names_and_documents_them(site: Path) -> None:
    import self_refine

    source = (ROOT / "docs" / "reference" / "api.md").read_text()
    introduction = source.split("\n## ", 1)[0]
    listed = re.findall(r"`(\w+)`", "".join(re.findall(r"^- .*(?:\n  .*)*", introduction, re.M)))
    assert sorted(listed) == sorted(self_refine.__all__)
    page = (site / "reference" / "api" / "index.html").read_text()
    anchors = set(re.findall(r'id="self_refine\.[\w.]*?\.(\w+)"', page))
    assert sorted(set(self_refine.__all__) - anchors) == []
    assert {"MaxIterations", "LLMCritic", "GRAPH_NAME"} <= anchors


def test_the_readmes_links_point_to_files_that_exist() -> None:
    text = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r'src="([^"]+)"', text)
    local = [t.split("#")[0] for t in targets if not re.match(r"[a-z]+:", t)]
    assert local, "the README links nothing of the repository"
    assert [t for t in local if t and not (ROOT / t).exists()] == []


def test_the_guides_links_point_to_files_that_exist_in_the_repository() -> None:
    """A guide read in the repository (on GitHub, in an editor) has no dead links; the site
    build points a link to a copied file (benchmarks/README.md) at its copy."""
    dead = []
    for guide in sorted((ROOT / "docs" / "guides").glob("*.md")):
        for target in re.findall(r"\]\((?![a-z]+:|#)([^)\s#]+)", guide.read_text()):
            if not (guide.parent / target).exists():
                dead.append(f"{guide.name}: {target}")
    assert dead == []
