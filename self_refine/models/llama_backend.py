"""The decode loop's llama.cpp side: a context of several sequences beside a `Llama`'s model.

The loop gets a context of its own on the model `llama_cpp.Llama` loaded (the weights
are not loaded again): its cells are shared by all sequences (llama.cpp's unified KV
cache), so a prompt copied to another sequence takes no more room. Its sampler chains
are the ones `Llama` builds for a completion (`Llama._init_sampler`, the same top-k,
top-p, min-p, temperature, seed and grammar), so a reply is the same as the serial
path's wherever llama.cpp's batched arithmetic gives the same logits.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence
from typing import Any, cast

__all__ = ["LlamaBackend", "ThreadCount", "decode_threads"]

THREADS_ENV = "SELF_REFINE_THREADS"
"""Environment variable: threads the embedded model decodes with (default: the free cores)."""


class ThreadCount(int):
    """A thread count, with how it was chosen (`why`), for the benchmark and error messages."""

    why: str

    def __new__(cls, value: int, why: str) -> ThreadCount:
        made = super().__new__(cls, value)
        made.why = why
        return made


def decode_threads() -> ThreadCount:
    """Threads for decoding: `SELF_REFINE_THREADS` if set, else the cores not busy now.

    llama.cpp's threads wait for each other after every layer: one thread that shares
    its core with another program holds all the others back, and on a machine with one
    core busy, two threads decode at half the rate of one. So the count is this
    process's cores less the load already running (the 1-minute load average), at
    least one."""
    given = os.environ.get(THREADS_ENV, "").strip()
    if given:
        try:
            count = int(given)
        except ValueError:
            count = 0
        if count < 1:
            from self_refine.errors import ConfigError

            raise ConfigError(f"{THREADS_ENV} must be a whole number >= 1, got {given!r}")
        return ThreadCount(count, f"{THREADS_ENV}={count}")
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = 0.0
    free = max(1, min(cores, round(cores - load)))
    return ThreadCount(free, f"{cores} cores, load {load:.1f}")


class LlamaBackend:
    """A llama.cpp context of `n_seq` sequences on `llama`'s model, for one `DecodeLoop`."""

    def __init__(
        self, llama: Any, *, n_cells: int, n_seq: int, n_batch: int, n_threads: int
    ) -> None:
        import llama_cpp
        from llama_cpp import _internals

        self.llama = llama
        self.n_cells = n_cells
        self.n_seq = n_seq
        self.n_batch = n_batch
        self.n_threads = n_threads
        params = type(llama.context_params).from_buffer_copy(llama.context_params)
        params.n_ctx = n_cells
        params.n_batch = params.n_ubatch = n_batch
        params.n_seq_max = n_seq
        params.kv_unified = True
        params.n_threads = params.n_threads_batch = n_threads
        self._ctx = _internals.LlamaContext(model=llama._model, params=params, verbose=False)
        self._memory = llama_cpp.llama_get_memory(self._ctx.ctx)
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
        self._vocab = llama._model.vocab
        self._piece = (ctypes.c_char * 64)()

    def decode(self, tokens: Sequence[tuple[int, int, int, bool]]) -> None:
        import llama_cpp

        batch = self._batch
        for i, (token, pos, seq, logits) in enumerate(tokens):
            batch.token[i] = token
            batch.pos[i] = pos
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = seq
            batch.logits[i] = logits
        batch.n_tokens = len(tokens)
        status = llama_cpp.llama_decode(self._ctx.ctx, batch)
        if status != 0:
            raise RuntimeError(f"llama_decode returned {status}")

    def copy_prefix(self, source: int, target: int, length: int) -> None:
        import llama_cpp

        llama_cpp.llama_memory_seq_cp(self._memory, source, target, 0, length)

    def forget(self, seq: int, start: int) -> None:
        import llama_cpp

        llama_cpp.llama_memory_seq_rm(self._memory, seq, start, -1)

    def is_end(self, token: int) -> bool:
        import llama_cpp

        return bool(llama_cpp.llama_vocab_is_eog(self._vocab, token))

    def piece(self, token: int) -> bytes:
        import llama_cpp

        n = llama_cpp.llama_token_to_piece(self._vocab, token, self._piece, 64, 0, False)
        return self._piece.raw[:n]

    def sampler(self, settings: dict[str, Any], seed: int) -> _ChainSampler:
        """The sampler chain a `Llama` completion with these settings and seed uses."""
        from llama_cpp import Llama

        chain = Llama._init_sampler(cast(Llama, _Seeded(self.llama, seed)), **settings)
        return _ChainSampler(chain, self._ctx)

    def perf(self) -> dict[str, float]:
        """llama.cpp's own counters for this context: tokens read and written, seconds."""
        import llama_cpp

        data = llama_cpp.llama_perf_context(self._ctx.ctx)
        return {
            "prompt_tokens": float(data.n_p_eval),
            "prompt_ms": float(data.t_p_eval_ms),
            "decodes": float(data.n_eval),
            "decode_ms": float(data.t_eval_ms),
        }


class _Seeded:
    """The `Llama` as its sampler factory reads it, with this sequence's seed (the `Llama`
    itself is left alone: its own completions set and read its seed)."""

    def __init__(self, llama: Any, seed: int) -> None:
        self._llama = llama
        self._seed = seed

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llama, name)


class _ChainSampler:
    def __init__(self, chain: Any, ctx: Any) -> None:
        self.chain = chain
        self.ctx = ctx

    def sample(self, row: int) -> int:
        return int(self.chain.sample(self.ctx, row))
