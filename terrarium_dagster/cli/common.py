"""What the commands share: exit codes, the log, and small checks and phrases."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from terrarium_dagster.errors import InputError

EXIT_OK, EXIT_FAILURE, EXIT_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130

log = logging.getLogger("terrarium")


def counted(number: int, one: str, many: str) -> str:
    """ "1 scene", "3 scenes"."""
    return f"{number} {one if number == 1 else many}"


def check_writable(out: Path, *, folder: bool) -> None:
    """`--out` must be a place that can be written: checked before anything is read or made."""
    from terrarium_dagster.paths import unwritable_reason

    reason = unwritable_reason(out, folder=folder)
    if reason is not None:
        raise InputError(f"--out {out}: cannot write there: {reason}")


def resolve_thread(corpus: Any, text: str) -> Any:
    """The corpus's thread named by `text` (its id or its key)."""
    threads = corpus.threads()
    for thread in threads:
        if text in (str(thread.id), thread.key):
            return thread
    raise unknown_thread(text, threads)


def unknown_thread(text: str, threads: list[Any], *, option: str = "") -> InputError:
    """The error for a thread the corpus does not have, with what a thread is named by."""
    example = f" (the first is {threads[0].id}, or {threads[0].key})" if threads else ""
    return InputError(
        f"{option}no thread {text!r} in the corpus: give a thread's id or key, as `terrarium "
        f"status` lists them{example}"
    )
