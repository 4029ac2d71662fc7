"""`terrarium undo`: a compensating revision for a curator decision or a revision."""

from __future__ import annotations

import argparse
from typing import Any

from terrarium_dagster.cli.arguments import add_command, add_corpus, add_store, settings_from_args
from terrarium_dagster.cli.common import EXIT_OK
from terrarium_dagster.corpus.units import thread_name


def add_undo_parser(commands: Any) -> None:
    """Add `undo`: the decision or the revision, and why."""
    undo = add_command(
        commands,
        "undo",
        help="undo a curator decision or a revision (a compensating revision; nothing erased)",
    )
    which = undo.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--decision", type=int, metavar="ID", help="curator decision id (shown by `lineage`)"
    )
    which.add_argument("--revision", type=int, metavar="ID", help="revision id (`lineage`: #ID)")
    undo.add_argument("--reason", help="why (recorded with the undo; default: undone by the user)")
    undo.add_argument("--json", action="store_true", help="print JSON instead of text")
    add_corpus(undo, links=False)  # it shows no post links
    add_store(undo)


def cmd_undo(args: argparse.Namespace) -> int:
    from terrarium_dagster.corpus.story import is_book
    from terrarium_dagster.curation.decision_undo import check_undo
    from terrarium_dagster.engine import Engine

    settings = settings_from_args(args)
    ids = {"decision_id": args.decision, "revision_id": args.revision}
    with Engine.open(
        settings, model=False, check=lambda _corpus, store: check_undo(store, **ids)
    ) as engine:
        result = engine.edits.undo(
            decision_id=args.decision, revision_id=args.revision, reason=args.reason
        )
        book = is_book(engine.corpus)
        unit = "chapter" if book else "thread"
    if args.json:
        print(result.model_dump_json(indent=2))
        return EXIT_OK
    revisions = ", ".join(f"#{rid}" for rid in result.revision_ids)
    entries = ", ".join(f"E{eid}" for eid in result.entry_ids)
    print(
        f"undid {result.what}: revision{'s' if len(result.revision_ids) > 1 else ''} "
        f"{revisions} on {entries}"
    )
    for line in result.kept:
        print(f"  kept the later change: {line}")
    if result.thread_key:
        as_of = thread_name(result.thread_key, book=book)
        print(f"  the glossary as of {as_of} includes it (re-export that {unit})")
    return EXIT_OK
