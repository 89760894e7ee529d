"""Paths of the command line: files it reads capped and checked, files it writes checked first.

Output paths are checked before any work: regular files (or new ones) in a
writable folder, and never one of the command's other files, the database and
the files beside it included (`refuse_overlaps`). Inputs given as files (a key,
`--reference @FILE`, `--response-format FILE`) are read capped (`read_capped`) and
checked for what they should hold.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from self_refine.errors import ConfigError
from self_refine.input_files import read_input

__all__ = [
    "MAX_REFERENCE_BYTES",
    "STREAM",
    "check_writable",
    "read_capped",
    "read_reference",
    "read_response_format",
    "refuse_foreign",
    "refuse_overlaps",
]


def read_capped(path: str, label: str, limit: int, *, kind: str, too_big: str) -> tuple[bytes, int]:
    """The bytes of the regular file or pipe at `path`, and its mode; at most `limit` bytes.

    Anything else (a folder, a device such as /dev/urandom, a larger file) is a
    ConfigError naming `label`; `kind` says what the file should hold, `too_big`
    what to do about a larger one.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        raise ConfigError(f"{label}: {error.strerror or error}: give the path of {kind}") from None
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        raise ConfigError(f"{label} is not a regular file: give the path of {kind}")
    try:
        data = read_input(path, limit + 1)  # a pipe's wait ends on Ctrl-C
    except OSError as error:
        raise ConfigError(f"{label}: {error.strerror or error}: make it readable to you") from None
    if len(data) > limit:
        size = f"{limit // 1_000_000} MB" if limit >= 1_000_000 else f"{limit // 1024} KB"
        raise ConfigError(f"{label} is over {size}, {too_big}")
    return data, mode


STREAM = "-"
"""The output path that means standard output (`-o -`)."""


def check_writable(path: str | None, label: str, *, fix: str = "choose another path") -> None:
    """Raise ConfigError, naming `label` and ending in `fix`, when `path` could not be written.

    Only a regular file (or a new one) is an output: a pipe, a terminal or a
    device (`/dev/stdout`, `/dev/full`) would hang or fill memory when read back.
    """
    if not path:
        return
    target = Path(path)
    if target.is_dir():
        raise ConfigError(f"cannot write {label} {path!r}: it is a folder; give a file path")
    try:
        mode: int | None = os.stat(target).st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise ConfigError(
            f"cannot write {label} {path!r}: it is not a regular file (a pipe, a terminal or a "
            f"device); {fix}"
        )
    folder = next((p for p in target.absolute().parents if p.exists()), None)
    if folder is None or not folder.is_dir() or not os.access(folder, os.W_OK):
        raise ConfigError(
            f"cannot write {label} {path!r}: the folder {str(folder)!r} is not writable; {fix}"
        )
    if mode is not None and not os.access(target, os.W_OK):
        raise ConfigError(f"cannot write {label} {path!r}: the file is not writable; {fix}")


def refuse_foreign(
    path: str | None, label: str, *, ours: Callable[[Path], bool], what: str
) -> None:
    """Raise ConfigError when `path` holds a file this program did not write (it would be lost).

    A new path, an empty file and a file `ours` recognizes (a page, summary or plot
    an earlier command wrote, to be written again) may be written; `what` names
    the kind of file the command writes there.
    """
    if not path or path == STREAM:
        return
    target = Path(path)
    try:
        if not target.is_file() or target.stat().st_size == 0 or ours(target):
            return
    except OSError:
        return  # unreadable: check_writable says what is wrong
    raise ConfigError(
        f"{label} {path!r} is a file not written by self-refine (it is no {what} of "
        "self-refine), which writing would lose: give a new path, or move that file away"
    )


_DATABASE_PARTS = (
    ("", "the database"),
    ("-wal", "the database's write-ahead log"),
    ("-shm", "the database's shared memory file"),
    ("-journal", "the database's journal"),
)


def _database_paths(db: str | None) -> list[tuple[str, str, str, bool]]:
    """(what, path as shown, path compared, is a folder) of each file an SQLite database is."""
    from self_refine.persistence.lock_files import lock_folder
    from self_refine.persistence.postgres import is_postgres_url

    if not db or is_postgres_url(db) or db.strip() == ":memory:":
        return []
    given = os.path.expanduser(db)
    real = os.path.realpath(given)  # SQLite follows links to name its files
    found = [(what, given + suffix, real + suffix, False) for suffix, what in _DATABASE_PARTS]
    folder = ("the database's lock folder", given + "-locks", str(lock_folder(real)), True)
    return [*found, folder]


def _same(first: str, second: str) -> bool:
    """Whether two paths are one file, after links (symbolic and hard)."""
    if os.path.realpath(first) == os.path.realpath(second):
        return True
    try:
        return os.path.samefile(first, second)
    except OSError:
        return False


def _inside(path: str, folder: str) -> bool:
    return os.path.realpath(path).startswith(os.path.realpath(folder) + os.sep)


def refuse_overlaps(
    writes: Sequence[tuple[str, str | None]],
    reads: Sequence[tuple[str, str | None]] = (),
    db: str | None = None,
) -> None:
    """Raise ConfigError when a path the command writes is any other path it touches.

    `writes` and `reads` are (flag, path) pairs (a None path is left out, and so
    is "-", standard output); `db` adds the SQLite database and every file beside
    it (write-ahead log, shared memory, journal, lock folder), which the command
    writes too. Paths are compared after resolving links, symbolic and hard.
    Called before any work, so nothing the user has is overwritten.
    """
    written = [(flag, path) for flag, path in writes if path and path != STREAM]
    read = [(flag, path) for flag, path in reads if path and path != STREAM]
    for what, shown, path, folder in _database_paths(db):
        for flag, other in [*written, *read]:
            if _same(other, path) or (folder and _inside(other, path)):
                verb = "would overwrite" if (flag, other) in written else "is"
                raise ConfigError(
                    f"{flag} {other!r} {verb} {what} ({shown!r}): give {flag} a path of its "
                    "own, so that the threads in the database are not lost"
                )
    others = [*written, *read]
    for index, (flag, path) in enumerate(written):
        for other_flag, other_path in others[index + 1 :]:
            if _same(path, other_path):
                raise ConfigError(
                    f"{flag} and {other_flag} are the same file ({path!r}): "
                    "give each its own path so neither is overwritten"
                )


MAX_REFERENCE_BYTES = 1_000_000
"""Largest --reference @file read: a reference is stored in the thread's checkpoints."""


def _read_reference_file(
    path: str,
    source: str,
    too_big: str = "a reference is stored with the thread: keep it to what the verifiers need",
) -> str:
    """The text of a --reference file: a regular file (or a pipe) of UTF-8 text, 1 MB at most."""
    data, _ = read_capped(path, source, MAX_REFERENCE_BYTES, kind="a JSON file", too_big=too_big)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"{source} is not UTF-8 text (byte {error.start}): save it as UTF-8 JSON"
        ) from None


def read_reference(text: str | None) -> dict[str, Any] | None:
    """Read --reference: a JSON object, or @path to a file holding one."""
    import json

    if text is None:
        return None
    source = "--reference"
    if text.startswith("@"):
        source = f"--reference file {text[1:]!r}"
        text = _read_reference_file(text[1:], source)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"{source} is not valid JSON: {error.msg} (column {error.colno})"
        ) from None
    except RecursionError:
        raise ConfigError(f"{source} is JSON nested too deeply: flatten it") from None
    if not isinstance(value, dict):
        raise ConfigError(f'{source} must be a JSON object such as \'{{"answer": "42"}}\'')
    return value


def read_response_format(path: str | None) -> dict[str, Any] | None:
    """Read --response-format: a file holding a JSON schema (an object), checked as one."""
    import json

    from self_refine.critics.typed import ResponseFormat
    from self_refine.errors import ConfigError

    if path is None:
        return None
    source = f"--response-format file {path!r}"
    text = _read_reference_file(path, source, "a schema goes with every request: keep it small")
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as error:
        where = f"line {error.lineno}"
        raise ConfigError(f"{source} is not valid JSON: {error.msg} ({where})") from None
    except RecursionError:
        raise ConfigError(f"{source} is JSON nested too deeply: flatten it") from None
    if not isinstance(schema, dict):
        raise ConfigError(f'{source} must hold a JSON schema object, e.g. {{"type": "object"}}')
    try:
        ResponseFormat(schema)
    except ConfigError as error:
        raise ConfigError(f"{source}: {error}") from None
    return schema
