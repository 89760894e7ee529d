"""Ask a person at the terminal for the critique the human critic is waiting for."""

from __future__ import annotations

import textwrap
from typing import Any, TextIO

from self_refine.redact import terminal_safe

__all__ = ["ask_critique"]


class _EndOfInput(Exception):
    """The person closed the input (Ctrl-D, or a pipe that ran dry)."""


def _read(prompt: str, stdin: TextIO, out: TextIO) -> str:
    print(prompt, end="", file=out, flush=True)
    line = stdin.readline()
    if not line:
        raise _EndOfInput
    return line.strip()


def _show(question: dict[str, Any], out: TextIO) -> None:
    """Print the draft and earlier feedback, control characters shown as escapes.

    The draft and the feedback come from a model: printed raw, an escape
    sequence in them could rewrite the screen the person is about to judge.
    """
    print(f"\n[human critic] iteration {question.get('iteration', 0)}", file=out)
    for attempt in question.get("attempts") or []:
        critique = attempt.get("critique") or {}
        items = "; ".join(str(item) for item in critique.get("feedback") or []) or "(no feedback)"
        print(
            textwrap.fill(
                terminal_safe(f"earlier draft {attempt.get('iteration')}: {items}"),
                88,
                initial_indent="    ",
                subsequent_indent="      ",
            ),
            file=out,
        )
    print("draft:", file=out)
    for line in terminal_safe(question.get("draft") or "(empty)").split("\n"):
        print(textwrap.fill(line, 88, initial_indent="    ", subsequent_indent="    "), file=out)
    if question.get("error"):
        error = terminal_safe(str(question["error"]))
        print(f"your last answer could not be used: {error}", file=out)


def _score(stdin: TextIO, out: TextIO) -> float | None:
    while True:
        text = _read("score from 0 to 1 (empty: none): ", stdin, out)
        if not text:
            return None
        try:
            value = float(text)
        except ValueError:
            print(f"    {text!r} is not a number; type e.g. 0.7, or press Enter", file=out)
            continue
        if 0 <= value <= 1:
            return value
        print(f"    {value} is outside 0..1; type e.g. 0.7, or press Enter", file=out)


def ask_critique(question: dict[str, Any], stdin: TextIO, out: TextIO) -> dict[str, Any] | None:
    """Show the draft, read feedback lines, a score and done; None when the input ends.

    With no feedback items, "done" defaults to yes: the draft is accepted.
    """
    _show(question, out)
    feedback: list[str] = []
    try:
        print("feedback, one item per line; an empty line ends the list:", file=out)
        while item := _read("  - ", stdin, out):
            feedback.append(item)
        score = _score(stdin, out)
        default_done = not feedback
        reply = _read(
            f"done, no further change needed? [{'Y/n' if default_done else 'y/N'}] ", stdin, out
        )
    except _EndOfInput:
        print(file=out)
        return None
    done = reply.lower().startswith("y") if reply else default_done
    return {"feedback": feedback, "score": score, "done": done}
