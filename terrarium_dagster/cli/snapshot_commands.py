"""`terrarium snapshots` and `terrarium why`: the context snapshots of a store, and the past
context that wrote an entry asked why."""

from __future__ import annotations

import argparse
import json
from types import SimpleNamespace
from typing import Any

from terrarium_dagster.cli.arguments import (
    RUN_ONLY,
    add_agent,
    add_command,
    add_corpus,
    add_store,
    add_store_command,
    settings_from_args,
)
from terrarium_dagster.cli.common import EXIT_OK, find_thread
from terrarium_dagster.corpus.units import thread_name
from terrarium_dagster.errors import InputError


def add_snapshot_parsers(subparsers: Any) -> None:
    """Add `snapshots` and `why` to the `terrarium` subparsers."""
    snapshots = add_store_command(
        subparsers, "snapshots", help="list the context snapshots of a store"
    )
    snapshots.add_argument(
        "--thread",
        help="only this thread's snapshots (its id or key, as the table shows it, or ch3 for "
        "the third in story order)",
    )
    snapshots.add_argument("--json", action="store_true", help="print JSON instead of text")

    why = add_command(
        subparsers, "why", help="ask the past context that wrote an entry why it wrote it"
    )
    why.add_argument("entry", nargs="?", help="entry id (E12), term or alias")
    why.add_argument("--revision", type=int, help="ask about this revision instead")
    why.add_argument(
        "--question",
        help='default: "Why did you write <term> (<definition>)? Which posts is it based on?" '
        "(change, or delete, for such a revision; paragraphs, for a book's store)",
    )
    why.add_argument("--json", action="store_true", help="print JSON instead of text")
    add_corpus(why)
    add_store(why, site=True)
    add_agent(why, omit=RUN_ONLY)  # one request at a time, its own rounds


def cmd_snapshots(args: argparse.Namespace) -> int:
    from terrarium_dagster.corpus.identity import IDENTITY_META, CorpusIdentity
    from terrarium_dagster.engine import open_store
    from terrarium_dagster.summon.why import render_snapshots, snapshots_report

    settings = settings_from_args(args)
    with open_store(settings, read_only=True) as store:
        thread_id = None if args.thread is None else _store_thread(store, args.thread)
        rows = snapshots_report(store, thread_id=thread_id)
        identity = store.get_meta(IDENTITY_META)
        keys = {state.thread_id: state.thread_key for state in store.progress.thread_states()}
    if args.json:
        print(json.dumps(rows, indent=2, sort_keys=True))
    else:
        book = identity is not None and CorpusIdentity.model_validate_json(identity).book_title
        of = (
            None
            if thread_id is None
            else thread_name(keys[thread_id], book=bool(book), labelled=True)
        )
        print(render_snapshots(rows, book=bool(book), of=of))
    return EXIT_OK


def _store_thread(store: Any, text: str) -> int:
    """The id of the thread the store has begun that `text` names: its id, its key, or its
    number in story order as `ch3` (`find_thread`; a store begins at the story's first thread,
    since threads are annotated in order)."""
    states = store.progress.thread_states()
    threads = [SimpleNamespace(id=state.thread_id, key=state.thread_key) for state in states]
    found = find_thread(threads, text)
    if found is not None:
        return int(found.id)
    example = (
        f" (the first is {states[0].thread_id}, {states[0].thread_key} or ch1; the last "
        f"ch{len(states)})"
        if states
        else ""
    )
    raise InputError(
        f"--thread: the store has no thread {text!r}: give a thread's id or key, as "
        f"`terrarium status` lists them, or its number in story order as ch3{example}"
    )


def cmd_why(args: argparse.Namespace) -> int:
    from terrarium_dagster.engine import open_client, open_corpus, open_store
    from terrarium_dagster.model import sampling
    from terrarium_dagster.summon.why import render_why, why

    if args.entry is None and args.revision is None:
        raise InputError("why: give an entry (E12, a term or an alias) or --revision N")
    settings = settings_from_args(args)
    with open_store(settings, must_exist=True) as store, open_corpus(settings, store) as corpus:
        client = open_client(settings)
        try:
            answer = why(
                store,
                corpus,
                client,
                args.entry,
                revision=args.revision,
                question=args.question,
                budget=settings.context_budget,
                max_tokens=settings.max_tokens,
                request_options=lambda purpose: sampling.request_options(
                    settings, client.model_name(), purpose
                ),
            )
        finally:
            client.close()
    if args.json:
        print(answer.model_dump_json(indent=2))
    else:
        print(render_why(answer))
    return EXIT_OK
