"""Do two trees send the model the same requests?

`python benchmarks/quality/same_requests.py OLD NEW` (two checkouts).

Runs the quality benchmark's `run()` (every condition: first, intrinsic, verifier,
trainer, candidates, best-of-N) of the code in each tree, each in a process of its own,
over the first `--n` items of each set with `--k` refine steps, with a `LocalChatModel`
whose llama.cpp call is replaced: each request is recorded as llama.cpp would get it
(the messages, max_tokens, temperature, stop, seed and response format, from the tree's
own `LocalChatModel._request`), and the reply is a deterministic function of the
request (a critique for the critic; for drafts one of several kinds: right, missing a
word, the draft copied, a word list, an instruction, the prompt echoed, empty, a wrong
number, code). Trees that send the same requests get the same replies, so their records
match; the first request that differs makes everything after it differ.

Prints whether the requests are the same as a multiset (parallel candidates and the
sandbox's async checks interleave calls differently from run to run, even in one tree),
whether every final answer and every figure but the seconds is the same, and requests
only one tree sent. Exits 1 when anything differs: how a quality run of one commit is
shown to describe another (a merge, a refactor). Nothing here loads a model.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def _task(text: str) -> str:
    match = re.search(r"<task>\n(.*?)\n</task>", text, re.S)
    return match.group(1) if match else text


def scripted_reply(request: dict[str, Any]) -> str:
    """A deterministic reply to a llama.cpp request (see the module docstring)."""
    blob = json.dumps(request, sort_keys=True)
    h = int(hashlib.sha256(blob.encode()).hexdigest(), 16)
    messages = request["messages"]
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    role = system.split("\n", 1)[0].removeprefix("Role: ").strip()
    if role == "critic" or request.get("response_format"):
        items = [["Say more about it."], ["Check the numbers again."], []][h % 3]
        return json.dumps({"feedback": items, "score": (h % 11) / 10, "done": h % 7 == 0})
    user = next((m["content"] for m in messages if m["role"] == "user"), "")
    task = _task(user)
    last_draft = next((m["content"] for m in reversed(messages) if m["role"] == "assistant"), "")
    drafts = re.findall(r"<draft>\n(.*?)\n</draft>", messages[-1]["content"], re.S)
    previous = last_draft or (drafts[-1] if drafts else "")
    kind = h % 8
    if kind == 2 and previous:
        return previous
    if kind == 6:  # the prompt's own instruction echoed: rejected, asked again with why
        return messages[-1]["content"].splitlines()[-1]
    if kind == 7:  # an empty reply: asked again as it was
        return ""
    words = re.search(r"use all of these words: (.*)\.", task)
    if words:
        concepts = [w.strip() for w in words.group(1).split(",")]
        if kind == 0:
            return f"The {concepts[0]} sat near the " + ", the ".join(concepts[1:]) + " all day."
        if kind == 1:
            return f"The {concepts[0]} sat near the " + " and the ".join(concepts[1:-1]) + "."
        if kind == 3:
            return ", ".join(concepts)
        if kind == 4:
            return f"Add {concepts[-1]} to the sentence about the {concepts[0]}."
        return (
            f"We saw a {concepts[0]} by the {concepts[1]}. Later "
            + " and ".join(concepts[2:])
            + " came too."
        )
    if "def " in task or "Python" in task or "function" in task:
        name = re.search(r"`(\w+)\(", task)
        fn = name.group(1) if name else "solve"
        body = ["return x", "return 0", "return len(str(x))", "return x * 2"][kind % 4]
        return f"```python\ndef {fn}(x, *rest):\n    {body}\n```"
    return f"Working it out step by step, the answer is {h % 60}."


def record(tree: Path, out: Path, n: int, k: int) -> None:
    """Run the benchmark of `tree` with the recording model; write what it was sent."""
    here = Path(__file__).resolve().parent  # its modules are the tree's, not top-level ones
    sys.path[:] = [str(tree), *(p for p in sys.path if Path(p or ".").resolve() != here)]
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    import self_refine
    from benchmarks.quality import run as quality
    from self_refine.models.local import LocalChatModel

    for module in (quality, self_refine):
        if not Path(str(module.__file__)).is_relative_to(tree):
            raise SystemExit(f"{module.__name__} came from {module.__file__}, not {tree}")
    recorded: list[dict[str, Any]] = []

    class Recording(LocalChatModel):
        def check_room(self, messages: Any) -> None:
            """Nothing to measure the request with: there is no model file to tokenize."""

        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> ChatResult:
            request = self._request(messages, stop, **kwargs)
            recorded.append(request)
            text = scripted_reply(request)
            sent, written = len(json.dumps(request["messages"])) // 4, len(text) // 4 + 1
            usage: Any = {"input_tokens": sent, "output_tokens": written}
            usage["total_tokens"] = sent + written
            message = AIMessage(text, usage_metadata=usage)
            return ChatResult(generations=[ChatGeneration(message=message)])

    # As resolve_model("local", max_tokens=512) builds it, without loading the file.
    model = Recording(
        model_path="/nonexistent/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        model_name="local:qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        max_tokens=512,
    )
    with tempfile.TemporaryDirectory() as folder:
        args = argparse.Namespace(
            model="local",
            base_url=None,
            api_key=None,
            n=n,
            part="report",
            k=k,
            max_tokens=512,
            refine_form=None,
            candidates=3,
            best_of=None,
            best_of_given=False,
            sets=["constrained", "arithmetic", "code"],
            conditions=list(quality.CONDITIONS),
            out=Path(folder),
            name="recorded",
            overwrite=False,
            latest=False,
        )
        document, records = asyncio.run(quality.run(args, chat_model=model))
    answers = {
        name: {condition: [r.get("answer") for r in done] for condition, done in runs.items()}
        for name, runs in records.items()
    }
    kept = {"requests": recorded, "answers": answers, "results": document["results"]}
    out.write_text(json.dumps(kept, sort_keys=True))


def _without_seconds(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_seconds(v) for k, v in value.items() if "second" not in k}
    if isinstance(value, list):
        return [_without_seconds(v) for v in value]
    return value


def compare(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between two recordings (nothing: an empty list)."""
    sent = [sorted(json.dumps(r, sort_keys=True) for r in x["requests"]) for x in (old, new)]
    found = []
    if sent[0] != sent[1]:
        only_old, only_new = (
            sorted(set(sent[0]) - set(sent[1])),
            sorted(set(sent[1]) - set(sent[0])),
        )
        found.append(f"requests differ: {len(only_old)} only in OLD, {len(only_new)} only in NEW")
        found += [f"  only in OLD: {r[:400]}" for r in only_old[:3]]
        found += [f"  only in NEW: {r[:400]}" for r in only_new[:3]]
    if old["answers"] != new["answers"]:
        found.append("final answers differ")
    if _without_seconds(old["results"]) != _without_seconds(new["results"]):
        found.append("figures differ (seconds aside)")
    return found


def main() -> None:
    """Record both trees, each in a process of its own, and compare."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path, help="a checkout (e.g. git archive REV | tar -x)")
    parser.add_argument("new", type=Path, help="another checkout")
    parser.add_argument("--n", type=int, default=10, help="items per set (default 10)")
    parser.add_argument("--k", type=int, default=3, help="refine steps (default 3)")
    parser.add_argument("--record", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.record:  # a child: record one tree
        record(args.old.resolve(), args.record, args.n, args.k)
        return
    with tempfile.TemporaryDirectory() as folder:
        kept = []
        for tree in (args.old, args.new):
            out = Path(folder) / f"{len(kept)}.json"
            command = [sys.executable, __file__, str(tree), str(tree), "--record", str(out)]
            subprocess.run([*command, "--n", str(args.n), "--k", str(args.k)], check=True)
            kept.append(json.loads(out.read_text()))
    found = compare(*kept)
    count = len(kept[0]["requests"])
    print(f"{count} requests recorded from OLD, {len(kept[1]['requests'])} from NEW")
    print("\n".join(found) or "the same requests, final answers and figures (seconds aside)")
    raise SystemExit(1 if found else 0)


if __name__ == "__main__":
    main()
