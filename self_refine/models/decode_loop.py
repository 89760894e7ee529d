"""One decode loop for the embedded model: replies written together share each decode.

On a CPU, writing one token of a small model costs about one read of all its weights;
a decode that carries the next token of several sequences reads them once for all. So
the embedded model's calls do not take turns: each becomes a sequence of one loop,
run on a thread of its own that owns a llama.cpp context (`DecodeLoop`). A call is
admitted as soon as it arrives (continuous batching), even while others are writing;
the longest start of its prompt already in the context (a sibling candidate's prompt,
or the previous step of the same thread) is copied instead of read again, so a step's
candidates read their shared prompt once. Each sequence has its own sampler (its
seed, its temperature, its grammar), its own stop strings and token cap, and ends on
its own when its call is cancelled (`models/cancel.py`: a step's first verified
candidate, Ctrl-C) while the others go on.

The loop talks to llama.cpp through a small interface (`Backend`), so that the
scheduling is tested without a model; `models/llama_backend.py` is the real one.
"""

from __future__ import annotations

import contextvars
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from self_refine.models.cancel import calls_cancelled
from self_refine.models.repetition import loop_start

__all__ = ["Backend", "DecodeLoop", "LoopCall", "Reply"]


class Sampler(Protocol):
    """Picks the next token of one sequence from one row of the last decode's logits."""

    def sample(self, row: int) -> int: ...


class Backend(Protocol):
    """What the loop needs of llama.cpp: one context, shared by `n_seq` sequences."""

    n_cells: int
    """Token cells of the context, all sequences together (a prefix shared by copy counts once)."""
    n_seq: int
    """Sequences the context holds at once (writing ones and kept prompts)."""
    n_batch: int
    """Most tokens one decode takes."""

    def decode(self, tokens: Sequence[tuple[int, int, int, bool]]) -> None:
        """Decode (token, position, sequence, wants logits) entries; raise when it fails."""

    def copy_prefix(self, source: int, target: int, length: int) -> None:
        """Give sequence `target` the first `length` positions of sequence `source`."""

    def forget(self, seq: int, start: int) -> None:
        """Drop sequence `seq`'s positions from `start` on."""

    def is_end(self, token: int) -> bool:
        """True for an end-of-generation token."""

    def piece(self, token: int) -> bytes:
        """The bytes of one token."""


@dataclass
class LoopCall:
    """One request to the loop: its prompt's tokens and how its reply is written and ended."""

    prompt: list[int]
    max_tokens: int
    stops: list[str]
    make_sampler: Callable[[], Sampler]
    """Builds the sequence's sampler, on the loop's thread, when the sequence starts."""
    reuse_prefix: bool = True
    ends: Callable[[list[int]], bool] | None = None
    """The chat template's own end rule: called, before each new token is taken, with the
    prompt's and the reply's tokens so far (True: the reply ends there, finish "stop")."""
    on_text: Callable[[str], None] | None = None
    """Called on the loop's thread with each new piece of the reply (for streaming)."""


@dataclass
class Reply:
    """What a call got: its text, why it ended, and what the model did for it."""

    text: str
    finish_reason: str
    """"stop" (end token or a stop string), "length" (its cap), "repetition" (a loop),
    "cancelled" (its call was cancelled)."""
    output_tokens: int
    prompt_tokens: int
    prompt_tokens_evaluated: int


@dataclass
class _Sequence:
    call: LoopCall
    context: contextvars.Context
    done: threading.Event = field(default_factory=threading.Event)
    abandoned: bool = False
    reply: Reply | None = None
    error: BaseException | None = None
    slot: int = -1
    pending: list[int] = field(default_factory=list)
    """Prompt tokens still to read."""
    next_token: int | None = None
    """The last sampled token, not yet decoded."""
    sampler: Sampler | None = None
    written: list[int] = field(default_factory=list)
    text: bytes = b""
    shown: int = 0
    """Characters of the reply already passed to `on_text`."""
    multibyte: int = 0
    evaluated: int = 0

    def cancelled(self) -> bool:
        return self.abandoned or self.context.run(calls_cancelled)

    def result(self) -> Reply:
        """The reply, once `done` is set (raises what the loop raised for this call)."""
        if self.error is not None:
            raise self.error
        assert self.reply is not None
        return self.reply


@dataclass
class _Slot:
    tokens: list[int] = field(default_factory=list)
    """What the context holds for this sequence id, position by position."""
    owner: _Sequence | None = None
    used: int = 0
    """When it was last given to a call (for dropping the oldest kept prompt first)."""


def _common(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


KEPT_SHARE = 4
"""Kept prompts (of calls that ended) hold at most 1/KEPT_SHARE of the context's cells."""
_SHARE_AT_LEAST = 16
"""Tokens a waiting call must share with a prompt being read to wait for it and copy it."""


class DecodeLoop:
    """A thread that owns a llama.cpp context and writes every call's reply in shared decodes."""

    def __init__(self, backend: Backend, *, name: str = "self-refine-decode") -> None:
        self.backend = backend
        self._slots = [_Slot() for _ in range(backend.n_seq)]
        self._waiting: deque[_Sequence] = deque()
        self._active: list[_Sequence] = []
        self._wake = threading.Condition()
        self._clock = 0
        self._clear = False
        self._closing = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, call: LoopCall) -> _Sequence:
        """Queue a call; its sequence is admitted at the loop's next step."""
        seq = _Sequence(call=call, context=contextvars.copy_context())
        with self._wake:
            self._waiting.append(seq)
            self._wake.notify()
        return seq

    def run(self, call: LoopCall) -> Reply:
        """Write the call's reply and return it (raises what the loop raised for it).

        The caller waits in short steps, so that Ctrl-C reaches it at once; a call left
        by its caller (an exception while waiting) is dropped at the loop's next step."""
        seq = self.submit(call)
        try:
            while not seq.done.wait(0.1):
                pass
        except BaseException:
            self.abandon(seq)
            raise
        return seq.result()

    def abandon(self, seq: _Sequence) -> None:
        """Stop a call whose caller no longer waits for it (at the loop's next step)."""
        seq.abandoned = True
        with self._wake:
            self._wake.notify()

    def close(self, wait: float = 5.0) -> None:
        """End every call (as cancelled) and the loop's thread, waiting for a decode under
        way to end: the context must not be freed under it (the program is exiting)."""
        with self._wake:
            self._closing = True
            self._wake.notify()
        if self._thread is not threading.current_thread():
            self._thread.join(wait)

    def forget_prompts(self) -> None:
        """Drop every kept prompt once no reply is being written (a cold start, to measure)."""
        with self._wake:
            self._clear = True
            self._wake.notify()

    # The loop's thread.

    def _run(self) -> None:
        while True:
            with self._wake:
                while not (self._waiting or self._active or self._clear or self._closing):
                    self._wake.wait()
                waiting = list(self._waiting)
                if self._closing:
                    self._waiting.clear()
                clear = self._clear and not self._active
                self._clear = self._clear and not clear
            if self._closing:
                for seq in [*self._active, *waiting]:
                    self._finish(seq, "cancelled")
                return
            if clear:
                for index, slot in enumerate(self._slots):
                    self.backend.forget(index, 0)
                    slot.tokens = []
            try:
                self._step()
            except Exception as error:  # noqa: BLE001 - handed to every caller
                for seq in [*self._active, *self._waiting]:
                    self._fail(seq, error)
                self._active.clear()
                with self._wake:
                    self._waiting.clear()
                for slot in self._slots:
                    slot.tokens, slot.owner = [], None
                try:
                    for index in range(len(self._slots)):
                        self.backend.forget(index, 0)
                except Exception:  # noqa: BLE001, S110 - the context is gone either way
                    pass

    def _step(self) -> None:
        for seq in list(self._active):
            if seq.cancelled():
                self._finish(seq, "cancelled")
        self._admit()
        if not self._active:
            return
        entries: list[tuple[int, int, int, bool]] = []
        rows: list[tuple[_Sequence, int]] = []
        for seq in self._active:
            if seq.next_token is not None:
                slot = self._slots[seq.slot]
                rows.append((seq, len(entries)))
                entries.append((seq.next_token, len(slot.tokens), seq.slot, True))
        room = self.backend.n_batch - len(entries)
        reads: list[tuple[_Sequence, int]] = []
        for seq in self._active:
            if not seq.pending or room <= 0:
                continue
            slot = self._slots[seq.slot]
            part = seq.pending[:room]
            for i, token in enumerate(part):
                wants = len(part) == len(seq.pending) and i == len(part) - 1
                if wants:
                    rows.append((seq, len(entries)))
                entries.append((token, len(slot.tokens) + i, seq.slot, wants))
            reads.append((seq, len(part)))
            room -= len(part)
        if not entries:
            return
        self.backend.decode(entries)
        for token, _pos, index, _wants in entries:
            self._slots[index].tokens.append(token)
        for seq, read in reads:
            del seq.pending[:read]
            seq.evaluated += read
        for seq, row in rows:
            seq.next_token = None
            try:
                if seq.sampler is None:
                    seq.sampler = seq.context.run(seq.call.make_sampler)
                token = seq.sampler.sample(row)
            except Exception as error:  # noqa: BLE001 - this call's own failure (its grammar)
                self._release(seq)
                self._fail(seq, error)
                continue
            self._take(seq, token)

    def _take(self, seq: _Sequence, token: int) -> None:
        """A sampled token: end the reply on it, or keep it to be read next."""
        call = seq.call
        if call.ends is not None and seq.written and call.ends([*call.prompt, *seq.written]):
            self._finish(seq, "stop")
            return
        if self.backend.is_end(token):
            self._finish(seq, "stop")
            return
        seq.written.append(token)
        seq.text += self.backend.piece(token)
        tail = seq.text[-3:]
        for k, char in enumerate(tail):
            k = len(tail) - k
            for num, pattern in ((2, 192), (3, 224), (4, 240)):
                if num > k and pattern & char == pattern:
                    seq.multibyte = num - k
        if seq.multibyte > 0:  # an unfinished character: no stop or cap judged on it
            seq.multibyte -= 1
        else:
            for stop in call.stops:
                at = seq.text.find(stop.encode("utf-8"))
                if at >= 0:
                    seq.text = seq.text[:at]
                    self._finish(seq, "stop")
                    return
            if len(seq.written) >= call.max_tokens:
                self._finish(seq, "length")
                return
        text = seq.text.decode("utf-8", errors="ignore")
        if loop_start(text) is not None:
            self._finish(seq, "repetition")
            return
        self._show(seq, text, final=False)
        seq.next_token = token

    def _show(self, seq: _Sequence, text: str, *, final: bool) -> None:
        if seq.call.on_text is None:
            return
        end = len(text)
        if not final:  # hold back what may be the start of a stop string
            for stop in seq.call.stops:
                for i in range(min(len(stop), len(text)), 0, -1):
                    if text.endswith(stop[:i]):
                        end = min(end, len(text) - i)
                        break
        if end > seq.shown:
            seq.context.run(seq.call.on_text, text[seq.shown : end])
            seq.shown = end

    def _finish(self, seq: _Sequence, reason: str) -> None:
        text = seq.text.decode("utf-8", errors="ignore")
        if reason != "cancelled":
            self._show(seq, text, final=True)
        seq.reply = Reply(
            text=text,
            finish_reason=reason,
            output_tokens=len(seq.written),
            prompt_tokens=len(seq.call.prompt),
            prompt_tokens_evaluated=seq.evaluated,
        )
        self._release(seq)
        seq.done.set()

    def _fail(self, seq: _Sequence, error: BaseException) -> None:
        seq.error = error
        seq.done.set()

    def _release(self, seq: _Sequence) -> None:
        if seq in self._active:
            self._active.remove(seq)
        if seq.slot >= 0:
            slot = self._slots[seq.slot]
            slot.owner = None
            if not seq.call.reuse_prefix:
                self.backend.forget(seq.slot, 0)
                slot.tokens = []
        seq.sampler = None
        self._trim_kept()

    def _trim_kept(self) -> None:
        """Keep prompts of calls that ended in at most a quarter of the context: every
        decode's attention spans the cells in use, kept ones included."""
        self._drop_kept(self.backend.n_cells // KEPT_SHARE)

    def _drop_kept(self, limit: int) -> None:
        """Drop kept prompts, oldest first, until they hold at most `limit` cells."""
        kept = sorted(
            (i for i, slot in enumerate(self._slots) if slot.owner is None and slot.tokens),
            key=lambda i: self._slots[i].used,
        )
        held = sum(len(self._slots[i].tokens) for i in kept)
        for i in kept:
            if held <= limit:
                break
            held -= len(self._slots[i].tokens)
            self.backend.forget(i, 0)
            self._slots[i].tokens = []

    # Admission.

    def _admit(self) -> None:
        with self._wake:
            waiting = list(self._waiting)
        for seq in waiting:
            if seq.abandoned or seq.cancelled():
                self._drop_waiting(seq)
                self._finish(seq, "cancelled")
                continue
            if not self._fits(seq):
                break
            if self._worth_waiting(seq):
                continue
            index = self._free_slot(seq)
            if index is None:
                break
            self._drop_waiting(seq)
            try:
                self._start(seq, index)
            except Exception as error:  # noqa: BLE001 - this call's own failure
                self._fail(seq, error)

    def _drop_waiting(self, seq: _Sequence) -> None:
        with self._wake:
            if seq in self._waiting:
                self._waiting.remove(seq)

    def _reserved(self, seq: _Sequence) -> int:
        return len(seq.call.prompt) + seq.call.max_tokens

    def _fits(self, seq: _Sequence) -> bool:
        """Room in the context for the call's prompt and longest reply, beside those writing."""
        if not self._active:
            return True
        taken = sum(self._reserved(other) for other in self._active)
        return taken + self._reserved(seq) <= self.backend.n_cells

    def _worth_waiting(self, seq: _Sequence) -> bool:
        """True while a prompt being read shares more with this call than anything read."""
        if not seq.call.reuse_prefix:
            return False
        have = max((_common(s.tokens, seq.call.prompt) for s in self._slots), default=0)
        for other in self._active:
            if other.pending:
                coming = _common(other.call.prompt, seq.call.prompt)
                if coming >= have + _SHARE_AT_LEAST:
                    return True
        return False

    def _free_slot(self, seq: _Sequence) -> int | None:
        """A sequence id for the call: a kept prompt it starts with, else the oldest kept one."""
        free = [i for i, slot in enumerate(self._slots) if slot.owner is None]
        if not free:
            return None
        if seq.call.reuse_prefix:
            best = max(free, key=lambda i: _common(self._slots[i].tokens, seq.call.prompt))
            if _common(self._slots[best].tokens, seq.call.prompt) > 0:
                return best
        return min(free, key=lambda i: (len(self._slots[i].tokens) > 0, self._slots[i].used))

    def _start(self, seq: _Sequence, index: int) -> None:
        prompt = seq.call.prompt
        slot = self._slots[index]
        self._clock += 1
        slot.owner, slot.used = seq, self._clock
        seq.slot = index
        keep = 0
        if seq.call.reuse_prefix:
            keep = _common(slot.tokens, prompt)
            source, length = index, keep
            for i, other in enumerate(self._slots):
                shared = _common(other.tokens, prompt)
                if shared > length:
                    source, length = i, shared
            length = min(length, len(prompt) - 1)  # one token read: its logits start the reply
            keep = min(keep, length)
            self.backend.forget(index, keep)
            if source != index and length > keep:
                self.backend.copy_prefix(source, index, length)
                keep = length
        else:
            self.backend.forget(index, 0)
        slot.tokens = list(prompt[:keep])
        seq.pending = list(prompt[keep:])
        self._evict_for(seq)
        self._active.append(seq)

    def _evict_for(self, seq: _Sequence) -> None:
        """Drop kept prompts (oldest first) until the writing sequences' reserve fits."""
        taken = sum(self._reserved(other) for other in [*self._active, seq])
        self._drop_kept(self.backend.n_cells - taken)
