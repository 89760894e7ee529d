"""The guides' tables of options and profiles match the parser and PROFILES: no drift."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from self_refine.cli.parser import build_parser
from self_refine.prompts import PROFILES
from self_refine.stopping import CriticDone, NoImprovement, ScoreThreshold, StopPolicy, Unchanged

GUIDES = Path(__file__).resolve().parents[1] / "docs" / "guides"


def _table_after(page: str, heading: str) -> list[list[str]]:
    """The rows (cells stripped) of the first table after `heading` on a guide page."""
    text = (GUIDES / page).read_text()
    rest = text[text.index(heading) :]
    table = re.search(r"((?:^\|.*\|\n)+)", rest, re.M)
    assert table, f"no table after {heading!r} in {page}"
    rows = [line.strip("|").split(" | ") for line in table.group(1).splitlines()]
    return [[cell.strip() for cell in row] for row in rows[2:]]  # header and rule left out


def _subcommand(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return commands.choices[name]


def test_the_run_options_table_lists_every_option_of_run_and_no_other() -> None:
    rows = _table_after("command-line.md", "Options of `run`")
    documented = {flag for row in rows for flag in re.findall(r"--[a-z][a-z-]*", row[0])}
    actions = [a for a in _subcommand("run")._actions if a.option_strings and a.dest != "help"]
    missing = [a.option_strings[-1] for a in actions if not set(a.option_strings) & documented]
    known = {flag for a in actions for flag in a.option_strings}
    assert not missing, f"options of run missing from the guide's table: {missing}"
    assert documented <= known, f"the table lists flags run does not take: {documented - known}"


def test_the_model_option_names_the_local_forms_in_the_table_and_the_help() -> None:
    (row,) = [r for r in _table_after("command-line.md", "Options of `run`") if "--model" in r[0]]
    assert "`local`" in row[2] and "`local:PATH.gguf`" in row[2]
    (model,) = [a for a in _subcommand("run")._actions if "--model" in a.option_strings]
    assert "'local'" in (model.help or "") and "'local:PATH.gguf'" in (model.help or "")


def _policy_text(policy: StopPolicy) -> str:
    if isinstance(policy, CriticDone):
        return "critic done"
    if isinstance(policy, Unchanged):
        return "unchanged"
    if isinstance(policy, ScoreThreshold):
        return f"score >= {policy.threshold:g}"
    if isinstance(policy, NoImprovement):
        return f"no improvement in {policy.patience} rounds"
    raise AssertionError(f"the profiles table has no wording for {policy!r}: add it here")


@pytest.mark.parametrize("name", list(PROFILES))
def test_the_profiles_table_shows_each_profile_s_critics_stop_policies_and_caps(name: str) -> None:
    rows = {row[0].strip("`"): row for row in _table_after("profiles.md", "| profile |")}
    assert list(rows) == list(PROFILES), "one row per profile, in the order `profiles` prints"
    _, critics, stops, caps = rows[name]
    profile = PROFILES[name]
    assert critics.split(" (")[0] == ", ".join(profile.critics)
    assert stops == ", ".join(_policy_text(p) for p in profile.stop)
    assert caps == f"{profile.draft_tokens} / {profile.critique_tokens}"
