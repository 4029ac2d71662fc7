"""The `terrarium` command: its parser (each command adds its own options), the table of
commands and `main`, which turns errors into exit codes."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from terrarium_dagster.cli.arguments import Parser, UsageError
from terrarium_dagster.cli.common import (
    EXIT_FAILURE,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    corpus_as_store,
    signal_name,
    sigterm_as_interrupt,
)
from terrarium_dagster.cli.dev_command import add_dev_parser, cmd_dev
from terrarium_dagster.cli.edition_command import add_edition_parser, cmd_edition
from terrarium_dagster.cli.export_command import add_export_parser, cmd_export
from terrarium_dagster.cli.import_command import add_import_parser, cmd_import
from terrarium_dagster.cli.lineage_command import add_lineage_parser, cmd_lineage
from terrarium_dagster.cli.recover_command import add_recover_parser, cmd_recover
from terrarium_dagster.cli.run_command import add_run_parser, cmd_run
from terrarium_dagster.cli.score_command import add_score_parser, cmd_score
from terrarium_dagster.cli.serve_command import add_serve_parser, cmd_serve
from terrarium_dagster.cli.snapshot_commands import add_snapshot_parsers, cmd_snapshots, cmd_why
from terrarium_dagster.cli.status_command import add_status_parser, cmd_status
from terrarium_dagster.cli.undo_command import add_undo_parser, cmd_undo
from terrarium_dagster.errors import (
    CorpusAsStoreError,
    EntryNotFoundError,
    InputError,
    TerrariumError,
)

DESCRIPTION = (
    "Build a glossary of a long serialized story (a forum quest, or a novel turned into a corpus "
    "by `import`) with an LLM agent served by vLLM, or the offline backend (--offline): `run` "
    "annotates the story thread by thread, the other commands read, export and correct the "
    "glossary; `dev` opens the Dagster UI."
)
EPILOG = (
    "A first try: terrarium import BOOK.txt --out book.db; terrarium run --offline --corpus "
    "book.db --db book-glossary.db; terrarium export --db book-glossary.db --format site --out "
    "site. `terrarium COMMAND --help` shows a command's options. Exit codes: 0 done, 1 failed, "
    "2 bad input or refused (nothing written), 130 interrupted (the same command resumes)."
)


def _version() -> str:
    """The installed distribution's version (pyproject's `version`)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("terrarium-dagster")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "(not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="terrarium", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="debug logging (before or after the command)"
    )
    parser.add_argument(
        "--version", action="version", version=f"terrarium {_version()}", help="show the version"
    )
    commands = parser.add_subparsers(
        dest="command", required=True, parser_class=Parser, metavar="COMMAND"
    )

    add_run_parser(commands)
    add_edition_parser(commands)
    add_status_parser(commands)
    add_export_parser(commands)
    add_lineage_parser(commands)
    add_import_parser(commands)
    add_score_parser(commands)
    add_serve_parser(commands)
    add_dev_parser(commands)
    add_undo_parser(commands)
    add_recover_parser(commands)
    add_snapshot_parsers(commands)
    return parser


COMMANDS = {
    "dev": cmd_dev,
    "recover": cmd_recover,
    "serve": cmd_serve,
    "score": cmd_score,
    "import": cmd_import,
    "run": cmd_run,
    "status": cmd_status,
    "edition": cmd_edition,
    "export": cmd_export,
    "lineage": cmd_lineage,
    "snapshots": cmd_snapshots,
    "why": cmd_why,
    "undo": cmd_undo,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; SIGTERM stops it as Ctrl-C does, and either, however early, is one line
    (exit 130), never a traceback (`serve`, whose way to end is a stop, says it stopped: 0)."""
    with sigterm_as_interrupt():
        try:
            return _main(argv)
        except KeyboardInterrupt as stop:
            print(f"terrarium: interrupted by {signal_name(stop)}", file=sys.stderr)
            return EXIT_INTERRUPTED


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        given = list(sys.argv[1:] if argv is None else argv)
        command = next((word for word in given if word in COMMANDS), None)
        where = f"terrarium {command} --help" if command else "terrarium --help"
        print(f"terrarium: error: {exc} (`{where}` shows the options)", file=sys.stderr)
        return EXIT_INPUT
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("httpx").setLevel(logging.DEBUG if args.verbose else logging.WARNING)
    try:
        code = COMMANDS[args.command](args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except BrokenPipeError:  # `terrarium status --json | head`: the reader left, not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes stdout
        return EXIT_OK
    except CorpusAsStoreError as exc:  # said with the options this command takes
        print(f"terrarium: error: {corpus_as_store(exc, args)}", file=sys.stderr)
        return EXIT_INPUT
    except (InputError, EntryNotFoundError) as exc:  # an unknown entry name is the user's input
        hint = f" (--{exc.setting.replace('_', '-')})" if exc.setting else ""
        print(f"terrarium: error: {exc}{hint}", file=sys.stderr)
        return EXIT_INPUT
    except TerrariumError as exc:
        if exc.exit_code == EXIT_INTERRUPTED:
            print(f"terrarium: interrupted: {exc}; run the same command to resume", file=sys.stderr)
            return EXIT_INTERRUPTED
        print(f"terrarium: failed: {exc}", file=sys.stderr)
        return EXIT_FAILURE
