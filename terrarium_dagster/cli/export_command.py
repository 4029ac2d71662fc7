"""`terrarium export`: the glossary as JSON, YAML, a lorebook, a wiki or the reader's site."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from terrarium_dagster.cli.arguments import add_command, add_corpus, add_store, settings_from_args
from terrarium_dagster.cli.common import EXIT_OK, check_writable, counted, resolve_thread
from terrarium_dagster.errors import InputError


def add_export_parser(commands: Any) -> None:
    """Add `export`: the format, where it goes, the thread it is as of."""
    export = add_command(
        commands,
        "export",
        help="write the glossary as JSON, YAML, a SillyTavern lorebook, a wiki or the reader's "
        "site",
        description="Write the glossary (now, or as of a thread) in one format. --out is the "
        "file for json, yaml and lorebook (FILE.json, FILE.yaml, FILE.json; written again, it "
        "is replaced) and the folder for wiki (pages in FOLDER/wiki/, HTML in FOLDER/wiki/html/) "
        "and site (the reader's site).",
    )
    add_corpus(export)
    add_store(export, site=True)
    export.add_argument(
        "--format",
        choices=("json", "yaml", "wiki", "lorebook", "site"),
        required=True,
        help="json, yaml, lorebook: one file; wiki, site: a folder",
    )
    export.add_argument(
        "--out",
        type=Path,
        required=True,
        help="the file (json, yaml, lorebook) or folder (wiki, site) to write",
    )
    export.add_argument("--as-of-thread", help="thread id or key: the glossary as it stood then")


def cmd_export(args: argparse.Namespace) -> int:
    from terrarium_dagster.corpus.story import is_book
    from terrarium_dagster.engine import open_corpus, open_store
    from terrarium_dagster.exports import build_export
    from terrarium_dagster.exports.site import build_site

    settings = settings_from_args(args)
    _check_export_out(args.format, args.out)
    with open_store(settings, read_only=True) as store, open_corpus(settings, store) as corpus:
        if args.format == "site":
            if args.as_of_thread:
                raise InputError("--as-of-thread: the site holds every thread (the reader picks)")
            site = build_site(store, corpus, args.out)
            unit = "chapter" if is_book(corpus) else "thread"
            print(
                f"wrote the reader's site ({counted(site.threads, unit, unit + 's')}, "
                f"{counted(site.entries, 'entry', 'entries')} across them) to {site.out_dir}"
            )
            return EXIT_OK
        as_of = None
        if args.as_of_thread:
            as_of = resolve_thread(corpus, args.as_of_thread).id
        report = build_export(store, corpus, args.out, formats=(args.format,), as_of_thread=as_of)
    print(_export_line(args.format, args.out, report))
    return EXIT_OK


def _export_line(format_name: str, out: Path, report: Any) -> str:
    """What the export wrote, counting what the file holds."""
    if format_name == "wiki":
        return f"wrote the wiki ({report.entries} entries) to {out / 'wiki'}"
    if format_name == "lorebook":
        left = f"; {report.left_out} without a key that can fire left out" * bool(report.left_out)
        return f"wrote {counted(report.held, 'lorebook entry', 'lorebook entries')} to {out}{left}"
    besides = [
        f"{count} {what}"
        for count, what in ((report.rejected, "rejected"), (report.merged, "merged away"))
        if count
    ]
    kept = f" ({report.entries} in the glossary, {', '.join(besides)})" if besides else ""
    return f"exported {counted(report.held, 'entry', 'entries')}{kept} to {out}"


_EXPORT_FILE_SUFFIXES = {"json": (".json",), "yaml": (".yaml", ".yml"), "lorebook": (".json",)}
_FILE_LIKE_SUFFIXES = (".json", ".yaml", ".yml", ".md", ".html", ".htm", ".txt", ".zip")


def _check_export_out(format_name: str, out: Path) -> None:
    """`--out` is the file for json, yaml and lorebook (with the format's extension) and the
    folder for wiki and site: checked before anything is read or written."""
    suffixes = _EXPORT_FILE_SUFFIXES.get(format_name)
    if suffixes is not None:
        if out.is_dir():
            raise InputError(
                f"--out {out} is a folder; --format {format_name} writes one file: give its "
                f"path, e.g. {out / ('lorebook' if format_name == 'lorebook' else 'glossary')}"
                f"{suffixes[0]}"
            )
        if out.suffix.lower() not in suffixes:
            raise InputError(
                f"--out {out}: --format {format_name} writes one {' or '.join(suffixes)} file; "
                f"give a path ending in {suffixes[0]}"
            )
        check_writable(out, folder=False)
        return
    if out.suffix.lower() in _FILE_LIKE_SUFFIXES and not out.exists():
        raise InputError(
            f"--out {out}: --format {format_name} writes a folder of pages; give a folder name "
            f"(e.g. {out.with_suffix('')})"
        )
    check_writable(out, folder=True)
