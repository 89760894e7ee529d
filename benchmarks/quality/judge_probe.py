"""Can a local model judge what the constrained grader cannot (whether a sentence can be
pictured)? `python -m benchmarks.quality.judge_probe --model local:qwen2.5-coder-1.5b
--out PAGE.md` asks the model one yes/no question per answer and measures its score
against the hand audits' verdicts.

Only the answers the grader passes are asked (a judge after the grader can only fail
more): those of the first audit (`audit-constrained-2026-12-07.verdicts.json`) tune the
threshold on the model's probability of "No" (not nonsense); the blind audit's
(`audit-constrained-blind-2026-12-07.verdicts.json`) report the disagreements a grader
plus this judge would have at that threshold. The question was chosen on the first
audit's answers: of two tried, one asking whether the scene makes sense scored at chance
(AUC 0.49), this one 0.85. (Both were scored on both audits in one scratch run before the
choice, so the blind audit's figures of both were seen, 0.54 and 0.71: they point the
same way.) Greedy, one token, its top 10 log-probabilities; the model's own chat
template. Reads the committed runs and audits; writes only `--out`.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from benchmarks.quality.audit import VERDICTS, population, reported_runs
from benchmarks.quality.outputs import show_page
from benchmarks.quality.regrade import RESULTS

__all__ = ["QUESTION", "auc", "errors", "main", "threshold"]

BLIND = RESULTS / "audit-constrained-blind-2026-12-07.verdicts.json"
QUESTION = (
    "Sentence: {answer}\n\nIs this sentence nonsense, describing something that could not "
    "really happen (for example a river flowing through an apple)? Answer Yes or No."
)


def auc(scored: list[tuple[float, bool]]) -> float:
    """The chance a right answer scores above a wrong one (ties count half)."""
    right = [s for s, ok in scored if ok]
    wrong = [s for s, ok in scored if not ok]
    if not right or not wrong:
        return float("nan")
    wins = sum((r > w) + 0.5 * (r == w) for r in right for w in wrong)
    return wins / (len(right) * len(wrong))


def errors(scored: list[tuple[float, bool]], cut: float) -> int:
    """Answers the judge (right at a score of `cut` or more) and the reader disagree on."""
    return sum((score >= cut) != ok for score, ok in scored)


def threshold(scored: list[tuple[float, bool]]) -> float:
    """The cut with the fewest disagreements (the lowest such; passing all is a cut too)."""
    cuts = sorted({s for s, _ in scored}) + [math.inf]
    return min(cuts, key=lambda cut: (errors(scored, cut), cut))


def _score(llm: Any, answer: str) -> float:
    """The model's probability of "No" against "Yes" on the question."""
    reply = llm.create_chat_completion(
        messages=[{"role": "user", "content": QUESTION.format(answer=answer)}],
        max_tokens=1,
        temperature=0,
        logprobs=True,
        top_logprobs=10,
    )
    top = reply["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    p: dict[str, float] = {}
    for entry in top:
        word = entry["token"].strip().lower()
        p[word] = p.get(word, 0.0) + math.exp(entry["logprob"])
    yes, no = p.get("yes", 0.0), p.get("no", 0.0)
    return no / (yes + no) if yes + no else 0.5


def main() -> None:
    """Command line: score the grader-passed answers of both audits, print the page."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local:qwen2.5-coder-1.5b", help="%(default)s")
    parser.add_argument("--threads", type=int, default=2, help="%(default)s")
    parser.add_argument("--out", type=Path, help="write the page here (markdown)")
    args = parser.parse_args()
    from llama_cpp import Llama

    from benchmarks.quality.provenance import recorded_commit
    from self_refine.models.fetch import local_model_path

    path = local_model_path(args.model)
    llm = Llama(
        model_path=str(path), n_ctx=1024, n_threads=args.threads, logits_all=True, verbose=False
    )
    answers = {a.key: a for a in population(reported_runs())[0]}
    parts: dict[str, list[tuple[float, bool]]] = {}
    for part, file in (("tune (first audit)", VERDICTS), ("report (blind audit)", BLIND)):
        judged = json.loads(file.read_text())["verdicts"]
        parts[part] = [
            (_score(llm, answers[key].answer), mine["verdict"] == "right")
            for key, mine in judged.items()
            if answers[key].right
        ]
    tune, report = parts.values()
    cut = threshold(tune)
    best = threshold(report)
    lines = [
        "# A local model as a judge of meaning for the constrained set",
        "",
        f"`python -m benchmarks.quality.judge_probe --model {args.model}` at commit "
        f"{recorded_commit()} ({path.name}): the answers the grader passes, asked "
        f"{QUESTION!r}; the score is the probability of No.",
        "",
        "| part | answers | reader right | AUC | disagreements passing all | at the tuned cut |",
        "|---|---|---|---|---|---|",
    ]
    for part, scored in parts.items():
        lines.append(
            f"| {part} | {len(scored)} | {sum(ok for _, ok in scored)} | "
            f"{auc(scored):.2f} | {errors(scored, -math.inf)} | {errors(scored, cut)} |"
        )
    lines += [
        "",
        f"The cut chosen on the tuning part: {cut:.3f}. On the reported part the best cut "
        f"any choice could have made ({best:.3f}, read off the reported answers, so not a "
        f"result) would still leave {errors(report, best)} disagreements.",
    ]
    show_page(lines, args.out)


if __name__ == "__main__":
    main()
