"""`terrarium status`: a store's threads, entries and tokens."""

from __future__ import annotations

import argparse
import json
from typing import Any

from terrarium_dagster.cli.arguments import add_store_command, settings_from_args
from terrarium_dagster.cli.common import EXIT_OK


def add_status_parser(commands: Any) -> None:
    """Add `status`: the store, text or JSON."""
    status = add_store_command(
        commands, "status", help="show a store's threads, entries and tokens"
    )
    status.add_argument("--json", action="store_true", help="print JSON instead of text")


def cmd_status(args: argparse.Namespace) -> int:
    from terrarium_dagster.status import store_status

    settings = settings_from_args(args)
    report = store_status(settings.db)
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        from terrarium_dagster.status import render_status

        print(render_status(report))
    return EXIT_OK
