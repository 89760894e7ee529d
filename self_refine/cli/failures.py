"""What a failed run or database says: one line naming what failed and how to go on."""

from __future__ import annotations

import os
import sqlite3

from self_refine.context import RefineContext

__all__ = ["database_failure", "run_failure"]


def _raised_in_model_call(error: BaseException) -> bool:
    """Whether `error` came out of a chat model's call (LangChain's chat-model code raised it)."""
    trace = error.__traceback__
    while trace is not None:
        if _MODEL_CODE in trace.tb_frame.f_code.co_filename:
            return True
        trace = trace.tb_next
    return False


_MODEL_CODE = os.path.join("langchain_core", "language_models", "")


def run_failure(error: Exception, context: RefineContext, resume: str | None, db: str) -> None:
    """Turn an error of the run into one line: what failed, and how to go on.

    Only an error from a model call names the model and its endpoint; `resume`
    (None when no thread was saved) is offered only when there is a thread to continue.
    """
    from self_refine.errors import ConfigError, ModelCallError
    from self_refine.redact import redact_url

    if isinstance(error, ConfigError):
        raise error
    if isinstance(error, sqlite3.Error):
        raise database_failure(error, db, resume) from None
    if isinstance(error, ModelCallError):
        tail = (
            f"Progress is saved; once the endpoint is back, continue with: {resume}"
            if resume
            else "No thread was saved: once the endpoint is back, run the command again"
        )
        raise RuntimeError(f"{str(error).rstrip('.')}. {tail}") from None
    detail = " ".join(str(error).split())[:300].rstrip(".") or type(error).__name__
    if _raised_in_model_call(error):
        endpoint = redact_url(
            context.base_url or os.environ.get("OPENAI_BASE_URL") or "the default endpoint"
        )
        what = f"model {context.model!r} at {endpoint}"
        then = "No thread was saved: run the command again once the model works"
    else:
        what = "the run"
        then = (
            "No thread was saved, and the same command would fail alike: check the task and "
            "the reference, or report the error"
        )
    if resume:
        then = f"Progress is saved; continue with: {resume}"
    raise RuntimeError(f"{what} failed: {type(error).__name__}: {detail}. {then}") from error


def database_failure(error: BaseException, db: str, resume: str | None = None) -> Exception:
    """One line for an SQLite error: a damaged file, one not writable, a full disk, or another."""
    from self_refine.errors import ConfigError
    from self_refine.persistence.failures import (
        damaged_message,
        is_damaged,
        not_writable_message,
        write_refused,
    )

    if is_damaged(error):
        return ConfigError(damaged_message(db, error))
    if why := write_refused(db, error):
        return ConfigError(not_writable_message(db, why))
    reason = " ".join(str(error).split()) or type(error).__name__
    fix = "free some disk space" if "full" in reason else "check the disk and the file"
    then = f", then continue with: {resume}" if resume else ", then try again"
    return RuntimeError(
        f"the database {db!r} failed ({reason}); steps before this one are saved: {fix}{then}"
    )
