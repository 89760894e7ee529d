"""The `self-refine` program's arguments: every command, and the settings flags they share.

Light imports only: the program builds this parser before anything else.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, NoReturn

from self_refine.cli.options import add_connection_options
from self_refine.settings.fields import SELECTS, RefineContext

__all__ = ["build_parser"]

_DEFAULT = RefineContext()
"""Each setting's default, shown in the help; a flag left out leaves the setting to it."""


def _add_settings(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        default=os.environ.get("SELF_REFINE_MODEL", "offline"),
        help="model for every role: 'offline' (a deterministic stand-in that writes the same "
        "draft every time, the default); 'local' (Qwen2.5-Coder-0.5B-Instruct run in-process: "
        "the first time, a 491 MB fetch and, unless installed, a llama.cpp build of about 7 "
        "minutes), 'local:qwen2.5-coder-1.5b' (1.1 GB), 'local:smollm2' (98 MB, weaker) or "
        "'local:PATH.gguf'; 'gpt-4o-mini', 'openai:gpt-4o-mini', ..., or a served model's "
        "name with --base-url (env SELF_REFINE_MODEL)",
    )
    parser.add_argument("--critic-model", help="model for the critic (default: --model)")
    parser.add_argument("--refiner-model", help="model for the refiner (default: --model)")
    parser.add_argument(
        "--base-url",
        help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1 (env OPENAI_BASE_URL)",
    )
    parser.add_argument(
        "--max-iterations",
        type=int,
        help="most steps after the first draft (0..50; default "
        f"{_DEFAULT.max_iterations}); a step is, with --strategy refine, one rewrite of the "
        "draft from its critique; with sample, one round of fresh drafts; with search, one "
        "round whose replies each refine a draft so far or write a fresh one",
    )
    parser.add_argument(
        "--candidates",
        type=int,
        metavar="N",
        help="replies each draft step samples at once, 1..16; the verifiers, then the "
        f"critic's score, pick one (default {_DEFAULT.candidates}; with --max-iterations 0: "
        "best-of-N)",
    )
    parser.add_argument(
        "--strategy",
        choices=("auto", "refine", "sample", "search"),
        help="how steps are spent: refine the draft from its critique; sample fresh drafts, "
        "best-of-N; or search, where each reply refines one of the drafts a verifier failed "
        "or writes a fresh one, as a bandit over the verifiers' scores chooses (default "
        f"{_DEFAULT.strategy}, the first that fits: sample with --select vote; refine when the "
        "offline stand-in writes the drafts; sample when a verifier checks them; sample with "
        "--select vote and --critics none when drafts state a final answer and none of "
        "--select, --score-threshold, --patience and a --critics other than none is given; "
        "else refine, the "
        "critic alone judging; the run says which)",
    )
    parser.add_argument(
        "--first-verified",
        action=argparse.BooleanOptionalAction,
        help="with --candidates, end a step at its first candidate the verifiers pass, "
        "stopping the others (default: on; --no-first-verified waits for every candidate)",
    )
    parser.add_argument(
        "--temperature",
        type=float,
        help="sampling temperature of every call, candidates included, each with a seed of "
        "its own (0..2; default: the model's, and 0.8 for candidates after the first when "
        "that is colder)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        help="sampling seed; candidates and resampled replies draw with seeds worked out "
        "from it (default: the model's)",
    )
    parser.add_argument("--score-threshold", type=float, help="stop at this score (0..1)")
    parser.add_argument("--patience", type=int, help="stop after N rounds without a better score")
    parser.add_argument(
        "--history-window", type=int, help="earlier attempts the refine prompt carries (all)"
    )
    parser.add_argument(
        "--select",
        choices=SELECTS,
        help="which attempt is the answer: best, the highest-scoring one (ties to the "
        "earlier, then the shorter draft); last, the newest one, whatever its score; vote, "
        "the final answer most drafts state (self-consistency, ties to the answer reached "
        "first: with a profile whose drafts end with a final answer, such as math); "
        "default vote with such a profile, else best",
    )
    parser.add_argument(
        "--profile",
        help="prompt set and default critics for the kind of task "
        f"({_DEFAULT.profile}); see `self-refine profiles`",
    )
    parser.add_argument(
        "--critics",
        "--critic",
        dest="critics",
        metavar="NAME[,NAME]",
        help="who critiques: verifiers (answer, python_tests, concepts, json_schema, program) run "
        "first, then llm (the critic model) explains their findings when one fails; "
        "'human', alone, asks you at the terminal instead; 'none', alone, critiques nothing "
        "and calls no critic model, so the tokens go to samples: self-consistency, with "
        "--strategy sample --select vote only (default: the profile's critics)",
    )
    parser.add_argument(
        "--max-tokens-total", type=int, help="token budget of the run (stop reason token_budget)"
    )
    parser.add_argument(
        "--response-format",
        metavar="SCHEMA.json",
        help="a JSON schema file: the answer must be JSON that validates against it (drafts "
        "are asked for as such, validation errors become feedback); kept with the thread",
    )
    add_connection_options(parser)


def _add_db(parser: argparse.ArgumentParser) -> None:
    from_env = os.environ.get("SELF_REFINE_DB")
    parser.add_argument(
        "--db",
        default=from_env or ".self-refine/checkpoints.sqlite",
        help="SQLite checkpoint file or postgresql:// URL "
        "(default .self-refine/checkpoints.sqlite; env SELF_REFINE_DB)",
    )


class _OneLineErrors(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line and a pointer to --help."""

    def error(self, message: str) -> NoReturn:
        """Print `prog: error: message` and where the help is, then exit with status 2."""
        self.exit(2, f"{self.prog}: error: {message}\nsee: {self.prog} --help\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    parser = _OneLineErrors(
        prog="self-refine",
        description="Generate a draft, critique it, refine it from the critique, repeat.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="refine a response to a task, step by step")
    run.add_argument("task", help="the task text")
    run.add_argument("--draft", help="start from this response instead of generating one")
    run.add_argument(
        "--reference",
        metavar="JSON",
        help='what verifiers check against, a JSON object or @file, e.g. \'{"answer": "42"}\'',
    )
    run.add_argument("--thread-id", help="name the thread (default: a new UUID)")
    run.add_argument("--json", action="store_true", help="print the final result as JSON")
    _add_settings(run)
    _add_db(run)

    resume = commands.add_parser("resume", help="continue a thread that did not finish")
    resume.add_argument("thread_id")
    resume.add_argument("--json", action="store_true", help="print the final result as JSON")
    resume.add_argument(
        "--base-url",
        help="OpenAI-compatible server to continue with (default: env OPENAI_BASE_URL, "
        "else the server the thread started with)",
    )
    add_connection_options(resume)
    _add_db(resume)

    show = commands.add_parser("show", help="print a thread's attempts as a table")
    show.add_argument("thread_id")
    show.add_argument("--json", action="store_true", help="print the thread's state as JSON")
    show.add_argument("--html", metavar="PATH", help="also write the thread as an HTML page")
    _add_db(show)

    studio = commands.add_parser(
        "studio", help="serve the graphs to LangGraph Studio (langgraph dev) and print its URL"
    )
    studio.add_argument("--port", type=int, help="port on 127.0.0.1 (default: 2024 if free)")
    studio.add_argument(
        "--model", help="model of the served graphs (default: env SELF_REFINE_MODEL, else offline)"
    )
    studio.add_argument(
        "--config", help="langgraph.json-style config (default: ./studio.json, else built in)"
    )
    studio.add_argument(
        "--no-reload", action="store_true", help="do not restart the server when code changes"
    )
    commands.add_parser("profiles", help="list the prompt profiles, one line each")
    _add_batch_commands(commands)
    return parser


def _add_batch_commands(commands: Any) -> None:
    batch = commands.add_parser(
        "batch", help="refine every item of a JSONL file (resumable: rerun to continue)"
    )
    batch.add_argument(
        "input", help='JSONL file: one {"task": ..., "id"?, "reference"?, "draft"?} per line'
    )
    batch.add_argument(
        "-o",
        "--output",
        required=True,
        help="JSONL results, one line per item (a new file or one batch wrote; - for stdout)",
    )
    batch.add_argument(
        "--concurrency",
        type=int,
        default=8,
        help="model calls at once (8): what the model server serves at once; "
        "with --server, items at once",
    )
    batch.add_argument(
        "--refine-only-incorrect",
        action="store_true",
        help="leave first drafts that pass the verifiers as they are (no critique, no refine)",
    )
    batch.add_argument(
        "--summary", help="also write the summary to this JSON file (-: standard output)"
    )
    batch.add_argument("--html", metavar="PATH", help="also write an HTML report page")
    batch.add_argument("--shard", help="run only shard I of N (I/N, 1 <= I <= N) of the items")
    batch.add_argument(
        "--server", help="run items on a LangGraph server (e.g. http://127.0.0.1:2024)"
    )
    batch.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="run items on Ray actors: a Ray started on this machine for the batch, or the "
        "cluster at ADDRESS (auto, HOST:PORT; needs a postgresql:// --db)",
    )
    batch.add_argument(
        "--ray-actors",
        type=int,
        metavar="N",
        help="with --ray: actors that run items, sharing --concurrency (default: one per node)",
    )
    batch.add_argument(
        "--verifiers",
        metavar="NAME[,NAME]",
        help="verifiers that judge correctness for the accuracy figures (default: every "
        "built-in one whose data the item's reference holds; '' for none)",
    )
    _add_settings(batch)
    _add_db(batch)

    report = commands.add_parser("report", help="summarize batch output files")
    report.add_argument("outputs", nargs="+", help="output files of `self-refine batch`")
    report.add_argument(
        "--plot",
        help="draw the summary into this image (.png, .svg, .pdf; default: the first "
        "output file's name with .png, when matplotlib is installed)",
    )
    report.add_argument("--no-plot", action="store_true", help="do not draw the summary")
    report.add_argument("--json", action="store_true", help="print the summary as JSON")
    report.add_argument("--html", metavar="PATH", help="also write an HTML report page")
