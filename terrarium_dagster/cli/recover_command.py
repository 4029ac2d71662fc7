"""`terrarium recover`: what is readable of a damaged store, copied into a new one."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from terrarium_dagster.cli.arguments import add_store_command, settings_from_args
from terrarium_dagster.cli.common import EXIT_OK, check_writable, counted
from terrarium_dagster.errors import InputError
from terrarium_dagster.store.base import refuse_side_file


def add_recover_parser(commands: Any) -> None:
    """Add `recover`: the new store."""
    recover = add_store_command(
        commands,
        "recover",
        help="copy what is readable of a damaged store into a new one (the damaged one is kept)",
    )
    recover.add_argument(
        "--out",
        required=True,
        help=(
            "the new store's file (must not exist); a folder (an existing one, or a path ending "
            "in /, made if missing) gets DB-recovered.db inside it, DB the damaged store's name"
        ),
    )


def recovered_store_path(out: str, source: Path) -> Path:
    """Where `--out` puts the new store: the file it names, or inside the folder it names
    (an existing folder, or a path ending in a separator) as `<source stem>-recovered.db`."""
    if not out.strip():
        raise InputError("--out is empty: give the new store's file, or a folder for it")
    if out == "-":
        raise InputError("--out -: recover writes a new store's file, never to standard output")
    given = Path(out).expanduser()
    if out.endswith(("/", os.sep)) and given.exists() and not given.is_dir():
        raise InputError(
            f"--out {out} names a folder, but {given} is a file: give a new file's path, "
            "or a folder"
        )
    if out.endswith(("/", os.sep)) or given.is_dir():
        return given / f"{source.stem}-recovered.db"
    return given


def cmd_recover(args: argparse.Namespace) -> int:
    from terrarium_dagster.store.recover import recover

    settings = settings_from_args(args)
    source = Path(settings.db)
    target = recovered_store_path(args.out, source)
    if target == Path(args.out).expanduser():  # a file: its folder must exist
        check_writable(target, folder=False)
    else:  # a folder --out names is made, never the folders above it
        check_writable(target.parent, folder=True)
    # a store at store.db-wal: the next opening removes it
    refuse_side_file(target, "--out", store=False, database=True)
    report = recover(source, target)
    damaged = ", ".join(report.damaged_tables) or "none"
    print(f"recovered {report.copied} rows into {report.out} (tables with damage: {damaged})")
    for table in report.tables:
        if table.lost_all:
            print(f"  {table.table}: unreadable, nothing recovered")
        elif table.unreadable:
            print(f"  {table.table}: {table.copied} rows; {table.unreadable} damaged stretch(es)")
    if report.dangling:
        print(f"  {report.dangling} rows point at rows that were lost")
    if not (report.damaged_tables or report.dangling or report.check_problems):
        print(f"{report.source} showed no damage and is unchanged; {report.out} is a copy of it")
        return EXIT_OK
    if not (report.damaged_tables or report.dangling):  # an index, free pages: no row lost
        print(
            f"{report.source} is damaged ({counted(report.check_problems, 'problem', 'problems')}"
            f" by SQLite's integrity check) but every row was read: {report.out} holds them all; "
            f"the damaged store is unchanged; run with `--db {report.out}`"
        )
        return EXIT_OK
    print(
        f"the damaged store {report.source} is unchanged; check the new one with "
        f"`terrarium status --db {report.out}`, then run with `--db {report.out}` "
        "(`--rewind` or `--from-snapshot` redo a thread whose rows were lost)"
    )
    return EXIT_OK
