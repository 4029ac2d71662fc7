"""`terrarium score`: a store measured against a gold list."""

from __future__ import annotations

import argparse
from typing import Any

from terrarium_dagster.cli.arguments import add_store_command, settings_from_args
from terrarium_dagster.cli.common import EXIT_OK, file_path


def add_score_parser(commands: Any) -> None:
    """Add `score`: the gold list."""
    score = add_store_command(
        commands,
        "score",
        help="measure a store against a gold list: recall, junk share, split entries",
    )
    score.add_argument(
        "--gold",
        type=file_path,
        required=True,
        help="YAML: `terms:` a list of {term, aliases}, or of names alone",
    )
    score.add_argument("--json", action="store_true", help="print JSON instead of text")


def cmd_score(args: argparse.Namespace) -> int:
    from terrarium_dagster.engine import open_store
    from terrarium_dagster.exports.score import load_gold, render_score, score

    settings = settings_from_args(args)
    gold = load_gold(args.gold)
    with open_store(settings, read_only=True) as store:
        report = score(store, gold)
    print(report.model_dump_json(indent=2) if args.json else render_score(report))
    return EXIT_OK
