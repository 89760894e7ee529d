"""The live line of `run` with a local model: reading the prompt, then writing, then gone."""

from __future__ import annotations

import io
import time

from langchain_core.messages import HumanMessage

from self_refine.cli.progress import TokenMeter
from tests.fakes import FakeChatModel


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def shown(out: io.StringIO) -> str:
    """What the terminal shows now: the text after the last carriage return, codes removed."""
    return out.getvalue().rsplit("\r", 1)[-1].replace("\x1b[K", "")


def test_reading_a_long_prompt_shows_the_seconds_waited_until_the_first_token() -> None:
    out, clock = io.StringIO(), Clock()
    meter = TokenMeter(out, clock=clock, tick_seconds=None, tty=True)
    meter.start("critique")
    assert shown(out) == "  [critique] reading the prompt: 0 s"
    clock.now += 12
    meter.tick()
    assert shown(out) == "  [critique] reading the prompt: 12 s"
    meter.token("critique")
    clock.now += 5
    meter.tick()  # the model writes: the reading line is not drawn again
    assert "reading" not in shown(out)
    assert shown(out) == "  [critique] writing: 1 tokens, 0.0 tokens/s"


def test_writing_shows_tokens_and_their_rate_redrawn_at_most_ten_times_a_second() -> None:
    out, clock = io.StringIO(), Clock()
    meter = TokenMeter(out, clock=clock, tick_seconds=None, tty=True)
    for _ in range(20):  # a token every 0.05 s; the line is drawn every 0.1 s
        meter.token("refine")
        clock.now += 0.05
    clock.now -= 0.05
    assert shown(out) == "  [refine] writing: 19 tokens, 21.1 tokens/s"  # 19 in 0.9 s
    assert out.getvalue().count("\r") <= 11  # not once per token


def test_a_new_step_counts_from_zero_and_clear_removes_the_line() -> None:
    out, clock = io.StringIO(), Clock()
    meter = TokenMeter(out, clock=clock, tick_seconds=None, tty=True)
    for _ in range(5):
        clock.now += 0.2
        meter.token("generate")
    meter.clear()
    assert out.getvalue().endswith("\r\x1b[K")
    clock.now += 1
    meter.token("critique")
    assert shown(out) == "  [critique] writing: 1 tokens, 0.0 tokens/s"


def test_clear_with_nothing_drawn_writes_nothing() -> None:
    out = io.StringIO()
    TokenMeter(out, tick_seconds=None, tty=True).clear()
    assert out.getvalue() == ""


def test_the_ticker_redraws_while_reading_and_stops_on_close() -> None:
    out = io.StringIO()
    meter = TokenMeter(out, tick_seconds=0.01, tty=True)
    meter.start("generate")
    deadline = time.monotonic() + 5
    while out.getvalue().count("reading the prompt") < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert out.getvalue().count("reading the prompt") >= 3
    meter.close()
    assert meter._ticker is None
    settled = out.getvalue()
    time.sleep(0.05)
    assert out.getvalue() == settled and settled.endswith("\r\x1b[K")


def test_its_handler_starts_the_reading_line_when_a_model_call_begins() -> None:
    out, clock = io.StringIO(), Clock()
    meter = TokenMeter(out, clock=clock, tick_seconds=None, tty=True)
    model = FakeChatModel(script={"*": ["hello"]})
    config = {"callbacks": [meter.handler()], "metadata": {"langgraph_node": "refine"}}
    model.invoke([HumanMessage("hi")], config)
    assert "  [refine] reading the prompt: 0 s" in out.getvalue()


def test_a_candidates_call_is_named_by_its_index_and_role_and_a_whole_message_is_no_token() -> None:
    from langchain_core.messages import AIMessage, AIMessageChunk

    out, clock = io.StringIO(), Clock()
    meter = TokenMeter(out, clock=clock, tick_seconds=None, tty=True)
    writing = {"langgraph_node": "candidate", "candidate": 2, "role": "critic"}
    meter.streamed(AIMessageChunk(content="The"), writing)
    assert shown(out) == "  [candidate 2, critic] writing: 1 tokens, 0.0 tokens/s"
    meter.clear()
    meter.streamed(AIMessage(content="The answer.", name="answer"), {"langgraph_node": "finalize"})
    assert "finalize" not in out.getvalue(), "the answer a node hands on is not counted"


def test_off_a_terminal_a_line_of_its_own_every_interval_of_a_call() -> None:
    out, clock = io.StringIO(), Clock()
    meter = TokenMeter(out, clock=clock, tick_seconds=None, tty=False, interval=30)
    meter.start("critique")
    clock.now += 10
    meter.tick()
    assert out.getvalue() == "", "a call shorter than the interval prints nothing"
    clock.now += 25
    meter.tick()
    for _ in range(60):  # two tokens a second for 30 s
        clock.now += 0.5
        meter.token("critique")
    meter.clear()
    assert out.getvalue().splitlines() == [
        "  [critique] reading the prompt: 35 s",
        "  [critique] writing: 60 tokens, 2.0 tokens/s",
    ]
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()
