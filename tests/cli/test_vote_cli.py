"""--select vote on the command line: taken with a sampling run, refused with a refining one."""

from __future__ import annotations

import pytest

from self_refine.cli.main import main
from tests.cli.conftest import Calls


@pytest.mark.usefixtures("workdir")
def test_the_command_line_takes_a_vote_and_refuses_one_that_makes_no_sense(
    capsys: pytest.CaptureFixture[str], calls: Calls
) -> None:
    code = main(
        ["run", "What is 2 + 3?", "--profile", "math", "--strategy", "refine", "--select", "vote"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "--select vote counts the final answers" in err
    assert 'use strategy "sample"' in err
    assert calls.roles == []
    code = main(
        ["run", "What is 2 + 3?", "--profile", "math", "--strategy", "sample", "--select", "vote"]
    )
    assert code == 0 and calls.roles[0] == "generator"


@pytest.mark.usefixtures("workdir")
def test_a_vote_with_no_strategy_named_samples_and_says_so(
    capsys: pytest.CaptureFixture[str], calls: Calls
) -> None:
    code = main(["run", "What is 2 + 3?", "--profile", "math", "--select", "vote"])
    err = capsys.readouterr().err
    assert code == 0 and calls.roles[0] == "generator"
    assert 'self-refine: strategy sample (select "vote" counts the final answers' in err
