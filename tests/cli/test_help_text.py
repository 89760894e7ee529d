"""What `self-refine COMMAND --help` says reads as it should: brackets closed, ranges given."""

from __future__ import annotations

import argparse

import pytest

from self_refine.cli.parser import build_parser
from self_refine.settings.fields import CANDIDATES_LIMIT, MAX_ITERATIONS_LIMIT

_PAIRS = {")": "(", "]": "[", "}": "{"}


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    found = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {"": parser, **found.choices}


def _unbalanced(text: str) -> str | None:
    """The first bracket left open or closed without an opening one, else None."""
    stack: list[str] = []
    for char in text:
        if char in "([{":
            stack.append(char)
        elif char in _PAIRS:
            if not stack or stack.pop() != _PAIRS[char]:
                return char
    return stack[-1] if stack else None


def _option_help(command: argparse.ArgumentParser, flag: str) -> str:
    action = next(a for a in command._actions if flag in a.option_strings)
    return " ".join(str(action.help % {"default": action.default}).split())


@pytest.mark.parametrize("name", sorted(_commands()))
def test_every_option_help_has_its_brackets_closed(name: str) -> None:
    command = _commands()[name]
    for action in command._actions:
        text = " ".join(str(action.help or "").split())
        assert _unbalanced(text) is None, f"{name} {action.option_strings}: {text}"
        # Two asides in a row ("...choosing) (refine)") read as one unclosed aside.
        assert ") (" not in text, f"{name} {action.option_strings}: {text}"
    assert _unbalanced(command.format_help()) is None, name


def test_run_help_says_what_each_setting_means() -> None:
    run = _commands()["run"]
    model = _option_help(run, "--model")
    for said in ("491 MB", "llama.cpp", "local:smollm2", "local:qwen2.5-coder-1.5b"):
        assert said in model
    assert f"1..{CANDIDATES_LIMIT}" in _option_help(run, "--candidates")
    steps = _option_help(run, "--max-iterations")
    assert f"0..{MAX_ITERATIONS_LIMIT}" in steps
    for strategy in ("refine", "sample", "search"):
        assert f"with {strategy}" in steps or f"--strategy {strategy}" in steps
    select = _option_help(run, "--select")
    assert "best, the highest-scoring" in select and "last, the newest" in select
