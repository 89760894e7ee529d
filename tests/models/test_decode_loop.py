"""The embedded model's decode loop, scheduled against a small fake of llama.cpp's context.

The fake keeps what each sequence holds, position by position, as the real context
does (a decode appends, a copy gives another sequence a prefix, a forget drops a tail);
each call's sampler writes a scripted reply. What is checked is what a user of the
local model would notice: the replies, why each ended, how much of each prompt was read,
and that calls made together were decoded together.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest

from self_refine.models.cancel import cancel_calls, cancel_scope
from self_refine.models.decode_loop import DecodeLoop, LoopCall, Reply

END = 0
WORDS = {END: b"", 1: b"a", 2: b"b", 3: b" ", 4: b"E", 5: b"N", 6: b"D", 7: b"c", 8: b"\xc3"}
"""The fake vocabulary: token 0 ends a reply; 8 is the first byte of a two-byte character."""


class FakeContext:
    """What the loop needs of llama.cpp, with every decode recorded."""

    n_cells = 4096
    n_seq = 8
    n_batch = 64

    def __init__(self) -> None:
        self.held: dict[int, list[int]] = {}
        self.decodes: list[list[tuple[int, int, int, bool]]] = []
        self.gate = threading.Event()
        self.gate.set()

    def decode(self, tokens: Sequence[tuple[int, int, int, bool]]) -> None:
        self.gate.wait(5)
        for token, pos, seq, _ in tokens:
            held = self.held.setdefault(seq, [])
            assert pos == len(held), "each token goes right after what its sequence holds"
            held.append(token)
        self.decodes.append(list(tokens))

    def copy_prefix(self, source: int, target: int, length: int) -> None:
        assert len(self.held.get(target, [])) == 0
        self.held[target] = list(self.held[source][:length])

    def forget(self, seq: int, start: int) -> None:
        self.held[seq] = self.held.get(seq, [])[:start]

    def is_end(self, token: int) -> bool:
        return token == END

    def piece(self, token: int) -> bytes:
        return WORDS[token]

    def prompt_reads(self) -> int:
        """Decoded entries that asked for no logits: prompt tokens read, not replies written."""
        return sum(1 for batch in self.decodes for *_, wants in batch if not wants)


class Script:
    """A sampler that writes the given tokens in order, then repeats the last one."""

    def __init__(self, tokens: list[int], after: Any = None) -> None:
        self.tokens = tokens
        self.taken = 0
        self.after = after

    def sample(self, row: int) -> int:
        token = self.tokens[min(self.taken, len(self.tokens) - 1)]
        self.taken += 1
        if self.after is not None:
            self.after(self.taken)
        return token


def _call(
    prompt: list[int], reply: list[int], *, max_tokens: int = 50, stops: list[str] | None = None
) -> LoopCall:
    return LoopCall(
        prompt=prompt, max_tokens=max_tokens, stops=stops or [], make_sampler=lambda: Script(reply)
    )


PROMPT = [7] * 40


def _together(fake: FakeContext, loop: DecodeLoop, calls: list[LoopCall]) -> list[Reply]:
    """Submit the calls while the loop's first decode waits, then let it go."""
    fake.gate.clear()
    pending = [loop.submit(call) for call in calls]
    fake.gate.set()
    for seq in pending:
        assert seq.done.wait(10)
    return [seq.result() for seq in pending]


def test_calls_made_together_read_their_shared_prompt_once_and_write_in_shared_decodes() -> None:
    fake = FakeContext()
    loop = DecodeLoop(fake)
    replies = _together(fake, loop, [_call(PROMPT, [1] * k + [END]) for k in (3, 5, 4, 6)])
    assert [r.text for r in replies] == ["aaa", "aaaaa", "aaaa", "aaaaaa"]
    assert {r.finish_reason for r in replies} == {"stop"}
    assert [r.output_tokens for r in replies] == [3, 5, 4, 6]
    assert sum(r.prompt_tokens_evaluated for r in replies) == 40 + 3, (
        "the first reads the prompt; the others copy all of it but the last token"
    )
    assert max(len({seq for *_, seq, _ in batch}) for batch in fake.decodes) == 4


def test_each_call_ends_on_its_own_stop_string_cap_or_end_token() -> None:
    fake = FakeContext()
    loop = DecodeLoop(fake)
    stop, capped, ended, looped = _together(
        fake,
        loop,
        [
            _call(PROMPT, [1, 3, 4, 5, 6, 2, 2], stops=["END"]),
            _call(PROMPT, [2] * 30, max_tokens=7),
            _call([2, *PROMPT], [1, 2, END]),
            _call(PROMPT, [1, 2, 7, 3] * 60, max_tokens=240),
        ],
    )
    assert (stop.text, stop.finish_reason) == ("a ", "stop")
    assert (capped.text, capped.finish_reason, capped.output_tokens) == ("b" * 7, "length", 7)
    assert (ended.text, ended.finish_reason) == ("ab", "stop")
    assert looped.finish_reason == "repetition" and looped.output_tokens < 100


def test_a_stop_string_is_not_judged_on_half_a_character() -> None:
    fake = FakeContext()
    loop = DecodeLoop(fake)
    (reply,) = _together(fake, loop, [_call(PROMPT, [1, 8, 1, END], stops=["\u00e1"])])
    assert reply.finish_reason == "stop" and reply.output_tokens == 3


def test_a_cancelled_call_stops_within_a_token_while_the_others_finish() -> None:
    fake = FakeContext()
    loop = DecodeLoop(fake)
    stop = threading.Event()

    def cancelled_after_three(taken: int) -> None:
        if taken == 3:
            stop.set()

    doomed = LoopCall(
        prompt=PROMPT,
        max_tokens=200,
        stops=[],
        make_sampler=lambda: Script([2], after=cancelled_after_three),
    )
    fake.gate.clear()
    with cancel_scope(stop):
        first = loop.submit(doomed)
    others = [loop.submit(_call(PROMPT, [1] * 20 + [END])) for _ in range(2)]
    fake.gate.set()
    assert first.done.wait(10)
    assert first.result().finish_reason == "cancelled"
    assert first.result().output_tokens <= 4
    for seq in others:
        assert seq.done.wait(10)
        assert (seq.result().text, seq.result().finish_reason) == ("a" * 20, "stop")


def test_stopping_the_program_ends_every_call_and_new_ones_are_not_written() -> None:
    fake = FakeContext()
    loop = DecodeLoop(fake)
    fake.gate.clear()
    running = [loop.submit(_call(PROMPT, [1] * 500, max_tokens=500)) for _ in range(3)]
    try:
        cancel_calls()
        fake.gate.set()
        for seq in running:
            assert seq.done.wait(10)
            assert seq.result().finish_reason == "cancelled"
        late = loop.submit(_call(PROMPT, [1, END]))
        assert late.done.wait(10)
        assert late.result().finish_reason == "cancelled"
        assert late.result().output_tokens == 0
    finally:
        cancel_calls(False)


def test_a_call_that_arrives_while_others_write_joins_their_decodes() -> None:
    fake = FakeContext()
    loop = DecodeLoop(fake)
    late: list[Any] = []

    def submit_late(taken: int) -> None:
        if taken == 5:
            late.append(loop.submit(_call(PROMPT, [2, 2, END])))

    long = LoopCall(
        prompt=PROMPT,
        max_tokens=30,
        stops=[],
        make_sampler=lambda: Script([1], after=submit_late),
    )
    first = loop.submit(long)
    assert first.done.wait(10)
    assert late and late[0].done.wait(10)
    assert (late[0].result().text, first.result().output_tokens) == ("bb", 30)
    shared = [batch for batch in fake.decodes if len({seq for *_, seq, _ in batch}) == 2]
    assert len(shared) >= 2, "the late call's reply was written beside the long one"
    assert late[0].result().prompt_tokens_evaluated == 1


def test_the_next_call_reads_only_what_follows_the_prompt_it_continues() -> None:
    fake = FakeContext()
    loop = DecodeLoop(fake)
    first = loop.run(_call(PROMPT, [1, 1, END]))
    follow = loop.run(_call([*PROMPT, 1, 1, 2, 2, 2], [1, END]))
    assert first.prompt_tokens_evaluated == 40
    assert follow.prompt_tokens_evaluated == 3, "the earlier reply's tokens are held too"
    cold = loop.run(
        LoopCall(
            prompt=PROMPT,
            max_tokens=5,
            stops=[],
            make_sampler=lambda: Script([END]),
            reuse_prefix=False,
        )
    )
    assert cold.prompt_tokens_evaluated == 40


def test_a_stream_gets_the_reply_in_pieces_without_the_stop_string() -> None:
    fake = FakeContext()
    loop = DecodeLoop(fake)
    pieces: list[str] = []
    call = _call(PROMPT, [1, 2, 4, 5, 1, 4, 5, 6], stops=["END"])
    call.on_text = pieces.append
    reply = loop.run(call)
    assert reply.text == "abENa"
    assert "".join(pieces) == "abENa" and len(pieces) >= 2


def test_a_failing_sampler_fails_its_own_call_only() -> None:
    fake = FakeContext()
    loop = DecodeLoop(fake)

    def broken() -> Any:
        raise ValueError("bad grammar")

    bad = LoopCall(prompt=PROMPT, max_tokens=5, stops=[], make_sampler=broken)
    fake.gate.clear()
    failing = loop.submit(bad)
    fine = loop.submit(_call(PROMPT, [1, END]))
    fake.gate.set()
    assert failing.done.wait(10) and fine.done.wait(10)
    with pytest.raises(ValueError, match="bad grammar"):
        failing.result()
    assert fine.result().text == "a"


def test_a_call_its_caller_left_is_dropped_and_frees_its_place() -> None:
    fake = FakeContext()
    fake.n_seq = 1
    loop = DecodeLoop(fake)
    fake.gate.clear()
    left = loop.submit(_call(PROMPT, [1] * 500, max_tokens=500))
    loop.abandon(left)
    fake.gate.set()
    assert left.done.wait(10)
    assert left.result().finish_reason == "cancelled"
    assert loop.run(_call(PROMPT, [2, END])).text == "b", "the one sequence is free again"


def test_kept_prompts_hold_at_most_a_quarter_of_the_context() -> None:
    fake = FakeContext()
    loop = DecodeLoop(fake)
    for first in range(1, 8):
        loop.run(_call([first, *([7] * 300)], [1, END]))
    assert sum(len(held) for held in fake.held.values()) <= fake.n_cells // 4
    again = loop.run(_call([7, *([7] * 300)], [1, END]))
    assert again.prompt_tokens_evaluated == 1, "the latest prompt was kept"


def test_closing_the_loop_ends_its_calls_after_the_decode_under_way() -> None:
    fake = FakeContext()
    loop = DecodeLoop(fake)
    fake.gate.clear()
    running = loop.submit(_call(PROMPT, [1] * 500, max_tokens=500))
    closer = threading.Thread(target=loop.close)
    closer.start()
    fake.gate.set()
    closer.join(10)
    assert running.done.is_set()
    assert running.result().finish_reason == "cancelled"
    assert not loop._thread.is_alive()
