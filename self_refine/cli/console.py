"""How the command line shows a run: one block per step, and tables of attempts."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from itertools import zip_longest
from typing import Any, TextIO

from self_refine.critics.none import NO_CRITIC
from self_refine.drafts import (
    Attempt,
    Candidate,
    in_tree,
    is_tree,
    numbered,
    place_of,
)
from self_refine.redact import terminal_safe
from self_refine.state import STOPPED
from self_refine.tree import (
    RANKED_ON,
    answer_draft,
    draft_kind,
    ranking_values,
    step_kinds,
    steps_taken,
)
from self_refine.voting import vote_words

__all__ = ["attempts_table", "candidate_lines", "print_result", "print_update", "shown_feedback"]


def _indent(text: str, width: int = 88) -> str:
    lines = []
    for paragraph in terminal_safe(text or "(empty)").split("\n"):
        lines.extend(textwrap.wrap(paragraph, width - 4) or [""])
    return "\n".join("    " + line for line in lines)


SHOWN_ITEMS = 12
"""Most feedback items shown per critique; the rest are counted (`show --json` has them all)."""
SHOWN_ITEM_CHARS = 400
"""Most characters shown of one feedback item."""


def shown_feedback(feedback: Sequence[str]) -> list[str]:
    """The feedback items as printed: the first few, each cut short, and how many more there are."""
    shown = [
        item if len(item) <= SHOWN_ITEM_CHARS else item[:SHOWN_ITEM_CHARS] + "... [cut]"
        for item in map(str, feedback[:SHOWN_ITEMS])
    ]
    if len(feedback) > SHOWN_ITEMS:
        shown.append(f"... and {len(feedback) - SHOWN_ITEMS:,} more (show --json lists them all)")
    return shown


def _score(value: Any) -> str:
    return "-" if value is None else f"{float(value):.2f}"


def print_update(node: str, update: dict[str, Any] | None, out: TextIO) -> None:
    """Print one node's update as it arrives from graph.stream(stream_mode="updates")."""
    update = update or {}
    if node in ("generate", "refine") and update.get("ask_again"):
        reply = (update.get("draft_rejected") or [{}])[-1]
        reason = terminal_safe(str(reply.get("reason", "rejected")))
        print(f"[{node}] reply rejected ({reason}); asking again", file=out)
    elif node in ("generate", "refine") and "draft" in update:
        label = "first draft" if node == "generate" else f"draft {update.get('iteration')}"
        print(f"[{node}] {label}:\n{_indent(update['draft'])}", file=out)
    elif node == "candidate" and update.get("branches"):
        _print_candidate(update["branches"][-1], out)
    elif node in ("critique", "pick") and update.get("attempts"):
        attempt: Attempt = update["attempts"][-1]
        critique = attempt["critique"]
        picked = (
            f"  candidate {attempt['candidate']} of {len(attempt.get('candidates') or []) + 1}"
            if "candidate" in attempt
            else ""
        )
        step = f"iteration {attempt['iteration']}"
        kept = "kept"
        if in_tree(attempt):
            step = f"step {attempt['iteration']} ({step_kinds(attempt)})"
            if (place := place_of(attempt)) is not None:
                kept += f" node {place.node}, a {draft_kind(attempt, attempt['iteration'])}"
        print(
            f"[{node}] {step}{picked}  score "
            f"{_score(critique.get('score'))}  done {str(critique.get('done', False)).lower()}"
            f"  ({critique.get('source')})",
            file=out,
        )
        if attempt.get("kept_because"):
            print(f"    {kept}: {terminal_safe(attempt['kept_because'])}", file=out)
        empty = "(every verifier passed)" if critique.get("verified") else "(no feedback items)"
        if critique.get("source") == NO_CRITIC:
            empty = "(not critiqued: critics none)"
        for item in shown_feedback(critique.get("feedback") or [empty]):
            print(
                textwrap.fill(
                    terminal_safe(item), 88, initial_indent="    - ", subsequent_indent="      "
                ),
                file=out,
            )
        for problem in attempt.get("problems") or []:
            print(
                textwrap.fill(
                    terminal_safe(problem), 88, initial_indent="    ! ", subsequent_indent="      "
                ),
                file=out,
            )
        for line in _rejected_lines(attempt):
            print(line, file=out)
        if update.get("stop_reason"):
            print(f"    -> stop: {update['stop_reason']}", file=out)
    elif node == "finalize":
        print(f"[finalize] answer chosen {_how_chosen(update)}", file=out)
    out.flush()


def _how_chosen(update: dict[str, Any]) -> str:
    """How finalize chose: by the vote (its answer and count) or by the score."""
    message = update.get("answer_message")
    said = getattr(message, "response_metadata", None) or {}
    vote = (said.get("self_refine") or {}).get("vote")
    if not vote:
        return f"(score {_score(update.get('score'))})"
    return f"by the vote: {terminal_safe(vote_words(vote))}"


def _origin(candidate: Candidate) -> str:
    """ "node 5, refined from node 0: " or "node 6, fresh: " in a run that samples or searches."""
    place = place_of(candidate)
    if place is None:
        return ""
    made = "fresh" if place.parent is None else f"refined from node {place.parent}"
    return f"node {place.node}, {made}: "


def _print_candidate(candidate: Candidate, out: TextIO) -> None:
    """One sampled reply of a draft step: where it came from, the values its step's pick
    compares and its text, or why it was rejected."""
    head = f"[candidate {candidate['index']}] {_origin(candidate)}"
    rejected = candidate.get("rejected")
    if rejected is not None and rejected.get("reason") == STOPPED:
        print(f"{head}stopped: {_stopped_text(rejected)}", file=out)
        return
    if rejected is not None:
        reason = terminal_safe(str(rejected.get("reason", "rejected")))
        print(f"{head}reply rejected ({reason})", file=out)
        return
    print(f"{head}{ranking_values(candidate)}:", file=out)
    for line in _planned_lines(candidate, 92):
        print(line, file=out)
    print(_indent(candidate["draft"]), file=out)


def _planned_lines(draft: Mapping[str, Any], width: int) -> list[str]:
    """Why the search planned a draft (its Thompson draws), wrapped; none outside a search."""
    because = draft.get("planned_because")
    if not because:
        return []
    return textwrap.wrap(
        terminal_safe(f"search: {because}"),
        width,
        initial_indent="    ? ",
        subsequent_indent="      ",
    )


OFFLINE_ANSWER = (
    "written by the offline stand-in, a demo that follows rules, not a language model; "
    "pass --model local, or set SELF_REFINE_MODEL=local, for a real one"
)
"""What the result says when the offline stand-in wrote the answer."""


def print_result(result: dict[str, Any], out: TextIO, *, offline: bool = False) -> None:
    """Print the final answer with its stop reason; `offline`: say the stand-in wrote it."""
    print(
        f"\nStopped: {result.get('stop_reason')} after {steps_taken(result)}; "
        f"score {_score(result.get('score'))}; "
        f"tokens {result.get('usage', {}).get('total_tokens', 0)}",
        file=out,
    )
    found = answer_draft(result)
    which = f" ({found.words()})" if found else ""
    print(f"Answer{which}:\n{_indent(result.get('answer', ''))}", file=out)
    if offline:
        print(_indent(f"({OFFLINE_ANSWER})"), file=out)
    if result.get("structured_error"):
        print(f"Response format: {terminal_safe(result['structured_error'])}", file=out)
    elif "structured_response" in result:
        print("Response format: the answer is valid JSON of the schema", file=out)


def attempts_table(attempts: Sequence[Attempt], width: int = 100) -> str:
    """The attempts as a plain-text table: iteration (a step, in a run that samples or
    searches, with the node it kept and what it wrote), score, draft, feedback."""
    text_width = max(20, (width - 18) // 2)
    tree = is_tree(attempts)
    label, col = ("step", 4) if tree else ("it", 3)
    header = f"{label:>{col}}  {'score':>5}  {'draft':<{text_width}}  feedback"
    rows = [header, "-" * len(header.rstrip()) + "-" * (text_width - 8)]
    for attempt in attempts:
        critique = attempt["critique"]
        draft_lines = textwrap.wrap(terminal_safe(attempt["draft"] or "(empty)"), text_width)
        feedback_lines: list[str] = []
        for item in shown_feedback(critique.get("feedback") or ["(none)"]):
            feedback_lines += textwrap.wrap(
                terminal_safe(item), text_width, initial_indent="- ", subsequent_indent="  "
            )
        first = True
        for draft_line, feedback_line in zip_longest(draft_lines, feedback_lines, fillvalue=""):
            it = str(attempt["iteration"]) if first else ""
            score = _score(critique.get("score")) if first else ""
            rows.append(
                f"{it:>{col}}  {score:>5}  {draft_line:<{text_width}}  {feedback_line}".rstrip()
            )
            first = False
        if tree:
            rows.extend(_wrapped(_made(attempt), width))
            rows.extend(_search_lines(attempt, width))
        rows.extend(_rejected_lines(attempt, text_width * 2))
        rows.extend(candidate_lines(attempt, width))
        rows.append("")
    return "\n".join(rows)


def candidate_lines(attempt: Attempt, width: int = 100) -> list[str]:
    """A step of candidates as lines: which one was kept and why, then every other one with
    its score, text and critique, or why it was rejected or stopped."""
    others = sorted(attempt.get("candidates") or [], key=lambda c: c["index"])
    if not others:
        return []
    total = len(others) + (1 if "candidate" in attempt else 0)
    if "candidate" in attempt:
        why = attempt.get("kept_because")
        kept = f"kept candidate {attempt['candidate']} of {total}" + (f": {why}" if why else "")
    else:
        kept = f"no candidate of {total} kept: every reply was rejected"
    lines = _wrapped(kept, width)
    lines += _wrapped(f"compared: {RANKED_ON}", width)
    replies: list[Mapping[str, Any]] = [*([attempt] if "candidate" in attempt else []), *others]
    for reply in sorted(replies, key=lambda r: _index(attempt, r)):
        lines.append(_compared(attempt, reply))
    for candidate in others:
        lines.extend(_other_candidate(candidate, width))
    return lines


def _wrapped(text: str, width: int) -> list[str]:
    lines = textwrap.wrap(terminal_safe(text), width - 6, initial_indent="      ")
    return lines[:1] + ["        " + line.strip() for line in lines[1:]]


def _made(attempt: Attempt) -> str:
    """What a step of a run that samples or searches kept, and what it wrote."""
    place = place_of(attempt)
    kept = (
        f"node {place.node}, a {draft_kind(attempt, attempt['iteration'])}"
        if place is not None
        else "no draft kept"
    )
    return f"{kept}; step {attempt['iteration']} wrote {step_kinds(attempt)}"


def _search_lines(attempt: Attempt, width: int) -> list[str]:
    """Why the search planned each draft of a step (its Thompson draws), node by node; the
    nodes planned for the same reason on one line."""
    nodes: dict[str, list[int]] = {}
    placed_drafts = [(place.node, draft) for _, draft, place in numbered([attempt])]
    for node, draft in sorted(placed_drafts, key=lambda found: found[0]):
        if because := draft.get("planned_because"):
            nodes.setdefault(because, []).append(node)
    lines: list[str] = []
    for because, numbers in nodes.items():
        named = ", ".join(map(str, numbers[:-1])) + f" and {numbers[-1]}"
        which = f"node {numbers[0]}" if len(numbers) == 1 else f"nodes {named}"
        lines += _wrapped(f"{which}, search: {because}", width)
    return lines


def _index(attempt: Attempt, reply: Mapping[str, Any]) -> int:
    return int(attempt["candidate"] if reply is attempt else reply["index"])


def _compared(attempt: Attempt, reply: Mapping[str, Any]) -> str:
    """One row of a step's comparison: the reply, what it was, the values ranked, kept or not."""
    row = f"        candidate {_index(attempt, reply):<3}"
    if (place := place_of(reply)) is not None:
        kind = draft_kind(reply, attempt["iteration"])
        row += f"node {place.node:<4} {kind:<22} "
    row += ranking_values(reply)
    return row + ("  kept" if reply is attempt else "")


def _other_candidate(candidate: Candidate, width: int) -> list[str]:
    head = f"      candidate {candidate['index']}"
    rejected = candidate.get("rejected")
    if rejected is not None and rejected["reason"] == STOPPED:
        text = f"{head}  stopped: {_stopped_text(rejected)}"
        return textwrap.wrap(text, width, subsequent_indent=" " * 10)
    if rejected is not None:
        text = f"{head}  rejected ({rejected['reason']}): {rejected['detail']}"
        return textwrap.wrap(terminal_safe(text), width, subsequent_indent=" " * 10)
    critique = candidate["critique"]
    first = f"{head}  {_score(critique.get('score'))}  "
    indent = " " * len(first)
    lines = textwrap.wrap(
        terminal_safe(candidate["draft"]), width, initial_indent=first, subsequent_indent=indent
    )
    empty = "(every verifier passed)" if critique.get("verified") else "(no feedback items)"
    for item in shown_feedback(critique.get("feedback") or [empty]):
        lines += textwrap.wrap(
            terminal_safe(item),
            width,
            initial_indent=indent + "- ",
            subsequent_indent=indent + "  ",
        )
    return lines


def _stopped_text(rejected: Any) -> str:
    """Why a candidate was stopped, and the draft it had written when it had one."""
    said = terminal_safe(str(rejected.get("detail", "")))
    written = " ".join(str(rejected.get("reply") or "").split())
    if written:
        excerpt = written if len(written) <= 60 else written[:57] + "..."
        said += f"; it had written {terminal_safe(excerpt)!r}"
    return said


def _rejected_lines(attempt: Attempt, width: int = 88) -> list[str]:
    """One line per reply that was not taken as the draft: reason and a short excerpt."""
    lines = []
    for record in attempt.get("rejected") or []:
        excerpt = " ".join(record["reply"].split())[:60]
        text = f"rejected reply ({record['reason']}): {record['detail']}; it began {excerpt!r}"
        lines.append(
            textwrap.fill(text, width, initial_indent="    x ", subsequent_indent="      ")
        )
    return lines
