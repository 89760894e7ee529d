"""A task of text and image blocks: what reaches each role, what is refused, where it shows."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from self_refine import ConfigError, refine, refine_batch
from self_refine.batch.items import read_items
from self_refine.cli.main import main
from self_refine.content import image_source
from self_refine.graphs import task_from_messages
from self_refine.models.local import LocalChatModel
from self_refine.pages.batch import batch_view
from self_refine.pages.render import render_page
from self_refine.pages.thread import thread_view
from tests.fakes import FakeChatModel, critique
from tests.images import IMAGE_TASK_TEXT, image_task, png_base64


def _judge_colour(messages: list[Any]) -> dict[str, Any]:
    if "<draft>\nA red dot." in messages[-1].text:
        return critique(score=1.0, done=True)
    return critique(["Say its colour."], score=0.5)


def _scripted() -> FakeChatModel:
    return FakeChatModel(
        script={
            "generator": ["A dot."],
            "critic": [_judge_colour],
            "refiner": ["A red dot."],
        }
    )


def _image_blocks(messages: list[Any]) -> list[dict[str, Any]]:
    return [
        block
        for message in messages
        if isinstance(message.content, list)
        for block in message.content
        if block.get("type") == "image"
    ]


@pytest.mark.parametrize("form", ["conversation", "single"])
def test_the_image_block_reaches_every_role_unchanged(form: str) -> None:
    model = _scripted()
    task = image_task()
    seen: list[str] = []

    def sees_text(task_text: str, draft: str, reference: Any) -> Any:
        seen.append(task_text)
        from self_refine import Critique

        red = "red" in draft
        return Critique(feedback=[] if red else ["Name the colour."], done=red, score=float(red))

    result = refine(
        task, model=model, refine_form=form, critics=[sees_text, "llm"], strategy="refine"
    )
    assert result["answer"] == "A red dot." and result["stop_reason"] == "verified"
    assert {sent.role for sent in model.requests} == {"generator", "critic", "refiner"}
    for sent in model.requests:
        assert _image_blocks(sent.messages) == [task[1]]
        assert IMAGE_TASK_TEXT in sent.prompt or IMAGE_TASK_TEXT in sent.messages[1].text
    assert seen and set(seen) == {IMAGE_TASK_TEXT}  # verifiers read the task's text


@pytest.mark.parametrize(
    ("role", "model"),
    [("generator", "offline"), ("generator", LocalChatModel(model_path="absent.gguf"))],
)
def test_a_text_only_model_is_refused_before_the_first_call(role: str, model: Any) -> None:
    with pytest.raises(ConfigError, match=f"the {role} model .* reads text only") as caught:
        refine(image_task(), model=model)
    assert "\n" not in str(caught.value)


def test_the_role_that_cannot_read_images_is_named() -> None:
    model = _scripted()
    with pytest.raises(ConfigError, match="the refiner model 'offline'"):
        refine(image_task(), model=model, refiner_model="offline")
    with pytest.raises(ConfigError, match="the critic model 'offline'"):
        refine(image_task(), model=model, critic_model="offline")
    assert model.requests == []


@pytest.mark.parametrize(
    ("task", "message"),
    [
        ([], "task is an empty list"),
        ([{"type": "text", "text": "Describe it."}, {"type": "audio", "url": "x"}], "type 'audio'"),
        ([{"type": "text", "text": "Describe it."}, {"type": "image"}], "an image needs"),
        ([{"type": "image", "url": "https://example.com/a.png"}], "task has no text"),
        (["Describe it."], "must be an object"),
        ([{"type": "text", "text": "x"}, {"type": "image", "url": "file:///etc/passwd"}], "http"),
        (
            image_task({"type": "image", "base64": png_base64(), "mime_type": "text/html"}),
            "task block 1: mime_type 'text/html' is not an image type: give image/png,",
        ),
        (
            image_task({"type": "image", "base64": "not base64 at all!", "mime_type": "image/png"}),
            "task block 1: the image's base64 data does not decode",
        ),
        (
            image_task({"type": "image", "url": "data:image/png;base64,%%%"}),
            "task block 1: the image's base64 data does not decode",
        ),
        (
            image_task({"type": "image_url", "image_url": {"url": "data:text/html;base64,PGI+"}}),
            "an image needs an http.s. or data:image/ URL",
        ),
    ],
)
def test_bad_blocks_are_refused_in_one_line(task: list[Any], message: str) -> None:
    model = _scripted()
    with pytest.raises(ConfigError, match=message) as caught:
        refine(task, model=model)
    assert "\n" not in str(caught.value) and model.requests == []


def test_show_and_the_page_show_the_image(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "threads.sqlite"
    with SqliteSaver.from_conn_string(str(db)) as saver:
        refine(image_task(), model=_scripted(), checkpointer=saver, thread_id="picture")
    page = tmp_path / "page.html"
    assert main(["show", "picture", "--db", str(db), "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert f"task: {IMAGE_TASK_TEXT}\n\n[image: data:image/png]" in out
    html = page.read_text()
    assert f'class="task-image" src="data:image/png;base64,{png_base64()}"' in html


@pytest.mark.parametrize(
    "image",
    [
        {"type": "image", "url": "http://127.0.0.1:9/track.png?who=url"},
        {"type": "image_url", "image_url": "https://tracker.example/p.png"},
        {"type": "image_url", "image_url": {"url": "http://127.0.0.1:9/track.png?who=dict"}},
    ],
)
def test_the_page_never_loads_an_image_given_by_url(image: dict[str, Any]) -> None:
    url = image_source(image)
    task = [*image_task(), image]
    thread_page = render_page("thread.html.j2", thread_view({"task": task}, title="t"))
    record = {"id": "a", "task": task, "stop_reason": "verified", "attempts": []}
    batch_page = render_page("batch.html.j2", batch_view([record], title="t"))
    for page in (thread_page, batch_page):
        sources = re.findall(r'<img[^>]*\ssrc="([^"]*)"', page)
        assert sources == [f"data:image/png;base64,{png_base64()}"], "only the image it holds"
        assert f"[image: {url}]" in page, "the remote image is named where it stands"
        assert "default-src 'none'" in page and "img-src data:" in page, "nor any other fetch"


def test_a_batch_line_may_carry_images(tmp_path: Path) -> None:
    lines = tmp_path / "items.jsonl"
    url_task = image_task({"type": "image", "url": "https://example.com/dot.png"})
    bad = [{"type": "text", "text": "x"}, {"type": "video"}]
    lines.write_text(
        "\n".join(
            json.dumps({"id": i, "task": t}) for i, t in enumerate([image_task(), url_task, bad])
        )
    )
    items, problems = read_items(lines)
    assert [item.task for item in items] == [image_task(), url_task]
    assert [p.line for p in problems] == [3] and "type 'video'" in problems[0].message

    result = refine_batch([item.task for item in items], model=_scripted(), verifiers=())
    assert result.errors == {} and result.answers == ["A red dot.", "A red dot."]
    assert result.records[1] is not None and result.records[1]["task"] == url_task
    with pytest.raises(ConfigError, match="reads text only"):
        refine_batch([image_task()], model="offline", verifiers=())


def test_a_chat_message_with_an_image_is_the_task_as_blocks() -> None:
    question = HumanMessage(image_task())
    assert task_from_messages({"messages": [question]})["task"] == image_task()
    assert task_from_messages({"messages": [HumanMessage("Hi.")]})["task"] == "Hi."
