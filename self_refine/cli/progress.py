"""Progress while the program works: a batch's bar (redrawn in place on a terminal, plain
periodic lines otherwise), and a run's live line while the local model writes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from self_refine.settings.fields import ROLE_MODEL_FIELDS, RefineContext

__all__ = [
    "PLAIN_LINE_SECONDS",
    "Progress",
    "TokenMeter",
    "call_label",
    "token_meter",
    "uses_local_model",
]

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
        self._shown: tuple[int, int] | None = None

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
        self._shown = (self.done, self.failed)
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
        """Print the final state, unless the last line shown already is, and end the bar's line."""
        if self._shown != (self.done, self.failed):
            self.show()
        if self.tty:
            self.out.write("\n")
            self.out.flush()


PLAIN_LINE_SECONDS = 30.0
"""How often, during a model call, progress is printed as a line of its own when the
output is not a terminal (a file, a pipe, a CI log)."""


class TokenMeter:
    """A live line while a model works: which step, how long it has been reading the
    prompt, then tokens written so far and tokens per second.

    For slow local models, so a step never looks hung: reading a long prompt can take
    longer than writing the reply, and streams nothing. `start(node)` begins the
    reading line, which a background thread redraws every `tick_seconds` until the
    first token arrives; `token(node)` counts what the model writes; `clear()` removes
    the line before the step's result is printed. On a terminal (`tty`) the line is
    redrawn in place; elsewhere the same line is printed on a line of its own every
    `interval` seconds of a call, and nothing for a call that takes less.
    """

    def __init__(
        self,
        out: TextIO,
        *,
        clock: Callable[[], float] = time.monotonic,
        tick_seconds: float | None = 0.5,
        tty: bool | None = None,
        interval: float = PLAIN_LINE_SECONDS,
    ) -> None:
        self.out = out
        self.clock = clock
        self.tty = out.isatty() if tty is None else tty
        self.interval = interval
        self.tick_seconds = (
            tick_seconds if self.tty or not tick_seconds else min(tick_seconds, interval)
        )
        self.node = ""
        self.tokens = 0
        self.started = 0.0
        self.drawn = 0.0
        self.printed = 0.0
        self.reading: str | None = None
        self.reading_since = 0.0
        self._lock = threading.Lock()
        self._ticker: threading.Thread | None = None
        self._stop = threading.Event()

    def start(self, node: str) -> None:
        """A step began: show that its model is reading the prompt, until it writes."""
        with self._lock:
            self.reading, self.reading_since, self.tokens = node, self.clock(), 0
            self.printed = self.reading_since
            if self.tty:
                self._draw(self._reading_line())
        if self.tick_seconds and self._ticker is None:
            self._stop.clear()
            self._ticker = threading.Thread(target=self._tick_loop, daemon=True)
            self._ticker.start()

    def tick(self) -> None:
        """Redraw the reading line (the ticker calls this; nothing while the model writes)."""
        with self._lock:
            if self.reading is not None:
                self._draw(self._reading_line())

    def _tick_loop(self) -> None:
        assert self.tick_seconds
        while not self._stop.wait(self.tick_seconds):
            self.tick()

    def _reading_line(self) -> str:
        waited = self.clock() - self.reading_since
        return f"  [{self.reading}] reading the prompt: {waited:.0f} s"

    def token(self, node: str) -> None:
        """Count one streamed token of `node`'s model call and redraw now and then.

        `node` names the call as the line shows it (`call_label`)."""
        with self._lock:
            now = self.clock()
            self.reading = None
            if node != self.node or not self.tokens:
                self.node, self.tokens, self.started = node, 0, now
            self.tokens += 1
            if now - self.drawn >= _REDRAW_SECONDS:
                elapsed = max(now - self.started, 1e-6)
                rate = self.tokens / elapsed if self.tokens > 1 else 0.0
                self._draw(f"  [{node}] writing: {self.tokens} tokens, {rate:.1f} tokens/s")
                self.drawn = now

    def _draw(self, line: str) -> None:
        """Redraw the line on a terminal; elsewhere print it once `interval` has passed
        since the call began or the last line printed."""
        if self.tty:
            self.out.write("\r" + line + "\x1b[K")
        else:
            now = self.clock()
            if now - self.printed < self.interval:
                return
            self.printed = now
            self.out.write(line + "\n")
        self.out.flush()

    def clear(self) -> None:
        """Remove the line (a step finished)."""
        with self._lock:
            if self.tty and (self.tokens or self.reading is not None):
                self.out.write("\r\x1b[K")
                self.out.flush()
            self.tokens = 0
            self.reading = None

    def handler(self) -> Any:
        """A LangChain callback handler that calls `start` as each chat model call begins."""
        from langchain_core.callbacks import BaseCallbackHandler

        meter = self

        class _ModelStarts(BaseCallbackHandler):
            def on_chat_model_start(
                self, serialized: Any, messages: Any, *, metadata: Any = None, **kwargs: Any
            ) -> None:
                meter.start(call_label(metadata or {}))

        return _ModelStarts()

    def streamed(self, message: Any, metadata: dict[str, Any]) -> None:
        """Count a part of a reply from the messages stream; a whole message a node wrote
        (the answer `finalize` hands on) is no token of a model's."""
        from langchain_core.messages import AIMessageChunk

        if isinstance(message, AIMessageChunk):
            self.token(call_label(metadata))

    def close(self) -> None:
        """Clear the line and stop the ticker thread."""
        self.clear()
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None


def call_label(metadata: dict[str, Any]) -> str:
    """What the live line calls a model call: its node, and for a candidate its index and
    role ("candidate 2, critic")."""
    node = str(metadata.get("langgraph_node") or "model")
    if "candidate" in metadata:
        return f"{node} {metadata['candidate']}, {metadata.get('role', 'model')}"
    return node


def uses_local_model(context: RefineContext) -> bool:
    """True when a role runs the embedded local model (slow on a CPU)."""
    models = [getattr(context, name) or "" for name in ("model", *ROLE_MODEL_FIELDS)]
    return any(m == "local" or m.startswith("local:") for m in models)


def token_meter(settings: RefineContext, out: TextIO, *, shown: bool = True) -> TokenMeter | None:
    """The live line for a run when it is `shown` and a role runs the slow in-process
    local model (printed every `PLAIN_LINE_SECONDS` of a call when `out` is not a
    terminal); None otherwise."""
    if not shown or not uses_local_model(settings):
        return None
    return TokenMeter(out, interval=PLAIN_LINE_SECONDS)
