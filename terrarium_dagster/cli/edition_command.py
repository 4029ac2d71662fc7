"""`terrarium edition`: the reader's edition up to a thread."""

from __future__ import annotations

import argparse
import signal
import threading
import time
from typing import Any

from terrarium_dagster.cli.arguments import RUN_ONLY, add_agent_command, settings_from_args
from terrarium_dagster.cli.common import EXIT_OK, log, resolve_thread
from terrarium_dagster.corpus.units import thread_name


def add_edition_parser(commands: Any) -> None:
    """Add `edition`: the thread it is written up to."""
    edition = add_agent_command(
        commands,
        "edition",
        help="write the reader's edition up to a thread (each entry rewritten)",
        description="It is stored in the annotator store (--db), for every thread up to "
        "--as-of-thread that lacks one; `terrarium export` and "
        "`terrarium serve` show it.",
        omit=RUN_ONLY - {"concurrency"},  # its requests go out side by side
    )
    edition.add_argument(
        "--as-of-thread",
        required=True,
        help="thread id, key or ch3 (its number in story order): the edition up to its end",
    )


def _edition_progress(
    event: str, data: dict[str, object], written: list[str], *, book: bool
) -> None:
    """A thread's line as soon as its edition is committed (a long edition shows its pace);
    the threads written now are added to `written`. A book's chapters are named by number."""
    # imported here: the edition's writer brings the agent, the model client and the exports,
    # which every other command of the CLI would import for nothing
    from terrarium_dagster.edition.writer import edition_line

    if event != "edition":
        return
    if not data.get("already_done"):
        written.append(str(data["thread_key"]))
    print(edition_line(thread_name(str(data["thread_key"]), book=book), data), flush=True)


def cmd_edition(args: argparse.Namespace) -> int:
    from terrarium_dagster.corpus.story import is_book
    from terrarium_dagster.engine import Engine
    from terrarium_dagster.engine.opening import check_store_folder

    settings = settings_from_args(args)
    if (
        args.db is not None
    ):  # a typed --db; TERRARIUM_DB and the config file are deployment settings
        check_store_folder(settings.db)  # a mistyped folder is refused, not made
    stop = threading.Event()

    def request_stop(signum: int, _frame: object) -> None:
        # the one line is "interrupted", said as the command ends
        log.debug(
            "%s received: stopping after the thread being written", signal.Signals(signum).name
        )
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    started = time.monotonic()
    written: list[str] = []
    book = False  # known once the corpus is open, before any line
    try:
        with Engine.open(
            settings,
            stop=stop,
            progress=lambda event, data: _edition_progress(event, data, written, book=book),
            recorded_corpus=True,
            must_exist=True,  # an edition rewrites what a run wrote: no new store for it
            check=lambda corpus, _store: resolve_thread(  # refused before the lease is taken
                corpus, args.as_of_thread, option="--as-of-thread"
            ),
        ) as engine:
            book = is_book(engine.corpus)
            target = resolve_thread(engine.corpus, args.as_of_thread, option="--as-of-thread")
            engine.write_edition(target.id)  # each thread's line is its progress event
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    elapsed = time.monotonic() - started
    name = thread_name(target.key, book=book)
    if not written:  # the same command again: nothing was sent or changed
        print(f"edition as of {name} already written; nothing changed ({elapsed:.1f}s)")
        return EXIT_OK
    print(
        f"edition as of {name} written in {elapsed:.1f}s to the store {settings.db}: "
        "`terrarium export` and `terrarium serve` show it"
    )
    return EXIT_OK
