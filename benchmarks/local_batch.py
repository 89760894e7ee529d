"""Where a local-model batch's time goes, and what this CPU can give more (issue 25, part 3).

    python -m benchmarks.local_batch rates [MODEL] [ROUNDS]
    python -m benchmarks.local_batch batch [MODEL] [ROUNDS] [ITEMS]
    python -m benchmarks.local_batch processes [MODEL] [ROUNDS]

`rates`: the embedded model's raw rates, straight from llama.cpp (its own
timers, no Python sampling): prompt tokens read per second and tokens written
per second with 1 and 2 threads, and the rate of writing when one decode
carries the next token of 1 or of 4 sequences (llama.cpp's batched decode,
what a batch of several items' replies could share). The settings alternate
within each round; each figure is the best round's.

`batch`: ITEMS short items (default 20) through `self-refine batch --model
MODEL` (default `local:smollm2`, `--max-tokens 48`, one refine step: 4 calls
per item) at `--concurrency 1` and `4`, alternating, each in a fresh process.
Prints items per minute, and splits the wall time into the model (the time the
model's lock is held: reading, writing, llama-cpp-python's sampling) and the
rest (orchestration: the graph, checkpoints, prompts, the output file).

`processes`: tokens written per second by one process of 2 threads against two
processes of 1 thread each writing at the same time (what worker processes, one
model each, would give on this CPU).

All print the load average beside every figure: on a shared machine compare
only the ratios of one run.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

DEFAULT_MODEL = "local:smollm2"
PROMPT_TOKENS = 256
WRITE_STEPS = 48


def _load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def _path(model: str) -> str:
    from self_refine.models.fetch import local_model_path

    return str(local_model_path(model))


_QUIET: Any = None


def _quiet_llama() -> None:
    """No llama.cpp log lines on stderr (the low-level API logs every tensor it loads)."""
    global _QUIET
    import llama_cpp as L

    _QUIET = L.llama_log_callback(lambda level, text, data: None)
    L.llama_log_set(_QUIET, ctypes.c_void_p(0))


class _Decoder:
    """One llama.cpp context of up to 4 sequences, driven through the low-level API."""

    def __init__(self, model: Any, threads: int) -> None:
        import llama_cpp as L

        self.L = L
        params = L.llama_context_default_params()
        params.n_ctx = 2048
        params.n_batch = 512
        params.n_ubatch = 512
        params.n_seq_max = 4
        params.kv_unified = True
        params.n_threads = params.n_threads_batch = threads
        self.ctx = L.llama_init_from_model(model, params)
        self.batch = L.llama_batch_init(512, 0, 4)
        self.memory = L.llama_get_memory(self.ctx)

    def close(self) -> None:
        self.L.llama_batch_free(self.batch)
        self.L.llama_free(self.ctx)

    def _decode(self, tokens: list[tuple[int, int, int]]) -> float:
        """Decode (token, position, sequence) triples at once; the seconds it took."""
        b = self.batch
        b.n_tokens = len(tokens)
        for i, (token, pos, seq) in enumerate(tokens):
            b.token[i] = token
            b.pos[i] = pos
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = seq
            b.logits[i] = i == len(tokens) - 1 or pos >= PROMPT_TOKENS
        start = time.perf_counter()
        if self.L.llama_decode(self.ctx, b) != 0:
            raise RuntimeError("llama_decode failed")
        return time.perf_counter() - start

    def read(self, prompt: list[int]) -> float:
        """Read a prompt into sequence 0 from an empty context; prompt tokens per second."""
        self.L.llama_memory_clear(self.memory, True)
        return len(prompt) / self._decode([(t, p, 0) for p, t in enumerate(prompt)])

    def write(self, prompt: list[int], sequences: int, token: int) -> float:
        """Write WRITE_STEPS tokens in each of `sequences` sequences sharing the prompt;
        tokens written per second (all sequences together)."""
        self.read(prompt)
        for seq in range(1, sequences):
            self.L.llama_memory_seq_cp(self.memory, 0, seq, -1, -1)
        spent = 0.0
        for step in range(WRITE_STEPS):
            pos = len(prompt) + step
            spent += self._decode([(token, pos, seq) for seq in range(sequences)])
        return sequences * WRITE_STEPS / spent


def _model_and_prompt(model_name: str) -> tuple[Any, list[int]]:
    """llama.cpp's model loaded from its file, and a prompt of `PROMPT_TOKENS` tokens."""
    import llama_cpp as L

    _quiet_llama()
    L.llama_backend_init()
    model = L.llama_model_load_from_file(_path(model_name).encode(), L.llama_model_default_params())
    vocab = L.llama_model_get_vocab(model)
    text = b"Cities plant trees along streets for shade, cleaner air and calmer traffic. " * 40
    buffer = (L.llama_token * 4096)()
    count = L.llama_tokenize(vocab, text, len(text), buffer, 4096, True, False)
    return model, list(buffer[:count])[:PROMPT_TOKENS]


def rates(model_name: str, rounds: int) -> None:
    """Print the raw read and write rates: 1 vs 2 threads, 1 vs 4 sequences per decode."""
    model, prompt = _model_and_prompt(model_name)
    token = prompt[5]
    best: dict[str, float] = {}
    decoders = {threads: _Decoder(model, threads) for threads in (1, 2)}
    print(f"{model_name}: prompt {len(prompt)} tokens, {WRITE_STEPS} write steps; {_load()}")
    for _ in range(rounds):
        for threads, decoder in decoders.items():
            figures = {
                f"read, {threads} thread(s)": decoder.read(prompt),
                f"write 1 sequence, {threads} thread(s)": decoder.write(prompt, 1, token),
                f"write 4 sequences, {threads} thread(s)": decoder.write(prompt, 4, token),
            }
            for name, value in figures.items():
                best[name] = max(best.get(name, 0.0), value)
        print(f"  round done, {_load()}", flush=True)
    for name, value in best.items():
        print(f"{name:<32} {value:8.1f} tokens/s (best of {rounds})")
    for threads in (1, 2):
        one = best[f"write 1 sequence, {threads} thread(s)"]
        four = best[f"write 4 sequences, {threads} thread(s)"]
        print(f"4 sequences per decode over 1, {threads} thread(s): {four / one:.2f}x tokens/s")
    print(
        "2 threads over 1: read "
        f"{best['read, 2 thread(s)'] / best['read, 1 thread(s)']:.2f}x, write "
        f"{best['write 1 sequence, 2 thread(s)'] / best['write 1 sequence, 1 thread(s)']:.2f}x; "
        f"{_load()}"
    )
    for decoder in decoders.values():
        decoder.close()


def _writer(model_name: str, threads: int) -> None:
    """In a fresh process: read the prompt, then write with `threads` threads; print tokens/s."""
    model, prompt = _model_and_prompt(model_name)
    decoder = _Decoder(model, threads)
    decoder.write(prompt, 1, prompt[5])  # warm
    print(json.dumps({"rate": decoder.write(prompt, 1, prompt[5])}), flush=True)


def processes(model_name: str, rounds: int) -> None:
    """Print tokens written per second: one process of 2 threads, two processes of 1 thread."""
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=root)

    def run(threads: int, count: int) -> float:
        command = [sys.executable, "-m", "benchmarks.local_batch", "writer", model_name]
        started = [
            subprocess.Popen([*command, str(threads)], stdout=subprocess.PIPE, text=True, env=env)
            for _ in range(count)
        ]
        return sum(json.loads(p.communicate()[0].strip().splitlines()[-1])["rate"] for p in started)

    best = {"one process, 2 threads": 0.0, "two processes, 1 thread each": 0.0}
    for _ in range(rounds):
        for name, (threads, count) in zip(best, ((2, 1), (1, 2)), strict=True):
            rate = run(threads, count)
            best[name] = max(best[name], rate)
            print(f"{name:<30} {rate:7.1f} tokens/s written (all together); {_load()}", flush=True)
    one, two = best.values()
    print(f"best of {rounds}: two 1-thread processes over one 2-thread process: {two / one:.2f}x")


TOPICS = (
    "street trees",
    "night trains",
    "public libraries",
    "bicycle lanes",
    "rain gardens",
    "tide pools",
    "paper maps",
    "city parks",
    "solar roofs",
    "river ferries",
    "community gardens",
    "old bridges",
    "bus shelters",
    "museum nights",
    "morning markets",
    "quiet carriages",
    "public fountains",
    "rooftop farms",
    "canal walks",
    "winter lights",
)


def _items(folder: Path, items: int) -> Path:
    source = folder / "in.jsonl"
    lines = [
        json.dumps({"id": str(n), "task": f"Write one sentence about {TOPICS[n % len(TOPICS)]}."})
        for n in range(items)
    ]
    source.write_text("\n".join(lines) + "\n")
    return source


def _one_batch(model: str, items: int, concurrency: int) -> dict[str, float]:
    """Run the batch in a child process (this module's `child`); its figures."""
    with tempfile.TemporaryDirectory(prefix="self-refine-local-batch-") as name:
        root = str(Path(__file__).resolve().parent.parent)
        env = dict(os.environ, LANGSMITH_TRACING="false", PYTHONPATH=root)
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.local_batch", "child", model, str(items)]
            + [str(concurrency), name],
            capture_output=True,
            text=True,
            env=env,
            timeout=3600,
        )
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip()[-800:])
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def child(model: str, items: int, concurrency: int, folder: Path) -> None:
    """In a fresh process: the batch, with the model's lock timed."""
    import self_refine.models.local as local
    from self_refine import cli

    held = [0.0]
    shared = local.shared_llama

    class TimedLock:
        def __init__(self, lock: threading.Lock) -> None:
            self.lock = lock

        def __enter__(self) -> None:
            self.lock.acquire()
            self.start = time.perf_counter()

        def __exit__(self, *_: Any) -> None:
            held[0] += time.perf_counter() - self.start
            self.lock.release()

    def timed(path: str, n_ctx: int) -> Any:
        llama, lock = shared(path, n_ctx)
        return llama, TimedLock(lock)

    local.shared_llama = timed
    source = _items(folder, items)
    argv = ["batch", str(source), "-o", str(folder / "out.jsonl"), "--db", str(folder / "db")]
    argv += ["--model", model, "--max-tokens", "48", "--max-iterations", "1", "--verifiers", ""]
    # The model is loaded (and its runtime checked) before the clock starts: one item first.
    warm = folder / "warm.jsonl"
    warm.write_text(json.dumps({"id": "warm", "task": "Write one sentence about rain."}) + "\n")
    cli.main(
        ["batch", str(warm), "-o", str(folder / "warm.out"), "--db", str(folder / "wdb")]
        + argv[6:]
        + ["--concurrency", "1"]
    )
    held[0] = 0.0
    start, cpu = time.perf_counter(), time.process_time()
    code = cli.main([*argv, "--concurrency", str(concurrency)])
    wall = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"batch failed with exit code {code}")
    records = [json.loads(line) for line in (folder / "out.jsonl").read_text().splitlines()]
    print(
        json.dumps(
            {
                "wall": wall,
                "cpu": time.process_time() - cpu,
                "model": held[0],
                "items": len(records),
            }
        )
    )


def batch(model: str, rounds: int, items: int) -> None:
    """Print items per minute at concurrency 1 and 4, and where the wall time went."""
    got: dict[int, list[dict[str, float]]] = {1: [], 4: []}
    for _ in range(rounds):
        for concurrency in (1, 4):
            load = _load()
            result = _one_batch(model, items, concurrency)
            got[concurrency].append(result)
            wall, held = result["wall"], result["model"]
            print(
                f"concurrency {concurrency}: {60 * result['items'] / wall:6.2f} items/min, wall "
                f"{wall:6.1f} s, model (lock held) {held:6.1f} s = {100 * held / wall:4.1f}%, "
                f"the rest {wall - held:5.1f} s; process CPU {result['cpu']:6.1f} s; {load}",
                flush=True,
            )
    best = {c: max(60 * r["items"] / r["wall"] for r in runs) for c, runs in got.items()}
    print(f"best items/min: concurrency 1 {best[1]:.2f}, 4 {best[4]:.2f}: {best[4] / best[1]:.2f}x")


def main() -> None:
    """Dispatch: rates, batch, or a batch's child process."""
    what, args = sys.argv[1], sys.argv[2:]
    model = args[0] if args else DEFAULT_MODEL
    if what == "rates":
        rates(model, int(args[1]) if len(args) > 1 else 3)
    elif what == "batch":
        batch(model, int(args[1]) if len(args) > 1 else 2, int(args[2]) if len(args) > 2 else 20)
    elif what == "processes":
        processes(model, int(args[1]) if len(args) > 1 else 3)
    elif what == "writer":
        _writer(model, int(args[1]))
    elif what == "child":
        child(model, int(args[1]), int(args[2]), Path(args[3]))
    else:
        raise SystemExit(
            "usage: python -m benchmarks.local_batch rates|batch|processes [MODEL] ..."
        )


if __name__ == "__main__":
    main()
