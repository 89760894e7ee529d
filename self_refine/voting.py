"""Self-consistency: the final answer most of a run's drafts agree on (`select="vote"`).

After Wang et al. (2023): sample several solutions and answer with the final answer
most of them reach. Each draft's final answer is read as the `answer` verifier reads it
(`extract_answer`: the last \\boxed{}, "####", "The answer is ...", else the last
number), outside the draft's program when it has one (`stated_answer`: a
`print("The answer is", x)` states nothing), and two answers are one when
`answers_match` says so (42, 42.0 and $42 are one answer). A draft with no final answer
casts no vote.

`tally` gives the drafts that hold the most-voted answer; on a tie, those of the tied
answer a draft reached first (in the order the drafts were made: a run's first draft
first). The run answers with the first of them (`nodes/ranking.py`: `voted_candidate`,
`voted_attempt`): neither the critic's score nor a later rewrite displaces the draft that
first reached the answer. Why, measured: `settings.call.default_select`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from self_refine.critics.verifiers.answer import answers_match
from self_refine.critics.verifiers.program import stated_answer

__all__ = ["Tally", "recorded_tally", "tally", "vote_words"]


@dataclass(frozen=True)
class Tally:
    """How the drafts voted: the leading answer(s), and which drafts hold them."""

    leaders: tuple[str, ...]
    """The most-voted answer, or every answer tied for most, in the order first reached."""
    votes: int
    """How many drafts state each leading answer."""
    counted: int
    """How many drafts state a final answer at all (the votes cast)."""
    drafts: tuple[int, ...]
    """The positions (in the sequence voted on) of the drafts that state the answer the vote
    gives: the most-voted, or, of those tied for most, the one reached first."""
    counts: tuple[tuple[str, int], ...] = ()
    """Every answer stated, with how many drafts state it: the most-voted first, ties in
    the order first reached."""

    def summary(self) -> dict[str, object]:
        """The vote as a run's answer message records it."""
        return {
            "answers": list(self.leaders),
            "votes": self.votes,
            "of": self.counted,
            "tally": [[answer, count] for answer, count in self.counts],
        }

    def words(self) -> str:
        """The tally in words: "346: 6, 102: 1, 120: 1, of 8 drafts"."""
        each = ", ".join(f"{answer}: {count}" for answer, count in self.counts)
        return f"{each}, of {self.counted} {'draft' if self.counted == 1 else 'drafts'}"


def tally(drafts: Sequence[str]) -> Tally | None:
    """Count the drafts' final answers; None when no draft states one.

    Answers that match (`answers_match`), directly or through others (0.333333 and
    0.3333334 both match 1/3), are one answer, whatever the drafts' order; it is written
    as the first draft that reached it wrote it.
    """
    found = [
        (position, stated_answer(draft) if draft.strip() else None)
        for position, draft in enumerate(drafts)
    ]
    stated = [(position, answer[0]) for position, answer in found if answer is not None]
    if not stated:
        return None
    group = list(range(len(stated)))

    def root(index: int) -> int:
        while group[index] != index:
            group[index] = group[group[index]]
            index = group[index]
        return index

    for later in range(len(stated)):
        for earlier in range(later):
            if root(earlier) != root(later) and answers_match(stated[later][1], stated[earlier][1]):
                group[max(root(earlier), root(later))] = min(root(earlier), root(later))
    answers: dict[int, list[int]] = {}
    for index, (position, _) in enumerate(stated):
        answers.setdefault(root(index), []).append(position)
    votes = max(len(held) for held in answers.values())
    leading = [(stated[first][1], held) for first, held in answers.items() if len(held) == votes]
    return Tally(
        leaders=tuple(value for value, _ in leading),
        votes=votes,
        counted=len(stated),
        drafts=tuple(leading[0][1]),
        counts=tuple(
            sorted(
                ((stated[first][1], len(held)) for first, held in answers.items()),
                key=lambda c: -c[1],
            )
        ),
    )


def recorded_tally(vote: Mapping[str, Any]) -> str:
    """A recorded vote's tally in words ("tally 346: 6, 102: 1"), as run, show and the
    page give it; a vote recorded before tallies were kept gives its count alone."""
    counts = vote.get("tally") or [[answer, vote.get("votes")] for answer in vote["answers"]]
    return "tally " + ", ".join(f"{answer}: {count}" for answer, count in counts)


def vote_words(vote: Mapping[str, Any]) -> str:
    """A recorded vote in words, as `run` and `show` give it:
    "346 (6 of 8 drafts; tally 346: 6, 102: 1, 120: 1)"."""
    answers = [str(a) for a in vote["answers"]]
    tie = f", tied with {', '.join(answers[1:])}, reached first" if len(answers) > 1 else ""
    return f"{answers[0]} ({vote['votes']} of {vote['of']} drafts{tie}; {recorded_tally(vote)})"
