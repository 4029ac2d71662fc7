"""What the commands share: exit codes, the log, and small checks and phrases."""

from __future__ import annotations

import argparse
import logging
import re
import signal
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from errno import EACCES, EADDRINUSE, EADDRNOTAVAIL
from pathlib import Path
from typing import Any

from terrarium_dagster.errors import CorpusAsStoreError, InputError

EXIT_OK, EXIT_FAILURE, EXIT_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130

log = logging.getLogger("terrarium")


class Terminated(KeyboardInterrupt):
    """SIGTERM (a container or systemd stopping the command), raised where Ctrl-C raises
    KeyboardInterrupt: the command stops the same way, closing what it has open and leaving
    nothing half made (a staged folder, a reader's WAL files)."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM stops the command as Ctrl-C does (`Terminated`); the commands
    that stop on a signal their own way (`run`, `edition`, `dev`) set and restore their own
    handlers inside it. SIGINT inherited ignored raises KeyboardInterrupt again: a shell without
    job control starts a script's background job so (`terrarium serve &`, then `kill -INT $!`),
    and `serve` went on serving. Off the main thread, where no handler can be set, both are left
    as they are."""
    try:
        previous = signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread
        yield
        return
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def signal_name(stop: KeyboardInterrupt) -> str:
    """The signal that stopped the command: SIGTERM (`Terminated`), else SIGINT (Ctrl-C)."""
    return "SIGTERM" if isinstance(stop, Terminated) else "SIGINT"


def counted(number: int, one: str, many: str) -> str:
    """ "1 scene", "3 scenes"."""
    return f"{number} {one if number == 1 else many}"


def check_writable(out: Path, *, folder: bool) -> None:
    """`--out` must be a place that can be written, in a folder that exists (it is made itself
    where it is a folder): checked before anything is read or made."""
    from terrarium_dagster.paths import unwritable_reason

    reason = unwritable_reason(out, folder=folder)
    if reason is not None:
        raise InputError(f"--out {out}: cannot write there: {reason}")
    holder = out.expanduser().parent
    if not holder.is_dir():  # a mistyped folder is not made: the place written is the one meant
        raise InputError(
            f"--out {out}: no folder {holder}; nothing was written (make it first, or give "
            "a path in a folder that exists)"
        )


_NUMBERED = re.compile(r"^(?:ch|chapter)\s*(\d+)$", re.IGNORECASE)


def find_thread(threads: list[Any], text: str) -> Any | None:
    """The thread `text` names among `threads` (in story order): its id, its key, or its number
    in story order as `ch3` (a book's third chapter; a quest's third thread); None if none."""
    for thread in threads:
        if text in (str(thread.id), thread.key):
            return thread
    numbered = _NUMBERED.match(text.strip())
    if numbered and 1 <= int(numbered.group(1)) <= len(threads):
        return threads[int(numbered.group(1)) - 1]
    return None


def resolve_thread(corpus: Any, text: str, *, option: str) -> Any:
    """The corpus's thread named by `text` (`find_thread`), given as `option` (named first in
    the error, as `run --threads` and `snapshots --thread` name theirs)."""
    threads = corpus.threads()
    thread = find_thread(threads, text)
    if thread is None:
        raise unknown_thread(text, threads, option=f"{option}: ")
    return thread


def unknown_thread(text: str, threads: list[Any], *, option: str = "") -> InputError:
    """The error for a thread the corpus does not have, with what a thread is named by."""
    example = (
        f" (the first is {threads[0].id}, {threads[0].key} or ch1; the last ch{len(threads)})"
        if threads
        else ""
    )
    return InputError(
        f"{option}no thread {text!r} in the corpus: give a thread's id or key, as `terrarium "
        f"status` lists them, or its number in story order as ch3{example}"
    )


def file_path(text: str) -> Path:
    """A file or folder option's path. An empty one (`--out "$OUT"` unset) named the working
    folder ("." is a folder): refused as naming nothing."""
    if not text.strip():
        raise argparse.ArgumentTypeError("names no file (give a path)")
    return Path(text)


def bind_address(text: str) -> str:
    """`--host` of `serve` and `dev`: an address. An empty one (`--host "$HOST"` unset) bound
    every interface (0.0.0.0), where the default is loopback alone: refused."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "an empty address binds every interface; give one (the default is 127.0.0.1)"
        )
    return text.strip()


def cannot_serve(what: str, host: str, port: int, exc: OSError, remedy: str) -> InputError:
    """The one line for a server that cannot listen: `what` on `host:port`, why, and what to do:
    for a busy port who may hold it and `remedy`; for an address no interface of this machine
    has, or a name that does not resolve, another `--host`; for a port only root may take, one
    from 1024 up."""
    if exc.errno == EADDRINUSE:
        why = f"{exc.strerror} (another `terrarium dev` or `terrarium serve`?); {remedy}"
    elif exc.errno == EADDRNOTAVAIL or isinstance(exc, socket.gaierror):
        where = (
            "that name is no address of this machine"
            if isinstance(exc, socket.gaierror)
            else "no interface of this machine has that address"
        )
        why = f"{exc.strerror}: {where}; give --host 127.0.0.1 (or an address of this machine)"
    elif exc.errno == EACCES:
        why = f"{exc.strerror}: a port under 1024 is root's; give one from 1024 up"
    else:
        why = f"{exc.strerror}; {remedy}"
    return InputError(f"cannot serve {what}on {host}:{port}: {why}")


# The commands that make a store where --db names no file yet (a new name is a new store).
MAKE_A_STORE = frozenset({"run", "dev"})


def corpus_as_store(exc: CorpusAsStoreError, args: argparse.Namespace) -> str:
    """The one line for a corpus given where the store belongs (`terrarium status --db
    corpus.db`): what the file is, and how this command takes it, naming only options it
    takes: as --corpus where it has one, else through the run that makes a store of it."""
    from terrarium_dagster.cli.arguments import db_option
    from terrarium_dagster.store.base import pointing

    option = db_option(args)
    takes_corpus = "corpus" in vars(args)
    if args.command in MAKE_A_STORE:
        store = "a new file for its store"
    elif takes_corpus:
        store = "the store's file"
    else:
        store = f"the store `terrarium run --corpus {exc.where}` made of it"
    if not takes_corpus:
        return f"{exc.refusal}; {pointing(option, store)}"
    given = f"{option} {store}" if option.startswith("--") else f"set {option} to {store}"
    return f"{exc.refusal}; give it as --corpus {exc.where}, and {given}"
