"""`terrarium lineage`: an entry's revisions, source posts and threads."""

from __future__ import annotations

import argparse
from typing import Any

from terrarium_dagster.cli.arguments import add_command, add_corpus, add_store, settings_from_args
from terrarium_dagster.cli.common import EXIT_OK


def add_lineage_parser(commands: Any) -> None:
    """Add `lineage`: the term to trace."""
    lineage = add_command(
        commands, "lineage", help="trace an entry to its revisions, source posts and threads"
    )
    lineage.add_argument("term", help="entry id (E12), term or alias")
    add_corpus(lineage)
    add_store(lineage, site=True)
    lineage.add_argument("--json", action="store_true", help="print JSON instead of text")


def cmd_lineage(args: argparse.Namespace) -> int:
    from terrarium_dagster.engine import open_corpus, open_store
    from terrarium_dagster.exports.lineage import lineage, render_lineage_text

    settings = settings_from_args(args)
    with open_store(settings, read_only=True) as store, open_corpus(settings, store) as corpus:
        trail = lineage(store, corpus, args.term)
    if args.json:
        print(trail.model_dump_json(indent=2))
    else:
        print(render_lineage_text(trail))
    return EXIT_OK
