"""--select vote on the command line: taken with a sampling run, refused with a refining one."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from self_refine.cli.main import main
from self_refine.models.offline import OfflineModel
from tests.cli.conftest import Calls
from tests.fakes import role_of


@pytest.mark.usefixtures("workdir")
def test_the_command_line_takes_a_vote_and_refuses_one_that_makes_no_sense(
    capsys: pytest.CaptureFixture[str], calls: Calls
) -> None:
    code = main(
        [
            "run",
            "What is 2 + 3?",
            "--profile",
            "general",
            "--strategy",
            "refine",
            "--select",
            "vote",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "--select vote counts final answers" in err
    assert "'general' state none" in err
    assert calls.roles == []
    code = main(
        ["run", "What is 2 + 3?", "--profile", "math", "--strategy", "sample", "--select", "vote"]
    )
    assert code == 0 and calls.roles[0] == "generator"


@pytest.mark.usefixtures("workdir")
def test_a_vote_without_a_critic_calls_no_critic_and_shows_its_drafts_as_not_critiqued(
    capsys: pytest.CaptureFixture[str], calls: Calls, workdir: Path
) -> None:
    vote = ["--profile", "math", "--strategy", "sample", "--select", "vote"]
    code = main(["run", "What is 2 + 3?", *vote, "--critics", "none", "--thread-id", "v"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert calls.roles and set(calls.roles) == {"generator"}
    assert "(not critiqued: critics none)" in out and "Stopped: max_iterations" in out
    assert main(["show", "v"]) == 0
    assert "max_iterations" in capsys.readouterr().out
    assert main(["show", "v", "--html", "v.html"]) == 0
    assert "not critiqued (critics none)" in (workdir / "v.html").read_text()


@pytest.mark.usefixtures("workdir")
def test_the_command_line_refuses_no_critic_without_a_vote_and_its_help_says_when_it_fits(
    capsys: pytest.CaptureFixture[str], calls: Calls
) -> None:
    code = main(["run", "What is 2 + 3?", "--strategy", "sample", "--critics", "none"])
    err = capsys.readouterr().err
    assert code == 2 and '--critics "none" gives no score, so select "best"' in err
    assert 'use select "vote"' in err
    assert calls.roles == []
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "'none', alone, critiques nothing" in shown and "--select vote" in shown


@pytest.mark.usefixtures("workdir")
def test_a_vote_with_no_strategy_named_samples_and_says_so(
    capsys: pytest.CaptureFixture[str], calls: Calls
) -> None:
    code = main(["run", "What is 2 + 3?", "--profile", "math", "--select", "vote"])
    err = capsys.readouterr().err
    assert code == 0 and calls.roles[0] == "generator"
    assert 'self-refine: strategy sample (select "vote" counts the final answers' in err


@pytest.mark.parametrize("command", ["run", "batch"])
def test_a_vote_over_drafts_that_state_no_final_answer_is_refused_before_any_work(
    workdir: Path, capsys: pytest.CaptureFixture[str], calls: Calls, command: str
) -> None:
    (workdir / "in.jsonl").write_text('{"id": "a", "task": "Describe a river."}\n')
    given = ["in.jsonl", "-o", "out.jsonl"] if command == "batch" else ["Describe a river."]
    vote = ["--profile", "general", "--strategy", "sample", "--select", "vote"]
    code = main([command, *given, *vote, "--db", "c.sqlite"])
    err = capsys.readouterr().err
    assert code == 2 and "the drafts of profile 'general' state none" in err
    assert calls.roles == []
    assert not (workdir / "out.jsonl").exists() and not (workdir / "c.sqlite").exists()


def _drafts_stating(monkeypatch: pytest.MonkeyPatch, answers: list[str], text: str) -> None:
    """The offline model's generator writes `text` then "The answer is A." for each answer
    in the order the calls come (a step's branches race, so which node of a step gets which
    answer is not fixed); its other roles answer as the offline model does."""
    stated = iter(answers)
    lock = threading.Lock()
    original = OfflineModel._generate

    def drafts(self: OfflineModel, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        if role_of(messages) != "generator":
            return original(self, messages, *args, **kwargs)
        with lock:
            answer = next(stated)
        reply = f"{text.format(answer)} The answer is {answer}."
        return ChatResult(generations=[ChatGeneration(message=AIMessage(reply))])

    monkeypatch.setattr(OfflineModel, "_generate", drafts)


@pytest.mark.usefixtures("workdir")
def test_the_run_says_the_answer_was_chosen_by_the_vote_and_which(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _drafts_stating(
        monkeypatch, ["6", "5", "6", "5", "5"], "Two and three, counted with {} fingers."
    )
    run = ["run", "What is 2 + 3?", "--profile", "math", "--strategy", "sample"]
    assert main([*run, "--max-iterations", "1", "--critics", "none"]) == 0
    out = capsys.readouterr().out
    assert (
        "[finalize] answer chosen by the vote: 6 (1 of 2 drafts, tied with 5, reached first; "
        "tally 6: 1, 5: 1)" in out
    )
    assert main([*run, "--max-iterations", "2", "--critics", "none", "--thread-id", "t3"]) == 0
    out = capsys.readouterr().out
    assert "[finalize] answer chosen by the vote: 5 (2 of 3 drafts; tally 5: 2, 6: 1)" in out


@pytest.mark.usefixtures("workdir")
def test_run_show_and_the_page_tell_the_same_vote_when_the_first_draft_is_wrong(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, workdir: Path
) -> None:
    """A draft of the first step states 102 (wrong) and step picks keep drafts by index
    alone; the vote answers 346 (6 of 8): every view says so."""
    answers = ["102", "346", "346", "346", "346", "120", "346", "346"]
    _drafts_stating(monkeypatch, answers, "Counting gives {}.")
    run = ["run", "What is 173 * 2?", "--profile", "math", "--candidates", "4"]
    vote = ["--strategy", "sample", "--critics", "none", "--max-iterations", "1"]
    assert main([*run, *vote, "--thread-id", "v"]) == 0
    out = capsys.readouterr().out
    told = "346 (6 of 8 drafts; tally 346: 6, 102: 1, 120: 1)"
    assert f"[finalize] answer chosen by the vote: {told}" in out
    assert "ties go to the lower index" not in out.split("the vote decides the answer")[0]
    assert "the vote decides the answer, not this pick (so far 346: 3, 102: 1, of 4 drafts)" in out
    assert main(["show", "v", "--html", "v.html"]) == 0
    shown = capsys.readouterr().out
    assert f"answer chosen by the vote: {told}" in shown
    page = (workdir / "v.html").read_text()
    assert "tally 346: 6, 102: 1, 120: 1" in page
    # The answer's text comes first, before the tree and the steps.
    answer_at = page.index('<pre class="answer">Counting gives 346. The answer is 346.</pre>')
    assert answer_at < page.index('class="tree"') < page.index('class="timeline"')
    # The answer badge sits on the answer's own draft in the tree, a draft that states 346,
    # and a step is badged only where the draft it kept is that draft.
    nodes = dict(
        re.findall(r'<li class="tree-node[^"]*" data-node="(\d+)".*?states (\d+)', page, re.S)
    )
    (answer_node,) = re.findall(
        r'<li class="tree-node[^"]*\banswer\b[^"]*" data-node="(\d+)"', page
    )
    assert sorted(nodes.values()).count("102") == 1 and nodes[answer_node] == "346"
    badged = re.findall(r'<li class="attempt picked"[^>]*data-node="(\d+)"', page)
    assert badged in ([], [answer_node])
    # Each tree node shows the answer it states and a line of its text.
    assert '· states 102</span><br><span class="node-line">Counting gives 102.' in page
    assert page.count("· states 346") == 6
