"""MkDocs hook: pages generated at build time (CLI reference, benchmarks, changelog).

The page is built at every `mkdocs build` from `self_refine.cli.parser.build_parser`,
so it cannot drift from the options the program accepts.
"""

from __future__ import annotations

import argparse
import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

PAGE = "reference/cli.md"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _help(parser: argparse.ArgumentParser) -> str:
    formatter = parser.formatter_class
    parser.formatter_class = lambda prog: formatter(prog, width=88)  # type: ignore[misc,operator]
    try:
        return parser.format_help()
    finally:
        parser.formatter_class = formatter


def cli_reference() -> str:
    """The page's Markdown: the program's help, then each command's."""
    from self_refine.cli.parser import build_parser

    parser = build_parser()
    lines = [
        "# Command-line reference",
        "",
        "Generated from the `self-refine` program's argument parser at every docs build.",
        "",
        "```text",
        _help(parser).rstrip(),
        "```",
    ]
    for name, command in _subcommands(parser).items():
        lines += ["", f"## `self-refine {name}`", "", "```text", _help(command).rstrip(), "```"]
    return "\n".join(lines) + "\n"


COPIED = {"benchmarks.md": "benchmarks/README.md", "changelog.md": "CHANGELOG.md"}
"""Pages whose text lives in the repository outside docs/, copied in at build time."""


def _copied(path: Path) -> str:
    text = path.read_text()
    # Links inside these files are relative to their own folder, not to the site.
    return re.sub(r"\]\((?!https?:|#)([^)\s]+)\)", lambda m: f"]({_outside(m.group(1))})", text)


def _outside(target: str) -> str:
    return "changelog.md" if target.endswith("CHANGELOG.md") else f"#{Path(target).stem}"


def on_files(files: Files, config: Any) -> Files:
    """Add the generated pages to the site."""
    root = Path(config["config_file_path"]).parent
    files.append(File.generated(config, PAGE, content=cli_reference()))
    for page, source in COPIED.items():
        files.append(File.generated(config, page, content=_copied(root / source)))
    return files


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """Point a page's links to a copied file (`../../benchmarks/README.md`, right where the
    page is read in the repository) at its copy on the site (`../benchmarks.md`)."""
    folder = posixpath.dirname(page.file.src_path)

    def swap(match: re.Match[str]) -> str:
        target, anchor = match.group(1), match.group(2) or ""
        in_repository = posixpath.normpath(posixpath.join("docs", folder, target))
        for copy, source in COPIED.items():
            if in_repository == source:
                return f"]({posixpath.relpath(copy, folder or '.')}{anchor})"
        return match.group(0)

    return re.sub(r"\]\((?!https?:)([^)\s#]+)(#[^)\s]*)?\)", swap, markdown)
