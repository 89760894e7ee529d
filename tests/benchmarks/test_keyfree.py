"""The key-free arithmetic settings: the vote is the library's critic-free run."""

from __future__ import annotations

from typing import Any

from benchmarks.quality import keyfree
from self_refine import refine
from tests.fakes import FakeChatModel

TASK = "Pens cost 7 dollars each. Hugo buys 5 pens and pays with 100 dollars. What change?"


def test_the_vote_setting_samples_four_drafts_and_asks_no_critic() -> None:
    answers = iter(["70", "65", "65", "60"])

    def draft(messages: Any) -> str:
        return f"Five pens cost 35 dollars. The answer is {next(answers)}."

    model = FakeChatModel(script={"generator": [draft]})
    result = refine(TASK, model=model, **keyfree._RUNS["vote"])
    assert [sent.role for sent in model.requests] == ["generator"] * 4
    assert result["answer"].endswith("The answer is 65.")
    assert {a["critique"]["source"] for a in result["attempts"]} == {"none"}
