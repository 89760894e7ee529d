"""Progress of a batch: a bar redrawn in place on a terminal, plain periodic lines otherwise."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, TextIO

__all__ = ["Progress", "TokenMeter"]

_BAR_WIDTH = 24
_REDRAW_SECONDS = 0.1


def _clock_text(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class Progress:
    """Counts finished items and shows items done, rate, ETA and running accuracy.

    Items finished by an earlier run (`done_before`) count as done and in the
    accuracy, but not in the rate. On a terminal the bar is redrawn at most ten
    times a second; elsewhere one line is printed every `interval` seconds.
    """

    def __init__(
        self,
        total: int,
        out: TextIO,
        *,
        done_before: Iterable[dict[str, Any]] = (),
        tty: bool | None = None,
        interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = total
        self.out = out
        self.tty = out.isatty() if tty is None else tty
        self.interval = interval
        self.clock = clock
        self.started = clock()
        self.last_shown = float("-inf")
        self.done = self.new = self.failed = 0
        self.judged = self.first_right = self.final_right = 0
        for record in done_before:
            self._count(record)
        self.before = self.done

    def _count(self, record: dict[str, Any]) -> None:
        self.done += 1
        first, final = record.get("correct_first"), record.get("correct_final")
        if first is not None and final is not None:
            self.judged += 1
            self.first_right += bool(first)
            self.final_right += bool(final)

    def add(self, record: dict[str, Any]) -> None:
        """Count one finished item."""
        self._count(record)
        self.new += 1
        self._maybe_show()

    def fail(self) -> None:
        """Count one failed item."""
        self.failed += 1
        self._maybe_show()

    def _maybe_show(self) -> None:
        now = self.clock()
        wait = _REDRAW_SECONDS if self.tty else self.interval
        if now - self.last_shown >= wait:
            self.show()

    def line(self) -> str:
        """The current state as one line of text."""
        elapsed = max(self.clock() - self.started, 1e-9)
        rate = self.new / elapsed
        left = self.total - self.done - self.failed
        eta = _clock_text(left / rate) if rate > 0 else "?"
        share = self.done / self.total if self.total else 1.0
        parts = [f"{self.done}/{self.total} items ({100 * share:.0f}%)", f"{rate:.2f} items/s"]
        parts.append(f"ETA {eta}" if left > 0 else f"took {_clock_text(elapsed)}")
        if self.judged:
            parts.append(
                f"accuracy {100 * self.first_right / self.judged:.1f}% -> "
                f"{100 * self.final_right / self.judged:.1f}%"
            )
        if self.failed:
            parts.append(f"failed {self.failed}")
        if self.tty:
            filled = int(_BAR_WIDTH * share)
            bar = "#" * filled + "." * (_BAR_WIDTH - filled)
            return f"[{bar}] " + " | ".join(parts)
        return "progress: " + ", ".join(parts)

    def show(self) -> None:
        """Print the current state now."""
        self.last_shown = self.clock()
        if self.tty:
            self.out.write("\r" + self.line() + "\x1b[K")
        else:
            self.out.write(self.line() + "\n")
        self.out.flush()

    def note(self, message: str) -> None:
        """Print a message on its own line, keeping the bar below it."""
        if self.tty:
            self.out.write("\r\x1b[K")
        self.out.write(f"self-refine: {message}\n")
        if self.tty:
            self.show()
        self.out.flush()

    def close(self) -> None:
        """Print the final state and end the bar's line."""
        self.show()
        if self.tty:
            self.out.write("\n")
            self.out.flush()


class TokenMeter:
    """A live line while a model writes: which step, tokens so far, tokens per second.

    For slow local models, so a step never looks hung; drawn on a terminal only
    and cleared before the step's result is printed.
    """

    def __init__(self, out: TextIO, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.out = out
        self.clock = clock
        self.node = ""
        self.tokens = 0
        self.started = 0.0
        self.drawn = 0.0

    def token(self, node: str) -> None:
        """Count one streamed token of `node`'s model call and redraw now and then."""
        now = self.clock()
        if node != self.node or not self.tokens:
            self.node, self.tokens, self.started = node, 0, now
        self.tokens += 1
        if now - self.drawn >= _REDRAW_SECONDS:
            elapsed = max(now - self.started, 1e-6)
            rate = self.tokens / elapsed if self.tokens > 1 else 0.0
            line = f"  [{node}] writing: {self.tokens} tokens, {rate:.1f} tokens/s"
            self.out.write("\r" + line + "\x1b[K")
            self.out.flush()
            self.drawn = now

    def clear(self) -> None:
        """Remove the line (a step finished)."""
        if self.tokens:
            self.out.write("\r\x1b[K")
            self.out.flush()
        self.tokens = 0
