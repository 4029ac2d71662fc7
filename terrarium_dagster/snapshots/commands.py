"""The `terrarium snapshots` and `terrarium why` subcommands (wired into `cli.py`).

    terrarium snapshots --db PATH [--thread ID] [--json]
    terrarium why ENTRY --db PATH [--revision N] [--question TEXT] [--json] [agent options]
    terrarium why --revision N --db PATH ...

`add_commands(subparsers, add_store, add_corpus, add_agent)` adds both parsers (the three helpers
add the options every command shares); `COMMANDS` maps their names to the handlers, which return
the exit code. Errors are raised as `TerrariumError`s for `cli.main` to report.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from terrarium_dagster.config import Settings, load_settings

EXIT_OK = 0

AddOptions = Callable[[argparse.ArgumentParser], None]


def add_commands(
    subparsers: Any, add_store: AddOptions, add_corpus: AddOptions, add_agent: AddOptions
) -> None:
    """Add `snapshots` and `why` to the `terrarium` subparsers."""
    snapshots = subparsers.add_parser(
        "snapshots", help="the context snapshots (checkpoints) of a store"
    )
    add_store(snapshots)
    snapshots.add_argument("--thread", type=int, help="only this thread's snapshots (thread id)")
    snapshots.add_argument("--json", action="store_true")

    why = subparsers.add_parser("why", help="summon the context that wrote an entry and ask it why")
    why.add_argument("entry", nargs="?", help="entry id (E12), term or alias")
    why.add_argument("--revision", type=int, help="ask about this revision instead")
    why.add_argument("--question", help='default: "Why did you write <term> (<definition>)?"')
    why.add_argument("--json", action="store_true")
    add_corpus(why)
    add_store(why)
    add_agent(why)


def _settings(args: argparse.Namespace) -> Settings:
    fields = set(Settings.model_fields)
    return load_settings(**{key: value for key, value in vars(args).items() if key in fields})


def cmd_snapshots(args: argparse.Namespace) -> int:
    from terrarium_dagster.engine import open_store
    from terrarium_dagster.snapshots.why import render_snapshots, snapshots_report

    settings = _settings(args)
    with open_store(settings, must_exist=True) as store:
        rows = snapshots_report(store, thread_id=getattr(args, "thread", None))
    if args.json:
        print(json.dumps(rows, indent=2, sort_keys=True))
    else:
        print(render_snapshots(rows))
    return EXIT_OK


def cmd_why(args: argparse.Namespace) -> int:
    from terrarium_dagster.engine import open_client, open_corpus, open_store
    from terrarium_dagster.errors import InputError
    from terrarium_dagster.snapshots.why import render_why, why

    if args.entry is None and args.revision is None:
        raise InputError("why: give an entry (E12, a term or an alias) or --revision N")
    settings = _settings(args)
    with open_corpus(settings) as corpus, open_store(settings, must_exist=True) as store:
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
            )
        finally:
            client.close()
    if args.json:
        print(answer.model_dump_json(indent=2))
    else:
        print(render_why(answer))
    return EXIT_OK


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "snapshots": cmd_snapshots,
    "why": cmd_why,
}
