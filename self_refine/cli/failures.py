"""What a failed run or database says: one line naming what failed and how to go on."""

from __future__ import annotations

import os
import sqlite3

from self_refine.settings.fields import RefineContext

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


def _in_process(model: str | None) -> bool:
    """Whether a model string names a model that runs in this process (no endpoint)."""
    return model is not None and (model == "offline" or model.split(":")[0] == "local")


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
        if _in_process(context.model):
            what = f"model {context.model!r} (run in this process)"
        else:
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
        is_locked,
        not_writable_message,
        write_refused,
    )
    from self_refine.persistence.storage import BUSY_SECONDS

    if is_damaged(error):
        return ConfigError(damaged_message(db, error))
    if why := write_refused(db, error):
        return ConfigError(not_writable_message(db, why))
    reason = " ".join(str(error).split()) or type(error).__name__
    saved = "steps before this one are saved" if resume else "no thread was saved"
    then = f", then continue with: {resume}" if resume else ", then try again"
    if is_locked(error):
        return RuntimeError(
            f"the database {db!r} stayed locked by another connection for {BUSY_SECONDS:.0f} s "
            f"({reason}); {saved}: let the program that holds its write lock finish (another "
            f"self-refine command, or one in a transaction, such as the sqlite3 shell){then}"
        )
    fix = "free some disk space" if "full" in reason else "check the disk and the file"
    return RuntimeError(f"the database {db!r} failed ({reason}); {saved}: {fix}{then}")
